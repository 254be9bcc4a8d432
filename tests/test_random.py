"""Random ops: tf.random_uniform, tf.random_normal, tf.truncated_normal (distributions checked
statistically on large samples), TF1's seed rules (graph seed and op seed, new values each run,
sessions and thread counts), and tf.nn.dropout (values, kept fraction, keep_prob as a tensor,
unknown batch size, and its gradient with the same mask as the forward)."""
import math

import numpy as np
import pytest

import pygrad as tf

# n = 200000 draws: the standard error of a mean is 0.0022 sigma, of a standard deviation 0.16%
# (normal) and of a kept fraction 0.001; the bounds are 5 standard errors or more.
N = 200000


@pytest.fixture
def restore_threads():
    n = tf.get_num_threads()
    yield
    tf.set_num_threads(n)


def _run(t, feed=None, runs=1):
    with tf.Session() as sess:
        out = [sess.run(t, feed) for _ in range(runs)]
    return out[0] if runs == 1 else out


def _assert_mean_std(x, mean, std, what):
    x = np.asarray(x, np.float64)
    assert abs(x.mean() - mean) < 5 * std / math.sqrt(x.size), f"{what}: mean {x.mean()}, expected {mean}"
    assert abs(x.std() / std - 1) < 0.01, f"{what}: std {x.std()}, expected {std}"


# ---------------------------------------------------------------- distributions


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=lambda d: d.name)
def test_random_uniform(dtype):
    u = tf.random_uniform([N], dtype=dtype, seed=1)
    r = tf.random_uniform([400, 500], minval=-2.0, maxval=3.0, dtype=dtype, seed=2)
    assert u.dtype == dtype and u.shape.as_list() == [N] and r.shape.as_list() == [400, 500]
    uv, rv = _run([u, r])
    assert uv.dtype == dtype.np and uv.shape == (N,)
    assert uv.min() >= 0.0 and uv.max() < 1.0 and uv.min() < 1e-4 and uv.max() > 1 - 1e-4
    _assert_mean_std(uv, 0.5, 1 / math.sqrt(12), "uniform [0, 1)")
    assert rv.min() >= -2.0 and rv.max() < 3.0
    _assert_mean_std(rv, 0.5, 5 / math.sqrt(12), "uniform [-2, 3)")
    counts, _ = np.histogram(rv, bins=20, range=(-2.0, 3.0))
    assert np.all(np.abs(counts / (rv.size / 20) - 1) < 0.05)
    # not a coarse grid: TF's resolution, 2^-23 (2^-52), leaves about N^2 / (2 * grid) repeats
    grid = 2.0 ** (23 if dtype == tf.float32 else 52)
    assert len(np.unique(uv)) > N - 1.5 * N * N / (2 * grid) - 10
    # ... and on that grid, so that keep_prob + u < keep_prob + 1 in the dtype (dropout's floor)
    np.testing.assert_array_equal(uv * grid, np.floor(uv * grid))
    assert np.all(uv.dtype.type(1) + uv < 2)


def test_random_uniform_tensor_bounds():
    lo = tf.placeholder(tf.float32, [])
    u = tf.random_uniform([N], minval=lo, maxval=10.0, seed=3)
    uv = _run(u, {lo: 6.0})
    assert uv.min() >= 6.0 and uv.max() < 10.0
    _assert_mean_std(uv, 8.0, 4 / math.sqrt(12), "uniform [6, 10)")


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=lambda d: d.name)
def test_random_normal(dtype):
    x = _run(tf.random_normal([N], mean=2.0, stddev=0.5, dtype=dtype, seed=4))
    assert x.dtype == dtype.np
    _assert_mean_std(x, 2.0, 0.5, "normal")
    z = (x.astype(np.float64) - 2.0) / 0.5
    assert abs(np.mean(np.abs(z) > 2) - 0.0455) < 0.003  # the tails of a normal
    assert abs(np.mean(np.abs(z) > 3) - 0.0027) < 0.0008
    assert abs(np.mean(z ** 4) - 3.0) < 0.1  # kurtosis
    assert abs(np.mean(z ** 3)) < 0.05  # skewness


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=lambda d: d.name)
def test_truncated_normal(dtype):
    x = _run(tf.truncated_normal([N], mean=-1.0, stddev=2.0, dtype=dtype, seed=5)).astype(np.float64)
    assert np.all(np.abs(x + 1.0) <= 4.0 * (1 + 1e-6))  # redrawn beyond two standard deviations
    assert np.abs(x + 1.0).max() > 3.99
    _assert_mean_std(x, -1.0, 0.87962566 * 2.0, "truncated normal")
    # the density of a truncated normal: the share within one sigma is 0.6827 / 0.9545
    assert abs(np.mean(np.abs(x + 1.0) < 2.0) - 0.68269 / 0.95450) < 0.005


def test_shape_from_tf_shape():
    x = tf.placeholder(tf.float32, [None, 3])
    u = tf.random_uniform(tf.shape(x), seed=1)
    assert _run(u, {x: np.zeros((5, 3))}).shape == (5, 3)


