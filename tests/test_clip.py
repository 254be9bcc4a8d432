"""Gradient clipping: tf.clip_by_global_norm (one fused op), tf.global_norm, tf.clip_by_norm and
tf.clip_by_value against NumPy versions of TensorFlow 1's formulas; their gradients against finite
differences; the TF1 docstring-style example and the compute_gradients -> clip_by_global_norm ->
apply_gradients pipeline against NumPy."""
import zlib

import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close, check_grad, check_grad_float32, evaluate, run_forward

FLOATS = ("float32", "float64")


def _rng(*key):
    """A generator seeded by the test's key (crc32: the same in every process, unlike hash())."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _tensors(dtype, scale, seed=0):
    """Three tensors (a matrix, a vector, a scalar) whose global norm is about `scale` * 3."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s in ((3, 4), (5,), ())]


# ---------------------------------------------------------------- NumPy references (TF1's formulas)


def np_global_norm(ts):
    """sqrt(sum over tensors of sum(t^2)), None entries ignored, in float64."""
    return np.sqrt(sum(np.sum(np.asarray(t, np.float64) ** 2) for t in ts if t is not None))


def np_clip_by_global_norm(ts, clip_norm, use_norm=None):
    """(t * clip_norm / max(norm, clip_norm) for each t, norm); a non-finite norm gives NaN."""
    norm = np_global_norm(ts) if use_norm is None else float(use_norm)
    scale = clip_norm / max(norm, clip_norm) if np.isfinite(norm) else np.nan
    return [None if t is None else np.asarray(t, np.float64) * scale for t in ts], norm


def np_clip_by_norm(t, clip_norm, axes=None):
    """t * clip_norm / max(l2norm(t over axes), clip_norm); an all-zero slice stays zero."""
    t = np.asarray(t, np.float64)
    axes = tuple(axes) if isinstance(axes, list) else axes
    l2norm = np.sqrt(np.sum(t * t, axis=axes, keepdims=True))
    return t * clip_norm / np.maximum(l2norm, clip_norm)


# ---------------------------------------------------------------- clip_by_global_norm


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("scale,clip_norm", [(0.1, 5.0), (2.0, 1.5)], ids=["below", "above"])
def test_clip_by_global_norm_matches_numpy(scale, clip_norm, dtype):
    ts = _tensors(dtype, scale)
    want, want_norm = np_clip_by_global_norm(ts, clip_norm)
    assert (want_norm < clip_norm) == (scale == 0.1)

    def fn(a, b, c):
        clipped, norm = tf.clip_by_global_norm([a, b, c], clip_norm)
        return clipped + [norm]

    *got, got_norm = run_forward(fn, ts)
    assert_close(got_norm, want_norm, dtype=dtype, what="global norm")
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, dtype=dtype, what=f"clipped tensor {i}")
    if want_norm < clip_norm:  # below the clip norm the tensors come back unchanged
        for g, t in zip(got, ts):
            np.testing.assert_array_equal(g, t)
    else:
        assert_close(np.asarray(np_global_norm(got), dtype), np.float64(clip_norm), dtype=dtype,
                     what="norm after clipping")


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_global_norm_with_use_norm(dtype):
    """use_norm replaces the computed norm: the scale is clip_norm / max(use_norm, clip_norm), and
    use_norm is what comes back as the norm."""
    ts = _tensors(dtype, 1.0)
    for use_norm in (0.5, 4.0, 40.0):
        tf.reset_default_graph()
        want, _ = np_clip_by_global_norm(ts, 2.0, use_norm=use_norm)
        clipped, norm = tf.clip_by_global_norm([tf.constant(t) for t in ts], 2.0, use_norm=use_norm)
        with tf.Session() as sess:
            got, got_norm = sess.run([clipped, norm])
        assert got_norm == np.asarray(use_norm, dtype)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, dtype=dtype, what=f"tensor {i} with use_norm={use_norm}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_global_norm_passes_none_through_in_place(dtype):
    ts = _tensors(dtype, 3.0)
    t_list = [None, ts[0], None, ts[1], ts[2], None]
    want, want_norm = np_clip_by_global_norm(t_list, 1.0)
    clipped, norm = tf.clip_by_global_norm([None if t is None else tf.constant(t) for t in t_list], 1.0)
    assert isinstance(clipped, list) and len(clipped) == len(t_list)
    assert [i for i, c in enumerate(clipped) if c is None] == [0, 2, 5]
    assert [c.shape.as_list() for c in clipped if c is not None] == [[3, 4], [5], []]
    with tf.Session() as sess:
        got, got_norm = sess.run([[c for c in clipped if c is not None], norm])
    assert_close(got_norm, want_norm, dtype=dtype, what="global norm")
    for g, w in zip(got, [w for w in want if w is not None]):
        assert_close(g, w, dtype=dtype, what="clipped tensor")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan], ids=["inf", "-inf", "nan"])
