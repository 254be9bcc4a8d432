"""tf.gradients with TensorFlow 1's semantics: documented examples, stop_gradients, unconnected
gradients, summing of ys and of a tensor's consumers, grad_ys, higher derivatives, broadcasting."""
import warnings

import numpy as np
import pytest

import pygrad as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict=feed_dict)


# ---------------------------------------------------------------- TF's documented examples


def test_documented_stop_gradients_example():
    a = tf.constant(0.)
    b = 2 * a
    g = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
    assert run(g) == [1.0, 1.0]


def test_documented_example_without_stop_gradients():
    a = tf.constant(0.)
    b = 2 * a
    g = tf.gradients(a + b, [a, b])
    assert run(g) == [3.0, 1.0]


def test_stop_gradients_argument_is_the_same_as_stop_gradient_ops():
    a = tf.constant(0.)
    b = 2 * a
    g_arg = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
    a_stopped, b_stopped = tf.stop_gradient(a), tf.stop_gradient(b)
    g_op = tf.gradients(a_stopped + b_stopped, [a_stopped, b_stopped])
    assert run(g_arg) == run(g_op) == [1.0, 1.0]


def test_stop_gradient_blocks_the_flow():
    x = tf.placeholder(tf.float32, [3])
    y = tf.stop_gradient(x * x) + 3.0 * x
    gx, = tf.gradients(y, x)
    np.testing.assert_array_equal(run(gx, {x: [1., 2., 4.]}), [3., 3., 3.])
    # Nothing flows through a stop_gradient alone: x is unconnected.
    assert tf.gradients(tf.stop_gradient(x), x) == [None]


def test_stop_gradients_on_an_intermediate_tensor():
    x = tf.placeholder(tf.float32, [])
    h = x * x
    y = 5.0 * h + x
    # With h stopped, dy/dx only sees the direct path; dy/dh is still reported.
    gx, gh = tf.gradients(y, [x, h], stop_gradients=[h])
    assert run([gx, gh], {x: 3.0}) == [1.0, 5.0]
    gx_full, = tf.gradients(y, x)
    assert run(gx_full, {x: 3.0}) == 31.0


# ---------------------------------------------------------------- unconnected xs


def test_unconnected_gradients_none_by_default_and_by_name():
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.reduce_sum(tf.constant([1., 2.]) * 2.0)
    assert tf.gradients(y, x) == [None]
    assert tf.gradients(y, x, unconnected_gradients="none") == [None]
    assert tf.gradients(y, x, unconnected_gradients=tf.UnconnectedGradients.NONE) == [None]


@pytest.mark.parametrize("mode", ["zero", tf.UnconnectedGradients.ZERO], ids=["string", "enum"])
def test_unconnected_gradients_zero_gives_zeros_of_x_shape(mode):
    x = tf.constant(np.ones((2, 3), np.float32))
    z = tf.Variable(np.ones(4, np.float64))
    w = tf.placeholder(tf.float32, [])
    y = w * 3.0
    gx, gz, gw = tf.gradients(y, [x, z, w], unconnected_gradients=mode)
    assert gx.shape.as_list() == [2, 3] and gx.dtype == tf.float32
    assert gz.shape.as_list() == [4] and gz.dtype == tf.float64
    vx, vz, vw = run([gx, gz, gw], {w: 1.0})
    np.testing.assert_array_equal(vx, np.zeros((2, 3), np.float32))
    assert vx.dtype == np.float32
    np.testing.assert_array_equal(vz, np.zeros(4))
    assert vz.dtype == np.float64
    assert vw == 3.0  # the connected x keeps its real gradient


def test_unconnected_zero_follows_the_fed_shape():
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.placeholder(tf.float32, [])
    gx, = tf.gradients(w * 2.0, x, unconnected_gradients="zero")
    assert gx.shape.as_list() == [None, 3]
    np.testing.assert_array_equal(run(gx, {x: np.ones((4, 3)), w: 1.0}), np.zeros((4, 3)))


def test_unknown_unconnected_gradients_value_is_rejected():
    x = tf.placeholder(tf.float32, [])
    with pytest.raises(ValueError):
        tf.gradients(x * 2.0, x, unconnected_gradients="ones")


# ---------------------------------------------------------------- what is summed


