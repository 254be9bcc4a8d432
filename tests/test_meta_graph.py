"""MetaGraphDef (.meta files) both ways, Saver's SaverDef and save/restore subgraph, write_graph
and graph_util, cross-checked against TensorFlow where it is importable."""
import os

import numpy as np
import pytest

import pygrad as tf
from pygrad import errors, tf_protos



def _model(lr=0.1):
    """A small MLP trained by gradient descent, its train op in the train_op collection."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    t = tf.placeholder(tf.float32, [None, 2], name="t")
    w = tf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), name="w")
    b = tf.get_variable("b", [2], initializer=tf.constant_initializer(0.1))
    y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
    loss = tf.reduce_mean(tf.square(y - t), name="loss")
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    tf.add_to_collection("train_op", train)
    return x, t, y, loss


def _data(n=4):
    rng = np.random.RandomState(0)
    return rng.randn(n, 3).astype(np.float32), rng.randn(n, 2).astype(np.float32)


def test_export_writes_tf_collection_kinds():
    x, t, y, loss = _model()
    tf.add_to_collection("ints", 3)
    tf.add_to_collection("floats", 2.5)
    tf.add_to_collection("strings", "hello")
    tf.add_to_collection("odd", object())  # no CollectionDef form: left out
    meta = tf.train.export_meta_graph()
    cols = meta.collection_def
    assert cols["ints"].int64_list.value == [3] and cols["floats"].float_list.value == [2.5]
    assert cols["strings"].bytes_list.value == [b"hello"] and "odd" not in cols
    assert list(cols["train_op"].node_list.value) == [tf.get_collection("train_op")[0].name]
    defs = [tf_protos.VariableDef.FromString(v) for v in cols["variables"].bytes_list.value]
    assert [(d.variable_name, d.initializer_name, d.snapshot_name, d.trainable) for d in defs] == [
        ("w:0", "w/Assign", "w:0", True), ("b:0", "b/Assign", "b:0", True)]
    assert defs[1].initial_value_name == tf.global_variables()[1].initial_value.name
    assert len(cols["trainable_variables"].bytes_list.value) == 2
    assert {n.name for n in meta.graph_def.node} >= {"x", "w", "w/Assign", "y"}
    assert not meta.HasField("saver_def")


def test_saver_writes_meta_with_tf_saver_def(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"), global_step=7)
        saver.save(sess, str(tmp_path / "plain"), write_meta_graph=False)
    assert os.path.exists(path + ".meta") and not os.path.exists(str(tmp_path / "plain.meta"))
    with open(path + ".meta", "rb") as f:
        meta = tf_protos.MetaGraphDef.FromString(f.read())
    sd = meta.saver_def
    assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name, sd.max_to_keep, sd.version) == (
        "save/Const:0", "save/control_dependency:0", "save/restore_all", 3, 2)
    nodes = {n.name: n for n in meta.graph_def.node}
    assert nodes["save/SaveV2"].input[3:] == ["b", "w"] and nodes["save/RestoreV2"].op == "RestoreV2"
    assert nodes["save/Assign_1"].input == ["w", "save/RestoreV2:1"]
    assert tf.train.Saver().as_saver_def().restore_op_name == "save_1/restore_all"


def test_saver_subgraph_restores_in_tensorflow(tmp_path, tf_peer):
    """pygrad's save/restore nodes, put in TF's own graph of the same variables, restore a pygrad
    checkpoint through TF's Saver(saver_def=...), under the var_list's keys."""
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import saver_pb2
    import tensorflow
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    b = tf.get_variable("b", [2], initializer=tf.ones_initializer())
    saver = tf.train.Saver({"custom_w": w, "b": b})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
    with tensorflow.Graph().as_default() as g:
        tf_peer.get_variable("w", [3, 2], use_resource=False)
        tf_peer.get_variable("b", [2], use_resource=False)
        graph_def = g.as_graph_def()
    graph_def.node.extend(graph_pb2.GraphDef.FromString(tf_protos.GraphDef(node=saver.graph_nodes())
                                                        .SerializeToString()).node)
    with tensorflow.Graph().as_default():
        tensorflow.import_graph_def(graph_def, name="")
        tf_saver = tf_peer.train.Saver(saver_def=saver_pb2.SaverDef.FromString(
            saver.as_saver_def().SerializeToString()))
        with tf_peer.Session() as sess:
            tf_saver.restore(sess, path)
            w_value, b_value = sess.run(["w:0", "b:0"])
    np.testing.assert_array_equal(w_value, np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(b_value, [1, 1])


def test_import_rebuilds_collections_of_an_inference_graph(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.add(tf.matmul(x, tf.constant([[1.0], [2.0]])), 0.5, name="y")
    tf.add_to_collection("outputs", y)
    tf.add_to_collection("ints", 4)
    tf.add_to_collection("names", "hi")
    tf.train.export_meta_graph(str(tmp_path / "g.meta"))
    tf.reset_default_graph()
    assert tf.train.import_meta_graph(str(tmp_path / "g.meta")) is None  # no variables, no Saver
    y2 = tf.get_collection("outputs")[0]
    assert y2.name == "y:0" and tf.get_collection("ints") == [4] and tf.get_collection("names") == [b"hi"]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y2, {"x:0": [[1.0, 1.0]]}), [[3.5]])
    tf.train.import_meta_graph(str(tmp_path / "g.meta"), import_scope="copy")
    assert tf.get_collection("outputs")[1].name == "copy/y:0"


def test_corrupt_meta_file_is_data_loss(tmp_path):
    bad = tmp_path / "bad.meta"
    bad.write_bytes(b"\xff\xff\xff\x0f not a meta graph")
    with pytest.raises(errors.DataLossError, match="bad.meta"):
        tf.train.import_meta_graph(str(bad))
    with pytest.raises(OSError, match="does not exist"):
        tf.train.import_meta_graph(str(tmp_path / "missing.meta"))


def test_failed_import_leaves_the_graph_as_it_was():
    x = tf.placeholder(tf.float32, [2], name="x")
    tf.identity(x, name="id")
    meta = tf.train.export_meta_graph()
    meta.graph_def.node.add(name="odd", op="NoSuchOp")
    tf.reset_default_graph()
    with pytest.raises(errors.UnimplementedError, match="NoSuchOp"):
        tf.train.import_meta_graph(meta)
    assert tf.get_default_graph().get_operations() == [] and tf.get_collection("variables") == []


def _run(sess, loss, x, t, steps, train):
    xs, ts = _data()
    out = []
    for _ in range(steps):
        out.append(sess.run(loss, {x: xs, t: ts}))
        sess.run(train, {x: xs, t: ts})
    return out


def test_round_trip_continues_training(tmp_path):
    x, t, _, loss = _model()
    train = tf.get_collection("train_op")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        straight = _run(sess, loss, x, t, 6, train)
    tf.reset_default_graph()
    x, t, _, loss = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = _run(sess, loss, x, t, 3, tf.get_collection("train_op")[0])
        path = saver.save(sess, str(tmp_path / "model"))
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(path + ".meta")
    assert [v.name for v in tf.trainable_variables()] == ["w:0", "b:0"]
    with tf.Session() as sess:
        saver.restore(sess, path)
        g = tf.get_default_graph()
        rest = _run(sess, g.get_tensor_by_name("loss:0"), g.get_tensor_by_name("x:0"), g.get_tensor_by_name("t:0"), 3,
                    tf.get_collection("train_op")[0])
    np.testing.assert_allclose(first + rest, straight, rtol=1e-6)


def _tf_mlp(tf_peer, tensorflow):
    x = tf_peer.placeholder(tensorflow.float32, [None, 3], name="x")
    t = tf_peer.placeholder(tensorflow.float32, [None, 2], name="t")
    w = tf_peer.get_variable("w", [3, 2], use_resource=False)
    b = tf_peer.get_variable("b", [2], initializer=tf_peer.zeros_initializer(), use_resource=False)
    y = tensorflow.nn.relu(tensorflow.matmul(x, w) + b, name="y")
    loss = tensorflow.reduce_mean(tensorflow.square(y - t))
    tf_peer.add_to_collection("train_op", tf_peer.train.AdamOptimizer(0.01).minimize(loss))
    return x, t, y


def test_tensorflow_meta_and_checkpoint_import(tmp_path, tf_peer):
    import tensorflow
    xs, ts = _data()
    with tensorflow.Graph().as_default():
        x, t, y = _tf_mlp(tf_peer, tensorflow)
        with tf_peer.Session() as sess:
            sess.run(tf_peer.global_variables_initializer())
            for _ in range(3):
                sess.run(tf_peer.get_collection("train_op")[0], {x: xs, t: ts})
            want = sess.run(y, {x: xs})
            path = tf_peer.train.Saver().save(sess, str(tmp_path / "tf"))
    saver = tf.train.import_meta_graph(path + ".meta")
    assert {v.op.name for v in tf.global_variables()} >= {"w", "b", "w/Adam", "beta1_power"}
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": xs}), want, rtol=1e-5, atol=1e-6)


def test_pygrad_meta_imports_and_restores_in_tensorflow(tmp_path, tf_peer):
    import tensorflow
    x, t, y, _ = _model()
    xs, ts = _data()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _run(sess, tf.get_default_graph().get_tensor_by_name("loss:0"), x, t, 2, tf.get_collection("train_op")[0])
        want = sess.run(y, {x: xs})
        path = tf.train.Saver().save(sess, str(tmp_path / "pg"))
    with tensorflow.Graph().as_default():
        saver = tf_peer.train.import_meta_graph(path + ".meta")
        with tf_peer.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_allclose(sess.run("y:0", {"x:0": xs}), want, rtol=1e-6)


def test_write_graph_text_and_binary(tmp_path):
    tf.identity(tf.placeholder(tf.float32, [None, 2], name="x"), name="y")
    from google.protobuf import text_format
    text = tf.io.write_graph(tf.get_default_graph(), str(tmp_path / "sub"), "g.pbtxt")
    binary = tf.train.write_graph(tf.get_default_graph(), str(tmp_path), "g.pb", as_text=False)
    with open(text) as f, open(binary, "rb") as g:
        parsed = text_format.Parse(f.read(), tf_protos.GraphDef())
        assert parsed == tf_protos.GraphDef.FromString(g.read())
    assert [n.name for n in parsed.node] == ["x", "y"]


def _tf_graph(tf_peer, tensorflow):
    x = tf_peer.placeholder(tensorflow.float32, [None, 3], name="x")
    w = tf_peer.get_variable("w", [3, 2], use_resource=False)
    b = tf_peer.get_variable("b", [2], initializer=tf_peer.ones_initializer(), use_resource=False)
    h = tensorflow.nn.relu(tensorflow.matmul(x, w) + b)
    tensorflow.identity(tensorflow.stop_gradient(tensorflow.identity(h) * 2.0), name="y")


@pytest.mark.filterwarnings("ignore")
def test_graph_util_equals_tensorflow(tf_peer):
    import tensorflow
    with tensorflow.Graph().as_default() as g:
        _tf_graph(tf_peer, tensorflow)
        with tf_peer.Session() as sess:
            sess.run(tf_peer.global_variables_initializer())
            graph_def = g.as_graph_def()
            frozen = tf.graph_util.convert_variables_to_constants(sess, graph_def, ["y"])
            assert frozen == tf_peer.graph_util.convert_variables_to_constants(sess, graph_def, ["y"])
            only_b = tf.graph_util.convert_variables_to_constants(sess, graph_def, ["y"], variable_names_whitelist=["b"])
            assert {n.name: n.op for n in only_b.node}["w"] == "VariableV2"
    sub = tf.graph_util.extract_sub_graph(graph_def, ["y"])
    assert sub == tf_peer.graph_util.extract_sub_graph(graph_def, ["y"])
    assert tf.graph_util.remove_training_nodes(sub) == tf_peer.graph_util.remove_training_nodes(sub)
    assert tf.graph_util.remove_training_nodes(sub, ["y"]) == tf_peer.graph_util.remove_training_nodes(sub, ["y"])
    ours = tf_protos.GraphDef.FromString(graph_def.SerializeToString())
    assert type(sub).FromString(tf.graph_util.extract_sub_graph(ours, ["y"]).SerializeToString()) == sub
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(ours, ["nope"])


def test_frozen_pygrad_graph_gives_the_same_predictions():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), name="w")
    tf.nn.relu(tf.matmul(x, w) + 0.25, name="y")
    xs, _ = _data()
    from pygrad.meta_graph import graph_def_of
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign(w * 2.0))
        want = sess.run("y:0", {x: xs})
        frozen = tf.graph_util.convert_variables_to_constants(sess, graph_def_of(tf.get_default_graph()), ["y"])
    assert {n.name: n.op for n in frozen.node}["w"] == "Const" and "w/Assign" not in {n.name for n in frozen.node}
    tf.reset_default_graph()
    tf.import_graph_def(frozen, name="")
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run("y:0", {"x:0": xs}), want, rtol=1e-6)


def test_save_of_a_graph_with_python_ops_keeps_the_checkpoint_and_says_why_no_meta(tmp_path, caplog):
    """A dataset iterator (or py_func, a queue) runs Python, which a MetaGraphDef cannot hold: save
    writes the checkpoint, logs why the .meta file is missing, and restore works."""
    nxt = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
    v = tf.Variable(2.0)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(nxt)
        with caplog.at_level("WARNING", logger="pygrad"):
            path = saver.save(sess, str(tmp_path / "model"))
        assert "model.meta not written" in caplog.text and "IteratorGetNext" in caplog.text
        assert not (tmp_path / "model.meta").exists() and (tmp_path / "model.index").exists()
        sess.run(v.assign(5.0))
        saver.restore(sess, path)
        assert sess.run(v) == 2.0
