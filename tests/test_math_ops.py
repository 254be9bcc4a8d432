"""Math ops: unary, broadcasting binary, comparisons, matmul, reductions, argmax, add_n and the
Tensor operators. Table-driven: one spec row per op drives its forward, gradient and float32
gradient tests; hand-computed cases, kink rules and bad input follow."""
import inspect
import os
import zlib
from typing import Callable, NamedTuple

import numpy as np
import pytest

import pygrad as tf
import reference as ref
from gradcheck import (as_float64, assert_close, check_grad, check_grad_float32, draw, evaluate, run_forward,
                       shape_id)

FLOATS = ("float64", "float32")
INTS = ("int32", "int64")
NUMBERS = FLOATS + INTS


def _rng(*key):
    """A generator seeded by the test's parameters, so every case draws its own inputs."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ---------------------------------------------------------------- unary table


class Unary(NamedTuple):
    name: str
    fn: Callable
    domain: str
    dtypes: tuple
    grad: str  # "fd": checked by finite differences; "none": tf.gradients gives None; "zero": zeros


UNARY = [
    Unary("negative", tf.negative, "real", NUMBERS, "fd"),
    Unary("abs", tf.abs, "real", NUMBERS, "fd"),
    Unary("square", tf.square, "real", NUMBERS, "fd"),
    Unary("sign", tf.sign, "real", NUMBERS, "zero"),
    Unary("exp", tf.exp, "real", FLOATS, "fd"),
    Unary("log", tf.log, "positive", FLOATS, "fd"),
    Unary("log1p", tf.log1p, "above_minus_half", FLOATS, "fd"),
    Unary("sqrt", tf.sqrt, "positive", FLOATS, "fd"),
    Unary("rsqrt", tf.rsqrt, "positive", FLOATS, "fd"),
    Unary("reciprocal", tf.reciprocal, "real", FLOATS, "fd"),
    Unary("floor", tf.floor, "offint", FLOATS, "none"),
    Unary("ceil", tf.ceil, "offint", FLOATS, "none"),
    Unary("round", tf.round, "offint", FLOATS, "none"),
    Unary("relu", tf.nn.relu, "real", FLOATS, "fd"),
    Unary("sigmoid", tf.sigmoid, "wide", FLOATS, "fd"),
    Unary("tanh", tf.tanh, "wide", FLOATS, "fd"),
    Unary("logical_not", tf.logical_not, "bool", ("bool",), "none"),
]
UNARY_SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


def _unary_cases(grad=None):
    for s in UNARY:
        if grad is not None and s.grad not in grad:
            continue
        for shape in UNARY_SHAPES if grad is None else [(), (3, 4)]:
            for dt in s.dtypes if grad is None else ("float64",):
                yield pytest.param(s, shape, dt, id=f"{s.name}-{shape_id(shape)}-{dt}")


@pytest.mark.parametrize("spec,shape,dtype", list(_unary_cases()))
def test_unary_forward(spec, shape, dtype):
    x = draw(spec.domain, shape, dtype, _rng(spec.name, shape, dtype))
    got = run_forward(spec.fn, [x])
    assert_close(got, ref.UNARY[spec.name](*as_float64([x])), dtype=dtype, what=spec.name)


@pytest.mark.parametrize("spec,shape,dtype", list(_unary_cases(grad=("fd",))))
def test_unary_grad(spec, shape, dtype):
    check_grad(spec.fn, [draw(spec.domain, shape, dtype, _rng(spec.name, shape))])


@pytest.mark.parametrize("spec", [s for s in UNARY if s.grad == "fd"], ids=lambda s: f"{s.name}-(3,4)-float32")
def test_unary_grad_float32(spec):
    check_grad_float32(spec.fn, [draw(spec.domain, (3, 4), np.float64, _rng(spec.name))])


@pytest.mark.parametrize("spec", [s for s in UNARY if s.grad in ("none", "zero") and s.dtypes != ("bool",)],
                         ids=lambda s: s.name)
def test_unary_grad_piecewise_constant(spec):
    """TF: floor, ceil and round have no gradient (None); sign's gradient is zeros."""
    x = draw(spec.domain, (3, 4), np.float64, _rng(spec.name))
    _, (g,) = evaluate(spec.fn, [x])
    if spec.grad == "none":
        assert g is None
    else:
        assert_close(g, np.zeros_like(x))


DYNAMIC = [pytest.param(False, id="dims"), pytest.param(None, id="rank")]  # check_grad(static=...)


@pytest.mark.parametrize("static", DYNAMIC)
@pytest.mark.parametrize("shape", [(), (3, 4)], ids=shape_id)
def test_unary_grad_dynamic_shapes(shape, static):
    """Gradients through ops whose placeholder shapes (or ranks) are unknown until run time."""
    x = draw("positive", shape, np.float64, _rng("dyn", shape))
    check_grad(lambda t: tf.sqrt(tf.exp(t) * tf.tanh(t) + tf.square(t)), [x], static=static)


# ---------------------------------------------------------------- binary table


class Binary(NamedTuple):
    name: str
    fn: Callable
    domains: tuple  # (a, b)
    dtypes: tuple
    grad: bool
    separate: float = 0.0  # keep |a - b| (after broadcasting) at least this far apart: max/min ties


