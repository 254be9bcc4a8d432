"""A traced Session.run (RunOptions.trace_level above NO_TRACE, with a RunMetadata): the ops it
ran, when, and on which thread, as TF's StepStats (tensorflow/core/framework/step_stats.proto) in
the run's RunMetadata.step_stats, one DeviceStepStats for pygrad's one device.

The plan times its own steps (Plan.run_traced: each step's start and end on the monotonic clock
and the OS thread that ran it); a step is the op it lowers, and a fused step (fusion.py) the ops it
computes. The consecutive steps of one op are one NodeExecStats, as TF's executor runs a node once;
an op in a loop has one per iteration. The ops Python runs (host.py) are timed in Python around
their functions. Times are moved to the wall clock, as TF's all_start_micros is, and kept in
nanoseconds too (the *_nanos fields). Ops without a step take no time and are not listed: constants,
variables, no-ops, and the reshapes and identities that share their input's buffer.

Each NodeExecStats has TF's fields: node_name, the start and relative ends (op_start_rel is 0: a
step has no scheduling of its own), thread_id, timeline_label as TF's executor writes it,
"name = Type(input, ...)" with the inputs as a NodeDef names them ("op" for output 0, "op:i"
otherwise; control inputs left out), and an output per output of the op, with its dtype, shape and
bytes (allocator "cpu"). A fused step is named by its first op, and its label names the group:
"name, name2 = Type+Type2(the inputs from outside the group)", so that TF's own label parser
(timeline.py's "(.*) = (.*)\\((.*)\\)") reads the group's op types and inputs.
"""
import threading
import time

from pygrad.messages import DATA_TYPE

DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
ALLOCATOR = "cpu"  # the name TF's CPU allocator reports


class Trace:
    """The op executions of one traced Session.run, in the order they ran."""

    def __init__(self):
        self._wall = time.time_ns() - time.monotonic_ns()  # monotonic -> wall clock
        self._nodes = []  # [start ns, end ns, thread, ops (first op first), {tensor: Spec} or None]
        self._last = None  # (plan, step) of the last node from a plan: its op's next step extends it

    def plan_run(self, compiled, rows):
        """Adds the steps of one plan run: rows from compiled.plan.run_traced."""
        for step, thread, start, end in rows.tolist():
            ops = (compiled.step_ops[step], *compiled.step_fused[step])
            last = self._last
            if last is not None and last[0] is compiled and last[1] < step and self._nodes[-1][3] == ops:
                self._nodes[-1][1] = end
            else:
                self._nodes.append([start, end, thread, ops, compiled.specs])
            self._last = (compiled, step)

    def host_op(self, op, start, end, values):
        """Adds a host op's call (host.call_host) from start to end (time.monotonic_ns()) that gave values."""
        self._nodes.append([start, end, threading.get_native_id(), (op,), None, values])
        self._last = None

    def fill(self, run_metadata):
        """Replaces run_metadata's content (a RunMetadata of pygrad's or of TF's classes) with this run's
        step_stats, as TF's Session.run parses the run's RunMetadata into it."""
        from pygrad import tf_protos
        out = tf_protos.RunMetadata()
        dev = out.step_stats.dev_stats.add(device=DEVICE)
        dev.thread_names[threading.get_native_id()] = threading.current_thread().name
        for start, end, thread, ops, specs, *values in self._nodes:
            n = dev.node_stats.add(node_name=ops[0].name, thread_id=thread, timeline_label=label(ops))
            n.all_start_nanos = start + self._wall
            n.op_end_rel_nanos = n.all_end_rel_nanos = end - start
            n.all_start_micros = n.all_start_nanos // 1000  # (TF's micros: differences of truncated times)
            n.op_end_rel_micros = n.all_end_rel_micros = (end + self._wall) // 1000 - n.all_start_micros
            for slot, (dtype, shape) in enumerate(_outputs(ops[0], specs, values[0] if values else None)):
                d = n.output.add(slot=slot).tensor_description
                d.dtype = DATA_TYPE.get(dtype.name, 0)
                for size in shape:
                    d.shape.dim.add(size=size)
                if dtype.code is not None:
                    nbytes = int(dtype.size) * _numel(shape)
                    d.allocation_description.requested_bytes = d.allocation_description.allocated_bytes = nbytes
                    d.allocation_description.allocator_name = ALLOCATOR
        run_metadata.ParseFromString(out.SerializeToString())


def label(ops):
    """TF's timeline_label of a node executing ops (one op, or a fused group, first op first)."""
    inside = {t for op in ops for t in op.outputs}
    inputs = list(dict.fromkeys(t for op in ops for t in op.inputs if t not in inside))
    names = ", ".join(op.name for op in ops)
    types = "+".join(op.type for op in ops)
    return f"{names} = {types}({', '.join(input_name(t) for t in inputs)})"


def input_name(t):
    """A tensor as a NodeDef's input names it: "op" for output 0, "op:i" for output i."""
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _outputs(op, specs, values):
    """(dtype, shape) of each output of op: from the plan's specs, or from a host op's values."""
    if specs is not None:
        return [(specs[t].dtype, tuple(specs[t].shape.dims)) for t in op.outputs if t in specs]
    if values is None:
        return []
    return [(t.dtype, tuple(getattr(v, "shape", ()))) for t, v in zip(op.outputs, values)]


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n