def test_bad_dtype_and_shape():
    with pytest.raises((TypeError, ValueError)):
        tf.random_normal([3], dtype=tf.int32)
    with pytest.raises(ValueError, match="fully defined"):
        tf.random_uniform([None, 3])


# ---------------------------------------------------------------- seeds


def _seeded_draws(graph_seed, op_seed, runs=2):
    """Values of a seeded uniform and normal over `runs` runs, in a fresh graph and session."""
    tf.reset_default_graph()
    if graph_seed is not None:
        tf.set_random_seed(graph_seed)
    u = tf.random_uniform([1000], seed=op_seed)
    n = tf.random_normal([10, 10], seed=op_seed)
    return _run([u, n], runs=runs)


@pytest.mark.parametrize("graph_seed,op_seed", [(1, 7), (1, None), (None, 7), (0, 0)])
def test_seeded_ops_repeat_in_fresh_graphs(graph_seed, op_seed):
    first = _seeded_draws(graph_seed, op_seed)
    second = _seeded_draws(graph_seed, op_seed)
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_different_seeds_draw_different_values():
    base = _seeded_draws(1, 7)[0][0]
    assert not np.array_equal(base, _seeded_draws(2, 7)[0][0])  # graph seed
    assert not np.array_equal(base, _seeded_draws(1, 8)[0][0])  # op seed


def test_unseeded_graphs_differ():
    a = _seeded_draws(None, None)[0][0]
    b = _seeded_draws(None, None)[0][0]
    assert not np.array_equal(a, b)


def test_different_ops_in_one_graph_draw_different_values():
    tf.set_random_seed(3)
    a = tf.random_uniform([500])
    b = tf.random_uniform([500])
    c = tf.random_uniform([500], seed=9)
    d = tf.random_uniform([500], seed=10)
    values = _run([a, b, c, d])
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.any(values[i] == values[j]), (i, j)


def test_same_graph_and_op_seed_give_the_same_sequence():
    """TF's rule: the pair (graph seed, op seed) determines the sequence."""
    tf.set_random_seed(3)
    a = tf.random_uniform([100], seed=5)
    b = tf.random_uniform([100], seed=5)
    av, bv = _run([a, b])
    np.testing.assert_array_equal(av, bv)


def test_each_run_draws_new_values():
    tf.set_random_seed(4)
    u = tf.random_uniform([1000], seed=1)
    n = tf.truncated_normal([1000], seed=2)
    with tf.Session() as sess:
        runs = [sess.run([u, n]) for _ in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert not np.any(runs[i][0] == runs[j][0]) and not np.any(runs[i][1] == runs[j][1])


def test_one_draw_per_run_for_every_consumer():
    """A random tensor used twice in one run has one value (the op runs once)."""
    u = tf.random_uniform([50], seed=1)
    a, b, s = _run([u, u + 0.0, u * 2.0])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(s, 2.0 * a)


def test_two_sessions_on_one_graph_start_from_the_same_sequence():
    tf.set_random_seed(5)
    u = tf.random_uniform([300], seed=2)
    with tf.Session() as s1, tf.Session() as s2:
        first = [s1.run(u) for _ in range(3)]
        second = [s2.run(u) for _ in range(3)]
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], first[1])


def test_unseeded_op_draws_new_values_in_each_session():
    """TF: with neither a graph nor an op seed, an op's sequence is random per session."""
    u = tf.random_uniform([300])
    with tf.Session() as s1, tf.Session() as s2:
        assert not np.any(s1.run(u) == s2.run(u))


def test_same_values_with_one_and_two_threads(restore_threads):
    """Philox is counter-based: every element depends only on its index, never on the split."""
    results = []
    for threads in (1, 2):
        tf.set_num_threads(threads)
        assert tf.get_num_threads() == threads
        results.append(_seeded_draws(6, 1, runs=2))
        tf.reset_default_graph()
        tf.set_random_seed(6)
        big = [tf.random_uniform([N], seed=1), tf.random_normal([N], seed=2), tf.truncated_normal([N], seed=3),
               tf.random_uniform([N], dtype=tf.float64, seed=4)]
        results.append(_run(big, runs=2))
    for a, b in zip(results[0:2], results[2:4]):
        for x, y in zip(a, b):
            for xi, yi in zip(x, y):
                np.testing.assert_array_equal(xi, yi)


# ---------------------------------------------------------------- dropout


