"""TFRecord files (tf.python_io / tf.io): TFRecordWriter, tf_record_iterator, TFRecordOptions and
TFRecordCompressionType, the record reader TFRecordDataset uses, and tf.TFRecordReader.

A file is a sequence of records, each framed as TensorFlow frames it (record_writer.cc;
pygrad/summary/records.py encodes one frame): uint64 length, masked CRC-32C of those 8 bytes,
the data, masked CRC-32C of the data, little-endian. With ZLIB or GZIP compression the whole
stream of frames is deflated (TF's ZlibOutputBuffer, its defaults: level 6, window 15, memory
level 9), so offsets in errors count uncompressed bytes, as TF's do. The reader checks both
checksums; as TF's, a file that ends inside a record's header ends the records, and one that ends
inside a record's data raises DataLossError ("truncated record at <offset>"). CRC-32C is pygrad's
native one (SSE4.2 where the CPU has it).
"""
import struct
import zlib

from pygrad import errors, proto
from pygrad.ops.reader_ops import ReaderBase
from pygrad.summary.records import encode_record

_HEADER = 12  # length and its checksum


class TFRecordCompressionType:
    """The compression of a TFRecord file."""
    NONE, ZLIB, GZIP = 0, 1, 2


_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
          TFRecordCompressionType.GZIP: "GZIP"}


class TFRecordOptions:
    """How a TFRecord file is compressed: compression_type (a TFRecordCompressionType, "ZLIB",
    "GZIP", "" or None) and zlib's settings; None keeps TF's default."""

    compression_type_map = {"ZLIB": TFRecordCompressionType.ZLIB, "GZIP": TFRecordCompressionType.GZIP,
                            "": TFRecordCompressionType.NONE}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        self.compression_type = compression_type
        self.flush_mode, self.input_buffer_size, self.output_buffer_size = flush_mode, input_buffer_size, \
            output_buffer_size
        self.window_bits, self.compression_level, self.compression_method = window_bits, compression_level, \
            compression_method
        self.mem_level, self.compression_strategy = mem_level, compression_strategy
        compression_name(compression_type)  # checks it

    @classmethod
    def get_compression_type_string(cls, options):
        """"ZLIB", "GZIP" or "" for options (a TFRecordOptions, a compression type or None)."""
        if isinstance(options, TFRecordOptions):
            options = options.compression_type
        return compression_name(options)

    def _compressor(self):
        name = compression_name(self.compression_type)
        if not name:
            return None
        bits = 15 if self.window_bits is None else self.window_bits
        return zlib.compressobj(-1 if self.compression_level is None else self.compression_level, zlib.DEFLATED,
                                bits + 16 if name == "GZIP" else bits, 9 if self.mem_level is None else self.mem_level,
                                self.compression_strategy or 0)


def compression_name(compression_type):
    """"", "ZLIB" or "GZIP" for a compression type given as TF takes it (name, number or None)."""
    if compression_type is None:
        return ""
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if isinstance(compression_type, str) and compression_type.upper() in TFRecordOptions.compression_type_map:
        return compression_type.upper()
    if compression_type in _NAMES:
        return _NAMES[compression_type]
    raise ValueError(f"compression_type must be one of 'ZLIB', 'GZIP', '' (or TFRecordCompressionType.*), "
                     f"got {compression_type!r}")


def _options(options):
    return options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)


def _open(path, mode):
    try:
        return open(path, mode)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None


class TFRecordWriter:
    """Writes records to a TFRecord file (tf.io.TFRecordWriter); the file is complete once closed."""

    def __init__(self, path, options=None):
        self._path = str(path)
        self._compressor = _options(options)._compressor()
        self._file = _open(self._path, "wb")

    def write(self, record):
        if self._file is None:
            raise errors.FailedPreconditionError(None, None, f"{self._path}: the TFRecordWriter is closed")
        if isinstance(record, str):
            record = record.encode("utf-8")
        frame = encode_record(record)
        self._file.write(self._compressor.compress(frame) if self._compressor else frame)

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            if self._compressor:
                self._file.write(self._compressor.flush())
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            self.close()


