"""tf.train.experimental.MixedPrecisionLossScaleOptimizer: TF1's optimizer that applies loss
scaling around another (tensorflow/python/training/experimental/loss_scale_optimizer.py).

compute_gradients multiplies the loss by the loss scale and the wrapped optimizer's gradients by
1 / loss scale. With a DynamicLossScale, apply_gradients returns a group, named as the optimizer,
of the loss scale's update and a cond that runs the wrapped optimizer's apply_gradients (named
'<name>-wrapped', global step included) only when every gradient is finite; with any other loss
scale it is the wrapped optimizer's apply_gradients. As in TF, the wrapper holds no slots of its own
(get_slot gives None, get_slot_names []); variables() are the wrapped optimizer's, then the loss
scale's. The update is built before the cond, so the wrapped optimizer's non-slot variables are
named inside the cond's name scope ('cond_1/beta1_power'), as with TF1's control flow.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pygrad.graph import Operation, Tensor, TensorLike
from pygrad.ops import array_ops, state_ops
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.train import loss_scale as loss_scale_module
from pygrad.train.optimizer import Optimizer


class MixedPrecisionLossScaleOptimizer(Optimizer):
    """opt (an Optimizer) with loss scaling; loss_scale is a LossScale, a number (a
    FixedLossScale) or 'dynamic' (a DynamicLossScale with TF's defaults)."""

    def __init__(self, opt: Optimizer, loss_scale: Any) -> None:
        if not isinstance(opt, Optimizer):
            raise ValueError(f'"opt" must be an instance of Optimizer, but got: {type(opt)}')
        self._optimizer = opt
        super().__init__(opt._use_locking, opt.get_name())
        self._loss_scale = loss_scale_module.get(loss_scale)
        if self._loss_scale is None:
            raise ValueError("loss_scale cannot be None")

    def _doing_dynamic_loss_scaling(self):
        return isinstance(self._loss_scale, loss_scale_module.DynamicLossScale)

    def compute_gradients(self, loss: Tensor | Callable[[], Tensor], var_list: Iterable[Any] | None = None,
                          gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Tensor | None = None) -> list[tuple[Any, Any]]:
        """The wrapped optimizer's [(gradient, variable)] of loss * loss scale, each gradient
        divided by the loss scale (None stays None)."""
        grads_and_vars = self._optimizer.compute_gradients(
            self._scale_loss(loss), var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method, colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss)
        grads = self._unscale_grads([g for g, _ in grads_and_vars])
        return list(zip(grads, [v for _, v in grads_and_vars]))

    def _scale_loss(self, loss):
        scale = self._loss_scale()
        if callable(loss) and not isinstance(loss, TensorLike):
            def scaled_loss():
                value = loss()
                return value * array_ops.cast(scale, value.dtype)
            return scaled_loss
        return loss * array_ops.cast(scale, loss.dtype)

    def _unscale_grads(self, grads):
        reciprocal = 1 / self._loss_scale()
        return [None if g is None else
                g.with_values(g.values * reciprocal) if isinstance(g, IndexedSlices) else g * reciprocal
                for g in grads]

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Any]], global_step: Any = None,
                        name: str | None = None) -> Operation:
        """The wrapped optimizer's update, skipped (global_step not incremented) when a dynamic
        loss scale finds a gradient that is not finite; the loss scale's update."""
        if not self._doing_dynamic_loss_scaling():
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)
        grads_and_vars = tuple(grads_and_vars)
        name = name if name is not None else self.get_name()
        update_op, should_apply = self._loss_scale.update([g for g, _ in grads_and_vars])

        def apply():
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name + "-wrapped")

        if isinstance(should_apply, bool):  # TF's smart_cond: a Python bool decides now
            maybe_apply = apply() if should_apply else state_ops.no_op()
        else:
            maybe_apply = loss_scale_module.cond_running(should_apply, apply, state_ops.no_op)
        return state_ops.group(maybe_apply, update_op, name=name)

    def _apply_dense(self, grad, var):
        raise RuntimeError("This function should never be called")

    def _apply_sparse(self, grad, var):
        raise RuntimeError("This function should never be called")

    def variables(self):
        """The wrapped optimizer's variables, then the loss scale's."""
        return self._optimizer.variables() + list(self._loss_scale._weights.values())
