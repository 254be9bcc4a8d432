"""tf.graph_util (TF's framework/graph_util_impl.py): GraphDef to GraphDef transforms for frozen
inference graphs: extract_sub_graph (what the outputs need), remove_training_nodes (CheckNumerics
removed, Identity and StopGradient spliced out) and convert_variables_to_constants (the variables'
values from a session, as Const nodes). They take and return GraphDef messages (pygrad's
tf_protos.GraphDef or TensorFlow's own; the result is of the argument's class).
"""
import logging
import re

from pygrad.messages import DATA_TYPE

_log = logging.getLogger("pygrad")
_VARIABLE_OPS = ("Variable", "VariableV2")


def _node_name(name):
    return name[1:] if name.startswith("^") else name.split(":")[0]


def _colocated(node):
    """The nodes node is colocated with (its "_class" attribute's "loc:@name" entries)."""
    if "_class" not in node.attr:
        return []
    return [s.decode()[5:] if s.decode().startswith("loc:@") else s.decode() for s in node.attr["_class"].list.s]


def _check_graph_def(graph_def, fn):
    if not (hasattr(graph_def, "node") and hasattr(graph_def, "versions")):
        raise TypeError(f"{fn}: graph_def must be a GraphDef proto, but got type {type(graph_def)}.")


def extract_sub_graph(graph_def, dest_nodes):
    """The GraphDef of the nodes that dest_nodes (node names) depend on, through data, control
    and colocation inputs, in their original order."""
    _check_graph_def(graph_def, "extract_sub_graph")
    if isinstance(dest_nodes, str):
        raise TypeError(f"dest_nodes must be an iterable of strings, but got type {type(dest_nodes)}.")
    inputs, by_name, order = {}, {}, {}
    for i, node in enumerate(graph_def.node):
        name = _node_name(node.name)
        by_name[name], order[name] = node, i
        inputs[name] = [_node_name(x) for x in node.input] + _colocated(node)
    for d in dest_nodes:
        assert d in by_name, f"{d} is not in graph"
    keep, todo = set(), list(dest_nodes)
    while todo:
        name = todo.pop()
        if name not in keep:
            keep.add(name)
            todo.extend(inputs.get(name, ()))
    out = type(graph_def)()
    for name in sorted(keep, key=lambda n: order[n]):
        out.node.add().CopyFrom(by_name[name])
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


def _rewire(nodes, removed, out):
    """Copies nodes but those in removed ({name: its data input}) into out: a data input naming a
    removed node becomes that node's input (followed through chains), a control input naming
    one is dropped."""
    for node in nodes:
        if node.name in removed:
            continue
        new = out.node.add()
        new.CopyFrom(node)
        del new.input[:]
        for full in node.input:
            if full.startswith("^") and full[1:] in removed:
                continue
            while full in removed or full.endswith(":0") and full[:-2] in removed:
                full = removed[full if full in removed else full[:-2]]
            new.input.append(full)
    return out


def remove_training_nodes(input_graph, protected_nodes=None):
    """input_graph without CheckNumerics nodes, and with Identity and StopGradient nodes spliced
    out (their consumers read their input), except protected_nodes, nodes with control inputs,
    nodes used as control inputs and nodes others are colocated with. Unlike TF, which drops a
    removed CheckNumerics' outgoing data edges (leaving its consumers short of an input), its
    consumers read its input, as they do for a spliced Identity."""
    _check_graph_def(input_graph, "remove_training_nodes")
    protected = set(protected_nodes or ())
    checks = {n.name: n.input[0] for n in input_graph.node if n.op == "CheckNumerics" and n.name not in protected}
    after = _rewire(input_graph.node, checks, type(input_graph)())
    controls, with_control, colocated = set(), set(), set()
    for node in after.node:
        for i in node.input:
            if i.startswith("^"):
                controls.add(i[1:])
                with_control.add(node.name)
        colocated.update(_colocated(node))
    splice = {n.name: n.input[0] for n in after.node
              if n.op in ("Identity", "StopGradient") and n.name not in protected and n.name not in colocated
              and n.name not in with_control and n.name not in controls}
    return _rewire(after.node, splice, type(input_graph)())


def convert_variables_to_constants(sess, input_graph_def, output_node_names, variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """The subgraph of input_graph_def that output_node_names need, each variable (VariableV2 node)
    in it replaced by a Const of its value in sess (those in variable_names_whitelist if given,
    not in variable_names_blacklist)."""
    from pygrad.importer import _NP
    from pygrad.messages import tensor_proto
    from pygrad.tf_protos import AttrValue, TensorProto
    inference = extract_sub_graph(input_graph_def, output_node_names)
    names = [n.name for n in inference.node if n.op in _VARIABLE_OPS
             and (variable_names_whitelist is None or n.name in variable_names_whitelist)
             and (variable_names_blacklist is None or n.name not in variable_names_blacklist)]
    values = dict(zip(names, sess.run([n + ":0" for n in names]))) if names else {}
    _log.info("Froze %d variables.", len(values))
    out = type(input_graph_def)()
    for node in inference.node:
        new = out.node.add()
        if node.name not in values:
            new.CopyFrom(node)
            continue
        dtype = node.attr["dtype"].type
        value = values[node.name].astype(_NP[dtype], copy=False)
        name = next(k for k, v in DATA_TYPE.items() if v == dtype)
        tensor = TensorProto.FromString(tensor_proto(value, name).SerializeToString())
        new.name, new.op = node.name, "Const"
        new.attr["dtype"].type = dtype
        new.attr["value"].CopyFrom(type(new.attr["value"]).FromString(AttrValue(tensor=tensor).SerializeToString()))
    _log.info("Converted %d variables to const ops.", len(values))
    out.library.CopyFrom(inference.library)
    out.versions.CopyFrom(inference.versions)
    return out
