"""tf.parse_single_sequence_example and tf.io.parse_sequence_example: serialized
tf.train.SequenceExamples parsed as TF's ParseSequenceExampleV2 parses them. The context is a
Features map, parsed as an Example's (FixedLenFeature, VarLenFeature); each feature list is a
sequence of Features: a FixedLenSequenceFeature gives [steps] + its shape (padded to the longest
in a batch, with the lengths), a VarLenFeature a SparseTensor [steps, longest] (with a batch
dimension first for a batch). A host op of stage BETWEEN (see host.py), with TF's checks.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.parsing_ops import (_TYPE_NAMES, FixedLenFeature, FixedLenSequenceFeature, VarLenFeature,
                                    _dense, _shape_text, dense_columns, feature_values, parsed, sparse_columns)
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape, as_shape

ParseSequenceExample = OpDef("ParseSequenceExampleV2", host=BETWEEN, differentiable=False)


@ParseSequenceExample.shape
def _(serialized, *context_dense_defaults, names, context_sparse_keys, context_dense_keys, feature_list_sparse_keys,
      feature_list_dense_keys, feature_list_dense_missing_assumed_empty, context_sparse_types,
      feature_list_dense_types, feature_list_sparse_types, context_dense_shapes, feature_list_dense_shapes):
    if serialized.shape.ndims not in (0, 1):
        fail(f"serialized must be a scalar or a vector, got shape {serialized.shape}")
    batch = serialized.shape.as_list()
    rank = len(batch)

    def sparse(types, r):
        return ([Spec(dtypes.int64, TensorShape([None, r])) for _ in types]
                + [Spec(t, TensorShape([None])) for t in types]
                + [Spec(dtypes.int64, TensorShape([r])) for _ in types])
    return (sparse(context_sparse_types, rank + 1)
            + [Spec(d.dtype, TensorShape(batch + s.as_list())) for d, s in zip(context_dense_defaults,
                                                                               context_dense_shapes)]
            + sparse(feature_list_sparse_types, rank + 2)
            + [Spec(t, TensorShape(batch + [None] + s.as_list())) for t, s in zip(feature_list_dense_types,
                                                                                  feature_list_dense_shapes)]
            + [Spec(dtypes.int64, TensorShape(batch)) for _ in feature_list_dense_types])


def _steps(lists, i, key, kind, single, names, stride=None):
    """The values of each step of feature list key in example i ([] if it has none)."""
    if key not in lists:
        return None
    out = []
    for t, f in enumerate(lists[key].feature):
        v = feature_values(f, kind)
        where = f"Name: {names[i] if not single else '<unknown>'}, Feature list: {key}, Index: {t}.  "
        if isinstance(v, dtypes.DType):
            raise HostError(f"{where}Data types don't match. Expected type: {_TYPE_NAMES[kind]}, Actual type: "
                            f"{_TYPE_NAMES[v]}")
        if stride is not None and v.size != stride[0]:
            raise HostError(f"{where}Number of {_TYPE_NAMES[kind]} values != expected.  values size: {v.size} but "
                            f"output shape: {_shape_text(stride[1])}")
        out.append(v)
    return out


@ParseSequenceExample.host
def _(ctx, op, values):
    a = op.attrs
    examples, single, names = parsed("SequenceExample", values[0], a["names"])
    contexts = [e.context.feature for e in examples]
    lists = [e.feature_lists.feature_list for e in examples]
    out = sparse_columns(contexts, single, names, a["context_sparse_keys"], a["context_sparse_types"])
    out += dense_columns(contexts, single, names, a["context_dense_keys"], a["context_dense_shapes"], values[1:],
                         [d.dtype for d in op.inputs[1:]])
    # Variable-length feature lists: entry j of step t (of example b) at [t, j] ([b, t, j]).
    indices, vals, shapes = [], [], []
    for key, kind in zip(a["feature_list_sparse_keys"], a["feature_list_sparse_types"]):
        per = [_steps(fl, i, key, kind, single, names) or [] for i, fl in enumerate(lists)]
        cells = [(i, t, j) for i, steps in enumerate(per) for t, v in enumerate(steps) for j in range(v.size)]
        ind = np.array(cells, np.int64).reshape(-1, 3)
        flat_vals = [x for steps in per for v in steps for x in v.tolist()]
        arr = np.empty(len(flat_vals), object) if kind == dtypes.string else np.array(flat_vals, kind.np)
        if kind == dtypes.string:
            arr[:] = flat_vals
        longest_t = max((len(steps) for steps in per), default=0)
        longest_j = max((v.size for steps in per for v in steps), default=0)
        indices.append(ind[:, 1:] if single else ind)
        vals.append(arr)
        shapes.append(np.array(([] if single else [len(per)]) + [longest_t, longest_j], np.int64))
    out += indices + vals + shapes
    # Fixed-length feature lists, padded to the longest with zeros, and their lengths.
    dense, lengths = [], []
    for key, kind, shape, empty_ok in zip(a["feature_list_dense_keys"], a["feature_list_dense_types"],
                                          a["feature_list_dense_shapes"],
                                          a["feature_list_dense_missing_assumed_empty"]):
        dims = shape.as_list()
        stride = (int(np.prod(dims)), dims)
        per = []
        for i, fl in enumerate(lists):
            steps = _steps(fl, i, key, kind, single, names, stride)
            if steps is None and not empty_ok:
                raise HostError(f"Name: {names[i]}, Feature list '{key}' is required but could not be found.  Did "
                                f"you mean to include it in feature_list_dense_missing_assumed_empty or "
                                f"feature_list_dense_defaults?")
            per.append([v.reshape(dims) for v in steps or []])
        n = max((len(p) for p in per), default=0)
        column = np.zeros([len(per), n] + dims, object if kind == dtypes.string else kind.np)
        if kind == dtypes.string:
            column[...] = b""
        for i, p in enumerate(per):
            if p:
                column[i, :len(p)] = np.stack(p)
        lens = np.array([len(p) for p in per], np.int64)
        dense.append(column[0] if single else column)
        lengths.append(lens[0] if single else lens)
    return out + dense + lengths


def _keys(features, kinds, what):
    """(sparse keys and dtypes, dense keys) of a feature dict, keys sorted as TF's."""
    sparse, dense = [], []
    for key in sorted(features or {}):
        f = features[key]
        if not isinstance(f, kinds):
            raise ValueError(f"Unsupported {type(f).__name__} {f} for {what} feature '{key}'; expected one of "
                             f"{[k.__name__ for k in kinds]}")
        if isinstance(f, VarLenFeature):
            sparse.append((key, dtypes.as_dtype(f.dtype)))
        else:
            dense.append(key)
    return sparse, dense


