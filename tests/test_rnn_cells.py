"""The RNN cells of tf.nn.rnn_cell: TF's variable names, values against NumPy references (with the
cells' own weights), gradients against finite differences, outputs, states and gradients against
TensorFlow 1 with its initial weights copied in, dropout, zero states, scopes and bad inputs."""
import numpy as np
import pytest

import pygrad as tf
import reference as ref
from rnn_check import assert_matches_tensorflow, check_model_gradients, flatten

BATCH, DEPTH, STEPS = 3, 4, 3


def _inputs(dtype=np.float32, seed=1, steps=STEPS, batch=BATCH, depth=DEPTH):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, depth)).astype(dtype) for _ in range(steps)]


def _static(make_cell, **kwargs):
    """build(lib, xs): static_rnn of make_cell(lib) over xs from its zero state."""
    def build(lib, xs):
        return lib.nn.static_rnn(make_cell(lib), xs, dtype=xs[0].dtype, **kwargs)
    return build


def _lstm_full(lib):
    return lib.nn.rnn_cell.LSTMCell(5, use_peepholes=True, cell_clip=0.6, num_proj=3, proj_clip=0.2,
                                    forget_bias=0.3)


CASES = {
    "basic_rnn": (lambda lib: lib.nn.rnn_cell.BasicRNNCell(5),
                  ["rnn/basic_rnn_cell/kernel:0", "rnn/basic_rnn_cell/bias:0"]),
    "basic_lstm": (lambda lib: lib.nn.rnn_cell.BasicLSTMCell(5, forget_bias=0.7),
                   ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]),
    "basic_lstm_concat_state": (lambda lib: lib.nn.rnn_cell.BasicLSTMCell(4, state_is_tuple=False),
                                ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]),
    "lstm": (lambda lib: lib.nn.rnn_cell.LSTMCell(5), ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0"]),
    "lstm_peepholes_clip_proj": (_lstm_full, ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0",
                                              "rnn/lstm_cell/w_f_diag:0", "rnn/lstm_cell/w_i_diag:0",
                                              "rnn/lstm_cell/w_o_diag:0", "rnn/lstm_cell/projection/kernel:0"]),
    "lstm_proj_concat_state": (lambda lib: lib.nn.rnn_cell.LSTMCell(4, num_proj=2, state_is_tuple=False),
                               ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0",
                                "rnn/lstm_cell/projection/kernel:0"]),
    "gru": (lambda lib: lib.nn.rnn_cell.GRUCell(4),
            ["rnn/gru_cell/gates/kernel:0", "rnn/gru_cell/gates/bias:0", "rnn/gru_cell/candidate/kernel:0",
             "rnn/gru_cell/candidate/bias:0"]),
    "multi_lstm_gru": (lambda lib: lib.nn.rnn_cell.MultiRNNCell([lib.nn.rnn_cell.BasicLSTMCell(4),
                                                                 lib.nn.rnn_cell.GRUCell(3)]),
                       ["rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0",
                        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias:0",
                        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel:0",
                        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
                        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0",
                        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias:0"]),
    "multi_concat_state": (lambda lib: lib.nn.rnn_cell.MultiRNNCell(
        [lib.nn.rnn_cell.BasicRNNCell(3), lib.nn.rnn_cell.BasicRNNCell(2)], state_is_tuple=False),
        ["rnn/multi_rnn_cell/cell_0/basic_rnn_cell/kernel:0", "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/bias:0",
         "rnn/multi_rnn_cell/cell_1/basic_rnn_cell/kernel:0", "rnn/multi_rnn_cell/cell_1/basic_rnn_cell/bias:0"]),
    "residual": (lambda lib: lib.nn.rnn_cell.ResidualWrapper(lib.nn.rnn_cell.GRUCell(DEPTH)),
                 ["rnn/gru_cell/gates/kernel:0", "rnn/gru_cell/gates/bias:0", "rnn/gru_cell/candidate/kernel:0",
                  "rnn/gru_cell/candidate/bias:0"]),
    "dropout_keep_1": (lambda lib: lib.nn.rnn_cell.DropoutWrapper(lib.nn.rnn_cell.BasicLSTMCell(3), 1.0, 1.0, 1.0),
                       ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]),
}


