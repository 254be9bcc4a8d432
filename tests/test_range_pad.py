"""range, lin_space, sequence_mask, reverse, pad and placeholder_with_default: NumPy references,
finite-difference gradients, bad input, and TensorFlow where installed."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close, check_grad, check_grad_float32, run_forward
from peer import compare

RNG = np.random.default_rng(7)


# ---------------------------------------------------------------- range

@pytest.mark.parametrize("args, kwargs, want", [
    ((5,), {}, np.arange(5, dtype=np.int32)),
    ((2, 9, 3), {}, np.arange(2, 9, 3, dtype=np.int32)),
    ((9, 2, -2), {}, np.arange(9, 2, -2, dtype=np.int32)),
    ((3, 3), {}, np.arange(0, dtype=np.int32)),
    ((1, 2**40, 2**39), {}, np.array([1, 1 + 2**39], np.int64)),  # a limit past int32: int64
    ((0, 1, 0.25), {}, np.arange(0, 1, 0.25, dtype=np.float32)),  # a float delta: float32
    ((4,), {"dtype": tf.float64}, np.arange(4, dtype=np.float64)),
], ids=["n", "step", "negative", "empty", "int64", "float", "dtype"])
def test_range(args, kwargs, want):
    out = tf.Session().run(tf.range(*args, **kwargs))
    assert_close(out, want)


def test_range_accumulates_like_tensorflows_kernel():
    """Each value is the previous one plus delta, in float32, as TF's Range kernel adds."""
    want, v = [], np.float32(1)
    for _ in range(7):
        want.append(v)
        v = np.float32(v + np.float32(0.3))
    assert_close(tf.Session().run(tf.range(1, 3, 0.3)), np.array(want, np.float32), rtol=0, atol=0)


def test_range_of_a_fed_dimension():
    x = tf.placeholder(tf.float32, [None, 2])
    r = tf.range(tf.shape(x)[0])
    assert r.shape.as_list() == [None] and r.dtype == tf.int32
    with tf.Session() as s:
        for n in (3, 5):
            assert_close(s.run(r, {x: np.zeros((n, 2))}), np.arange(n, dtype=np.int32))


@pytest.mark.parametrize("args, match", [
    ((0, 5, 0), "Requires delta != 0"),
    ((5, 1, 1), "Requires start <= limit when delta > 0: 5/1"),
    ((1, 5, -1), "Requires start >= limit when delta < 0: 1/5"),
])
def test_range_bad(args, match):
    with pytest.raises(ValueError, match=f"Range 'range': {match}.*\n  op defined at .*test_range_pad.py"):
        tf.range(*args)


def _computed_ranges(m):
    """Ranges of values a run computes: a limit from a reduction, fed start/limit/delta of each
    dtype, a float range, a range used by later ops, and a range whose limit is known but whose
    start is fed."""
    x = m.placeholder(m.int32, [None])
    f = m.placeholder(m.float32, [])
    d = m.placeholder(m.int64, [])
    r1 = m.range(m.reduce_max(x))
    r2 = m.range(d, 0, -2)
    r3 = m.range(0.5, f, 0.75)
    r4 = m.reduce_sum(m.cast(m.range(1, m.size(x) + m.reduce_min(x)), m.float32) * 2.0)
    r5 = m.range(m.reduce_min(x), 10, 3, dtype=m.int64)
    with m.Session() as s:
        return [s.run([r1, r2, r3, r4, r5], {x: xs, f: fs, d: ds})
                for xs, fs, ds in (([1, 5, 3], 4.0, 7), ([2], 0.5, 0), ([0, 9], 2.1, 1))]


def test_range_of_values_a_run_computes(tf_peer):
    """As TF: the length is a value of the run (a host op between two plans)."""
    got, want = _computed_ranges(tf), _computed_ranges(tf_peer)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            assert_close(a, b, rtol=0, atol=0)


def test_a_computed_range_with_bad_bounds_names_the_op_and_keeps_the_session():
    n = tf.placeholder(tf.int32, [])
    r = tf.range(n, 3, 1)
    assert r.shape.as_list() == [None] and r.dtype == tf.int32
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"'range': Requires start <= limit when delta > 0: 5/3\n  op defined at .*test_range"):
            s.run(r, {n: 5})
        assert_close(s.run(r, {n: 1}), np.arange(1, 3, dtype=np.int32))
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.range(tf.placeholder(tf.int32, [2]))


# ---------------------------------------------------------------- lin_space

