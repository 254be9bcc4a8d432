"""Loading a SavedModel (TF's saved_model/loader_impl.py, TF1 API): the meta graph whose tags are
the ones asked for is imported into the session's graph (train/saver.py's import_meta_graph), its
variables restored from variables/, and its main op (init op) run with the asset files fed.
"""
import os

from pygrad import errors
from pygrad.graph import GraphKeys, get_default_graph, prepend_name_scope
from pygrad.train.saver import import_meta_graph
from pygrad.saved_model import constants


def maybe_saved_model_directory(export_dir):
    """Whether export_dir holds a SavedModel file (saved_model.pb, .pbtxt or .cpb)."""
    export_dir = os.fspath(export_dir)
    return any(os.path.exists(os.path.join(export_dir, name)) for name in
               (constants.SAVED_MODEL_FILENAME_PBTXT, constants.SAVED_MODEL_FILENAME_PB,
                constants.SAVED_MODEL_FILENAME_CPB))


contains_saved_model = maybe_saved_model_directory


def parse_saved_model(export_dir):
    """The SavedModel message of export_dir. OSError if it has none; DataLossError naming the
    file if it does not parse."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    from pygrad.tf_protos import SavedModel
    export_dir = os.fspath(export_dir)
    pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    if os.path.exists(pb):
        with open(pb, "rb") as f:
            data = f.read()
        try:
            return SavedModel.FromString(data)
        except DecodeError as e:
            raise errors.DataLossError(None, None, f"Cannot parse file {pb}: {len(data)} bytes are not a "
                                                   f"SavedModel ({e}).") from None
    if os.path.exists(pbtxt):
        with open(pbtxt, "rb") as f:
            data = f.read()
        try:
            return text_format.Parse(data.decode("utf-8"), SavedModel())
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise errors.DataLossError(None, None, f"Cannot parse file {pbtxt}: {e}.") from None
    raise OSError(f"SavedModel file does not exist at: {export_dir}{os.path.sep}"
                  f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|{constants.SAVED_MODEL_FILENAME_PB}}}")


def _meta_graph(saved_model, tags, export_dir):
    available = [set(m.meta_info_def.tags) for m in saved_model.meta_graphs]
    for meta in saved_model.meta_graphs:
        if set(meta.meta_info_def.tags) == set(tags):
            return meta
    raise RuntimeError(f"MetaGraphDef associated with tags {str(list(tags)).strip('[]')} could not be found in "
                       f"SavedModel {export_dir}, with available tags '{available}'.")


def _init_op(meta, graph, import_scope):
    """The op the loader runs after the restore: the init-op signature's, or the main op's, or
    the legacy init op's collection entry."""
    if constants.INIT_OP_SIGNATURE_KEY in meta.signature_def:
        name = meta.signature_def[constants.INIT_OP_SIGNATURE_KEY].outputs[constants.INIT_OP_SIGNATURE_KEY].name
        return graph.as_graph_element(prepend_name_scope(name, import_scope))
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if key in meta.collection_def:
            ops = meta.collection_def[key].node_list.value
            if len(ops) != 1:
                raise RuntimeError(f"Expected exactly one SavedModel init op. Found {len(ops)}: {list(ops)}.")
            return graph.as_graph_element(prepend_name_scope(ops[0], import_scope))
    return None


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Imports the meta graph of export_dir tagged tags into sess's graph, restores its variables
    and runs its init op; returns the MetaGraphDef (its signature_def names the tensors)."""
    export_dir = os.fspath(export_dir)
    saved_model = parse_saved_model(export_dir)
    meta = _meta_graph(saved_model, tags, export_dir)
    graph = sess.graph
    with graph.as_default():
        saver = import_meta_graph(meta, import_scope=import_scope, **saver_kwargs)
        variables_path = os.path.join(export_dir, constants.VARIABLES_DIRECTORY, constants.VARIABLES_FILENAME)
        if saver is not None:
            saver.restore(sess, variables_path)
        elif get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, import_scope):
            raise ValueError(f"SavedModel {export_dir}: the graph has variables but no Saver to restore them")
        feeds = {}
        for asset in meta.asset_file_def:
            path = os.path.join(export_dir, constants.ASSETS_DIRECTORY, asset.filename)
            feeds[graph.get_tensor_by_name(prepend_name_scope(asset.tensor_info.name, import_scope))] = path
        init_op = _init_op(meta, graph, import_scope)
        if init_op is not None:
            sess.run([init_op], feed_dict=feeds)
    return meta
