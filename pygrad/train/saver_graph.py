"""A Saver's save/restore subgraph as TensorFlow's Saver builds it in a GraphDef (V2 format, not
sharded), and the way back: which variable each checkpoint key restores, read from a GraphDef's
RestoreV2 and Assign nodes.

pygrad's Saver adds no ops to its graph (it saves and restores from Python); a MetaGraphDef it
exports carries these TF nodes under the saver's scope ("save"), so that TensorFlow's
import_meta_graph gets a Saver that honours the SaverDef: its checkpoint keys (a var_list dict's
names), max_to_keep and keep_checkpoint_every_n_hours:

    save/filename/input   Const "model"             save/SaveV2/tensor_names, .../shape_and_slices  Const
    save/filename         PlaceholderWithDefault    save/SaveV2                SaveV2(Const, names, slices, vars)
    save/Const            PlaceholderWithDefault    save/control_dependency    Identity(Const, ^SaveV2)
    save/RestoreV2/...    Const (on the CPU)        save/RestoreV2             RestoreV2(Const, names, slices)
    save/Assign, save/Assign_1, ...  Assign(var, RestoreV2:i)    save/restore_all  NoOp(^Assign, ...)

Keys are sorted, as TF sorts them. Importing goes the other way: pygrad builds none of these ops;
saver_scopes finds the scopes to leave out and restored_variables the key -> variable map.
"""
import weakref

from pygrad.messages import DATA_TYPE

V2 = 2  # SaverDef.CheckpointFormatVersion.V2
# Checkpoint I/O ops (TF's meta_graph.SAVE_AND_RESTORE_OPS): a scope holding one is a saver's.
SAVE_AND_RESTORE_OPS = frozenset(("SaveV2", "Save", "SaveSlice", "LegacySave", "LegacySaveSlice", "RestoreV2",
                                  "Restore", "RestoreSlice", "LegacyRestore", "LegacyRestoreSlice", "MergeV2Checkpoints"))


# graph -> {restore op name: weak reference to a Saver}: the savers built in a graph, by their SaverDef.
_BUILT = weakref.WeakKeyDictionary()


def register(graph, saver):
    """Records saver (built in graph) as the one whose SaverDef names its restore op."""
    _BUILT.setdefault(graph, {})[saver.as_saver_def().restore_op_name] = weakref.ref(saver)


def saver_for(graph, saver_def):
    """The Saver built in graph whose SaverDef names saver_def's restore op, or None."""
    ref = _BUILT.get(graph, {}).get(saver_def.restore_op_name)
    return ref() if ref is not None else None


def saver_def(scope, max_to_keep, keep_checkpoint_every_n_hours):
    """The SaverDef of a saver whose subgraph is under scope (saver_nodes' names)."""
    from pygrad.tf_protos import SaverDef
    return SaverDef(filename_tensor_name=f"{scope}/Const:0", save_tensor_name=f"{scope}/control_dependency:0",
                    restore_op_name=f"{scope}/restore_all", max_to_keep=max_to_keep or 0, sharded=False,
                    keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours, version=V2)


def _strings(values):
    from pygrad.tf_protos import AttrValue, TensorProto, TensorShapeProto
    """A 1-D string tensor attribute."""
    return AttrValue(tensor=TensorProto(dtype=DATA_TYPE["string"], string_val=[v.encode() for v in values],
                                        tensor_shape=TensorShapeProto(dim=[{"size": len(values)}])))


