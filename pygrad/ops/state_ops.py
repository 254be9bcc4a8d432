"""Variables and the ops that write them (assign, assign_add, assign_sub), is_variable_initialized,
no_op and group."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from pygrad import dtypes, errors
from pygrad.graph import (GraphKeys, Tensor, TensorLike, build_error, get_default_graph, prepend_name_scope,
                          session_for, strip_name_scope, unwrap)
from pygrad.ops.array_ops import cast, convert_for_op, convert_to_tensor
from pygrad.registry import BEFORE, NOOP, VARIABLE, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import ShapeLike, as_shape

# ---------------------------------------------------------------- the variable op

VariableV2 = OpDef("VariableV2", lowering=VARIABLE, differentiable=False)


@VariableV2.shape
def _(*, shape, dtype, var_index):
    return Spec(dtype, shape)


# ---------------------------------------------------------------- writes


def _check_write(ref, value):
    if ref.dtype != value.dtype:
        fail_dtype(f"value has dtype {value.dtype.name}, the variable has {ref.dtype.name}")
    if not ref.shape.is_compatible_with(value.shape):
        fail(f"value shape {value.shape} does not match the variable's shape {ref.shape}")
    return Spec(ref.dtype, ref.shape)


def _assign_op(type_name, mode, **kw):
    d = OpDef(type_name, kernel="assign", differentiable=False, ref_input=0, **kw)
    d.shape(_check_write)
    d.native_attrs(lambda attrs, ins, outs: {"op": mode})
    return d


Assign = _assign_op("Assign", "assign", reads_ref=False, initializes=True)
AssignAdd = _assign_op("AssignAdd", "add")
AssignSub = _assign_op("AssignSub", "sub")


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """ref = value. validate_shape=False lets TF change a variable's shape; pygrad's variables keep
    the shape they were made with, so the value must still fit it (its static shape may be unknown)."""
    ref = _ref(ref, Assign, name)
    value = convert_for_op(value, ref.dtype, "Assign", name)
    if validate_shape is False and not ref.shape.is_compatible_with(value.shape):
        raise Assign.error(f"validate_shape=False: value shape {value.shape} differs from the variable's shape "
                           f"{ref.shape}, and pygrad variables keep the shape they were created with", name)
    return Assign(ref, value, name=name or "Assign")


def assign_add(ref, value, use_locking=None, name=None):
    ref = _ref(ref, AssignAdd, name)
    return AssignAdd(ref, convert_for_op(value, ref.dtype, "AssignAdd", name), name=name or "AssignAdd")


def assign_sub(ref, value, use_locking=None, name=None):
    ref = _ref(ref, AssignSub, name)
    return AssignSub(ref, convert_for_op(value, ref.dtype, "AssignSub", name), name=name or "AssignSub")


def _ref(v, opdef, name):
    v = unwrap(v)
    if not isinstance(v, Tensor) or v.op.type != "VariableV2":
        raise opdef.error(f"assign ops write Variables; got {v!r}", name, TypeError)
    return v


# ---------------------------------------------------------------- grouping

NoOp = OpDef("NoOp", lowering=NOOP, differentiable=False)


@NoOp.shape
def _():
    return []


def no_op(name=None):
    return NoOp(name=name or "NoOp")


def group(*inputs, name=None):
    """An op that runs all inputs (ops or tensors) and has no output. As TF's: inputs on more
    than one device get a NoOp per device ("<name>/NoOp", "<name>/NoOp_1", ... in device order),
    which the returned op waits for; a NoOp is built on its inputs' device."""
    graph = get_default_graph()
    by_device = {}
    for x in inputs:
        for item in (x if isinstance(x, (list, tuple)) else [x]):
            item = graph.as_graph_element(item)
            item = item.op if isinstance(item, Tensor) else item
            by_device.setdefault(item.device, []).append(item)

    def on_device(device, deps, name=None):
        with graph.control_dependencies(deps), graph.device(device):
            return NoOp(name=name or "NoOp")

    with graph.name_scope(name or "group_deps") as scope:
        if len(by_device) == 1:
            (device, deps), = by_device.items()
            return on_device(device, deps, scope)
        if not by_device:
            return NoOp(name=scope)
        per_device = [on_device(device, by_device[device]) for device in sorted(by_device)]
        with graph.control_dependencies(per_device):
            return NoOp(name=scope)


