"""tf.train.ExponentialMovingAverage against NumPy: shadow -= (1 - decay) * (shadow - var) per
apply, with decay = min(decay, (1 + n) / (10 + n)) when num_updates is given; the shadow variables'
names and initial values, average / average_name, variables_to_restore, and the training pattern
(the average updated after each optimizer step).

As in TF1 the decay is a float32 tensor (the num_updates formula is computed in float32) that each
update casts to the variable's dtype; the references round the same way (f32 below)."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close

FLOATS = ("float32", "float64")


def f32(value):
    return float(np.float32(value))


def np_decay(decay, num_updates=None):
    """TF1's decay as the graph computes it: float32, min(decay, (1 + n) / (10 + n))."""
    d = np.float32(decay)
    if num_updates is not None:
        n = np.float32(num_updates)
        d = min(d, (np.float32(1.0) + n) / (np.float32(10.0) + n))
    return float(d)


def np_ema_step(shadow, value, decay):
    """shadow - (shadow - value) * (1 - decay), with 1 - decay taken in float32 as TF1's
    assign_moving_average does (then cast to the variable's dtype)."""
    return shadow - (shadow - value) * float(np.float32(1.0) - np.float32(decay))


def _values(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 2)).astype(dtype), rng.standard_normal(4).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_average_follows_numpy_over_steps(dtype):
    """The variables are set to new values between the updates; the shadows follow the formula."""
    w0, b0 = _values(dtype)
    W = tf.Variable(w0, name="W")
    b = tf.Variable(b0, name="b")
    new_w = tf.placeholder(tf.as_dtype(dtype), w0.shape)
    new_b = tf.placeholder(tf.as_dtype(dtype), b0.shape)
    set_vars = tf.group(W.assign(new_w), b.assign(new_b))
    ema = tf.train.ExponentialMovingAverage(0.7)
    update = ema.apply([W, b])
    rng = np.random.default_rng(1)
    shadows = [w0.astype(np.float64), b0.astype(np.float64)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 7):
            values = [rng.standard_normal(w0.shape).astype(dtype), rng.standard_normal(b0.shape).astype(dtype)]
            sess.run(set_vars, {new_w: values[0], new_b: values[1]})
            assert sess.run(update) is None
            shadows = [np_ema_step(s, v.astype(np.float64), f32(0.7)) for s, v in zip(shadows, values)]
            got = sess.run([ema.average(W), ema.average(b)])
            for name, g, s in zip("Wb", got, shadows):
                assert_close(g, s, dtype=dtype, what=f"average of {name} after step {step}")
            np.testing.assert_array_equal(sess.run(W), values[0])  # apply does not touch the variables


@pytest.mark.parametrize("dtype", FLOATS)
def test_num_updates_caps_the_decay(dtype):
    """With num_updates = the global step, the decay is (1 + n) / (10 + n) while that is below
    decay (n < 80 for 0.9), so the average tracks the variable closely at first."""
    w0, _ = _values(dtype, seed=2)
    W = tf.Variable(w0, name="W")
    new_w = tf.placeholder(tf.as_dtype(dtype), w0.shape)
    step = tf.Variable(0, trainable=False, name="global_step")
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    update = ema.apply([W])
    rng = np.random.default_rng(3)
    shadow = w0.astype(np.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for n in [0, 1, 2, 5, 40, 79, 80, 81, 500]:
            step.load(n, sess)
            value = rng.standard_normal(w0.shape).astype(dtype)
            sess.run(W.assign(new_w), {new_w: value})
            sess.run(update)
            decay = np_decay(0.9, n)
            assert decay == (f32(0.9) if n >= 80 else float(np.float32(1 + n) / np.float32(10 + n)))
            shadow = np_ema_step(shadow, value.astype(np.float64), decay)
            assert_close(sess.run(ema.average(W)), shadow, dtype=dtype, what=f"average at num_updates={n}")


def test_num_updates_as_python_int():
    W = tf.Variable(np.array([0.0, 10.0]), name="W")
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=3)  # decay min(0.9, 4/13)
    update = ema.apply([W])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(W.assign([1.0, 20.0]))
        sess.run(update)
        d = np_decay(0.9, 3)
        assert d == float(np.float32(4) / np.float32(13))
        np.testing.assert_allclose(sess.run(ema.average(W)), np_ema_step(np.array([0.0, 10.0]), [1.0, 20.0], d),
                                   rtol=1e-15)


