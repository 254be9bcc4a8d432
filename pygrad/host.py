"""Python's part of a run: the ops that run in Python (OpDef(host=...)), at their stage.

- BEFORE ops (a dataset iterator's get_next) bind their next element as feeds before the plan.
- BETWEEN ops (tf.py_func, where, unique) compute their outputs in Python from their inputs'
  values: the run splits into stages. A stage runs what the op's inputs need (itself a run, which
  may have host ops of its own), calls the op's function, and feeds its outputs to what follows.
  Tensors a stage computed that later stages or the fetches also need are fed onward too, so every
  op runs once per Session.run, as in TF.
- AFTER ops act on their inputs' values after the last plan: effects (an iterator's initializer,
  tf.Print, tf.print), which the session runs, and pure values (summaries), which the plan's run
  computes (HostValues).

``plan_host_run`` works out a run of a graph with host ops once per run signature; ``Session``
carries it out, giving each host function the session's HostContext.
"""
import contextlib
import contextvars
import threading
import time

from pygrad import errors
from pygrad.graph import Tensor, reachable
from pygrad.registry import AFTER, ALIAS, BEFORE, BETWEEN, CONST, HOST, VARIABLE, HostError


class HostContext:
    """What a host op's function may use of the session that runs it: state kept per session
    (``state``), runs of other fetches in the same session (``run``) and the time limit of the
    calling thread's run (``deadline``), for a function that waits (a queue's dequeue)."""

    __slots__ = ("_run", "_states", "_local", "_closed")

    def __init__(self, run):
        self._run = run  # Session.run
        self._states = {}
        self._local = threading.local()
        self._closed = False

    def state(self, key, make):
        """The state this session keeps for key (an iterator, a dataset, an op): make() at first use
        (runs on several threads get one state: the first stored wins)."""
        s = self._states.get(key)
        if s is None:
            s = self._states.setdefault(key, make())
            if self._closed:  # made by a run that raced the session's close
                self.close()
        return s

    def run(self, fetches, feed_dict=None):
        """The values of fetches from a run of this session (as Session.run)."""
        return self._run(fetches, feed_dict)

    @property
    def deadline(self):
        """When the calling thread's run must end, in time.monotonic_ns() (0: no limit)."""
        return getattr(self._local, "deadline", 0)

    @contextlib.contextmanager
    def running(self, deadline):
        """Sets the calling thread's deadline for a run (nested runs keep the outer one when they have none)."""
        outer = self.deadline
        self._local.deadline = deadline or outer
        try:
            yield self
        finally:
            self._local.deadline = outer

    def close(self):
        """Wakes what waits on this session's state (a queue's blocked runs), now and later: each
        state's cancel(), where it has one."""
        self._closed = True
        for s in list(self._states.values()):
            cancel = getattr(s, "cancel", None)
            if cancel is not None:
                cancel()


def call_host(ctx, op, values, trace=None):
    """op's host function on its input values (ctx None for a pure value); a HostError becomes
    InvalidArgumentError naming the op and its site. A traced run's step_stats.Trace gets the call."""
    start = time.monotonic_ns() if trace is not None else 0
    try:
        out = op.opdef.host_fn(ctx, op, values)
    except HostError as e:
        raise errors.InvalidArgumentError(None, op, op.error(str(e))) from None
    if trace is not None:
        trace.host_op(op, start, time.monotonic_ns(), out)
    return out


class Stage:
    """One BETWEEN op: the run before it fetches ``fetches`` (the op's inputs, then the
    ``boundary`` tensors later stages need, then its control inputs as targets)."""

    __slots__ = ("op", "fetches", "boundary")

    def __init__(self, op, boundary):
        self.op = op
        self.boundary = tuple(boundary)
        self.fetches = tuple(op.inputs) + self.boundary + tuple(op.control_inputs)


class HostRun:
    __slots__ = ("binders", "stages", "effects", "extra")

    def __init__(self, binders, stages, effects):
        self.binders = binders  # BEFORE ops to bind, in graph order
        self.stages = stages  # Stage per BETWEEN op, in graph order
        self.effects = effects  # AFTER ops the session runs after the last plan
        self.extra = tuple(t for op in effects for t in op.inputs)  # what the last plan fetches for them


# The ops another process runs for the current run (a worker's writes to the variables of its ps
# tasks, train/remote_run.py): a control dependency on one is met without running it here.
RAN_ELSEWHERE = contextvars.ContextVar("pygrad_ran_elsewhere", default=frozenset())


def ran_before(op, fed):
    """Whether op is a BETWEEN op an earlier stage of the run computed (its outputs are fed onward),
    or an op another process runs (RAN_ELSEWHERE): what depends on it, by data or by a control
    dependency, does not run it again."""
    return op.opdef.host_stage == BETWEEN and bool(op.outputs) and all(t in fed for t in op.outputs) or \
        op in RAN_ELSEWHERE.get()


def _needed(roots, fed):
    """The ops a run of roots (tensors or ops) executes, the graph cut at fed tensors."""
    return reachable([r.op if isinstance(r, Tensor) else r for r in roots if r not in fed], lambda op: [
        t.op for t in op.inputs if t not in fed] + [c for c in op.control_inputs if not ran_before(c, fed)])