class _Inflating:
    """read(n) of a zlib or gzip stream, decompressed as it goes."""

    def __init__(self, f, gzip, path, chunk):
        self._f, self._path, self._chunk = f, path, chunk
        self._z = zlib.decompressobj(31 if gzip else 15)
        self._buf = b""

    def read(self, n):
        while len(self._buf) < n and not self._z.eof:
            data = self._f.read(self._chunk)
            try:
                self._buf += self._z.decompress(data) if data else self._z.flush()
            except zlib.error as e:
                raise errors.DataLossError(None, None, f"{self._path}: the compressed stream is corrupt ({e})") \
                    from None
            if not data:
                break
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def close(self):
        self._f.close()


def open_stream(path, compression_type=None, buffer_size=None):
    """The file at path for reading with read(n) and close(), inflated as it goes when
    compression_type is "ZLIB" or "GZIP" (reading buffer_size compressed bytes at a time)."""
    name = compression_name(compression_type)
    chunk = 256 << 10 if not buffer_size or buffer_size <= 0 else int(buffer_size)
    f = _open(path, "rb")
    return _Inflating(f, name == "GZIP", path, chunk) if name else f


def read_records_at(path, compression_type=None, buffer_size=None):
    """Yields (offset, data) of each record of the TFRecord file at path, offset counting
    uncompressed bytes from the file's start; DataLossError (naming the file and the record's
    offset) for a checksum that does not match or a record cut short."""
    path = str(path.decode() if isinstance(path, bytes) else path)
    stream = open_stream(path, compression_type, buffer_size)
    try:
        offset = 0
        while True:
            header = stream.read(_HEADER)
            if len(header) < _HEADER:
                return
            if proto.masked_crc32c(header[:8]) != struct.unpack("<I", header[8:])[0]:
                raise errors.DataLossError(None, None, f"corrupted record at {offset} in {path}: the length's "
                                                       f"checksum does not match" + _hint(offset))
            (length,) = struct.unpack("<Q", header[:8])
            body = stream.read(length + 4)
            if len(body) < length + 4:
                raise errors.DataLossError(None, None, f"truncated record at {offset} in {path}: the file ends "
                                                       f"{length + 4 - len(body)} bytes before the record's end")
            data = body[:length]
            if proto.masked_crc32c(data) != struct.unpack("<I", body[length:])[0]:
                raise errors.DataLossError(None, None, f"corrupted record at {offset + _HEADER} in {path}: the data's "
                                                       f"checksum does not match")
            yield offset, data
            offset += _HEADER + length + 4
    finally:
        stream.close()


def read_records(path, compression_type=None, buffer_size=None):
    """Yields the data of each record of the TFRecord file at path (see read_records_at)."""
    return (data for _, data in read_records_at(path, compression_type, buffer_size))


def _hint(offset):
    return " (Is this even a TFRecord file, or is it compressed?)" if offset == 0 else ""


def tf_record_iterator(path, options=None):
    """Yields the records of a TFRecord file as bytes (tf.io.tf_record_iterator)."""
    return read_records(path, _options(options).compression_type)


class TFRecordReader(ReaderBase):
    """tf.TFRecordReader: the records of TFRecord files, compressed as options says (a
    TFRecordOptions, a compression type or None). Keys are TF's: b"<file>:<offset>", the offset
    of the record's start in the (uncompressed) file."""

    def __init__(self, name=None, options=None):
        super().__init__(name or "TFRecordReaderV2")
        self._compression = TFRecordOptions.get_compression_type_string(options)

    def _records(self, work):
        return ((work + b":" + str(offset).encode(), data) for offset, data in read_records_at(work, self._compression))
