"""Softmax, log-softmax and the fused cross-entropies (tf.nn.*), with their gradients."""
from pygrad import dtypes
from pygrad.graph import build_error, get_default_graph
from pygrad.ops.array_ops import convert_to_tensor, expand_dims, reshape, stop_gradient, transpose
from pygrad.ops.math_ops import FLOATS, check_dtype
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.ops import math_ops
from pygrad.registry import OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape


def _axis_attrs(attrs, ins, outs):
    return {"axis": attrs["axis"] % len(ins[0].shape.dims)}


def _check_axis(x, axis):
    check_dtype(x, FLOATS, "logits")
    n = x.shape.ndims
    if n is not None and (n == 0 or not -n <= axis < n):
        fail(f"axis {axis} is out of range for logits of shape {x.shape}")


# ---------------------------------------------------------------- softmax

Softmax = OpDef("Softmax", kernel="softmax_fwd")


@Softmax.shape
def _(logits, *, axis):
    _check_axis(logits, axis)
    return Spec(logits.dtype, logits.shape)


Softmax.native_attrs(_axis_attrs)


@Softmax.grad
def _(op, dy):
    return [SoftmaxGrad(op.outputs[0], dy, axis=op.attrs["axis"])]


SoftmaxGrad = OpDef("SoftmaxGrad", kernel="softmax_bwd")


@SoftmaxGrad.shape
def _(y, dy, *, axis):
    if y.dtype != dy.dtype:
        fail_dtype(f"y and dy must have one dtype, got {y.dtype.name} and {dy.dtype.name}")
    if not y.shape.is_compatible_with(dy.shape):
        fail(f"y {y.shape} and dy {dy.shape} must have the same shape")
    return Spec(y.dtype, y.shape.merge_with(dy.shape))


SoftmaxGrad.native_attrs(_axis_attrs)