def _stateful(op):
    """Whether op writes state (a variable, a random generator's) or calls Python: it, or an op of
    its cond's branches or its loop's body."""
    return op.opdef.ref_input is not None or op in op.graph.host_ops or any(
        _stateful(m) for region in op.attrs.get("regions", ()) for m in region.members)


def plan_host_run(graph, elements, feed_tensors):
    fed = set(feed_tensors)
    host = sorted((op for op in graph.host_ops if op in _needed(elements, fed)), key=lambda op: op._id)
    binders = [op for op in host if op.opdef.host_stage == BEFORE and not all(t in fed for t in op.outputs)]
    for op in binders:
        fed.update(op.outputs)
    calls = [op for op in host if op.opdef.host_stage == BETWEEN and not all(t in fed for t in op.outputs)]
    stages = []
    for i, op in enumerate(calls):
        ran = _needed(list(op.inputs) + list(op.control_inputs), fed)
        after = fed | set(op.outputs)
        later_roots = [t for c in calls[i + 1:] for t in c.inputs] + [c for later in calls[i + 1:]
                                                                      for c in later.control_inputs] + list(elements)
        later = _needed(later_roots, after)
        # What the later stages read of what this one computed is fed to them, except a variable (the
        # session's: every stage reads it) and the outputs of an op the later stages run again anyway
        # (a loop whose gradient, behind a control dependency, takes the values it stacks as it runs)
        boundary = []
        for o in later - ran:
            for t in o.inputs:
                if t.op in ran and t not in after and t not in boundary and t.op.opdef.lowering != VARIABLE:
                    boundary.append(t)
        boundary += [e for e in elements if isinstance(e, Tensor) and e.op in ran and e not in after
                     and e not in boundary]
        while True:
            again = _needed(later_roots, after | set(boundary))
            kept = [t for t in boundary if t.op not in again]
            if len(kept) == len(boundary):
                break
            boundary = kept
        twice = sorted((o for o in again & ran if _stateful(o)), key=lambda o: o._id)
        if twice:
            o = twice[0]
            raise errors.UnimplementedError(None, o, o.error(
                f"this op is needed both before {op.type} '{op.name}' and, through a control dependency, after "
                f"it in one run; pygrad would run it twice. Fetch it in a run of its own"))
        stages.append(Stage(op, boundary))
        fed = after | set(boundary)
    effects = [op for op in host if op.opdef.host_stage == AFTER and op in _needed(elements, fed)]
    return HostRun(binders, stages, effects)


class HostValues:
    """The values a run computes in Python, not in the plan: string tensors (constants and feeds,
    through Identity ops) and the pure values of AFTER ops (summaries, ...), which run after the
    plan, in the plan's order, on their inputs' values; their numeric inputs are extra
    fetches of the plan, so a run stays one native call. `plan_feeds` (None: all of them) are the
    indices of the feeds the plan takes, `plan_fetches` the operands the plan returns;
    `values(outs, arrays)` gives every fetch's value from the plan's outputs and the fed arrays."""

    def __init__(self, fetch_tensors, feed_tensors, program):
        self.feed_index = {t: i for i, t in enumerate(feed_tensors)}
        self.native_feeds = [t for t in feed_tensors if t.dtype.code is not None]
        self.plan_feeds = None if len(self.native_feeds) == len(feed_tensors) else \
            [self.feed_index[t] for t in self.native_feeds]
        native = [t for t in fetch_tensors if t.dtype.code is not None]
        self.plan_fetches = [program.operand(t) for t in native]
        # Where each value comes from: ("plan", output index), ("feed", feed index), ("const", value)
        # or ("host", tensor) for an output of a host op run before.
        self.host_ops = [(op, [self._plan_source(o) if o is not None else self._source(t)
                               for t, o in zip(op.inputs, operands)]) for op, operands in program.host_ops]
        self.fetch_sources = [("plan", native.index(t)) if t.dtype.code is not None else self._source(t)
                              for t in fetch_tensors]
        self.needed = bool(self.host_ops) or self.plan_feeds is not None or len(native) < len(fetch_tensors)

    def _plan_source(self, operand):
        self.plan_fetches.append(operand)
        return "plan", len(self.plan_fetches) - 1

    def _source(self, t):
        while t not in self.feed_index and t.op.opdef.lowering == ALIAS and t.op.type in ("Identity", "StopGradient"):
            t = t.op.inputs[0]
        if t in self.feed_index:
            return "feed", self.feed_index[t]
        if t.op.opdef.lowering == CONST:
            return "const", t.op.attrs["value"]
        if t.op.opdef.lowering == HOST:
            return "host", t
        raise errors.InvalidArgumentError(None, t.op, t.op.error(
            f"{t.name} is a string tensor computed by {t.op.type}: pygrad holds strings as constants, feeds and "
            f"the outputs of host ops (summaries) only, and has no kernel for them"))

    def values(self, outs, arrays, trace=None):
        """Runs the host ops (timed into a traced run's trace), then gives the value of every fetch."""
        computed = {}

        def get(source):
            kind, x = source
            return outs[x] if kind == "plan" else arrays[x] if kind == "feed" else x if kind == "const" \
                else computed[x]

        for op, sources in self.host_ops:
            computed.update(zip(op.outputs, call_host(None, op, [get(s) for s in sources], trace)))  # pure: no context
        return [get(s) for s in self.fetch_sources]