@pytest.mark.parametrize("case", CASES)
def test_variable_names(case):
    make_cell, names = CASES[case]
    _static(make_cell)(tf, [tf.placeholder(tf.float32, [None, DEPTH]) for _ in range(STEPS)])
    assert [v.name for v in tf.global_variables()] == names
    assert [v.name for v in tf.trainable_variables()] == names


@pytest.mark.parametrize("case", CASES)
def test_matches_tensorflow(case):
    assert_matches_tensorflow(_static(CASES[case][0]), _inputs())


@pytest.mark.parametrize("case", ["basic_rnn", "basic_lstm_concat_state", "lstm_peepholes_clip_proj", "gru",
                                  "multi_lstm_gru", "residual"])
def test_gradients_finite_differences(case):
    check_model_gradients(_static(CASES[case][0]), _inputs(np.float64, steps=2))


def _own_weights(build, inputs):
    """(values of outputs and state, {variable name: value}) of build in pygrad, float64, from
    seeded initial weights (the same in every run)."""
    tf.set_random_seed(6)
    xs = [tf.placeholder(tf.float64, a.shape) for a in inputs]
    outputs, state = build(tf, xs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(flatten(outputs) + flatten(state), dict(zip(xs, inputs)))
        weights = {v.name.split("/", 2)[-1][:-2]: w for v, w in zip(tf.global_variables(),
                                                                     sess.run(tf.global_variables()))}
    return values, weights


REFERENCE_STEPS = {
    "basic_rnn": lambda w: lambda x, s: ref.basic_rnn_step(w, x, s),
    "basic_lstm": lambda w: lambda x, s: ref.lstm_step(w, x, s, forget_bias=0.7),
    "lstm_peepholes_clip_proj": lambda w: lambda x, s: ref.lstm_step(w, x, s, forget_bias=0.3, peepholes=True,
                                                                     cell_clip=0.6, proj_clip=0.2),
    "gru": lambda w: lambda x, s: ref.gru_step(w, x, s),
}
ZERO_STATE = {"basic_rnn": lambda b: np.zeros((b, 5)), "gru": lambda b: np.zeros((b, 4)),
              "basic_lstm": lambda b: (np.zeros((b, 5)), np.zeros((b, 5))),
              "lstm_peepholes_clip_proj": lambda b: (np.zeros((b, 5)), np.zeros((b, 3)))}


@pytest.mark.parametrize("case", REFERENCE_STEPS)
def test_matches_numpy(case):
    """float64 outputs and final state equal the NumPy cell run with the cell's own weights. The
    weights are scaled up so that the clips of the full LSTM bind."""
    inputs = [3 * x for x in _inputs(np.float64, steps=4)]
    values, weights = _own_weights(_static(CASES[case][0]), inputs)
    outputs, state = ref.static_rnn(REFERENCE_STEPS[case](weights), inputs, ZERO_STATE[case](BATCH))
    expected = outputs + flatten(state)
    assert len(values) == len(expected)
    for i, (a, b) in enumerate(zip(values, expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"value {i}")
    if case == "lstm_peepholes_clip_proj":
        assert np.max(np.abs(state[0])) == pytest.approx(0.6) and np.max(np.abs(state[1])) == pytest.approx(0.2)


def test_cell_called_directly_with_scope_and_reused():
    """A cell called by hand opens its scope once: `scope` names it, later calls share the variables,
    and another cell in the same scope gets TF's unique name (basic_lstm_cell_1)."""
    x = tf.placeholder(tf.float32, [2, 3])
    cell = tf.nn.rnn_cell.BasicLSTMCell(4)
    state = cell.zero_state(2, tf.float32)
    with tf.variable_scope("outer"):
        out1, state1 = cell(x, state, scope="mine")
        out2, _ = cell(x, state1)
        other = tf.nn.rnn_cell.BasicLSTMCell(4)
        other(x, other.zero_state(2, tf.float32))
        third = tf.nn.rnn_cell.BasicLSTMCell(4)
        third(x, third.zero_state(2, tf.float32))
    assert [v.name for v in tf.global_variables()] == [
        "outer/mine/kernel:0", "outer/mine/bias:0", "outer/basic_lstm_cell/kernel:0", "outer/basic_lstm_cell/bias:0",
        "outer/basic_lstm_cell_1/kernel:0", "outer/basic_lstm_cell_1/bias:0"]
    assert [v.name for v in cell.variables] == ["outer/mine/kernel:0", "outer/mine/bias:0"]
    assert cell.trainable_variables == cell.variables
    assert out1.shape.as_list() == [2, 4] and out2.shape.as_list() == [2, 4]


def test_scope_initializer_is_used():
    """A variable scope's initializer reaches the cell's kernel (as TF's rnn_cell tests rely on);
    the bias keeps its zeros."""
    x = tf.placeholder(tf.float32, [2, 3])
    with tf.variable_scope("root", initializer=tf.constant_initializer(0.5)):
        cell = tf.nn.rnn_cell.BasicRNNCell(2)
        out, _ = cell(x, tf.zeros([2, 2]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias = sess.run(cell.variables)
        got = sess.run(out, {x: np.ones((2, 3))})
    assert np.all(kernel == 0.5) and np.all(bias == 0)
    np.testing.assert_allclose(got, np.tanh(np.full((2, 2), 1.5)), rtol=1e-6)


@pytest.mark.parametrize("make_cell, size", [
    (lambda: tf.nn.rnn_cell.BasicLSTMCell(4), ((3, 4), (3, 4))),
    (lambda: tf.nn.rnn_cell.BasicLSTMCell(4, state_is_tuple=False), (3, 8)),
    (lambda: tf.nn.rnn_cell.LSTMCell(4, num_proj=2), ((3, 4), (3, 2))),
    (lambda: tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(2), tf.nn.rnn_cell.BasicLSTMCell(5)]),
     ((3, 2), ((3, 5), (3, 5)))),
])
def test_zero_state(make_cell, size):
    cell = make_cell()
    state = cell.zero_state(3, tf.float64)
    shapes = tf.nest.map_structure(lambda t: tuple(t.shape.as_list()), state)
    assert shapes == size
    if isinstance(size[0], tuple) and len(size) == 2 and not isinstance(size[1][0], tuple):
        assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple) and state.dtype == tf.float64
    with tf.Session() as sess:
        assert all(np.all(v == 0) and v.dtype == np.float64 for v in flatten(sess.run(state)))


def test_zero_state_of_a_batch_known_when_run():
    """static_rnn over inputs of unknown batch size: the zero state follows each run's batch."""
    xs = [tf.placeholder(tf.float32, [None, DEPTH]) for _ in range(2)]
    outputs, state = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(3), xs, dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in (1, 5):
            c, h = sess.run(state, {x: np.ones((batch, DEPTH)) for x in xs})
            assert c.shape == h.shape == (batch, 3)


def _dropout_run(keep, which, seed=None, steps=2, batch=2000):
    x = tf.placeholder(tf.float32, [batch, DEPTH])
    inputs = [x] * steps
    cell = tf.nn.rnn_cell.BasicLSTMCell(3)
    kwargs = {f"{which}_keep_prob": keep}
    with tf.variable_scope("plain"):
        plain, plain_state = tf.nn.static_rnn(cell, inputs, dtype=tf.float32)
    wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, seed=seed, **kwargs)
    with tf.variable_scope("plain", reuse=True):
        dropped, dropped_state = tf.nn.static_rnn(wrapped, inputs, dtype=tf.float32)
    return x, plain, plain_state, dropped, dropped_state


