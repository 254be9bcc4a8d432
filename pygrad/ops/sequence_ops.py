"""Sequences and layout: range, linspace, sequence_mask, reverse, pad and placeholder_with_default.

range and linspace are computed when the graph is built from Python values or constants, as
TF's kernels compute them; `tf.range(tf.shape(x)[i])` becomes an op whose value comes from x's
shape when a plan is built, and a range of values only a run computes (`tf.range(tf.reduce_max(x))`)
is a host op between two plans (host.py), since its length is a value. pad's kernels are in
csrc/kernels/pad.cc; reverse is a strided slice with stride -1 on the strided_slice kernels."""
import builtins

import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, build_error, unwrap
from pygrad.ops.array_ops import (cast, constant, constant_value, convert_to_tensor, expand_dims, numpy_value,
                                  static_int, static_ints, static_value)
from pygrad.ops.math_ops import less
from pygrad.ops.shape_exprs import symbolic
from pygrad.registry import ALIAS, BETWEEN, VALUE, HostError, OpDef, RuleError, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape, as_shape



class _Wrapper:
    """The op type a Python-level function reports its errors under (static_value needs one)."""

    def __init__(self, type_name):
        self.type = type_name

    def error(self, rule, name=None, cls=ValueError):
        return build_error(self.type, name, rule, cls)


# ---------------------------------------------------------------- range

Range = OpDef("Range", lowering=VALUE, differentiable=False, shape_only_inputs={0})

# TF's order for the dtype of range's result: the last of its arguments' dtypes in this list.
_RANGE_DTYPES = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]


