"""Session: runs fetches of a graph on a native plan built once per run signature."""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pygrad import _C, _run, dtypes, errors
from pygrad.graph import Graph, Operation, Tensor, TensorLike, get_default_graph, session_stack
from pygrad.bfloat16 import session_uses_bfloat16
from pygrad.host import HostContext, call_host, plan_host_run
from pygrad.lowering import compile_run, out_of_memory
from pygrad.ops.indexed_slices import IndexedSlices, IndexedSlicesValue
from pygrad.ops.sparse_tensor import SparseTensor, SparseTensorValue, sparse_feed, sparse_parts
from pygrad.plan_cache import PLAN_CACHE_ENTRIES, PlanCache
from pygrad.registry import MAX_RANK
from pygrad.session_store import SessionStore
from pygrad.step_stats import Trace


def _whole_numbers(t, arr, want):
    """A float feed of an integer tensor, converted as TF's np.asarray(value, dtype) (a replay
    memory of actions stored as floats) when every value is a whole number the dtype holds; TF
    would truncate or wrap any other value, so that is an error naming the first one."""
    info = np.iinfo(want)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(arr) | (arr != np.trunc(arr)) | (arr < info.min) | (arr >= float(info.max) + 1)
    if bad.any():
        index = [int(i) for i in np.argwhere(bad)[0]]
        raise TypeError(errors.op_message(
            t.op.type, t.op.name, f"cannot feed {arr.dtype} values to a tensor of dtype {t.dtype.name}: the value "
                                  f"{arr[tuple(index)].item()!r}" + (f" at index {index}" if index else "") +
                                  f" is not a whole number in the range of {t.dtype.name} (a conversion would change "
                                  f"it); round the values, or feed an array of {t.dtype.name}", t.op.site))
    return arr.astype(want, order="C")


