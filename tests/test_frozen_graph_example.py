"""examples/frozen_graph.py runs a frozen graph given on the command line: a model frozen with
tf.graph_util.convert_variables_to_constants and written with tf.train.write_graph, whose top
output on the example's random batch is the model's own."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import pygrad as tf

ROOT = Path(__file__).resolve().parents[1]


def test_the_example_runs_a_frozen_graph(tmp_path):
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="images")
    w = tf.Variable(np.random.RandomState(0).randn(6 * 6 * 2, 10).astype(np.float32))
    probs = tf.nn.softmax(tf.matmul(tf.reshape(x, [-1, 72]), w), name="probs")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        frozen = tf.graph_util.convert_variables_to_constants(sess, tf.get_default_graph().as_graph_def(), ["probs"])
        batch = np.random.default_rng(0).random([4, 6, 6, 2], dtype=np.float32)  # the example's batch
        want = sess.run(probs, {x: batch})[0]
    tf.train.write_graph(frozen, str(tmp_path), "model.pb", as_text=False)
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "frozen_graph.py"), str(tmp_path / "model.pb"),
                          "--batch", "4", "--runs", "3", "--top", "3"], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert re.search(r"input images \(\?, 6, 6, 2\), output probs \(\?, 10\)", out), out
    top = [int(i) for i in re.findall(r"(\d+): [\d.]+", out.split("first example:")[1].splitlines()[0])]
    assert top == np.argsort(-want)[:3].tolist(), out
    assert re.search(r"batch of 4: median [\d.]+ ms per batch over 3 runs", out), out
