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
from pygrad.import_control_flow import CONTROL_FLOW_TYPES, Analysis, Regradient, lift_cond, lift_while, split
from pygrad.import_ops import as_size, builder, constant
from pygrad.ops import array_ops
from pygrad.ops.shape_exprs import symbolic
from pygrad.ops.tensor_array_ops import TensorArray

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

    def symbolic(self, k):
        """Input k as import_ops.symbolic reads it (ints, and sizes a plan knows); an error if it
        is no such value."""
        v = symbolic(self.x[k])
        if v is None:
            v = np.asarray(self.value(k)).astype(object)
        return v

    def value(self, k):
        """The value of input k, which pygrad needs when the graph is built (an axis, a
        permutation): a constant, a size the graph knows, or computed now from constants."""
        t = self.x[k]
        v = symbolic(t)
        if v is not None and not any(isinstance(d, tuple) for d in v.reshape(-1)):
            return v.astype(np.int64).astype(t.dtype.np) if v.size else np.zeros(v.shape, t.dtype.np)
        c = constant(t)
        return c if c is not None else _fold(t, self, k)

    def ints(self, k):
        return np.asarray(self.value(k)).astype(np.int64)

    def shape_arg_dims(self, k):
        """Input k (a shape or a size) as a list of ints and (tensor, axis) sizes the plan knows;
        None if it is no such value."""
        v = symbolic(self.x[k])
        return None if v is None or v.ndim > 1 else list(v.reshape(-1))

    def shape_arg(self, k):
        """Input k as a shape argument of pygrad's wrappers: ints, with tf.shape(t)[axis] tensors
        for the sizes only a plan knows."""
        dims = self.shape_arg_dims(k)
        if dims is None:
            return self.ints(k).tolist()
        return [as_size(d) if isinstance(d, tuple) else int(d) for d in dims]


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


class _Import:
    """One import_graph_def call: the GraphDef's analysis, the name prefix and the input_map."""

    def __init__(self, nodes, prefix, input_map, regrad):
        self.analysis = Analysis(nodes)
        self.prefix, self.input_map, self.regrad, self.regradients = prefix, input_map, regrad, {}
        a = self.analysis
        self.cond_merges = [n.name for n in a.order if n.op == "Merge" and n.name in a.predicate]


