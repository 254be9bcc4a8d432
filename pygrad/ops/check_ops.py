"""tf.Assert and the assert_* checks of TF1's check_ops.py: a condition that does not hold fails the
run with InvalidArgumentError, naming the Assert op and the line that built it.

Assert is a host op of stage BETWEEN (see host.py): the run computes its condition and data, the op
checks them in Python, and what depends on it (by control dependencies, as TF1 code makes it) runs
only after the check, so a failed check leaves the variables it guards unwritten. As TF in graph
mode, an assert_* whose operands are both constants is also checked when it is built.

TF's Assert has no outputs; pygrad's has one, the checked condition, which the later stages of a run
are fed: that is how they know the check ran. tf.Assert returns the Operation, as TF's does.
"""
import numpy as np

from pygrad import dtypes, errors
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import constant, constant_value, convert_to_tensor
from pygrad.ops.logging_ops import summarize_v1
from pygrad.ops.reduction_ops import reduce_all
from pygrad.registry import BETWEEN, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

AssertOp = OpDef("Assert", host=BETWEEN, differentiable=False)


@AssertOp.shape
def _(condition, *data, summarize):
    if condition.dtype != dtypes.bool_:
        fail_dtype(f"condition must be bool, got {condition.dtype.name}")
    if condition.shape.ndims not in (None, 0):
        fail(f"condition must be a scalar, got shape {condition.shape}")
    return Spec(dtypes.bool_, TensorShape([]))


def _message(values, summarize):
    """TF's Assert kernel message: "assertion failed: " and each datum in brackets."""
    return "assertion failed: " + " ".join(f"[{summarize_v1(v, summarize)}]" for v in values)


@AssertOp.host
def _(ctx, op, values):
    if not bool(values[0]):
        raise errors.InvalidArgumentError(None, op, op.error(_message(values[1:], op.attrs["summarize"])))
    return [np.array(True)]


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TF's name)
    """An op that fails the run when the bool scalar condition is False, printing data (a list of
    tensors; strings and values, the first `summarize` elements of each, 3 by default)."""
    condition = convert_to_tensor(condition)
    data = [convert_to_tensor(d) for d in data]
    return AssertOp(condition, *data, summarize=3 if summarize is None else int(summarize), name=name or "Assert").op


def _static_fail(data, summarize):
    """TF's _assert_static: a check known to fail when the graph is built."""
    shown = [summarize_v1(d, summarize) if not isinstance(d, str) else d for d in data]
    raise errors.InvalidArgumentError(None, None, "\n".join(shown))


def _binary_assert(symbol, test, static_test, x, y, data, summarize, message, name, default_name):
    """TF's check_ops._binary_assert in graph mode: Assert(reduce_all(test(x, y)), data)."""
    graph = get_default_graph()
    with graph.name_scope(name or default_name):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        if data is None:
            data = [f"Condition x {symbol} y did not hold element-wise:", f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        if message is not None:
            data = [message, *data]
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None and not np.all(static_test(x_static, y_static)):
            _static_fail([constant_value(d) if not isinstance(d, str) else d for d in data], summarize)
        condition = reduce_all(test(x, y))
        return Assert(condition, [constant(d) if isinstance(d, str) else d for d in data], summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("==", math_ops.equal, np.equal, x, y, data, summarize, message, name, "assert_equal")


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("<", math_ops.less, np.less, x, y, data, summarize, message, name, "assert_less")


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("<=", math_ops.less_equal, np.less_equal, x, y, data, summarize, message, name,
                          "assert_less_equal")


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(">", math_ops.greater, np.greater, x, y, data, summarize, message, name,
                          "assert_greater")


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(">=", math_ops.greater_equal, np.greater_equal, x, y, data, summarize, message, name,
                          "assert_greater_equal")


def _sign_assert(test_name, compare, x, data, summarize, message, name):
    """TF's assert_non_negative and kin: assert_<compare>(0, x), the message ending in ".  "."""
    with get_default_graph().name_scope(name or test_name):
        x = convert_to_tensor(x, name="x")
        if data is None:
            condition = f"Condition x {_SIGN_WORDS[test_name]} did not hold element-wise:"
            data = [f"{message}.  " if message else "", condition, f"x ({x.name}) = ", x]
        return compare(constant(0, dtype=x.dtype), x, data=data, summarize=summarize)


_SIGN_WORDS = {"assert_non_negative": ">= 0", "assert_positive": "> 0"}


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    return _sign_assert("assert_non_negative", assert_less_equal, x, data, summarize, message, name)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    return _sign_assert("assert_positive", assert_less, x, data, summarize, message, name)


def assert_type(tensor, tf_type, message=None, name=None):
    """A build-time check of tensor's dtype (TF raises TypeError); returns None, as TF1's does."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.as_dtype(tf_type):
        raise TypeError(f"{message + ' ' if message else ''}{tensor.name} must be of type {dtypes.as_dtype(tf_type)!r};"
                        f" got {tensor.dtype!r}")
