"""Convolution and pooling: conv2d, max_pool, avg_pool and their gradient ops (NHWC).

Table-driven: one row per geometry drives the forward test (against the loop references below, in
float64 and float32), the gradient test (finite differences in float64) and the float32 gradient
test. Hand-computed cases, max ties and padding, bad input, the kernels called directly (adjoint
identities, thread-count independence) and an optional TensorFlow cross-check follow."""
import inspect
import os
import threading
from typing import NamedTuple

import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close, check_grad, check_grad_float32, draw, evaluate, run_forward, shape_id
from pygrad import _C

FLOATS = ("float64", "float32")


def _rng(*key):
    """A generator seeded by the test's parameters, so every case draws its own inputs."""
    return np.random.default_rng(abs(hash(repr(key))) % (2 ** 32))


# ---------------------------------------------------------------- references (NumPy loops, no pygrad)


def ref_window(size, k, stride, padding):
    """(output size, padding before) of one spatial dimension, by TensorFlow's documented rule."""
    if padding == "SAME":
        out = (size + stride - 1) // stride
        return out, max((out - 1) * stride + k - size, 0) // 2
    return (size - k + stride) // stride, 0


def _taps(x_shape, k, strides, padding, dilations=(1, 1)):
    """For each output position (i, j): the valid input positions of its window, in row-major order.
    A dilation d puts the taps d apart: the window is (k - 1) * d + 1 wide."""
    _, h, w, _ = x_shape
    (dh, dw) = dilations
    oh, pt = ref_window(h, (k[0] - 1) * dh + 1, strides[0], padding)
    ow, pl = ref_window(w, (k[1] - 1) * dw + 1, strides[1], padding)
    taps = {}
    for i in range(oh):
        for j in range(ow):
            taps[i, j] = [(a, b, i * strides[0] - pt + a * dh, j * strides[1] - pl + b * dw)
                          for a in range(k[0]) for b in range(k[1])
                          if 0 <= i * strides[0] - pt + a * dh < h and 0 <= j * strides[1] - pl + b * dw < w]
    return oh, ow, taps


def ref_conv2d(x, f, strides, padding, dilations=(1, 1)):
    """y[n, i, j, :] = sum over the window's taps of x[n, ih, iw, :] @ f[a, b], in float64."""
    x, f = np.asarray(x, np.float64), np.asarray(f, np.float64)
    oh, ow, taps = _taps(x.shape, f.shape[:2], strides, padding, dilations)
    y = np.zeros((x.shape[0], oh, ow, f.shape[3]))
    for (i, j), window in taps.items():
        for a, b, ih, iw in window:
            y[:, i, j, :] += x[:, ih, iw, :] @ f[a, b]
    return y


def ref_pool(x, ksize, strides, padding, kind):
    """Max or mean over the valid positions of each window (padding never counts), in float64."""
    x = np.asarray(x, np.float64)
    oh, ow, taps = _taps(x.shape, ksize, strides, padding)
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for (i, j), window in taps.items():
        values = np.stack([x[:, ih, iw, :] for _, _, ih, iw in window], axis=1)
        y[:, i, j, :] = values.max(axis=1) if kind == "max" else values.mean(axis=1)
    return y


