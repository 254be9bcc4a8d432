"""Property-based fuzzing (hypothesis) of the elementwise unary and binary ops, the reductions and
matmul, in float32 and float64: random shapes (rank 0 to 4, size-0 and size-1 dims, NumPy
broadcasting of two random shapes), random reduction axes (negative ones, an int or a list, none,
all) and keepdims, matmul's transpose flags, and placeholder shapes that are static, have unknown
dims or an unknown rank.

One table of op specs, OPS, drives two properties:
* forward: the value equals the NumPy reference (reference.py) within gradcheck.py's tolerance;
* gradient (float64): tf.gradients agrees with finite differences (gradcheck.check_grad); ops
  that are not differentiable give None, as in TF.

Each op's domain is a hypothesis strategy that keeps its values away from the op's kinks and edges
(relu and abs at 0, maximum/minimum ties, log and sqrt of non-positive values, division by ~0, floor
and round at integers and halves: 0.1 or more; reduce_max/min ties: 0.005 or more): far more than
the finite-difference step (1e-6) and than float32 rounding, so a failure is pygrad's, not the
reference's or the check's.

Examples are derandomized (Hypothesis seeds its generator from the test function): every run draws
the same examples, so a CI failure reproduces on any machine, and CI turns red because a change
broke something, not because a new random draw happened to find an old bug. (The draws stay the
same for the same sources and Hypothesis version; Hypothesis also mixes in, now and then, numeric
constants it finds in local non-test modules, such as pygrad's.) To explore further locally, set
PYGRAD_FUZZ_EXAMPLES=N: N random, not derandomized, examples per test; a failure prints its shrunk
example (the Case, with its inputs).
"""
import math
import os
import warnings
from typing import Callable, NamedTuple

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygrad as tf
import reference as ref
from gradcheck import as_float64, assert_close, check_grad, evaluate, run_forward

FLOATS = ("float64", "float32")


# ---------------------------------------------------------------- settings

_EXPLORE = int(os.environ.get("PYGRAD_FUZZ_EXAMPLES", "0"))


def fuzz(max_examples):
    """The hypothesis settings of a test: max_examples are chosen so that the whole file runs in
    about half a minute on two cores. deadline=None: an example's time is mostly building and running
    a plan, which varies with the load of a shared CI machine. derandomize=True: see the module
    docstring. database=None: no example database in the checkout."""
    if _EXPLORE:
        return settings(max_examples=_EXPLORE, deadline=None, derandomize=False, database=None,
                        suppress_health_check=[HealthCheck.too_slow])
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- domains

def _signed(lo, hi):
    """+-[lo, hi]."""
    return st.one_of(st.floats(lo, hi), st.floats(-hi, -lo))


# Element strategies (float64; float32 inputs are these rounded, which keeps every margin). The names
# and bounds follow gradcheck.draw.
ELEMENTS = {
    "real": _signed(0.1, 2.0),  # no zeros: relu, abs, sign, x / y
    "nonzero": _signed(0.5, 2.0),  # divisors, reciprocal
    "positive": st.floats(0.5, 2.0),  # log, sqrt, rsqrt, pow's base
    "above_minus_half": st.floats(-0.5, 2.0),  # log1p
    "wide": st.floats(-6.0, 6.0),  # smooth everywhere: exp
    # sigmoid, tanh: short of saturation, where the value is ~1 and the derivative tiny, and finite
    # differences of the value would lose the derivative in rounding
    "unsaturated": st.floats(-3.0, 3.0),
    # 0.1 or more from integers and halves: floor, ceil, round (half to even)
    "offint": st.builds(lambda n, f, h: n + f + h, st.integers(-3, 2), st.floats(0.1, 0.4),
                        st.sampled_from([0.0, 0.5])),
    "grid": st.integers(-2, 2).map(float),  # small integers, so comparisons see ties
    # divisors that divide exactly: floor(x / y) of an "offint" x is not a question of rounding
    "pow2": st.sampled_from([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]),
    # Two interleaved families of bands, [0.5j + 0.05, 0.5j + 0.2] and [0.5j + 0.3, 0.5j + 0.45]: a value of
    # one and a value of the other are at least 0.1 apart, so maximum/minimum of the two never tie,
    # and either may be the larger.
    "band_a": st.builds(lambda j, f: 0.5 * j + f, st.integers(-4, 3), st.floats(0.05, 0.2)),
    "band_b": st.builds(lambda j, f: 0.5 * j + 0.25 + f, st.integers(-4, 3), st.floats(0.05, 0.2)),
    # reduce_prod is multilinear, so zeros are no kink (and its gradient must not divide by x). Magnitudes
    # of at most 1: a product of up to 256 factors stays finite in float32.
    "prod": st.one_of(st.just(0.0), _signed(0.5, 1.0)),
}


