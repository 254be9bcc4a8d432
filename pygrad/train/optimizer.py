"""Optimizer: compute_gradients / apply_gradients / minimize and slot variables, as TF1's
tf.train.Optimizer. Subclasses give _create_slots and _apply_dense (one fused op per variable)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pygrad import gradients as _gradients
from pygrad.graph import GraphKeys, Operation, Tensor, TensorLike, get_default_graph, unwrap
from pygrad.ops import array_ops, state_ops
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.train.slot_creator import create_slot


class Optimizer:
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}  # slot name -> {variable: slot variable}
        self._non_slots = {}  # (name, graph) -> variable

    def get_name(self):
        return self._name

    # ---------------------------------------------------------------- the three steps
    def compute_gradients(self, loss: Tensor | Callable[[], Tensor], var_list: Iterable[Any] | None = None,
                          gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Tensor | None = None) -> list[tuple[Any, Any]]:
        """[(gradient, variable)] for var_list (default: the trainable variables); the gradient is
        None for a variable the loss does not depend on."""
        if callable(loss) and not isinstance(loss, TensorLike):
            loss = loss()
        loss = unwrap(loss)
        if var_list is None:
            var_list = loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        else:
            var_list = list(var_list)
        if loss.dtype.name not in ("float16", "float32", "float64"):  # TF's check and text
            raise ValueError(loss.op.error(f"Invalid type tf.{loss.dtype.name} for {loss.name}, expected: "
                                           f"[tf.float16, tf.bfloat16, tf.float32, tf.float64]."))
        if not var_list:
            raise ValueError(loss.op.error("No variables to optimize."))
        grads = _gradients.gradients(loss, var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Any]], global_step: Any = None,
                        name: str | None = None) -> Operation:
        """An op applying each (gradient, variable) update; pairs whose gradient is None are skipped.
        global_step, if given, is incremented once the updates are done. As in TF, the returned op
        takes the name of the optimizer's scope ("Adam", "Adam_1", ...)."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: {[v.name for _, v in grads_and_vars]}.")
        graph = get_default_graph()
        # Slots are built outside any control_dependencies (TF's init_scope, which keeps the name
        # scope): under control_dependencies(update_ops), their initializers must not run the updates.
        with graph.control_dependencies(None):
            self._create_slots([v for _, v in pairs])
        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            updates = []
            for g, v in pairs:
                sparse = isinstance(g, IndexedSlices)
                if not sparse:
                    g = array_ops.convert_to_tensor(g)
                if g.dtype != v.dtype:
                    raise TypeError(f"{self._name}: gradient for {v.name} has dtype {g.dtype.name}, the variable "
                                    f"{v.dtype.name}")
                with graph.name_scope("update_" + v.op.name), graph.colocate_with(v):  # on the variable's device
                    updates.append(self._apply_sparse_duplicate_indices(g, v) if sparse else self._apply_dense(g, v))
            if global_step is None:
                return self._finish(updates, scope)
            with graph.control_dependencies([self._finish(updates, "update")]), graph.colocate_with(global_step):
                return state_ops.assign_add(global_step, 1, name=scope).op

    def minimize(self, loss: Tensor | Callable[[], Tensor], global_step: Any = None,
                 var_list: Iterable[Any] | None = None, gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Tensor | None = None) -> Operation:
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if all(g is None for g, _ in grads_and_vars):
            loss = unwrap(loss() if callable(loss) and not isinstance(loss, TensorLike) else loss)
            raise ValueError(loss.op.error(
                f"No gradients provided for any variable, check your graph for ops that do not support gradients, "
                f"between variables {[v.name for _, v in grads_and_vars]} and loss {loss.name}."))
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    # ---------------------------------------------------------------- slots
    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self):
        return sorted(self._slots)

    def variables(self):
        """The slot and non-slot variables of the default graph, sorted by name (as TF's)."""
        graph = get_default_graph()
        out = [s for slots in self._slots.values() for s in slots.values()] + list(self._non_slots.values())
        return sorted((v for v in out if v.graph is graph), key=lambda v: v.name)

    def _slot(self, var, slot_name, initial_value, op_name):
        """The slot variable `slot_name` of var, created on first use as '<var>/<op_name>' (see
        slot_creator.create_slot for the scoping)."""
        slots = self._slots.setdefault(slot_name, {})
        if var not in slots:
            slots[var] = create_slot(var, initial_value, op_name)
        return slots[var]

    def _zeros_slot(self, var, slot_name, op_name):
        with get_default_graph().colocate_with(var):
            return self._slot(var, slot_name, array_ops.zeros(var.shape, var.dtype), op_name)

    def _non_slot(self, name, initial_value, colocate_with):
        """A variable shared by all updates of this optimizer in a graph (Adam's beta powers), named
        in the current name scope and placed with colocate_with, as TF's _create_non_slot_variable."""
        graph = get_default_graph()
        key = (name, graph)
        if key not in self._non_slots:
            with graph.colocate_with(colocate_with):
                self._non_slots[key] = state_ops.Variable(initial_value, trainable=False, name=name)
        return self._non_slots[key]

    # ---------------------------------------------------------------- what subclasses give
    def _create_slots(self, var_list):
        pass

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError(f"{type(self).__name__} must define _apply_dense")

    def _apply_sparse_duplicate_indices(self, grad, var):
        """An IndexedSlices gradient, whose indices may repeat. The sparse kernels sum repeated rows
        first, as TF's base Optimizer does here before _apply_sparse."""
        return self._apply_sparse(grad, var)

    def _apply_sparse(self, grad, var):
        """Subclasses with a sparse rule override this; the others apply the dense gradient."""
        return self._apply_dense(array_ops.convert_to_tensor(grad), var)

    def _finish(self, update_ops, name):
        return state_ops.group(*update_ops, name=name)

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _hyper(value, name):
        """A hyperparameter as a tensor: a Python number becomes float32 (as in TF), a callable is called."""
        value = value() if callable(value) else value
        return array_ops.convert_to_tensor(value, name=name, preferred_dtype="float32")

    @staticmethod
    def _for(t, var):
        return array_ops.cast(t, var.dtype)
