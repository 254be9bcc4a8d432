"""Ops that join, split, pick and repeat: concat, stack, unstack, split, gather, one_hot, where
and tile (slicing is in slice_ops.py). Each op's shape rule, lowering and gradient form one block;
the kernels are in csrc/kernels/array.cc and csrc/kernels/gather.cc.

Attributes that decide shapes (axis, multiples, depth) must be known when the graph is built:
Python values or constant tensors, as pygrad's planner needs static shapes."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, TensorLike
from pygrad.ops import array_ops
from pygrad.ops.array_ops import (constant, convert_n_same_dtype, convert_to_tensor, identity, reshape, shape,
                                  static_int, static_ints, static_value, zeros_like)
from pygrad.ops.dynamic_shape_ops import where_true
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.registry import BETWEEN, CUSTOM, SHAPE_ONLY_AFTER_FIRST, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

newaxis = None
INDEX_DTYPES = (dtypes.int32, dtypes.int64)


# ---------------------------------------------------------------- helpers


def _axis(axis, ndims, extra=0, what="axis"):
    """axis in [-(ndims + extra), ndims + extra) made non-negative; a rule error otherwise."""
    n = ndims + extra
    if not -n <= axis < n:
        fail(f"{what} {axis} is out of range [{-n}, {n}) for rank {ndims}")
    return axis % n


def _same_dtype(xs):
    for i, x in enumerate(xs[1:], 1):
        if x.dtype != xs[0].dtype:
            fail_dtype(f"all inputs must have one dtype, got {xs[0].dtype.name} (input 0) and {x.dtype.name} "
                       f"(input {i})")


def _outputs(result):
    """An op call's outputs as a list (a single output comes back as a bare tensor)."""
    return [result] if isinstance(result, Tensor) else list(result)


def _or_zeros(grads, like):
    """Each gradient, or zeros shaped like the matching tensor where it is None."""
    return [g if g is not None else zeros_like(t) for g, t in zip(grads, like)]


# ---------------------------------------------------------------- concat and its gradient


def _joined_shape(xs, axis):
    """The shape of xs joined along axis, None where unknown; fails on mismatched ranks or dims."""
    ranks = sorted({x.shape.ndims for x in xs if x.shape.ndims is not None})
    if len(ranks) > 1:
        fail(f"all inputs must have one rank, got shapes {', '.join(str(x.shape) for x in xs)}")
    if not ranks:
        return TensorShape(None)
    n = ranks[0]
    if n == 0:
        fail("cannot concatenate scalars (use tf.stack instead)")
    a = _axis(axis, n)
    dims, total = [None] * n, 0
    for i, x in enumerate(xs):
        if x.shape.dims is None:
            total = None
            continue
        for d, size in enumerate(x.shape.dims):
            if d == a:
                total = None if total is None or size is None else total + size
            elif size is not None:
                if dims[d] is not None and dims[d] != size:
                    fail(f"dimension {d} of input {i} {x.shape} does not match the other inputs ({dims[d]}); "
                         f"only dimension {a} (axis {axis}) may differ, got shapes "
                         f"{', '.join(str(x.shape) for x in xs)}")
                dims[d] = size
    dims[a] = total
    return TensorShape(dims)


ConcatV2 = OpDef("ConcatV2", kernel="concat")


@ConcatV2.shape
def _(*values, axis):
    if not values:
        fail("needs at least one input")
    _same_dtype(values)
    return Spec(values[0].dtype, _joined_shape(values, axis))


ConcatV2.native_attrs(lambda attrs, ins, outs: {"axis": attrs["axis"] % len(outs[0].shape.dims)})


@ConcatV2.grad
def _(op, dy):
    return _outputs(ConcatV2Grad(dy, *op.inputs, axis=op.attrs["axis"]))


# dy split back into pieces shaped like the concatenated inputs (their values are not read).
ConcatV2Grad = OpDef("ConcatV2Grad", kernel="split", shape_only_inputs=SHAPE_ONLY_AFTER_FIRST)


@ConcatV2Grad.shape
def _(dy, *values, axis):
    joined = _joined_shape(values, axis)
    if not dy.shape.is_compatible_with(joined):
        fail(f"dy {dy.shape} does not have the shape of the concatenated inputs {joined}")
    return [Spec(dy.dtype, v.shape) for v in values]


ConcatV2Grad.native_attrs(lambda attrs, ins, outs: {"axis": attrs["axis"] % len(ins[0].shape.dims)})


@ConcatV2Grad.grad
def _(op, *grads):
    values = op.inputs[1:]
    return [ConcatV2(*_or_zeros(grads, op.outputs), axis=op.attrs["axis"])] + [None] * len(values)


