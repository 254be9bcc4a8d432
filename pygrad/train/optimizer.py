"""Optimizer: compute_gradients / apply_gradients / minimize, as in TF1's tf.train.Optimizer."""
from pygrad import gradients as _gradients
from pygrad.graph import GraphKeys, Tensor, TensorLike, get_default_graph
from pygrad.ops import array_ops, state_ops
from pygrad.ops.training_ops import ApplyGradientDescent


class Optimizer:
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name

    def get_name(self):
        return self._name

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """[(gradient, variable)] for var_list (default: the trainable variables); the gradient is
        None for a variable the loss does not depend on."""
        if isinstance(loss, TensorLike) and not isinstance(loss, Tensor):
            loss = loss._as_graph_element()
        if var_list is None:
            var_list = loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = _gradients.gradients(loss, [v._as_graph_element() if hasattr(v, "_as_graph_element") else v
                                            for v in var_list], grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An op applying each (gradient, variable) update; pairs whose gradient is None are skipped.
        global_step, if given, is incremented once the updates are done."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: {[v.name for _, v in grads_and_vars]}.")
        graph = get_default_graph()
        with graph.name_scope(name or self._name):
            self._prepare()
            updates = []
            for g, v in pairs:
                g = array_ops.convert_to_tensor(g, dtype=v.dtype)
                with graph.name_scope("update_" + v.op.name):
                    updates.append(self._apply_dense(g, v))
            if global_step is None:
                return state_ops.group(*updates, name=name or self._name)
            with graph.control_dependencies(updates):
                return state_ops.assign_add(global_step, 1, name=name or self._name).op

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if all(g is None for g, _ in grads_and_vars):
            raise ValueError(f"No gradients provided for any variable, check your graph for ops that do not support "
                             f"gradients, between variables {[v.name for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError(f"{type(self).__name__} must define _apply_dense")


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad, one fused native pass per variable."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var):
        lr = array_ops.convert_to_tensor(self._learning_rate, dtype=var.dtype, name="learning_rate")
        return ApplyGradientDescent(var._as_graph_element(), lr, grad, name="ApplyGradientDescent")
