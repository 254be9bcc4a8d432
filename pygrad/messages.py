"""TensorFlow's protocol-buffer messages that pygrad writes and reads, declared field by field.

A message class lists its fields as (name, number, kind) with kind one of the scalar kinds below,
a message class, or either in a list (a repeated field). Serialization follows what protobuf's C++
library writes, so the bytes equal TensorFlow's: fields in number order; proto3 scalars left out
when zero or empty; numeric repeated fields packed; messages written when set; and a field of a
oneof (``ONEOF`` below) written whenever it is set, zero included::

    TensorProto(dtype=1, float_val=[0.5]).SerializeToString()
    TensorProto.FromString(data).float_val

Unknown fields are skipped when parsing, as protobuf does. The field numbers are those of
``tensorflow/core/framework/{tensor,tensor_shape}.proto``. What is left here is the tensor
summary's tensor_proto and DATA_TYPE (pygrad/graph_def.py's dtype numbers); TF's messages on the
protobuf runtime (graphs, events, summaries) are in pygrad/tf_protos.py.
"""
import struct

import numpy as np

from pygrad import proto

# kind: (wire type, encode one value, decode one raw field value)
_SCALARS = {
    "string": (proto.BYTES, None, lambda v: bytes(v).decode("utf-8")),
    "bytes": (proto.BYTES, None, bytes),
    "int32": (proto.VARINT, proto.varint, proto.signed64),
    "int64": (proto.VARINT, proto.varint, proto.signed64),
    "enum": (proto.VARINT, proto.varint, proto.signed64),
    "bool": (proto.VARINT, lambda v: proto.varint(int(bool(v))), bool),
    "float": (proto.FIXED32, lambda v: struct.pack("<f", v), lambda v: struct.unpack("<f", struct.pack("<I", v))[0]),
    "double": (proto.FIXED64, lambda v: struct.pack("<d", v), lambda v: struct.unpack("<d", struct.pack("<Q", v))[0]),
}
_PACKED_FORMAT = {"float": "f", "double": "d"}


class ONEOF(str):
    """A kind whose field belongs to a oneof: written when set (not None), even when zero."""


def _default(kind):
    if isinstance(kind, list):
        return []
    if isinstance(kind, type) or isinstance(kind, ONEOF):
        return None
    return {"string": "", "bytes": b"", "bool": False, "float": 0.0, "double": 0.0}.get(kind, 0)


class Message:
    """Base of the declared messages: keyword construction, equality, serialization, parsing."""

    FIELDS = ()

    def __init__(self, **values):
        for name, _, kind in self.FIELDS:
            setattr(self, name, _default(kind))
        for name, value in values.items():
            if name not in self._names():
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            setattr(self, name, list(value) if isinstance(value, (list, tuple)) else value)

    @classmethod
    def _names(cls):
        return {f[0] for f in cls.FIELDS}

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, f[0]) == getattr(other, f[0]) for f in self.FIELDS)

    def __repr__(self):
        set_fields = [f"{n}={getattr(self, n)!r}" for n, _, k in self.FIELDS if getattr(self, n) != _default(k)]
        return f"{type(self).__name__}({', '.join(set_fields)})"

    def HasField(self, name):  # noqa: N802  (protobuf's spelling)
        return getattr(self, name) is not None and getattr(self, name) != _default(self._kind(name))

    def ClearField(self, name):  # noqa: N802
        setattr(self, name, _default(self._kind(name)))

    @classmethod
    def _kind(cls, name):
        return next(k for n, _, k in cls.FIELDS if n == name)

    # ---- writing ----
    def SerializeToString(self):  # noqa: N802
        out = []
        for name, number, kind in sorted(self.FIELDS, key=lambda f: f[1]):
            value = getattr(self, name)
            if isinstance(kind, list):
                out.append(_repeated(number, kind[0], value))
            elif isinstance(kind, type):
                if value is not None:
                    out.append(proto.field_message(number, value.SerializeToString()))
            elif value is not None and (isinstance(kind, ONEOF) or value != _default(kind)):
                out.append(_scalar(number, str(kind), value))
        return b"".join(out)

    # ---- reading ----
    @classmethod
    def FromString(cls, data):  # noqa: N802
        msg = cls()
        msg.ParseFromString(data)
        return msg

    def ParseFromString(self, data):  # noqa: N802
        by_number = {number: (name, kind) for name, number, kind in self.FIELDS}
        for number, wire_type, raw in proto.fields(data):
            if number not in by_number:
                continue
            name, kind = by_number[number]
            if isinstance(kind, list):
                getattr(self, name).extend(_parse_repeated(kind[0], wire_type, raw))
            elif isinstance(kind, type):
                setattr(self, name, kind.FromString(bytes(raw)))
            else:
                setattr(self, name, _SCALARS[str(kind)][2](raw))
        return self


