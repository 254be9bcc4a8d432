"""tf.sparse_segment_sum/mean/sqrt_n and the lookups of SparseTensors of ids TF1 builds on them,
tf.nn.embedding_lookup_sparse and tf.nn.safe_embedding_lookup_sparse (feature columns' embedding).

A sparse segment op sums rows data[indices[k]] into output row segment_ids[k] (ids sorted; the
output has segment_ids[-1] + 1 rows, or num_segments): a host op of stage BETWEEN (its row count
comes from values; see host.py), with TF's gradient ops (SparseSegmentSumGrad, ...), also host
ops. A lookup gathers its unique ids' rows from the embedding (tf.nn.embedding_lookup, whose
gradient is an IndexedSlices of those rows) and combines them per row of the ids, as TF1's
embedding_ops.py does.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import (cast, constant_value, convert_to_tensor, ones_like, reshape, shape as shape_of,
                                  zeros_like)
from pygrad.ops.dynamic_shape_ops import computed_unique
from pygrad.ops.embedding_ops import embedding_lookup
from pygrad.ops.manip_ops import gather, tile, where
from pygrad.ops.partitioned_variables import PartitionedVariable
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sparse_math import sparse_fill_empty_rows
from pygrad.ops.sparse_ops import sparse_retain
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_sparse
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape

_SCALES = {
    "Sum": lambda counts: np.ones_like(counts, np.float64),
    "Mean": lambda counts: 1.0 / np.maximum(counts, 1),
    "SqrtN": lambda counts: 1.0 / np.sqrt(np.maximum(counts, 1)),
}


def _check(data_rows, indices, segment_ids, num_segments):
    """TF's checks of a sparse segment reduction; the number of output rows."""
    if indices.shape != segment_ids.shape or indices.ndim != 1:
        raise HostError(f"segment_ids and indices should have same size, got indices {list(indices.shape)} and "
                        f"segment_ids {list(segment_ids.shape)}")
    if segment_ids.size and (np.diff(segment_ids) < 0).any():
        raise HostError("segment ids are not increasing")
    if segment_ids.size and segment_ids[0] < 0:
        raise HostError(f"segment ids must be >= 0, got {segment_ids[0]}")
    rows = (int(segment_ids[-1]) + 1 if segment_ids.size else 0) if num_segments is None else int(num_segments)
    if num_segments is not None and segment_ids.size and segment_ids[-1] >= rows:
        raise HostError(f"segment ids must be < num_segments, got {segment_ids[-1]} >= {rows}")
    bad = np.flatnonzero((indices < 0) | (indices >= data_rows))
    if bad.size:
        k = int(bad[0])
        raise HostError(f"Bad: indices[{k}] == {indices[k]} out of range [0, {data_rows})")
    return rows


def _segment_op(kind, with_num_segments):
    d = OpDef(f"SparseSegment{kind}" + ("WithNumSegments" if with_num_segments else ""), host=BETWEEN)

    def spec(data, num_segments):
        if data.shape.ndims == 0:
            fail("data must have at least one dimension")
        if kind != "Sum" and not data.dtype.is_floating:
            fail(f"data must be floating point for a {kind.lower()}, got {data.dtype.name}")
        rest = data.shape.dims[1:] if data.shape.ndims else None
        n = constant_value(num_segments) if num_segments is not None else None
        return Spec(data.dtype, TensorShape(None if rest is None else [None if n is None else int(n)] + list(rest)))

    if with_num_segments:
        d.shape(lambda data, indices, segment_ids, num_segments: spec(data, num_segments))
    else:
        d.shape(lambda data, indices, segment_ids: spec(data, None))

    @d.host
    def _(ctx, op, values):
        data, indices, ids = (np.asarray(v) for v in values[:3])
        rows = _check(len(data), indices.astype(np.int64), ids.astype(np.int64),
                      values[3] if with_num_segments else None)
        out = np.zeros((rows,) + data.shape[1:], np.float64 if data.dtype.kind == "f" else data.dtype)
        np.add.at(out, ids, data[indices])
        counts = np.bincount(ids, minlength=rows)[:rows].astype(np.float64)
        if kind != "Sum":
            out *= _SCALES[kind](counts).reshape((-1,) + (1,) * (data.ndim - 1))
        return [out.astype(data.dtype)]

    @d.grad
    def _(op, grad):
        data, indices, ids = op.inputs[:3]
        dim0 = cast(shape_of(data)[0], dtypes.int32)
        g = _GRADS[kind](grad, indices, ids, dim0)
        return [g, None, None] + ([None] if with_num_segments else [])

    return d


def _grad_op(kind):
    d = OpDef(f"SparseSegment{kind}Grad", host=BETWEEN, differentiable=False)

    @d.shape
    def _(grad, indices, segment_ids, output_dim0):
        rest = grad.shape.dims[1:] if grad.shape.ndims else None
        return Spec(grad.dtype, TensorShape(None if rest is None else [None] + list(rest)))

    @d.host
    def _(ctx, op, values):
        grad, indices, ids, dim0 = (np.asarray(v) for v in values)
        counts = np.bincount(ids, minlength=len(grad))[:len(grad)].astype(np.float64)
        scaled = grad * _SCALES[kind](counts).reshape((-1,) + (1,) * (grad.ndim - 1)).astype(grad.dtype)
        out = np.zeros((int(dim0),) + grad.shape[1:], grad.dtype)
        np.add.at(out, indices, scaled[ids])
        return [out]

    return d


