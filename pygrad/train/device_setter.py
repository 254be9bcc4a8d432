"""tf.train.replica_device_setter and the placement strategies of tf.contrib.training, as
TensorFlow 1's device_setter.py: the device function of a between-graph replicated program,
putting variables on the parameter-server tasks and every other op on the worker.

The devices are recorded on the ops as TF records them (see pygrad/device.py); a session runs
them all in this process."""
import hashlib

import numpy as np

from pygrad.device import DeviceSpec
from pygrad.train.server_lib import ClusterSpec

# The op types TF places on a ps task: its variables and mutable tables.
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
                   "BoostedTreesQuantileStreamResourceHandleOp", "ResourceConditionalAccumulator",
                   "DecisionTreeResource")


class _RoundRobinStrategy:
    """Task 0, 1, ..., num_tasks - 1, 0, ... for the ps ops in the order they are built."""

    def __init__(self, num_tasks):
        self._num_tasks, self._next = num_tasks, 0

    def __call__(self, unused_op):
        task, self._next = self._next, (self._next + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """The ps task with the least load so far (the lowest index on a tie); load_fn(op) is what
    the op adds to its task's load (byte_size_load_fn: the variable's bytes)."""

    def __init__(self, num_tasks, load_fn):
        self._num_tasks, self._load_fn = num_tasks, load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op):
        task = int(np.argmin(self._ps_loads))
        self._ps_loads[task] += self._load_fn(op)
        return task


class RandomStrategy:
    """A ps task from the MD5 hash of "<op name>_<seed>": the same task for the same name in
    every run and process."""

    def __init__(self, num_ps_tasks, seed=0):
        self._num_tasks, self._seed = num_ps_tasks, seed

    def __call__(self, op):
        digest = hashlib.md5(f"{op.name}_{self._seed}".encode("utf-8")).hexdigest()
        return int(int(digest, 16) % self._num_tasks)


def byte_size_load_fn(op):
    """The bytes of op's single output (a variable's value); ValueError for an op with several
    outputs or an output whose shape is not fully known."""
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op} must have a single output")
    output = op.outputs[0]
    shape = output.shape
    if not shape.is_fully_defined():
        raise ValueError(f"Shape {shape} of {output.name} is not fully defined")
    return shape.num_elements() * output.dtype.size


class _ReplicaDeviceChooser:
    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks, self._ps_device, self._worker_device = ps_tasks, ps_device, worker_device
        self._merge_devices, self._ps_ops, self._ps_strategy = merge_devices, ps_ops, ps_strategy

    def device_function(self, op):
        """A ps op: ps_device with the strategy's task (unless the op's own device names another
        job); any other op: worker_device. The op's device so far (from inner scopes) wins field by
        field; without merge_devices an op with a device keeps it."""
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.make_merged_spec(current).to_string()
        return DeviceSpec.from_string(self._worker_device or "").make_merged_spec(current).to_string()


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker", merge_devices=True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for tf.device: variables (ps_ops, default STANDARD_PS_OPS) go to the ps
    job's tasks, round-robin or by ps_strategy(op); every other op to worker_device. With a
    cluster (ClusterSpec, dict or ClusterDef) the ps job's size is ps_tasks. None (which
    tf.device takes as "no device") when there are no ps tasks, as TF's."""
    if cluster is not None:
        spec = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)).as_dict()
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in spec or spec[ps_job] is None:
            return None
        ps_tasks = len(spec[ps_job])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    return _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops,
                                 ps_strategy).device_function
