"""Helpers for the op tests: build a graph from a function of placeholders, run it, and check
values against NumPy and gradients against finite differences (STYLE.md section 6). No tests here.

Gradients are checked on the scalar L(x) = sum_j <w_j, f_j(x)>, with a fixed random cotangent w_j
for each output f_j (passed to tf.gradients as grad_ys). A random w sees every output element, so
an op whose outputs always sum to a constant (softmax) is still checked. Two ways to compare:

* elementwise, for inputs of up to ELEMENTWISE_LIMIT elements in all: a central difference in
  float64 for each input element, against the matching element of tf.gradients;
* projection, for larger inputs: one random direction v per input, and <w, J v> from two forward
  runs (x + eps v and x - eps v) against <J^T w, v> from tf.gradients (JAX/autograd check_vjp).

Higher derivatives use the same machinery: for order k, the function checked is the gradient of
order k - 1 (with its own random cotangents), so its gradient is compared to finite differences
of pygrad's own analytic gradient.

Tolerances live in one table, TOLERANCES, one row per dtype. A test may tighten a tolerance
(tolerance(..., rtol=...)) but asking for a looser one raises.
"""
import dataclasses

import numpy as np

import pygrad as tf


@dataclasses.dataclass(frozen=True)
class Tol:
    rtol: float
    atol: float


# Why these numbers:
# forward  float64: pygrad and the reference both compute in double; libm and NumPy's SIMD exp/log
#          differ by an ulp or two, and sums are accumulated in another order: 1e-12 leaves room
#          for that and for nothing else.
# forward  float32: pygrad computes in float32 from float32 inputs; the reference is the float64
#          result on the same (float32) values. A float32 ulp is 6e-8, so 1e-5 allows ~170 ulps of
#          accumulated rounding (matmul over k terms, softmax sums), atol 1e-6 for values near 0.
# fd       float64, central differences with eps = 1e-6: truncation error eps^2 |f'''| / 6 ~ 1e-12
#          and rounding error ~ 1e-16 |f| / eps ~ 1e-10 for O(1) values; rtol 1e-6 and atol 1e-8
#          are well above both, and far below any real gradient error.
# projection: on the scalar <w, J v>, rtol is relative to sum |J^T w * v| (the magnitude of the
#          terms), not to the possibly cancelling sum itself. Rounding errors of the n output
#          differences add up like a random walk (~sqrt(n) 1e-10) while that scale grows like n, so
#          the bound is tighter than elementwise: observed errors are 2e-12..3e-11 of the scale.
#          A looser bound would miss a gradient that is off by 1e-5 relative (tested by mutation).
# grad     float32: analytic float32 gradients against float64 analytic gradients of the same graph
#          (the float32 build of every gradient rule is checked, not only the float64 one). A
#          gradient chains a few float32 ops, each adding an ulp or so: 3e-5 is ~500 ulps.
# Margins: every case in test_{math,array,nn}_ops passes with the float32 rows and the fd row
# divided by ten (observed fd errors reach ~5e-10 absolute, 2e-8 relative); the float64 forward
# row has no room to spare by design.
TOLERANCES = {
    "float64": {"forward": Tol(1e-12, 1e-12), "fd": Tol(1e-6, 1e-8), "projection": Tol(1e-8, 1e-10)},
    "float32": {"forward": Tol(1e-5, 1e-6), "grad": Tol(3e-5, 3e-6)},
}
FD_EPS = 1e-6
ELEMENTWISE_LIMIT = 200  # input elements; above this the projection check is used


def tolerance(dtype, kind, rtol=None, atol=None):
    """The table's tolerance for (dtype, kind); rtol/atol may only tighten it."""
    base = TOLERANCES[np.dtype(dtype).name][kind]
    rtol = base.rtol if rtol is None else rtol
    atol = base.atol if atol is None else atol
    if rtol > base.rtol or atol > base.atol:
        raise ValueError(f"tolerance for {np.dtype(dtype).name}/{kind} may be tightened, not loosened: "
                         f"asked rtol={rtol}, atol={atol}, table has {base}")
    return Tol(rtol, atol)


def _as_list(out):
    return (list(out), False) if isinstance(out, (list, tuple)) else ([out], True)


