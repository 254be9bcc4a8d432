"""Partitioned variables (TF1's tf.fixed_size_partitioner and its kin, PartitionedVariable): one
variable stored as parts split along one axis, `<name>/part_0`, `<name>/part_1`, ..., each knowing
which slice of the whole it holds (SaveSliceInfo), so that a checkpoint stores the whole under
`<name>` as TF does and parts restore across different partitionings."""
import math

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import identity
from pygrad.ops.manip_ops import concat, split
from pygrad.shapes import as_shape

# ---------------------------------------------------------------- partitioners: (shape, dtype) -> partitions


def _element_size(dtype, bytes_per_string_element):
    dtype = dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype == dtypes.string else dtype.size


def fixed_size_partitioner(num_shards, axis=0):
    """num_shards parts along axis (fewer if the axis is shorter)."""
    def _partitioner(shape, dtype=None, **unused):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, as_shape(shape).as_list()[axis])
        return partitions
    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16, max_shards=None):
    """As many parts along axis as keep each under max_shard_bytes (at most max_shards; one row per
    part at the least)."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(f"Both max_shard_bytes and bytes_per_string_element must be positive. Currently, "
                         f"max_shard_bytes is {max_shard_bytes} and bytes_per_string_element is "
                         f"{bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        shape = as_shape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        dims = shape.as_list()
        bytes_per_slice = 1.0 * (shape.num_elements() / dims[axis]) * _element_size(dtype, bytes_per_string_element)
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        shards = int(math.ceil(1.0 * dims[axis] / slices_per_shard))
        if max_shards:
            shards = min(max_shards, shards)
        partitions = [1] * len(dims)
        partitions[axis] = shards
        return partitions
    return _partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10, bytes_per_string_element=16):
    """Parts of at least min_slice_size bytes, at most max_partitions of them (one at the least)."""
    def _partitioner(shape, dtype):
        shape = as_shape(shape)
        if axis >= shape.ndims:
            raise ValueError(f"Cannot partition variable along axis {axis} when shape is only {shape}")
        total = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * shape.ndims
        partitions[axis] = max(1, min(shape.as_list()[axis], max_partitions, int(math.ceil(total / min_slice_size))))
        return partitions
    return _partitioner


# ---------------------------------------------------------------- the slices


class SaveSliceInfo:
    """Which slice of a full variable a part holds: full_name (the checkpoint key), full_shape,
    var_offset, var_shape (TF's Variable.SaveSliceInfo)."""

    def __init__(self, full_name=None, full_shape=None, var_offset=None, var_shape=None, save_slice_info_def=None,
                 import_scope=None):
        if save_slice_info_def is not None:
            from pygrad.graph import prepend_name_scope
            full_name = prepend_name_scope(save_slice_info_def.full_name, import_scope)
            full_shape, var_offset, var_shape = (list(getattr(save_slice_info_def, f)) for f in
                                                 ("full_shape", "var_offset", "var_shape"))
        self.full_name, self.full_shape = full_name, list(full_shape)
        self.var_offset, self.var_shape = list(var_offset), list(var_shape)

    @classmethod
    def from_spec(cls, full_name, spec):
        """The slice a shape-and-slice string names: 'full shape offset,length:...' ('-' for a whole
        dimension)."""
        *full, dims = spec.split(" ")
        full = [int(d) for d in full]
        extents = [(0, n) if d == "-" else tuple(int(x) for x in d.split(",")) for d, n in zip(dims.split(":"), full)]
        if len(extents) != len(full):
            raise ValueError(f"slice spec '{spec}' of {full_name}: {len(extents)} extents for rank {len(full)}")
        return cls(full_name, full, [o for o, _ in extents], [n for _, n in extents])

    @property
    def spec(self):
        """The shape-and-slice string of SaveV2/RestoreV2: 'full shape offset,length:offset,length'."""
        dims = ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape))
        return " ".join(str(d) for d in self.full_shape) + " " + dims

    def to_proto(self, export_scope=None):
        from pygrad.graph import strip_name_scope
        from pygrad.tf_protos import SaveSliceInfoDef
        if export_scope and not self.full_name.startswith(export_scope):
            return None
        return SaveSliceInfoDef(full_name=strip_name_scope(self.full_name, export_scope), full_shape=self.full_shape,
                                var_offset=self.var_offset, var_shape=self.var_shape)