def ref_max_pool_grad(x, dy, ksize, strides, padding):
    """Each window's dy goes to the FIRST position (row-major in the window) holding its max (TF)."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    _, _, taps = _taps(x.shape, ksize, strides, padding)
    dx = np.zeros_like(x)
    n, c = np.meshgrid(np.arange(x.shape[0]), np.arange(x.shape[3]), indexing="ij")
    for (i, j), window in taps.items():
        values = np.stack([x[:, ih, iw, :] for _, _, ih, iw in window], axis=1)
        first = values.argmax(axis=1)  # numpy's argmax is the first maximum
        rows = np.array([ih for _, _, ih, _ in window])[first]
        cols = np.array([iw for _, _, _, iw in window])[first]
        np.add.at(dx, (n, rows, cols, c), dy[:, i, j, :])
    return dx


# ---------------------------------------------------------------- conv2d table


class Conv(NamedTuple):
    x: tuple
    f: tuple
    strides: tuple
    padding: str
    note: str = ""
    dilations: tuple = (1, 1)

    @property
    def id(self):
        rate = "" if self.dilations == (1, 1) else f"-d{self.dilations[0]}{self.dilations[1]}"
        return f"{shape_id(self.x)}*{shape_id(self.f)}-s{self.strides[0]}{self.strides[1]}-{self.padding}{rate}"

    def fn(self, x, f):
        return tf.nn.conv2d(x, f, strides=[1, *self.strides, 1], padding=self.padding,
                            dilations=[1, *self.dilations, 1])

    def ref(self, x, f):
        return ref_conv2d(x, f, self.strides, self.padding, self.dilations)


CONV = [
    Conv((2, 7, 5, 3), (3, 3, 3, 4), (1, 1), "SAME"),
    Conv((2, 7, 5, 3), (3, 3, 3, 4), (2, 2), "SAME"),
    Conv((2, 7, 5, 3), (3, 3, 3, 4), (1, 1), "VALID"),
    Conv((2, 7, 5, 3), (3, 3, 3, 4), (2, 2), "VALID"),
    Conv((3, 6, 6, 1), (5, 5, 1, 2), (1, 1), "SAME", "even input, two rows of padding on each side"),
    Conv((2, 8, 7, 2), (2, 2, 2, 3), (2, 2), "SAME", "even filter: the odd padding column goes right"),
    Conv((1, 4, 6, 2), (3, 2, 2, 2), (3, 2), "SAME", "unequal strides"),
    Conv((2, 3, 3, 2), (5, 5, 2, 3), (1, 1), "SAME", "filter larger than the input"),
    Conv((2, 5, 7, 4), (1, 1, 4, 3), (1, 1), "VALID", "pointwise: the patches are the input"),
    Conv((3, 4, 3, 2), (4, 3, 2, 5), (2, 2), "VALID", "filter covers the input: the patches are the input"),
    Conv((2, 5, 5, 3), (1, 1, 3, 2), (2, 2), "SAME", "strided pointwise: im2col"),
]
# Dilated: composed of pad, reshapes, transposes and one plain convolution (conv_ops._dilated_conv2d).
DILATED = [
    Conv((2, 9, 8, 3), (3, 3, 3, 4), (1, 1), "SAME", dilations=(2, 2)),
    Conv((1, 10, 7, 2), (3, 2, 2, 3), (1, 1), "VALID", dilations=(2, 3)),
    Conv((2, 9, 9, 2), (3, 3, 2, 2), (2, 2), "SAME", "strides and dilations together (tf.nn.conv2d allows it)",
         dilations=(2, 2)),
    Conv((1, 5, 6, 2), (3, 3, 2, 2), (1, 1), "SAME", "the dilated window wider than the input", dilations=(4, 4)),
    Conv((1, 8, 8, 1), (2, 2, 1, 2), (3, 1), "SAME", "even filter, unequal strides and rates", dilations=(1, 3)),
]
SMALL_CONV = [Conv((1, 5, 4, 2), (3, 3, 2, 2), (2, 2), "SAME"), Conv((2, 4, 4, 1), (2, 3, 1, 2), (1, 1), "VALID")]


def _conv_inputs(case, dtype, *key):
    rng = _rng(case.id, dtype, *key)
    return [draw("real", case.x, dtype, rng), draw("real", case.f, dtype, rng)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV + DILATED, ids=lambda c: c.id)
def test_conv2d_forward(case, dtype):
    x, f = _conv_inputs(case, dtype)
    # Each output is a dot product: its rounding error is relative to |x| conv |f|, not to the result.
    assert_close(run_forward(case.fn, [x, f]), case.ref(x, f), dtype=dtype, scale=case.ref(np.abs(x), np.abs(f)))


@pytest.mark.parametrize("case", [CONV[1], CONV[3], CONV[5]], ids=lambda c: c.id)
def test_conv2d_dynamic_shapes(case):
    """Every dimension unknown until run time: the padding is computed from the fed shapes."""
    x, f = _conv_inputs(case, "float64")
    assert_close(run_forward(case.fn, [x, f], static=False), ref_conv2d(x, f, case.strides, case.padding))
    check_grad(case.fn, [x, f], static=False)


def test_conv2d_static_shape_keeps_unknown_batch():
    y = tf.nn.conv2d(tf.placeholder(tf.float32, [None, 28, 28, 1]), tf.zeros([5, 5, 1, 32]), [1, 2, 2, 1], "SAME")
    assert y.shape.as_list() == [None, 14, 14, 32]
    y = tf.nn.conv2d(tf.placeholder(tf.float32, [None, None, 9, 3]), tf.zeros([3, 4, 3, 2]), 2, "VALID")
    assert y.shape.as_list() == [None, None, 3, 2]
    dx, df = tf.gradients(y, [y.op.inputs[0], y.op.inputs[1]])
    assert dx.op.type == "Conv2DBackpropInput" and dx.shape.as_list() == [None, None, 9, 3]
    assert df.op.type == "Conv2DBackpropFilter" and df.shape.as_list() == [3, 4, 3, 2]


@pytest.mark.parametrize("case", CONV + SMALL_CONV + DILATED, ids=lambda c: c.id)
def test_conv2d_grad(case):
    """Input and filter gradients: elementwise for small cases, by projection above 200 elements."""
    check_grad(case.fn, _conv_inputs(case, "float64", "grad"))


@pytest.mark.parametrize("case", [CONV[1], CONV[8]], ids=lambda c: c.id)
def test_conv2d_grad_float32(case):
    check_grad_float32(case.fn, _conv_inputs(case, "float64", "grad32"))


@pytest.mark.parametrize("case", [SMALL_CONV[0], CONV[3], CONV[8], CONV[9]], ids=lambda c: c.id)
def test_conv2d_backprop_ops_grad(case):
    """The gradients of Conv2DBackpropInput (w.r.t. filter and dy) and Conv2DBackpropFilter
    (w.r.t. input and dy): differentiate (dx, dfilter) = gradients(conv2d(x, f), grad_ys=dy)."""
    x, f = _conv_inputs(case, "float64", "second")
    y_shape = ref_conv2d(x, f, case.strides, case.padding).shape
    dy = draw("real", y_shape, "float64", _rng(case.id, "dy"))

    def backprops(x, f, dy):
        return tf.gradients(case.fn(x, f), [x, f], grad_ys=dy)

    check_grad(backprops, [x, f, dy])


@pytest.mark.parametrize("case", [SMALL_CONV[0], DILATED[1]], ids=lambda c: c.id)
def test_conv2d_second_derivative(case):
    check_grad(case.fn, _conv_inputs(case, "float64", "order2"), order=2)


def test_dilated_conv2d_names_shapes_and_atrous_conv2d():
    """One output named as the op (the composition's nodes under it), static shapes with the batch
    unknown; tf.nn.atrous_conv2d is conv2d with dilations [1, rate, rate, 1]."""
    case = DILATED[0]
    x, f = _conv_inputs(case, "float64", "atrous")
    xs = tf.placeholder(tf.float64, [None, 9, 8, 3])
    y = tf.nn.conv2d(xs, f, 1, "SAME", dilations=2, name="layer")
    assert y.op.name == "layer" and y.shape.as_list() == [None, 9, 8, 4]
    assert y.op.inputs[0].op.name.startswith("layer/")
    with tf.Session() as sess:  # the batch known only when fed
        for n in (1, 2):
            assert_close(sess.run(y, {xs: x[:n]}), case.ref(x[:n], f))
    assert_close(run_forward(lambda a, b: tf.nn.atrous_conv2d(a, b, 2, "SAME"), [x, f]), case.ref(x, f))
    assert tf.nn.atrous_conv2d(tf.zeros([1, 9, 9, 3]), tf.zeros([3, 3, 3, 2]), 3, "VALID").shape.as_list() == [
        1, 3, 3, 2]


def test_conv2d_argument_forms():
    """strides as [1, h, w, 1], [h, w] or an int; `filters=` as TF2's alias of filter."""
    case = CONV[6]
    x, f = _conv_inputs(case, "float64", "forms")
    want = ref_conv2d(x, f, case.strides, case.padding)
    for strides in ([1, 3, 2, 1], [3, 2]):
        assert_close(run_forward(lambda a, b: tf.nn.conv2d(a, b, strides, "SAME"), [x, f]), want)
    assert_close(run_forward(lambda a, b: tf.nn.conv2d(input=a, filters=b, strides=[3, 2], padding="SAME",
                                                       dilations=1), [x, f]), want)
    y = tf.nn.conv2d(tf.placeholder(tf.float32, [1, 8, 8, 2]), tf.zeros([3, 3, 2, 4]), 2, "VALID", name="layer")
    assert y.op.name == "layer" and y.op.type == "Conv2D" and y.shape.as_list() == [1, 3, 3, 4]
    with pytest.raises(ValueError, match="filter or filters, not both"):
        tf.nn.conv2d(y, tf.zeros([1, 1, 4, 1]), 1, "SAME", filters=tf.zeros([1, 1, 4, 1]))


def test_conv2d_hand_computed():
    """x = 1..9 as 3x3, f = [[1, 0], [0, -1]]: y = x[i, j] - x[i+1, j+1]. With SAME stride 2 the
    padding (one row and column) goes at the bottom and right, so the last row and column read zeros."""
    x = np.arange(1.0, 10.0).reshape(1, 3, 3, 1)
    f = np.array([[1.0, 0.0], [0.0, -1.0]]).reshape(2, 2, 1, 1)
    valid = run_forward(lambda a, b: tf.nn.conv2d(a, b, [1, 1, 1, 1], "VALID"), [x, f])
    assert_close(valid, np.full((1, 2, 2, 1), -4.0))
    same = run_forward(lambda a, b: tf.nn.conv2d(a, b, [1, 2, 2, 1], "SAME"), [x, f])
    assert_close(same, np.array([[-4.0, 3.0], [7.0, 9.0]]).reshape(1, 2, 2, 1))
    _, (dx, df) = evaluate(lambda a, b: tf.nn.conv2d(a, b, [1, 2, 2, 1], "SAME"), [x, f])
    # Output (i, j) reads x[2i + a, 2j + b] with tap f[a, b] (zero outside): dx collects f, df sums x.
    assert_close(dx, np.array([[1, 0, 1], [0, -1, 0], [1, 0, 1]], np.float64).reshape(1, 3, 3, 1))
    assert_close(df, np.array([[1 + 3 + 7 + 9, 2 + 8], [4 + 6, 5]], np.float64).reshape(2, 2, 1, 1))


# ---------------------------------------------------------------- pooling table


class Pool(NamedTuple):
    x: tuple
    ksize: tuple
    strides: tuple
    padding: str
    note: str = ""

    @property
    def id(self):
        return f"{shape_id(self.x)}-k{self.ksize[0]}{self.ksize[1]}-s{self.strides[0]}{self.strides[1]}-{self.padding}"

    def fn(self, kind):
        pool = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
        return lambda x: pool(x, [1, *self.ksize, 1], [1, *self.strides, 1], self.padding)


POOL = [
    Pool((2, 7, 5, 3), (2, 2), (2, 2), "SAME"),
    Pool((2, 7, 5, 3), (2, 2), (2, 2), "VALID"),
    Pool((2, 7, 5, 3), (3, 3), (1, 1), "SAME"),
    Pool((2, 7, 5, 3), (3, 3), (1, 1), "VALID"),
    Pool((1, 6, 6, 2), (3, 3), (2, 2), "SAME", "overlapping windows"),
    Pool((2, 5, 7, 1), (2, 3), (1, 2), "SAME", "rectangular window, unequal strides"),
    Pool((1, 2, 3, 2), (4, 4), (1, 1), "SAME", "window larger than the input"),
    Pool((2, 5, 6, 19), (3, 3), (2, 2), "SAME", "19 channels: vector body and remainder of the channel loops"),
]
KINDS = ("max", "avg")


def _distinct(shape, rng):
    """Values at least 0.05 apart, so no finite-difference step moves the max of a window."""
    return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.05 - 1.0


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", POOL, ids=lambda c: c.id)
def test_pool_forward(case, kind, dtype):
    x = draw("real", case.x, dtype, _rng(case.id, kind, dtype))
    assert_close(run_forward(case.fn(kind), [x]), ref_pool(x, case.ksize, case.strides, case.padding, kind),
                 dtype=dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", POOL, ids=lambda c: c.id)
def test_pool_grad(case, kind):
    x = _distinct(case.x, _rng(case.id, kind, "grad"))
    check_grad(case.fn(kind), [x])


@pytest.mark.parametrize("kind", KINDS)
def test_pool_grad_dynamic_shapes(kind):
    case = POOL[4]
    x = _distinct(case.x, _rng(case.id, kind, "dynamic"))
    assert_close(run_forward(case.fn(kind), [x], static=False),
                 ref_pool(x, case.ksize, case.strides, case.padding, kind))
    check_grad(case.fn(kind), [x], static=False)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", POOL, ids=lambda c: c.id)
def test_max_pool_grad_ties_go_to_the_first_max(case, dtype):
    """Small integers, so windows tie: the whole of each window's dy goes to its first maximum."""
    rng = _rng(case.id, "ties", dtype)
    x = draw("grid", case.x, dtype, rng)
    dy = draw("real", ref_pool(x, case.ksize, case.strides, case.padding, "max").shape, dtype, rng)
    _, (dx,) = evaluate(case.fn("max"), [x], grad_ys=dy)
    assert_close(dx, ref_max_pool_grad(x, dy, case.ksize, case.strides, case.padding), dtype=dtype)


def test_max_pool_hand_computed():
    # One 2x2 window holding 3 twice: the first 3 (row-major) takes the gradient.
    x = np.array([1.0, 3.0, 3.0, 2.0]).reshape(1, 2, 2, 1)
    _, (dx,) = evaluate(lambda t: tf.nn.max_pool(t, 2, 2, "VALID"), [x])
    assert_close(dx, np.array([0.0, 1.0, 0.0, 0.0]).reshape(1, 2, 2, 1))
    # A constant input, windows 2x2 stride 1: each window's gradient goes to its top-left position.
    _, (dx,) = evaluate(lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"), [np.ones((1, 3, 3, 1))])
    assert_close(dx, np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0]], np.float64).reshape(1, 3, 3, 1))


