"""TF1's readers (tf.TextLineReader, tf.FixedLengthRecordReader, tf.WholeFileReader,
tf.IdentityReader; tf.TFRecordReader is pygrad/platform/tf_record.py's): records out of the files
(work units) a queue of strings gives them.

A reader is a Python object of the graph; its ops name it (and the queue) in attributes. Its
state in a session (the file it is in, its next record, its counts) lives in the run's host
context. read's key and value are bound like feeds before the plan (host stage BEFORE); when the
reader has finished its file it dequeues the next one, so a closed, empty queue ends reading with
the queue's OutOfRangeError. Keys are TF's: b"<file>:<line>" (lines count from 1, skipped header
lines included), b"<file>:<record>" (records count from 0), the file name, or the work unit.
"""
import collections
import gzip
import threading
import zlib

import numpy as np

from pygrad import dtypes, errors
from pygrad.ops import array_ops
from pygrad.registry import AFTER, BEFORE, OpDef, Spec
from pygrad.shapes import TensorShape


class _ReaderState:
    """A reader in one session: the records of its current work unit (an iterator of (key, value)),
    and its counts."""

    def __init__(self):
        self.lock = threading.Lock()  # one read at a time, as TF's reader mutex
        self.records = None  # None: no work in progress
        self.produced = 0
        self.completed = 0


ReadOutputs = collections.namedtuple("ReaderReadV2", "key value")
ReadUpToOutputs = collections.namedtuple("ReaderReadUpToV2", "keys values")


def _state(ctx, reader):
    return ctx.state(reader, _ReaderState)


def _next_file(ctx, op, queue):
    """The next work unit from the queue: a scalar string."""
    (element,) = queue._state(ctx).dequeue(op, 1, False, ctx.deadline)
    work = element[0]
    if work.shape != () or not isinstance(work[()], bytes):
        raise errors.InvalidArgumentError(None, op, op.error(
            f"a reader's queue must hold string scalars (file names), got an element of shape {work.shape}"))
    return work[()]


def _read(ctx, op, want):
    """Up to `want` records (key, value) of one work unit, as TF's ReaderBase: a unit found at its
    end counts as completed and reading goes on with the next one until a record comes."""
    reader, queue = op.attrs["reader"], op.attrs["queue"]
    state = _state(ctx, reader)
    out = []
    with state.lock:
        while True:
            if state.records is None:
                work = _next_file(ctx, op, queue)
                try:
                    state.records = reader._records(work)
                except OSError as e:
                    raise errors.NotFoundError(None, op, op.error(
                        f"{work.decode(errors='replace')}; {e.strerror or e}")) from None
            at_end = False
            while len(out) < want and not at_end:
                record = _next_record(op, state)
                at_end = record is None or reader._one_record_per_unit
                if record is not None:
                    state.produced += 1
                    out.append(record)
            if at_end:
                state.records = None
                state.completed += 1
            if out:
                return out


def _next_record(op, state):
    """The next record of the unit in progress, or None at its end; an error of the file's data
    (a damaged record: DataLossError) names the op, and the reader forgets the unit."""
    try:
        return next(state.records, None)
    except errors.OpError as e:
        state.records = None
        raise type(e)(None, op, op.error(e.message)) from None


ReaderReadV2 = OpDef("ReaderReadV2", host=BEFORE, differentiable=False)
ReaderReadUpToV2 = OpDef("ReaderReadUpToV2", host=BEFORE, differentiable=False)
ReaderNumRecordsProducedV2 = OpDef("ReaderNumRecordsProducedV2", host=BEFORE, differentiable=False)
ReaderNumWorkUnitsCompletedV2 = OpDef("ReaderNumWorkUnitsCompletedV2", host=BEFORE, differentiable=False)
ReaderResetV2 = OpDef("ReaderResetV2", host=AFTER, differentiable=False)


@ReaderReadV2.shape
def _(*, reader, queue):
    return [Spec(dtypes.string, TensorShape([])), Spec(dtypes.string, TensorShape([]))]


@ReaderReadV2.host
def _(ctx, op, values):
    ((key, value),) = _read(ctx, op, 1)
    return [dtypes.as_bytes_array(key), dtypes.as_bytes_array(value)]


@ReaderReadUpToV2.shape
def _(*, reader, queue, num_records):
    return [Spec(dtypes.string, TensorShape([None])), Spec(dtypes.string, TensorShape([None]))]


@ReaderReadUpToV2.host
def _(ctx, op, values):
    records = _read(ctx, op, op.attrs["num_records"])
    return [dtypes.as_bytes_array([k for k, _ in records]), dtypes.as_bytes_array([v for _, v in records])]


@ReaderNumRecordsProducedV2.shape
def _(*, reader):
    return Spec(dtypes.int64, TensorShape([]))


@ReaderNumRecordsProducedV2.host
def _(ctx, op, values):
    return [np.array(_state(ctx, op.attrs["reader"]).produced, np.int64)]


ReaderNumWorkUnitsCompletedV2.shape(ReaderNumRecordsProducedV2.shape_fn)


@ReaderNumWorkUnitsCompletedV2.host
def _(ctx, op, values):
    return [np.array(_state(ctx, op.attrs["reader"]).completed, np.int64)]


