"""Protocol-buffer wire format and CRC-32C: what TensorFlow's file formats are made of.

Checkpoint bundles (``.index`` entries are ``BundleEntryProto`` messages) and graph definitions
are protocol buffers; this module writes and reads their wire format directly, so none of them
needs the protobuf package. (The messages declared on the protobuf runtime, pygrad/tf_protos.py,
are built on first use: ``lazy_messages`` below names them in a module.)
A message is built as the concatenation of its encoded fields::

    entry = field_varint(1, dtype_enum) + field_bytes(2, shape_proto) + field_fixed32(5, crc)

and read back with ``fields(buf)``. Field numbers belong to the callers, next to their ``.proto``.
"""
import struct

from pygrad import _C

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5  # wire types


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli) of a bytes-like object, extending ``crc``."""
    return _C.crc32c(data, crc)


def masked_crc32c(data):
    """The masked CRC-32C TFRecord framing stores (TensorFlow's crc32c::Mask)."""
    crc = _C.crc32c(data, 0)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    """Base-128 varint of a non-negative int, or of a negative one as its 64-bit two's complement."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(buf, pos):
    """(value, next position) of the varint at buf[pos]; raises ValueError if it runs off the end."""
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated or malformed varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def signed64(n):
    """A varint's 64-bit value read as int64 (how int32/int64 fields encode negatives)."""
    return n - (1 << 64) if n >= 1 << 63 else n


def key(number, wire_type):
    return varint((number << 3) | wire_type)


def field_varint(number, value):
    return key(number, VARINT) + varint(int(value))


def field_bytes(number, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return key(number, BYTES) + varint(len(data)) + bytes(data)


field_message = field_bytes


def field_fixed32(number, value):
    return key(number, FIXED32) + struct.pack("<I", value & 0xFFFFFFFF)


def field_fixed64(number, value):
    return key(number, FIXED64) + struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF)


def field_float(number, value):
    return key(number, FIXED32) + struct.pack("<f", value)


def field_double(number, value):
    return key(number, FIXED64) + struct.pack("<d", value)


def field_packed_varints(number, values):
    return field_bytes(number, b"".join(varint(int(v)) for v in values))


def field_packed_doubles(number, values):
    return field_bytes(number, struct.pack(f"<{len(values)}d", *values))


def fields(buf):
    """Yields (number, wire_type, value) for each field of an encoded message: an int for varint
    and fixed fields (fixed ones unsigned, as stored), a memoryview for length-delimited ones.
    Raises ValueError on a malformed or truncated message."""
    view = memoryview(buf)
    pos, end = 0, len(view)
    while pos < end:
        tag, pos = read_varint(view, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == VARINT:
            value, pos = read_varint(view, pos)
        elif wire_type == FIXED64:
            if pos + 8 > end:
                raise ValueError("truncated fixed64 field")
            value, pos = int.from_bytes(view[pos:pos + 8], "little"), pos + 8
        elif wire_type == FIXED32:
            if pos + 4 > end:
                raise ValueError("truncated fixed32 field")
            value, pos = int.from_bytes(view[pos:pos + 4], "little"), pos + 4
        elif wire_type == BYTES:
            n, pos = read_varint(view, pos)
            if pos + n > end:
                raise ValueError("truncated length-delimited field")
            value, pos = view[pos:pos + n], pos + n
        else:
            raise ValueError(f"unsupported wire type {wire_type} in field {number}")
        yield number, wire_type, value


def lazy_messages(module_name, names):
    """A module's ``__getattr__`` giving pygrad/tf_protos.py's messages of names: the messages are
    built by the first of them asked for, not by the import of the module."""
    def __getattr__(name):  # noqa: N807
        if name in names:
            from pygrad import tf_protos
            return getattr(tf_protos, name)
        raise AttributeError(f"module '{module_name}' has no attribute '{name}'")
    return __getattr__