def test_max_pool_padding_never_wins():
    """All-negative input with SAME padding: the padding (as -inf) neither wins the max nor takes
    any gradient; a window of -inf still picks its first position."""
    x = np.array([[-4.0, -3.0], [-2.0, -1.0]]).reshape(1, 2, 2, 1)
    y, (dx,) = evaluate(lambda t: tf.nn.max_pool(t, 3, 1, "SAME"), [x])
    assert_close(y, np.full((1, 2, 2, 1), -1.0))
    assert_close(dx, np.array([[0.0, 0.0], [0.0, 4.0]]).reshape(1, 2, 2, 1))
    x = np.full((1, 3, 3, 1), -np.inf)
    y, (dx,) = evaluate(lambda t: tf.nn.max_pool(t, 2, 2, "SAME"), [x])
    assert_close(y, np.full((1, 2, 2, 1), -np.inf))
    assert_close(dx, np.array([[1, 0, 1], [0, 0, 0], [1, 0, 1]], np.float64).reshape(1, 3, 3, 1))


def test_avg_pool_divides_by_the_valid_count():
    """x = 0..8 as 3x3, 2x2 windows, stride 1, SAME: the padding row and column (bottom, right) are
    not counted, so border windows average 2 or 1 values; a constant input stays constant."""
    x = np.arange(9.0).reshape(1, 3, 3, 1)
    y, (dx,) = evaluate(lambda t: tf.nn.avg_pool(t, 2, 1, "SAME"), [x])
    assert_close(y, np.array([[2, 3, 3.5], [5, 6, 6.5], [6.5, 7.5, 8]]).reshape(1, 3, 3, 1))
    # dx[i, j] = sum over the windows holding (i, j) of 1 / (their count).
    assert_close(dx, np.array([[0.25, 0.5, 0.75], [0.5, 1, 1.5], [0.75, 1.5, 2.25]]).reshape(1, 3, 3, 1))
    ones = np.ones((2, 5, 4, 3))
    assert_close(run_forward(lambda t: tf.nn.avg_pool(t, 3, 2, "SAME"), [ones]), np.ones((2, 3, 2, 3)))


