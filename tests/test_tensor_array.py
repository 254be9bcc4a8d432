"""tf.TensorArray: writes and reads in loops, stack/unstack/gather, gradients, a hand-written RNN."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import check_grad


def test_write_read_stack_gather_size():
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, [1.0, 2.0]).write(2, [5.0, 6.0])
    with tf.Session() as s:
        st, r, g, n = s.run([ta.stack(), ta.read(2), ta.gather([2, 0]), ta.size()])
    np.testing.assert_array_equal(st, [[1, 2], [0, 0], [5, 6]])
    np.testing.assert_array_equal(r, [5, 6])
    np.testing.assert_array_equal(g, [[5, 6], [1, 2]])
    assert n == 3


def test_a_write_out_of_range_names_the_op():
    i = tf.placeholder(tf.int32, [])
    ta = tf.TensorArray(tf.float32, size=2).write(i, 1.0)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Tried to write to index 5.*size is: 2"):
            s.run(ta.stack(), {i: 5})
        assert list(s.run(ta.stack(), {i: 1})) == [0.0, 1.0]


def test_dynamic_size_grows_with_writes_at_constant_indices(tf_peer):
    """As TF: a write past the size grows a dynamic_size array to index + 1 (unwritten rows zeros)."""
    got = {}
    for lib in (tf, tf_peer):
        with lib.Graph().as_default():
            t = lib.TensorArray(lib.float32, size=0, dynamic_size=True).write(0, [1.0, 2.0]).write(2, [5.0, 6.0])
            x = lib.constant([3.0, 4.0])
            t2 = lib.TensorArray(lib.float32, size=1, dynamic_size=True).write(1, x).write(3, x * 2.0)
            with lib.Session() as s:
                got[lib] = s.run([t.stack(), t.size(), t2.stack(), t2.size()])
    for a, b in zip(got[tf], got[tf_peer]):
        np.testing.assert_array_equal(a, b)
    t2 = tf.TensorArray(tf.float32, size=1, dynamic_size=True)
    x = tf.constant([3.0, 4.0])
    (g,) = tf.gradients(tf.reduce_sum(t2.write(1, x).write(3, x * 2.0).stack() * 3.0), x)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(g), [9.0, 9.0])


def test_dynamic_size_of_zero_written_in_a_loop_is_refused_naming_the_op():
    """A computed index cannot grow the array (static plan shapes): refused when the graph is built."""
    def body(i, ta):
        return i + 1, ta.write(i, tf.cast(i, tf.float32))

    with pytest.raises(ValueError, match=r"TensorArrayWriteV3 'while/TensorArrayWriteV3': .*dynamic_size=True "
                                         r"and size 0.*give it the size"):
        tf.while_loop(lambda i, ta: i < 5, body, [0, tf.TensorArray(tf.float32, size=0, dynamic_size=True)])
    _, ta = tf.while_loop(lambda i, ta: i < 5, body, [0, tf.TensorArray(tf.float32, size=5, dynamic_size=True)])
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(ta.stack()), [0.0, 1.0, 2.0, 3.0, 4.0])


def _rnn(lib, x, w, u, T, B, H):
    ta_in = lib.TensorArray(lib.float32 if x.dtype == lib.float32 else lib.float64, size=T).unstack(x)
    ta_out = lib.TensorArray(x.dtype, size=T)

    def body(t, h, ta):
        h = lib.tanh(lib.matmul(ta_in.read(t), w) + lib.matmul(h, u))
        return t + 1, h, ta.write(t, h)
    _, h, ta = lib.while_loop(lambda t, h, ta: t < T, body, [0, lib.zeros([B, H], x.dtype), ta_out])
    return ta.stack(), h


def test_rnn_gradient_against_finite_differences():
    rng = np.random.RandomState(0)
    T, B, F, H = 4, 2, 3, 2
    check_grad(lambda x, w, u: _rnn(tf, x, w, u, T, B, H),
               [rng.randn(T, B, F), rng.randn(F, H) * 0.5, rng.randn(H, H) * 0.5])


def test_rnn_matches_tensorflow():
    ttf = pytest.importorskip("tensorflow").compat.v1
    ttf.disable_v2_behavior()
    rng = np.random.RandomState(0)
    T, B, F, H = 6, 3, 4, 5
    xv = rng.randn(T, B, F).astype(np.float32)
    w0, u0 = (rng.randn(F, H) * 0.5).astype(np.float32), (rng.randn(H, H) * 0.5).astype(np.float32)
    results = []
    for lib in (tf, ttf):
        g = lib.Graph()
        with g.as_default():
            x = lib.placeholder(lib.float32, [T, B, F])
            w, u = lib.Variable(w0), lib.Variable(u0)
            out, h = _rnn(lib, x, w, u, T, B, H)
            grads = lib.gradients(lib.reduce_sum(out * out) + lib.reduce_sum(h), [x, w, u])
            with lib.Session(graph=g) as s:
                s.run(lib.global_variables_initializer())
                results.append(s.run([out, h] + grads, {x: xv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
