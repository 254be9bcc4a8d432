"""The oneDNN depthwise convolution kernels (float32, a grouped convolution with groups = in_channels)
against the direct loops, which stay the reference: the same call to each kernel with attribute
impl="onednn" and impl="direct", on many shapes (multipliers 1 to 3, SAME and VALID, strides,
dilations, odd sizes, batch 1 and larger), with 1 and 2 threads; bitwise repeatability per thread
count; a thread count set after the plan was built; graphs whose three depthwise ops are lowered
with each impl, values and gradients, and against TensorFlow where installed; the errors of the impl
attribute. test_depthwise.py runs the default, impl="auto" (oneDNN for float32, the loops for
float64), against NumPy, finite differences and TensorFlow."""
import numpy as np
import pytest

import pygrad as tf
from onednn_checks import check_bitwise_repeatable_per_thread_count
from pygrad import _C
from pygrad.ops import depthwise_ops
from pygrad.ops.conv_ops import _out_size, _pad_before

KERNELS = ("depthwise_conv2d_fwd", "depthwise_conv2d_bwd_input", "depthwise_conv2d_bwd_filter")
EPS32 = np.finfo(np.float32).eps


class Depthwise:
    """One depthwise convolution's operands and attributes, with the kernels' calls."""

    def __init__(self, rng, n, h, w, c, m, kh, kw, sh, sw, dh, dw, padding):
        eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1  # the dilated filter
        self.oh, self.ow = _out_size(h, eh, sh, padding), _out_size(w, ew, sw, padding)
        self.x = rng.standard_normal((n, h, w, c), dtype=np.float32)
        self.f = rng.standard_normal((kh, kw, c, m), dtype=np.float32)
        self.dy = rng.standard_normal((n, self.oh, self.ow, c * m), dtype=np.float32)
        self.attrs = {"strides": [sh, sw], "dilations": [dh, dw], "pad_top": _pad_before(h, eh, sh, padding),
                      "pad_left": _pad_before(w, ew, sw, padding)}
        self.id = f"{n}x{h}x{w}x{c}*{kh}x{kw}x{c}x{m}/s{sh},{sw}/d{dh},{dw}/{padding}"

    def operands(self, kernel, absolute=False):
        x, f, dy = (np.abs(a) for a in (self.x, self.f, self.dy)) if absolute else (self.x, self.f, self.dy)
        return {"depthwise_conv2d_fwd": ([x, f], dy.shape), "depthwise_conv2d_bwd_input": ([f, dy], x.shape),
                "depthwise_conv2d_bwd_filter": ([x, dy], f.shape)}[kernel]

    def terms(self, kernel):
        """How many products each output element sums (at most)."""
        kh, kw, _, m = self.f.shape
        return {"depthwise_conv2d_fwd": kh * kw, "depthwise_conv2d_bwd_input": kh * kw * m,
                "depthwise_conv2d_bwd_filter": self.x.shape[0] * self.oh * self.ow}[kernel]

    def call(self, kernel, impl, absolute=False):
        ins, out_shape = self.operands(kernel, absolute)
        out = np.full(out_shape, np.nan, np.float32)  # every element must be written
        _C.call(kernel, ins, [out], {**self.attrs, "impl": impl})
        return out

    def check(self, kernel, got):
        """got agrees with the direct loops to float32 rounding of sums of `terms` products: both are
        within terms * eps * sum|products| of the exact value."""
        want = self.call(kernel, "direct")
        magnitude = self.call(kernel, "direct", absolute=True)
        assert np.isfinite(got).all(), f"{kernel} {self.id}: unwritten or non-finite elements"
        bound = 2 * self.terms(kernel) * EPS32 * magnitude + 1e-30
        worst = np.max(np.abs(got - want) / bound)
        assert worst <= 1, f"{kernel} {self.id}: differs from the direct loops by {worst:.3g} times the rounding bound"
        # A loose bound must not hide a wrong result: the differences are far below the values.
        assert np.max(np.abs(got - want)) <= 1e-4 * max(np.abs(want).max(), 1.0), f"{kernel} {self.id}"