def test_several_ys_are_summed():
    x = tf.placeholder(tf.float32, [3])
    gx, = tf.gradients([2.0 * x, x * x, tf.reduce_sum(tf.exp(x))], x)
    xv = np.array([0.5, -1., 2.], np.float32)
    np.testing.assert_allclose(run(gx, {x: xv}), 2 + 2 * xv + np.exp(xv), rtol=1e-6)


def test_non_scalar_y_is_summed():
    x = tf.placeholder(tf.float32, [2, 3])
    wv = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = tf.constant(wv)
    y = tf.matmul(x, w)  # [2, 4]: the gradient is that of reduce_sum(y)
    gx, gw = tf.gradients(y, [x, w])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    vx, vw = run([gx, gw], {x: xv})
    np.testing.assert_allclose(vx, np.ones((2, 4)) @ wv.T)
    np.testing.assert_allclose(vw, xv.T @ np.ones((2, 4)))
    gs, = tf.gradients(tf.reduce_sum(y), x)
    np.testing.assert_array_equal(run(gs, {x: xv}), vx)


def test_non_scalar_y_with_unknown_batch_is_summed():
    x = tf.placeholder(tf.float32, [None, 2])
    gx, = tf.gradients(x * tf.constant([3., -1.]), x)
    np.testing.assert_array_equal(run(gx, {x: np.zeros((3, 2))}), [[3., -1.]] * 3)


def test_tensor_used_twice_gets_summed_gradients():
    x = tf.placeholder(tf.float32, [3])
    y = x * x + x  # x reaches y three times
    gx, = tf.gradients(y, x)
    xv = np.array([1., 2., -3.], np.float32)
    np.testing.assert_array_equal(run(gx, {x: xv}), 2 * xv + 1)
    h = tf.exp(x)
    g2, = tf.gradients(h * h, x)  # an intermediate used twice
    np.testing.assert_allclose(run(g2, {x: xv}), 2 * np.exp(2 * xv), rtol=1e-6)


# ---------------------------------------------------------------- grad_ys


def test_grad_ys_chain_rule_example():
    w = tf.Variable(3.0)
    g = w - 10
    f = g ** 2
    dfdg = tf.gradients(f, g)[0]
    via_grad_ys = tf.gradients(g, w, grad_ys=dfdg)[0]
    direct = tf.gradients(f, w)[0]
    a, b = run([via_grad_ys, direct])
    assert a == b == 2 * (3.0 - 10)


def test_explicit_grad_ys_weight_a_non_scalar_y():
    x = tf.placeholder(tf.float32, [3])
    y = x * x
    gx, = tf.gradients(y, x, grad_ys=np.array([1., 10., 100.], np.float32))
    np.testing.assert_array_equal(run(gx, {x: [1., 2., 3.]}), [2., 40., 600.])
    gy = tf.placeholder(tf.float32, [3])
    gx2, = tf.gradients(y, x, grad_ys=gy)
    np.testing.assert_array_equal(run(gx2, {x: [1., 2., 3.], gy: [0., 1., -1.]}), [0., 4., -6.])


def test_grad_ys_one_per_y():
    x = tf.placeholder(tf.float32, [])
    gx, = tf.gradients([x * 2.0, x * 3.0], x, grad_ys=[10.0, 100.0])
    assert run(gx, {x: 1.0}) == 320.0
    with pytest.raises(ValueError):
        tf.gradients([x * 2.0, x * 3.0], x, grad_ys=[1.0])


# ---------------------------------------------------------------- special xs


def test_gradient_with_respect_to_a_tensor_also_in_ys():
    p = tf.placeholder(tf.float32, [2])
    q = p * 3.0
    gp, gq = tf.gradients([q, p], [p, q])
    vp, vq = run([gp, gq], {p: [1., 2.]})
    np.testing.assert_array_equal(vp, [4., 4.])  # through q (3) and directly (1)
    np.testing.assert_array_equal(vq, [1., 1.])
    gself, = tf.gradients(p, p)
    np.testing.assert_array_equal(run(gself, {p: [5., 6.]}), [1., 1.])


def test_gradients_of_gradients():
    x = tf.placeholder(tf.float32, [3])
    y = x ** 3
    d1, = tf.gradients(y, x)
    d2, = tf.gradients(d1, x)
    xv = np.array([2., -1., 0.5], np.float32)
    v1, v2 = run([d1, d2], {x: xv})
    np.testing.assert_allclose(v1, 3 * xv ** 2, rtol=1e-6)
    np.testing.assert_allclose(v2, 6 * xv, rtol=1e-6)


