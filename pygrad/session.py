"""Session: runs fetches of a graph on a native plan built once per run signature."""
import collections
import re
import threading

import numpy as np

from pygrad import _C, errors
from pygrad.graph import Operation, Tensor, TensorLike, get_default_graph
from pygrad.lowering import compile_run

_default_sessions = threading.local()


def _session_stack():
    if not hasattr(_default_sessions, "stack"):
        _default_sessions.stack = []
    return _default_sessions.stack


def get_default_session():
    stack = _session_stack()
    return stack[-1] if stack else None


def _session_for(element, session):
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if element.graph is not session.graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is different from "
                         "the session's graph.")
    return session


class _Fetches:
    """Flattens a fetch structure to graph elements and rebuilds the same structure from values."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.elements = []
        self.structure = self._flatten(fetches)

    def _flatten(self, f):
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


class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        self.graph = graph if graph is not None else get_default_graph()
        self._store = _C.VarStore()
        self._plans = {}
        self._closed = False
        self._default_cm = None
        self._var_ids = {}

    # ---- lifetime ----
    def close(self):
        self._closed = True
        self._plans.clear()

    def __enter__(self):
        self._graph_cm = self.graph.as_default()
        self._graph_cm.__enter__()
        _session_stack().append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        stack = _session_stack()
        if stack and stack[-1] is self:
            stack.pop()
        self._graph_cm.__exit__(exc_type, exc, tb)
        self.close()

    def as_default(self):
        session = self

        class _AsDefault:
            def __enter__(self):
                _session_stack().append(session)
                return session

            def __exit__(self, *a):
                _session_stack().remove(session)

        return _AsDefault()

    @property
    def sess_str(self):
        return ""

    # ---- running ----
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs what fetches need once; returns their values in the structure of fetches."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
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
        key = (elements, feed_tensors, tuple(a.shape for a in arrays))
        compiled = self._plans.get(key)
        if compiled is None:
            compiled = self._compile(elements, feed_tensors, arrays)
            self._plans[key] = compiled
        try:
            outs = compiled.plan.run(arrays)
        except _C.UninitializedError as e:
            raise self._uninitialized(str(e)) from None
        except (ValueError, TypeError) as e:
            raise self._step_error(compiled, e) from None
        values = [outs[i][()] if i is not None and outs[i].ndim == 0 else outs[i] if i is not None else None
                  for i in compiled.fetch_index]
        if fetch_spec is None:
            return values[0]
        if fetch_spec is list:
            return values
        if fetch_spec is tuple:
            return tuple(values)
        return fetch_spec.rebuild(values)

    def _feeds(self, feed_dict):
        tensors, arrays = [], []
        for key, value in feed_dict.items():
            t = key if type(key) is Tensor and key.graph is self.graph else self._feed_key(key)
            want = t.dtype.np
            if type(value) is np.ndarray and value.dtype == want and value.flags.c_contiguous:
                arr = value
            else:
                arr = self._convert_feed(t, value)
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
    def _convert_feed(t, value):
        if isinstance(value, (Tensor, TensorLike)):
            raise TypeError(f"The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                            f"Python scalars, strings, lists, numpy ndarrays. (feeding {t.name})")
        arr = np.asarray(value)
        want = t.dtype.np
        if arr.dtype != want and not np.can_cast(arr.dtype, want, casting="same_kind") and \
                not (arr.dtype.kind in "iub" and want.kind in "iu"):
            raise TypeError(errors.op_message(
                t.op.type, t.op.name, f"cannot feed a value of dtype {arr.dtype} to a tensor of dtype "
                                      f"{t.dtype.name}", t.op.site))
        return np.asarray(arr, dtype=want, order="C")

    def _compile(self, elements, feed_tensors, arrays):
        for t, a in zip(feed_tensors, arrays):
            if not t.shape.is_compatible_with(a.shape):
                shape = tuple(a.shape)
                raise errors.InvalidArgumentError(
                    None, t.op, f"Cannot feed value of shape {shape} for Tensor '{t.name}', which has shape "
                                f"'{t.shape}'\n  {t.op.type.lower()} defined at {t.op.site}")
        fetch_tensors, targets, index = [], [], []
        for e in elements:
            if isinstance(e, Operation):
                targets.append(e)
                index.append(None)
            else:
                if e not in fetch_tensors:
                    fetch_tensors.append(e)
                index.append(fetch_tensors.index(e))
        compiled = compile_run(self, fetch_tensors, targets, list(feed_tensors), [a.shape for a in arrays])
        compiled.fetch_index = index
        if len(self._plans) >= 256:  # a graph that keeps growing: keep the cache bounded
            self._plans.pop(next(iter(self._plans)))
        return compiled

    # ---- variables ----
    def _variable_id(self, var_op):
        """The store id of a VariableV2 op (variables are numbered in creation order). Hidden state
        (a random op's counter) starts initialized, at its session_start()."""
        index = var_op.attrs["var_index"]
        while len(self._store) <= index:
            v = self.graph._variables[len(self._store)]
            i = self._store.add(v.op.name, v.dtype.code, v.shape.as_list())
            if hasattr(v, "session_start"):
                self._store.write(i, np.full(v.shape.as_list(), v.session_start(), v.dtype.np))
        return index

    def _write_variable(self, var, value):
        i = self._variable_id(var.op)
        self._store.write(i, np.asarray(value, dtype=var.dtype.np, order="C").reshape(var.shape.as_list()))

    def _uninitialized(self, name):
        var = next((v for v in self.graph._variables if v.op.name == name), None)
        site = var.op.site if var is not None else "<unknown>"
        return errors.FailedPreconditionError(
            None, var.op if var is not None else None,
            f"Attempting to use uninitialized value {name}\n  variable defined at {site}")

    @staticmethod
    def _step_error(compiled, e):
        m = re.match(r"step (\d+): (.*)", str(e), re.S)
        if not m:
            return e
        op = compiled.steps[int(m.group(1))].op
        return errors.InvalidArgumentError(None, op, op.error(m.group(2)))


class Session(BaseSession):
    """tf.Session: a context manager that becomes the default session inside its block."""


class InteractiveSession(BaseSession):
    """A session that makes itself the default on creation, for shells and notebooks."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        _session_stack().append(self)

    def close(self):
        super().close()
        stack = _session_stack()
        if self in stack:
            stack.remove(self)


_ = collections
