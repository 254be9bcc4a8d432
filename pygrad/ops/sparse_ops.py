"""The ops of SparseTensors (tf.sparse_*, tf.sparse.*), as TensorFlow's. Their output sizes depend
on the values of their inputs (the number of entries, a dense shape a run computes), so each is a
host op of stage BETWEEN (see host.py): NumPy on the inputs' values, with TF's kernels' order,
checks and messages. Gradients are TF's (sparse_grad.py); tf.sparse_retain, tf.sparse_to_indicator,
tf.sparse_merge and tf.sparse.from_dense are TF's compositions of other ops.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, constant_value, convert_to_tensor, expand_dims, fill, identity, reshape, \
    shape as shape_of
from pygrad.ops.dynamic_shape_ops import where_true
from pygrad.ops.manip_ops import concat, gather
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.ops.scatter_ops import gather_nd
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_sparse, dense_shape_dims, is_sparse
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape

_INDICES = TensorShape([None, None])


def _const(t):
    """t's value when the graph fixes it (a constant), else None."""
    return constant_value(t) if isinstance(t, Tensor) else None


def static_dims(shape_input):
    """The sizes the graph knows of a dense-shape vector input (None for the others), or None."""
    return dense_shape_dims(shape_input) if isinstance(shape_input, Tensor) else None


def _rank_of(shape_input):
    """The length of a dense-shape vector input, None when unknown."""
    return shape_input.shape.dims[0] if shape_input.shape.ndims == 1 else None


def _sparse_specs(values_dtype, rank):
    return [Spec(dtypes.int64, TensorShape([None, rank])), Spec(values_dtype, TensorShape([None])),
            Spec(dtypes.int64, TensorShape([rank]))]


def _text(row):
    return "[" + ",".join(str(int(v)) for v in row) + "]"


def _first_unordered(indices):
    """The first entry i > 0 not after entry i - 1 in row-major order, and whether it repeats it (None: all ordered)."""
    if len(indices) < 2:
        return None, False
    a, b = indices[:-1], indices[1:]
    differ = a != b
    col = differ.argmax(1)
    rows = np.arange(len(a))
    cmp = np.where(differ.any(1), np.sign(b[rows, col] - a[rows, col]), 0)
    bad = np.flatnonzero(cmp <= 0)
    return (None, False) if bad.size == 0 else (int(bad[0]) + 1, bool(cmp[bad[0]] == 0))


def validate_indices(indices, shape):
    """TF's SparseTensor::IndicesValid: every entry inside shape, in row-major order, none repeated."""
    out = ((indices < 0) | (indices >= shape)).any(1) if indices.size else np.zeros(len(indices), bool)
    first_out = int(np.flatnonzero(out)[0]) if out.any() else None
    first_bad, repeated = _first_unordered(indices)
    if first_out is not None and (first_bad is None or first_out <= first_bad):
        raise HostError(f"indices[{first_out}] = {_text(indices[first_out])} is out of bounds: need 0 <= index < "
                        f"{_text(shape)}")
    if first_bad is not None:
        if repeated:
            raise HostError(f"indices[{first_bad}] = {_text(indices[first_bad])} is repeated")
        raise HostError(f"indices[{first_bad}] = {_text(indices[first_bad])} is out of order. Many sparse ops require "
                        f"sorted indices.\n    Use `tf.sparse.reorder` to create a correctly ordered copy.")


def row_major_order(indices):
    """The stable permutation that puts entries in row-major order of their indices."""
    return np.lexsort(indices.T[::-1]) if indices.size else np.arange(len(indices))


# ---------------------------------------------------------------- to dense

SparseToDense = OpDef("SparseToDense", host=BETWEEN)


