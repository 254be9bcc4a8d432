"""The host protocol: an op that runs in Python names its stage on its OpDef and gets a context
(state per session, runs in the same session), never the Session."""
import contextlib

import numpy as np
import pytest

import pygrad as tf
from pygrad.host import HostContext
from pygrad.registry import AFTER, BETWEEN, OpDef, Spec, check_registry


@contextlib.contextmanager
def defined(opdef_type, **kwargs):
    """A made-up OpDef, taken out of the registry again afterwards."""
    d = OpDef(opdef_type, differentiable=False, **kwargs)
    try:
        yield d
    finally:
        del OpDef.all[opdef_type]


def test_a_between_op_gets_a_context_with_state_per_session_and_runs():
    with defined("TestCountingCall", host=BETWEEN) as d:
        d.shape(lambda x, *, extra: Spec(x.dtype, x.shape))
        seen = []

        @d.host
        def _(ctx, op, values):
            seen.append(type(ctx))
            count = ctx.state(op, lambda: [0])
            count[0] += 1
            return [values[0] * 10 + count[0] + ctx.run(op.attrs["extra"])]

        x = tf.placeholder(tf.float32, [])
        extra = tf.constant(100.0)
        y = d(x, extra=extra)
        assert y.op in y.graph.host_ops  # OpDef registers it: no list to append to by hand
        with tf.Session() as s1, tf.Session() as s2:
            assert s1.run(y, {x: 1.0}) == 111.0
            assert s1.run(y + 1.0, {x: 1.0}) == 113.0
            assert s2.run(y, {x: 2.0}) == 121.0  # a new session: its own state
        assert seen == [HostContext] * 3


def test_a_pure_after_op_is_computed_with_the_plan_and_gets_no_context():
    with defined("TestPureAfter", host=AFTER) as d:
        d.shape(lambda x: Spec(tf.string, x.shape))
        d.host(lambda ctx, op, values: [np.array(b"ctx %s %d" % (str(ctx).encode(), values[0]), object)])
        y = d(tf.constant(7))
        assert y.op not in y.graph.host_ops
        with tf.Session() as sess:
            assert sess.run(y) == b"ctx None 7"


def test_a_host_op_without_a_host_function_is_an_inconsistent_registry():
    with defined("TestNoHostFn", host=AFTER) as d:
        d.shape(lambda *xs: [])
        with pytest.raises(RuntimeError, match="TestNoHostFn runs on the host but has no host function"):
            check_registry()
    check_registry()


def test_an_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="host stage 'during' is not one of"):
        OpDef("TestDuring", host="during")
    assert "TestDuring" not in OpDef.all
