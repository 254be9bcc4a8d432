"""slim.learning: TF-Slim's create_train_op (the train op is the total loss, computed after the
update ops and once the gradients are applied), its gradient transforms (clip_gradient_norms,
multiply_gradients, add_gradients_summaries) and train, TF-Slim's training loop.

TF-Slim's train runs on tf.train.Supervisor; here the same observable behaviour comes from
pygrad's MonitoredSession: the session is restored from the newest checkpoint of logdir, or else
initialized (init_op, then init_fn); a checkpoint <logdir>/model.ckpt-<global step> is written
when training starts, every save_interval_secs and when it ends; summary_op is written to logdir's
event file every save_summaries_secs. Single process: no sync_optimizer, no startup delay."""
import logging
import os
import time

from pygrad import errors
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.meta_graph import write_graph
from pygrad.ops import numerics, summary_ops
from pygrad.ops.array_ops import constant, convert_to_tensor, identity
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.ops.math_ops import equal, floormod, greater_equal
from pygrad.ops.state_ops import (
    global_variables_initializer,
    group,
    local_variables_initializer,
    no_op,
    trainable_variables,
)
from pygrad.train.clip import clip_by_norm, global_norm
from pygrad.train.hooks import CheckpointSaverHook, SummarySaverHook
from pygrad.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    Scaffold,
)
from pygrad.train.optimizer import Optimizer
from pygrad.train.saver import Saver
from pygrad.train.training_util import get_or_create_global_step

__all__ = ["add_gradients_summaries", "clip_gradient_norms", "create_train_op", "multiply_gradients", "train",
           "train_step"]

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


def _gradients_summaries(grads_and_vars, separator):
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
    """A histogram '<var>/gradient' and a scalar '<var>/gradient_norm' per gradient; the list of
    summaries made. (create_train_op's summaries, as TF-Slim's training module names them, are
    '<var>_gradient' and '<var>_gradient_norm'.)"""
    return _gradients_summaries(grads_and_vars, "/")


_USE_GLOBAL_STEP = 0