@SparseToDense.shape
def _(sparse_indices, output_shape, sparse_values, default_value, *, validate_indices):
    if sparse_indices.shape.ndims is not None and sparse_indices.shape.ndims > 2:
        fail(f"sparse_indices must have rank 0, 1 or 2, got shape {sparse_indices.shape}")
    if sparse_values.dtype != default_value.dtype:
        fail(f"sparse_values ({sparse_values.dtype.name}) and default_value ({default_value.dtype.name}) must have "
             f"one dtype")
    dims = static_dims(output_shape)
    if dims is not None:
        return Spec(sparse_values.dtype, TensorShape(dims))
    rank = _rank_of(output_shape)
    return Spec(sparse_values.dtype, TensorShape(None if rank is None else [None] * rank))


@SparseToDense.host
def _(ctx, op, values):
    indices, shape, vals, default = (np.asarray(v) for v in values)
    n = indices.shape[0] if indices.ndim > 0 else 1
    rank = indices.shape[1] if indices.ndim > 1 else 1
    if shape.ndim != 1:
        raise HostError(f"output_shape must be rank 1, got shape {list(shape.shape)}")
    if vals.ndim != 0 and vals.shape != (n,):
        raise HostError(f"sparse_values has incorrect shape {list(vals.shape)}, should be [] or [{n}]")
    if default.ndim != 0:
        raise HostError(f"default_value should be a scalar, got shape {list(default.shape)}")
    if shape.size != rank:
        raise HostError(f"output_shape has incorrect number of elements: {shape.size} should be: {rank}")
    indices = indices.reshape(n, rank).astype(np.int64)
    shape = shape.astype(np.int64)
    if op.attrs["validate_indices"]:
        validate_indices(indices, shape)
    elif indices.size and ((indices < 0) | (indices >= shape)).any():
        raise HostError(f"Indices are not valid (out of bounds).  Shape: {_text(shape)}")
    out = np.full(shape, default, dtype=op.outputs[0].dtype.np)
    if n:
        out[tuple(indices.T)] = vals
    return [out]


@SparseToDense.grad
def _(op, grad):
    indices = op.inputs[0]
    if indices.shape.ndims != 2:
        indices = reshape(indices, [-1, 1])
    values_grad = gather_nd(grad, indices)
    return [None, None, values_grad, reduce_sum(grad) - reduce_sum(values_grad)]


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0, validate_indices=True, name=None):
    """A dense tensor of output_shape holding sparse_values (one per index, or one for all) at
    sparse_indices (rank 0, 1 or 2) and default_value elsewhere (tf.sparse_to_dense)."""
    values = convert_to_tensor(sparse_values)
    with values.graph.as_default():
        indices = convert_to_tensor(sparse_indices)
        shape = convert_to_tensor(output_shape, dtype=indices.dtype)
        default = convert_to_tensor(default_value, dtype=values.dtype)
    return SparseToDense(indices, shape, values, default, validate_indices=bool(validate_indices),
                         name=name or "SparseToDense")


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """sp_input as a dense tensor, default_value (0, or b"" for strings) where it has no entry."""
    sp = convert_to_sparse(sp_input)
    if default_value is None:
        default_value = b"" if sp.dtype == dtypes.string else 0
    out = sparse_to_dense(sp.indices, sp.dense_shape, sp.values, default_value, validate_indices,
                          name=name or "SparseToDense")
    return out


# ---------------------------------------------------------------- reorder, reshape

SparseReorder = OpDef("SparseReorder", host=BETWEEN)


@SparseReorder.shape
def _(input_indices, input_values, input_shape):
    return [Spec(dtypes.int64, input_indices.shape), Spec(input_values.dtype, input_values.shape)]


@SparseReorder.host
def _(ctx, op, values):
    indices, vals, _ = (np.asarray(v) for v in values)
    order = row_major_order(indices)
    return [indices[order], vals[order]]


@SparseReorder.grad
def _(op, _, values_grad):
    indices, _, shape = op.inputs
    entries = range_(shape_of(indices)[0])
    order = SparseReorder(indices, entries, shape)[1]
    return [None, gather(values_grad, InvertPermutation(order)), None]


def sparse_reorder(sp_input, name=None):
    """The same entries in row-major order of their indices (tf.sparse_reorder)."""
    sp = convert_to_sparse(sp_input)
    indices, values = SparseReorder(sp.indices, sp.values, sp.dense_shape, name=name or "SparseReorder")
    result = SparseTensor(indices, values, sp.dense_shape)
    result.set_shape(sp.shape)
    return result