def test_second_derivative_of_a_scalar_cube():
    x = tf.placeholder(tf.float32, [])
    d2 = tf.gradients(tf.gradients(x ** 3, x)[0], x)[0]
    for xv in (2.0, -3.0):
        assert run(d2, {x: xv}) == pytest.approx(6 * xv)


def test_gradients_through_a_variable():
    Wv = np.array([[1., -2.], [3., 0.5]], np.float32)
    W = tf.Variable(Wv)
    x = tf.placeholder(tf.float32, [None, 2])
    loss = tf.reduce_sum(tf.square(tf.matmul(x, W)))
    gW, = tf.gradients(loss, W)
    assert gW.shape.as_list() == [2, 2]
    xv = np.array([[1., 2.], [0., -1.], [3., 1.]], np.float32)
    np.testing.assert_allclose(run(gW, {x: xv}), xv.T @ (2 * xv @ Wv), rtol=1e-6)


def test_gradients_through_a_variable_that_is_also_read_through_identity():
    v = tf.Variable(2.0)
    y = v * tf.identity(v)  # d(v^2)/dv
    assert run(tf.gradients(y, v)[0]) == 4.0


def test_integer_paths_give_none():
    i = tf.placeholder(tf.int32, [2])
    x = tf.placeholder(tf.float32, [2])
    y = tf.reduce_sum(tf.cast(i * 2, tf.float32) * x)
    gi, gx = tf.gradients(y, [i, x])
    assert gi is None
    np.testing.assert_array_equal(run(gx, {i: [1, 2], x: [0., 0.]}), [2., 4.])


def test_integer_xs_with_unconnected_zero_give_zeros():
    i = tf.placeholder(tf.int32, [2])
    gi, = tf.gradients(tf.cast(i, tf.float32) * 2.0, i, unconnected_gradients="zero")
    vi = run(gi, {i: [3, 4]})
    np.testing.assert_array_equal(vi, [0, 0])
    assert vi.dtype == np.int32


# ---------------------------------------------------------------- broadcasting


def test_broadcast_gradients_have_the_input_shape_for_any_batch():
    A = tf.placeholder(tf.float32, [None, 10])
    B = tf.placeholder(tf.float32, [10])
    loss = tf.reduce_sum(tf.square(A + B))
    gA, gB = tf.gradients(loss, [A, B])
    assert gA.shape.as_list() == [None, 10]
    assert gB.shape.as_list() == [10]
    rng = np.random.RandomState(0)
    with tf.Session() as sess:
        for n in (3, 5, 1):
            av = rng.randn(n, 10).astype(np.float32)
            bv = rng.randn(10).astype(np.float32)
            va, vb = sess.run([gA, gB], {A: av, B: bv})
            assert va.shape == (n, 10) and vb.shape == (10,)
            np.testing.assert_allclose(va, 2 * (av + bv), rtol=1e-5)
            np.testing.assert_allclose(vb, (2 * (av + bv)).sum(0), rtol=1e-5)


def test_broadcast_gradients_of_plain_add_count_the_batch():
    A = tf.placeholder(tf.float32, [None, 10])
    B = tf.placeholder(tf.float32, [10])
    gA, gB = tf.gradients(A + B, [A, B])
    with tf.Session() as sess:
        for n in (3, 5):
            va, vb = sess.run([gA, gB], {A: np.zeros((n, 10)), B: np.zeros(10)})
            np.testing.assert_array_equal(va, np.ones((n, 10)))
            np.testing.assert_array_equal(vb, np.full(10, n))


