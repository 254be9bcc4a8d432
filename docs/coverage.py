"""The "What is supported" page, docs/coverage.md, generated from the package.

`python docs/coverage.py` rewrites the page; tests/test_docs.py fails when it is stale. The
namespaces of each row and their name counts come from the installed pygrad: a namespace counts the
public names `dir()` lists, modules left out, and a module bound under two names counts once (the
others are listed as aliases). The notes on what is there and what is not are the data below.
Namespaces this table does not name are found too: TF 1.x's top-level namespaces and every module
of `tf.contrib` that pygrad has become rows of their own (with no notes yet), so the page follows
the package, whatever it holds.
"""
import collections
import pathlib
import sys
import types

PAGE = pathlib.Path(__file__).resolve().parent / "coverage.md"

# TF1's top-level namespaces, tf.<name>: the modules tf.compat.v1 holds (TensorFlow 2.21's, less `types`,
# which TF 2 added), with contrib, estimator, flags and keras, which TF1 had and tf.compat.v1 no longer holds.
TF1_NAMESPACES = (
    "app", "audio", "autograph", "bitwise", "compat", "config", "contrib", "data", "debugging", "distribute",
    "distributions", "dtypes", "errors", "estimator", "experimental", "feature_column", "flags", "gfile",
    "graph_util", "image", "initializers", "io", "keras", "layers", "linalg", "lite", "logging", "lookup", "losses",
    "manip", "math", "metrics", "mixed_precision", "mlir", "nest", "nn", "profiler", "python_io", "quantization",
    "queue", "ragged", "random", "raw_ops", "resource_loader", "saved_model", "sets", "signal", "sparse",
    "spectral", "strings", "summary", "sysconfig", "test", "tpu", "train", "user_ops", "version", "xla")

# Modules pygrad binds under a TF1 namespace's name that are not that namespace.
LEFT_OUT = {
    "tf.dtypes": "pygrad's dtypes module; the dtypes and `as_dtype` are counted in `tf`",
}

Row = collections.namedtuple("Row", "paths there missing")

