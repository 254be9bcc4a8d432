"""Ops that address elements by index tensors: gather_nd and scatter_nd, segment_sum and
unsorted_segment_sum, and the variable updates scatter_update, scatter_add and scatter_sub
(kernels in csrc/kernels/scatter.cc). Output shapes must be known when the graph is built: the
number of segments and scatter_nd's shape are Python values or constants."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, build_error, unwrap
from pygrad.ops.array_ops import (constant, constant_value, convert_for_op, convert_to_tensor, reshape, shape,
                                  squeeze, static_int, static_ints)
from pygrad.ops.dynamic_shape_ops import computed_unique, unique_values, where_true
from pygrad.ops.manip_ops import gather
from pygrad.ops.state_ops import _ref
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

INDEX_DTYPES = (dtypes.int32, dtypes.int64)


def _check_index_dtype(indices, what="indices"):
    if indices.dtype not in INDEX_DTYPES:
        fail_dtype(f"{what} must be int32 or int64, got {indices.dtype.name}")


# ---------------------------------------------------------------- gather_nd and scatter_nd


def _nd_shape(full, indices):
    """indices.shape[:-1] + full[k:] (full: the indexed tensor's TensorShape), k = indices.shape[-1];
    None where unknown."""
    _check_index_dtype(indices)
    if indices.shape.dims is None:
        return TensorShape(None)
    if not indices.shape.dims:
        fail("indices must have rank at least 1, got a scalar")
    k = indices.shape.dims[-1]
    if k is None or full.dims is None:
        return TensorShape(None)
    if k > len(full.dims):
        fail(f"indices.shape[-1] must be <= params.rank, but saw indices shape: {indices.shape} and params "
             f"shape: {full}")
    return TensorShape(indices.shape.dims[:-1] + full.dims[k:])


GatherNd = OpDef("GatherNd", kernel="gather_nd_fwd")


@GatherNd.shape
def _(params, indices):
    return Spec(params.dtype, _nd_shape(params.shape, indices))


@GatherNd.grad
def _(op, dy):
    params, indices = op.inputs
    return [ScatterNdLike(dy, indices, params), None]


# updates added into zeros shaped like `like` at indices (like gives the shape only): gather_nd's
# gradient (TF's ScatterNd with params' shape) and tf.scatter_nd(indices, updates, tf.shape(like)).
ScatterNdLike = OpDef("ScatterNdLike", kernel="scatter_nd", shape_only_inputs={2})


@ScatterNdLike.shape
def _(updates, indices, like):
    if not updates.shape.is_compatible_with(_nd_shape(like.shape, indices)):
        fail(f"updates {updates.shape} do not have the shape indices.shape[:-1] + shape[indices.shape[-1]:] = "
             f"{_nd_shape(like.shape, indices)} (indices {indices.shape}, shape {like.shape})")
    return Spec(updates.dtype, like.shape)


@ScatterNdLike.grad
def _(op, g):
    return [GatherNd(g, op.inputs[1]), None, None]


def gather_nd(params, indices, name=None, batch_dims=0):
    """Slices of params at the index tuples in the last dimension of indices (tf.gather_nd): the
    result has shape indices.shape[:-1] + params.shape[indices.shape[-1]:]. An index outside params
    fails the run (InvalidArgumentError). Gradient: the gradient scattered (added) into zeros."""
    if batch_dims != 0:
        raise GatherNd.error(f"batch_dims={batch_dims} is not supported, only 0", name)
    params = convert_to_tensor(params)
    with params.graph.as_default():
        indices = convert_to_tensor(indices)
    if params.dtype == dtypes.string:  # strings live in Python: a host op
        return StringGatherNd(params, indices, name=name or "GatherNd")
    return GatherNd(params, indices, name=name or "GatherNd")


# GatherNd of string tensors, which pygrad holds in Python: NumPy indexing, run between plans (host.py).
StringGatherNd = OpDef("StringGatherNd", host=BETWEEN, differentiable=False)
StringGatherNd.shape(GatherNd.shape_fn)


@StringGatherNd.host
def _(ctx, op, values):
    params, indices = np.asarray(values[0], object), np.asarray(values[1], np.int64)
    k = indices.shape[-1]
    flat = indices.reshape(-1, k)
    bad = np.flatnonzero(((flat < 0) | (flat >= params.shape[:k])).any(1))
    if bad.size:
        i = int(bad[0])
        raise HostError(f"indices[{i}] = [{', '.join(str(int(v)) for v in flat[i])}] does not index into param shape "
                        f"[{', '.join(str(d) for d in params.shape)}]")
    out = params[tuple(flat.T)] if k else np.broadcast_to(params, (len(flat),) + params.shape)
    return [out.reshape(indices.shape[:-1] + params.shape[k:])]


ScatterNd = OpDef("ScatterNd", kernel="scatter_nd")


@ScatterNd.shape
def _(updates, indices, *, shape):
    expected = _nd_shape(shape, indices)
    if not updates.shape.is_compatible_with(expected):
        fail(f"updates {updates.shape} must have shape indices.shape[:-1] + shape[indices.shape[-1]:] = {expected} "
             f"(indices {indices.shape}, shape {shape})")
    return Spec(updates.dtype, shape)


@ScatterNd.grad
def _(op, dy):
    return [GatherNd(dy, op.inputs[1]), None]


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of shape with updates added at the index tuples of indices (tf.scatter_nd; repeated
    indices add up). shape must be known when the graph is built, or be tf.shape(x)."""
    updates = convert_to_tensor(updates)
    with updates.graph.as_default():
        indices = convert_to_tensor(indices)
    shape_t = unwrap(shape)
    if isinstance(shape_t, Tensor) and shape_t.op.type == "Shape":
        return ScatterNdLike(updates, indices, shape_t.op.inputs[0], name=name or "ScatterNd")
    dims = static_ints(shape, "shape", ScatterNd, name).reshape(-1)
    if (dims < 0).any():
        raise ScatterNd.error(f"shape {dims.tolist()} must hold sizes of at least 0", name)
    return ScatterNd(updates, indices, shape=TensorShape([int(d) for d in dims]), name=name or "ScatterNd")


# ---------------------------------------------------------------- segment sums


def _segment_shape(data, ids, num_segments):
    _check_index_dtype(ids, "segment_ids")
    if data.shape.dims is None or ids.shape.dims is None:
        return TensorShape(None)
    n = len(ids.shape.dims)
    if not TensorShape(data.shape.dims[:n]).is_compatible_with(ids.shape) or n > len(data.shape.dims):
        fail(f"segment_ids.shape = {ids.shape} does not start data.shape = {data.shape}")
    return TensorShape([num_segments] + list(data.shape.dims[n:]))


def _segment_op(type_name, sorted_ids):
    d = OpDef(type_name, kernel="segment_sum")

    @d.shape
    def _(data, ids, *, num_segments):
        return Spec(data.dtype, _segment_shape(data, ids, num_segments))

    d.native_attrs(lambda attrs, ins, outs: {"sorted": int(sorted_ids)})

    @d.grad
    def _(op, dy):
        data, ids = op.inputs
        return [SegmentGather(dy, ids, data, num_segments=op.attrs["num_segments"]), None]

    return d


SegmentSum = _segment_op("SegmentSum", True)
UnsortedSegmentSum = _segment_op("UnsortedSegmentSum", False)

# x[ids] with zeros for negative ids, in data's shape (data gives the shape only): the gradient of
# both segment sums (TF's gather, and _GatherDropNegatives).
SegmentGather = OpDef("SegmentGather", kernel="segment_gather", shape_only_inputs={2})


@SegmentGather.shape
def _(x, ids, data, *, num_segments):
    if not x.shape.is_compatible_with(_segment_shape(data, ids, num_segments)):
        fail(f"x {x.shape} does not have the segments' shape {_segment_shape(data, ids, num_segments)}")
    return Spec(x.dtype, data.shape)


@SegmentGather.grad
def _(op, g):
    return [UnsortedSegmentSum(g, op.inputs[1], num_segments=op.attrs["num_segments"]), None, None]


def segment_sum(data, segment_ids, name=None):
    """out[i] = the sum of the rows data[j] with segment_ids[j] == i (tf.segment_sum); the ids are
    sorted and at least 0, and out has max(segment_ids) + 1 rows. That count sets the output's
    shape, so segment_ids must be known when the graph is built (or use unsorted_segment_sum
    with num_segments)."""
    name = name or "SegmentSum"
    data = convert_to_tensor(data)
    ids = static_ints(segment_ids, "segment_ids (the largest id sets the output's shape; or use "
                                   "unsorted_segment_sum with num_segments)", SegmentSum, name)
    if ids.ndim != 1:
        raise SegmentSum.error(f"segment_ids should be a vector, got shape {ids.shape}", name)
    if (ids < 0).any():
        raise SegmentSum.error(f"segment ids must be >= 0, got {ids.tolist()}", name)
    if (np.diff(ids) < 0).any():
        raise SegmentSum.error(f"segment ids are not increasing: {ids.tolist()}", name)
    with data.graph.as_default():
        ids_t = convert_to_tensor(segment_ids)
    return SegmentSum(data, ids_t, num_segments=int(ids[-1]) + 1 if ids.size else 0, name=name)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """out[i] = the sum of the slices data[j...] with segment_ids[j...] == i, for i in
    [0, num_segments) (tf.unsorted_segment_sum): segment_ids' shape starts data's, a negative id
    drops its slice, an id of num_segments or more fails the run."""
    name = name or "UnsortedSegmentSum"
    data = convert_to_tensor(data)
    with data.graph.as_default():
        ids = convert_to_tensor(segment_ids)
    n = static_int(num_segments, "num_segments", UnsortedSegmentSum, name)
    if n < 0:
        raise UnsortedSegmentSum.error(f"num_segments must be at least 0, got {n}", name)
    return UnsortedSegmentSum(data, ids, num_segments=n, name=name)


# ---------------------------------------------------------------- scatter into variables


def _scatter_op(type_name, mode):
    d = OpDef(type_name, kernel="scatter_ref", differentiable=False, ref_input=0)

    @d.shape
    def _(ref, indices, updates):
        _check_index_dtype(indices)
        if updates.dtype != ref.dtype:
            fail_dtype(f"updates has dtype {updates.dtype.name}, the variable has {ref.dtype.name}")
        if ref.shape.dims is not None and indices.shape.dims is not None:
            if not ref.shape.dims:
                fail(f"the variable must have rank at least 1, got {ref.shape}")
            expected = TensorShape(list(indices.shape.dims) + list(ref.shape.dims[1:]))
            if not updates.shape.is_compatible_with(expected):
                fail(f"Shapes of indices and updates do not match: updates.shape {updates.shape} must be "
                     f"indices.shape + ref.shape[1:] = {expected}")
        return Spec(ref.dtype, ref.shape)

    d.native_attrs(lambda attrs, ins, outs: {"op": mode})
    return d


ScatterUpdate = _scatter_op("ScatterUpdate", "update")
ScatterAdd = _scatter_op("ScatterAdd", "add")
ScatterSub = _scatter_op("ScatterSub", "sub")


def _scatter_fn(opdef, verb):
    def fn(ref, indices, updates, use_locking=None, name=None):
        name = name or opdef.type
        ref = _ref(ref, opdef, name)
        with ref.graph.as_default():
            indices = convert_to_tensor(indices)
            updates = convert_for_op(updates, ref.dtype, opdef.type, name)
        return opdef(ref, indices, updates, name=name)

    fn.__doc__ = (f"ref[indices[i], ...] {verb} updates[i, ...] in place, for each i (tf.{opdef.type}); returns "
                  f"the variable, updated when it runs. An index outside [0, ref.shape[0]) fails the run before "
                  f"anything is written.")
    return fn


scatter_update = _scatter_fn(ScatterUpdate, "=")
scatter_add = _scatter_fn(ScatterAdd, "+=")
scatter_sub = _scatter_fn(ScatterSub, "-=")


# ---------------------------------------------------------------- boolean_mask and unique
# Their output sizes depend on values (the number of true elements, of distinct values). Values the
# graph fixes (Python values or constants) are folded when the graph is built; computed ones go
# through the ops of dynamic_shape_ops, which run between two plans of the run.


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The elements (slices) of tensor where mask is true (tf.boolean_mask): mask, of rank K,
    matches tensor.shape[axis:axis + K], and those K dimensions become one, of the number of true
    elements. The result is a gather of tensor, so gradients flow to it: at the positions a mask
    the graph fixes gives, or, for a computed mask, those tf.where finds when the run gets there
    (TF's construction)."""
    x = convert_to_tensor(tensor)
    m = constant_value(mask)
    if m is None:
        return _computed_boolean_mask(x, convert_to_tensor(mask), name, axis)
    if m.dtype != np.bool_:
        raise build_error("BooleanMask", name, f"mask must be bool, got {m.dtype}", TypeError)
    axis = 0 if axis is None else static_int(axis, "axis", _BOOLEAN_MASK, name)
    dims = x.shape.dims
    if dims is None:
        raise build_error("BooleanMask", name, f"tensor {x.shape} must have a known rank")
    axis = axis + len(dims) if axis < 0 else axis
    k = m.ndim
    if k == 0 or not 0 <= axis <= len(dims) - k or not TensorShape(dims[axis:axis + k]).is_compatible_with(m.shape):
        raise build_error("BooleanMask", name, f"Shapes {x.shape} and {m.shape} are incompatible (mask of rank {k} "
                                               f"at axis {axis})")
    rest = list(dims[:axis]) + [int(np.prod(m.shape, dtype=np.int64))] + list(dims[axis + k:])
    if k != 1 and sum(d is None for d in rest) > 1:
        raise build_error("BooleanMask", name, f"tensor {x.shape}: pygrad needs all but one of its other dimensions "
                                               f"when the graph is built")
    with x.graph.as_default():
        flat = reshape(x, [-1 if d is None else d for d in rest]) if k != 1 else x
        return gather(flat, constant(np.flatnonzero(m.reshape(-1)).astype(np.int64)), axis=axis, name=name)


def _computed_boolean_mask(x, mask, name, axis):
    if mask.dtype != dtypes.bool_:
        raise build_error("BooleanMask", name, f"mask must be bool, got {mask.dtype.name}", TypeError)
    k, dims = mask.shape.ndims, x.shape.dims
    if k is None or k == 0 or dims is None:
        raise build_error("BooleanMask", name, f"the ranks of tensor {x.shape} and mask {mask.shape} must be known, "
                                               f"the mask's at least 1")
    axis = 0 if axis is None else static_int(axis, "axis", _BOOLEAN_MASK, name)
    axis = axis + len(dims) if axis < 0 else axis
    if not 0 <= axis <= len(dims) - k or not TensorShape(dims[axis:axis + k]).is_compatible_with(mask.shape):
        raise build_error("BooleanMask", name, f"Shapes {x.shape} and {mask.shape} are incompatible (mask of rank "
                                               f"{k} at axis {axis})")
    with x.graph.as_default(), x.graph.name_scope(name):
        if k > 1:  # the mask's dimensions of x become one, sized when the plan is built
            x = reshape(x, [shape(x)[i] for i in range(axis)] + [-1] +
                        [shape(x)[i] for i in range(axis + k, len(dims))])
            mask = reshape(mask, [-1])
        indices = squeeze(where_true(mask), axis=[1])
        return gather(x, indices, axis=axis)


class _Named:
    """The op type a Python-level function reports its errors under (static_int needs one)."""

    def __init__(self, type_name):
        self.type = type_name

    def error(self, rule, name=None, cls=ValueError):
        return build_error(self.type, name, rule, cls)


_BOOLEAN_MASK = _Named("BooleanMask")


def unique(x, out_idx=dtypes.int32, name=None):
    """(y, idx): the distinct values of the vector x in order of first appearance, and for each
    element of x the index of its value in y (tf.unique). A vector the graph fixes is folded when
    the graph is built; a computed one is a Unique op run between two plans."""
    out_idx = dtypes.as_dtype(out_idx)
    v = constant_value(x)
    if v is None:
        return computed_unique(x, out_idx, name)
    if v.ndim != 1:
        raise build_error("Unique", name, f"unique expects a 1D vector, got shape {v.shape}")
    y, idx = unique_values(v, out_idx)
    return constant(y, name=name or "Unique"), constant(idx, name=(name or "Unique") + "_idx")