InvertPermutation = OpDef("InvertPermutation", host=BETWEEN, differentiable=False)


@InvertPermutation.shape
def _(x):
    if x.shape.ndims not in (None, 1):
        fail(f"invert_permutation expects a vector, got shape {x.shape}")
    return Spec(x.dtype, x.shape)


@InvertPermutation.host
def _(ctx, op, values):
    p = np.asarray(values[0])
    out = np.full(p.shape, -1, p.dtype)
    for i, v in enumerate(p.tolist()):
        if not 0 <= v < p.size:
            raise HostError(f"{v} is not between 0 and {p.size}")
        if out[v] != -1:
            raise HostError(f"{v} is duplicated in the input.")
        out[v] = i
    return [out]


def invert_permutation(x, name=None):
    """y with y[x[i]] = i, for x a permutation of 0..n-1 (tf.invert_permutation)."""
    return InvertPermutation(convert_to_tensor(x), name=name or "InvertPermutation")


SparseReshape = OpDef("SparseReshape", host=BETWEEN, differentiable=False)


@SparseReshape.shape
def _(input_indices, input_shape, new_shape):
    rank = _rank_of(new_shape)
    return [Spec(dtypes.int64, TensorShape([None, rank])), Spec(dtypes.int64, TensorShape([rank]))]


@SparseReshape.host
def _(ctx, op, values):
    indices, shape, new = (np.asarray(v, np.int64) for v in values)
    size = int(np.prod(shape))
    unknown = np.flatnonzero(new == -1)
    if unknown.size > 1:
        raise HostError(f"only one output dimension may be -1, not both {unknown[0]} and {unknown[1]}")
    known = int(np.prod(new[new != -1]))
    new = new.copy()
    if unknown.size:
        if known == 0 or size % known:
            raise HostError(f"Input to reshape is a SparseTensor with {size} dense values, but the requested shape "
                            f"requires a multiple of {known}. Input shape: {_text(shape)} Requested shape: "
                            f"{_text(values[2])}")
        new[unknown[0]] = size // known
    elif known != size:
        raise HostError(f"Input to reshape is a tensor with {size} dense values, but the requested shape has "
                        f"{known}. Input shape: {_text(shape)} Requested shape: {_text(new)}")
    if not indices.size:
        return [np.zeros((len(indices), new.size), np.int64), new]
    flat = np.ravel_multi_index(tuple(indices.T), tuple(shape))
    return [np.stack(np.unravel_index(flat, tuple(new)), 1).astype(np.int64), new]


def sparse_reshape(sp_input, shape, name=None):
    """The same entries in a dense shape of as many elements, one dimension of which may be -1
    (tf.sparse_reshape); entries keep their row-major positions."""
    sp = convert_to_sparse(sp_input)
    with get_default_graph().name_scope(name or "SparseReshape"):
        new = convert_to_tensor(shape, dtype=dtypes.int64)
        dims, old = _const(new), sp.shape
        if dims is not None:
            dims = [int(d) for d in dims.reshape(-1)]
            if dims.count(-1) > 1:
                raise ValueError(f"At most one dimension can be inferred (-1). Found: {np.array(dims)}")
            if old.is_fully_defined():
                size, known = old.num_elements(), int(np.prod([d for d in dims if d != -1]))
                if -1 in dims and known and size % known == 0:
                    dims[dims.index(-1)] = size // known
                elif -1 in dims or known != size:
                    shown = "[" + ", ".join("None" if d == -1 else str(d) for d in dims) + "]"
                    raise ValueError(f"Cannot reshape a tensor with {size} elements to shape {shown} ({known} "
                                     f"elements).")
        indices, dense_shape = SparseReshape(sp.indices, sp.dense_shape, new)
        result = SparseTensor(indices, identity(sp.values), dense_shape)
    if dims is not None:
        result.set_shape([None if d == -1 else d for d in dims])
    return result


# ---------------------------------------------------------------- concat, add