def _range_values(start, limit, delta, dtype):
    """TF's Range kernel: the count is ceil(|limit - start| / |delta|) and each value is the
    previous one plus delta, in dtype."""
    np_dtype = dtype.np
    start, limit, delta = (np.asarray(v).astype(np_dtype) for v in (start, limit, delta))
    if delta == 0:
        fail(f"Requires delta != 0: {delta}")
    if delta > 0 and start > limit:
        fail(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        fail(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if dtype.is_integer:
        n = (abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta))
    else:
        n = int(np.ceil(abs((limit - start) / delta)))
    out = np.empty(n, np_dtype)
    value = start
    for i in builtins.range(n):
        out[i] = value
        value = np_dtype.type(value + delta)
    return out


@Range.shape
def _(x, *, start, delta, axis, dtype):
    if x.shape.dims is None:
        return Spec(dtype, TensorShape([None]))
    if not 0 <= axis < len(x.shape.dims):
        fail(f"dimension {axis} is out of range for shape {x.shape}")
    size = x.shape.dims[axis]
    return Spec(dtype, TensorShape([None if size is None else len(_range_values(start, size, delta, dtype))]))


@Range.value
def _(attrs, x):
    return _range_values(attrs["start"], x.shape.dims[attrs["axis"]], attrs["delta"], attrs["dtype"])


ComputedRange = OpDef("ComputedRange", host=BETWEEN, differentiable=False)


@ComputedRange.shape
def _(start, limit, delta):
    for what, t in (("start", start), ("limit", limit), ("delta", delta)):
        if t.shape.ndims not in (None, 0):
            fail(f"{what} must be a scalar, got shape {t.shape}")
    return Spec(start.dtype, TensorShape([None]))


@ComputedRange.host
def _(ctx, op, values):
    try:
        return [_range_values(*values, op.outputs[0].dtype)]
    except RuleError as e:
        raise HostError(str(e)) from None


def _shape_dim(t):
    """(x, i) when t is tf.shape(x)[i] (or another expression of that size alone, such as the
    tf.size of a vector), else None."""
    t = unwrap(t)
    if isinstance(t, Tensor) and t.dtype.is_integer:
        v = symbolic(t)
        if v is not None and v.ndim == 0 and isinstance(v[()], tuple):
            return v[()]
    if not isinstance(t, Tensor) or t.op.type != "StridedSlice" or t.op.inputs[0].op.type != "Shape":
        return None
    a = t.op.attrs
    if a["shrink_axis_mask"] != 1 or len(a["begin"]) != 1 or a["ellipsis_mask"] or a["new_axis_mask"]:
        return None
    x = t.op.inputs[0].op.inputs[0]
    i = a["begin"][0]
    if i < 0:
        if x.shape.ndims is None:
            return None
        i += x.shape.ndims
    return x, i


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """[start, start + delta, ...) up to limit (excluded), as tf.range: range(n) is [0, n); the
    dtype is the widest of the arguments' (int32 < int64 < float32 < float64) unless given.
    When start, limit and delta are Python values or constants, the range is a constant; when limit
    is a size the plan knows (tf.shape(x)[i], the tf.size of a vector), its value comes from the
    plan; otherwise the run computes the arguments and then the range."""
    if limit is None:
        start, limit = 0, start
    shape_dim = _shape_dim(limit)
    if not shape_dim and any(constant_value(v) is None for v in (start, limit, delta)):
        return _computed_range(start, limit, delta, dtype, name)
    args = {"start": start, "delta": delta} if shape_dim else {"start": start, "limit": limit, "delta": delta}
    values = {}
    for what, v in args.items():
        v = unwrap(v)
        if isinstance(v, Tensor):  # (static_value's error names the op)
            values[what] = np.asarray(v.op.attrs["value"]) if v.op.type == "Const" else \
                static_value(v, what, Range, name)
        else:
            try:
                values[what] = numpy_value(v, dtype)
            except (TypeError, ValueError) as e:
                raise Range.error(str(e), name, type(e)) from None
        if values[what].ndim != 0:
            raise Range.error(f"{what} must be a scalar, got shape {values[what].shape}", name)
    if dtype is None:
        kinds = [dtypes.as_dtype(v.dtype) for v in values.values()]
        if shape_dim:
            kinds.append(unwrap(limit).dtype)
        if any(k not in _RANGE_DTYPES for k in kinds):
            raise Range.error(f"arguments must be int32, int64, float32 or float64, got {[k.name for k in kinds]}",
                              name, TypeError)
        dtype = max(kinds, key=_RANGE_DTYPES.index)
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _RANGE_DTYPES:
        raise Range.error(f"dtype must be int32, int64, float32 or float64, got {dtype.name}", name, TypeError)
    if shape_dim:
        x, axis = shape_dim
        return Range(x, start=values["start"].astype(dtype.np)[()], delta=values["delta"].astype(dtype.np)[()],
                     axis=axis, dtype=dtype, name=name)
    try:
        out = _range_values(values["start"], values["limit"], values["delta"], dtype)
    except ValueError as e:
        raise Range.error(str(e), name) from None
    return constant(out, dtype=dtype, name=name)


def _computed_range(start, limit, delta, dtype, name):
    args = [convert_to_tensor(v) for v in (start, limit, delta)]
    if dtype is None:
        if any(a.dtype not in _RANGE_DTYPES for a in args):
            raise Range.error(f"arguments must be int32, int64, float32 or float64, got "
                              f"{[a.dtype.name for a in args]}", name, TypeError)
        dtype = max((a.dtype for a in args), key=_RANGE_DTYPES.index)
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _RANGE_DTYPES:
        raise Range.error(f"dtype must be int32, int64, float32 or float64, got {dtype.name}", name, TypeError)
    return ComputedRange(*(cast(a, dtype) for a in args), name=name)


# ---------------------------------------------------------------- linspace


def lin_space(start, stop, num, name=None):
    """num evenly spaced values from start to stop (both included), as TF's LinSpace kernel:
    start + i * (stop - start) / (num - 1), the last one stop itself. start and stop: float32 or
    float64 scalars; all three known when the graph is built."""
    name = name or "LinSpace"
    start_v = static_value(start, "start", LinSpace, name)
    stop_v = static_value(stop, "stop", LinSpace, name)
    n = static_int(num, "num", LinSpace, name)
    dtype = dtypes.as_dtype(start_v.dtype)
    if dtype not in (dtypes.float32, dtypes.float64) or stop_v.dtype != start_v.dtype:
        raise LinSpace.error(f"start and stop must be float32 or float64 of one dtype, got {start_v.dtype} and "
                             f"{stop_v.dtype}", name, TypeError)
    if start_v.ndim or stop_v.ndim:
        raise LinSpace.error(f"start and stop must be scalars, got shapes {start_v.shape} and {stop_v.shape}", name)
    if n <= 0:
        raise LinSpace.error(f"Requires num > 0: {n}", name)
    t = dtype.np.type
    out = np.empty(n, dtype.np)
    out[0] = start_v
    if n > 1:
        step = t(t(stop_v - start_v) / t(n - 1))
        out[:] = [t(start_v + step * t(i)) for i in np.arange(n)]
        out[-1] = stop_v
    return constant(out, name=name)


LinSpace = _Wrapper("LinSpace")
linspace = lin_space


# ---------------------------------------------------------------- sequence_mask


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool_, name=None):
    """mask[..., j] = j < lengths[...], of shape lengths.shape + [maxlen] (tf.sequence_mask).
    maxlen: a Python value or constant, or tf.shape(x)[i]. It defaults to max(lengths), which sets
    the shape: then lengths must be known when the graph is built."""
    name = name or "SequenceMask"
    lengths = convert_to_tensor(lengths)
    if lengths.dtype not in (dtypes.int32, dtypes.int64):
        raise SequenceMask.error(f"lengths must be int32 or int64, got {lengths.dtype.name}", name, TypeError)
    if maxlen is not None and _shape_dim(maxlen):
        with lengths.graph.as_default():
            row = range(maxlen, dtype=lengths.dtype)
    elif maxlen is None:
        value = static_value(lengths, "lengths (with maxlen=None, max(lengths) sets the output's shape)",
                             SequenceMask, name)
        maxlen = max(int(value.max()) if value.size else 0, 0)
    else:
        m = static_ints(maxlen, "maxlen", SequenceMask, name)
        if m.ndim != 0:
            raise SequenceMask.error(f"Argument `maxlen` must be scalar for sequence_mask, got shape {m.shape}", name)
        maxlen = int(m)
    if not isinstance(maxlen, Tensor):
        with lengths.graph.as_default():
            row = constant(np.arange(maxlen, dtype=lengths.dtype.np), name="Range")
    with lengths.graph.as_default():
        mask = less(row, expand_dims(lengths, -1), name=name)
    dtype = dtypes.as_dtype(dtype)
    return mask if dtype == dtypes.bool_ else cast(mask, dtype)


