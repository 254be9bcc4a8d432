"""MetaGraphDef, the `.meta` file beside a checkpoint: a graph with its collections and its Saver
as one message (TF's framework/meta_graph.py): tf.train.export_meta_graph, tf.train.import_meta_graph,
and tf.train.write_graph for a bare GraphDef. (import_meta_graph, which adds the Saver, is
train/saver.py's, as in TF: the saver writes meta graphs, so this module does not import it.)

Export writes the GraphDef (graph_def.py), the SaverDef given, with the save/restore subgraph of
the pygrad Saver it belongs to (train/saver_graph.py), and the collections as TF's CollectionDef
kinds: VariableDef bytes for the variable collections, node_list for ops, tensors and other
variables (their names), int64_list, float_list and bytes_list for Python ints, floats and
strings. A collection of anything else (a Saver, a cond context) is left out with a warning, as TF
does.

Import builds the GraphDef's ops with importer.import_graph_def, then the collections over them:
the variable collections become pygrad Variables over the imported VariableV2 ops (one object per
variable), so tf.global_variables(), tf.trainable_variables() and a new Saver see them. The
savers' save/restore subgraphs (the scopes holding SaveV2, RestoreV2, ... nodes) are left out of
what import builds, since pygrad's Saver saves and restores from Python; the returned Saver restores
each checkpoint key into the variable the subgraph's Assign writes it to.
"""
import logging
import os

from pygrad import errors, importer
from pygrad.graph import GraphKeys, Operation, Tensor, get_default_graph, prepend_name_scope, strip_name_scope
from pygrad.ops.state_ops import Variable
from pygrad.train.saver_graph import SAVE_AND_RESTORE_OPS, saver_for, saver_scopes

_log = logging.getLogger("pygrad")

# The collections whose items are variables, written as VariableDef bytes (TF registers these).
VARIABLE_COLLECTIONS = (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES, GraphKeys.LOCAL_VARIABLES,
                        GraphKeys.MODEL_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES, "metric_variables")
# TF collections of other registered protos (contexts, queue runners, savers): pygrad has no such objects.
_OTHER_PROTO_COLLECTIONS = ("cond_context", "while_context", "queue_runners", "savers")
_UNBOUND_INPUTS = "unbound_inputs"
_KINDS = ("node_list", "bytes_list", "int64_list", "float_list", "any_list")  # CollectionDef's oneof


def _as(cls, message):
    """message as cls (a tf_protos class), converting a TensorFlow-built message through its bytes."""
    return message if isinstance(message, cls) else cls.FromString(message.SerializeToString())


def graph_def_of(graph):
    """graph's GraphDef as a tf_protos.GraphDef, with the static shapes of its outputs."""
    from pygrad.graph_def import graph_def
    from pygrad.tf_protos import GraphDef
    return _as(GraphDef, graph_def(graph, add_shapes=True))


def _kind(item):
    """The CollectionDef field that holds item (TF's meta_graph._get_kind_name), or None."""
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, int):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    if isinstance(item, (Tensor, Operation, Variable)):
        return "node_list"
    return None


def _add_collection(meta, key, items, export_scope):
    """meta.collection_def[key] of the graph's items, or nothing (with a warning) if they have
    no CollectionDef form."""
    items = [x for x in items if not export_scope or not isinstance(getattr(x, "name", None), str)
             or x.name.startswith(export_scope)]
    if not items:
        return
    if key in VARIABLE_COLLECTIONS and all(isinstance(x, Variable) for x in items):
        protos = [x.to_proto(export_scope) for x in items]
        meta.collection_def[key].bytes_list.value.extend(p.SerializeToString() for p in protos if p is not None)
        return
    kinds = {_kind(x) for x in items}
    if len(kinds) != 1 or None in kinds:
        _log.warning("Collection '%s' is not exported: its items (%s) have no single CollectionDef kind", key,
                     ", ".join(sorted({type(x).__name__ for x in items})))
        return
    kind = kinds.pop()
    field = getattr(meta.collection_def[key], kind).value
    if kind == "node_list":
        field.extend(strip_name_scope(x.name, export_scope) for x in items)
    elif kind == "bytes_list":
        field.extend(x.encode() if isinstance(x, str) else x for x in items)
    else:
        field.extend(items)


