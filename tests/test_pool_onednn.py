"""The oneDNN pooling kernels (float32) against the direct kernels, which stay the reference: the
same call to each kernel with attribute impl="onednn" and impl="direct", on many geometries, with 1
and 2 threads; ties, NaN and -inf windows (where oneDNN's own max rule differs and the direct
kernels' results must stand); bitwise repeatability per thread count; a thread count set after the
plan was built; what impl="auto" picks; the impl attribute's errors; and the graph-level float32
pools and gradients against the float64 ones and against TensorFlow. The float64 gradients against
finite differences are in test_conv_ops.py (the direct kernels, which float64 runs)."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import check_grad_float32, evaluate
from onednn_checks import check_bitwise_repeatable_per_thread_count
from pygrad import _C
from pygrad.ops.conv_ops import _out_size, _pad_before

KERNELS = ("max_pool_fwd", "max_pool_bwd", "avg_pool_fwd", "avg_pool_bwd")
EPS32 = np.finfo(np.float32).eps


class Pool:
    """One pooling's operands and attributes, with the kernels' calls."""

    def __init__(self, rng, n, h, w, c, kh, kw, sh, sw, padding, x=None, dy=None):
        self.oh, self.ow = _out_size(h, kh, sh, padding), _out_size(w, kw, sw, padding)
        self.x = rng.standard_normal((n, h, w, c), dtype=np.float32) if x is None else x
        self.dy = rng.standard_normal((n, self.oh, self.ow, c), dtype=np.float32) if dy is None else dy
        self.attrs = {"ksize": [kh, kw], "strides": [sh, sw], "pad_top": _pad_before(h, kh, sh, padding),
                      "pad_left": _pad_before(w, kw, sw, padding)}
        self.overlap = kh > sh or kw > sw
        self.id = f"{n}x{h}x{w}x{c}/k{kh}x{kw}/s{sh},{sw}/{padding}"

    def call(self, kernel, impl, x=None, dy=None):
        x = self.x if x is None else x
        dy = self.dy if dy is None else dy
        y_shape = dy.shape
        ins, out_shape = {"max_pool_fwd": ([x], y_shape), "avg_pool_fwd": ([x], y_shape),
                          "max_pool_bwd": ([x, np.zeros(y_shape, x.dtype), dy], x.shape),
                          "avg_pool_bwd": ([dy], x.shape)}[kernel]
        out = np.full(out_shape, np.nan, x.dtype)  # every element must be written
        attrs = dict(self.attrs) if impl is None else {**self.attrs, "impl": impl}
        _C.call(kernel, ins, [out], attrs)
        return out

    def check(self, kernel, got):
        """got agrees with the direct kernel: bitwise where each output element is one value (a
        max, a gradient from one window), else to float32 rounding of its sum of at most
        kh * kw terms (both within that many eps times the sum of the terms' magnitudes)."""
        want = self.call(kernel, "direct")
        if kernel == "max_pool_fwd" or (kernel == "max_pool_bwd" and not self.overlap):
            np.testing.assert_array_equal(got, want, err_msg=f"{kernel} {self.id}")
            return
        magnitude = self.call(kernel, "direct", x=np.abs(self.x) if kernel == "avg_pool_fwd" else None,
                              dy=np.abs(self.dy))
        assert np.isfinite(got).all(), f"{kernel} {self.id}: unwritten or non-finite elements"
        kh, kw = self.attrs["ksize"]
        bound = 2 * kh * kw * EPS32 * magnitude + 1e-30
        worst = np.max(np.abs(got - want) / bound)
        assert worst <= 1, f"{kernel} {self.id}: differs from direct by {worst:.3g} times the rounding bound"


def _cases():
    rng = np.random.default_rng(2027)
    cases = [(50, 28, 28, 32, 2, 2, 2, 2, "SAME"),  # the Deep MNIST convnet's pools
             (50, 14, 14, 64, 2, 2, 2, 2, "SAME"),
             (1, 7, 7, 5, 2, 2, 2, 2, "VALID"),     # the last row and column read by no window
             (3, 7, 5, 3, 3, 3, 1, 1, "SAME"),      # overlapping windows
             (2, 9, 8, 19, 3, 2, 2, 3, "VALID"),    # rectangular window, unequal strides, odd channels
             (1, 2, 3, 2, 4, 4, 1, 1, "SAME"),      # window larger than the input
             (5, 6, 6, 2, 3, 3, 2, 2, "SAME"),      # uneven padding
             (1, 1, 1, 1, 1, 1, 1, 1, "VALID"),
             (1, 17, 17, 48, 3, 3, 1, 1, "SAME")]   # one image: its forward on every thread
    while len(cases) < 30:
        n, h, w, c = (int(v) for v in rng.integers(1, [8, 13, 13, 20]))
        kh, kw, sh, sw = (int(v) for v in rng.integers(1, [5, 5, 4, 4]))
        padding = ("SAME", "VALID")[len(cases) % 2]
        if padding == "SAME" or (h >= kh and w >= kw):
            cases.append((n, h, w, c, kh, kw, sh, sw, padding))
    return cases


CASES = _cases()


@pytest.mark.parametrize("kernel", KERNELS)
def test_onednn_agrees_with_direct(kernel, threads):
    rng = np.random.default_rng(17)
    for case in CASES:
        pool = Pool(rng, *case)
        pool.check(kernel, pool.call(kernel, "onednn"))


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[4], CASES[6]], ids=lambda c: "x".join(map(str, c[:4])))
def test_max_ties_go_to_the_first_maximum(case, threads):
    """Small integers, so windows tie: oneDNN's maxima and gradients are the direct kernels' (the
    first maximum in the window's row-major order), bitwise (integer gradients sum exactly)."""
    rng = np.random.default_rng(23)
    n, h, w, c = case[:4]
    pool = Pool(rng, *case, x=rng.integers(-2, 3, (n, h, w, c)).astype(np.float32))
    pool.dy = rng.integers(-8, 9, pool.dy.shape).astype(np.float32)
    for kernel in ("max_pool_fwd", "max_pool_bwd"):
        np.testing.assert_array_equal(pool.call(kernel, "onednn"), pool.call(kernel, "direct"), err_msg=kernel)
    # The hand-computed case: a 2x2 window holding 3 twice gives its gradient to the first 3.
    one = Pool(rng, 1, 2, 2, 1, 2, 2, 2, 2, "VALID", x=np.array([1, 3, 3, 2], np.float32).reshape(1, 2, 2, 1),
               dy=np.ones((1, 1, 1, 1), np.float32))
    np.testing.assert_array_equal(one.call("max_pool_bwd", "onednn").ravel(), [0, 1, 0, 0])


