"""tf.errors: TensorFlow's 17 error classes with their codes and OpError's attributes."""
import pickle

import numpy as np
import pytest

import pygrad as tf

CLASSES = {  # TF's canonical codes (tensorflow/core/protobuf/error_codes.proto)
    "CancelledError": 1, "UnknownError": 2, "InvalidArgumentError": 3, "DeadlineExceededError": 4,
    "NotFoundError": 5, "AlreadyExistsError": 6, "PermissionDeniedError": 7, "ResourceExhaustedError": 8,
    "FailedPreconditionError": 9, "AbortedError": 10, "OutOfRangeError": 11, "UnimplementedError": 12,
    "InternalError": 13, "UnavailableError": 14, "DataLossError": 15, "UnauthenticatedError": 16,
}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_error_class(name):
    cls = getattr(tf.errors, name)
    code = CLASSES[name]
    assert getattr(tf.errors, "".join("_" + c if c.isupper() else c for c in name[:-5]).upper().lstrip("_")) == code
    e = cls(None, None, "something went wrong")
    assert isinstance(e, tf.errors.OpError)
    assert (e.node_def, e.op, e.message, e.error_code) == (None, None, "something went wrong", code)
    assert str(e) == "something went wrong"
    again = pickle.loads(pickle.dumps(e))  # errors cross process boundaries (parameter servers)
    assert type(again) is cls and again.message == "something went wrong" and again.error_code == code
    with pytest.raises(cls):
        raise e


def test_except_clause_for_a_class_pygrad_never_raises_is_valid():
    try:
        raise ValueError("not an op error")
    except tf.errors.OutOfRangeError:  # the name must exist for this clause to be evaluated
        pytest.fail("OutOfRangeError caught a ValueError")
    except ValueError:
        pass


def test_a_run_time_error_carries_its_op_and_node_def():
    x = tf.placeholder(tf.int32, [2], name="x")
    y = tf.floordiv(x, tf.constant([1, 0]), name="y")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"FloorDiv 'y': .*Integer division by zero") as e:
            sess.run(y, {x: [4, 6]})
        assert e.value.op is y.op
        assert e.value.node_def["name"] == "y" and e.value.node_def["op"] == "FloorDiv"
        assert e.value.error_code == tf.errors.INVALID_ARGUMENT
        np.testing.assert_array_equal(sess.run(tf.floordiv(x, 2), {x: [4, 6]}), [2, 3])  # the session still runs
