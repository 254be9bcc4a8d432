"""slim.learning: TF-Slim's create_train_op (tf.contrib.training's, with gradient multipliers and
clipping), its gradient transforms (clip_gradient_norms, multiply_gradients,
add_gradients_summaries) and train, TF-Slim's training loop.

TF-Slim's train runs on tf.train.Supervisor; here the same observable behaviour comes from
pygrad's MonitoredSession: the session is restored from the newest checkpoint of logdir, or else
initialized (init_op, then init_fn); a checkpoint <logdir>/model.ckpt-<global step> is written
when training starts, every save_interval_secs and when it ends; summary_op is written to logdir's
event file every save_summaries_secs. Single process: no sync_optimizer, no startup delay."""
import logging
import os
import time

from pygrad import errors
from pygrad.contrib.training import training
from pygrad.contrib.training.training import (
    _USE_GLOBAL_STEP,
    clip_gradient_norms,
    gradients_summaries,
    multiply_gradients,
)
from pygrad.graph import get_default_graph
from pygrad.meta_graph import write_graph
from pygrad.ops import summary_ops
from pygrad.ops.array_ops import constant
from pygrad.ops.math_ops import equal, floormod, greater_equal
from pygrad.ops.state_ops import (
    global_variables_initializer,
    group,
    local_variables_initializer,
)
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


def add_gradients_summaries(grads_and_vars):
    """A histogram '<var>/gradient' and a scalar '<var>/gradient_norm' per gradient; the list of
    summaries made. (create_train_op's summaries, as TF-Slim's training module names them, are
    '<var>_gradient' and '<var>_gradient_norm'.)"""
    return gradients_summaries(grads_and_vars, "/")


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None, variables_to_train=None,
                    clip_gradient_norm=0, summarize_gradients=False, gate_gradients=Optimizer.GATE_OP,
                    aggregation_method=None, colocate_gradients_with_ops=False, gradient_multipliers=None,
                    check_numerics=True):
    """tf.contrib.training's create_train_op whose gradients are first multiplied
    (gradient_multipliers), then each clipped to clip_gradient_norm (when > 0)."""
    def transform_grads_fn(grads):
        graph = get_default_graph()
        if gradient_multipliers:
            with graph.name_scope("multiply_grads"):
                grads = multiply_gradients(grads, gradient_multipliers)
        if clip_gradient_norm > 0:
            with graph.name_scope("clip_grads"):
                grads = clip_gradient_norms(grads, clip_gradient_norm)
        return grads

    return training.create_train_op(
        total_loss, optimizer, global_step=global_step, update_ops=update_ops, variables_to_train=variables_to_train,
        transform_grads_fn=transform_grads_fn, summarize_gradients=summarize_gradients, gate_gradients=gate_gradients,
        aggregation_method=aggregation_method, colocate_gradients_with_ops=colocate_gradients_with_ops,
        check_numerics=check_numerics)


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
