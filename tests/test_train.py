"""tf.train.GradientDescentOptimizer with TensorFlow 1's semantics: one step against NumPy,
compute_gradients / apply_gradients / minimize, global_step, gradients fed back through
placeholders, the hand-built update of the MNIST example, and a falling loss."""
import warnings

import numpy as np
import pytest

import pygrad as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _data(n=8, d=5, k=3, seed=0, dtype=np.float32):
    rng = np.random.RandomState(seed)
    xv = rng.randn(n, d).astype(dtype)
    yv = np.eye(k, dtype=dtype)[rng.randint(0, k, n)]
    w0 = (rng.randn(d, k) * 0.5).astype(dtype)
    b0 = (rng.randn(k) * 0.5).astype(dtype)
    return xv, yv, w0, b0


def _softmax_regression(dtype, d, k, w0, b0, lib=tf):
    """The MNIST tutorial's model, built with lib (pygrad, or TensorFlow for the cross-check)."""
    x = lib.placeholder(dtype, [None, d])
    y = lib.placeholder(dtype, [None, k])
    W = lib.Variable(w0, name="W")
    b = lib.Variable(b0, name="b")
    pred = lib.nn.softmax(lib.matmul(x, W) + b)
    cost = lib.reduce_mean(-lib.reduce_sum(y * lib.log(pred), reduction_indices=1))
    return x, y, W, b, cost


def _numpy_step(xv, yv, w, b, lr):
    """The cost at (w, b) and (w, b) after one gradient-descent step, in float64."""
    xv, yv, w, b = (np.asarray(a, np.float64) for a in (xv, yv, w, b))
    logits = xv @ w + b
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    cost = np.mean(-np.sum(yv * np.log(p), 1))
    dlogits = (p - yv) / len(xv)
    return cost, w - lr * xv.T @ dlogits, b - lr * dlogits.sum(0)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-12)], ids=["float32", "float64"])
def test_one_gradient_descent_step_matches_numpy(dtype, rtol):
    xv, yv, w0, b0 = _data(dtype=dtype)
    x, y, W, b, cost = _softmax_regression(tf.as_dtype(dtype), 5, 3, w0, b0)
    assert W.dtype == tf.as_dtype(dtype) and cost.dtype == tf.as_dtype(dtype)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    want_cost, want_w, want_b = _numpy_step(xv, yv, w0, b0, 0.5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _, got_cost = sess.run([train, cost], {x: xv, y: yv})
        got_w, got_b = sess.run([W, b])
    assert got_w.dtype == dtype and got_b.dtype == dtype and np.asarray(got_cost).dtype == dtype
    assert got_cost == pytest.approx(want_cost, rel=rtol)
    np.testing.assert_allclose(got_w, want_w, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(got_b, want_b, rtol=rtol, atol=rtol)
    assert not np.allclose(got_w, w0)  # the step moved the weights


def test_train_op_is_named_after_the_optimizer():
    v = tf.Variable(1.0)
    loss = v * v
    opt = tf.train.GradientDescentOptimizer(0.1)
    assert opt.get_name() == "GradientDescent"
    assert opt.minimize(loss).name == "GradientDescent"
    assert opt.minimize(loss).name == "GradientDescent_1"
    assert opt.minimize(loss, name="train").name == "train"
    gs = tf.Variable(0, trainable=False)
    assert opt.minimize(loss, global_step=gs).name == "GradientDescent_2"


# ---------------------------------------------------------------- compute_gradients / apply_gradients


def test_compute_gradients_with_var_list():
    xv, yv, w0, b0 = _data()
    x, y, W, b, cost = _softmax_regression(tf.float32, 5, 3, w0, b0)
    opt = tf.train.GradientDescentOptimizer(0.1)
    pairs = opt.compute_gradients(cost, var_list=[b])
    assert len(pairs) == 1 and pairs[0][1] is b
    assert pairs[0][0].shape.as_list() == [3]
    both = opt.compute_gradients(cost)
    assert [v for _, v in both] == [W, b]  # the trainable variables, in order
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gb, (gW2, gb2) = sess.run([pairs[0][0], [g for g, _ in both]], {x: xv, y: yv})
    _, w1, b1 = _numpy_step(xv, yv, w0, b0, 1.0)
    np.testing.assert_allclose(gb, b0 - b1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gW2, w0 - w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(gb, gb2)


def test_unreached_variable_gets_none_and_apply_gradients_skips_it():
    xv, yv, w0, b0 = _data()
    x, y, W, b, cost = _softmax_regression(tf.float32, 5, 3, w0, b0)
    unused = tf.Variable(np.array([1., 2.], np.float32), name="unused")
    frozen = tf.Variable(5.0, trainable=False, name="frozen")
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads_and_vars = opt.compute_gradients(cost)
    assert [v for _, v in grads_and_vars] == [W, b, unused]  # frozen is not trainable
    assert grads_and_vars[2][0] is None
    assert all(g is not None for g, _ in grads_and_vars[:2])
    train = opt.apply_gradients(grads_and_vars)
    _, want_w, want_b = _numpy_step(xv, yv, w0, b0, 0.5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: xv, y: yv})
        got_w, got_b, got_unused, got_frozen = sess.run([W, b, unused, frozen])
    np.testing.assert_allclose(got_w, want_w, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, want_b, rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(got_unused, [1., 2.])
    assert got_frozen == 5.0


def test_minimize_with_no_variable_reached_is_a_value_error():
    W = tf.Variable(1.0)
    other = tf.Variable(2.0)
    loss = other * 3.0
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.minimize(loss, var_list=[W])
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.minimize(tf.constant(1.0) * 2.0)  # trainable variables exist, none is reached
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, W)])
    with pytest.raises(ValueError):
        opt.apply_gradients([])


