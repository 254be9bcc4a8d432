"""TF1 training graphs built by TensorFlow, imported with tf.import_graph_def: the gradient and
optimizer ops TF's graph holds (Conv2DBackpropInput, BroadcastGradientArgs, ShapeN, ApplyAdam, ...)
run on pygrad's kernels, and training through the imported train op continues as TF's own."""
import numpy as np
import pytest

import pygrad

tf1 = pytest.importorskip("tensorflow").compat.v1


def _deep_mnist():
    """TensorFlow's Deep MNIST tutorial model (two conv layers, a 1024-unit layer), with Adam."""
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
    rng = np.random.RandomState(0)
    return lambda step: {"x:0": rng.rand(16, 784).astype(np.float32),
                         "labels:0": np.eye(10, dtype=np.float32)[rng.randint(0, 10, 16)]}


def _mlp_momentum():
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
    rng = np.random.RandomState(1)
    return lambda step: {"x:0": rng.randn(8, 20).astype(np.float32), "labels:0": rng.randint(0, 5, 8)}


@pytest.mark.parametrize("build", [_deep_mnist, _mlp_momentum], ids=["deep_mnist_adam", "mlp_momentum"])
def test_training_continues_as_in_tensorflow(build):
    tf1.disable_v2_behavior()
    g = tf1.Graph()
    with g.as_default():
        tf1.set_random_seed(0)
        batches = build()
        sess = tf1.Session(graph=g)
        sess.run(tf1.global_variables_initializer())
        values = {v.op.name: sess.run(v) for v in tf1.global_variables()}
        feeds = [batches(step) for step in range(20)]
        want = [sess.run(["loss:0", "train"], f)[0] for f in feeds]
    graph_def = pygrad.GraphDef.FromString(g.as_graph_def().SerializeToString())
    with pygrad.Graph().as_default() as pg:
        pygrad.import_graph_def(graph_def, name="")
        sess = pygrad.Session()
        for name, value in values.items():  # TF's initial values (its random initializers are not pygrad's)
            sess.run(pygrad.assign(pg.get_tensor_by_name(name + ":0"), value))
        got = [sess.run(["loss:0", "train"], f)[0] for f in feeds]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[-1] < want[0]