class Scope:
    """Builds the nodes of one region of the graph (import_control_flow: the top level, a side of a
    cond, a loop's condition or body); values of enclosing regions come from the parent scope, and
    subst gives the region's own inputs (a loop's variables)."""

    def __init__(self, imp, parent, tags, frame, subst=None):
        self.imp, self.analysis, self.prefix = imp, imp.analysis, imp.prefix
        self.parent, self.tags, self.frame, self.subst = parent, tags, frame, subst or {}
        self.values, self.ops = {}, {}

    def child(self, tags, frame, subst=None):
        return Scope(self.imp, self, tags, frame, subst)

    def owns(self, node, k=0):
        a = self.analysis
        return (node, k) not in self.subst and a.frame[node] == self.frame and a.tag(node, k) == self.tags

    def owned_merges(self, predicate):
        return [m for m in self.imp.cond_merges if self.analysis.predicate[m] == predicate and self.owns(m)]

    def set(self, node, outputs):
        self.values[node] = outputs
        self.ops[node] = next((t.op for t in outputs if isinstance(t, Tensor)), None)

    def tensor(self, name):
        """The value of the tensor name ("node:k") in this region."""
        node, k, _ = split(name)
        if (node, k) in self.subst:
            return self.subst[(node, k)]
        if self.parent is None and f"{node}:{k}" in self.imp.input_map:
            return self.imp.input_map[f"{node}:{k}"]
        if self.parent is None and node in self.imp.regrad.inside:
            return self.imp.regrad.tensor(self, f"{node}:{k}")
        if not self.owns(node, k):
            if self.parent is None:
                raise errors.UnimplementedError(None, None, f"import_graph_def: '{name}' is a value of a cond branch "
                                                f"or a loop that is used outside it")
            return self.parent.tensor(name)
        self.build(node)
        return self.values[node][k]

    def prefetch(self, names):
        """Builds now, in this region, every value of this or an enclosing region that the nodes of a
        region inside it (a cond's sides, a loop) read from names backwards, so that none is first
        built inside the inner region's function (it would belong to that region)."""
        a, seen, stack = self.analysis, set(), list(names)
        while stack:
            node, k, control = split(stack.pop())
            if (node, k, control) in seen:
                continue
            seen.add((node, k, control))
            tags = a.tag(node, k)
            if (node, k) in self.subst or a.frame[node] == self.frame and tags <= self.tags:
                self.op(node) if control else self.tensor(f"{node}:{k}")
            else:
                stack.extend(a.by_name[node].input)

    def op(self, node):
        if node in self.imp.regrad.inside:
            return None
        if not self.owns(node):
            return self.parent.op(node) if self.parent is not None else None
        self.build(node)
        return self.ops[node]

    def build(self, target):
        """Builds target and the nodes of this region it needs, in topological order."""
        a, todo, seen = self.analysis, [], set()
        stack = [(target, False)]
        while stack:
            name, expanded = stack.pop()
            if name in self.values or name in seen and not expanded:
                continue
            if expanded:
                todo.append(name)
                continue
            seen.add(name)
            stack.append((name, True))
            node = a.by_name[name]
            if node.op not in ("Merge", "Exit", "RefExit", "Switch", "RefSwitch", "Enter", "RefEnter"):
                stack.extend((i, False) for i in (split(i)[0] for i in node.input)
                             if i in a.by_name and self.owns(i, 0) and i not in self.values)
        for name in todo:
            if name not in self.values:
                self._build_node(a.by_name[name])

    def _build_node(self, n):
        a = self.analysis
        if n.op in ("Switch", "RefSwitch"):
            x = self.tensor(n.input[0]) if n.name in a.predicate else None
            return self.set(n.name, [x, x]) if x is not None else None
        if n.op == "Merge" and n.name in a.predicate:
            return lift_cond(self, n.name)
        if n.op in ("Exit", "RefExit"):
            return lift_while(self, a.frame[split(n.input[0])[0]])
        if n.op in ("Enter", "RefEnter"):
            return self.set(n.name, [self.tensor(n.input[0])])
        if n.op == "Merge":
            raise errors.UnimplementedError(None, None, f"import_graph_def: loop Merge '{n.name}' outside its loop")
        x = [self.tensor(i) for i in n.input if not i.startswith("^")]
        if n.op == "Identity" and isinstance(x[0], TensorArray):  # a loop's TensorArray variable
            return self.set(n.name, x)
        b = NodeBuild(n, self.prefix + n.name, x)
        graph = get_default_graph()
        controls = [c for c in (self.op(split(i)[0]) for i in n.input if i.startswith("^")) if c is not None]
        with graph.control_dependencies(controls):
            result = builder(n.op)(b)
        outputs, op = _named(result, b.name)
        self.values[n.name], self.ops[n.name] = outputs, op


def _check(graph_def, input_map, regrad):
    nodes = {n.name: n for n in graph_def.node}
    unsupported = {}
    for n in graph_def.node:
        if n.name in regrad.inside:
            continue
        if builder(n.op) is None and n.op not in CONTROL_FLOW_TYPES:
            unsupported.setdefault(n.op, n.name)
        for i in n.input:
            if split(i)[0] not in nodes:
                raise ValueError(f"Node '{n.name}': Unknown input node '{i}'")
    if unsupported:
        listed = ", ".join(f"{op} (node '{name}')" for op, name in sorted(unsupported.items()))
        raise errors.UnimplementedError(None, None, f"import_graph_def: op types pygrad does not run: {listed}")
    missing = [k for k in input_map if split(k)[0] not in nodes]
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(sorted(missing))}]")


def _named(result, name):
    """(outputs, op) of a builder's result (a tensor, a list of them, a TensorArray or an op), with
    the node's name: an Identity of that name where the op that computes output 0 has another."""
    if isinstance(result, Operation):
        return [], result
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    result = [r.value() if isinstance(r, TensorLike) and not isinstance(r, Tensor) else r for r in result]
    if isinstance(result[0], TensorArray):
        return result, None
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
    regrad = Regradient(list(graph_def.node))
    _check(graph_def, input_map, regrad)
    graph = get_default_graph()
    prefix = "import" if name is None else name
    prefix = graph.unique_name(prefix) + "/" if prefix else ""
    nodes = [n for n in graph_def.node if n.name not in regrad.inside]
    with graph.rollback_on_error():
        top = Scope(_Import(nodes, prefix, input_map, regrad), None, frozenset(), None)
        for n in top.analysis.order:
            if top.owns(n.name):
                top.build(n.name)
    if return_elements is None:
        return None
    out = []
    for e in return_elements:
        a, k, _ = split(e)
        if a not in top.values:
            raise ValueError(f"Requested return_element '{e}' not found in graph_def.")
        out.append(top.values[a][k] if ":" in e else top.ops[a])
    return out