BINARY = [
    Binary("add", tf.add, ("real", "real"), NUMBERS, True),
    Binary("subtract", tf.subtract, ("real", "real"), NUMBERS, True),
    Binary("multiply", tf.multiply, ("real", "real"), NUMBERS, True),
    Binary("truediv", tf.truediv, ("real", "nonzero"), NUMBERS, True),
    Binary("floordiv", tf.floordiv, ("real", "nonzero"), NUMBERS, False),
    Binary("pow", tf.pow, ("positive", "real"), FLOATS, True),
    Binary("maximum", tf.maximum, ("real", "real"), NUMBERS, True, separate=0.1),
    Binary("minimum", tf.minimum, ("real", "real"), NUMBERS, True, separate=0.1),
    Binary("squared_difference", tf.squared_difference, ("real", "real"), FLOATS, True),
    Binary("equal", tf.equal, ("grid", "grid"), NUMBERS + ("bool",), False),
    Binary("not_equal", tf.not_equal, ("grid", "grid"), NUMBERS + ("bool",), False),
    Binary("less", tf.less, ("grid", "grid"), NUMBERS, False),
    Binary("less_equal", tf.less_equal, ("grid", "grid"), NUMBERS, False),
    Binary("greater", tf.greater, ("grid", "grid"), NUMBERS, False),
    Binary("greater_equal", tf.greater_equal, ("grid", "grid"), NUMBERS, False),
    Binary("logical_and", tf.logical_and, ("bool", "bool"), ("bool",), False),
    Binary("logical_or", tf.logical_or, ("bool", "bool"), ("bool",), False),
    Binary("logical_xor", tf.logical_xor, ("bool", "bool"), ("bool",), False),
]
BROADCASTS = [((3, 4), (3, 4)), ((3, 1), (4,)), ((4,), (3, 1)), ((), (3, 4)), ((3, 4), ()), ((2, 1, 4), (3, 1)),
              ((1, 4), (3, 1))]
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _binary_inputs(spec, shapes, dtype):
    rng = _rng(spec.name, shapes, dtype)
    for _ in range(100):
        domains = spec.domains
        if dtype == "bool":
            domains = ("bool", "bool")
        a, b = (draw(d, s, dtype, rng) for d, s in zip(domains, shapes))
        x, y = (v.astype(np.float64) for v in np.broadcast_arrays(a, b))
        if spec.separate and np.min(np.abs(x - y)) < spec.separate:
            continue
        if spec.name == "floordiv" and dtype in FLOATS and np.min(np.abs(x / y - np.round(x / y))) < 1e-3:
            continue  # floor(a / b) right at an integer: rounding decides, not the op
        return a, b
    raise AssertionError("could not draw inputs")


def _binary_out_dtype(name, dtype):
    if name in COMPARISONS:
        return "bool"
    if name == "truediv" and dtype in INTS:
        return "float64"  # TF: int32 / int32 is float64
    return dtype


def _binary_cases(grad):
    for s in BINARY:
        if grad and not s.grad:
            continue
        for shapes in BROADCASTS:
            for dt in ("float64",) if grad else s.dtypes:
                yield pytest.param(s, shapes, dt, id=f"{s.name}-{shape_id(shapes[0])},{shape_id(shapes[1])}-{dt}")


@pytest.mark.parametrize("spec,shapes,dtype", list(_binary_cases(grad=False)))
def test_binary_forward(spec, shapes, dtype):
    a, b = _binary_inputs(spec, shapes, dtype)
    got = run_forward(spec.fn, [a, b])
    assert_close(got, ref.BINARY[spec.name](*as_float64([a, b])), dtype=_binary_out_dtype(spec.name, dtype),
                 what=spec.name)


@pytest.mark.parametrize("spec,shapes,dtype", list(_binary_cases(grad=True)))
def test_binary_grad(spec, shapes, dtype):
    """Includes the broadcasting rule: each gradient has its input's shape (checked by check_grad)."""
    check_grad(spec.fn, list(_binary_inputs(spec, shapes, dtype)))


@pytest.mark.parametrize("static", DYNAMIC)
@pytest.mark.parametrize("spec,shapes,dtype", list(_binary_cases(grad=True)))
def test_binary_grad_dynamic_shapes(spec, shapes, dtype, static):
    """The same with unknown placeholder dims or ranks: sums back to each input's shape at run time."""
    check_grad(spec.fn, list(_binary_inputs(spec, shapes, dtype)), static=static)


@pytest.mark.parametrize("spec", [s for s in BINARY if s.grad], ids=lambda s: f"{s.name}-(3,1),(4,)-float32")
def test_binary_grad_float32(spec):
    check_grad_float32(spec.fn, list(_binary_inputs(spec, ((3, 1), (4,)), "float64")))


@pytest.mark.parametrize("name", ["floordiv"] + list(COMPARISONS))
def test_binary_not_differentiable(name):
    a, b = _binary_inputs(next(s for s in BINARY if s.name == name), ((3,), (3,)), "float64")
    _, grads = evaluate(lambda x, y: tf.cast(getattr(tf, name)(x, y), tf.float64) * x, [a, b])
    assert_close(grads[0], np.asarray(ref.BINARY[name](a, b), np.float64))  # only the product's own path
    assert grads[1] is None