# Each puts one kind of window in image 1 or 4 of a batch of 6 (3x3 windows, stride 2, SAME: no
# padding before, window (i, j) reads rows 2i..2i+2 and columns 2j..2j+2) and says which outputs
# it makes NaN or -inf.
SPECIAL_WINDOWS = {
    "nan-among-numbers": (lambda x: x.__setitem__((1, 2, 3, 0), np.nan), [(1, 0, 1, 0), (1, 1, 1, 0)], []),
    # window (0, 0) holds NaN only; (0, 1), (1, 0) and (1, 1) start with a NaN
    "nan-only": (lambda x: x.__setitem__((1, slice(0, 3), slice(0, 3), 1), np.nan),
                 [(1, 0, 0, 1), (1, 0, 1, 1), (1, 1, 0, 1), (1, 1, 1, 1)], []),
    "minus-inf-only": (lambda x: x.__setitem__((4, slice(5, 8), slice(5, 8), 2), -np.inf), [], [(4, 3, 3, 2)]),
}


@pytest.mark.parametrize("special", SPECIAL_WINDOWS)
def test_nan_and_minus_inf_windows_keep_the_direct_rule(special, threads):
    """A NaN in a window wins its max (and takes its gradient) and a window of -inf only gives -inf,
    pygrad's rule: oneDNN's own would skip the NaN and give the lowest float for a window of NaN or
    -inf only. The runs of images holding such windows are computed by the direct kernels, the
    others by oneDNN; every max result is the direct kernels', bitwise. (TensorFlow 2's CPU
    kernels differ here: their forward skips NaN and gives the lowest float for such windows.)"""
    rng = np.random.default_rng(29)
    pool = Pool(rng, 6, 8, 8, 3, 3, 3, 2, 2, "SAME")
    pool.dy = rng.integers(-8, 9, pool.dy.shape).astype(np.float32)  # overlapping windows' sums are exact
    put, nan_at, minus_inf_at = SPECIAL_WINDOWS[special]
    put(pool.x)
    for kernel in ("max_pool_fwd", "max_pool_bwd"):
        np.testing.assert_array_equal(pool.call(kernel, "onednn"), pool.call(kernel, "direct"), err_msg=kernel)
    y = pool.call("max_pool_fwd", "onednn")
    assert all(np.isnan(y[i]) for i in nan_at) and all(y[i] == -np.inf for i in minus_inf_at)
    assert np.isnan(y).sum() == len(nan_at) and np.isinf(y).sum() == len(minus_inf_at)
    if special == "nan-among-numbers":  # the NaN takes the gradients of its two windows
        dx = pool.call("max_pool_bwd", "onednn")
        assert dx[1, 2, 3, 0] == pool.dy[1, 0, 1, 0] + pool.dy[1, 1, 1, 0]
    # The average propagates a NaN and -inf either way (and its rounding may differ).
    np.testing.assert_allclose(pool.call("avg_pool_fwd", "onednn"), pool.call("avg_pool_fwd", "direct"), rtol=1e-6)