SequenceMask = _Wrapper("SequenceMask")


# ---------------------------------------------------------------- reverse

ReverseV2 = OpDef("ReverseV2", kernel="strided_slice_fwd")


@ReverseV2.shape
def _(x, *, axis):
    if x.shape.dims is not None:
        n = len(x.shape.dims)
        for a in axis:
            if not -n <= a < n:
                fail(f"axis {a} is out of range [{-n}, {n}) for shape {x.shape}")
        canonical = [a % n for a in axis]
        if len(set(canonical)) != len(canonical):
            fail(f"axis {list(axis)}: a dimension is specified more than once")
    return Spec(x.dtype, x.shape)


@ReverseV2.native_attrs
def _(attrs, ins, outs):
    dims = ins[0].shape.as_list()
    flip = {a % len(dims) for a in attrs["axis"]}
    return {"begin": [d - 1 if i in flip and d else 0 for i, d in enumerate(dims)],
            "strides": [-1 if i in flip else 1 for i in builtins.range(len(dims))], "sizes": dims}


@ReverseV2.grad
def _(op, dy):
    return [ReverseV2(dy, axis=op.attrs["axis"])]


def reverse(tensor, axis, name=None):
    """tensor with the order of its elements reversed along each dimension in axis (tf.reverse)."""
    axis = static_ints(axis, "axis", ReverseV2, name).reshape(-1)
    return ReverseV2(convert_to_tensor(tensor), axis=tuple(int(a) for a in axis), name=name or "ReverseV2")


reverse_v2 = reverse


# ---------------------------------------------------------------- reverse_sequence

