"""tf.contrib.training's training module: create_train_op (the train op is the total loss,
computed after the update ops and once the gradients are applied) and the gradient transforms
(clip_gradient_norms, multiply_gradients, add_gradients_summaries). TF-Slim's learning module
builds on these."""
import logging

from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import numerics, summary_ops
from pygrad.ops.array_ops import convert_to_tensor, identity
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.ops.state_ops import no_op, trainable_variables
from pygrad.train.clip import clip_by_norm, global_norm
from pygrad.train.optimizer import Optimizer
from pygrad.train.training_util import get_or_create_global_step

__all__ = ["add_gradients_summaries", "clip_gradient_norms", "create_train_op", "multiply_gradients"]

_log = logging.getLogger("pygrad")


def clip_gradient_norms(gradients_to_variables, max_norm):
    """Each gradient clipped to the norm max_norm on its own (clip_by_norm; an IndexedSlices'
    values); None gradients pass through."""
    clipped = []
    for grad, var in gradients_to_variables:
        if isinstance(grad, IndexedSlices):
            grad = IndexedSlices(clip_by_norm(grad.values, max_norm), grad.indices, grad.dense_shape)
        elif grad is not None:
            grad = clip_by_norm(grad, max_norm)
        clipped.append((grad, var))
    return clipped


def multiply_gradients(grads_and_vars, gradient_multipliers):
    """The gradients of the variables gradient_multipliers names (by Variable or by op name)
    multiplied by their coefficient (a number or a tensor)."""
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")  # noqa: TRY004  (TF-Slim's exception)
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    if not isinstance(gradient_multipliers, dict):
        raise ValueError("`gradient_multipliers` must be a dict.")  # noqa: TRY004
    out = []
    for grad, var in grads_and_vars:
        key = var if var in gradient_multipliers else var.op.name
        if key in gradient_multipliers:
            if grad is None:
                raise ValueError("Requested multiple of `None` gradient.")
            values = grad.values if isinstance(grad, IndexedSlices) else grad
            multiplier = convert_to_tensor(gradient_multipliers[key], dtype=values.dtype)
            if isinstance(grad, IndexedSlices):
                grad = IndexedSlices(values * multiplier, grad.indices, grad.dense_shape)
            else:
                grad = grad * multiplier
        out.append((grad, var))
    return out


def gradients_summaries(grads_and_vars, separator):
    """The gradient summaries, named '<var><separator>gradient' and '<var><separator>gradient_norm'."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is None:
            _log.info("Var %s has no gradient", var.op.name)
            continue
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        summaries.append(summary_ops.histogram(var.op.name + separator + "gradient", values))
        summaries.append(summary_ops.scalar(var.op.name + separator + "gradient_norm", global_norm([values])))
    return summaries


def add_gradients_summaries(grads_and_vars):
    """A histogram '<var>_gradient' and a scalar '<var>_gradient_norm' per gradient; the list of
    summaries made."""
    return gradients_summaries(grads_and_vars, "_")


_USE_GLOBAL_STEP = 0


def _with_dependencies(deps, tensor):
    with get_default_graph().control_dependencies(deps):
        return identity(tensor)


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None, variables_to_train=None,
                    transform_grads_fn=None, summarize_gradients=False, gate_gradients=Optimizer.GATE_OP,
                    aggregation_method=None, colocate_gradients_with_ops=False, check_numerics=True):
    """A tensor that runs the update ops (default: the UPDATE_OPS collection), then computes the
    gradients of total_loss wrt variables_to_train (default: the trainable variables),
    passes them through transform_grads_fn (when given), applies
    them with optimizer (incrementing global_step, by default the graph's global step) and
    evaluates to total_loss (checked for NaN and Inf). Added to the TRAIN_OP collection."""
    graph = get_default_graph()
    if global_step is _USE_GLOBAL_STEP:
        global_step = get_or_create_global_step()
    global_update_ops = set(graph.get_collection(GraphKeys.UPDATE_OPS))
    update_ops = global_update_ops if update_ops is None else set(update_ops)
    if not global_update_ops.issubset(update_ops):
        _log.warning("update_ops in create_train_op does not contain all the update_ops in GraphKeys.UPDATE_OPS")
    if update_ops:
        with graph.control_dependencies(sorted(update_ops, key=lambda op: op.name)):
            barrier = no_op(name="update_barrier")
        total_loss = _with_dependencies([barrier], total_loss)
    if variables_to_train is None:
        variables_to_train = trainable_variables()
    else:
        trainable = set(trainable_variables())
        for v in variables_to_train:
            if not (getattr(v, "trainable", False) or v in trainable):
                raise ValueError(f"create_train_op: variables_to_train holds {v.op.name}, which is not trainable")
    if not variables_to_train:
        raise ValueError("create_train_op: there are no variables to train")
    grads = optimizer.compute_gradients(total_loss, variables_to_train, gate_gradients=gate_gradients,
                                        aggregation_method=aggregation_method,
                                        colocate_gradients_with_ops=colocate_gradients_with_ops)
    if transform_grads_fn:
        grads = transform_grads_fn(grads)
    if summarize_gradients:
        with graph.name_scope("summarize_grads"):
            add_gradients_summaries(grads)
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with graph.name_scope("train_op"):
        if check_numerics:
            total_loss = numerics.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = _with_dependencies([grad_updates], total_loss)
    train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
    if train_op not in train_ops:
        train_ops.append(train_op)
    return train_op