@pytest.mark.parametrize("start, stop, num", [(0., 1., 5), (-2.5, 7.25, 9), (3., 3., 1), (1., -1., 2)])
def test_lin_space(start, stop, num):
    out = tf.Session().run(tf.lin_space(start, stop, num))
    assert out.dtype == np.float32 and out[-1] == np.float32(stop)
    assert_close(out, np.linspace(start, stop, num).astype(np.float32))


def test_lin_space_bad():
    with pytest.raises(TypeError, match="LinSpace 'LinSpace': start and stop must be float32 or float64"):
        tf.linspace(0, 1, 3)
    with pytest.raises(ValueError, match="Requires num > 0: 0"):
        tf.linspace(0., 1., 0)


# ---------------------------------------------------------------- sequence_mask

def test_sequence_mask():
    lengths = np.array([[1, 3], [0, 2]], np.int32)
    want = np.arange(4) < lengths[..., None]
    assert_close(run_forward(lambda l: tf.sequence_mask(l, 4), [lengths]), want)
    assert_close(tf.Session().run(tf.sequence_mask([1, 3, 2])), np.arange(3) < np.array([1, 3, 2])[:, None])
    assert_close(tf.Session().run(tf.sequence_mask([2, 0], 3, dtype=tf.float32)),
                 np.array([[1, 1, 0], [0, 0, 0]], np.float32))


def test_sequence_mask_of_a_fed_length():
    x = tf.placeholder(tf.float32, [None, None])
    lengths = tf.placeholder(tf.int64, [None])
    mask = tf.sequence_mask(lengths, tf.shape(x)[1], dtype=tf.float32)
    with tf.Session() as s:
        for shape, lv in (((2, 3), [0, 2]), ((3, 5), [5, 1, 3])):
            want = (np.arange(shape[1]) < np.array(lv)[:, None]).astype(np.float32)
            assert_close(s.run(mask, {x: np.zeros(shape), lengths: lv}), want)


def test_sequence_mask_needs_maxlen_for_computed_lengths():
    lengths = tf.placeholder(tf.int32, [None])
    with pytest.raises(ValueError, match="SequenceMask 'SequenceMask': lengths .* must be known when the graph"):
        tf.sequence_mask(lengths)


# ---------------------------------------------------------------- reverse

@pytest.mark.parametrize("axis", [[0], [1], [-1, 0], [0, 2], []])
def test_reverse(axis):
    x = RNG.standard_normal((3, 4, 2))
    assert_close(run_forward(lambda t: tf.reverse(t, axis), [x], static=False), np.flip(x, axis) if axis else x)
    check_grad(lambda t: tf.reverse(t, axis) * tf.reverse(t, axis)[::1], [x])


def test_reverse_bad():
    with pytest.raises(ValueError, match="ReverseV2 'ReverseV2': axis \\[0, -2\\]: a dimension is specified more"):
        tf.reverse(tf.zeros([2, 2]), [0, -2])
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        tf.reverse(tf.zeros([2, 2]), [2])


# ---------------------------------------------------------------- reverse_sequence

def _np_reverse_sequence(x, lengths, seq, batch):
    y = x.copy()
    for b, n in enumerate(lengths):
        src = [slice(None)] * x.ndim
        src[batch], src[seq] = b, slice(0, n)
        y[tuple(src)] = np.flip(x[tuple(src)], axis=seq - (batch < seq))
    return y


@pytest.mark.parametrize("seq, batch", [(1, 0), (0, 1), (2, 0), (0, 2)])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_reverse_sequence(seq, batch, dtype):
    x = (RNG.standard_normal((3, 4, 3)) * 5).astype(dtype)
    lengths = np.array([3, 0, 1] if x.shape[batch] == 3 else [4, 0, 1, 2], np.int64)
    lengths = np.minimum(lengths, x.shape[seq])
    want = _np_reverse_sequence(x, lengths, seq, batch)
    got = run_forward(lambda t, l: tf.reverse_sequence(t, l, seq_axis=seq, batch_axis=batch), [x, lengths],
                      static=False)
    assert_close(got, want)
    if dtype == "float64":
        check_grad(lambda t, l: tf.reverse_sequence(t, l, seq, batch), [x, lengths], wrt=[0])


def test_reverse_sequence_bad():
    x = tf.placeholder(tf.float32, [2, 3])
    lengths = tf.placeholder(tf.int32, [2])
    y = tf.reverse_sequence(x, lengths, seq_dim=1)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="ReverseSequence 'ReverseSequence': "
                                                                 "reverse_sequence: seq_lens\\(1\\) > input.dims\\(1\\)"):
            s.run(y, {x: np.zeros((2, 3)), lengths: [1, 4]})
    with pytest.raises(ValueError, match="batch_dim == seq_dim == 0"):
        tf.reverse_sequence(x, [1, 1], seq_axis=0)
    with pytest.raises(ValueError, match="Length of seq_lengths != input.dims\\(0\\), \\(3 vs. 2\\)"):
        tf.reverse_sequence(x, [1, 1, 1], seq_axis=1)


