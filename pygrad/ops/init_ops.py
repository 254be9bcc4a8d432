"""Variable initializers (tf.zeros_initializer, tf.glorot_uniform_initializer, ...): callables
(shape, dtype=None, partition_info=None) -> Tensor, as in TF1."""
import math

import numpy as np

from pygrad import dtypes
from pygrad.ops import array_ops, random_ops
from pygrad.shapes import as_shape


class Initializer:
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return self._init(as_shape(shape).as_list(), dtypes.as_dtype(dtype or self.dtype))

    def get_config(self):
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


class Zeros(Initializer):
    def _init(self, shape, dtype):
        return array_ops.zeros(shape, dtype)


class Ones(Initializer):
    def _init(self, shape, dtype):
        return array_ops.ones(shape, dtype)


class Constant(Initializer):
    """A constant: a scalar fills the shape, an array of the same number of elements is reshaped."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        super().__init__(dtype)
        self.value = value
        self.verify_shape = verify_shape

    def _init(self, shape, dtype):
        return array_ops.constant(self.value, dtype=dtype, shape=shape, verify_shape=self.verify_shape)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def _init(self, shape, dtype):
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype, seed=self.seed)


class TruncatedNormal(RandomNormal):
    def _init(self, shape, dtype):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype, seed=self.seed)


class RandomUniform(Initializer):
    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def _init(self, shape, dtype):
        return random_ops.random_uniform(shape, self.minval, self.maxval, dtype, seed=self.seed)


def _fans(shape):
    """(fan_in, fan_out) as TF computes them: conv kernels multiply by the receptive field."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """stddev (or limit) from scale / fan: TF1's variance_scaling_initializer."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode}")
        if distribution not in ("normal", "uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        super().__init__(dtype)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        # a part of a partitioned variable scales by the whole variable's fans, as TF's
        fans = _fans(partition_info.full_shape if partition_info is not None else as_shape(shape).as_list())
        return self._init(as_shape(shape).as_list(), dtypes.as_dtype(dtype or self.dtype), fans)

    def _init(self, shape, dtype, fans):
        fan_in, fan_out = fans
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / 0.87962566103423978  # the stddev of a [-2, 2] truncated unit normal
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)


def glorot_uniform_initializer(seed=None, dtype=dtypes.float32):
    """Uniform in +-sqrt(6 / (fan_in + fan_out)); the default initializer of tf.get_variable."""
    return VarianceScaling(1.0, "fan_avg", "uniform", seed, dtype)


def glorot_normal_initializer(seed=None, dtype=dtypes.float32):
    return VarianceScaling(1.0, "fan_avg", "truncated_normal", seed, dtype)


def he_normal(seed=None):
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
random_uniform_initializer = RandomUniform
variance_scaling_initializer = VarianceScaling
