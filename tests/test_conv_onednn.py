"""The oneDNN convolution kernels (float32) against the im2col kernels, which stay the reference:
the same call to each kernel with attribute impl="onednn" and impl="im2col", on many shapes, with
1 and 2 threads; bitwise repeatability per thread count; a thread count set after the plan was
built; the forward's fused epilogue (bias, an inference batch norm's scale and shift, relu or relu6),
of the depthwise kernel too; the errors of the impl attribute; and
tf.nn.conv2d_transpose, which lowers to the input-gradient kernel, on oneDNN. The
graph-level tests (test_conv_ops.py) run the default, impl="auto": oneDNN for float32 (but the input
gradient of fewer than 8 input channels), im2col for float64."""
import numpy as np
import pytest

import pygrad as tf
from onednn_checks import check_bitwise_repeatable_per_thread_count
from pygrad import _C
from pygrad.ops import conv_ops
from pygrad.ops.conv_ops import _out_size, _pad_before
from test_depthwise_onednn import Depthwise

KERNELS = ("conv2d_fwd", "conv2d_bwd_input", "conv2d_bwd_filter")
EPS32 = np.finfo(np.float32).eps


class Conv:
    """One convolution's operands and attributes, with the kernels' calls."""

    def __init__(self, rng, n, h, w, c, o, kh, kw, sh, sw, padding):
        self.oh, self.ow = _out_size(h, kh, sh, padding), _out_size(w, kw, sw, padding)
        self.x = rng.standard_normal((n, h, w, c), dtype=np.float32)
        self.f = rng.standard_normal((kh, kw, c, o), dtype=np.float32)
        self.dy = rng.standard_normal((n, self.oh, self.ow, o), dtype=np.float32)
        self.attrs = {"strides": [sh, sw], "pad_top": _pad_before(h, kh, sh, padding),
                      "pad_left": _pad_before(w, kw, sw, padding)}
        self.id = f"{n}x{h}x{w}x{c}*{kh}x{kw}x{c}x{o}/{sh},{sw}/{padding}"

    def operands(self, kernel, absolute=False):
        x, f, dy = (np.abs(a) for a in (self.x, self.f, self.dy)) if absolute else (self.x, self.f, self.dy)
        return {"conv2d_fwd": ([x, f], dy.shape), "conv2d_bwd_input": ([f, dy], x.shape),
                "conv2d_bwd_filter": ([x, dy], f.shape)}[kernel]

    def terms(self, kernel):
        """How many products each output element sums (at most)."""
        n, _, _, c = self.x.shape
        kh, kw, _, o = self.f.shape
        return {"conv2d_fwd": kh * kw * c, "conv2d_bwd_input": kh * kw * o,
                "conv2d_bwd_filter": n * self.oh * self.ow}[kernel]

    def call(self, kernel, impl, absolute=False):
        ins, out_shape = self.operands(kernel, absolute)
        out = np.full(out_shape, np.nan, np.float32)  # every element must be written
        _C.call(kernel, ins, [out], {**self.attrs, "impl": impl})
        return out

    def check(self, kernel, got):
        """got agrees with the im2col kernel to float32 rounding of sums of `terms` products: both
        are within terms * eps * sum|products| of the exact value."""
        want = self.call(kernel, "im2col")
        magnitude = self.call(kernel, "im2col", absolute=True)
        assert np.isfinite(got).all(), f"{kernel} {self.id}: unwritten or non-finite elements"
        bound = 2 * self.terms(kernel) * EPS32 * magnitude + 1e-30
        worst = np.max(np.abs(got - want) / bound)
        assert worst <= 1, f"{kernel} {self.id}: differs from im2col by {worst:.3g} times the rounding bound"
        # A loose bound must not hide a wrong result: the differences are far below the values.
        assert np.max(np.abs(got - want)) <= 1e-4 * max(np.abs(want).max(), 1.0), f"{kernel} {self.id}"


