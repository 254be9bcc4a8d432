"""tf.import_graph_def: a TensorFlow GraphDef (a frozen inference graph) built into the default
graph as pygrad ops, with TF's semantics: names under `name` ("import" by default, "" for none),
input_map replacing inputs, return_elements, control inputs, nodes in any order.

Each NodeDef becomes the pygrad ops that _BUILD names for its TF type; the result keeps the node's
name (an Identity of that name where the pygrad op that computes it has another). All checks
(op types, input_map keys, inputs that name no node) run before the first op is built, and the
ops are built under a scope that rolls the graph back if building fails, so nothing
half-imported stays in the default graph.
"""
import numpy as np

from pygrad import dtypes, errors
from pygrad.graph import Operation, Tensor, TensorLike, get_default_graph
from pygrad.import_ops import builder
from pygrad.ops import array_ops
from pygrad.ops.shape_exprs import shape_expr

_NP = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 7: np.object_,
       9: np.int64, 10: np.bool_, 17: np.uint16, 19: np.float16}
_VALS = {1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val", 6: "int_val", 7: "string_val",
         9: "int64_val", 10: "bool_val", 17: "int_val", 19: "half_val"}


def tensor_value(t):
    """The NumPy value of a TensorProto: tensor_content, or the typed field with TF's rule that
    a shorter list repeats its last value."""
    shape = [d.size for d in t.tensor_shape.dim]
    dtype = _NP[t.dtype]
    if t.tensor_content:
        return np.frombuffer(t.tensor_content, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    values = list(getattr(t, _VALS[t.dtype]))
    if t.dtype == 19:
        values = np.array(values, np.uint16).view(np.float16)
    n = int(np.prod(shape))
    if len(values) < n:
        values = list(values) + [values[-1] if len(values) else 0] * (n - len(values))
    return np.array(values, dtype=dtype).reshape(shape)


def attr_value(a):
    """The Python value of an AttrValue: str, int, float, bool, DType, a shape's dims (None where
    unknown; None for an unknown rank), a NumPy array, or a list of those."""
    kind = a.WhichOneof("value")
    if kind == "list":
        lst = a.list
        for field in ("s", "i", "f", "b", "type", "shape", "tensor"):
            if len(getattr(lst, field)):
                return [_scalar(field, v) for v in getattr(lst, field)]
        return []
    return None if kind is None else _scalar(kind, getattr(a, kind))


def _scalar(kind, v):
    if kind == "s":
        return v.decode()
    if kind == "type":
        return dtypes.as_dtype(np.dtype(_NP[v]).name if v != 7 else "string")
    if kind == "shape":
        return None if v.unknown_rank else [None if d.size < 0 else d.size for d in v.dim]
    if kind == "tensor":
        return tensor_value(v)
    return v


class NodeBuild:
    """What a builder of import_ops sees of one NodeDef: its name (with the import prefix), its
    input tensors x, and its attributes and constant inputs as Python values."""

    def __init__(self, node, name, x):
        self.node, self.name, self.x = node, name, x

    def attr(self, key, default=None):
        return attr_value(self.node.attr[key]) if key in self.node.attr else default

    def dtype(self, key):
        return self.attr(key)

    def error(self, message, cls=ValueError):
        return cls(f"import_graph_def: node '{self.node.name}' ({self.node.op}): {message}")

    def unimplemented(self, message):
        return errors.UnimplementedError(None, None, f"import_graph_def: node '{self.node.name}' ({self.node.op}): "
                                         f"{message}")

    def value(self, k):
        """The value of input k, which pygrad needs when the graph is built (an axis, a
        permutation): a constant, or computed now from constants."""
        t = self.x[k]
        while t.op.type in ("Identity", "StopGradient") and t.op.inputs:
            t = t.op.inputs[0]
        if t.op.type == "Const":
            return np.asarray(t.op.attrs["value"])
        return _fold(t, self, k)

    def ints(self, k):
        return np.asarray(self.value(k)).astype(np.int64)

    def shape_arg(self, k):
        """Input k as a shape argument: the tensor itself where pygrad reads it as sizes of other
        tensors' shapes (tf.shape(x)[0]), else its value."""
        t = self.x[k]
        expr = shape_expr(t)
        if expr is not None:
            return t if any(isinstance(d, tuple) for d in expr[0]) else [int(d) for d in expr[0]]
        return self.ints(k).tolist()


def _fold(t, b, k):
    """t's value, computed by a run of the graph so far with no feeds, for an input that pygrad
    takes as a static value; an error naming the node if it depends on a feed or a variable."""
    from pygrad.session import Session

    with Session(graph=t.graph) as sess:
        try:
            return np.asarray(sess.run(t))
        except (errors.OpError, ValueError, TypeError) as e:
            raise b.unimplemented(f"input {k} ('{b.node.input[k]}') must be known when the graph is built (pygrad "
                                  f"takes it as a static value), but computing it failed: "
                                  f"{str(e).splitlines()[0]}") from None


def parse_graph_def(data, what="GraphDef"):
    """The GraphDef serialized in data; DataLossError if the bytes do not parse (truncated or corrupt)."""
    from google.protobuf.message import DecodeError

    from pygrad.tf_protos import GraphDef
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(data)
    except DecodeError as e:
        raise errors.DataLossError(None, None, f"{what}: {len(data)} bytes do not parse as a GraphDef ({e})") from None
    return graph_def


def _split(name):
    """(node, output index, control) of an input or tensor name."""
    control = name.startswith("^")
    node, _, index = name.lstrip("^").partition(":")
    return node, int(index or 0), control


def _order(nodes):
    """The nodes in topological order (TF's GraphDef may list them in any order)."""
    by_name = {n.name: n for n in nodes}
    done, out = set(), []
    for root in nodes:
        stack = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            if n.name in done:
                continue
            if expanded:
                done.add(n.name)
                out.append(n)
                continue
            stack.append((n, True))
            stack.extend((by_name[_split(i)[0]], False) for i in n.input if _split(i)[0] not in done)
    return out


def _check(graph_def, input_map):
    nodes = {n.name: n for n in graph_def.node}
    unsupported = {}
    for n in graph_def.node:
        if builder(n.op) is None:
            unsupported.setdefault(n.op, n.name)
        for i in n.input:
            if _split(i)[0] not in nodes:
                raise ValueError(f"Node '{n.name}': Unknown input node '{i}'")
    if unsupported:
        listed = ", ".join(f"{op} (node '{name}')" for op, name in sorted(unsupported.items()))
        raise errors.UnimplementedError(None, None, f"import_graph_def: op types pygrad does not run: {listed}")
    missing = [k for k in input_map if _split(k)[0] not in nodes]
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(sorted(missing))}]")