ROWS = [
    Row(('tf',),
        'graph, session, placeholders, variables and scopes, math and reductions, array manipulation '
        '(slicing with run-time starts, `boolean_mask`/`unique`/`where(cond)` of computed tensors, '
        '`gather_nd`, `scatter_*`, `pad`, `reverse_sequence`, `cumsum`, `einsum`, `tensordot`, batched '
        '`matmul`, `matrix_inverse`, `sort`/`argsort`), random ops, '
        '`cond`/`case`/`while_loop`/`map_fn`/`scan`/`TensorArray` (with `py_func`, `Print` and iterators '
        'inside them), `py_func`, `Print`/`print`, `Assert` and the `assert_*` checks, '
        '`confusion_matrix`, `device`, sparse tensors (`SparseTensor`, `sparse_placeholder`, fed and '
        'fetched as `SparseTensorValue`; `sparse_to_dense`, `sparse_tensor_to_dense`, `sparse_reorder`, '
        '`sparse_reshape`, `sparse_concat`, `sparse_add`, `sparse_reduce_sum`, `sparse_retain`, '
        '`sparse_fill_empty_rows`, `sparse_to_indicator`, `sparse_merge`, `sparse_tensor_dense_matmul`, '
        "`sparse_segment_sum/mean/sqrt_n`, a SparseTensor's `*` and `/`, with TF's gradients), strings "
        '(`string_split`, `as_string`, `string_join`, `substr`, `regex_replace`, `reduce_join`, the '
        '`string_to_hash_bucket*` hashes, bit for bit), '
        '`parse_example`/`parse_single_example`/`parse_single_sequence_example` (`FixedLenFeature`, '
        '`VarLenFeature`, `SparseFeature`, `FixedLenSequenceFeature`), `decode_raw`, `decode_csv`, '
        '`string_to_number`, `read_file`/`write_file`/`matching_files`, `tables_initializer`, '
        '`ConfigProto`, the pre-1.0 names (`mul`, `arg_max`, `select`, `initialize_all_variables`, ...), '
        'queues (`FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue`, `PriorityQueue`) and readers '
        '(`TextLineReader`, `TFRecordReader`, `FixedLengthRecordReader`, `WholeFileReader`, '
        '`IdentityReader`), partitioned variables (`fixed_size_partitioner`, '
        '`min_max_variable_partitioner`, `variable_axis_size_partitioner`, '
        "`create_partitioned_variables`, `PartitionedVariable`: TF's parts, slices in checkpoints both "
        "ways), `norm`, `DeviceSpec` and TF's device scopes, `colocate_with`, "
        "`report_uninitialized_variables`, `RunOptions(trace_level=FULL_TRACE)` and `RunMetadata` (TF's "
        'StepStats, see `pygrad.client.timeline` and `tf.profiler`)',
        '`tf.keras`, `RaggedTensor`, `tf.sparse` beyond the names at its row'),
    Row(('tf.nn',),
        'activations, cross-entropies, `conv2d`(`_transpose`), `depthwise_conv2d`, `separable_conv2d`, '
        'pooling, `moments`, batch norm, `embedding_lookup` (sparse gradients), `embedding_lookup_sparse`'
        ' and `safe_embedding_lookup_sparse` (the three combiners, weights), `nce_loss`, '
        '`sampled_softmax_loss`, `top_k`, `in_top_k`, `dynamic_rnn`, `static_rnn` and the bidirectional '
        'ones, `atrous_conv2d` and `conv2d(dilations=...)`, `xw_plus_b`, `zero_fraction`, '
        '`lrn`/`local_response_normalization`',
        '`conv1d`, `conv3d`, `max_pool_with_argmax`, `ctc_loss`'),
    Row(('tf.nn.rnn_cell', 'tf.contrib.rnn'),
        '`BasicRNNCell`, `BasicLSTMCell`, `LSTMCell` (peepholes, projection, clipping), `GRUCell`, '
        "`MultiRNNCell`, `DropoutWrapper`, `ResidualWrapper`, `LSTMStateTuple`; contrib's "
        '`LayerNormBasicLSTMCell`, `LSTMBlockCell`, `GRUBlockCell`(`V2`), `LSTMBlockFusedCell`, '
        '`LSTMBlockWrapper`, `AttentionCellWrapper`, `HighwayWrapper`, `EmbeddingWrapper`, '
        '`InputProjectionWrapper`, `OutputProjectionWrapper`, `stack_bidirectional_rnn`, '
        '`stack_bidirectional_dynamic_rnn`, `static_rnn`',
        '`GridLSTMCell`, `NASCell`, `TimeFreqLSTMCell` and the other rarer contrib cells, `CudnnLSTM`'),
    Row(('tf.train',),
        '9 optimizers (fused native dense and sparse updates), 6 learning-rate schedules, `Saver` '
        "(TensorFlow's V2 checkpoints, both ways), checkpoint readers, `MonitoredTrainingSession`, hooks "
        '(`FinalOpsHook` too), `ExponentialMovingAverage`, `.meta` files (`import_meta_graph`, '
        '`export_meta_graph`, `write_graph`), queue-fed input (`QueueRunner`, `Coordinator`, '
        '`start_queue_runners`, the `*_input_producer`s, `batch`, `shuffle_batch`, `batch_join`, '
        "`shuffle_batch_join`, the `maybe_*` ones; SparseTensors batch through them as TF's); "
        '`ClusterSpec`, `Server` (ps tasks serve their variables to workers in other processes), '
        '`replica_device_setter` (round-robin and greedy), `SyncReplicasOptimizer`, `SessionManager`, '
        '`Supervisor`, `MonitoredTrainingSession(master=, is_chief=)`, `WorkerSessionCreator`',
        "`SyncReplicasOptimizer`'s `variable_averages`, `QueueBase.from_list`, `shared_name` across "
        'sessions'),
    Row(('tf.train.experimental', 'tf.mixed_precision', 'tf.mixed_precision.experimental'),
        "TF1's mixed-precision training: `MixedPrecisionLossScaleOptimizer`, `FixedLossScale`, "
        "`DynamicLossScale` (TF's update rule, variable names and checkpoints), "
        '`enable_mixed_precision_graph_rewrite`/`disable_mixed_precision_graph_rewrite`, whose rewrite runs '
        'float32 convolutions and matrix products in bfloat16 on CPUs with AVX512-BF16, as TF\'s oneDNN '
        'rewrite does (see [Mixed precision](guide.md#mixed-precision-bfloat16))',
        "the float16 rewrite of TF's GPU version, TF2's checkpoint-sharding names of "
        '`tf.train.experimental`, Keras mixed-precision policies'),
    Row(('tf.layers', 'tf.contrib.layers'),
        '`dense`, `conv2d`(`_transpose`), `separable_conv2d`, pooling, `dropout`, `flatten`, '
        "`batch_normalization`, the classes; contrib's (TF-Slim's) `fully_connected`, `conv2d`, "
        '`conv2d_transpose`, `separable_conv2d`, pooling, `batch_norm` (fused, `is_training` as a tensor,'
        ' `updates_collections`), `layer_norm`, `one_hot_encoding`, `repeat`, `stack`, `embed_sequence`, '
        '`softmax`, the summaries, `optimize_loss`, regularizers and initializers, all with `arg_scope` '
        "and TF-Slim's variable names; dilated convolutions (`dilation_rate`, contrib's `rate`)",
        "`conv1d`/`conv3d`, NCHW in contrib's layers, `maxout`, `gdn`, `spatial_softmax`, dilated "
        '`conv2d_transpose`'),
    Row(('tf.losses',),
        'the eight losses, reductions, `get_total_loss`, `get_regularization_loss`',
        '`cosine_distance`, `mean_pairwise_squared_error`'),
    Row(('tf.data',),
        '`Dataset` (`from_tensor_slices`, `from_tensors`, `range`, `from_generator`, `zip`, `batch`, '
        '`padded_batch`, `shuffle`, `repeat`, `map`, `filter`, `take`, `skip`, `prefetch`, `cache`, '
        '`concatenate`, `list_files`, `interleave`, `flat_map`, ...), `experimental.parallel_interleave`, '
        '`TFRecordDataset`, `TextLineDataset`, `FixedLengthRecordDataset` (NONE, ZLIB, GZIP), one-shot, '
        'initializable, reinitializable and feedable (`string_handle`, `Iterator.from_string_handle`) '
        "iterators; SparseTensor components (a map's parsed `VarLenFeature`s, batched as TF's)",
        '`sloppy` interleave, `padded_batch`/`unbatch` of SparseTensors'),
    Row(('tf.image',),
        'flips and `random_flip_*`, `rot90`, `transpose_image`, `central_crop`, `crop_to_bounding_box`, '
        '`pad_to_bounding_box`, `resize_image_with_crop_or_pad`, `random_crop`, `convert_image_dtype`, '
        'grayscale, `per_image_standardization`, `rgb_to_hsv`/`hsv_to_rgb`, `adjust_*`/`random_*` '
        'brightness, contrast, saturation and hue, '
        '`resize_images`/`resize_bilinear`/`resize_nearest_neighbor`/`resize_bicubic` (`align_corners`, '
        '`half_pixel_centers`, gradients, sizes known at run time), '
        '`decode_jpeg`/`decode_png`/`decode_image`/`encode_png`/`encode_jpeg` through Pillow (`pip '
        'install pillow`)',
        '`AREA` resizing, `draw_bounding_boxes`, `sample_distorted_bounding_box`, `non_max_suppression`, '
        "GIF decoding, TF's fast-DCT JPEG decode (pygrad's is the accurate DCT)"),
    Row(('tf.summary',),
        '`scalar`, `histogram`, `image`, `audio`, `text`, `merge`, `merge_all`, `FileWriter` '
        "(TensorBoard's event files), the pre-0.12 names",
        '`tf.summary` v2 API, embedding projector'),
    Row(('tf.math', 'tf.random', 'tf.linalg', 'tf.initializers'),
        'the late-TF1 namespaces over the names above',
        '`tf.linalg` decompositions (`qr`, `svd`, `cholesky`)'),
    Row(('tf.sparse', 'tf.strings', 'tf.lookup', 'tf.contrib.lookup'),
        'the sparse ops above (`tf.sparse.to_dense`, `reorder`, `reshape`, `concat`, `add`, `reduce_sum`, '
        '`retain`, `fill_empty_rows`, `to_indicator`, `from_dense`, `matmul`, `cross`, `cross_hashed`, '
        '...); `tf.strings` (`split`, `join`, `length`, `substr`, `strip`, `lower`/`upper`, '
        '`regex_replace`, `regex_full_match`, `reduce_join`, `format`, `to_number`, `to_hash_bucket*`); '
        'lookup tables (`HashTable`/`StaticHashTable`, `KeyValueTensorInitializer`, '
        '`TextFileInitializer`, `index_table_from_tensor`/`_file` with out-of-vocabulary buckets, '
        '`index_to_string_table_from_*`)',
        '`tf.strings.unicode_*`, mutable hash tables'),
    Row(('tf.metrics', 'tf.contrib.metrics'),
        "TF1's streaming metrics (`accuracy`, `auc` with its four summation methods, `mean*`, "
        '`precision`/`recall` and their `_at_thresholds`/`_at_k`/`_at_top_k`, `mean_iou`, '
        '`mean_per_class_accuracy`, the four counts, `specificity_at_sensitivity`, '
        "`sensitivity_at_specificity`, `percentage_below`, ...) with TF's local variables, names and "
        "collections; contrib's `streaming_*` and `aggregate_metric_map`",
        '`streaming_concat`, `streaming_covariance`, `streaming_pearson_correlation`'),
    Row(('tf.feature_column',),
        "`numeric_column`, `bucketized_column`, the four `categorical_column_with_*` (TF's hash buckets), "
        "`crossed_column` (TF's crossed ids), `embedding_column`, `shared_embedding_columns`, "
        '`indicator_column`, `weighted_categorical_column`, `input_layer`, `linear_model`, '
        "`make_parse_example_spec`, with TF's variable names",
        'sequence columns, checkpoint-initialized embeddings'),
    Row(('tf.estimator', 'tf.estimator.export', 'tf.estimator.inputs'),
        '`Estimator` (`train`, `evaluate`, `predict`, `export_saved_model`), `EstimatorSpec`, `ModeKeys`, '
        '`RunConfig`, `train_and_evaluate` with `TrainSpec`/`EvalSpec`, '
        '`LatestExporter`/`FinalExporter`/`BestExporter`, `WarmStartSettings`, serving receivers and '
        'export outputs, `inputs.numpy_input_fn`/`pandas_input_fn`, the hooks, the canned '
        '`LinearClassifier`/`Regressor`, `DNNClassifier`/`Regressor`, '
        "`DNNLinearCombinedClassifier`/`Regressor`, `BaselineClassifier`/`Regressor` (TF1's heads, "
        'default optimizers and learning rates); see [Estimators](estimators.md)',
        '`BoostedTrees*`, multi-head estimators, distributed `TF_CONFIG` (refused, saying so), a SavedModel '
        'of `build_parsing_serving_input_receiver_fn` (its example parsing runs in Python: `NotExportableError`)'),
    Row(('tf.contrib.framework', 'tf.contrib.slim', 'tf.contrib.slim.learning', 'tf.contrib.slim.evaluation',
         'tf.contrib.slim.losses', 'tf.contrib.distributions', 'tf.contrib.crf', 'tf.contrib.training',
         'tf.contrib.learn.datasets', 'tf.contrib.learn.datasets.mnist'),
        '`arg_scope` and the variable helpers (`model_variable`, `get_variables_to_restore`, '
        '`assign_from_checkpoint_fn`, ...); TF-Slim: the layers above, `slim.losses` (also '
        '`tf.contrib.losses`), `slim.metrics`, `slim.learning` (`create_train_op`, `train`), '
        '`slim.evaluation` (`evaluate_once`, `evaluation_loop`), `slim.nets` (`alexnet`, `vgg`, '
        '`overfeat`, `resnet_v1`, `resnet_v2`, `inception_v1`, `inception_v2`, `inception_v3`, with TF-'
        "Slim's variable names), the fine-tuning idiom; `tf.contrib.distributions` (`Normal`, `Uniform`, "
        '`Bernoulli`, `Categorical`, `MultivariateNormalDiag`, `kl_divergence`), `tf.contrib.crf`, '
        '`tf.contrib.training` (`HParams`, `create_train_op`), `tf.contrib.learn.datasets.mnist`, '
        '`tf.contrib.lookup`, `tf.contrib.metrics`, `tf.contrib.rnn`; `slim.nets.lenet`, '
        "`slim.nets.mobilenet_v1` (the models repo's), ResNet's `output_stride` (atrous); "
        '`tf.contrib.training.GreedyLoadBalancingStrategy`, `RandomStrategy`, `byte_size_load_fn`',
        "slim's data providers, `Normal.cdf` (no `erf` yet); the rest of contrib (`tf.contrib.seq2seq`, "
        '`legacy_seq2seq` and the RNN extras have rows of their own)'),
    Row(('tf.contrib.seq2seq',),
        '`dynamic_decode`, `BasicDecoder` with `TrainingHelper`, `GreedyEmbeddingHelper` and '
        '`SampleEmbeddingHelper`, `AttentionWrapper` (`BahdanauAttention`, `LuongAttention`), '
        '`BeamSearchDecoder` (`tile_batch`, `gather_tree`), `sequence_loss`',
        '`CustomHelper`, `InferenceHelper`, the scheduled-sampling helpers, monotonic attention'),
    Row(('tf.contrib.legacy_seq2seq',),
        "TF1's first sequence-to-sequence library, the old translate tutorial's models: `rnn_decoder`, "
        '`attention_decoder`, the `basic_rnn`, `tied_rnn`, `embedding_rnn`, `embedding_tied_rnn` and '
        '`embedding_attention` seq2seq models, `model_with_buckets`, `sequence_loss(_by_example)`, with '
        "TF1's variable names",
        '`one2many_rnn_seq2seq`'),
    Row(('tf.test',),
        '`TestCase` (TensorFlow\'s assertions and sessions), `main`, `compute_gradient`, '
        '`compute_gradient_error`, the device queries (no GPU)',
        '`Benchmark`, `get_temp_dir`, `assert_equal_graph_def`, `create_local_cluster`'),
    Row(('tf.profiler',),
        '`profile` with `ProfileOptionBuilder` (`trainable_variables_parameter`, `float_operation`, '
        "`time_and_memory`): TF's parameter and FLOP counts, the `scope`, `graph` and `op` views; "
        '`pygrad.client.timeline.Timeline` (`tensorflow.python.client.timeline` under `python -m pygrad`) '
        'turns the StepStats of a traced run into a Chrome trace',
        '`write_op_log`, `advise`, the `code` view, per-op memory'),
    Row(('tf.compat',),
        "TF's text and number helpers (`as_bytes`, `as_text`/`as_str`, `as_str_any`, `path_to_str`, the "
        "type tuples); `tf.compat.v1` is `tf` itself",
        '`dimension_value`, `dimension_at_index`, `forward_compatible`, `v2`'),
    Row(('tf.import_graph_def', 'tf.GraphDef'),
        "frozen inference graphs and training graphs written by TensorFlow (195 TF op types, TF1's "
        "`cond`/`while_loop` control flow and TensorArrays lifted into pygrad's; see [Graphs to and from "
        'TensorFlow](graphs.md)): name prefix, `input_map`, `return_elements`, control inputs',
        "TF 2's functional `If`/`While` and function libraries, string and sparse ops"),
    Row(('tf.saved_model', 'tf.graph_util'),
        "TF1's SavedModel (`simple_save`, `builder.SavedModelBuilder`, `loader.load`, "
        "`signature_def_utils`, `utils.build_tensor_info`, `tag_constants`, `signature_constants`), TF's "
        'directory layout both ways; `convert_variables_to_constants`, `extract_sub_graph`, '
        '`remove_training_nodes`',
        "TF 2's `tf.saved_model.save`/`load` of object graphs (`SavedObjectGraph`)"),
    Row(('tf.errors', 'tf.gfile', 'tf.logging', 'tf.app.flags', 'tf.nest'),
        'all 17 error classes; local files; logging; flags and `tf.app.run`',
        'remote file systems'),
    Row(('tf.io', 'tf.io.gfile', 'tf.python_io', 'tf.train.Example'),
        "TFRecord files (`TFRecordWriter`, `tf_record_iterator`, `TFRecordOptions`, NONE/ZLIB/GZIP; TF's "
        'framing and checksums, byte for byte), `tf.train.Example`/`SequenceExample` and their parts '
        "(TF's wire format), the parsing (`parse_sequence_example` too) and decoding ops above, "
        "`tf.io.gfile` (TF 2's names for `tf.gfile`)",
        '`tf.io` encoders (`encode_*`, `serialize_tensor`), `RaggedFeature`'),
]

