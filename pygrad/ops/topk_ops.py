"""tf.nn.top_k (TF's TopKV2) with its gradient, tf.nn.in_top_k (InTopKV2), and tf.sort and tf.argsort on top_k.

top_k works along the last axis of any leading shape: larger values first, equal values by the
lower index first (TF). NaN, which TF leaves unordered, ranks above every number here. sorted=False
allows any order in TF; pygrad returns the sorted order then too. k must be known when the graph
is built (a Python int or a constant), since output shapes are static in a plan.

The gradient is TF's _TopKGrad: the values' gradient scattered into zeros of the input's shape at
the indices (TopKV2Grad). That scatter is linear in dy, and its gradient is the gather at the same
indices (TopKV2GradGrad), whose gradient is the scatter again: the two form a closed family.
"""
from collections import namedtuple

import numpy as np

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import convert_to_tensor, static_value, transpose
from pygrad.ops.math_ops import FLOATS, check_dtype
from pygrad.registry import OpDef, Spec, fail
from pygrad.shapes import TensorShape

_NUMBERS = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)
_INDICES = (dtypes.int32, dtypes.int64)

TopKResult = namedtuple("TopKV2", ["values", "indices"])


def _k_value(k, opdef, name):
    """k as a Python int: an int, or a scalar tensor whose value the graph fixes."""
    arr = np.asarray(static_value(k, "k", opdef, name))
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise opdef.error(f"k must be a scalar integer, got {k!r}", name, TypeError if arr.dtype.kind not in "iu"
                          else ValueError)
    return int(arr)


def _top_shape(x_shape, k):
    """x_shape with its last dimension k."""
    return TensorShape(None if x_shape.dims is None else list(x_shape.dims[:-1]) + [k])


def _merge_leading(like, other, what):
    """like's shape with its leading dimensions (all but the last) merged with other's."""
    if like.ndims is not None and other.ndims is not None:
        if like.ndims != other.ndims or not like[:-1].is_compatible_with(other[:-1]):
            fail(f"{what} must agree with the input in every dimension but the last, got input: {like} and "
                 f"{what}: {other}")
        return TensorShape(list(like[:-1].merge_with(other[:-1]).dims) + [like.dims[-1]])
    return like


# ---------------------------------------------------------------- top_k

TopKV2 = OpDef("TopKV2", kernel="top_k_fwd")


@TopKV2.shape
def _(x, *, k, sorted):  # noqa: A002
    check_dtype(x, _NUMBERS, "input")
    if x.shape.ndims == 0:
        fail(f"input must be at least 1-D, got input: {x.shape}")
    if k < 0:
        fail(f"k must be non-negative, got k = {k}")
    n = x.shape.dims[-1] if x.shape.dims else None
    if n is not None and n < k:
        fail(f"input must have last dimension >= k = {k} but is {n}, got input: {x.shape}")
    shape = _top_shape(x.shape, k)
    return [Spec(x.dtype, shape), Spec(dtypes.int32, shape)]


@TopKV2.grad
def _(op, dvalues, dindices):
    if dvalues is None or not op.inputs[0].dtype.is_floating:
        return [None]
    return [TopKV2Grad(op.inputs[0], op.outputs[1], dvalues)]


# dx = TopKV2Grad(x_like, indices, dy): zeros of x_like's shape, dy added at the indices along the
# last axis. x_like gives the input's shape only.
TopKV2Grad = OpDef("TopKV2Grad", kernel="top_k_bwd", shape_only_inputs={0})


@TopKV2Grad.shape
def _(x_like, indices, dy):
    check_dtype(dy, FLOATS, "dy")
    check_dtype(indices, (dtypes.int32,), "indices")
    if not indices.shape.is_compatible_with(dy.shape):
        fail(f"indices and dy must have one shape, got indices: {indices.shape} and dy: {dy.shape}")
    return Spec(dy.dtype, _merge_leading(x_like.shape, indices.shape.merge_with(dy.shape), "dy"))


@TopKV2Grad.grad
def _(op, g):
    return [None, None, TopKV2GradGrad(g, op.inputs[1])]


# y = TopKV2GradGrad(g, indices): y[..., j] = g[..., indices[..., j]], the gather that is the
# gradient of the scatter above with respect to dy.
TopKV2GradGrad = OpDef("TopKV2GradGrad", kernel="top_k_gather")