def test_bitwise_repeatable_per_thread_count():
    """An odd batch over 2 threads (two run sizes), overlapping windows."""
    pool = Pool(np.random.default_rng(31), 9, 14, 14, 16, 3, 3, 2, 2, "SAME")
    check_bitwise_repeatable_per_thread_count(pool, KERNELS)


def test_one_image_bitwise_repeatable_per_thread_count():
    """One image, whose forward runs as one primitive on the OpenMP threads of the thread count."""
    pool = Pool(np.random.default_rng(33), 1, 17, 17, 48, 3, 3, 1, 1, "SAME")
    check_bitwise_repeatable_per_thread_count(pool, KERNELS)


def test_thread_count_set_after_the_plan_was_built():
    """A plan built on 1 thread runs on 3 (runs of another size, created when first needed) and
    gives the results of a plan built on 3."""
    xv = np.random.default_rng(37).standard_normal((7, 12, 12, 4), dtype=np.float32)
    old = tf.get_num_threads()
    try:
        results = []
        for build_threads in (1, 3):
            with tf.Graph().as_default():
                x = tf.placeholder(tf.float32, [None, 12, 12, 4])
                ym = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
                ya = tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
                fetches = [ym, ya] + tf.gradients(tf.reduce_sum(ym * ym) + tf.reduce_sum(ya * ya), [x])
                with tf.Session() as sess:
                    tf.set_num_threads(build_threads)
                    sess.run(fetches, {x: xv})
                    tf.set_num_threads(3)
                    results.append(sess.run(fetches, {x: xv}))
    finally:
        tf.set_num_threads(old)
    for built_on_one, built_on_three in zip(*results):
        np.testing.assert_array_equal(built_on_one, built_on_three)