def _cases():
    rng = np.random.default_rng(20260)
    cases = [(50, 14, 14, 32, 64, 5, 5, 1, 1, "SAME"),  # the Deep MNIST convnet's second layer
             (7, 28, 28, 1, 32, 5, 5, 1, 1, "SAME"),    # its first, an odd batch
             (3, 9, 9, 4, 6, 1, 1, 1, 1, "VALID"),      # pointwise
             (2, 5, 5, 3, 4, 5, 5, 1, 1, "VALID"),      # one window covering the input
             (5, 6, 6, 2, 3, 3, 3, 2, 2, "VALID"),      # the last input row and column read by no window
             (3, 7, 5, 3, 2, 4, 2, 3, 2, "SAME"),       # even filter, uneven padding
             (1, 1, 1, 1, 1, 1, 1, 1, 1, "SAME")]
    while len(cases) < 40:
        n, h, w, c, o = (int(v) for v in rng.integers(1, [7, 13, 13, 9, 9]))
        kh, kw, sh, sw = (int(v) for v in rng.integers(1, [6, 6, 4, 4]))
        padding = ("SAME", "VALID")[len(cases) % 2]
        if padding == "SAME" or (h >= kh and w >= kw):
            cases.append((n, h, w, c, o, kh, kw, sh, sw, padding))
    return cases


CASES = _cases()


@pytest.mark.parametrize("kernel", KERNELS)
def test_onednn_agrees_with_im2col(kernel, threads):
    rng = np.random.default_rng(7)
    for case in CASES:
        conv = Conv(rng, *case)
        conv.check(kernel, conv.call(kernel, "onednn"))


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("channels", [8, 1])
def test_default_is_onednn_for_float32(kernel, channels):
    """impl="auto" (what the lowering passes) gives oneDNN's bits for float32, except im2col's for
    the input gradient with fewer than 8 input channels (faster there), and im2col's for float64."""
    conv = Conv(np.random.default_rng(3), 6, 10, 10, channels, 16, 3, 3, 1, 1, "SAME")
    ins, out_shape = conv.operands(kernel)
    auto = np.empty(out_shape, np.float32)
    _C.call(kernel, ins, [auto], conv.attrs)
    im2col = kernel == "conv2d_bwd_input" and channels < 8
    np.testing.assert_array_equal(auto, conv.call(kernel, "im2col" if im2col else "onednn"))
    ins64 = [a.astype(np.float64) for a in ins]
    auto64, im2col64 = np.empty(out_shape), np.empty(out_shape)
    _C.call(kernel, ins64, [auto64], conv.attrs)
    _C.call(kernel, ins64, [im2col64], {**conv.attrs, "impl": "im2col"})
    np.testing.assert_array_equal(auto64, im2col64)


@pytest.mark.parametrize("batch", [1, 32])
def test_default_is_one_product_for_a_classifier_over_a_pooled_image(batch):
    """A 1x1 convolution over 1x1 images (a classifier's logits) is one matrix product: impl="auto"
    gives im2col's bits, which agree with oneDNN's convolution to rounding."""
    # 512 channels: enough that oneDNN's convolution sums in another order than the product (at 256
    # and batch 32 the two agree bitwise, and the check below could not tell them apart)
    conv = Conv(np.random.default_rng(4), batch, 1, 1, 512, 100, 1, 1, 1, 1, "VALID")
    ins, out_shape = conv.operands("conv2d_fwd")
    auto = np.empty(out_shape, np.float32)
    _C.call("conv2d_fwd", ins, [auto], conv.attrs)
    np.testing.assert_array_equal(auto, conv.call("conv2d_fwd", "im2col"))
    conv.check("conv2d_fwd", conv.call("conv2d_fwd", "onednn"))


def test_bitwise_repeatable_per_thread_count():
    """An odd batch over 2 threads (two run sizes; the filter gradient adds a partial sum)."""
    conv = Conv(np.random.default_rng(11), 9, 14, 14, 16, 32, 5, 5, 1, 1, "SAME")
    check_bitwise_repeatable_per_thread_count(conv, KERNELS)


def test_thread_count_set_after_the_plan_was_built():
    """A plan built on 1 thread runs on 3 (runs of another size, created when first needed) and
    gives the gradients of a plan built on 3."""
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((7, 12, 12, 4), dtype=np.float32)
    fv = rng.standard_normal((3, 3, 4, 8), dtype=np.float32)
    old = tf.get_num_threads()
    try:
        results = []
        for build_threads in (1, 3):
            with tf.Graph().as_default():
                x = tf.placeholder(tf.float32, [None, 12, 12, 4])
                f = tf.constant(fv)
                y = tf.nn.conv2d(x, f, strides=[1, 2, 2, 1], padding="SAME")
                fetches = [y] + tf.gradients(tf.reduce_sum(y * y), [x, f])
                with tf.Session() as sess:
                    tf.set_num_threads(build_threads)
                    sess.run(fetches, {x: xv})
                    tf.set_num_threads(3)
                    results.append(sess.run(fetches, {x: xv}))
    finally:
        tf.set_num_threads(old)
    for built_on_one, built_on_three in zip(*results):
        np.testing.assert_array_equal(built_on_one, built_on_three)


