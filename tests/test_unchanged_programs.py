"""TF1 programs run unchanged: `python -m pygrad program.py` (pygrad/__main__.py) with the import hook of
pygrad/tf_alias.py, so that `import tensorflow`, tensorflow.contrib, tensorflow.python.* and the tutorials'
MNIST reader give pygrad. The programs are written here in TF1's style and run in subprocesses from a
directory outside the source tree; their numbers are checked against NumPy (the MNIST tutorial) or
against the same files run on TensorFlow and TF-Slim in this process (the two-file slim program)."""
import gzip
import importlib
import json
import os
import subprocess
import sys
import textwrap
import tomllib
import types
import warnings

import numpy as np
import pytest

import pygrad
from pygrad import tf_alias

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_pygrad(cwd, *args, env=None):
    """`python -m pygrad args...` in cwd; the CompletedProcess (text)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "pygrad", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=120)


def write(directory, files):
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


# ---- (a) the MNIST softmax tutorial, as TF 1 wrote such programs

MNIST_SOFTMAX = '''
    """Softmax regression on MNIST."""
    import argparse
    import sys

    import numpy as np
    from tensorflow.examples.tutorials.mnist import input_data

    import tensorflow as tf

    FLAGS = None


    def main(_):
        mnist = input_data.read_data_sets(FLAGS.data_dir)

        x = tf.placeholder(tf.float32, [None, 784])
        W = tf.Variable(tf.zeros([784, 10]))
        b = tf.Variable(tf.zeros([10]))
        y = tf.matmul(x, W) + b
        y_ = tf.placeholder(tf.int64, [None])

        cross_entropy = tf.losses.sparse_softmax_cross_entropy(labels=y_, logits=y)
        train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

        sess = tf.InteractiveSession()
        tf.global_variables_initializer().run()
        for _ in range(FLAGS.steps):
            batch_xs, batch_ys = mnist.train.next_batch(100)
            sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})

        correct_prediction = tf.equal(tf.argmax(y, 1), y_)
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
        print("accuracy", sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels}))
        np.savez(FLAGS.save, W=sess.run(W), b=sess.run(b))


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--data_dir", type=str, default="/tmp/tensorflow/mnist/input_data")
        parser.add_argument("--steps", type=int, default=1000)
        parser.add_argument("--save", type=str, default="weights.npz")
        FLAGS, unparsed = parser.parse_known_args()
        tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
'''


def _idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


def test_mnist_softmax_tutorial(tmp_path, mnist_dir):
    write(tmp_path, {"mnist_softmax.py": MNIST_SOFTMAX})
    out = run_pygrad(tmp_path, "mnist_softmax.py", "--data_dir", mnist_dir, "--steps", "300")
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("pygrad: `import tensorflow` gives pygrad"), out.stderr
    accuracy = float(out.stdout.split("accuracy")[1])
    assert accuracy >= 0.88
    # The accuracy the graph computed is the trained weights' accuracy on the test set, in NumPy.
    weights = np.load(tmp_path / "weights.npz")
    images = _idx(os.path.join(mnist_dir, "t10k-images-idx3-ubyte.gz"), 16).reshape(-1, 784) / np.float32(255)
    labels = _idx(os.path.join(mnist_dir, "t10k-labels-idx1-ubyte.gz"), 8)
    logits = images.astype(np.float64) @ weights["W"] + weights["b"]
    assert accuracy == pytest.approx(np.mean(np.argmax(logits, 1) == labels), abs=1e-6)


# ---- (a') the deep MNIST tutorial's program: name scopes, a scalar keep_prob placeholder, one-hot
# labels, Tensor.eval and Operation.run, a FileWriter of the graph in a temporary directory

MNIST_DEEP = '''
    """A deep MNIST classifier using convolutional layers."""
    import argparse
    import sys
    import tempfile

    from tensorflow.examples.tutorials.mnist import input_data

    import tensorflow as tf

    FLAGS = None


    def deepnn(x):
        with tf.name_scope('reshape'):
            x_image = tf.reshape(x, [-1, 28, 28, 1])
        with tf.name_scope('conv1'):
            h_conv1 = tf.nn.relu(conv2d(x_image, weight_variable([5, 5, 1, 32])) + bias_variable([32]))
        with tf.name_scope('pool1'):
            h_pool1 = max_pool_2x2(h_conv1)
        with tf.name_scope('conv2'):
            h_conv2 = tf.nn.relu(conv2d(h_pool1, weight_variable([5, 5, 32, 64])) + bias_variable([64]))
        with tf.name_scope('pool2'):
            h_pool2 = max_pool_2x2(h_conv2)
        with tf.name_scope('fc1'):
            h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 64])
            h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, weight_variable([7 * 7 * 64, 1024])) + bias_variable([1024]))
        with tf.name_scope('dropout'):
            keep_prob = tf.placeholder(tf.float32)
            h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
        with tf.name_scope('fc2'):
            y_conv = tf.matmul(h_fc1_drop, weight_variable([1024, 10])) + bias_variable([10])
        return y_conv, keep_prob


    def conv2d(x, W):
        return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding='SAME')


    def max_pool_2x2(x):
        return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME')


    def weight_variable(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))


    def bias_variable(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))


    def main(_):
        mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True)
        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        y_conv, keep_prob = deepnn(x)
        with tf.name_scope('loss'):
            cross_entropy = tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv)
        cross_entropy = tf.reduce_mean(cross_entropy)
        with tf.name_scope('adam_optimizer'):
            train_step = tf.train.AdamOptimizer(1e-4).minimize(cross_entropy)
        with tf.name_scope('accuracy'):
            correct_prediction = tf.cast(tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1)), tf.float32)
        accuracy = tf.reduce_mean(correct_prediction)

        graph_location = tempfile.mkdtemp()
        print('Saving graph to: %s' % graph_location)
        train_writer = tf.summary.FileWriter(graph_location)
        train_writer.add_graph(tf.get_default_graph())

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(FLAGS.steps):
                batch = mnist.train.next_batch(50)
                if i % 100 == 0:
                    train_accuracy = accuracy.eval(feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0})
                    print('step %d, training accuracy %g' % (i, train_accuracy))
                train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})
            print('test accuracy %g' % accuracy.eval(feed_dict={
                x: mnist.test.images[:FLAGS.test], y_: mnist.test.labels[:FLAGS.test], keep_prob: 1.0}))

    if __name__ == '__main__':
        parser = argparse.ArgumentParser()
        parser.add_argument('--data_dir', type=str, default='/tmp/tensorflow/mnist/input_data')
        parser.add_argument('--steps', type=int, default=20000)
        parser.add_argument('--test', type=int, default=10000)
        FLAGS, unparsed = parser.parse_known_args()
        tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
'''


def test_mnist_deep_tutorial(tmp_path, mnist_dir):
    write(tmp_path, {"mnist_deep.py": MNIST_DEEP})
    out = run_pygrad(tmp_path, "mnist_deep.py", "--data_dir", mnist_dir, "--steps", "201", "--test", "2000",
                     env={"TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split(",")[0] for line in lines[1:4]] == ["step 0", "step 100", "step 200"]
    assert float(lines[4].split("test accuracy")[1]) >= 0.85  # (TF's tutorial: ~0.9 after 200 steps)
    # the graph went to the temporary directory's event file, with the tutorial's scopes
    from pygrad.summary.reader import summary_iterator
    graph_dir = lines[0].split("Saving graph to: ")[1]
    (events,) = os.listdir(graph_dir)
    graph_defs = [e.graph_def for e in summary_iterator(os.path.join(graph_dir, events)) if e.graph_def]
    from pygrad.tf_protos import GraphDef
    nodes = {n.name for n in GraphDef.FromString(graph_defs[0]).node}
    assert {"conv1/Conv2D", "dropout/Placeholder", "adam_optimizer/Adam", "accuracy/Cast"} <= nodes


# ---- (b) a program in two files: a TF-Slim model, and training that uses TF's internal modules

SLIM_NET = '''
    """A small convnet in TF-Slim."""
    import tensorflow as tf
    import tensorflow.contrib.slim as slim


    def convnet(images, num_classes, initial):
        with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=tf.nn.relu,
                            weights_regularizer=slim.l2_regularizer(0.01)):
            net = slim.conv2d(images, 4, [3, 3], scope="conv1",
                              weights_initializer=tf.constant_initializer(initial["conv1"]))
            net = slim.max_pool2d(net, [2, 2], scope="pool1")
            net = slim.flatten(net)
            net = slim.fully_connected(net, 8, scope="fc1", weights_initializer=tf.constant_initializer(initial["fc1"]))
            return slim.fully_connected(net, num_classes, activation_fn=None, scope="logits",
                                        weights_initializer=tf.constant_initializer(initial["logits"]))
'''

TRAIN_NET = '''
    """Trains slim_net's convnet for a few steps; prints what it learnt as JSON."""
    import json

    import numpy as np
    import tensorflow as tf
    from tensorflow.python.client import timeline
    from tensorflow.python.framework import dtypes, ops
    from tensorflow.python.ops import array_ops, math_ops, nn_ops

    import slim_net


    def run():
        rng = np.random.RandomState(0)
        initial = {"conv1": rng.randn(3, 3, 1, 4) * 0.5, "fc1": rng.randn(36, 8) * 0.3, "logits": rng.randn(8, 3) * 0.3}
        images_np = rng.rand(5, 6, 6, 1).astype(np.float32)
        labels_np = np.array([0, 1, 2, 1, 0])

        images = array_ops.placeholder(dtypes.float32, [None, 6, 6, 1])
        labels = array_ops.placeholder(dtypes.int64, [None])
        logits = slim_net.convnet(images, 3, initial)
        with ops.name_scope("loss"):
            xent = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            regularization = math_ops.add_n(ops.get_collection(ops.GraphKeys.REGULARIZATION_LOSSES))
            loss = math_ops.add(math_ops.reduce_mean(xent), regularization)
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        feed = {images: images_np, labels: labels_np}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [float(sess.run([loss, step], feed)[0]) for _ in range(4)]
            traced = tf.RunMetadata()
            final = sess.run(logits, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                             run_metadata=traced)
        trace = json.loads(timeline.Timeline(traced.step_stats).generate_chrome_trace_format())
        return {"variables": [[v.op.name, v.shape.as_list()] for v in tf.trainable_variables()],
                "loss_name": loss.op.name, "losses": losses, "logits": final.tolist(),
                "graph": ops.get_default_graph() is tf.get_default_graph(),
                "traced": sorted({op for e in trace["traceEvents"] if e["ph"] == "X"  # (a fused step: "Conv2D+Add")
                                  for op in e["args"]["op"].split("+")})}


    if __name__ == "__main__":
        print(json.dumps(run()))