def _scoped(graph_def, saver_def, export_scope):
    """graph_def and saver_def with only the nodes under export_scope, names without it."""
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    for node in graph_def.node:
        if not node.name.startswith(export_scope):
            continue
        outside = [i for i in node.input if not i.lstrip("^").startswith(export_scope)]
        if outside:
            raise ValueError(f"export_meta_graph: node '{node.name}' in export_scope '{export_scope}' has inputs "
                             f"outside it ({', '.join(outside)}); pygrad exports no unbound inputs")
        new = out.node.add()
        new.CopyFrom(node)
        new.name = strip_name_scope(node.name, export_scope)
        new.input[:] = [strip_name_scope(i, export_scope) for i in node.input]
    if saver_def is not None:
        for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            setattr(saver_def, field, strip_name_scope(getattr(saver_def, field), export_scope))
    return out


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None, collection_list=None,
                      as_text=False, graph=None, export_scope=None, clear_devices=False,
                      clear_extraneous_savers=False, strip_default_attrs=False, save_debug_info=False, **kwargs):
    """The MetaGraphDef (tf_protos.MetaGraphDef) of graph (the default graph) with its collections
    (collection_list: only these keys) and saver_def, written to filename if given (as text with
    as_text). A saver_def of a pygrad Saver adds that saver's TF save/restore subgraph to the
    GraphDef; only that saver's is written, so clear_extraneous_savers holds either way.
    strip_default_attrs is recorded in meta_info_def: the attributes pygrad writes are those its ops
    set. save_debug_info (TF's GraphDebugInfo file) is not supported."""
    from pygrad.tf_protos import GraphDef, MetaGraphDef, SaverDef
    if kwargs:
        raise TypeError(f"export_meta_graph() got unexpected keyword arguments: {', '.join(sorted(kwargs))}")
    if save_debug_info:
        raise NotImplementedError("export_meta_graph(save_debug_info=True): pygrad writes no GraphDebugInfo")
    graph = graph or get_default_graph()
    meta = MetaGraphDef()
    if meta_info_def is not None:
        meta.meta_info_def.MergeFrom(_as(MetaGraphDef.MetaInfoDef, meta_info_def))
    meta.meta_info_def.stripped_default_attrs = bool(strip_default_attrs)
    graph_def = _as(GraphDef, graph_def) if graph_def is not None else graph_def_of(graph)
    if saver_def is not None:
        saver_def = _as(SaverDef, saver_def)
        saver = saver_for(graph, saver_def)
        restore_op = saver_def.restore_op_name
        if saver is not None and not any(n.name == restore_op for n in graph_def.node):
            graph_def.node.extend(saver.graph_nodes())
    if export_scope:
        graph_def = _scoped(graph_def, saver_def, export_scope)
    if clear_devices:
        for node in graph_def.node:
            node.device = ""
    meta.graph_def.CopyFrom(graph_def)
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in keys:
        if isinstance(key, str):
            _add_collection(meta, key, graph.get_collection(key), export_scope)
    if filename:
        _write(meta, os.path.dirname(filename), os.path.basename(filename), as_text)
    return meta


