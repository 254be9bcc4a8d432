"""Epilogue fusion (pygrad/fusion.py, fuse_epilogues): conv2d + bias add + relu become one step when nothing else
reads the intermediates; the values and gradients are those of the unfused ops, which run when the
intermediates are fetched."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import passes


@pytest.fixture(autouse=True)
def without_elementwise_fusion(monkeypatch):
    """These tests name the steps their pass leaves apart, which the elementwise pass (tested in
    test_fuse_elementwise.py) would merge."""
    monkeypatch.setattr(passes, "fuse_elementwise", lambda program, fetched: None)


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


def _fused_ops(sess):
    """The op types of each step of the last signature's plan, with the ops fused into it."""
    compiled = list(sess.plans.values())[-1]
    return [[op.type] + [o.type for o in fused] for op, fused in zip(compiled.step_ops, compiled.step_fused)]


@pytest.mark.parametrize("kind", ["conv2d", "depthwise"])
@pytest.mark.parametrize("activation", [tf.nn.relu, tf.nn.relu6, None])
def test_inference_batch_norm_and_activation_join_the_convolution(kind, activation):
    """A frozen model's conv -> FusedBatchNorm (is_training=False) -> relu/relu6: the batch norm's
    multiply and add and the activation are done by the convolution's step, with the values of the
    unfused steps (which run when the intermediates are fetched) and of NumPy's batch norm. The
    filter is a constant: the scale is folded into it (fold_constants.py), which rounds differently."""
    rng = np.random.default_rng(4)
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    if kind == "conv2d":
        w = tf.constant(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
        conv = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
    else:
        w = tf.constant(rng.standard_normal((3, 3, 3, 2)).astype(np.float32) * 0.5)
        conv = tf.nn.depthwise_conv2d_native(x, w, strides=[1, 1, 1, 1], padding="SAME")
    channels = conv.shape[-1].value
    gamma, beta, mean = (rng.uniform(-2, 2, channels).astype(np.float32) for _ in range(3))
    variance = rng.uniform(0.1, 1.0, channels).astype(np.float32)
    bn = tf.nn.fused_batch_norm(conv, gamma, beta, mean, variance, epsilon=1e-3, is_training=False)[0]
    y = activation(bn) if activation else bn
    xv = rng.standard_normal((2, 8, 8, 3)).astype(np.float32) * 2
    with tf.Session() as sess:
        fused = sess.run(y, {x: xv})
        steps = _fused_ops(sess)
        first = {"conv2d": "Conv2D", "depthwise": "DepthwiseConv2dNative"}[kind]
        conv_step = next(s for s in steps if s[0] == first)
        assert conv_step.count("Mul") == 1 and conv_step.count("Add") == 1, steps
        if activation:
            assert {"Relu": tf.nn.relu, "Relu6": tf.nn.relu6}[conv_step[-1]] is activation, steps
            assert not any(s[0] in ("Relu", "Relu6") for s in steps), steps
        convv, unfused = sess.run([conv, y], {x: xv})
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-6 * np.abs(unfused).max())
    want = (convv - mean) * (gamma / np.sqrt(variance + 1e-3)) + beta
    want = np.maximum(want, 0) if activation else want
    want = np.minimum(want, 6) if activation is tf.nn.relu6 else want
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)
    if activation:
        assert (want == 0).any() and (activation is tf.nn.relu or (want == 6).any())


