"""tf.data's file datasets: TFRecordDataset (the records of TFRecord files, pygrad/platform/tf_record.py),
TextLineDataset (the lines of text files, without their line ends) and FixedLengthRecordDataset
(fixed-size records between a header and a footer). Each yields string scalars, reading its files
in order when the iterator runs, or with num_parallel_reads a record of each of that many files
in turn (TF's parallel_interleave order); the files may be compressed (compression_type "ZLIB" or
"GZIP"). The file names are strings, a string tensor (captured as the other datasets capture
tensors) or a dataset of names (Dataset.list_files).
"""
import os

import numpy as np

from pygrad import dtypes, errors
from pygrad.data.dataset_ops import Dataset, _capture
from pygrad.data.interleave_ops import check_lengths, interleave
from pygrad.graph import Tensor
from pygrad.platform import tf_record
from pygrad.shapes import TensorShape


def _scalar(data):
    return [np.array(data, dtype=object)]


class _FileDataset(Dataset):
    """A dataset of the string records read from each of its files in turn."""

    def __init__(self, filenames, num_parallel_reads=None):
        self._parallel_reads = None if num_parallel_reads is None else \
            _capture(num_parallel_reads, "num_parallel_reads")
        self._source = filenames if isinstance(filenames, Dataset) else None
        if self._source is not None and self._source._specs[0][0] != dtypes.string:
            raise TypeError(f"{type(self).__name__}: a dataset of file names must have string elements")
        names = None if self._source is not None else _capture(filenames, "filenames", dtypes.string)
        super().__init__([(dtypes.string, TensorShape([]))], 0,
                         [x for x in (names, self._parallel_reads) if isinstance(x, Tensor)])
        self._names = names

    def _inputs(self):
        return [self._source] + self._source._inputs() if self._source is not None else []

    def _paths(self, ctx):
        if self._source is not None:
            return (np.asarray(element[0], dtype=object).item() for element in self._source._elements(ctx))
        names = ctx.value(self._names) if isinstance(self._names, Tensor) else self._names
        return np.asarray(names, dtype=object).reshape(-1)

    def _elements(self, ctx):
        def records(path):
            path = path.decode("utf-8") if isinstance(path, bytes) else str(path)
            return (_scalar(record) for record in self._records(path))
        if self._parallel_reads is None:  # one file after the other (TF: flat_map)
            return (record for path in self._paths(ctx) for record in records(path))
        # TF: parallel_interleave of the files, a record from each in turn
        return interleave(iter(self._paths(ctx)), records, check_lengths(int(ctx.value(self._parallel_reads)))[0], 1)


def _open(path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None


class TFRecordDataset(_FileDataset):
    """The records of TFRecord files, compressed as compression_type says ("", "ZLIB", "GZIP")."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        super().__init__(filenames, num_parallel_reads)
        self._compression = tf_record.compression_name(compression_type)
        self._buffer_size = _buffer_size(buffer_size, -1, "`buffer_size` must be >= 0 (0 == no buffering)")

    def _records(self, path):
        return tf_record.read_records(path, self._compression, self._buffer_size)


class TextLineDataset(_FileDataset):
    """The lines of text files, without their "\\n" and, as TF's, without any "\\r"."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        super().__init__(filenames, num_parallel_reads)
        self._compression = tf_record.compression_name(compression_type)
        self._buffer_size = _buffer_size(buffer_size, 0, "`buffer_size` must be >= 0 (0 == default)")

    def _records(self, path):
        stream = tf_record.open_stream(path, self._compression, self._buffer_size)
        try:
            rest = b""
            while True:
                chunk = stream.read(self._buffer_size or _CHUNK)
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    yield line.replace(b"\r", b"")
                if not chunk:
                    break
            if rest:
                yield rest.replace(b"\r", b"")
        finally:
            stream.close()


class FixedLengthRecordDataset(_FileDataset):
    """The record_bytes-long records of files, after header_bytes and before footer_bytes; the body
    must be a whole number of records (TF's InvalidArgumentError otherwise, DataLossError when the
    file is compressed: TF learns it at the end)."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,
                 compression_type=None, num_parallel_reads=None):
        super().__init__(filenames, num_parallel_reads)
        self._record, self._header, self._footer = int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0)
        if self._record <= 0:
            raise errors.InvalidArgumentError(None, None, f"record_bytes must be greater than zero, got {record_bytes}")
        self._compression = tf_record.compression_name(compression_type)
        self._buffer_size = _buffer_size(buffer_size, 0, "`buffer_size` must be >= 0")

    def _body_error(self, path, body, error=errors.InvalidArgumentError):
        return error(None, None, (
            f"Excluding the header ({self._header} bytes) and footer ({self._footer} bytes), input file "
            f"\"{path}\" has body length {body} bytes, which is not an exact multiple of the record length "
            f"({self._record} bytes)."))

    def _records(self, path):
        if self._compression:
            yield from self._compressed_records(path)
            return
        with _open(path) as f:
            body = os.fstat(f.fileno()).st_size - self._header - self._footer
            if body < 0 or body % self._record:
                raise self._body_error(path, body)
            f.seek(self._header)
            for _ in range(body // self._record):
                yield f.read(self._record)

    def _compressed_records(self, path):
        """TF's reading of a compressed file, whose length is known only at its end: after the
        header, footer_bytes read ahead, then a record at a time; a part record at the end is
        DataLossError."""
        stream = tf_record.open_stream(path, self._compression, self._buffer_size)
        try:
            stream.read(self._header)
            ahead, pos = stream.read(self._footer), self._header + self._footer
            while True:
                record = stream.read(self._record)
                if len(record) < self._record:
                    if record:
                        raise self._body_error(path, pos + len(record) - self._header - self._footer,
                                               errors.DataLossError)
                    return
                ahead += record
                pos += self._record
                yield ahead[:self._record]
                ahead = ahead[self._record:]
        finally:
            stream.close()


_CHUNK = 256 << 10  # TF's default read buffer (_DEFAULT_READER_BUFFER_SIZE_BYTES)


def _buffer_size(buffer_size, least, message):
    """buffer_size as TF takes it (None: TF's default), or TF's InvalidArgumentError for one below least."""
    if buffer_size is None or isinstance(buffer_size, Tensor):
        return None
    if int(buffer_size) < least:
        raise errors.InvalidArgumentError(None, None, message)
    return int(buffer_size)
