"""tf.data's reading of the structures a pipeline is given: values and shapes as nested
structures of components, and a function of an element traced once into the graph."""
from pygrad import nest
from pygrad.graph import TensorLike
from pygrad.ops import array_ops


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
    inputs = [array_ops.placeholder(d, s, name=f"arg{i}") for i, (d, s) in enumerate(input_dataset._specs)]
    args = nest.pack_sequence_as(input_dataset._structure, inputs)
    return inputs, fn(*args) if isinstance(args, tuple) and not hasattr(args, "_fields") else fn(args)
