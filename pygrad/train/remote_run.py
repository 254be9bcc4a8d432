"""A worker's Session.run when the variables placed on the cluster's parameter-server tasks
(`/job:ps/task:N`, by tf.device or replica_device_setter) live in other processes.

TF1 partitions such a run by device; what a partition changes that a program can observe is
where state lives. So pygrad runs every op on the worker except the ops that write a ps
variable (Assign, AssignAdd, the optimizers' Apply* updates, ...), which run on its ps task,
and a run goes in stages:
1. pull: the ps variables the run reads (by data, or by tf.is_variable_initialized) come from
   their tasks, one call per task, into the session's own copies;
2. the worker computes what the writing ops take (gradients, new values, hyperparameters) and
   every fetch that does not wait for them, in one local run in which the writing ops count as
   run elsewhere (host.ran_before): a control dependency on them does not run them here;
3. the writing ops go to their tasks in one call per task and run in the graph's order, a
   task's batch applied atomically (cluster_service.TaskService);
4. the fetches that wait for them (the train op, a fetched update's value) follow, locally, with
   the written ps variables pulled again.
A writing op whose input is computed on the worker from another writing op's output would need
one more round trip; it is refused, naming the op.
"""
import weakref

import numpy as np

from pygrad import errors
from pygrad.device import DeviceSpec
from pygrad.graph import Tensor, reachable
from pygrad.host import RAN_ELSEWHERE
from pygrad.registry import VARIABLE


def _plain(value):
    return value is None or isinstance(value, (bool, int, float, str, bytes)) or \
        isinstance(value, tuple) and all(_plain(v) for v in value)


def ps_task(op):
    """The ps task index of a variable op placed on /job:ps, else None."""
    if not op.device:
        return None
    spec = DeviceSpec.from_string(op.device)
    return (spec.task or 0) if spec.job == "ps" else None


class _Signature:
    """What the stages of one run signature do, worked out once."""

    def __init__(self, elements, feed_tensors, local_tasks):
        fed = set(feed_tensors)
        needed = _needed(elements, fed)
        remote = {op for op in needed if op.opdef.lowering == VARIABLE and ps_task(op) is not None
                  and ps_task(op) not in local_tasks}
        self.writes = sorted((op for op in needed if _writes_remote(op, remote)), key=lambda o: o._id)
        writing = self.writing = frozenset(self.writes)
        # ps variables read by data (not as a writing op's variable) or by is_variable_initialized
        read = {_op(e) for e in elements} & remote
        for op in needed - writing:
            read.update(t.op for t in op.inputs if t.op in remote)
            v = op.attrs.get("variable") if op.type == "IsVariableInitialized" else None
            if v is not None and v.op in remote:
                read.add(v.op)
        self.pulls = _by_task(read)
        after = reachable(writing, lambda op: _consumers(op, needed, True)) - writing  # what waits for a write
        fed_by_write = reachable(writing, lambda op: _consumers(op, needed, False)) - writing
        self.first = [e for e in elements if _op(e) not in after and _op(e) not in writing]
        self.last = tuple(e for e in elements if _op(e) in after)
        # the writing ops' inputs the worker computes, and how each op finds its inputs on its task
        self.computed, self.batches = [], []
        index = {op: i for i, op in enumerate(self.writes)}
        for op in self.writes:
            attrs = tuple(sorted(op.attrs.items()))
            if not all(_plain(v) for _, v in attrs):
                raise errors.UnimplementedError(None, op, op.error(
                    f"{op.type} writes a variable of /job:ps/task:{ps_task(op.inputs[op.opdef.ref_input].op)} "
                    f"but has attributes that cannot go to another process"))
            inputs = []
            for k, t in enumerate(op.inputs):
                if k in getattr(op.opdef, "local_only_inputs", ()):  # what only its run in one process reads
                    inputs.append(("none",))
                elif t.op in remote:
                    inputs.append(("var", t.op.name, t.dtype.name, tuple(t.shape.as_list())))
                elif t.op in index:
                    inputs.append(("out", index[t.op], t.op.outputs.index(t)))
                else:
                    if t.op in fed_by_write or _reads_after_write(t, remote, writing):
                        raise errors.UnimplementedError(None, op, op.error(
                            f"input {t.name} is computed on the worker after an op of the run that writes what it "
                            f"reads on a ps task; pygrad sends a run's writes to the ps tasks in one round"))
                    if t not in self.computed:
                        self.computed.append(t)
                    inputs.append(("value", self.computed.index(t)))
            controls = tuple(sorted(index[c] for c in _earlier_writes(op, writing) if index[c] < index[op]))
            task = ps_task(op.inputs[op.opdef.ref_input].op)
            # its outputs come back only when the worker reads them (a fetch, an op that waits for it)
            wanted = any(t in elements or any(c in needed and c not in writing for c in t.consumers())
                         for t in op.outputs)
            self.batches.append((task, (op.type, attrs, tuple(inputs), controls, len(op.outputs) if wanted else 0)))
        self.rewritten = _by_task({op.inputs[op.opdef.ref_input].op for op in self.writes})
        self.first_fetches = tuple(self.first) + tuple(t for t in self.computed if t not in self.first)


def _needed(roots, fed):
    return reachable([r.op if isinstance(r, Tensor) else r for r in roots if r not in fed],
                     lambda op: [t.op for t in op.inputs if t not in fed] + list(op.control_inputs))


