"""Values of constants computed once, when the plan is made (pygrad/fold_constants.py): the steps
fold_constants takes out, and those it leaves; fold_batch_norms' filters and their values."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import errors, passes


def _last_plan(sess):
    return list(sess.plans.values())[-1]


def _step_ops(sess):
    """The op types of the steps of the last signature's plan."""
    return [op.type for op in _last_plan(sess).step_ops]


@pytest.fixture
def unfolded(monkeypatch):
    """Runs fn(), which builds and runs a graph, with neither folding pass; returns its result."""
    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(passes, "fold_constants", lambda program, fetched: None)
            m.setattr(passes, "fold_batch_norms", lambda program: None)
            return fn()
    return run


def _chain():
    """(x, y): y of a placeholder x and a chain of ops on constants alone, of several kernels."""
    rng = np.random.default_rng(0)
    a = tf.constant(rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32))
    b = tf.constant(rng.standard_normal((4, 5)).astype(np.float32))
    c = tf.matmul(tf.transpose(tf.exp(a) * 0.5), tf.ones([3, 5]))  # [4, 5]
    d = tf.concat([c, b], axis=0)  # [8, 5]
    e = tf.gather(tf.reduce_sum(d, axis=1), [0, 2, 7]) + tf.cast(tf.one_hot([1, 0, 2], 3)[:, 0], tf.float32)
    x = tf.placeholder(tf.float32, [3])
    return x, x * tf.math.rsqrt(tf.abs(e) + 1e-3), (a, b)


def test_a_chain_of_constants_becomes_one_value_bitwise_that_of_its_steps(unfolded):
    def run():
        with tf.Graph().as_default():
            x, y, (a, b) = _chain()
            with tf.Session() as sess:
                return sess.run(y, {x: [1.0, -2.0, 3.0]}), _step_ops(sess), sess.run([a, b])

    want, unfolded_ops, (av, bv) = unfolded(run)
    assert len(unfolded_ops) >= 8, unfolded_ops
    got, ops, _ = run()
    assert ops == ["Mul"], ops  # every step of constants alone ran when the plan was made
    np.testing.assert_array_equal(got, want)
    c = np.exp(av).T * np.float32(0.5) @ np.ones((3, 5), np.float32)
    e = np.concatenate([c, bv]).sum(1)[[0, 2, 7]] + np.array([0, 1, 0], np.float32)
    np.testing.assert_allclose(got, np.array([1, -2, 3]) / np.sqrt(np.abs(e) + 1e-3), rtol=1e-5)


def test_a_step_that_fails_is_left_to_fail_at_its_run_and_the_others_fold():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        table = tf.exp(tf.constant([1.0, 2.0, 3.0]))
        bad = tf.gather(table, tf.constant([0, 5]), name="bad_gather")
        good = x + tf.sqrt(tf.constant([4.0, 9.0]))
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="bad_gather"):
                sess.run(bad + x, {x: [1.0, 1.0]})
            np.testing.assert_array_equal(sess.run(good, {x: [1.0, 1.0]}), [3.0, 4.0])  # the session goes on
            assert _step_ops(sess) == ["AddV2"] or _step_ops(sess) == ["Add"], _step_ops(sess)
            both = sess.run(tf.stack([good, x]), {x: [0.0, 0.0]})
            np.testing.assert_array_equal(both, [[2.0, 3.0], [0.0, 0.0]])
            with pytest.raises(errors.InvalidArgumentError, match="bad_gather"):
                sess.run([good, bad], {x: [1.0, 1.0]})  # the sqrt folds; the gather stays and fails
            assert "Sqrt" not in _step_ops(sess) and "GatherV2" in _step_ops(sess), _step_ops(sess)


def test_a_value_much_larger_than_its_constants_stays_a_step_and_a_small_one_folds():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [512, 512])
        big = x + tf.tile(tf.constant([[2.0]]), [512, 512])  # 1 MB of a 4-byte constant: made at each run
        small = x[:4, 0] + tf.tile(tf.constant([2.0]), [4])
        with tf.Session() as sess:
            xv = np.ones((512, 512), np.float32)
            np.testing.assert_array_equal(sess.run(big, {x: xv}), xv + 2)
            assert "Tile" in _step_ops(sess)
            np.testing.assert_array_equal(sess.run(small, {x: xv}), [3.0] * 4)
            assert "Tile" not in _step_ops(sess)


