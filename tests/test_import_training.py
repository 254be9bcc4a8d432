"""TF1 training graphs built by TensorFlow, imported with tf.import_graph_def: the gradient and
optimizer ops TF's graph holds (Conv2DBackpropInput, BroadcastGradientArgs, ShapeN, ApplyAdam, ...)
run on pygrad's kernels, and training through the imported train op continues as TF's own. The
gradient of a while loop (an LSTM's) is rebuilt by pygrad through the lifted loop."""
import warnings

import numpy as np
import pytest

import pygrad

tf1 = pytest.importorskip("tensorflow").compat.v1


def _deep_mnist(tf1):
    """TensorFlow's Deep MNIST tutorial model (two conv layers, a 1024-unit layer), with Adam; tf1 is
    TensorFlow's compat.v1 or pygrad."""
    x = tf1.placeholder(tf1.float32, [None, 784], name="x")
    labels = tf1.placeholder(tf1.float32, [None, 10], name="labels")

    def weight(shape):
        return tf1.Variable(tf1.truncated_normal(shape, stddev=0.1))

    def bias(shape):
        return tf1.Variable(tf1.constant(0.1, shape=shape))

    h = tf1.reshape(x, [-1, 28, 28, 1])
    for c_in, c_out in [(1, 32), (32, 64)]:
        h = tf1.nn.relu(tf1.nn.conv2d(h, weight([5, 5, c_in, c_out]), [1, 1, 1, 1], "SAME") + bias([c_out]))
        h = tf1.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf1.nn.relu(tf1.matmul(tf1.reshape(h, [-1, 7 * 7 * 64]), weight([7 * 7 * 64, 1024])) + bias([1024]))
    logits = tf1.matmul(h, weight([1024, 10])) + bias([10])
    loss = tf1.reduce_mean(tf1.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits), name="loss")
    tf1.train.AdamOptimizer(1e-4).minimize(loss, name="train")
    return lambda step: {"x:0": np.random.RandomState(step).rand(16, 784).astype(np.float32),
                         "labels:0": np.eye(10, dtype=np.float32)[np.random.RandomState(step).randint(0, 10, 16)]}


def _mlp_momentum(tf1):
    """An MLP with a softmax loss over sparse labels, biases broadcast, and Momentum."""
    x = tf1.placeholder(tf1.float32, [None, 20], name="x")
    labels = tf1.placeholder(tf1.int64, [None], name="labels")

    def dense(h, units, scope):
        with tf1.variable_scope(scope):
            w = tf1.get_variable("kernel", [h.shape[-1], units], initializer=tf1.glorot_uniform_initializer())
            return tf1.nn.bias_add(tf1.matmul(h, w), tf1.get_variable("bias", [units]))

    h = tf1.nn.tanh(dense(x, 32, "dense"))
    h = tf1.nn.sigmoid(dense(h, 16, "dense_1"))
    logits = dense(h, 5, "dense_2")
    loss = tf1.add(tf1.reduce_mean(tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)),
                   1e-3 * tf1.add_n([tf1.nn.l2_loss(v) for v in tf1.trainable_variables()]), name="loss")
    tf1.train.MomentumOptimizer(0.1, 0.9).minimize(loss, name="train")
    return lambda step: {"x:0": np.random.RandomState(step).randn(8, 20).astype(np.float32),
                         "labels:0": np.random.RandomState(100 + step).randint(0, 5, 8)}


def _resource_adam(tf1):
    """An MLP on resource variables (VarHandleOp, ReadVariableOp, ResourceApplyAdam: TF 2's variables,
    and compat.v1 graphs with resource variables on), with Adam."""
    x = tf1.placeholder(tf1.float32, [None, 20], name="x")
    labels = tf1.placeholder(tf1.int64, [None], name="labels")
    h = x
    for i, units in enumerate([32, 5]):
        w = tf1.get_variable(f"w{i}", [h.shape[-1], units], use_resource=True)
        h = tf1.matmul(h, w) + tf1.get_variable(f"b{i}", [units], use_resource=True,
                                                initializer=tf1.constant_initializer(0.1))
        h = tf1.nn.elu(h) if i == 0 else h
    loss = tf1.reduce_mean(tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h), name="loss")
    tf1.train.AdamOptimizer(1e-2).minimize(loss, name="train")
    return lambda step: {"x:0": np.random.RandomState(step).randn(8, 20).astype(np.float32),
                         "labels:0": np.random.RandomState(100 + step).randint(0, 5, 8)}