def _writes_remote(op, remote):
    return op.opdef.ref_input is not None and op.inputs[op.opdef.ref_input].op in remote


def _op(e):
    return e.op if isinstance(e, Tensor) else e


def _consumers(op, needed, controls):
    """The ops of needed that read op's outputs (and, with controls, that wait for op)."""
    return [c for t in op.outputs for c in t.consumers() if c in needed] + \
        ([c for c in needed if op in c.control_inputs] if controls else [])


def _earlier_writes(op, writing):
    """The writing ops op waits for, by control dependencies or data, through any ops."""
    return reachable([op], lambda o: [t.op for t in o.inputs] + list(o.control_inputs)) & writing - {op}


def _reads_after_write(t, remote, writing):
    """Whether computing t (on the worker, before the writes) reads a ps variable that a write it
    waits for (by a control dependency) writes: it would see the value before that write."""
    upstream = reachable([t.op], lambda o: [] if o in writing else [i.op for i in o.inputs] + list(o.control_inputs))
    waits_for = upstream & writing
    read = {i.op for o in upstream - writing for i in o.inputs if i.op in remote}
    return bool(read & {w.inputs[w.opdef.ref_input].op for w in waits_for})


def _by_task(variable_ops):
    out = {}
    for op in sorted(variable_ops, key=lambda o: o._id):
        out.setdefault(ps_task(op), []).append(op)
    return out


class RemoteTarget:
    """The target of a worker task's Server in a cluster with ps tasks: its sessions' runs go
    through here (Session.run). local_ps: {address: server} of the ps tasks this process runs,
    whose variables stay here; the others are reached at the first run that needs them."""

    def __init__(self, cluster_spec, local_ps, timeout):
        self.spec, self.local_ps, self.timeout = cluster_spec, local_ps, timeout
        self._cluster = None
        self._signatures = weakref.WeakKeyDictionary()  # graph -> {(elements, feeds): _Signature}

    @property
    def cluster(self):
        if self._cluster is None:
            from pygrad.train.cluster_service import Cluster
            self._cluster = Cluster(self.spec, self.timeout)
        return self._cluster

    def run(self, session, elements, feed_tensors, arrays, deadline, trace):
        signatures = self._signatures.setdefault(session.graph, {})
        key = (tuple(elements), tuple(feed_tensors))
        sig = signatures.get(key)
        if sig is None:
            local = {k for k in self.spec.task_indices("ps") if self.spec.task_address("ps", k) in self.local_ps}
            sig = signatures[key] = _Signature(elements, feed_tensors, local)
        self._pull(session, sig.pulls)
        if not sig.writes:
            return session._run_elements(elements, feed_tensors, arrays, deadline, trace)
        token = RAN_ELSEWHERE.set(sig.writing)
        try:
            got = session._run_elements(sig.first_fetches, feed_tensors, arrays, deadline, trace)
            values = dict(zip(sig.first_fetches, got))
            outputs = self._write(sig, [values[t] for t in sig.computed])
            for op, outs in zip(sig.writes, outputs):
                values.update(zip(op.outputs, outs))
            if sig.last:
                fed = dict(zip(feed_tensors, arrays))
                fed.update((t, values[t]) for op in sig.writes for t in op.outputs if t in values)
                self._pull(session, sig.rewritten)
                feeds = tuple(fed)
                last = session._run_elements(sig.last, feeds, [fed[t] for t in feeds], deadline, trace)
                values.update(zip(sig.last, last))
        finally:
            RAN_ELSEWHERE.reset(token)
        return [values[e] if isinstance(e, Tensor) else None for e in elements]

    def _pull(self, session, pulls):
        for task, ops in pulls.items():
            got = self.cluster.call(task, "read", [op.name for op in ops])
            for op in ops:
                if op.name in got:
                    session._store.write(op.outputs[0], got[op.name])

    def _write(self, sig, computed):
        """Sends the writing ops to their tasks, in the graph's order, consecutive ops of one task
        in one call; the outputs of every op the worker reads ([] for the others)."""
        outputs, start = [], 0
        while start < len(sig.batches):
            task = sig.batches[start][0]
            end = start
            while end < len(sig.batches) and sig.batches[end][0] == task:
                end += 1
            batch, used = _rebase(sig.batches[start:end], start, computed)
            outputs += self.cluster.call(task, "run", batch, used)
            start = end
        return [[np.require(v, requirements=("C", "A")) for v in outs] for outs in outputs]  # (frames: unaligned)


def _rebase(batches, start, computed):
    """The ops batches[start:] of one task as a batch of its own: outputs and controls numbered
    from start, and only the values it uses (renumbered)."""
    used, ops = [], []
    for _, (type_name, attrs, inputs, controls, n_out) in batches:
        ins = []
        for kind, *where in inputs:
            if kind == "value":
                if computed[where[0]] is None:
                    raise errors.InternalError(None, None, "a value of the run was not computed")
                ins.append(("value", len(used)))
                used.append(computed[where[0]])
            elif kind == "out":
                if where[0] < start:
                    raise errors.UnimplementedError(None, None, f"{type_name} on one ps task reads the output of a "
                                                                f"write on another in the same run")
                ins.append(("out", where[0] - start, where[1]))
            else:
                ins.append((kind, *where))
        ops.append((type_name, attrs, tuple(ins), tuple(c - start for c in controls if c >= start), n_out))
    return tuple(ops), used