def _write(message, logdir, name, as_text):
    from google.protobuf import text_format
    if logdir:
        os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    data = text_format.MessageToString(message).encode() if as_text else message.SerializeToString(deterministic=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a graph's GraphDef (or a GraphDef) to logdir/name, as text (protobuf text format) or
    binary; returns the path (TF's tf.io.write_graph)."""
    from pygrad.tf_protos import GraphDef
    if hasattr(graph_or_graph_def, "get_operations"):
        graph_def = graph_def_of(graph_or_graph_def)
    elif hasattr(graph_or_graph_def, "node"):
        graph_def = _as(GraphDef, graph_or_graph_def)
    else:
        raise TypeError(f"write_graph: expected a Graph or a GraphDef, got {type(graph_or_graph_def).__name__}")
    return _write(graph_def, os.fspath(logdir), name, as_text)


def read_meta_graph_file(filename):
    """The MetaGraphDef in filename (binary, or protobuf text). OSError if the file does not exist,
    DataLossError naming it if it parses as neither."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    from pygrad.tf_protos import MetaGraphDef
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise OSError(f"File does not exist. Received: {filename}.")
    with open(filename, "rb") as f:
        data = f.read()
    try:
        return MetaGraphDef.FromString(data)
    except DecodeError as binary_error:
        try:
            return text_format.Parse(data.decode("utf-8"), MetaGraphDef())
        except (text_format.ParseError, UnicodeDecodeError):
            raise errors.DataLossError(None, None, f"{filename}: {len(data)} bytes parse as neither a binary nor "
                                                   f"a text MetaGraphDef ({binary_error})") from None


def _without_savers(graph_def):
    """graph_def without its savers' save/restore subgraphs. ValueError if another node uses one."""
    scopes = saver_scopes(graph_def)
    dropped = {n.name for n in graph_def.node
               if any(n.name.startswith(s + "/") or n.name == s for s in scopes if s) or n.op in SAVE_AND_RESTORE_OPS}
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    for n in graph_def.node:
        if n.name in dropped:
            continue
        used = [i for i in n.input if i.lstrip("^").split(":")[0] in dropped]
        if used:
            raise ValueError(f"import_meta_graph: node '{n.name}' ({n.op}) uses {', '.join(used)} of a saver's "
                             f"save/restore subgraph, which pygrad does not build")
        out.node.add().CopyFrom(n)
    return out


def _variable(proto, import_scope, built):
    """The pygrad Variable of a VariableDef, one per variable (built: {name: Variable})."""
    name = proto.variable_name
    if name not in built:
        built[name] = Variable.from_proto(proto, import_scope)
    return built[name]


def _import_collections(meta, graph, import_scope, predicate):
    from pygrad.tf_protos import VariableDef
    version = meta.meta_info_def.tensorflow_version
    # TF before 1.9 wrote no VariableDef.trainable: membership in trainable_variables says it.
    has_trainable = not version or tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) >= (1, 9)
    keys = sorted(meta.collection_def, key=lambda k: (k != GraphKeys.TRAINABLE_VARIABLES, k))
    built = {}
    for key in keys:
        col = meta.collection_def[key]
        kind = next((k for k in _KINDS if col.HasField(k)), None)
        if key == _UNBOUND_INPUTS or not predicate(key) or kind is None:
            continue
        if kind == "bytes_list" and key in VARIABLE_COLLECTIONS:
            for value in col.bytes_list.value:
                proto = VariableDef.FromString(value)
                if not has_trainable:
                    proto.trainable = key == GraphKeys.TRAINABLE_VARIABLES
                graph.add_to_collection(key, _variable(proto, import_scope, built))
        elif kind == "bytes_list" and key in _OTHER_PROTO_COLLECTIONS:
            _log.warning("Collection '%s' is not imported: pygrad has no objects of its protos", key)
        elif kind == "node_list":
            for value in col.node_list.value:
                graph.add_to_collection(key, graph.as_graph_element(prepend_name_scope(value, import_scope)))
        elif kind == "bytes_list":
            for value in col.bytes_list.value:
                graph.add_to_collection(key, prepend_name_scope(value.decode(), import_scope) if import_scope else value)
        elif kind in ("int64_list", "float_list"):
            for value in getattr(col, kind).value:
                graph.add_to_collection(key, int(value) if kind == "int64_list" else float(value))
        else:
            _log.warning("Collection '%s' is not imported: pygrad does not read %s collections", key, kind)
    return built


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, input_map=None,
                             restore_collections_predicate=lambda key: True):
    """Builds a MetaGraphDef (or the .meta file named) into the default graph under import_scope:
    its ops and its collections; returns (the MetaGraphDef, {variable name: Variable} of its
    variable collections). Nothing of a failed import stays in the graph. train/saver.py's
    import_meta_graph adds the Saver."""
    from pygrad.tf_protos import MetaGraphDef
    if hasattr(meta_graph_or_file, "graph_def"):
        meta = _as(MetaGraphDef, meta_graph_or_file)
    else:
        meta = read_meta_graph_file(meta_graph_or_file)
    unbound = meta.collection_def[_UNBOUND_INPUTS].node_list.value if _UNBOUND_INPUTS in meta.collection_def else []
    if unbound and sorted(unbound) != sorted(input_map or {}):
        raise ValueError(f"Graph contains unbound inputs: {', '.join(v for v in unbound if v not in (input_map or {}))}."
                         f" Must provide these inputs through input_map.")
    graph_def = _without_savers(meta.graph_def)
    if clear_devices:
        for node in graph_def.node:
            node.device = ""
    graph = get_default_graph()
    with graph.rollback_on_error():
        importer.import_graph_def(graph_def, input_map=input_map, name=import_scope or "")
        return meta, _import_collections(meta, graph, import_scope, restore_collections_predicate)
