"""tensorflow.python.client.timeline: a traced run's StepStats (RunMetadata.step_stats of a run
with RunOptions(trace_level=FULL_TRACE)) as a Chrome trace, the JSON that chrome://tracing and
Perfetto open.

The layout is TF's timeline.py's: a process "Allocators", then per device a process
"<device> Compute" with one complete ("X") event per node execution, named by its op type, with
args {name, op, input0, input1, ...} parsed from its timeline_label ("name = Type(a, b)"), and a
process "<device> Tensors". Nodes go to lanes (tids) so that no two in one lane overlap, as TF's
_assign_lanes does (pygrad runs a plan's steps one after another, so there is one lane unless
runs overlap). With show_dataflow, an input made on another lane gets a flow arrow ("s" and "t"
events) from its producer's end to its consumer's start; with show_memory, each output gets an
object ("N", "O", "D" events) for its lifetime and the "Allocators" process a counter of the
bytes live per allocator. Times are microseconds (all_start_micros).
"""
import json
import re

_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")


def _parse_label(label):
    """(node name, op type, [input names]) of a timeline_label "name = Type(a, b)"."""
    m = _LABEL.match(label)
    if m is None:
        return "unknown", "unknown", []
    name, op, inputs = m.groups()
    return name, op, inputs.split(", ") if inputs else []


class Timeline:
    """A Chrome trace of step_stats (a StepStats message: pygrad's or TensorFlow's class);
    graph is accepted, as TF's, and not used."""

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False, op_time="schedule"):
        """The trace as a JSON string (indented, as TF's)."""
        if op_time not in ("schedule", "gpu", "all"):
            raise ValueError(f"op_time must be 'schedule', 'gpu' or 'all', got {op_time!r}")
        meta, events = [], []
        pid_alloc = 0
        meta.append({"name": "process_name", "ph": "M", "pid": pid_alloc, "args": {"name": "Allocators"}})
        # tensor name -> [end, pid, tid, bytes, allocator, object id, start, last use, tensors pid, NodeOutput]
        produced, flow = {}, -1
        for k, dev in enumerate(self._step_stats.dev_stats):
            pid, tensors_pid = 2 * k + 1, 2 * k + 2
            meta.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": dev.device + " Compute"}})
            meta.append({"name": "process_name", "ph": "M", "pid": tensors_pid,
                         "args": {"name": dev.device + " Tensors"}})
            lanes = _lanes(dev.node_stats)
            for tid in sorted(set(lanes)):
                meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"lane {tid}"}})
            for ns, tid in zip(dev.node_stats, lanes):
                start, end = ns.all_start_micros, ns.all_start_micros + ns.all_end_rel_micros
                for i, out in enumerate(ns.output):
                    name = ns.node_name if i == 0 else f"{ns.node_name}:{i}"
                    alloc = out.tensor_description.allocation_description
                    produced[name] = [end, pid, tid, alloc.requested_bytes, alloc.allocator_name, len(produced),
                                      start, end, tensors_pid, out]
            for ns, tid in zip(dev.node_stats, lanes):
                start, end = ns.all_start_micros, ns.all_start_micros + ns.all_end_rel_micros
                _, op, inputs = _parse_label(ns.timeline_label)
                args = {"name": ns.node_name, "op": op, **{f"input{i}": n for i, n in enumerate(inputs)}}
                events.append({"ph": "X", "cat": "Op", "name": op, "pid": pid, "tid": tid, "ts": start,
                               "dur": ns.all_end_rel_micros, "args": args})
                for n in inputs:
                    p = produced.get(n)
                    if p is None:
                        continue
                    p[7] = max(p[7], end - 1)
                    if show_dataflow and (p[1], p[2]) != (pid, tid):  # (arrows along a lane clutter it)
                        flow += 1
                        events.append({"ph": "s", "cat": "DataFlow", "name": n, "pid": p[1], "tid": p[2],
                                       "ts": p[0], "id": flow})
                        events.append({"ph": "t", "cat": "DataFlow", "name": n, "pid": pid, "tid": tid,
                                       "ts": start, "id": flow})
        if show_memory:
            events += _memory_events(produced, pid_alloc)
        return json.dumps({"traceEvents": meta + events}, indent=4, separators=(",", ": "))


def _lanes(node_stats):
    """The lane of each node: the first whose last node ended before it starts (TF's _assign_lanes)."""
    ends, out = [0], []
    for ns in node_stats:
        for i, t in enumerate(ends):
            if ns.all_start_micros > t:
                break
        else:
            i = len(ends)
            ends.append(0)
        ends[i] = ns.all_start_micros + ns.all_end_rel_micros
        out.append(i)
    return out


def _memory_events(produced, pid_alloc):
    """Each tensor's object (created, described, deleted) and each allocator's bytes live over time."""
    events, changes = [], {}
    for name, (end, _, tid, nbytes, allocator, oid, start, last, tensors_pid, out) in produced.items():
        desc = str(out.tensor_description).replace('"', "")
        events.append({"ph": "N", "cat": "Tensor", "name": name, "pid": tensors_pid, "tid": tid, "ts": start,
                       "id": oid})
        events.append({"ph": "O", "cat": "Tensor", "name": name, "pid": tensors_pid, "tid": tid, "ts": end - 1,
                       "id": oid, "args": {"snapshot": {"tensor_description": desc}}})
        events.append({"ph": "D", "cat": "Tensor", "name": name, "pid": tensors_pid, "tid": 0, "ts": last,
                       "id": oid})
        changes.setdefault(allocator, []).extend([(start, nbytes, name), (last, -nbytes, name)])
    for allocator, deltas in changes.items():
        total = 0
        for ts, delta, _ in sorted(deltas):
            total += delta
            events.append({"ph": "C", "cat": "Memory", "name": allocator, "pid": pid_alloc, "tid": 0, "ts": ts,
                           "args": {allocator: total}})
    return events