def test_broadcast_gradient_shape_literal():
    """d/dx and d/dy of sum([3,1] + [4]): 4 for each x (its row) and 3 for each y (its column)."""
    _, (gx, gy) = evaluate(tf.add, [np.zeros((3, 1)), np.zeros(4)])
    assert_close(gx, np.full((3, 1), 4.0))
    assert_close(gy, np.full((4,), 3.0))


@pytest.mark.parametrize("dtype", INTS)
def test_int_pow_and_div(dtype):
    a = np.array([2, 3, -2, 5, 0, -1], dtype)
    b = np.array([3, 2, 3, 0, 4, 5], dtype)
    got = run_forward(lambda x, y: [tf.pow(x, y), x ** y, tf.div(x, np.array(2, dtype)), tf.truediv(x, y + 1)], [a, b])
    assert_close(got[0], [8, 9, -8, 1, 0, -1], dtype=dtype)
    assert_close(got[1], [8, 9, -8, 1, 0, -1], dtype=dtype)
    assert_close(got[2], [1, 1, -1, 2, 0, -1], dtype=dtype)  # tf.div on ints floors
    assert_close(got[3], a / (b + 1.0), dtype="float64")


def test_floordiv_literals():
    """Python / TF floor division (matches TensorFlow's output for these values)."""
    a = np.array([-7, 7, -7, 7, 5, -5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3], np.int32)
    assert_close(run_forward(lambda x, y: x // y, [a, b]), [-4, 3, 3, -4, 1, -2], dtype="int32")
    af = np.array([-7.0, 7.0, -7.5, 7.5]), np.array([2.0, -2.0, 2.0, 2.0])
    assert_close(run_forward(tf.floordiv, list(af)), [-4.0, -4.0, -4.0, 3.0])


# ---------------------------------------------------------------- kinks and ties (TensorFlow's rules)


def test_relu_and_abs_at_zero():
    x = np.array([-1.0, 0.0, 2.0])
    _, (g,) = evaluate(tf.nn.relu, [x])
    assert_close(g, [0.0, 0.0, 1.0])  # relu'(0) = 0
    _, (g,) = evaluate(tf.abs, [x])
    assert_close(g, [-1.0, 0.0, 1.0])  # abs'(0) = sign(0) = 0


@pytest.mark.parametrize("name,first", [("maximum", [1.0, 0.0]), ("minimum", [1.0, 1.0])])
def test_maximum_minimum_ties_go_to_the_first_input(name, first):
    x, y = np.array([1.0, 2.0]), np.array([1.0, 3.0])
    out, (gx, gy) = evaluate(getattr(tf, name), [x, y])
    assert_close(gx, first)
    assert_close(gy, 1.0 - np.array(first))


def test_pow_gradient_wrt_exponent_is_zero_for_nonpositive_base():
    x, y = np.array([-1.0, 0.0, 2.0]), np.array([2.0, 2.0, 2.0])
    out, (gx, gy) = evaluate(tf.pow, [x, y])
    assert_close(out, [1.0, 0.0, 4.0])
    assert_close(gx, [-2.0, 0.0, 4.0])
    assert_close(gy, [0.0, 0.0, 4.0 * np.log(2.0)])


def test_hand_computed_math():
    # d/dx (x*x + 3x) = 2x + 3 at x = [1, -2]; d/dx exp(x) at 0 is 1; d/dx log(x) at 4 is 1/4.
    _, (g,) = evaluate(lambda x: x * x + 3.0 * x, [np.array([1.0, -2.0])])
    assert_close(g, [5.0, -1.0])
    _, (g,) = evaluate(lambda x: tf.exp(x) + tf.log(x + 4.0), [np.array([0.0])])
    assert_close(g, [1.25])
    # d/dy (x / y) = -x / y^2 at x = 6, y = 2: -1.5; d/dx = 1/2
    _, (gx, gy) = evaluate(tf.truediv, [np.array(6.0), np.array(2.0)])
    assert (gx, gy) == (0.5, -1.5)
    # sigmoid'(0) = 1/4, tanh'(0) = 1
    _, (g,) = evaluate(lambda x: tf.sigmoid(x) + tf.tanh(x), [np.array(0.0)])
    assert g == 1.25


def test_round_half_to_even_and_sign_of_zero():
    out = run_forward(lambda x: [tf.round(x), tf.sign(x)], [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.0])])
    assert_close(out[0], [0.0, 2.0, 2.0, -0.0, -2.0, 0.0])
    assert_close(out[1], [1.0, 1.0, 1.0, -1.0, -1.0, 0.0])


def test_sigmoid_is_stable_at_extremes():
    x = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    out, (g,) = evaluate(tf.sigmoid, [x])
    assert_close(out, ref.sigmoid(x))
    assert np.all(np.isfinite(g)) and g[0] == 0.0 and g[-1] == 0.0


# ---------------------------------------------------------------- second derivatives

