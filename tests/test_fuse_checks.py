"""reduce_all(is_finite(x)), and the multiply before it, as one all_finite step (pygrad/fuse_checks.py):
where it applies, where it does not, and the same values and training as the unfused steps."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import _C

from plan_testing import plan_steps, without_pass


@pytest.fixture
def unfused(monkeypatch):
    return without_pass(monkeypatch, "fuse_finite_checks")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_check_of_a_fed_array_is_one_step(dtype):
    with tf.Graph().as_default():
        x = tf.placeholder(dtype, [None, 7])
        ok = tf.reduce_all(tf.is_finite(x))
        with tf.Session() as sess:
            for value, want in [(np.ones((5000, 7)), True), (np.zeros((0, 7)), True)]:
                assert sess.run(ok, {x: value.astype(dtype)}) == want
            assert plan_steps(sess) == ["IsFinite+All"]
            for bad in (np.inf, -np.inf, np.nan):
                value = np.ones((5000, 7), dtype)
                value[4321, 3] = bad
                assert not sess.run(ok, {x: value})


def test_an_unscaling_multiply_and_its_check_are_one_step_with_the_same_values(unfused):
    rng = np.random.default_rng(0)
    g = rng.standard_normal((300, 70)).astype(np.float32)

    def run():
        with tf.Graph().as_default():
            x, scale = tf.placeholder(tf.float32, [300, 70]), tf.placeholder(tf.float32, [])
            unscaled = x * (1.0 / scale)
            left = (1.0 / scale) * x  # the scale first
            ok = tf.reduce_all(tf.is_finite(unscaled))
            ok_left = tf.reduce_all(tf.is_finite(left))
            with tf.Session() as sess:
                out = [sess.run([unscaled, ok, left, ok_left], {x: g, scale: s}) for s in (512.0, 1e-38, 0.0)]
                return out, plan_steps(sess)

    fused, steps = run()
    plain, plain_steps = unfused(run)
    assert steps.count("Mul+IsFinite+All") == 2, steps
    assert "IsFinite" in plain_steps and not any("+IsFinite" in s for s in plain_steps), plain_steps
    for f, p in zip(fused, plain):
        for a, b in zip(f, p):
            np.testing.assert_array_equal(a, b)
    assert [f[1] for f in fused] == [True, False, False]  # 1 / 1e-38 overflows the products; 1 / 0 is inf


def test_a_check_whose_values_are_read_elsewhere_is_left_alone():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 3])
        finite = tf.is_finite(x)
        rows = tf.reduce_all(finite, axis=1)  # four values, not one
        with tf.Session() as sess:
            value = np.ones((4, 3), np.float32)
            value[2, 1] = np.nan
            np.testing.assert_array_equal(sess.run(rows, {x: value}), [True, True, False, True])
            assert "IsFinite+All" not in plan_steps(sess)
            both = sess.run([tf.reduce_all(finite), finite], {x: value})  # the bools fetched
            assert not both[0] and not both[1][2, 1]
            assert "IsFinite+All" not in plan_steps(sess)


def test_dynamic_loss_scaling_trains_as_unfused(unfused):
    """The TF1 mixed-precision optimizer: its gradients' checks fuse, and training (with a step whose
    gradient overflows, skipped, and the scale halved) gives bitwise the weights of the unfused run."""
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((32, 20)).astype(np.float32) for _ in range(4)]
    batches[2][0, 0] = 1e30  # the scaled loss overflows: the step is skipped

    def run():
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [32, 20])
            w = tf.Variable(np.random.default_rng(2).standard_normal((20, 5)).astype(np.float32) * 0.1)
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
            opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(tf.train.AdamOptimizer(0.01), "dynamic")
            train = opt.minimize(loss)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for b in batches:
                    sess.run(train, {x: b})
                steps = plan_steps(sess)
                return sess.run([w, opt._loss_scale()]), steps

    (w, scale), steps = run()
    (w_plain, scale_plain), _ = unfused(run)
    assert any(s.startswith("Mul+IsFinite+All") for s in steps), steps
    np.testing.assert_array_equal(w, w_plain)
    assert scale == scale_plain == 2 ** 14


def test_the_kernel_refuses_bad_operands():
    x, ok = np.ones(4, np.float32), np.zeros((), bool)
    with pytest.raises(ValueError, match="all_finite: takes"):
        _C.call("all_finite", [x, x, x], [ok])
    with pytest.raises(ValueError, match="the scale must have one element"):
        _C.call("all_finite", [x, x], [np.empty_like(x), ok])
    with pytest.raises(ValueError, match="x .* and y .* must have one shape"):
        _C.call("all_finite", [x, np.ones((), np.float32)], [np.empty(5, np.float32), ok])
    with pytest.raises(TypeError):
        _C.call("all_finite", [x], [np.zeros((), np.float32)])