INTRO = ("{total:,} public names across the namespaces below (counted with `dir()`, modules left out; aliases\n"
         "count once per namespace they appear in). `tests/test_api_probe.py` runs a small graph through each\n"
         "of the everyday names TF1 programs reach for.")


def resolve(tf, path):
    """The object a dotted path from `tf` names, or None when pygrad has no such attribute."""
    obj = tf
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def public_names(module):
    """The names a namespace offers: what dir() lists, private names and modules left out."""
    return [n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)]


def discovered(tf):
    """The namespaces pygrad has under TF1's top-level names and under tf.contrib."""
    found = [f"tf.{n}" for n in TF1_NAMESPACES if isinstance(getattr(tf, n, None), types.ModuleType)]
    if "tf.contrib" in found:
        found += [f"tf.contrib.{n}" for n in dir(tf.contrib)
                  if not n.startswith("_") and isinstance(getattr(tf.contrib, n), types.ModuleType)]
    return found


def table(tf):
    """(rows, aliases): rows of (paths, counts, there, missing) for the namespaces pygrad has, each
    module counted once, under the first path that names it; aliases as (path, that first path)."""
    counted, rows, aliases = {}, [], []
    named = [p for row in ROWS for p in row.paths]
    extra = [p for p in discovered(tf) if p not in LEFT_OUT
             and not any(n == p or n.startswith(p + ".") for n in named)]
    for row in ROWS + [Row((p,), "", "") for p in extra]:
        paths, counts = [], []
        for path in row.paths:
            obj = resolve(tf, path)
            if obj is None:
                continue
            if isinstance(obj, types.ModuleType):
                if id(obj) in counted:
                    aliases.append((path, counted[id(obj)]))
                    continue
                counted[id(obj)] = path
                counts.append(len(public_names(obj)))
            paths.append(path)
        if paths:
            rows.append((paths, counts, row.there, row.missing))
    return rows, sorted(set(aliases))


