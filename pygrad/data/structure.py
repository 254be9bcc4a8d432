"""tf.data's reading of the structures a pipeline is given: values and shapes as nested
structures of components, and a function of an element traced once into the graph.

A component is a dense tensor, spec (DType, TensorShape), or a SparseTensor, spec
SparseSpec((DType, dense TensorShape)): its element values are SparseTensorValues, a traced
function gets it as a sparse placeholder, and an iterator gives it as a SparseTensor."""
import numpy as np

from pygrad import dtypes, nest
from pygrad.graph import TensorLike
from pygrad.ops import array_ops
from pygrad.ops.sparse_tensor import SparseTensor, SparseTensorValue, sparse_placeholder
from pygrad.shapes import TensorShape


class SparseSpec(tuple):
    """The spec of a SparseTensor component: (values' DType, dense TensorShape), as a dense spec."""


def spec_of(t):
    """The spec of a traced function's output: a Tensor's, or a SparseTensor's SparseSpec."""
    return SparseSpec((t.dtype, t.shape)) if isinstance(t, SparseTensor) else (t.dtype, t.shape)


def graph_specs(specs):
    """The (DType, TensorShape) of each tensor an element is given to a graph as: a SparseTensor
    component's three (indices, values, dense_shape)."""
    out = []
    for spec in specs:
        d, s = spec
        if isinstance(spec, SparseSpec):
            rank = s.ndims
            out += [(dtypes.int64, TensorShape([None, rank])), (d, TensorShape([None])),
                    (dtypes.int64, TensorShape([rank]))]
        else:
            out.append((d, s))
    return out


def as_graph_values(element, specs):
    """An element's values in graph_specs' order."""
    out = []
    for v, spec in zip(element, specs):
        out += [v.indices, v.values, v.dense_shape] if isinstance(spec, SparseSpec) else [v]
    return out


def from_graph_tensors(tensors, specs):
    """The components of graph_specs' tensors: SparseTensors rebuilt from their three."""
    out, i = [], 0
    for spec in specs:
        if isinstance(spec, SparseSpec):
            sp = SparseTensor(*tensors[i:i + 3])
            sp.set_shape(spec[1])
            out.append(sp)
            i += 3
        else:
            out.append(tensors[i])
            i += 1
    return out


def batch_sparse(values):
    """SparseTensorValues batched as tf.data batches them: the position in the batch first in each
    index, the dense shape the largest of each dimension."""
    rank = len(values[0].dense_shape)
    indices = [np.concatenate([np.full((len(v.indices), 1), b, np.int64), np.asarray(v.indices, np.int64).reshape(
        len(v.indices), rank)], 1) for b, v in enumerate(values)]
    shape = np.max([np.asarray(v.dense_shape, np.int64) for v in values], axis=0) if rank else np.zeros(0, np.int64)
    return SparseTensorValue(np.concatenate(indices), np.concatenate([np.asarray(v.values) for v in values]),
                             np.concatenate([[len(values)], shape]).astype(np.int64))


def lists_as_arrays(x):
    """A list of values is one component (a tensor), not a sequence of them; tuples and dicts are
    structure."""
    if isinstance(x, list) and not any(isinstance(v, TensorLike) for v in nest.flatten(x)):
        return array_ops.numpy_value(x)
    if isinstance(x, dict):
        return type(x)((k, lists_as_arrays(v)) for k, v in x.items())
    if isinstance(x, tuple):
        parts = [lists_as_arrays(v) for v in x]
        return type(x)(*parts) if hasattr(x, "_fields") else tuple(parts)
    return x


def flatten_shapes(shapes, structure):
    """Shapes given as lists or tuples of dims are leaves, not sequences: flatten along structure."""
    if not nest.is_sequence(structure):
        return [shapes]
    if isinstance(structure, dict):
        return [s for k in sorted(structure) for s in flatten_shapes(shapes[k], structure[k])]
    return [s for sub_shape, sub in zip(shapes, structure) for s in flatten_shapes(sub_shape, sub)]


def trace(fn, input_dataset):
    """fn called once on placeholders that stand for an element of input_dataset, its components
    as separate arguments when the element is a tuple: (the placeholders, fn's result)."""
    inputs = [sparse_placeholder(spec[0], spec[1] if spec[1].ndims is not None else None, name=f"arg{i}")
              if isinstance(spec, SparseSpec) else array_ops.placeholder(spec[0], spec[1], name=f"arg{i}")
              for i, spec in enumerate(input_dataset._specs)]
    args = nest.pack_sequence_as(input_dataset._structure, inputs)
    return inputs, fn(*args) if isinstance(args, tuple) and not hasattr(args, "_fields") else fn(args)
