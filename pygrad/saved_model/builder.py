"""SavedModelBuilder: a SavedModel directory (TF's saved_model/builder_impl.py, TF1 API):

    export_dir/saved_model.pb                      the SavedModel: its meta graphs, each with tags
    export_dir/variables/variables.index           and signatures
    export_dir/variables/variables.data-00000-of-00001
    export_dir/assets/                             the asset files, copied

The variables are saved once, with the first meta graph (add_meta_graph_and_variables); the
meta graphs are pygrad's MetaGraphDefs with a Saver's SaverDef and save/restore subgraph
(meta_graph.py), so TensorFlow's loader restores them.
"""
import logging
import os
import shutil

from pygrad.graph import GraphKeys, Operation, Tensor, get_default_graph, unwrap
from pygrad.saved_model import constants
from pygrad.train.saver import Saver

_log = logging.getLogger("pygrad")


def _check_tensor_info(info, where):
    if not info.HasField("name") and not info.HasField("coo_sparse") and not info.HasField("composite_tensor"):
        raise AssertionError(f"Invalid `tensor_info` ({where}): All TensorInfo protos used in the SignatureDefs must "
                             f"have one of the 'encoding' fields (e.g., name or coo_sparse) set.")
    if info.dtype == 0:
        raise AssertionError(f"Invalid `tensor_info` ({where}): All TensorInfo protos used in the SignatureDefs must "
                             f"have the dtype field set.")


def _asset_path(tensor):
    """The file an asset tensor (a scalar string Const) names."""
    tensor = unwrap(tensor)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Asset path tensor {tensor} must be a Tensor.")
    if tensor.op.type != "Const" or tensor.dtype.name != "string" or tensor.shape.ndims != 0:
        raise TypeError(f"Asset path tensor {tensor.name} must be a scalar string constant.")
    value = tensor.op.attrs["value"]
    value = value.item() if hasattr(value, "item") else value
    return value.decode() if isinstance(value, bytes) else str(value)


class SavedModelBuilder:
    """Builds a SavedModel in export_dir, which must not exist or be empty."""

    def __init__(self, export_dir):
        from pygrad.tf_protos import SavedModel
        export_dir = os.fspath(export_dir)
        if os.path.exists(export_dir) and os.listdir(export_dir):
            raise AssertionError(f"Export directory {export_dir} already exists, and isn't empty. Please choose a "
                                 f"different export directory, or delete all the contents of the specified directory.")
        os.makedirs(export_dir, exist_ok=True)
        self._export_dir = export_dir
        self._saved_model = SavedModel(saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False

    def _check_signatures(self, signature_def_map):
        for key, signature in signature_def_map.items():
            for field in ("inputs", "outputs"):
                for name, info in getattr(signature, field).items():
                    _check_tensor_info(info, f"signature '{key}', {field} '{name}'")
        for reserved in (constants.INIT_OP_SIGNATURE_KEY, constants.TRAIN_OP_SIGNATURE_KEY):
            if reserved in signature_def_map:
                raise KeyError(f'SignatureDef map key "{reserved}" is reserved. Please use a different key.')

    def _add_collections(self, assets_collection, main_op):
        graph = get_default_graph()
        if main_op is not None:
            if not isinstance(main_op, Operation):
                raise TypeError(f"main_op needs to be an Operation: {main_op!r}")
            if graph.get_collection(constants.MAIN_OP_KEY):
                raise ValueError(f"Graph already contains one or more main ops under the collection "
                                 f"{constants.MAIN_OP_KEY}.")
            graph.add_to_collection(constants.MAIN_OP_KEY, main_op)
        return {os.path.basename(_asset_path(t)): (_asset_path(t), unwrap(t)) for t in assets_collection or []}

    def _add(self, saver, tags, signature_def_map, assets, clear_devices, strip_default_attrs):
        meta = saver.export_meta_graph(clear_devices=clear_devices, strip_default_attrs=strip_default_attrs)
        names = {n.name for n in meta.graph_def.node}
        for key, signature in (signature_def_map or {}).items():
            for field in ("inputs", "outputs"):
                for name, info in getattr(signature, field).items():
                    if info.HasField("name") and info.name.split(":")[0] not in names:
                        raise ValueError(f"SavedModelBuilder: signature '{key}' {field[:-1]} '{name}' names tensor "
                                         f"'{info.name}', which is not in the graph")
            meta.signature_def[key].CopyFrom(signature)
        if assets:
            target = os.path.join(self._export_dir, constants.ASSETS_DIRECTORY)
            os.makedirs(target, exist_ok=True)
            for filename, (source, tensor) in sorted(assets.items()):
                asset = meta.asset_file_def.add(filename=filename)
                asset.tensor_info.name = tensor.name
                if os.path.exists(source) and os.path.abspath(source) != os.path.join(os.path.abspath(target), filename):
                    shutil.copyfile(source, os.path.join(target, filename))
        meta.meta_info_def.tags.extend(tags)
        self._saved_model.meta_graphs.add().CopyFrom(meta)

    @staticmethod
    def _saver(saver):
        return saver or Saver(get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES), sharded=True,
                              allow_empty=True)

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None, assets_collection=None,
                                     legacy_init_op=None, clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None):
        """Saves sess's variables and adds the default graph's meta graph under tags, with
        signature_def_map ({key: SignatureDef}), assets_collection (scalar string Const tensors
        naming files, copied to assets/) and main_op (run by the loader after the restore)."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been saved. Please invoke "
                                 "`add_meta_graph()` instead.")
        signature_def_map = signature_def_map or {}
        self._check_signatures(signature_def_map)
        assets = self._add_collections(assets_collection, main_op if main_op is not None else legacy_init_op)
        variables_dir = os.path.join(self._export_dir, constants.VARIABLES_DIRECTORY)
        os.makedirs(variables_dir, exist_ok=True)
        saver = self._saver(saver)
        saver.save(sess, os.path.join(variables_dir, constants.VARIABLES_FILENAME), write_meta_graph=False,
                   write_state=False)
        self._add(saver, tags, signature_def_map, assets, clear_devices, strip_default_attrs)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None, legacy_init_op=None,
                       clear_devices=False, main_op=None, strip_default_attrs=False, saver=None):
        """Adds another meta graph of the default graph (the variables are those already saved)."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been saved yet. Please invoke "
                                 "`add_meta_graph_and_variables()` first.")
        signature_def_map = signature_def_map or {}
        self._check_signatures(signature_def_map)
        assets = self._add_collections(assets_collection, main_op if main_op is not None else legacy_init_op)
        self._add(self._saver(saver), tags, signature_def_map, assets, clear_devices, strip_default_attrs)

    def save(self, as_text=False):
        """Writes saved_model.pb (saved_model.pbtxt with as_text); returns its path."""
        from google.protobuf import text_format
        os.makedirs(self._export_dir, exist_ok=True)
        if as_text:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
            data = text_format.MessageToString(self._saved_model).encode()
        else:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PB)
            data = self._saved_model.SerializeToString(deterministic=True)
        with open(path, "wb") as f:
            f.write(data)
        _log.info("SavedModel written to: %s", path)
        return path.encode()
