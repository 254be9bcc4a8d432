"""TensorFlow's V2 checkpoint bundle: ``<prefix>.index`` and ``<prefix>.data-00000-of-00001``.

The data file holds the tensors' bytes back to back (little-endian, C order). The index file is
a LevelDB-style table (TensorFlow's ``core/lib/io/table_builder.cc``) mapping each tensor's name to
a ``BundleEntryProto`` (dtype, shape, shard, offset, size, masked CRC-32C of the bytes); the empty
key holds the ``BundleHeaderProto``. The table is::

    data block*  metaindex block (empty)  index block  footer (48 bytes)

A block is a run of prefix-compressed entries (varint shared, varint unshared, varint value
length, key suffix, value), a restart array of fixed32 offsets and its count, then a trailer of
one compression byte and the masked CRC-32C of contents + that byte. The index block maps a key
>= every key of a data block to that block's handle (varint offset, varint size); the footer
holds the metaindex and index handles, padded to 40 bytes, and the magic number.

Writes go to temporary files that are fsynced and renamed into place, data first, so an index
file always belongs to a complete bundle. Reads check every CRC and raise DataLossError naming
the file rather than return damaged values.
"""
import os
import random
import re
import socket
import struct

import numpy as np

from pygrad import dtypes, errors, proto

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48  # two block handles padded to 2 * 20 bytes, then the 8-byte magic
BLOCK_SIZE = 262144  # TensorFlow's table::Options defaults
BLOCK_RESTART_INTERVAL = 16
NO_COMPRESSION = 0
BUNDLE_VERSION = 1  # kTensorBundleVersion; this reader accepts producers >= 0

# DataType enum of tensorflow/core/framework/types.proto, for the dtypes pygrad holds.
_DT_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7, "int64": 9,
            "bool": 10, "uint16": 17, "float16": 19}
_DT_OF_ENUM = {v: k for k, v in _DT_ENUM.items()}
_DT_TF_NAME = {1: "float", 2: "double", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string", 8: "complex64",
               9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 18: "complex128", 19: "half", 20: "resource",
               21: "variant", 22: "uint32", 23: "uint64"}


def data_filename(prefix, shard=0, num_shards=1):
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_filename(prefix):
    return prefix + ".index"


def dtype_enum(dtype):
    return _DT_ENUM[dtypes.as_dtype(dtype).name]


def dtype_of_enum(code, key, filename):
    name = _DT_OF_ENUM.get(code)
    if name is None or name == "string":
        raise errors.UnimplementedError(
            None, None, f"Checkpoint {filename}: tensor '{key}' has dtype {_DT_TF_NAME.get(code, code)}, which "
                        f"pygrad does not read")
    return dtypes.as_dtype(name)


# ---------------------------------------------------------------- the table (SSTable) format


class _BlockBuilder:
    def __init__(self, restart_interval):
        self.interval = restart_interval
        self.buf = bytearray()
        self.restarts = [0]
        self.count = 0  # entries since the last restart
        self.last_key = b""

    def add(self, key, value):
        shared = 0
        if self.count < self.interval:
            limit = min(len(key), len(self.last_key))
            while shared < limit and key[shared] == self.last_key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.count = 0
        self.buf += proto.varint(shared) + proto.varint(len(key) - shared) + proto.varint(len(value))
        self.buf += key[shared:] + value
        self.last_key = key
        self.count += 1

    def size_estimate(self):
        return len(self.buf) + 4 * len(self.restarts) + 4

    def finish(self):
        return bytes(self.buf) + struct.pack(f"<{len(self.restarts)}I", *self.restarts) + \
            struct.pack("<I", len(self.restarts))

    def empty(self):
        return not self.buf


def _shortest_separator(start, limit):
    """A short key >= start and < limit (TensorFlow's FindShortestSeparator)."""
    n = min(len(start), len(limit))
    i = 0
    while i < n and start[i] == limit[i]:
        i += 1
    if i < n and start[i] < 0xFF and start[i] + 1 < limit[i]:
        return start[:i] + bytes([start[i] + 1])
    return start


def _short_successor(key):
    """A short key >= key (TensorFlow's FindShortSuccessor)."""
    for i, b in enumerate(key):
        if b != 0xFF:
            return key[:i] + bytes([b + 1])
    return key


