"""Session run hooks, as TensorFlow 1's session_run_hook.py and basic_session_run_hooks.py: a hook
sees each MonitoredSession.run (before_run may add fetches and feeds, after_run gets their
values) and the session's start and end. StopAtStepHook, LoggingTensorHook, CheckpointSaverHook,
NanTensorHook, StepCounterHook, SummarySaverHook and FinalOpsHook are TF's."""
import collections
import logging
import os
import time

import numpy as np

from pygrad.graph import GraphKeys, get_default_graph
from pygrad.summary.writer import FileWriterCache
from pygrad.train.training_util import get_global_step

_log = logging.getLogger("pygrad")
SAVERS = GraphKeys.SAVERS


class SessionRunHook:
    """Hook into MonitoredSession: begin, after_create_session, before_run, after_run, end."""

    def begin(self):
        """Called once before the session is made; the last chance to add ops to the graph."""

    def after_create_session(self, session, coord):
        """Called when the session is ready (restored or initialized)."""

    def before_run(self, run_context):
        """Returns a SessionRunArgs of what to add to the coming run, or None."""
        return None

    def after_run(self, run_context, run_values):
        """Called after each run with the values of what before_run asked for."""

    def end(self, session):
        """Called at the end of the session (not after an error)."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches (any structure Session.run takes) and feeds."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run in progress, as a hook sees it: the caller's arguments, the session, and a way to
    ask the loop to stop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """The values of a hook's fetches in the run just done."""


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


# ---------------------------------------------------------------- timers


class SecondOrStepTimer:
    """Triggers every every_secs seconds or every every_steps steps (exactly one of them)."""

    def __init__(self, every_secs=None, every_steps=None):
        self.reset()
        self._every_secs, self._every_steps = every_secs, every_steps
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step):
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step):
        """(seconds, steps) since the last trigger (None, None the first time); records step."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step):
        return False


def _global_step_or_fail(hook_name):
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return step


def _as_graph_element(obj):
    return get_default_graph().as_graph_element(obj)


# ---------------------------------------------------------------- the hooks


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches last_step (or num_steps past its value when
    the session starts)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError("num_steps must be non-negative")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._global_step_tensor = _global_step_or_fail("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        # The fetched step may be the one before this run's update; read it again to be sure.
        if run_values.results + 1 >= self._last_step and \
                run_context.session.run(self._global_step_tensor) >= self._last_step:
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs tensors (a dict of tags, or a list of tensors or names) every N runs or seconds,
    and/or at the end, through the 'pygrad' logger at INFO level."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = [getattr(t, "name", t) for t in tensors]
            tensors = dict(zip(self._tag_order, tensors))
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._timer = _NeverTriggerTimer() if only_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end, self._formatter = at_end, formatter

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._current = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log_tensors(self, values):
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter:
                _log.info(self._formatter(values))
                return
            stats = ", ".join("%s = %s" % (tag, values[tag]) for tag in self._tag_order)
        if elapsed is not None:
            _log.info("%s (%.3f sec)", stats, elapsed)
        else:
            _log.info("%s", stats)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current))


class CheckpointSaverListener:
    """Called around the saves of a CheckpointSaverHook; after_save returning True stops training."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint (<checkpoint_dir>/<checkpoint_basename>-<global step>) when the session
    starts, every save_secs seconds or save_steps steps, and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None, checkpoint_basename="model.ckpt",
                 scaffold=None, listeners=None, save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver, self._scaffold = saver, scaffold
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self):
        self._global_step_tensor = _global_step_or_fail("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step_tensor))
        os.makedirs(self._checkpoint_dir, exist_ok=True)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._global_step_tensor))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session, step):
        """Saves; True if a listener asks to stop."""
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        stops = [bool(listener.after_save(session, step)) for listener in self._listeners]  # call every one
        return any(stops)

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {SAVERS}. Please add a saver to the collection or provide a "
                               f"saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {SAVERS}. Please indicate which one to use by "
                               f"passing it to the constructor.")
        self._saver = savers[0]
        return self._saver


class FinalOpsHook(SessionRunHook):
    """Runs final_ops when the session ends; final_ops_values holds what they returned."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops, self._final_ops_feed_dict = final_ops, final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)


class NanTensorHook(SessionRunHook):
    """Fails (NanLossDuringTrainingError) or requests a stop when loss_tensor is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor, self._fail_on_nan_loss = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(message)
                raise NanLossDuringTrainingError
            _log.warning(message)
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Logs the global steps per second every every_n_steps steps (or every_n_secs seconds), and
    writes it as the scalar "global_step/sec" to summary_writer (or output_dir's cached writer)."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._output_dir, self._writer = output_dir, summary_writer
        self.steps_per_sec = None

    def begin(self):
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_or_fail("StepCounterHook")

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                elapsed, steps = self._timer.update_last_triggered_step(step)
                if elapsed:
                    self.steps_per_sec = steps / elapsed
                    _log.info("global_step/sec: %g", self.steps_per_sec)
                    if self._writer is not None:
                        from pygrad.tf_protos import Summary
                        self._writer.add_summary(Summary(value=[Summary.Value(
                            tag="global_step/sec", simple_value=self.steps_per_sec)]), step)


class SummarySaverHook(SessionRunHook):
    """Runs summary_op (or the scaffold's) every save_steps steps or save_secs seconds and writes
    what it returns to summary_writer (or output_dir's cached FileWriter) at the global step; a
    SessionLog START marks the first run, as TF's hook does."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_or_fail("SummarySaverHook")

    def _summaries(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        fetches = {"global_step": self._global_step_tensor}
        summaries = self._summaries() if self._request else None
        if summaries:
            fetches["summary"] = summaries
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        if self._writer is None:
            return
        # A variable fetched in the run of its update gives its value after the run in pygrad (the
        # step the summary belongs to), where TF's hook reads it again when it may be stale.
        step = int(run_values.results["global_step"])
        if self._next_step is None:
            from pygrad.tf_protos import SessionLog
            self._writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._writer is not None:
            self._writer.flush()