@pytest.mark.parametrize("keep", [0.6, "tensor"])
def test_dropout_wrapper_outputs(keep):
    """output_keep_prob: each output is 0 or the plain output / keep, kept at about keep's rate,
    with a new mask at every step; keep_prob may be a fed tensor."""
    p = tf.placeholder(tf.float32, []) if keep == "tensor" else keep
    x, plain, _, dropped, _ = _dropout_run(p, "output")
    feed = {x: np.random.default_rng(0).standard_normal((2000, DEPTH))}
    if keep == "tensor":
        feed[p] = 0.6
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([plain, dropped], feed)
    masks = []
    for step_plain, step_dropped in zip(a, b):
        kept = step_dropped != 0
        np.testing.assert_allclose(step_dropped[kept], step_plain[kept] / 0.6, rtol=1e-6)
        assert abs(kept.mean() - 0.6) < 0.02
        masks.append(kept)
    assert (masks[0] != masks[1]).mean() > 0.3


def test_dropout_wrapper_state_keeps_c_and_keep_one_adds_nothing():
    x, _, plain_state, _, dropped_state = _dropout_run(0.5, "state", steps=1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        (c0, h0), (c1, h1) = sess.run([plain_state, dropped_state], {x: np.ones((2000, DEPTH))})
    np.testing.assert_array_equal(c0, c1)  # the memory c is never dropped
    kept = h1 != 0
    np.testing.assert_allclose(h1[kept], h0[kept] / 0.5, rtol=1e-6)
    assert abs(kept.mean() - 0.5) < 0.03
    tf.reset_default_graph()
    ops_before = len(tf.get_default_graph().get_operations())
    tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), input_keep_prob=1.0, output_keep_prob=tf.constant(1.0))
    assert all(op.type == "Const" for op in tf.get_default_graph().get_operations()[ops_before:])