@ReaderResetV2.shape
def _(*, reader):
    return []


@ReaderResetV2.host
def _(ctx, op, values):
    state = _state(ctx, op.attrs["reader"])
    with state.lock:
        state.records, state.produced, state.completed = None, 0, 0


class ReaderBase:
    """tf.ReaderBase: read(queue) gives the next (key, value) record of the files the queue names."""

    _one_record_per_unit = False  # a unit is done once its one record is read (WholeFileReader, IdentityReader)

    def __init__(self, name):
        from pygrad.graph import get_default_graph
        self._name = get_default_graph().unique_name(name)

    @property
    def name(self):
        return self._name

    @property
    def reader_ref(self):
        """The reader itself: pygrad's reader ops name the reader object, not a resource tensor."""
        return self

    @property
    def supports_serialize(self):
        return False

    def _queue(self, queue):
        from pygrad.ops.queue_ops import QueueBase
        if not isinstance(queue, QueueBase):
            raise TypeError(f"{type(self).__name__}.read: queue must be a tf.QueueBase (a queue of file names), "
                            f"got {type(queue).__name__}")
        return queue

    def read(self, queue, name=None):
        """(key, value): string scalars of the next record, dequeuing the next file when needed."""
        return ReadOutputs(*ReaderReadV2(reader=self, queue=self._queue(queue), name=name or "ReaderReadV2"))

    def read_up_to(self, queue, num_records, name=None):
        """(keys, values): up to num_records records of one file (fewer at the file's end)."""
        n = array_ops.constant_value(num_records)
        if n is None or np.ndim(n) != 0 or int(n) < 1:
            raise ValueError(f"read_up_to: num_records must be a positive Python integer or constant scalar, got "
                             f"{num_records!r}")
        return ReadUpToOutputs(*ReaderReadUpToV2(reader=self, queue=self._queue(queue), num_records=int(n),
                                                 name=name or "ReaderReadUpToV2"))

    def num_records_produced(self, name=None):
        return ReaderNumRecordsProducedV2(reader=self, name=name or "ReaderNumRecordsProducedV2")

    def num_work_units_completed(self, name=None):
        return ReaderNumWorkUnitsCompletedV2(reader=self,
                                             name=name or "ReaderNumWorkUnitsCompletedV2")

    def reset(self, name=None):
        """An op that returns the reader to its start: no file in progress, counts at zero."""
        return ReaderResetV2(reader=self, name=name or "ReaderResetV2")

    def _records(self, work):
        """The (key, value) records of one work unit (bytes), as an iterator."""
        raise NotImplementedError


def _contents(path):
    with open(path, "rb") as f:
        return f.read()


class TextLineReader(ReaderBase):
    """tf.TextLineReader: the lines of each file, without their '\\n' (and a '\\r' before it)."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(name or "TextLineReaderV2")
        self._skip = int(skip_header_lines or 0)

    def _records(self, work):
        data = _contents(work)
        return self._lines(work, data)

    def _lines(self, work, data):
        start, number = 0, 0
        while start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            line = data[start:end]
            start = end + 1
            number += 1
            if number > self._skip:
                yield work + b":" + str(number).encode(), line[:-1] if line.endswith(b"\r") else line


class FixedLengthRecordReader(ReaderBase):
    """tf.FixedLengthRecordReader: records of record_bytes bytes between header_bytes and
    footer_bytes, each hop_bytes after the last (record_bytes when 0); a part record at the end
    is dropped. encoding "GZIP" or "ZLIB" reads compressed files."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None, name=None, encoding=None):
        super().__init__(name or "FixedLengthRecordReaderV2")
        self._record = int(record_bytes)
        self._header = int(header_bytes or 0)
        self._footer = int(footer_bytes or 0)
        self._hop = int(hop_bytes or 0)
        if encoding not in (None, "", "GZIP", "ZLIB"):
            raise ValueError(f"FixedLengthRecordReader: encoding must be GZIP or ZLIB, got {encoding!r}")
        self._encoding = encoding or None
        if self._record <= 0:
            raise ValueError(f"FixedLengthRecordReader: record_bytes must be positive, got {record_bytes}")

    def _records(self, work):
        data = _contents(work)
        if self._encoding == "GZIP":
            data = gzip.decompress(data)
        elif self._encoding == "ZLIB":
            data = zlib.decompress(data)
        end = len(data) - self._footer
        step = self._hop or self._record
        return ((work + b":" + str(i).encode(), data[pos:pos + self._record])
                for i, pos in enumerate(range(self._header, end - self._record + 1, step)))


class WholeFileReader(ReaderBase):
    """tf.WholeFileReader: one record per file, its name and its contents."""

    _one_record_per_unit = True

    def __init__(self, name=None):
        super().__init__(name or "WholeFileReaderV2")

    def _records(self, work):
        return iter([(work, _contents(work))])


class IdentityReader(ReaderBase):
    """tf.IdentityReader: one record per work unit, the work unit as both key and value."""

    _one_record_per_unit = True

    def __init__(self, name=None):
        super().__init__(name or "IdentityReaderV2")

    def _records(self, work):
        return iter([(work, work)])