def assert_close(actual, expected, dtype=None, kind="forward", rtol=None, atol=None, what="value", scale=None):
    """actual has dtype `dtype` (default: expected's), expected's shape, and matches expected:
    exactly for ints and bools, within the table's tolerance (of `dtype`) for floats.

    scale: for sums of products (matmul), the magnitude the rounding error is relative to, e.g.
    |a| @ |b|: then |actual - expected| <= atol + rtol * scale instead of rtol * |expected|, the
    standard error bound of a dot product (an entry that cancels to ~0 still carries the rounding
    of its large terms)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    dtype = np.dtype(dtype if dtype is not None else expected.dtype)
    assert actual.dtype == dtype, f"{what}: dtype {actual.dtype}, expected {dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    if dtype.kind in "iub":
        np.testing.assert_array_equal(actual, expected.astype(dtype), err_msg=what)
    elif scale is None:
        tol = tolerance(dtype, kind, rtol, atol)
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol.rtol,
                                   atol=tol.atol, err_msg=what)
    else:
        tol = tolerance(dtype, kind, rtol, atol)
        err = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        bound = tol.atol + tol.rtol * np.asarray(scale, dtype=np.float64)
        bad = ~(err <= bound)
        assert not bad.any(), (f"{what}: {int(bad.sum())} of {err.size} elements differ by more than "
                               f"{tol.atol} + {tol.rtol} * scale; worst error/bound {float(np.max(err / bound)):.3g}")


class GraphRunner:
    """fn(*placeholders) built once in the default graph, and one Session to run it.

    inputs: NumPy arrays; each becomes a placeholder of its dtype and shape. static=False makes
    every dimension None and static=None the rank unknown too (tf.placeholder(dtype)), so shapes
    are only known at run time. Use as a context manager.
    """

    def __init__(self, fn, inputs, static=True):
        self.inputs = [np.array(a, order="C") for a in inputs]  # a copy; keeps 0-d arrays 0-d
        self.placeholders = [tf.placeholder(tf.as_dtype(a.dtype), _placeholder_shape(a, static), name=f"input{i}")
                             for i, a in enumerate(self.inputs)]
        out = fn(*self.placeholders)
        self.outputs, self.single = _as_list(out)
        self.sess = tf.Session()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sess.close()

    def feed(self, values=None):
        values = self.inputs if values is None else values
        return dict(zip(self.placeholders, values))

    def run(self, fetches, values=None):
        """Values of fetches (a list of tensors); checks each against its tensor's dtype and static shape."""
        outs = self.sess.run(list(fetches), feed_dict=self.feed(values))
        outs = [np.asarray(o) for o in outs]
        for t, o in zip(fetches, outs):
            assert o.dtype == t.dtype.np, f"{t.name}: ran to dtype {o.dtype}, the tensor says {t.dtype.name}"
            assert t.shape.is_compatible_with(o.shape), f"{t.name}: ran to shape {o.shape}, static {t.shape}"
        return outs

    def forward(self):
        outs = self.run(self.outputs)
        return outs[0] if self.single else outs


def _placeholder_shape(a, static):
    if static is None:
        return None
    return list(a.shape) if static else [None] * a.ndim


def run_forward(fn, inputs, static=True):
    """The value(s) of fn(*placeholders) fed with inputs."""
    with GraphRunner(fn, inputs, static) as r:
        return r.forward()


def evaluate(fn, inputs, wrt=None, grad_ys=None):
    """(outputs, gradients): fn's value(s), and tf.gradients(outputs, inputs[wrt], grad_ys) with
    None kept as None. wrt: indices of inputs (default: all float inputs)."""
    with GraphRunner(fn, inputs) as r:
        wrt = _float_indices(r.inputs) if wrt is None else list(wrt)
        if grad_ys is not None:
            grad_ys = [tf.constant(np.asarray(g, dtype=t.dtype.np)) for g, t in zip(_as_list(grad_ys)[0], r.outputs)]
        grads = tf.gradients(r.outputs, [r.placeholders[i] for i in wrt], grad_ys=grad_ys)
        connected = [g for g in grads if g is not None]
        values = r.run(r.outputs + connected)
        outs, gvals = values[:len(r.outputs)], iter(values[len(r.outputs):])
        gvals = [None if g is None else next(gvals) for g in grads]
        return (outs[0] if r.single else outs), gvals


