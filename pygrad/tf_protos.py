"""TensorFlow's messages on the protobuf runtime: GraphDef, NodeDef, AttrValue (with its
ListValue and NameAttrList), TensorProto, TensorShapeProto, VersionDef and the DataType enum
(tensorflow/core/framework/*.proto); MetaGraphDef, CollectionDef, SignatureDef, TensorInfo,
AssetFileDef, SaverDef and SavedModel (core/protobuf/{meta_graph,saver,saved_model}.proto);
VariableDef and SaveSliceInfoDef (framework/variable.proto); the event file's Event, Summary,
SummaryMetadata, SummaryDescription, HistogramProto, SessionLog, LogMessage and TaggedRunMetadata
(core/util/event.proto, framework/summary.proto); Example, SequenceExample, Features, Feature,
FeatureList(s), BytesList, FloatList and Int64List (core/example/{example,feature}.proto); a traced run's
RunMetadata, StepStats and what they hold (core/framework/{step_stats,tensor_description,allocation_description}.proto,
core/protobuf/config.proto); ClusterDef, JobDef and ServerDef (core/protobuf/{cluster,tensorflow_server}.proto).
They have TF's package
(`tensorflow`), names and field numbers, so what they parse and serialize is TF's bytes. What is
left out here (the insides of a TensorProto's resource handles and variants, of a GraphDef's
function library, of a MetaGraphDef's stripped op list, Any and object graph) parses as unknown
fields and serializes back unchanged.

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
# "map:X" a map<string, X> ("map:K:X" a map<K, X>), anything else a message or an enum (DataType or one of _ENUMS). A
# message's oneof is named "value", or NAME where its fields say "oneof:NAME".
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
    "GraphDef": [("node", 1, "NodeDef", "repeated"), ("library", 2, "FunctionDefLibrary", ""),
                 ("version", 3, "int32", ""), ("versions", 4, "VersionDef", "")],
    # tensorflow/core/protobuf/meta_graph.proto, saver.proto, saved_model.proto; framework/variable.proto
    "OpList": [], "Any": [], "SavedObjectGraph": [], "TypeSpecProto": [],
    "MetaGraphDef": [("meta_info_def", 1, "MetaGraphDef.MetaInfoDef", ""), ("graph_def", 2, "GraphDef", ""),
                     ("saver_def", 3, "SaverDef", ""), ("collection_def", 4, "map:CollectionDef", ""),
                     ("signature_def", 5, "map:SignatureDef", ""), ("asset_file_def", 6, "AssetFileDef", "repeated"),
                     ("object_graph_def", 7, "SavedObjectGraph", "")],
    "MetaGraphDef.MetaInfoDef": [("meta_graph_version", 1, "string", ""), ("stripped_op_list", 2, "OpList", ""),
                                 ("any_info", 3, "Any", ""), ("tags", 4, "string", "repeated"),
                                 ("tensorflow_version", 5, "string", ""), ("tensorflow_git_version", 6, "string", ""),
                                 ("stripped_default_attrs", 7, "bool", ""),
                                 ("function_aliases", 8, "map:string", "")],
    "CollectionDef": [("node_list", 1, "CollectionDef.NodeList", "oneof:kind"),
                      ("bytes_list", 2, "CollectionDef.BytesList", "oneof:kind"),
                      ("int64_list", 3, "CollectionDef.Int64List", "oneof:kind"),
                      ("float_list", 4, "CollectionDef.FloatList", "oneof:kind"),
                      ("any_list", 5, "CollectionDef.AnyList", "oneof:kind")],
    "CollectionDef.NodeList": [("value", 1, "string", "repeated")],
    "CollectionDef.BytesList": [("value", 1, "bytes", "repeated")],
    "CollectionDef.Int64List": [("value", 1, "int64", "repeated")],
    "CollectionDef.FloatList": [("value", 1, "float", "repeated")],
    "CollectionDef.AnyList": [("value", 1, "Any", "repeated")],
    "TensorInfo": [("name", 1, "string", "oneof:encoding"), ("coo_sparse", 4, "TensorInfo.CooSparse", "oneof:encoding"),
                   ("composite_tensor", 5, "TensorInfo.CompositeTensor", "oneof:encoding"), ("dtype", 2, "DataType", ""),
                   ("tensor_shape", 3, "TensorShapeProto", "")],
    "TensorInfo.CooSparse": [("values_tensor_name", 1, "string", ""), ("indices_tensor_name", 2, "string", ""),
                             ("dense_shape_tensor_name", 3, "string", "")],
    "TensorInfo.CompositeTensor": [("type_spec", 1, "TypeSpecProto", ""), ("components", 2, "TensorInfo", "repeated")],
    "SignatureDef": [("inputs", 1, "map:TensorInfo", ""), ("outputs", 2, "map:TensorInfo", ""),
                     ("method_name", 3, "string", ""), ("defaults", 4, "map:TensorProto", "")],
    "AssetFileDef": [("tensor_info", 1, "TensorInfo", ""), ("filename", 2, "string", "")],
    "SaverDef": [("filename_tensor_name", 1, "string", ""), ("save_tensor_name", 2, "string", ""),
                 ("restore_op_name", 3, "string", ""), ("max_to_keep", 4, "int32", ""), ("sharded", 5, "bool", ""),
                 ("keep_checkpoint_every_n_hours", 6, "float", ""), ("version", 7, "int32", "")],
    "SavedModel": [("saved_model_schema_version", 1, "int64", ""), ("meta_graphs", 2, "MetaGraphDef", "repeated")],
    "VariableDef": [("variable_name", 1, "string", ""), ("initial_value_name", 6, "string", ""),
                    ("initializer_name", 2, "string", ""), ("snapshot_name", 3, "string", ""),
                    ("save_slice_info_def", 4, "SaveSliceInfoDef", ""), ("is_resource", 5, "bool", ""),
                    ("trainable", 7, "bool", ""), ("synchronization", 8, "int32", ""),
                    ("aggregation", 9, "int32", "")],
    "SaveSliceInfoDef": [("full_name", 1, "string", ""), ("full_shape", 2, "int64", "repeated"),
                         ("var_offset", 3, "int64", "repeated"), ("var_shape", 4, "int64", "repeated")],
    # tensorflow/core/framework/summary.proto, xla/tsl/protobuf/histogram.proto, core/util/event.proto
    "HistogramProto": [("min", 1, "double", ""), ("max", 2, "double", ""), ("num", 3, "double", ""),
                       ("sum", 4, "double", ""), ("sum_squares", 5, "double", ""),
                       ("bucket_limit", 6, "double", "repeated"), ("bucket", 7, "double", "repeated")],
    "SummaryMetadata": [("plugin_data", 1, "SummaryMetadata.PluginData", ""), ("display_name", 2, "string", ""),
                        ("summary_description", 3, "string", ""), ("data_class", 4, "DataClass", "")],
    "SummaryMetadata.PluginData": [("plugin_name", 1, "string", ""), ("content", 2, "bytes", "")],
    "SummaryDescription": [("type_hint", 1, "string", "")],
    "Summary": [("value", 1, "Summary.Value", "repeated")],
    "Summary.Image": [("height", 1, "int32", ""), ("width", 2, "int32", ""), ("colorspace", 3, "int32", ""),
                      ("encoded_image_string", 4, "bytes", "")],
    "Summary.Audio": [("sample_rate", 1, "float", ""), ("num_channels", 2, "int64", ""),
                      ("length_frames", 3, "int64", ""), ("encoded_audio_string", 4, "bytes", ""),
                      ("content_type", 5, "string", "")],
    "Summary.Value": [("node_name", 7, "string", ""), ("tag", 1, "string", ""), ("metadata", 9, "SummaryMetadata", ""),
                      ("simple_value", 2, "float", "oneof"), ("obsolete_old_style_histogram", 3, "bytes", "oneof"),
                      ("image", 4, "Summary.Image", "oneof"), ("histo", 5, "HistogramProto", "oneof"),
                      ("audio", 6, "Summary.Audio", "oneof"), ("tensor", 8, "TensorProto", "oneof")],
    "LogMessage": [("level", 1, "LogMessage.Level", ""), ("message", 2, "string", "")],
    "SessionLog": [("status", 1, "SessionLog.SessionStatus", ""), ("checkpoint_path", 2, "string", ""),
                   ("msg", 3, "string", "")],
    "TaggedRunMetadata": [("tag", 1, "string", ""), ("run_metadata", 2, "bytes", "")],
    "SourceMetadata": [("writer", 1, "string", "")],
    "Event": [("wall_time", 1, "double", ""), ("step", 2, "int64", ""), ("file_version", 3, "string", "oneof:what"),
              ("graph_def", 4, "bytes", "oneof:what"), ("summary", 5, "Summary", "oneof:what"),
              ("log_message", 6, "LogMessage", "oneof:what"), ("session_log", 7, "SessionLog", "oneof:what"),
              ("tagged_run_metadata", 8, "TaggedRunMetadata", "oneof:what"),
              ("meta_graph_def", 9, "bytes", "oneof:what"), ("source_metadata", 10, "SourceMetadata", "")],
    # tensorflow/core/framework/step_stats.proto, tensor_description.proto, allocation_description.proto;
    # RunMetadata of core/protobuf/config.proto (a cost graph is kept as unknown fields)
    "AllocationDescription": [("requested_bytes", 1, "int64", ""), ("allocated_bytes", 2, "int64", ""),
                              ("allocator_name", 3, "string", ""), ("allocation_id", 4, "int64", ""),
                              ("has_single_reference", 5, "bool", ""), ("ptr", 6, "uint64", "")],
    "TensorDescription": [("dtype", 1, "DataType", ""), ("shape", 2, "TensorShapeProto", ""),
                          ("allocation_description", 4, "AllocationDescription", "")],
    "AllocationRecord": [("alloc_micros", 1, "int64", ""), ("alloc_bytes", 2, "int64", "")],
    "AllocatorMemoryUsed": [("allocator_name", 1, "string", ""), ("total_bytes", 2, "int64", ""),
                            ("peak_bytes", 3, "int64", ""), ("live_bytes", 4, "int64", ""),
                            ("allocation_records", 6, "AllocationRecord", "repeated"),
                            ("allocator_bytes_in_use", 5, "int64", "")],
    "NodeOutput": [("slot", 1, "int32", ""), ("tensor_description", 3, "TensorDescription", "")],
    "MemoryStats": [("temp_memory_size", 1, "int64", ""), ("persistent_memory_size", 3, "int64", ""),
                    ("persistent_tensor_alloc_ids", 5, "int64", "repeated"),
                    ("device_temp_memory_size", 2, "int64", ""), ("device_persistent_memory_size", 4, "int64", ""),
                    ("device_persistent_tensor_alloc_ids", 6, "int64", "repeated")],
    "NodeExecStats": [("node_name", 1, "string", ""), ("all_start_micros", 2, "int64", ""),
                      ("op_start_rel_micros", 3, "int64", ""), ("op_end_rel_micros", 4, "int64", ""),
                      ("all_end_rel_micros", 5, "int64", ""), ("memory", 6, "AllocatorMemoryUsed", "repeated"),
                      ("output", 7, "NodeOutput", "repeated"), ("timeline_label", 8, "string", ""),
                      ("scheduled_micros", 9, "int64", ""), ("thread_id", 10, "uint32", ""),
                      ("referenced_tensor", 11, "AllocationDescription", "repeated"),
                      ("memory_stats", 12, "MemoryStats", ""), ("all_start_nanos", 13, "int64", ""),
                      ("op_start_rel_nanos", 14, "int64", ""), ("op_end_rel_nanos", 15, "int64", ""),
                      ("all_end_rel_nanos", 16, "int64", ""), ("scheduled_nanos", 17, "int64", "")],
    "DeviceStepStats": [("device", 1, "string", ""), ("node_stats", 2, "NodeExecStats", "repeated"),
                        ("thread_names", 3, "map:uint32:string", "")],
    "StepStats": [("dev_stats", 1, "DeviceStepStats", "repeated")],
    "CostGraphDef": [],
    "RunMetadata": [("step_stats", 1, "StepStats", ""), ("cost_graph", 2, "CostGraphDef", ""),
                    ("partition_graphs", 3, "GraphDef", "repeated"),
                    ("function_graphs", 4, "RunMetadata.FunctionGraphs", "repeated"),
                    ("session_metadata", 5, "SessionMetadata", "")],
    "RunMetadata.FunctionGraphs": [("partition_graphs", 1, "GraphDef", "repeated"),
                                   ("pre_optimization_graph", 2, "GraphDef", ""),
                                   ("post_optimization_graph", 3, "GraphDef", "")],
    "SessionMetadata": [("name", 1, "string", ""), ("version", 2, "int64", "")],
    # tensorflow/core/example/feature.proto, example.proto
    "BytesList": [("value", 1, "bytes", "repeated")],
    "FloatList": [("value", 1, "float", "repeated")],
    "Int64List": [("value", 1, "int64", "repeated")],
    "Feature": [("bytes_list", 1, "BytesList", "oneof:kind"), ("float_list", 2, "FloatList", "oneof:kind"),
                ("int64_list", 3, "Int64List", "oneof:kind")],
    "Features": [("feature", 1, "map:Feature", "")],
    "FeatureList": [("feature", 1, "Feature", "repeated")],
    "FeatureLists": [("feature_list", 1, "map:FeatureList", "")],
    # tensorflow/core/protobuf/cluster.proto, tensorflow_server.proto (ConfigProto kept as unknown fields)
    "JobDef": [("name", 1, "string", ""), ("tasks", 2, "map:int32:string", "")],
    "ClusterDef": [("job", 1, "JobDef", "repeated")],
    "ConfigProto": [], "ClusterDeviceFilters": [],
    "ServerDef": [("cluster", 1, "ClusterDef", ""), ("job_name", 2, "string", ""), ("task_index", 3, "int32", ""),
                  ("default_session_config", 4, "ConfigProto", ""), ("protocol", 5, "string", ""),
                  ("port", 6, "int32", ""), ("cluster_device_filters", 7, "ClusterDeviceFilters", ""),
                  ("replica", 8, "int32", "")],
    "Example": [("features", 1, "Features", "")],
    "SequenceExample": [("context", 1, "Features", ""), ("feature_lists", 2, "FeatureLists", "")],
}

# enum: [(value, number), ...]; one inside a message is named "Message.Enum".
_ENUMS = {
    "DataClass": [("DATA_CLASS_UNKNOWN", 0), ("DATA_CLASS_SCALAR", 1), ("DATA_CLASS_TENSOR", 2),
                  ("DATA_CLASS_BLOB_SEQUENCE", 3)],
    "LogMessage.Level": [("UNKNOWN", 0), ("DEBUGGING", 10), ("INFO", 20), ("WARN", 30), ("ERROR", 40), ("FATAL", 50)],
    "SessionLog.SessionStatus": [("STATUS_UNSPECIFIED", 0), ("START", 1), ("STOP", 2), ("CHECKPOINT", 3)],
}


def _field(message, full, name, number, type, kind):
    """Adds a field to message, whose name in the package is full."""
    f = message.field.add(name=name, number=number, json_name=name)
    f.label = _F.LABEL_REPEATED if kind == "repeated" or type.startswith("map:") else _F.LABEL_OPTIONAL
    if kind.startswith("oneof"):
        f.oneof_index = 0
    if type.startswith("map:"):
        entry = message.nested_type.add(name="".join(w.capitalize() for w in name.split("_")) + "Entry")
        entry.options.map_entry = True
        key, _, value = type[4:].rpartition(":")  # "map:X" has string keys, "map:K:X" keys of type K
        _field(entry, None, "key", 1, key or "string", "")
        _field(entry, None, "value", 2, value, "")
        f.type, f.type_name = _F.TYPE_MESSAGE, f".tensorflow.{full}.{entry.name}"
    elif type in _TYPES:
        f.type = _TYPES[type]
    elif type == "DataType" or type in _ENUMS:
        f.type, f.type_name = _F.TYPE_ENUM, f".tensorflow.{type}"
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, f".tensorflow.{type}"
    numeric = type in _TYPES and type not in ("string", "bytes") or type == "DataType" or type in _ENUMS
    if kind == "repeated" and numeric:
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
        oneof = next((kind for *_, kind in fields if kind.startswith("oneof")), None)
        if oneof:
            message.oneof_decl.add(name=oneof.partition(":")[2] or "value")
        for field in fields:
            _field(message, full, *field)
    for full, values in _ENUMS.items():
        outer, _, inner = full.rpartition(".")
        enum = (made[outer].enum_type if outer else file.enum_type).add(name=inner)
        for name, number in values:
            enum.value.add(name=name, number=number)
    return file


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _cls(name):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow." + name))


GraphDef, NodeDef, AttrValue = _cls("GraphDef"), _cls("NodeDef"), _cls("AttrValue")
TensorProto, TensorShapeProto, VersionDef, NameAttrList = (_cls("TensorProto"), _cls("TensorShapeProto"),
                                                           _cls("VersionDef"), _cls("NameAttrList"))
MetaGraphDef, CollectionDef, SaverDef = _cls("MetaGraphDef"), _cls("CollectionDef"), _cls("SaverDef")
SignatureDef, TensorInfo, AssetFileDef = _cls("SignatureDef"), _cls("TensorInfo"), _cls("AssetFileDef")
SavedModel, VariableDef, SaveSliceInfoDef = _cls("SavedModel"), _cls("VariableDef"), _cls("SaveSliceInfoDef")
HistogramProto, SummaryMetadata, Summary = _cls("HistogramProto"), _cls("SummaryMetadata"), _cls("Summary")
Event, LogMessage, SessionLog = _cls("Event"), _cls("LogMessage"), _cls("SessionLog")
TaggedRunMetadata, SourceMetadata = _cls("TaggedRunMetadata"), _cls("SourceMetadata")
SummaryDescription = _cls("SummaryDescription")
BytesList, FloatList, Int64List = _cls("BytesList"), _cls("FloatList"), _cls("Int64List")
Feature, Features, FeatureList = _cls("Feature"), _cls("Features"), _cls("FeatureList")
FeatureLists = _cls("FeatureLists")
Example, SequenceExample = _cls("Example"), _cls("SequenceExample")
RunMetadata, StepStats, DeviceStepStats = _cls("RunMetadata"), _cls("StepStats"), _cls("DeviceStepStats")
NodeExecStats, NodeOutput, TensorDescription = _cls("NodeExecStats"), _cls("NodeOutput"), _cls("TensorDescription")
AllocationDescription, AllocatorMemoryUsed = _cls("AllocationDescription"), _cls("AllocatorMemoryUsed")
JobDef, ClusterDef, ServerDef = _cls("JobDef"), _cls("ClusterDef"), _cls("ServerDef")