def _distinct(shape):
    """Distinct values in [-1, 1] (a shuffled grid plus a jitter of a third of its step), at least
    0.005 apart (far more than the finite-difference step): reduce_max/min never tie."""
    n = math.prod(shape)
    step = min(0.15, 2.0 / max(n, 1))
    jitter = hnp.arrays(np.float64, (n,), elements=st.floats(0.0, step / 3))
    return st.tuples(st.permutations(range(n)), jitter).map(
        lambda t: ((np.asarray(t[0], np.float64) - (n - 1) / 2) * step + t[1]).reshape(shape))


def values(domain, shape):
    """A strategy for float64 arrays of `shape` in `domain`."""
    if domain == "distinct":
        return _distinct(shape)
    return hnp.arrays(np.float64, shape, elements=ELEMENTS[domain])


# ---------------------------------------------------------------- references for the reductions

def reduce_ref(name):
    """reference.reduce, plus prod, with TF's values for a reduction over no elements (checked against
    tensorflow): sum 0, prod 1, mean nan, max -inf, min +inf. axis: a tuple, or None for all."""
    def fn(x, axis, keepdims):
        x = ref.f64(x)
        if name == "prod":
            return np.prod(x, axis=axis, keepdims=keepdims)
        if name in ("max", "min"):
            return getattr(np, name)(x, axis=axis, keepdims=keepdims, initial=-np.inf if name == "max" else np.inf)
        with warnings.catch_warnings(), np.errstate(invalid="ignore"):  # the mean of nothing is nan
            warnings.simplefilter("ignore", RuntimeWarning)
            return ref.reduce(name, x, axis, keepdims)
    return fn


# ---------------------------------------------------------------- the op table

UNARY, BINARY, REDUCE, MATMUL = "unary", "binary", "reduce", "matmul"


class Op(NamedTuple):
    name: str
    kind: str  # UNARY, BINARY, REDUCE or MATMUL: how the arguments are drawn
    fn: Callable  # pygrad
    ref: Callable  # NumPy (reference.py), same arguments
    domain: object  # a domain name, or one per input
    differentiable: bool  # True: checked by finite differences; False: tf.gradients gives None