@pytest.mark.parametrize("case", [POOL[0], POOL[4], POOL[6]], ids=lambda c: c.id)
def test_avg_pool_grad_op_grad(case):
    """AvgPoolGrad is linear in dy; its gradient is avg_pool of the incoming gradient."""
    x = draw("real", case.x, "float64", _rng(case.id, "avg2"))
    dy = draw("real", ref_pool(x, case.ksize, case.strides, case.padding, "avg").shape, "float64", _rng(case.id))
    check_grad(lambda x, dy: tf.gradients(case.fn("avg")(x), x, grad_ys=dy)[0], [x, dy], wrt=[1])


def test_pool_grad_ops_and_max_pool_grad_is_not_differentiable():
    x = tf.placeholder(tf.float64, [None, 4, 4, 2])
    (g_max,) = tf.gradients(tf.nn.max_pool(x, 2, 2, "SAME"), x)
    (g_avg,) = tf.gradients(tf.nn.avg_pool(x, 2, 2, "SAME"), x)
    assert g_max.op.type == "MaxPoolGrad" and g_avg.op.type == "AvgPoolGrad"
    assert g_max.shape.as_list() == g_avg.shape.as_list() == [None, 4, 4, 2]
    assert tf.gradients(g_max, x) == [None]  # MaxPoolGrad declares itself not differentiable


