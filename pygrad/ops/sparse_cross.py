"""tf.sparse.cross and tf.sparse.cross_hashed: TF's SparseCross (sparse_cross_op.cc), bit for bit.

Each row of the output holds the cartesian product of that row's features in every input, the
SparseTensors' columns first, then the dense ones, the last input's feature varying fastest. A
hashed cross chains FingerprintCat64 from hash_key over the features, each a string's
Fingerprint64 or an integer's own value, and takes it modulo num_buckets (modulo 2^63 - 1 when
num_buckets is 0); a string cross joins the features with "_X_". A host op of stage BETWEEN (see
host.py): the number of crosses a run makes depends on the values.
"""
import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import cast, convert_to_tensor
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_sparse, is_sparse
from pygrad.ops.string_hash import M64, fingerprint64, fingerprint_cat64
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

DEFAULT_HASH_KEY = 0xDECAFCAFFE  # TF's sparse_ops._DEFAULT_HASH_KEY
_INT64_MAX = (1 << 63) - 1

SparseCross = OpDef("SparseCross", host=BETWEEN, differentiable=False)


@SparseCross.shape
def _(*inputs, N, hashed_output, num_buckets, hash_key, sparse_types, dense_types, out_type, internal_type):
    if len(inputs) != 3 * N + len(dense_types):
        fail(f"expected {3 * N + len(dense_types)} inputs (N={N} indices, values and shapes, then "
             f"{len(dense_types)} dense), got {len(inputs)}")
    for t in inputs[N:2 * N] + inputs[3 * N:]:
        if t.dtype not in (dtypes.int64, dtypes.string):
            fail_dtype(f"inputs must be int64 or string, got {t.dtype.name}")
    for t in inputs[3 * N:]:
        if t.shape.ndims not in (None, 2):
            fail(f"Dense inputs should be a matrix but received shape {t.shape}")
    if num_buckets < 0:
        fail(f"num_buckets must be >= 0, got {num_buckets}")
    return [Spec(dtypes.int64, TensorShape([None, 2])), Spec(out_type, TensorShape([None])),
            Spec(dtypes.int64, TensorShape([2]))]


def _features(values, hashed):
    """A column's features as the crosser reads them: a string's Fingerprint64 or an integer's own
    value (unsigned) when hashed; the string, or the integer's decimal digits, when not."""
    v = np.asarray(values)
    if v.dtype == object:
        return [fingerprint64(s) for s in v] if hashed else list(v)
    return [int(i) & M64 for i in v] if hashed else [str(int(i)).encode() for i in v]


def _sparse_rows(indices, batch_size):
    """TF's ExtractFeatureData: per row of the batch, (start, count) of its entries, read in order."""
    rows, pos, n = [], 0, len(indices)
    for b in range(batch_size):
        start = pos
        while pos < n and indices[pos, 0] == b:
            pos += 1
        rows.append((start, pos - start))
    return rows


@SparseCross.host
def _(ctx, op, values):
    a = op.attrs
    n = a["N"]
    indices = [np.asarray(i, np.int64) for i in values[:n]]
    shapes = [np.asarray(s, np.int64) for s in values[2 * n:3 * n]]
    dense = [np.asarray(d) for d in values[3 * n:]]
    for i, (ind, val) in enumerate(zip(indices, values[n:2 * n])):
        if ind.ndim != 2 or ind.shape[1] != 2:
            raise HostError(f"Expected D2 of index to be 2 got {ind.shape[-1] if ind.ndim else 0} at position {i}")
        if len(val) != len(ind):
            raise HostError(f"Expected size of values to be {len(ind)} got {len(val)} at position {i}")
        if shapes[i].shape != (2,):
            raise HostError(f"shape should imply a 2D tensor, but got [{shapes[i].size}] at position {i}")
    for i, d in enumerate(dense):
        if d.ndim != 2:
            raise HostError(f"Dense inputs should be a matrix but received shape {list(d.shape)} at position {i}")
    batch = int(shapes[0][0]) if n else (len(dense[0]) if dense else 0)
    for i, s in enumerate(shapes):
        if s[0] != batch:
            raise HostError(f"Expected batch size {batch} got {s[0]} at position {i}")
    for i, d in enumerate(dense):
        if len(d) != batch:
            raise HostError(f"Expected batch size {batch} got {len(d)} at dense tensor {i}")
    hashed = a["hashed_output"]
    columns = []  # per column, per row of the batch, its features
    for ind, val in zip(indices, values[n:2 * n]):
        feats = _features(val, hashed)
        columns.append([feats[s:s + c] for s, c in _sparse_rows(ind, batch)])
    for d in dense:
        feats = _features(d.reshape(-1), hashed)
        width = d.shape[1]
        columns.append([feats[b * width:(b + 1) * width] for b in range(batch)])
    out_indices, out_values, widest = [], [], 0
    for b in range(batch):
        crosses = [()]
        for col in columns:
            crosses = [c + (f,) for c in crosses for f in col[b]]
        widest = max(widest, len(crosses))
        for j, cross in enumerate(crosses):
            out_indices.append((b, j))
            out_values.append(_hash(cross, a) if hashed else b"_X_".join(cross))
    out_indices = np.array(out_indices, np.int64).reshape(-1, 2)
    out_values = np.array(out_values, np.int64 if hashed else object)
    return [out_indices, out_values, np.array([batch, widest], np.int64)]


def _hash(cross, attrs):
    h = attrs["hash_key"] & M64
    for f in cross:
        h = fingerprint_cat64(h, f)
    return h % attrs["num_buckets"] if attrs["num_buckets"] > 0 else h % _INT64_MAX


def _cross(inputs, hashed_output, num_buckets, hash_key, name):
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Inputs must be a list")
    if not all(is_sparse(i) or hasattr(i, "dtype") for i in inputs):
        raise TypeError("All inputs must be SparseTensors")
    sparse = [convert_to_sparse(i) for i in inputs if is_sparse(i)]
    dense = [convert_to_tensor(i) for i in inputs if not is_sparse(i)]
    internal = dtypes.string
    values = []
    for v in [s.values for s in sparse]:
        if v.dtype != dtypes.string:
            v, internal = cast(v, dtypes.int64), dtypes.int64
        values.append(v)
    dense_in = []
    for d in dense:
        if d.dtype != dtypes.string:
            d, internal = cast(d, dtypes.int64), dtypes.int64
        dense_in.append(d)
    out_type = dtypes.int64 if hashed_output else dtypes.string
    indices, vals, shape = SparseCross(
        *[s.indices for s in sparse], *values, *[s.dense_shape for s in sparse], *dense_in, N=len(sparse),
        hashed_output=hashed_output, num_buckets=int(num_buckets), hash_key=int(hash_key or DEFAULT_HASH_KEY),
        sparse_types=[v.dtype for v in values], dense_types=[d.dtype for d in dense_in], out_type=out_type,
        internal_type=internal, name=name or "SparseCross")
    return SparseTensor(indices, vals, shape)


def sparse_cross(inputs, name=None):
    """The crosses of the inputs' features as strings "a_X_b_X_c" (tf.sparse.cross)."""
    return _cross(inputs, False, 0, None, name)


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """The crosses of the inputs' features as hashed int64 ids (tf.sparse.cross_hashed): modulo
    num_buckets when it is positive."""
    return _cross(inputs, True, num_buckets, hash_key, name)
