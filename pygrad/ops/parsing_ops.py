"""tf.parse_single_example and tf.parse_example: serialized tf.train.Example protos (pygrad/tf_protos.py)
parsed into dense tensors, one per feature of a dict of FixedLenFeature and FixedLenSequenceFeature,
as TF's ParseExampleV2 parses them (its checks and messages: a required feature missing, a value
count that does not match the shape, a list of the wrong kind). The parse runs in Python (a host
op of stage BETWEEN, see host.py). A VarLenFeature is parsed to a SparseTensor ([example, j] for the
j-th value), a SparseFeature to one built by tf.sparse_merge of its index and value lists, as TF's.
RaggedFeature (a RaggedTensor) is refused.
"""
from collections import namedtuple

import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import constant, convert_to_tensor, numpy_value
from pygrad.graph import Tensor
from pygrad.ops.sparse_ops import sparse_merge
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape, as_shape

FixedLenFeature = namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"], defaults=(None,))
FixedLenFeature.__doc__ = "A feature of a fixed number of values, parsed to a tensor of shape (TF's)."
FixedLenSequenceFeature = namedtuple("FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"],
                                     defaults=(False, None))
FixedLenSequenceFeature.__doc__ = ("A feature of any number of values of shape, parsed to [n] + shape; parse_example "
                                   "pads the batch's to the longest with default_value (TF's)")
VarLenFeature = namedtuple("VarLenFeature", ["dtype"])
SparseFeature = namedtuple("SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"],
                           defaults=(False,))
RaggedFeature = namedtuple("RaggedFeature", ["dtype", "value_key", "partitions", "row_splits_dtype", "validate"],
                           defaults=(None, (), dtypes.int32, False))

_KINDS = {"bytes_list": dtypes.string, "float_list": dtypes.float32, "int64_list": dtypes.int64}
_TYPE_NAMES = {dtypes.string: "string", dtypes.float32: "float", dtypes.int64: "int64"}

ParseExample = OpDef("ParseExampleV2", host=BETWEEN, differentiable=False)


@ParseExample.shape
def _(serialized, *dense_defaults, names, sparse_keys, dense_keys, ragged_keys, num_sparse, sparse_types,
      ragged_value_types, ragged_split_types, dense_shapes):
    if serialized.shape.ndims not in (0, 1):
        fail(f"serialized must be a scalar or a vector, got shape {serialized.shape}")
    batch = serialized.shape.as_list() if serialized.shape.ndims else []
    rank = None if serialized.shape.ndims is None else serialized.shape.ndims + 1
    return ([Spec(dtypes.int64, TensorShape([None, rank])) for _ in sparse_types]
            + [Spec(t, TensorShape([None])) for t in sparse_types]
            + [Spec(dtypes.int64, TensorShape([rank])) for _ in sparse_types]
            + [Spec(d.dtype, TensorShape(batch + s.as_list())) for d, s in zip(dense_defaults, dense_shapes)])


def _shape_text(dims):
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def feature_values(feature, kind):
    """The values of one Feature as an array of kind's dtype, or the Feature's own kind on a mismatch."""
    which = None if feature is None else feature.WhichOneof("kind")
    if which is not None and _KINDS[which] != kind:
        return _KINDS[which]
    if which is None:
        return np.empty(0, object if kind == dtypes.string else kind.np)
    values = getattr(feature, which).value
    if kind == dtypes.string:
        out = np.empty(len(values), object)
        out[:] = list(values)
        return out
    return np.array(values, kind.np)