SECOND_ORDER = [
    ("cube", lambda x: x ** 3, [(3, 4)], "real"),
    ("tanh", tf.tanh, [(3, 4)], "real"),
    ("sigmoid", tf.sigmoid, [(3, 4)], "real"),
    ("exp", tf.exp, [(3, 4)], "real"),
    ("reciprocal", tf.reciprocal, [(3, 4)], "real"),
    ("matmul_chain", lambda a, b, c: tf.matmul(tf.matmul(a, b), c), [(2, 3), (3, 4), (4, 2)], "real"),
    ("matmul_tanh", lambda a, b: tf.matmul(tf.tanh(tf.matmul(a, b, transpose_b=True)), b), [(3, 2), (4, 2)], "real"),
    ("reduce_mean_sq", lambda x: tf.square(tf.reduce_mean(x, axis=1)) + tf.reduce_mean(x * x), [(3, 4)], "real"),
    ("reduce_sum_sq", lambda x: tf.square(tf.reduce_sum(x, axis=0, keepdims=True)), [(3, 4)], "real"),
    ("reduce_max_sq", lambda x: tf.square(tf.reduce_max(x, axis=1)), [(3, 4)], "real"),
    ("pow_both", tf.pow, [(3, 1), (4,)], "positive"),
    ("max_product", lambda x, y: tf.maximum(x, y) * x, [(3, 4), (3, 4)], "real"),
]


@pytest.mark.parametrize("static", [pytest.param(True, id="static"), pytest.param(None, id="rank")])
@pytest.mark.parametrize("name,fn,shapes,domain", SECOND_ORDER, ids=[r[0] for r in SECOND_ORDER])
def test_second_derivative(name, fn, shapes, domain, static):
    rng = _rng("second", name)
    inputs = [draw(domain, s, np.float64, rng) for s in shapes]
    if name == "max_product":
        inputs[1] = inputs[0] + draw("real", shapes[1], np.float64, rng)  # no ties
    check_grad(fn, inputs, order=2, static=static)


def test_tf1_linear_regression_with_rank_unknown_placeholders():
    """The TF1 tutorial pattern X = tf.placeholder("float"): reductions of tensors whose rank is
    known only at run time must still have gradients."""
    X, Y = tf.placeholder("float"), tf.placeholder("float")
    W, b = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
    pred = X * W + b
    cost = tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * 5) + tf.reduce_mean(tf.square(pred - Y), axis=-1)
    gw, gb = tf.gradients(cost, [W, b])
    xs, ys = np.arange(5.0, dtype=np.float32), np.array([1.0, 3.0, 2.0, 5.0, 4.0], np.float32)
    with tf.Session() as sess:
        got = sess.run([gw, gb], {X: xs, Y: ys, W: 0.5, b: 0.25})
    r = 0.5 * xs + 0.25 - ys
    assert_close(got[0], np.float32(np.sum(r * xs) / 5 + 2 * np.mean(r * xs)))
    assert_close(got[1], np.float32(np.sum(r) / 5 + 2 * np.mean(r)))


# ---------------------------------------------------------------- matmul

TRANSPOSES = [(False, False), (False, True), (True, False), (True, True)]


def _matmul_inputs(ta, tb, dtype, m=3, k=4, n=5):
    rng = _rng("matmul", ta, tb, dtype)
    a = draw("real", (k, m) if ta else (m, k), dtype, rng)
    b = draw("real", (n, k) if tb else (k, n), dtype, rng)
    return a, b


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ta,tb", TRANSPOSES, ids=lambda t: "T" if t else "N")
def test_matmul_forward(ta, tb, dtype):
    a, b = _matmul_inputs(ta, tb, dtype)
    out = run_forward(lambda x, y: [tf.matmul(x, y, transpose_a=ta, transpose_b=tb),
                                    tf.matmul(x, y, adjoint_a=ta, adjoint_b=tb)], [a, b])
    expected = ref.matmul(a, b, ta, tb)
    scale = ref.matmul(np.abs(a), np.abs(b), ta, tb)  # the dot products' error bound
    assert_close(out[0], expected, dtype=dtype, scale=scale)
    assert_close(out[1], expected, dtype=dtype, scale=scale)


@pytest.mark.parametrize("ta,tb", TRANSPOSES, ids=lambda t: "T" if t else "N")
def test_matmul_grad(ta, tb):
    check_grad(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb), list(_matmul_inputs(ta, tb, "float64")))


@pytest.mark.parametrize("ta,tb", TRANSPOSES, ids=lambda t: "T" if t else "N")
def test_matmul_grad_float32(ta, tb):
    check_grad_float32(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb),
                       list(_matmul_inputs(ta, tb, "float64")))


def test_matmul_grad_projection():
    """Inputs above the elementwise limit: the random-projection check."""
    a, b = _matmul_inputs(False, True, "float64", m=12, k=20, n=15)
    check_grad(lambda x, y: tf.tanh(tf.matmul(x, y, transpose_b=True)), [a, b])


def test_matmul_hand_computed():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0], [7.0, 8.0]])
    out, (ga, gb) = evaluate(tf.matmul, [a, b])
    assert_close(out, [[19.0, 22.0], [43.0, 50.0]])
    assert_close(ga, [[11.0, 15.0], [11.0, 15.0]])  # ones @ b^T
    assert_close(gb, [[4.0, 4.0], [6.0, 6.0]])  # a^T @ ones


# ---------------------------------------------------------------- reductions