def test_clip_by_global_norm_of_non_finite_input_is_nan(bad, dtype):
    """TF1: scale = NaN when the global norm is not finite, so every output is NaN (even the
    finite tensors), and the norm itself is returned (inf or NaN)."""
    a = np.array([1.0, bad, 2.0], dtype)
    b = np.array([[0.5, 0.25]], dtype)
    clipped, norm = tf.clip_by_global_norm([tf.constant(a), None, tf.constant(b)], 1.0)
    with tf.Session() as sess:
        ga, gb, n = sess.run([clipped[0], clipped[2], norm])
    assert np.all(np.isnan(ga)) and np.all(np.isnan(gb))
    assert ga.dtype == dtype and gb.dtype == dtype
    if np.isnan(bad):
        assert np.isnan(n)
    else:
        assert n == np.inf


@pytest.mark.parametrize("use_norm", [np.inf, np.nan], ids=["inf", "nan"])
def test_clip_by_global_norm_non_finite_use_norm_is_nan(use_norm):
    clipped, _ = tf.clip_by_global_norm([tf.constant([1.0, 2.0])], 1.0, use_norm=use_norm)
    with tf.Session() as sess:
        assert np.all(np.isnan(sess.run(clipped[0])))


def test_clip_by_global_norm_bad_input():
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(tf.constant([1.0]), 1.0)
    with pytest.raises(ValueError):
        tf.clip_by_global_norm([None, None], 1.0)


def test_clip_by_global_norm_is_one_fused_op():
    ts = [tf.constant(t) for t in _tensors(np.float32, 1.0)]
    clipped, norm = tf.clip_by_global_norm(ts, 1.0)
    ops = {t.op for t in clipped + [norm]}
    assert len(ops) == 1 and next(iter(ops)).type == "ClipByGlobalNorm"


# ---------------------------------------------------------------- global_norm


@pytest.mark.parametrize("dtype", FLOATS)
def test_global_norm_matches_numpy(dtype):
    ts = _tensors(dtype, 1.5, seed=3)
    got = run_forward(lambda a, b, c: tf.global_norm([a, None, b, c]), ts)
    assert_close(got, np_global_norm(ts), dtype=dtype)
    assert_close(run_forward(lambda a: tf.global_norm([a]), [np.array([3.0, 4.0], dtype)]), np.asarray(5.0, dtype))


def test_global_norm_gradient():
    ts = [t.astype(np.float64) for t in _tensors(np.float64, 1.0, seed=4)]
    check_grad(lambda a, b, c: tf.global_norm([a, b, c]), ts)


# ---------------------------------------------------------------- clip_by_norm


AXES = [None, 0, 1, [0, 1], [1]]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axes", AXES, ids=lambda a: f"axes={a}")
def test_clip_by_norm_matches_numpy(axes, dtype):
    rng = _rng("clip_by_norm", str(axes), dtype)
    t = (rng.standard_normal((4, 5)) * np.array([0.05, 0.2, 1.0, 3.0, 0.01])).astype(dtype)
    want = np_clip_by_norm(t, 0.8, axes)
    got = run_forward(lambda a: tf.clip_by_norm(a, 0.8, axes=axes), [t])
    assert_close(got, want, dtype=dtype)
    axes = tuple(axes) if isinstance(axes, list) else axes
    norms = np.sqrt(np.sum(got.astype(np.float64) ** 2, axis=axes))
    assert np.all(norms <= 0.8 * (1 + 1e-5))
    assert np.any(np.sqrt(np.sum(t.astype(np.float64) ** 2, axis=axes)) > 0.8)  # some slice is clipped


@pytest.mark.parametrize("axes", AXES, ids=lambda a: f"axes={a}")
def test_clip_by_norm_gradient(axes):
    rng = _rng("clip_by_norm_grad", str(axes))
    t = rng.standard_normal((4, 5)) * np.array([0.05, 0.2, 1.0, 3.0, 0.01])
    check_grad(lambda a: tf.clip_by_norm(a, 0.8, axes=axes), [t])
    check_grad_float32(lambda a: tf.clip_by_norm(a, 0.8, axes=axes), [t])


