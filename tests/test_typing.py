"""pygrad's type hints (py.typed; the public entry points Session.run, placeholder, Variable and
the optimizers) checked by mypy: the examples pass, and a program with wrong calls is caught."""
import os
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = ["--follow-imports=silent", "--check-untyped-defs", "--ignore-missing-imports", "--cache-dir", os.devnull,
         "--no-error-summary"]


def mypy(*args):
    api = pytest.importorskip("mypy.api")
    out, err, status = api.run([*FLAGS, *args])
    return out.splitlines(), err, status


def test_the_package_says_it_is_typed():
    assert os.path.isfile(os.path.join(ROOT, "pygrad", "py.typed"))


def test_the_examples_type_check():
    lines, err, status = mypy(os.path.join(ROOT, "examples"))
    assert status == 0, "\n".join(lines) + err


def test_wrong_calls_are_caught(tmp_path):
    program = tmp_path / "wrong.py"
    program.write_text(textwrap.dedent("""
        import numpy as np
        import pygrad as tf
        x = tf.placeholder(tf.float32, [None, 3], name=3)
        w = tf.Variable(tf.zeros([3, 1]), name="w", trainable=True)
        loss = tf.reduce_sum(1.0 - tf.matmul(x, w) * w[0, 0])
        opt = tf.train.GradientDescentOptimizer("fast")
        opt.minimize(loss, var_list=5)
        tf.train.AdamOptimizer(tf.Variable(0.1), beta1=np.float32(0.9)).minimize(loss, global_step=None)
        with tf.Session() as sess:
            sess.run(loss, feed_dict=[1, 2])
            sess.run(loss, {x: np.ones((2, 3))}, run_meta=None)
    """))
    lines, err, status = mypy(str(program))
    assert status == 1, err
    found = [(int(line.split(":")[1]), line.split("error: ")[1]) for line in lines if ": error: " in line]
    assert [(n, text.split(";")[0]) for n, text in found] == [
        (4, 'Argument "name" to "placeholder" has incompatible type "int"'),
        (7, 'Argument 1 to "GradientDescentOptimizer" has incompatible type "str"'),
        (8, 'Argument "var_list" to "minimize" of "Optimizer" has incompatible type "int"'),
        (11, 'Argument "feed_dict" to "run" of "BaseSession" has incompatible type "list[int]"'),
        (12, 'Unexpected keyword argument "run_meta" for "run" of "BaseSession"')]
