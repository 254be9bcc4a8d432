"""contrib's initializers, xavier_initializer and variance_scaling_initializer (contrib's
formulas), and the regularizers (defined in pygrad.layers.regularizers)."""
import math

from pygrad import dtypes
from pygrad.layers.regularizers import (  # noqa: F401
    apply_regularization,
    l1_l2_regularizer,
    l1_regularizer,
    l2_regularizer,
    sum_regularizer,
)
from pygrad.ops import random_ops
from pygrad.ops.init_ops import Initializer


class _ContribVarianceScaling(Initializer):
    """contrib's variance_scaling_initializer: n from fan_in, fan_out or their average; uniform in
    +-sqrt(3 factor / n), or a normal truncated at 2 stddev with stddev sqrt(1.3 factor / n)."""

    def __init__(self, factor, mode, uniform, seed, dtype):
        if not dtypes.as_dtype(dtype).is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
            raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
        super().__init__(dtype)
        self.factor, self.mode, self.uniform, self.seed = factor, mode, uniform, seed

    def _init(self, shape, dtype):
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1]) if shape else 1.0
        fan_out = float(shape[-1]) if shape else 1.0
        for dim in shape[:-2]:
            fan_in *= float(dim)
            fan_out *= float(dim)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)
        return random_ops.truncated_normal(shape, 0.0, math.sqrt(1.3 * self.factor / n), dtype, seed=self.seed)


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=dtypes.float32):
    return _ContribVarianceScaling(factor, mode, uniform, seed, dtype)


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """Glorot's initializer: variance_scaling_initializer(1.0, 'FAN_AVG', uniform)."""
    return _ContribVarianceScaling(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer
