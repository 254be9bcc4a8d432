"""Arithmetic on SparseTensors, as TensorFlow's: tf.sparse_tensor_dense_matmul, tf.sparse_reduce_sum,
tf.sparse_fill_empty_rows, tf.sparse_segment_sum/mean/sqrt_n, a SparseTensor times or over a dense
tensor, and tf.nn.embedding_lookup_sparse / safe_embedding_lookup_sparse built on them as TF1
builds them. Host ops of stage BETWEEN (their sizes come from values; see sparse_ops.py), with
TF's gradients: the dense operand's and the values'; a lookup's gradient reaches the embedding as
rows (IndexedSlices), which the optimizers apply sparsely.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import constant, convert_to_tensor, ones_like, shape as shape_of, squeeze, transpose, \
    zeros_like
from pygrad.ops.manip_ops import concat, gather
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.ops.scatter_ops import gather_nd
from pygrad.ops.sparse_ops import SparseTensorDenseAdd, _const, _rank_of, _text, row_major_order, static_dims
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_sparse
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape

# ---------------------------------------------------------------- sparse x dense

SparseTensorDenseMatMul = OpDef("SparseTensorDenseMatMul", host=BETWEEN)


@SparseTensorDenseMatMul.shape
def _(a_indices, a_values, a_shape, b, *, adjoint_a, adjoint_b):
    if a_values.dtype != b.dtype:
        fail(f"a ({a_values.dtype.name}) and b ({b.dtype.name}) must have one dtype")
    if b.shape.ndims not in (None, 2):
        fail(f"b must be a matrix, got shape {b.shape}")
    dims = static_dims(a_shape)
    rows = inner = None
    if dims is not None:
        if len(dims) != 2:
            fail(f"a must be a matrix, got a dense shape of {len(dims)} dimensions")
        rows, inner = (dims[1], dims[0]) if adjoint_a else (dims[0], dims[1])
    b_inner, cols = (None, None) if b.shape.ndims is None else \
        (b.shape.dims[1], b.shape.dims[0]) if adjoint_b else tuple(b.shape.dims)
    if inner is not None and b_inner is not None and inner != b_inner:
        fail(f"Dimensions must be equal, but are {inner} and {b_inner}: a's dense shape {dims}, b {b.shape}")
    return Spec(b.dtype, TensorShape([rows, cols]))


@SparseTensorDenseMatMul.host
def _(ctx, op, values):
    ind, vals, shape, b = (np.asarray(v) for v in values)
    adj_a, adj_b = op.attrs["adjoint_a"], op.attrs["adjoint_b"]
    if shape.size != 2:
        raise HostError(f"Tensor 'a_shape' is not a vector of 2 elements, got {_text(shape)}")
    b = b.T if adj_b else b
    rows_n, inner = (shape[1], shape[0]) if adj_a else (shape[0], shape[1])
    if b.shape[0] != inner:
        raise HostError(f"Cannot multiply A and B because inner dimension does not match: {inner} vs. {b.shape[0]}. "
                        f"Did you forget a transpose?  Dimensions of A: [{rows_n}, {inner}).  Dimensions of B: "
                        f"{list(b.shape)}")
    ind = ind.reshape(-1, 2).astype(np.int64)
    rows, cols = (ind[:, 1], ind[:, 0]) if adj_a else (ind[:, 0], ind[:, 1])
    for what, col, got, bound in (("k", 1 - adj_a, cols, inner), ("m", adj_a, rows, rows_n)):
        bad = np.flatnonzero((got < 0) | (got >= bound))
        if bad.size:
            i = int(bad[0])
            raise HostError(f"{what} ({got[i]}) from index[{i},{int(col)}] out of bounds (>={bound})")
    out = np.zeros((int(rows_n), b.shape[1]), b.dtype)
    np.add.at(out, rows, vals[:, None] * b[cols])
    return [out]


@SparseTensorDenseMatMul.grad
def _(op, grad):
    a_indices, a_values, a_shape, b = op.inputs
    adj_a, adj_b = op.attrs["adjoint_a"], op.attrs["adjoint_b"]
    b_grad = SparseTensorDenseMatMul(a_indices, a_values, a_shape, grad, adjoint_a=not adj_a, adjoint_b=False)
    if adj_b:
        b_grad = transpose(b_grad)
    rows, cols = a_indices[:, 0], a_indices[:, 1]
    parts_a = gather(grad, cols if adj_a else rows)
    parts_b = gather(transpose(b) if adj_b else b, rows if adj_a else cols)
    return [None, reduce_sum(parts_a * parts_b, axis=1), None, b_grad]


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The dense product of a SparseTensor matrix and a dense matrix (tf.sparse_tensor_dense_matmul),
    either transposed first by its adjoint flag."""
    sp = convert_to_sparse(sp_a, "sp_a")
    with get_default_graph().name_scope(name or "SparseTensorDenseMatMul"):
        b = convert_to_tensor(b, dtype=sp.dtype, name="b")
        return SparseTensorDenseMatMul(sp.indices, sp.values, sp.dense_shape, b, adjoint_a=bool(adjoint_a),
                                       adjoint_b=bool(adjoint_b))


# Each entry of a SparseTensor times (or over) the dense tensor's element at its index, the dense
# tensor broadcast to the sparse one's shape: a SparseTensor's * and / (TF's SparseDenseCwiseMul/Div).
def _cwise_op(type_name, fn):
    d = OpDef(type_name, host=BETWEEN)

    @d.shape
    def _(sp_indices, sp_values, sp_shape, dense):
        if sp_values.dtype != dense.dtype:
            fail(f"the SparseTensor ({sp_values.dtype.name}) and the dense tensor ({dense.dtype.name}) must have "
                 f"one dtype")
        return Spec(sp_values.dtype, sp_values.shape)

    @d.host
    def _(ctx, op, values):
        ind, vals, shape, dense = (np.asarray(v) for v in values)
        return [fn(vals, dense[_broadcast_index(ind, shape, dense.shape)]).astype(vals.dtype)]

    return d


def _broadcast_index(ind, shape, dense_shape):
    """The dense tensor's element index (a tuple of arrays) at each entry of a SparseTensor of shape."""
    rank, d_rank = shape.size, len(dense_shape)
    if d_rank > rank or any(d not in (1, s) for d, s in zip(dense_shape, shape[rank - d_rank:])):
        raise HostError(f"SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible shapes: "
                        f"[{','.join(map(str, shape))}] vs. [{','.join(map(str, dense_shape))}]")
    ind = ind.reshape(-1, rank)[:, rank - d_rank:]
    return tuple(np.where(np.array(dense_shape) == 1, 0, ind).T) if d_rank else ()


SparseDenseCwiseMul = _cwise_op("SparseDenseCwiseMul", np.multiply)
SparseDenseCwiseDiv = _cwise_op("SparseDenseCwiseDiv", np.divide)

