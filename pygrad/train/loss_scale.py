"""tf.train.experimental.LossScale, FixedLossScale and DynamicLossScale: TF1's loss scales
(tensorflow/python/training/experimental/loss_scale.py). MixedPrecisionLossScaleOptimizer
multiplies the loss by the scale and divides the gradients by it, so that small gradients of a
reduced-precision product do not round to zero.

A DynamicLossScale holds two non-trainable variables, made when it is constructed, in the current
name scope and with TF's names, so that checkpoints cross: `current_loss_scale` (float32, starting
at initial_loss_scale) and `good_steps` (int64, the steps with finite gradients since the scale
last changed). Its update, when every gradient is finite: good_steps + 1 >= increment_period
multiplies the scale by multiplier (kept only if the product is finite) and resets good_steps,
otherwise good_steps grows by one; when a gradient holds an Inf or a NaN: the scale is divided by
multiplier (to no less than 1), good_steps is reset, and the optimizer skips the step.

TF builds the update from conds whose branches return the assignments, Operations; pygrad's cond
takes tensors, so `cond_running` gives each branch a tensor that waits for its op, which is what
TF1's cond makes of an Operation (its predicate, with the op as a control input).
"""
from __future__ import annotations

import abc
from typing import Any

from pygrad import dtypes, nest
from pygrad.graph import Operation, Tensor, get_default_graph
from pygrad.ops import array_ops, control_flow_ops, math_ops, reduction_ops, state_ops
from pygrad.ops.cumulative_ops import is_finite
from pygrad.ops.indexed_slices import IndexedSlices


def cond_running(pred, true_fn, false_fn):
    """TF1's tf.cond of branches that return ops: runs true_fn's ops if pred, else false_fn's.
    Returns the If op."""
    graph = get_default_graph()

    def branch(fn):
        def run():
            with graph.control_dependencies([fn()]):
                return array_ops.identity(pred)
        return run

    return control_flow_ops.cond(pred, branch(true_fn), branch(false_fn)).op


class LossScale(metaclass=abc.ABCMeta):
    """The base class of TF1's loss scales: calling one gives the scale (a scalar float32 tensor);
    update(grads) gives (the op that updates it, whether to apply the gradients this step)."""

    def __init__(self) -> None:
        self._weights: dict[tuple[str, Any], state_ops.Variable] = {}  # (name, graph) -> variable

    @abc.abstractmethod
    def __call__(self) -> Tensor:
        """The current loss scale, a scalar float32 tensor."""

    @abc.abstractmethod
    def update(self, grads: Any) -> tuple[Operation, Any]:
        """(update_op, should_apply_gradients) for the unscaled gradients grads (a nested
        structure; None entries are ignored). should_apply_gradients is a bool or a scalar bool
        tensor: False when the step must be skipped."""

    @abc.abstractmethod
    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments, for from_config."""

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LossScale:
        return cls(**config)

    def _add_weight(self, name, initial_value, dtype=None):
        """A non-trainable variable of this loss scale, named name in the current name scope.
        RuntimeError if this loss scale has one of that name in the default graph already."""
        variable = state_ops.Variable(initial_value, trainable=False, name=name, dtype=dtype)
        key = (name, get_default_graph())
        if self._weights.get(key) is not None:
            raise RuntimeError(f"Duplicate variables detected. {key}")
        self._weights[key] = variable
        return variable


class FixedLossScale(LossScale):
    """A loss scale that never changes; its update never skips a step."""

    def __init__(self, loss_scale_value: float) -> None:
        super().__init__()
        if not isinstance(loss_scale_value, (int, float)):
            raise ValueError("loss_scale_value must be a Python int or float.")
        if loss_scale_value < 1:
            raise ValueError("loss_scale_value must be at least 1.")
        self._loss_scale_value = float(loss_scale_value)  # a Python float: the tensor is made where it is used

    def __call__(self) -> Tensor:
        return array_ops.convert_to_tensor(self._loss_scale_value)

    def update(self, grads):
        return state_ops.no_op(), True

    def __repr__(self):
        return f"FixedLossScale({self._loss_scale_value})"

    def get_config(self):
        return {"loss_scale_value": self._loss_scale_value}


def _is_all_finite(grads):
    """A scalar bool tensor: whether every gradient (an IndexedSlices' values) is finite."""
    finite = [reduction_ops.reduce_all(is_finite(g.values if isinstance(g, IndexedSlices) else g))
              for g in grads if g is not None]
    return reduction_ops.reduce_all(finite)


def _assign_if_finite(var, value):
    return cond_running(is_finite(value), lambda: var.assign(value).op, state_ops.no_op)


class DynamicLossScale(LossScale):
    """A loss scale that grows by multiplier after increment_period steps with finite gradients
    and shrinks by it, skipping the step, when a gradient is not finite (see the module's text).
    The default initial scale, 2 ** 15, is about half the largest float16."""

    def __init__(self, initial_loss_scale: float = 2 ** 15, increment_period: int = 2000,
                 multiplier: float = 2.) -> None:
        super().__init__()
        self._initial_loss_scale = float(initial_loss_scale)
        self._increment_period = int(increment_period)
        self._multiplier = float(multiplier)
        self._current_loss_scale = self._add_weight("current_loss_scale", self._initial_loss_scale, dtypes.float32)
        self._num_good_steps = self._add_weight("good_steps", 0, dtypes.int64)

    initial_loss_scale = property(lambda self: self._initial_loss_scale)
    increment_period = property(lambda self: self._increment_period)
    multiplier = property(lambda self: self._multiplier)

    def __call__(self) -> Tensor:
        return array_ops.convert_to_tensor(self._current_loss_scale)

    def update(self, grads):
        finite = _is_all_finite(nest.flatten(grads))
        scale, good_steps = self._current_loss_scale, self._num_good_steps

        def if_finite():
            def grow():
                return state_ops.group(_assign_if_finite(scale, scale * self._multiplier), good_steps.assign(0))
            return cond_running(good_steps + 1 >= self._increment_period, grow,
                                lambda: good_steps.assign_add(1).op)

        def if_not_finite():
            return state_ops.group(good_steps.assign(0), scale.assign(math_ops.maximum(scale / self._multiplier, 1)))

        return cond_running(finite, if_finite, if_not_finite), finite

    def __repr__(self):
        return (f"DynamicLossScale(initial_loss_scale={self.initial_loss_scale}, "
                f"increment_period={self.increment_period}, multiplier={self.multiplier})")

    def get_config(self):
        return {"initial_loss_scale": self.initial_loss_scale, "increment_period": self.increment_period,
                "multiplier": self.multiplier}


def get(identifier):
    """A loss scale from a number (FixedLossScale), 'dynamic' (DynamicLossScale()), a LossScale or None."""
    if isinstance(identifier, (int, float)):
        return FixedLossScale(identifier)
    if identifier == "dynamic":
        return DynamicLossScale()
    if isinstance(identifier, LossScale):
        return identifier
    if identifier is None:
        return None
    raise ValueError(f"Could not interpret loss scale identifier: {identifier}")
