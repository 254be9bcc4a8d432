"""tf.nn.static_rnn and tf.nn.static_bidirectional_rnn (and their tf.contrib.rnn names): sequence
lengths (zero outputs and carried states past each end), the bidirectional reversal within each
length, against NumPy, finite differences and TensorFlow 1 with its weights; initial states,
variable names and bad inputs."""
import types

import numpy as np
import pytest

import pygrad as tf
import reference as ref
from rnn_check import assert_matches_tensorflow, check_model_gradients, flatten

BATCH, DEPTH, STEPS = 4, 3, 5
LENGTHS = np.array([5, 2, 0, 3], dtype=np.int32)


def _inputs(dtype=np.float32, seed=2, steps=STEPS):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((BATCH, DEPTH)).astype(dtype) for _ in range(steps)]


def _lstm_with_lengths(lib, xs):
    return lib.nn.static_rnn(lib.nn.rnn_cell.BasicLSTMCell(4), xs, dtype=xs[0].dtype,
                             sequence_length=lib.constant(LENGTHS[:BATCH]))


def _gru_with_lengths(lib, xs):
    return lib.nn.static_rnn(lib.nn.rnn_cell.GRUCell(3), xs, dtype=xs[0].dtype,
                             sequence_length=LENGTHS.astype(np.int64))


def _bidirectional(lengths):
    def build(lib, xs):
        cell_fw, cell_bw = lib.nn.rnn_cell.BasicLSTMCell(3), lib.nn.rnn_cell.GRUCell(2)
        outputs, state_fw, state_bw = lib.nn.static_bidirectional_rnn(
            cell_fw, cell_bw, xs, dtype=xs[0].dtype, sequence_length=None if lengths is None else lengths)
        return outputs, (state_fw, state_bw)
    return build


def _contrib_rnn(lib):
    """lib.contrib.rnn; for TensorFlow 2's compat.v1, which has no contrib, the same classes and
    functions from tf.nn (TF1's contrib.rnn re-exported them)."""
    if lib is tf:
        return tf.contrib.rnn
    return types.SimpleNamespace(**{n: getattr(lib.nn.rnn_cell, n) for n in dir(lib.nn.rnn_cell) if n[0].isupper()},
                                 static_rnn=lib.nn.static_rnn, static_bidirectional_rnn=lib.nn.static_bidirectional_rnn)


def _bidirectional_contrib(lib, xs):
    rnn = _contrib_rnn(lib)
    outputs, fw, bw = rnn.static_bidirectional_rnn(rnn.BasicRNNCell(2), rnn.BasicRNNCell(3), xs, dtype=xs[0].dtype,
                                                   scope="birnn")
    return outputs, (fw, bw)


def _with_initial_state(lib, xs):
    rnn = _contrib_rnn(lib)
    cell = rnn.LSTMCell(3, use_peepholes=True)
    rng = np.random.default_rng(5)
    initial = rnn.LSTMStateTuple(lib.constant(rng.standard_normal((BATCH, 3)), dtype=xs[0].dtype),
                                             lib.constant(rng.standard_normal((BATCH, 3)), dtype=xs[0].dtype))
    return rnn.static_rnn(cell, xs, initial_state=initial, scope="custom")


BUILDS = {
    "lstm_sequence_length": (_lstm_with_lengths, ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]),
    "gru_sequence_length_int64": (_gru_with_lengths, ["rnn/gru_cell/gates/kernel:0", "rnn/gru_cell/gates/bias:0",
                                                      "rnn/gru_cell/candidate/kernel:0",
                                                      "rnn/gru_cell/candidate/bias:0"]),
    "bidirectional": (_bidirectional(None), [
        "bidirectional_rnn/fw/basic_lstm_cell/kernel:0", "bidirectional_rnn/fw/basic_lstm_cell/bias:0",
        "bidirectional_rnn/bw/gru_cell/gates/kernel:0", "bidirectional_rnn/bw/gru_cell/gates/bias:0",
        "bidirectional_rnn/bw/gru_cell/candidate/kernel:0", "bidirectional_rnn/bw/gru_cell/candidate/bias:0"]),
    "bidirectional_sequence_length": (_bidirectional(LENGTHS), [
        "bidirectional_rnn/fw/basic_lstm_cell/kernel:0", "bidirectional_rnn/fw/basic_lstm_cell/bias:0",
        "bidirectional_rnn/bw/gru_cell/gates/kernel:0", "bidirectional_rnn/bw/gru_cell/gates/bias:0",
        "bidirectional_rnn/bw/gru_cell/candidate/kernel:0", "bidirectional_rnn/bw/gru_cell/candidate/bias:0"]),
    "contrib_bidirectional_scope": (_bidirectional_contrib, [
        "birnn/fw/basic_rnn_cell/kernel:0", "birnn/fw/basic_rnn_cell/bias:0", "birnn/bw/basic_rnn_cell/kernel:0",
        "birnn/bw/basic_rnn_cell/bias:0"]),
    "contrib_initial_state": (_with_initial_state, [
        "custom/lstm_cell/kernel:0", "custom/lstm_cell/bias:0", "custom/lstm_cell/w_f_diag:0",
        "custom/lstm_cell/w_i_diag:0", "custom/lstm_cell/w_o_diag:0"]),
}


