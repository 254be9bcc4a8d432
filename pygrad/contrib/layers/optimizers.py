"""tf.contrib.layers.optimize_loss and adaptive_clipping_fn, as TF 1.15's
contrib/layers/python/layers/optimizers.py: the optimizer named, given as a class, a callable of
the learning rate or an instance; the learning rate a float (a non-trainable variable
'OptimizeLoss/learning_rate'), a scalar tensor, optionally decayed; the gradients noised,
multiplied, clipped by global norm (or by a function), summarized, then applied. The returned
tensor is the loss, evaluated once the update is applied."""
import numbers

from pygrad import dtypes
from pygrad.graph import GraphKeys, Tensor, get_default_graph
from pygrad.ops import math_ops, summary_ops
from pygrad.ops.array_ops import constant, convert_to_tensor, identity, ones_like
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.ops.init_ops import constant_initializer, zeros_initializer
from pygrad.ops.manip_ops import where
from pygrad.ops.random_ops import truncated_normal
from pygrad.ops.state_ops import trainable_variables
from pygrad.ops.variable_scope import get_variable, variable_scope
from pygrad.train.clip import clip_by_global_norm, global_norm
from pygrad.train.moving_averages import assign_moving_average
from pygrad.train.optimizer import Optimizer
from pygrad.train.optimizers import (
    AdagradOptimizer,
    AdamOptimizer,
    FtrlOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    RMSPropOptimizer,
)
from pygrad.train.training_util import get_global_step

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "adaptive_clipping_fn", "optimize_loss"]