@pytest.mark.parametrize("dtype", FLOATS)
def test_average_after_each_training_step(dtype):
    """TF1's pattern: with control_dependencies([train]): ema.apply(...); the average uses the
    variable's value after the step."""
    rng = np.random.default_rng(4)
    xv, yv = rng.standard_normal((5, 3)).astype(dtype), rng.standard_normal((5, 1)).astype(dtype)
    w0 = rng.standard_normal((3, 1)).astype(dtype)
    W = tf.Variable(w0, name="W")
    loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(xv), W) - yv)) / 2.0
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    ema = tf.train.ExponentialMovingAverage(0.5)
    with tf.control_dependencies([train]):
        train_and_average = ema.apply([W])
    w, shadow = w0.astype(np.float64), w0.astype(np.float64)
    x64, y64 = xv.astype(np.float64), yv.astype(np.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 6):
            sess.run(train_and_average)
            w = w - f32(0.05) * x64.T @ (x64 @ w - y64)
            shadow = np_ema_step(shadow, w, f32(0.5))
            got_w, got_avg = sess.run([W, ema.average(W)])
            assert_close(got_w, w, dtype=dtype, what=f"W after step {step}")
            assert_close(got_avg, shadow, dtype=dtype, what=f"average after step {step}")
        assert not np.allclose(got_avg, got_w)


# ---------------------------------------------------------------- shadow variables


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zero_debias_divides_a_tensors_average_by_one_minus_decay_to_the_t(dtype):
    """A tensor's average starts at zero; with zero_debias it reads biased / (1 - decay^t), so the
    first update gives the value itself. A variable's average is not debiased (it starts at the
    variable's value), as in TF."""
    x = tf.placeholder(dtype, [3])
    w = tf.Variable(np.array([1.0, 2.0], dtype))
    t = x * 2.0
    ema = tf.train.ExponentialMovingAverage(0.9, zero_debias=True)
    update = ema.apply([t, w])
    assert sorted(v.op.name for v in tf.global_variables() if v is not w) == [
        "Variable/ExponentialMovingAverage", "mul/ExponentialMovingAverage", "mul/ExponentialMovingAverage/biased",
        "mul/ExponentialMovingAverage/local_step"]
    biased = np.zeros(3)
    omd = float(np.float32(1) - np.float32(0.9))  # 1 - decay is computed in float32, as TF
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 5):
            value = np.array([1.0, -2.0, 3.0]) * 2 * step
            sess.run(update, {x: value / 2})
            biased -= (biased - value) * omd
            assert_close(sess.run(ema.average(t)), (biased / (1 - (1 - omd) ** step)).astype(dtype), dtype=dtype)
            assert_close(sess.run(ema.average(w)), np.array([1.0, 2.0], dtype))


def test_shadow_names_and_properties():
    W = tf.Variable(np.ones((2, 2), np.float32), name="W")
    with tf.variable_scope("layer"):
        v = tf.get_variable("v", [3])
    ema = tf.train.ExponentialMovingAverage(0.9)
    assert ema.name == "ExponentialMovingAverage"
    assert ema.average(W) is None  # not applied yet
    ema.apply([W, v])
    assert ema.average_name(W) == "W/ExponentialMovingAverage"
    assert ema.average_name(v) == "layer/v/ExponentialMovingAverage"
    assert ema.average(W).name == "W/ExponentialMovingAverage:0"
    assert ema.average(v).name == "layer/v/ExponentialMovingAverage:0"
    for shadow, var in ((ema.average(W), W), (ema.average(v), v)):
        assert not shadow.trainable
        assert shadow in tf.global_variables() and shadow not in tf.trainable_variables()
        assert shadow.dtype == var.dtype and shadow.shape.as_list() == var.shape.as_list()
    assert tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES) == [W, v]
    other = tf.train.ExponentialMovingAverage(0.5, name="avg")
    assert other.average_name(W) == "W/avg"
    other.apply([W])
    assert other.average(W).name == "W/avg:0" and other.average(W) is not ema.average(W)


def test_applying_twice_to_a_variable_is_a_value_error():
    W = tf.Variable(1.0, name="W")
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([W])
    with pytest.raises(ValueError, match="Moving average already computed for: W:0"):
        ema.apply([W])