def render(tf):
    """The text of docs/coverage.md for the package `tf`."""
    rows, aliases = table(tf)
    total = sum(sum(counts) for _, counts, _, _ in rows)
    lines = ["# What is supported", "",
             "<!-- Generated by docs/coverage.py from the package: edit the script, then run it. -->", "",
             INTRO.format(total=total), "",
             "| module | names | what is there | not there (yet) |", "|---|---|---|---|"]
    for paths, counts, there, missing in rows:
        parent = paths[0].rsplit(".", 1)[0]
        names = ", ".join(str(c) for c in counts) if counts else f"(in `{parent}`)"
        lines.append(f"| {', '.join(f'`{p}`' for p in paths)} | {names} | {there} | {missing} |")
    if aliases:
        lines += ["", "Counted once, under the name given: " + "; ".join(
            f"`{alias}` is `{path}`" for alias, path in aliases) + "."]
    left = [(p, why) for p, why in LEFT_OUT.items() if isinstance(resolve(tf, p), types.ModuleType)]
    if left:
        lines += ["", "Not counted: " + "; ".join(f"`{p}` ({why})" for p, why in left) + "."]
    return "\n".join(lines) + "\n"


def main():
    import pygrad
    PAGE.write_text(render(pygrad))
    print("wrote docs/coverage.md", file=sys.stderr)


if __name__ == "__main__":
    main()