def _positive(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(dtype)


@pytest.mark.parametrize("keep_prob", [0.3, 0.7])
def test_dropout_keeps_x_over_keep_prob(keep_prob):
    xv = _positive([400, 500])
    out = _run(tf.nn.dropout(tf.constant(xv), keep_prob, seed=1))
    kept = out != 0
    np.testing.assert_array_equal(out[kept], xv[kept] / np.float32(keep_prob))  # TF: x / keep_prob * mask
    assert abs(kept.mean() - keep_prob) < 0.006
    assert 0 < kept.sum() < kept.size


def test_dropout_keep_prob_one_returns_x():
    x = tf.placeholder(tf.float32, [None, 4])
    xv = _positive([3, 4])
    np.testing.assert_array_equal(_run(tf.nn.dropout(x, 1.0), {x: xv}), xv)
    with pytest.raises(ValueError, match="keep_prob"):
        tf.nn.dropout(x, 0.0)
    with pytest.raises(ValueError, match="keep_prob"):
        tf.nn.dropout(x, 1.5)


def test_dropout_keep_prob_placeholder():
    x = tf.constant(_positive([200, 1000]))
    keep_prob = tf.placeholder(tf.float32, [])
    d = tf.nn.dropout(x, keep_prob, seed=2)
    with tf.Session() as sess:
        for p in (0.2, 0.5, 1.0):
            out = sess.run(d, {keep_prob: p})
            assert abs(np.mean(out != 0) - p) < 0.006, p
        np.testing.assert_array_equal(sess.run(d, {keep_prob: 1.0}), sess.run(x))  # a fed 1.0 keeps everything


def test_dropout_rate():
    d = tf.nn.dropout(tf.ones([N]), rate=0.25, seed=3)
    out = _run(d)
    assert abs(np.mean(out != 0) - 0.75) < 0.006
    np.testing.assert_array_equal(np.unique(out), [0.0, np.float32(1.0) / np.float32(0.75)])


def test_dropout_with_unknown_batch_size():
    x = tf.placeholder(tf.float32, [None, 300])
    d = tf.nn.dropout(x, 0.5, seed=4)
    assert d.shape.as_list() == [None, 300]
    with tf.Session() as sess:
        for batch in (7, 400):
            xv = _positive([batch, 300], seed=batch)
            out = sess.run(d, {x: xv})
            assert out.shape == (batch, 300)
            kept = out != 0
            np.testing.assert_array_equal(out[kept], xv[kept] * np.float32(2.0))
        assert abs(kept.mean() - 0.5) < 0.01


def test_dropout_noise_shape_drops_whole_rows():
    d = tf.nn.dropout(tf.ones([2000, 5]), 0.5, noise_shape=[2000, 1], seed=5)
    out = _run(d)
    rows_kept = np.all(out == 2.0, axis=1)
    assert np.all(rows_kept | np.all(out == 0.0, axis=1))
    assert abs(rows_kept.mean() - 0.5) < 0.06


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=lambda d: d.name)
def test_dropout_gradient_uses_the_forward_mask(dtype):
    """d/dx sum(w * dropout(x)) = (w * mask) / keep_prob, with the mask of the same run."""
    x = tf.placeholder(dtype, [None, 200])
    keep_prob = tf.placeholder(dtype, [])
    d = tf.nn.dropout(x, keep_prob, seed=6)
    w = np.random.default_rng(1).standard_normal((30, 200)).astype(dtype.np)
    (grad,) = tf.gradients(tf.reduce_sum(d * w), [x])
    xv = _positive([30, 200], dtype=dtype.np)
    with tf.Session() as sess:
        previous = None
        for p in (0.4, 0.8, 0.8):
            out, g = sess.run([d, grad], {x: xv, keep_prob: p})
            mask = (out != 0).astype(dtype.np)
            np.testing.assert_array_equal(g, (w * mask) / dtype.np.type(p))  # the backprop of x / keep_prob * mask
            if previous is not None:
                assert not np.array_equal(mask, previous)  # a new mask each run
            previous = mask


def test_dropout_seeded_repeats_across_graphs():
    def draw():
        tf.reset_default_graph()
        tf.set_random_seed(8)
        return _run(tf.nn.dropout(tf.ones([1000]), 0.5, seed=1), runs=2)

    a, b = draw(), draw()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1])


def test_get_seed_follows_tensorflows_rule(tf_peer):
    """tf.get_seed as TensorFlow's: no seeds give (None, None), an op seed alone the default graph
    seed, a graph seed with or without an op seed (TF 2's compat graph numbers its ops otherwise:
    with no op seed, only the graph seed is compared)."""
    def seeds(lib):
        with lib.Graph().as_default():
            out = [lib.get_seed(None), lib.get_seed(5), lib.random.get_seed(0)]
            lib.set_random_seed(7)
            out += [lib.get_seed(5), lib.random.get_seed(3), lib.get_seed(None)[0], lib.set_random_seed(0)]
            out += [lib.get_seed(0)]
        return out
    assert seeds(tf) == seeds(tf_peer) == [(None, None), (87654321, 5), (87654321, 0), (7, 5), (7, 3), 7, None,
                                           (0, 2 ** 31 - 1)]
    x = tf.random_uniform([4])  # with no seeds, a random op still draws fresh values each run
    with tf.Session() as sess:
        assert not np.array_equal(sess.run(x), sess.run(x))
