"""tf.cond and tf.case: only the taken branch runs, side effects included; gradients are conds."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import check_grad

X = np.array([0.5, -1.0, 2.0])


def test_only_the_taken_branch_runs_and_its_side_effects_happen():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])
    z = tf.cond(p, lambda: tf.assign_add(v, 1.0), lambda: tf.identity(v))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(z, {p: False}) == 0.0 and s.run(v) == 0.0
        assert s.run(z, {p: True}) == 1.0 and s.run(v) == 1.0
        assert s.run(z, {p: False}) == 1.0 and s.run(v) == 1.0


def test_an_integer_division_by_zero_in_the_untaken_branch_does_not_run():
    a = tf.placeholder(tf.int32, [])
    b = tf.placeholder(tf.int32, [])
    y = tf.cond(tf.equal(b, 0), lambda: a, lambda: tf.floordiv(a, b))
    with tf.Session() as s:
        assert s.run(y, {a: 7, b: 0}) == 7 and s.run(y, {a: 7, b: 2}) == 3


def test_nested_structures_and_singleton_unpacking():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(X, tf.float64)
    single = tf.cond(p, lambda: [x * 2.0], lambda: [x])
    nested = tf.cond(p, lambda: {"a": x, "b": (x + 1.0, x * 0.0)}, lambda: {"a": -x, "b": (x, x)})
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(single, {p: True}), X * 2)
        r = s.run(nested, {p: False})
        np.testing.assert_allclose(r["a"], -X)
        np.testing.assert_allclose(r["b"][0], X)


@pytest.mark.parametrize("taken", [True, False])
def test_gradient_against_finite_differences(taken):
    def fn(x, w):
        return tf.cond(tf.constant(taken), lambda: tf.tanh(x * w), lambda: x * x * w)
    check_grad(fn, [X, np.array([0.3, 0.7, -0.2])])


def test_case_takes_the_first_true_pred_else_default():
    i = tf.placeholder(tf.int32, [])
    y = tf.case([(tf.less(i, 1), lambda: tf.constant(10)), (tf.less(i, 3), lambda: tf.constant(20))],
                default=lambda: tf.constant(30))
    with tf.Session() as s:
        assert [s.run(y, {i: k}) for k in (0, 2, 5)] == [10, 20, 30]


def test_bad_inputs():
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match="If .*pred must be a bool tensor"):
        tf.cond(x, lambda: x, lambda: x)
    with pytest.raises(TypeError, match=r"If .*dtype float32.*int32[\s\S]*test_cond.py"):
        tf.cond(tf.constant(True), lambda: x, lambda: tf.constant(1))
    with pytest.raises(ValueError, match="same structure"):
        tf.cond(tf.constant(True), lambda: (x, x), lambda: x)


def test_matches_tensorflow():
    ttf = pytest.importorskip("tensorflow").compat.v1
    ttf.disable_v2_behavior()
    w0 = np.array([0.3, 0.7, -0.2], np.float32)
    results = []
    for lib in (tf, ttf):
        g = lib.Graph()
        with g.as_default():
            p = lib.placeholder(lib.bool, [])
            x = lib.constant(X.astype(np.float32))
            w = lib.Variable(w0)
            y = lib.cond(p, lambda: lib.tanh(x * w), lambda: x * x * w)
            grads = lib.gradients(lib.reduce_sum(y * y), [x, w])
            with lib.Session(graph=g) as s:
                s.run(lib.global_variables_initializer())
                results.append([s.run([y] + grads, {p: v}) for v in (True, False)])
    for a, b in zip(np.concatenate([np.ravel(v) for r in results[0] for v in r]),
                    np.concatenate([np.ravel(v) for r in results[1] for v in r])):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b))


@pytest.mark.parametrize("pred", [True, False])
def test_ops_inside_wait_for_control_inputs_made_outside(pred):
    """An op of a loop body or a branch that waits for an update made outside them: the update runs
    before the loop or cond (TF1 brings the control input into the frame), whichever branch runs."""
    v = tf.Variable(1.0, name="v")
    bump = tf.assign_add(v, 1.0, name="bump")

    def body(i, s):
        with tf.control_dependencies([bump]):
            return i + 1, s + tf.identity(v)

    total = tf.while_loop(lambda i, s: i < 3, body, [0, 0.0])[1]
    p = tf.placeholder(tf.bool, [])

    def waits():
        with tf.control_dependencies([bump]):
            return tf.identity(v) * 10.0

    branch = tf.cond(p, waits, lambda: tf.constant(-1.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(total) == 6.0 and sess.run(v) == 2.0  # TF gives 6.0: the body reads v after the bump
        assert sess.run(branch, {p: pred}) == (30.0 if pred else -1.0) and sess.run(v) == 3.0