REDUCE_AXES = [None, (), (0,), (1,), (2,), (-1,), (0, 1), (0, 2), (1, 2), (0, 1, 2), (-3, 2)]
REDUCE_OPS = {"sum": tf.reduce_sum, "mean": tf.reduce_mean, "max": tf.reduce_max, "min": tf.reduce_min,
              "any": tf.reduce_any, "all": tf.reduce_all}


def _axis_id(axis):
    return "all" if axis is None else "(" + ",".join(map(str, axis)) + ")"


def _reduce_cases(ops, dtypes):
    for op in ops:
        for axis in REDUCE_AXES:
            for keep in (False, True):
                for dt in dtypes(op):
                    yield pytest.param(op, axis, keep, dt,
                                       id=f"reduce_{op}-axis={_axis_id(axis)}-{'keep' if keep else 'drop'}-{dt}")


@pytest.mark.parametrize("op,axis,keepdims,dtype",
                         list(_reduce_cases(REDUCE_OPS, lambda op: ("bool",) if op in ("any", "all") else NUMBERS)))
def test_reduce_forward(op, axis, keepdims, dtype):
    x = draw("bool" if dtype == "bool" else "int" if dtype in INTS else "real", (2, 3, 4), dtype, _rng(op, dtype))
    pyaxis = None if axis is None else list(axis)
    out = run_forward(lambda t: REDUCE_OPS[op](t, axis=pyaxis, keepdims=keepdims), [x])
    assert_close(out, ref.reduce(op, *as_float64([x]), axis=axis, keepdims=keepdims), dtype=dtype)


@pytest.mark.parametrize("static", [pytest.param(True, id="static")] + DYNAMIC)
@pytest.mark.parametrize("op,axis,keepdims,dtype",
                         list(_reduce_cases(("sum", "mean", "max", "min"), lambda op: ("float64",))))
def test_reduce_grad(op, axis, keepdims, dtype, static):
    x = draw("real", (2, 3, 4), dtype, _rng(op, "grad"))  # continuous values: no ties for max/min
    pyaxis = None if axis is None else list(axis)
    check_grad(lambda t: REDUCE_OPS[op](t, axis=pyaxis, keepdims=keepdims), [x], static=static)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reduce_grad_float32_and_dynamic(op):
    x = draw("real", (3, 4), np.float64, _rng(op, "dyn"))
    check_grad_float32(lambda t: REDUCE_OPS[op](t, axis=1), [x])
    check_grad(lambda t: REDUCE_OPS[op](t, axis=[0]), [x], static=False)


def test_reduce_tf1_spellings():
    x = np.arange(24.0).reshape(2, 3, 4)
    out = run_forward(lambda t: [tf.reduce_sum(t, reduction_indices=[1], keep_dims=True),
                                 tf.reduce_mean(t, reduction_indices=2), tf.reduce_max(t, 0, True),
                                 tf.reduce_sum(t, axis=tf.constant([0, 2])), tf.reduce_min(t, axis=-1)], [x])
    assert_close(out[0], x.sum(axis=1, keepdims=True))
    assert_close(out[1], x.mean(axis=2))
    assert_close(out[2], x.max(axis=0, keepdims=True))
    assert_close(out[3], x.sum(axis=(0, 2)))
    assert_close(out[4], x.min(axis=-1))
    t = tf.placeholder(tf.float64, [2, 3])
    with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(t, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="both 'keepdims' and 'keep_dims'"):
        tf.reduce_sum(t, keepdims=True, keep_dims=True)
    with pytest.raises(ValueError, match=r"Sum 'Sum(_\d+)?': axis 2 is out of range for a tensor of rank 2"):
        tf.reduce_sum(t, axis=2)


def test_reduce_max_ties_split_the_gradient():
    _, (g,) = evaluate(tf.reduce_max, [np.array([1.0, 3.0, 3.0])])
    assert_close(g, [0.0, 0.5, 0.5])
    x = np.array([[2.0, 2.0, 2.0, 1.0], [0.0, -1.0, 0.0, -1.0]])
    for keep in (False, True):
        dy = np.array([[6.0], [4.0]]) if keep else np.array([6.0, 4.0])
        _, (g,) = evaluate(lambda t: tf.reduce_max(t, axis=1, keepdims=keep), [x], grad_ys=dy)
        assert_close(g, [[2.0, 2.0, 2.0, 0.0], [2.0, 0.0, 2.0, 0.0]])
        assert_close(g, ref.reduce_max_grad(x, axis=(1,), dy=dy))
        _, (g,) = evaluate(lambda t: tf.reduce_min(t, axis=1, keepdims=keep), [x], grad_ys=dy)
        assert_close(g, [[0.0, 0.0, 0.0, 6.0], [0.0, 2.0, 0.0, 2.0]])


def test_reduce_hand_computed():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    out, (g,) = evaluate(lambda t: tf.reduce_mean(t, axis=0), [x])
    assert_close(out, [2.0, 3.0])
    assert_close(g, np.full((2, 2), 0.5))
    out, (g,) = evaluate(lambda t: tf.reduce_sum(t * t), [x])
    assert out == 30.0
    assert_close(g, 2 * x)
    # Integer mean truncates toward zero, as TF: -3/3 = -1, -7/2 = -3 (not -4), 9/2 = 4.
    out = run_forward(lambda t: [tf.reduce_mean(t), tf.reduce_mean(t, axis=1)],
                      [np.array([[-1, -2, 0], [-3, -4, 0]], np.int32)])
    assert_close(out[0], np.array(-1, np.int32))
    assert_close(out[1], np.array([-1, -2], np.int32))
    assert_close(ref.int_mean(np.array([[-3, -4], [5, 4]]), (1,)), [-3, 4])


# ---------------------------------------------------------------- argmax / argmin


@pytest.mark.parametrize("out_type", ["int64", "int32"])
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce(op, axis, dtype, out_type):
    x = draw("grid", (3, 4, 5), dtype, _rng(op, dtype))  # small integers: ties go to the first index
    kwargs = {} if out_type == "int64" else {"output_type": tf.int32}
    out = run_forward(lambda t: [getattr(tf, op)(t, axis, **kwargs), getattr(tf, op)(t, dimension=axis, **kwargs)], [x])
    expected = getattr(ref, op)(x, axis)
    assert_close(out[0], expected, dtype=out_type)
    assert_close(out[1], expected, dtype=out_type)


def test_argmax_ties_and_no_gradient():
    x = np.array([1.0, 3.0, 3.0])
    assert run_forward(lambda t: tf.argmax(t, 0), [x]) == 1
    p = tf.placeholder(tf.float64, [3])
    assert tf.gradients(tf.cast(tf.argmax(p, 0), tf.float64), [p]) == [None]


# ---------------------------------------------------------------- add_n


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_add_n(n):
    xs = [draw("real", (3, 4), np.float64, _rng("add_n", n, i)) for i in range(n)]
    out = run_forward(lambda *ts: tf.add_n(list(ts)), xs)
    assert_close(out, np.sum(xs, axis=0))
    check_grad(lambda *ts: tf.add_n(list(ts)) * ts[0], xs)


# ---------------------------------------------------------------- Tensor operators

OPERATORS = [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
    ("truediv", lambda a, b: a / b), ("floordiv", lambda a, b: a // b), ("pow", lambda a, b: a ** b),
    ("lt", lambda a, b: a < b), ("le", lambda a, b: a <= b), ("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b),
]
OPERAND_KINDS = ["tensor-tensor", "tensor-scalar", "scalar-tensor", "tensor-ndarray", "ndarray-tensor"]


@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("name,op", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_operator(name, op, kind, dtype):
    """t OP u for a tensor t and u a tensor, a Python scalar or a NumPy array, on either side."""
    rng = _rng("operator", name, kind)
    x = draw("positive", (3, 4), dtype, rng)
    other = draw("positive", (4,), dtype, rng)
    left, right = kind.split("-")
    const = (1.5 if dtype in FLOATS else 2) if "scalar" in kind else other
    if kind == "tensor-tensor":
        out = run_forward(op, [x, other])
    elif left == "tensor":
        out = run_forward(lambda t: op(t, const), [x])
    else:
        out = run_forward(lambda t: op(const, t), [x])
    a, b = (x, const) if left == "tensor" else (const, x)
    if kind == "tensor-tensor":
        b = other
    expected = op(np.float64(a) if np.isscalar(a) else a.astype(np.float64),
                  np.float64(b) if np.isscalar(b) else b.astype(np.float64))  # exact for these small ints
    out_dtype = ("bool" if name in ("lt", "le", "gt", "ge") else
                 "float64" if name == "truediv" and dtype in INTS else dtype)
    assert_close(out, expected, dtype=out_dtype)


def test_public_aliases():
    a, b = np.array([6.0, -3.0]), np.array([4.0, 2.0])
    out = run_forward(lambda x, y: [tf.divide(x, y), tf.realdiv(x, y), tf.div(x, y), tf.scalar_mul(2.0, x),
                                    tf.mul(x, y), tf.sub(x, y), tf.neg(x)], [a, b])
    for got, want in zip(out, [a / b, a / b, a / b, 2 * a, a * b, a - b, -a]):
        assert_close(got, want)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_add_n_dtypes(dtype):
    xs = [draw("real", (2, 3), dtype, _rng("add_n", dtype, i)) for i in range(3)]
    assert_close(run_forward(lambda *ts: tf.add_n(list(ts)), xs), np.sum(as_float64(xs), axis=0), dtype=dtype)


def test_operator_matmul_unary_and_logical():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 1.0]])
    out = run_forward(lambda s, t: [s @ t, b @ s, s @ b, -s, abs(-s)], [a, b])
    for got, want in zip(out, [a @ b, b @ a, a @ b, -a, a]):
        assert_close(got, want)
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    out = run_forward(lambda s, t: [s & t, s | t, s ^ t, ~s, s & q, q | s, True & s, False | s, s ^ q], [p, q])
    for got, want in zip(out, [p & q, p | q, p ^ q, ~p, p & q, q | p, True & p, False | p, p ^ q]):
        assert_close(got, want)


def test_operator_reflected_xor():
    p = np.array([True, False])
    assert_close(run_forward(lambda s: True ^ s, [p]), [False, True])


