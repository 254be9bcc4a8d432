"""bfloat16 products (pygrad/bfloat16.py): the rounding against a NumPy rendering of AVX512-BF16's
conversion, bit for bit; the bfloat16 convolution and matrix-product kernels (oneDNN's and the
widened float32 fallback) against float64 products of the rounded operands; the plan pass (one copy
per operand shared by the products that read it, constants converted once, the epilogue kept);
the switches (ConfigProto's RewriterConfig, TF's rule against the process-wide switch) and a CPU
without bfloat16 instructions (a warning, float32 results). The training accuracy in bfloat16 is
benches/bench_bfloat16.py's."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pygrad as tf
import pygrad.bfloat16
from pygrad import _C, lowering, passes
from pygrad.bfloat16 import cpu_has_bfloat16, from_bfloat16, to_bfloat16
from pygrad.platform.config import RewriterConfig
from test_conv_onednn import EPS32, Conv

ml_dtypes = pytest.importorskip("ml_dtypes")  # NumPy's bfloat16, to hand the kernels bfloat16 arrays
needs_bf16 = pytest.mark.skipif(not cpu_has_bfloat16(), reason="this CPU has no AVX512-BF16 or AMX")


def rounded(a):
    """a's values rounded to bfloat16, as float32."""
    return from_bfloat16(to_bfloat16(a))


def as_bf16(a):
    """a rounded to bfloat16, as an ml_dtypes array the kernels take as bfloat16."""
    return to_bfloat16(a).view(ml_dtypes.bfloat16)


def bf16_config():
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 = RewriterConfig.ON
    return config


# ---- rounding

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40, 1.17549435e-38,
                    -1.17549435e-38, 3.4028235e38, -3.4028235e38, 3.3961776e38, 1.00390625, 1.01171875,
                    np.nextafter(np.float32(1.00390625), np.float32(2)), 65504.0, 2.0 ** -126], np.float32)


