"""Fused elementwise loops (pygrad/fuse_elementwise.py, csrc/kernels/fused_elementwise.cc): float32
elementwise steps of one shape become one step computing tiles of every value; the results are
bitwise those of the unfused steps (the pass switched off), at one thread and two, for an LSTM's
forward loop and gradient loop, broadcast operands (a scalar, a bias vector, rows longer than a
tile), fetched intermediates and values read outside the group; the kernel refuses a bad program
naming itself."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import _C, passes


def _fused_types(sess):
    """The op types of each fused_elementwise-made step of the last plan run (several ops each)."""
    compiled = list(sess.plans.values())[-1]
    return [[op.type, *(o.type for o in fused)] for op, fused in zip(compiled.step_ops, compiled.step_fused)
            if fused and op.type in _ELEMENTWISE and all(o.type in _ELEMENTWISE for o in fused)]


_ELEMENTWISE = {"Add", "AddV2", "AddN", "BiasAdd", "Sub", "Mul", "Sigmoid", "Tanh", "SigmoidGrad", "TanhGrad",
                "Relu", "Neg", "Exp", "Square", "RealDiv", "Maximum", "Split", "ConcatV2"}


def _run_both(monkeypatch, build, feeds_of, fetch_names):
    """{'fused': values, 'unfused': values, 'groups': the fused steps' op types}, each from a fresh
    graph built by build() -> {name: tensor}, with the pass on and off."""
    out = {}
    for mode in ("fused", "unfused"):
        with monkeypatch.context() as m:
            if mode == "unfused":
                m.setattr(passes, "fuse_elementwise", lambda program, fetched: None)
            with tf.Graph().as_default():
                tensors = build()
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    out[mode] = sess.run([tensors[n] for n in fetch_names], feeds_of(tensors))
                    if mode == "fused":
                        out["groups"] = _fused_types(sess)
    return out


def _lstm(rng):
    def build():
        tf.set_random_seed(3)  # the same initial kernel in both graphs
        x = tf.placeholder(tf.float32, [5, 4, 3])
        cell = tf.nn.rnn_cell.BasicLSTMCell(7, forget_bias=1.0)
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32,
                                           initial_state=cell.zero_state(5, tf.float32))
        loss = tf.reduce_sum(tf.square(outputs)) + tf.reduce_sum(state.c * 0.5)
        kernel, bias = tf.trainable_variables()
        gk, gb, gx = tf.gradients(loss, [kernel, bias, x])
        return {"x": x, "loss": loss, "outputs": outputs, "gk": gk, "gb": gb, "gx": gx}

    xv = rng.standard_normal((5, 4, 3)).astype(np.float32) * 2
    return build, lambda t: {t["x"]: xv}


def test_an_lstm_fuses_forward_and_backward_bitwise(monkeypatch, threads):
    build, feeds = _lstm(np.random.default_rng(0))
    names = ["loss", "outputs", "gk", "gb", "gx"]
    r = _run_both(monkeypatch, build, feeds, names)
    for name, got, want in zip(names, r["fused"], r["unfused"]):
        np.testing.assert_array_equal(got, want, err_msg=name)
    groups = r["groups"]
    forward = [g for g in groups if "Sigmoid" in g and "Tanh" in g]
    backward = [g for g in groups if "SigmoidGrad" in g and "TanhGrad" in g]
    assert forward and backward, groups
    assert sum(g.count("Sigmoid") for g in forward) == 3 and sum(g.count("Tanh") for g in forward) == 2, groups
    # the gates' bias add and split join the cell's forward step, the gradients' concat its backward one
    assert len(forward) == 1 and "Split" in forward[0] and forward[0].count("Add") == 3, groups
    assert len(backward) == 1 and "ConcatV2" in backward[0], groups


@pytest.mark.parametrize("cols", [37, 1024, 2500])  # rows of several per tile, one per tile, and rows over a tile
def test_broadcast_operands_and_fetched_intermediates(monkeypatch, threads, cols):
    rng = np.random.default_rng(cols)
    xv = rng.standard_normal((6, cols)).astype(np.float32) * 3
    bv = rng.standard_normal(cols).astype(np.float32)

    def build():
        x = tf.placeholder(tf.float32, [6, cols])
        b = tf.Variable(bv)
        pre = x * 0.5 + b  # a scalar, then a bias row
        gate = tf.sigmoid(pre)
        mid = tf.tanh(x - 1.0) * gate
        y = tf.maximum(mid, 0.1) - x / 3.0
        outside = tf.reduce_sum(gate, axis=1)  # read by a step outside the group
        return {"x": x, "y": y, "mid": mid, "outside": outside}

    feeds = lambda t: {t["x"]: xv}  # noqa: E731
    r = _run_both(monkeypatch, build, feeds, ["y", "mid", "outside"])
    for got, want in zip(r["fused"], r["unfused"]):
        np.testing.assert_array_equal(got, want)
    gate = 1 / (1 + np.exp(-(xv.astype(np.float64) * 0.5 + bv)))
    mid = np.tanh(xv - 1.0) * gate
    np.testing.assert_allclose(r["fused"][0], np.maximum(mid, 0.1) - xv / 3.0, rtol=1e-5, atol=1e-5)
    assert any("Sigmoid" in g and "Maximum" in g for g in r["groups"]), r["groups"]



@pytest.mark.parametrize("width", [5, 1100])  # rows of several per tile; a row longer than a tile
def test_split_parts_read_in_place_and_a_concat_written_in_blocks(monkeypatch, threads, width):
    """A fed matrix split along its columns (each part read where it lies), a bias added before a
    split (each block's op on its slice), and a concat of results (written as blocks of its output)."""
    rng = np.random.default_rng(width)
    xv = rng.standard_normal((7, 3 * width)).astype(np.float32)
    zv = rng.standard_normal((7, 4 * width)).astype(np.float32)
    bv = rng.standard_normal(4 * width).astype(np.float32)

    def build():
        x = tf.placeholder(tf.float32, [7, 3 * width])
        z = tf.placeholder(tf.float32, [7, 4 * width])
        a, b, c = tf.split(x, 3, axis=1)
        i, j, k, m = tf.split(tf.nn.bias_add(z, tf.constant(bv)), 4, axis=1)
        y = tf.concat([tf.sigmoid(a) * b + c, tf.tanh(i) * j, k - m], 1)
        return {"x": x, "z": z, "y": y}

    r = _run_both(monkeypatch, build, lambda t: {t["x"]: xv, t["z"]: zv}, ["y"])
    np.testing.assert_array_equal(r["fused"][0], r["unfused"][0])
    a, b, c = np.split(xv.astype(np.float64), 3, axis=1)
    i, j, k, m = np.split(zv + bv, 4, axis=1)
    want = np.concatenate([b / (1 + np.exp(-a)) + c, np.tanh(i) * j, k - m], 1)
    np.testing.assert_allclose(r["fused"][0], want, rtol=1e-5, atol=1e-5)
    assert [g.count("Split") for g in r["groups"]] == [2] and "ConcatV2" in r["groups"][0], r["groups"]

def test_a_value_fetched_alone_leaves_nothing_to_fuse(monkeypatch):
    """Every intermediate fetched: the steps stay apart (a group must keep a value from memory)."""
    def build():
        x = tf.placeholder(tf.float32, [4, 8])
        a = tf.exp(x)
        return {"x": x, "a": a, "b": a * 2.0}

    r = _run_both(monkeypatch, build, lambda t: {t["x"]: np.ones((4, 8), np.float32)}, ["a", "b"])
    assert r["groups"] == []
    np.testing.assert_array_equal(r["fused"][1], r["unfused"][1])


def test_a_loop_variable_written_in_place_stays_correct(monkeypatch):
    """A while loop whose body's elementwise chain feeds its own loop variable (carried in place)."""
    def build():
        x = tf.placeholder(tf.float32, [3, 5])
        _, h = tf.while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, tf.tanh(h * 0.9 + x) * tf.sigmoid(h)),
                             [tf.constant(0), tf.zeros([3, 5])])
        return {"x": x, "h": h, "g": tf.gradients(tf.reduce_sum(h), x)[0]}

    xv = np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32)
    r = _run_both(monkeypatch, build, lambda t: {t["x"]: xv}, ["h", "g"])
    for got, want in zip(r["fused"], r["unfused"]):
        np.testing.assert_array_equal(got, want)
    assert r["groups"], "the loop body's chain fuses"


