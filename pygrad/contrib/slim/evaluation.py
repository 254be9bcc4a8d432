"""slim.evaluation: TF-Slim's evaluate_once and evaluation_loop, on TF's evaluation helpers
(tensorflow/python/training/evaluation.py and tf_slim/training/evaluation.py): a MonitoredSession
restores a checkpoint, runs eval_op num_evals times (an eval step counts them), then final_op,
whose value is returned, and writes summary_op to logdir at the checkpoint's global step.

As TF's, the session is restored from the checkpoint, so initial_op (the scaffold's init_op) and
init_fn run only when there is nothing to restore."""
import logging
import math
import time

from pygrad import dtypes
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import summary_ops
from pygrad.ops.array_ops import identity
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.state_ops import assign_add
from pygrad.ops.variable_scope import get_variable
from pygrad.summary.writer import FileWriterCache
from pygrad.train import checkpoint_management
from pygrad.train.hooks import FinalOpsHook, SessionRunArgs, SessionRunHook
from pygrad.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    Scaffold,
)
from pygrad.train.saver import Saver
from pygrad.train.training_util import get_or_create_global_step

__all__ = ["StopAfterNEvalsHook", "SummaryAtEndHook", "checkpoints_iterator", "evaluate_once", "evaluate_repeatedly",
           "evaluation_loop", "get_or_create_eval_step", "wait_for_new_checkpoint"]

_log = logging.getLogger("pygrad")


def get_or_create_eval_step():
    """The graph's eval step: an int64 local variable 'eval_step' in the EVAL_STEP collection."""
    steps = get_default_graph().get_collection(GraphKeys.EVAL_STEP)
    if len(steps) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    if steps:
        return steps[0]
    return get_variable("eval_step", shape=[], dtype=dtypes.int64, initializer=zeros_initializer(), trainable=False,
                        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.EVAL_STEP])


class StopAfterNEvalsHook(SessionRunHook):
    """Requests a stop once the evals-completed tensor (the eval step after its update) reaches
    num_evals; logs the progress."""

    def __init__(self, num_evals, log_progress=True):
        self._num_evals, self._log_progress = num_evals, log_progress
        self._evals_completed = None
        self._log_frequency = 1 if (num_evals is None or num_evals < 20) else math.floor(num_evals / 10.0)

    def _set_evals_completed_tensor(self, updated_eval_step):
        self._evals_completed = updated_eval_step

    def before_run(self, run_context):
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context, run_values):
        done = run_values.results["evals_completed"]
        if self._log_progress:
            if self._num_evals is None:
                _log.info("Evaluation [%d]", done)
            elif done % self._log_frequency == 0 or done == self._num_evals:
                _log.info("Evaluation [%d/%d]", done, self._num_evals)
        if self._num_evals is not None and done >= self._num_evals:
            run_context.request_stop()


class SummaryAtEndHook(SessionRunHook):
    """Runs summary_op (default: merge_all at begin) when the session ends and writes it to
    summary_writer (default: log_dir's cached FileWriter) at the global step."""

    def __init__(self, log_dir=None, summary_writer=None, summary_op=None, feed_dict=None):
        if log_dir is None and summary_writer is None:
            raise ValueError("One of log_dir or summary_writer should be used.")
        self._summary_op, self._replace_summary_op = summary_op, summary_op is None
        self._feed_dict, self._summary_writer, self._log_dir = feed_dict, summary_writer, log_dir

    def begin(self):
        if self._replace_summary_op:
            self._summary_op = summary_ops.merge_all()
        self._global_step = get_or_create_global_step()

    def after_create_session(self, session, coord):
        if self._summary_writer is None and self._log_dir:
            self._summary_writer = FileWriterCache.get(self._log_dir)

    def end(self, session):
        if self._summary_op is not None:
            step = int(session.run(self._global_step))
            summary = session.run(self._summary_op, self._feed_dict)
            if self._summary_writer:
                self._summary_writer.add_summary(summary, step)
        if self._summary_writer:
            self._summary_writer.flush()


def wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep=1, timeout=None):
    """The newest checkpoint of checkpoint_dir other than last_checkpoint, waited for; None after
    timeout seconds without one."""
    _log.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        path = checkpoint_management.latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            _log.info("Found new checkpoint at %s", path)
            return path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new checkpoint of checkpoint_dir, at least min_interval_secs apart; stops after
    a timeout unless timeout_fn() returns False (then it waits again)."""
    path = None
    while True:
        new_path = wait_for_new_checkpoint(checkpoint_dir, path, timeout=timeout)
        if new_path is None:
            if not timeout_fn:
                _log.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        path = new_path
        yield path
        wait = start + min_interval_secs - time.time()
        if wait > 0:
            time.sleep(wait)


def _with_eval_step(eval_ops, update_eval_step):
    if isinstance(eval_ops, dict):
        eval_ops["update_eval_step"] = update_eval_step
        return eval_ops
    if isinstance(eval_ops, (tuple, list)):
        return list(eval_ops) + [update_eval_step]
    return [eval_ops, update_eval_step]


def _run_evals(session_creator, hooks, eval_ops, feed_dict):
    with MonitoredSession(session_creator=session_creator, hooks=hooks) as session:
        _log.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime()))
        if eval_ops is not None:
            while not session.should_stop():
                session.run(eval_ops, feed_dict)
    _log.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime()))


def _evaluate_once(checkpoint_path, master="", scaffold=None, eval_ops=None, feed_dict=None, final_ops=None,
                  final_ops_feed_dict=None, hooks=None, config=None):
    """Restores checkpoint_path, runs eval_ops until a hook stops (StopAfterNEvalsHook counts the
    eval step), then final_ops; returns their value (TF's training/evaluation.py _evaluate_once)."""
    eval_step = get_or_create_eval_step()
    hooks = list(hooks or [])
    if eval_ops is not None:
        eval_ops = _with_eval_step(eval_ops, assign_add(eval_step, 1, use_locking=True))
        deps = list(eval_ops.values()) if isinstance(eval_ops, dict) else eval_ops
        with get_default_graph().control_dependencies(deps):
            eval_step_value = identity(eval_step.read_value())
        for h in hooks:
            if isinstance(h, StopAfterNEvalsHook):
                h._set_evals_completed_tensor(eval_step_value)
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
                                  config=config)
    final_ops_hook = FinalOpsHook(final_ops, final_ops_feed_dict)
    _run_evals(creator, hooks + [final_ops_hook], eval_ops, feed_dict)
    return final_ops_hook.final_ops_values


