"""tf.while_loop: one native run per Session.run, gradients through per-run stacks, nested loops,
conds inside loops, maximum_iterations, shape invariants and errors inside a loop."""
import time

import numpy as np
import pytest

import pygrad as tf
from gradcheck import check_grad


def test_forward_against_numpy():
    x = tf.placeholder(tf.float64, [3])
    i, s = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * 1.5 + x), [0, tf.zeros([3], tf.float64)])
    xv = np.array([1.0, 2.0, -3.0])
    ref = np.zeros(3)
    for _ in range(5):
        ref = ref * 1.5 + xv
    with tf.Session() as sess:
        iv, sv = sess.run([i, s], {x: xv})
    assert iv == 5
    np.testing.assert_allclose(sv, ref)


def test_single_loop_var_is_unpacked_and_maximum_iterations_caps():
    y = tf.while_loop(lambda v: v < 100, lambda v: v + 1, [tf.constant(0)], maximum_iterations=7)
    z = tf.while_loop(lambda v: v < 3, lambda v: v + 1, [tf.constant(0)], maximum_iterations=7)
    with tf.Session() as sess:
        assert sess.run([y, z]) == [7, 3]


def test_body_reads_a_variable_each_iteration():
    v = tf.Variable(2.0)
    _, r = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * v), [0, tf.constant(1.0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(r) == 8.0


def test_gradient_against_finite_differences():
    def fn(x, w):
        _, h = tf.while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, tf.tanh(h * w + x)), [0, x])
        return h
    check_grad(fn, [np.array([0.3, -0.5]), np.array([0.8, 1.1])])


def test_nested_loops_and_a_cond_inside_gradients():
    def fn(x, w):
        def inner(k, a):
            return k + 1, tf.cond(k < 1, lambda: a * w, lambda: tf.tanh(a))

        def outer(j, a):
            _, a2 = tf.while_loop(lambda k, a: k < 3, inner, [0, a * 0.9 + w])
            return j + 1, a2
        return tf.while_loop(lambda j, a: j < 3, outer, [0, x])[1]
    check_grad(fn, [np.array([0.3, -0.5]), np.array([0.8, 1.1])])


def test_a_hundred_thousand_iterations_in_one_native_call():
    _, s = tf.while_loop(lambda i, s: i < 100000, lambda i, s: (i + 1, s + 1.0), [0, tf.constant(0.0, tf.float64)])
    with tf.Session() as sess:
        sess.run(s)
        t0 = time.perf_counter()
        assert sess.run(s) == 100000.0
        assert time.perf_counter() - t0 < 1.0


def test_backward_over_1000_iterations_with_the_trip_count_fed():
    x = tf.placeholder(tf.float64, [64])
    n = tf.placeholder(tf.int32, [])
    _, h = tf.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, tf.tanh(h)),
                         [0, x])
    g = tf.gradients(tf.reduce_sum(h), x)[0]
    xv = np.linspace(-1, 1, 64)
    with tf.Session() as sess:
        for trips in (10, 1000):
            ref, d = xv.copy(), np.ones(64)
            states = []
            for _ in range(trips):
                states.append(ref)
                ref = np.tanh(ref)
            for st in reversed(states):
                d = d * (1 - np.tanh(st) ** 2)
            np.testing.assert_allclose(sess.run(g, {x: xv, n: trips}), d, rtol=1e-10)


def test_stacks_kept_between_runs_start_empty_after_a_failed_run():
    """The plan keeps a run's stacks (emptied) for the next run: a run that fails inside the loop,
    with values pushed, and a run of fewer iterations than the last, still give the exact gradient."""
    x = tf.placeholder(tf.float64, [8])
    n = tf.placeholder(tf.int32, [])
    d = tf.placeholder(tf.int32, [])
    _, _, h = tf.while_loop(lambda i, k, h: i < n, lambda i, k, h: (i + 1, tf.floordiv(k, d), tf.tanh(h)),
                            [0, tf.constant(7), x])
    g = tf.gradients(tf.reduce_sum(h), x)[0]
    xv = np.linspace(-2, 2, 8)

    def reference(trips):
        ref, dx = xv.copy(), np.ones(8)
        states = []
        for _ in range(trips):
            states.append(ref)
            ref = np.tanh(ref)
        for st in reversed(states):
            dx = dx * (1 - np.tanh(st) ** 2)
        return dx

    with tf.Session() as sess:
        for trips, divisor in ((50, 1), (50, 0), (5, 1), (50, 1), (3, 0), (1, 1)):
            if divisor == 0:
                with pytest.raises(tf.errors.InvalidArgumentError, match="FloorDiv"):
                    sess.run(g, {x: xv, n: trips, d: divisor})
            else:
                np.testing.assert_allclose(sess.run(g, {x: xv, n: trips, d: divisor}), reference(trips), rtol=1e-12)


def test_shape_change_without_invariants_is_a_value_error():
    with pytest.raises(ValueError, match=r"While .*enters the loop with shape \(2,\), but has shape \(4,\)"
                                         r"[\s\S]*test_while_loop.py"):
        tf.while_loop(lambda x: tf.constant(True), lambda x: tf.concat([x, x], 0), [tf.zeros([2])])


def test_shape_change_with_invariants_is_refused_when_the_plan_is_built():
    _, x = tf.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, tf.concat([x, x], 0)), [0, tf.zeros([2])],
                         shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    assert x.shape.as_list() == [None]
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="on entry and.*after one iteration"):
            sess.run(x)


def test_an_error_inside_the_loop_names_the_op_and_line():
    d = tf.placeholder(tf.int32, [])
    _, r = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.floordiv(a, d)), [0, tf.constant(7)])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"FloorDiv[\s\S]*test_while_loop.py"):
            sess.run(r, {d: 0})
        assert sess.run(r, {d: 1}) == 7


def test_matches_tensorflow():
    ttf = pytest.importorskip("tensorflow").compat.v1
    ttf.disable_v2_behavior()
    rng = np.random.RandomState(1)
    xv, w0 = rng.randn(2, 3).astype(np.float32), rng.randn(3, 3).astype(np.float32) * 0.5
    results = []
    for lib in (tf, ttf):
        g = lib.Graph()
        with g.as_default():
            x = lib.placeholder(lib.float32, [2, 3])
            w = lib.Variable(w0)
            _, h = lib.while_loop(lambda i, h: i < 6, lambda i, h: [i + 1, lib.tanh(lib.matmul(h, w) + x)], [0, x],
                                  maximum_iterations=5)
            grads = lib.gradients(lib.reduce_sum(h * h), [x, w])
            with lib.Session(graph=g) as s:
                s.run(lib.global_variables_initializer())
                results.append(s.run([h] + grads, {x: xv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