def slice_dim_and_count(partitions, shape):
    """(the axis, the number of parts) of a partitioner's answer, checked as TF checks it."""
    if not isinstance(partitions, (list, tuple)):
        raise ValueError(f"partitioner must return a list or tuple, but saw: {partitions}")
    if len(partitions) != shape.ndims:
        raise ValueError(f"partitioner returned a partition list that does not match the Variable's rank: "
                         f"{partitions} vs. {shape}")
    if any(p < 1 for p in partitions):
        raise ValueError(f"partitioner returned zero partitions for some axes: {partitions}")
    axes = [i for i, p in enumerate(partitions) if p > 1]
    if len(axes) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, partitioning: "
                         f"{list(partitions)}")
    return (axes[0], partitions[axes[0]]) if axes else (0, 1)


def iter_slices(full_shape, num_slices, slice_dim):
    """(offset, shape) of each part: equal parts, the first ones one longer when the axis does not divide."""
    excess, size = full_shape[slice_dim] % num_slices, full_shape[slice_dim] // num_slices
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = size + (i < excess)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


class PartitionInfo:
    """What an initializer learns of the part it fills (TF's _PartitionInfo): the full shape and the
    part's offset, so a variance-scaling initializer scales by the whole variable's fans."""

    def __init__(self, full_shape, var_offset):
        self.full_shape, self.var_offset = list(full_shape), list(var_offset)


# ---------------------------------------------------------------- the variable


class PartitionedVariable:
    """A variable held as parts along one axis. Iterating gives the parts (the Variables, in the
    collections and seen by optimizers); used as a tensor it is their concatenation, built anew where
    it is used (`<name>/ConcatPartitions/concat`, then an identity named `<name>`) outside any
    control dependencies."""

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        if any(p < 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        missing = [v.name for v in variable_list if getattr(v, "_save_slice_info", None) is None]
        if missing:
            raise ValueError(f"All variables must have a save_slice_info available: {missing}")
        self._variable_list = sorted(variable_list, key=lambda v: v._save_slice_info.var_offset)
        self._name, self._shape, self._dtype = name, as_shape(shape), dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self):
        if len(self._partition_axes()) > 1:
            raise ValueError(f"Cannot get a length for {len(self._partition_axes())} > 1 partition axes")
        return len(self._variable_list)

    def _partition_axes(self):
        return [i for i, p in enumerate(self._partitions) if p > 1] or [0]

    def as_tensor(self):
        graph = get_default_graph()
        with graph.control_dependencies(None):
            if len(self._variable_list) == 1:
                with graph.name_scope(None):
                    return identity(self._variable_list[0], name=self._name)
            with graph.name_scope(self._name + "/ConcatPartitions/"):
                whole = concat(self._variable_list, self._partition_axes()[0])
            with graph.name_scope(None):
                return identity(whole, name=self._name)

    _as_graph_element = as_tensor

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self):
        return self._shape

    def _get_variable_list(self):
        return self._variable_list

    def _get_partitions(self):
        return self._partitions

    def _assign_each(self, method, value, **kwargs):
        if isinstance(value, (list, PartitionedVariable)):
            values = list(value)
            if len(values) != len(self._variable_list):
                raise ValueError(f"{self._name}: {len(values)} values for {len(self._variable_list)} partitions")
        else:
            axis = self._partition_axes()[0]
            values = split(value, [v.shape.as_list()[axis] for v in self._variable_list], axis=axis)
        return [getattr(v, method)(x, **kwargs) for v, x in zip(self._variable_list, values)]

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._assign_each("assign", value, use_locking=use_locking, name=name)

    def assign_add(self, value, use_locking=False, name=None, read_value=True):
        return self._assign_each("assign_add", value, use_locking=use_locking, name=name)

    def assign_sub(self, value, use_locking=False, name=None, read_value=True):
        return self._assign_each("assign_sub", value, use_locking=use_locking, name=name)

    def __repr__(self):
        return f"<PartitionedVariable '{self._name}' shape={self._shape} parts={len(self._variable_list)}>"
