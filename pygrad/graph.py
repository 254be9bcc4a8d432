"""Graph, Operation and Tensor; name scopes, collections, control dependencies, default graph."""
from __future__ import annotations

import contextlib
import re
import threading
from typing import TYPE_CHECKING, Any

from pygrad import dtypes as _dtypes
from pygrad import errors
from pygrad.device import StackEntry, device_of
from pygrad.shapes import as_shape


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    UPDATE_OPS = "update_ops"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    SUMMARY_OP = "summary_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SAVERS = "savers"
    TABLE_INITIALIZERS = "table_initializer"
    ACTIVATIONS = "activations"
    WEIGHTS = "weights"
    BIASES = "biases"


class Graph:
    """A dataflow graph: the operations, their names, the collections, the current scopes."""

    def __init__(self):
        self._ops = []
        self._ops_by_name = {}
        self._names_in_use = {}
        self._name_stack = ""
        self._collections = {}
        self._control_dependencies = []
        self._control_flow_context = None  # the cond branch or loop region ops are built in
        # index -> Variable, or hidden state (a random op's counter): every session's variable
        # store numbers its entries this way (see Graph.add_stored_variable).
        self.stored_variables = []
        self.seed = None
        # Ops the session runs in Python around a plan (ops with a host stage, which OpDef adds;
        # see host.py); a graph without them takes Session.run's direct path.
        self.host_ops = []
        self._device_stack = []  # the tf.device scopes around the ops being built (device.StackEntry)
        self._colocation_stack = []  # the ops of the colocate_with scopes, innermost last
        self._finalized = False
        self._lock = threading.RLock()

    # ---- names ----
    def unique_name(self, name, mark_as_used=True):
        """TF's naming: prefix with the name scope, then add _1, _2, ... to names already used."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self):
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        """Enters a scope; yields its name with a trailing '/'. 'a/' re-enters a, None the root."""
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield new + "/" if new else ""
        finally:
            self._name_stack = old

    # ---- ops ----
    def _add_op(self, op):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        with self._lock:
            op._id = len(self._ops)
            self._ops.append(op)
            self._ops_by_name[op.name] = op

    @contextlib.contextmanager
    def rollback_on_error(self):
        """A scope whose ops, names and collection entries leave the graph again if it raises."""
        with self._lock:
            n_ops, names, n_host = len(self._ops), dict(self._names_in_use), len(self.host_ops)
            n_stored, collections = len(self.stored_variables), {k: list(v) for k, v in self._collections.items()}
            try:
                yield
            except BaseException:
                for op in self._ops[n_ops:]:
                    del self._ops_by_name[op.name]
                del self._ops[n_ops:], self.host_ops[n_host:], self.stored_variables[n_stored:]
                self._names_in_use, self._collections = names, collections
                raise

    def get_operations(self):
        return list(self._ops)

    def get_operation_by_name(self, name):
        try:
            return self._ops_by_name[name]
        except KeyError:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.") from None

    def get_tensor_by_name(self, name):
        m = re.fullmatch(r"(.*):(\d+)", name)
        if not m:
            raise ValueError(f"The name '{name}' looks like an (invalid) Operation name, not a Tensor name.")
        op = self.get_operation_by_name(m.group(1))
        i = int(m.group(2))
        if i >= len(op.outputs):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist (op has {len(op.outputs)} "
                           f"outputs).")
        return op.outputs[i]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, Tensor) and allow_tensor or isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"{obj} is not an element of this graph.")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")

    @property
    def version(self):
        return len(self._ops)

    def as_graph_def(self, from_version=None, add_shapes=False):
        """The graph as TensorFlow's GraphDef (a pygrad.tf_protos.GraphDef), which TF's
        tf.import_graph_def runs; from_version: only the ops added since version was that;
        add_shapes: each node's "_output_shapes" (see pygrad/graph_def.py)."""
        from pygrad.graph_def import graph_def
        return graph_def(self, add_shapes=add_shapes, from_version=from_version)

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    # ---- variables ----
    def add_stored_variable(self, entry, make_tensor):
        """Gives entry (a Variable, or hidden state with a session_start(), such as a random op's
        counter) the next index of every session's variable store; make_tensor(index) builds its
        VariableV2 op, whose output is returned."""
        with self._lock:
            tensor = make_tensor(len(self.stored_variables))
            self.stored_variables.append(entry)
            return tensor

    def holds_variable(self, op):
        """Whether op is the VariableV2 op of a variable (not of hidden state: a random op's counter)."""
        if op.type != "VariableV2" or op.attrs["var_index"] >= len(self.stored_variables):
            return False
        return not hasattr(self.stored_variables[op.attrs["var_index"]], "session_start")

    # ---- collections ----
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for name in [names] if isinstance(names, str) else set(names):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        """A copy of the collection; with scope, the items whose name matches it (re.match), as TF."""
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [it for it in items if getattr(it, "name", None) is not None and pattern.match(it.name)]

    def get_all_collection_keys(self):
        return [k for k in self._collections if isinstance(k, str)]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # ---- control dependencies ----
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops built inside run after control_inputs. None clears the enclosing dependencies and,
        as in TF1, the control-flow context: ops built inside (a variable and its initializer made
        in a loop's body) are built outside any cond branch or loop region."""
        old, old_context = self._control_dependencies, self._control_flow_context
        if control_inputs is None:
            self._control_dependencies = []
            self._control_flow_context = None
        else:
            ops = []
            for c in control_inputs:
                c = self.as_graph_element(c)
                ops.append(c.op if isinstance(c, Tensor) else c)
            self._control_dependencies = old + ops
        try:
            yield
        finally:
            self._control_dependencies, self._control_flow_context = old, old_context

    # ---- devices ----
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Ops built inside get this device: a string or DeviceSpec merges under the device the
        inner scopes give (their fields win), a function of the op returns the op's device (as
        tf.train.replica_device_setter's), None drops the devices of the scopes around it.
        Recorded only: every op runs on the CPU, as TF with soft placement on a machine without
        accelerators."""
        self._device_stack.append(StackEntry(device_name_or_function))
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops built inside go where op is (an Operation, Tensor or Variable): they take its device
        if it has one, whatever the device scopes say; the device scopes around are set aside.
        op None with ignore_existing drops the enclosing colocations too."""
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not True")
        if op is not None:
            op = unwrap(op)
            op = op.op if isinstance(op, Tensor) else op
            if not isinstance(op, Operation):
                raise TypeError(f"colocate_with: expected an Operation, Tensor or Variable, got {op!r}")
        devices, colocations = self._device_stack, self._colocation_stack
        self._device_stack = []
        if ignore_existing:
            self._colocation_stack = []
        if op is not None:
            self._colocation_stack = self._colocation_stack + [op]
        try:
            yield
        finally:
            self._device_stack, self._colocation_stack = devices, colocations

    def _place(self, op):
        """Sets the device and colocation of op, which is being built: the device scopes'
        merge, unless an op it is colocated with has a device."""
        op._device, op._colocation = "", None
        device_of(op, self._device_stack)
        if self._colocation_stack:
            op._colocation = sorted({g for c in self._colocation_stack for g in c.colocation_groups()})
            placed = next((c.device for c in reversed(self._colocation_stack) if c.device), None)
            if placed is not None:
                op._device = placed

    # ---- default graph ----
    @contextlib.contextmanager
    def as_default(self):
        _graph_stack.append(self)
        try:
            yield self
        finally:
            _graph_stack.remove(self)

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        """TF's override of gradient functions by names given to tf.RegisterGradient, which pygrad
        does not have: an empty map is accepted, any other is refused rather than ignored."""
        if op_type_map:
            raise LookupError(f"gradient_override_map({dict(op_type_map)!r}): pygrad has no tf.RegisterGradient, so "
                              f"no gradient function is registered under these names")
        yield


_default_graph = [Graph()]
_graph_stack = []


def prepend_name_scope(name, import_scope):
    """name (an op or tensor name, "^op" or "loc:@op") under import_scope, as TF's ops.prepend_name_scope."""
    if not import_scope:
        return name
    return re.sub(r"([\^]|loc:@|^)(.*)", r"\1" + import_scope.rstrip("/") + r"/\2", name)


def strip_name_scope(name, export_scope):
    """name without its leading export_scope, as TF's ops.strip_name_scope."""
    if not export_scope:
        return name
    return re.sub(r"([\^]|loc:@|^)" + re.escape(export_scope.rstrip("/")) + r"[\/]+(.*)", r"\1\2", name, count=1)


def get_default_graph():
    return _graph_stack[-1] if _graph_stack else _default_graph[0]


def reset_default_graph():
    if _graph_stack:
        raise AssertionError("Do not use tf.reset_default_graph() inside a graph's as_default() block.")
    _default_graph[0] = Graph()


# ---- the default session (session.py pushes and pops it; Tensor.eval and Operation.run read it)
_default_sessions = threading.local()


def session_stack():
    """This thread's stack of default sessions, innermost last."""
    if not hasattr(_default_sessions, "stack"):
        _default_sessions.stack = []
    return _default_sessions.stack


def get_default_session():
    stack = session_stack()
    return stack[-1] if stack else None


def build_error(op_type, name, rule, cls=ValueError):
    """An error of an op's wrapper, raised before the op is built, in the one layout: the op type,
    the name the node would get in the default graph, the rule, the user's line."""
    node = get_default_graph().unique_name(name or op_type, mark_as_used=False)
    return cls(errors.op_message(op_type, node, rule, errors.user_site()))


def session_for(element, session):
    """session, or the default one, checked to run element's graph."""
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if element.graph is not session.graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is different from "
                         "the session's graph.")
    return session