def test_residual_block_is_one_step_per_convolution():
    """ResNet v1's block end, relu(shortcut + batch_norm(conv(x))), with the shortcut a convolution
    the plan may order after it: the add and relu join the convolution's step, and the values are
    the unfused steps'."""
    rng = np.random.default_rng(5)
    x = tf.placeholder(tf.float32, [None, 6, 6, 8])
    w1, w2 = (tf.constant(rng.standard_normal((k, k, 8, 8)).astype(np.float32) * 0.3) for k in (3, 1))
    stats = [rng.uniform(0.5, 1.5, 8).astype(np.float32) for _ in range(4)]
    residual = tf.nn.fused_batch_norm(tf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME"), *stats, is_training=False)[0]
    shortcut = tf.nn.conv2d(x, w2, [1, 1, 1, 1], "SAME")
    y = tf.nn.relu(shortcut + residual)
    xv = rng.standard_normal((3, 6, 6, 8)).astype(np.float32)
    with tf.Session() as sess:
        fused = sess.run(y, {x: xv})
        steps = _fused_ops(sess)
        assert [s for s in steps if s[0] == "Relu" or (s[0] == "Conv2D" and "Relu" in s)] == \
            [["Conv2D", "Mul", "Add", "Add", "Relu"]], steps
        unfused = sess.run([y, residual, shortcut], {x: xv})[0]
        assert ["Relu"] in _fused_ops(sess)
    np.testing.assert_allclose(fused, unfused, rtol=1e-6, atol=1e-6)
    assert (unfused == 0).any() and (unfused > 0).any()


def test_sum_of_two_convolutions_joins_one_of_them():
    """conv(x, w1) + conv(x, w2): the add is either convolution's residual, and joins one only; with
    a batch norm after each (ResNet's projection shortcut), the other keeps its own."""
    rng = np.random.default_rng(6)
    x = tf.placeholder(tf.float32, [None, 6, 6, 4])
    a, b = (tf.nn.conv2d(x, tf.constant(rng.standard_normal((3, 3, 4, 4)).astype(np.float32)), [1, 1, 1, 1], "SAME")
            for _ in range(2))
    y = a + b
    xv = rng.standard_normal((2, 6, 6, 4)).astype(np.float32)
    stats = [rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(4)]
    bn_a, bn_b = (tf.nn.fused_batch_norm(t, *stats, is_training=False)[0] for t in (a, b))
    z = tf.nn.relu(bn_a + bn_b)
    with tf.Session() as sess:
        fused = sess.run(y, {x: xv})
        assert sorted(_fused_ops(sess)) == [["Conv2D"], ["Conv2D", "Add"]]
        av, bv = sess.run([a, b], {x: xv})
        fused_z = sess.run(z, {x: xv})
        assert sorted(s for s in _fused_ops(sess) if s[0] == "Conv2D") == \
            [["Conv2D", "Mul", "Add"], ["Conv2D", "Mul", "Add", "Add", "Relu"]], _fused_ops(sess)
        unfused_z = sess.run([z, bn_a, bn_b], {x: xv})[0]
    np.testing.assert_allclose(fused, av + bv, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fused_z, unfused_z, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind,pad,k,stride", [("conv2d", 1, 3, 2), ("conv2d", 3, 7, 2), ("depthwise", 1, 3, 2),
                                               ("conv2d", 2, 3, 1)])