def test_pool_argument_forms():
    """ksize and strides as ints, [h, w] or [1, h, w, 1]; `input=` as TF's alias of value."""
    x = draw("real", (2, 6, 5, 3), "float64", _rng("forms"))
    want = ref_pool(x, (3, 2), (2, 1), "SAME", "max")
    for ksize, strides in (([1, 3, 2, 1], [1, 2, 1, 1]), ([3, 2], [2, 1])):
        assert_close(run_forward(lambda t: tf.nn.max_pool(t, ksize, strides, "SAME"), [x]), want)
    assert_close(run_forward(lambda t: tf.nn.max_pool2d(input=t, ksize=[3, 2], strides=[2, 1], padding="SAME"), [x]),
                 want)
    assert_close(run_forward(lambda t: tf.nn.avg_pool(t, 2, 2, "VALID"), [x]),
                 ref_pool(x, (2, 2), (2, 2), "VALID", "avg"))


# ---------------------------------------------------------------- bad input


def test_channel_mismatch_names_op_shapes_and_site():
    x = tf.placeholder(tf.float32, [None, 28, 28, 3])
    f = tf.zeros([5, 5, 1, 32])
    line = inspect.currentframe().f_lineno + 3
    with pytest.raises(ValueError, match=r"Conv2D 'Conv2D(_\d+)?': input depth must equal filter in_channels, "
                                         r"got input: \(\?, 28, 28, 3\) and filter: \(5, 5, 1, 32\) \(3 != 1\)") as e:
        tf.nn.conv2d(x, f, strides=[1, 1, 1, 1], padding="SAME")
    assert f"op defined at {__file__}:{line}" in str(e.value) or f"{os.path.basename(__file__)}:{line}" in str(e.value)