def test_minimize_without_trainable_variables_is_a_value_error():
    tf.Variable(1.0, trainable=False)
    with pytest.raises(ValueError):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(1.0) * 2.0)


def test_global_step_increments_once_per_run():
    v = tf.Variable(3.0)
    loss = v * v
    global_step = tf.Variable(0, trainable=False, name="global_step")
    opt = tf.train.GradientDescentOptimizer(0.25)
    train = opt.apply_gradients(opt.compute_gradients(loss), global_step=global_step)
    train2 = opt.minimize(loss, global_step=global_step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(global_step) == 0
        for step in range(1, 4):
            assert sess.run(train) is None
            assert sess.run(global_step) == step
        assert sess.run(v) == pytest.approx(3.0 * 0.5 ** 3)  # v -= 0.25 * 2v each step
        sess.run([train2, train2])
        assert sess.run(global_step) == 4
        sess.run([train, train2])
        assert sess.run(global_step) == 6


def test_learning_rate_can_be_a_tensor():
    v = tf.Variable(2.0)
    lr = tf.placeholder(tf.float32, [])
    train = tf.train.GradientDescentOptimizer(lr).minimize(v * v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(train, {lr: 0.25})
        assert sess.run(v) == 1.0
        sess.run(train, {lr: 0.0})
        assert sess.run(v) == 1.0


def test_learning_rate_is_float32_then_cast_to_the_variable_dtype():
    """TF1's _prepare converts a Python learning rate to a float32 tensor and casts it per variable:
    a float64 variable steps by float32(0.1), and a float32 learning-rate tensor is accepted."""
    v = tf.Variable(np.float64(1.0))
    lr = tf.placeholder(tf.float32, [])
    step_python = tf.train.GradientDescentOptimizer(0.1).minimize(v * 1.0)
    step_tensor = tf.train.GradientDescentOptimizer(lr).minimize(v * 1.0)
    step_callable = tf.train.GradientDescentOptimizer(lambda: 0.25).minimize(v * 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(step_python)
        assert sess.run(v) == 1.0 - np.float64(np.float32(0.1))  # 0.8999999985098839, as TF
        sess.run(step_tensor, {lr: 0.5})
        assert sess.run(v) == 0.5 - np.float64(np.float32(0.1))
        sess.run(step_callable)
        assert sess.run(v) == 0.25 - np.float64(np.float32(0.1))


def test_gradients_fed_back_through_placeholders_equal_minimize():
    xv, yv, w0, b0 = _data(n=12, seed=1)
    x, y, W, b, cost = _softmax_regression(tf.float32, 5, 3, w0, b0)
    opt_half = tf.train.GradientDescentOptimizer(0.25)
    grads_and_vars = opt_half.compute_gradients(cost)
    grad_in = [tf.placeholder(tf.float32, v.shape) for _, v in grads_and_vars]
    apply = opt_half.apply_gradients(zip(grad_in, [v for _, v in grads_and_vars]))
    minimize = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    fed_sess, min_sess = tf.Session(), tf.Session()  # one graph, separate variables
    fed_sess.run(tf.global_variables_initializer())
    min_sess.run(tf.global_variables_initializer())
    for step in range(4):
        batch = {x: xv[step:step + 8], y: yv[step:step + 8]}
        grads = fed_sess.run([g for g, _ in grads_and_vars], batch)
        fed_sess.run(apply, {p: 2.0 * g for p, g in zip(grad_in, grads)})  # doubled, at half the rate
        min_sess.run(minimize, batch)
        for var in (W, b):
            np.testing.assert_allclose(fed_sess.run(var), min_sess.run(var), rtol=1e-6, atol=1e-7)
    assert not np.allclose(min_sess.run(W), w0)
    fed_sess.close()
    min_sess.close()


def test_manual_update_equals_the_optimizer():
    """The --manual pattern of examples/mnist_softmax.py: W.assign(W - lr * grad_W)."""
    xv, yv, w0, b0 = _data(n=20, d=6, k=4, seed=2)
    lr = 0.3
    x, y, W, b, cost = _softmax_regression(tf.float32, 6, 4, w0, b0)
    grad_W, grad_b = tf.gradients(xs=[W, b], ys=cost)
    manual = tf.group(W.assign(W - lr * grad_W), b.assign(b - lr * grad_b))
    optimizer = tf.train.GradientDescentOptimizer(lr).minimize(cost)
    manual_sess, opt_sess = tf.Session(), tf.Session()
    for sess in (manual_sess, opt_sess):
        sess.run(tf.global_variables_initializer())
    w, bb = w0, b0
    for step in range(5):
        batch = {x: xv[4 * step:4 * step + 8], y: yv[4 * step:4 * step + 8]}
        _, c_manual = manual_sess.run([manual, cost], batch)
        _, c_opt = opt_sess.run([optimizer, cost], batch)
        want_cost, w, bb = _numpy_step(batch[x], batch[y], w, bb, lr)
        assert c_manual == pytest.approx(c_opt, rel=1e-6)
        assert c_opt == pytest.approx(want_cost, rel=1e-5)
        for var, want in ((W, w), (b, bb)):
            got_manual, got_opt = manual_sess.run(var), opt_sess.run(var)
            np.testing.assert_allclose(got_manual, got_opt, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(got_opt, want, rtol=1e-5, atol=1e-6)
    manual_sess.close()
    opt_sess.close()


def test_loss_falls_on_mnist_like_data():
    rng = np.random.RandomState(0)
    n = 600
    images = rng.rand(n, 784).astype(np.float32)
    teacher = rng.randn(784, 10).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[np.argmax(images @ teacher + 0.1 * rng.randn(n, 10), 1)]
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1)), tf.float32))
    everything = {x: images, y: labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start = sess.run(cost, everything)
        assert start == pytest.approx(np.log(10), rel=1e-6)  # zero weights: a uniform prediction
        costs = []
        for step in range(50):
            i = (step * 100) % n
            _, c = sess.run([train, cost], {x: images[i:i + 100], y: labels[i:i + 100]})
            costs.append(c)
        end = sess.run(cost, everything)
        acc = sess.run(accuracy, everything)
    assert costs[0] == pytest.approx(np.log(10), rel=1e-6)
    assert end < 0.3 * start, (start, end)
    assert np.mean(costs[-10:]) < 0.75 * np.mean(costs[:10]), costs
    assert acc > 0.6


# ---------------------------------------------------------------- cross-check with TensorFlow


def test_training_matches_tensorflow(tf_peer):
    real_tf = tf_peer
    xv, yv, w0, b0 = _data(n=30, d=6, k=4, seed=5)

    def train(lib):
        x, y, W, b, cost = _softmax_regression(lib.float32, 6, 4, w0, b0, lib)
        global_step = lib.Variable(0, trainable=False)
        step = lib.train.GradientDescentOptimizer(0.2).minimize(cost, global_step=global_step)
        costs = []
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            for i in range(10):
                costs.append(sess.run([step, cost], {x: xv[i:i + 20], y: yv[i:i + 20]})[1])
            return costs + sess.run([W, b, global_step])

    ours = train(tf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with real_tf.Graph().as_default():
            theirs = train(real_tf)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