@pytest.mark.parametrize("dtype, impl, error, match", [
    (np.float32, "fast", ValueError, "conv2d_fwd: impl must be 'auto', 'im2col' or 'onednn', got 'fast'"),
    (np.float64, "onednn", TypeError, "conv2d_fwd: the oneDNN kernels are float32 only, got float64"),
])
def test_impl_errors(dtype, impl, error, match):
    x, f = np.ones((1, 4, 4, 2), dtype), np.ones((2, 2, 2, 3), dtype)
    with pytest.raises(error, match=match):
        _C.call("conv2d_fwd", [x, f], [np.empty((1, 3, 3, 3), dtype)],
                {"strides": [1, 1], "pad_top": 0, "pad_left": 0, "impl": impl})


def _epilogue_case(kernel, rng):
    """(inputs, output shape, attrs) of a convolution of `kernel` with 16 output channels."""
    if kernel == "conv2d_fwd":
        conv = Conv(rng, 5, 9, 9, 8, 16, 3, 3, 1, 1, "SAME")
        return [conv.x, conv.f], conv.dy.shape, conv.attrs
    dw = Depthwise(rng, 3, 9, 9, 8, 2, 3, 3, 1, 1, 1, 1, "SAME")
    return [dw.x, dw.f], dw.dy.shape, dw.attrs


@pytest.mark.parametrize("kernel,impl,dtype", [
    ("conv2d_fwd", "im2col", np.float32), ("conv2d_fwd", "im2col", np.float64), ("conv2d_fwd", "onednn", np.float32),
    ("depthwise_conv2d_fwd", "direct", np.float32), ("depthwise_conv2d_fwd", "direct", np.float64),
    ("depthwise_conv2d_fwd", "onednn", np.float32)])
@pytest.mark.parametrize("parts,activation", [
    (parts, activation) for parts in [("bias",), ("scale", "shift"), ("bias", "scale", "shift"), ("scale",),
                                      ("scale", "shift", "residual"), ("residual",), ()]
    for activation in (0, 1, 2) if parts or activation])
@pytest.mark.parametrize("threads", [1, 2])
def test_forward_epilogue(kernel, impl, dtype, parts, activation, threads):
    """A convolution's call with an epilogue (inputs (x, w[, bias][, scale][, shift][, residual]),
    attributes naming them and the activation: none, relu, relu6) equals the convolution followed
    by (y + bias) * scale + shift + residual and the activation, in NumPy in that order: bitwise for the kernels
    other than oneDNN's (they run the unfused kernels' arithmetic), to rounding for oneDNN's."""
    rng = np.random.default_rng(13)
    ins, shape, attrs = _epilogue_case(kernel, rng)
    ins = [a.astype(dtype) for a in ins]
    vectors = {"bias": rng.standard_normal(16), "scale": rng.uniform(0.5, 4, 16), "shift": rng.standard_normal(16) * 4,
               "residual": rng.standard_normal(shape) * 4}
    vectors = {k: v.astype(dtype) for k, v in vectors.items()}
    old = tf.get_num_threads()
    tf.set_num_threads(threads)
    try:
        plain = np.empty(shape, dtype)
        _C.call(kernel, ins, [plain], {**attrs, "impl": impl})
        fused = np.full(shape, np.nan, dtype)
        _C.call(kernel, ins + [vectors[p] for p in parts], [fused],
                {**attrs, "impl": impl, "activation": activation, **{p: 1 for p in parts}})
    finally:
        tf.set_num_threads(old)
    want = plain
    for part, op in (("bias", np.add), ("scale", np.multiply), ("shift", np.add), ("residual", np.add)):
        if part in parts:
            want = op(want, vectors[part])
    pre = want
    if activation:
        want = np.where(want < 0, dtype(0), want)
    if activation == 2:
        want = np.where(want > 6, dtype(6), want)
    if impl == "onednn":
        np.testing.assert_allclose(fused, want, rtol=1e-6, atol=1e-5)
    else:
        np.testing.assert_array_equal(fused, want)
    if activation:
        assert (pre < 0).any() and (activation == 1 or (pre > 6).any())  # the activation has something to clip