def test_integer_variable_is_a_type_error():
    n = tf.Variable(3, name="n")
    with pytest.raises(TypeError, match="float or double"):
        tf.train.ExponentialMovingAverage(0.9).apply([n])


def test_apply_defaults_to_the_trainable_variables():
    W = tf.Variable(1.0, name="W")
    b = tf.Variable(2.0, name="b")
    tf.Variable(3.0, trainable=False, name="frozen")
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply()
    assert ema.average(W) is not None and ema.average(b) is not None
    assert sorted(v.name for v in tf.global_variables() if "ExponentialMovingAverage" in v.name) == [
        "W/ExponentialMovingAverage:0", "b/ExponentialMovingAverage:0"]


def test_shadow_starts_at_the_variables_initial_value():
    """Random and constant initial values: right after global_variables_initializer the shadow
    equals the variable (the same random draw, not a second one)."""
    tf.set_random_seed(5)
    W = tf.Variable(tf.truncated_normal([20, 10]), name="W")
    b = tf.Variable(np.arange(4.0), name="b")
    with tf.variable_scope("s"):
        v = tf.get_variable("v", [6, 3])  # glorot_uniform
    ema = tf.train.ExponentialMovingAverage(0.9)
    update = ema.apply([W, b, v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for var in (W, b, v):
            np.testing.assert_array_equal(sess.run(ema.average(var)), sess.run(var), err_msg=var.name)
        np.testing.assert_array_equal(sess.run(ema.average(b)), np.arange(4.0))
        w_before = sess.run(W)
        sess.run(update)  # the variables have not moved: the averages stay
        np.testing.assert_array_equal(sess.run(ema.average(W)), w_before)


def test_initializing_only_the_shadow_leaves_the_variable_alone():
    """After training, initializing just the new shadow variables (the "initialize what is not
    initialized yet" pattern) must not re-run the variable's initializer."""
    W = tf.Variable(1.0, name="W")
    step = W.assign_add(5.0)
    ema = tf.train.ExponentialMovingAverage(0.9)
    update = ema.apply([W])
    with tf.Session() as sess:
        sess.run(W.initializer)
        sess.run(step)
        sess.run(tf.variables_initializer([ema.average(W)]))
        assert sess.run(W) == 6.0
        sess.run(update)
        assert sess.run(W) == 6.0


# ---------------------------------------------------------------- variables_to_restore


def test_variables_to_restore():
    """TF's docstring example: averaged variables under their average's name, the other global
    variables (global_step) under their own; the shadows and the averaged variables' own names do
    not appear. A trainable variable that was not averaged still maps from its average's name."""
    W = tf.Variable(1.0, name="W")
    with tf.variable_scope("conv"):
        gamma = tf.get_variable("gamma", [2])
    b = tf.Variable(2.0, name="b")  # trainable, not averaged
    global_step = tf.Variable(0, trainable=False, name="global_step")
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([W, gamma])
    assert ema.variables_to_restore() == {
        "W/ExponentialMovingAverage": W, "conv/gamma/ExponentialMovingAverage": gamma,
        "b/ExponentialMovingAverage": b, "global_step": global_step}
    assert ema.variables_to_restore([W]) == {
        "W/ExponentialMovingAverage": W, "conv/gamma": gamma, "b": b, "global_step": global_step,
        "conv/gamma/ExponentialMovingAverage": ema.average(gamma)}


def test_matches_tensorflow(tf_peer):
    """Optional: the same averages with num_updates, and the same variables_to_restore keys."""
    def run(lib):
        with lib.Graph().as_default():
            W = lib.Variable(np.array([1.0, -2.0, 3.0]), name="W")
            lib.Variable(np.array([0.5]), name="b")
            step = lib.Variable(0, trainable=False, name="global_step")
            ema = lib.train.ExponentialMovingAverage(0.95, num_updates=step)
            update = ema.apply([W])
            out = []
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                for n in range(1, 6):
                    sess.run([W.assign(W * 1.5 + 0.25), step.assign(n * 7)])
                    sess.run(update)
                    out.append(sess.run(ema.average(W)))
            return out, {k: v.name for k, v in ema.variables_to_restore().items()}

    tf.reset_default_graph()
    ours, theirs = run(tf), run(tf_peer)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert ours[1] == theirs[1]
