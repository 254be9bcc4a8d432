"""The TF1 names programs reach for: each exists and runs (a small graph through Session.run, or
the call itself for names that build nothing), with a value checked where one line can check it.
The groups follow the everyday-API list: tf.layers, tf.nn and math, tf.losses, training, input
pipelines and the surface around the graph. Exact numerics live in each name's own tests."""
import numpy as np
import pytest

import pygrad as tf


def _table_lookup():
    table = tf.contrib.lookup.index_table_from_tensor(["a", "b"], num_oov_buckets=1)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        return sess.run(table.lookup(tf.constant(["b", "zz", "a"]))).tolist()


def _sparse_fed():
    sp = tf.sparse_placeholder(tf.float32)
    return run(tf.sparse_reduce_sum(sp, 0), {sp: ([[0, 0]], [3.0], [1, 2])}).tolist() == [3, 0]


def _canned(tmp):
    x = {"a": np.arange(8, dtype=np.float32), "c": np.array([b"x", b"y"] * 4, object)}
    y = np.array([0, 1] * 4, np.int32)
    columns = [tf.feature_column.numeric_column("a"),
               tf.feature_column.indicator_column(tf.feature_column.categorical_column_with_vocabulary_list(
                   "c", ["x", "y"]))]
    est = tf.estimator.DNNLinearCombinedClassifier(model_dir=tmp, linear_feature_columns=columns[:1],
                                                   dnn_feature_columns=columns, dnn_hidden_units=[3])
    est.train(tf.estimator.inputs.numpy_input_fn(x, y, batch_size=4, num_epochs=1, shuffle=False))
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn(x, y, batch_size=4, shuffle=False))
    return metrics["global_step"] == 2 and 0 <= metrics["accuracy"] <= 1


def _feature_columns():
    fc = tf.feature_column
    n = fc.categorical_column_with_identity("n", 4)
    words = fc.categorical_column_with_vocabulary_list("w", ["a", "b"], num_oov_buckets=1)
    vocab = fc.categorical_column_with_vocabulary_file("w", "pyproject.toml", vocabulary_size=3)
    columns = [fc.numeric_column("x"), fc.bucketized_column(fc.numeric_column("x"), [0.0]),
               fc.embedding_column(fc.categorical_column_with_hash_bucket("w", 5), 2), fc.indicator_column(words),
               fc.indicator_column(fc.crossed_column(["w", n], 3)), fc.indicator_column(
                   fc.weighted_categorical_column(n, "nw"))] + fc.shared_embedding_columns(
                       [n, fc.categorical_column_with_identity("m", 4)], 2)
    feats = {"x": tf.constant([[1.0], [-1.0]]), "w": tf.constant([["a"], ["c"]]), "n": tf.constant([[1], [3]]),
             "nw": tf.constant([[2.0], [1.0]]), "m": tf.constant([[0], [2]])}
    spec = fc.make_parse_example_spec(columns + [vocab])
    fetches = [fc.input_layer(feats, columns), fc.linear_model(feats, [n, words])]
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        out = sess.run(fetches)
    return out[0].shape == (2, 1 + 2 + 2 + 3 + 3 + 4 + 2 + 2) and out[1].shape == (2, 1) and sorted(spec) == [
        "m", "n", "nw", "w", "x"]


def _replicated():
    cluster = tf.train.ClusterSpec({"ps": ["ps0:1", "ps1:1"], "worker": ["w0:1"]})
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        a, b = tf.Variable([[1.0]]), tf.Variable([2.0])
        y = tf.nn.xw_plus_b(tf.constant([[3.0]]), a, b)
    with tf.colocate_with(a):
        c = tf.constant(0.0)
    server = tf.train.Server.create_local_server()
    with tf.Session(server.target) as sess:
        sess.run(tf.global_variables_initializer())
        value = sess.run(y).tolist()
    return value == [[5.0]] and [a.device, b.device, y.device, c.device] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:worker", "/job:ps/task:0"] and tf.DeviceSpec.from_string(
            "/job:ps/cpu:0").to_string() == "/job:ps/device:CPU:0"


def _supervised():
    v = tf.Variable(1.0)
    report = tf.report_uninitialized_variables()
    sv = tf.train.Supervisor(logdir=None, session_manager=tf.train.SessionManager(ready_op=report))
    with sv.managed_session() as sess:
        looper = sv.loop(None, sv.request_stop)
        looper.join(10)
        ok = sess.run(v) == 1.0 and sess.run(report).size == 0 and sv.should_stop()
    return ok and issubclass(tf.train.LooperThread, object) and issubclass(tf.train.WorkerSessionCreator,
                                                                          tf.train.SessionCreator)


def run(fetch, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetch, feed)


X4 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10.0
IMG = np.linspace(-1, 1, 2 * 6 * 6 * 3, dtype=np.float32).reshape(2, 6, 6, 3)


def _dense():
    return run(tf.layers.dense(tf.constant(X4[0]), 5, activation=tf.nn.relu)).shape == (3, 5)


def _conv2d():
    return run(tf.layers.conv2d(tf.constant(IMG), 4, 3, padding="same")).shape == (2, 6, 6, 4)


def _conv2d_transpose():
    return run(tf.layers.conv2d_transpose(tf.constant(IMG), 2, 3, strides=2, padding="same")).shape == (2, 12, 12, 2)


def _batch_norm():
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(tf.constant(IMG), training=training)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([y, tf.get_collection(tf.GraphKeys.UPDATE_OPS)], {training: True})
        return abs(float(sess.run(tf.reduce_mean(y), {training: True}))) < 1e-5