OPS = [
    Op("negative", UNARY, tf.negative, ref.UNARY["negative"], "real", True),
    Op("abs", UNARY, tf.abs, ref.UNARY["abs"], "real", True),
    Op("square", UNARY, tf.square, ref.UNARY["square"], "real", True),
    Op("sign", UNARY, tf.sign, ref.UNARY["sign"], "real", True),  # its gradient is zeros (TF)
    Op("exp", UNARY, tf.exp, ref.UNARY["exp"], "wide", True),
    Op("log", UNARY, tf.log, ref.UNARY["log"], "positive", True),
    Op("log1p", UNARY, tf.log1p, ref.UNARY["log1p"], "above_minus_half", True),
    Op("sqrt", UNARY, tf.sqrt, ref.UNARY["sqrt"], "positive", True),
    Op("rsqrt", UNARY, tf.rsqrt, ref.UNARY["rsqrt"], "positive", True),
    Op("reciprocal", UNARY, tf.reciprocal, ref.UNARY["reciprocal"], "real", True),
    Op("floor", UNARY, tf.floor, ref.UNARY["floor"], "offint", False),
    Op("ceil", UNARY, tf.ceil, ref.UNARY["ceil"], "offint", False),
    Op("round", UNARY, tf.round, ref.UNARY["round"], "offint", False),
    Op("relu", UNARY, tf.nn.relu, ref.UNARY["relu"], "real", True),
    Op("sigmoid", UNARY, tf.sigmoid, ref.UNARY["sigmoid"], "unsaturated", True),
    Op("tanh", UNARY, tf.tanh, ref.UNARY["tanh"], "unsaturated", True),
    Op("add", BINARY, tf.add, ref.BINARY["add"], ("real", "real"), True),
    Op("subtract", BINARY, tf.subtract, ref.BINARY["subtract"], ("real", "real"), True),
    Op("multiply", BINARY, tf.multiply, ref.BINARY["multiply"], ("real", "real"), True),
    Op("truediv", BINARY, tf.truediv, ref.BINARY["truediv"], ("real", "nonzero"), True),
    Op("floordiv", BINARY, tf.floordiv, ref.BINARY["floordiv"], ("offint", "pow2"), False),
    Op("pow", BINARY, tf.pow, ref.BINARY["pow"], ("positive", "real"), True),
    Op("maximum", BINARY, tf.maximum, ref.BINARY["maximum"], ("band_a", "band_b"), True),
    Op("minimum", BINARY, tf.minimum, ref.BINARY["minimum"], ("band_b", "band_a"), True),
    Op("squared_difference", BINARY, tf.squared_difference, ref.BINARY["squared_difference"], ("real", "real"), True),
    Op("equal", BINARY, tf.equal, ref.BINARY["equal"], ("grid", "grid"), False),
    Op("not_equal", BINARY, tf.not_equal, ref.BINARY["not_equal"], ("grid", "grid"), False),
    Op("less", BINARY, tf.less, ref.BINARY["less"], ("grid", "grid"), False),
    Op("less_equal", BINARY, tf.less_equal, ref.BINARY["less_equal"], ("grid", "grid"), False),
    Op("greater", BINARY, tf.greater, ref.BINARY["greater"], ("grid", "grid"), False),
    Op("greater_equal", BINARY, tf.greater_equal, ref.BINARY["greater_equal"], ("grid", "grid"), False),
    Op("reduce_sum", REDUCE, tf.reduce_sum, reduce_ref("sum"), "real", True),
    Op("reduce_mean", REDUCE, tf.reduce_mean, reduce_ref("mean"), "real", True),
    Op("reduce_max", REDUCE, tf.reduce_max, reduce_ref("max"), "distinct", True),
    Op("reduce_min", REDUCE, tf.reduce_min, reduce_ref("min"), "distinct", True),
    Op("reduce_prod", REDUCE, tf.reduce_prod, reduce_ref("prod"), "prod", True),
    Op("matmul", MATMUL, tf.matmul, ref.matmul, ("real", "real"), True),
]
BY_NAME = {op.name: op for op in OPS}


# ---------------------------------------------------------------- drawing a case

MAX_DIMS, MAX_SIDE = 4, 4


def _empty_now(draw):
    """True for about one example in eight: then the shape gets a 0 (hypothesis' own min_side=0
    makes about half the tensors empty, which tests little)."""
    return draw(st.integers(0, 7)) == 7


@st.composite
def shapes(draw, empty=True):
    """Rank 0 to MAX_DIMS, sides 1 to MAX_SIDE, now and then one side 0."""
    shape = list(draw(hnp.array_shapes(min_dims=0, max_dims=MAX_DIMS, min_side=1, max_side=MAX_SIDE)))
    if empty and shape and _empty_now(draw):
        shape[draw(st.integers(0, len(shape) - 1))] = 0
    return tuple(shape)