@SoftmaxGrad.grad
def _(op, g):
    # dx = y * (dy - s), s = sum(dy * y): differentiate that expression.
    y, dy = op.inputs
    axis = op.attrs["axis"]
    s = reduce_sum(dy * y, axis=axis, keepdims=True)
    gy = reduce_sum(g * y, axis=axis, keepdims=True)
    return [g * (dy - s) - dy * gy, SoftmaxGrad(y, g, axis=axis)]


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / sum(exp(logits)) along axis (default: the last)."""
    axis = -1 if axis is None and dim is None else axis if axis is not None else dim
    return Softmax(convert_to_tensor(logits), axis=int(axis), name=name or "Softmax")


# ---------------------------------------------------------------- log_softmax

LogSoftmax = OpDef("LogSoftmax", kernel="log_softmax_fwd")


@LogSoftmax.shape
def _(logits, *, axis):
    _check_axis(logits, axis)
    return Spec(logits.dtype, logits.shape)


LogSoftmax.native_attrs(_axis_attrs)


@LogSoftmax.grad
def _(op, dy):
    return [LogSoftmaxGrad(op.outputs[0], dy, axis=op.attrs["axis"])]


LogSoftmaxGrad = OpDef("LogSoftmaxGrad", kernel="log_softmax_bwd")
LogSoftmaxGrad.shape(SoftmaxGrad.shape_fn)
LogSoftmaxGrad.native_attrs(_axis_attrs)


@LogSoftmaxGrad.grad
def _(op, g):
    # dx = dy - exp(y) * sum(dy): differentiate that expression.
    y, dy = op.inputs
    axis = op.attrs["axis"]
    e = math_ops.exp(y)
    return [-g * e * reduce_sum(dy, axis=axis, keepdims=True),
            g - reduce_sum(g * e, axis=axis, keepdims=True)]


def log_softmax(logits, axis=None, name=None, dim=None):
    axis = -1 if axis is None and dim is None else axis if axis is not None else dim
    return LogSoftmax(convert_to_tensor(logits), axis=int(axis), name=name or "LogSoftmax")


# ---------------------------------------------------------------- cross-entropies
# The fused forward returns (loss, backprop); backprop = softmax - labels is the gradient.

SoftmaxCrossEntropyWithLogits = OpDef("SoftmaxCrossEntropyWithLogits", kernel="softmax_xent_fwd")


@SoftmaxCrossEntropyWithLogits.shape
def _(logits, labels):
    check_dtype(logits, FLOATS, "logits")
    if labels.dtype != logits.dtype:
        fail_dtype(f"labels must have the logits' dtype {logits.dtype.name}, got {labels.dtype.name}")
    if logits.shape.ndims not in (None, 2) or not logits.shape.is_compatible_with(labels.shape):
        fail(f"logits and labels must be matrices of the same shape, got logits: {logits.shape} and "
             f"labels: {labels.shape}")
    shape = logits.shape.merge_with(labels.shape)
    return [Spec(logits.dtype, TensorShape([shape[0].value])), Spec(logits.dtype, shape)]


def _backprop_grad(logits, dbackprop):
    """The gradient through backprop = softmax(logits) - labels, for logits (softmax's Jacobian)."""
    sm = softmax(logits)
    return (dbackprop - reduce_sum(dbackprop * sm, axis=-1, keepdims=True)) * sm


def _add(a, b):
    return b if a is None else a + b


@SoftmaxCrossEntropyWithLogits.grad
def _(op, dloss, dbackprop):
    # Either output may get no gradient (None): a second derivative reaches backprop only.
    logits = op.inputs[0]
    g_logits = g_labels = None
    if dloss is not None:
        dloss = expand_dims(dloss, -1)
        g_logits = dloss * op.outputs[1]
        g_labels = dloss * -log_softmax(logits)
    if dbackprop is not None:
        g_logits = _add(g_logits, _backprop_grad(logits, dbackprop))
        g_labels = _add(g_labels, -dbackprop)
    return [g_logits, g_labels]


SparseSoftmaxCrossEntropyWithLogits = OpDef("SparseSoftmaxCrossEntropyWithLogits", kernel="sparse_softmax_xent_fwd")


@SparseSoftmaxCrossEntropyWithLogits.shape
def _(logits, labels):
    check_dtype(logits, FLOATS, "logits")
    check_dtype(labels, (dtypes.int32, dtypes.int64), "labels")
    if logits.shape.ndims not in (None, 2) or labels.shape.ndims not in (None, 1) or \
            not logits.shape[:1].is_compatible_with(labels.shape):
        fail(f"logits must be [batch, classes] and labels [batch], got logits: {logits.shape} and "
             f"labels: {labels.shape}")
    batch = logits.shape[:1].merge_with(labels.shape)
    return [Spec(logits.dtype, batch), Spec(logits.dtype, logits.shape)]


@SparseSoftmaxCrossEntropyWithLogits.grad
def _(op, dloss, dbackprop):
    g = None if dloss is None else expand_dims(dloss, -1) * op.outputs[1]
    if dbackprop is not None:
        g = _add(g, _backprop_grad(op.inputs[0], dbackprop))
    return [g, None]


def _as_matrix(logits, labels, sparse, opdef, name):
    """Reshapes rank != 2 inputs to matrices; returns (logits, labels, restore(loss))."""
    n = logits.shape.ndims
    if n == 2 or n is None:
        return logits, labels, lambda loss: loss
    if n == 0:
        raise opdef.error(f"logits must have rank >= 1, got shape {logits.shape}", name)
    dims = logits.shape.as_list()
    if any(d is None for d in dims[1:]):
        raise opdef.error(f"logits of rank {n} need known dimensions after the first, got {logits.shape}", name)
    flat_logits = reshape(logits, [-1, dims[-1]])
    flat_labels = reshape(labels, [-1] if sparse else [-1, dims[-1]])
    return flat_logits, flat_labels, lambda loss: reshape(loss, [-1 if d is None else d for d in dims[:-1]])


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, axis=-1, name=None, dim=None):
    """-sum(labels * log_softmax(logits)) per row; gradients flow to logits and labels."""
    name = name or "SoftmaxCrossEntropyWithLogits"
    if _sentinel is not None:
        raise SoftmaxCrossEntropyWithLogits.error("Only call softmax_cross_entropy_with_logits with named arguments "
                                                  "(labels=..., logits=...)", name)
    axis = dim if dim is not None else axis
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype=logits.dtype)
    rank = logits.shape.ndims
    if axis not in (-1, (rank or 0) - 1):  # TF's _move_dim_to_end: the classes' axis moved last
        if rank is None:
            raise SoftmaxCrossEntropyWithLogits.error(f"axis {axis} needs logits of known rank, got {logits.shape}",
                                                      name)
        if not -rank <= axis < rank:
            raise SoftmaxCrossEntropyWithLogits.error(f"axis {axis} is out of range for logits of shape "
                                                      f"{logits.shape}", name)
        axis %= rank
        order = [i for i in range(rank) if i != axis] + [axis]
        logits, labels = transpose(logits, order), transpose(labels, order)
    flat_logits, flat_labels, restore = _as_matrix(logits, labels, False, SoftmaxCrossEntropyWithLogits, name)
    loss, _ = SoftmaxCrossEntropyWithLogits(flat_logits, flat_labels, name=name)
    return restore(loss)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    """As _v2, but no gradient flows into labels (TF1's version)."""
    if _sentinel is not None:
        raise SoftmaxCrossEntropyWithLogits.error("Only call softmax_cross_entropy_with_logits with named arguments "
                                                  "(labels=..., logits=...)", name)
    return softmax_cross_entropy_with_logits_v2(labels=stop_gradient(labels), logits=logits,
                                                axis=dim if axis is None else axis, name=name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """Cross-entropy against integer class labels; labels outside [0, classes) raise at run time."""
    name = name or "SparseSoftmaxCrossEntropyWithLogits"
    if _sentinel is not None:
        raise SparseSoftmaxCrossEntropyWithLogits.error("Only call sparse_softmax_cross_entropy_with_logits with named "
                                                        "arguments (labels=..., logits=...)", name)
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    flat_logits, flat_labels, restore = _as_matrix(logits, labels, True, SparseSoftmaxCrossEntropyWithLogits, name)
    loss, _ = SparseSoftmaxCrossEntropyWithLogits(flat_logits, flat_labels, name=name)
    return restore(loss)


relu = math_ops.relu
sigmoid = math_ops.sigmoid
tanh = math_ops.tanh


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    t = convert_to_tensor(t)
    if not t.dtype.is_floating:
        raise build_error("L2Loss", name, f"t must be floating point, got {t.dtype.name}", TypeError)
    return math_ops.multiply(reduce_sum(math_ops.square(t)), 0.5, name=name or "L2Loss")


def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel dimension: the last one, or dimension 1 for data_format
    "NCHW" (any "NC..." format); bias must be a vector of that size."""
    value, bias = convert_to_tensor(value), convert_to_tensor(bias)
    if bias.shape.ndims not in (None, 1):
        raise build_error("BiasAdd", name, f"bias must be a vector, got shape {bias.shape}")
    if value.shape.ndims is not None and value.shape.ndims < 2:
        raise build_error("BiasAdd", name, f"value must have rank >= 2, got shape {value.shape}")
    channels_first = data_format is not None and data_format.startswith("NC")
    if data_format not in (None, "NHWC", "N..C") and not channels_first:
        raise build_error("BiasAdd", name, f"unknown data_format {data_format!r} (expected NHWC or NCHW)")
    if channels_first and value.shape.ndims is None:
        raise build_error("BiasAdd", name, f"data_format {data_format} needs value of known rank, got shape "
                                           f"{value.shape}")
    channels = value.shape[1 if channels_first else -1].value if value.shape.ndims is not None else None
    if channels is not None and bias.shape.ndims == 1 and bias.shape[0].value not in (None, channels):
        raise build_error("BiasAdd", name, f"bias of shape {bias.shape} must have the size of dimension "
                                            f"{1 if channels_first else -1} of value {value.shape}")
    if channels_first:
        bias = reshape(bias, [-1] + [1] * (value.shape.ndims - 2))
    return math_ops.add(value, bias, name=name or "BiasAdd")


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases, in name scope "xw_plus_b" (TF's tf.nn.xw_plus_b)."""
    with get_default_graph().name_scope(name or "xw_plus_b") as scope:
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)
