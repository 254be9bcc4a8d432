"""tf.is_nan / is_inf / is_finite (csrc/kernels/classify.cc, vectorized comparisons) and the bool
reductions reduce_all / reduce_any (byte accumulators) on long arrays: every special value, both
float dtypes, lengths around the vector widths, and one odd element anywhere in a long run,
against NumPy."""
import numpy as np
import pytest

import pygrad as tf

SPECIAL = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-310, 3.4e38, -3.4e38,
           1.7e308, 5e-324]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 64, 100_003])
def test_float_classes_match_numpy(dtype, n, threads):
    rng = np.random.default_rng(n)
    with np.errstate(over="ignore", under="ignore"):
        special = np.array(SPECIAL, dtype)
    x = np.concatenate([special, rng.standard_normal(n).astype(dtype)])
    x = rng.permutation(x)
    if dtype == np.float32:  # NaNs with other payloads
        bits = x.view(np.uint32)
        bits[rng.integers(0, len(x), 5)] = rng.integers(0x7F800001, 0x7FFFFFFF, 5, dtype=np.uint32)
    xt = tf.placeholder(tf.as_dtype(dtype), [len(x)])
    with tf.Session() as sess:
        nan, inf, finite = sess.run([tf.is_nan(xt), tf.is_inf(xt), tf.is_finite(xt)], {xt: x})
    np.testing.assert_array_equal(nan, np.isnan(x))
    np.testing.assert_array_equal(inf, np.isinf(x))
    np.testing.assert_array_equal(finite, np.isfinite(x))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 3_211_264])
def test_bool_reductions_find_one_odd_element(n, threads):
    x = tf.placeholder(tf.bool, [n])
    fetches = [tf.reduce_all(x), tf.reduce_any(x)]
    rng = np.random.default_rng(n)
    with tf.Session() as sess:
        values = [np.ones(n, bool), np.zeros(n, bool)]
        for where in {0, n // 2, n - 1, int(rng.integers(0, n))}:
            ones, zeros = np.ones(n, bool), np.zeros(n, bool)
            ones[where], zeros[where] = False, True
            values += [ones, zeros]
        for value in values:
            assert sess.run(fetches, {x: value}) == [value.all(), value.any()]
    rows = tf.placeholder(tf.bool, [3, n])
    value = rng.random((3, n)) < 0.999
    with tf.Session() as sess:
        got = sess.run([tf.reduce_all(rows, axis=1), tf.reduce_any(rows, axis=0)], {rows: value})
    np.testing.assert_array_equal(got[0], value.all(axis=1))
    np.testing.assert_array_equal(got[1], value.any(axis=0))