@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast (NumPy's rules: right-aligned, equal or 1, missing leading dims),
    now and then to an empty result: a 0 in one input, against a 0 or a 1 in the other."""
    pair = [list(s) for s in draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=MAX_DIMS, min_side=1, max_side=MAX_SIDE)).input_shapes]
    ranked = [i for i in (0, 1) if pair[i]]
    if ranked and _empty_now(draw):
        i = draw(st.sampled_from(ranked))
        axis = draw(st.integers(1, len(pair[i])))  # counted from the right
        pair[i][-axis] = 0
        other = pair[1 - i]
        if len(other) >= axis and other[-axis] != 1:
            other[-axis] = 0
    return [tuple(s) for s in pair]


# Placeholder shapes as in gradcheck.GraphRunner: static, every dim None, or the rank unknown.
STATIC = st.sampled_from([True, False, None])


class Case(NamedTuple):
    label: str  # the op and its attributes, for messages
    fn: Callable  # the pygrad graph: fn(*placeholders)
    expected: Callable  # the reference of the same inputs (float64 copies)
    inputs: list
    static: object
    scale: Callable = None  # inputs -> the magnitude forward rounding is relative to (sums, dot products)

    def __repr__(self):  # what hypothesis prints for a failing example: enough to rebuild it
        specs = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.inputs)
        return (f"Case({self.label}, inputs=[{specs}], static={self.static})\n" +
                "\n".join(f"input{i} = np.{a!r}" for i, a in enumerate(self.inputs)))


@st.composite
def axes(draw, ndim):
    """reduction axes for rank ndim: None (all), or distinct axes, each maybe negative, as an int or a
    list (possibly empty)."""
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    chosen = draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim))
    chosen = [a - ndim if draw(st.booleans()) else a for a in chosen]
    if len(chosen) == 1 and draw(st.booleans()):
        return chosen[0]
    return chosen


@st.composite
def cases(draw, op, dtype):
    static = draw(STATIC)
    domains = op.domain if isinstance(op.domain, tuple) else (op.domain,)
    if op.kind == UNARY:
        in_shapes = [draw(shapes())]
        fn, expected, scale, label = op.fn, op.ref, None, op.name
    elif op.kind == BINARY:
        in_shapes = draw(broadcast_shapes())
        fn, expected, scale, label = op.fn, op.ref, None, op.name
    elif op.kind == REDUCE:
        in_shapes = [draw(shapes())]
        ndim = len(in_shapes[0])
        axis = draw(axes(ndim))
        keepdims = draw(st.booleans())
        norm = None if axis is None else tuple(a % ndim for a in np.atleast_1d(axis).tolist())
        count = math.prod(in_shapes[0][a] for a in (range(ndim) if norm is None else norm))
        fn = lambda x: op.fn(x, axis=axis, keepdims=keepdims)  # noqa: E731
        expected = lambda x: op.ref(x, norm, keepdims)  # noqa: E731
        scale = None
        if op.name in ("reduce_sum", "reduce_mean") and count:  # the mean of nothing is nan: compared as such
            scale = lambda x: op.ref(np.abs(x), norm, keepdims)  # noqa: E731
        label = f"{op.name}(axis={axis!r}, keepdims={keepdims})"
    else:
        mkn = [draw(st.integers(1, 5)) for _ in range(3)]
        if _empty_now(draw):  # m or n 0: an empty product; k 0: zeros
            mkn[draw(st.integers(0, 2))] = 0
        m, k, n = mkn
        ta, tb = draw(st.booleans()), draw(st.booleans())
        in_shapes = [(k, m) if ta else (m, k), (n, k) if tb else (k, n)]
        fn = lambda a, b: op.fn(a, b, transpose_a=ta, transpose_b=tb)  # noqa: E731
        expected = lambda a, b: op.ref(a, b, ta, tb)  # noqa: E731
        scale = lambda a, b: op.ref(np.abs(a), np.abs(b), ta, tb)  # noqa: E731
        label = f"matmul(transpose_a={ta}, transpose_b={tb})"
    domains = domains * len(in_shapes) if len(domains) == 1 else domains
    inputs = [draw(values(d, s)).astype(dtype) for d, s in zip(domains, in_shapes)]
    return Case(label, fn, expected, inputs, static, scale)


# ---------------------------------------------------------------- the properties

def _params(ops, dtypes):
    return [pytest.param(op, dt, id=f"{op.name}-{dt}") for op in ops for dt in dtypes]


def _fuzz_case(op, dtype, data):
    tf.reset_default_graph()  # every example builds its own small graph
    return data.draw(cases(op, dtype), label="case")


@pytest.mark.parametrize("op,dtype", _params(OPS, FLOATS))
@fuzz(max_examples=120)
@given(data=st.data())
def test_forward(op, dtype, data):
    case = _fuzz_case(op, dtype, data)
    got = run_forward(case.fn, case.inputs, static=case.static)
    inputs64 = as_float64(case.inputs)
    expected = np.asarray(case.expected(*inputs64))
    out_dtype = "bool" if expected.dtype == np.bool_ else dtype
    scale = None if case.scale is None else case.scale(*inputs64)
    assert_close(got, expected, dtype=out_dtype, scale=scale, what=case.label)


@pytest.mark.parametrize("op,dtype", _params([op for op in OPS if op.differentiable], ("float64",)))
@fuzz(max_examples=100)
@given(data=st.data())
def test_gradient(op, dtype, data):
    """tf.gradients against central differences of pygrad's own forward (gradcheck.check_grad): each
    gradient has its input's shape (broadcasting summed back), dtype and values. Every element is
    checked (the elementwise check, also above gradcheck's ELEMENTWISE_LIMIT: inputs here have at most
    256 elements each): the projection check would be faster, but with one random direction, an
    output that depends on one input element (reduce_max over all axes) can make <w, J v> too small
    for its tolerance, set for sums of many terms, to cover the rounding of x + eps * v."""
    case = _fuzz_case(op, dtype, data)
    check_grad(case.fn, case.inputs, static=case.static, projection=False)


@pytest.mark.parametrize("op,dtype", _params([BY_NAME[n] for n in ("floor", "ceil", "round", "floordiv")],
                                             ("float64",)))
@fuzz(max_examples=10)
@given(data=st.data())
def test_not_differentiable(op, dtype, data):
    """floor, ceil, round and floordiv have no gradient: tf.gradients gives None (TF). (The comparisons
    are not differentiable either; their outputs are bool, so they are not ys of tf.gradients.)"""
    case = _fuzz_case(op, dtype, data)
    _, grads = evaluate(case.fn, case.inputs)
    assert grads == [None] * len(case.inputs)


@fuzz(max_examples=100)
@given(data=st.data())
def test_reduce_max_min_ties_split_the_gradient(data):
    """With ties (values on a small integer grid), reduce_max/min's gradient is TF's: the cotangent split
    evenly among the tied extremes (reference.reduce_max_grad)."""
    tf.reset_default_graph()
    name = data.draw(st.sampled_from(["reduce_max", "reduce_min"]))
    shape = data.draw(shapes(empty=False))
    axis = data.draw(axes(len(shape)))
    keepdims = data.draw(st.booleans())
    x = data.draw(values("grid", shape))
    norm = None if axis is None else tuple(a % len(shape) for a in np.atleast_1d(axis).tolist())
    y_shape = np.asarray(BY_NAME[name].ref(x, norm, keepdims)).shape
    dy = data.draw(hnp.arrays(np.float64, y_shape, elements=st.floats(-2.0, 2.0)))
    _, (g,) = evaluate(lambda t: BY_NAME[name].fn(t, axis=axis, keepdims=keepdims), [x], grad_ys=dy)
    assert_close(g, ref.reduce_max_grad(x, norm, keepdims, dy=dy, use_min=name == "reduce_min"),
                 what=f"{name}(axis={axis!r}, keepdims={keepdims}) gradient")


# ---------------------------------------------------------------- found by fuzzing


def test_pow_gradient_wrt_exponent_at_minus_infinity():
    """Found by running the binary ops on special values (+-0, +-inf, nan) against TensorFlow. TF's
    _PowGrad: dz/dy = z * where(x > 0, log(x), 0), so for x = -inf and z = pow(x, y) finite
    (y = 0: z = 1; y = -1: z = -0) the gradient is 0, as it is for every other x <= 0."""
    x, y = np.array([-np.inf, -np.inf]), np.array([0.0, -1.0])
    out, (_, gy) = evaluate(tf.pow, [x, y])
    assert_close(out, [1.0, -0.0])
    assert_close(gy, [0.0, 0.0])