def evaluate_repeatedly(checkpoint_dir, master="", scaffold=None, eval_ops=None, feed_dict=None, final_ops=None,
                        final_ops_feed_dict=None, eval_interval_secs=60, hooks=None, config=None,
                        max_number_of_evaluations=None, timeout=None, timeout_fn=None):
    """_evaluate_once for each new checkpoint of checkpoint_dir (checkpoints_iterator), at most
    max_number_of_evaluations times; returns the last final_ops value."""
    eval_step = get_or_create_eval_step()
    hooks = list(hooks or [])
    if eval_ops is not None:
        update_eval_step = assign_add(eval_step, 1)
        for h in hooks:
            if isinstance(h, StopAfterNEvalsHook):
                h._set_evals_completed_tensor(update_eval_step)
        eval_ops = _with_eval_step(eval_ops, update_eval_step)
    final_ops_hook = FinalOpsHook(final_ops, final_ops_feed_dict)
    hooks.append(final_ops_hook)
    paths = checkpoints_iterator(checkpoint_dir, min_interval_secs=eval_interval_secs, timeout=timeout,
                                 timeout_fn=timeout_fn)
    for num_evaluations, path in enumerate(paths, start=1):
        creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=path, master=master,
                                      config=config)
        _run_evals(creator, hooks, eval_ops, feed_dict)
        if max_number_of_evaluations is not None and num_evaluations >= max_number_of_evaluations:
            break
    return final_ops_hook.final_ops_values


_USE_DEFAULT = 0


def _slim_hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks):
    if summary_op is _USE_DEFAULT:
        summary_op = summary_ops.merge_all()
    all_hooks = [StopAfterNEvalsHook(num_evals)]
    if summary_op is not None:
        all_hooks.append(SummaryAtEndHook(log_dir=logdir, summary_op=summary_op, feed_dict=summary_op_feed_dict))
    return all_hooks + list(hooks or [])


def evaluate_once(master, checkpoint_path, logdir, num_evals=1, initial_op=None, initial_op_feed_dict=None,
                       eval_op=None, eval_op_feed_dict=None, final_op=None, final_op_feed_dict=None,
                       summary_op=_USE_DEFAULT, summary_op_feed_dict=None, variables_to_restore=None,
                       session_config=None, hooks=None):
    """TF-Slim's evaluate_once: restores checkpoint_path (variables_to_restore, default all),
    runs eval_op num_evals times, writes summary_op (default merge_all) to logdir and returns
    final_op's value."""
    all_hooks = _slim_hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks)
    saver = None if variables_to_restore is None else Saver(variables_to_restore)
    return _evaluate_once(checkpoint_path, master=master,
                         scaffold=Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict, saver=saver),
                         eval_ops=eval_op, feed_dict=eval_op_feed_dict, final_ops=final_op,
                         final_ops_feed_dict=final_op_feed_dict, hooks=all_hooks, config=session_config)


def evaluation_loop(master, checkpoint_dir, logdir, num_evals=1, initial_op=None, initial_op_feed_dict=None,
                    init_fn=None, eval_op=None, eval_op_feed_dict=None, final_op=None, final_op_feed_dict=None,
                    summary_op=_USE_DEFAULT, summary_op_feed_dict=None, variables_to_restore=None,
                    eval_interval_secs=60, max_number_of_evaluations=None, session_config=None, timeout=None,
                    timeout_fn=None, hooks=None):
    """TF-Slim's evaluation_loop: evaluate_once on each new checkpoint of checkpoint_dir, at least
    eval_interval_secs apart, until max_number_of_evaluations or timeout seconds without a new
    checkpoint; returns the last final_op value."""
    all_hooks = _slim_hooks(num_evals, logdir, summary_op, summary_op_feed_dict, hooks)
    saver = None if variables_to_restore is None else Saver(variables_to_restore)
    scaffold = Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict, init_fn=init_fn, saver=saver)
    return evaluate_repeatedly(checkpoint_dir, master=master, scaffold=scaffold, eval_ops=eval_op,
                               feed_dict=eval_op_feed_dict, final_ops=final_op, final_ops_feed_dict=final_op_feed_dict,
                               eval_interval_secs=eval_interval_secs, hooks=all_hooks, config=session_config,
                               max_number_of_evaluations=max_number_of_evaluations, timeout=timeout,
                               timeout_fn=timeout_fn)
