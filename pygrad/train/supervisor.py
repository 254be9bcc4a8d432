"""tf.train.Supervisor, as TensorFlow 1's supervisor.py: the training loop's housekeeping for a
chief and its workers. It fills in the ready, init, local init, saver, summary and global step
ops from the graph's collections (or makes TF's defaults), finalizes the graph, and makes a
session ready through a SessionManager: the chief restores the newest checkpoint of logdir or
initializes, the other tasks wait until the model is ready. The chief's standard services run in
threads of the Supervisor's Coordinator: a checkpoint every save_model_secs, the summary op's
value and the global steps per second every save_summaries_secs.

In one process the chief and the workers are sessions on one tf.train.Server (or on ""), which
share its variables (see pygrad/train/server_lib.py)."""
import contextlib
import logging
import os
import time

from pygrad.graph import GraphKeys, get_default_graph
from pygrad.meta_graph import write_graph
from pygrad.ops import summary_ops
from pygrad.ops.lookup_ops import tables_initializer
from pygrad.ops.state_ops import global_variables, global_variables_initializer, group, local_variables_initializer
from pygrad.summary.writer import FileWriter
from pygrad.train.coordinator import Coordinator, LooperThread
from pygrad.train.saver import Saver
from pygrad.train.session_manager import SessionManager, report_uninitialized_variables
from pygrad.train.training_util import global_step as _global_step_value

_log = logging.getLogger("pygrad")


class Supervisor:
    """A chief's or a worker's session, with the chief's checkpoints and summaries in threads."""

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT, is_chief=True,
                 init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT, logdir=None,
                 summary_op=USE_DEFAULT, saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120, checkpoint_basename="model.ckpt",
                 session_manager=None, summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        graph = graph if graph is not None else get_default_graph()
        with graph.as_default():
            self._ready_op = _default(ready_op, GraphKeys.READY_OP, report_uninitialized_variables)
            self._ready_for_local_init_op = _default(ready_for_local_init_op, GraphKeys.READY_FOR_LOCAL_INIT_OP)
            self._init_op = _default(init_op, GraphKeys.INIT_OP, global_variables_initializer)
            self._local_init_op = _default(local_init_op, GraphKeys.LOCAL_INIT_OP, lambda: group(
                local_variables_initializer(), tables_initializer()))
            self._saver = _default(saver, GraphKeys.SAVERS, lambda: Saver() if global_variables() else None)
            self._summary_op = _default(summary_op, GraphKeys.SUMMARY_OP, summary_ops.merge_all)
            self._global_step = _default(global_step, GraphKeys.GLOBAL_STEP, _default_global_step_tensor)
        self._graph, self._init_feed_dict = graph, init_feed_dict
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs, self._stop_grace_secs = recovery_wait_secs, stop_grace_secs
        self._init_fn, self._local_init_run_options = init_fn, local_init_run_options
        self._logdir = self._save_summaries_secs = self._save_model_secs = self._save_path = None
        self._summary_writer = None
        if is_chief:  # only the chief writes checkpoints and events
            self._logdir, self._save_model_secs = logdir, save_model_secs
            self._save_summaries_secs = save_summaries_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = FileWriter(logdir) if logdir else None
            else:
                self._summary_writer = summary_writer
            self._graph_added_to_summary = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
            recovery_wait_secs=recovery_wait_secs, local_init_run_options=local_init_run_options)
        if not is_chief:
            for op in graph.get_operations():
                if graph.holds_variable(op) and not op.device:
                    raise ValueError(f"When using replicas, all Variables must have their device set: {op}")
        graph.finalize()

    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    def _write_graph(self):
        if self._logdir:
            write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True

    def start_standard_services(self, sess):
        """The chief's threads: checkpoints every save_model_secs, summaries and steps/sec every
        save_summaries_secs (each when it has what it needs); returns them, started."""
        from pygrad.tf_protos import SessionLog
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only chief supervisors "
                               "can write events.")
        if not self._logdir:
            _log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        if self._global_step is not None and self._summary_writer:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 _global_step_value(sess, self._global_step))
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False, max_wait_secs=7200,
                                    start_standard_services=True):
        """The chief: a session restored from logdir's newest checkpoint or initialized (and the
        standard services started); another task: a session once the model is ready. Then the
        graph's queue runners are started."""
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                _log.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            _log.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def start_queue_runners(self, sess, queue_runners=None):
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """A started LooperThread calling target every timer_interval_secs until the stop."""
        return LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Stops the threads (waiting up to stop_grace_secs), re-raises an exception one reported,
        and closes the summary writer."""
        from pygrad.tf_protos import SessionLog
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None):
        self._coord.request_stop(ex=ex)

    def should_stop(self):
        return self._coord.should_stop()

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None):
        """Writes summary (a summary op's value) at global_step (default: the global step's value)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = _global_step_value(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True, close_summary_writer=True):
        """A ready session for the block; at its end (or at an exception, which stops the threads
        and is re-raised by stop) the services stop and the session closes."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001  (TF's: reported to the coordinator, which re-raises it)
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    sess.close()

    # TF's CamelCase aliases
    PrepareSession = prepare_or_wait_for_session
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    RequestStop = request_stop
    Loop = loop
    ShouldStop = should_stop
    StopOnException = stop_on_exception
    WaitForStop = wait_for_stop
    SummaryComputed = summary_computed


def _default(value, key, make=None):
    """value, or for USE_DEFAULT the first item of the graph's collection key, else make() (added
    to the collection when not None)."""
    if value is not Supervisor.USE_DEFAULT:
        return value
    items = get_default_graph().get_collection(key)
    if len(items) > 1:
        _log.info("Found %d %s operations. Returning the first one.", len(items), key)
    if items:
        return items[0]
    value = make() if make else None
    if value is not None:
        get_default_graph().add_to_collection(key, value)
    return value


def _default_global_step_tensor():
    """The graph's "global_step:0" if it is an integer tensor, else None."""
    try:
        step = get_default_graph().get_tensor_by_name("global_step:0")
    except KeyError:
        return None
    if step.dtype.name in ("int32", "int64"):
        return step
    _log.warning("Found 'global_step' is not an int type: %s", step.dtype)
    return None


class _SummaryThread(LooperThread):
    """Writes the summary op's value at the global step every save_summaries_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            _log.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    """Writes "<global step>/sec", the global steps per second, every save_summaries_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._tag = f"{sv.global_step.op.name}/sec"
        self._last_time, self._last_step = 0.0, 0

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = _global_step_value(self._sess, self._sv.global_step)

    def run_loop(self):
        from pygrad.tf_protos import Summary
        step = _global_step_value(self._sess, self._sv.global_step)
        now = time.time()
        elapsed = now - self._last_time
        rate = (step - self._last_step) / elapsed if elapsed > 0 else float("inf")
        self._last_step, self._last_time = step, now
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]), step)
        _log.info("%s: %g", self._tag, rate)


class _CheckpointThread(LooperThread):
    """Saves a checkpoint (at the global step) every save_model_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self):
        from pygrad.tf_protos import SessionLog
        _log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            step = _global_step_value(self._sess, self._sv.global_step)
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path), step)