def test_operator_literal_follows_tensor_dtype():
    """A Python scalar, list or NumPy array next to a tensor takes the tensor's dtype (TF1)."""
    x32 = tf.placeholder(tf.float32, [3])
    for y in (x32 + 2, 2.5 * x32, x32 - [1.0, 2.0, 3.0], x32 * np.array([1.0, 2.0, 3.0]),
              np.array([1.0, 2.0, 3.0]) + x32, x32 + np.float64(2.0), x32 / np.array([1, 2, 3])):
        assert y.dtype == tf.float32
    xi = tf.placeholder(tf.int32, [3])
    assert (xi + 1).dtype == tf.int32 and (xi + np.array([1, 2, 3], np.int64)).dtype == tf.int32
    with pytest.raises(TypeError):
        xi * 1.5  # a fraction cannot become int32 (TF raises too)
    out = run_forward(lambda t: t * np.array([1.0, 2.0, 4.0]), [np.array([1.0, 1.0, 1.0], np.float32)])
    assert_close(out, np.array([1.0, 2.0, 4.0], np.float32))


# ---------------------------------------------------------------- bad input


def test_matmul_shape_mismatch_names_shapes_and_site():
    a = tf.placeholder(tf.float32, [3, 4])
    b = tf.placeholder(tf.float32, [5, 6])
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ValueError, match=r"MatMul 'MatMul(_\d+)?': inner dimensions must agree") as e:
        tf.matmul(a, b)
    msg = str(e.value)
    assert "(3, 4)" in msg and "(5, 6)" in msg
    assert "op defined at" in msg and f"{os.path.basename(__file__)}:{line}" in msg
    with pytest.raises(ValueError, match=r"inner dimensions must agree"):
        tf.matmul(a, b, transpose_a=True)
    with pytest.raises(ValueError, match=r"must be matrices"):
        tf.matmul(a, tf.placeholder(tf.float32, [4]))


def test_broadcast_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"Add 'add(_\d+)?': .*\(3, 4\).*\(5,\)") as e:
        tf.placeholder(tf.float32, [3, 4]) + tf.placeholder(tf.float32, [5])
    assert "op defined at" in str(e.value) and os.path.basename(__file__) in str(e.value)


@pytest.mark.parametrize("fn", [tf.add, tf.multiply, tf.maximum, tf.matmul, tf.less], ids=lambda f: f.__name__)
def test_dtype_mismatch_is_a_type_error(fn):
    a = tf.placeholder(tf.float32, [2, 2])
    b = tf.placeholder(tf.float64, [2, 2])
    with pytest.raises(TypeError, match=r"float32.*float64"):
        fn(a, b)


UNSUPPORTED = [("exp", tf.exp, tf.int32), ("logical_not", tf.logical_not, tf.float32), ("relu", tf.nn.relu, tf.int64),
               ("logical_and", lambda t: tf.logical_and(t, t), tf.int32), ("less", lambda t: tf.less(t, t), tf.bool),
               ("matmul", lambda t: tf.matmul(t, t), tf.int32)]


@pytest.mark.parametrize("name,fn,dtype", UNSUPPORTED, ids=[f"{u[0]}-{u[2].name}" for u in UNSUPPORTED])
def test_unsupported_dtype_is_a_type_error(name, fn, dtype):
    t = tf.placeholder(dtype, [2, 2])
    with pytest.raises(TypeError, match=dtype.name):
        fn(t)


def test_feed_of_wrong_shape_names_the_placeholder():
    x = tf.placeholder(tf.float64, [2, 3], name="images")
    y = tf.reduce_sum(x)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"images"):
            sess.run(y, {x: np.zeros((3, 2))})
        assert sess.run(y, {x: np.ones((2, 3))}) == 6.0


def test_run_time_shape_mismatch_then_session_still_works():
    """With unknown static shapes the mismatch is found when the plan is built; the session survives."""
    a = tf.placeholder(tf.float64, [None, None])
    b = tf.placeholder(tf.float64, [None, None])
    c = tf.matmul(a, b)
    d = a + b
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"MatMul 'MatMul(_\d+)?': inner dimensions"):
            sess.run(c, {a: np.ones((2, 3)), b: np.ones((4, 2))})
        with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 2\)"):
            sess.run(d, {a: np.ones((2, 3)), b: np.ones((4, 2))})
        assert_close(sess.run(c, {a: np.ones((2, 3)), b: np.ones((3, 2))}), np.full((2, 2), 3.0))


# ---------------------------------------------------------------- optional peer: TensorFlow


def test_cross_check_with_tensorflow(tf_peer):
    """A few values and gradients against TensorFlow itself, when it is installed."""
    rng = _rng("peer")
    x, y = draw("positive", (3, 1), np.float64, rng), draw("real", (4,), np.float64, rng)
    cases = [lambda m, a, b: m.pow(a, b) * m.maximum(a, b), lambda m, a, b: m.reduce_max(m.square(a - b), axis=0),
             lambda m, a, b: m.floordiv(a, b + 3.0) + m.tanh(a * b), lambda m, a, b: m.sign(a) * b]
    for case in cases:
        ours_out, ours_g = evaluate(lambda a, b: case(tf, a, b), [x, y])
        g = tf_peer.Graph()
        with g.as_default():
            a, b = tf_peer.constant(x), tf_peer.constant(y)
            out = case(tf_peer, a, b)
            grads = tf_peer.gradients(out, [a, b])
            with tf_peer.Session(graph=g) as s:
                theirs = s.run([out] + [t for t in grads if t is not None])
        assert_close(ours_out, theirs[0], rtol=1e-12)
        assert [gr is None for gr in ours_g] == [gr is None for gr in grads]
        for ours, want in zip([gr for gr in ours_g if gr is not None], theirs[1:]):
            assert_close(ours, want)