def _cwise_grad(is_mul):
    """TF's _SparseDenseCwiseMulOrDivGrad: each entry's dense element by its index divided by
    the sparse shape over the dense one's (1 where dense broadcasts)."""
    def grad(op, g):
        sp_indices, sp_values, sp_shape, dense = op.inputs
        rank, d_rank = _rank_of(sp_shape), dense.shape.ndims
        if rank is None or d_rank is None:
            raise SparseDenseCwiseMul.error("the gradient of a SparseTensor times a dense tensor needs known ranks")
        d_shape = shape_of(dense, out_type=dtypes.int64)
        scaling = sp_shape // concat([constant(np.ones(rank - d_rank, np.int64)), d_shape], 0)
        indices = (sp_indices // scaling)[:, rank - d_rank:]
        dense_vals = gather_nd(dense, indices)
        if is_mul:
            dx, dy_vals = g * dense_vals, g * sp_values
        else:
            dx, dy_vals = g / dense_vals, g * (-sp_values / math_ops.square(dense_vals))
        return [None, dx, None, SparseTensorDenseAdd(indices, dy_vals, d_shape, zeros_like(dense))]
    return grad


SparseDenseCwiseMul.grad(_cwise_grad(True))
SparseDenseCwiseDiv.grad(_cwise_grad(False))


def sparse_dense_cwise(sp, dense, kind):
    """sp * dense or sp / dense: a SparseTensor of sp's indices (dense broadcast to sp's shape)."""
    sp = convert_to_sparse(sp)
    d = convert_to_tensor(dense, dtype=sp.dtype)
    opdef = SparseDenseCwiseMul if kind == "mul" else SparseDenseCwiseDiv
    result = SparseTensor(sp.indices, opdef(sp.indices, sp.values, sp.dense_shape, d), sp.dense_shape)
    result.set_shape(sp.shape)
    return result


SparseTensor.__mul__ = lambda self, other: sparse_dense_cwise(self, other, "mul")
SparseTensor.__truediv__ = SparseTensor.__div__ = lambda self, other: sparse_dense_cwise(self, other, "div")


# ---------------------------------------------------------------- reductions, empty rows

SparseReduceSum = OpDef("SparseReduceSum", host=BETWEEN)


def _kept(rank, axes, keep_dims):
    return [None if d in axes and not keep_dims else d for d in range(rank) if keep_dims or d not in axes]


@SparseReduceSum.shape
def _(input_indices, input_values, input_shape, reduction_axes, *, keep_dims):
    dims, axes, rank = static_dims(input_shape), _const(reduction_axes), _rank_of(input_shape)
    if axes is None or rank is None:
        return Spec(input_values.dtype, TensorShape(None))
    axes = {int(a) % rank for a in axes.reshape(-1)}
    out = [1 if d in axes else (None if dims is None else dims[d]) for d in range(rank)]
    return Spec(input_values.dtype, TensorShape([s for d, s in enumerate(out) if keep_dims or d not in axes]))


@SparseReduceSum.host
def _(ctx, op, values):
    ind, vals, shape, axes = (np.asarray(v) for v in values)
    rank = shape.size
    for a in axes.reshape(-1):
        if not -rank <= a < rank:
            raise HostError(f"Invalid reduction dimension {a}, for input with {rank} dimensions.")
    axes = sorted({int(a) % rank for a in axes.reshape(-1)})
    kept_shape = [1 if d in axes else int(shape[d]) for d in range(rank)]
    out = np.zeros(kept_shape, vals.dtype)
    ind = ind.reshape(-1, rank).astype(np.int64).copy()
    ind[:, axes] = 0
    if len(ind):
        np.add.at(out, tuple(ind.T), vals)
    return [out if op.attrs["keep_dims"] else out.reshape([s for d, s in enumerate(kept_shape) if d not in axes])]


@SparseReduceSum.grad
def _(op, grad):
    indices, values, shape, axes = op.inputs
    rank, axes = _rank_of(shape), _const(axes)
    axes = sorted({int(a) % rank for a in axes.reshape(-1)})
    kept = [d for d in range(rank) if d not in axes]
    if op.attrs["keep_dims"] and axes:
        grad = squeeze(grad, axis=axes)
    if not kept:
        return [None, grad * ones_like(values), None, None]
    return [None, gather_nd(grad, gather(indices, kept, axis=1)), None, None]


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """The sum of a SparseTensor's entries over axis (all by default), as a dense tensor
    (tf.sparse_reduce_sum)."""
    sp = convert_to_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    if axis is None:
        rank = sp.shape.ndims
        if rank is None:
            raise SparseReduceSum.error("reducing over every axis needs a SparseTensor of a known rank")
        axis = list(range(rank))
    axes = convert_to_tensor(np.asarray(axis, np.int32).reshape(-1), name="reduction_axes")
    return SparseReduceSum(sp.indices, sp.values, sp.dense_shape, axes, keep_dims=keep)


SparseFillEmptyRows = OpDef("SparseFillEmptyRows", host=BETWEEN)


@SparseFillEmptyRows.shape
def _(indices, values, dense_shape, default_value):
    if default_value.dtype != values.dtype:
        fail(f"default_value ({default_value.dtype.name}) must have the values' dtype ({values.dtype.name})")
    rows = static_dims(dense_shape)
    return [Spec(dtypes.int64, TensorShape([None, _rank_of(dense_shape)])), Spec(values.dtype, TensorShape([None])),
            Spec(dtypes.bool_, TensorShape([None if not rows else rows[0]])),
            Spec(dtypes.int64, TensorShape([indices.shape.dims[0] if indices.shape.ndims else None]))]


@SparseFillEmptyRows.host
def _(ctx, op, values):
    ind, vals, shape, default = (np.asarray(v) for v in values)
    rank, rows_n = shape.size, int(shape[0]) if shape.size else 0
    ind = ind.reshape(-1, rank).astype(np.int64)
    rows = ind[:, 0]
    bad = np.flatnonzero((rows < 0) | (rows >= rows_n))
    if bad.size:
        i = int(bad[0])
        raise HostError(f"indices({i}, 0) is invalid: {rows[i]} >= {rows_n}" if rows[i] >= 0 else
                        f"indices({i}, 0) is invalid: {rows[i]} < 0")
    counts = np.bincount(rows, minlength=rows_n)
    empty = counts == 0
    per_row = np.maximum(counts, 1)
    starts = np.concatenate([[0], np.cumsum(per_row)[:-1]]).astype(np.int64)
    # Each row's entries keep their order within the row (TF sorts a row's entries only when rows are out of order).
    order = np.argsort(rows, kind="stable") if (np.diff(rows) >= 0).all() else row_major_order(ind)
    out_ind = np.zeros((int(per_row.sum()), rank), np.int64)
    out_val = np.empty(len(out_ind), vals.dtype)
    reverse = np.empty(len(ind), np.int64)
    filled = np.zeros(rows_n, np.int64)
    for i in order:
        r = rows[i]
        pos = starts[r] + filled[r]
        filled[r] += 1
        out_ind[pos], out_val[pos], reverse[i] = ind[i], vals[i], pos
    out_ind[starts[empty], 0] = np.flatnonzero(empty)
    out_val[starts[empty]] = default
    return [out_ind, out_val, empty, reverse]


@SparseFillEmptyRows.grad
def _(op, _, values_grad, __, ___):
    d_values, d_default = SparseFillEmptyRowsGrad(op.outputs[3], values_grad)
    return [None, d_values, None, d_default]


SparseFillEmptyRowsGrad = OpDef("SparseFillEmptyRowsGrad", host=BETWEEN, differentiable=False)


@SparseFillEmptyRowsGrad.shape
def _(reverse_index_map, grad_values):
    return [Spec(grad_values.dtype, reverse_index_map.shape), Spec(grad_values.dtype, TensorShape([]))]


@SparseFillEmptyRowsGrad.host
def _(ctx, op, values):
    reverse, grad = np.asarray(values[0], np.int64), np.asarray(values[1])
    visited = np.zeros(len(grad), bool)
    visited[reverse] = True
    return [grad[reverse], np.asarray(grad[~visited].sum(), grad.dtype)]


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """(sp_input with an entry [row, 0, ...] = default_value in each row it has none, the bool
    vector of the rows that were empty) (tf.sparse_fill_empty_rows)."""
    sp = convert_to_sparse(sp_input)
    with get_default_graph().name_scope(name or "SparseFillEmptyRows"):
        default = convert_to_tensor(default_value, dtype=sp.dtype)
        ind, vals, empty, _ = SparseFillEmptyRows(sp.indices, sp.values, sp.dense_shape, default)
        result = SparseTensor(ind, vals, sp.dense_shape)
        result.set_shape(sp.shape)
        return result, empty