'''


def test_two_file_slim_program_against_tensorflow(tmp_path, tf_peer, tf_slim):
    write(tmp_path, {"slim_net.py": SLIM_NET, "train_net.py": TRAIN_NET})
    out = run_pygrad(tmp_path, "train_net.py")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)

    # The same two files on TensorFlow 2's compat.v1 and tf_slim (contrib.slim's successor), in this process.
    def on_tensorflow(text):
        return textwrap.dedent(text).replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf").replace(
            "import tensorflow.contrib.slim as slim", "import tf_slim as slim")

    net = types.ModuleType("slim_net")
    exec(compile(on_tensorflow(SLIM_NET), "slim_net.py", "exec"), net.__dict__)
    saved = sys.modules.get("slim_net")
    sys.modules["slim_net"] = net
    try:
        program = {"__name__": "train_net_on_tensorflow"}
        exec(compile(on_tensorflow(TRAIN_NET), "train_net.py", "exec"), program)
        with tf_peer.Graph().as_default(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TensorFlow's deprecation warnings of tf.layers under tf_slim
            want = program["run"]()
    finally:
        sys.modules.pop("slim_net")
        if saved is not None:
            sys.modules["slim_net"] = saved
    assert got["variables"] == want["variables"]
    assert got["loss_name"] == want["loss_name"] == "loss/Add"
    assert got["graph"] and want["graph"]
    # a traced run's Chrome trace (tensorflow.python.client.timeline) shows the net's kernels in both
    for kernel in ("conv2d", "matmul", "maxpool"):  # (TF's oneDNN build runs them as _MklNativeFusedConv2D, ...)
        assert any(kernel in op.lower() for op in got["traced"]), got["traced"]
        assert any(kernel in op.lower() for op in want["traced"]), want["traced"]
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-6)
    assert got["losses"][-1] < got["losses"][0]


# ---- (c) what a program meets where pygrad has no answer

ERRORS = '''
    import tensorflow as tf
    from tensorflow.python.client import timeline
    from tensorflow.python.ops import gen_made_up_ops, math_ops
    from tensorflow.examples.tutorials.mnist import input_data

    def caught(run):
        try:
            run()
        except (AttributeError, ImportError, OSError) as e:
            print(type(e).__name__, "|", e)

    caught(lambda: timeline.made_up)
    caught(lambda: tf.contrib.made_up)
    caught(lambda: gen_made_up_ops.made_up)
    caught(lambda: exec("from tensorflow.python.ops.math_ops import bessel_i0e"))
    caught(lambda: exec("import tensorflow.keras"))
    caught(lambda: input_data.read_data_sets("no_mnist_here"))
    x = tf.placeholder(tf.float32, [2])
    y = math_ops.bessel_i0e(x)