def _rounding_inputs(n):
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)  # every exponent, NaN payloads
    ties = (rng.integers(0, 2 ** 16, n // 4, dtype=np.uint32) << 16) | 0x8000  # exactly halfway
    return np.concatenate([SPECIAL, bits.view(np.float32), ties.view(np.float32)])


def test_numpy_rounding_is_ties_to_even_with_subnormals_to_zero():
    bits = to_bfloat16(SPECIAL)
    assert list(bits[:10]) == [0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x0000, 0x8000]
    assert bits[12] == 0x7F80 and bits[13] == 0xFF80  # float32's largest rounds up to infinity
    assert bits[15] == 0x3F80 and bits[16] == 0x3F82  # halfway: to the even neighbour
    assert bits[17] == 0x3F81  # just above halfway: up
    normal = np.isfinite(SPECIAL) & (np.abs(SPECIAL) >= 2.0 ** -126) & (np.abs(SPECIAL) < 3.39e38)
    want = SPECIAL[normal].astype(ml_dtypes.bfloat16).view(np.uint16)  # ml_dtypes: also to nearest even
    assert np.array_equal(bits[normal], want)


@pytest.mark.parametrize("n", [7, 16, 100_003])
def test_kernel_rounds_as_numpy(threads, n):
    x = _rounding_inputs(n)
    y = np.zeros(x.shape, ml_dtypes.bfloat16)
    _C.call("to_bfloat16", [x], [y])
    assert np.array_equal(y.view(np.uint16), to_bfloat16(x))


def test_kernel_offset_and_errors():
    x = np.arange(10, dtype=np.float32) + 0.5
    y = np.zeros(4, ml_dtypes.bfloat16)
    _C.call("to_bfloat16", [x[:4]], [y], {"offset": 3})
    assert np.array_equal(y.view(np.uint16), to_bfloat16(x[3:7]))
    with pytest.raises(TypeError, match="to_bfloat16: y must be bfloat16, got float32"):
        _C.call("to_bfloat16", [x], [np.zeros(10, np.float32)])
    with pytest.raises(ValueError, match=r"to_bfloat16: y must have the shape of x \(10,\), got \(4,\)"):
        _C.call("to_bfloat16", [x], [y])


# ---- kernels

def _close(got, want, magnitude, terms, what):
    """got agrees with the float64 product want to float32 rounding of sums of `terms` products."""
    bound = 2 * terms * EPS32 * magnitude + 1e-30
    worst = np.max(np.abs(got - want) / bound)
    assert worst <= 1, f"{what}: {worst:.3g} times the rounding bound"


CONV_CASES = [(50, 14, 14, 32, 64, 5, 5, 1, 1, "SAME"), (7, 28, 28, 1, 32, 5, 5, 1, 1, "SAME"),
              (3, 9, 9, 16, 24, 1, 1, 1, 1, "VALID"), (5, 6, 6, 8, 3, 3, 3, 2, 2, "VALID"),
              (3, 7, 5, 3, 2, 4, 2, 3, 2, "SAME")]


@pytest.mark.parametrize("kernel", ["conv2d_fwd", "conv2d_bwd_input", "conv2d_bwd_filter"])
@pytest.mark.parametrize("impl", ["auto", "im2col"])
def test_conv_kernels_take_bfloat16_operands(kernel, impl, threads):
    """oneDNN's bfloat16 kernels (auto, where it serves them) and the widened float32 fallback
    (im2col) both give the float32 product of the rounded operands."""
    rng = np.random.default_rng(11)
    for case in CONV_CASES:
        conv = Conv(rng, *case)
        for name in ("x", "f", "dy"):
            setattr(conv, name, rounded(getattr(conv, name)))
        want, magnitude = conv.call(kernel, "im2col"), conv.call(kernel, "im2col", absolute=True)
        ins, out_shape = conv.operands(kernel)
        got = np.full(out_shape, np.nan, np.float32)
        _C.call(kernel, [as_bf16(a) for a in ins], [got], {**conv.attrs, "impl": impl})
        _close(got, want, magnitude, conv.terms(kernel), f"{kernel} {impl} {conv.id}")


@needs_bf16
def test_conv_forward_epilogue_in_bfloat16():
    conv = Conv(np.random.default_rng(4), 6, 10, 10, 16, 32, 3, 3, 1, 1, "SAME")
    x, f = rounded(conv.x), rounded(conv.f)
    rng = np.random.default_rng(5)
    bias, scale, shift = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
    residual = rng.standard_normal((6, 10, 10, 32)).astype(np.float32)
    attrs = {**conv.attrs, "bias": 1, "scale": 1, "shift": 1, "residual": 1, "activation": 2}
    want = np.zeros((6, 10, 10, 32), np.float32)
    _C.call("conv2d_fwd", [x, f, bias, scale, shift, residual], [want], {**attrs, "impl": "im2col"})
    got = np.zeros_like(want)
    _C.call("conv2d_fwd", [as_bf16(x), as_bf16(f), bias, scale, shift, residual], [got], {**attrs, "impl": "onednn"})
    magnitude = np.zeros_like(want)
    _C.call("conv2d_fwd", [np.abs(x), np.abs(f)], [magnitude], {**conv.attrs, "impl": "im2col"})
    # the same products summed in another order, then the same epilogue: within the sums' rounding
    assert np.all(np.abs(got - want) <= 2 * 3 * 3 * 16 * EPS32 * np.abs(scale) * magnitude + 1e-6)
    assert got.min() == 0 and got.max() == 6  # relu6 applied


def test_conv_bfloat16_errors():
    x, f = np.zeros((1, 4, 4, 2), ml_dtypes.bfloat16), np.zeros((3, 3, 2, 2), np.float32)
    attrs = {"strides": [1, 1], "pad_top": 1, "pad_left": 1}
    with pytest.raises(TypeError, match="conv2d_fwd: bfloat16 operands must both be bfloat16, with a float32 "
                                        "output; got bfloat16, float32 -> float32"):
        _C.call("conv2d_fwd", [x, f], [np.zeros((1, 4, 4, 2), np.float32)], attrs)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_takes_bfloat16_operands(ta, tb, threads):
    rng = np.random.default_rng(int(ta) * 2 + int(tb))
    for m, n, k in [(64, 70, 300), (3, 5, 7), (1, 40, 33), (128, 512, 128), (200, 1, 64)]:
        a = rounded(rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32))
        b = rounded(rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32))
        got = np.full((m, n), np.nan, np.float32)
        _C.call("matmul_fwd", [as_bf16(a), as_bf16(b)], [got], {"transpose_a": int(ta), "transpose_b": int(tb)})
        oa, ob = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
        _close(got, oa @ ob, np.abs(oa) @ np.abs(ob), k, f"{m}x{n}x{k} ta={ta} tb={tb}")