OPTIMIZER_CLS_NAMES = {
    "Adagrad": AdagradOptimizer,
    "Adam": AdamOptimizer,
    "Ftrl": FtrlOptimizer,
    "Momentum": lambda learning_rate: MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": RMSPropOptimizer,
    "SGD": GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm", "global_gradient_norm"]


def _with_dependencies(deps, tensor):
    with get_default_graph().control_dependencies(deps):
        return identity(tensor)


def _learning_rate(learning_rate):
    if learning_rate is None:
        return None
    if isinstance(learning_rate, Tensor) and learning_rate.shape.ndims == 0:
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError(f"optimize_loss: invalid learning_rate {learning_rate}.")
        return get_variable("learning_rate", [], trainable=False, initializer=constant_initializer(learning_rate))
    raise ValueError(f"Learning rate should be 0d Tensor or float. Got {learning_rate} of type {type(learning_rate)}")


def _optimizer(optimizer, lr, learning_rate):
    """The Optimizer instance optimize_loss's optimizer argument names."""
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is string ({optimizer}).")
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], you provided "
                             f"{optimizer}.")
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, Optimizer):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is class ({optimizer}).")
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, Optimizer):
            raise ValueError(  # noqa: TRY004  (TF's exception)
                f"Unrecognized optimizer: function should return subclass of Optimizer. Got {opt}.")
        return opt
    raise ValueError(f"Unrecognized optimizer: should be string, subclass of Optimizer, instance of subclass of "
                     f"Optimizer or function with one argument. Got {optimizer}.")


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None, gradient_multipliers=None,
                  clip_gradients=None, learning_rate_decay_fn=None, update_ops=None, variables=None, name=None,
                  summaries=None, colocate_gradients_with_ops=False, increment_global_step=True):
    """The loss, evaluated after one optimizer step on variables (default: the trainable ones)
    under the variable scope name (default 'OptimizeLoss'); the update ops (default: the
    UPDATE_OPS collection) run before the loss. summaries from OPTIMIZER_SUMMARIES (default:
    loss, learning_rate, global_gradient_norm). global_step (default: the graph's, if any) is
    incremented unless increment_global_step is False."""
    loss = convert_to_tensor(loss)
    if loss.shape.ndims != 0:
        raise ValueError(f"optimize_loss: loss {loss.name} must be a scalar, got shape {loss.shape}")
    if global_step is None:
        global_step = get_global_step()
    elif not (global_step.dtype.base_dtype.is_integer and global_step.shape.ndims == 0):
        raise TypeError(f"optimize_loss: global_step must be an integer scalar, got {global_step}")
    graph = get_default_graph()
    with variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = set(graph.get_collection(GraphKeys.UPDATE_OPS))
        if update_ops:
            loss = _with_dependencies(list(update_ops), loss)
        lr = _learning_rate(learning_rate)
        if summaries is None:
            summaries = ["loss", "learning_rate", "global_gradient_norm"]
        for summ in summaries:
            if summ not in OPTIMIZER_SUMMARIES:
                raise ValueError(f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}], you provided {summ}.")
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
            if "learning_rate" in summaries:
                summary_ops.scalar("learning_rate", lr)
        opt = _optimizer(optimizer, lr, learning_rate)
        if variables is None:
            variables = trainable_variables()
        gradients = opt.compute_gradients(loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gradient_noise_scale is not None:
            gradients = _add_scaled_noise_to_gradients(gradients, gradient_noise_scale)
        if gradient_multipliers is not None:
            gradients = _multiply_gradients(gradients, gradient_multipliers)
            if not gradients:
                raise ValueError("Empty list of (gradient, var) pairs encountered. This is most likely to be caused "
                                 "by an improper value of gradient_multipliers.")
        norm_summaries = "global_gradient_norm" in summaries or "gradient_norm" in summaries
        if norm_summaries:
            summary_ops.scalar("global_norm/gradient_norm", global_norm([g for g, _ in gradients]))
        if isinstance(clip_gradients, float):
            gradients = _clip_gradients_by_norm(gradients, clip_gradients)
        elif callable(clip_gradients):
            gradients = clip_gradients(gradients)
        elif clip_gradients is not None:
            raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
        if "loss" in summaries:
            summary_ops.scalar("loss", loss)
        for gradient, variable in gradients:
            values = gradient.values if isinstance(gradient, IndexedSlices) else gradient
            if values is not None:
                var_name = variable.name.replace(":", "_")
                if "gradients" in summaries:
                    summary_ops.histogram(f"gradients/{var_name}", values)
                if "gradient_norm" in summaries:
                    summary_ops.scalar(f"gradient_norm/{var_name}", global_norm([values]))
        if clip_gradients is not None and norm_summaries:
            summary_ops.scalar("global_norm/clipped_gradient_norm", global_norm([g for g, _ in gradients]))
        grad_updates = opt.apply_gradients(gradients, global_step=global_step if increment_global_step else None,
                                           name="train")
        return _with_dependencies([grad_updates], loss)


def _clip_gradients_by_norm(grads_and_vars, clip_gradients):
    grads, variables = zip(*grads_and_vars)
    clipped, _ = clip_by_global_norm(list(grads), clip_gradients)
    return list(zip(clipped, variables))


def _add_scaled_noise_to_gradients(grads_and_vars, gradient_noise_scale):
    """Each gradient plus truncated-normal noise times gradient_noise_scale."""
    out = []
    for grad, var in grads_and_vars:
        if grad is not None:
            shape = grad.dense_shape if isinstance(grad, IndexedSlices) else grad.shape
            grad = grad + truncated_normal(shape) * gradient_noise_scale
        out.append((grad, var))
    return out


def _multiply_gradients(grads_and_vars, gradient_multipliers):
    """contrib's multipliers: keyed by Variable or by variable name ('w:0'), as float32 constants."""
    out = []
    for grad, var in grads_and_vars:
        if grad is not None and (var in gradient_multipliers or var.name in gradient_multipliers):
            key = var if var in gradient_multipliers else var.name
            multiplier = constant(gradient_multipliers[key], dtype=dtypes.float32)
            if isinstance(grad, IndexedSlices):
                grad = IndexedSlices(grad.values * multiplier, grad.indices, grad.dense_shape)
            else:
                grad = grad * multiplier
        out.append((grad, var))
    return out


def _adaptive_max_norm(norm, std_factor, decay, global_step, epsilon, name):
    """exp(mean + std_factor * std) of moving averages of log(norm), and that mean."""
    with variable_scope(name, "AdaptiveMaxNorm", [norm]):
        log_norm = math_ops.log(norm + epsilon)

        def moving_average(var_name, value, decay):
            var = get_variable(var_name, shape=value.shape, dtype=value.dtype, initializer=zeros_initializer(),
                               trainable=False)
            return assign_moving_average(var, value, decay, zero_debias=False)

        if global_step is not None:
            n = math_ops.cast(global_step, dtypes.float32)
            decay = math_ops.minimum(decay, n / (n + 1.0))
        mean = moving_average("mean", log_norm, decay)
        sq_mean = moving_average("sq_mean", math_ops.square(log_norm), decay)
        std = math_ops.sqrt(math_ops.maximum(epsilon, sq_mean - math_ops.square(mean)))
        return math_ops.exp(mean + std_factor * std), mean


def adaptive_clipping_fn(std_factor=2.0, decay=0.95, static_max_norm=None, global_step=None, report_summary=False,
                         epsilon=1e-8, name=None):
    """A clip_gradients function: when the global norm exceeds exp(mean + std_factor * std) of
    the moving statistics of its log, the gradients are rescaled to the norm exp(mean)
    (arXiv:1412.1602, 3.2.1); static_max_norm bounds the norm too."""
    if not isinstance(std_factor, (numbers.Real, Tensor)):
        raise TypeError(f"adaptive_clipping_fn: std_factor must be a number or a tensor, got {std_factor!r}")

    def gradient_clipping(grads_and_vars):
        grads, variables = zip(*grads_and_vars)
        norm = global_norm(list(grads))
        max_norm, log_mean = _adaptive_max_norm(norm, std_factor, decay, global_step, epsilon, name)
        if report_summary:
            summary_ops.scalar("global_norm/adaptive_max_gradient_norm", max_norm)
        factor = where(math_ops.less(norm, max_norm), ones_like(norm), math_ops.exp(log_mean) / norm)
        if static_max_norm is not None:
            factor = math_ops.minimum(static_max_norm / norm, factor)
        clipped = []
        for grad in grads:
            if isinstance(grad, IndexedSlices):
                grad = IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
            elif grad is not None:
                grad = grad * factor
            clipped.append(grad)
        return list(zip(clipped, variables))

    return gradient_clipping