'''


def test_missing_names_say_so(tmp_path):
    write(tmp_path, {"errors.py": ERRORS})
    out = run_pygrad(tmp_path, "errors.py", env={"PYGRAD_MNIST_URL": "file:///no-mnist-mirror/"})
    assert out.returncode == 1
    hint = ": pygrad does not support this TensorFlow API yet (docs/coverage.md, 'What is supported', lists what"
    lines = out.stdout.splitlines()
    assert [line.split(" | ")[0] for line in lines] == ["AttributeError"] * 3 + ["ImportError"] * 2 + ["DownloadError"]
    assert [line.split(" | ")[1].split(hint)[0] for line in lines[:5]] == [
        "tensorflow.python.client.timeline.made_up", "tensorflow.contrib.made_up",
        "tensorflow.python.ops.gen_made_up_ops.made_up", "tensorflow.python.ops.math_ops.bessel_i0e",
        "tensorflow.keras"]
    # Offline, the tutorials' reader names the files it lacks and where to put them.
    assert "Could not download the MNIST files train-images-idx3-ubyte.gz" in lines[5]
    assert "place the four files" in lines[5] and "no_mnist_here" in lines[5]
    # The uncaught error: Python's traceback from the program's own line, without the runner's frames.
    err = out.stderr.splitlines()
    assert err[1] == "Traceback (most recent call last):"
    assert err[2] == '  File "errors.py", line 20, in <module>'
    assert err[-1] == "AttributeError: tensorflow.python.ops.math_ops.bessel_i0e" + hint + " it covers)"
    assert "runpy" not in out.stderr and "__main__.py" not in out.stderr


# ---- how the program runs: argv, sys.path[0], __name__, the exit code

ARGS_PROGRAM = '''
    import json
    import sys

    import helper
    import tensorflow as tf

    tf.app.flags.DEFINE_integer("steps", 1, "steps")
    FLAGS = tf.app.flags.FLAGS


    def main(argv):
        print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "helper": helper.NAME,
                          "steps": FLAGS.steps, "rest": argv}))
        return 3


    if __name__ == "__main__":
        tf.app.run(main)