def test_a_large_product_repeats_bitwise_per_thread_count(threads):
    """fc1's shape: with two threads it runs whole on oneDNN's OpenMP threads (its split of the
    work, by the thread count), with one on one; each repeats its bits, and both are the product of
    the rounded operands."""
    rng = np.random.default_rng(11)
    a = rounded(rng.standard_normal((50, 3136)).astype(np.float32))
    b = rounded(rng.standard_normal((3136, 1024)).astype(np.float32))
    runs = []
    for _ in range(3):
        runs.append(np.full((50, 1024), np.nan, np.float32))
        _C.call("matmul_fwd", [as_bf16(a), as_bf16(b)], [runs[-1]], {})
    for got in runs[1:]:
        np.testing.assert_array_equal(got, runs[0])
    oa, ob = a.astype(np.float64), b.astype(np.float64)
    _close(runs[0], oa @ ob, np.abs(oa) @ np.abs(ob), 3136, "50x1024x3136")


def test_batched_matmul_and_errors():
    rng = np.random.default_rng(9)
    a = rounded(rng.standard_normal((3, 40, 50)).astype(np.float32))
    b = rounded(rng.standard_normal((50, 60)).astype(np.float32))
    got = np.zeros((3, 40, 60), np.float32)
    _C.call("matmul_fwd", [as_bf16(a), as_bf16(b)], [got])
    _close(got, a.astype(np.float64) @ b, np.abs(a.astype(np.float64)) @ np.abs(b), 50, "batched")
    with pytest.raises(TypeError, match="matmul_fwd: b must be bfloat16, got float32"):
        _C.call("matmul_fwd", [as_bf16(a), b], [got])
    with pytest.raises(TypeError, match="matmul_fwd: the product of bfloat16 operands must be float32, got bfloat16"):
        _C.call("matmul_fwd", [as_bf16(a), as_bf16(b)], [np.zeros((3, 40, 60), ml_dtypes.bfloat16)])


# ---- the pass

def _convnet(image, label):
    """A Deep-MNIST-like network on [N, 12, 12, 1] images: conv, pool, conv, fc, fc; Adam."""
    rng = np.random.default_rng(0)

    def var(*shape):
        return tf.Variable((rng.standard_normal(shape) * 0.1).astype(np.float32))

    h = tf.nn.relu(tf.nn.conv2d(image, var(3, 3, 1, 8), [1, 1, 1, 1], "SAME") + var(8))
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.relu(tf.nn.conv2d(h, var(3, 3, 8, 16), [1, 1, 1, 1], "SAME") + var(16))
    h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 6 * 6 * 16]), var(576, 32)) + var(32))
    logits = tf.matmul(h, var(32, 10)) + var(10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))
    return logits, loss, tf.train.AdamOptimizer(1e-3).minimize(loss)


@pytest.fixture
def plans(monkeypatch):
    """The kernels of every plan compiled during the test, in order."""
    seen, emit = [], lowering.emit

    def recorded(plan_buffers, where, steps, fetches, store):
        seen.append([st.kernel for st in steps])
        return emit(plan_buffers, where, steps, fetches, store)

    monkeypatch.setattr(lowering, "emit", recorded)
    return seen


def _train(plans, config, steps=3):
    image, label = tf.placeholder(tf.float32, [None, 12, 12, 1]), tf.placeholder(tf.int32, [None])
    logits, loss, train = _convnet(image, label)
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal((16, 12, 12, 1)).astype(np.float32), rng.integers(0, 10, 16)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([train, loss], {image: xs, label: ys})[1] for _ in range(steps)]
        kernels = next(p for p in reversed(plans) if "apply_adam" in p)
        weights = sess.run(tf.trainable_variables())
    return np.array(losses), kernels, weights


