"""Ops that run in Python (tf.py_func, tf.Print, an iterator's get_next) inside tf.cond and
tf.while_loop: TF's values, TF's error text for a raising function, prints once per iteration, and
a clear refusal of gradients through such a loop."""
import numpy as np
import pytest

import gradcheck
import pygrad as tf


def _build(m):
    x = m.placeholder(m.float32, [3])
    p = m.placeholder(m.bool, [])
    scale = m.constant(np.float32(2.0))

    def body(i, acc):
        step = m.py_func(lambda a, k: (a * np.float32(k + 1)).astype(np.float32), [x, i], m.float32)
        return [i + 1, acc + m.reshape(step, [3]) * scale]  # loop_vars' structure (TF 1's loops check it)

    _, acc = m.while_loop(lambda i, acc: i < 4, body, [m.constant(0), m.zeros([3])], maximum_iterations=3)
    picked = m.cond(p, lambda: m.reshape(m.py_func(lambda a: np.sort(a)[::-1].copy(), [x], m.float32), [3]),
                    lambda: x * 3.0)
    nested = m.while_loop(lambda i, s: i < 3, lambda i, s: [i + 1, s + m.cond(
        i > 0, lambda: m.reshape(m.py_func(lambda k: np.float32(k * 10), [i], m.float32), []), lambda: 1.0)],
        [m.constant(0), m.constant(0.0)])[1]
    return x, p, [acc, picked, nested]


def test_py_func_in_while_and_cond_gives_tensorflows_values(tf_peer):
    feeds = [(np.array([1.0, -2.0, 0.5], np.float32), True), (np.array([3.0, 1.0, 2.0], np.float32), False)]
    results = []
    for m, graph in ((tf, tf.Graph()), (tf_peer, tf_peer.Graph())):
        with graph.as_default():
            x, p, outs = _build(m)
            with m.Session() as s:
                results.append([s.run(outs, {x: v, p: b}) for v, b in feeds])
    for ours, theirs in zip(*results):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_raising_function_in_a_loop_gives_its_error_and_the_session_stays_usable(tf_peer):
    def bad(k):
        raise ValueError(f"no value for step {k}")
    for m, graph in ((tf, tf.Graph()), (tf_peer, tf_peer.Graph())):
        with graph.as_default():
            r = m.while_loop(lambda i: i < 3, lambda i: m.reshape(m.py_func(bad, [i], m.int32), []), [m.constant(0)])
            with m.Session() as s:
                with pytest.raises(m.errors.InvalidArgumentError, match="ValueError: no value for step 0"):
                    s.run(r)
                assert s.run(m.constant(5)) == 5


def test_print_in_a_loop_prints_every_iteration(capfd):
    r = tf.while_loop(lambda i: i < 3, lambda i: tf.Print(i + 1, [i], "step "), [tf.constant(0)])
    with tf.Session() as s:
        assert s.run(r) == 3
    assert capfd.readouterr().err.splitlines() == ["step [0]", "step [1]", "step [2]"]


def test_an_iterator_in_a_loop_takes_an_element_per_iteration(tf_peer):
    out = []
    for m, graph in ((tf, tf.Graph()), (tf_peer, tf_peer.Graph())):
        with graph.as_default():
            it = m.data.Dataset.range(10, 100, 7).make_one_shot_iterator()
            total = m.while_loop(lambda i, t: i < 4, lambda i, t: [i + 1, t + it.get_next()],
                                 [m.constant(0), m.constant(0, m.int64)])[1]
            with m.Session() as s:
                out.append([s.run(total), s.run(total)])
    assert out[0] == out[1]


def test_gradients_through_such_a_loop_are_refused_clearly():
    x = tf.constant(2.0)
    r = tf.while_loop(lambda i, v: i < 2, lambda i, v: [i + 1, v * tf.reshape(tf.py_func(
        lambda: np.float32(1.5), [], tf.float32), [])], [tf.constant(0), x])[1]
    with pytest.raises(LookupError, match="run Python ops"):
        tf.gradients(r * x, x)


def _loop_through_boolean_mask(random_inside=False):
    """loss = sum of squares of a loop's stacked states cut by tf.boolean_mask (a host op between
    the loop and the loss); the gradient loop needs the forward loop's stacks."""
    x = tf.placeholder(tf.float64, [5, 2])
    w = tf.Variable(np.array([[0.5, -0.3], [0.2, 0.9]]))

    def body(t, h, ta):
        step = tf.matmul(h, w) + x[t][None]
        if random_inside:
            step += tf.random_normal([1, 2], dtype=tf.float64)
        h = tf.tanh(step)
        return t + 1, h, ta.write(t, h[0])
    t, _, ta = tf.while_loop(lambda t, h, ta: t < 3, body,
                             (tf.constant(0), tf.zeros([1, 2], tf.float64), tf.TensorArray(tf.float64, size=5)))
    cut = tf.boolean_mask(ta.stack(), tf.range(5) < t)
    return x, w, tf.reduce_sum(cut * cut)


def test_gradient_of_a_loop_through_a_host_op_runs_the_loop_again_for_its_stacks():
    x, w, loss = _loop_through_boolean_mask()
    grad = tf.gradients(loss, w)[0]
    xs = np.random.default_rng(0).standard_normal((5, 2))

    def f(wv):  # the NumPy reference
        h, total = np.zeros((1, 2)), 0.0
        for i in range(3):
            h = np.tanh(h @ wv + xs[i])
            total += (h * h).sum()
        return total
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        wv, got = s.run(w), s.run(grad, {x: xs})
    eps, want = 1e-6, np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            d = np.zeros((2, 2))
            d[i, j] = eps
            want[i, j] = (f(wv + d) - f(wv - d)) / (2 * eps)
    gradcheck.assert_close(got, want, kind="fd")


def test_a_loop_with_random_draws_is_not_run_twice_silently():
    x, w, loss = _loop_through_boolean_mask(random_inside=True)
    grad = tf.gradients(loss, w)[0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.UnimplementedError, match="pygrad would run it twice"):
            s.run(grad, {x: np.zeros((5, 2))})