@TopKV2GradGrad.shape
def _(g, indices):
    check_dtype(g, FLOATS, "g")
    check_dtype(indices, (dtypes.int32,), "indices")
    merged = _merge_leading(g.shape, indices.shape, "indices")
    k = indices.shape.dims[-1] if indices.shape.dims else None
    return Spec(g.dtype, _top_shape(merged, k) if merged.dims is not None else indices.shape)


@TopKV2GradGrad.grad
def _(op, dy):
    g, indices = op.inputs
    return [TopKV2Grad(g, indices, dy), None]


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    """The k largest entries along the last axis of input and their int32 indices, as the
    namedtuple (values, indices). Equal values: the lower index first."""
    name = name or "TopKV2"
    k = _k_value(k, TopKV2, name)
    values, indices = TopKV2(convert_to_tensor(input), k=k, sorted=bool(sorted), name=name)
    return TopKResult(values, indices)


# ---------------------------------------------------------------- in_top_k
# out[i] = predictions[i, targets[i]] and every prediction of row i are finite, and fewer than k
# predictions of row i are strictly greater than the target's (so ties count in favour). A target
# outside [0, classes) gives False, as does k <= 0 (TF's InTopKV2 kernel).

InTopKV2 = OpDef("InTopKV2", kernel="in_top_k_fwd", differentiable=False)


@InTopKV2.shape
def _(predictions, targets, *, k):
    check_dtype(predictions, FLOATS, "predictions")
    check_dtype(targets, _INDICES, "targets")
    if predictions.shape.ndims not in (None, 2) or targets.shape.ndims not in (None, 1):
        fail(f"predictions must be 2-D [batch, classes] and targets 1-D [batch], got predictions: "
             f"{predictions.shape} and targets: {targets.shape}")
    if not predictions.shape[:1].is_compatible_with(targets.shape):
        fail(f"First dimension of predictions {predictions.shape[0].value} must match length of targets "
             f"{targets.shape[0].value}, got predictions: {predictions.shape} and targets: {targets.shape}")
    return Spec(dtypes.bool_, predictions.shape[:1].merge_with(targets.shape))


@InTopKV2.native_attrs
def _(attrs, ins, outs):
    return {"k": attrs["k"]}


def in_top_k(predictions, targets, k, name=None):
    """Whether each target class is among the top k predictions of its row (bool [batch]); ties
    with the target count in its favour; rows with a non-finite prediction give False."""
    with get_default_graph().name_scope(name or "in_top_k"):
        k = _k_value(k, InTopKV2, "InTopKV2")
        return InTopKV2(convert_to_tensor(predictions), convert_to_tensor(targets), k=k, name="InTopKV2")


# ---------------------------------------------------------------- sort, argsort
# TF's sort_ops: a descending sort is top_k with k the axis' length, the axis moved last and back;
# an ascending one sorts the negated values (so ties keep the lower index first in both).
_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _sort_along(values, axis, direction, want_indices, name):
    if direction not in _DIRECTIONS:
        raise ValueError(f"{direction!r} should be one of {', '.join(_DIRECTIONS)}")
    if not isinstance(axis, (int, np.integer)):
        raise ValueError(f"axis must be a constant scalar, got {axis!r}")  # noqa: TRY004  (TF's)
    values = convert_to_tensor(values, name="values")
    rank = values.shape.ndims
    if rank is None or rank == 0:
        raise TopKV2.error(f"sort needs values of known rank >= 1, got shape {values.shape}", name)
    if not -rank <= axis < rank:
        raise TopKV2.error(f"axis {axis} is out of range for values of rank {rank}", name)
    axis = int(axis) % rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    k = values.shape.dims[axis]
    if k is None:
        raise TopKV2.error(f"sort needs the length of axis {axis} known when the graph is built, got values of "
                           f"shape {values.shape}", name)
    with get_default_graph().name_scope(name):
        x = values if axis == rank - 1 else transpose(values, perm)
        result = top_k(-x if direction == "ASCENDING" else x, k)
        out = result.indices if want_indices else (-result.values if direction == "ASCENDING" else result.values)
        return out if axis == rank - 1 else transpose(out, perm)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """values sorted along axis (tf.sort)."""
    return _sort_along(values, axis, direction, False, name or "sort")


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort values along axis (tf.argsort); equal values keep their order."""
    return _sort_along(values, axis, direction, True, name or "argsort")