class _Fetches:
    """Flattens a fetch structure to graph elements and rebuilds the same structure from values."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.elements = []
        self.structure = self._flatten(fetches)

    def _flatten(self, f):
        if isinstance(f, IndexedSlices):  # fetched as TF's IndexedSlicesValue of arrays
            parts = [f.values, f.indices] + ([f.dense_shape] if f.dense_shape is not None else [])
            return (IndexedSlicesValue, [self._flatten(p) for p in parts])
        if isinstance(f, SparseTensor):  # fetched as TF's SparseTensorValue of arrays
            return (SparseTensorValue, [self._flatten(p) for p in sparse_parts(f)])
        if isinstance(f, (Tensor, Operation)) or isinstance(f, (str, TensorLike)) or hasattr(f, "_as_graph_element"):
            self.elements.append(self._element(f))
            return len(self.elements) - 1
        if isinstance(f, dict):
            return (type(f), [(k, self._flatten(v)) for k, v in f.items()])
        if isinstance(f, tuple) and hasattr(f, "_fields"):
            return (type(f), [self._flatten(v) for v in f])
        if isinstance(f, (list, tuple)):
            return (type(f), [self._flatten(v) for v in f])
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor. "
                        f"(Can not convert a {type(f).__name__} into a Tensor or Operation.)")

    def _element(self, f):
        try:
            return self.graph.as_graph_element(f)
        except (KeyError, ValueError) as e:
            raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})") from None

    def rebuild(self, values):
        return self._rebuild(self.structure, values)

    def _rebuild(self, s, values):
        if isinstance(s, int):
            return values[s]
        kind, items = s
        if issubclass(kind, dict):
            return kind((k, self._rebuild(v, values)) for k, v in items)
        if issubclass(kind, tuple) and hasattr(kind, "_fields"):
            return kind(*[self._rebuild(v, values) for v in items])
        return kind(self._rebuild(v, values) for v in items)


# The targets of this process's started tf.train.Servers (train/server_lib.py), each with the
# variables its sessions share, per graph: a session on one runs here, and sees the variables the
# other sessions on that server wrote, as TF's sessions on one server do.
LOCAL_TARGETS = {}  # target -> weakref.WeakKeyDictionary {graph: SessionStore}
# The targets of this process's servers whose cluster keeps variables in other processes (the ps
# tasks of train/cluster_service.py): an object whose run(session, elements, feed_tensors, arrays,
# deadline, trace) runs a session's run in stages (train/remote_run.py).
REMOTE_TARGETS = {}


def check_target(target):
    """target, if a session on it runs in this process: "" or the target of one of its started
    tf.train.Servers. A session runs where its graph was built; a server of another process (a
    cluster's ps or worker task) cannot run it, and is refused rather than run here silently."""
    target = target.decode() if isinstance(target, bytes) else target
    if not isinstance(target, str):
        raise TypeError(f"Session target must be a string, got {type(target).__name__} {target!r}")
    if target == "" or target in LOCAL_TARGETS:
        return target
    if target.startswith("grpc://"):
        raise errors.UnimplementedError(
            None, None, f"Session target {target!r}: no tf.train.Server of this process listens on "
                        f"{target[len('grpc://'):]}. pygrad runs a session in the process that builds the graph: "
                        f"its target is \"\" or a started server of this process (tf.train.Server(...).target)")
    raise errors.NotFoundError(None, None, f"No session factory registered for the given session options: "
                                           f"{{target: {target!r}}}")


class BaseSession:
    """A session of a graph. Beyond TF's API, Session.run's compiled path (pygrad/_run.pyx, which
    the Python path below defines the behaviour of) uses: `plans`, the session's PlanCache;
    `closed`; `run_general`, a run of anything; `convert_feed`, a feed value as the array a plan
    takes; and `run_error`, TF's error for a failed plan. TF's Session has none of these names."""

    _target = ""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        self._target = check_target(target)
        self.graph = graph if graph is not None else get_default_graph()
        stores = LOCAL_TARGETS.get(self._target)
        self._store = SessionStore(self.graph) if stores is None else stores.setdefault(self.graph,
                                                                                       SessionStore(self.graph))
        self.plans = PlanCache()
        self._host_runs = {}  # (elements, feed tensors) -> host.HostRun
        self._host = HostContext(lambda fetches, feed_dict: self.run(fetches, feed_dict))  # what its host ops get
        self.closed = False
        threads = getattr(config, "intra_op_parallelism_threads", 0)
        if threads:  # pygrad's thread count is one for the process (tf.set_num_threads)
            _C.set_num_threads(int(threads))
        # A run's time limit (ConfigProto.operation_timeout_in_ms, RunOptions.timeout_in_ms): past
        # it, the plan stops before its next step with DeadlineExceededError. The compiled path
        # takes no deadline, so a session with a default one runs everything on the Python path.
        self._timeout_ms = int(getattr(config, "operation_timeout_in_ms", 0) or 0)
        self._bfloat16 = session_uses_bfloat16(config)  # mixed precision: products in bfloat16
        self._remote = REMOTE_TARGETS.get(self._target)
        if self._timeout_ms > 0 or self._remote is not None:
            self.run = self._run_python
        # Ctrl-C stops a long run between two steps with KeyboardInterrupt, where SIGINT raises it.
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            _C.watch_sigint()

    # ---- lifetime ----
    def close(self):
        """Frees the session's plans, variables and scratch."""
        self.closed = True
        self._host.close()  # wakes the runs blocked on the session's queues
        self.plans.clear()
        self._store = None

    def __enter__(self) -> BaseSession:
        self._graph_cm = self.graph.as_default()
        self._graph_cm.__enter__()
        session_stack().append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        stack = session_stack()
        if stack and stack[-1] is self:
            stack.pop()
        self._graph_cm.__exit__(exc_type, exc, tb)
        self.close()

    def as_default(self):
        session = self

        class _AsDefault:
            def __enter__(self):
                session_stack().append(session)
                return session

            def __exit__(self, *a):
                session_stack().remove(session)

        return _AsDefault()

    @property
    def sess_str(self):
        return self._target

    # ---- running ----
    # Session.run is compiled (pygrad/_run.pyx): it runs the common case itself, a cached plan
    # with array or number feeds, and hands every other run to run_general.
    if TYPE_CHECKING:
        def run(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None, options: Any = None,
                run_metadata: Any = None) -> Any:
            """The values of fetches (a graph element, or a list, tuple, dict or namedtuple of them),
            with feed_dict's values fed to its tensors."""
    else:
        run = _run.run

    def _run_python(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Session.run without the compiled path: a session with a default time limit, or one whose
        runs go through its cluster (REMOTE_TARGETS)."""
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        return self.run_general(fetches, feed_dict, options, run_metadata)

    def run_general(self, fetches, feed_dict, options=None, run_metadata=None):
        """Session.run for any fetch structure, feed values and RunOptions: what a run does, defined here.
        A trace_level above NO_TRACE fills run_metadata's step_stats (pygrad/step_stats.py)."""
        graph, kind = self.graph, type(fetches)
        # Fast paths for a tensor and a flat list or tuple of graph elements; _Fetches for the rest.
        if kind is Tensor and fetches.graph is graph:
            elements, fetch_spec = (fetches,), None
        elif (kind is list or kind is tuple) and all(
                (type(e) is Tensor or type(e) is Operation) and e.graph is graph for e in fetches):
            elements, fetch_spec = tuple(fetches), kind
        else:
            fetch_spec = _Fetches(graph, fetches)
            elements = tuple(fetch_spec.elements)
        feed_tensors, arrays = self._feeds(feed_dict) if feed_dict else ((), [])
        timeout = getattr(options, "timeout_in_ms", 0) or self._timeout_ms
        deadline = time.monotonic_ns() + int(timeout) * 1_000_000 if timeout > 0 else 0  # (the plan's clock)
        trace = Trace() if run_metadata is not None and getattr(options, "trace_level", 0) else None
        if self._remote is not None:
            values = self._remote.run(self, elements, feed_tensors, arrays, deadline, trace)
        else:
            values = self._run_elements(elements, feed_tensors, arrays, deadline, trace)
        if trace is not None:
            trace.fill(run_metadata)
        if fetch_spec is None:
            return values[0]
        if fetch_spec is list:
            return values
        if fetch_spec is tuple:
            return tuple(values)
        return fetch_spec.rebuild(values)

    def _run_elements(self, elements, feed_tensors, arrays, deadline=0, trace=None):
        """The values of elements (None for ops) from a run in this process."""
        if self.graph.host_ops:
            return self._run_with_host_ops(elements, feed_tensors, arrays, deadline, trace)
        return self._run_plan(elements, feed_tensors, arrays, deadline, trace)

    def _run_plan(self, elements, feed_tensors, arrays, deadline=0, trace=None):
        """The values of elements (None for ops) from one run of the plan of this signature, which
        stops at time.monotonic_ns() deadline (0: none); a step_stats.Trace gets its steps."""
        key = PlanCache.key(elements, feed_tensors, tuple([a.shape for a in arrays]))
        compiled = self.plans.get(key)
        if compiled is None:
            compiled = self._compile(elements, feed_tensors, arrays)
            self.plans.put(key, compiled)
        host = compiled.host  # string values, which live in Python (None: there are none)
        feeds = arrays if host is None or host.plan_feeds is None else [arrays[i] for i in host.plan_feeds]
        try:
            if trace is None:
                outs = compiled.plan.run(feeds, deadline)
            else:
                outs, rows = compiled.plan.run_traced(feeds, deadline)
                trace.plan_run(compiled, rows)
        except (_C.UninitializedError, MemoryError, _C.StepError, _C.DeadlineError) as e:
            raise self.run_error(compiled, e) from None
        if host is not None:
            outs = host.values(outs, arrays, trace)
        return [outs[i][()] if i is not None and outs[i].ndim == 0 else outs[i] if i is not None else None
                for i in compiled.fetch_index]

    def run_error(self, compiled, e):
        """The error to raise for e, which a run of compiled's plan raised: _C.UninitializedError,
        MemoryError, _C.StepError or _C.DeadlineError, as TF's error naming the variable or the op."""
        if isinstance(e, _C.UninitializedError):
            return self._uninitialized(str(e))
        if isinstance(e, _C.DeadlineError):
            op = compiled.step_ops[e.step]
            return errors.DeadlineExceededError(None, op, op.error(
                "Timed out waiting for notification: the run's time limit passed before this op's step"))
        if isinstance(e, MemoryError):
            return MemoryError(out_of_memory(compiled.plan.arena_bytes, compiled.largest_temp))
        op = compiled.step_ops[e.step]
        return errors.InvalidArgumentError(None, op, op.error(str(e)))

    def _run_with_host_ops(self, elements, feed_tensors, arrays, deadline=0, trace=None):
        """A run of a graph with ops Python runs around the plan (see host.py)."""
        sig = (elements, feed_tensors)
        how = self._host_runs.get(sig)
        if how is None:
            how = self._host_runs[sig] = plan_host_run(self.graph, elements, feed_tensors)
            if len(self._host_runs) > PLAN_CACHE_ENTRIES:
                del self._host_runs[next(iter(self._host_runs))]
        ctx = self._host
        with ctx.running(deadline):
            return self._host_ops_and_plan(how, ctx, elements, feed_tensors, arrays, deadline, trace)

    def _host_ops_and_plan(self, how, ctx, elements, feed_tensors, arrays, deadline, trace):
        if how.binders or how.stages:
            feed_tensors, arrays = list(feed_tensors), list(arrays)
            for op in how.binders:
                feed_tensors.extend(op.outputs)
                arrays.extend(call_host(ctx, op, [], trace))
            for stage in how.stages:
                op = stage.op
                values = self._run_with_host_ops(stage.fetches, tuple(feed_tensors), arrays, deadline, trace)
                feed_tensors.extend(op.outputs)
                arrays.extend(a if a.flags.c_contiguous and a.flags.aligned else a.copy()  # the plan's rule
                              for a in map(np.asarray, call_host(ctx, op, values[:len(op.inputs)], trace)))
                feed_tensors.extend(stage.boundary)
                arrays.extend(np.asarray(v) for v in values[len(op.inputs):len(op.inputs) + len(stage.boundary)])
            feed_tensors = tuple(feed_tensors)
        values = self._run_plan(elements + how.extra, feed_tensors, arrays, deadline, trace)
        i = len(elements)
        for op in how.effects:
            call_host(ctx, op, values[i:i + len(op.inputs)], trace)
            i += len(op.inputs)
        return values[:len(elements)]

    def _feeds(self, feed_dict):
        tensors, arrays = [], []
        items = feed_dict.items()
        if any(isinstance(key, SparseTensor) for key in feed_dict):
            items = [kv for key, value in items
                     for kv in (sparse_feed(key, value) if isinstance(key, SparseTensor) else [(key, value)])]
        for key, value in items:
            t = key if type(key) is Tensor and key.graph is self.graph else self._feed_key(key)
            want = t.dtype.np
            if type(value) is np.ndarray and value.dtype == want and value.flags.c_contiguous and value.flags.aligned \
                    and want.kind != "O":  # strings are always converted (to bytes)
                arr = value
            else:
                arr = self.convert_feed(t, value)
            tensors.append(t)
            arrays.append(arr)
        return tuple(tensors), arrays

    def _feed_key(self, key):
        """The Tensor of this session's graph that a feed_dict key names; TypeError otherwise, as TF."""
        try:
            return self.graph.as_graph_element(key, allow_operation=False)
        except (KeyError, ValueError, TypeError) as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0] if e.args else e}") from None

    @staticmethod
    def convert_feed(t, value):
        """value, fed to t, as an array of t's dtype, C-contiguous and aligned (for a string
        tensor, an object array of bytes), or TF's TypeError for a value t cannot take."""
        if isinstance(value, (Tensor, TensorLike)):
            raise TypeError(f"The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                            f"Python scalars, strings, lists, numpy ndarrays. (feeding {t.name})")
        if t.dtype == dtypes.string:
            try:
                return dtypes.as_bytes_array(value)
            except TypeError as e:
                raise TypeError(errors.op_message(t.op.type, t.op.name, str(e), t.op.site)) from None
        want = t.dtype.np
        kind = type(value)
        if (kind is float and want.kind == "f" or kind is int and want.kind in "fiu") and \
                dtypes.scalar_fits(value, want):
            return np.array(value, want)  # a Python number (the common feed of a scalar placeholder)
        arr = np.asarray(value)
        if arr.dtype.kind == "f" and want.kind in "iu":
            return _whole_numbers(t, arr, want)
        if arr.dtype != want and not np.can_cast(arr.dtype, want, casting="same_kind") and \
                not (arr.dtype.kind in "iub" and want.kind in "iu"):
            raise TypeError(errors.op_message(
                t.op.type, t.op.name, f"cannot feed a value of dtype {arr.dtype} to a tensor of dtype "
                                      f"{t.dtype.name}", t.op.site))
        if arr.dtype == want:  # copied only when misaligned or not contiguous
            return arr if arr.flags.c_contiguous and arr.flags.aligned else arr.copy()
        if not dtypes.fits(arr, want):
            shown = value if np.size(value) <= 8 else f"with values in [{arr.min()}, {arr.max()}]"
            larger = "int64" if want.kind in "iu" else "float64"
            raise TypeError(errors.op_message(
                t.op.type, t.op.name, f"Type of feed value {shown} with type {type(value)} is not compatible with "
                                      f"Tensor type {t.dtype.name}: it does not fit. Try explicitly setting the type "
                                      f"of the feed tensor to a larger type (e.g. {larger}).", t.op.site))
        return arr.astype(want, order="C")

    def _compile(self, elements, feed_tensors, arrays):
        for t, a in zip(feed_tensors, arrays):
            if a.ndim > MAX_RANK:
                raise ValueError(errors.op_message(t.op.type, t.op.name, f"Cannot feed value of shape {a.shape}: "
                                                   f"rank {a.ndim} is above {MAX_RANK}, the most pygrad supports",
                                                   t.op.site))
            if not t.shape.is_compatible_with(a.shape):
                shape = tuple(a.shape)
                raise ValueError(errors.op_message(
                    t.op.type, t.op.name, f"Cannot feed value of shape {shape} for Tensor '{t.name}', which has "
                                          f"shape '{t.shape}'", t.op.site))
        return compile_run(elements, feed_tensors, [a.shape for a in arrays], self._store, fast=_run.entry,
                           bfloat16=self._bfloat16)

    # ---- variables ----
    def write_variable(self, var, value):
        """Writes value into var in this session without adding ops to the graph (Variable.load)."""
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        self._store.write(var, value)

    def place_variable(self, var, array):
        """Keeps var's value in this session in array's memory (var's dtype and shape, C-contiguous,
        64-byte aligned, writable; shared memory, say), which runs then read and update in place.
        Only before the first run that uses var: raises RuntimeError after it."""
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        self._store.place(var, array)

    def copy_variable_rows(self, var, indices, rows, into_variable):
        """Copies rows `indices` (int64) of var in this session into `rows` (C-contiguous, [n] + var's
        row shape), or, into_variable=True, `rows` into them: an embedding's touched rows."""
        self._stored(var).copy_rows(var, indices, rows, into_variable)

    def _stored(self, var):
        """The session store, once var is known to be initialized in this open session."""
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self._store.native.initialized(self._store.id_of(var.op)):
            raise self._uninitialized(var.op.name)
        return self._store

    def _uninitialized(self, name):
        var = self._store.entry_named(name)
        rule = f"Attempting to use uninitialized value {name}"
        return errors.FailedPreconditionError(None, var.op if var is not None else None,
                                              var.op.error(rule) if var is not None else rule)


class Session(BaseSession):
    """tf.Session: a context manager that becomes the default session inside its block."""


class InteractiveSession(BaseSession):
    """A session that makes itself the default on creation, for shells and notebooks."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        super().__init__(target, graph, config)
        session_stack().append(self)

    def close(self):
        super().close()
        stack = session_stack()
        if self in stack:
            stack.remove(self)