def test_clip_by_norm_of_zeros_is_zero_with_identity_gradient():
    """TF1's 'two-tap where' formula: an all-zero slice is left at zero, and its gradient is the
    identity (not NaN from 1 / sqrt(0))."""
    t = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    w = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    out, (grad,) = evaluate(lambda a: tf.clip_by_norm(a, 1.0, axes=[1]), [t], grad_ys=[w])
    np.testing.assert_array_equal(out[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(out[1], [0.6, 0.8, 0.0], rtol=1e-15)
    np.testing.assert_array_equal(grad[0], w[0])
    # row 1, norm 5 > 1: d/dt (t / |t|) = (I - u u^T) / |t| with u = t / |t|
    u = t[1] / 5.0
    np.testing.assert_allclose(grad[1], (w[1] - u * (u @ w[1])) / 5.0, rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_norm_keeps_shape_and_dtype(dtype):
    c = tf.clip_by_norm(tf.placeholder(tf.as_dtype(dtype), [None, 3]), 2.0, axes=[1])
    assert c.dtype == tf.as_dtype(dtype) and c.shape.as_list() == [None, 3]


# ---------------------------------------------------------------- clip_by_value


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_by_value_matches_numpy(dtype):
    rng = _rng("clip_by_value", dtype)
    t = (rng.uniform(-3, 3, (4, 6))).astype(dtype)
    assert_close(run_forward(lambda a: tf.clip_by_value(a, -1.0, 0.5), [t]), np.clip(t, -1.0, 0.5))
    lo = rng.uniform(-2, 0, (4, 6)).astype(dtype)
    hi = rng.uniform(0, 2, (4, 6)).astype(dtype)
    assert_close(run_forward(lambda a, l, h: tf.clip_by_value(a, l, h), [t, lo, hi]), np.clip(t, lo, hi))
    col_lo = rng.uniform(-2, 0, (6,)).astype(dtype)  # broadcast bounds
    assert_close(run_forward(lambda a, l: tf.clip_by_value(a, l, 1.0), [t, col_lo]), np.clip(t, col_lo, 1.0))


def test_clip_by_value_integers():
    t = np.array([-5, -1, 0, 3, 9], np.int32)
    got = run_forward(lambda a: tf.clip_by_value(a, -2, 4), [t])
    assert_close(got, np.array([-2, -1, 0, 3, 4], np.int32))


def test_clip_by_value_gradient():
    rng = _rng("clip_by_value_grad")
    # values at least 0.1 away from the bounds -1 and 0.5 (finite differences do not cross them)
    t = rng.choice([-1, 1], (3, 5)) * rng.uniform(0.1, 0.4, (3, 5)) + rng.choice([-1.0, 0.5, 2.0], (3, 5))
    check_grad(lambda a: tf.clip_by_value(a, -1.0, 0.5), [t])
    lo = np.full((3, 5), -1.0) + rng.uniform(-0.05, 0.05, (3, 5))
    hi = np.full((3, 5), 0.5) + rng.uniform(-0.05, 0.05, (3, 5))
    check_grad(lambda a, l, h: tf.clip_by_value(a, l, h), [t, lo, hi])


def test_clip_by_value_gradient_at_the_bounds_is_one():
    """TF1 composes minimum then maximum; their gradients give ties to the first input, so a value
    equal to a bound passes its gradient through."""
    t = np.array([-1.0, 0.5, 0.0, -2.0, 3.0])
    _, (grad,) = evaluate(lambda a: tf.clip_by_value(a, -1.0, 0.5), [t])
    np.testing.assert_array_equal(grad, [1.0, 1.0, 1.0, 0.0, 0.0])


# ---------------------------------------------------------------- gradients through clip_by_global_norm


@pytest.mark.parametrize("scale,clip_norm", [(0.1, 5.0), (1.0, 1.0)], ids=["below", "above"])
def test_clip_by_global_norm_gradient(scale, clip_norm):
    ts = _tensors(np.float64, scale, seed=7)
    assert (np_global_norm(ts) < clip_norm) == (scale == 0.1)

    def fn(a, b, c):
        clipped, norm = tf.clip_by_global_norm([a, None, b, c], clip_norm)
        return [clipped[0], clipped[2], clipped[3], norm]

    check_grad(fn, ts)
    check_grad_float32(fn, ts)


def test_clip_by_global_norm_gradient_with_tensor_clip_norm_and_use_norm():
    ts = _tensors(np.float64, 1.0, seed=8)
    clip = np.float64(0.7)
    use = np.float64(2.5)

    def fn(a, b, c, clip_norm, use_norm):
        clipped, norm = tf.clip_by_global_norm([a, b, c], clip_norm, use_norm=use_norm)
        return clipped + [norm]

    check_grad(fn, ts + [clip, use])

    def fn_clip(a, b, c, clip_norm):
        return tf.clip_by_global_norm([a, b, c], clip_norm)[0]

    check_grad(fn_clip, ts + [clip])


# ---------------------------------------------------------------- with the optimizer


def test_seed_example_compute_gradients_then_clip_by_norm():
    """loss = w * x * x at w = 2, x = 3: d/dw = x^2 = 9, d/dx = 2 w x = 12; clipped to norm 5 each."""
    w = tf.Variable(2.0, name="w")
    x = tf.Variable(3.0, name="x")
    loss = w * x * x
    opt = tf.train.GradientDescentOptimizer(0.1)
    grads_and_vars = opt.compute_gradients(loss)
    clipped = [(tf.clip_by_norm(g, 5.0), v) for g, v in grads_and_vars]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(grads_and_vars) == [(9.0, 2.0), (12.0, 3.0)]
        assert sess.run(clipped) == [(5.0, 2.0), (5.0, 3.0)]
        sess.run(opt.apply_gradients(clipped))
        assert sess.run([w, x]) == [np.float32(2.0) - np.float32(0.1) * np.float32(5.0),
                                    np.float32(3.0) - np.float32(0.1) * np.float32(5.0)]


def _np_grads(W, b, xv, yv):
    r = xv @ W + b - yv
    return [xv.T @ r / len(xv), r.sum(0) / len(xv)]


@pytest.mark.parametrize("dtype", FLOATS)
def test_compute_clip_apply_pipeline_matches_numpy(dtype):
    """compute_gradients -> clip_by_global_norm -> apply_gradients (momentum) over several steps
    against the same pipeline in NumPy; the clipping bites on every step."""
    rng = np.random.default_rng(11)
    xv, yv = rng.standard_normal((6, 3)).astype(dtype), (3 * rng.standard_normal((6, 2))).astype(dtype)
    w0, b0 = rng.standard_normal((3, 2)).astype(dtype), rng.standard_normal(2).astype(dtype)
    x = tf.placeholder(tf.as_dtype(dtype), [None, 3])
    y = tf.placeholder(tf.as_dtype(dtype), [None, 2])
    W, b = tf.Variable(w0, name="W"), tf.Variable(b0, name="b")
    loss = tf.reduce_sum(tf.square(tf.matmul(x, W) + b - y)) / (2.0 * 6)
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    grads, variables = zip(*opt.compute_gradients(loss))
    clipped, norm = tf.clip_by_global_norm(list(grads), 0.5)
    train = opt.apply_gradients(zip(clipped, variables))
    lr, mom = float(np.float32(0.1)), float(np.float32(0.9))
    params = [w0.astype(np.float64), b0.astype(np.float64)]
    accum = [np.zeros_like(p) for p in params]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 6):
            _, got_norm = sess.run([train, norm], {x: xv, y: yv})
            gs = _np_grads(*params, xv.astype(np.float64), yv.astype(np.float64))
            gs, want_norm = np_clip_by_global_norm(gs, 0.5)
            assert want_norm > 0.5
            assert_close(got_norm, want_norm, dtype=dtype, what=f"norm at step {step}")
            for i, g in enumerate(gs):
                accum[i] = accum[i] * mom + g
                params[i] = params[i] - lr * accum[i]
            got_W, got_b = sess.run([W, b])
            assert_close(got_W, params[0], dtype=dtype, what=f"W after step {step}")
            assert_close(got_b, params[1], dtype=dtype, what=f"b after step {step}")


def test_matches_tensorflow(tf_peer):
    """Optional: the three clipping functions agree with TensorFlow on one input."""
    ts = _tensors(np.float64, 2.0, seed=12)

    def run(lib):
        with lib.Graph().as_default():
            cs = [lib.constant(t) for t in ts]
            clipped, norm = lib.clip_by_global_norm(cs, 1.0)
            out = clipped + [norm, lib.global_norm(cs), lib.clip_by_norm(cs[0], 0.5, axes=[1]),
                             lib.clip_by_value(cs[0], -0.3, 0.2)]
            with lib.Session() as sess:
                return sess.run(out)

    tf.reset_default_graph()
    for a, b in zip(run(tf), run(tf_peer)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
