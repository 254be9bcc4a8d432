"""tf.train.Saver: saves a session's variables as a TensorFlow V2 checkpoint and restores them,
keeps the newest max_to_keep checkpoints (plus one every keep_checkpoint_every_n_hours) and the
`checkpoint` state file, as TensorFlow 1's saver.py.

Unlike TF, the saver adds no ops to the graph: a save fetches the variables in one run and
writes the bundle from Python; a restore reads and checks every tensor before it writes any, so
a failed restore leaves the session's variables as they were. The saver still takes its name
scope ("save") and has TF's SaverDef: the meta graph it exports (`<checkpoint>.meta`) carries the
save/restore subgraph TF would have built there (train/saver_graph.py), so TensorFlow restores
pygrad's checkpoints through it."""
import logging
import os
import time

import numpy as np

from pygrad import errors, meta_graph
from pygrad.graph_def import NotExportableError
from pygrad.graph import GraphKeys, Tensor, get_default_graph, prepend_name_scope, unwrap
from pygrad.ops.partitioned_variables import PartitionedVariable, SaveSliceInfo
from pygrad.ops.state_ops import Variable
from pygrad.train import checkpoint_bundle, checkpoint_management, saver_graph
from pygrad.train.training_util import global_step as _global_step_value

_log = logging.getLogger("pygrad")
def _is_variable(v):
    return isinstance(v, Variable) or isinstance(v, Tensor) and v.op.type == "VariableV2"


def _slice_info(v):
    return getattr(v, "_save_slice_info", None)


def _names_to_variables(var_list):
    """{checkpoint key: variable, or the parts of a partitioned one} of a Saver's var_list (a
    list, a dict of names, or None: every global variable). As TF's op_list_to_dict: a part (a
    variable with a save-slice info) is saved under its full variable's name, with the other
    parts; a PartitionedVariable is its parts."""
    if var_list is None:
        var_list = get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES)
    if isinstance(var_list, dict):
        items = list(var_list.items())
    else:
        if not isinstance(var_list, (list, tuple, set)):
            var_list = [var_list]
        items = []
        for v in var_list:
            if isinstance(v, PartitionedVariable):
                items.append((v.name, list(v)))
            elif _slice_info(v) is not None:
                items.append((_slice_info(v).full_name, [v]))
            elif not _is_variable(v):
                raise TypeError(f"Variable to save is not a Variable: {v!r}")
            else:
                items.append((v.op.name, v))
    out = {}
    for name, v in items:
        if not isinstance(name, str):
            raise TypeError(f"Saver: a var_list key must be a name (str), got {name!r}")
        if isinstance(v, PartitionedVariable):
            v = list(v)
        parts = v if isinstance(v, list) else [v]
        for p in parts:
            if not _is_variable(p):
                raise TypeError(f"Saver: the value for '{name}' must be a Variable, got {p!r}")
            if isinstance(v, list) and _slice_info(p) is None:
                raise ValueError(f"Saver: '{name}' lists {p.op.name}, which is not a part of a partitioned variable")
        if name in out:
            if not (isinstance(v, list) and isinstance(out[name], list)):
                raise ValueError(f"At least two variables have the same name: {name}" if not isinstance(v, list)
                                 else f"Mixing slices and non-slices with the same name: {name}")
            out[name] = out[name] + v
        else:
            out[name] = v
    return out


def _restore_error(cls, message, extra):
    return cls(None, None, f"Restoring from checkpoint failed. This is most likely due to {extra} from the "
                           f"checkpoint. Please ensure that you have not altered the graph expected based on the "
                           f"checkpoint. Original error:\n\n{message}")


