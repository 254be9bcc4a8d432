"""tf.data's file datasets: TFRecordDataset (the records of TFRecord files, pygrad/platform/tf_record.py),
TextLineDataset (the lines of text files, without their line ends) and FixedLengthRecordDataset
(fixed-size records between a header and a footer). Each yields string scalars, reading its files
in order when the iterator runs; the file names are strings, a string tensor (captured as the
other datasets capture tensors) or a dataset of names (Dataset.list_files).
"""
import os

import numpy as np

from pygrad import dtypes, errors
from pygrad.data.dataset_ops import Dataset, _capture
from pygrad.graph import Tensor
from pygrad.platform import tf_record
from pygrad.shapes import TensorShape


def _scalar(data):
    return [np.array(data, dtype=object)]


class _FileDataset(Dataset):
    """A dataset of the string records read from each of its files in turn."""

    def __init__(self, filenames):
        self._source = filenames if isinstance(filenames, Dataset) else None
        if self._source is not None and self._source._specs[0][0] != dtypes.string:
            raise TypeError(f"{type(self).__name__}: a dataset of file names must have string elements")
        names = None if self._source is not None else _capture(filenames, "filenames", dtypes.string)
        super().__init__([(dtypes.string, TensorShape([]))], 0, [names] if isinstance(names, Tensor) else [])
        self._names = names

    def _inputs(self):
        return [self._source] + self._source._inputs() if self._source is not None else []

    def _paths(self, ctx):
        if self._source is not None:
            return (element[0].item() for element in self._source._elements(ctx))
        names = ctx.value(self._names) if isinstance(self._names, Tensor) else self._names
        return np.asarray(names, dtype=object).reshape(-1)

    def _elements(self, ctx):
        for path in self._paths(ctx):
            path = path.decode("utf-8") if isinstance(path, bytes) else str(path)
            for record in self._records(path):
                yield _scalar(record)


def _open(path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None


class TFRecordDataset(_FileDataset):
    """The records of TFRecord files, compressed as compression_type says ("", "ZLIB", "GZIP")."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        super().__init__(filenames)
        self._compression = tf_record.compression_name(compression_type)
        self._buffer_size = buffer_size

    def _records(self, path):
        return tf_record.read_records(path, self._compression, self._buffer_size)


class TextLineDataset(_FileDataset):
    """The lines of text files, each without its "\\n" or "\\r\\n"."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        super().__init__(filenames)
        if tf_record.compression_name(compression_type):
            raise errors.UnimplementedError(None, None, "TextLineDataset: pygrad reads uncompressed text files only")

    def _records(self, path):
        with _open(path) as f:
            for line in f:
                yield line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line


class FixedLengthRecordDataset(_FileDataset):
    """The record_bytes-long records of files, after header_bytes and before footer_bytes; the body
    must be a whole number of records (TF's InvalidArgumentError otherwise)."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,
                 compression_type=None, num_parallel_reads=None):
        super().__init__(filenames)
        self._record, self._header, self._footer = int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0)
        if self._record <= 0:
            raise errors.InvalidArgumentError(None, None, f"record_bytes must be greater than zero, got {record_bytes}")
        if tf_record.compression_name(compression_type):
            raise errors.UnimplementedError(None, None, "FixedLengthRecordDataset: pygrad reads uncompressed files only")

    def _records(self, path):
        with _open(path) as f:
            body = os.fstat(f.fileno()).st_size - self._header - self._footer
            if body < 0 or body % self._record:
                raise errors.InvalidArgumentError(None, None, (
                    f"Excluding the header ({self._header} bytes) and footer ({self._footer} bytes), input file "
                    f"\"{path}\" has body length {body} bytes, which is not an exact multiple of the record length "
                    f"({self._record} bytes)."))
            f.seek(self._header)
            for _ in range(body // self._record):
                yield f.read(self._record)
