"""tf.train: optimizers, learning-rate schedules, the global step, moving averages."""
from pygrad.train.moving_averages import ExponentialMovingAverage
from pygrad.train.optimizer import Optimizer
from pygrad.train.optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer,
                                     RMSPropOptimizer)
from pygrad.train.training_util import (create_global_step, exponential_decay, get_global_step,
                                        get_or_create_global_step)

__all__ = ["AdagradOptimizer", "AdamOptimizer", "ExponentialMovingAverage", "GradientDescentOptimizer",
           "MomentumOptimizer", "Optimizer", "RMSPropOptimizer", "create_global_step", "exponential_decay",
           "get_global_step", "get_or_create_global_step"]
