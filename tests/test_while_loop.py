"""tf.while_loop: one native run per Session.run, gradients through per-run stacks, nested loops,
conds inside loops, maximum_iterations, shape invariants and errors inside a loop."""
import sys

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


def _python_events(sess, fetch, feed):
    """(value, number of Python-level calls and returns, sys.setprofile's events) of sess.run."""
    events = [0]

    def count(frame, event, arg):
        events[0] += 1

    sys.setprofile(count)
    try:
        value = sess.run(fetch, feed)
    finally:
        sys.setprofile(None)
    return value, events[0]


def test_a_hundred_thousand_iterations_in_one_native_call():
    """The loop runs inside the plan: a run of 100000 trips makes exactly as many Python calls as a
    run of 10 (none per trip). The same count sees a py_func in the body, called once per trip."""
    n = tf.placeholder(tf.int32, [])
    _, s = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + 1.0), [0, tf.constant(0.0, tf.float64)])
    _, t = tf.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, tf.reshape(tf.py_func(
        lambda v: v + 1.0, [t], tf.float64), [])), [0, tf.constant(0.0, tf.float64)])
    with tf.Session() as sess:
        sess.run(s, {n: 1}), sess.run(t, {n: 1})  # builds the plans
        (short, few), (long, many) = (_python_events(sess, s, {n: trips}) for trips in (10, 100000))
        assert (short, long) == (10.0, 100000.0)
        assert few == many
        (short, few), (long, many) = (_python_events(sess, t, {n: trips}) for trips in (10, 20))
        assert (short, long) == (10.0, 20.0)
        assert many - few >= 10  # at least one Python call per trip of the py_func loop


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


def _loop_results_and_steps(build, monkeypatch, elide, passes=("elide_loop_copies",)):
    """The values `build()` fetches, and the plan's kernels, with the loop passes on or off."""
    from pygrad import fusion, lowering, passes as plan_passes
    from pygrad.session_store import SessionStore
    if not elide:
        for name in passes:
            monkeypatch.setattr(plan_passes, name, lambda program, fetched: None)
    g = tf.Graph()
    with g.as_default():
        fetches = build()
        run = lowering.compile_run(fetches, [], [], SessionStore(g))
        with tf.Session() as sess:
            values = sess.run(fetches)
    for name in passes:
        monkeypatch.setattr(plan_passes, name, getattr(fusion, name))
    return values, run.plan.num_steps


@pytest.mark.parametrize("case", ["accumulate", "fibonacci", "read_after_update", "other_var_reads_it",
                                  "gradient"])
def test_loop_copies_elided_only_where_the_same(case, monkeypatch):
    """A loop variable's new value is written into its buffer directly (no copy at the end of the
    iteration) when nothing in between reads the variable; swapped variables, a variable read after
    its update and one read by another variable's update keep their copies, and every case gives
    the values of the loop without the elision (and NumPy's)."""
    x = np.arange(1, 7, dtype=np.float64)

    def build():
        xs = tf.constant(x)
        if case == "accumulate":  # acc + x_i each iteration: the add writes acc in place
            _, acc = tf.while_loop(lambda i, a: i < 6, lambda i, a: (i + 1, a + xs[i] * xs),
                                   [0, tf.zeros([6], tf.float64)])
            return [acc]
        if case == "fibonacci":  # (a, b) -> (b, a + b)
            _, a, b = tf.while_loop(lambda i, a, b: i < 10, lambda i, a, b: (i + 1, b, a + b),
                                    [0, tf.constant(x), tf.constant(x * 2)])
            return [a, b]
        if case == "read_after_update":  # a new = a + 1, b new = a * 3 (reads the old a after a's add)
            _, a, b = tf.while_loop(lambda i, a, b: i < 4, lambda i, a, b: (i + 1, a + 1.0, a * 3.0 + b),
                                    [0, tf.constant(x), tf.zeros([6], tf.float64)])
            return [a, b]
        if case == "other_var_reads_it":  # b's update reads a, computed after a's
            _, a, b = tf.while_loop(lambda i, a, b: i < 4, lambda i, a, b: (i + 1, tf.tanh(a), b + a),
                                    [0, tf.constant(x / 10), tf.zeros([6], tf.float64)])
            return [a, b]
        w = tf.constant(x / 10)
        _, h = tf.while_loop(lambda i, h: i < 5, lambda i, h: (i + 1, tf.tanh(h * w + 0.1)), [0, tf.constant(x / 7)])
        return tf.gradients(tf.reduce_sum(h * h), [w])

    on, steps_on = _loop_results_and_steps(build, monkeypatch, True)
    off, steps_off = _loop_results_and_steps(build, monkeypatch, False)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)
    if case == "accumulate":
        np.testing.assert_allclose(on[0], x.sum() * x)
        assert steps_on < steps_off
    if case == "fibonacci":
        a, b = x, x * 2
        for _ in range(10):
            a, b = b, a + b
        np.testing.assert_array_equal(on[0], a)
        np.testing.assert_array_equal(on[1], b)
    if case == "read_after_update":
        a, b = x.copy(), np.zeros(6)
        for _ in range(4):
            a, b = a + 1, a * 3 + b
        np.testing.assert_array_equal(on[0], a)
        np.testing.assert_array_equal(on[1], b)
    if case == "other_var_reads_it":
        a, b = x / 10, np.zeros(6)
        for _ in range(4):
            a, b = np.tanh(a), b + a
        np.testing.assert_allclose(on[0], a, rtol=1e-15)
        np.testing.assert_allclose(on[1], b, rtol=1e-15)
    if case == "gradient":
        assert steps_on < steps_off  # the gradient loop's sum of dw is updated in place


def test_tensor_array_read_gradients_accumulate_in_place(monkeypatch):
    """The gradient of a loop reading one TensorArray row per step adds each row into the array's
    gradient in place (no [time, ...] array of zeros per step): the plan is shorter and the
    gradient the same, bitwise, as without the rewrite, and as NumPy's."""
    x = np.random.default_rng(0).standard_normal((7, 3, 4))
    w = np.random.default_rng(1).standard_normal((4, 4)) / 2

    def build():
        xs = tf.constant(x)
        wt = tf.constant(w)
        ta = tf.TensorArray(tf.float64, size=7).unstack(xs)
        _, h = tf.while_loop(lambda i, h: i < 7, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, wt) + ta.read(i))),
                             [0, tf.zeros([3, 4], tf.float64)])
        return tf.gradients(tf.reduce_sum(h * h), [xs, wt])

    on, steps_on = _loop_results_and_steps(build, monkeypatch, True)
    off, steps_off = _loop_results_and_steps(build, monkeypatch, False, ("accumulate_read_gradients",))
    assert steps_on < steps_off  # fill + ta_write + add became ta_write (accumulate)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)
    hs = [np.zeros((3, 4))]
    for t in range(7):
        hs.append(np.tanh(hs[-1] @ w + x[t]))
    dh, dx, dw = 2 * hs[-1], np.zeros_like(x), np.zeros_like(w)
    for t in reversed(range(7)):
        dz = dh * (1 - hs[t + 1] ** 2)
        dx[t], dw, dh = dz, dw + hs[t].T @ dz, dz @ w.T
    np.testing.assert_allclose(on[0], dx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(on[1], dw, rtol=1e-12, atol=1e-14)
