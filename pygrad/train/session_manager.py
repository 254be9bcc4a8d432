"""tf.train.SessionManager and tf.report_uninitialized_variables, as TensorFlow 1's
session_manager.py: a chief makes a session ready (restores the newest checkpoint or runs the
init op, then the local init op), any other task waits until the model is ready.

"Ready" is TF's: the ready op (by default the names of the uninitialized variables) returns no
names. Sessions on one tf.train.Server of this process share its variables, so a worker's
session finds ready what the chief's initialized."""
import logging
import time

import numpy as np

from pygrad import errors
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import constant
from pygrad.ops.manip_ops import stack
from pygrad.ops.math_ops import logical_not
from pygrad.ops.scatter_ops import boolean_mask
from pygrad.ops.state_ops import global_variables, is_variable_initialized, local_variables
from pygrad.session import Session
from pygrad.train import checkpoint_management

_log = logging.getLogger("pygrad")


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor: the op names of the variables of var_list (default: the global and
    local variables) that are not initialized in the session that runs it; built on /cpu:0."""
    graph = get_default_graph()
    if var_list is None:
        var_list = global_variables() + local_variables()
        if not var_list:
            var_list = [op.outputs[0] for op in graph.get_operations() if graph.holds_variable(op)]
    with graph.name_scope(name):
        initialized = [is_variable_initialized(v) for v in var_list]
        with graph.device("/cpu:0"):
            if not var_list:
                return constant([], dtype="string")
            return boolean_mask(constant([v.op.name for v in var_list]), logical_not(stack(initialized)))


def _ready(op, sess, what):
    """(True, None) if op (a ready op) reports nothing uninitialized, else (False, why)."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _log.warning("%s : error [%s]", what, e)
            raise
        return False, str(e)
    if value is None or value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in value)
    return False, "Variables not initialized: " + names


class SessionManager:
    """Makes sessions ready to run: prepare_session (a chief: restore or initialize), recover_session
    (restore only) and wait_for_session (a worker: wait until the model is ready)."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs=30, local_init_run_options=None, local_init_feed_dict=None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(f"If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                             f"ready_for_local_init_op [{ready_for_local_init_op}]")
        self._local_init_op, self._ready_op = local_init_op, ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options, self._local_init_feed_dict = local_init_run_options, local_init_feed_dict
        self._target = None

    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                            wait_for_checkpoint=False, max_wait_secs=7200, config=None):
        """(a new session on master, whether a checkpoint was restored into it)."""
        self._target = master
        sess = Session(master, graph=self._graph, config=config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0
        state = checkpoint_management.get_checkpoint_state(checkpoint_dir)
        while not state or not state.model_checkpoint_path:
            if not (wait_for_checkpoint and waited < max_wait_secs):
                return sess, False
            _log.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = checkpoint_management.get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        return sess, True

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False, max_wait_secs=7200,
                        config=None, init_feed_dict=None, init_fn=None):
        """A ready session: restored from the newest checkpoint of checkpoint_dir (or the file
        checkpoint_filename_with_path), else initialized by init_op and init_fn(sess); then the
        local init op. RuntimeError if the model is still not ready."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, msg = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  Init op: "
                               f"{_name(init_op)}, init fn: {init_fn}, error: {msg}")
        ready, msg = _ready(self._ready_op, sess, "Model not ready")
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: {_name(init_op)}, init fn: "
                               f"{init_fn}, local_init_op: {self._local_init_op}, error: {msg}")
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                        wait_for_checkpoint=False, max_wait_secs=7200, config=None):
        """(session, True) if a checkpoint restored a ready model, else (session, False)."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir, checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            _log.info("Restoring model from %s did not make model ready for local init: %s", source, msg)
            return sess, False
        ready, msg = _ready(self._ready_op, sess, "Model not ready")
        if not ready:
            _log.info("Restoring model from %s did not make model ready: %s", source, msg)
            return sess, False
        _log.info("Restored model from %s", source)
        return sess, True

    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """A session on master once the model is ready (checked every recovery_wait_secs);
        DeadlineExceededError after max_wait_secs."""
        self._target = master
        max_wait_secs = float("Inf") if max_wait_secs is None else max_wait_secs
        deadline = time.time() + max_wait_secs
        while True:
            sess = Session(master, graph=self._graph, config=config)
            ready, msg, local_msg = False, None, None
            ok, local_msg = self._try_run_local_init_op(sess)
            if ok:
                ready, msg = _ready(self._ready_op, sess, "Model not ready")
                if ready:
                    return sess
            try:
                sess.close()
            except Exception:  # noqa: BLE001  (as TF's _safe_close)
                pass
            if max(0.0, deadline - time.time()) - self._recovery_wait_secs < 0:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {int(max_wait_secs)} secs.")
            _log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s", local_msg, msg)
            time.sleep(self._recovery_wait_secs)

    def _try_run_local_init_op(self, sess):
        if self._local_init_op is None:
            return True, None
        ok, msg = _ready(self._ready_for_local_init_op, sess, "Model not ready for local init")
        if not ok:
            return False, msg
        _log.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict, options=self._local_init_run_options)
        _log.info("Done running local_init_op.")
        return True, None


def _name(op):
    return None if op is None else op.name