'''


@pytest.mark.parametrize("how", ["program", "module"])
def test_program_runs_as_python_runs_it(tmp_path, how):
    write(tmp_path, {"app/args_program.py": ARGS_PROGRAM, "app/helper.py": "NAME = 'helper'\n"})
    app = tmp_path / "app"
    if how == "program":
        out = run_pygrad(tmp_path, "app/args_program.py", "--steps=7", "extra")
        argv0 = "app/args_program.py"
    else:
        out = run_pygrad(app, "-m", "args_program", "--steps=7", "extra")
        argv0 = str(app.resolve() / "args_program.py")
    assert out.returncode == 3, out.stderr
    got = json.loads(out.stdout)
    assert got == {"argv": [argv0, "--steps=7", "extra"], "path0": str(app.resolve()), "name": "__main__",
                   "helper": "helper", "steps": 7, "rest": [argv0, "extra"]}
    assert out.stderr.count("\n") == 1  # the one line saying that tensorflow is pygrad


def test_usage_and_the_console_script(capsys):
    from pygrad.__main__ import main
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("usage: python -m pygrad program.py [args ...]")
    assert main(["--help"]) == 0 and "python -m pygrad -m module" in capsys.readouterr().out
    assert main(["no_such_program.py"]) == 2 and "no such file" in capsys.readouterr().err
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    module, _, name = scripts["pygrad"].partition(":")
    assert getattr(importlib.import_module(module), name) is main


# ---- (d) pygrad.alias_tensorflow() in this process, and the table of TF's internal modules

def _tensorflow_modules():
    return {n: m for n, m in sys.modules.items() if n == "tensorflow" or n.startswith("tensorflow.")}


@pytest.fixture
def no_tensorflow():
    """sys.modules without TensorFlow (and sys.meta_path as it was) for the test; everything back after."""
    saved, meta_path = _tensorflow_modules(), list(sys.meta_path)
    for name in saved:
        del sys.modules[name]
    yield
    sys.meta_path[:] = meta_path
    for name in _tensorflow_modules():
        del sys.modules[name]
    sys.modules.update(saved)


def test_alias_tensorflow_in_process(no_tensorflow, capfd):
    capfd.readouterr()
    pygrad.alias_tensorflow()
    pygrad.alias_tensorflow()  # idempotent: one hook, one line
    assert sum(isinstance(f, tf_alias.Finder) for f in sys.meta_path) == 1
    assert capfd.readouterr().err == f"pygrad: `import tensorflow` gives pygrad {pygrad.__version__} in this process " \
                                     "(an import hook on sys.meta_path)\n"
    tf = importlib.import_module("tensorflow")
    v1 = importlib.import_module("tensorflow.compat.v1")
    slim = importlib.import_module("tensorflow.contrib.slim")
    ops = importlib.import_module("tensorflow.python.framework.ops")
    math_ops = importlib.import_module("tensorflow.python.ops.math_ops")
    assert tf.placeholder is v1.placeholder is pygrad.placeholder and tf.compat.v1 is v1
    assert tf.__version__ == v1.__version__ == "1.15.5"  # the TF API followed: version checks take TF1's way
    assert tf.contrib.slim is slim and slim.conv2d is pygrad.contrib.slim.conv2d
    assert ops.Tensor is pygrad.Tensor and ops.get_default_graph() is pygrad.get_default_graph()
    x = tf.constant([1.0, 2.0])
    with tf.Session() as sess:
        assert sess.run(math_ops.reduce_sum(math_ops.square(x))) == 5.0
    with pytest.raises(AttributeError, match=r"^tensorflow.python.ops.math_ops.bessel_i0e: pygrad does not support"):
        math_ops.bessel_i0e(x)
    with pytest.raises(AttributeError, match=r"^tensorflow.nn.made_up: pygrad does not support"):
        tf.nn.made_up
    assert "reduce_sum" in dir(math_ops) and "Tensor" in ops.__all__


def test_alias_refuses_when_tensorflow_is_loaded(no_tensorflow):
    sys.modules["tensorflow"] = types.ModuleType("tensorflow")
    with pytest.raises(RuntimeError, match=r"TensorFlow itself is already imported in this process"):
        pygrad.alias_tensorflow()
    assert not tf_alias.installed()


# Internal names TF1 programs import, with the pygrad object each is. TensorFlow 2.21, the reference at
# hand, still has each in the same module except the ones marked TF1_ONLY (moved since TF 1.15).
INTERNAL_NAMES = {
    "framework.ops": {"Tensor": pygrad.Tensor, "Graph": pygrad.Graph, "Operation": pygrad.Operation,
                      "get_default_graph": pygrad.get_default_graph, "name_scope": pygrad.name_scope,
                      "convert_to_tensor": pygrad.convert_to_tensor, "GraphKeys": pygrad.GraphKeys,
                      "add_to_collection": pygrad.add_to_collection, "get_collection": pygrad.get_collection,
                      "control_dependencies": pygrad.control_dependencies, "device": pygrad.device,
                      "reset_default_graph": pygrad.reset_default_graph},
    "framework.dtypes": {"float32": pygrad.float32, "int64": pygrad.int64, "bool": pygrad.bool,
                         "as_dtype": pygrad.as_dtype, "DType": pygrad.DType, "string": pygrad.string},
    "framework.tensor_shape": {"TensorShape": pygrad.TensorShape, "Dimension": pygrad.Dimension},
    "framework.constant_op": {"constant": pygrad.constant},
    "ops.math_ops": {"reduce_sum": pygrad.reduce_sum, "add_n": pygrad.add_n, "matmul": pygrad.matmul,
                     "cast": pygrad.cast, "argmax": pygrad.argmax},
    "ops.array_ops": {"placeholder": pygrad.placeholder, "reshape": pygrad.reshape, "concat": pygrad.concat,
                      "stack": pygrad.stack},
    "ops.nn_ops": {"relu": pygrad.nn.relu, "bias_add": pygrad.nn.bias_add, "conv2d": pygrad.nn.conv2d},
    "ops.init_ops": {"zeros_initializer": pygrad.zeros_initializer,
                     "glorot_uniform_initializer": pygrad.glorot_uniform_initializer},
    "ops.variable_scope": {"variable_scope": pygrad.variable_scope, "get_variable": pygrad.get_variable,
                           "AUTO_REUSE": pygrad.AUTO_REUSE},
    "ops.variables": {"Variable": pygrad.Variable, "global_variables": pygrad.global_variables},
    "ops.control_flow_ops": {"group": pygrad.group, "no_op": pygrad.no_op, "cond": pygrad.cond,
                             "while_loop": pygrad.while_loop},
    "ops.rnn": {"dynamic_rnn": pygrad.nn.dynamic_rnn},
    "ops.rnn_cell_impl": {"LSTMCell": pygrad.nn.rnn_cell.LSTMCell, "LSTMStateTuple": pygrad.nn.rnn_cell.LSTMStateTuple},
    "platform.tf_logging": {"info": pygrad.logging.info, "set_verbosity": pygrad.logging.set_verbosity},
    "platform.gfile": {"Exists": pygrad.gfile.Exists, "GFile": pygrad.gfile.GFile},
    "util.nest": {"flatten": pygrad.nest.flatten, "map_structure": pygrad.nest.map_structure},
    "training.training_util": {"get_or_create_global_step": pygrad.train.get_or_create_global_step},
    "training.saver": {"Saver": pygrad.train.Saver},
    "training.gradient_descent": {"GradientDescentOptimizer": pygrad.train.GradientDescentOptimizer},
    "training.moving_averages": {"ExponentialMovingAverage": pygrad.train.ExponentialMovingAverage},
    "client.session": {"Session": pygrad.Session, "InteractiveSession": pygrad.InteractiveSession},
}
TF1_ONLY = {("framework.ops", "Tensor"), ("ops.array_ops", "stack"), ("ops.control_flow_ops", "cond"),
            ("ops.control_flow_ops", "while_loop")}


@pytest.mark.parametrize("path", sorted(INTERNAL_NAMES))
def test_internal_module_names(path, tf_peer):
    view = tf_alias.view_for("tensorflow.python." + path)
    reference = importlib.import_module("tensorflow.python." + path)
    for name, value in INTERNAL_NAMES[path].items():
        assert getattr(view, name) is value, name
        assert (path, name) in TF1_ONLY or hasattr(reference, name), f"TensorFlow's {path} has no {name}"


def test_every_table_entry_names_pygrad_modules():
    for path in tf_alias.PYTHON_MODULES:
        assert tf_alias.view_for("tensorflow.python." + path).__pygrad_sources__, path


def test_tensor_shape_helpers_as_tensorflow(tf_peer):
    from tensorflow.python.framework import tensor_shape as reference
    view = tf_alias.view_for("tensorflow.python.framework.tensor_shape")
    for ours, theirs in [(view.TensorShape([3, None]), reference.TensorShape([3, None])),
                         (view.unknown_shape(), reference.unknown_shape())]:
        assert [view.dimension_value(view.dimension_at_index(ours, i)) for i in range(2)] == [
            reference.dimension_value(reference.dimension_at_index(theirs, i)) for i in range(2)]
    assert view.unknown_shape(rank=2).as_list() == reference.unknown_shape(rank=2).as_list() == [None, None]
    assert view.as_dimension(4).value == reference.as_dimension(4).value and view.dimension_value(5) == 5
