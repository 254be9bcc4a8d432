"""Slicing: tensor indexing t[...], tf.strided_slice and tf.slice, on the strided_slice kernels
(csrc/kernels/array.cc). Dimension sizes may be None until the graph runs (bounds are resolved
against the fed shapes then, as TF does).

Bounds computed by the graph (placeholders, other ops' outputs) are taken where the slice's shape
does not depend on their values, since plans have static shapes: an index, `x[i]` or
`probs[0, a]`, and tf.slice(x, begin, size) with a static size. These run on the dynamic_slice
kernels (csrc/kernels/pad.cc), which read the start from an int tensor when the step runs and
check it there. A slice `x[i:j]` with a computed bound has a length only a run knows, and is
refused when the graph is built."""
import builtins
import numbers

import numpy as np

from pygrad.graph import Tensor, override_operator, unwrap
from pygrad import dtypes
from pygrad.ops.array_ops import cast, constant, constant_value, convert_to_tensor, static_ints
from pygrad.ops.manip_ops import stack
from pygrad.ops.shape_exprs import has_refs, resolve, shape_expr
from pygrad.registry import CUSTOM, SHAPE_ONLY_AFTER_FIRST, OpDef, Spec, fail
from pygrad.shapes import TensorShape

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


# ---------------------------------------------------------------- TF's slice spec, resolved