def _with_dependencies(deps, tensor):
    with get_default_graph().control_dependencies(deps):
        return identity(tensor)


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None, variables_to_train=None,
                    clip_gradient_norm=0, summarize_gradients=False, gate_gradients=Optimizer.GATE_OP,
                    aggregation_method=None, colocate_gradients_with_ops=False, gradient_multipliers=None,
                    check_numerics=True):
    """A tensor that runs the update ops (default: the UPDATE_OPS collection), then computes the
    gradients of total_loss wrt variables_to_train (default: the trainable variables),
    multiplies them (gradient_multipliers), clips each to clip_gradient_norm (when > 0), applies
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
    if gradient_multipliers:
        with graph.name_scope("multiply_grads"):
            grads = multiply_gradients(grads, gradient_multipliers)
    if clip_gradient_norm > 0:
        with graph.name_scope("clip_grads"):
            grads = clip_gradient_norms(grads, clip_gradient_norm)
    if summarize_gradients:
        with graph.name_scope("summarize_grads"):
            _gradients_summaries(grads, "_")
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with graph.name_scope("train_op"):
        if check_numerics:
            total_loss = numerics.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = _with_dependencies([grad_updates], total_loss)
    train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
    if train_op not in train_ops:
        train_ops.append(train_op)
    return train_op


def train_step(sess, train_op, global_step, train_step_kwargs):
    """Runs train_op once; (its value, whether train_step_kwargs' 'should_stop' says to stop).
    Logs the loss when 'should_log' is true."""
    start = time.time()
    total_loss, np_global_step = sess.run([train_op, global_step])
    elapsed = time.time() - start
    if "should_log" in train_step_kwargs and sess.run(train_step_kwargs["should_log"]):
        _log.info("global step %d: loss = %.4f (%.3f sec/step)", np_global_step, total_loss, elapsed)
    should_stop = bool(sess.run(train_step_kwargs["should_stop"])) if "should_stop" in train_step_kwargs else False
    return total_loss, should_stop


_USE_DEFAULT = 0


def _default_step_kwargs(global_step, number_of_steps, log_every_n_steps):
    """TF-Slim's default train_step_kwargs: should_stop (global_step >= number_of_steps) and
    should_log (every log_every_n_steps global steps)."""
    with get_default_graph().name_scope("train_step"):
        kwargs = {"should_stop": greater_equal(global_step, number_of_steps) if number_of_steps
                  else constant(False)}
        if log_every_n_steps > 0:
            kwargs["should_log"] = equal(floormod(global_step, log_every_n_steps), 0)
    return kwargs


def train(train_op, logdir, train_step_fn=train_step, train_step_kwargs=_USE_DEFAULT, log_every_n_steps=1,
          graph=None, master="", is_chief=True, global_step=None, number_of_steps=None, init_op=_USE_DEFAULT,
          init_feed_dict=None, local_init_op=_USE_DEFAULT, init_fn=None, ready_op=_USE_DEFAULT,
          summary_op=_USE_DEFAULT, save_summaries_secs=600, summary_writer=_USE_DEFAULT, startup_delay_steps=0,
          saver=None, save_interval_secs=600, sync_optimizer=None, session_config=None, session_wrapper=None,
          trace_every_n_steps=None, ignore_live_threads=False):
    """Runs train_step_fn(sess, train_op, global_step, train_step_kwargs) until it says to stop
    (by default once the global step reaches number_of_steps) or the input runs out; returns the
    last loss. init_fn(sess) runs after init_op when no checkpoint of logdir is restored. With
    logdir None, nothing is written."""
    if train_op is None:
        raise ValueError("train_op cannot be None.")
    if logdir is None:
        if summary_op is not _USE_DEFAULT:
            raise ValueError("Cannot provide summary_op because logdir=None")
        if saver is not None:
            raise ValueError("Cannot provide saver because logdir=None")
        if trace_every_n_steps is not None:
            raise ValueError("Cannot provide trace_every_n_steps because logdir=None")
    if not is_chief or sync_optimizer is not None or startup_delay_steps:
        raise NotImplementedError("slim.learning.train: pygrad trains in one process (is_chief=True, no "
                                  "sync_optimizer, no startup_delay_steps)")
    if trace_every_n_steps is not None:
        raise NotImplementedError("slim.learning.train: trace_every_n_steps (timelines) is not supported")
    if number_of_steps is not None and number_of_steps <= 0:
        raise ValueError("`number_of_steps` must be either None or a positive number.")
    graph = graph or get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = get_or_create_global_step()
        saver = saver or Saver()
        with graph.name_scope("init_ops"):
            if init_op is _USE_DEFAULT:
                init_op = global_variables_initializer()
            if local_init_op is _USE_DEFAULT:
                local_init_op = group(local_variables_initializer())
        if summary_op is _USE_DEFAULT:
            summary_op = summary_ops.merge_all()
        if train_step_kwargs is _USE_DEFAULT:
            train_step_kwargs = _default_step_kwargs(global_step, number_of_steps, log_every_n_steps)
        hooks = []
        if logdir:
            os.makedirs(logdir, exist_ok=True)
            write_graph(graph, logdir, "graph.pbtxt")
            hooks.append(CheckpointSaverHook(logdir, save_secs=save_interval_secs, saver=saver))
            if summary_op is not None and summary_writer is not None:
                writer = None if summary_writer is _USE_DEFAULT else summary_writer
                hooks.append(SummarySaverHook(save_secs=save_summaries_secs, summary_op=summary_op,
                                              output_dir=None if writer else logdir, summary_writer=writer))
        scaffold = Scaffold(init_op=init_op, init_feed_dict=init_feed_dict, local_init_op=local_init_op,
                            init_fn=(lambda _, sess: init_fn(sess)) if init_fn else None, summary_op=summary_op,
                            saver=saver)
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=session_config, checkpoint_dir=logdir)
        total_loss = None
        with MonitoredSession(session_creator=creator, hooks=hooks) as sess:
            _log.info("Starting Session.")
            if session_wrapper is not None:
                sess = session_wrapper(sess)
            try:
                while not sess.should_stop():
                    total_loss, should_stop = train_step_fn(sess, train_op, global_step, train_step_kwargs)
                    if should_stop:
                        _log.info("Stopping Training.")
                        break
            except errors.OutOfRangeError as e:
                _log.info("Caught OutOfRangeError. Stopping Training. %s", e)
            if logdir:
                _log.info("Finished training! Saving model to disk.")
    return total_loss
