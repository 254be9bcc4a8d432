"""tf.nn.depthwise_conv2d (DepthwiseConv2dNative and its two backprop ops) and separable_conv2d:
forward against NumPy loops, gradients and the backprop ops' own gradients against finite
differences, TF's documented example, the same bits for any thread count, bad input in the house
layout, and values and gradients against TensorFlow (compat.v1, graph mode) where installed."""
from typing import NamedTuple

import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close, check_grad, check_grad_float32, run_forward
from pygrad import errors


def _rng(*key):
    return np.random.default_rng(abs(hash(repr(key))) % (2 ** 32))


# ---------------------------------------------------------------- reference (NumPy loops, no pygrad)


def ref_depthwise(x, f, strides, padding, dilations=(1, 1)):
    """y[n, i, j, c * M + m] = sum over the taps (a, b) inside the input of
    x[n, i * sh - pt + a * dh, j * sw - pl + b * dw, c] * f[a, b, c, m], in float64, with TF's
    padding rule on the dilated filter."""
    x, f = np.asarray(x, np.float64), np.asarray(f, np.float64)
    n, h, w, c = x.shape
    kh, kw, _, m = f.shape
    sizes = []
    for size, k, s, d in ((h, kh, strides[0], dilations[0]), (w, kw, strides[1], dilations[1])):
        k = (k - 1) * d + 1
        out = -(-size // s) if padding == "SAME" else -(-(size - k + 1) // s)
        sizes.append((out, max((out - 1) * s + k - size, 0) // 2 if padding == "SAME" else 0))
    (oh, pt), (ow, pl) = sizes
    y = np.zeros((n, oh, ow, c * m))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    ih, iw = i * strides[0] - pt + a * dilations[0], j * strides[1] - pl + b * dilations[1]
                    if 0 <= ih < h and 0 <= iw < w:
                        y[:, i, j, :] += (x[:, ih, iw, :, None] * f[a, b]).reshape(n, c * m)
    return y


class Case(NamedTuple):
    x: tuple
    f: tuple
    strides: tuple = (1, 1)
    padding: str = "SAME"
    rate: tuple = (1, 1)
    native: bool = False  # strides and dilations together: DepthwiseConv2dNative only

    @property
    def id(self):
        r = f"-rate{self.rate[0]}x{self.rate[1]}" if max(self.rate) > 1 else ""
        return f"x{self.x}-f{self.f}-s{self.strides[0]}x{self.strides[1]}-{self.padding}{r}".replace(" ", "")

    def fn(self, m=tf):
        def build(x, f):
            if self.native:
                return m.nn.depthwise_conv2d_native(x, f, [1, *self.strides, 1], self.padding,
                                                    dilations=[1, *self.rate, 1])
            rate = None if self.rate == (1, 1) else list(self.rate)
            return m.nn.depthwise_conv2d(x, f, [1, *self.strides, 1], self.padding, rate=rate)
        return build

    def inputs(self, dtype, *key):
        rng = _rng(self.id, dtype, *key)
        return [rng.uniform(-1, 1, self.x).astype(dtype), rng.uniform(-1, 1, self.f).astype(dtype)]

    def reference(self, x, f):
        return ref_depthwise(x, f, self.strides, self.padding, self.rate)


CASES = [
    Case((1, 4, 5, 2), (2, 3, 2, 1)),
    Case((2, 5, 6, 3), (3, 3, 3, 2), padding="VALID"),
    Case((2, 7, 6, 2), (3, 2, 2, 3), strides=(2, 3)),
    Case((1, 7, 8, 2), (3, 3, 2, 2), rate=(2, 3)),
    Case((2, 8, 7, 3), (2, 3, 3, 1), padding="VALID", rate=(3, 2)),
    Case((1, 9, 9, 2), (3, 3, 2, 2), strides=(2, 2), rate=(2, 2), native=True),
    Case((1, 2, 2, 2), (3, 3, 2, 2)),  # filter larger than the input
    Case((3, 3, 4, 4), (1, 1, 4, 3), padding="VALID"),
]
IDS = [c.id for c in CASES]
SMALL = [c for c in CASES if np.prod(c.x) + np.prod(c.f) <= 200]


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_matches_numpy(case, dtype):
    x, f = case.inputs(dtype)
    assert_close(run_forward(case.fn(), [x, f]), case.reference(x, f), dtype=dtype)


@pytest.mark.parametrize("case", CASES[:4], ids=IDS[:4])
def test_forward_with_shapes_known_only_at_run_time(case):
    x, f = case.inputs("float64", "dynamic")
    assert_close(run_forward(case.fn(), [x, f], static=False), case.reference(x, f))


def test_tf_documented_example():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32).reshape((1, 3, 2, 1))
    kernel = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32).reshape((2, 1, 1, 2))
    with tf.Session() as sess:
        y = tf.nn.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="VALID")
        assert y.name == "depthwise:0" and y.op.type == "DepthwiseConv2dNative"
        np.testing.assert_array_equal(sess.run(y), [[[[10, 14], [14, 20]], [[18, 26], [22, 32]]]])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_finite_differences(case):
    check_grad(case.fn(), case.inputs("float64", "grad"))