def _parse(serialized, context_features, sequence_features, names, name, rank, what):
    if not (context_features or sequence_features):
        raise ValueError("Both context_features and sequence_features are None, but at least one should have "
                         "values.")
    serialized = convert_to_tensor(serialized)
    if serialized.dtype != dtypes.string or serialized.shape.ndims not in (None, rank):
        raise ParseSequenceExample.error(f"serialized must be a string {'scalar' if rank == 0 else 'vector'}, got "
                                         f"{serialized.dtype.name} of shape {serialized.shape}", name)
    c_sparse, c_dense = _keys(context_features, (VarLenFeature, FixedLenFeature), "context")
    s_sparse, s_dense = _keys(sequence_features, (VarLenFeature, FixedLenSequenceFeature), "sequence")
    context = [_dense(k, context_features[k], what) for k in c_dense]
    for k in s_dense:
        if sequence_features[k].default_value is not None:
            raise ValueError(f"Value feature_list.dense_defaults[{k}] must be None")
    if names is not None:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in np.asarray(names).reshape(-1)]
    outs = ParseSequenceExample(
        serialized, *[d for _, _, d in context], names=names or [], context_sparse_keys=[k for k, _ in c_sparse],
        context_dense_keys=c_dense, feature_list_sparse_keys=[k for k, _ in s_sparse], feature_list_dense_keys=s_dense,
        feature_list_dense_missing_assumed_empty=[bool(sequence_features[k].allow_missing) for k in s_dense],
        context_sparse_types=[t for _, t in c_sparse],
        feature_list_dense_types=[dtypes.as_dtype(sequence_features[k].dtype) for k in s_dense],
        feature_list_sparse_types=[t for _, t in s_sparse], context_dense_shapes=[s for s, _, _ in context],
        feature_list_dense_shapes=[as_shape(sequence_features[k].shape) for k in s_dense],
        name=name or ("ParseSingleSequenceExample" if rank == 0 else "ParseSequenceExample"))
    outs = [outs] if isinstance(outs, Tensor) else list(outs)

    def take(n):
        taken = outs[:n]
        del outs[:n]
        return taken

    def sparse(keys):
        ind, val, shp = take(len(keys)), take(len(keys)), take(len(keys))
        return {k: SparseTensor(i, v, s) for (k, _), i, v, s in zip(keys, ind, val, shp)}
    context_out = sparse(c_sparse)
    context_out.update(zip(c_dense, take(len(c_dense))))
    sequence_out = sparse(s_sparse)
    sequence_out.update(zip(s_dense, take(len(s_dense))))
    return context_out, sequence_out, dict(zip(s_dense, take(len(s_dense))))


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None, example_name=None,
                                  name=None):
    """(context, feature lists): dicts of tensors and SparseTensors of one serialized SequenceExample."""
    return _parse(serialized, context_features, sequence_features, example_name, name, 0,
                  "parse_single_sequence_example")[:2]


def parse_sequence_example(serialized, context_features=None, sequence_features=None, example_names=None, name=None):
    """(context, feature lists, lengths of the fixed-length feature lists) of a vector of
    serialized SequenceExamples, each feature list padded to the batch's longest."""
    return _parse(serialized, context_features, sequence_features, example_names, name, 1, "parse_sequence_example")