def _parse_one(feature_map, i, single, names, dense_keys, shapes, defaults, kinds):
    """The dense values of the i-th Features' map (an Example's), per key; None for a sequence feature it lacks."""
    out = []
    where = (lambda k: f"Key: {k}.  ") if single else (lambda k: f"Name: {names[i]}, Key: {k}, Index: {i}.  ")
    for key, shape, default, kind in zip(dense_keys, shapes, defaults, kinds):
        dims = shape.as_list()
        sequence = dims and dims[0] is None
        if key not in feature_map:
            if sequence:
                out.append(None)
            elif default.size == 0:
                prefix = "" if single else f"Name: {names[i]}, "
                raise HostError(f"{prefix}Feature: {key} (data type: {_TYPE_NAMES[kind]}) is required but could "
                                f"not be found.")
            else:
                out.append(default.reshape(dims))
            continue
        values = feature_values(feature_map[key], kind)
        if isinstance(values, dtypes.DType):
            raise HostError(f"{where(key)}Data types don't match. Data type: {_TYPE_NAMES[values]} but expected "
                            f"type: {_TYPE_NAMES[kind]}")
        stride = int(np.prod(dims[1:] if sequence else dims))
        name = _TYPE_NAMES[kind]
        if sequence:
            if stride and values.size % stride or not stride and values.size:
                raise HostError(f"{where(key)}Number of {name} values is not a multiple of stride length. Saw "
                                f"{values.size} values but output shape is: {_shape_text(dims)}")
            out.append(values.reshape([values.size // stride if stride else 0] + dims[1:]))
        elif values.size != stride:
            raise HostError(f"{where(key)}Number of {name} values != expected.  Values size: {values.size} but "
                            f"output shape: {_shape_text(dims)}")
        else:
            out.append(values.reshape(dims))
    return out


def parsed(message, serialized, names):
    """(messages, whether the input was one scalar, the examples' names) of a string scalar or
    vector of serialized protos of the message class named; TF's error for bytes that are not one."""
    from google.protobuf.message import DecodeError

    from pygrad import tf_protos
    cls = getattr(tf_protos, message)
    serialized = np.asarray(serialized, dtype=object)
    flat = serialized.reshape(-1)
    out = []
    for s in flat:
        try:
            out.append(cls.FromString(s))
        except DecodeError:
            raise HostError(f"Could not parse example input, value: '{s[:64]!r}'") from None
    return out, serialized.ndim == 0, list(names) or ["<unknown>"] * len(flat)


@ParseExample.host
def _(ctx, op, values):
    a = op.attrs
    examples, single, names = parsed("Example", values[0], a["names"])
    maps = [e.features.feature for e in examples]
    kinds = [d.dtype for d in op.inputs[1:]]
    return (sparse_columns(maps, single, names, a["sparse_keys"], a["sparse_types"])
            + dense_columns(maps, single, names, a["dense_keys"], a["dense_shapes"], values[1:], kinds))


def dense_columns(maps, single, names, keys, shapes, defaults, kinds):
    """The value of each dense feature over the Features' maps: [batch] + its shape (a sequence
    padded to the longest with its default, or 0 or ""), without the batch for one example."""
    defaults = [np.asarray(v) for v in defaults]
    rows = [_parse_one(m, i, single, names, keys, shapes, defaults, kinds) for i, m in enumerate(maps)]
    outs = []
    for j, (shape, default, kind) in enumerate(zip(shapes, defaults, kinds)):
        dims = shape.as_list()
        if dims and dims[0] is None:  # a sequence: padded to the longest with the default (0, "")
            n = max([r[j].shape[0] for r in rows if r[j] is not None], default=0)
            fill = default.reshape(-1)[0] if default.size else (b"" if kind == dtypes.string else 0)
            column = np.full([len(rows), n] + dims[1:], fill, object if kind == dtypes.string else kind.np)
            for i, r in enumerate(rows):
                if r[j] is not None:
                    column[i, :len(r[j])] = r[j]
        else:
            column = np.stack([r[j] for r in rows]) if rows else np.zeros([0] + dims, default.dtype)
        outs.append(column[0] if single else column)
    return outs


def sparse_columns(maps, single, names, keys, kinds):
    """The [indices, values, dense_shape] of each VarLenFeature over the Features' maps, all indices
    first, as TF's outputs: entry j of example i at [i, j] ([j] for one example), the dense shape
    [batch, longest]."""
    indices, values, shapes = [], [], []
    for key, kind in zip(keys, kinds):
        rows = []
        for i, feature_map in enumerate(maps):
            got = feature_values(feature_map[key], kind) if key in feature_map else feature_values(None, kind)
            if isinstance(got, dtypes.DType):
                where = f"Key: {key}.  " if single else f"Name: {names[i]}, Key: {key}, Index: {i}.  "
                raise HostError(f"{where}Data types don't match. Expected type: {_TYPE_NAMES[kind]}, Actual type: "
                                f"{_TYPE_NAMES[got]}")
            rows.append(got)
        longest = max((len(r) for r in rows), default=0)
        ind = np.array([(i, j) for i, r in enumerate(rows) for j in range(len(r))], np.int64).reshape(-1, 2)
        vals = np.concatenate(rows) if rows else np.empty(0, object if kind == dtypes.string else kind.np)
        indices.append(ind[:, 1:] if single else ind)
        values.append(vals.astype(object) if kind == dtypes.string else vals)
        shapes.append(np.array([longest] if single else [len(rows), longest], np.int64))
    return indices + values + shapes


def _dense(key, feature, what):
    """(TensorShape, dtype, default tensor) of a dense feature (an empty default: required)."""
    if isinstance(feature, RaggedFeature):
        raise NotImplementedError(f"{what}: feature '{key}' is a RaggedFeature, whose value is a RaggedTensor, which "
                                  f"pygrad does not have; use VarLenFeature (a SparseTensor) or "
                                  f"FixedLenSequenceFeature")
    if not isinstance(feature, (FixedLenFeature, FixedLenSequenceFeature)):
        raise TypeError(f"{what}: feature '{key}' must be a FixedLenFeature or FixedLenSequenceFeature, got "
                        f"{type(feature).__name__}")
    dtype = dtypes.as_dtype(feature.dtype)
    if dtype not in _TYPE_NAMES:
        raise TypeError(f"{what}: feature '{key}' has dtype {dtype.name}; Example features are float32, int64 or "
                        f"string")
    shape = as_shape(feature.shape)
    if not shape.is_fully_defined():
        raise ValueError(f"{what}: feature '{key}' must have a fully defined shape, got {shape}")
    sequence = isinstance(feature, FixedLenSequenceFeature)
    if sequence and not feature.allow_missing:
        raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
    if feature.default_value is None:
        return TensorShape([None]).concatenate(shape) if sequence else shape, dtype, constant([], dtype)
    value = dtypes.as_bytes_array(feature.default_value) if dtype == dtypes.string else \
        numpy_value(feature.default_value, dtype.np)
    want = 1 if sequence else shape.num_elements()
    if value.size != want:
        raise ValueError(f"{what}: feature '{key}' has a default_value of {value.size} values, "
                         + ("a sequence feature's is one (its padding)" if sequence else
                            f"its shape {shape} holds {want}"))
    if sequence:
        return TensorShape([None]).concatenate(shape), dtype, constant(value.reshape([]), dtype)
    return shape, dtype, constant(value.reshape(shape.as_list()), dtype)


def _parse(serialized, features, name, example_names, rank, what):
    if not isinstance(features, dict):
        raise TypeError(f"{what}: features must be a dict of feature name to feature, got {type(features).__name__}")
    serialized = convert_to_tensor(serialized)
    if serialized.dtype != dtypes.string or serialized.shape.ndims not in (None, rank):
        raise ParseExample.error(f"serialized must be a string {'scalar' if rank == 0 else 'vector'}, got "
                                 f"{serialized.dtype.name} of shape {serialized.shape}", name)
    sparse_keys, sparse_types = [], []

    def add_sparse(key, dtype):  # TF's _ParseOpParams._add_sparse_key
        dtype = dtypes.as_dtype(dtype)
        if dtype not in _TYPE_NAMES:
            raise TypeError(f"{what}: feature '{key}' has dtype {dtype.name}; Example features are float32, int64 "
                            f"or string")
        if key in sparse_keys:
            if sparse_types[sparse_keys.index(key)] != dtype:
                raise ValueError(f"Conflicting type {sparse_types[sparse_keys.index(key)].name} vs {dtype.name} for "
                                 f"feature {key}.")
        else:
            sparse_keys.append(key)
            sparse_types.append(dtype)

    keys = []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            add_sparse(key, f.dtype)
        elif isinstance(f, SparseFeature):
            for index_key in sorted(f.index_key) if isinstance(f.index_key, (list, tuple)) else [f.index_key]:
                add_sparse(index_key, dtypes.int64)
            add_sparse(f.value_key, f.dtype)
        else:
            keys.append(key)
    dense = [_dense(k, features[k], what) for k in keys]
    if example_names is not None:
        example_names = [n.decode() if isinstance(n, bytes) else str(n) for n in np.asarray(example_names).reshape(-1)]
    outs = ParseExample(serialized, *[d for _, _, d in dense], names=example_names or [], sparse_keys=sparse_keys,
                        dense_keys=keys, ragged_keys=[], num_sparse=len(sparse_keys), sparse_types=sparse_types,
                        ragged_value_types=[], ragged_split_types=[], dense_shapes=[s for s, _, _ in dense],
                        name=name or ("ParseSingleExample" if rank == 0 else "ParseExample"))
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    ns = len(sparse_keys)
    sparse = {k: SparseTensor(outs[i], outs[ns + i], outs[2 * ns + i]) for i, k in enumerate(sparse_keys)}
    result = dict(zip(keys, outs[3 * ns:]))
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            result[key] = sparse[key]
        elif isinstance(f, SparseFeature):  # TF's sparse_merge of the index and value features
            index_keys = f.index_key if isinstance(f.index_key, (list, tuple)) else [f.index_key]
            sizes = f.size if isinstance(f.size, (list, tuple)) else [f.size]
            result[key] = sparse_merge([sparse[k] for k in index_keys], sparse[f.value_key], sizes,
                                       already_sorted=f.already_sorted)
    return result


def parse_single_example(serialized, features, name=None, example_names=None):
    """{key: tensor} of one serialized Example (a string scalar), per features' FixedLenFeature and
    FixedLenSequenceFeature (allow_missing=True) entries."""
    return _parse(serialized, features, name, example_names, 0, "parse_single_example")


def parse_example(serialized, features, name=None, example_names=None):
    """{key: tensor of shape [batch] + the feature's} of a vector of serialized Examples."""
    return _parse(serialized, features, name, example_names, 1, "parse_example")