def _scalar(number, kind, value):
    wire_type, encode, _ = _SCALARS[kind]
    if wire_type == proto.BYTES:
        return proto.field_bytes(number, value)
    return proto.key(number, wire_type) + encode(value)


def _repeated(number, kind, values):
    if not values:
        return b""
    if isinstance(kind, type):
        return b"".join(proto.field_message(number, v.SerializeToString()) for v in values)
    if kind in ("string", "bytes"):
        return b"".join(proto.field_bytes(number, v) for v in values)
    if kind in _PACKED_FORMAT:
        return proto.field_bytes(number, struct.pack(f"<{len(values)}{_PACKED_FORMAT[kind]}", *values))
    return proto.field_bytes(number, b"".join(_SCALARS[kind][1](v) for v in values))


def _parse_repeated(kind, wire_type, raw):
    if isinstance(kind, type):
        return [kind.FromString(bytes(raw))]
    decode = _SCALARS[kind][2]
    if wire_type != proto.BYTES or kind in ("string", "bytes"):
        return [decode(raw)]
    raw = bytes(raw)
    if kind in _PACKED_FORMAT:
        return list(struct.unpack(f"<{len(raw) // struct.calcsize(_PACKED_FORMAT[kind])}{_PACKED_FORMAT[kind]}", raw))
    values, pos = [], 0
    while pos < len(raw):
        v, pos = proto.read_varint(raw, pos)
        values.append(decode(v))
    return values


# ---------------------------------------------------------------- tensor.proto, tensor_shape.proto


class TensorShapeProto(Message):
    class Dim(Message):
        FIELDS = (("size", 1, "int64"), ("name", 2, "string"))

    FIELDS = (("dim", 2, [Dim]), ("unknown_rank", 3, "bool"))


class TensorProto(Message):
    FIELDS = (("dtype", 1, "enum"), ("tensor_shape", 2, TensorShapeProto), ("version_number", 3, "int32"),
              ("tensor_content", 4, "bytes"), ("float_val", 5, ["float"]), ("double_val", 6, ["double"]),
              ("int_val", 7, ["int32"]), ("string_val", 8, ["bytes"]), ("int64_val", 10, ["int64"]),
              ("bool_val", 11, ["bool"]), ("half_val", 13, ["int32"]))


# ---------------------------------------------------------------- values as TensorProto

# types.proto's DataType numbers, by pygrad dtype name.
DATA_TYPE = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7, "int64": 9,
             "bool": 10, "uint16": 17, "float16": 19}


def shape_proto(dims):
    """TensorShapeProto of dims (None: an unknown dimension, -1; dims None: an unknown rank)."""
    if dims is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in dims])


def tensor_proto(value, dtype_name):
    """TensorProto of a NumPy value as TensorFlow builds it: strings in string_val
    (Tensor::AsProtoField), other dtypes as their bytes in tensor_content."""
    value = np.asarray(value)
    t = TensorProto(dtype=DATA_TYPE[dtype_name], tensor_shape=shape_proto(value.shape))
    if dtype_name == "string":
        t.string_val = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in value.reshape(-1)]
    elif value.size:
        t.tensor_content = value.astype(value.dtype.newbyteorder("<")).tobytes()
    return t