@pytest.mark.parametrize("kernel", ["conv2d_fwd", "depthwise_conv2d_fwd"])
@pytest.mark.parametrize("inputs,attrs,match", [
    (["bias7"], {"bias": 1}, r"the bias must be a float32 array of shape \(16,\), got float32 \(7,\)"),
    (["bias16"], {"residual": 1}, r"the residual must be a float32 array of shape \(\d+, 9, 9, 16\), got float32 "
                                  r"\(16,\)"),
    ([], {"scale": 1}, "the scale input is missing: 2 inputs"),
    (["bias16"], {}, "expects 2 inputs for its epilogue, got 3"),
    ([], {"activation": 3}, "activation must be 0 \\(none\\), 1 \\(relu\\) or 2 \\(relu6\\), got 3"),
])
def test_forward_epilogue_errors(kernel, inputs, attrs, match):
    ins, shape, conv_attrs = _epilogue_case(kernel, np.random.default_rng(15))
    extra = {"bias7": np.zeros(7, np.float32), "bias16": np.zeros(16, np.float32)}
    with pytest.raises(ValueError, match=f"{kernel}: {match}"):
        _C.call(kernel, ins + [extra[k] for k in inputs], [np.empty(shape, np.float32)], {**conv_attrs, **attrs})


# ---------------------------------------------------------------- tf.nn.conv2d_transpose


def _transpose_run(module, value, f, w, out_shape, strides):
    """conv2d_transpose(value, f) (TF's Conv2DBackpropInput) and its gradients for grad_ys w, in a
    graph of `module` (pygrad or TF's compat.v1)."""
    g = module.Graph()
    with g.as_default():
        vp, fp = module.placeholder(module.float32, value.shape), module.placeholder(module.float32, f.shape)
        y = module.nn.conv2d_transpose(vp, fp, out_shape, [1, *strides, 1], "SAME")
        fetches = [y] + module.gradients(y, [vp, fp], grad_ys=module.constant(w))
        with module.Session(graph=g) as sess:
            return sess.run(fetches, {vp: value, fp: f})


TRANSPOSE = ((5, 7, 7, 16), (3, 3, 8, 16), (5, 14, 14, 8), (2, 2))  # value, filter, output_shape, strides


def test_conv2d_transpose_runs_on_onednn(monkeypatch):
    """tf.nn.conv2d_transpose lowers to the conv2d input-gradient kernel; by default (float32, 8 or
    more output channels) that is oneDNN's: the bits of impl="onednn", to rounding those of
    impl="im2col". Its gradients (conv2d and the conv2d filter gradient) likewise."""
    value_shape, f_shape, out_shape, strides = TRANSPOSE
    rng = np.random.default_rng(23)
    value, f = rng.standard_normal(value_shape, dtype=np.float32), rng.standard_normal(f_shape, dtype=np.float32)
    w = rng.standard_normal(out_shape, dtype=np.float32)
    runs = {"auto": _transpose_run(tf, value, f, w, out_shape, strides)}
    for impl in ("onednn", "im2col"):
        for opdef in (conv_ops.Conv2D, conv_ops.Conv2DBackpropInput, conv_ops.Conv2DBackpropFilter):
            monkeypatch.setattr(opdef, "attrs_fn", lambda attrs, ins, outs, impl=impl: {
                **conv_ops._conv_attrs(attrs, ins, outs), "impl": impl})
        runs[impl] = _transpose_run(tf, value, f, w, out_shape, strides)
    for auto, onednn, im2col in zip(runs["auto"], runs["onednn"], runs["im2col"]):
        np.testing.assert_array_equal(auto, onednn)
        np.testing.assert_allclose(onednn, im2col, rtol=1e-5, atol=1e-5 * np.abs(im2col).max())
    assert not np.array_equal(runs["onednn"][0], runs["im2col"][0])  # two kernels ran


def test_conv2d_transpose_matches_tensorflow():
    tensorflow = pytest.importorskip("tensorflow")
    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    value_shape, f_shape, out_shape, strides = TRANSPOSE
    rng = np.random.default_rng(29)
    value, f = rng.uniform(-1, 1, value_shape).astype(np.float32), rng.uniform(-1, 1, f_shape).astype(np.float32)
    w = rng.uniform(-1, 1, out_shape).astype(np.float32)
    for got, want in zip(_transpose_run(tf, value, f, w, out_shape, strides),
                         _transpose_run(v1, value, f, w, out_shape, strides)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(want).max()))
