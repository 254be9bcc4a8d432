"""tf.losses: values against NumPy formulas, every reduction, the collections, gradients against
finite differences (the per-element formulas) and against TensorFlow where installed."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close, check_grad
from pygrad.losses import _absolute_error, _huber_error, _log_error, _squared_error

RNG = np.random.default_rng(1)
Y = RNG.random((4, 3)).astype(np.float32)
P = RNG.random((4, 3)).astype(np.float32)
LOGITS = (RNG.standard_normal((4, 3)) * 2).astype(np.float32)
W = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)


def np_sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def np_log_softmax(x):
    m = x - x.max(axis=-1, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=-1, keepdims=True))


def np_huber(y, p, delta):
    e = np.abs(p - y)
    return np.where(e <= delta, 0.5 * e * e, delta * (e - 0.5 * delta))


CASES = {
    "mean_squared_error": (lambda w, r: tf.losses.mean_squared_error(Y, P, w, reduction=r), lambda: (P - Y) ** 2),
    "absolute_difference": (lambda w, r: tf.losses.absolute_difference(Y, P, w, reduction=r),
                            lambda: np.abs(P - Y)),
    "huber_loss": (lambda w, r: tf.losses.huber_loss(Y, 3 * P, w, delta=0.7, reduction=r),
                   lambda: np_huber(Y, 3 * P, 0.7)),
    "log_loss": (lambda w, r: tf.losses.log_loss(Y, P, w, reduction=r),
                 lambda: -Y * np.log(P + 1e-7) - (1 - Y) * np.log(1 - P + 1e-7)),
    "hinge_loss": (lambda w, r: tf.losses.hinge_loss(np.round(Y), LOGITS, w, reduction=r),
                   lambda: np.maximum(0, 1 - (2 * np.round(Y) - 1) * LOGITS)),
    "sigmoid_cross_entropy": (
        lambda w, r: tf.losses.sigmoid_cross_entropy(Y, LOGITS, w, label_smoothing=0.2, reduction=r),
        lambda: np_sigmoid_xent(Y * 0.8 + 0.1, LOGITS)),
    "softmax_cross_entropy": (
        lambda w, r: tf.losses.softmax_cross_entropy(Y, LOGITS, w[:, 0], label_smoothing=0.3, reduction=r),
        lambda: -((Y * 0.7 + 0.1) * np_log_softmax(LOGITS)).sum(-1, keepdims=True)),
    "sparse_softmax_cross_entropy": (
        lambda w, r: tf.losses.sparse_softmax_cross_entropy(np.array([[0], [2], [1], [1]]), LOGITS, w, reduction=r),
        lambda: -np_log_softmax(LOGITS)[np.arange(4), [0, 2, 1, 1]][:, None]),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("reduction", tf.losses.Reduction.all()[:5])
def test_values_by_reduction(name, reduction):
    build, per_element = CASES[name]
    losses = per_element().astype(np.float64)
    w = np.broadcast_to(W, losses.shape)
    weighted = losses * w
    want = {
        "none": weighted, "weighted_sum": weighted.sum(), "weighted_mean": weighted.sum() / w.sum(),
        "weighted_sum_over_batch_size": weighted.sum() / losses.size,
        "weighted_sum_by_nonzero_weights": weighted.sum() / np.count_nonzero(w),
    }[reduction]
    if name in ("softmax_cross_entropy", "sparse_softmax_cross_entropy") and reduction == "none":
        want = want[:, 0]
    loss = build(tf.constant(W), reduction)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
    with tf.Session() as sess:
        assert_close(sess.run(loss), want, np.float32)


def test_default_is_sum_by_nonzero_weights_and_zero_weights_give_zero():
    assert tf.losses.mean_squared_error.__defaults__[-1] == tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS
    loss = tf.losses.mean_squared_error(Y, P, weights=0.0)
    mean = tf.losses.mean_squared_error(Y, P, weights=tf.zeros([4, 3]), reduction=tf.losses.Reduction.MEAN)
    with tf.Session() as sess:
        assert sess.run([loss, mean]) == [0.0, 0.0]


def test_collections_and_totals():
    a = tf.losses.absolute_difference(Y, P)
    b = tf.losses.mean_squared_error(Y, P, loss_collection=None)
    c = tf.losses.huber_loss(Y, P, loss_collection="mine")
    tf.losses.add_loss(tf.constant(2.0))
    assert tf.losses.get_losses() == [a, tf.losses.get_losses()[1]] and len(tf.losses.get_losses()) == 2
    assert tf.losses.get_losses(loss_collection="mine") == [c] and b not in tf.losses.get_losses()
    reg = tf.losses.get_regularization_loss()
    with tf.variable_scope("w", regularizer=tf.contrib.layers.l2_regularizer(0.5)):
        v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0]))
    assert len(tf.losses.get_regularization_losses()) == 1
    total = tf.losses.get_total_loss()
    no_reg = tf.losses.get_total_loss(add_regularization_losses=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([total, no_reg, reg, tf.losses.get_regularization_loss(), a, v])
    assert got[2] == 0.0
    assert_close(got[3], np.float32(0.5 * 5 / 2), np.float32)
    assert_close(got[1], np.float32(got[4] + 2.0), np.float32)
    assert_close(got[0], np.float32(got[4] + 2.0 + 1.25), np.float32)


def test_errors():
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        tf.losses.mean_squared_error(Y, P, reduction="mean")
    with pytest.raises(ValueError, match=r"mean_squared_error.*predictions \(4, 2\) and labels \(4, 3\)"):
        tf.losses.mean_squared_error(Y, P[:, :2])
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values.*\(4, 2\).*\(4, 3\)"):
        tf.losses.mean_squared_error(Y, P, np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="labels must not be None"):
        tf.losses.absolute_difference(None, P)
    with pytest.raises(ValueError, match="no losses"):
        tf.losses.get_total_loss()


def test_sigmoid_formula_gradient_including_zero():
    """Finite differences of the stable formula; at x = 0 the gradient is sigmoid(0) - z."""
    x = np.concatenate([RNG.standard_normal(7) * 3, [0.0]])
    z = RNG.random(8)
    check_grad(lambda x, z: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x), [x, z])
    xt = tf.constant(x)
    with tf.Session() as sess:
        gv = sess.run(tf.gradients(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(z), logits=xt), xt)[0])
    assert_close(gv, 1 / (1 + np.exp(-x)) - z, np.float64)


# The per-element formulas behind four losses (pygrad.losses' private helpers: the public functions
# cast to float32, as TF's do, so only the formulas can be differentiated in float64).
ELEMENTWISE = {
    "mean_squared_error": (_squared_error, {}),
    "absolute_difference": (_absolute_error, {}),
    "huber_loss": (_huber_error, {"delta": 0.2}),
    "log_loss": (_log_error, {"epsilon": 1e-7}),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_gradients_of_the_elementwise_losses(name):
    """The formula's gradient (to labels and predictions) in float64 against central differences,
    at gradcheck's fd tolerance; then tf.losses' float32 gradient, through the weights and the SUM
    reduction, against the float64 gradient of sum(weights * formula) at the float32 grad tolerance."""
    formula, kw = ELEMENTWISE[name]
    rng = np.random.default_rng(5)
    y = rng.uniform(0.3, 0.7, (3, 2))
    p = y + rng.choice([-1.0, 1.0], (3, 2)) * rng.uniform(0.05, 0.25, (3, 2))  # in (0, 1): log_loss's domain
    e = np.abs(p - y)
    assert (e < 0.2).any() and (e > 0.2).any() and np.abs(e - 0.2).min() > 1e-3  # both sides of huber's kink
    check_grad(lambda y, p: formula(y, p, **kw), [y, p])

    y32, p32 = y.astype(np.float32), p.astype(np.float32)
    w = W[:3]
    pt = tf.constant(p32)
    loss = getattr(tf.losses, name)(y32, pt, weights=w, reduction=tf.losses.Reduction.SUM, **kw)
    p64 = tf.constant(p32.astype(np.float64))
    want = tf.gradients(tf.reduce_sum(w.astype(np.float64) * formula(y32.astype(np.float64), p64, **kw)), p64)[0]
    with tf.Session() as sess:
        got, want = sess.run([tf.gradients(loss, pt)[0], want])
    assert_close(got, want, np.float32, kind="grad")


def test_against_tensorflow(tf_peer):
    def build(lib):
        w = lib.constant(W)
        p = lib.constant(P)
        x = lib.constant(LOGITS)
        out = [lib.losses.mean_squared_error(Y, p, w), lib.losses.absolute_difference(Y, p, w),
               lib.losses.huber_loss(Y, 3 * p, w, delta=0.7), lib.losses.log_loss(Y, p, w),
               lib.losses.hinge_loss(np.round(Y), x, w),
               lib.losses.sigmoid_cross_entropy(Y, x, w, label_smoothing=0.2),
               lib.losses.softmax_cross_entropy(Y, x, w[:, 0], label_smoothing=0.3),
               lib.losses.sparse_softmax_cross_entropy(np.array([[0], [2], [1], [1]]), x, w),
               lib.losses.mean_squared_error(Y, p, w, reduction=lib.losses.Reduction.MEAN),
               lib.losses.sigmoid_cross_entropy(Y, x, reduction=lib.losses.Reduction.NONE, loss_collection=None)]
        total = lib.losses.get_total_loss()
        return out + [total] + lib.gradients(total, [p, x])

    with tf_peer.Graph().as_default() as g:
        want = tf_peer.Session(graph=g).run(build(tf_peer))
    with tf.Session() as sess:
        got = sess.run(build(tf))
    for i, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, np.float32, kind="forward" if i < len(got) - 2 else "grad", what=f"output {i}")
