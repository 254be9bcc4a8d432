"""tf.nn ops: softmax, log_softmax, the softmax cross-entropies (dense v1/v2 and sparse), l2_loss and
bias_add. Table-driven forward and gradient tests; the fused xent backprop against
softmax - labels; TensorFlow's label-gradient rules; hand-computed cases and bad input."""
import os
import zlib
from typing import Callable, NamedTuple

import numpy as np
import pytest

import pygrad as tf
import reference as ref
from gradcheck import (as_float64, assert_close, check_grad, check_grad_float32, draw, evaluate,
                       run_forward, shape_id)

FLOATS = ("float64", "float32")


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _distributions(shape, rng):
    """Rows that are probability distributions (TF's precondition for the dense xent's backprop)."""
    return ref.softmax(rng.standard_normal(shape) * 2.0)


def _logits(shape, dtype, rng):
    return (rng.standard_normal(shape) * 2.0).astype(dtype)


# ---------------------------------------------------------------- the table

def _xent_v1(logits, labels):
    return tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def _xent_v2(logits, labels):
    return tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)


def _sparse_xent(logits, labels):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


class NN(NamedTuple):
    name: str
    fn: Callable
    shapes: tuple  # logits (or value) shape first
    inputs: Callable  # (shapes, dtype, rng) -> list of arrays
    ref: Callable  # NumPy reference of the same inputs
    wrt: tuple  # inputs checked by finite differences


def _logits_only(shapes, dtype, rng):
    return [_logits(shapes[0], dtype, rng)]


def _logits_and_distributions(shapes, dtype, rng):
    return [_logits(shapes[0], dtype, rng), _distributions(shapes[0], rng).astype(dtype)]


def _logits_and_classes(label_dtype):
    def make(shapes, dtype, rng):
        logits = _logits(shapes[0], dtype, rng)
        return [logits, rng.integers(0, shapes[0][-1], size=shapes[0][:-1]).astype(label_dtype)]

    return make


def _sparse_ref(logits, labels):
    return ref.sparse_softmax_xent(labels, logits)[0]


def _value_and_bias(shapes, dtype, rng):
    return [draw("real", shapes[0], dtype, rng), draw("real", shapes[1], dtype, rng)]