@pytest.mark.parametrize("build, match", [
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [28, 28, 1]), tf.zeros([5, 5, 1, 32]), [1, 1, 1, 1], "SAME"),
     r"Conv2D 'Conv2D(_\d+)?': input must be 4-D \[batch, height, width, channels\], got input: \(28, 28, 1\)"),
    (lambda: tf.nn.max_pool(tf.placeholder(tf.float32, [28, 28, 1]), 2, 2, "SAME"),
     r"MaxPool 'MaxPool(_\d+)?': input must be 4-D"),
    (lambda: tf.nn.avg_pool(tf.placeholder(tf.float32, [None, 28, 28]), 2, 2, "VALID"),
     r"AvgPool 'AvgPool(_\d+)?': input must be 4-D"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 1, 28, 28]), tf.zeros([5, 5, 1, 32]), [1, 1, 1, 1],
                          "SAME", data_format="NCHW"),
     r"Conv2D 'Conv2D(_\d+)?': data_format must be 'NHWC', got 'NCHW'"),
    (lambda: tf.nn.max_pool(tf.placeholder(tf.float32, [None, 1, 28, 28]), 2, 2, "SAME", data_format="NCHW"),
     r"MaxPool 'MaxPool(_\d+)?': data_format must be 'NHWC'"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, None, 8, 1]), tf.zeros([3, 3, 1, 2]), 1, "SAME",
                          dilations=[1, 2, 2, 1]),
     r"Conv2D 'Conv2D(_\d+)?': with dilations \[1, 2, 2, 1\] the input must be 4-D with its height, width and "
     r"channels known when the graph is built, and the filter's shape known; got input: \(\?, \?, 8, 1\)"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 8, 8, 1]), tf.zeros([3, 3, 1, 2]), 1, "SAME",
                          dilations=[2, 1, 1, 1]),
     r"Conv2D 'Conv2D(_\d+)?': dilations other than 1 are not supported, got \[2, 1, 1, 1\]"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 8, 8, 2]), tf.zeros([3, 3, 1, 2]), 1, "SAME",
                          dilations=2),
     r"Conv2D 'Conv2D(_\d+)?': input depth must equal filter in_channels, got input: \(\?, 8, 8, 2\) and filter: "
     r"\(3, 3, 1, 2\) \(2 != 1\)"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 8, 8, 1]), tf.zeros([3, 3, 1, 2]), 1, "VALID",
                          dilations=4),
     r"with VALID padding the dilated filter \(9 wide: 3 taps, dilation 4\) must fit in the input, got input: "
     r"\(\?, 8, 8, 1\)"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 8, 8, 1]), tf.zeros([3, 3, 1, 2]), [2, 1, 1, 1], "SAME"),
     r"strides must be \[1, sh, sw, 1\] \(none over the batch or the channels\), got \[2, 1, 1, 1\]"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 8, 8, 1]), tf.zeros([3, 3, 1, 2]), 1, "FULL"),
     r"padding must be 'SAME' or 'VALID', got 'FULL'"),
    (lambda: tf.nn.conv2d(tf.placeholder(tf.float32, [None, 4, 8, 1]), tf.zeros([5, 3, 1, 2]), 1, "VALID"),
     r"with VALID padding the filter must fit in the input, got input: \(\?, 4, 8, 1\) and filter height 5 \(4 < 5\)"),
    (lambda: tf.nn.max_pool(tf.placeholder(tf.float32, [None, 4, 8, 1]), [1, 1, 2, 2], 1, "SAME"),
     r"ksize must be \[1, kh, kw, 1\]"),
], ids=["conv-rank3", "maxpool-rank3", "avgpool-rank3", "conv-nchw", "pool-nchw", "dilations-unknown-height",
        "dilations-batch", "dilations-depth", "dilations-valid-too-small", "strides",
        "padding", "valid-too-small", "ksize-depth"])
def test_bad_input_raises_at_build_time(build, match):
    with pytest.raises(ValueError, match=match) as e:
        build()
    assert "op defined at" in str(e.value) and os.path.basename(__file__) in str(e.value)