ReverseSequence = OpDef("ReverseSequence", kernel="reverse_sequence")


@ReverseSequence.shape
def _(x, seq_lengths, *, seq_dim, batch_dim):
    if seq_lengths.dtype not in (dtypes.int32, dtypes.int64):
        fail_dtype(f"seq_lengths must be int32 or int64, got {seq_lengths.dtype.name}")
    if seq_lengths.shape.ndims not in (None, 1):
        fail(f"seq_lengths must be 1-dim, not {seq_lengths.shape.ndims}-dim")
    if x.shape.dims is not None:
        n = len(x.shape.dims)
        if seq_dim == batch_dim:  # TF's checks and messages, in its order
            fail(f"batch_dim == seq_dim == {seq_dim}")
        if not 0 <= seq_dim < n:
            fail(f"seq_dim must be < input rank ( {seq_dim} vs. {n}) (input shape {x.shape})")
        if not 0 <= batch_dim < n:
            fail(f"batch_dim must be < input rank ( {batch_dim} vs. {n}) (input shape {x.shape})")
        batch = x.shape.dims[batch_dim]
        if batch is not None and seq_lengths.shape.dims is not None and seq_lengths.shape.dims[0] not in (None, batch):
            fail(f"Length of seq_lengths != input.dims({batch_dim}), ({seq_lengths.shape.dims[0]} vs. {batch})")
    return Spec(x.dtype, x.shape)


ReverseSequence.native_attrs(lambda attrs, ins, outs: {"seq_axis": attrs["seq_dim"], "batch_axis": attrs["batch_dim"]})


@ReverseSequence.grad
def _(op, dy):
    return [ReverseSequence(dy, op.inputs[1], **op.attrs), None]


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None, seq_dim=None, batch_dim=None):
    """For each entry b along batch_axis, its first seq_lengths[b] elements along seq_axis reversed
    (tf.reverse_sequence); the rest is copied. A length outside [0, input.shape[seq_axis]] fails
    the run. seq_dim and batch_dim are the older names; batch_axis defaults to 0."""
    seq = seq_axis if seq_axis is not None else seq_dim
    batch = batch_axis if batch_axis is not None else batch_dim if batch_dim is not None else 0
    x = convert_to_tensor(input)
    if seq is None:
        raise ReverseSequence.error("seq_axis must be given", name)
    seq, batch = static_int(seq, "seq_axis", ReverseSequence, name), static_int(batch, "batch_axis",
                                                                                 ReverseSequence, name)
    if x.shape.ndims is not None:
        seq, batch = (a + x.shape.ndims if a < 0 else a for a in (seq, batch))
    with x.graph.as_default():
        lengths = convert_to_tensor(seq_lengths)
    return ReverseSequence(x, lengths, seq_dim=seq, batch_dim=batch, name=name or "ReverseSequence")


# ---------------------------------------------------------------- pad

_PAD_MODES = {"CONSTANT": 0, "REFLECT": 1, "SYMMETRIC": 2}


def _check_paddings(x, paddings, mode):
    if x.shape.dims is None:
        return TensorShape([None] * len(paddings))
    if len(paddings) != len(x.shape.dims):
        fail(f"The first dimension of paddings must be the rank of inputs: paddings {[list(p) for p in paddings]}, "
             f"input shape {x.shape}")
    dims = []
    for d, ((b, a), size) in enumerate(zip(paddings, x.shape.dims)):
        if b < 0 or a < 0:
            fail(f"Paddings must be non-negative: {b} {a}")
        if size is not None and mode == 1 and (b >= size and b or a >= size and a):
            fail(f"paddings must be less than the dimension size: {b}, {a} not less than {size} (dimension {d})")
        if size is not None and mode == 2 and (b > size or a > size):
            fail(f"paddings must be no greater than the dimension size: {b}, {a} greater than {size} (dimension {d})")
        dims.append(None if size is None else size + b + a)
    return TensorShape(dims)


def _pad_attrs(attrs, x_shape):
    return {"paddings": [int(v) for p in attrs["paddings"] for v in p], "mode": attrs["mode"],
            "constant_value": attrs.get("constant_value", 0.0)}