def test_variational_dropout_keeps_one_mask_over_steps():
    x = tf.placeholder(tf.float32, [500, DEPTH])
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(200), output_keep_prob=0.5,
                                         variational_recurrent=True, dtype=tf.float32, seed=3)
    outputs, _ = tf.nn.static_rnn(cell, [x, x, x], dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(outputs, {x: np.ones((500, DEPTH))})
    masks = [v != 0 for v in values]
    assert (masks[0] == masks[1]).all() and (masks[1] == masks[2]).all()
    assert (masks[0] == masks[0][:1]).all()  # one mask for every batch entry, as TF's [1, size] noise
    assert 0.35 < masks[0].mean() < 0.65


def test_bad_inputs():
    cell = tf.nn.rnn_cell.BasicLSTMCell(3)
    x3 = tf.placeholder(tf.float32, [2, 3, 4])
    with pytest.raises(ValueError, match=r"BasicLSTMCell 'basic_lstm_cell': inputs must be 2-D .*found ndim=3.*\n"
                                         r"  op defined at .*test_rnn_cells.py"):
        cell(x3, cell.zero_state(2, tf.float32))
    with pytest.raises(ValueError, match=r"GRUCell '.*': Expected inputs.shape\[-1\] to be known"):
        tf.nn.rnn_cell.GRUCell(2)(tf.placeholder(tf.float32, [2, None]), tf.zeros([2, 2]))
    with pytest.raises(ValueError, match=r"BasicRNNCell '.*': RNN cell only supports floating point inputs, but "
                                         r"saw dtype: int32"):
        tf.nn.rnn_cell.BasicRNNCell(2)(tf.placeholder(tf.int32, [2, 3]), tf.zeros([2, 2], tf.int32))
    with pytest.raises(ValueError, match=r"BasicLSTMCell '.*': state must be a \(c, h\) tuple"):
        tf.nn.rnn_cell.BasicLSTMCell(2)(tf.placeholder(tf.float32, [2, 3]), tf.zeros([2, 4]))
    with pytest.raises(ValueError, match=r"ConcatV2 .*"):  # a state of the wrong batch size
        tf.nn.rnn_cell.BasicRNNCell(2)(tf.placeholder(tf.float32, [2, 3]), tf.zeros([5, 2]))
    with pytest.raises(ValueError, match="Must specify at least one cell for MultiRNNCell"):
        tf.nn.rnn_cell.MultiRNNCell([])
    with pytest.raises(ValueError, match="state_is_tuple is not set"):
        tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(2)], state_is_tuple=False)
    with pytest.raises(ValueError, match="Parameter output_keep_prob must be between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=1.5)
    with pytest.raises(TypeError, match="is not an RNNCell"):
        tf.nn.rnn_cell.DropoutWrapper(object())
    # the graph stays usable
    y = tf.placeholder(tf.float32, [2, 3])
    out, _ = tf.nn.rnn_cell.BasicRNNCell(2)(y, tf.zeros([2, 2]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out, {y: np.zeros((2, 3))}).shape == (2, 2)