def test_bad_dtypes_raise_type_error():
    with pytest.raises(TypeError, match=r"Conv2D 'Conv2D(_\d+)?': input has dtype int32"):
        tf.nn.conv2d(tf.placeholder(tf.int32, [1, 4, 4, 1]), tf.zeros([2, 2, 1, 1], tf.int32), 1, "SAME")
    with pytest.raises(TypeError, match=r"input and filter must have one dtype, got input: float32 and filter: "
                                        r"float64"):
        tf.nn.conv2d(tf.placeholder(tf.float32, [1, 4, 4, 1]), tf.zeros([2, 2, 1, 1], tf.float64), 1, "SAME")


def test_fed_shape_contradicting_the_filter_raises_and_session_stays_usable():
    x = tf.placeholder(tf.float32, [None, None, None, None])
    y = tf.nn.conv2d(x, tf.ones([2, 2, 1, 1]), 1, "VALID")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Conv2D 'Conv2D(_\d+)?': input depth must equal "
                                                                  r"filter in_channels.*\(3 != 1\)"):
            sess.run(y, {x: np.ones((1, 4, 4, 3), np.float32)})
        assert_close(sess.run(y, {x: np.ones((1, 3, 3, 1), np.float32)}), np.full((1, 2, 2, 1), 4.0, np.float32))


# ---------------------------------------------------------------- the kernels, called directly


def _conv_call(kernel, ins, out_shape, strides, pads):
    out = np.empty(out_shape, ins[0].dtype)
    _C.call(kernel, ins, [out], {"strides": list(strides), "pad_top": pads[0], "pad_left": pads[1]})
    return out


def test_conv_kernels_are_adjoint_deterministic_and_agree_across_threads():
    """A batch of several scratch chunks: forward against the reference, <conv(x, f), dy> =
    <x, dx> = <f, df>; bitwise the same results when run twice with the same thread count, and the
    same to rounding with 1 and 2 threads (the BLAS may split its sums differently per thread count)."""
    rng = _rng("chunks")
    x, f = rng.standard_normal((12, 28, 28, 8)), rng.standard_normal((5, 5, 8, 16))
    dy = rng.standard_normal((12, 14, 14, 16))
    old = tf.get_num_threads()
    results = []
    try:
        for threads in (1, 1, 2, 2):
            tf.set_num_threads(threads)
            results.append([_conv_call("conv2d_fwd", [x, f], dy.shape, (2, 2), (1, 1)),
                            _conv_call("conv2d_bwd_input", [f, dy], x.shape, (2, 2), (1, 1)),
                            _conv_call("conv2d_bwd_filter", [x, dy], f.shape, (2, 2), (1, 1))])
    finally:
        tf.set_num_threads(old)
    for one, again, two, two_again in zip(*results):
        np.testing.assert_array_equal(one, again)
        np.testing.assert_array_equal(two, two_again)
        np.testing.assert_allclose(two, one, rtol=1e-12, atol=1e-12 * np.abs(one).max())
    y, dx, df = results[0]
    assert_close(y, ref_conv2d(x, f, (2, 2), "SAME"))
    dots = [np.vdot(y, dy), np.vdot(x, dx), np.vdot(f, df)]
    np.testing.assert_allclose(dots[1:], [dots[0]] * 2, rtol=1e-12)