def _embedding():
    params = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    g = tf.gradients(tf.reduce_sum(tf.nn.embedding_lookup(params, [3, 1])), params)[0]
    return isinstance(g, tf.IndexedSlices) and list(run(g.indices)) == [3, 1]


def _nce():
    w = tf.Variable(np.ones((10, 4), np.float32) * 0.1)
    b = tf.Variable(np.zeros(10, np.float32))
    loss = tf.nn.nce_loss(w, b, labels=tf.constant([[1], [2]], tf.int64), inputs=tf.constant(X4[0, :2]),
                          num_sampled=3, num_classes=10)
    return run(loss).shape == (2,)


def _sampled_softmax():
    w = tf.Variable(np.ones((10, 4), np.float32) * 0.1)
    b = tf.Variable(np.zeros(10, np.float32))
    loss = tf.nn.sampled_softmax_loss(w, b, labels=tf.constant([[1], [2]], tf.int64), inputs=tf.constant(X4[0, :2]),
                                      num_sampled=3, num_classes=10)
    return run(loss).shape == (2,)


def _optimizer(make):
    def probe():
        v = tf.Variable([1.0, -2.0])
        train = make().minimize(tf.reduce_sum(tf.square(v)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(v)
            sess.run(train)
            return not np.array_equal(before, sess.run(v))
    return probe


def _schedule(fn, *args, **kw):
    def probe():
        return 0.0 < float(run(fn(0.5, tf.constant(3, tf.int64), *args, **kw))) <= 0.5
    return probe


def _dataset():
    it = tf.data.Dataset.from_tensor_slices(np.arange(6)).map(lambda x: x * 2).filter(lambda x: x > 2).batch(2) \
        .make_one_shot_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        out = [list(sess.run(nxt)) for _ in range(2)]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
    return out == [[4, 6], [8, 10]]


def _initializable():
    p = tf.placeholder(tf.float32, [None])
    it = tf.data.Dataset.from_tensor_slices(p).shuffle(4, seed=1).repeat(2).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {p: [1., 2., 3.]})
        return sorted(sess.run(nxt) for _ in range(6)) == [1, 1, 2, 2, 3, 3]


def _queue_runners(make_batch):
    """Starts the graph's queue runners, fetches one batch, stops and joins them."""
    batch = make_batch()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        value = sess.run(batch)
        coord.request_stop()
        coord.join(threads)
    return value


def _text_line_batch():
    import os
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("x\n1\n2\n3\n")
    try:
        _, line = tf.TextLineReader(skip_header_lines=1).read(tf.train.string_input_producer([f.name], shuffle=False))
        return list(_queue_runners(lambda: tf.train.batch([line], 3))) == [b"1", b"2", b"3"]
    finally:
        os.remove(f.name)


def _shuffle_batch():
    batch = _queue_runners(lambda: tf.train.shuffle_batch([tf.train.range_input_producer(4).dequeue()], 6, 10, 2))
    return batch.shape == (6,) and set(batch.tolist()) <= {0, 1, 2, 3}


def _queue():
    q = tf.FIFOQueue(4, [tf.int32], shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2, 3]]))
        sess.run(q.close())
        return list(sess.run(q.dequeue_up_to(5))) == [1, 2, 3] and bool(sess.run(q.is_closed()))


def _cond():
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: x * 2, lambda: -x)
    return run(y, {x: 3.0}) == 6.0 and run(y, {x: -1.0}) == 1.0


def _while():
    i, s = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), [tf.constant(0), tf.constant(0)])
    return run(s) == 10


def _static_rnn():
    cell = tf.nn.rnn_cell.BasicLSTMCell(3)
    outs, state = tf.nn.static_rnn(cell, [tf.constant(X4[:, i]) for i in range(3)], dtype=tf.float32)
    return run(outs[-1]).shape == (2, 3)


def _contrib_rnn():
    c = tf.contrib.rnn
    xs = [tf.constant(X4[:, i]) for i in range(3)]
    cells = [c.LSTMBlockCell(3), c.GRUBlockCell(3), c.GRUBlockCellV2(3), c.LayerNormBasicLSTMCell(3),
             c.OutputProjectionWrapper(c.GRUCell(2), 3), c.InputProjectionWrapper(c.GRUCell(3), 2),
             c.HighwayWrapper(c.GRUCell(4)), c.AttentionCellWrapper(c.LSTMCell(3), 2)]
    outs = [tf.nn.static_rnn(cell, xs, dtype=tf.float32, scope=f"m{i}")[0][-1] for i, cell in enumerate(cells)]
    outs.append(c.stack_bidirectional_dynamic_rnn([c.GRUCell(2)], [c.GRUCell(2)], tf.constant(X4), dtype=tf.float32)[0])
    outs.append(c.stack_bidirectional_rnn([c.GRUCell(2)], [c.GRUCell(2)], xs, dtype=tf.float32)[0][-1])
    outs.append(c.LSTMBlockFusedCell(3)(tf.constant(X4), dtype=tf.float32)[0])
    ids = [tf.constant([1, 2]) for _ in range(3)]
    outs.append(tf.nn.static_rnn(c.EmbeddingWrapper(c.GRUCell(3), 5, 2), ids, dtype=tf.float32)[0][-1])
    shapes = [o.shape for o in run(outs)]
    return shapes[:8] == [(2, 3), (2, 3), (2, 3), (2, 3), (2, 3), (2, 3), (2, 4), (2, 3)] and shapes[8:] == [
        (2, 3, 4), (2, 4), (2, 3, 3), (2, 3)]