def _float_indices(inputs):
    return [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]


def check_grad(fn, inputs, wrt=None, order=1, seed=0, static=True, none_is_zero=False, eps=FD_EPS,
               rtol=None, atol=None, projection=None):
    """Checks the order-th derivative of fn at inputs (float64) against central differences.

    wrt: indices of the inputs to differentiate (default: all float inputs). The others (integer
    labels, say) are fed unchanged. A None gradient fails the check unless none_is_zero.
    static: placeholder shapes as in GraphRunner (True: exact, False: dims None, None: rank unknown).
    projection: force (True) or forbid (False) the projection check; default by input size.
    Returns the analytic gradients of the last order (for extra assertions by the caller).
    """
    rng = np.random.default_rng(seed)
    with GraphRunner(fn, inputs, static) as r:
        wrt = _float_indices(r.inputs) if wrt is None else list(wrt)
        for i in wrt:
            assert r.inputs[i].dtype == np.float64, "finite differences are taken in float64"
        xs = [r.placeholders[i] for i in wrt]
        f = [t for t in r.outputs if t.dtype.is_floating]
        assert f, "fn has no floating-point output to differentiate"
        for level in range(1, order + 1):
            values = r.run(f)
            w = [rng.standard_normal(v.shape) for v in values]
            grads = tf.gradients(f, xs, grad_ys=[tf.constant(wi) for wi in w])
            if level < order:
                f = [g for g in grads if g is not None]
                assert f, f"no gradient of order {level} is connected"
        connected = [g for g in grads if g is not None]
        gvals = iter(r.run(connected)) if connected else iter(())
        analytic = []
        for i, g in zip(wrt, grads):
            x = r.inputs[i]
            if g is None:
                assert none_is_zero, f"tf.gradients gave None for input {i} (order {order})"
                analytic.append(np.zeros_like(x))
                continue
            if static is not None:
                assert g.shape.is_compatible_with(x.shape), f"gradient {g.shape} for input {i} of shape {x.shape}"
            gv = next(gvals)
            assert gv.shape == x.shape, f"gradient of input {i} has shape {gv.shape}, the input {x.shape}"
            assert gv.dtype == x.dtype, f"gradient of input {i} has dtype {gv.dtype}, the input {x.dtype}"
            analytic.append(gv)

        def delta(values_plus, values_minus):
            """<w, f(plus) - f(minus)>, differencing each output before weighting it."""
            fp, fm = r.run(f, values_plus), r.run(f, values_minus)
            return sum(float(np.sum(wj * (a - b))) for wj, a, b in zip(w, fp, fm))

        n = sum(r.inputs[i].size for i in wrt)
        use_projection = n > ELEMENTWISE_LIMIT if projection is None else projection
        if use_projection:
            _projection_check(r, wrt, analytic, delta, rng, eps, tolerance(np.float64, "projection", rtol, atol))
        else:
            _elementwise_check(r, wrt, analytic, delta, eps, tolerance(np.float64, "fd", rtol, atol))
        return analytic


def _elementwise_check(r, wrt, analytic, delta, eps, tol):
    for i, g in zip(wrt, analytic):
        x = r.inputs[i]
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = list(r.inputs), list(r.inputs)
            plus[i], minus[i] = x.copy(), x.copy()
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = delta(plus, minus) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=tol.rtol, atol=tol.atol,
                                   err_msg=f"gradient of input {i}: analytic (actual) vs finite differences")


def _projection_check(r, wrt, analytic, delta, rng, eps, tol, directions=2):
    for _ in range(directions):
        v = [rng.standard_normal(r.inputs[i].shape) for i in wrt]
        plus, minus = list(r.inputs), list(r.inputs)
        for i, vi in zip(wrt, v):
            plus[i] = r.inputs[i] + eps * vi
            minus[i] = r.inputs[i] - eps * vi
        jvp = delta(plus, minus) / (2 * eps)
        vjp = sum(float(np.sum(g * vi)) for g, vi in zip(analytic, v))
        scale = sum(float(np.sum(np.abs(g * vi))) for g, vi in zip(analytic, v))
        assert abs(jvp - vjp) <= tol.atol + tol.rtol * scale, (
            f"projection check: <w, J v> = {jvp!r} by finite differences, <J^T w, v> = {vjp!r} from "
            f"tf.gradients (difference {abs(jvp - vjp):.3g}, allowed {tol.atol + tol.rtol * scale:.3g})")


