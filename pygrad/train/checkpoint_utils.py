"""Reading checkpoints outside a Saver, as TensorFlow's checkpoint_utils.py and
py_checkpoint_reader: NewCheckpointReader / load_checkpoint, list_variables, load_variable and
init_from_checkpoint."""
import os

from pygrad.graph import get_default_graph
from pygrad.ops import state_ops
from pygrad.ops.array_ops import constant
from pygrad.ops.partitioned_variables import PartitionedVariable
from pygrad.ops.variable_scope import variable_store
from pygrad.shapes import as_shape
from pygrad.train import checkpoint_bundle, checkpoint_management


class CheckpointReader:
    """The tensors of one checkpoint (tf.train.NewCheckpointReader)."""

    def __init__(self, filepattern):
        self._bundle = checkpoint_bundle.BundleReader(os.fspath(filepattern))

    def has_tensor(self, name):
        return name in self._bundle.entries

    def get_tensor(self, name):
        """The tensor's value as a numpy array (a numpy scalar for a scalar, as TF)."""
        value = self._bundle.get_tensor(name)
        return value[()] if value.ndim == 0 else value

    def get_variable_to_shape_map(self):
        return {name: list(e.shape) for name, e in self._bundle.entries.items()}

    def get_variable_to_dtype_map(self):
        return {name: self._bundle.dtype(name) for name in self._bundle.entries}

    def debug_string(self):
        lines = [f"{name} ({self._bundle.dtype(name).name}) {list(e.shape)}"
                 for name, e in sorted(self._bundle.entries.items())]
        return ("\n".join(lines) + "\n").encode("utf-8")


def NewCheckpointReader(filepattern):  # noqa: N802  (TF's name)
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file):
    ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(ckpt_dir_or_file):
        return checkpoint_management.latest_checkpoint(ckpt_dir_or_file)
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader of the checkpoint, or of a directory's latest one."""
    filename = _checkpoint_filename(ckpt_dir_or_file)
    if filename is None:
        raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}")
    return CheckpointReader(filename)


def load_variable(ckpt_dir_or_file, name):
    name = name.removesuffix(":0")
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of the checkpoint's tensors, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def _is_part(store, name):
    """Whether name is a part of a partitioned variable of store (set through its whole)."""
    return "/part_" in name and isinstance(store.get(name.rsplit("/part_", 1)[0]), PartitionedVariable)


def _set_initializer(var, reader, tensor_name):
    """Makes var's initializer assign the checkpoint's value of tensor_name: for a partitioned
    variable (or a list of its parts), each part's initializer its slice."""
    if not isinstance(var, (PartitionedVariable, list, tuple)):
        return _set_part_initializer(var, reader, tensor_name)
    parts = list(var)
    wholes = {p._save_slice_info.full_name for p in parts}
    if len(wholes) > 1:
        raise ValueError(f"Slices must all be from the same tensor: {' != '.join(sorted(wholes))}")
    for p in parts:
        _set_part_initializer(p, reader, tensor_name, p._save_slice_info)


def _set_part_initializer(var, reader, tensor_name, info=None):
    value = reader.get_tensor(tensor_name) if info is None else \
        reader._bundle.get_tensor(tensor_name, info.var_offset, info.var_shape)
    stored = reader.get_variable_to_dtype_map()[tensor_name]
    if stored != var.dtype:
        raise ValueError(f"init_from_checkpoint: variable {var.name} has dtype {var.dtype.name}, tensor "
                         f"{tensor_name} in the checkpoint {stored.name}")
    graph = var.graph
    with graph.as_default(), graph.control_dependencies(None), graph.name_scope(var.op.name + "/"):
        init = constant(value, dtype=var.dtype, name="checkpoint_initializer")
        var._initializer_op = state_ops.assign(var.value(), init, name="Assign_from_checkpoint").op
        var._initial_value = init


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Replaces the initializers of variables with the values of a checkpoint, as TF1's
    tf.train.init_from_checkpoint: assignment_map maps a checkpoint name to a variable (or its
    get_variable name), or a checkpoint scope 'old/' to a scope 'new/' (every get_variable
    variable under new/ is loaded from old/ plus the rest of its name; '/' stands for the root).
    The checkpoint is read when this is called."""
    reader = load_checkpoint(ckpt_dir_or_file)
    variable_map = reader.get_variable_to_shape_map()
    items = assignment_map.items() if hasattr(assignment_map, "items") else assignment_map
    store = variable_store(get_default_graph())
    for tensor_name, current in sorted(items, key=lambda pair: pair[0]):
        if isinstance(current, (state_ops.Variable, PartitionedVariable, list, tuple)):
            var = current
        elif isinstance(current, str):
            var = store.get(current)
        else:
            raise TypeError(f"init_from_checkpoint: {current!r} is neither a variable nor a name")
        if var is not None:
            if tensor_name not in variable_map:
                raise ValueError(f"Tensor {tensor_name} is not found in {ckpt_dir_or_file} checkpoint "
                                 f"{variable_map}")
            shape = var[0]._save_slice_info.full_shape if isinstance(var, (list, tuple)) else var.shape
            if not as_shape(shape).is_compatible_with(variable_map[tensor_name]):
                raise ValueError(f"Shape of variable {getattr(var, 'name', tensor_name)} ({shape}) doesn't match with "
                                 f"shape of tensor "
                                 f"{tensor_name} ({variable_map[tensor_name]}) from checkpoint reader.")
            _set_initializer(var, reader, tensor_name)
            continue
        scopes = current[:current.rindex("/")] if "/" in current else ""
        if not tensor_name.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {scopes} should map to scope only "
                             f"{tensor_name}. Should be 'scope/': 'other_scope/'.")
        for var_name in sorted(n for n in store if (not scopes or n.startswith(scopes + "/")) and
                               not _is_part(store, n)):
            full = var_name[len(scopes):]
            if current != "/":
                full = full[1:]
            if tensor_name != "/":
                full = tensor_name + full
            full = full.removesuffix("/")
            if full not in variable_map:
                raise ValueError(f"Tensor {full} ({var_name[len(scopes) + 1:]} in {tensor_name}) is not found in "
                                 f"{ckpt_dir_or_file} checkpoint")
            _set_initializer(store[var_name], reader, full)


__all__ = ["CheckpointReader", "NewCheckpointReader", "init_from_checkpoint", "list_variables", "load_checkpoint",
           "load_variable"]
