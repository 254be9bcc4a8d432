"""tf.import_graph_def of frozen inference graphs built by TensorFlow, and tf.GraphDef's bytes
against TensorFlow's own."""
import warnings

import numpy as np
import pytest

import pygrad

tf1 = pytest.importorskip("tensorflow").compat.v1


def _freeze(build, outputs, feed="x:0"):
    """(GraphDef bytes, the TF session's function of a feed) of the model build makes, frozen."""
    tf1.disable_v2_behavior()
    g = tf1.Graph()
    with g.as_default():
        tf1.set_random_seed(1)
        build()
        sess = tf1.Session(graph=g)
        sess.run(tf1.global_variables_initializer())
        frozen = tf1.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), outputs)
    run = lambda x: sess.run(g.get_tensor_by_name(outputs[0] + ":0"), {feed: x})  # noqa: E731
    return frozen.SerializeToString(), run


def _lenet():
    x = tf1.placeholder(tf1.float32, [None, 28, 28, 1], name="x")
    init = tf1.random_normal_initializer(stddev=0.2)
    h = x
    for i, c in enumerate([6, 16]):
        w = tf1.get_variable(f"w{i}", [5, 5, h.shape[-1], c], initializer=init)
        b = tf1.get_variable(f"b{i}", [c], initializer=init)
        h = tf1.nn.relu(tf1.nn.bias_add(tf1.nn.conv2d(h, w, [1, 1, 1, 1], "SAME"), b))
        h = tf1.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    h = tf1.reshape(h, [-1, 7 * 7 * 16])
    w = tf1.get_variable("wd", [7 * 7 * 16, 10], initializer=init)
    tf1.nn.softmax(tf1.matmul(h, w) + tf1.get_variable("bd", [10], initializer=init), name="probs")


def _mlp():
    x = tf1.placeholder(tf1.float32, [None, 20], name="x")
    init = tf1.random_normal_initializer(stddev=0.5)
    h = tf1.nn.relu6(tf1.matmul(x, tf1.get_variable("w0", [20, 32], initializer=init))
                     - tf1.get_variable("b0", [32], initializer=init))
    h = tf1.matmul(h, tf1.get_variable("w1", [32, 5], initializer=init)) / 3.0
    tf1.identity(tf1.nn.bias_add(h, tf1.get_variable("b1", [5], initializer=init)), name="logits")


def _bn_depthwise():
    x = tf1.placeholder(tf1.float32, [None, 8, 8, 3], name="x")
    w = tf1.get_variable("dw", [3, 3, 3, 2], initializer=tf1.random_normal_initializer())
    h = tf1.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
    params = [tf1.get_variable(f"bn{i}", [6], initializer=tf1.random_uniform_initializer(0.5, 2)) for i in range(4)]
    h, _, _ = tf1.nn.fused_batch_norm(h, *params, is_training=False)
    h = tf1.pad(h, [[0, 0], [1, 1], [1, 1], [0, 0]])
    h = tf1.concat([h, h * 2.0], axis=3)
    tf1.reduce_mean(h, axis=[1, 2], name="out")


def _keras(app, size):
    """A tf_keras.applications model with random weights, in inference mode (what its frozen
    graphs hold: batch norm with the moving statistics)."""
    def build():
        keras = pytest.importorskip("tf_keras")
        model = getattr(keras.applications, app)(weights=None, input_shape=(size, size, 3))
        x = tf1.placeholder(tf1.float32, [None, size, size, 3], name="x")
        tf1.identity(model(x, training=False), name="probs")
    return build