SparseConcat = OpDef("SparseConcat", host=BETWEEN, differentiable=False)


@SparseConcat.shape
def _(*inputs, concat_dim, N):
    rank = _rank_of(inputs[2 * N])
    return _sparse_specs(inputs[N].dtype, rank)


@SparseConcat.host
def _(ctx, op, values):
    n = op.attrs["N"]
    indices, vals, shapes = values[:n], values[n:2 * n], [np.asarray(s, np.int64) for s in values[2 * n:]]
    rank = shapes[0].size
    dim = op.attrs["concat_dim"]
    if not -rank <= dim < rank:
        raise HostError(f"Concat dimension must be in range [{-rank}, {rank}), got {dim}")
    dim %= rank
    out_shape = shapes[0].copy()
    for i, s in enumerate(shapes[1:], 1):
        if s.size != rank:
            raise HostError(f"Ranks of all input tensors must match: expected {rank} but got {s.size} at position {i}")
        for d in range(rank):
            if d != dim and s[d] != shapes[0][d]:
                raise HostError(f"Input shapes must match: expected {shapes[0][d]} for dimension {d} but got "
                                f"{s[d]} at position {i}")
    out_shape[dim] = sum(int(s[dim]) for s in shapes)
    parts, offset = [], 0
    for ind, s in zip(indices, shapes):
        ind = np.asarray(ind, np.int64).reshape(-1, rank).copy()
        ind[:, dim] += offset
        offset += int(s[dim])
        parts.append(ind)
    all_indices = np.concatenate(parts)
    all_values = np.concatenate([np.asarray(v) for v in vals])
    order = row_major_order(all_indices)
    return [all_indices[order], all_values[order], out_shape]


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None):
    """The SparseTensors joined along axis (tf.sparse_concat), in row-major order; the other
    dimensions must agree, unless expand_nonconcat_dim takes each one's largest."""
    axis = concat_dim if axis is None else axis
    expand = expand_nonconcat_dim or bool(expand_nonconcat_dims)
    sps = [convert_to_sparse(s) for s in sp_inputs]
    if not sps:
        raise ValueError("sparse_concat needs at least one SparseTensor")
    if len(sps) == 1:
        return sps[0]
    shapes = [s.dense_shape for s in sps]
    with get_default_graph().name_scope(name or "SparseConcat"):
        if expand:
            from pygrad.ops.reduction_ops import reduce_max
            largest = reduce_max(concat([reshape(s, [1, -1]) for s in shapes], 0), 0)
            rank = _rank_of(shapes[0])
            if rank is None:
                raise ValueError("sparse_concat(expand_nonconcat_dim=True) needs inputs of a known rank")
            a = axis % rank
            shapes = [concat([largest[:a], s[a:a + 1], largest[a + 1:]], 0) for s in shapes]
        indices, values, dense_shape = SparseConcat(*[s.indices for s in sps], *[s.values for s in sps], *shapes,
                                                    concat_dim=int(axis), N=len(sps))
    # TF's static shape: the sum along axis, the others the first input's (the largest, expanding).
    static = [s.shape for s in sps]
    if any(s.ndims is None for s in static):
        return SparseTensor(indices, values, dense_shape)
    dims = [max(s.dims[d] for s in static) if expand and all(s.dims[d] is not None for s in static)
            else None if expand else static[0].dims[d] for d in range(static[0].ndims)]
    along = [s.dims[axis] for s in static]
    dims[axis] = None if None in along else sum(along)
    if all(s.is_fully_defined() for s in static):
        return SparseTensor(indices, values, np.array(dims, np.int64))
    result = SparseTensor(indices, values, dense_shape)
    result.set_shape(dims)
    return result


SparseAdd = OpDef("SparseAdd", host=BETWEEN)