# ---------------------------------------------------------------- is_variable_initialized

# The variable is an attribute, not an input: the op must not read an uninitialized value.
IsVariableInitialized = OpDef("IsVariableInitialized", host=BEFORE, differentiable=False)


@IsVariableInitialized.shape
def _(*, variable):
    return Spec(dtypes.bool_, as_shape([]))


@IsVariableInitialized.host
def _(ctx, op, values):
    try:
        ctx.run(op.attrs["variable"])
    except errors.FailedPreconditionError:
        return [np.array(False)]
    return [np.array(True)]


def is_variable_initialized(variable, name=None):
    """A bool scalar: whether variable has a value in the session that runs it (TF1's
    tf.is_variable_initialized)."""
    v = unwrap(variable)
    if not isinstance(v, Tensor) or v.op.type != "VariableV2":
        raise IsVariableInitialized.error(f"expected a variable, got {variable!r}", name)
    with v.graph.colocate_with(v.op):
        return IsVariableInitialized(variable=v, name=name or "IsVariableInitialized")


# ---------------------------------------------------------------- Variable


class Variable(TensorLike):
    """A tensor whose value lives in the session across runs; TF1's tf.Variable."""

    def __init__(self, initial_value: Any = None, trainable: bool | None = True,
                 collections: Iterable[str] | None = None, validate_shape: bool = True, caching_device: Any = None,
                 name: str | None = None, variable_def: Any = None, dtype: dtypes.DTypeLike | None = None,
                 expected_shape: ShapeLike = None, import_scope: str | None = None,
                 constraint: Callable[[Any], Any] | None = None, use_resource: bool | None = None,
                 synchronization: Any = None, aggregation: Any = None, shape: ShapeLike = None) -> None:
        if variable_def is not None:
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise build_error("VariableV2", name or "Variable", "initial_value must be specified.")
        graph = get_default_graph()
        # As TF's init_scope: the variable and its initializer ignore enclosing control_dependencies,
        # so initializing it never runs (or waits for) the ops the user made it depend on.
        with graph.control_dependencies(None), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):  # built on no device, as TF's (which colocates it with the variable)
                with graph.name_scope("Initializer"), graph.device(None):
                    initial_value = initial_value()
            self._initial_value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value") \
                if not isinstance(initial_value, TensorLike) else convert_to_tensor(initial_value)
            if dtype is not None and self._initial_value.dtype != dtypes.as_dtype(dtype):
                self._initial_value = cast(self._initial_value, dtype)
            var_shape = as_shape(shape) if shape is not None else self._initial_value.shape
            if not var_shape.is_fully_defined():
                raise VariableV2.error(f"initial_value must have a fully defined shape, got {var_shape}", scope)
            self._variable = graph.add_stored_variable(self, lambda index: VariableV2(
                shape=var_shape, dtype=self._initial_value.dtype, var_index=index, name=scope))
            self._initializer_op = Assign(self._variable, self._initial_value, name="Assign").op
        self._trainable = trainable
        self.constraint = constraint
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
        graph.add_to_collections(collections, self)

    def _init_from_proto(self, variable_def, import_scope=None):
        """The Variable over ops already in the default graph (an imported meta graph's) that a
        VariableDef names: its VariableV2 output, its initializer op and initial value."""
        graph = get_default_graph()
        element = lambda name: graph.as_graph_element(prepend_name_scope(name, import_scope))  # noqa: E731
        self._variable = element(variable_def.variable_name)
        if not isinstance(self._variable, Tensor) or self._variable.op.type != "VariableV2":
            raise TypeError(f"VariableDef: {self._variable.name} is a {self._variable.op.type}, not a VariableV2")
        self._initializer_op = element(variable_def.initializer_name)
        self._initial_value = element(variable_def.initial_value_name) if variable_def.initial_value_name else None
        self._trainable = variable_def.trainable
        self.constraint = None
        if variable_def.HasField("save_slice_info_def"):  # a part of a partitioned variable
            from pygrad.ops.partitioned_variables import SaveSliceInfo
            self._save_slice_info = SaveSliceInfo(save_slice_info_def=variable_def.save_slice_info_def,
                                                  import_scope=import_scope)

    @staticmethod
    def from_proto(variable_def, import_scope=None):
        """The Variable a VariableDef names in the default graph: the one importing its VariableV2
        node made (Variable.over_new_op), given the VariableDef's initializer, initial value and
        trainable; a new Variable object if the op has none."""
        graph = get_default_graph()
        op = graph.as_graph_element(prepend_name_scope(variable_def.variable_name, import_scope)).op
        entry = graph.stored_variables[op.attrs["var_index"]] if op.type == "VariableV2" else None
        if isinstance(entry, Variable) and entry.op is op:
            entry._init_from_proto(variable_def, import_scope)
            return entry
        return Variable(variable_def=variable_def, import_scope=import_scope)

    def to_proto(self, export_scope=None):
        """The VariableDef of this variable (names without export_scope), or None if it is outside
        export_scope. pygrad reads a variable without a snapshot op: the snapshot is the variable's
        own output unless the graph has TF's "<name>/read" Identity."""
        from pygrad.tf_protos import VariableDef
        if export_scope and not self._variable.name.startswith(export_scope):
            return None
        op_names = {op.name for op in self.graph.get_operations()}
        read = self.op.name + "/read"
        strip = lambda name: strip_name_scope(name, export_scope)  # noqa: E731
        proto = VariableDef(variable_name=strip(self.name), trainable=self._trainable,
                            snapshot_name=strip(read + ":0" if read in op_names else self.name))
        if self._initializer_op is not None:
            proto.initializer_name = strip(self._initializer_op.name)
        if self._initial_value is not None:
            proto.initial_value_name = strip(self._initial_value.name)
        info = getattr(self, "_save_slice_info", None)
        if info is not None and info.to_proto(export_scope) is not None:
            proto.save_slice_info_def.CopyFrom(info.to_proto(export_scope))
        return proto

    @classmethod
    def over_new_op(cls, name, shape, dtype, trainable=True):
        """A variable whose VariableV2 op is named name exactly, with no initializer and in no
        collection yet (what importing a GraphDef's VariableV2 node makes; import_meta_graph then
        sets its initializer and collections from the MetaGraphDef's VariableDef)."""
        v = cls.__new__(cls)
        shape = as_shape(shape)
        if not shape.is_fully_defined():
            raise VariableV2.error(f"the shape must be fully defined, got {shape}", name)
        v._variable = get_default_graph().add_stored_variable(v, lambda index: VariableV2(
            shape=shape, dtype=dtypes.as_dtype(dtype), var_index=index, name=name + "/"))
        v._initial_value, v._initializer_op, v._trainable, v.constraint = None, None, trainable, None
        return v

    # ---- what the variable is ----
    def _as_graph_element(self):
        return self._variable

    @property
    def name(self):
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self._variable.shape

    @property
    def graph(self):
        return self._variable.graph

    @property
    def trainable(self):
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    @property
    def device(self):
        return self._variable.device

    def value(self):
        return self._variable

    def read_value(self):
        return self._variable

    def initialized_value(self):
        return self._initial_value

    # ---- writes ----
    def assign(self, value, use_locking=False, name=None, read_value=True):
        return assign(self._variable, value, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return assign_add(self._variable, delta, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return assign_sub(self._variable, delta, name=name)

    def load(self, value, session=None):
        """Writes value into the variable in session without adding ops to the graph."""
        session_for(self._variable, session).write_variable(self, value)

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def __repr__(self):
        return f"<pygrad.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


def global_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op that initializes var_list (a no-op when it is empty)."""
    if not var_list:
        return no_op(name=name)
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    return variables_initializer(global_variables())


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init_1")