class Operation:
    """A node: its type, name, inputs, attributes, outputs, and the user line that built it."""

    __slots__ = ("type", "name", "graph", "inputs", "control_inputs", "attrs", "outputs", "opdef", "site", "_id",
                 "_device", "_colocation", "_control_flow_context", "__weakref__")

    def __init__(self, graph, opdef, name, inputs, attrs, output_specs, site):
        self.graph = graph
        self.opdef = opdef
        self.type = opdef.type
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.site = site
        self.control_inputs = list(graph._control_dependencies)
        self._control_flow_context = graph._control_flow_context
        self.outputs = tuple(Tensor(self, i, dt, shape) for i, (dt, shape) in enumerate(output_specs))
        graph._place(self)
        graph._add_op(self)

    @property
    def node_def(self):
        return {"name": self.name, "op": self.type, "input": [t.name for t in self.inputs], "attr": dict(self.attrs)}

    @property
    def device(self):
        """The device string tf.device scopes and colocation gave the op, as TF's; recorded only:
        pygrad runs every op on the CPU."""
        return self._device

    def _set_device(self, device):
        self._device = device.to_string() if hasattr(device, "to_string") else str(device or "")

    def colocation_groups(self):
        """TF's colocation groups: [b"loc:@<op>"] of the ops it was built colocated with, else its own."""
        return list(self._colocation) if self._colocation else [f"loc:@{self.name}".encode()]

    def get_attr(self, name):
        return self.attrs[name]

    def values(self):
        return self.outputs

    def _add_control_input(self, op):
        self.control_inputs.append(op)

    def run(self, feed_dict=None, session=None):
        session_for(self, session).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return f"<pygrad.Operation '{self.name}' type={self.type}>"

    def error(self, rule):
        """An error message about this op, in the one layout."""
        return errors.op_message(self.type, self.name, rule, self.site)