def _dense_rows(ndims, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    """TF's dense form of a sparse slice spec, for a tensor of rank ndims.

    Returns (rows, layout): one row (begin, end, stride, begin_masked, end_masked, shrink) per
    dimension of x, and for each output dimension the x dimension it comes from, or None for a new
    axis (tf.newaxis). An ellipsis stands for the dimensions no other entry takes; without one,
    the entries take x's first dimensions and an ellipsis is implied at the end."""
    n = len(begin)
    if not len(end) == len(strides) == n:
        fail(f"begin, end and strides must have one length, got {list(begin)}, {list(end)} and {list(strides)}")
    if bin(ellipsis_mask).count("1") > 1:
        fail("a slice may hold one ellipsis (...) at most")
    if not ellipsis_mask:
        ellipsis_mask = 1 << n  # the implied ellipsis, after the last entry
    rows, layout = [], []
    for i in range(n + 1):
        bit = 1 << i
        if ellipsis_mask & bit:
            taken_after = sum(1 for j in range(i + 1, n) if not new_axis_mask & (1 << j))
            fill = ndims - len(rows) - taken_after
            if fill < 0:
                fail(f"too many indices for a tensor of rank {ndims}")
            for _ in range(fill):
                layout.append(len(rows))
                rows.append((0, 0, 1, True, True, False))
        elif i == n:
            break
        elif new_axis_mask & bit:
            layout.append(None)
        else:
            if len(rows) >= ndims:
                fail(f"too many indices for a tensor of rank {ndims}")
            shrink = bool(shrink_axis_mask & bit)
            if not shrink:
                layout.append(len(rows))
            rows.append((int(begin[i]), int(end[i]), int(strides[i]), bool(begin_mask & bit), bool(end_mask & bit),
                         shrink))
    return rows, layout


def _resolve(d, size, row):
    """(begin, stride, length) of the slice along dimension d of x, whose size is `size` (None:
    unknown, and then begin and length are None). Python's rules: bounds are clamped, negative
    ones count from the end; an index (shrink) must be inside the dimension."""
    b, e, s, begin_masked, end_masked, shrink = row
    if s == 0:
        fail(f"the stride of dimension {d} is 0; strides must be non-zero")
    if shrink:
        if size is None:
            return None, 1, 1
        i = b + size if b < 0 else b
        if not 0 <= i < size:
            fail(f"index {b} is out of bounds for dimension {d} of size {size}")
        return i, 1, 1
    if size is None:
        return None, s, None

    def canonical(v, masked, is_begin):
        if masked:
            return (0 if is_begin else size) if s > 0 else (size - 1 if is_begin else -1)
        v = v + size if v < 0 else v
        return min(max(v, 0), size) if s > 0 else min(max(v, -1), size - 1)

    b, e = canonical(b, begin_masked, True), canonical(e, end_masked, False)
    length = (e - b + s - 1) // s if s > 0 else (e - b + s + 1) // s
    return b, s, max(0, length)


def _slice(x_shape, attrs):
    """(output shape, per-dimension (begin, stride, length) or None when x's rank is unknown)."""
    if x_shape.dims is None:  # the rest is checked when the graph runs
        if 0 in attrs["strides"]:
            fail(f"strides {list(attrs['strides'])} must be non-zero")
        return TensorShape(None), None
    rows, layout = _dense_rows(len(x_shape.dims), **attrs)
    res = [_resolve(d, size, row) for d, (size, row) in enumerate(zip(x_shape.dims, rows))]
    return TensorShape([1 if i is None else res[i][2] for i in layout]), res


def _kernel_attrs(res):
    return {"begin": [r[0] for r in res], "strides": [r[1] for r in res], "sizes": [r[2] for r in res]}


# ---------------------------------------------------------------- StridedSlice and its gradient

StridedSlice = OpDef("StridedSlice", kernel="strided_slice_fwd")


@StridedSlice.shape
def _(x, **attrs):
    return Spec(x.dtype, _slice(x.shape, attrs)[0])


StridedSlice.native_attrs(lambda attrs, ins, outs: _kernel_attrs(_slice(ins[0].shape, attrs)[1]))


@StridedSlice.grad
def _(op, dy):
    return [StridedSliceGrad(dy, op.inputs[0], **op.attrs)]


# dy written at the slice of zeros shaped like x (x gives the shape only); TF's StridedSliceGrad.
StridedSliceGrad = OpDef("StridedSliceGrad", kernel="strided_slice_bwd", shape_only_inputs={1})


@StridedSliceGrad.shape
def _(dy, x, **attrs):
    sliced = _slice(x.shape, attrs)[0]
    if not dy.shape.is_compatible_with(sliced):
        fail(f"dy {dy.shape} does not have the shape of the slice {sliced} of {x.shape}")
    return Spec(dy.dtype, x.shape)


StridedSliceGrad.native_attrs(lambda attrs, ins, outs: _kernel_attrs(_slice(ins[1].shape, attrs)[1]))


@StridedSliceGrad.grad
def _(op, g):
    return [StridedSlice(g, **op.attrs), None]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    """TF's tf.strided_slice: begin, end and strides per entry, and bit masks (bit i for entry i):
    begin_mask/end_mask ignore begin[i]/end[i], ellipsis_mask marks the '...' entry,
    new_axis_mask inserts a dimension of 1, shrink_axis_mask takes index begin[i] and drops the
    dimension."""
    x = convert_to_tensor(input_)
    begin = static_ints(begin, "begin", StridedSlice, name).reshape(-1)
    end = static_ints(end, "end", StridedSlice, name).reshape(-1)
    strides = np.ones_like(begin) if strides is None else \
        static_ints(strides, "strides", StridedSlice, name).reshape(-1)
    return StridedSlice(x, begin=tuple(int(v) for v in begin), end=tuple(int(v) for v in end),
                        strides=tuple(int(v) for v in strides), begin_mask=int(begin_mask), end_mask=int(end_mask),
                        ellipsis_mask=int(ellipsis_mask), new_axis_mask=int(new_axis_mask),
                        shrink_axis_mask=int(shrink_axis_mask), name=name or "StridedSlice")


# ---------------------------------------------------------------- t[...]

_INDEX_HELP = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar tf.int32/tf.int64 "
               "constant tensors are valid indices")


