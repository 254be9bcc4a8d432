"""TensorFlow's graph messages on the protobuf runtime: GraphDef, NodeDef, AttrValue (with its
ListValue and NameAttrList), TensorProto, TensorShapeProto, VersionDef and the DataType enum, with
TF's package (`tensorflow`), names and field numbers (tensorflow/core/framework/*.proto), so what
they parse and serialize is TF's bytes. What is left out here (the insides of a TensorProto's resource
handles and variants and of a GraphDef's function library, a NodeDef's debug info) parses as
unknown fields and serializes back unchanged.

The schema is declared here as a FileDescriptorProto in its own descriptor pool (no protoc step,
and no clash with TensorFlow's classes when both are loaded); import this module lazily: building
the classes takes a few milliseconds that `import pygrad` does not pay.
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_TYPES = {"int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64, "float": _F.TYPE_FLOAT, "double": _F.TYPE_DOUBLE,
          "bool": _F.TYPE_BOOL, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "uint32": _F.TYPE_UINT32,
          "uint64": _F.TYPE_UINT64}

DATA_TYPES = ["DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8", "DT_STRING",
              "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32", "DT_BFLOAT16",
              "DT_QINT16", "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE", "DT_VARIANT",
              "DT_UINT32", "DT_UINT64"]

# message: [(field, number, type, "repeated"/"oneof"/"" ), ...]; a type in _TYPES is a scalar,
# "map:X" a map<string, X>, anything else a message or the DataType enum.
_MESSAGES = {
    "TensorShapeProto": [("dim", 2, "TensorShapeProto.Dim", "repeated"), ("unknown_rank", 3, "bool", "")],
    "TensorShapeProto.Dim": [("size", 1, "int64", ""), ("name", 2, "string", "")],
    "TensorProto": [("dtype", 1, "DataType", ""), ("tensor_shape", 2, "TensorShapeProto", ""),
                    ("version_number", 3, "int32", ""), ("tensor_content", 4, "bytes", ""),
                    ("float_val", 5, "float", "repeated"), ("double_val", 6, "double", "repeated"),
                    ("int_val", 7, "int32", "repeated"), ("string_val", 8, "bytes", "repeated"),
                    ("scomplex_val", 9, "float", "repeated"), ("int64_val", 10, "int64", "repeated"),
                    ("bool_val", 11, "bool", "repeated"), ("dcomplex_val", 12, "double", "repeated"),
                    ("half_val", 13, "int32", "repeated"), ("resource_handle_val", 14, "ResourceHandleProto", "repeated"),
                    ("variant_val", 15, "VariantTensorDataProto", "repeated"), ("uint32_val", 16, "uint32", "repeated"),
                    ("uint64_val", 17, "uint64", "repeated"), ("float8_val", 18, "bytes", "")],
    # Declared without their fields (kept as unknown fields), so the fields around them serialize in TF's order.
    "ResourceHandleProto": [], "VariantTensorDataProto": [], "FunctionDefLibrary": [],
    "AttrValue": [("list", 1, "AttrValue.ListValue", "oneof"), ("s", 2, "bytes", "oneof"), ("i", 3, "int64", "oneof"),
                  ("f", 4, "float", "oneof"), ("b", 5, "bool", "oneof"), ("type", 6, "DataType", "oneof"),
                  ("shape", 7, "TensorShapeProto", "oneof"), ("tensor", 8, "TensorProto", "oneof"),
                  ("placeholder", 9, "string", "oneof"), ("func", 10, "NameAttrList", "oneof")],
    "AttrValue.ListValue": [("s", 2, "bytes", "repeated"), ("i", 3, "int64", "repeated"),
                            ("f", 4, "float", "repeated"), ("b", 5, "bool", "repeated"),
                            ("type", 6, "DataType", "repeated"), ("shape", 7, "TensorShapeProto", "repeated"),
                            ("tensor", 8, "TensorProto", "repeated"), ("func", 9, "NameAttrList", "repeated")],
    "NameAttrList": [("name", 1, "string", ""), ("attr", 2, "map:AttrValue", "")],
    "NodeDef": [("name", 1, "string", ""), ("op", 2, "string", ""), ("input", 3, "string", "repeated"),
                ("device", 4, "string", ""), ("attr", 5, "map:AttrValue", "")],
    "VersionDef": [("producer", 1, "int32", ""), ("min_consumer", 2, "int32", ""),
                   ("bad_consumers", 3, "int32", "repeated")],
    "GraphDef": [("node", 1, "NodeDef", "repeated"), ("library", 2, "FunctionDefLibrary", ""), ("version", 3, "int32", ""), ("versions", 4, "VersionDef", "")],
}


def _field(message, name, number, type, kind):
    f = message.field.add(name=name, number=number, json_name=name)
    f.label = _F.LABEL_REPEATED if kind == "repeated" or type.startswith("map:") else _F.LABEL_OPTIONAL
    if kind == "oneof":
        f.oneof_index = 0
    if type.startswith("map:"):
        entry = message.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        _field(entry, "key", 1, "string", "")
        _field(entry, "value", 2, type[4:], "")
        f.type, f.type_name = _F.TYPE_MESSAGE, f".tensorflow.{message.name}.{entry.name}"
    elif type in _TYPES:
        f.type = _TYPES[type]
    elif type == "DataType":
        f.type, f.type_name = _F.TYPE_ENUM, ".tensorflow.DataType"
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, f".tensorflow.{type}"
    if kind == "repeated" and type in _TYPES and type not in ("string", "bytes") or kind == "repeated" and type == "DataType":
        f.options.packed = True


def _file():
    file = descriptor_pb2.FileDescriptorProto(name="pygrad/tf_framework.proto", package="tensorflow", syntax="proto3")
    enum = file.enum_type.add(name="DataType")
    for number, name in enumerate(DATA_TYPES):
        enum.value.add(name=name, number=number)
    for number, name in enumerate(DATA_TYPES[1:], 1):
        enum.value.add(name=name + "_REF", number=number + 100)
    made = {}
    for full, fields in _MESSAGES.items():
        outer, _, inner = full.partition(".")
        parent = made.get(outer) if inner else None
        message = (parent.nested_type if parent is not None else file.message_type).add(name=inner or outer)
        made[full] = message
        if any(kind == "oneof" for *_, kind in fields):
            message.oneof_decl.add(name="value")
        for field in fields:
            _field(message, *field)
    return file


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _cls(name):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow." + name))


GraphDef, NodeDef, AttrValue = _cls("GraphDef"), _cls("NodeDef"), _cls("AttrValue")
TensorProto, TensorShapeProto, VersionDef, NameAttrList = (_cls("TensorProto"), _cls("TensorShapeProto"),
                                                           _cls("VersionDef"), _cls("NameAttrList"))