def _cases():
    rng = np.random.default_rng(20261)
    #        n   h   w   c   m  kh kw sh sw dh dw padding
    cases = [(8, 14, 14, 32, 1, 3, 3, 1, 1, 1, 1, "SAME"),   # a MobileNet layer, smaller
             (3, 15, 15, 24, 1, 3, 3, 2, 2, 1, 1, "SAME"),   # its stride-2 layers
             (1, 9, 9, 17, 1, 3, 3, 1, 1, 1, 1, "VALID"),    # channels not a multiple of the vector width
             (5, 8, 9, 6, 2, 3, 3, 1, 1, 1, 1, "SAME"),      # multiplier 2
             (2, 7, 6, 3, 3, 3, 2, 2, 3, 1, 1, "SAME"),      # multiplier 3, uneven strides
             (3, 12, 11, 16, 1, 3, 3, 1, 1, 2, 3, "SAME"),   # rate > 1 (atrous)
             (2, 13, 12, 4, 2, 3, 2, 1, 1, 3, 2, "VALID"),   # rate > 1, VALID, multiplier 2
             (2, 11, 11, 8, 1, 3, 3, 2, 2, 2, 2, "SAME"),    # strides and dilations (the native op)
             (4, 6, 6, 5, 1, 3, 3, 2, 2, 1, 1, "VALID"),     # the last input row and column read by no window
             (2, 5, 7, 3, 2, 5, 7, 1, 1, 1, 1, "VALID"),     # one window covering the input
             (3, 9, 9, 8, 1, 1, 1, 1, 1, 1, 1, "VALID"),     # 1x1
             (1, 2, 2, 2, 2, 3, 3, 1, 1, 1, 1, "SAME"),      # filter larger than the input
             (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "SAME")]
    while len(cases) < 30:
        n, h, w, c, m = (int(v) for v in rng.integers(1, [6, 13, 13, 20, 4]))
        kh, kw, sh, sw, dh, dw = (int(v) for v in rng.integers(1, [6, 6, 4, 4, 3, 3]))
        padding = ("SAME", "VALID")[len(cases) % 2]
        if padding == "SAME" or (h >= (kh - 1) * dh + 1 and w >= (kw - 1) * dw + 1):
            cases.append((n, h, w, c, m, kh, kw, sh, sw, dh, dw, padding))
    return cases


CASES = _cases()


@pytest.mark.parametrize("kernel", KERNELS)
def test_onednn_agrees_with_direct(kernel, threads):
    rng = np.random.default_rng(7)
    for case in CASES:
        dw = Depthwise(rng, *case)
        dw.check(kernel, dw.call(kernel, "onednn"))


@pytest.mark.parametrize("kernel", KERNELS)
def test_default_is_onednn_for_float32(kernel):
    """impl="auto" (what the lowering passes) gives oneDNN's bits for float32 and the loops' for
    float64."""
    dw = Depthwise(np.random.default_rng(3), 6, 10, 10, 16, 2, 3, 3, 1, 1, 1, 1, "SAME")
    ins, out_shape = dw.operands(kernel)
    auto = np.empty(out_shape, np.float32)
    _C.call(kernel, ins, [auto], dw.attrs)
    np.testing.assert_array_equal(auto, dw.call(kernel, "onednn"))
    ins64 = [a.astype(np.float64) for a in ins]
    auto64, direct64 = np.empty(out_shape), np.empty(out_shape)
    _C.call(kernel, ins64, [auto64], dw.attrs)
    _C.call(kernel, ins64, [direct64], {**dw.attrs, "impl": "direct"})
    np.testing.assert_array_equal(auto64, direct64)


def test_bitwise_repeatable_per_thread_count():
    """An odd batch over 2 threads (two run sizes; the filter gradient adds a partial sum)."""
    dw = Depthwise(np.random.default_rng(11), 9, 14, 14, 16, 2, 3, 3, 1, 1, 1, 1, "SAME")
    check_bitwise_repeatable_per_thread_count(dw, KERNELS)


@pytest.mark.parametrize("dtype, impl, error, match", [
    (np.float32, "im2col", ValueError,
     "depthwise_conv2d_fwd: impl must be 'auto', 'direct' or 'onednn', got 'im2col'"),
    (np.float64, "onednn", TypeError, "depthwise_conv2d_fwd: the oneDNN kernels are float32 only, got float64"),
])
def test_impl_errors(dtype, impl, error, match):
    x, f = np.ones((1, 4, 4, 2), dtype), np.ones((2, 2, 2, 3), dtype)
    with pytest.raises(error, match=match):
        _C.call("depthwise_conv2d_fwd", [x, f], [np.empty((1, 3, 3, 6), dtype)],
                {"strides": [1, 1], "dilations": [1, 1], "pad_top": 0, "pad_left": 0, "impl": impl})


# ---------------------------------------------------------------- graphs