@pytest.mark.parametrize("case", BUILDS)
def test_variable_names(case):
    build, names = BUILDS[case]
    build(tf, [tf.placeholder(tf.float32, [BATCH, DEPTH]) for _ in range(STEPS)])
    assert [v.name for v in tf.global_variables()] == names


@pytest.mark.parametrize("case", BUILDS)
def test_matches_tensorflow(case):
    assert_matches_tensorflow(BUILDS[case][0], _inputs())


@pytest.mark.parametrize("case", ["lstm_sequence_length", "bidirectional_sequence_length"])
def test_gradients_finite_differences(case):
    check_model_gradients(BUILDS[case][0], _inputs(np.float64))  # a length above the steps is an error, as in TF


def _weights(prefix):
    """{name inside prefix: value} of the variables under prefix."""
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return {v.name[len(prefix):-2]: w for v, w in zip(tf.global_variables(), sess.run(tf.global_variables()))
                if v.name.startswith(prefix)}


def test_sequence_length_matches_numpy():
    """Past an entry's length its outputs are zero and its state stays (a length of 0 keeps the
    zero state); the final state is each entry's state at its own end."""
    inputs = _inputs(np.float64)
    xs = [tf.placeholder(tf.float64, [BATCH, DEPTH]) for _ in inputs]
    outputs, state = _lstm_with_lengths(tf, xs)
    w = _weights("rnn/basic_lstm_cell/")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in tf.global_variables():
            v.load(w[v.name[len("rnn/basic_lstm_cell/"):-2]], sess)
        got = sess.run(outputs + list(state), dict(zip(xs, inputs)))
    zero = (np.zeros((BATCH, 4)), np.zeros((BATCH, 4)))
    want_out, want_state = ref.static_rnn(lambda x, s: ref.lstm_step(w, x, s), inputs, zero, LENGTHS)
    for i, (a, b) in enumerate(zip(got, want_out + list(want_state))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"value {i}")
    assert np.all(got[3][1] == 0) and np.all(got[STEPS][2] == 0)  # entry 1 ended at 2; entry 2 never ran
    full_out, full_state = ref.static_rnn(lambda x, s: ref.lstm_step(w, x, s), inputs[:2], zero)
    np.testing.assert_allclose(got[STEPS + 1][1], full_state[1][1], rtol=1e-12)  # h of entry 1 after 2 steps


def test_bidirectional_matches_numpy():
    """outputs[t] = [fw output at t, bw output at t], where the backward cell reads each entry's
    steps reversed within its length and its outputs are reversed back."""
    inputs = _inputs(np.float64)
    xs = [tf.placeholder(tf.float64, [BATCH, DEPTH]) for _ in inputs]
    outputs, (state_fw, state_bw) = _bidirectional(LENGTHS)(tf, xs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = dict(zip([v.name for v in tf.global_variables()], sess.run(tf.global_variables())))
        got = sess.run(outputs + list(state_fw) + [state_bw], dict(zip(xs, inputs)))
    fw = {k[len("bidirectional_rnn/fw/basic_lstm_cell/"):-2]: v for k, v in values.items() if "/fw/" in k}
    bw = {k[len("bidirectional_rnn/bw/gru_cell/"):-2]: v for k, v in values.items() if "/bw/" in k}
    out_fw, st_fw = ref.static_rnn(lambda x, s: ref.lstm_step(fw, x, s), inputs,
                                   (np.zeros((BATCH, 3)), np.zeros((BATCH, 3))), LENGTHS)
    out_bw, st_bw = ref.static_rnn(lambda x, s: ref.gru_step(bw, x, s), ref.reverse_sequence(inputs, LENGTHS),
                                   np.zeros((BATCH, 2)), LENGTHS)
    out_bw = ref.reverse_sequence(out_bw, LENGTHS)
    want = [np.concatenate([a, b], 1) for a, b in zip(out_fw, out_bw)] + list(st_fw) + [st_bw]
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"value {i}")
    # Without lengths the backward pass reads the whole list reversed.
    tf.reset_default_graph()
    xs = [tf.placeholder(tf.float64, [BATCH, DEPTH]) for _ in inputs]
    outputs, _ = _bidirectional(None)(tf, xs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in tf.global_variables():
            v.load(values[v.name], sess)
        got = sess.run(outputs, dict(zip(xs, inputs)))
    out_bw, _ = ref.static_rnn(lambda x, s: ref.gru_step(bw, x, s), inputs[::-1], np.zeros((BATCH, 2)))
    for t, a in enumerate(got):
        np.testing.assert_allclose(a[:, 3:], out_bw[::-1][t], rtol=1e-12, atol=1e-12)


def test_unknown_batch_with_sequence_length():
    """Inputs of unknown batch size: the zero state and zero outputs follow the fed batch."""
    xs = [tf.placeholder(tf.float32, [None, DEPTH]) for _ in range(3)]
    lengths = tf.placeholder(tf.int32, [None])
    outputs, state = tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(2), xs, dtype=tf.float32, sequence_length=lengths)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in (1, 3):
            feed = {x: np.ones((batch, DEPTH), np.float32) for x in xs}
            feed[lengths] = np.arange(batch, dtype=np.int32)
            values = sess.run(outputs + [state], feed)
            assert all(v.shape == (batch, 2) for v in values)
            assert np.all(values[0][0] == 0) and np.all(values[-1][0] == 0)


