"""MonitoredSession and the training loop around it, as TensorFlow 1's monitored_session.py:
a Scaffold completes the graph (init op, saver), the session is restored from the newest
checkpoint of checkpoint_dir or else initialized, and every run goes through the hooks.

A chief (ChiefSessionCreator) restores or initializes; a worker (WorkerSessionCreator) waits
until the model is ready, as in TF; sessions on one tf.train.Server of this process share its
variables. No recovery from a lost session (pygrad's sessions run in the process)."""
import logging

from pygrad import errors
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops.lookup_ops import tables_initializer
from pygrad.ops.state_ops import global_variables, global_variables_initializer, group, local_variables_initializer
from pygrad.train.coordinator import Coordinator
from pygrad.ops import summary_ops
from pygrad.train.hooks import (CheckpointSaverHook, SessionRunArgs, SessionRunContext, SessionRunValues,
                                StepCounterHook, SummarySaverHook)
from pygrad.train.queue_runner import start_queue_runners
from pygrad.train.saver import Saver
from pygrad.train.session_manager import SessionManager, report_uninitialized_variables

_log = logging.getLogger("pygrad")
LOCAL_INIT_OP, SAVERS, SUMMARY_OP = GraphKeys.LOCAL_INIT_OP, GraphKeys.SAVERS, GraphKeys.SUMMARY_OP


class _UseDefault:
    def __repr__(self):
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()


class Scaffold:
    """What a session needs besides the model: init_op (default: initialize the global
    variables), init_feed_dict, init_fn(scaffold, session) run after it, local_init_op (default:
    initialize the local variables and the lookup tables), summary_op (default: the graph's 'summary_op' collection,
    else tf.summary.merge_all()) and the saver (default: the graph's 'savers' collection, else a
    Saver of the global variables). ready_op is accepted; it is not used."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None, ready_for_local_init_op=None,
                 local_init_op=None, summary_op=None, saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            init_op = init_op or copy_from_scaffold.init_op
            init_feed_dict = init_feed_dict or copy_from_scaffold.init_feed_dict
            init_fn = init_fn or copy_from_scaffold._user_init_fn
            local_init_op = local_init_op or copy_from_scaffold.local_init_op
            saver = saver or copy_from_scaffold.saver
        self._init_op, self._init_feed_dict, self._user_init_fn = init_op, init_feed_dict, init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._summary_op, self._saver = local_init_op, summary_op, saver

    def finalize(self):
        """Fills in the defaults, then finalizes the graph."""
        graph = get_default_graph()
        if self._init_op is None:
            ops = graph.get_collection(GraphKeys.INIT_OP)
            self._init_op = ops[0] if ops else global_variables_initializer()
            if not ops:
                graph.add_to_collection(GraphKeys.INIT_OP, self._init_op)
        if self._local_init_op is None:
            ops = graph.get_collection(LOCAL_INIT_OP)
            self._local_init_op = ops[0] if ops else group(local_variables_initializer(), tables_initializer())
            if not ops:
                graph.add_to_collection(LOCAL_INIT_OP, self._local_init_op)
        if self._summary_op is None:
            ops = graph.get_collection(SUMMARY_OP)
            self._summary_op = ops[0] if ops else summary_ops.merge_all()
            if not ops and self._summary_op is not None:
                graph.add_to_collection(SUMMARY_OP, self._summary_op)
        if self._ready_op is None:  # TF's: the names of the uninitialized variables
            ops = graph.get_collection(GraphKeys.READY_OP)
            self._ready_op = ops[0] if ops else report_uninitialized_variables()
            if not ops:
                graph.add_to_collection(GraphKeys.READY_OP, self._ready_op)
        if self._ready_for_local_init_op is None:  # the local init op waits for the global variables
            ops = graph.get_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP)
            self._ready_for_local_init_op = ops[0] if ops else report_uninitialized_variables(global_variables())
            if not ops:
                graph.add_to_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP, self._ready_for_local_init_op)
        if self._saver is None:
            savers = graph.get_collection(SAVERS)
            if len(savers) > 1:
                raise RuntimeError(f"More than one item in the collection {SAVERS}. Please indicate which one to use "
                                   f"by passing it to the constructor.")
            if savers:
                self._saver = savers[0]
            else:
                self._saver = Saver(allow_empty=True)
                graph.add_to_collection(SAVERS, self._saver)
        graph.finalize()
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)


class SessionCreator:
    def create_session(self):
        raise NotImplementedError


class ChiefSessionCreator(SessionCreator):
    """Makes a session on master, restores the newest checkpoint of checkpoint_dir (or the file
    checkpoint_filename_with_path) if there is one, initializes otherwise, then runs the local
    init op (SessionManager.prepare_session)."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._checkpoint_dir, self._checkpoint_filename = checkpoint_dir, checkpoint_filename_with_path
        self._master, self._config = master, config

    def create_session(self):
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).prepare_session(
            self._master, saver=scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename, config=self._config, init_op=scaffold.init_op,
            init_feed_dict=scaffold.init_feed_dict, init_fn=scaffold.init_fn)