class Saver:
    """Saves and restores variables (TF1's tf.train.Saver, V2 format only)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0,
                 name=None, restore_sequentially=False, saver_def=None, builder=None, defer_build=False,
                 allow_empty=False, write_version=2, pad_step_number=False, save_relative_paths=False, filename=None):
        if saver_def is not None:  # a Saver of an imported graph (TF's Saver(saver_def=...))
            max_to_keep, keep_checkpoint_every_n_hours = saver_def.max_to_keep, saver_def.keep_checkpoint_every_n_hours
        self._saver_def = saver_def
        self._name = name
        self._graph = get_default_graph()
        self._var_list = var_list
        self._vars = _names_to_variables(var_list) if not defer_build else None
        self._is_empty = not self._vars and not defer_build
        if self._is_empty and not allow_empty:
            raise ValueError("No variables to save")
        self._allow_empty = allow_empty
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints = []  # [(path, time)]
        self._checkpoints_to_be_deleted = []
        if not defer_build:
            self._take_scope()

    def build(self):
        if self._vars is None:
            self._vars = _names_to_variables(self._var_list)
            self._is_empty = not self._vars
            if self._is_empty and not self._allow_empty:
                raise ValueError("No variables to save")
            self._take_scope()

    def _take_scope(self):
        """Takes the saver's name scope in its graph, as TF's Saver does with the ops it adds."""
        if self._is_empty:
            return
        if self._saver_def is None:
            scope = self._graph.unique_name(self._name or "save")
            self._saver_def = saver_graph.saver_def(scope, self._max_to_keep, self._keep_every_n_hours)
        saver_graph.register(self._graph, self)

    # ---------------------------------------------------------------- the SaverDef and the meta graph
    @property
    def saver_def(self):
        return self.as_saver_def()

    def as_saver_def(self):
        """The SaverDef (tf_protos.SaverDef): TF's tensor names under the saver's scope, V2 format;
        None for a saver without variables."""
        self.build()
        return self._saver_def

    def graph_nodes(self):
        """The NodeDefs TF's Saver would have added to the graph (train/saver_graph.py)."""
        self.build()
        if self._is_empty:
            return []
        scope = self._saver_def.restore_op_name.rsplit("/", 1)[0]
        return saver_graph.saver_nodes(scope, {k: [(p.op.name, p.dtype.name, _slice_info(p).spec if _slice_info(p)
                                                     else "") for p in (v if isinstance(v, list) else [v])]
                                               for k, v in self._vars.items()}, self._filename or "model")

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False, export_scope=None,
                          clear_devices=False, clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        """The MetaGraphDef of the saver's graph with this saver's SaverDef (and its subgraph),
        written to filename if given (pygrad/meta_graph.py)."""
        return meta_graph.export_meta_graph(filename=filename, saver_def=self.as_saver_def(), collection_list=collection_list,
                                 as_text=as_text, graph=self._graph, export_scope=export_scope,
                                 clear_devices=clear_devices, clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)

    # ---------------------------------------------------------------- the kept checkpoints
    @property
    def last_checkpoints(self):
        """The kept checkpoints' paths, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        self._last_checkpoints = [(p, None) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes over checkpoints an earlier saver kept (those whose files still exist), with their
        modification times, so that they are deleted in turn."""
        kept = []
        for p in checkpoint_paths:
            mtime = checkpoint_management.get_checkpoint_mtimes([p])
            if mtime:
                kept.append((p, mtime[0]))
        self.set_last_checkpoints_with_time(kept)

    def _record_last_checkpoint(self, path):
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix):
        if self._checkpoints_to_be_deleted:
            path, saved_at = self._checkpoints_to_be_deleted.pop(0)
            if saved_at is not None and saved_at > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_every_n_hours * 3600
                return
            try:
                checkpoint_management.remove_checkpoint(path, meta_graph_suffix)
            except OSError as e:
                _log.warning("Ignoring: %s", e)

    # ---------------------------------------------------------------- save
    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        """Writes the variables' values in sess to the checkpoint save_path (or save_path-<step>)
        and returns its prefix; with write_state, records it in the directory's state file
        (latest_filename, default 'checkpoint') and deletes checkpoints beyond max_to_keep; with
        write_meta_graph, writes the graph's MetaGraphDef to <prefix>.<meta_graph_suffix>."""
        self.build()
        latest_filename = latest_filename or checkpoint_management.DEFAULT_STATE_FILENAME
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = _global_step_value(sess, global_step)
            step = f"{int(global_step):08d}" if self._pad_step_number else f"{int(global_step)}"
            checkpoint_file = f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                                 f"'{save_path}'")
        if not hasattr(sess, "run") or not hasattr(sess, "graph"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_path_parent = os.path.dirname(save_path)
        if self._is_empty:
            return None
        if save_path_parent and not os.path.isdir(save_path_parent):
            # As TF 2's: the last directory is made when the one holding it exists
            if not os.path.isdir(os.path.dirname(os.path.abspath(save_path_parent))):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
            os.makedirs(save_path_parent, exist_ok=True)
        names = list(self._vars)
        values = sess.run([[unwrap(p) for p in v] if isinstance(v, list) else unwrap(v)
                           for v in (self._vars[n] for n in names)])
        tensors = {}
        for name, value in zip(names, values):
            parts = self._vars[name]
            tensors[name] = value if not isinstance(parts, list) else checkpoint_bundle.Sliced(
                _slice_info(parts[0]).full_shape, [(_slice_info(p).var_offset, x) for p, x in zip(parts, value)])
        checkpoint_bundle.write_bundle(checkpoint_file, tensors)
        if write_state:
            self._record_last_checkpoint(checkpoint_file)
            checkpoint_management.update_checkpoint_state(
                save_path_parent, checkpoint_file, all_model_checkpoint_paths=self.last_checkpoints,
                latest_filename=latest_filename, save_relative_paths=self._save_relative_paths)
            self._maybe_delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph:
            try:
                self.export_meta_graph(f"{checkpoint_file}.{meta_graph_suffix}",
                                       strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)
            except NotExportableError as e:  # the checkpoint is saved; only the graph cannot be
                if not getattr(self, "_said_no_meta", False):  # once per Saver, not at every save
                    self._said_no_meta = True
                    _log.warning("Saver.save: %s.%s not written (the checkpoint is saved): %s", checkpoint_file,
                                 meta_graph_suffix, str(e).splitlines()[0])
        return checkpoint_file

    # ---------------------------------------------------------------- restore
    def restore(self, sess, save_path):
        """Writes the checkpoint's values into the variables in sess. NotFoundError if a variable
        is missing from the checkpoint, InvalidArgumentError if a dtype or shape differs,
        DataLossError if a file is damaged; in every case no variable is changed."""
        self.build()
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_management.checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        reader = checkpoint_bundle.BundleReader(save_path)
        values = []
        for name, var in self._vars.items():
            entry = reader.entries.get(name)
            if entry is None:
                raise _restore_error(errors.NotFoundError, f"Key {name} not found in checkpoint",
                                     "a Variable name or other graph key that is missing")
            stored = checkpoint_bundle.dtype_of_enum(entry.dtype_enum, name, reader.filename)
            parts = var if isinstance(var, list) else [var]
            for p in parts:
                if stored != p.dtype:
                    raise _restore_error(errors.InvalidArgumentError,
                                         f"tensor_name = {name}; expected dtype {p.dtype.name} does not equal "
                                         f"original dtype {stored.name}",
                                         "a mismatch between the current graph and the graph")
                full = _slice_info(p).full_shape if isinstance(var, list) else p.shape.as_list()
                if list(entry.shape) != full:
                    raise _restore_error(errors.InvalidArgumentError,
                                         f"Assign requires shapes of both tensors to match. lhs shape= {full} rhs "
                                         f"shape= {list(entry.shape)} (variable {name})",
                                         "a mismatch between the current graph and the graph")
            for p in parts:
                info = _slice_info(p) if isinstance(var, list) else None
                values.append((p, reader.get_tensor(name) if info is None else
                               reader.get_tensor(name, info.var_offset, info.var_shape)))
        for var, value in values:
            sess.write_variable(var, value)



def _imported_saver(meta, graph, import_scope, variables):
    """The Saver of an imported meta graph: over the variables its SaverDef's subgraph restores,
    or over all global variables if it has no SaverDef; None if there are no variables."""
    from pygrad.tf_protos import SaverDef
    if not meta.HasField("saver_def"):
        if graph.get_collection(GraphKeys.GLOBAL_VARIABLES, import_scope):
            return Saver()
        _log.info("Saver not created because there are no variables in the graph to restore")
        return None
    saver_def = SaverDef()
    saver_def.CopyFrom(meta.saver_def)
    for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        setattr(saver_def, field, prepend_name_scope(getattr(saver_def, field), import_scope))
    by_op = {v.op.name: v for v in variables.values()}
    var_list = {}
    for key, spec, node in sorted(saver_graph.restored_variables(meta.graph_def, meta.saver_def)):
        name = prepend_name_scope(node, import_scope)
        var = by_op[name] if name in by_op else graph.get_tensor_by_name(name + ":0")
        if not spec:
            var_list[key] = var
            continue
        if _slice_info(var) is None:  # a part restored by a slice: the slice says which
            var._save_slice_info = SaveSliceInfo.from_spec(key, spec)
        var_list.setdefault(key, []).append(var)
    return Saver(var_list=var_list or None, saver_def=saver_def, name=import_scope)


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Builds a MetaGraphDef (or the .meta file named) into the default graph under import_scope
    (meta_graph.import_scoped_meta_graph: its ops, its collections, without the savers'
    save/restore subgraphs) and returns a Saver of its variables, None if it has none. kwargs:
    input_map and restore_collections_predicate. Nothing of a failed import stays in the graph."""
    unknown = set(kwargs) - {"input_map", "restore_collections_predicate"}
    if unknown:
        raise TypeError(f"import_meta_graph() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    graph = get_default_graph()
    with graph.rollback_on_error():
        meta, variables = meta_graph.import_scoped_meta_graph(meta_graph_or_file, clear_devices, import_scope, **kwargs)
        return _imported_saver(meta, graph, import_scope, variables)