def test_sharing_variables_between_two_unrolls():
    """A second static_rnn with the same cell object reuses its variables (no new ones)."""
    cell = tf.contrib.rnn.BasicLSTMCell(3)
    xs = [tf.placeholder(tf.float32, [2, DEPTH]) for _ in range(2)]
    tf.nn.static_rnn(cell, xs, dtype=tf.float32)
    tf.nn.static_rnn(cell, xs[::-1], dtype=tf.float32)
    assert [v.name for v in tf.global_variables()] == ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]


def test_contrib_names_are_the_same_objects():
    rnn = tf.contrib.rnn
    for name in ["BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell", "DropoutWrapper",
                 "ResidualWrapper", "LSTMStateTuple", "RNNCell"]:
        assert getattr(rnn, name) is getattr(tf.nn.rnn_cell, name)
    assert rnn.static_rnn is tf.nn.static_rnn and rnn.static_bidirectional_rnn is tf.nn.static_bidirectional_rnn


def test_bad_inputs():
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    x = tf.placeholder(tf.float32, [2, DEPTH])
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': If no initial_state is provided, dtype must be "
                                         r"specified\n  op defined at .*test_static_rnn.py"):
        tf.nn.static_rnn(cell, [x])
    with pytest.raises(TypeError, match=r"static_rnn 'rnn': inputs must be a sequence"):
        tf.nn.static_rnn(cell, x, dtype=tf.float32)
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': inputs must not be empty"):
        tf.nn.static_rnn(cell, [], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': inputs must have rank at least 2"):
        tf.nn.static_rnn(cell, [tf.placeholder(tf.float32, [])], dtype=tf.float32)
    # A vector [batch] passes (ids for an EmbeddingWrapper, as in TF); a cell wanting [batch, depth] refuses it.
    with pytest.raises(ValueError, match=r"BasicRNNCell 'rnn/basic_rnn_cell': inputs must be 2-D"):
        tf.nn.static_rnn(cell, [tf.placeholder(tf.float32, [DEPTH])], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': Input size \(dimension 0 of inputs\) must be "
                                         r"accessible"):
        tf.nn.static_rnn(cell, [tf.placeholder(tf.float32, [2, None])], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': the inputs' batch sizes differ: 2 and 3"):
        tf.nn.static_rnn(cell, [x, tf.placeholder(tf.float32, [3, DEPTH])], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': sequence_length must be a vector"):
        tf.nn.static_rnn(cell, [x], dtype=tf.float32, sequence_length=[[1, 1]])
    with pytest.raises(ValueError, match=r"static_rnn 'rnn': sequence_length of shape \(3,\) must have the batch "
                                         r"size 2"):
        tf.nn.static_rnn(cell, [x], dtype=tf.float32, sequence_length=[1, 1, 1])
    with pytest.raises(TypeError, match=r"static_rnn 'rnn': sequence_length must be integers"):
        tf.nn.static_rnn(cell, [x], dtype=tf.float32, sequence_length=[1.0, 2.0])
    with pytest.raises(TypeError, match="The argument 'cell_bw' .* is not an RNNCell"):
        tf.nn.static_bidirectional_rnn(cell, "cell", [x], dtype=tf.float32)
    outputs, _ = tf.nn.static_rnn(cell, [x], dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(outputs[0], {x: np.zeros((2, DEPTH))}).shape == (2, 2)
    assert flatten(((1, 2), 3)) == [1, 2, 3]
