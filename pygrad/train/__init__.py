"""tf.train: optimizers, learning-rate schedules, the global step, moving averages."""
from pygrad.train.optimizer import Optimizer
from pygrad.train.optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer,
                                     RMSPropOptimizer)

__all__ = ["AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer",
           "RMSPropOptimizer"]