def _named(result, name):
    """(outputs, op) of a builder's result (a tensor, a list of them, or an op), with the node's
    name: an Identity of that name where the op that computes output 0 has another."""
    if isinstance(result, Operation):
        return [], result
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    result = [r.value() if isinstance(r, TensorLike) and not isinstance(r, Tensor) else r for r in result]
    if result[0].op.name != name:
        result[0] = array_ops.identity(result[0], name=name)
    return result, result[0].op


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """The GraphDef's nodes as pygrad ops in the default graph (TF's tf.import_graph_def);
    graph_def may also be its serialized bytes. op_dict and producer_op_list are accepted and
    unused, as in TF 1.15 (deprecated there)."""
    if isinstance(graph_def, bytes):
        graph_def = parse_graph_def(graph_def)
    input_map = {(k if ":" in k or k.startswith("^") else k + ":0"): v for k, v in (input_map or {}).items()}
    _check(graph_def, input_map)
    graph = get_default_graph()
    prefix = "import" if name is None else name
    prefix = graph.unique_name(prefix) + "/" if prefix else ""
    outputs, ops = {}, {}
    with graph.rollback_on_error():
        for n in _order(list(graph_def.node)):
            inputs = [i for i in n.input if not i.startswith("^")]
            tensors = [input_map[f"{a}:{k}"] if f"{a}:{k}" in input_map else outputs[a][k]
                       for a, k, _ in map(_split, inputs)]
            b = NodeBuild(n, prefix + n.name, tensors)
            with graph.control_dependencies([ops[_split(i)[0]] for i in n.input if i.startswith("^")]):
                result = builder(n.op)(b)
            outputs[n.name], ops[n.name] = _named(result, b.name)
    if return_elements is None:
        return None
    out = []
    for e in return_elements:
        a, k, _ = _split(e)
        if a not in ops:
            raise ValueError(f"Requested return_element '{e}' not found in graph_def.")
        out.append(outputs[a][k] if ":" in e else ops[a])
    return out