class WorkerSessionCreator(SessionCreator):
    """Makes a session on master once the chief has made the model ready (the scaffold's ready
    op reports no uninitialized variable), then runs the local init op; DeadlineExceededError
    after max_wait_secs (SessionManager.wait_for_session)."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config, self._max_wait_secs = master, config, max_wait_secs

    def create_session(self):
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).wait_for_session(self._master, config=self._config,
                                                           max_wait_secs=self._max_wait_secs)


def _session_manager(scaffold):
    return SessionManager(local_init_op=scaffold.local_init_op, ready_op=scaffold.ready_op,
                          ready_for_local_init_op=scaffold.ready_for_local_init_op, graph=get_default_graph())


class _StepContext:
    """What run_step_fn's step_fn gets: the raw session, run_with_hooks and request_stop."""

    def __init__(self, monitored):
        self._monitored = monitored

    @property
    def session(self):
        return self._monitored._sess

    def run_with_hooks(self, *args, **kwargs):
        return self._monitored.run(*args, **kwargs)

    def request_stop(self):
        self._monitored._should_stop = True


class _MonitoredSession:
    def __init__(self, session_creator, hooks, stop_grace_period_secs=120):
        self._graph = get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._sess = (session_creator or ChiefSessionCreator()).create_session()
        # The graph's queue runners run until close, which stops them (as TF's _CoordinatedSession).
        self._coord = Coordinator(clean_stop_exception_types=[])
        self._stop_grace_period_secs = stop_grace_period_secs
        start_queue_runners(self._sess, self._coord)
        self._should_stop = False
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)

    @property
    def graph(self):
        return self._graph

    def _tf_sess(self):
        return self._sess

    def should_stop(self):
        return self._sess is None or self._should_stop or self._coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs fetches with the hooks' fetches and feeds added; returns the caller's values."""
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
        actual_fetches = {"caller": fetches}
        hook_feeds = {}
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                actual_fetches[hook] = request.fetches
            if request.feed_dict:
                if set(hook_feeds) & set(request.feed_dict):
                    raise RuntimeError(f"Same tensor is fed by two hooks: {set(hook_feeds) & set(request.feed_dict)}")
                hook_feeds.update(request.feed_dict)
        if hook_feeds and feed_dict:
            both = set(hook_feeds) & set(feed_dict)
            if both:
                raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user: {both}")
        merged = {**(feed_dict or {}), **hook_feeds} or None
        try:
            outputs = self._sess.run(actual_fetches, feed_dict=merged, options=options, run_metadata=run_metadata)
        except Exception:
            self._coord.raise_requested_exception()  # a queue runner's error, when one stopped the input
            raise
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(outputs.get(hook), options, run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def run_step_fn(self, step_fn):
        """Calls step_fn(step_context) and returns its value (None once a stop was requested)."""
        return step_fn(_StepContext(self))

    def close(self):
        self._close(None)

    def _close(self, exception_type):
        try:
            if exception_type is None and self._sess is not None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._coord.request_stop()
                try:
                    self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
                finally:
                    self._sess.close()
            finally:
                self._sess = None
                if not self._graph_was_finalized:
                    self._graph._finalized = False

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session whose runs go through hooks; made by session_creator (default: a
    ChiefSessionCreator), which restores or initializes the variables."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession with a ChiefSessionCreator built from its arguments."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        return self._tf_sess()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,  # noqa: N802
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None, stop_grace_period_secs=120,
                             log_step_count_steps=100, max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None, save_graph_def=True):
    """A MonitoredSession for training, as TF1's: restores from checkpoint_dir or initializes,
    saves a checkpoint there every save_checkpoint_secs (default 600) or save_checkpoint_steps,
    writes the scaffold's summary op to summary_dir (default checkpoint_dir) every
    save_summaries_steps (default 100) or save_summaries_secs, logs and writes the global steps
    per second every log_step_count_steps, and runs hooks (then chief_only_hooks). master: "" or
    the target of a tf.train.Server of this process. is_chief=False: a worker's session, made once
    the chief has made the model ready (up to max_wait_secs), running hooks alone, as TF's."""
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    scaffold = scaffold or Scaffold()
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps, output_dir=summary_dir))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0) or
                           (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold))
    all_hooks += list(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