NN_OPS = []
for _shape, _axis in [((4, 7), -1), ((4, 7), 0), ((4, 7), 1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
                      ((5,), 0)]:
    NN_OPS.append(NN(f"softmax-axis={_axis}", lambda x, a=_axis: tf.nn.softmax(x, axis=a), (_shape,), _logits_only,
                     lambda x, a=_axis: ref.softmax(x, a), (0,)))
    NN_OPS.append(NN(f"log_softmax-axis={_axis}", lambda x, a=_axis: tf.nn.log_softmax(x, axis=a), (_shape,),
                     _logits_only, lambda x, a=_axis: ref.log_softmax(x, a), (0,)))
NN_OPS += [
    NN("softmax-dim=0", lambda x: tf.nn.softmax(x, dim=0), ((3, 5),), _logits_only, lambda x: ref.softmax(x, 0), (0,)),
    NN("log_softmax-dim=0", lambda x: tf.nn.log_softmax(x, dim=0), ((3, 5),), _logits_only,
       lambda x: ref.log_softmax(x, 0), (0,)),
    NN("xent_v1", _xent_v1, ((4, 7),), _logits_and_distributions, lambda x, y: ref.softmax_xent(y, x)[0], (0,)),
    NN("xent_v2", _xent_v2, ((4, 7),), _logits_and_distributions, lambda x, y: ref.softmax_xent(y, x)[0], (0, 1)),
    NN("xent_v2", _xent_v2, ((2, 3, 5),), _logits_and_distributions, lambda x, y: ref.softmax_xent(y, x)[0], (0, 1)),
    NN("xent_v2", _xent_v2, ((6,),), _logits_and_distributions, lambda x, y: ref.softmax_xent(y, x)[0], (0, 1)),
    NN("sparse_xent-int32", _sparse_xent, ((4, 7),), _logits_and_classes(np.int32), _sparse_ref, (0,)),
    NN("sparse_xent-int64", _sparse_xent, ((4, 7),), _logits_and_classes(np.int64), _sparse_ref, (0,)),
    NN("sparse_xent-int32", _sparse_xent, ((2, 3, 5),), _logits_and_classes(np.int32), _sparse_ref, (0,)),
    NN("l2_loss", tf.nn.l2_loss, ((3, 4),), _logits_only, ref.l2_loss, (0,)),
    NN("bias_add", tf.nn.bias_add, ((4, 3), (3,)), _value_and_bias, ref.bias_add, (0, 1)),
    NN("bias_add", tf.nn.bias_add, ((2, 3, 4), (4,)), _value_and_bias, ref.bias_add, (0, 1)),
    NN("bias_add-NCHW", lambda v, b: tf.nn.bias_add(v, b, data_format="NCHW"), ((2, 3, 2, 2), (3,)), _value_and_bias,
       lambda v, b: v + b[:, None, None], (0, 1)),
    NN("relu", tf.nn.relu, ((3, 4),), lambda s, d, r: [draw("real", s[0], d, r)], ref.relu, (0,)),
    NN("sigmoid", tf.nn.sigmoid, ((3, 4),), lambda s, d, r: [draw("wide", s[0], d, r)], ref.sigmoid, (0,)),
    NN("tanh", tf.nn.tanh, ((3, 4),), lambda s, d, r: [draw("wide", s[0], d, r)], lambda x: np.tanh(x), (0,)),
]


def _id(spec, dtype):
    return f"{spec.name}-{shape_id(spec.shapes[0])}-{dtype}"


def _inputs(spec, dtype):
    return spec.inputs(spec.shapes, np.dtype(dtype), _rng(spec.name, spec.shapes, dtype))


@pytest.mark.parametrize("spec,dtype", [pytest.param(s, d, id=_id(s, d)) for s in NN_OPS for d in FLOATS])
def test_forward(spec, dtype):
    inputs = _inputs(spec, dtype)
    assert_close(run_forward(spec.fn, inputs), spec.ref(*as_float64(inputs)), dtype=dtype, what=spec.name)


@pytest.mark.parametrize("spec", [pytest.param(s, id=_id(s, "float64")) for s in NN_OPS])
def test_grad(spec):
    check_grad(spec.fn, _inputs(spec, "float64"), wrt=spec.wrt)


@pytest.mark.parametrize("static", [pytest.param(False, id="dims"), pytest.param(None, id="rank")])
@pytest.mark.parametrize("spec", [pytest.param(s, id=_id(s, "float64")) for s in NN_OPS])
def test_grad_dynamic_shapes(spec, static):
    """Unknown placeholder dims (or ranks): shapes are only known when the plan is built."""
    if len(spec.shapes[0]) != 2 and spec.name.startswith(("xent", "sparse")):
        pytest.skip("cross-entropies of rank != 2 need the inner dimensions known statically (documented)")
    if static is None and spec.name == "bias_add-NCHW":
        pytest.skip("bias_add with NCHW needs value's rank (documented)")
    check_grad(spec.fn, _inputs(spec, "float64"), wrt=spec.wrt, static=static)


@pytest.mark.parametrize("spec", [pytest.param(s, id=_id(s, "float32")) for s in NN_OPS])
def test_grad_float32(spec):
    check_grad_float32(spec.fn, _inputs(spec, "float64"), wrt=spec.wrt)


SECOND_ORDER = ["softmax-axis=-1", "softmax-axis=1", "log_softmax-axis=-1", "log_softmax-axis=0", "xent_v2",
                "sparse_xent-int64", "sigmoid", "tanh", "relu"]


@pytest.mark.parametrize("spec", [pytest.param(s, id=_id(s, "float64")) for s in NN_OPS if s.name in SECOND_ORDER])
def test_second_derivative(spec):
    check_grad(spec.fn, _inputs(spec, "float64"), wrt=spec.wrt, order=2)


def test_grad_projection():
    """Inputs above the elementwise limit go through the random-projection check."""
    rng = _rng("projection")
    logits, labels = _logits((30, 10), np.float64, rng), _distributions((30, 10), rng)
    check_grad(lambda x, y: tf.reduce_sum(tf.nn.log_softmax(x, axis=0)) * _xent_v2(x, y), [logits, labels])


# ---------------------------------------------------------------- the fused cross-entropy kernels


@pytest.mark.parametrize("dtype", FLOATS)
def test_xent_backprop_is_softmax_minus_labels(dtype):
    rng = _rng("backprop", dtype)
    logits, labels = _logits((5, 6), dtype, rng), _distributions((5, 6), rng).astype(dtype)
    classes = rng.integers(0, 6, size=5).astype(np.int32)

    def fn(x, y, c):
        dense = _xent_v2(x, y)
        sparse = _sparse_xent(x, c)
        return [dense, dense.op.outputs[1], sparse, sparse.op.outputs[1]]

    loss, backprop, sloss, sbackprop = run_forward(fn, [logits, labels, classes])
    exp_loss, exp_backprop = ref.softmax_xent(labels, logits)
    assert_close(loss, exp_loss, dtype=dtype)
    assert_close(backprop, ref.softmax(logits) - labels, dtype=dtype)
    assert_close(backprop, exp_backprop, dtype=dtype)
    exp_sloss, exp_sbackprop = ref.sparse_softmax_xent(classes, logits)
    assert_close(sloss, exp_sloss, dtype=dtype)
    assert_close(sbackprop, ref.softmax(logits) - ref.one_hot(classes, 6), dtype=dtype)
    # The gradient of the loss is the kernel's backprop scaled by dloss.
    dloss = np.arange(1.0, 6.0)
    _, (g,) = evaluate(lambda x, y: _xent_v2(x, y), [logits.astype(np.float64), labels.astype(np.float64)], wrt=[0],
                       grad_ys=dloss)
    assert_close(g, (ref.softmax(logits) - labels) * dloss[:, None])


def test_xent_label_gradients_v1_none_v2_minus_log_softmax():
    rng = _rng("labels")
    logits, labels = _logits((3, 4), np.float64, rng), _distributions((3, 4), rng)
    dloss = np.array([1.0, -2.0, 0.5])
    _, (g_logits, g_labels) = evaluate(_xent_v1, [logits, labels], grad_ys=dloss)
    assert g_labels is None
    assert_close(g_logits, (ref.softmax(logits) - labels) * dloss[:, None])
    _, (g_logits2, g_labels) = evaluate(_xent_v2, [logits, labels], grad_ys=dloss)
    assert_close(g_logits2, g_logits)
    assert_close(g_labels, -ref.log_softmax(logits) * dloss[:, None])
    _, (g_labels,) = evaluate(lambda x, y: _sparse_xent(x, y),
                              [logits, np.array([0, 3, 1], np.int32)], wrt=[1])
    assert g_labels is None


def test_xent_hand_computed():
    """Two equal logits: softmax = 1/2 each, loss = log 2, backprop = [1/2 - 1, 1/2]."""
    logits = np.array([[0.0, 0.0], [np.log(3.0), 0.0]])
    labels = np.array([[1.0, 0.0], [0.0, 1.0]])
    loss, (g,) = evaluate(_xent_v2, [logits, labels], wrt=[0])
    assert_close(loss, [np.log(2.0), np.log(4.0)])
    assert_close(g, [[-0.5, 0.5], [0.75, -0.75]])
    loss, (g,) = evaluate(_sparse_xent, [logits, np.array([0, 1], np.int64)])
    assert_close(loss, [np.log(2.0), np.log(4.0)])
    assert_close(g, [[-0.5, 0.5], [0.75, -0.75]])


def test_softmax_hand_computed_and_stable():
    out = run_forward(lambda x: [tf.nn.softmax(x), tf.nn.log_softmax(x)],
                      [np.array([[0.0, np.log(3.0)], [1000.0, 1000.0], [1000.0, 0.0]])])
    assert_close(out[0], [[0.25, 0.75], [0.5, 0.5], [1.0, np.exp(-1000.0)]])
    assert_close(out[1], [[np.log(0.25), np.log(0.75)], [-np.log(2.0), -np.log(2.0)], [0.0, -1000.0]])
    # d softmax_0 / d x at equal logits: y0 (1 - y0) = 1/4 and -y0 y1 = -1/4
    _, (g,) = evaluate(tf.nn.softmax, [np.array([0.0, 0.0])], grad_ys=np.array([1.0, 0.0]))
    assert_close(g, [0.25, -0.25])
    loss = run_forward(lambda x, y: _xent_v2(x, y), [np.array([[1000.0, 0.0]]), np.array([[0.0, 1.0]])])
    assert_close(loss, [1000.0])


def test_l2_loss_and_bias_add_hand_computed():
    out, (g,) = evaluate(tf.nn.l2_loss, [np.array([1.0, 2.0, 3.0])])
    assert out == 7.0
    assert_close(g, [1.0, 2.0, 3.0])
    out, (gv, gb) = evaluate(tf.nn.bias_add, [np.zeros((2, 3)), np.array([1.0, 2.0, 3.0])])
    assert_close(out, [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    assert_close(gv, np.ones((2, 3)))
    assert_close(gb, [2.0, 2.0, 2.0])


# ---------------------------------------------------------------- bad input


def test_sparse_xent_label_out_of_range_then_session_still_works():
    logits = tf.placeholder(tf.float64, [3, 4])
    labels = tf.placeholder(tf.int32, [3])
    loss = _sparse_xent(logits, labels)
    grad = tf.gradients(tf.reduce_sum(loss), logits)[0]
    x = _logits((3, 4), np.float64, _rng("oob"))
    with tf.Session() as sess:
        for bad in ([0, 4, 1], [0, -1, 1]):
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"outside the valid range \[0, 4\)") as e:
                sess.run([loss, grad], {logits: x, labels: bad})
            assert isinstance(e.value, ValueError)
            assert "SparseSoftmaxCrossEntropyWithLogits" in str(e.value)
            assert os.path.basename(__file__) in str(e.value)
        good = np.array([0, 3, 1], np.int32)
        got_loss, got_grad = sess.run([loss, grad], {logits: x, labels: good})
        assert_close(got_loss, ref.sparse_softmax_xent(good, x)[0])
        assert_close(got_grad, ref.sparse_softmax_xent(good, x)[1])


def test_xent_shape_and_dtype_errors():
    logits = tf.placeholder(tf.float32, [4, 7])
    with pytest.raises(ValueError, match=r"SoftmaxCrossEntropyWithLogits .*\(4, 7\).*\(4, 6\)"):
        _xent_v2(logits, tf.placeholder(tf.float32, [4, 6]))
    with pytest.raises(TypeError, match=r"string"):  # (float64 labels are cast to the logits' dtype, as TF)
        _xent_v2(logits, tf.placeholder(tf.string, [4, 7]))
    with pytest.raises(ValueError, match=r"SparseSoftmaxCrossEntropyWithLogits .*\(4, 7\).*\(5,\)"):
        _sparse_xent(logits, tf.placeholder(tf.int32, [5]))
    with pytest.raises(TypeError, match=r"labels has dtype float32"):
        _sparse_xent(logits, tf.placeholder(tf.float32, [4]))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(logits, logits)


def test_softmax_errors():
    x = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(ValueError, match=r"Softmax 'Softmax(_\d+)?': axis 2 is out of range") as e:
        tf.nn.softmax(x, axis=2)
    assert os.path.basename(__file__) in str(e.value)
    with pytest.raises(TypeError, match=r"int32"):
        tf.nn.log_softmax(tf.placeholder(tf.int32, [2, 3]))
    with pytest.raises(ValueError, match=r"bias must be a vector"):
        tf.nn.bias_add(x, tf.placeholder(tf.float32, [1, 3]))
    with pytest.raises(ValueError,
                       match=r"BiasAdd 'BiasAdd(_\d+)?': bias of shape \(1,\) must have the size of dimension -1"):
        tf.nn.bias_add(x, tf.placeholder(tf.float32, [1]))  # TF refuses to broadcast a bias
    with pytest.raises(ValueError,
                       match=r"BiasAdd 'BiasAdd(_\d+)?': bias of shape \(3,\) must have the size of dimension 1"):
        tf.nn.bias_add(tf.placeholder(tf.float32, [2, 4, 3]), tf.placeholder(tf.float32, [3]), data_format="NCHW")


def test_relu_second_derivative_is_zeros_not_none():
    """TF's ReluGrad gradient gives zeros to relu's output (d relu'/dx = 0 away from 0)."""
    _, (g2,) = evaluate(lambda t: tf.gradients(tf.nn.relu(t) * t, t)[0], [np.array([-1.0, 2.0])])
    assert_close(g2, [0.0, 2.0])  # d/dx (relu(x) + x relu'(x)) = 2 relu'(x)
    _, (g2,) = evaluate(lambda t: tf.gradients(tf.nn.relu(t), t)[0], [np.array([-1.0, 2.0])])
    assert_close(g2, [0.0, 0.0])


def test_xent_over_a_non_last_axis():
    logits = _logits((3, 4), np.float64, _rng("axis0"))
    labels = _distributions((4, 3), _rng("axis0")).T
    out = run_forward(lambda x, y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x, axis=0),
                      [logits, labels])
    assert_close(out, ref.softmax_xent(labels.T, logits.T)[0])
    check_grad(lambda x, y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x, axis=0),
               [logits, labels])


