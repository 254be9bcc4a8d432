"""tf.Assert and the assert_* checks, tf.confusion_matrix and tf.div_no_nan, against TensorFlow."""
import re

import numpy as np
import pytest

import pygrad as tf
from peer import compare

CHECKS = [("assert_equal", [1, 2, 3], [1, 2, 3], [1, 2, 4]),
          ("assert_less", [0, 1, 2], [3], [0, 5, 2]),
          ("assert_less_equal", [0, 1, 3], [3], [0, 5, 2]),
          ("assert_greater", [4, 5, 6], [3], [4, 1, 6]),
          ("assert_greater_equal", [3, 5, 6], [3], [4, 1, 6])]


def _failure(m, graph, name, good, y_value, bad, message="bad x"):
    """The message of a run whose check fails (the x feed breaks it), with TF's decorations cut."""
    with graph.as_default():
        x = m.placeholder(m.int64, [3], name="x")
        check = getattr(m, name)(x, m.constant(y_value, m.int64), message=message) if y_value is not None else \
            getattr(m, name)(x, message=message)
        with m.control_dependencies([check]):
            y = m.identity(x)
        with m.Session(graph=graph) as s:
            s.run(y, {x: np.array(good)})
            with pytest.raises(m.errors.InvalidArgumentError) as info:
                s.run(y, {x: np.array(bad)})
    message = info.value.message if hasattr(info.value, "message") else str(info.value)
    return re.search(r"assertion failed: .*", message).group(0)


@pytest.mark.parametrize("name, good, y, bad", CHECKS, ids=[c[0] for c in CHECKS])
def test_a_failed_check_fails_the_run_as_tf(tf_peer, name, good, y, bad):
    tf.reset_default_graph()
    ours = _failure(tf, tf.get_default_graph(), name, good, y, bad)
    theirs = _failure(tf_peer, tf_peer.Graph(), name, good, y, bad)
    assert ours == theirs


@pytest.mark.parametrize("name, good, bad", [("assert_non_negative", [0, 1, 2], [0, -1, 2]),
                                             ("assert_positive", [3, 1, 2], [0, 1, 2])])
@pytest.mark.parametrize("message", [None, "bad x"])
def test_a_failed_sign_check_fails_the_run_as_tf(tf_peer, name, good, bad, message):
    tf.reset_default_graph()
    ours = _failure(tf, tf.get_default_graph(), name, good, None, bad, message)
    assert ours == _failure(tf_peer, tf_peer.Graph(), name, good, None, bad, message)


@pytest.mark.parametrize("name, good, y, bad", CHECKS, ids=[c[0] for c in CHECKS])
def test_constant_operands_are_checked_when_built(tf_peer, name, good, y, bad):
    for m, graph in ((tf, tf.Graph()), (tf_peer, tf_peer.Graph())):
        with graph.as_default():
            getattr(m, name)(m.constant(good), m.constant(y))
            with pytest.raises(m.errors.InvalidArgumentError, match="static\nCondition x"):
                getattr(m, name)(m.constant(bad), m.constant(y), message="static")


def test_assert_returns_an_operation_and_checks_its_condition():
    x = tf.placeholder(tf.float32, [])
    op = tf.Assert(x > 0, ["x is", x])
    assert isinstance(op, tf.Operation) and op.type == "Assert"
    with tf.control_dependencies([op]):
        y = x * 2
    with tf.Session() as s:
        assert s.run(y, {x: 2.0}) == 4.0
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Assert 'Assert': assertion failed: \[x is\] \[-1\]"):
            s.run(y, {x: -1.0})
        assert s.run(y, {x: 3.0}) == 6.0


def test_assert_needs_a_bool_scalar():
    with pytest.raises(TypeError, match="Assert 'Assert': condition must be bool"):
        tf.Assert(tf.constant(1.0), [])
    with pytest.raises(ValueError, match="condition must be a scalar"):
        tf.Assert(tf.constant([True, False]), [])


def test_assert_type():
    tf.assert_type(tf.constant(1.0), tf.float32)
    with pytest.raises(TypeError, match="must be of type"):
        tf.assert_type(tf.constant(1), tf.float32)


# ---------------------------------------------------------------- confusion_matrix

CONFUSION = [
    ("int32", lambda m, lb, p: m.confusion_matrix(lb, p, num_classes=4), [[0, 1, 3, 3, 2]], [[0, 2, 3, 1, 2]]),
    ("weights-float64", lambda m, lb, p, w: m.confusion_matrix(lb, p, 3, dtype=m.float64, weights=w),
     [[0, 1, 2, 2]], [[0, 2, 2, 1]]),
    ("squeezed-labels", lambda m, lb, p: m.math.confusion_matrix(lb, p, 3), [[[0], [1], [2]]], [[1, 1, 2]]),
]


@pytest.mark.parametrize("fn, labels, predictions", [c[1:] for c in CONFUSION], ids=[c[0] for c in CONFUSION])
def test_confusion_matrix_matches_tf(tf_peer, fn, labels, predictions):
    inputs = [np.array(labels[0], np.int64), np.array(predictions[0], np.int64)]
    if fn.__code__.co_argcount == 4:
        inputs.append(np.linspace(0.5, 2, len(predictions[0])).astype(np.float64))
    compare(tf_peer, fn, inputs)


def test_confusion_matrix_out_of_range_fails_the_run():
    labels = tf.placeholder(tf.int64, [3])
    cm = tf.confusion_matrix(labels, tf.constant([0, 1, 1], tf.int64), num_classes=2)
    with tf.Session() as s:
        assert s.run(cm, {labels: [0, 1, 0]}).tolist() == [[1, 1], [0, 1]]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[`labels` out of bound\]"):
            s.run(cm, {labels: [0, 2, 0]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"\[`labels` contains negative values.  \] \[Condition x >= 0 did"):
            s.run(cm, {labels: [0, -1, 0]})


def test_confusion_matrix_needs_num_classes():
    with pytest.raises(ValueError, match="num_classes must be given"):
        tf.confusion_matrix([0, 1], [1, 1])


# ---------------------------------------------------------------- div_no_nan


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_div_no_nan_matches_tf(tf_peer, dtype):
    x = np.array([[1.0, -2.0, 3.0], [0.0, 5.0, -6.0]], dtype)
    y = np.array([[2.0, 0.0, -4.0], [0.0, 0.5, 0.0]], dtype)
    compare(tf_peer, lambda m, a, b: m.div_no_nan(a, b), [x, y], wrt=(0, 1))
    compare(tf_peer, lambda m, a, b: m.math.divide_no_nan(a, b), [x, np.array([0.0, 2.0, -1.0], dtype)], wrt=(0, 1))


def test_div_no_nan_takes_floats():
    with pytest.raises(TypeError, match="DivNoNan 'div_no_nan': x and y must be floats"):
        tf.div_no_nan(tf.constant(1), tf.constant(0))