# ---------------------------------------------------------------- larger shapes: the parallel paths

LARGE = [  # above the kernels' parallel grains (32768 elements), several blocks and tiles
    ("add_rows", tf.add, [(300, 200), (200,)]),
    ("mul_cols", tf.multiply, [(200, 300), (200, 1)]),
    ("sub_long_inner", tf.subtract, [(2, 40000), (40000,)]),
    ("maximum_same", tf.maximum, [(250, 200), (250, 200)]),
    ("sum_cols", lambda a: tf.reduce_sum(a, axis=0), [(300, 700)]),
    ("max_rows", lambda a: tf.reduce_max(a, axis=1), [(300, 700)]),
    ("mean_outer_inner", lambda a: tf.reduce_mean(a, axis=[0, 2]), [(30, 40, 50)]),
    ("min_middle", lambda a: tf.reduce_min(a, axis=1, keepdims=True), [(30, 40, 50)]),
    ("sum_all", tf.reduce_sum, [(300, 300)]),
    ("tanh_exp", lambda a: tf.tanh(a) * tf.exp(a), [(300, 200)]),
    ("matmul", tf.matmul, [(64, 300), (300, 50)]),
]
LARGE_REF = {
    "add_rows": np.add, "mul_cols": np.multiply, "sub_long_inner": np.subtract, "maximum_same": np.maximum,
    "sum_cols": lambda a: a.sum(axis=0), "max_rows": lambda a: a.max(axis=1),
    "mean_outer_inner": lambda a: a.mean(axis=(0, 2)), "min_middle": lambda a: a.min(axis=1, keepdims=True),
    "sum_all": np.sum, "tanh_exp": lambda a: np.tanh(a) * np.exp(a), "matmul": ref.matmul,
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,fn,shapes", LARGE, ids=[c[0] for c in LARGE])
def test_large_forward(name, fn, shapes, dtype):
    rng = _rng("large", name)
    inputs = [draw("real", s, dtype, rng) for s in shapes]
    scale = ref.matmul(*[np.abs(a) for a in as_float64(inputs)]) if name == "matmul" else None
    assert_close(run_forward(fn, inputs), LARGE_REF[name](*as_float64(inputs)), dtype=dtype, scale=scale)


@pytest.mark.parametrize("name,fn,shapes", LARGE, ids=[c[0] for c in LARGE])
def test_large_grad_projection(name, fn, shapes):
    rng = _rng("large", name)
    check_grad(fn, [draw("real", s, np.float64, rng) for s in shapes])


def test_results_do_not_depend_on_thread_count():
    """The kernels split work over outputs only, so 1 and 2 threads give bit-identical results."""
    rng = _rng("threads")
    x = draw("real", (300, 700), np.float64, rng)
    y = draw("real", (700,), np.float64, rng)

    def fn(a, b):
        values = [tf.reduce_sum(a, axis=0), tf.reduce_mean(a, axis=1), tf.reduce_max(a), a * b, tf.tanh(a),
                  tf.nn.softmax(a, axis=0), tf.nn.log_softmax(a)]
        return values + tf.gradients(tf.reduce_sum(tf.nn.softmax(a) * b), [a, b])

    before = tf.get_num_threads()
    results = []
    try:
        for n in (1, 2):
            tf.set_num_threads(n)
            tf.reset_default_graph()
            results.append(run_forward(fn, [x, y]))
    finally:
        tf.set_num_threads(before)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates_like_numpy(dtype):
    """max/min (reduced and elementwise) let a NaN win, and argmax/argmin pick the first NaN
    (NumPy's rule, which pygrad documents), on the row, column and parallel reduction paths."""
    rng = _rng("nan", dtype)
    small = np.array([[1.0, np.nan, 3.0, 0.5], [np.nan, 2.0, np.nan, 7.0], [1.0, 2.0, 3.0, 4.0]], dtype)
    large = draw("real", (300, 700), dtype, rng)
    large[rng.integers(0, 300, 5), rng.integers(0, 700, 5)] = np.nan
    for x in (small, large):
        out = run_forward(lambda t: [tf.reduce_max(t, 0), tf.reduce_max(t, 1), tf.reduce_min(t, 0), tf.reduce_min(t, 1),
                                     tf.reduce_max(t), tf.maximum(t, 2.0), tf.minimum(2.0, t), tf.argmax(t, 1),
                                     tf.argmin(t, 0)], [x])
        expected = [x.max(0), x.max(1), x.min(0), x.min(1), x.max(), np.maximum(x, 2.0), np.minimum(2.0, x),
                    np.argmax(x, 1), np.argmin(x, 0)]
        for got, want in zip(out, expected):
            assert_close(got, want, dtype=want.dtype)
