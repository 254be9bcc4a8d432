"""Array ops: reshape, transpose, expand_dims, squeeze, identity, cast, shape/size/rank, constants
and fills. One spec row per op drives forward (every dtype) and gradient tests; hand-computed
cases and bad input follow."""
import os
import zlib
from typing import Callable, NamedTuple

import numpy as np
import pytest

import pygrad as tf
import reference as ref
from gradcheck import (GraphRunner, assert_close, check_grad, check_grad_float32, draw, evaluate, run_forward,
                       shape_id)

ALL_DTYPES = ("float64", "float32", "int32", "int64", "bool")


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _draw_any(shape, dtype, rng):
    return draw("bool" if dtype == "bool" else "real", shape, dtype, rng)


# ---------------------------------------------------------------- data movement table


class Move(NamedTuple):
    name: str
    fn: Callable  # of one tensor
    shape: tuple
    ref: Callable  # of one NumPy array


MOVES = [
    Move("reshape_minus1", lambda x: tf.reshape(x, [4, -1]), (2, 3, 4), lambda x: x.reshape(4, -1)),
    Move("reshape_tuple", lambda x: tf.reshape(x, (6, 4)), (2, 3, 4), lambda x: x.reshape(6, 4)),
    Move("reshape_flat", lambda x: tf.reshape(x, [-1]), (2, 3, 4), lambda x: x.reshape(-1)),
    Move("reshape_const", lambda x: tf.reshape(x, tf.constant([3, 2, 4])), (2, 3, 4), lambda x: x.reshape(3, 2, 4)),
    Move("reshape_to_scalar", lambda x: tf.reshape(x, []), (1, 1), lambda x: x.reshape(())),
    Move("reshape_from_scalar", lambda x: tf.reshape(x, [1, -1, 1]), (), lambda x: x.reshape(1, 1, 1)),
    Move("transpose_default", tf.transpose, (2, 3, 4), np.transpose),
    Move("transpose_perm", lambda x: tf.transpose(x, [1, 2, 0]), (2, 3, 4), lambda x: np.transpose(x, (1, 2, 0))),
    Move("transpose_perm2", lambda x: tf.transpose(x, perm=[2, 0, 1]), (2, 3, 4), lambda x: np.transpose(x, (2, 0, 1))),
    Move("transpose_2d", tf.transpose, (3, 5), np.transpose),
    Move("transpose_large_2d", tf.transpose, (40, 33), np.transpose),  # more than one 32x32 tile
    Move("expand_dims_0", lambda x: tf.expand_dims(x, 0), (3, 4), lambda x: x[None]),
    Move("expand_dims_1", lambda x: tf.expand_dims(x, 1), (3, 4), lambda x: x[:, None]),
    Move("expand_dims_-1", lambda x: tf.expand_dims(x, -1), (3, 4), lambda x: x[..., None]),
    Move("expand_dims_dim", lambda x: tf.expand_dims(x, dim=2), (3, 4), lambda x: x[:, :, None]),
    Move("squeeze_all", tf.squeeze, (1, 3, 1, 4), lambda x: np.squeeze(x)),
    Move("squeeze_axis", lambda x: tf.squeeze(x, [2]), (1, 3, 1, 4), lambda x: np.squeeze(x, 2)),
    Move("squeeze_neg_axis", lambda x: tf.squeeze(x, axis=-2), (1, 3, 1, 4), lambda x: np.squeeze(x, -2)),
    Move("squeeze_dims", lambda x: tf.squeeze(x, squeeze_dims=[0]), (1, 3, 1, 4), lambda x: np.squeeze(x, 0)),
    Move("identity", tf.identity, (3, 4), lambda x: x),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("spec", MOVES, ids=lambda s: f"{s.name}-{shape_id(s.shape)}")
def test_move_forward(spec, dtype):
    x = _draw_any(spec.shape, dtype, _rng(spec.name, dtype))
    assert_close(run_forward(spec.fn, [x]), spec.ref(x), dtype=dtype)


@pytest.mark.parametrize("static", [True, False, None], ids=["static", "dims", "rank"])
@pytest.mark.parametrize("spec", MOVES, ids=lambda s: f"{s.name}-{shape_id(s.shape)}-float64")
def test_move_grad(spec, static):
    x = draw("real", spec.shape, np.float64, _rng(spec.name))
    if static is False and spec.name.startswith("squeeze_all"):
        pytest.skip("squeezing unknown dimensions needs an axis (TF's rule as well)")
    check_grad(spec.fn, [x], static=static)


@pytest.mark.parametrize("spec", MOVES[:3] + MOVES[6:8], ids=lambda s: f"{s.name}-float32")
def test_move_grad_float32(spec):
    check_grad_float32(lambda x: tf.tanh(spec.fn(x)), [draw("real", spec.shape, np.float64, _rng(spec.name))])


def test_reshape_to_the_shape_of_another_tensor():
    """tf.reshape(x, tf.shape(y)) follows y's run-time shape, and only x gets a gradient."""
    x = draw("real", (2, 6), np.float64, _rng("like"))
    y = draw("real", (3, 4), np.float64, _rng("like2"))
    out, grads = evaluate(lambda a, b: tf.reshape(a, tf.shape(b)) * b, [x, y])
    assert_close(out, x.reshape(3, 4) * y)
    assert_close(grads[0], y.reshape(2, 6))
    check_grad(lambda a, b: tf.reshape(a, tf.shape(b)) * b, [x, y], static=False)


def test_transpose_then_matmul_hand_computed():
    # d/dx sum(W * x^T) = W^T
    w = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    _, (g,) = evaluate(lambda x: tf.reduce_sum(tf.constant(w) * tf.transpose(x)), [np.zeros((2, 3))])
    assert_close(g, w.T)
    # d/dx of reshape(x, [4]) . [1, 2, 3, 4] is [[1, 2], [3, 4]]
    _, (g,) = evaluate(lambda x: tf.reduce_sum(tf.reshape(x, [4]) * np.array([1.0, 2.0, 3.0, 4.0])), [np.zeros((2, 2))])
    assert_close(g, [[1.0, 2.0], [3.0, 4.0]])


# ---------------------------------------------------------------- shape, size, rank


@pytest.mark.parametrize("static", [True, False, None], ids=["static", "dims", "rank"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_shape_size_rank(dtype, static):
    x = _draw_any((2, 3, 4), dtype, _rng("shape", dtype))
    with GraphRunner(lambda t: [tf.shape(t), tf.size(t), tf.rank(t), tf.shape(t, out_type=tf.int64),
                                tf.size(t, out_type=tf.int64)], [x], static=static) as r:
        shape, size, rank, shape64, size64 = r.forward()
    assert_close(shape, np.array([2, 3, 4], np.int32))
    assert_close(size, np.array(24, np.int32))
    assert_close(rank, np.array(3, np.int32))
    assert_close(shape64, np.array([2, 3, 4], np.int64))
    assert_close(size64, np.array(24, np.int64))


# ---------------------------------------------------------------- constants and fills


def test_constant_dtype_rules():
    """TF1: Python floats are float32, Python ints int32, NumPy values keep their dtype."""
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant([1, 2]).dtype == tf.int32
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant(np.float64(1.5)).dtype == tf.float64
    assert tf.constant(np.array([1, 2], np.int64)).dtype == tf.int64
    assert tf.constant(2, dtype=tf.float64).dtype == tf.float64
    with pytest.raises(TypeError):
        tf.constant(1.5, dtype=tf.int32)
    out = run_forward(lambda t: [tf.constant(3, shape=[2, 2]) + t, tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])],
                      [np.ones((2, 2), np.int32)])
    assert_close(out[0], np.full((2, 2), 4, np.int32))
    assert_close(out[1], np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    # TF1's rule for a value shorter than the shape: the last element repeats.
    assert_close(run_forward(lambda: tf.constant([1.0, 2.0], shape=[2, 3]), []),
                 np.array([[1, 2, 2], [2, 2, 2]], np.float32))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones_fill(dtype):
    dt = tf.as_dtype(dtype)
    out = run_forward(lambda: [tf.zeros([2, 3], dt), tf.ones((3,), dtype=dt), tf.zeros([], dt)], [])
    assert_close(out[0], np.zeros((2, 3), dtype))
    assert_close(out[1], np.ones(3, dtype))
    assert_close(out[2], np.zeros((), dtype))


def test_fill_and_default_dtypes():
    out = run_forward(lambda: [tf.fill([2, 2], 7), tf.fill([3], 1.5), tf.zeros([2]), tf.ones([1, 2])], [])
    assert_close(out[0], np.full((2, 2), 7, np.int32))
    assert_close(out[1], np.full(3, 1.5, np.float32))
    assert_close(out[2], np.zeros(2, np.float32))
    assert_close(out[3], np.ones((1, 2), np.float32))


def test_fill_with_a_computed_scalar(tf_peer):
    """tf.fill(dims, tensor): a scalar the run computes, dims static or read from a fed shape; its
    gradient is the sum of the output's; a value of another rank is refused when the graph is built."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = {}
    for module in (tf, tf_peer):
        with module.Graph().as_default():
            p = module.placeholder(module.float32, [None, 3])
            v = module.reduce_sum(p)
            f = module.fill([2, 3], v)
            outs = [f, module.fill(module.shape(p), v * 2.0), module.fill([2], module.greater(v, 0.0)),
                    module.fill([3], module.size(p)), module.fill([2], module.constant(4)),
                    module.gradients(module.reduce_sum(f * f), p)[0]]
            with module.Session() as sess:
                got[module] = sess.run(outs, {p: x})
            with pytest.raises(ValueError, match="rank 0"):
                module.fill([2], p)
    for a, b in zip(got[tf], got[tf_peer]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("static", [True, False, None], ids=["static", "dims", "rank"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_like_ones_like(dtype, static):
    x = _draw_any((2, 3), dtype, _rng("like", dtype))
    with GraphRunner(lambda t: [tf.zeros_like(t), tf.ones_like(t), tf.zeros_like(t, dtype=tf.int64),
                                tf.ones_like(t, dtype=tf.float32)], [x], static=static) as r:
        z, o, z64, o32 = r.forward()
    assert_close(z, np.zeros((2, 3), dtype))
    assert_close(o, np.ones((2, 3), dtype))
    assert_close(z64, np.zeros((2, 3), np.int64))
    assert_close(o32, np.ones((2, 3), np.float32))


def test_fills_and_stop_gradient_have_no_gradient():
    x = np.array([1.0, -2.0, 3.0])
    _, grads = evaluate(lambda t: [tf.zeros_like(t), tf.ones_like(t), tf.stop_gradient(t)], [x])
    assert grads == [None]
    _, (g,) = evaluate(lambda t: tf.ones_like(t) * t + tf.stop_gradient(t) * t, [x])
    assert_close(g, 1.0 + x)


def test_identity_gradient_sums_two_paths():
    _, (g,) = evaluate(lambda t: tf.identity(t) * tf.identity(t), [np.array([3.0, -1.0])])
    assert_close(g, [6.0, -2.0])


# ---------------------------------------------------------------- cast

CAST_VALUES = np.array([-1.7, 1.7, 0.0, 2.5, -0.5, 3.0, -3.0, 0.25])


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_cast(src, dst):
    x = CAST_VALUES.astype(src) if src != "bool" else CAST_VALUES > 0
    out = run_forward(lambda t: tf.cast(t, tf.as_dtype(dst)), [x])
    assert_close(out, ref.cast(x, dst), dtype=dst)


def test_cast_literals_and_aliases():
    """Float to int truncates toward zero, to bool is x != 0 (TensorFlow's output for these values)."""
    x = np.array([-1.7, 1.7, 0.0, -0.0], np.float32)
    out = run_forward(lambda t: [tf.cast(t, tf.int32), tf.cast(t, tf.bool), tf.to_int64(t), tf.to_float(t),
                                 tf.to_int32(t), tf.cast(t, "float64")], [x])
    assert_close(out[0], np.array([-1, 1, 0, 0], np.int32))
    assert_close(out[1], np.array([True, True, False, False]))
    assert_close(out[2], np.array([-1, 1, 0, 0], np.int64))
    assert_close(out[3], x)
    assert_close(out[4], np.array([-1, 1, 0, 0], np.int32))
    assert_close(out[5], x.astype(np.float64))


def test_cast_gradient():
    """Float to float passes the gradient (cast back to the input's dtype); via an int it stops."""
    x = np.array([0.5, -1.25])
    dy = np.array([2.0, 3.0], np.float32)
    out, (g,) = evaluate(lambda t: tf.cast(t, tf.float32), [x], grad_ys=dy)
    assert_close(g, dy.astype(np.float64))
    _, (g,) = evaluate(lambda t: tf.cast(tf.cast(t, tf.int32), tf.float64) * t, [x])
    assert_close(g, np.trunc(x))
    check_grad(lambda t: tf.cast(t, tf.float64) * t, [x])  # a no-op cast


# ---------------------------------------------------------------- bad input


def test_reshape_errors():
    x = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(ValueError, match=r"Reshape 'Reshape(_\d+)?': cannot reshape a tensor of 6 elements") as e:
        tf.reshape(x, [4, 2])
    assert "(2, 3)" in str(e.value) and os.path.basename(__file__) in str(e.value)
    with pytest.raises(ValueError, match="at most one dimension may be -1"):
        tf.reshape(x, [-1, -1])
    with pytest.raises(ValueError, match="cannot reshape"):
        tf.reshape(x, [4, -1])


def test_reshape_error_at_run_time_leaves_the_session_usable():
    x = tf.placeholder(tf.float64, [None, 3])
    y = tf.reshape(x, [4, -1])
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"Reshape"):
            sess.run(y, {x: np.zeros((3, 3))})
        assert_close(sess.run(y, {x: np.zeros((4, 3))}), np.zeros((4, 3)))


def test_transpose_expand_squeeze_errors():
    x = tf.placeholder(tf.float32, [2, 1, 3])
    with pytest.raises(ValueError, match=r"Transpose 'transpose(_\d+)?': perm \[0, 0, 1\] is not a permutation"):
        tf.transpose(x, [0, 0, 1])
    with pytest.raises(ValueError, match=r"ExpandDims .*axis 4 is out of range"):
        tf.expand_dims(x, 4)
    with pytest.raises(ValueError, match=r"Squeeze .*cannot squeeze dimension 0 of shape \(2, 1, 3\)"):
        tf.squeeze(x, [0])
    with pytest.raises(ValueError, match=r"Squeeze .*out of range"):
        tf.squeeze(x, [3])


def test_feed_dtype_and_shape_errors():
    x = tf.placeholder(tf.int32, [2], name="ids")
    y = x + 1
    with tf.Session() as sess:
        with pytest.raises(TypeError, match=r"ids"):
            sess.run(y, {x: np.array([0.5, 1.5])})
        with pytest.raises(ValueError, match=r"ids"):
            sess.run(y, {x: np.array([1, 2, 3])})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"must feed a value for placeholder tensor 'ids'"):
            sess.run(y)
        assert_close(sess.run(y, {x: [1, 2]}), np.array([2, 3], np.int32))


# ---------------------------------------------------------------- check_numerics


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_check_numerics_passes_finite_values_and_names_nan_and_inf(dtype):
    x = tf.placeholder(dtype, [None])
    y = tf.check_numerics(tf.log(x), "log of x")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, np.e ** 2]}), np.log(np.array([1.0, np.e ** 2], dtype)))
        for value, what in (([1.0, -1.0, 0.0], "NaN"), ([0.0, 1.0], "Inf")):  # NaN wins over Inf
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=rf"CheckNumerics 'CheckNumerics': log of x : Tensor had {what} values") as e:
                sess.run(y, {x: value})
            assert "test_array_ops.py" in str(e.value)
        big = np.ones(100_000, dtype)  # several parallel chunks, the bad value in the last one
        big[-1] = np.inf
        with pytest.raises(tf.errors.InvalidArgumentError, match="Inf values"):
            sess.run(y, {x: np.exp(big)})
        assert sess.run(y, {x: [1.0]}) == 0.0  # the session goes on