def test_variables_random_ops_and_fetched_values_are_not_folded():
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0])
        scaled = tf.exp(tf.constant([0.0, 1.0])) * v
        noise = tf.random_uniform([3], seed=1) * tf.exp(tf.constant(0.0))
        const = tf.exp(tf.constant([0.0, 1.0]))
        with tf.Session() as sess:
            sess.run(v.initializer)
            np.testing.assert_allclose(sess.run(scaled), [1.0, 2 * np.e], rtol=1e-6)
            sess.run(v.assign([3.0, 3.0]))
            np.testing.assert_allclose(sess.run(scaled), [3.0, 3 * np.e], rtol=1e-6)
            assert not np.array_equal(sess.run(noise), sess.run(noise))
            first = sess.run(const)
            first[0] = 42.0  # a fetched array is the caller's: the plan's value stays
            np.testing.assert_allclose(sess.run(const), [1.0, np.e], rtol=1e-6)


# ---------------------------------------------------------------- fold_batch_norms


def _frozen_bn(kind, rng, variance=None, filter_variable=False):
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    shape = (3, 3, 3, 4) if kind == "conv2d" else (3, 3, 3, 2)
    init = rng.standard_normal(shape).astype(np.float32)
    w = tf.Variable(init) if filter_variable else tf.constant(init)
    conv = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") if kind == "conv2d" else \
        tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "SAME")
    channels = conv.shape[-1].value
    gamma, beta, mean = (rng.uniform(-2, 2, channels).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.1, 1.0, channels).astype(np.float32) if variance is None else variance
    y = tf.nn.relu(tf.nn.fused_batch_norm(conv, gamma, beta, mean, var, epsilon=1e-3, is_training=False)[0])
    want = lambda xv, wv: np.maximum(_conv64(kind, xv, wv) * (gamma / np.sqrt(var.astype(np.float64) + 1e-3))  # noqa: E731
                                     + beta - mean * (gamma / np.sqrt(var.astype(np.float64) + 1e-3)), 0)
    return x, w, y, init, want


def _conv64(kind, x, w):
    """A SAME 3x3 convolution (or depthwise, multiplier 2) in float64, by its definition."""
    x = np.pad(x.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)])
    n, h, wd = x.shape[0], x.shape[1] - 2, x.shape[2] - 2
    patches = np.stack([x[:, i:i + h, j:j + wd] for i in range(3) for j in range(3)], axis=3)  # [n,h,w,9,c]
    w = w.astype(np.float64).reshape(9, *w.shape[2:])
    if kind == "conv2d":
        return np.einsum("nhwkc,kco->nhwo", patches, w)
    return np.einsum("nhwkc,kcm->nhwcm", patches, w).reshape(n, h, wd, -1)


@pytest.mark.parametrize("kind", ["conv2d", "depthwise"])
def test_a_frozen_batch_norm_is_folded_into_the_filter(kind, unfolded):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)

    def run():
        with tf.Graph().as_default():
            x, w, y, init, want = _frozen_bn(kind, np.random.default_rng(2))
            with tf.Session() as sess:
                got = sess.run(y, {x: xv})
                consts = _last_plan(sess).consts
                other = sess.run(y, {x: xv[:1]})  # a second signature shares the folded filter
                return got, other, consts, _last_plan(sess).consts, sess._store.folded, want(xv, init)

    got, other, consts, other_consts, folded, want = run()
    base, _, base_consts, _, _, _ = unfolded(run)
    assert len(folded) == 1
    (_, scaled, shift), = folded.values()
    assert any(c is scaled for c in consts) and any(c is scaled for c in other_consts)
    assert not any(c.shape == scaled.shape and np.array_equal(c, scaled) for c in base_consts)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    np.testing.assert_allclose(got, base, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert not np.array_equal(got, base)  # the folded products round differently
    np.testing.assert_array_equal(other, got[:1])
    assert (want == 0).any() and (want > 0).any()


def test_a_variable_filter_or_an_infinite_scale_is_not_folded(unfolded):
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    zero_variance = np.array([0.5, -1e-3, 0.5, 0.5], np.float32)  # rsqrt(0): an infinite scale

    def run(**kw):
        with tf.Graph().as_default():
            x, w, y, init, want = _frozen_bn("conv2d", np.random.default_rng(4), **kw)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                return sess.run(y, {x: xv}), sess._store.folded

    for kw in ({"filter_variable": True}, {"variance": zero_variance}):
        got, folded = run(**kw)
        base, _ = unfolded(lambda: run(**kw))
        assert not folded
        np.testing.assert_array_equal(got, base)
