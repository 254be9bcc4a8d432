"""A slice of a transposed array taken from the array itself, and a slice's gradient written
transposed (pygrad/slice_transposes.py): where it applies, where it does not, NumPy's values, and
bitwise the steps' values without the pass."""
import numpy as np
import pytest

import pygrad as tf

from plan_testing import plan_steps, without_pass


@pytest.fixture
def unmoved(monkeypatch):
    return without_pass(monkeypatch, "slice_through_transposes")


def _run(build, feeds_of):
    """(values, plan step labels) of build() -> (placeholders, fetches) fed feeds_of(placeholders)."""
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        placeholders, fetches = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(fetches, feeds_of(placeholders)), plan_steps(sess)


def _same_bits(a, b):
    return len(a) == len(b) and all(np.asarray(x).tobytes() == np.asarray(y).tobytes() for x, y in zip(a, b))


def test_dynamic_rnns_last_output_and_its_gradient_skip_the_output_transposes(unmoved):
    """Batch-major dynamic_rnn, its last time step, and the gradient: the two transposes of the
    outputs are gone, the values and every gradient bitwise those of the plan without the pass."""
    x_value = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)

    def build():
        x = tf.placeholder(tf.float32, [4, 6, 5])
        out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(7), x, dtype=tf.float32)
        last = out[:, -1, :]
        loss = tf.reduce_sum(tf.square(last - 0.25))
        return x, [loss, last] + tf.gradients(loss, tf.trainable_variables())

    moved, steps = _run(build, lambda x: {x: x_value})
    plain, plain_steps = unmoved(lambda: _run(build, lambda x: {x: x_value}))
    assert "StridedSlice+Transpose" in steps and "StridedSliceGrad+Transpose" in steps, steps
    assert plain_steps.count("Transpose") == steps.count("Transpose") + 2, (plain_steps, steps)
    assert _same_bits(moved, plain)


@pytest.mark.parametrize("perm, index", [
    ((1, 0, 2), (slice(None), -1, slice(None))),          # the RNN's case
    ((2, 0, 1), (1, slice(None), slice(None, None, 2))),  # the kept dimensions stay in order
    ((0, 2, 1), (slice(1, 3), slice(None), 2)),
    ((0, 2, 1), (slice(None, None, -1), 1, slice(None))),  # a negative stride
])
def test_a_slice_that_keeps_its_order_moves_and_gives_numpys_values(perm, index, unmoved):
    rng = np.random.default_rng(1)
    x_value = rng.standard_normal((3, 4, 5)).astype(np.float32)
    want = np.transpose(x_value, perm)[index]
    dz_value = rng.standard_normal(want.shape).astype(np.float32)

    def build():
        x, dz = tf.placeholder(tf.float32, x_value.shape), tf.placeholder(tf.float32, want.shape)
        z = tf.transpose(x, perm)[index]
        return (x, dz), [z, tf.gradients(z, x, grad_ys=dz)[0]]

    feeds = lambda p: {p[0]: x_value, p[1]: dz_value}  # noqa: E731
    (z, dx), steps = _run(build, feeds)
    plain, plain_steps = unmoved(lambda: _run(build, feeds))
    assert "StridedSlice+Transpose" in steps and "StridedSliceGrad+Transpose" in steps, steps
    assert "Transpose" not in steps and "Transpose" in plain_steps, (steps, plain_steps)
    np.testing.assert_array_equal(z, want)
    dx_want = np.zeros(np.transpose(x_value, perm).shape, np.float32)
    dx_want[index] = dz_value
    np.testing.assert_array_equal(dx, np.transpose(dx_want, np.argsort(perm)))
    assert _same_bits([z, dx], plain)


def test_a_slice_that_would_reorder_its_elements_stays_after_the_transpose():
    """x [3, 4, 5] transposed to [5, 3, 4], then [:, 1, :]: the slice's elements run over x's
    dimensions 2 then 1, the other way round from x's own order, so the transpose stays."""
    x_value = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

    def build():
        x = tf.placeholder(tf.float32, x_value.shape)
        z = tf.transpose(x, (2, 0, 1))[:, 1, :]
        return x, [z, tf.gradients(tf.reduce_sum(z * np.arange(20, dtype=np.float32).reshape(5, 4)), x)[0]]

    (z, dx), steps = _run(build, lambda x: {x: x_value})
    assert "StridedSlice" in steps and "StridedSliceGrad" in steps and steps.count("Transpose") == 2, steps
    np.testing.assert_array_equal(z, np.transpose(x_value, (2, 0, 1))[:, 1, :])
    dx_want = np.zeros((5, 3, 4), np.float32)
    dx_want[:, 1, :] = np.arange(20, dtype=np.float32).reshape(5, 4)
    np.testing.assert_array_equal(dx, np.transpose(dx_want, (1, 2, 0)))


def test_a_transpose_fetched_or_read_twice_stays():
    x_value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def fetched():
        x = tf.placeholder(tf.float32, x_value.shape)
        y = tf.transpose(x, (1, 0, 2))
        return x, [y, y[:, -1, :]]

    def read_twice():
        x = tf.placeholder(tf.float32, x_value.shape)
        y = tf.transpose(x, (1, 0, 2))
        return x, [y[:, -1, :], tf.reduce_sum(y, axis=0)]

    (y, last), steps = _run(fetched, lambda x: {x: x_value})
    assert steps.count("Transpose") == 1 and "StridedSlice" in steps, steps
    np.testing.assert_array_equal(last, np.transpose(x_value, (1, 0, 2))[:, -1, :])
    (last, total), steps = _run(read_twice, lambda x: {x: x_value})
    assert steps.count("Transpose") == 1 and "StridedSlice" in steps, steps
    np.testing.assert_array_equal(last, np.transpose(x_value, (1, 0, 2))[:, -1, :])


def test_a_transpose_read_through_a_reshape_stays():
    """space_to_batch's pattern (a dilated convolution): a transpose whose output a reshape views
    as another shape before the slice; the slice's dimensions are not the transpose's, so both stay."""
    x_value = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

    def build():
        x = tf.placeholder(tf.float32, x_value.shape)
        y = tf.reshape(tf.transpose(x, (1, 0, 2, 3)), [6, 4, 5])
        z = y[1:5, :, 2]
        return x, [z, tf.gradients(tf.reduce_sum(z), x)[0]]

    (z, dx), steps = _run(build, lambda x: {x: x_value})
    assert "StridedSlice" in steps and "StridedSliceGrad" in steps, steps
    np.testing.assert_array_equal(z, np.transpose(x_value, (1, 0, 2, 3)).reshape(6, 4, 5)[1:5, :, 2])
    dy = np.zeros((6, 4, 5), np.float32)
    dy[1:5, :, 2] = 1
    np.testing.assert_array_equal(dx, np.transpose(dy.reshape(3, 2, 4, 5), (1, 0, 2, 3)))