def _index(v):
    """A slice bound or index as a Python int (None passes through)."""
    if v is None:
        return None
    v = unwrap(v)
    if isinstance(v, Tensor):
        if v.op.type != "Const" or v.shape.ndims != 0 or not v.dtype.is_integer:
            raise StridedSlice.error(f"{_INDEX_HELP}, got {v!r}: pygrad needs slice bounds when the graph is built",
                                     "strided_slice", TypeError)
        v = v.op.attrs["value"]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)) and not (
            isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iu"):
        raise StridedSlice.error(f"{_INDEX_HELP}, got {v!r}", "strided_slice", TypeError)
    return int(v)


def slice_helper(tensor, key):
    """tensor[key], TF's rules: ints drop their dimension, slices keep it (negative bounds and
    steps as in Python), `...` stands for the remaining dimensions and None (tf.newaxis) inserts a
    dimension of 1. Gradient: the slice of dy written into zeros."""
    x = convert_to_tensor(tensor)
    key = key if isinstance(key, tuple) else (key,)
    if any(_is_computed(s) for s in key):
        return _dynamic_index(x, key)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(key):
        bit = 1 << i
        if isinstance(s, builtins.slice):  # this module defines tf.slice
            b, e, st = _index(s.start), _index(s.stop), _index(s.step)
            begin.append(0 if b is None else b)
            end.append(0 if e is None else e)
            strides.append(1 if st is None else st)
            masks["begin_mask"] |= bit if b is None else 0
            masks["end_mask"] |= bit if e is None else 0
        elif s is Ellipsis or s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            b = _index(s)
            begin.append(b), end.append(b + 1), strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return StridedSlice(x, begin=tuple(begin), end=tuple(end), strides=tuple(strides), **masks, name="strided_slice")


# ---------------------------------------------------------------- bounds computed by the graph


def _is_computed(v):
    """Whether an index or a slice's bound is a tensor only a run computes."""
    if isinstance(v, builtins.slice):
        return any(_is_computed(b) for b in (v.start, v.stop, v.step))
    v = unwrap(v)
    return isinstance(v, Tensor) and constant_value(v) is None


DynamicSlice = OpDef("DynamicSlice", lowering=CUSTOM)


def _dynamic_shape(x, begin, shrink, size):
    """The shape of the block of x of the given sizes (-1: the whole dimension), without the
    dimensions in shrink (indexed ones, of size 1)."""
    if not begin.dtype.is_integer or begin.dtype.size < 4:
        fail(f"begin must be int32 or int64, got {begin.dtype.name}")
    if x.shape.dims is None:
        return TensorShape(None)
    if len(size) != len(x.shape.dims) or begin.shape.dims not in (None, (len(size),)):
        fail(f"begin {begin.shape} and size {list(size)} need one entry per dimension of {x.shape}")
    dims = []
    for d, (dim, n) in enumerate(zip(x.shape.dims, size)):
        if dim is not None and n > dim:
            fail(f"size {n} of dimension {d} does not fit in {x.shape}")
        if d not in shrink:
            dims.append(dim if n == -1 else n)
    return TensorShape(dims)


@DynamicSlice.shape
def _(x, begin, *, shrink, size):
    return Spec(x.dtype, _dynamic_shape(x, begin, shrink, size))


def _block_dims(x_dims, size):
    return [dim if n == -1 else n for dim, n in zip(x_dims, size)]


def _dynamic_attrs(op):
    return {"wrap": [int(d in op.attrs["shrink"]) for d in range(len(op.attrs["size"]))]}


@DynamicSlice.lower
def _(ctx, op):
    dims = ctx.in_specs()[0].shape.as_list()
    out = ctx.output(0).with_dims(_block_dims(dims, op.attrs["size"]))
    ctx.step("dynamic_slice_fwd", [ctx.operand(op.inputs[0]), ctx.operand(op.inputs[1])], [out], _dynamic_attrs(op))


@DynamicSlice.grad
def _(op, dy):
    x, begin = op.inputs
    return [DynamicSliceGrad(dy, begin, x, **op.attrs), None]


# dy written into zeros shaped like x (x gives the shape only) at the block DynamicSlice read.
DynamicSliceGrad = OpDef("DynamicSliceGrad", lowering=CUSTOM, shape_only_inputs={2})


@DynamicSliceGrad.shape
def _(dy, begin, x, *, shrink, size):
    block = _dynamic_shape(x, begin, shrink, size)
    if not dy.shape.is_compatible_with(block):
        fail(f"dy {dy.shape} does not have the shape of the slice {block} of {x.shape}")
    return Spec(dy.dtype, x.shape)


@DynamicSliceGrad.lower
def _(ctx, op):
    dims = ctx.in_specs()[2].shape.as_list()
    dy = ctx.operand(op.inputs[0], shape=_block_dims(dims, op.attrs["size"]))
    ctx.step("dynamic_slice_bwd", [dy, ctx.operand(op.inputs[1])], [ctx.output(0)], _dynamic_attrs(op))


@DynamicSliceGrad.grad
def _(op, g):
    return [DynamicSlice(g, op.inputs[1], **op.attrs), None, None]


def _begin_vector(starts, what):
    """One int tensor from starts (Python ints and scalar int tensors): int64 if any tensor is,
    else int32."""
    tensors = [unwrap(v) for v in starts if isinstance(unwrap(v), Tensor)]
    for t in tensors:
        if not t.dtype.is_integer or t.dtype.size < 4 or t.shape.ndims not in (None, 0):
            raise StridedSlice.error(f"{_INDEX_HELP}; a computed {what} must be a scalar int32 or int64 tensor, got "
                                     f"{t!r}", "strided_slice", TypeError)
    dtype = dtypes.int64 if any(t.dtype == dtypes.int64 for t in tensors) else dtypes.int32
    return stack([cast(v, dtype) if isinstance(unwrap(v), Tensor) else constant(int(v), dtype) for v in starts])


def _dynamic_index(x, key):
    """x[key] where some indices are computed by the graph: the static part of the key first
    (each computed index kept as a whole dimension), then a DynamicSlice that takes one element
    of each of those dimensions and drops it."""
    for s in key:
        if isinstance(s, builtins.slice) and _is_computed(s):
            raise StridedSlice.error(
                f"the slice {s} has a bound computed by the graph, so its length is known only when the graph "
                f"runs; pygrad plans static shapes. Index with a computed scalar (x[i]), or use "
                f"tf.slice(x, begin, size) with begin computed and size known", "strided_slice", TypeError)
    if x.shape.ndims is None:
        raise StridedSlice.error(f"indexing with a computed index needs the rank of {x.name} (shape {x.shape})",
                                 "strided_slice")
    static_key = tuple(builtins.slice(None) if _is_computed(s) else s for s in key)
    # Where each computed index's dimension lands in the static part's result.
    consumed = sum(1 for s in key if s is not None and s is not Ellipsis)
    positions, out_dim = {}, 0
    for s in key:
        if _is_computed(s):
            positions[out_dim] = s
        if s is Ellipsis:
            out_dim += x.shape.ndims - consumed
        elif isinstance(s, builtins.slice) or s is None or _is_computed(s):
            out_dim += 1
    whole = all(isinstance(s, builtins.slice) and s == builtins.slice(None) for s in static_key)
    y = x if whole and len(key) <= x.shape.ndims else slice_helper(x, static_key)
    rank = y.shape.ndims
    starts = [positions.get(d, 0) for d in range(rank)]
    return DynamicSlice(y, _begin_vector(starts, "index"), shrink=tuple(sorted(positions)),
                        size=tuple(1 if d in positions else -1 for d in range(rank)), name="strided_slice")


# ---------------------------------------------------------------- tf.slice

# size may read sizes of the inputs after the first, shape-only (shape_exprs: tf.slice(dy, begin, tf.shape(x))).
Slice = OpDef("Slice", kernel="strided_slice_fwd", shape_only_inputs=SHAPE_ONLY_AFTER_FIRST)


def _slice_lengths(x, begin, size):
    """The length of tf.slice(x, begin, size) along each dimension (None where unknown)."""
    if len(begin) != len(size):
        fail(f"begin {list(begin)} and size {list(size)} must have one length")
    if x.shape.dims is None:
        return [None if s == -1 else s for s in size]
    if len(begin) != len(x.shape.dims):
        fail(f"begin {list(begin)} and size {list(size)} need one entry per dimension of {x.shape}")
    out = []
    for d, (dim, b, s) in enumerate(zip(x.shape.dims, begin, size)):
        if b < 0 or s < -1:
            fail(f"dimension {d}: begin {b} must be at least 0 and size {s} at least -1")
        if dim is not None and (b > dim or s != -1 and b + s > dim):
            fail(f"dimension {d}: begin {b} and size {s} do not fit in size {dim} of {x.shape}")
        out.append(s if s != -1 else None if dim is None else dim - b)
    return out


def _sizes(size, refs):
    """size with its sizes read from refs' shapes, -2 where they are not known yet."""
    return [-2 if d is None else d for d in resolve(size, refs)]


@Slice.shape
def _(x, *refs, begin, size):
    lengths = _slice_lengths(x, begin, [max(d, -1) for d in _sizes(size, refs)])
    return Spec(x.dtype, TensorShape([None if d == -2 else n for n, d in zip(lengths, _sizes(size, refs))]))


Slice.native_attrs(lambda attrs, ins, outs: {"begin": list(attrs["begin"]), "strides": [1] * len(attrs["begin"]),
                                             "sizes": _slice_lengths(ins[0], attrs["begin"],
                                                                     _sizes(attrs["size"], ins[1:]))})


@Slice.grad
def _(op, dy):
    begin, size = op.attrs["begin"], op.attrs["size"]
    if has_refs(size):
        raise ValueError(op.error(f"the gradient of a slice whose size {list(size)} reads other tensors' shapes is "
                                  f"not supported (give size as numbers or -1)"))
    end_mask = sum(1 << d for d, s in enumerate(size) if s == -1)
    return [StridedSliceGrad(dy, op.inputs[0], begin=begin, end=tuple(b + max(s, 0) for b, s in zip(begin, size)),
                             strides=(1,) * len(begin), begin_mask=0, end_mask=end_mask, ellipsis_mask=0,
                             new_axis_mask=0, shrink_axis_mask=0)]


def slice(input_, begin, size, name=None):  # noqa: A001
    """The block of input_ starting at begin with the given size per dimension (-1: to the end)."""
    x = convert_to_tensor(input_)
    if _is_computed(begin) or isinstance(begin, (list, tuple)) and any(_is_computed(b) for b in begin):
        return _dynamic_slice(x, begin, size, name)
    begin = static_ints(begin, "begin", Slice, name).reshape(-1)
    expr = shape_expr(size)
    if expr is not None and has_refs(expr[0]):  # sizes read from shapes: tf.slice(dy, begin, tf.shape(x))
        return Slice(x, *expr[1], begin=tuple(int(b) for b in begin), size=tuple(expr[0]), name=name or "Slice")
    size = static_ints(size, "size", Slice, name).reshape(-1)
    return Slice(x, begin=tuple(int(b) for b in begin), size=tuple(int(s) for s in size), name=name or "Slice")


def _dynamic_slice(x, begin, size, name):
    """tf.slice with begin computed by the graph: size must be known, without -1 (the length would
    depend on begin's value)."""
    size = static_ints(size, "size (with a computed begin)", Slice, name).reshape(-1)
    if (size < 0).any():
        raise Slice.error(f"size {size.tolist()} must be known sizes of at least 0 when begin is computed by the "
                          f"graph (-1 would make the slice's length depend on begin's value)", name)
    if isinstance(begin, (list, tuple)):
        begin = _begin_vector(list(begin), "begin")
    begin = convert_to_tensor(begin)
    if begin.dtype not in (dtypes.int32, dtypes.int64):
        raise Slice.error(f"begin must be int32 or int64, got {begin.dtype.name}", name, TypeError)
    return DynamicSlice(x, begin, shrink=(), size=tuple(int(n) for n in size), name=name or "Slice")


override_operator("__getitem__", slice_helper)
