"""tf.summary.FileWriter: Event protocol buffers in TFRecord files that TensorBoard reads.

A writer creates `events.out.tfevents.<seconds>.<hostname><filename_suffix>` in logdir (with .1, .2, ...
after the hostname when another writer of the same second has that name) and writes
first an Event with file_version "brain.Event:2", as TensorFlow's EventsWriter does. Events are
queued in memory and written when max_queue are pending, every flush_secs by a background thread,
on flush(), on close() and, as TensorFlow's, when the process exits without a close(). The
messages are TensorFlow's (pygrad/tf_protos.py); one of another protobuf class with the same
schema (TensorFlow's own, say) is taken by its bytes.
"""
import atexit
import itertools
import os
import socket
import threading
import time
import weakref

from pygrad.graph import Graph, get_default_graph
from pygrad.summary.records import encode_record


def _create_event_file(logdir, suffix):
    """(path, file) of a new event file, TF's name events.out.tfevents.<seconds>.<hostname><suffix>
    or, if a writer of the same second made that one (TF would truncate it), the first free name
    with .1, .2, ... after the hostname; created exclusively, so no existing file is ever truncated."""
    stem = os.path.join(logdir, f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}")
    for n in itertools.count():
        path = f"{stem}{f'.{n}' if n else ''}{suffix}"
        try:
            return path, open(path, "xb")
        except FileExistsError:
            pass


def _as(cls, message):
    """message (serialized bytes, or a message of any class with cls's schema) as a cls."""
    if isinstance(message, cls):
        return message
    return cls.FromString(message if isinstance(message, bytes) else message.SerializeToString())


def _event(step, **fields):
    """An Event of now with fields, and step unless it is None."""
    from pygrad.tf_protos import Event
    event = Event(wall_time=time.time(), **fields)
    if step is not None:
        event.step = int(step)
    return event


_OPEN = weakref.WeakSet()  # the writers not closed, flushed when the process exits


@atexit.register
def _flush_open_writers():
    for writer in list(_OPEN):
        writer.flush()


class FileWriter:
    """Writes summaries, the graph and session logs of a run to an event file in logdir."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None, filename_suffix=None,
                 session=None):
        if hasattr(graph, "graph") and not isinstance(graph, Graph):  # a Session passed as the graph, as TF allows
            graph = graph.graph
        self._logdir = str(logdir)
        self._max_queue, self._flush_secs, self._suffix = max_queue, flush_secs, filename_suffix or ""
        self._seen_tags = set()
        self._lock = threading.Lock()
        self._open()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self):
        os.makedirs(self._logdir, exist_ok=True)
        self._path, self._file = _create_event_file(self._logdir, self._suffix)
        self._queue = []
        self._closed = False
        self._write([encode_record(_event(None, file_version="brain.Event:2").SerializeToString())])
        self._file.flush()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._flush_periodically, name="FileWriter flush", daemon=True)
        self._thread.start()
        _OPEN.add(self)

    def _flush_periodically(self):
        while not self._stop.wait(self._flush_secs):
            self.flush()

    def _write(self, records):
        self._file.write(b"".join(records))

    # ---- events ----
    def add_event(self, event):
        """Queues an Event (a message or its serialized bytes)."""
        data = event if isinstance(event, bytes) else event.SerializeToString()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"FileWriter of {self._logdir} is closed; reopen() it to write")
            self._queue.append(encode_record(data))
            if len(self._queue) >= self._max_queue:
                self._write(self._queue)
                self._queue = []

    def _add(self, step, **fields):
        self.add_event(_event(step, **fields))

    def add_summary(self, summary, global_step=None):
        """Adds a Summary (serialized bytes, as a summary op returns, or a tf.Summary). As TF, a
        value's metadata is kept only the first time its tag is written (TF's test of a value's
        metadata, `not value.metadata`, is false for every message, so every tag counts)."""
        from pygrad.tf_protos import Summary
        summary = _as(Summary, summary)
        for value in summary.value:
            if value.tag in self._seen_tags:
                value.ClearField("metadata")
            else:
                self._seen_tags.add(value.tag)
        self._add(global_step, summary=summary)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Adds a Graph (or a GraphDef, message or bytes) for TensorBoard's graph tab."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is None and graph_def is None:
            graph = get_default_graph()
        if graph is not None:
            from pygrad import graph_def as export  # loaded on first use, as the messages are
            graph = graph.graph if hasattr(graph, "graph") and not isinstance(graph, Graph) else graph
            data = export.graph_def(graph, add_shapes=True, picture=True).SerializeToString()
        else:
            data = graph_def if isinstance(graph_def, bytes) else graph_def.SerializeToString()
        self._add(global_step, graph_def=data)

    def add_session_log(self, session_log, global_step=None):
        """Adds a SessionLog (START, STOP or CHECKPOINT)."""
        from pygrad.tf_protos import SessionLog
        self._add(global_step, session_log=_as(SessionLog, session_log))

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Adds run metadata (serialized RunMetadata bytes, or an object with SerializeToString)."""
        from pygrad.tf_protos import TaggedRunMetadata
        data = run_metadata if isinstance(run_metadata, bytes) else \
            run_metadata.SerializeToString() if hasattr(run_metadata, "SerializeToString") else b""
        self._add(global_step, tagged_run_metadata=TaggedRunMetadata(tag=tag, run_metadata=data))

    # ---- files ----
    def get_logdir(self):
        return self._logdir

    def flush(self):
        """Writes the queued events and flushes the file to the operating system."""
        with self._lock:
            if self._closed:
                return
            self._write(self._queue)
            self._queue = []
            self._file.flush()

    def close(self):
        """Flushes and closes the file; the writer can be reopen()ed (to a new file, never this one)."""
        if self._closed:
            return
        self.flush()
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            self._closed = True
            self._file.close()
        _OPEN.discard(self)

    def reopen(self):
        if self._closed:
            self._open()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """One FileWriter per logdir, shared (tf.summary.FileWriterCache)."""

    _cache = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir):
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return FileWriterCache._cache[logdir]

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache.clear()