def concat(values, axis, name="concat"):
    """values joined along axis (tf.concat); one value is returned as an identity."""
    values = convert_n_same_dtype(list(values) if isinstance(values, (list, tuple)) else [values], "ConcatV2")
    axis = static_int(axis, "axis", ConcatV2, name)
    if len(values) == 1:
        return identity(values[0], name=name)
    return ConcatV2(*values, axis=axis, name=name)


# ---------------------------------------------------------------- split


def _split_dim(value, axis):
    """(dims of value, the split axis made non-negative), or (None, None) when the rank is unknown."""
    if value.shape.dims is None:
        return None, None
    if not value.shape.dims:
        fail("cannot split a scalar")
    return list(value.shape.dims), _axis(axis, len(value.shape.dims))


Split = OpDef("Split", kernel="split")


@Split.shape
def _(value, *, num_split, axis):
    if num_split < 1:
        fail(f"num_split must be at least 1, got {num_split}")
    dims, a = _split_dim(value, axis)
    if dims is None:
        return [Spec(value.dtype, TensorShape(None))] * num_split
    if dims[a] is not None and dims[a] % num_split:
        fail(f"{num_split} splits do not evenly divide dimension {a} of {value.shape} (size {dims[a]})")
    dims[a] = None if dims[a] is None else dims[a] // num_split
    return [Spec(value.dtype, TensorShape(dims))] * num_split


SplitV = OpDef("SplitV", kernel="split")


@SplitV.shape
def _(value, *, size_splits, axis):
    if sum(1 for s in size_splits if s == -1) > 1 or any(s < -1 for s in size_splits):
        fail(f"size_splits {list(size_splits)} may hold one -1 and sizes of at least 0")
    dims, a = _split_dim(value, axis)
    if dims is None:
        return [Spec(value.dtype, TensorShape(None))] * len(size_splits)
    known = sum(s for s in size_splits if s != -1)
    sizes = list(size_splits)
    if dims[a] is not None:
        if (-1 in sizes and known > dims[a]) or (-1 not in sizes and known != dims[a]):
            fail(f"size_splits {list(size_splits)} do not add up to dimension {a} of {value.shape} (size {dims[a]})")
        sizes = [dims[a] - known if s == -1 else s for s in sizes]
    return [Spec(value.dtype, TensorShape(dims[:a] + [None if s == -1 else s] + dims[a + 1:])) for s in sizes]


@Split.native_attrs
@SplitV.native_attrs
def _(attrs, ins, outs):
    return {"axis": attrs["axis"] % len(ins[0].shape.dims)}


@Split.grad
@SplitV.grad
def _(op, *grads):
    return [ConcatV2(*_or_zeros(grads, op.outputs), axis=op.attrs["axis"])]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """value split along axis into num_or_size_splits equal pieces, or pieces of the listed sizes
    (one may be -1: the rest). Returns a list of tensors."""
    value = convert_to_tensor(value)
    axis = static_int(axis, "axis", Split, name)
    sizes = static_ints(num_or_size_splits, "num_or_size_splits", Split, name)
    if sizes.ndim == 0:
        return _outputs(Split(value, num_split=int(sizes), axis=axis, name=name))
    if num is not None and num != sizes.size:
        raise SplitV.error(f"num={num} does not match the {sizes.size} size_splits {sizes.tolist()}", name)
    return _outputs(SplitV(value, size_splits=tuple(int(s) for s in sizes), axis=axis, name=name))


# ---------------------------------------------------------------- stack and unstack
# A stack is a concat of the inputs re-read with a 1 inserted at the axis; an unstack, a split.

Pack = OpDef("Pack", lowering=CUSTOM)


@Pack.shape
def _(*values, axis):
    if not values:
        fail("needs at least one input")
    _same_dtype(values)
    shape = TensorShape(None)
    for i, v in enumerate(values):
        if not shape.is_compatible_with(v.shape):
            fail(f"all inputs must have one shape, got {values[0].shape} (input 0) and {v.shape} (input {i})")
        shape = shape.merge_with(v.shape)
    if shape.dims is None:
        return Spec(values[0].dtype, TensorShape(None))
    a = _axis(axis, len(shape.dims), extra=1)
    return Spec(values[0].dtype, TensorShape(shape.dims[:a] + (len(values),) + shape.dims[a:]))


@Pack.lower
def _(ctx, op):
    dims = ctx.in_specs()[0].shape.as_list()
    a = op.attrs["axis"] % (len(dims) + 1)
    ins = [ctx.operand(t, shape=dims[:a] + [1] + dims[a:]) for t in op.inputs]
    ctx.step("concat", ins, [ctx.output(0)], {"axis": a})