def check_grad_float32(fn, inputs, wrt=None, seed=0):
    """The float32 gradient of fn agrees with its float64 gradient (same graph, same cotangent) to
    the float32 tolerance. inputs are float64; they are rounded to float32 first, and the float64
    run uses the rounded values, so both runs differentiate at the same point. Builds its own two
    graphs (it resets the default graph)."""
    rng = np.random.default_rng(seed)
    inputs32 = [a.astype(np.float32) if a.dtype == np.float64 else a for a in inputs]
    inputs64 = [a.astype(np.float64) if a.dtype == np.float32 else a for a in inputs32]
    results = {}
    w = None
    for name, ins in (("float64", inputs64), ("float32", inputs32)):
        tf.reset_default_graph()
        with GraphRunner(fn, ins) as r:
            idx = _float_indices(r.inputs) if wrt is None else list(wrt)
            f = [t for t in r.outputs if t.dtype.is_floating]
            if w is None:
                w = [rng.standard_normal(v.shape) for v in r.run(f)]
            grads = tf.gradients(f, [r.placeholders[i] for i in idx],
                                 grad_ys=[tf.constant(wi.astype(t.dtype.np)) for wi, t in zip(w, f)])
            assert all(g is not None for g in grads), f"a {name} gradient is None"
            results[name] = r.run(grads)
    for k, (g32, g64) in enumerate(zip(results["float32"], results["float64"])):
        assert_close(g32, g64, dtype=np.float32, kind="grad", what=f"float32 gradient of input {k}")


# ---------------------------------------------------------------- test inputs

_INT_DOMAINS = {"real": "int", "wide": "int", "nonzero": "nonzero_int", "positive": "positive_int", "grid": "grid",
                "offint": "int"}


def draw(domain, shape, dtype, rng):
    """Random inputs of a named domain, kept away from kinks and domain edges by at least 0.1
    (far more than FD_EPS): "real" is +-[0.1, 2] (no zeros: relu, abs, sign, x/y), "positive" is
    [0.5, 2] (log, sqrt, pow's base), "offint" keeps a distance of 0.1 from integers and halves
    (floor, ceil, round). Integer dtypes map float domains to integer ones."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        domain = _INT_DOMAINS.get(domain, domain)
    sign = rng.choice([-1.0, 1.0], size=shape)
    if domain == "real":
        x = rng.uniform(0.1, 2.0, size=shape) * sign
    elif domain == "positive":
        x = rng.uniform(0.5, 2.0, size=shape)
    elif domain == "nonzero":
        x = rng.uniform(0.5, 2.0, size=shape) * sign
    elif domain == "wide":
        x = rng.uniform(-6.0, 6.0, size=shape)
    elif domain == "above_minus_half":
        x = rng.uniform(-0.5, 2.0, size=shape)
    elif domain == "offint":
        frac = rng.uniform(0.1, 0.4, size=shape) + rng.choice([0.0, 0.5], size=shape)
        x = rng.integers(-3, 3, size=shape) + frac
    elif domain == "grid":  # small integers (as floats for float dtypes), so ties occur
        x = rng.integers(-2, 3, size=shape)
    elif domain == "int":
        x = rng.integers(-9, 10, size=shape)
    elif domain == "nonzero_int":
        x = rng.integers(1, 6, size=shape) * sign
    elif domain == "positive_int":
        x = rng.integers(1, 6, size=shape)
    elif domain == "exponent":
        x = rng.integers(0, 5, size=shape)
    elif domain == "bool":
        x = rng.random(size=shape) < 0.5
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return np.asarray(x).astype(dtype)


def shape_id(shape):
    """(3,4), (5,) and () for test ids."""
    shape = tuple(shape)
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def as_float64(arrays):
    """float arrays promoted to float64 (for the references), others unchanged."""
    return [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