class TensorLike:
    """What Tensor and Variable share. The op modules install the operators on it, each building
    the op TF1 builds for it (math_ops: `+`, `*`, `<`, ...; slice_ops: `t[...]`), as TF1 does."""

    __slots__ = ()
    __array_priority__ = 100

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. "
                        "Use `if t is not None:` instead of `if t:`, or run the graph to get its value.")

    def __iter__(self):
        raise TypeError("Tensor objects are not iterable when building a graph. Run the graph to get an array.")

    __hash__ = object.__hash__

    if TYPE_CHECKING:  # the operators' types, for type checkers; the op modules install them
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __getitem__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...


OPERATORS = frozenset(f"__{n}__" for n in (
    "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul rmatmul neg abs "
    "lt le gt ge and rand or ror xor rxor invert getitem").split())


def override_operator(name, fn):
    """Installs fn as operator `name` (e.g. '__add__') of Tensor and Variable."""
    if name not in OPERATORS:
        raise ValueError(f"{name} is not an operator a tensor overrides")
    setattr(TensorLike, name, fn)


def unwrap(value):
    """value's Tensor when it stands for one (a Variable: _as_graph_element), else value itself."""
    if not isinstance(value, Tensor) and hasattr(value, "_as_graph_element"):
        return value._as_graph_element()
    return value


def reachable(starts, neighbours):
    """Every node reached from starts (included) by following neighbours(node): a graph walk."""
    seen, stack = set(), list(starts)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(neighbours(node))
    return seen


class Tensor(TensorLike):
    """An output of an Operation: dtype and static shape (None for unknown dimensions)."""

    # aliases: set by TF-Slim's outputs_collections (the layer scopes that named the tensor), as TF's
    __slots__ = ("op", "value_index", "dtype", "_shape", "aliases", "__weakref__")

    def __init__(self, op, value_index, dtype, shape):
        self.op = op
        self.value_index = value_index
        self.dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape)

    @property
    def name(self):
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self):
        return self.op.graph

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        try:
            self._shape = self._shape.merge_with(as_shape(shape))
        except ValueError:
            raise ValueError(self.op.error(f"set_shape: shape {as_shape(shape)} is not compatible with {self._shape}"))

    @property
    def device(self):
        return self.op.device

    def consumers(self):
        return [op for op in self.graph.get_operations() if any(t is self for t in op.inputs)]

    def eval(self, feed_dict=None, session=None):
        return session_for(self, session).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return f"<pygrad.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"