@Pack.grad
def _(op, dy):
    return _outputs(Unpack(dy, num=len(op.inputs), axis=op.attrs["axis"]))


Unpack = OpDef("Unpack", lowering=CUSTOM)


@Unpack.shape
def _(value, *, num, axis):
    if value.shape.dims is None:
        return [Spec(value.dtype, TensorShape(None))] * num
    dims = list(value.shape.dims)
    if not dims:
        fail("cannot unstack a scalar")
    a = _axis(axis, len(dims))
    if dims[a] is not None and dims[a] != num:
        fail(f"dimension {a} of {value.shape} has size {dims[a]}, not num={num}")
    return [Spec(value.dtype, TensorShape(dims[:a] + dims[a + 1:]))] * num


@Unpack.lower
def _(ctx, op):
    dims = ctx.in_specs()[0].shape.as_list()
    a = op.attrs["axis"] % len(dims)
    outs = [ctx.output(i).with_dims(dims[:a] + [1] + dims[a + 1:]) for i in range(len(op.outputs))]
    ctx.step("split", [ctx.operand(op.inputs[0])], outs, {"axis": a})


@Unpack.grad
def _(op, *grads):
    return [Pack(*_or_zeros(grads, op.outputs), axis=op.attrs["axis"])]


def stack(values, axis=0, name="stack"):
    """The tensors of values (one shape) stacked along a new dimension at axis (tf.stack)."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    axis = static_int(axis, "axis", Pack, name)
    if not any(isinstance(v, TensorLike) for v in values):
        return constant(np.stack([static_value(v, 'values', Pack, name) for v in values], axis=axis), name=name)
    return Pack(*convert_n_same_dtype(values, "Pack"), axis=axis, name=name)


def _autopack(values, name=None):
    """A list of tensors, numbers and such lists as one tensor, stacked (TF's autopacking)."""
    return stack([_autopack(v) if array_ops.holds_tensor(v) else v for v in values], name=name or "packed")


array_ops.autopack = _autopack


def unstack(value, num=None, axis=0, name="unstack"):
    """The slices of value along axis, as a list of num tensors (tf.unstack)."""
    value = convert_to_tensor(value)
    axis = static_int(axis, "axis", Unpack, name)
    dims = value.shape.dims
    if dims is not None and not -len(dims) <= axis < len(dims):
        raise Unpack.error(f"axis {axis} is out of range [{-len(dims)}, {len(dims)}) for shape {value.shape}", name)
    if num is None:
        if dims is None or dims[axis] is None:
            raise Unpack.error(f"cannot infer num from shape {value.shape} (axis {axis}); pass num", name)
        num = dims[axis]
    if num == 0:
        return []
    return _outputs(Unpack(value, num=int(num), axis=axis, name=name))


# ---------------------------------------------------------------- gather


def _check_indices(indices):
    if indices.dtype not in INDEX_DTYPES:
        fail_dtype(f"indices must be int32 or int64, got {indices.dtype.name}")


def _gather_shape(params, indices, axis):
    if params.shape.dims is None or indices.shape.dims is None:
        return TensorShape(None)
    p = params.shape.dims
    if not p:
        fail("params must have rank at least 1, got a scalar")
    a = _axis(axis, len(p))
    return TensorShape(p[:a] + indices.shape.dims + p[a + 1:])


GatherV2 = OpDef("GatherV2", kernel="gather_fwd")


@GatherV2.shape
def _(params, indices, *, axis):
    _check_indices(indices)
    return Spec(params.dtype, _gather_shape(params, indices, axis))


GatherV2.native_attrs(lambda attrs, ins, outs: {"axis": attrs["axis"] % len(ins[0].shape.dims)})


@GatherV2.grad
def _(op, dy):
    params, indices = op.inputs
    if op.attrs["axis"] == 0 and params.op.type == "VariableV2":
        # Rows of the variable, as TF's IndexedSlices (values [size(indices), ...], flat indices),
        # whose dense value is the scatter-add below.
        values = reshape(dy, [-1] + params.shape.as_list()[1:])
        return [IndexedSlices(values, reshape(indices, [-1]), shape(params),
                              densify=lambda s: GatherV2Grad(s.values, s.indices, params, axis=0)), None]
    return [GatherV2Grad(dy, indices, params, axis=op.attrs["axis"]), None]


# Dense gradient of a gather: dy scatter-added into zeros of params' shape (TF returns
# IndexedSlices instead). params gives the shape only.
GatherV2Grad = OpDef("GatherV2Grad", kernel="gather_bwd", shape_only_inputs={2})


@GatherV2Grad.shape
def _(dy, indices, params, *, axis):
    _check_indices(indices)
    if dy.dtype != params.dtype:
        fail_dtype(f"dy must have the dtype of params ({params.dtype.name}), got {dy.dtype.name}")
    if not dy.shape.is_compatible_with(_gather_shape(params, indices, axis)):
        fail(f"dy {dy.shape} does not have the gathered shape {_gather_shape(params, indices, axis)}")
    return Spec(dy.dtype, params.shape)


GatherV2Grad.native_attrs(lambda attrs, ins, outs: {"axis": attrs["axis"] % len(ins[2].shape.dims)})


@GatherV2Grad.grad
def _(op, g):
    return [GatherV2(g, op.inputs[1], axis=op.attrs["axis"]), None, None]


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices of params along axis at indices (int32 or int64, any shape): the result has shape
    params.shape[:axis] + indices.shape + params.shape[axis + 1:]. An index outside
    [0, params.shape[axis]) raises InvalidArgumentError when the graph runs."""
    if batch_dims != 0:
        raise GatherV2.error(f"batch_dims={batch_dims} is not supported, only 0", name)
    params = convert_to_tensor(params)
    with params.graph.as_default():
        indices = convert_to_tensor(indices)
    axis = 0 if axis is None else static_int(axis, "axis", GatherV2, name)
    if params.dtype == dtypes.string:  # strings live in Python: a host op (tf.train.slice_input_producer's)
        return StringGather(params, indices, axis=axis, name=name or "GatherV2")
    return GatherV2(params, indices, axis=axis, name=name or "GatherV2")


# GatherV2 of string tensors, which pygrad holds in Python: NumPy's take, run between plans (host.py).
StringGather = OpDef("StringGather", host=BETWEEN, differentiable=False)
StringGather.shape(GatherV2.shape_fn)


@StringGather.host
def _(ctx, op, values):
    params, indices = np.asarray(values[0], object), np.asarray(values[1])
    axis = op.attrs["axis"] % max(params.ndim, 1)
    bad = np.flatnonzero((indices < 0) | (indices >= params.shape[axis]))
    if bad.size:
        i = int(bad[0])
        raise HostError(f"indices[{i}] = {indices.reshape(-1)[i]} is not in [0, {params.shape[axis]})")
    return [np.take(params, indices, axis=axis)]


# ---------------------------------------------------------------- one_hot

OneHot = OpDef("OneHot", kernel="one_hot", differentiable=False)


@OneHot.shape
def _(indices, *, depth, on_value, off_value, axis, dtype):
    _check_indices(indices)
    if depth < 0:
        fail(f"depth must be at least 0, got {depth}")
    if indices.shape.dims is None:
        return Spec(dtype, TensorShape(None))
    dims = list(indices.shape.dims)
    if not -1 <= axis <= len(dims):
        fail(f"axis {axis} must be in [-1, {len(dims)}] for indices of shape {indices.shape}")
    a = len(dims) if axis == -1 else axis
    return Spec(dtype, TensorShape(dims[:a] + [depth] + dims[a:]))


@OneHot.native_attrs
def _(attrs, ins, outs):
    n = len(ins[0].shape.dims)
    return {"depth": attrs["depth"], "axis": n if attrs["axis"] == -1 else attrs["axis"],
            "on_value": attrs["on_value"], "off_value": attrs["off_value"]}


def _scalar_value(v, what, name):
    arr = static_value(v, what, OneHot, name)
    if arr.size != 1:
        raise OneHot.error(f"{what} must be a scalar, got {v!r}", name)
    return arr.reshape(())


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot tensor: on_value where the new axis equals the index, off_value elsewhere. An
    index outside [0, depth) gives a row of off_value (as TF). dtype defaults to on_value's or
    off_value's, else float32. Not differentiable."""
    indices = convert_to_tensor(indices)
    depth = static_int(depth, "depth", OneHot, name)
    given = [_scalar_value(v, w, name) for v, w in ((on_value, "on_value"), (off_value, "off_value")) if v is not None]
    if dtype is None:
        dtype = dtypes.as_dtype(given[0].dtype) if given else dtypes.float32
    dtype = dtypes.as_dtype(dtype)
    for v, what in ((on_value, "on_value"), (off_value, "off_value")):
        if isinstance(v, TensorLike) and v.dtype != dtype:
            raise OneHot.error(f"{what} has dtype {v.dtype.name}, which does not match dtype {dtype.name}", name,
                               TypeError)

    def attr(v, default):
        v = default if v is None else _scalar_value(v, "value", name)
        return bool(v) if dtype.is_bool else int(v) if dtype.is_integer else float(v)

    return OneHot(indices, depth=depth, on_value=attr(on_value, 1), off_value=attr(off_value, 0),
                  axis=-1 if axis is None else int(axis), dtype=dtype, name=name or "one_hot")


# ---------------------------------------------------------------- where (Select)

Select = OpDef("Select", kernel="select")


@Select.shape
def _(condition, x, y):
    if condition.dtype != dtypes.bool_:
        fail_dtype(f"condition must be bool, got {condition.dtype.name}")
    if x.dtype != y.dtype:
        fail_dtype(f"x and y must have one dtype, got x: {x.dtype.name} and y: {y.dtype.name}")
    if not x.shape.is_compatible_with(y.shape):
        fail(f"x and y must have the same shape, got x: {x.shape} and y: {y.shape}")
    shape = x.shape.merge_with(y.shape)
    c = condition.shape
    if c.dims is None or shape.dims is None:
        return Spec(x.dtype, shape)
    if len(c.dims) == len(shape.dims):
        if not c.is_compatible_with(shape):
            fail(f"condition {c} must have the shape of x and y {shape}, or be a vector of their first dimension")
        return Spec(x.dtype, shape.merge_with(c))
    if len(c.dims) == 1 and shape.dims and TensorShape(c.dims).is_compatible_with(shape.dims[:1]):
        return Spec(x.dtype, TensorShape((shape.dims[0] if shape.dims[0] is not None else c.dims[0],)
                                         + shape.dims[1:]))
    fail(f"condition {c} must have the shape of x and y {shape}, or be a vector of their first dimension")


@Select.grad
def _(op, dy):
    condition = op.inputs[0]
    zeros = zeros_like(dy)
    return [None, Select(condition, dy, zeros), Select(condition, zeros, dy)]


def where(condition, x=None, y=None, name=None):
    """TF1 tf.where(condition, x, y): x where condition is true, else y. condition has the shape of
    x and y, or is a vector choosing whole rows (its length is x's first dimension). With condition
    alone, the int64 coordinates of its true elements (dynamic_shape_ops)."""
    if x is None and y is None:  # the coordinates of the true elements: a size only the run knows
        return where_true(condition, name=name)
    if x is None or y is None:
        raise Select.error("x and y must both be given, or both be None", name)
    x, y = convert_n_same_dtype([x, y], "Select")
    with x.graph.as_default():
        condition = convert_to_tensor(condition)
    return Select(condition, x, y, name=name or "Select")


# ---------------------------------------------------------------- tile

Tile = OpDef("Tile", kernel="tile_fwd")


@Tile.shape
def _(x, *, multiples):
    if any(m < 0 for m in multiples):
        fail(f"multiples must be at least 0, got {list(multiples)}")
    if x.shape.dims is None:
        return Spec(x.dtype, TensorShape([None] * len(multiples)))
    if len(multiples) != len(x.shape.dims):
        fail(f"multiples {list(multiples)} must have one entry per dimension of {x.shape}")
    return Spec(x.dtype, TensorShape([0 if m == 0 else None if d is None else d * m
                                      for d, m in zip(x.shape.dims, multiples)]))


Tile.native_attrs(lambda attrs, ins, outs: {"multiples": list(attrs["multiples"])})


@Tile.grad
def _(op, dy):
    return [TileGrad(dy, op.inputs[0], multiples=op.attrs["multiples"])]


# The sum of dy's tiles, in x's shape (x gives the shape only).
TileGrad = OpDef("TileGrad", kernel="tile_bwd", shape_only_inputs={1})


@TileGrad.shape
def _(dy, x, *, multiples):
    tiled = Tile.shape_fn(x, multiples=multiples).shape
    if not dy.shape.is_compatible_with(tiled):
        fail(f"dy {dy.shape} does not have the tiled shape {tiled}")
    return Spec(dy.dtype, x.shape)


TileGrad.native_attrs(lambda attrs, ins, outs: {"multiples": list(attrs["multiples"])})


@TileGrad.grad
def _(op, g):
    return [Tile(g, multiples=op.attrs["multiples"]), None]


def tile(input, multiples, name=None):
    """input repeated multiples[d] times along each dimension d."""
    multiples = static_ints(multiples, "multiples", Tile, name)
    return Tile(convert_to_tensor(input), multiples=tuple(int(m) for m in multiples.reshape(-1)),
                name=name or "Tile")