def _lstm():
    """An LSTM classifier: tf.nn.dynamic_rnn (TF1's while loop and TensorArrays) over 12 steps."""
    cells = pytest.importorskip("tf_keras.src.layers.rnn.legacy_cells")  # tf.nn.rnn_cell.LSTMCell of TF1
    x = tf1.placeholder(tf1.float32, [None, 12, 8], name="x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # deprecated in TF 2
        cell = cells.LSTMCell(16, initializer=tf1.random_normal_initializer(stddev=0.3))
    outputs, _ = tf1.nn.dynamic_rnn(cell, x, dtype=tf1.float32)
    w = tf1.get_variable("w", [16, 5], initializer=tf1.random_normal_initializer())
    tf1.nn.softmax(tf1.matmul(outputs[:, -1], w), name="probs")


# name: (build, output, input shape, feed)
MODELS = {"lenet": (_lenet, "probs", [28, 28, 1], "x:0"), "mlp": (_mlp, "logits", [20], "x:0"),
          "bn_depthwise": (_bn_depthwise, "out", [8, 8, 3], "x:0"),
          "mobilenet_v1": (_keras("MobileNet", 96), "probs", [96, 96, 3], "x:0"),
          "resnet50_v1": (_keras("ResNet50", 64), "probs", [64, 64, 3], "x:0"),
          "inception_v3": (_keras("InceptionV3", 75), "probs", [75, 75, 3], "x:0"),
          "lstm": (_lstm, "probs", [12, 8], "x:0")}
_FROZEN = {}


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("batch", [1, 32])
def test_frozen_model_gives_tf_outputs(model, batch):
    build, out, shape, feed = MODELS[model]
    if model not in _FROZEN:
        _FROZEN[model] = _freeze(build, [out], feed)
    data, run = _FROZEN[model]
    if model == "lstm":  # TF1's control flow, which import lifts into a while loop
        assert {"Enter", "Merge", "Switch", "NextIteration", "Exit", "TensorArrayV3"} <= {
            n.op for n in pygrad.GraphDef.FromString(data).node}
    x = np.random.RandomState(batch).rand(batch, *shape).astype(np.float32)
    with pygrad.Graph().as_default() as g:
        pygrad.import_graph_def(pygrad.GraphDef.FromString(data))
        got = pygrad.Session().run(g.get_tensor_by_name(f"import/{out}:0"), {f"import/{feed}": x})
    want = run(x)
    assert got.shape == want.shape
    assert np.max(np.abs(got - want) / (np.abs(want) + 1e-6)) < 1e-4


def test_input_map_and_return_elements():
    data, run = _freeze(_mlp, ["logits"])
    x = np.random.RandomState(0).rand(3, 20).astype(np.float32)
    with pygrad.Graph().as_default():
        feed = pygrad.placeholder(pygrad.float32, [None, 20], name="mine")
        logits, op = pygrad.import_graph_def(data, input_map={"x": feed * 1.0}, return_elements=["logits:0", "logits"],
                                             name="m")
        assert logits.name == "m/logits:0" and op is logits.op
        np.testing.assert_allclose(pygrad.Session().run(logits, {feed: x}), run(x), rtol=1e-5, atol=1e-6)


def test_no_prefix_and_control_inputs():
    g = pygrad.GraphDef()
    a = g.node.add(name="a", op="Const")  # listed after its consumer: imports in topological order
    g.node.add(name="b", op="Identity", input=["a", "^c"])
    a.attr["dtype"].type = 1
    a.attr["value"].tensor.dtype = 1
    a.attr["value"].tensor.tensor_shape.dim.add(size=3)
    a.attr["value"].tensor.float_val.append(2.5)  # one value broadcast to the shape
    c = g.node.add(name="c", op="Const")
    c.attr["value"].tensor.dtype = 3
    c.attr["value"].tensor.int_val.append(1)
    reordered = pygrad.GraphDef()
    reordered.node.extend([g.node[1], g.node[2], g.node[0]])
    with pygrad.Graph().as_default() as graph:
        pygrad.import_graph_def(reordered, name="")
        b = graph.get_tensor_by_name("b:0")
        assert [op.name for op in b.op.control_inputs] == ["c"]
        np.testing.assert_array_equal(pygrad.Session().run(b), [2.5, 2.5, 2.5])


def test_errors_leave_the_graph_as_it_was():
    g = pygrad.GraphDef()
    for name, op in [("x", "Placeholder"), ("s", "Svd"), ("m", "MatrixExponential"), ("t", "Svd")]:
        g.node.add(name=name, op=op)
    with pygrad.Graph().as_default() as graph:
        with pytest.raises(pygrad.errors.UnimplementedError, match=r"MatrixExponential \(node 'm'\), Svd \(node 's'\)"):
            pygrad.import_graph_def(g)
        data, _ = _freeze(_mlp, ["logits"])
        with pytest.raises(ValueError, match=r"Attempted to map inputs that were not found in graph_def: \[y:0\]"):
            pygrad.import_graph_def(data, input_map={"y:0": pygrad.constant(1.0)})
        n_ops = len(graph.get_operations())
        with pytest.raises(pygrad.errors.DataLossError, match="GraphDef"):
            pygrad.import_graph_def(data[:len(data) // 2])
        bad = pygrad.GraphDef.FromString(data)
        bad.node.add(name="r", op="Reshape", input=["x", "x"])  # the shape is not a constant: fails while building
        with pytest.raises(pygrad.errors.UnimplementedError, match="input 1 .*must be known when the graph is built"):
            pygrad.import_graph_def(bad)
        assert len(graph.get_operations()) == n_ops
        assert not any(op.name.startswith("import") for op in graph.get_operations())


def test_graph_def_bytes_are_tfs():
    data, _ = _freeze(_lenet, ["probs"])
    ours = pygrad.GraphDef.FromString(data)
    assert ours.SerializeToString(deterministic=True) == tf1.GraphDef.FromString(data).SerializeToString(
        deterministic=True)
    theirs = tf1.GraphDef.FromString(ours.SerializeToString())
    assert theirs == tf1.GraphDef.FromString(data)
    assert {n.op for n in ours.node} >= {"Conv2D", "BiasAdd", "Relu", "MaxPool", "MatMul", "Softmax", "Reshape"}


def _control_flow():
    x = tf1.placeholder(tf1.float32, [None, 3], name="x")
    p = tf1.placeholder(tf1.bool, [], name="p")
    a, b = tf1.cond(p, lambda: (x * 2.0, tf1.reduce_sum(x)), lambda: (x + 1.0, tf1.reduce_max(x)))
    nested = tf1.cond(p, lambda: tf1.cond(tf1.reduce_sum(x) > 0, lambda: x - 1.0, lambda: x * x), lambda: -x)
    i, acc = tf1.while_loop(lambda i, acc: i < 4, lambda i, acc: (i + 1, tf1.cond(
        i < 2, lambda: acc * 1.5 + x, lambda: acc - 0.5)), [tf1.constant(0), x])
    tf1.identity(a + b + nested + acc * tf1.cast(i, tf1.float32), name="out")


@pytest.mark.parametrize("pred", [True, False])
def test_cond_and_while_loop_lift(pred):
    data, _ = _freeze(_control_flow, ["out"])
    g = tf1.Graph()
    with g.as_default():
        tf1.import_graph_def(tf1.GraphDef.FromString(data), name="")
        x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
        want = tf1.Session(graph=g).run("out:0", {"x:0": x, "p:0": pred})
    with pygrad.Graph().as_default() as pg:
        pygrad.import_graph_def(data, name="")
        got = pygrad.Session().run("out:0", {"x:0": x, "p:0": pred})
        assert {op.type for op in pg.get_operations()} >= {"If", "While"}
    np.testing.assert_allclose(got, want, rtol=1e-6)
