"""tf.string_split and tf.strings.split: the tokens of each string of a vector as a SparseTensor
[rows, most tokens], as TF's StringSplit (split at any byte of the delimiter) and StringSplitV2
(Python's str.split): host ops of stage BETWEEN (see host.py)."""
import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import convert_to_tensor, reshape
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape


def _split_op(type_name, split):
    d = OpDef(type_name, host=BETWEEN, differentiable=False)

    @d.shape
    def _(input, sep, **attrs):
        if input.shape.ndims not in (None, 1):
            fail(f"input must be a vector, got shape: {input.shape}")
        return [Spec(dtypes.int64, TensorShape([None, 2])), Spec(dtypes.string, TensorShape([None])),
                Spec(dtypes.int64, TensorShape([2]))]

    @d.host
    def _(ctx, op, values):
        source, sep = np.asarray(values[0], object), np.asarray(values[1], object)
        if source.ndim != 1:
            raise HostError(f"input must be a vector, got shape: {list(source.shape)}")
        if sep.ndim != 0:
            raise HostError(f"sep must be a scalar, got shape: {list(sep.shape)}")
        rows = [split(s, sep[()], op.attrs) for s in source]
        indices = np.array([(i, j) for i, r in enumerate(rows) for j in range(len(r))], np.int64).reshape(-1, 2)
        tokens = np.empty(len(indices), object)
        tokens[:] = [t for r in rows for t in r]
        return [indices, tokens, np.array([len(rows), max(map(len, rows), default=0)], np.int64)]

    return d


def _split_v1(s, delimiter, attrs):
    """TF's StringSplit: on any byte of delimiter ("" splits into bytes), empty tokens dropped if skip_empty."""
    if not delimiter:
        return [bytes([b]) for b in s]
    tokens, start = [], 0
    for i, b in enumerate(s):
        if b in delimiter:
            tokens.append(s[start:i])
            start = i + 1
    tokens.append(s[start:])
    return [t for t in tokens if t] if attrs["skip_empty"] else tokens


def _split_v2(s, sep, attrs):
    """TF's StringSplitV2: Python's str.split of the bytes (sep "" splits on runs of whitespace)."""
    maxsplit = attrs["maxsplit"]
    return s.split(sep or None, maxsplit)


StringSplit = _split_op("StringSplit", _split_v1)
StringSplitV2 = _split_op("StringSplitV2", _split_v2)


def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor", name=None):
    """The tokens of each string of source (a vector) as a SparseTensor [rows, most tokens]
    (tf.string_split): split at every byte of delimiter (default " "; "" splits into bytes)."""
    if result_type != "SparseTensor":
        raise NotImplementedError("string_split: pygrad gives SparseTensors only (result_type='SparseTensor')")
    delimiter = sep if delimiter is None else delimiter
    source = convert_to_tensor(source, dtype=dtypes.string)
    with source.graph.as_default():
        sep_t = convert_to_tensor(" " if delimiter is None else delimiter, dtype=dtypes.string)
    return SparseTensor(*StringSplit(source, sep_t, skip_empty=bool(skip_empty), name=name or "StringSplit"))


def strings_split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor", source=None, name=None):
    """tf.strings.split: each string split as Python's str.split(sep, maxsplit) splits it (sep None
    or "": on runs of whitespace), as a SparseTensor."""
    if result_type != "SparseTensor":
        raise NotImplementedError("strings.split: pygrad gives SparseTensors only (result_type='SparseTensor')")
    source = convert_to_tensor(input if input is not None else source, dtype=dtypes.string)
    if source.shape.ndims == 0:
        source = reshape(source, [1])
    with source.graph.as_default():
        sep_t = convert_to_tensor(sep or "", dtype=dtypes.string)
    return SparseTensor(*StringSplitV2(source, sep_t, maxsplit=int(maxsplit), name=name or "StringSplit"))
