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


def _grown_in_loops(lib):
    """Empty dynamic_size arrays grown by loops whose length a feed decides: a counted loop, a loop
    that reads back what it wrote (Fibonacci), a loop that stops on a value, an element shape known
    only from the writes, and a write at a fed index outside a loop."""
    n = lib.placeholder(lib.int32, [])
    limit = lib.placeholder(lib.float32, [])
    at = lib.placeholder(lib.int32, [])

    def counted(i, ta):
        return i + 1, ta.write(i, lib.cast(i, lib.float32) * [1.0, -2.0])
    _, ta1 = lib.while_loop(lambda i, ta: i < n, counted, [0, lib.TensorArray(lib.float32, size=0, dynamic_size=True)])

    def fib(i, ta):
        return i + 1, ta.write(i, ta.read(i - 1) + ta.read(i - 2))
    start = lib.TensorArray(lib.int64, size=0, dynamic_size=True, element_shape=[], clear_after_read=False)
    start = start.write(0, 1).write(1, 1)
    _, ta2 = lib.while_loop(lambda i, ta: i < n, fib, [2, start])

    def until(x, k, ta):
        return x * 1.5, k + 1, ta.write(k, lib.stack([x, lib.sqrt(x)]))
    x_end, _, ta3 = lib.while_loop(lambda x, k, ta: x < limit, until,
                                   [lib.constant(1.0), 0, lib.TensorArray(lib.float32, size=0, dynamic_size=True,
                                                                          infer_shape=True)])
    ta4 = lib.TensorArray(lib.float32, size=0, dynamic_size=True).write(at, [3.0, 4.0])
    fetch = [ta1.stack(), ta1.size(), ta2.stack(), ta3.stack(), ta3.size(), x_end, ta4.stack(), ta4.size()]
    with lib.Session() as s:
        return [s.run(fetch, {n: k, limit: 30.0 * k, at: k}) for k in (5, 1, 9)]


def test_an_empty_dynamic_size_array_grows_in_loops_of_computed_length(tf_peer):
    """As TF: writes at indices a run computes grow an array that started empty, in a while_loop
    (which then runs in Python, a plan per size) and outside one; size and stack follow."""
    with tf.Graph().as_default():
        got = _grown_in_loops(tf)
    with tf_peer.Graph().as_default():
        want = _grown_in_loops(tf_peer)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-6)
            assert np.asarray(a).dtype == np.asarray(b).dtype
            assert np.shape(a) == np.shape(b)


def test_an_array_grown_in_a_loop_keeps_its_errors_and_refuses_gradients():
    i_end = tf.placeholder(tf.int32, [])
    x = tf.constant([1.0, 2.0])

    def body(i, ta):
        return i + 1, ta.write(i - 1, x * tf.cast(i, tf.float32))
    _, ta = tf.while_loop(lambda i, ta: i < i_end, body, [0, tf.TensorArray(tf.float32, size=0, dynamic_size=True)])
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"TensorArrayGrowWrite 'while/TensorArrayGrowWrite'"
                                                                 r": Tried to write to index -1"):
            s.run(ta.stack(), {i_end: 3})
        assert s.run(ta.size(), {i_end: 0}) == 0
    with pytest.raises(LookupError, match="a TensorArray that grows in the run"):
        tf.gradients(tf.reduce_sum(ta.stack()), x)


def test_a_computed_write_past_a_non_zero_dynamic_size_raises_when_it_runs():
    """An array that starts with rows keeps a native loop at that size: past it, a clear error."""
    def body(i, ta):
        return i + 1, ta.write(i, tf.cast(i, tf.float32))
    n = tf.placeholder(tf.int32, [])
    _, ta = tf.while_loop(lambda i, ta: i < n, body, [0, tf.TensorArray(tf.float32, size=5, dynamic_size=True)])
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(ta.stack(), {n: 5}), [0.0, 1.0, 2.0, 3.0, 4.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Tried to write to index 5.*size is: 5"):
            s.run(ta.stack(), {n: 6})


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