@pytest.fixture
def lowered_with(monkeypatch):
    """impl(name): the three depthwise ops lower with attribute impl=name from now on."""
    def use(impl):
        for opdef in (depthwise_ops.DepthwiseConv2dNative, depthwise_ops.DepthwiseConv2dNativeBackpropInput,
                      depthwise_ops.DepthwiseConv2dNativeBackpropFilter):
            monkeypatch.setattr(opdef, "attrs_fn", lambda attrs, ins, outs: {**depthwise_ops._depthwise_attrs(
                attrs, ins, outs), "impl": impl})
    return use


def _graph_run(module, x, f, w, strides, rate, build_threads=None):
    """depthwise_conv2d(x, f) and its gradients for grad_ys w, in a graph of `module` (pygrad or TF's
    compat.v1); run on the current thread count (built on build_threads, if given)."""
    g = module.Graph()
    with g.as_default():
        xp, fp = module.placeholder(module.float32, x.shape), module.placeholder(module.float32, f.shape)
        y = module.nn.depthwise_conv2d(xp, fp, [1, *strides, 1], "SAME", rate=rate)
        fetches = [y] + module.gradients(y, [xp, fp], grad_ys=module.constant(w))
        with module.Session(graph=g) as sess:
            if build_threads is not None:
                run_threads = tf.get_num_threads()
                tf.set_num_threads(build_threads)
                sess.run(fetches, {xp: x, fp: f})
                tf.set_num_threads(run_threads)
            return sess.run(fetches, {xp: x, fp: f})


def _same_out(x_shape, f_shape, strides):
    n, h, w, c = x_shape
    return n, -(-h // strides[0]), -(-w // strides[1]), c * f_shape[3]


GRAPHS = [((4, 28, 28, 32), (3, 3, 32, 1), (1, 1), None), ((3, 15, 13, 8), (3, 3, 8, 2), (2, 2), None),
          ((2, 12, 12, 6), (3, 3, 6, 3), (1, 1), [2, 2])]


@pytest.mark.parametrize("x_shape, f_shape, strides, rate", GRAPHS, ids=["m1", "m2-stride2", "m3-rate2"])
def test_graph_onednn_agrees_with_direct(lowered_with, x_shape, f_shape, strides, rate):
    """A depthwise_conv2d and its gradients lowered with impl="onednn" and "direct": the same to
    float32 rounding; and the default (auto) gives oneDNN's bits."""
    rng = np.random.default_rng(17)
    x, f = rng.standard_normal(x_shape, dtype=np.float32), rng.standard_normal(f_shape, dtype=np.float32)
    w = rng.standard_normal(_same_out(x_shape, f_shape, strides), dtype=np.float32)
    auto = _graph_run(tf, x, f, w, strides, rate)
    lowered_with("onednn")
    onednn = _graph_run(tf, x, f, w, strides, rate)
    lowered_with("direct")
    direct = _graph_run(tf, x, f, w, strides, rate)
    for a, o, d in zip(auto, onednn, direct):
        np.testing.assert_array_equal(a, o)
        np.testing.assert_allclose(o, d, rtol=1e-5, atol=1e-5 * np.abs(d).max())
    assert any(not np.array_equal(o, d) for o, d in zip(onednn, direct))  # two lowerings, two kernels


def test_graph_thread_count_set_after_the_plan_was_built():
    """A plan built on 1 thread runs on 3 (runs of another size, created when first needed) and
    gives the results of a plan built on 3."""
    rng = np.random.default_rng(5)
    x, f = rng.standard_normal((7, 12, 12, 16), dtype=np.float32), rng.standard_normal((3, 3, 16, 2), np.float32)
    w = rng.standard_normal((7, 6, 6, 32), dtype=np.float32)
    old = tf.get_num_threads()
    try:
        tf.set_num_threads(3)
        results = [_graph_run(tf, x, f, w, (2, 2), None, build_threads=b) for b in (1, 3)]
    finally:
        tf.set_num_threads(old)
    for built_on_one, built_on_three in zip(*results):
        np.testing.assert_array_equal(built_on_one, built_on_three)


@pytest.mark.parametrize("x_shape, f_shape, strides, rate", GRAPHS, ids=["m1", "m2-stride2", "m3-rate2"])
def test_graph_matches_tensorflow(x_shape, f_shape, strides, rate):
    tensorflow = pytest.importorskip("tensorflow")
    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    rng = np.random.default_rng(19)
    x, f = rng.uniform(-1, 1, x_shape).astype(np.float32), rng.uniform(-1, 1, f_shape).astype(np.float32)
    w = rng.uniform(-1, 1, _same_out(x_shape, f_shape, strides)).astype(np.float32)
    for got, want in zip(_graph_run(tf, x, f, w, strides, rate), _graph_run(v1, x, f, w, strides, rate)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(want).max()))
