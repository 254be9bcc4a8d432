"""Batch statistics and batch normalization (tf.nn.moments, batch_normalization, fused_batch_norm),
xw_plus_b, zero_fraction and local response normalization, built from existing ops as
TensorFlow's nn_impl.py builds them, so their gradients are those ops'.

fused_batch_norm is one op in TF with its own gradient kernel; here it is the same arithmetic
(mean and biased variance over every axis but the channels, then x * inv + (offset - mean * inv)),
so its values and gradients agree with TF's to rounding. As TF's, its gradient flows to x, scale
and offset only: mean and variance fed to inference, and the batch statistics it returns, get none.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import build_error, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, reshape, shape as shape_of, size, squeeze, stop_gradient
from pygrad.ops.nn_ops import bias_add
from pygrad.ops.reduction_ops import reduce_mean

# TF raises epsilon to this minimum in fused_batch_norm (a cuDNN requirement it applies on every device).
FUSED_MIN_EPSILON = 1.001e-5


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over axes; the variance is the biased one (divided by the count).
    As TF: the variance is taken around stop_gradient(mean), which leaves its gradient unchanged."""
    if keep_dims is not None and keepdims is not None:
        raise build_error("moments", name, "Cannot specify both 'keepdims' and 'keep_dims'.")
    keep = bool(keepdims if keep_dims is None else keep_dims)
    with get_default_graph().name_scope(name or "moments"):
        x = convert_to_tensor(x)
        if not x.dtype.is_floating:
            raise build_error("moments", name, f"x must be floating point, got {x.dtype.name} of shape {x.shape}",
                              TypeError)
        axes = [int(a) for a in axes]
        n = x.shape.ndims
        if n is not None and any(not -n <= a < n for a in axes):
            raise build_error("moments", name, f"axes {axes} are out of range for x of shape {x.shape}")
        y = cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduce_mean(math_ops.squared_difference(y, stop_gradient(mean)), axes, keepdims=True,
                               name="variance")
        if not keep:
            mean, variance = squeeze(mean, axes), squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            mean, variance = cast(mean, x.dtype), cast(variance, x.dtype)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + variance_epsilon) + offset, broadcasting; offset and
    scale may be None. The same expression as TF's: x * inv + (offset - mean * inv)."""
    with get_default_graph().name_scope(name or "batchnorm"):
        x = convert_to_tensor(x)
        mean = convert_to_tensor(mean, dtype=x.dtype)
        variance = convert_to_tensor(variance, dtype=x.dtype)
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype=x.dtype)
        shift = -mean * inv if offset is None else convert_to_tensor(offset, dtype=x.dtype) - mean * inv
        return x * inv + shift


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None):
    """Batch normalization of a 4-D x over its channels (the last axis, or axis 1 for "NCHW"):
    returns (y, batch_mean, batch_var). Training normalizes with the batch's mean and biased
    variance and returns the mean and the unbiased variance (times n / (n - 1), n the number of
    values per channel), as TF's kernel does; inference normalizes with the given mean and variance
    and returns them. epsilon is raised to 1.001e-5 at least, as in TF."""
    op = "FusedBatchNorm"
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise build_error(op, name, f"x must be floating point, got {x.dtype.name} of shape {x.shape}", TypeError)
    if x.shape.ndims not in (None, 4):
        raise build_error(op, name, f"x must be 4-dimensional, got shape {x.shape}")
    if data_format not in ("NHWC", "NCHW"):
        raise build_error(op, name, f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    channel = 3 if data_format == "NHWC" else 1
    axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
    channels = x.shape[channel].value if x.shape.ndims is not None else None
    if not is_training and (mean is None or variance is None):
        raise build_error(op, name, "inference (is_training=False) needs mean and variance")
    stat_dtype = dtypes.float32 if x.dtype == dtypes.float16 else x.dtype
    params = []
    for what, t in (("scale", scale), ("offset", offset)) + ((("mean", mean), ("variance", variance))
                                                             if not is_training else ()):
        t = convert_to_tensor(t, dtype=stat_dtype)
        if t.shape.ndims not in (None, 1) or (channels is not None and t.shape.ndims == 1 and
                                             t.shape[0].value not in (None, channels)):
            raise build_error(op, name, f"{what} must be a vector of the {channels} channels of x {x.shape} "
                                        f"({data_format}), got shape {t.shape}")
        params.append(t)
    epsilon = max(float(epsilon), FUSED_MIN_EPSILON)
    with get_default_graph().name_scope(name or op):
        bcast = (lambda t: t) if data_format == "NHWC" else (lambda t: reshape(t, [-1, 1, 1]))
        xs = cast(x, stat_dtype) if x.dtype != stat_dtype else x
        if is_training:
            scale, offset = params
            batch_mean, batch_var = moments(xs, axes)
            count = cast(size(x), stat_dtype) / cast(size(batch_mean), stat_dtype)
            correction = count / math_ops.maximum(count - 1, 1)
            out_mean, out_var = stop_gradient(batch_mean), stop_gradient(batch_var * correction)
        else:
            scale, offset, batch_mean, batch_var = params
            batch_mean, batch_var = stop_gradient(batch_mean), stop_gradient(batch_var)
            out_mean, out_var = batch_mean, batch_var
        y = batch_normalization(xs, bcast(batch_mean), bcast(batch_var), bcast(offset), bcast(scale), epsilon)
        if x.dtype != stat_dtype:
            y = cast(y, x.dtype)
        return y, out_mean, out_var


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases (tf.nn.xw_plus_b)."""
    with get_default_graph().name_scope(name or "xw_plus_b") as scope:
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)


def zero_fraction(value, name=None):
    """The fraction of value's elements that are zero, as float32 (tf.nn.zero_fraction)."""
    with get_default_graph().name_scope(name or "zero_fraction"):
        value = convert_to_tensor(value, name="value")
        zero = cast(0, value.dtype) if value.dtype != dtypes.bool_ else False
        return reduce_mean(cast(math_ops.equal(value, zero), dtypes.float32), name="fraction")


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):  # noqa: A002
    """input / (bias + alpha * sum of the squares of the channels within depth_radius) ** beta,
    over the last axis of a 4-D input (tf.nn.lrn). TF's LRN kernel, composed: the window sum is a
    product with a banded 0/1 matrix, so the gradient is that of the composition (TF's LRNGrad)."""
    with get_default_graph().name_scope(name or "LRN"):
        x = convert_to_tensor(input, name="input")
        if x.shape.ndims not in (None, 4) or x.dtype not in (dtypes.float32, dtypes.float64):
            raise build_error("LRN", name, f"input must be a 4-D float32 or float64 tensor, got {x.dtype.name} "
                              f"{x.shape}", ValueError)
        channels = x.shape.dims[-1] if x.shape.ndims == 4 else None
        if channels is None:
            raise build_error("LRN", name, f"the number of channels (last dimension) must be known, got {x.shape}")
        band = (np.abs(np.subtract.outer(np.arange(channels), np.arange(channels))) <= depth_radius)
        sums = reshape(math_ops.matmul(reshape(math_ops.square(x), [-1, channels]), band.astype(x.dtype.np)),
                       shape_of(x))
        return math_ops.multiply(x, math_ops.pow(bias + alpha * sums, -beta), name="LRN")


lrn = local_response_normalization