def test_dynamic_batch_feeds():
    """A [None, C] model graph run with two batch sizes in one session (two plans)."""
    x = tf.placeholder(tf.float64, [None, 5])
    y = tf.placeholder(tf.int64, [None])
    loss = tf.reduce_mean(_sparse_xent(tf.nn.log_softmax(x), y))
    (g,) = tf.gradients(loss, [x])
    rng = _rng("dyn")
    with tf.Session() as sess:
        for batch in (3, 8, 3):
            xv, yv = _logits((batch, 5), np.float64, rng), rng.integers(0, 5, size=batch)
            got_loss, got_g = sess.run([loss, g], {x: xv, y: yv})
            assert_close(got_loss, np.mean(ref.sparse_softmax_xent(yv, ref.log_softmax(xv))[0]))
            assert got_g.shape == (batch, 5)


# ---------------------------------------------------------------- optional peer: TensorFlow


def test_cross_check_with_tensorflow(tf_peer):
    rng = _rng("peer")
    logits, labels = _logits((3, 5), np.float64, rng), _distributions((3, 5), rng)
    classes = np.array([4, 0, 2], np.int64)
    cases = [
        lambda m, x, y: m.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x) * m.reduce_sum(m.nn.softmax(x)),
        lambda m, x, y: m.nn.sparse_softmax_cross_entropy_with_logits(labels=classes, logits=x * y),
        lambda m, x, y: (m.nn.l2_loss(m.nn.log_softmax(x, axis=0) - y) +
                         m.reduce_mean(m.nn.bias_add(x, m.reduce_sum(y, axis=0)))),
    ]
    for case in cases:
        ours_out, ours_g = evaluate(lambda x, y: case(tf, x, y), [logits, labels])
        g = tf_peer.Graph()
        with g.as_default():
            x, y = tf_peer.constant(logits), tf_peer.constant(labels)
            out = case(tf_peer, x, y)
            grads = tf_peer.gradients(out, [x, y])
            with tf_peer.Session(graph=g) as s:
                theirs = s.run([out] + grads)
        assert_close(ours_out, theirs[0])
        for ours, want in zip(ours_g, theirs[1:]):
            assert_close(ours, want)
