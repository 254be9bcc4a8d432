"""Steps whose results nothing reads (pygrad/dead_steps.py): an LSTM trained on a fed input no longer
accumulates the input's gradient in its gradient loop, and that loop's product computes the state's
columns alone (matmul_fwd's b_offset); the loss and the variables' gradients are those of the plan
without the pass, and asking for the input's gradient keeps every step."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import _C, passes


def _lstm(with_input_gradient):
    tf.set_random_seed(4)
    x = tf.placeholder(tf.float32, [6, 5, 3])
    cell = tf.nn.rnn_cell.BasicLSTMCell(9)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    loss = tf.reduce_sum(tf.square(outputs[:, -1, :] - 0.3))
    wrt = tf.trainable_variables() + ([x] if with_input_gradient else [])
    return x, [loss, *tf.gradients(loss, wrt)]


def _run(monkeypatch, with_input_gradient, on):
    with monkeypatch.context() as m:
        if not on:
            m.setattr(passes, "drop_dead_steps", lambda program, fetched: None)
        with tf.Graph().as_default():
            x, fetches = _lstm(with_input_gradient)
            xv = np.random.default_rng(2).standard_normal((6, 5, 3)).astype(np.float32)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                values = sess.run(fetches, {x: xv})
                compiled = list(sess.plans.values())[-1]
                types = [[op.type, *(o.type for o in fused)] for op, fused in
                         zip(compiled.step_ops, compiled.step_fused)]
    return values, types


def _count(types, name):
    return sum(t.count(name) for t in types)


@pytest.mark.parametrize("with_input_gradient", [False, True], ids=["variables", "and_input"])
def test_an_lstm_on_a_fed_input_drops_the_input_gradient(monkeypatch, threads, with_input_gradient):
    on, types_on = _run(monkeypatch, with_input_gradient, True)
    off, types_off = _run(monkeypatch, with_input_gradient, False)
    for got, want in zip(on, off):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    narrowed = [t for t in types_on if t[0] == "MatMul" and "ConcatV2Grad" in t]
    if with_input_gradient:
        assert types_on == types_off
    else:
        assert _count(types_off, "TensorArrayReadGrad") == 1 and _count(types_on, "TensorArrayReadGrad") == 0
        assert len(narrowed) == 1 and len(types_on) < len(types_off), types_on


@pytest.mark.parametrize("offset_rows", [0, 2, 5])
def test_matmul_b_offset(offset_rows):
    rng = np.random.default_rng(offset_rows)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((9, 6)).astype(np.float32)
    out = np.empty((4, 3), np.float32)
    # the operand is b's first 3 rows (a view of its buffer, which holds 9); the kernel reads the 3
    # rows from offset_rows on, with transpose_b
    _C.call("matmul_fwd", [a, b[:3]], [out], {"transpose_b": 1, "b_offset": offset_rows * 6})
    np.testing.assert_allclose(out, a @ b[offset_rows:offset_rows + 3].T, rtol=1e-6, atol=1e-6)


def test_matmul_b_offset_errors():
    a = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="matmul_fwd: b_offset must be a nonnegative element count, for matrices "
                                         r"only; got 4 with b: \(2, 4, 5\)"):
        _C.call("matmul_fwd", [a, np.ones((2, 4, 5), np.float32)], [np.empty((2, 3, 5), np.float32)],
                {"b_offset": 4})