def test_zero_pad_of_the_input_becomes_the_convolutions_padding(kind, pad, k, stride):
    """TF-Slim's conv2d_same (ResNet): tf.pad of height and width, then a VALID convolution. One
    step reads the unpadded input, with the values of the pad and convolution run apart (when the
    padded tensor is fetched)."""
    rng = np.random.default_rng(7)
    x = tf.placeholder(tf.float32, [None, 11, 10, 3])
    padded = tf.pad(x, [[0, 0], [pad, pad], [pad, pad], [0, 0]])
    w = tf.constant(rng.standard_normal((k, k, 3, 4 if kind == "conv2d" else 2)).astype(np.float32))
    conv = tf.nn.conv2d if kind == "conv2d" else tf.nn.depthwise_conv2d_native
    y = tf.nn.relu(conv(padded, w, [1, stride, stride, 1], "VALID"))
    xv = rng.standard_normal((2, 11, 10, 3)).astype(np.float32)
    with tf.Session() as sess:
        fused = sess.run(y, {x: xv})
        assert _fused_ops(sess) == [[{"conv2d": "Conv2D", "depthwise": "DepthwiseConv2dNative"}[kind], "Pad", "Relu"]]
        unfused = sess.run([y, padded], {x: xv})[0]
        assert ["Pad"] in _fused_ops(sess)
    np.testing.assert_allclose(fused, unfused, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("paddings,mode,value", [
    ([[0, 0], [1, 1], [1, 1], [0, 0]], "CONSTANT", 1.0),  # not zeros
    ([[0, 0], [1, 1], [1, 1], [1, 0]], "CONSTANT", 0.0),  # channels padded
    ([[1, 0], [1, 1], [1, 1], [0, 0]], "CONSTANT", 0.0),  # the batch padded
    ([[0, 0], [1, 1], [1, 1], [0, 0]], "REFLECT", 0.0),
    ([[0, 0], [3, 3], [0, 0], [0, 0]], "CONSTANT", 0.0),  # as much as the filter
])
def test_other_pads_stay_steps(paddings, mode, value):
    rng = np.random.default_rng(8)
    x = tf.placeholder(tf.float32, [2, 7, 7, 3])
    padded = tf.pad(x, paddings, mode=mode, constant_values=value)
    w = tf.constant(rng.standard_normal((3, 3, padded.shape[-1].value, 4)).astype(np.float32))
    y = tf.nn.conv2d(padded, w, [1, 1, 1, 1], "VALID")
    xv = rng.standard_normal((2, 7, 7, 3)).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run(y, {x: xv})
        assert ["Pad"] in _fused_ops(sess)
        pv = sess.run(padded, {x: xv})
    wv, (oh, ow), pv = w.op.attrs["value"].astype(np.float64), got.shape[1:3], pv.astype(np.float64)
    want = sum(np.einsum("nhwc,co->nhwo", pv[:, i:i + oh, j:j + ow], wv[i, j]) for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-5)


def test_an_assign_of_the_filter_between_the_parts_keeps_the_convolution_first():
    """The fused step runs where its last part ran. When the run also assigns the filter, after the
    convolution reads it (TF's order for a read that the write does not depend on) and before the
    scale the convolution's output is multiplied by (computed from the assign's result), the
    convolution reads the filter as it was: the group is not moved across the write."""
    rng = np.random.default_rng(9)
    x = tf.placeholder(tf.float32, [2, 5, 5, 3])
    w = tf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    conv = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    halve = tf.assign(w, w * 0.5)
    gamma = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    scale = tf.constant(gamma) + 0.0 * tf.reduce_sum(halve)
    y = tf.nn.relu(conv * scale + 0.25)
    xv = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        c = sess.run(conv, {x: xv})
        sess.run(tf.global_variables_initializer())
        got = sess.run(y, {x: xv})
        order = [s[0] for s in _fused_ops(sess)]
        assert order.index("Conv2D") < order.index("Assign"), _fused_ops(sess)
    np.testing.assert_allclose(got, np.maximum(c * gamma + 0.25, 0), rtol=1e-6, atol=1e-6)


def _identity_units(dtype, rng, units=2):
    """ResNet v1's identity-shortcut units: relu(x + bn(conv(relu(conv(x))))), x read by the first
    convolution and by the add."""
    x = tf.placeholder(dtype, [None, 6, 6, 8])
    h = x
    for _ in range(units):
        w1, w2 = (tf.constant(rng.standard_normal((k, k, 8, 8)).astype(dtype) * 0.3) for k in (1, 3))
        stats = [rng.uniform(0.5, 1.5, 8).astype(dtype) for _ in range(2)]
        inner = tf.nn.relu(tf.nn.conv2d(h, w1, [1, 1, 1, 1], "SAME"))
        h = tf.nn.relu(tf.nn.conv2d(inner, w2, [1, 1, 1, 1], "SAME") * stats[0] + stats[1] + h)
    return x, h


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_residual_nothing_reads_later_is_written_over(monkeypatch, dtype, threads):
    """A unit's output is written over its input (the residual) where no step reads that input
    after the unit's last convolution: oneDNN then adds it in place (float32), the im2col kernels
    from a copy (float64). The values are bitwise those of the plan that writes a new buffer; the
    first unit's input, a feed, is never written over, nor is anything by a fetched output."""
    from pygrad import fusion
    written_over, plain = [], fusion._write_over_residual

    def spy(steps, readers, kept_out, runs_at, at, ins, out, residual):
        before = out.buffer
        plain(steps, readers, kept_out, runs_at, at, ins, out, residual)
        if residual is not None:
            written_over.append(out.buffer is residual.buffer is not before)

    rng = np.random.default_rng(8)
    xv = rng.standard_normal((3, 6, 6, 8)).astype(dtype)
    old = tf.get_num_threads()
    tf.set_num_threads(threads)
    try:
        results = []
        for rewrite in (spy, lambda *args: None):
            monkeypatch.setattr(fusion, "_write_over_residual", rewrite)
            with tf.Graph().as_default():
                x, y = _identity_units(dtype, np.random.default_rng(9), units=3)
                with tf.Session() as sess:
                    results.append(sess.run(y, {x: xv}))
    finally:
        tf.set_num_threads(old)
    # over the feed: no; over the first unit's output: yes; the third unit's output is fetched: no
    assert written_over == [False, True, False], written_over
    np.testing.assert_array_equal(results[0], results[1])
    assert (results[0] > 0).any() and (results[0] == 0).any()


def test_a_fetched_residual_keeps_its_values():
    rng = np.random.default_rng(10)
    x, y = _identity_units(np.float32, rng)
    first = y.op.inputs[0].op.inputs[1]  # the second unit's residual: the first unit's output
    xv = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)
    with tf.Session() as sess:
        alone = sess.run(first, {x: xv})
        both = sess.run([y, first], {x: xv})
    np.testing.assert_array_equal(both[1], alone)


def test_a_residual_of_two_blocks_is_written_over_by_the_last_to_run():
    """r is the residual of two convolutions' blocks: the first block to run may not write over it,
    as the second reads it after; the second may. Values as when both outputs are fetched."""
    rng = np.random.default_rng(11)
    x = tf.placeholder(tf.float32, [None, 6, 6, 8])
    w = [tf.constant(rng.standard_normal((k, k, 8, 8)).astype(np.float32) * 0.3) for k in (1, 1, 3, 3)]
    r = tf.nn.relu(tf.nn.conv2d(x, w[0], [1, 1, 1, 1], "SAME"))
    p = tf.nn.relu(tf.nn.conv2d(x, w[1], [1, 1, 1, 1], "SAME"))
    a = tf.nn.relu(tf.nn.conv2d(p, w[2], [1, 1, 1, 1], "SAME") + r)
    b = tf.nn.relu(tf.nn.conv2d(p, w[3], [1, 1, 1, 1], "SAME") + r)
    y = a * 2.0 + b
    xv = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)
    with tf.Session() as sess:
        fused = sess.run(y, {x: xv})
        av, bv = sess.run([a, b], {x: xv})  # fetched: nothing is written over r
    np.testing.assert_allclose(fused, av * 2.0 + bv, rtol=1e-6, atol=1e-6)
