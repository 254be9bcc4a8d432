"""tf.profiler.profile: a graph's parameters and floating-point operations (and, with a traced run's
RunMetadata, its ops' times), as TF's profiler (tfprof) counts them, in its views 'scope' (the
name-scope tree), 'graph' (here the same tree) and 'op' (by op type).

The graph is read as TensorFlow's GraphDef (pygrad/graph_def.py: TF's op types and attributes,
and each tensor's static shape), so each node counts what TF counts for it:
- parameters: the product of the node's "shape" attribute where it is fully known (variables,
  placeholders), as tfprof's ShowNode does;
- float_ops: the "flops" statistic TF registers for its op type (flops.py), from the static
  shapes, completed by a RunMetadata's output shapes as TF's tfprof_logger does;
- exec_micros: the node's time in a traced run's step_stats (all_end_rel_micros, summed).
A node's types are its op type, plus "_trainable_variables" for a trainable variable (TF's
tfprof_logger.TRAINABLE_VARIABLES). A node is accounted when one of its types fully matches one of
options' account_type_regexes and, with account_displayed_op_only, it is displayed: its name
fully matches a show_name_regexes entry and no hide_name_regexes one, and its own values reach the
min_* thresholds. The returned root "_TFProfRoot" holds the totals of the accounted nodes; its
children are the displayed accounted nodes of the view (a scope without a node of its own, or
hidden, gives its place to its displayed descendants), ordered by options' order_by. output "stdout" prints
them as a table, "file:outfile=<path>" writes it there, "none" prints nothing.
"""
import re
import sys

from pygrad.profiler.flops import float_ops
from pygrad.profiler.option_builder import ProfileOptionBuilder

TRAINABLE_VARIABLES = "_trainable_variables"
ROOT = "_TFProfRoot"
_DEFAULT_PROFILE_OPTIONS = 0


class GraphNodeProto:
    """A profile node (TF's GraphNodeProto and MultiGraphNodeProto fields the views fill): its
    own values and, in total_*, those of the accounted nodes below it too."""

    def __init__(self, name):
        self.name = name
        self.parameters = self.float_ops = self.exec_micros = self.run_count = 0
        self.total_parameters = self.total_float_ops = self.total_exec_micros = 0
        self.children = []
        self.graph_nodes = []  # ('op' view) the graph nodes of this op type
        self.types = []  # (a graph node's) its op type, and "_trainable_variables" for a trainable variable

    def __repr__(self):
        return (f"GraphNodeProto(name={self.name!r}, total_parameters={self.total_parameters}, "
                f"total_float_ops={self.total_float_ops}, total_exec_micros={self.total_exec_micros})")


def profile(graph=None, run_meta=None, op_log=None, cmd="scope", options=_DEFAULT_PROFILE_OPTIONS):
    """The profile of graph (default: the default graph) in view cmd ('scope', 'graph', 'op'; 'code'
    is not supported), with options (a dict of ProfileOptionBuilder; default: trainable parameters)."""
    from pygrad.graph import get_default_graph
    if cmd not in ("scope", "graph", "op"):
        from pygrad import errors
        raise errors.InvalidArgumentError(None, None, f"unknown cmd: {cmd}\n" if cmd != "code" else
                                          "cmd 'code' (the Python call stack view) is not supported by pygrad")
    if op_log is not None:
        raise NotImplementedError("tf.profiler.profile: op_log (an OpLogProto) is not supported by pygrad")
    graph = graph if graph is not None else get_default_graph()
    if options == _DEFAULT_PROFILE_OPTIONS:
        options = ProfileOptionBuilder.trainable_variables_parameter()
    opts = {**ProfileOptionBuilder().build(), **options}
    nodes = _graph_nodes(graph, run_meta)
    root = _view(nodes, cmd, opts)
    _output(root, cmd, opts)
    return root


