"""tf.train: optimizers."""
from pygrad.train.optimizer import GradientDescentOptimizer, Optimizer

__all__ = ["GradientDescentOptimizer", "Optimizer"]