def _legacy_seq2seq():
    s2s = tf.contrib.legacy_seq2seq
    ids = [tf.constant([1, 2]) for _ in range(3)]
    weights = [tf.ones([2]) for _ in range(3)]
    cell = tf.nn.rnn_cell.GRUCell(4)
    outputs, losses = s2s.model_with_buckets(ids, ids, ids, weights, [(2, 2), (3, 3)], lambda x, y: (
        s2s.embedding_attention_seq2seq(x, y, cell, 5, 6, 3)))
    rnn = s2s.embedding_rnn_seq2seq(ids, ids, tf.nn.rnn_cell.GRUCell(2), 5, 6, 3, feed_previous=True)[0]
    loss = s2s.sequence_loss(rnn, ids, weights)
    values = run([losses, loss, outputs[1][-1]])
    return len(values[0]) == 2 and values[2].shape == (2, 6) and np.isfinite(values[1]) and callable(
        s2s.basic_rnn_seq2seq) and callable(s2s.tied_rnn_seq2seq) and callable(s2s.embedding_tied_rnn_seq2seq)


def _py_func():
    return list(run(tf.py_func(lambda a: a[::-1].copy(), [tf.constant([1, 2, 3])], tf.int32))) == [3, 2, 1]


def _tfrecord_pipeline():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = d + "/r.tfrecord"
        with tf.python_io.TFRecordWriter(path, tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.ZLIB)) as w:
            w.write(tf.train.Example(features=tf.train.Features(feature={"x": tf.train.Feature(
                int64_list=tf.train.Int64List(value=[3, 4]))})).SerializeToString())
        ds = tf.data.TFRecordDataset(tf.data.Dataset.list_files(d + "/*.tfrecord"), compression_type="ZLIB").map(
            lambda s: tf.io.parse_single_example(s, {"x": tf.FixedLenFeature([2], tf.int64)})["x"]).batch(1)
        return len(list(tf.io.tf_record_iterator(path, "ZLIB"))) == 1 and \
            run(ds.make_one_shot_iterator().get_next()).tolist() == [[3, 4]]


def _tfrecord_reader():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        with tf.io.TFRecordWriter(d + "/r.tfrecord") as w:
            w.write(b"abc")
        key, value = tf.TFRecordReader().read(tf.train.string_input_producer([d + "/r.tfrecord"], shuffle=False))
        keys, values = _queue_runners(lambda: tf.train.batch([key, value], 1))
        return keys.tolist() == [(d + "/r.tfrecord:0").encode()] and values.tolist() == [b"abc"]


def _feedable_iterator():
    a = tf.data.Dataset.range(3).make_one_shot_iterator()
    b = tf.data.Dataset.range(10, 13).make_initializable_iterator()
    handle = tf.placeholder(tf.string, [])
    x = tf.data.Iterator.from_string_handle(handle, a.output_types, a.output_shapes).get_next()
    with tf.Session() as sess:
        sess.run(b.initializer)
        ha, hb = sess.run([a.string_handle(), b.string_handle()])
        return [sess.run(x, {handle: h}) for h in (ha, hb, ha)] == [0, 10, 1]


def _slim_model():
    slim = tf.contrib.slim
    with slim.arg_scope([slim.conv2d, slim.fully_connected], normalizer_fn=slim.batch_norm,
                        weights_regularizer=slim.l2_regularizer(0.1)):
        net = slim.max_pool2d(slim.conv2d(tf.constant(IMG), 4, [3, 3], scope="conv1"), [2, 2])
        logits = slim.fully_connected(slim.flatten(net), 2, activation_fn=None, normalizer_fn=None)
    loss = slim.losses.softmax_cross_entropy(logits, tf.one_hot([0, 1], 2))
    names = [v.op.name for v in slim.get_model_variables()]
    return run(slim.losses.get_total_loss()) > 0 and names[:2] == ["conv1/weights", "conv1/BatchNorm/beta"] and \
        loss is not None and len(slim.get_variables_to_restore(exclude=["fully_connected"])) == 4


def _optimize_loss():
    loss = tf.reduce_sum(tf.square(tf.Variable([1.0, -2.0])))
    step = tf.contrib.layers.optimize_loss(loss, tf.train.get_or_create_global_step(), 0.1, "SGD")
    train = tf.contrib.slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(step) == 5.0 and sess.run(train) < 5.0


def _slim_nets():
    from pygrad.contrib.slim.nets import alexnet, inception, lenet, mobilenet_v1, resnet_v1, resnet_v2, vgg
    x = tf.placeholder(tf.float32, [1, 224, 224, 3])
    with tf.contrib.slim.arg_scope(resnet_v1.resnet_arg_scope()):
        logits, end_points = resnet_v1.resnet_v1_50(x, 10)
    return logits.shape.as_list() == [1, 1, 1, 10] and "predictions" in end_points and all(
        callable(f) for f in (vgg.vgg_16, vgg.vgg_19, vgg.vgg_a, alexnet.alexnet_v2, resnet_v1.resnet_v1_101,
                              resnet_v2.resnet_v2_50, inception.inception_v1, inception.inception_v2,
                              inception.inception_v3, lenet.lenet, lenet.lenet_arg_scope, mobilenet_v1.mobilenet_v1,
                              mobilenet_v1.mobilenet_v1_base, mobilenet_v1.mobilenet_v1_025,
                              mobilenet_v1.mobilenet_v1_050, mobilenet_v1.mobilenet_v1_075,
                              mobilenet_v1.mobilenet_v1_arg_scope))


