"""The vectorized float32 exp, sigmoid and tanh (csrc/kernels/vmath.cc, run by the unary kernel on
float32 arrays), over several million inputs across the whole range, the edges included: exp must be
the correctly rounded float of the float64 value but in rare cases (then one ulp off), sigmoid
within 2 ulp of it (2 ulp in at most one result in 1,000) and tanh within 1 ulp; NaN stays NaN;
array lengths that are not multiples of the vector width; and a graph's values against TensorFlow
where installed."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import _C

EDGES = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30, 1e-5, -1e-5, 9.99e-5, 1e-4, -1e-4,
                  0.5, -0.5, 9.0, -9.0, 20.0, -20.0, 88.72, 88.73, 89.0, 90.0, 200.0, -87.3, -100.0, -103.97,
                  -104.0, -110.0, -200.0, np.finfo(np.float32).max, -np.finfo(np.float32).max,
                  np.finfo(np.float32).tiny], np.float64)

REFERENCE = {"exp": np.exp, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}
# op: (the most ulps from the correctly rounded float, the share of results that many off at most)
ULPS = {"exp": (1, 1e-6), "sigmoid": (2, 1e-3), "tanh": (1, 0.2)}


def unary(op, x):
    y = np.empty_like(x)
    _C.call("unary_fwd", [x], [y], {"op": op})
    return y


def inputs():
    rng = np.random.default_rng(0)
    wide = rng.uniform(-120, 100, 1_000_000)
    scales = [rng.standard_normal(500_000) * s for s in (1e-4, 0.1, 1, 8)]
    near_polynomial_edge = np.linspace(-0.7, 0.7, 1_000_001)  # tanh's two formulas meet at 0.625
    return np.concatenate([EDGES, wide, *scales, near_polynomial_edge]).astype(np.float32)


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_ulps_from_the_correctly_rounded_value(op):
    x = inputs()
    with np.errstate(over="ignore"):
        want = REFERENCE[op](x.astype(np.float64)).astype(np.float32)
    got = unary(op, x)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    ulps = np.abs(got[~nan].view(np.int32).astype(np.int64) - want[~nan].view(np.int32).astype(np.int64))
    most, share = ULPS[op]
    assert ulps.max() <= most, (op, x[~nan][ulps.argmax()], ulps.max())
    assert (ulps == most).mean() <= share, (op, (ulps == most).mean())
    if op == "tanh":  # tanh(-0) = -0
        np.testing.assert_array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))


@pytest.mark.parametrize("op", sorted(REFERENCE))
@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 17, 1000, 8193])
def test_lengths_and_aliasing(op, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 3
    want = unary(op, x.astype(np.float64)).astype(np.float32)
    got = unary(op, x)
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=1e-30)
    _C.call("unary_fwd", [x], [x], {"op": op})  # in place
    np.testing.assert_array_equal(x, got)


def test_graph_against_tensorflow():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_eager_execution()
    x = np.random.default_rng(3).standard_normal((64, 33)).astype(np.float32) * 4
    results = []
    for lib in (tf, tf1):
        g = lib.Graph()
        with g.as_default():
            xt = lib.constant(x)
            outs = [lib.exp(xt), lib.sigmoid(xt), lib.tanh(xt)]
            with lib.Session() as sess:
                results.append(sess.run(outs))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