@pytest.mark.parametrize("shape_a,shape_b", [([3, 1], [1, 4]), ([2, 3], []), ([4], [2, 1, 4]), ([2, 1, 3], [5, 1])])
def test_two_sided_broadcast_gradients(shape_a, shape_b):
    rng = np.random.RandomState(1)
    av = np.asarray(rng.randn(*shape_a), np.float32)
    bv = np.asarray(rng.randn(*shape_b), np.float32)
    a = tf.placeholder(tf.float32, shape_a)
    b = tf.placeholder(tf.float32, shape_b)
    ga, gb = tf.gradients(a * b, [a, b])
    assert ga.shape.as_list() == shape_a and gb.shape.as_list() == shape_b
    va, vb = run([ga, gb], {a: av, b: bv})
    out_shape = np.broadcast_shapes(av.shape, bv.shape)
    want_a = _sum_to(np.broadcast_to(bv, out_shape), av.shape)
    want_b = _sum_to(np.broadcast_to(av, out_shape), bv.shape)
    assert va.shape == av.shape and vb.shape == bv.shape
    np.testing.assert_allclose(va, want_a, rtol=1e-5)
    np.testing.assert_allclose(vb, want_b, rtol=1e-5)


def _sum_to(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def test_xs_that_depend_on_each_other():
    x = tf.placeholder(tf.float32, [])
    h = x * x
    y = 5.0 * h + x
    gx, gh, gx_again = tf.gradients(y, [x, h, x])
    assert run([gx, gh, gx_again], {x: 3.0}) == [31.0, 5.0, 31.0]
    g2, = tf.gradients([x, x, h], x)  # a y listed twice counts twice
    assert run(g2, {x: 3.0}) == 8.0


def test_gradients_of_a_graph_that_is_not_the_default():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [2])
        b = a * a
        c = tf.constant(1.0)
    ga, gc = tf.gradients(b, [a, c], unconnected_gradients="zero")  # built in b's graph, as TF
    assert ga.graph is g and gc.graph is g
    assert tf.get_default_graph().get_operations() == []
    with tf.Session(graph=g) as sess:
        va, vc = sess.run([ga, gc], {a: [1., 2.]})
    np.testing.assert_array_equal(va, [2., 4.])
    assert vc == 0.0


# ---------------------------------------------------------------- names


def _new_ops(before):
    return [op.name for op in tf.get_default_graph().get_operations()[before:]]


def test_gradient_ops_live_under_a_gradients_name_scope():
    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(tf.exp(x) * x)
    n = len(tf.get_default_graph().get_operations())
    tf.gradients(y, x)
    first = _new_ops(n)
    assert first and all(name.startswith("gradients/") for name in first), first
    n = len(tf.get_default_graph().get_operations())
    tf.gradients(y, x)
    second = _new_ops(n)
    assert second and all(name.startswith("gradients_1/") for name in second), second
    with tf.name_scope("outer"):
        n = len(tf.get_default_graph().get_operations())
        tf.gradients(y, x)
    nested = _new_ops(n)
    assert nested and all(name.startswith("outer/gradients/") for name in nested), nested


def test_custom_gradients_name():
    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(x * x)
    n = len(tf.get_default_graph().get_operations())
    tf.gradients(y, x, name="my_grads")
    names = _new_ops(n)
    assert names and all(name.startswith("my_grads/") for name in names), names


# ---------------------------------------------------------------- cross-check with TensorFlow


def _softmax_regression_grads(lib, xv, yv, Wv, bv):
    x = lib.placeholder(lib.float32, [None, xv.shape[1]])
    y = lib.placeholder(lib.float32, [None, yv.shape[1]])
    W = lib.Variable(Wv)
    b = lib.Variable(bv)
    h = lib.tanh(lib.matmul(x, W) + b)
    pred = lib.nn.softmax(h * 2.0 - b)
    cost = lib.reduce_mean(-lib.reduce_sum(y * lib.log(pred), reduction_indices=1)) + lib.reduce_sum(W * W) * 0.1
    grads = lib.gradients(cost, [W, b, x])
    hess = lib.gradients(lib.reduce_sum(grads[1] * grads[1]), b)
    with lib.Session() as sess:
        sess.run(lib.global_variables_initializer())
        return sess.run(grads + hess, {x: xv, y: yv})


def test_gradients_match_tensorflow(tf_peer):
    real_tf = tf_peer
    rng = np.random.RandomState(3)
    xv = rng.randn(5, 4).astype(np.float32)
    yv = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 5)]
    Wv = rng.randn(4, 3).astype(np.float32)
    bv = rng.randn(3).astype(np.float32)
    ours = _softmax_regression_grads(tf, xv, yv, Wv, bv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with real_tf.Graph().as_default():
            theirs = _softmax_regression_grads(real_tf, xv, yv, Wv, bv)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=3e-5, atol=3e-6)