def build_table(items):
    """The bytes of a table holding items, (key bytes, value bytes) pairs in increasing key order."""
    out = bytearray()
    index = _BlockBuilder(1)
    block = _BlockBuilder(BLOCK_RESTART_INTERVAL)
    pending = None  # the handle of the last data block, indexed once the next key is known

    def write_block(contents):
        handle = proto.varint(len(out)) + proto.varint(len(contents))
        trailer = bytes([NO_COMPRESSION])
        out.extend(contents + trailer + struct.pack("<I", proto.masked_crc32c(contents + trailer)))
        return handle

    last = None
    for key, value in items:
        if last is not None and key <= last:
            raise ValueError(f"table keys must increase: {key!r} after {last!r}")
        if pending is not None:
            index.add(_shortest_separator(last, key), pending)
            pending = None
        block.add(key, value)
        last = key
        if block.size_estimate() >= BLOCK_SIZE:
            pending = write_block(block.finish())
            block = _BlockBuilder(BLOCK_RESTART_INTERVAL)
    if not block.empty():
        pending = write_block(block.finish())
    metaindex = write_block(_BlockBuilder(BLOCK_RESTART_INTERVAL).finish())
    if pending is not None:
        index.add(_short_successor(last), pending)
    index_handle = write_block(index.finish())
    footer = (metaindex + index_handle).ljust(FOOTER_SIZE - 8, b"\0")
    out += footer + struct.pack("<Q", TABLE_MAGIC)
    return bytes(out)


def _unmask(masked):
    rot = (masked - 0xA282EAD8) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def _data_loss(filename, what):
    return errors.DataLossError(None, None, f"Checkpoint file {filename} is truncated or corrupted: {what}")


def _read_block(buf, handle, filename):
    try:
        offset, pos = proto.read_varint(handle, 0)
        size, _ = proto.read_varint(handle, pos)
    except ValueError:
        raise _data_loss(filename, "bad block handle") from None
    if offset + size + 5 > len(buf):
        raise _data_loss(filename, f"block at offset {offset} of {size} bytes runs past the end of the file "
                                   f"({len(buf)} bytes)")
    contents = buf[offset:offset + size + 1]
    stored = struct.unpack_from("<I", buf, offset + size + 1)[0]
    if proto.crc32c(contents) != _unmask(stored):
        raise _data_loss(filename, f"block checksum mismatch (block at offset {offset})")
    if contents[-1] != NO_COMPRESSION:
        raise errors.UnimplementedError(
            None, None, f"Checkpoint file {filename}: block at offset {offset} is compressed (type {contents[-1]}); "
                        f"pygrad reads only uncompressed tables, which is what TensorFlow's bundle writer makes")
    return contents[:-1]


def _block_entries(block, filename):
    """[(key, value)] of a block, in order."""
    if len(block) < 4:
        raise _data_loss(filename, "block too short")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * num_restarts
    if end < 0:
        raise _data_loss(filename, "bad restart array")
    out, pos, key = [], 0, b""
    try:
        while pos < end:
            shared, pos = proto.read_varint(block, pos)
            unshared, pos = proto.read_varint(block, pos)
            vlen, pos = proto.read_varint(block, pos)
            if shared > len(key) or pos + unshared + vlen > end:
                raise ValueError("entry out of bounds")
            key = key[:shared] + bytes(block[pos:pos + unshared])
            pos += unshared
            out.append((key, bytes(block[pos:pos + vlen])))
            pos += vlen
    except ValueError as e:
        raise _data_loss(filename, f"bad block entry ({e})") from None
    return out


def read_table(buf, filename):
    """[(key, value)] of every entry of a table's bytes, in key order."""
    if len(buf) < FOOTER_SIZE:
        raise _data_loss(filename, f"{len(buf)} bytes is shorter than a table footer")
    footer = buf[len(buf) - FOOTER_SIZE:]
    if struct.unpack_from("<Q", footer, FOOTER_SIZE - 8)[0] != TABLE_MAGIC:
        raise _data_loss(filename, "not an sstable (bad magic number)")
    try:
        _, pos = proto.read_varint(footer, 0)
        _, pos = proto.read_varint(footer, pos)
    except ValueError:
        raise _data_loss(filename, "bad block handle in footer") from None
    index = _read_block(buf, footer[pos:], filename)
    entries = []
    for _, handle in _block_entries(index, filename):
        entries += _block_entries(_read_block(buf, handle, filename), filename)
    return entries


