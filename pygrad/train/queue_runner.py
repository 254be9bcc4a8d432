"""tf.train.QueueRunner and start_queue_runners: threads that run a queue's enqueue ops until the
queue closes or their Coordinator asks them to stop (tf.train.queue_runner)."""
import threading
import weakref

from pygrad import errors
from pygrad.graph import GraphKeys, get_default_graph, session_stack

QUEUE_RUNNERS = GraphKeys.QUEUE_RUNNERS


class QueueRunner:
    """Runs each of enqueue_ops in a thread of its own, in a loop. When an enqueue fails with one
    of queue_closed_exception_types (OutOfRangeError: its input ran out), its thread ends; the
    last one to end runs close_op. With a Coordinator, a stop runs cancel_op, which wakes the
    enqueues blocked on a full queue, and any other error is reported to it."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            raise NotImplementedError("QueueRunner: pygrad builds queue runners from a queue and its enqueue ops, "
                                      "not from a QueueRunnerDef")
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        if queue_closed_exception_types is not None and (
                not isinstance(queue_closed_exception_types, tuple) or not queue_closed_exception_types or
                not all(isinstance(t, type) and issubclass(t, errors.OpError) for t in queue_closed_exception_types)):
            raise TypeError(f"queue_closed_exception_types, when provided, must be a tuple of tf.error types, but "
                            f"saw: {queue_closed_exception_types}")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._queue_closed_exception_types = queue_closed_exception_types or (errors.OutOfRangeError,)
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._exceptions_raised = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)
    name = property(lambda self: self._queue.name)

    @property
    def exceptions_raised(self):
        """The exceptions the threads raised, when they ran without a Coordinator."""
        return self._exceptions_raised

    def _run(self, sess, enqueue_op, coord=None):
        decremented = False
        try:
            while not (coord and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception:  # noqa: BLE001 (TF ignores errors of the close op)
                                pass
                    return
        except Exception as e:  # noqa: BLE001
            if coord:
                coord.request_stop(e)
            else:
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord):
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception:  # noqa: BLE001 (TF ignores errors of the cancel op: the session may be closed)
            pass

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The threads that run the enqueue ops in sess (and, with coord, the one that cancels the
        queue on a stop); none when they already run in sess."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}") for op in self._enqueue_ops]
        if coord:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, self._cancel_op, coord),
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for t in threads:
            if coord:
                coord.register_thread(t)
            t.daemon = daemon
            if start:
                t.start()
        return threads


def add_queue_runner(qr, collection=QUEUE_RUNNERS):
    """Adds qr to the graph's collection, where start_queue_runners finds it."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=QUEUE_RUNNERS):
    """Starts the threads of every QueueRunner of the collection in sess (the default session);
    returns them."""
    if sess is None:
        stack = session_stack()
        if not stack:
            raise ValueError("Cannot start queue runners: No default session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to tf.start_queue_runners(sess=sess)")
        sess = stack[-1]
    if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
        return []  # they start their queue runners themselves
    if not hasattr(sess, "run") or not hasattr(sess, "graph"):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {sess.__class__}")
    threads = []
    with sess.graph.as_default():
        for qr in sess.graph.get_collection(collection):
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
