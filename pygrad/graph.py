"""Graph, Operation and Tensor; name scopes, collections, control dependencies, default graph."""
import contextlib
import re
import threading

from pygrad import dtypes as _dtypes
from pygrad import errors
from pygrad.shapes import as_shape


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    GLOBAL_STEP = "global_step"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    UPDATE_OPS = "update_ops"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
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
        self._variable_scope_stack = []
        self._collections = {}
        self._control_dependencies = []
        self._variables = []  # index -> Variable, the native store's numbering
        self.seed = None
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
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist (op has {len(op.outputs)} outputs).")
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

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

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
        """Ops built inside run after control_inputs. None clears the enclosing dependencies."""
        old = self._control_dependencies
        if control_inputs is None:
            self._control_dependencies = []
        else:
            ops = []
            for c in control_inputs:
                c = self.as_graph_element(c)
                ops.append(c.op if isinstance(c, Tensor) else c)
            self._control_dependencies = old + ops
        try:
            yield
        finally:
            self._control_dependencies = old

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
        yield


_default_graph = [Graph()]
_graph_stack = []


def get_default_graph():
    return _graph_stack[-1] if _graph_stack else _default_graph[0]


def reset_default_graph():
    if _graph_stack:
        raise AssertionError("Do not use tf.reset_default_graph() inside a graph's as_default() block.")
    _default_graph[0] = Graph()


class Operation:
    """A node: its type, name, inputs, attributes, outputs, and the user line that built it."""

    __slots__ = ("type", "name", "graph", "inputs", "control_inputs", "attrs", "outputs", "opdef", "site", "_id",
                 "__weakref__")

    def __init__(self, graph, opdef, name, inputs, attrs, output_specs, site):
        self.graph = graph
        self.opdef = opdef
        self.type = opdef.type
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.site = site
        self.control_inputs = list(graph._control_dependencies)
        self.outputs = tuple(Tensor(self, i, dt, shape) for i, (dt, shape) in enumerate(output_specs))
        graph._add_op(self)

    @property
    def node_def(self):
        return {"name": self.name, "op": self.type, "input": [t.name for t in self.inputs], "attr": dict(self.attrs)}

    @property
    def device(self):
        return ""

    def get_attr(self, name):
        return self.attrs[name]

    def values(self):
        return self.outputs

    def _add_control_input(self, op):
        self.control_inputs.append(op)

    def run(self, feed_dict=None, session=None):
        from pygrad.session import _session_for

        _session_for(self, session).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return f"<pygrad.Operation '{self.name}' type={self.type}>"

    def error(self, rule):
        """An error message about this op, in the one layout."""
        return errors.op_message(self.type, self.name, rule, self.site)


class TensorLike:
    """Operators shared by Tensor and Variable: each builds the op TF1 builds for it, under TF1's name
    (`a + b` is op 'add' of type Add, `a @ b` is 'matmul'; comparisons and `-a` keep the type's name)."""

    __slots__ = ()
    __array_priority__ = 100

    def __add__(self, other):
        return _math().add(self, other, name="add")

    def __radd__(self, other):
        return _math().add(other, self, name="add")

    def __sub__(self, other):
        return _math().subtract(self, other, name="sub")

    def __rsub__(self, other):
        return _math().subtract(other, self, name="sub")

    def __mul__(self, other):
        return _math().multiply(self, other, name="mul")

    def __rmul__(self, other):
        return _math().multiply(other, self, name="mul")

    def __truediv__(self, other):
        return _math().truediv(self, other, name="truediv")

    def __rtruediv__(self, other):
        return _math().truediv(other, self, name="truediv")

    __div__ = __truediv__

    def __floordiv__(self, other):
        return _math().floordiv(self, other, name="floordiv")

    def __rfloordiv__(self, other):
        return _math().floordiv(other, self, name="floordiv")

    def __pow__(self, other):
        return _math().pow(self, other, name="pow")

    def __rpow__(self, other):
        return _math().pow(other, self, name="pow")

    def __matmul__(self, other):
        return _math().matmul(self, other, name="matmul")

    def __rmatmul__(self, other):
        return _math().matmul(other, self, name="matmul")

    def __neg__(self):
        return _math().negative(self)

    def __abs__(self):
        return _math().abs(self)

    def __lt__(self, other):
        return _math().less(self, other)

    def __le__(self, other):
        return _math().less_equal(self, other)

    def __gt__(self, other):
        return _math().greater(self, other)

    def __ge__(self, other):
        return _math().greater_equal(self, other)

    def __and__(self, other):
        return _math().logical_and(self, other, name="and")

    def __rand__(self, other):
        return _math().logical_and(other, self, name="and")

    def __or__(self, other):
        return _math().logical_or(self, other, name="or")

    def __ror__(self, other):
        return _math().logical_or(other, self, name="or")

    def __xor__(self, other):
        return _math().logical_xor(self, other, name="xor")

    def __rxor__(self, other):
        return _math().logical_xor(other, self, name="xor")

    def __invert__(self):
        return _math().logical_not(self)

    def __getitem__(self, key):
        from pygrad.ops import array_ops

        return array_ops.slice_helper(self, key)

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. "
                        "Use `if t is not None:` instead of `if t:`, or run the graph to get its value.")

    def __iter__(self):
        raise TypeError("Tensor objects are not iterable when building a graph. Run the graph to get an array.")

    __hash__ = object.__hash__


def _math():
    from pygrad.ops import math_ops

    return math_ops


class Tensor(TensorLike):
    """An output of an Operation: dtype and static shape (None for unknown dimensions)."""

    __slots__ = ("op", "value_index", "dtype", "_shape", "__weakref__")

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
        return ""

    def consumers(self):
        return [op for op in self.graph._ops if any(t is self for t in op.inputs)]

    def eval(self, feed_dict=None, session=None):
        from pygrad.session import _session_for

        return _session_for(self, session).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return f"<pygrad.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"