@pytest.mark.parametrize("case", CASES[1:4], ids=IDS[1:4])
def test_gradient_in_float32(case):
    check_grad_float32(case.fn(), case.inputs("float64", "grad32"))


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3], CASES[5]], ids=[IDS[0], IDS[2], IDS[3], IDS[5]])
def test_backprop_ops_gradients(case):
    """The gradients of DepthwiseConv2dNativeBackpropInput (w.r.t. filter and dy) and
    DepthwiseConv2dNativeBackpropFilter (w.r.t. input and dy)."""
    x, f = case.inputs("float64", "backprop")
    dy = _rng(case.id, "dy").uniform(-1, 1, case.reference(x, f).shape)

    def backprops(x, f, dy):
        return tf.gradients(case.fn()(x, f), [x, f], grad_ys=dy)

    check_grad(backprops, [x, f, dy])


def test_second_derivative():
    case = SMALL[0]
    check_grad(lambda x, f: tf.square(case.fn()(x, f)), case.inputs("float64", "order2"), order=2)


def test_results_repeat_bitwise():
    """float64 (the direct loops): the same bits for any thread count. float32 (oneDNN by default):
    the same bits for a given thread count (the filter gradient adds per-thread partial sums), and
    across thread counts the same to rounding."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 24, 24, 8))
    f = rng.standard_normal((3, 3, 8, 2))
    dy = rng.standard_normal((5, 24, 24, 16))

    def build(x, f):
        y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", rate=[2, 1])
        return [y] + tf.gradients(y, [x, f], grad_ys=tf.constant(dy.astype(x.dtype.as_numpy_dtype)))

    old = tf.get_num_threads()
    try:
        results = {}
        for dtype in (np.float64, np.float32):
            for threads in (1, 2, 3, 2):
                tf.set_num_threads(threads)
                results.setdefault((dtype, threads), []).append(run_forward(build, [x.astype(dtype),
                                                                                    f.astype(dtype)]))
    finally:
        tf.set_num_threads(old)
    for (dtype, threads), runs in results.items():
        first = results[dtype, 1][0] if dtype == np.float64 else runs[0]
        for run in runs:
            assert all(a.tobytes() == b.tobytes() for a, b in zip(first, run)), (dtype, threads)
        assert_close(runs[0][0], ref_depthwise(x, f, (1, 1), "SAME", (2, 1)), dtype=dtype)
        for a, b in zip(runs[0], results[dtype, 1][0]):  # sums that cancel: relative to the largest
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())


# ---------------------------------------------------------------- separable_conv2d


def test_separable_conv2d_is_depthwise_then_pointwise():
    rng = np.random.default_rng(4)
    x, dw, pw = rng.uniform(-1, 1, (2, 5, 5, 2)), rng.uniform(-1, 1, (3, 3, 2, 2)), rng.uniform(-1, 1, (1, 1, 4, 3))

    def build(x, dw, pw):
        return tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME", rate=[2, 2])

    want = ref_depthwise(x, dw, (1, 1), "SAME", (2, 2)) @ pw[0, 0]
    assert_close(run_forward(build, [x, dw, pw]), want)
    check_grad(build, [x, dw, pw])
    with tf.Graph().as_default():
        y = tf.nn.separable_conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([3, 3, 2, 1]), tf.zeros([1, 1, 2, 5]),
                                   [1, 1, 1, 1], "VALID")
        assert y.name == "separable_conv2d:0" and y.shape.as_list() == [1, 2, 2, 5]
        assert y.op.inputs[0].op.name == "separable_conv2d/depthwise"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("build, error, match", [
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 3, 2]), [1, 1, 1, 1], "SAME"),
     ValueError, r"DepthwiseConv2dNative 'depthwise': input depth must equal filter in_channels, got input: "
                 r"\(1, 5, 5, 2\) and filter: \(3, 3, 3, 2\) \(2 != 3\)\n  op defined at .*test_depthwise.py"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2], tf.int32), tf.zeros([3, 3, 2, 2], tf.int32),
                                    [1, 1, 1, 1], "SAME"), TypeError, r"DepthwiseConv2dNative 'depthwise': input has "
                                                                      r"dtype int32"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "FOO"),
     ValueError, r"DepthwiseConv2dNative 'depthwise': padding must be 'SAME' or 'VALID'"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 2]), [2, 1, 1, 1], "SAME"),
     ValueError, r"DepthwiseConv2dNative 'depthwise': strides must be \[1, sh, sw, 1\]"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 2]), [1, 2, 2, 1], "SAME",
                                    rate=[2, 2]), ValueError,
     r"DepthwiseConv2dNative 'depthwise': when rate is greater than 1, all strides must be 1"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([7, 3, 2, 2]), [1, 1, 1, 1], "VALID"),
     ValueError, r"DepthwiseConv2dNative 'depthwise': with VALID padding the dilated filter must fit in the input"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "VALID",
                                    rate=[3, 3]), ValueError,
     r"DepthwiseConv2dNative 'depthwise': with VALID padding the dilated filter must fit .* height 7"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "SAME",
                                    data_format="NCHW"), ValueError, r"data_format must be 'NHWC'"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([5, 5, 2]), tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "SAME", name="dw"),
     ValueError, r"DepthwiseConv2dNative 'dw': input must be 4-D"),
    (lambda: tf.nn.separable_conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 2]), tf.zeros([3, 3, 4, 2]),
                                    [1, 1, 1, 1], "SAME"), ValueError,
     r"Conv2D 'separable_conv2d': pointwise_filter must be \[1, 1"),
], ids=["channels", "int", "padding", "batch-stride", "rate-and-strides", "too-big", "too-big-dilated", "nchw",
        "rank", "pointwise"])
def test_bad_input(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_fed_shape_that_does_not_fit_is_invalid_argument():
    x = tf.placeholder(tf.float32, [None, None, None, 2])
    y = tf.nn.depthwise_conv2d(x, tf.ones([3, 3, 2, 1]), [1, 1, 1, 1], "VALID")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"DepthwiseConv2dNative 'depthwise'.*must fit"):
            sess.run(y, {x: np.ones((1, 2, 5, 2))})
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((1, 3, 3, 2))}), np.full((1, 1, 1, 2), 9.0))


# ---------------------------------------------------------------- against TensorFlow


@pytest.fixture(scope="module")
def tf1():
    tensorflow = pytest.importorskip("tensorflow")
    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    return v1


def _run(m, build, inputs, w):
    g = m.Graph()
    with g.as_default():
        phs = [m.placeholder(m.float32, a.shape) for a in inputs]
        y = build(*phs)
        grads = m.gradients(y, phs, grad_ys=m.constant(w))
        with m.Session(graph=g) as sess:
            return sess.run([y] + grads, dict(zip(phs, inputs)))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_tensorflow(tf1, case):
    x, f = case.inputs("float32", "tf")
    w = _rng(case.id, "w").standard_normal(case.reference(x, f).shape).astype(np.float32)
    ours, theirs = _run(tf, case.fn(tf), [x, f], w), _run(tf1, case.fn(tf1), [x, f], w)
    if case.native:
        # TF's CPU backprop kernels ignore the native op's dilations (tensorflow/tensorflow#19992,
        # #56498); tf.nn.depthwise_conv2d never meets that (it dilates by space_to_batch), and
        # pygrad's gradients are checked against finite differences above.
        ours, theirs = ours[:1], theirs[:1]
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_separable_conv2d_matches_tensorflow(tf1):
    rng = np.random.default_rng(5)
    inputs = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((2, 6, 5, 3), (3, 3, 3, 2), (1, 1, 6, 4))]
    w = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)

    def build(m):
        return lambda x, dw, pw: m.nn.separable_conv2d(x, dw, pw, [1, 2, 2, 1], "SAME")

    for got, want in zip(_run(tf, build(tf), inputs, w), _run(tf1, build(tf1), inputs, w)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