def test_a_kernel_whose_loop_runs_inline_gives_the_pools_bits():
    """Two threads call the float64 filter gradient at once with two pygrad threads: while one's loop
    holds the pool, the other's runs its chunks inline, as a loaded machine makes every loop do. Each
    chunk's product must then still be one BLAS call, as on the pool, or the bits change."""
    rng = _rng("inline")
    x, dy = rng.standard_normal((12, 28, 28, 8)), rng.standard_normal((12, 14, 14, 16))
    old = tf.get_num_threads()
    tf.set_num_threads(2)
    try:
        want = _conv_call("conv2d_bwd_filter", [x, dy], (5, 5, 8, 16), (2, 2), (1, 1))
        got = []
        callers = [threading.Thread(target=lambda: got.extend(
            _conv_call("conv2d_bwd_filter", [x, dy], (5, 5, 8, 16), (2, 2), (1, 1)) for _ in range(30)))
            for _ in range(2)]
        for t in callers:
            t.start()
        for t in callers:
            t.join()
    finally:
        tf.set_num_threads(old)
    assert len(got) == 60
    for g in got:
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("call, error, match", [
    (lambda: _C.call("conv2d_fwd", [np.ones((1, 4, 4, 2), np.float32), np.ones((2, 2, 3, 1), np.float32)],
                     [np.empty((1, 3, 3, 1), np.float32)], {"strides": [1, 1], "pad_top": 0, "pad_left": 0}),
     ValueError, r"conv2d_fwd: input depth must equal filter in_channels.*\(2 != 3\)"),
    (lambda: _C.call("conv2d_fwd", [np.ones((1, 4, 4, 1), np.float32), np.ones((2, 2, 1, 1), np.float32)],
                     [np.empty((1, 6, 3, 1), np.float32)], {"strides": [1, 1], "pad_top": 0, "pad_left": 0}),
     ValueError, "pad_top 0 and 6 output rows do not fit input height 4"),
    (lambda: _C.call("conv2d_bwd_filter", [np.ones((1, 4, 4, 1)), np.ones((1, 3, 3, 1))], [np.empty((2, 2, 1, 1))],
                     {"strides": [1, 1], "pad_top": 2, "pad_left": 0}), ValueError, "pad_top 2"),
    (lambda: _C.call("conv2d_bwd_input", [np.ones((2, 2, 1, 1)), np.ones((1, 3, 3, 1), np.float32)],
                     [np.empty((1, 4, 4, 1))], {"strides": [1, 1], "pad_top": 0, "pad_left": 0}),
     TypeError, "one dtype"),
    (lambda: _C.call("max_pool_fwd", [np.ones((1, 4, 4, 1))], [np.empty((1, 2, 2, 1))], {"strides": [2, 2]}),
     ValueError, "missing attribute 'ksize'"),
    (lambda: _C.call("max_pool_bwd", [np.ones((1, 4, 4, 1)), np.ones((1, 2, 2, 1)), np.ones((1, 2, 3, 1))],
                     [np.empty((1, 4, 4, 1))], {"ksize": [2, 2], "strides": [2, 2], "pad_top": 0, "pad_left": 0}),
     ValueError, r"dy must have the shape of y \(1, 2, 2, 1\)"),
    (lambda: _C.call("avg_pool_fwd", [np.ones((1, 4, 4, 1), np.int32)], [np.empty((1, 2, 2, 1), np.int32)],
                     {"ksize": [2, 2], "strides": [2, 2], "pad_top": 0, "pad_left": 0}), TypeError, "int32"),
], ids=["channels", "rows", "pad", "dtype", "attr", "dy-shape", "int"])
def test_kernels_reject_bad_calls(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------- TensorFlow itself (optional)


def test_cross_check_with_tensorflow(tf_peer):
    """SAME, stride 2: conv2d with both gradients, and both pools (tied inputs) with theirs."""
    rng = _rng("peer")
    x, f = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 3, 3, 4))
    xt = draw("grid", (2, 7, 6, 3), "float64", rng)
    cases = [(lambda m, a, b: m.nn.conv2d(a, b, [1, 2, 2, 1], "SAME"), [x, f]),
             (lambda m, a: m.nn.max_pool(a, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), [xt]),
             (lambda m, a: m.nn.avg_pool(a, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), [x])]
    for case, inputs in cases:
        ours_out, ours_grads = evaluate(lambda *ts: case(tf, *ts), inputs)
        g = tf_peer.Graph()
        with g.as_default():
            ts = [tf_peer.constant(a) for a in inputs]
            out = case(tf_peer, *ts)
            with tf_peer.Session(graph=g) as s:
                theirs = s.run([out] + tf_peer.gradients(out, ts))
        assert_close(ours_out, theirs[0], rtol=1e-12)
        for ours, want in zip(ours_grads, theirs[1:]):
            assert_close(ours, want, rtol=1e-12)


@pytest.mark.parametrize("case", [
    lambda m, a, b: m.nn.conv2d(a, b, [1, 1, 1, 1], "SAME", dilations=[1, 2, 3, 1]),
    lambda m, a, b: m.nn.conv2d(a, b, [1, 2, 1, 1], "VALID", dilations=[1, 2, 2, 1]),
    lambda m, a, b: m.nn.atrous_conv2d(a, b, 2, "SAME"),
], ids=["same", "strided-valid", "atrous"])
def test_dilated_cross_check_with_tensorflow(tf_peer, case):
    """Dilated conv2d and atrous_conv2d, with both gradients, against TensorFlow's (float32: TF's
    CPU conv2d dilates float32 only)."""
    rng = _rng("peer-dilated")
    x, f = rng.standard_normal((2, 9, 8, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    ours_out, ours_grads = evaluate(lambda *ts: case(tf, *ts), [x, f])
    g = tf_peer.Graph()
    with g.as_default():
        ts = [tf_peer.constant(a) for a in (x, f)]
        out = case(tf_peer, *ts)
        with tf_peer.Session(graph=g) as s:
            theirs = s.run([out] + tf_peer.gradients(out, ts))
    for ours, want in zip([ours_out] + list(ours_grads), theirs):
        assert_close(ours, want, rtol=1e-5, scale=np.abs(want).max())
