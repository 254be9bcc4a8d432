"""Fusion of lowered steps (pygrad/fusion.py): TF1's spelled-out softmax cross-entropy and its
gradient become one softmax_nll step when the run needs none of the intermediates, with results
bitwise those of the unfused steps (NaN and inf included), and against TensorFlow."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import _C, passes
from pygrad.lowering import compile_run
from pygrad.session_store import SessionStore


def tutorial(tf_, dtype, classes, features, scale=1.0, seed=0, rate=0.5):
    """The MNIST tutorial's model (its cost spelled out, SGD), with seeded weights."""
    rng = np.random.RandomState(seed)
    x = tf_.placeholder(dtype, [None, features])
    y = tf_.placeholder(dtype, [None, classes])
    W = tf_.Variable((rng.randn(features, classes) * scale).astype(dtype))
    b = tf_.Variable(rng.randn(classes).astype(dtype))
    pred = tf_.nn.softmax(tf_.matmul(x, W) + b)
    log_pred = tf_.log(pred)
    cost = tf_.reduce_mean(-tf_.reduce_sum(y * log_pred, reduction_indices=1))
    train = tf_.train.GradientDescentOptimizer(rate).minimize(cost)
    return x, y, W, b, pred, log_pred, cost, train


def batches(dtype, rows, classes, features, steps, seed=1):
    rng = np.random.RandomState(seed)
    return [(rng.rand(rows, features).astype(dtype), np.eye(classes, dtype=dtype)[rng.randint(0, classes, rows)])
            for _ in range(steps)]


@pytest.fixture(autouse=True)
def without_elementwise_fusion(monkeypatch):
    """These tests name the steps their pass leaves apart, which the elementwise pass (tested in
    test_fuse_elementwise.py) would merge."""
    monkeypatch.setattr(passes, "fuse_elementwise", lambda program, fetched: None)


def kernels(fetches, feeds, shapes):
    run = compile_run(fetches, feeds, shapes, SessionStore(tf.get_default_graph()))
    return [op.type for op in run.step_ops], run.plan.num_steps


@pytest.mark.parametrize("dtype, rows, classes, scale", [
    (np.float32, 100, 10, 1.0),     # the tutorial's shapes
    (np.float32, 7, 40, 1.0),       # rows of 16 classes and more: the sums' eight accumulators
    (np.float64, 20, 10, 1.0),
    (np.float32, 30, 10, 40.0),     # p underflows to 0: log(p) = -inf and the cost NaN, as in TF
    (np.float32, 1, 1, 1.0),
])
def test_fused_steps_are_bitwise_the_unfused_ones(dtype, rows, classes, scale):
    features = 12
    data = batches(dtype, rows, classes, features, 6)
    results = []
    for fetch_log in (False, True):  # fetching log(pred) keeps the steps unfused
        tf.reset_default_graph()
        x, y, W, b, pred, log_pred, cost, train = tutorial(tf, dtype, classes, features, scale)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            fetches = [train, cost, pred] + ([log_pred] if fetch_log else [])
            costs = [sess.run(fetches, {x: bx, y: by})[1:3] for bx, by in data]
            results.append((costs, sess.run([W, b])))
    (fused_costs, fused_vars), (plain_costs, plain_vars) = results
    for (c1, p1), (c2, p2) in zip(fused_costs, plain_costs):
        np.testing.assert_array_equal(c1, c2)
        np.testing.assert_array_equal(p1, p2)
    for v1, v2 in zip(fused_vars, plain_vars):
        np.testing.assert_array_equal(v1, v2)
    if scale > 1:
        assert np.isnan(fused_costs[0][0])


def test_the_pattern_becomes_one_step():
    x, y, W, b, pred, log_pred, cost, train = tutorial(tf, np.float32, 10, 784)
    shapes = [(100, 784), (100, 10)]
    types, n = kernels([train, cost], (x, y), shapes)
    assert n == 7 and "Softmax" in types and "Log" not in types and "SoftmaxGrad" not in types
    types, n = kernels([cost], (x, y), shapes)  # the forward alone
    assert n == 3 and types == ["MatMul", "Add", "Softmax"]
    types, n = kernels([train, cost, log_pred], (x, y), shapes)  # an intermediate is fetched
    # unfused; the gradient's seed broadcast to [N] and [N, C], of constants alone, folded (fold_constants.py)
    assert "Log" in types and "SoftmaxGrad" in types and "BroadcastLike" not in types and n == 16


def test_other_costs_are_not_fused():
    x = tf.placeholder(tf.float32, [None, 5])
    y = tf.placeholder(tf.float32, [None, 5])
    p = tf.nn.softmax(x)
    shapes = [(4, 5), (4, 5)]
    for cost in (tf.reduce_sum(-tf.reduce_sum(y * tf.log(p), 1)),          # a sum, not a mean
                 tf.reduce_mean(-tf.reduce_sum(y * tf.log(p + 1e-9), 1)),   # log of something else
                 tf.reduce_mean(tf.reduce_sum(y * tf.log(p), 1))):          # no neg
        types, _ = kernels([cost, tf.gradients(cost, x)[0]], (x, y), shapes)
        assert "Log" in types


def test_softmax_nll_kernel_refuses_bad_operands():
    z = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="softmax_nll: z, y and p must be matrices of one shape"):
        _C.call("softmax_nll", [z, np.zeros((2, 4), np.float32)], [np.empty_like(z), np.empty((), np.float32)])
    with pytest.raises(TypeError, match="softmax_nll"):
        _C.call("softmax_nll", [z.astype(np.int32)] * 2, [np.empty((2, 3), np.int32), np.empty((), np.int32)])


def test_against_tensorflow():
    tft = pytest.importorskip("tensorflow").compat.v1
    tft.disable_v2_behavior()
    data = batches(np.float32, 100, 10, 784, 20)
    results = []
    for lib in (tf, tft):
        g = lib.Graph()
        with g.as_default():
            x, y, W, b, pred, log_pred, cost, train = tutorial(lib, np.float32, 10, 784, scale=0.01, rate=0.01)
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                costs = [sess.run([train, cost], {x: bx, y: by})[1] for bx, by in data]
                results.append((costs, sess.run(W), sess.run(b)))
    (mine, w1, b1), (theirs, w2, b2) = results
    np.testing.assert_allclose(mine, theirs, rtol=1e-6)
    np.testing.assert_allclose(w1, w2, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b1, b2, rtol=1e-5, atol=1e-7)