@pytest.mark.parametrize("kernel", KERNELS)
def test_default_is_onednn_for_float32(kernel):
    """impl="auto" (what the lowering passes) gives oneDNN's bits for float32, the direct kernels'
    for float64."""
    pool = Pool(np.random.default_rng(41), 6, 10, 10, 8, 3, 3, 2, 2, "SAME")
    np.testing.assert_array_equal(pool.call(kernel, None), pool.call(kernel, "onednn"))
    x64, dy64 = pool.x.astype(np.float64), pool.dy.astype(np.float64)
    np.testing.assert_array_equal(pool.call(kernel, None, x64, dy64), pool.call(kernel, "direct", x64, dy64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiling_windows_write_the_max_gradient_once_as_numpy(dtype, threads):
    """2x2 windows, stride 2, on an even image: the windows tile it, and impl="auto" runs the direct
    kernel, which writes each dx element once: dy at each window's first maximum, exactly zero
    elsewhere (an infinite or NaN dy too)."""
    rng = np.random.default_rng(5)
    pool = Pool(rng, 3, 6, 8, 5, 2, 2, 2, 2, "VALID", x=rng.integers(-2, 3, (3, 6, 8, 5)).astype(dtype))
    pool.dy = pool.dy.astype(dtype)
    pool.dy[0, 0, 0, :2], pool.dy[2, 1, 3, 4] = [np.inf, -np.inf], np.nan
    want = np.zeros_like(pool.x)
    windows = pool.x.reshape(3, 3, 2, 4, 2, 5).transpose(0, 1, 3, 5, 2, 4).reshape(3, 3, 4, 5, 4)
    first = windows.argmax(-1)  # row-major order in the window: its first maximum
    n, oh, ow, c = np.indices(first.shape)
    want[n, 2 * oh + first // 2, 2 * ow + first % 2, c] = pool.dy
    got = pool.call("max_pool_bwd", None)
    np.testing.assert_array_equal(got, want)
    if dtype == np.float32:
        np.testing.assert_array_equal(pool.call("max_pool_bwd", "onednn"), want)


@pytest.mark.parametrize("kernel, dtype, impl, error, match", [
    ("max_pool_fwd", np.float32, "im2col", ValueError,
     "max_pool_fwd: impl must be 'auto', 'direct' or 'onednn', got 'im2col'"),
    ("avg_pool_bwd", np.float32, "fast", ValueError, "avg_pool_bwd: impl must be 'auto', 'direct' or 'onednn'"),
    ("max_pool_bwd", np.float64, "onednn", TypeError, "max_pool_bwd: the oneDNN kernels are float32 only, got float64"),
    ("avg_pool_fwd", np.float64, "onednn", TypeError, "avg_pool_fwd: the oneDNN kernels are float32 only, got float64"),
])
def test_impl_errors(kernel, dtype, impl, error, match):
    pool = Pool(np.random.default_rng(43), 1, 4, 4, 2, 2, 2, 2, 2, "VALID")
    with pytest.raises(error, match=match):
        pool.call(kernel, impl, pool.x.astype(dtype), pool.dy.astype(dtype))


# ---------------------------------------------------------------- the graph ops, float32

GRAPH_CASES = [((50, 28, 28, 32), (2, 2), (2, 2), "SAME"), ((3, 7, 7, 5), (3, 3), (2, 2), "VALID"),
               ((2, 7, 5, 3), (3, 3), (1, 1), "SAME"), ((1, 5, 6, 4), (2, 3), (1, 2), "SAME")]


def _pool_fn(kind, ksize, strides, padding, module=tf):
    pool = module.nn.max_pool if kind == "max" else module.nn.avg_pool
    return lambda t: pool(t, [1, *ksize, 1], [1, *strides, 1], padding)


def _distinct(shape, rng):
    """Values apart by at least 1e-3 of their range, so float32 rounding moves no window's max."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / np.prod(shape) * 4 - 2).astype(np.float64)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", GRAPH_CASES[1:], ids=lambda c: "x".join(map(str, c[0])))
def test_float32_gradients_agree_with_float64(case, kind):
    """tf.gradients of the float32 pools (oneDNN) agree with the float64 ones (the direct kernels,
    checked against finite differences in test_conv_ops.py)."""
    shape, ksize, strides, padding = case
    check_grad_float32(_pool_fn(kind, ksize, strides, padding), [_distinct(shape, np.random.default_rng(47))])


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", GRAPH_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_cross_check_with_tensorflow(tf_peer, case, kind):
    """float32 pools and their gradients against TensorFlow's, to 1e-5."""
    shape, ksize, strides, padding = case
    rng = np.random.default_rng(53)
    x = _distinct(shape, rng).astype(np.float32)
    ours, (dx,) = evaluate(_pool_fn(kind, ksize, strides, padding), [x], grad_ys=None)
    g = tf_peer.Graph()
    with g.as_default():
        t = tf_peer.constant(x)
        out = _pool_fn(kind, ksize, strides, padding, tf_peer)(t)
        with tf_peer.Session(graph=g) as s:
            want, want_dx = s.run([out, tf_peer.gradients(out, t)[0]])
    assert ours.dtype == np.float32 and dx.dtype == np.float32
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-5)


def test_the_direct_max_pool_of_one_image_splits_over_the_openmp_threads_alike():
    """One image's max pool runs its rows on the OpenMP threads (pool.cc, max_pool_fwd): the same
    bits on 1, 2 and 3 threads, NumPy's maxima, and a NaN in a window kept."""
    x = np.random.default_rng(41).standard_normal((1, 73, 73, 64), dtype=np.float32)
    x[0, 10, 20, 5] = x[0, 60, 3, 63] = np.nan
    pool = Pool(np.random.default_rng(42), 1, 73, 73, 64, 3, 3, 2, 2, "VALID", x=x)
    old = tf.get_num_threads()
    try:
        got = []
        for threads in (1, 2, 3, 2):
            tf.set_num_threads(threads)
            got.append(pool.call("max_pool_fwd", None))
    finally:
        tf.set_num_threads(old)
    want = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2))[:, ::2, ::2].max(axis=(-2, -1))
    for g in got:
        np.testing.assert_array_equal(g, want)
    assert np.isnan(want).sum() == 4 + 2  # (10, 20) lies in 2 x 2 windows, (60, 3) in 2 x 1