Pad = OpDef("Pad", kernel="pad_fwd")  # TF's Pad, PadV2 and MirrorPad in one op


@Pad.shape
def _(x, *, paddings, mode, constant_value):
    return Spec(x.dtype, _check_paddings(x, paddings, mode))


Pad.native_attrs(lambda attrs, ins, outs: _pad_attrs(attrs, ins[0].shape))


@Pad.grad
def _(op, dy):
    type_ = PadGrad if op.attrs["mode"] == 0 else MirrorPadGrad
    return [type_(dy, op.inputs[0], paddings=op.attrs["paddings"], mode=op.attrs["mode"])]


def _pad_grad_op(type_name):
    """dx from dy: the slice of dy (CONSTANT) or, for a mirror pad, each element of x summed with
    its reflections (TF's MirrorPadGrad). x gives the shape only."""
    d = OpDef(type_name, kernel="pad_bwd", shape_only_inputs={1})

    @d.shape
    def _(dy, x, *, paddings, mode):
        padded = _check_paddings(x, paddings, mode)
        if not dy.shape.is_compatible_with(padded):
            fail(f"dy {dy.shape} does not have the padded shape {padded}")
        return Spec(dy.dtype, x.shape)

    d.native_attrs(lambda attrs, ins, outs: _pad_attrs(attrs, ins[1].shape))

    @d.grad
    def _(op, g):
        return [Pad(g, paddings=op.attrs["paddings"], mode=op.attrs["mode"], constant_value=0.0), None]

    return d


PadGrad = _pad_grad_op("PadGrad")
MirrorPadGrad = _pad_grad_op("MirrorPadGrad")


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """tensor padded by paddings[d] = [before, after] elements along each dimension d (tf.pad).
    mode (any case): CONSTANT fills with constant_values; REFLECT mirrors without the edge
    element (pads less than the dimension), SYMMETRIC with it (pads at most the dimension)."""
    key = str(mode).upper()
    if key not in _PAD_MODES:
        raise Pad.error(f"Unknown padding mode: {mode}", name)
    x = convert_to_tensor(tensor)
    p = static_ints(paddings, "paddings", Pad, name)
    if p.ndim != 2 or p.shape[1] != 2:
        raise Pad.error(f"paddings must be a matrix with 2 columns: {p.tolist()}", name)
    value = static_value(constant_values, "constant_values", Pad, name)
    if value.ndim != 0:
        raise Pad.error(f"constant_values must be a scalar, got shape {value.shape}", name)
    if x.dtype.is_bool:
        value = bool(value)
    elif x.dtype.is_integer:
        if value.dtype.kind == "f" and value != np.floor(value):
            raise Pad.error(f"constant_values {value} does not fit {x.dtype.name}", name, TypeError)
        value = int(value)
    else:
        value = float(value)
    return Pad(x, paddings=tuple((int(b), int(a)) for b, a in p), mode=_PAD_MODES[key],
               constant_value=value, name=name or ("MirrorPad" if key != "CONSTANT" else "Pad"))


# ---------------------------------------------------------------- placeholder_with_default

PlaceholderWithDefault = OpDef("PlaceholderWithDefault", lowering=ALIAS)


@PlaceholderWithDefault.shape
def _(x, *, shape):
    if not shape.is_compatible_with(x.shape):
        fail(f"the default value's shape {x.shape} is not compatible with shape {shape}")
    # The graph's shape is the given one (a fed value may have another); a plan's, the default's.
    return Spec(x.dtype, shape if isinstance(x, Tensor) else x.shape)


@PlaceholderWithDefault.grad
def _(op, dy):
    return [dy]


def placeholder_with_default(input, shape, name=None):
    """The value of input unless a value is fed for this tensor (tf.placeholder_with_default); a
    fed value must have a shape compatible with shape, which may hold None."""
    x = convert_to_tensor(input)
    shape = as_shape(shape)
    return PlaceholderWithDefault(x, shape=shape, name=name or "PlaceholderWithDefault")