@needs_bf16
def test_a_training_step_shares_one_copy_per_operand(plans):
    losses, kernels, weights = _train(plans, bf16_config())
    f32_losses, f32_kernels, f32_weights = _train(plans, None)
    products = ("conv2d_fwd", "conv2d_bwd_input", "conv2d_bwd_filter", "matmul_fwd")
    assert sum(kernels.count(k) for k in products) == sum(f32_kernels.count(k) for k in products) == 11
    # conv1: image, filter, its output's gradient; conv2 and each product: input, weight, gradient
    assert kernels.count("to_bfloat16") == 12 and "to_bfloat16" not in f32_kernels
    assert [k for k in kernels if k != "to_bfloat16"] == f32_kernels
    np.testing.assert_allclose(losses, f32_losses, rtol=2e-2)
    assert not np.array_equal(losses, f32_losses)  # the products did run in bfloat16
    for w, w32 in zip(weights, f32_weights):  # float32 master weights, updated by Adam in float32
        assert w.dtype == np.float32 and not np.array_equal(w, rounded(w))
        # Adam moves each weight by about the learning rate per step whatever the gradient's size,
        # so a gradient near zero may move it either way: 3 steps apart at most 2 * 3 * 1e-3.
        np.testing.assert_allclose(w, w32, rtol=0, atol=6e-3)


@needs_bf16
def test_each_product_is_that_of_the_rounded_operands():
    """A convolution and its two gradients in bfloat16 equal float32 ones of the rounded operands."""
    rng = np.random.default_rng(3)
    xv, wv = rng.standard_normal((8, 9, 9, 4)).astype(np.float32), rng.standard_normal((3, 3, 4, 6)).astype(np.float32)
    dyv = rng.standard_normal((8, 9, 9, 6)).astype(np.float32)
    x, dy, w = tf.placeholder(tf.float32, [None, 9, 9, 4]), tf.placeholder(tf.float32), tf.Variable(wv)
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    fetches = [y, *tf.gradients(y, [x, w], grad_ys=dy)]
    with tf.Session(config=bf16_config()) as sess:
        sess.run(w.initializer)
        got = sess.run(fetches, {x: xv, dy: dyv})
    with tf.Session() as sess:
        sess.run(w.assign(rounded(wv)))
        want = sess.run(fetches, {x: rounded(xv), dy: rounded(dyv)})
    for g, wnt in zip(got, want):
        np.testing.assert_allclose(g, wnt, rtol=0, atol=2e-6 * np.abs(wnt).max())


@needs_bf16
def test_constant_operands_are_converted_once(plans):
    """A frozen filter becomes a bfloat16 constant: no to_bfloat16 step for it, and a fused epilogue
    kept."""
    rng = np.random.default_rng(8)
    fv, bv = rng.standard_normal((3, 3, 4, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    xv = rng.standard_normal((2, 6, 6, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 6, 6, 4])
    y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, tf.constant(fv), [1, 1, 1, 1], "SAME"), tf.constant(bv)))
    with tf.Session(config=bf16_config()) as sess:
        got = sess.run(y, {x: xv})
        assert plans[-1] == ["to_bfloat16", "conv2d_fwd"]
    with tf.Session() as sess:
        want = sess.run(tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, tf.constant(rounded(fv)), [1, 1, 1, 1], "SAME"),
                                                  tf.constant(bv))), {x: rounded(xv)})
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


# ---- switches

def _uses_bfloat16(plans, config):
    x = tf.placeholder(tf.float32, [4, 4])
    y = tf.matmul(x, tf.constant(np.eye(4, dtype=np.float32)))
    with tf.Session(config=config) as sess:
        sess.run(y, {x: np.ones((4, 4), np.float32)})
    return "to_bfloat16" in plans[-1]


@needs_bf16
@pytest.mark.parametrize("field", ["auto_mixed_precision", "auto_mixed_precision_onednn_bfloat16",
                                   "auto_mixed_precision_mkl"])