_GRADS = {kind: _grad_op(kind) for kind in _SCALES}
_OPS = {(kind, n): _segment_op(kind, n) for kind in _SCALES for n in (False, True)}


def _sparse_segment(kind, data, indices, segment_ids, name, num_segments):
    data = convert_to_tensor(data)
    with data.graph.as_default():
        indices = convert_to_tensor(indices)
        ids = convert_to_tensor(segment_ids)
        args = [data, indices, ids]
        if num_segments is not None:
            args.append(convert_to_tensor(num_segments))
    return _OPS[kind, num_segments is not None](*args, name=name or f"SparseSegment{kind}")


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None):
    """out[i] = the sum of data[indices[k]] over k with segment_ids[k] == i (ids sorted)."""
    return _sparse_segment("Sum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None):
    """sparse_segment_sum over the number of rows of each segment (0 for an empty one)."""
    return _sparse_segment("Mean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None):
    """sparse_segment_sum over the square root of the number of rows of each segment."""
    return _sparse_segment("SqrtN", data, indices, segment_ids, name, num_segments)


# ---------------------------------------------------------------- lookups

def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None, combiner=None,
                            max_norm=None):
    """For each row i of sp_ids (a SparseTensor of ids, [batch, n]), the combination of the
    embedding rows of its ids (weighted by sp_weights' values, if given): "sum", "mean" (the
    default) or "sqrtn" (the sum over the root of the sum of squared weights). The output has
    sp_ids' last non-empty row + 1 rows, as TF1's."""
    combiner = combiner or "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"sp_weights must be either None or SparseTensor,got {type(sp_weights)}")
    params = list(params) if isinstance(params, (list, tuple, PartitionedVariable)) else [params]  # a partitioned one: its parts, as TF
    with get_default_graph().name_scope(name or "embedding_lookup_sparse"):
        segment_ids = sp_ids.indices[:, 0]
        ids, idx = computed_unique(sp_ids.values, dtypes.int32)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy, max_norm=max_norm)
        if sp_weights is None:
            return sparse_segment_sum(embeddings, idx, segment_ids) if combiner == "sum" else \
                sparse_segment_mean(embeddings, idx, segment_ids) if combiner == "mean" else \
                sparse_segment_sqrt_n(embeddings, idx, segment_ids)
        weights = sp_weights.values
        if weights.dtype != embeddings.dtype:
            weights = cast(weights, embeddings.dtype)
        embeddings = gather(embeddings, idx)
        rank = embeddings.shape.ndims
        if rank is None:
            raise ValueError("embedding_lookup_sparse with weights needs embeddings of a known rank")
        weights = reshape(weights, [-1] + [1] * (rank - 1))
        entries = range_(shape_of(weights)[0])
        summed = sparse_segment_sum(embeddings * weights, entries, segment_ids)
        if combiner == "sum":
            return summed
        total = sparse_segment_sum(weights if combiner == "mean" else math_ops.pow(weights, 2.0), entries,
                                   segment_ids)
        if combiner == "sqrtn":
            total = math_ops.sqrt(total)
        nonzero = cast(math_ops.not_equal(total, 0.0), total.dtype)  # TF's div_no_nan
        return summed / (total + (1.0 - nonzero)) * nonzero


def _prune(sparse_ids, sparse_weights, combiner):
    """TF's _prune_invalid_ids (negative ids) and, but for "sum", _prune_invalid_weights (weights <= 0)."""
    valid = math_ops.greater_equal(sparse_ids.values, 0)
    if sparse_weights is not None:
        valid = math_ops.logical_and(valid, ones_like(sparse_weights.values, dtype=dtypes.bool_))
    sparse_ids = sparse_retain(sparse_ids, valid)
    if sparse_weights is not None:
        sparse_weights = sparse_retain(sparse_weights, valid)
        if combiner != "sum":
            positive = math_ops.greater(sparse_weights.values, 0)
            sparse_ids, sparse_weights = sparse_retain(sparse_ids, positive), sparse_retain(sparse_weights, positive)
    return sparse_ids, sparse_weights


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner="mean",
                                 default_id=None, name=None, partition_strategy="div", max_norm=None):
    """embedding_lookup_sparse with invalid ids (negative; and weights <= 0 but for "sum") left out
    and a row for every row of the batch: an empty row gets default_id's embedding, or zeros.
    sparse_ids must be [batch, n] (TF also reshapes ids of a higher rank, which pygrad does not)."""
    if embedding_weights is None or (isinstance(embedding_weights, (list, tuple)) and not embedding_weights):
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    sparse_ids = convert_to_sparse(sparse_ids, "sparse_ids")
    if sparse_ids.shape.ndims != 2:
        raise NotImplementedError(f"safe_embedding_lookup_sparse: pygrad takes sparse_ids of rank 2 ([batch, n]), "
                                  f"got a SparseTensor of shape {sparse_ids.shape}")
    with get_default_graph().name_scope(name or "embedding_lookup"):
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape)
        sparse_ids, sparse_weights = _prune(sparse_ids, sparse_weights, combiner)
        sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights, combiner=combiner,
                                         partition_strategy=partition_strategy, max_norm=max_norm)
        if default_id is None:
            empty = tile(reshape(is_row_empty, [-1, 1]), [1, result.shape.dims[1] or 1]) \
                if result.shape.ndims == 2 and result.shape.dims[1] is not None else None
            if empty is None:
                raise NotImplementedError("safe_embedding_lookup_sparse needs an embedding of a known width")
            result = where(empty, zeros_like(result), result)
        result.set_shape([sparse_ids.shape.dims[0], None])  # a row for each row of the ids
        return result