# ---------------------------------------------------------------- bundle entries


def _shape_proto(shape):
    return b"".join(proto.field_message(2, proto.field_varint(1, d)) for d in shape)


def _entry_proto(dtype, shape, offset, size, crc):
    msg = proto.field_varint(1, dtype_enum(dtype)) + proto.field_message(2, _shape_proto(shape))
    if offset:
        msg += proto.field_varint(4, offset)
    if size:
        msg += proto.field_varint(5, size)
    return msg + proto.field_fixed32(6, crc)


def _header_proto():
    version = proto.field_varint(1, BUNDLE_VERSION)
    return proto.field_varint(1, 1) + proto.field_message(3, version)  # num_shards 1, endianness LITTLE (0)


def _slice_extents(tensor_slice_proto):
    """[(start, length)] of a TensorSliceProto (an extent without a length is the whole dimension: -1)."""
    out = []
    for n, _, extent in proto.fields(tensor_slice_proto):
        if n == 1:
            fields = {m: proto.signed64(x) for m, _, x in proto.fields(extent)}
            out.append((fields.get(1, 0), fields.get(2, -1)))
    return out


def _slice_proto(extents):
    msg = b""
    for start, length in extents:
        extent = (proto.field_varint(1, start) if start else b"") + proto.field_varint(2, length)
        msg += proto.field_message(1, extent)
    return msg


# A slice's data is stored under a key of TF's OrderedCode (core/lib/strings/ordered_code.cc): a
# 0 (so every slice key sorts before every name), the tensor's name, the rank, then each dimension's
# start and length as signed numbers.


def _num_increasing(n):
    data = n.to_bytes(8, "big").lstrip(b"\x00")
    return bytes([len(data)]) + data


def _signed_num_increasing(n):
    x = ~n if n < 0 else n
    if x < 64:
        return bytes([(0x80 ^ n) & 0xFF])
    length = (x.bit_length() + 1 + 6) // 7  # a length-L code holds 7L - 1 value bits after its header
    header = (0xFF << (8 * length - length)) & ((1 << (8 * length)) - 1)  # L one-bits, then a zero
    if length > 8:
        raise ValueError(f"slice offset {n} is out of range")
    value = n & ((1 << (8 * length)) - 1)
    return (value ^ header).to_bytes(length, "big")


def slice_key(name, extents):
    """The key of the slice extents [(start, length)] of the tensor name."""
    escaped = b"".join(b"\x00\xff" if c == 0 else b"\xff\x00" if c == 0xFF else bytes([c])
                       for c in name.encode("utf-8"))
    key = _num_increasing(0) + escaped + b"\x00\x01" + _num_increasing(len(extents))
    for start, length in extents:
        key += _signed_num_increasing(start) + _signed_num_increasing(length)
    return key


class Entry:
    """A decoded BundleEntryProto."""
    __slots__ = ("dtype_enum", "shape", "shard_id", "offset", "size", "crc32c", "slices")

    def __init__(self, value, key, filename):
        self.dtype_enum, self.shape, self.shard_id, self.offset, self.size, self.crc32c = 0, [], 0, 0, 0, 0
        self.slices = []  # a partitioned variable's: [[(start, length or -1 for all), ...]] per stored slice
        try:
            for number, _, v in proto.fields(value):
                if number == 1:
                    self.dtype_enum = v
                elif number == 2:
                    self.shape = [proto.signed64(d) for n, _, dim in proto.fields(v) if n == 2
                                  for m, _, d in proto.fields(dim) if m == 1]
                elif number == 3:
                    self.shard_id = v
                elif number == 4:
                    self.offset = v
                elif number == 5:
                    self.size = v
                elif number == 6:
                    self.crc32c = v
                elif number == 7:
                    self.slices.append(_slice_extents(v))
        except ValueError as e:
            raise _data_loss(filename, f"entry for key {key} not parseable ({e})") from None
        if any(d < 0 for d in self.shape):
            raise _data_loss(filename, f"invalid tensor shape for key {key}: {self.shape}")


# ---------------------------------------------------------------- writing