@SparseAdd.shape
def _(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    if a_values.dtype != b_values.dtype:
        fail(f"a ({a_values.dtype.name}) and b ({b_values.dtype.name}) must have one dtype")
    return _sparse_specs(a_values.dtype, _rank_of(a_shape))


def _positions(keys, indices):
    """For each row of indices, its row in keys (-1: absent)."""
    where = {tuple(r): i for i, r in enumerate(keys.tolist())}
    return np.array([where.get(tuple(r), -1) for r in indices.tolist()], np.int64)


@SparseAdd.host
def _(ctx, op, values):
    a_ind, a_val, a_shape, b_ind, b_val, b_shape, thresh = (np.asarray(v) for v in values)
    if a_shape.size != b_shape.size:
        raise HostError(f"Operands do not have the same ranks; got ranks: {a_shape.size} and {b_shape.size}")
    for d in range(a_shape.size):
        if a_shape[d] != b_shape[d]:
            raise HostError(f"Operands' shapes do not match: got {a_shape[d]} and {b_shape[d]} for dimension {d}")
    rank = a_shape.size
    a_ind, b_ind = a_ind.reshape(-1, rank).astype(np.int64), b_ind.reshape(-1, rank).astype(np.int64)
    # TF merges the two in their (row-major) order: a sum kept when |a + b| >= thresh.
    both = np.concatenate([a_ind, b_ind])
    vals = np.concatenate([a_val, b_val])
    order = row_major_order(both)
    both, vals = both[order], vals[order]
    out_ind, out_val, i = [], [], 0
    while i < len(both):
        if i + 1 < len(both) and (both[i] == both[i + 1]).all():
            s = vals[i] + vals[i + 1]
            if abs(s) >= thresh:
                out_ind.append(both[i])
                out_val.append(s)
            i += 2
        else:
            out_ind.append(both[i])
            out_val.append(vals[i])
            i += 1
    return [np.array(out_ind, np.int64).reshape(-1, rank), np.array(out_val, a_val.dtype).reshape(-1),
            a_shape.astype(np.int64)]


@SparseAdd.grad
def _(op, *grads):
    a_grad, b_grad = SparseAddGrad(grads[1], op.inputs[0], op.inputs[3], op.outputs[0])
    return [None, a_grad, None, None, b_grad, None, None]


SparseAddGrad = OpDef("SparseAddGrad", host=BETWEEN, differentiable=False)


@SparseAddGrad.shape
def _(backprop_val_grad, a_indices, b_indices, sum_indices):
    return [Spec(backprop_val_grad.dtype, TensorShape([a_indices.shape.dims[0] if a_indices.shape.ndims else None])),
            Spec(backprop_val_grad.dtype, TensorShape([b_indices.shape.dims[0] if b_indices.shape.ndims else None]))]


@SparseAddGrad.host
def _(ctx, op, values):
    grad, a_ind, b_ind, sum_ind = (np.asarray(v) for v in values)
    out = []
    for ind in (a_ind, b_ind):
        pos = _positions(sum_ind, ind)
        out.append(np.where(pos >= 0, grad[np.maximum(pos, 0)] if grad.size else 0, 0).astype(grad.dtype))
    return out


SparseTensorDenseAdd = OpDef("SparseTensorDenseAdd", host=BETWEEN)


@SparseTensorDenseAdd.shape
def _(a_indices, a_values, a_shape, b):
    if a_values.dtype != b.dtype:
        fail(f"a ({a_values.dtype.name}) and b ({b.dtype.name}) must have one dtype")
    return Spec(b.dtype, b.shape)


@SparseTensorDenseAdd.host
def _(ctx, op, values):
    ind, vals, shape, b = (np.asarray(v) for v in values)
    if list(shape) != list(b.shape):
        raise HostError(f"Dimension mismatch: a and b must have one shape, got a {_text(shape)} and b "
                        f"{list(b.shape)}")
    out = np.array(b, copy=True)
    if len(ind):
        np.add.at(out, tuple(np.asarray(ind, np.int64).reshape(len(ind), -1).T), vals)
    return [out]


@SparseTensorDenseAdd.grad
def _(op, grad):
    return [None, gather_nd(grad, op.inputs[0]), None, grad]


def sparse_add(a, b, thresh=0, threshold=None):
    """a + b where one or both are SparseTensors (tf.sparse_add): two give a SparseTensor (a sum
    with |value| below thresh left out), a SparseTensor and a Tensor a Tensor."""
    if threshold is not None:
        thresh = threshold
    if not (is_sparse(a) or is_sparse(b)):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if is_sparse(a) and is_sparse(b):
        a, b = convert_to_sparse(a), convert_to_sparse(b)
        if not a.shape.is_compatible_with(b.shape):
            raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")
        t = convert_to_tensor(thresh, dtype=a.dtype.real_dtype if hasattr(a.dtype, "real_dtype") else a.dtype,
                              name="thresh")
        indices, values, shape = SparseAdd(a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape, t)
        result = SparseTensor(indices, values, shape)
        result.set_shape(a.shape.merge_with(b.shape))
        return result
    if is_sparse(b):
        a, b = b, a
    a = convert_to_sparse(a)
    return SparseTensorDenseAdd(a.indices, a.values, a.dense_shape, convert_to_tensor(b, dtype=a.dtype))


# ---------------------------------------------------------------- TF's compositions

def sparse_retain(sp_input, to_retain):
    """The entries whose to_retain (a bool vector, one per entry) is true (tf.sparse_retain)."""
    sp = convert_to_sparse(sp_input)
    keep = convert_to_tensor(to_retain)
    if keep.shape.ndims not in (None, 1):
        raise ValueError(f"Shape {keep.shape} must have rank 1")
    n = sp.values.shape.dims[0] if sp.values.shape.ndims else None
    if n is not None and keep.shape.ndims == 1 and keep.shape.dims[0] not in (None, n):
        raise ValueError(f"Dimensions {n} and {keep.shape.dims[0]} are not compatible")
    kept = reshape(where_true(keep), [-1])
    result = SparseTensor(gather(sp.indices, kept), gather(sp.values, kept), identity(sp.dense_shape))
    result.set_shape(sp.shape)
    return result


def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """sp_values re-indexed by the ids in sp_ids (a SparseTensor, or a list for several trailing
    dimensions): an entry [i..., j] of value v with id k becomes [i..., k] (tf.sparse_merge)."""
    ids_list = sp_ids if isinstance(sp_ids, (list, tuple)) else [sp_ids]
    sizes = vocab_size if isinstance(vocab_size, (list, tuple)) else [vocab_size]
    if len(ids_list) != len(sizes):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    values = convert_to_sparse(sp_values, "sp_values")
    with get_default_graph().name_scope(name or "SparseMerge"):
        ids = [cast(convert_to_sparse(s, "sp_ids").values, dtypes.int64) for s in ids_list]
        columns = [expand_dims(i, 1) for i in ids]
        indices = concat([values.indices[:, :-1]] + columns, 1)
        sizes = [cast(convert_to_tensor(v), dtypes.int64) for v in sizes]
        shape = concat([values.dense_shape[:-1]] + [reshape(v, [1]) for v in sizes], 0)
        result = SparseTensor(indices, values.values, shape)
        return result if already_sorted else sparse_reorder(result)


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """A bool tensor of sp_input's shape with its last dimension vocab_size: [i..., id] is true
    for each id among the values in row i... (tf.sparse_to_indicator)."""
    sp = convert_to_sparse(sp_input)
    with get_default_graph().name_scope(name or "SparseToIndicator"):
        n = shape_of(sp.indices)[0:1]
        flags = SparseTensor(sp.indices, fill(n, True), sp.dense_shape)
        merged = sparse_merge(sp, flags, vocab_size)
        return sparse_tensor_to_dense(merged, default_value=False, validate_indices=False)


def from_dense(tensor, name=None):
    """The non-zero entries of tensor as a SparseTensor (tf.sparse.from_dense)."""
    with get_default_graph().name_scope(name or "dense_to_sparse"):
        t = convert_to_tensor(tensor)
        indices = where_true(math_ops.not_equal(t, 0 if t.dtype != dtypes.string else b""))
        return SparseTensor(indices, gather_nd(t, indices), shape_of(t, out_type=dtypes.int64))

