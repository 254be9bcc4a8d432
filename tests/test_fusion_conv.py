"""Epilogue fusion (pygrad/fusion.py, fuse_epilogues): conv2d + bias add + relu become one step when nothing else
reads the intermediates; the values and gradients are those of the unfused ops, which run when the
intermediates are fetched."""
import numpy as np
import pytest

import pygrad as tf


def _kernels(sess):
    """The kernels of the plan of the last signature run (the plan cache keeps insertion order)."""
    compiled = list(sess.plans.values())[-1]
    return [op.type for op in compiled.step_ops]


def _net(rng, bias_add="add"):
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    w = tf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    b = tf.Variable(rng.standard_normal(4).astype(np.float32))
    conv = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
    pre = conv + b if bias_add == "add" else b + conv if bias_add == "radd" else tf.nn.bias_add(conv, b)
    return x, w, b, conv, pre, tf.nn.relu(pre)


@pytest.mark.parametrize("bias_add", ["add", "radd", "bias_add"])
def test_conv_bias_relu_is_one_step_with_the_same_values(bias_add):
    rng = np.random.default_rng(0)
    x, w, b, conv, pre, y = _net(rng, bias_add)
    xv = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fused = sess.run(y, {x: xv})
        kernels = _kernels(sess)
        assert kernels.count("Conv2D") == 1 and "Relu" not in kernels and "Add" not in kernels \
            and "BiasAdd" not in kernels, kernels
        convv, prev, unfused = sess.run([conv, pre, y], {x: xv})  # fetched: nothing fuses
        assert "Relu" in _kernels(sess)
    np.testing.assert_allclose(fused, unfused, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(unfused, np.maximum(prev, 0))
    assert (prev < 0).any()


def test_conv_relu_and_conv_bias_alone():
    rng = np.random.default_rng(1)
    x, w, b, conv, pre, _ = _net(rng)
    relu_only, bias_only = tf.nn.relu(conv), conv + b
    xv = rng.standard_normal((3, 8, 8, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        r = sess.run(relu_only, {x: xv})
        assert _kernels(sess) == ["Conv2D"]
        s = sess.run(bias_only, {x: xv})
        assert _kernels(sess) == ["Conv2D"]
        c = sess.run(conv, {x: xv})
    np.testing.assert_allclose(r, np.maximum(c, 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s, c + _initial(b), rtol=1e-6, atol=1e-6)


def _initial(v):
    with tf.Session() as s:
        s.run(v.initializer)
        return s.run(v)


def test_training_step_fuses_and_matches_the_unfused_gradients():
    """Relu's gradient reads its output, which the fused step writes: the step still fuses, and
    the gradients equal those of a run that fetches the intermediates (and so does not fuse)."""
    rng = np.random.default_rng(2)
    x, w, b, conv, pre, y = _net(rng)
    loss = tf.reduce_sum(y * y)
    gw, gb = tf.gradients(loss, [w, b])
    xv = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fused = sess.run([gw, gb], {x: xv})
        assert "Relu" not in _kernels(sess)
        unfused = sess.run([gw, gb, pre, conv], {x: xv})[:2]
        assert "Relu" in _kernels(sess)
    for f, u in zip(fused, unfused):
        np.testing.assert_allclose(f, u, rtol=1e-5, atol=1e-5)


def test_fusion_inside_a_cond_keeps_the_jumps_right():
    rng = np.random.default_rng(3)
    x, w, b, conv, pre, y = _net(rng)
    flag = tf.placeholder(tf.bool, [])
    out = tf.cond(flag, lambda: tf.nn.relu(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") + b),
                  lambda: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") * 2.0)
    total = tf.reduce_sum(out) + tf.reduce_sum(y)
    xv = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        c, yv = sess.run([conv, y], {x: xv})
        for f in (True, False):
            want = (np.maximum(c + _initial(b), 0) if f else 2 * c).sum() + yv.sum()
            np.testing.assert_allclose(sess.run(total, {x: xv, flag: f}), want, rtol=1e-5)