def _write_file(path, chunks):
    """Writes chunks to path and fsyncs it; an OSError names path (a write's does not by itself)."""
    try:
        with open(path, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        e.filename = e.filename or path
        raise


def fsync_dir(dirname):
    fd = os.open(dirname or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# A temporary file of a save: <file>.tempstate-pg<pid of the writer>-<random hex>-<its host name>.
_TEMP_NAME = re.compile(r"\.tempstate-pg(\d+)-[0-9a-f]+-(.+)$")


def temp_filename(path):
    """A name beside path for the temporary file a save writes before renaming it to path."""
    return f"{path}.tempstate-pg{os.getpid()}-{random.getrandbits(64):016x}-{socket.gethostname()}"


def _process_gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, as another user's
        pass
    return False


def remove_stale_temp_files(dirname):
    """Removes the temporary files of saves into dirname made on this machine by a process that no
    longer runs (the pid in the name), such as a save killed midway; the files of a live process,
    of another machine and of other names are left."""
    try:
        names = os.listdir(dirname or ".")
    except OSError:
        return
    for name in names:
        m = _TEMP_NAME.search(name)
        if m and m.group(2) == socket.gethostname() and int(m.group(1)) != os.getpid() and \
                _process_gone(int(m.group(1))):
            try:
                os.remove(os.path.join(dirname, name))
            except OSError:
                pass


class Sliced:
    """A tensor saved in slices (a partitioned variable's parts): its full shape and [(offset, value)]."""

    def __init__(self, full_shape, parts):
        self.full_shape, self.parts = list(full_shape), parts


def _data_entry(name, arr, offset):
    """(the entry proto, the bytes) of one stored array."""
    arr = np.asarray(arr)  # (ascontiguousarray would make a scalar 1-d)
    if arr.dtype.kind in "OSU":
        raise errors.UnimplementedError(None, None, f"Saving '{name}': pygrad does not write string tensors "
                                                    f"to checkpoints")
    data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    return _entry_proto(arr.dtype, arr.shape, offset, len(data), proto.masked_crc32c(data)), data


def write_bundle(prefix, tensors):
    """Writes tensors ({name: numpy array, or Sliced}) as the bundle at prefix: temporary files,
    fsynced, then renamed into place (the data file first, the index last). A Sliced tensor is an
    entry of its full shape listing its slices, and each slice's data under its slice_key, as TF
    saves a partitioned variable. An OSError becomes TF's error class for its errno
    (PermissionDeniedError, ResourceExhaustedError, ...) naming the file; the files of an earlier
    checkpoint at prefix are then left as they were."""
    dirname = os.path.dirname(prefix)
    chunks, entries, offset = [], [], 0
    for name in sorted(tensors):
        value = tensors[name]
        stored = [(name.encode("utf-8"), value)]
        if isinstance(value, Sliced):
            extents = [[(o, n) for o, n in zip(start, np.shape(part))] for start, part in value.parts]
            dtype = np.asarray(value.parts[0][1]).dtype
            entries.append((name.encode("utf-8"), proto.field_varint(1, dtype_enum(dtype)) +
                            proto.field_message(2, _shape_proto(value.full_shape)) +
                            b"".join(proto.field_message(7, _slice_proto(e)) for e in extents)))
            stored = [(slice_key(name, e), part) for e, (_, part) in zip(extents, value.parts)]
        for key, arr in stored:
            entry, data = _data_entry(name, arr, offset)
            entries.append((key, entry))
            chunks.append(data)
            offset += len(data)
    entries.sort(key=lambda item: item[0])
    table = build_table([(b"", _header_proto())] + entries)
    data_tmp, index_tmp = temp_filename(data_filename(prefix)), temp_filename(index_filename(prefix))
    try:
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        remove_stale_temp_files(dirname)
        _write_file(data_tmp, chunks)
        _write_file(index_tmp, [table])
        os.replace(data_tmp, data_filename(prefix))
        os.replace(index_tmp, index_filename(prefix))
        fsync_dir(dirname)
    except OSError as e:
        raise errors.from_os_error(e, "Saving the checkpoint", dirname) from e
    finally:
        for p in (data_tmp, index_tmp):
            if os.path.exists(p):
                os.remove(p)


# ---------------------------------------------------------------- reading


class BundleReader:
    """The entries of a bundle, read from its index; tensors are read (and checked) on demand."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.filename = index_filename(prefix)
        try:
            with open(self.filename, "rb") as f:
                buf = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files for "
                            f"{prefix}") from None
        items = read_table(buf, self.filename)
        if not items or items[0][0] != b"":
            raise _data_loss(self.filename, "no header entry")
        self.num_shards, endianness, producer = 1, 0, 0
        try:
            for number, _, v in proto.fields(items[0][1]):
                if number == 1:
                    self.num_shards = v
                elif number == 2:
                    endianness = v
                elif number == 3:
                    producer = next((p for n, _, p in proto.fields(v) if n == 1), 0)
        except ValueError:
            raise _data_loss(self.filename, "unable to parse header") from None
        if endianness != 0:
            raise errors.UnimplementedError(None, None, f"Checkpoint {self.filename} is big-endian; pygrad reads "
                                                        f"little-endian bundles")
        if self.num_shards < 1 or producer < 0:
            raise _data_loss(self.filename, f"bad header (num_shards {self.num_shards})")
        self.entries, self._slice_entries = {}, {}  # {name: Entry}, {slice key: Entry of the slice's data}
        for key, value in items[1:]:
            name = key.decode("utf-8", "replace")
            (self._slice_entries if key[:1] == b"\x00" else self.entries)[key if key[:1] == b"\x00" else name] = \
                Entry(value, name, self.filename)

    def dtype(self, name):
        return dtype_of_enum(self.entries[name].dtype_enum, name, self.filename)

    def get_tensor(self, name, offset=None, shape=None):
        """The tensor stored under name, as a numpy array, or its slice at offset of shape (a
        partitioned variable's part), put together from the slices stored; NotFoundError if
        absent, DataLossError if its bytes are missing, fail their checksum, or do not cover the
        slice asked for."""
        entry = self.entries.get(name)
        if entry is None:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint {self.prefix}")
        dtype = self.dtype(name)
        offset = [0] * len(entry.shape) if offset is None else list(offset)
        shape = list(entry.shape) if shape is None else list(shape)
        want = [(o, o + n) for o, n in zip(offset, shape)]
        if not entry.slices:
            value = self._read(entry, name, dtype)
            return value[tuple(slice(lo, hi) for lo, hi in want)]
        out, covered = np.zeros(shape, dtype.np), 0
        for extents in entry.slices:
            have = [(0, n) if length < 0 else (start, start + length)
                    for (start, length), n in zip(extents, entry.shape)]
            both = [(max(a, c), min(b, d)) for (a, b), (c, d) in zip(have, want)]
            if any(lo >= hi for lo, hi in both) and shape and min(shape):
                continue
            piece = self._slice_entries.get(slice_key(name, extents))
            if piece is None:
                raise _data_loss(self.filename, f"slice {extents} of '{name}' is listed but not stored")
            value = self._read(piece, name, dtype)
            if list(value.shape) != [hi - lo for lo, hi in have]:
                raise _data_loss(self.filename, f"slice {extents} of '{name}' holds shape {list(value.shape)}")
            out[tuple(slice(lo - o, hi - o) for (lo, hi), o in zip(both, offset))] = \
                value[tuple(slice(lo - h, hi - h) for (lo, hi), (h, _) in zip(both, have))]
            covered += int(np.prod([hi - lo for lo, hi in both]))
        if covered != out.size:
            raise _data_loss(self.filename, f"the slices of '{name}' stored cover {covered} of the {out.size} elements "
                                            f"asked for (offset {offset}, shape {shape})")
        return out

    def _read(self, entry, name, dtype):
        count = int(np.prod(entry.shape, dtype=np.int64))
        nbytes = count * dtype.np.itemsize
        data_file = data_filename(self.prefix, entry.shard_id, self.num_shards)
        if entry.size != nbytes:
            raise _data_loss(self.filename, f"invalid size in bundle entry {name}: {entry.size} bytes for shape "
                                            f"{entry.shape} of {dtype.name}")
        try:
            with open(data_file, "rb") as f:
                f.seek(entry.offset)
                data = f.read(nbytes)
        except FileNotFoundError:
            raise _data_loss(data_file, f"the data file of {self.prefix} is missing") from None
        if len(data) != nbytes:
            raise _data_loss(data_file, f"'{name}' needs {nbytes} bytes at offset {entry.offset}, only {len(data)} "
                                        f"are left")
        actual = proto.crc32c(data)
        if actual != _unmask(entry.crc32c):
            raise _data_loss(data_file, f"checksum of '{name}' does not match: stored {_unmask(entry.crc32c):08x}, "
                                        f"computed on the restored bytes {actual:08x}")
        return np.frombuffer(data, dtype.np.newbyteorder("<")).astype(dtype.np).reshape(entry.shape)