def saver_nodes(scope, variables, filename="model"):
    """The NodeDefs of TF's save/restore subgraph under scope for variables, a {checkpoint key:
    [(variable op name, pygrad dtype name, slice spec)]} dict: one variable with the spec "", or
    the parts of a partitioned variable with their slices' specs."""
    from pygrad.tf_protos import AttrValue, NodeDef, TensorProto, TensorShapeProto
    string = AttrValue(type=DATA_TYPE["string"])
    scalar = AttrValue(shape=TensorShapeProto())
    saved = [(k, *part) for k in sorted(variables) for part in variables[k]]
    keys = [k for k, _, _, _ in saved]
    dtypes = AttrValue(list=AttrValue.ListValue(type=[DATA_TYPE[dtype] for _, _, dtype, _ in saved]))
    filename_value = AttrValue(tensor=TensorProto(dtype=DATA_TYPE["string"], string_val=[filename.encode()],
                                                  tensor_shape=TensorShapeProto()))
    nodes = [NodeDef(name=f"{scope}/filename/input", op="Const", attr={"value": filename_value, "dtype": string}),
             NodeDef(name=f"{scope}/filename", op="PlaceholderWithDefault", input=[f"{scope}/filename/input"],
                     attr={"shape": scalar, "dtype": string}),
             NodeDef(name=f"{scope}/Const", op="PlaceholderWithDefault", input=[f"{scope}/filename"],
                     attr={"shape": scalar, "dtype": string})]
    for kind, device in (("SaveV2", ""), ("RestoreV2", "/device:CPU:0")):
        for part, values in (("tensor_names", keys), ("shape_and_slices", [spec for *_, spec in saved])):
            nodes.append(NodeDef(name=f"{scope}/{kind}/{part}", op="Const", device=device,
                                 attr={"value": _strings(values), "dtype": string}))
        inputs = [f"{scope}/Const", f"{scope}/{kind}/tensor_names", f"{scope}/{kind}/shape_and_slices"]
        if kind == "SaveV2":
            nodes.append(NodeDef(name=f"{scope}/SaveV2", op="SaveV2", input=inputs + [var for _, var, _, _ in saved],
                                 attr={"dtypes": dtypes}))
            nodes.append(NodeDef(name=f"{scope}/control_dependency", op="Identity",
                                 input=[f"{scope}/Const", f"^{scope}/SaveV2"],
                                 attr={"T": string, "_class": AttrValue(list=AttrValue.ListValue(
                                     s=[f"loc:@{scope}/Const".encode()]))}))
        else:
            nodes.append(NodeDef(name=f"{scope}/RestoreV2", op="RestoreV2", input=inputs, device=device,
                                 attr={"dtypes": dtypes}))
    assigns = []
    for i, (_, var, dtype, _) in enumerate(saved):
        assigns.append(f"{scope}/Assign" + (f"_{i}" if i else ""))
        nodes.append(NodeDef(name=assigns[-1], op="Assign", input=[var, f"{scope}/RestoreV2" + (f":{i}" if i else "")],
                             attr={"T": AttrValue(type=DATA_TYPE[dtype]), "validate_shape": AttrValue(b=True),
                                   "use_locking": AttrValue(b=True),
                                   "_class": AttrValue(list=AttrValue.ListValue(s=[f"loc:@{var}".encode()]))}))
    nodes.append(NodeDef(name=f"{scope}/restore_all", op="NoOp", input=[f"^{a}" for a in assigns]))
    return nodes


def _scope(name):
    return name.lstrip("^").rsplit("/", 1)[0] if "/" in name else ""


def _node(name):
    return name.lstrip("^").split(":")[0]


def saver_scopes(graph_def):
    """The name scopes of the savers in graph_def: those of its checkpoint I/O nodes."""
    return {_scope(n.name) for n in graph_def.node if n.op in SAVE_AND_RESTORE_OPS}


def restored_variables(graph_def, saver_def):
    """[(checkpoint key, slice spec, variable node name)] of the saver saver_def describes: each
    RestoreV2 under its scope names the keys and slices it reads (its tensor_names and
    shape_and_slices Consts), and the Assign of output i writes key i into its variable.
    ValueError if a restored value goes into anything but an Assign of a variable (a resource
    variable's AssignVariableOp: pygrad has VariableV2 only)."""
    from pygrad.importer import tensor_value
    scope = _scope(saver_def.restore_op_name)
    nodes = {n.name: n for n in graph_def.node}

    def strings(node_name):
        return [v.decode() if isinstance(v, bytes) else str(v)
                for v in tensor_value(nodes[_node(node_name)].attr["value"].tensor).ravel()]

    restores = {n.name: list(zip(strings(n.input[1]), strings(n.input[2])))
                for n in graph_def.node if n.op == "RestoreV2" and _scope(n.name).startswith(scope)}
    out = []
    for n in graph_def.node:
        for i, name in enumerate(n.input):
            source, _, index = name.partition(":")
            if source not in restores:
                continue
            if n.op != "Assign" or i != 1:
                raise ValueError(f"import_meta_graph: the saver's restored value {name} goes into {n.name} ({n.op}); "
                                 f"pygrad restores into VariableV2 variables through Assign only")
            out.append((*restores[source][int(index or 0)], _node(n.input[0])))
    return out
