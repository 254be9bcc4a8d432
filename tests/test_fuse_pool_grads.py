"""A max pool's gradient and its relu's as one step (pygrad/fuse_pool_grads.py): where it applies,
where it does not, NumPy's values, and bitwise the unfused steps' values and training."""
import numpy as np
import pytest

import pygrad as tf

from plan_testing import plan_steps, without_pass


@pytest.fixture
def unfused(monkeypatch):
    return without_pass(monkeypatch, "fuse_pool_relu_grads")


def _numpy_grad(h, dy, k):
    """ReluGrad(h, MaxPoolGrad(h, pool(h), dy)) for k x k windows of stride k that tile h: dy at
    each window's first maximum (row-major) where h > 0 there, 0 elsewhere."""
    n, height, width, c = h.shape
    dx = np.zeros_like(h)
    for b in range(n):
        for i in range(height // k):
            for j in range(width // k):
                window = h[b, i * k:(i + 1) * k, j * k:(j + 1) * k, :].reshape(k * k, c)
                first = np.argmax(window, axis=0)
                for ch in range(c):
                    r, s = divmod(first[ch], k)
                    if window[first[ch], ch] > 0:
                        dx[b, i * k + r, j * k + s, ch] = dy[b, i, j, ch]
    return dx


def _pool_grad_graph(dtype, shape, ksize, strides, padding):
    x = tf.placeholder(dtype, shape)
    dy = tf.placeholder(dtype, None)
    pooled = tf.nn.max_pool(tf.nn.relu(x), ksize=[1, *ksize, 1], strides=[1, *strides, 1], padding=padding)
    return x, dy, tf.gradients(pooled, x, grad_ys=dy)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k, padding", [(2, "SAME"), (2, "VALID"), (3, "VALID")])
def test_the_fused_gradient_is_numpys_and_the_unfused_steps_bits(dtype, k, padding, unfused):
    rng = np.random.default_rng(k)
    shape = (3, 6 * k // 2 * 2, 4 * k, 37)  # 37 channels: a vector loop's tail
    x_value = rng.standard_normal(shape).astype(dtype)
    x_value[0, :k, :k, :] = -1.0  # windows of zeros after the relu: no gradient
    x_value[1, 0, 0, 0] = x_value[1, 0, 1, 0] = 2.0  # a tie: the first maximum takes it
    dy_value = rng.standard_normal((shape[0], shape[1] // k, shape[2] // k, shape[3])).astype(dtype)
    dy_value[2, 0, 0, :4] = [np.inf, -np.inf, np.nan, -0.0]

    def run():
        with tf.Graph().as_default():
            x, dy, dx = _pool_grad_graph(dtype, shape, (k, k), (k, k), padding)
            with tf.Session() as sess:
                return sess.run(dx, {x: x_value, dy: dy_value}), plan_steps(sess)

    fused, steps = run()
    plain, plain_steps = unfused(run)
    assert "MaxPoolGrad+ReluGrad" in steps and "ReluGrad" not in steps, steps
    assert "ReluGrad" in plain_steps, plain_steps
    assert fused.tobytes() == plain.tobytes()
    want = _numpy_grad(np.maximum(x_value, 0), dy_value, k)
    np.testing.assert_array_equal(fused, want)
    assert np.signbit(fused[np.signbit(want) & (want == 0)]).all()  # dy's -0.0 kept


def test_nan_in_the_relus_output_gives_the_unfused_bits(unfused):
    rng = np.random.default_rng(1)
    x_value = rng.standard_normal((2, 8, 8, 16)).astype(np.float32)
    x_value[0, 0, 0, :3] = np.nan
    x_value[1, 2, 3, 5] = np.inf
    dy_value = rng.standard_normal((2, 4, 4, 16)).astype(np.float32)

    def run():
        with tf.Graph().as_default():
            x, dy, dx = _pool_grad_graph(tf.float32, (2, 8, 8, 16), (2, 2), (2, 2), "VALID")
            with tf.Session() as sess:
                return sess.run(dx, {x: x_value, dy: dy_value}), plan_steps(sess)

    fused, steps = run()
    plain, _ = unfused(run)
    assert "MaxPoolGrad+ReluGrad" in steps
    assert fused.tobytes() == plain.tobytes()


@pytest.mark.parametrize("shape, ksize, strides, padding", [
    ((2, 7, 7, 8), (2, 2), (2, 2), "SAME"),   # an odd image: the last window is padded
    ((2, 9, 9, 8), (3, 3), (2, 2), "VALID"),  # overlapping windows
    ((2, 8, 8, 8), (2, 2), (1, 1), "VALID"),
])
def test_windows_that_do_not_tile_stay_two_steps_with_the_same_values(shape, ksize, strides, padding, unfused):
    rng = np.random.default_rng(2)
    x_value = rng.standard_normal(shape).astype(np.float32)
    out = [-(-n // s) if padding == "SAME" else (n - k) // s + 1 for n, k, s in zip(shape[1:3], ksize, strides)]
    dy_value = rng.standard_normal((shape[0], *out, shape[3])).astype(np.float32)

    def run():
        with tf.Graph().as_default():
            x, dy, dx = _pool_grad_graph(tf.float32, shape, ksize, strides, padding)
            with tf.Session() as sess:
                return sess.run(dx, {x: x_value, dy: dy_value}), plan_steps(sess)

    fused, steps = run()
    plain, _ = unfused(run)
    assert "ReluGrad" in steps and not any("+ReluGrad" in s for s in steps), steps
    assert fused.tobytes() == plain.tobytes()


def test_a_fetched_pool_gradient_is_not_fused():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, (2, 8, 8, 4))
        h = tf.nn.relu(x)
        pooled = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        dh, dx = tf.gradients(pooled, [h, x])
        with tf.Session() as sess:
            x_value = np.random.default_rng(3).standard_normal((2, 8, 8, 4)).astype(np.float32)
            dh_value, dx_value = sess.run([dh, dx], {x: x_value})
            assert "ReluGrad" in plan_steps(sess)
            np.testing.assert_array_equal(dx_value, np.where(x_value > 0, dh_value, 0))


def test_a_convnet_trains_to_the_unfused_weights_bitwise(unfused):
    """conv, relu, 2x2 max pool, twice, then a dense layer, with Adam: five steps."""
    rng = np.random.default_rng(4)
    images = rng.random((16, 12, 12, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]

    def run():
        with tf.Graph().as_default():
            tf.set_random_seed(0)
            x, y = tf.placeholder(tf.float32, [None, 12, 12, 1]), tf.placeholder(tf.float32, [None, 10])
            h = x
            for channels in (8, 16):
                w = tf.Variable(tf.truncated_normal([3, 3, int(h.shape[-1]), channels], stddev=0.3))
                b = tf.Variable(tf.constant(0.05, shape=[channels]))
                h = tf.nn.relu(tf.nn.conv2d(h, w, [1, 1, 1, 1], "SAME") + b)
                h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
            logits = tf.layers.dense(tf.reshape(h, [-1, 3 * 3 * 16]), 10)
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
            train = tf.train.AdamOptimizer(0.01).minimize(loss)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                losses = [sess.run([train, loss], {x: images, y: labels})[1] for _ in range(5)]
                steps = plan_steps(sess)
                return losses, sess.run(tf.trainable_variables()), steps

    losses, weights, steps = run()
    plain_losses, plain_weights, plain_steps = unfused(run)
    assert sum(s.startswith("MaxPoolGrad+ReluGrad") for s in steps) == 2, steps
    assert losses[-1] < losses[0]
    assert np.array(losses).tobytes() == np.array(plain_losses).tobytes()
    for a, b in zip(weights, plain_weights):
        assert a.tobytes() == b.tobytes()
