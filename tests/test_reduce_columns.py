"""Reductions that keep the innermost dimension (csrc/kernels/reduce.cc, the `cols` walk): a bias
gradient sums [N, H, W, C] to [C]. With few output columns over many rows, the rows are cut into
chunks whose size the shape alone sets and summed in parallel; the results are the same bits for
any thread count, and agree with NumPy (sums in float64 before rounding, as pygrad accumulates)."""
import numpy as np
import pytest

import pygrad as tf

# (shape, axes): chunked (few columns, many rows), chunked with kept rows outside, and one too short to split
CASES = [((50, 28, 28, 32), (0, 1, 2)), ((3, 20001, 7), (1,)), ((2, 4099, 3, 5), (0, 1)), ((40, 300), (0,))]
OPS = {"sum": (tf.reduce_sum, np.sum), "mean": (tf.reduce_mean, np.mean), "max": (tf.reduce_max, np.max),
       "min": (tf.reduce_min, np.min)}


def _run(fn, value, axes, threads):
    old = tf.get_num_threads()
    tf.set_num_threads(threads)
    try:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.as_dtype(value.dtype), value.shape)
            with tf.Session() as sess:
                return sess.run(fn(x, axis=list(axes)), {x: value})
    finally:
        tf.set_num_threads(old)


@pytest.mark.parametrize("shape,axes", CASES)
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_reductions_are_the_same_bits_for_any_thread_count(shape, axes, op, dtype):
    rng = np.random.default_rng(len(shape))
    value = (rng.standard_normal(shape) * 10).astype(dtype)
    ours, theirs = OPS[op]
    got = [_run(ours, value, axes, t) for t in (1, 2, 3)]
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0])
    want = theirs(value.astype(np.float64), axis=axes)
    if op in ("max", "min"):
        np.testing.assert_array_equal(got[0], want.astype(dtype))
    elif dtype == np.float32:  # float64 accumulation, then one rounding
        np.testing.assert_allclose(got[0], want.astype(dtype), rtol=2e-7, atol=1e-12)
    else:  # float64 rounding errors, of the size of the magnitudes summed
        scale = np.abs(value).sum(axis=axes) / (value.size / want.size if op == "mean" else 1)
        assert (np.abs(got[0] - want) <= 1e-14 * scale).all()


def test_chunked_column_reductions_keep_nans_ints_and_bools():
    shape, axes = (50, 28, 28, 32), (0, 1, 2)
    rng = np.random.default_rng(1)
    value = rng.standard_normal(shape).astype(np.float32)
    value[49, 27, 27, 3] = np.nan  # in the last chunk
    value[0, 0, 0, 5] = np.nan  # in the first
    for t in (1, 2):
        for ours, theirs in [(tf.reduce_sum, np.sum), (tf.reduce_max, np.max), (tf.reduce_min, np.min)]:
            got = _run(ours, value, axes, t)
            assert np.isnan(got[[3, 5]]).all() and not np.isnan(np.delete(got, [3, 5])).any()
            if ours is not tf.reduce_sum:
                np.testing.assert_array_equal(got, theirs(value, axis=axes))
    ints = rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    for t in (1, 2):  # int32 sums wrap, as TF's do
        np.testing.assert_array_equal(_run(tf.reduce_sum, ints, axes, t),
                                      ints.astype(np.int64).sum(axis=axes).astype(np.int32))
    flags = rng.random(shape) < 0.9999
    for t in (1, 2):
        np.testing.assert_array_equal(_run(tf.reduce_all, flags, axes, t), flags.all(axis=axes))
        np.testing.assert_array_equal(_run(tf.reduce_any, ~flags, axes, t), (~flags).any(axis=axes))