def _print():
    y = tf.Print(tf.constant(2.0), [tf.constant(7)], "v")
    return run(y) == 2.0


def _strings():
    text = tf.strings.upper(tf.strings.lower(tf.strings.strip(tf.strings.join(["a", "\u00e9 "]))))
    return run(tf.strings.length(text, unit="UTF8_CHAR")) == 2 and run(tf.strings.regex_full_match("ab", "a.")) and \
        run(tf.strings.substr("abc", 1, 1)) == b"b" and run(tf.strings.to_number("3")) == 3.0 and \
        run(tf.strings.as_string(1.5, precision=1)) == b"1.5" and run(tf.strings.regex_replace("a", "a", "b")) == b"b" \
        and run(tf.strings.reduce_join(["a", "b"])) == b"ab" and run(tf.strings.to_hash_bucket("a", 3)) < 3 and \
        run(tf.strings.to_hash_bucket_strong("a", 3, [1, 2])) < 3 and run(tf.strings.format("{}", tf.constant([1, 2]))) \
        == b"[1 2]"


def _metrics(*names, **kw):
    """Each tf.metrics.<name>(labels, predictions, **kw) updates once and gives a finite value."""
    def probe():
        labels, predictions = tf.constant([1, 0, 1, 1]), tf.constant([0.8, 0.3, 0.4, 0.9])
        for name in names:
            if name.endswith("_at_k"):
                args = (tf.constant([1, 0]), tf.constant([[0.1, 0.9], [0.6, 0.4]]))
            elif name in ("accuracy", "mean_iou", "mean_per_class_accuracy"):
                args = (labels, tf.cast(predictions > 0.5, tf.int32))
            else:
                args = (labels, predictions)
            if not np.all(np.isfinite(_update(getattr(tf.metrics, name)(*args, **kw.get(name, {})), True)[1])):
                return False
        return True
    return probe


def _update(metric, and_value=False):
    """The value of a metric's update op on a fresh session (and its value after it)."""
    value, update = metric
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        return (s.run(update), s.run(value)) if and_value else s.run(update)


def _partitioned():
    v = tf.get_variable("pv", [5, 2], partitioner=tf.fixed_size_partitioner(2))
    with tf.variable_scope("", reuse=True):
        again = tf.get_variable("pv")
    return ([p.shape.as_list() for p in v] == [[3, 2], [2, 2]] and again is v and
            isinstance(v, tf.PartitionedVariable) and run(tf.reduce_sum(v.as_tensor())) != 0 and
            tf.min_max_variable_partitioner(4, min_slice_size=8)(tf.TensorShape([6, 2]), tf.float32) == [4, 1] and
            tf.variable_axis_size_partitioner(16)(tf.TensorShape([6, 2]), tf.float32) == [3, 1] and
            len(tf.create_partitioned_variables([4], [2], tf.zeros_initializer())) == 2)


def _seq2seq():
    s2s = tf.contrib.seq2seq
    memory = tf.zeros([2, 3, 4])
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(4), s2s.LuongAttention(4, memory), attention_layer_size=3)
    helper = s2s.TrainingHelper(tf.zeros([2, 5, 2]), [5, 3])
    out, _, lengths = s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32)))
    loss = s2s.sequence_loss(out.rnn_output, tf.zeros([2, 5], tf.int32), tf.ones([2, 5]))
    beam = s2s.BeamSearchDecoder(tf.nn.rnn_cell.GRUCell(3), tf.ones([3, 3]),
                                 [0, 0], 1, s2s.tile_batch(tf.zeros([2, 3]), 2), 2)
    ids = s2s.dynamic_decode(beam, maximum_iterations=4)[0].predicted_ids
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([out.rnn_output, lengths, loss, ids])
    return got[0].shape == (2, 5, 3) and got[1].tolist() == [5, 3] and got[2] > 0 and got[3].shape[::2] == (2, 2)