@pytest.mark.parametrize("ins,attrs,match", [
    ([(4, 8)], {"program": [2, 0, 0, 0, 1], "outputs": [1]}, "program needs four ints per instruction, got 5"),
    ([(4, 8)], {"program": [0, 0, 0, -1, 0, 0, 2, -1], "outputs": [2]},
     "instruction 1 reads a register it has not got"),
    ([(4, 8)], {"program": [0, 999, 0, -1], "outputs": [1]}, "instruction 0: no float32 op 999 of family 0"),
    ([(4, 8), (3,)], {"program": [2, 0, 0, 1], "outputs": [2]},
     r"an input must have the shape \(4, 8\), one element or the last dimension's 8, got \(3,\)"),
    ([(1,)], {"program": [0, 0, 0, -1], "outputs": [1]}, "instruction 0 reads a one-element input"),
    ([(4, 8)], {"program": [0, 0, 0, -1], "outputs": [0]}, "output 0 must be a distinct instruction's register"),
    ([(4, 20)], {"program": [0, 0, 0, -1], "outputs": [1], "in_columns": [16]},
     r"input 0 with column offset 16 must be a \[4, w\] matrix or a \[w\] vector holding columns up to 24, "
     r"got \(4, 20\)"),
    ([(4, 8)], {"program": [0, 0, 0, -1], "outputs": [1], "out_columns": [0, 0]},
     "out_columns needs one column offset \\(or -1\\) per operand, got 2 for 1"),
    ([(4, 8)], {"program": [0, 0, 0, -1], "outputs": [1], "dims": []}, "dims must name 1 to 8 dimensions, got 0"),
])
def test_kernel_errors(ins, attrs, match):
    arrays = [np.ones(s, np.float32) for s in ins]
    with pytest.raises(ValueError, match=f"fused_elementwise: {match}"):
        _C.call("fused_elementwise", arrays, [np.empty((4, 8), np.float32)], {"dims": [4, 8], **attrs})