def test_check_numerics_checks_the_gradient_and_refuses_ints():
    """sqrt(0) is finite, its gradient is not: the check on the gradient flowing back into x fails."""
    x = tf.placeholder(tf.float64, [2])
    (g,) = tf.gradients(tf.reduce_sum(tf.sqrt(tf.check_numerics(x, "sqrt"))), x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, 4.0]}), [0.5, 0.25])
        with pytest.raises(tf.errors.InvalidArgumentError, match="detected in gradient. sqrt : Tensor had Inf"):
            sess.run(g, {x: [0.0, 4.0]})
    with pytest.raises(TypeError, match="CheckNumerics.*must be floating point, got int32"):
        tf.check_numerics(tf.constant([1, 2]), "ints")


def test_add_check_numerics_ops_checks_every_float_tensor():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.sqrt(x, name="root") * 2.0
    check = tf.add_check_numerics_ops()
    with tf.Session() as sess:
        assert sess.run([y, check], {x: [4.0, 9.0]})[0].tolist() == [4.0, 6.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="root:0 : Tensor had NaN values"):
            sess.run([y, check], {x: [-1.0, 9.0]})


@pytest.mark.parametrize("threads", [1, 2])
def test_transpose_kernel_against_numpy(threads):
    """Every path of the transpose kernel (merged axes, whole rows, tiles, a batch of tiles, the
    general walk), with axes of size 1, on one and two threads, against NumPy, bitwise."""
    from pygrad import _C
    rng = np.random.default_rng(threads)
    cases = [((28, 128, 128), (1, 0, 2)), ((7, 1, 300), (2, 1, 0)), ((129, 67), (1, 0)), ((5, 70, 33), (0, 2, 1)),
             ((3, 4, 5, 6), (0, 1, 3, 2)), ((2, 3, 4, 5), (2, 3, 0, 1)), ((1, 1, 9), (2, 0, 1)), ((0, 4), (1, 0))]
    for nd in range(1, 6):
        for _ in range(60):
            shape = tuple(int(v) for v in rng.integers(1, 6, nd))
            cases.append((shape, tuple(int(p) for p in rng.permutation(nd))))
    old = tf.get_num_threads()
    tf.set_num_threads(threads)
    try:
        for shape, perm in cases:
            for dtype in (np.float32, np.int64):
                x = (rng.standard_normal(shape) * 100).astype(dtype)
                y = np.empty(tuple(shape[p] for p in perm), dtype)
                _C.call("transpose", [x], [y], {"perm": list(perm)})
                np.testing.assert_array_equal(y, x.transpose(perm), err_msg=f"{shape} {perm}")
    finally:
        tf.set_num_threads(old)
