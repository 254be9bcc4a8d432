"""tf.SparseTensor: a tensor given by the coordinates of its non-default entries, as TensorFlow's:
three dense tensors, `indices` (int64 [n, rank]), `values` ([n]) and `dense_shape` (int64 [rank]).
It is a Python object of the graph, not a Tensor: ops that take one take its three parts (the ops
of sparse_ops.py), Session.run of one returns a SparseTensorValue of arrays, and a feed_dict key
that is one takes a SparseTensorValue (or an (indices, values, dense_shape) triple), fed to the
three tensors (tf.sparse_placeholder makes them placeholders)."""
from collections import namedtuple

import numpy as np

from pygrad import dtypes
from pygrad.graph import get_default_graph, session_for
from pygrad.ops.array_ops import convert_to_tensor, placeholder
from pygrad.ops.sequence_ops import placeholder_with_default
from pygrad.ops.shape_exprs import symbolic
from pygrad.shapes import TensorShape

SparseTensorValue = namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
SparseTensorValue.__doc__ = "The value of a SparseTensor: three NumPy arrays (what Session.run of one returns)."


def dense_shape_dims(t):
    """The sizes the graph knows of t, a dense-shape vector (TF's constant_value_as_shape): what
    shape_exprs.symbolic reads of it (constants, tf.shape of tensors of static shapes, their
    slices), concats of those, else t's static length of unknown sizes; -1 is unknown; None if
    even the length is unknown."""
    v = symbolic(t)
    if v is not None and v.ndim == 1:
        return [d if isinstance(d, int) and d >= 0 else None for d in v.tolist()]
    if t.op.type in ("Identity", "Cast"):
        return dense_shape_dims(t.op.inputs[0])
    if t.op.type == "ConcatV2":
        parts = [dense_shape_dims(i) for i in t.op.inputs]
        if all(p is not None for p in parts):
            return [d for p in parts for d in p]
    n = t.shape.dims[0] if t.shape.ndims == 1 else None
    return None if n is None else [None] * n


class SparseTensor:
    """values[i] at indices[i] of a tensor of shape dense_shape, the other entries zero (or the
    default a conversion to dense gives). Many ops want the indices in row-major order without
    repeats (tf.sparse_reorder gives that order)."""

    def __init__(self, indices, values, dense_shape):
        graph = get_default_graph()
        with graph.name_scope("SparseTensor"):
            indices = convert_to_tensor(indices, dtype=dtypes.int64, name="indices")
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64, name="dense_shape")
        for t, rank, what in ((indices, 2, "indices"), (values, 1, "values"), (dense_shape, 1, "dense_shape")):
            if t.shape.ndims not in (None, rank):
                raise ValueError(f"SparseTensor: {what} must have rank {rank}, got shape {t.shape}")
        n_i = indices.shape.dims[0] if indices.shape.ndims else None
        n_v = values.shape.dims[0] if values.shape.ndims else None
        if n_i is not None and n_v is not None and n_i != n_v:
            raise ValueError(f"SparseTensor: indices {indices.shape} and values {values.shape} must have the same "
                             f"number of entries")
        r_i = indices.shape.dims[1] if indices.shape.ndims else None
        r_s = dense_shape.shape.dims[0] if dense_shape.shape.ndims else None
        if r_i is not None and r_s is not None and r_i != r_s:
            raise ValueError(f"SparseTensor: indices {indices.shape} must have one column per dimension of "
                             f"dense_shape {dense_shape.shape}")
        self._indices, self._values, self._dense_shape = indices, values, dense_shape
        self._shape = TensorShape(dense_shape_dims(dense_shape))
        if self._shape.ndims is None and r_i is not None:
            self._shape = TensorShape([None] * r_i)

    @classmethod
    def from_value(cls, value):
        if not is_sparse(value):
            raise TypeError(f"Argument sparse_tensor_value={value} is neither a SparseTensor nor SparseTensorValue.")
        return cls(value.indices, value.values, value.dense_shape)

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    shape = property(lambda self: self._shape)

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        """Makes the static dense shape more precise (TF's merge_with)."""
        self._shape = self._shape.merge_with(TensorShape(shape))

    def consumers(self):
        return sorted({c for t in (self._indices, self._values, self._dense_shape) for c in t.consumers()},
                      key=lambda op: op.name)

    def eval(self, feed_dict=None, session=None):
        return session_for(self._values, session).run(self, feed_dict=feed_dict)

    def with_values(self, values):
        """The same indices and dense shape with other values."""
        return SparseTensor(self._indices, values, self._dense_shape)

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")

    # sparse_math installs * and / (a SparseTensor times or over a dense tensor), as TF's.



def is_sparse(x):
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_sparse(sp, what="sp_input"):
    """sp as a SparseTensor of the default graph (a SparseTensorValue becomes constants); TypeError
    for anything else, as TF's."""
    if isinstance(sp, SparseTensorValue):
        return SparseTensor.from_value(sp)
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp).__name__} for {what}.")
    return sp


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """A SparseTensor (or SparseTensorValue) as a SparseTensor (RuntimeError, as TF's, for another
    dtype than a given one); anything else through convert_to_tensor."""
    if is_sparse(value):
        sp = convert_to_sparse(value)
        if dtype is not None and dtypes.as_dtype(dtype) != sp.dtype:
            raise RuntimeError(f"Sparse dtype: requested = {dtypes.as_dtype(dtype).name}, actual = {sp.dtype.name}")
        return sp
    return convert_to_tensor(value, dtype=dtype, name=name)


def sparse_placeholder(dtype, shape=None, name=None):
    """A SparseTensor of three placeholders, fed as a whole ({sp: SparseTensorValue(...)}): values
    [None], indices int64 [None, rank] and dense_shape int64 [rank] (with shape given, a
    placeholder_with_default of it, -1 or None for an unknown dimension)."""
    def sub(part):
        return None if name is None else f"{name}/{part}"
    if shape is None:
        dense_shape = placeholder(dtypes.int64, shape=[None], name=sub("shape"))
        rank = None
    else:
        dims = [-1 if d is None else int(d) for d in TensorShape(shape).as_list()]
        rank = len(dims)
        default = convert_to_tensor(np.array(dims, np.int64), name=sub("shape_default"))
        dense_shape = placeholder_with_default(default, shape=[rank], name=sub("shape"))
    result = SparseTensor(indices=placeholder(dtypes.int64, shape=[None, rank], name=sub("indices")),
                          values=placeholder(dtype, shape=[None], name=sub("values")),
                          dense_shape=dense_shape)
    if shape is not None:
        result.set_shape(TensorShape(shape))
    return result


def sparse_feed(sp, value):
    """[(tensor, value)] of a SparseTensor fed with a SparseTensorValue or an (indices, values,
    dense_shape) triple."""
    if not isinstance(value, (SparseTensorValue, tuple, list)) or len(value) != 3:
        raise TypeError(f"The value fed to a SparseTensor ({sp.values.name}) must be a SparseTensorValue or an "
                        f"(indices, values, dense_shape) triple, got {type(value).__name__}")
    return list(zip((sp.indices, sp.values, sp.dense_shape), value))


def sparse_parts(sp):
    """The three tensors a fetch of sp runs, in SparseTensorValue's order."""
    return [sp.indices, sp.values, sp.dense_shape]
