"""TF's conventions where pygrad was stricter for no gain, each checked against TensorFlow
(tensorflow.compat.v1, the tf_peer fixture) side by side: Saver.save making its last directory,
feeds converted as np.asarray(value, dtype) when no value changes, labels cast to the logits'
dtype, lists of tensors packed, a range over a run-time size, tf.nn.xw_plus_b / zero_fraction /
lrn, tf.norm, and tf.test.TestCase with tf.test.main."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygrad as tf
from peer import compare


def test_saver_makes_the_last_directory_as_tensorflow(tf_peer, tmp_path):
    def save(m, path):
        with m.Graph().as_default():
            v = m.Variable(1.0)
            with m.Session() as s:
                s.run(m.global_variables_initializer())
                try:
                    return m.train.Saver([v]).save(s, path) == path and os.path.isdir(os.path.dirname(path))
                except ValueError as e:
                    return str(e)
    for lib, name in ((tf, "pg"), (tf_peer, "tf")):
        (tmp_path / name).mkdir()
        assert save(lib, str(tmp_path / name / "one" / "model")) is True
        assert save(lib, str(tmp_path / name / "two" / "three" / "model")) == \
            f"Parent directory of {tmp_path / name / 'two' / 'three' / 'model'} doesn't exist, can't save."


def test_whole_number_floats_feed_integer_placeholders(tf_peer):
    def run(m, value, dtype):
        with m.Graph().as_default():
            p = m.placeholder(dtype, [None, 2], name="actions")
            with m.Session() as s:
                return s.run(p + 1, {p: value})
    for value in (np.array([[1.0, 2.0], [-3.0, 0.0]]), np.array([[4.0, 5.0]], np.float32), [[1.0, 7.0]]):
        for dtype in ("int32", "int64", "uint8") if np.min(value) >= 0 else ("int32", "int64"):
            ours, theirs = run(tf, value, getattr(tf, dtype)), run(tf_peer, value, getattr(tf_peer, dtype))
            assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist()
    # TF would truncate 2.5 to 2 and wrap 300 to 44: pygrad refuses, naming the placeholder and the value
    for value, dtype, shown in (([[1.0, 2.5]], tf.int32, "2.5 at index [0, 1]"), ([[300.0, 1.0]], tf.uint8, "300.0"),
                                ([[np.nan, 1.0]], tf.int64, "nan at index [0, 0]")):
        with pytest.raises(TypeError, match=rf"'actions'.*the value {re.escape(shown)}.*not a whole number"):
            run(tf, np.array(value), dtype)


def test_labels_are_cast_to_the_logits_dtype(tf_peer):
    logits = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], np.float32)
    labels = np.array([[0.2, 0.8, 0.0], [0.0, 0.0, 1.0]], np.float64)

    def case(m, x):
        return [m.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x),
                m.nn.softmax_cross_entropy_with_logits_v2(labels=m.constant(labels), logits=x)]
    compare(tf_peer, case, [logits], wrt=[0])


def test_sparse_cross_entropy_takes_logits_of_unknown_inner_dimensions(tf_peer):
    logits = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)

    def case(m, x):
        unknown = m.placeholder_with_default(x, [None, None, None])
        return m.nn.sparse_softmax_cross_entropy_with_logits(labels=m.constant([[0, 3, 1], [2, 2, 0]]),
                                                             logits=unknown)
    compare(tf_peer, case, [logits], wrt=[0])


def test_lists_of_tensors_pack_and_ranges_take_run_time_sizes(tf_peer):
    def case(m, x, y):
        unknown = m.placeholder_with_default(x, [None])
        return [m.stop_gradient([x]), m.convert_to_tensor([[x, [3.0, 4.0]], [x * 2, x]]),
                m.reduce_sum([x, y], axis=0), m.range(m.size(unknown)), m.range(1, m.shape(unknown)[0], 2)]
    compare(tf_peer, case, [np.array([1.0, 2.0], np.float32), np.array([5.0, -1.0], np.float32)], wrt=[0, 1])


def test_xw_plus_b_zero_fraction_and_lrn(tf_peer):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 3, 7)).astype(np.float32)

    def case(m, x, w, b):
        flat = m.reshape(x, [-1, 7])
        return [m.nn.xw_plus_b(flat, w, b), m.nn.zero_fraction(m.nn.relu(x)), m.nn.lrn(x),
                m.nn.local_response_normalization(x, depth_radius=2, bias=2.0, alpha=0.3, beta=0.75)]
    compare(tf_peer, case, [x, rng.standard_normal((7, 4)).astype(np.float32),
                            rng.standard_normal(4).astype(np.float32)], wrt=[0, 1, 2])


@pytest.mark.parametrize("ord,axis,keepdims", [
    ("euclidean", None, False), ("euclidean", 1, True), (1, 0, False), (np.inf, -1, False), (3, 1, False),
    (0.5, None, False), ("fro", (0, 1), False), (1, (0, 1), True), (np.inf, (1, 0), False),
    ("euclidean", (-1, 0), False),
])
def test_norm_as_tensorflow(tf_peer, ord, axis, keepdims):
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float64) + 0.1

    def case(m, x):
        return m.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    compare(tf_peer, case, [x], wrt=[0])


def test_norm_errors():
    x = tf.constant([[1.0, 2.0]])
    with pytest.raises(NotImplementedError, match="singular value"):
        tf.norm(x, ord=2, axis=(0, 1))
    with pytest.raises(ValueError, match="supported vector norm"):
        tf.norm(x, ord=-1)
    with pytest.raises(ValueError, match="tuple of 2 unique integers"):
        tf.norm(x, axis=(1, 1))


TF1_TEST_FILE = '''
import numpy as np
import tensorflow as tf


class SquareTest(tf.test.TestCase):
    def testSquare(self):
        with self.test_session():
            x = tf.square([2, 3])
            self.assertAllEqual(x.eval(), [4, 9])

    def testCloseAndSession(self):
        with self.cached_session() as sess:
            y = tf.constant([1.0, 2.0]) / 3.0
            self.assertAllClose(sess.run(y), [1 / 3.0, 2 / 3.0])
            self.assertAllClose({"a": [y, 1.0]}, {"a": [np.array([1, 2]) / 3.0, 1.0]})
            self.assertAllInRange(y, 0.0, 1.0)
            self.assertShapeEqual(np.zeros(2), y)

    def testGradient(self):
        with self.cached_session():
            x = tf.constant([[1.0, 2.0]])
            err = tf.test.compute_gradient_error(x, [1, 2], tf.square(x), [1, 2])
            self.assertLess(err, 1e-3)

    def testOpError(self):
        with self.cached_session() as sess:
            p = tf.placeholder(tf.float32)
            with self.assertRaisesOpError("must feed a value for placeholder"):
                sess.run(p)

    def testFails(self):
        self.assertAllClose([1.0], [1.1])


if __name__ == "__main__":
    tf.test.main()
'''


@pytest.mark.parametrize("runner", ["pytest", "main"])
def test_a_tf1_test_file_runs_under_pytest_and_tf_test_main(tmp_path, runner):
    (tmp_path / "square_test.py").write_text(textwrap.dedent(TF1_TEST_FILE))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    # the program imports tensorflow: run it with tensorflow naming pygrad, as `python -m pygrad` does
    prelude = "import sys, pygrad; sys.modules['tensorflow'] = pygrad; "
    code = prelude + ("import pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'square_test.py']))"
                      if runner == "pytest" else
                      "sys.argv = ['square_test.py']; import runpy; "
                      "runpy.run_path('square_test.py', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=240)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text  # testFails fails, test_session skips itself (as TF's), the rest pass
    if runner == "pytest":
        assert "1 failed, 4 passed, 1 skipped" in text, text
    else:
        assert "Ran 6 tests" in text and "FAILED (failures=1, skipped=1)" in text, text


def test_compat_text_helpers_as_tensorflow(tf_peer, tmp_path):
    for value in ("ünï", b"\xc3\xbc", bytearray(b"ab")):
        assert tf.compat.as_bytes(value) == tf_peer.compat.as_bytes(value)
    for value in ("ünï", b"\xc3\xbc"):
        assert tf.compat.as_text(value) == tf_peer.compat.as_text(value) == tf.compat.as_str(value)
    assert tf.compat.as_str_any(3) == tf_peer.compat.as_str_any(3) and tf.compat.as_str_any(b"x") == "x"
    assert tf.compat.path_to_str(tmp_path) == tf_peer.compat.path_to_str(tmp_path)
    assert isinstance(np.int64(3), tf.compat.integral_types) and isinstance(2.5, tf.compat.real_types)
    assert isinstance(1j, tf.compat.complex_types) and isinstance(b"", tf.compat.bytes_or_text_types)
    with pytest.raises(TypeError, match="Expected binary or unicode string"):
        tf.compat.as_bytes(3)
