"""tf.test: TF1's TestCase (a unittest.TestCase with TensorFlow's assertions and sessions),
main, compute_gradient / compute_gradient_error, and the device queries (no GPU here), so that
test files written for TF1 run under pytest and `tf.test.main()`."""
import contextlib
import re
import tempfile
import unittest

import numpy as np

from pygrad import errors
from pygrad.gradients import gradients as _gradients
from pygrad.graph import (Tensor as _Tensor, TensorLike as _TensorLike, get_default_graph as _get_default_graph,
                          get_default_session as _get_default_session, reset_default_graph as _reset_default_graph,
                          unwrap as _unwrap)
from pygrad.ops.array_ops import placeholder as _placeholder
from pygrad.session import Session as _Session


def main(argv=None):
    """Runs the test cases of the calling module (unittest.main, as TF's googletest main does)."""
    return unittest.main(argv=argv)


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    return False


def gpu_device_name():
    return ""


def is_built_with_cuda():
    return False


def _structure(value):
    """A test value as nested lists/dicts of numpy arrays (TF's assertAllClose walks both)."""
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and any(isinstance(v, (dict, list, tuple, np.ndarray, _TensorLike))
                                                for v in value):
        return [_structure(v) for v in value]
    return value


class TestCase(unittest.TestCase):
    """TF1's tf.test.TestCase: each test starts in a new default graph with NumPy seeded as TF
    seeds it; sessions (test_session, cached_session, session) over that graph; the array
    assertions."""

    def setUp(self):
        super().setUp()
        _reset_default_graph()
        np.random.seed(87654321)  # TF's random_seed.DEFAULT_GRAPH_SEED
        self._cached = None

    def tearDown(self):
        if self._cached is not None:
            self._cached.close()
            self._cached = None
        super().tearDown()

    def get_temp_dir(self):
        if not hasattr(self, "_temp_dir"):
            self._temp_dir = tempfile.mkdtemp(prefix=self.id().replace("/", "_") + "_")
        return self._temp_dir

    # ---- sessions ----
    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new session over graph (the default graph if None), made its default."""
        graph = graph or _get_default_graph()
        with graph.as_default(), _Session(graph=graph, config=config) as sess:
            yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """The test's one session over graph, kept for the rest of the test."""
        graph = graph or _get_default_graph()
        if self._cached is None or self._cached.graph is not graph:
            if self._cached is not None:
                self._cached.close()
            self._cached = _Session(graph=graph, config=config)
        with graph.as_default(), self._cached.as_default():
            yield self._cached

    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """cached_session's old name. unittest takes a method named test_* for a test: as TF's,
        this one skips itself when run as one."""
        if self.id().endswith(".test_session"):
            self.skipTest("test_session is TestCase's session method (TF reserves the name), not a test")
        return self.cached_session(graph, config)

    def evaluate(self, tensors):
        """The values of tensors (any structure of them) in the cached session."""
        with self.cached_session() as sess:
            return sess.run(tensors)

    def _value(self, a):
        if isinstance(a, _TensorLike) or isinstance(_unwrap(a), _Tensor):
            return self.evaluate(a)
        return a

    # ---- assertions ----
    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802  (TF's names)
        a, b = _structure(self._value(a)), _structure(self._value(b))
        if isinstance(a, dict) or isinstance(b, dict):
            self.assertIsInstance(a, dict, msg)
            self.assertIsInstance(b, dict, msg)
            self.assertEqual(sorted(a), sorted(b), msg)
            for k in a:
                self.assertAllClose(a[k], b[k], rtol, atol, f"{msg or ''} key {k!r}")
            return
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and (len(a) != len(b) or any(
                isinstance(x, (list, tuple, dict, np.ndarray)) for x in list(a) + list(b))):
            self.assertEqual(len(a), len(b), msg)
            for x, y in zip(a, b):
                self.assertAllClose(x, y, rtol, atol, msg)
            return
        a, b = np.asarray(a), np.asarray(b)
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg or ''}")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg or "", equal_nan=True)

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6,  # noqa: N802
                                      float_atol=1e-6, half_rtol=1e-3, half_atol=1e-3, bfloat16_rtol=1e-2,
                                      bfloat16_atol=1e-2, msg=None):
        a, b = np.asarray(self._value(a)), np.asarray(self._value(b))
        if np.float32 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.float16 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol, atol, msg)

    def assertNotAllClose(self, a, b, **kwargs):  # noqa: N802
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        a, b = np.asarray(self._value(a)), np.asarray(self._value(b))
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg or ''}")
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err, f"{f1} != {f2} +/- {err}{' (' + msg + ')' if msg else ''}")

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        self.assertEqual(len(farray1), len(farray2), msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg)

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        self.assertEqual(list(np.shape(np_array)), _unwrap(tf_tensor).shape.as_list(), msg)

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802
        self.assertEqual(np.asarray(target).dtype, np.dtype(getattr(expected_dtype, "np", expected_dtype)))

    def _compare(self, a, check, what):
        a = np.asarray(self._value(a))
        if not np.all(check(a)):
            raise AssertionError(f"The values {a} are not all {what}")

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self._compare(a, lambda v: v > comparison_target, f"greater than {comparison_target}")

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802
        self._compare(a, lambda v: v >= comparison_target, f">= {comparison_target}")

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self._compare(a, lambda v: v < comparison_target, f"less than {comparison_target}")

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802
        self._compare(a, lambda v: v <= comparison_target, f"<= {comparison_target}")

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,  # noqa: N802
                         open_upper_bound=False):
        low = (lambda v: v > lower_bound) if open_lower_bound else (lambda v: v >= lower_bound)
        high = (lambda v: v < upper_bound) if open_upper_bound else (lambda v: v <= upper_bound)
        self._compare(target, lambda v: low(v) & high(v), f"in the range [{lower_bound}, {upper_bound}]")

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):  # noqa: N802
        """The block raises exception_type whose message matches the regex (or the predicate holds)."""
        predicate = expected_err_re_or_predicate if callable(expected_err_re_or_predicate) else (
            lambda e: re.search(expected_err_re_or_predicate, str(e)) is not None)
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError(f"Exception of type {type(e).__name__}: {e} does not match "
                                     f"{expected_err_re_or_predicate}") from e
            return
        raise AssertionError(f"{exception_type.__name__} not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None):
    """(theoretical, numerical) Jacobians of y with respect to x ([x size, y size] each, as TF's
    gradient_checker): the first row by row through tf.gradients, the second by central
    differences of step delta, in the default session."""
    x_value = np.asarray(x_init_value if x_init_value is not None else
                         np.random.random_sample(x_shape).astype(_unwrap(x).dtype.np))
    seed = _placeholder(_unwrap(y).dtype, y_shape, name="compute_gradient_dy")
    grad = _gradients(y, x, grad_ys=seed)[0]
    sess = _get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session (inside `with tf.Session():` or a test session)")
    feed = dict(extra_feed_dict or {})
    if init_targets is not None:
        sess.run(init_targets)
    n_x, n_y = int(np.prod(x_shape)), int(np.prod(y_shape))
    theoretical, numerical = np.zeros((n_x, n_y)), np.zeros((n_x, n_y))
    for j in range(n_y):
        unit = np.zeros(n_y, seed.dtype.np)
        unit[j] = 1
        g = sess.run(grad, {**feed, x: x_value, seed: unit.reshape(y_shape)})
        theoretical[:, j] = np.asarray(g).reshape(-1)
    flat = x_value.reshape(-1).astype(x_value.dtype, copy=True)
    for i in range(n_x):
        saved = flat[i]
        flat[i] = saved + delta
        up = sess.run(y, {**feed, x: flat.reshape(x_shape)})
        flat[i] = saved - delta
        down = sess.run(y, {**feed, x: flat.reshape(x_shape)})
        flat[i] = saved
        numerical[i] = (np.asarray(up, np.float64) - np.asarray(down, np.float64)).reshape(-1) / (2 * delta)
    return theoretical, numerical


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None,
                           extra_feed_dict=None):
    """The largest difference between the theoretical and numerical Jacobians."""
    theoretical, numerical = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                                              extra_feed_dict)
    return float(np.max(np.abs(theoretical - numerical))) if theoretical.size else 0.0


__all__ = ["TestCase", "compute_gradient", "compute_gradient_error", "gpu_device_name", "is_built_with_cuda",
           "is_gpu_available", "main"]