# ---------------------------------------------------------------- pad

PADS = [[1, 2], [0, 1], [2, 0]]
MODES = ["CONSTANT", "REFLECT", "SYMMETRIC"]


def _np_pad(x, pads, mode, value=0):
    if mode == "CONSTANT":
        return np.pad(x, pads, constant_values=value)
    return np.pad(x, pads, mode=mode.lower())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_pad_forward(mode, dtype):
    x = (RNG.standard_normal((3, 2, 4)) * 3).astype(dtype)
    for static in (True, False):
        assert_close(run_forward(lambda t: tf.pad(t, PADS, mode), [x], static=static), _np_pad(x, PADS, mode))


def test_pad_constant_values_and_lower_case_mode():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert_close(run_forward(lambda t: tf.pad(t, [[1, 0], [0, 2]], "constant", constant_values=-7), [x]),
                 _np_pad(x, [[1, 0], [0, 2]], "CONSTANT", -7))


@pytest.mark.parametrize("mode", MODES)
def test_pad_gradient(mode):
    x = RNG.standard_normal((3, 2, 4))
    check_grad(lambda t: tf.pad(t, PADS, mode), [x])
    check_grad(lambda t: tf.pad(t * t, PADS, mode), [x], order=2)  # through the gradient's gradient
    check_grad_float32(lambda t: tf.pad(t, PADS, mode), [x])


@pytest.mark.parametrize("pads, mode, match", [
    ([[3, 0]], "REFLECT", "paddings must be less than the dimension size: 3, 0 not less than 3"),
    ([[0, 4]], "SYMMETRIC", "paddings must be no greater than the dimension size: 0, 4 greater than 3"),
    ([[-1, 0]], "CONSTANT", "Paddings must be non-negative: -1 0"),
    ([[1, 1], [1, 1]], "CONSTANT", "The first dimension of paddings must be the rank of inputs"),
    ([[1, 1]], "WRAP", "Unknown padding mode: WRAP"),
])
def test_pad_bad(pads, mode, match):
    with pytest.raises(ValueError, match=match):
        tf.pad(tf.zeros([3]), pads, mode)


def test_pad_bad_fed_shape_names_the_op():
    x = tf.placeholder(tf.float32, [None])
    y = tf.pad(x, [[2, 2]], "REFLECT")
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Pad 'MirrorPad': paddings must be less than"):
            s.run(y, {x: np.zeros(2)})
        assert_close(s.run(y, {x: np.arange(3.)}), np.pad(np.arange(3.), 2, mode="reflect").astype(np.float32))


# ---------------------------------------------------------------- placeholder_with_default

def test_placeholder_with_default():
    d = tf.placeholder_with_default(tf.constant([[1., 2.]]), [None, 2])
    assert d.shape.as_list() == [None, 2]
    y = d * 2
    with tf.Session() as s:
        assert_close(s.run(y), np.array([[2., 4.]], np.float32))
        assert_close(s.run(y, {d: np.ones((3, 2))}), np.full((3, 2), 2, np.float32))
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            s.run(y, {d: np.ones((3, 3))})
    with pytest.raises(ValueError, match="PlaceholderWithDefault .* not compatible with shape"):
        tf.placeholder_with_default([1., 2.], [3])


# ---------------------------------------------------------------- TensorFlow

def test_matches_tensorflow(tf_peer):
    x32 = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    compare(tf_peer, lambda m: [m.range(5), m.range(1, 2**40, 2**38), m.range(0.5, 3, 0.35), m.range(7, dtype=m.float64),
                                m.lin_space(-2.5, 7.25, 9), m.lin_space(0., 1., 7),
                                m.sequence_mask([1, 3, 2], 4), m.sequence_mask([[1], [3]])], [])
    for mode in MODES:
        compare(tf_peer, lambda m, t: m.pad(t, PADS, mode, constant_values=1.5 if mode == "CONSTANT" else 0),
                [x32], wrt=[0])
    compare(tf_peer, lambda m, t: m.reverse(t, [0, -1]), [x32], wrt=[0])
    compare(tf_peer, lambda m, t: [m.reverse_sequence(t, [2, 0, 1], seq_axis=1, batch_axis=0),
                                   m.reverse_sequence(t, [3, 1], seq_axis=2, batch_axis=1)], [x32], wrt=[0])