def _graph_nodes(graph, run_meta):
    """A GraphNodeProto per node of graph's GraphDef, with its types (node.types)."""
    from pygrad.graph_def import graph_def
    gd = graph_def(graph, add_shapes=True, picture=True)
    shapes = {n.name: [None if s.unknown_rank else [d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
              for n in gd.node}
    micros = {}
    if run_meta is not None:
        for dev in run_meta.step_stats.dev_stats:
            for ns in dev.node_stats:
                micros[ns.node_name] = micros.get(ns.node_name, 0) + ns.all_end_rel_micros
                known = shapes.get(ns.node_name)
                if known is not None and ns.output and len(ns.output) == len(known):
                    for i, out in enumerate(ns.output):
                        if known[i] is None or any(d < 0 for d in known[i]):
                            known[i] = [d.size for d in out.tensor_description.shape.dim]

    def shape(name):
        op, _, index = name.partition(":")
        dims = shapes.get(op, [])[int(index or 0)] if int(index or 0) < len(shapes.get(op, [])) else None
        if dims is None or any(d < 0 for d in dims):
            raise ValueError(f"Shape of {name} is not fully defined")
        return dims

    trainable = {v.op.name for v in graph.get_collection("trainable_variables")}
    nodes, missing = [], 0
    for n in gd.node:
        node = GraphNodeProto(n.name)
        node.types = [n.op] + ([TRAINABLE_VARIABLES] if n.name in trainable else [])
        if "shape" in n.attr and n.attr["shape"].HasField("shape"):
            dims = n.attr["shape"].shape
            if not dims.unknown_rank and all(d.size >= 0 for d in dims.dim):
                node.parameters = _numel(d.size for d in dims.dim)
        try:
            node.float_ops = float_ops(n, shape)
        except ValueError:
            missing += 1
        node.exec_micros = micros.get(n.name, 0)
        node.run_count = int(n.name in micros)
        nodes.append(node)
    if missing and run_meta is None:
        sys.stderr.write(f"{missing} ops no flops stats due to incomplete shapes.\n")
    return nodes


def _numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


_VALUES = ("parameters", "float_ops", "exec_micros")
_MINIMA = {"min_params": "parameters", "min_float_ops": "float_ops", "min_micros": "exec_micros"}
_ORDER = {"params": "total_parameters", "float_ops": "total_float_ops", "micros": "total_exec_micros",
          "occurrence": "run_count"}


def _accounted(node, opts):
    return any(re.fullmatch(r, t) for r in opts["account_type_regexes"] for t in node.types)


def _shown(node, opts, own=True):
    """Whether options display node (by its own values, or its totals for a view's inner node)."""
    if any(getattr(node, v if own else "total_" + v) < opts.get(m, 0) for m, v in _MINIMA.items()):
        return False
    name = node.name
    return any(re.fullmatch(r, name) for r in opts["show_name_regexes"]) and \
        not any(re.fullmatch(r, name) for r in opts["hide_name_regexes"])


def _view(nodes, cmd, opts):
    root = GraphNodeProto(ROOT)
    counted = [n for n in nodes if _accounted(n, opts) and (not opts["account_displayed_op_only"] or _shown(n, opts))]
    for n in nodes:
        for v in _VALUES:
            setattr(n, "total_" + v, getattr(n, v) if n in counted else 0)
    if cmd == "op":
        groups = {}
        for n in counted:
            g = groups.setdefault(n.types[0], GraphNodeProto(n.types[0]))
            g.graph_nodes.append(n)
            g.run_count += n.run_count
            for v in _VALUES:
                setattr(g, v, getattr(g, v) + getattr(n, v))
                setattr(g, "total_" + v, getattr(g, v))
        root.children = [g for g in groups.values() if _shown(g, opts, own=False)]
    else:  # the name-scope tree: "a/b" is a child of "a", made for the tree if no node has that name
        by_name = {n.name: n for n in nodes}
        for n in nodes:
            name, child = n.name, n
            while "/" in name:
                name = name.rsplit("/", 1)[0]
                parent = by_name.get(name)
                made = parent is None
                if made:
                    parent = by_name[name] = GraphNodeProto(name)
                parent.children.append(child)
                if not made:
                    break
                child = parent
            else:
                root.children.append(child)
        _totals(root)
        root.children = _displayed(root.children, opts, 1)
    for v in _VALUES:
        setattr(root, "total_" + v, sum(getattr(n, v) for n in counted))
    _order(root, opts)
    return root


def _totals(node):
    for c in node.children:
        _totals(c)
        for v in _VALUES:
            setattr(node, "total_" + v, getattr(node, "total_" + v) + getattr(c, "total_" + v))


def _displayed(children, opts, depth):
    """The displayed nodes among children (accounted ones only, as tfprof shows them), each with its
    displayed descendants; a hidden node's displayed descendants take its place."""
    out = []
    for c in children:
        below = _displayed(c.children, opts, depth + 1)
        if depth <= opts["max_depth"] and _accounted(c, opts) and _shown(c, opts, own=False):
            c.children = below
            out.append(c)
        else:
            out.extend(below)
    return out


def _order(node, opts):
    key = _ORDER.get(opts["order_by"])
    node.children.sort(key=(lambda n: n.name) if key is None else (lambda n: (-getattr(n, key), n.name)))
    for c in node.children:
        _order(c, opts)


def _output(root, cmd, opts):
    where = opts.get("output", "stdout")
    if where == "none":
        return
    lines = ["node name | # parameters | # float_ops | exec time (us)"]

    def walk(node, depth):
        lines.append(f"{'  ' * depth}{node.name} ({node.total_parameters:,} params, {node.total_float_ops:,} flops, "
                     f"{node.total_exec_micros:,}us)")
        for c in node.children:
            walk(c, depth + 1)

    walk(root, 0)
    text = "\n".join(lines) + "\n"
    if where == "stdout":
        sys.stdout.write(text)
    elif where.startswith("file:outfile="):
        with open(where[len("file:outfile="):], "w") as f:
            f.write(text)
    else:
        raise ValueError(f"tf.profiler.profile: output {where!r} is not supported by pygrad "
                         f"(use 'stdout', 'none' or 'file:outfile=<path>')")
