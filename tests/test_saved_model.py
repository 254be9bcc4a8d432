"""SavedModel directories: pygrad's builder and loader, signatures against TensorFlow's, and
models handed between pygrad and TensorFlow through the serving signature."""
import os

import numpy as np
import pytest

import pygrad as tf
from pygrad import errors, tf_protos

XS = np.random.RandomState(1).randn(4, 3).astype(np.float32)


def _pygrad_model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), name="w")
    b = tf.get_variable("b", [2], initializer=tf.constant_initializer(0.3))
    return x, tf.nn.relu(tf.matmul(x, w) + b, name="y")


def _predict(sess, meta, xs):
    sig = meta.signature_def[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
    return sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: xs})


def test_layout_signature_and_errors(tmp_path):
    x, y = _pygrad_model()
    export = tmp_path / "model"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, str(export), {"x": x}, {"y": y})
        with pytest.raises(AssertionError, match="already exists"):
            tf.saved_model.builder.SavedModelBuilder(str(export))
        b = tf.saved_model.Builder(str(tmp_path / "bad"))
        info = tf_protos.TensorInfo(name="nope:0", dtype=1)
        sig = tf.saved_model.build_signature_def({"x": tf.saved_model.build_tensor_info(x)}, {"y": info}, "m")
        with pytest.raises(ValueError, match="'nope:0', which is not in the graph"):
            b.add_meta_graph_and_variables(sess, ["serve"], {"s": sig})
    assert sorted(os.listdir(export)) == ["saved_model.pb", "variables"]
    assert sorted(os.listdir(export / "variables")) == ["variables.data-00000-of-00001", "variables.index"]
    assert tf.saved_model.loader.maybe_saved_model_directory(str(export))
    assert not tf.saved_model.maybe_saved_model_directory(str(tmp_path))
    model = tf_protos.SavedModel.FromString((export / "saved_model.pb").read_bytes())
    meta = model.meta_graphs[0]
    assert model.saved_model_schema_version == 1 and list(meta.meta_info_def.tags) == ["serve"]
    sig = meta.signature_def["serving_default"]
    assert (sig.method_name, sig.inputs["x"].name, sig.outputs["y"].name) == ("tensorflow/serving/predict", "x:0", "y:0")
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 3]
    assert meta.saver_def.restore_op_name == "save/restore_all"
    (export / "saved_model.pb").write_bytes(b"\x0a\xff\xff garbage")
    with tf.Session() as sess, pytest.raises(errors.DataLossError, match="saved_model.pb"):
        tf.saved_model.loader.load(sess, ["serve"], str(export))
    with tf.Session() as sess, pytest.raises(OSError, match="SavedModel file does not exist"):
        tf.saved_model.load(sess, ["serve"], str(tmp_path / "empty"))


def test_signatures_equal_tensorflow(tf_peer):
    import tensorflow
    from tensorflow.core.protobuf import meta_graph_pb2

    def build(lib, dtypes):
        ex = lib.placeholder(dtypes.string, [None], name="examples")
        scores = lib.placeholder(dtypes.float32, [None, 3], name="scores")
        classes = lib.placeholder(dtypes.string, [None, 3], name="classes")
        sdu = lib.saved_model.signature_def_utils
        return [sdu.predict_signature_def({"a": scores}, {"b": classes}),
                sdu.classification_signature_def(ex, classes, scores),
                sdu.regression_signature_def(ex, lib.reduce_sum(scores, 1, name="pred"))]

    ours = build(tf, tf)
    with tensorflow.Graph().as_default():
        theirs = build(tf_peer, tensorflow)
    for a, b in zip(ours, theirs):
        assert meta_graph_pb2.SignatureDef.FromString(a.SerializeToString()) == b
        assert tf.saved_model.is_valid_signature(a) and tf_peer.saved_model.is_valid_signature(b)
    bad = tf_protos.SignatureDef()
    bad.CopyFrom(ours[2])
    bad.outputs["outputs"].dtype = 3
    assert not tf.saved_model.is_valid_signature(bad)
    with pytest.raises(ValueError, match="cannot be None or empty"):
        tf.saved_model.predict_signature_def({}, {"b": ours})
    with pytest.raises(ValueError, match="must be of type string"):
        tf.saved_model.classification_signature_def(tf.placeholder(tf.float32, [None]), None, None)


def test_pygrad_saved_model_loads_in_pygrad(tmp_path):
    x, y = _pygrad_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(y, {x: XS})
        tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    tf.reset_default_graph()
    with tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], str(tmp_path / "m"))
        np.testing.assert_array_equal(_predict(sess, meta, XS), want)
        info = meta.signature_def["serving_default"].inputs["x"]
        assert tf.saved_model.utils.get_tensor_from_tensor_info(info).name == "x:0"
        assert [v.name for v in tf.global_variables()] == ["w:0", "b:0"]


def test_tensorflow_saved_model_loads_in_pygrad(tmp_path, tf_peer):
    import tensorflow
    with tensorflow.Graph().as_default():
        x = tf_peer.placeholder(tensorflow.float32, [None, 3], name="x")
        w = tf_peer.get_variable("w", [3, 2], use_resource=False)
        b = tf_peer.get_variable("b", [2], initializer=tf_peer.ones_initializer(), use_resource=False)
        y = tensorflow.nn.relu(tensorflow.matmul(x, w) + b, name="y")
        with tf_peer.Session() as sess:
            sess.run(tf_peer.global_variables_initializer())
            want = sess.run(y, {x: XS})
            tf_peer.saved_model.simple_save(sess, str(tmp_path / "tf"), {"x": x}, {"y": y})
    with tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(tmp_path / "tf"))
        np.testing.assert_allclose(_predict(sess, meta, XS), want, rtol=1e-6)


def test_pygrad_saved_model_loads_in_tensorflow(tmp_path, tf_peer):
    import tensorflow
    x, y = _pygrad_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(y, {x: XS})
        tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    with tensorflow.Graph().as_default():
        with tf_peer.Session() as sess:
            meta = tf_peer.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))
            np.testing.assert_allclose(_predict(sess, meta, XS), want, rtol=1e-6)