def _traced_run():
    import json

    from pygrad.client import timeline
    rm = tf.RunMetadata()
    tf.Session().run(tf.constant([1.0]) * 2.0, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=rm)
    trace = json.loads(timeline.Timeline(rm.step_stats).generate_chrome_trace_format())
    return [e["args"]["op"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["Mul"]


PROBES = {
    # tf.metrics
    "estimator.DNNLinearCombinedClassifier + inputs.numpy_input_fn (train, evaluate)": lambda: _canned(
        __import__("tempfile").mkdtemp()),
    "metrics.accuracy / mean_iou / mean_per_class_accuracy": _metrics(
        "accuracy", "mean_iou", "mean_per_class_accuracy", mean_iou={"num_classes": 2},
        mean_per_class_accuracy={"num_classes": 2}),
    "metrics.mean / mean_tensor / mean_squared_error / root_mean_squared_error / mean_absolute_error": lambda:
    _update(tf.metrics.root_mean_squared_error([1.0, 2.0], [1.0, 4.0])) == pytest.approx(np.sqrt(2)) and
    _update(tf.metrics.mean_squared_error([1.0, 2.0], [1.0, 4.0])) == 2.0 and
    _update(tf.metrics.mean_absolute_error([1.0, 2.0], [1.0, 4.0])) == 1.0 and
    _update(tf.metrics.mean([1.0, 3.0])) == 2.0 and _update(tf.metrics.mean_tensor([1.0, 3.0])).tolist() == [1, 3],
    "metrics.auc / precision / recall / *_at_thresholds / specificity_at_sensitivity": _metrics(
        "auc", "precision", "recall", "true_positives", "false_negatives", "precision_at_thresholds",
        "true_negatives_at_thresholds", "specificity_at_sensitivity", "sensitivity_at_specificity",
        precision_at_thresholds={"thresholds": [0.5]}, true_negatives_at_thresholds={"thresholds": [0.5]},
        specificity_at_sensitivity={"sensitivity": 0.5}, sensitivity_at_specificity={"specificity": 0.5}),
    "metrics.precision_at_k / recall_at_k / average_precision_at_k": _metrics(
        "precision_at_k", "recall_at_k", "average_precision_at_k", "sparse_precision_at_k",
        precision_at_k={"k": 1}, recall_at_k={"k": 1}, average_precision_at_k={"k": 1},
        sparse_precision_at_k={"k": 1}),
    "confusion_matrix / div_no_nan / Assert / assert_less": lambda: run(tf.confusion_matrix(
        [0, 1], [1, 1], 2)).tolist() == [[0, 1], [0, 1]] and run(tf.div_no_nan(1.0, 0.0)) == 0.0 and
    run(tf.assert_less(tf.constant(1), 2)) is None and isinstance(tf.Assert(True, ["ok"]), tf.Operation),
    "fixed_size_partitioner / min_max_variable_partitioner / variable_axis_size_partitioner / "
    "create_partitioned_variables / PartitionedVariable": _partitioned,
    # tf.layers
    "layers.dense": _dense,
    "layers.conv2d": _conv2d,
    "layers.conv2d_transpose": _conv2d_transpose,
    "layers.max_pooling2d": lambda: run(tf.layers.max_pooling2d(tf.constant(IMG), 2, 2)).shape == (2, 3, 3, 3),
    "layers.average_pooling2d": lambda: run(tf.layers.average_pooling2d(tf.constant(IMG), 2, 2)).shape == (2, 3, 3, 3),
    "layers.dropout": lambda: np.array_equal(run(tf.layers.dropout(tf.constant(X4), 0.5, training=False)), X4),
    "layers.flatten": lambda: run(tf.layers.flatten(tf.constant(X4))).shape == (2, 12),
    "layers.batch_normalization": _batch_norm,
    "contrib.layers.l2_regularizer": lambda: run(tf.contrib.layers.l2_regularizer(0.5)(tf.constant([1., 2.]))) == 1.25,
    "layers.separable_conv2d": lambda: run(tf.layers.separable_conv2d(tf.constant(IMG), 4, 3)).shape == (2, 4, 4, 4),
    "contrib.slim (arg_scope, conv2d, batch_norm, max_pool2d, flatten, fully_connected, losses)": _slim_model,
    "contrib.layers.layer_norm": lambda: abs(run(tf.reduce_mean(tf.contrib.layers.layer_norm(tf.constant(X4))))) < 1e-6,
    "contrib.framework.arg_scope": lambda: tf.contrib.framework.arg_scoped_arguments(tf.contrib.layers.flatten)
    == ("outputs_collections", "scope"),
    "contrib.layers.optimize_loss / slim.learning.create_train_op": _optimize_loss,
    "contrib.slim.evaluation / slim.learning.train / train.FinalOpsHook": lambda: callable(
        tf.contrib.slim.evaluation.evaluate_once) and callable(tf.contrib.slim.evaluation.evaluation_loop) and
    callable(tf.contrib.slim.learning.train) and issubclass(tf.train.FinalOpsHook, tf.train.SessionRunHook),
    "contrib.slim.nets (vgg, alexnet, resnet_v1, resnet_v2, inception, lenet, mobilenet_v1)": _slim_nets,
    "contrib.distributions (Normal, Bernoulli, Categorical, kl_divergence)": lambda: run(
        tf.contrib.distributions.kl_divergence(tf.contrib.distributions.Normal(0.0, 1.0),
                                               tf.contrib.distributions.Normal(0.0, 1.0))) == 0.0 and
    run(tf.contrib.distributions.Categorical(logits=[[0.0, 1.0]]).sample(3, seed=1)).shape == (3, 1),
    "contrib.rnn (block cells, LayerNormBasicLSTMCell, the wrappers, stacked bidirectional RNNs)": _contrib_rnn,
    "contrib.legacy_seq2seq (embedding_attention_seq2seq, model_with_buckets, sequence_loss, ...)": _legacy_seq2seq,
    "contrib.crf (crf_log_likelihood, crf_decode)": lambda: run(tf.contrib.crf.crf_decode(
        tf.constant([[[0.0, 2.0], [3.0, 0.0]]]), tf.zeros([2, 2]), [2])[0]).tolist() == [[1, 0]] and
    tf.contrib.crf.crf_log_likelihood(tf.zeros([1, 2, 2]), [[0, 1]], [2])[1].op.name == "transitions",
    "contrib.seq2seq (dynamic_decode, BasicDecoder, AttentionWrapper, BeamSearchDecoder, sequence_loss)":
    _seq2seq,
    "contrib.training.HParams": lambda: tf.contrib.training.HParams(lr=0.1, n=2).parse("n=3").values() == {
        "lr": 0.1, "n": 3} and callable(tf.contrib.training.create_train_op),
    "contrib.losses / contrib.learn.datasets.mnist": lambda: tf.contrib.losses is tf.contrib.slim.losses and
    callable(tf.contrib.learn.datasets.mnist.read_data_sets) and callable(tf.contrib.learn.datasets.load_dataset),
    "sort / argsort": lambda: list(run(tf.sort(tf.constant([3., 1., 2.])))) == [1, 2, 3] and
    list(run(tf.argsort(tf.constant([3., 1., 2.]), direction="DESCENDING"))) == [0, 2, 1],
    # tf.nn and math
    "nn.sigmoid_cross_entropy_with_logits": lambda: run(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.constant([1.0]), logits=tf.constant([0.0])))[0] == pytest.approx(np.log(2)),
    "nn.weighted_cross_entropy_with_logits": lambda: run(tf.nn.weighted_cross_entropy_with_logits(
        targets=tf.constant([1.0]), logits=tf.constant([0.0]), pos_weight=2.0))[0] == pytest.approx(2 * np.log(2)),
    "nn.embedding_lookup": _embedding,
    "nn.nce_loss": _nce,
    "nn.sampled_softmax_loss": _sampled_softmax,
    "nn.moments": lambda: np.allclose(run(tf.nn.moments(tf.constant([1., 2., 3., 4.]), [0])), [2.5, 1.25]),
    "nn.batch_normalization": lambda: np.allclose(run(tf.nn.batch_normalization(
        tf.constant([1., 3.]), 2.0, 1.0, None, None, 0.0)), [-1, 1]),
    "nn.fused_batch_norm": lambda: run(tf.nn.fused_batch_norm(tf.constant(IMG), tf.ones([3]), tf.zeros([3]))[0]).shape
    == IMG.shape,
    "nn.leaky_relu": lambda: list(run(tf.nn.leaky_relu(tf.constant([-1.0, 2.0])))) == [pytest.approx(-0.2), 2.0],
    "nn.elu": lambda: run(tf.nn.elu(tf.constant([-1.0])))[0] == pytest.approx(np.expm1(-1)),
    "nn.selu": lambda: run(tf.nn.selu(tf.constant([1.0])))[0] == pytest.approx(1.0507009873554805),
    "nn.softplus": lambda: run(tf.nn.softplus(tf.constant([0.0])))[0] == pytest.approx(np.log(2)),
    "nn.softsign": lambda: run(tf.nn.softsign(tf.constant([1.0])))[0] == 0.5,
    "nn.relu6": lambda: list(run(tf.nn.relu6(tf.constant([-1.0, 7.0])))) == [0.0, 6.0],
    "nn.l2_normalize": lambda: np.allclose(run(tf.nn.l2_normalize(tf.constant([3.0, 4.0]), 0)), [0.6, 0.8]),
    "nn.conv2d_transpose": lambda: run(tf.nn.conv2d_transpose(
        tf.constant(IMG), tf.ones([3, 3, 2, 3]), [2, 12, 12, 2], [1, 2, 2, 1], "SAME")).shape == (2, 12, 12, 2),
    "nn.atrous_conv2d / conv2d(dilations)": lambda: run(tf.nn.atrous_conv2d(
        tf.constant(IMG), tf.ones([3, 3, 3, 2]), 2, "SAME")).shape == (2, 6, 6, 2) and run(tf.nn.conv2d(
            tf.constant(IMG), tf.ones([3, 3, 3, 2]), 1, "VALID", dilations=[1, 2, 1, 1])).shape == (2, 2, 4, 2),
    "nn.log_softmax": lambda: np.allclose(np.exp(run(tf.nn.log_softmax(tf.constant([1., 2.])))).sum(), 1.0),
    "nn.rnn_cell + static_rnn": _static_rnn,
    "sin / cos": lambda: np.allclose(run(tf.sin(tf.constant(0.5)) ** 2 + tf.cos(tf.constant(0.5)) ** 2), 1.0),
    "cond": _cond,
    "while_loop": _while,
    "map_fn": lambda: list(run(tf.map_fn(lambda x: x * x, tf.constant([1., 2., 3.])))) == [1, 4, 9],
    "scan": lambda: list(run(tf.scan(lambda a, x: a + x, tf.constant([1., 2., 3.])))) == [1, 3, 6],
    "assign / assign_add": lambda: run(tf.assign_add(tf.Variable(1.0), 2.0)) == 3.0,
    "Print": _print,
    "print": lambda: run(tf.print(tf.constant(1))) is None,
    "py_func": _py_func,
    # tf.losses
    "losses.mean_squared_error": lambda: run(tf.losses.mean_squared_error([1., 2.], [1., 4.])) == 2.0,
    "losses.softmax_cross_entropy": lambda: run(tf.losses.softmax_cross_entropy([[0., 1.]], [[0., 0.]]))
    == pytest.approx(np.log(2)),
    "losses.sparse_softmax_cross_entropy": lambda: run(tf.losses.sparse_softmax_cross_entropy([1], [[0., 0.]]))
    == pytest.approx(np.log(2)),
    "losses.sigmoid_cross_entropy": lambda: run(tf.losses.sigmoid_cross_entropy([[1.]], [[0.]]))
    == pytest.approx(np.log(2)),
    "losses.huber_loss": lambda: run(tf.losses.huber_loss([0., 0.], [0.5, 3.0])) == pytest.approx((0.125 + 2.5) / 2),
    "losses.absolute_difference": lambda: run(tf.losses.absolute_difference([1., 2.], [2., 4.])) == 1.5,
    "losses.get_regularization_loss": lambda: run(tf.losses.get_regularization_loss()) == 0.0,
    "losses.get_total_loss": lambda: tf.losses.mean_squared_error([1.], [3.]) is not None and
    run(tf.losses.get_total_loss(add_regularization_losses=False)) == 4.0,
    # training
    "train.global_step": lambda: tf.train.global_step(tf.Session(), tf.constant(7)) == 7,
    "train.piecewise_constant": lambda: run(tf.train.piecewise_constant(tf.constant(5), [3], [1.0, 0.5])) == 0.5,
    "train.polynomial_decay": _schedule(tf.train.polynomial_decay, 10),
    "train.inverse_time_decay": _schedule(tf.train.inverse_time_decay, 10, 0.5),
    "train.natural_exp_decay": _schedule(tf.train.natural_exp_decay, 10, 0.5),
    "train.cosine_decay": _schedule(tf.train.cosine_decay, 10),
    "train.AdadeltaOptimizer": _optimizer(lambda: tf.train.AdadeltaOptimizer(1.0)),
    "train.FtrlOptimizer": _optimizer(lambda: tf.train.FtrlOptimizer(0.1)),
    "train.ProximalGradientDescentOptimizer": _optimizer(lambda: tf.train.ProximalGradientDescentOptimizer(0.1)),
    "train.ClusterSpec / Server / replica_device_setter / DeviceSpec / colocate_with / nn.xw_plus_b": _replicated,
    "train.Supervisor / SessionManager / LooperThread / WorkerSessionCreator / report_uninitialized_variables":
    _supervised,
    "contrib.training.GreedyLoadBalancingStrategy / byte_size_load_fn / RandomStrategy": lambda: tf.contrib.training
    .GreedyLoadBalancingStrategy(2, tf.contrib.training.byte_size_load_fn)(tf.Variable([1.0]).op) == 0 and
    tf.contrib.training.RandomStrategy(3)(tf.no_op(name="n")) in (0, 1, 2),
    # input pipelines
    "data.Dataset (map, filter, batch) + one-shot iterator": _dataset,
    "data.Dataset (shuffle, repeat) + initializable iterator": _initializable,
    "image: flip, crop or pad, convert_image_dtype, resize_images": lambda: run(tf.image.resize_images(
        tf.image.convert_image_dtype(tf.image.resize_image_with_crop_or_pad(tf.image.flip_left_right(
            tf.constant(np.arange(12, dtype=np.uint8).reshape(2, 2, 3))), 2, 4), tf.float32), [4, 8])).shape == (4, 8, 3),
    "image.per_image_standardization + adjust_brightness": lambda: abs(run(tf.reduce_mean(
        tf.image.adjust_brightness(tf.image.per_image_standardization(tf.constant(X4[:, :, :3])), 0.5))) - 0.5) < 1e-6,
    "data.Dataset.from_generator + range + zip": lambda: run(tf.data.Dataset.zip((
        tf.data.Dataset.range(3), tf.data.Dataset.from_generator(lambda: iter([5, 6, 7]), tf.int64)))
        .skip(1).take(1).make_one_shot_iterator().get_next()) == (1, 6),
    "TFRecordWriter -> TFRecordDataset(list_files) -> parse_single_example": _tfrecord_pipeline,
    "TFRecordReader": _tfrecord_reader,
    "random_crop": lambda: run(tf.random_crop(tf.constant(X4), [1, 2, 4], seed=1)).shape == (1, 2, 4),
    "data.Dataset.interleave / flat_map / experimental.parallel_interleave": lambda: run(tf.data.Dataset.range(
        1, 3).interleave(lambda x: tf.data.Dataset.range(x), 2).flat_map(tf.data.Dataset.from_tensors).apply(
        tf.data.experimental.parallel_interleave(tf.data.Dataset.from_tensors, 1)).batch(3)
        .make_one_shot_iterator().get_next()).tolist() == [0, 0, 1],
    "data.Iterator.string_handle / from_string_handle": _feedable_iterator,
    "TextLineDataset / FixedLengthRecordDataset": lambda: issubclass(tf.data.TextLineDataset, tf.data.Dataset) and
    issubclass(tf.data.FixedLengthRecordDataset, tf.data.Dataset),
    "parse_example / decode_raw / decode_csv / string_to_number": lambda: run(
        tf.parse_example(tf.constant([b""]), {"x": tf.FixedLenFeature([], tf.float32, 1.5)})["x"])[0] == 1.5 and
    run(tf.decode_raw(tf.constant(b"\x01\x00"), tf.int16))[0] == 1 and run(tf.decode_csv(
        tf.constant("1,b"), [[0], [""]]))[1] == b"b" and run(tf.string_to_number("2.5")) == 2.5,
    "matching_files / io.gfile": lambda: tf.io.gfile.exists(".") and tf.io.gfile.isdir(".")
    and run(tf.matching_files("*.toml")).tolist() == [b"pyproject.toml"] if tf.gfile.Exists("pyproject.toml")
    else run(tf.matching_files("no-such-*")).size == 0,
    "as_string / string_join / substr / string_strip / regex_replace / reduce_join": lambda: run(tf.reduce_join(
        tf.regex_replace(tf.substr(tf.string_strip(tf.string_join([tf.as_string([1, 2]), "xy "], " ")), 0, 3),
                         "1", "one"), separator="|")) == b"one x|2 x",
    "string_to_hash_bucket(_fast, _strong) / fingerprint": lambda: run(tf.string_to_hash_bucket_fast(["a"], 10))[0] ==
    run(tf.strings.to_hash_bucket_fast("a", 10)) and 0 <= run(tf.string_to_hash_bucket_strong("a", 5, [1, 2])) < 5
    and 0 <= run(tf.string_to_hash_bucket("a", 5)) < 5 and run(tf.fingerprint(["a"])).shape == (1, 8),
    "strings (join, length, substr, strip, lower, upper, regex_full_match, to_number, to_hash_bucket, format)":
    _strings,
    "FIFOQueue (enqueue_many, close, dequeue_up_to)": _queue,
    "SparseTensor / sparse_placeholder / sparse_tensor_to_dense / sparse.reduce_sum": lambda: run(
        tf.sparse.to_dense(tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 2]))).tolist() == [[0, 1], [2, 0]] and
    _sparse_fed(),
    "sparse_to_dense / string_split / VarLenFeature": lambda: run(tf.sparse_to_dense([1], [3], 5)).tolist() == [
        0, 5, 0] and run(tf.string_split(["a b"])).values.tolist() == [b"a", b"b"] and run(tf.parse_example(
            tf.constant([b""]), {"v": tf.VarLenFeature(tf.int64)})["v"]).dense_shape.tolist() == [1, 0],
    "contrib.lookup.index_table_from_tensor / tables_initializer": lambda: _table_lookup() == [1, 2, 0],
    "sparse.cross / sparse.cross_hashed": lambda: run(tf.sparse.cross([tf.constant([["a"]]), tf.constant([[2]])])
                                                       ).values.tolist() == [b"a_X_2"] and 0 <= run(
        tf.sparse.cross_hashed([tf.constant([["a"]]), tf.constant([["b"]])], 5)).values[0] < 5,
    "feature_column (numeric, bucketized, categorical_*, crossed, embedding, shared_embedding, indicator, weighted; "
    "input_layer, linear_model, make_parse_example_spec)": _feature_columns,
    "nn.embedding_lookup_sparse / sparse_tensor_dense_matmul": lambda: run(tf.nn.embedding_lookup_sparse(
        tf.constant(np.eye(3, dtype=np.float32)), tf.SparseTensor([[0, 0], [0, 1]], tf.constant([1, 2], tf.int64),
                                                                  [1, 2]), None, combiner="sum")).tolist() == [
        [0, 1, 1]] and run(tf.sparse_tensor_dense_matmul(tf.SparseTensor([[0, 1]], [2.0], [1, 2]),
                                                          np.ones((2, 1), np.float32))).tolist() == [[2]],
    "train.string_input_producer + TextLineReader + train.batch": _text_line_batch,
    "train.shuffle_batch + range_input_producer": _shuffle_batch,
    # the surface around the graph
    "device": lambda: tf.device("/cpu:0") is not None and run(tf.constant(1)) == 1,
    "ConfigProto / GPUOptions / RunOptions / RunMetadata": lambda: tf.Session(config=tf.ConfigProto(
        gpu_options=tf.GPUOptions(allow_growth=True))).run(tf.constant(2), options=tf.RunOptions(),
                                                           run_metadata=tf.RunMetadata()) == 2,
    "RunOptions(trace_level=FULL_TRACE) + RunMetadata.step_stats / client.timeline.Timeline": _traced_run,
    "profiler.profile / profiler.ProfileOptionBuilder (trainable_variables_parameter, float_operation)": lambda: (
        tf.get_variable("w", [3, 4], initializer=tf.zeros_initializer()) is not None and
        tf.matmul(tf.ones([2, 3]), tf.ones([3, 4])) is not None and
        tf.profiler.profile(options={**tf.profiler.ProfileOptionBuilder.trainable_variables_parameter(),
                                     "output": "none"}).total_parameters == 12 and
        tf.profiler.profile(cmd="op", options=tf.profiler.ProfileOptionBuilder(
            tf.profiler.ProfileOptionBuilder.float_operation()).with_empty_output().build()).total_float_ops == 48),
    "app.flags / flags": lambda: tf.app.flags is tf.flags and hasattr(tf.flags, "DEFINE_string"),
    "logging": lambda: tf.logging.set_verbosity(tf.logging.WARN) is None and tf.logging.INFO < tf.logging.WARN,
    "get_logger": lambda: tf.get_logger().getEffectiveLevel() == tf.logging.get_verbosity(),
    "gfile": lambda: tf.gfile.Exists(".") and tf.gfile.IsDirectory("."),
    "compat.v1": lambda: tf.compat.v1.placeholder is tf.placeholder,
    # pygrad's own: `import tensorflow` as pygrad (tests/test_unchanged_programs.py runs programs through it)
    "alias_tensorflow": lambda: "alias_tensorflow" in dir(tf) and tf.alias_tensorflow.__module__ == "pygrad",
    "arg_max / arg_min": lambda: run(tf.arg_max(tf.constant([1, 3, 2]), 0)) == 1 and
    run(tf.arg_min(tf.constant([1, 3, 2]), 0)) == 0,
    "mul / sub / neg / select": lambda: run(tf.select(tf.constant([True]), tf.mul([2], 3) + tf.neg(1) + tf.sub(1, 1),
                                                      tf.constant([0])))[0] == 5,
    "initialize_all_variables / all_variables": lambda: run(tf.initialize_all_variables()) is None and
    isinstance(tf.all_variables(), list),
    "string constants": lambda: run(tf.constant("Hello")) == b"Hello",
    "int16": lambda: run(tf.constant([1, 2], tf.int16)).dtype == np.int16,
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_name_exists_and_runs(name):
    tf.reset_default_graph()
    assert PROBES[name](), name