def test_rewriter_config_switches(plans, field):
    config = tf.ConfigProto()
    setattr(config.graph_options.rewrite_options, field, RewriterConfig.ON)
    assert _uses_bfloat16(plans, config)
    assert not _uses_bfloat16(plans, None) and not _uses_bfloat16(plans, tf.ConfigProto())


@needs_bf16
def test_process_wide_switch_follows_tfs_rule(plans, monkeypatch):
    monkeypatch.setattr(pygrad.bfloat16, "graph_rewrite_enabled", lambda: True)
    assert _uses_bfloat16(plans, None)
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.auto_mixed_precision = RewriterConfig.OFF
    assert not _uses_bfloat16(plans, config)  # OFF wins over the process-wide switch, as in TF's Session


def test_a_cpu_without_bfloat16_warns_and_runs_float32(tmp_path):
    """oneDNN limited to AVX-512 without its bfloat16 instructions (ONEDNN_MAX_CPU_ISA): the session
    warns and its products are float32, bit for bit a float32 session's."""
    program = (
        "import warnings, numpy as np, pygrad as tf\n"
        "from pygrad.bfloat16 import cpu_has_bfloat16\n"
        "assert not cpu_has_bfloat16()\n"
        "x = tf.constant(np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64) * 1.001)\n"
        "y = tf.matmul(x, x)\n"
        "config = tf.ConfigProto()\n"
        "tf.alias_tensorflow()\n"
        "from tensorflow.core.protobuf import rewriter_config_pb2  # TF1's way to name the switch\n"
        "config.graph_options.rewrite_options.auto_mixed_precision = rewriter_config_pb2.RewriterConfig.ON\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    with tf.Session(config=config) as s:\n"
        "        got = s.run(y)\n"
        "with tf.Session() as s:\n"
        "    want = s.run(y)\n"
        "assert np.array_equal(got, want)\n"
        "print([str(w.message) for w in caught])\n")
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"}
    out = subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "this CPU has no bfloat16 instructions (AVX512-BF16 or AMX), so the session runs its convolutions " \
           "and matrix products in float32" in out.stdout


@needs_bf16
def test_loop_invariant_operands_are_copied_once_before_the_loop(monkeypatch):
    """An LSTM's kernel, read by a product in the forward loop and one in the gradient loop, is
    copied before each loop; the per-step operands (the cell's input and gate gradients, and the
    gradient loop's narrowed product, matmul_fwd's b_offset) inside. The loss and gradients stay
    within bfloat16's rounding of float32's."""
    seen = []

    def recorded(program, fetches):
        pygrad.bfloat16.bfloat16_products(program, fetches)
        inside = [sum(program.steps[i].kernel == "to_bfloat16" for i in range(first, last + 1))
                  for first, last in program.loops]
        seen.append((inside, [o.dims for st in program.steps if st.kernel == "to_bfloat16" for o in st.ins]))

    monkeypatch.setattr(passes, "bfloat16_products", recorded)
    rng = np.random.default_rng(6)
    xv = rng.standard_normal((16, 7, 5)).astype(np.float32)
    x = tf.placeholder(tf.float32, [16, 7, 5])
    cell = tf.nn.rnn_cell.BasicLSTMCell(32)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    loss = tf.reduce_sum(outputs[:, -1, :] ** 2)
    grads = tf.gradients(loss, [cell.trainable_variables[0], x])
    kernel, values = rng.standard_normal((37, 128)).astype(np.float32) * 0.2, {}
    for name, config in (("bf16", bf16_config()), ("f32", None)):
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(cell.trainable_variables[0].assign(kernel))
            values[name] = sess.run([loss, *grads], {x: xv})
    inside, copied = seen[-1]
    assert inside == [1, 2], inside  # forward: the cell's input; gradient: its gate gradients and input
    assert copied.count((37, 128)) == 2  # the kernel, once before each loop
    for got, want in zip(values["bf16"], values["f32"]):
        # bfloat16 keeps 8 significant bits (a relative rounding of 2^-9); over seven steps and
        # the gradient's way back the largest difference here is 3.6e-3 of the largest value
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-2 * np.abs(want).max())
        assert not np.array_equal(got, want)