def _lstm_adam(tf1):
    """An LSTM classifier over 12 steps (tf.nn.dynamic_rnn: TF1's while loop, and its gradient: a
    second loop popping stacks the first one pushed) with Adam."""
    if tf1 is pygrad:
        cells = pygrad.nn.rnn_cell
    else:
        cells = pytest.importorskip("tf_keras.src.layers.rnn.legacy_cells")  # tf.nn.rnn_cell.LSTMCell of TF1
    x = tf1.placeholder(tf1.float32, [None, 12, 8], name="x")
    labels = tf1.placeholder(tf1.int64, [None], name="labels")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # deprecated in TF 2
        cell = cells.LSTMCell(16)
    outputs, _ = tf1.nn.dynamic_rnn(cell, x, dtype=tf1.float32)
    w = tf1.get_variable("w", [16, 5])
    logits = tf1.matmul(outputs[:, -1], w)
    loss = tf1.reduce_mean(tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
    tf1.train.AdamOptimizer(1e-2).minimize(loss, name="train")
    rng = np.random.RandomState(2)
    batch = {"x:0": rng.rand(4, 12, 8).astype(np.float32), "labels:0": rng.randint(0, 5, 4)}
    return lambda step: batch  # one batch, learnt


@pytest.mark.parametrize("build", [_deep_mnist, _mlp_momentum, _resource_adam, _lstm_adam],
                         ids=["deep_mnist_adam", "mlp_momentum", "resource_adam", "lstm_adam"])
def test_training_continues_as_in_tensorflow(build):
    tf1.disable_v2_behavior()
    g = tf1.Graph()
    with g.as_default():
        tf1.set_random_seed(0)
        batches = build(tf1)
        sess = tf1.Session(graph=g)
        sess.run(tf1.global_variables_initializer())
        values = {v.op.name: sess.run(v) for v in tf1.global_variables()}
        feeds = [batches(step) for step in range(20)]
        want = [sess.run(["loss:0", "train"], f)[0] for f in feeds]
    graph_def = pygrad.GraphDef.FromString(g.as_graph_def().SerializeToString())
    ops = {n.op for n in graph_def.node}
    if build is _lstm_adam:  # TF1's gradient of a while loop, which pygrad rebuilds through the lifted loop
        assert {"StackPushV2", "StackPopV2", "Enter", "Exit"} <= ops
    if build is _resource_adam:
        assert {"VarHandleOp", "ReadVariableOp", "ResourceApplyAdam", "VarIsInitializedOp"} <= ops
    with pygrad.Graph().as_default() as pg:
        pygrad.import_graph_def(graph_def, name="")
        sess = pygrad.Session()
        for name, value in values.items():  # TF's initial values (its random initializers are not pygrad's)
            sess.run(pygrad.assign(pg.get_tensor_by_name(name + ":0"), value))
        got = [sess.run(["loss:0", "train"], f)[0] for f in feeds]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[-1] < want[0]


def _train(tf1, sess, batches, steps, first=0):
    train = tf1.get_collection("train_op")[0]
    return [sess.run(["loss:0", train], batches(first + step))[0] for step in range(steps)]


@pytest.mark.parametrize("build", [_deep_mnist, _lstm_adam], ids=["deep_mnist_adam", "lstm_adam"])
def test_tf_meta_and_checkpoint_continue_in_pygrad(build, tmp_path):
    """A TF1 program's .meta and checkpoint after 3 steps: import_meta_graph and restore in pygrad,
    then 20 steps through the train_op collection give TF's own next 20 losses."""
    tf1.disable_v2_behavior()
    path = str(tmp_path / "model.ckpt")
    with tf1.Graph().as_default() as g:
        tf1.set_random_seed(0)
        batches = build(tf1)
        tf1.add_to_collection("train_op", g.get_operation_by_name("train"))
        sess = tf1.Session(graph=g)
        sess.run(tf1.global_variables_initializer())
        _train(tf1, sess, batches, 3)
        tf1.train.Saver().save(sess, path)
        want = _train(tf1, sess, batches, 20, first=3)
    with pygrad.Graph().as_default():
        saver = pygrad.train.import_meta_graph(path + ".meta")
        sess = pygrad.Session()
        saver.restore(sess, path)
        got = _train(pygrad, sess, batches, 20, first=3)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("build", [_deep_mnist, _mlp_momentum, _lstm_adam],
                         ids=["deep_mnist_adam", "mlp_momentum", "lstm_adam"])
def test_pygrad_meta_and_checkpoint_continue_in_tensorflow(build, tmp_path):
    """The other way: the same program on pygrad, its .meta and checkpoint after 3 steps continue
    in TensorFlow to pygrad's next 20 losses."""
    path = str(tmp_path / "model.ckpt")
    with pygrad.Graph().as_default() as g:
        pygrad.set_random_seed(0)
        batches = build(pygrad)
        pygrad.add_to_collection("train_op", g.get_operation_by_name("train"))
        sess = pygrad.Session()
        sess.run(pygrad.global_variables_initializer())
        _train(pygrad, sess, batches, 3)
        pygrad.train.Saver().save(sess, path)
        want = _train(pygrad, sess, batches, 20, first=3)
    tf1.disable_v2_behavior()
    with tf1.Graph().as_default():
        saver = tf1.train.import_meta_graph(path + ".meta")
        sess = tf1.Session()
        saver.restore(sess, path)
        got = _train(tf1, sess, batches, 20, first=3)
    # The MLP's graph runs TF's tanh, sigmoid and the exported compositions of pygrad's fused
    # gradients, whose rounding differs from pygrad's kernels by an ulp; momentum 0.9 carries
    # that to 2e-5 within 20 steps.
    np.testing.assert_allclose(got, want, rtol=5e-5 if build is _mlp_momentum else 1e-5)
