"""tf.contrib.legacy_seq2seq against TF 1.15's seq2seq.py composed again on
tensorflow.compat.v1 (legacy_seq2seq_ref.py), run side by side with TensorFlow's initial weights
copied in by name: the variable names (also against the names read from the r1.15 source and the
translate tutorial's checkpoints), outputs, final states and tf.gradients of a loss to 1e-5, and a
few steps of training of embedding_attention_seq2seq under model_with_buckets with equal losses
to 1e-4; the attention decoder's gradients against float64 finite differences; the sequence
losses against NumPy."""
import warnings

import numpy as np
import pytest

import legacy_seq2seq_ref
import pygrad as tf
from rnn_check import check_model_gradients, flatten, peer

B, ENC, DEC, VOCAB_IN, VOCAB_OUT, EMB = 3, 4, 3, 7, 9, 5
RNG = np.random.default_rng(11)
ENC_IDS = RNG.integers(0, VOCAB_IN, (ENC, B)).astype(np.int32)
DEC_IDS = RNG.integers(0, VOCAB_OUT, (DEC, B)).astype(np.int32)
ENC_X, DEC_X = RNG.standard_normal((ENC, B, 3)).astype("f"), RNG.standard_normal((DEC, B, 3)).astype("f")


def _lib_seq2seq(lib):
    return tf.contrib.legacy_seq2seq if lib is tf else legacy_seq2seq_ref.seq2seq(lib)


def _run(lib, build, weights=None, feed_values=None):
    """build(lib) -> (outputs, state) in a new graph of lib; with weights ({name: value}) loaded.
    Returns the variables' names and values, the outputs and final state, and the gradients of a
    fixed random weighting of them with respect to every trainable variable (dense)."""
    graph = lib.Graph()
    with graph.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TensorFlow's deprecation warnings
        outputs, state = build(lib)
        values = flatten(outputs) + flatten(state)
        rng = np.random.default_rng(0)
        loss = lib.add_n([lib.reduce_sum(v * rng.standard_normal(v.shape.as_list()).astype(np.float32))
                          for v in values])
        variables = lib.trainable_variables()
        grads = [lib.convert_to_tensor(g) if g is not None else lib.zeros_like(v)  # None: not on a path to the loss
                 for g, v in zip(lib.gradients(loss, variables), variables)]
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            if weights is not None:
                for v in variables:
                    v.load(weights[v.op.name], sess)
            out = sess.run({"weights": variables, "values": values, "grads": grads}, feed_values or {})
    names = [v.op.name for v in variables]
    return {"names": names, "shapes": [v.shape.as_list() for v in variables],
            "weights": dict(zip(names, out["weights"])), "values": out["values"], "grads": out["grads"]}


def _compare(build, feed_values=None):
    """pygrad's model equals the reference's: names, values and gradients (1e-5)."""
    want = _run(peer(), build)
    got = _run(tf, build, want["weights"], feed_values)
    assert got["names"] == want["names"]
    for i, (a, b) in enumerate(zip(got["values"] + got["grads"], want["values"] + want["grads"])):
        what = f"value {i}" if i < len(got["values"]) else f"gradient of {got['names'][i - len(got['values'])]}"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=what)
    return got


def _ids(lib, steps):
    """One constant per step (ids [batch], or inputs [batch, depth])."""
    return [lib.constant(row) for row in steps]


def _multi_gru(lib):
    return lib.nn.rnn_cell.MultiRNNCell([lib.nn.rnn_cell.GRUCell(6), lib.nn.rnn_cell.GRUCell(6)])


def _attention(lib, cell, **kw):
    return _lib_seq2seq(lib).embedding_attention_seq2seq(_ids(lib, ENC_IDS), _ids(lib, DEC_IDS), cell, VOCAB_IN,
                                                         VOCAB_OUT, EMB, **kw)


def _projected(lib, feed_previous):
    w = lib.get_variable("proj_w", [6, VOCAB_OUT])
    b = lib.get_variable("proj_b", [VOCAB_OUT])
    return _attention(lib, lib.nn.rnn_cell.GRUCell(6), output_projection=(w, b), feed_previous=feed_previous)


MODELS = {
    "attention_multi_gru": lambda lib: _attention(lib, _multi_gru(lib)),
    "attention_lstm_two_heads_feed_previous": lambda lib: _attention(
        lib, lib.nn.rnn_cell.BasicLSTMCell(6), num_heads=2, initial_state_attention=True, feed_previous=True),
    "attention_output_projection_feed_previous": lambda lib: _projected(lib, True),
    "embedding_rnn": lambda lib: _lib_seq2seq(lib).embedding_rnn_seq2seq(
        _ids(lib, ENC_IDS), _ids(lib, DEC_IDS), lib.nn.rnn_cell.GRUCell(5), VOCAB_IN, VOCAB_OUT, EMB),
    "embedding_rnn_feed_previous": lambda lib: _lib_seq2seq(lib).embedding_rnn_seq2seq(
        _ids(lib, ENC_IDS), _ids(lib, DEC_IDS), lib.nn.rnn_cell.BasicLSTMCell(5), VOCAB_IN, VOCAB_OUT, EMB,
        feed_previous=True),
    "basic_rnn": lambda lib: _lib_seq2seq(lib).basic_rnn_seq2seq(
        _ids(lib, ENC_X), _ids(lib, DEC_X), lib.nn.rnn_cell.BasicLSTMCell(4)),
    "tied_rnn": lambda lib: _lib_seq2seq(lib).tied_rnn_seq2seq(_ids(lib, ENC_X), _ids(lib, DEC_X),
                                                               lib.nn.rnn_cell.GRUCell(3)),
}


@pytest.mark.parametrize("case", sorted(MODELS))
def test_models_match_tensorflow(case):
    _compare(MODELS[case])


def test_attention_seq2seq_variable_names_are_tf1s():
    """The names and shapes TF 1.15's seq2seq.py and core_rnn_cell.py give (the translate tutorial's
    checkpoints), in the order they are made."""
    got = _run(tf, MODELS["attention_multi_gru"])
    enc = "embedding_attention_seq2seq/rnn/embedding_wrapper/"
    dec = "embedding_attention_seq2seq/embedding_attention_decoder/"
    att = dec + "attention_decoder/"

    def gru(prefix, depth):
        return [(f"{prefix}multi_rnn_cell/cell_{i}/gru_cell/{p}", s) for i, d in enumerate([depth, 6])
                for p, s in (("gates/kernel", [d + 6, 12]), ("gates/bias", [12]), ("candidate/kernel", [d + 6, 6]),
                             ("candidate/bias", [6]))]

    expected = ([(enc + "embedding", [VOCAB_IN, EMB])] + gru(enc, EMB) + [
        (dec + "embedding", [VOCAB_OUT, EMB]), (att + "AttnW_0", [1, 1, 6, 6]), (att + "AttnV_0", [6]),
        (att + "kernel", [EMB + 6, EMB]), (att + "bias", [EMB])] + gru(att + "output_projection_wrapper/", EMB) + [
        (att + "output_projection_wrapper/kernel", [6, VOCAB_OUT]),
        (att + "output_projection_wrapper/bias", [VOCAB_OUT]),
        (att + "Attention_0/kernel", [12, 6]), (att + "Attention_0/bias", [6]),  # the query: both GRUs' states
        # The cell's output is already projected to the vocabulary (TF's warning about this model's size).
        (att + "AttnOutputProjection/kernel", [VOCAB_OUT + 6, VOCAB_OUT]),
        (att + "AttnOutputProjection/bias", [VOCAB_OUT])])
    assert list(zip(got["names"], got["shapes"])) == expected


@pytest.mark.parametrize("model", ["embedding_rnn_seq2seq", "embedding_attention_seq2seq"])
def test_feed_previous_tensor_chooses_at_run_time(model):
    """feed_previous as a bool tensor: one graph, both decoders; fed True it gives the greedy
    decoder's outputs, fed False the teacher-forced ones (each against the reference built with a
    Python bool, from the same weights)."""
    v1 = peer()

    def build(feed):
        def make(lib):
            fn = getattr(_lib_seq2seq(lib), model)
            return fn(_ids(lib, ENC_IDS), _ids(lib, DEC_IDS), lib.nn.rnn_cell.GRUCell(5), VOCAB_IN, VOCAB_OUT, EMB,
                      feed_previous=feed)
        return make

    for value in (True, False):
        want = _run(v1, build(value))
        flag = {}

        def with_tensor(lib):
            flag["t"] = tf.placeholder(tf.bool, [])
            return build(flag["t"])(lib)

        graph = tf.Graph()
        with graph.as_default():
            outputs, state = with_tensor(tf)
            with tf.Session() as sess:
                for v in tf.trainable_variables():
                    v.load(want["weights"][v.op.name], sess)
                got = sess.run(flatten(outputs) + flatten(state), {flag["t"]: value})
            assert sorted(v.op.name for v in tf.trainable_variables()) == sorted(want["names"])
        for a, b in zip(got, want["values"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_attention_decoder_gradients_match_finite_differences():
    """attention_decoder in float64 with two heads and initial_state_attention: gradients with
    respect to the decoder inputs, the attention states and every variable."""
    def build(lib, xs):
        *decoder_inputs, states = xs
        cell = lib.nn.rnn_cell.GRUCell(3)
        init = lib.tanh(lib.reduce_mean(states, 1)[:, :3])
        return lib.contrib.legacy_seq2seq.attention_decoder(decoder_inputs, init, states, cell, output_size=4,
                                                            num_heads=2, dtype=lib.float64,
                                                            initial_state_attention=True)

    rng = np.random.default_rng(2)
    check_model_gradients(build, [rng.standard_normal((2, 3)) for _ in range(3)] + [rng.standard_normal((2, 4, 5))])


def _np_loss_by_example(logits, targets, weights, average=True):
    logits, targets, weights = np.array(logits), np.array(targets), np.array(weights)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    crossent = -np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    total = (crossent * weights).sum(0)
    return total / (weights.sum(0) + 1e-12) if average else total


@pytest.mark.parametrize("avg_time,avg_batch", [(True, True), (False, True), (True, False), (False, False)])
def test_sequence_losses_match_numpy(avg_time, avg_batch):
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((3, 4, 6)).astype("f")
    targets = rng.integers(0, 6, (3, 4)).astype(np.int32)
    weights = (rng.random((3, 4)) > 0.3).astype("f")
    s2s = tf.contrib.legacy_seq2seq
    args = ([tf.constant(x) for x in logits], [tf.constant(x) for x in targets], [tf.constant(x) for x in weights])
    by_example = s2s.sequence_loss_by_example(*args, average_across_timesteps=avg_time)
    total = s2s.sequence_loss(*args, average_across_timesteps=avg_time, average_across_batch=avg_batch)
    custom = s2s.sequence_loss_by_example(*args, softmax_loss_function=lambda labels, logits: tf.reduce_sum(
        logits, 1) * tf.cast(labels, tf.float32))
    with tf.Session() as sess:
        got = sess.run([by_example, total, custom])
    want = _np_loss_by_example(logits, targets, weights, avg_time)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want.sum() / (4 if avg_batch else 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], (logits.sum(-1) * targets * weights).sum(0) / (weights.sum(0) + 1e-12),
                               rtol=1e-5, atol=1e-5)


def test_model_with_buckets_trains_like_tensorflow():
    """The translate tutorial's model: embedding_attention_seq2seq (one cell object for every
    bucket, as the tutorial passes it) under model_with_buckets with two buckets, trained by SGD on
    the sum of the buckets' losses for six steps on one batch: every step's losses equal the reference's
    (1e-4), which builds the same model with TensorFlow from the same initial weights."""
    v1 = peer()
    buckets, steps, rng = [(2, 2), (ENC, DEC)], 6, np.random.default_rng(5)
    batches = [(rng.integers(0, VOCAB_IN, (ENC, B)), rng.integers(0, VOCAB_OUT, (DEC, B)),
                rng.integers(0, VOCAB_OUT, (DEC, B)), (rng.random((DEC, B)) > 0.2).astype("f"))] * steps

    def train(lib, weights=None):
        with lib.Graph().as_default(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = [lib.placeholder(lib.int32, [None]) for _ in range(ENC)]
            dec = [lib.placeholder(lib.int32, [None]) for _ in range(DEC)]
            tgt = [lib.placeholder(lib.int32, [None]) for _ in range(DEC)]
            wts = [lib.placeholder(lib.float32, [None]) for _ in range(DEC)]
            if lib is tf:
                cell = lib.nn.rnn_cell.GRUCell(8)
                model = lambda x, y: tf.contrib.legacy_seq2seq.embedding_attention_seq2seq(  # noqa: E731
                    x, y, cell, VOCAB_IN, VOCAB_OUT, EMB)
                _, losses = tf.contrib.legacy_seq2seq.model_with_buckets(enc, dec, tgt, wts, buckets, model)
            else:  # TF cannot copy a built cell: a new cell per bucket, sharing variables by scope
                ref = legacy_seq2seq_ref.seq2seq(lib)
                model = lambda x, y: ref.embedding_attention_seq2seq(  # noqa: E731
                    x, y, lib.nn.rnn_cell.GRUCell(8), VOCAB_IN, VOCAB_OUT, EMB)
                _, losses = ref.model_with_buckets(enc, dec, tgt, wts, buckets, model)
            step = lib.train.GradientDescentOptimizer(0.5).minimize(lib.add_n(losses))
            variables = lib.trainable_variables()
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                if weights is not None:
                    for v in variables:
                        v.load(weights[v.op.name], sess)
                start = {v.op.name: sess.run(v) for v in variables}
                history = []
                for e, d, t, w in batches:
                    feed = {**dict(zip(enc, e)), **dict(zip(dec, d)), **dict(zip(tgt, t)), **dict(zip(wts, w))}
                    history.append(sess.run(losses + [step], feed)[:-1])
        return start, history

    start, want = train(v1)
    _, got = train(tf, start)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.mean(got[-1]) < np.mean(got[0])


def test_bad_arguments_raise():
    s2s = tf.contrib.legacy_seq2seq
    x = [tf.constant([1, 2])] * 2
    with pytest.raises(ValueError, match=r"Length of encoder_inputs \(2\) must be at least that of last bucket \(3\)"):
        s2s.model_with_buckets(x, x, x, x, [(3, 2)], lambda a, b: None)
    with pytest.raises(ValueError, match="Lengths of logits, weights, and targets must be the same 1, 2, 2"):
        s2s.sequence_loss_by_example([tf.zeros([2, 3])], x, x)
    with pytest.raises(ValueError, match="Must provide at least 1 input"):
        s2s.attention_decoder([], None, tf.zeros([2, 3, 4]), tf.nn.rnn_cell.GRUCell(2))
    with pytest.raises(ValueError, match=r"Shape\[2\] of attention_states must be known"):
        s2s.attention_decoder([tf.zeros([2, 3])], None, tf.placeholder(tf.float32, [2, 3, None]),
                              tf.nn.rnn_cell.GRUCell(2))
    with pytest.raises(ValueError, match=r"(?s)embedding_attention_decoder.*output_projection must be.*"
                                         r"test_legacy_seq2seq"):
        s2s.embedding_attention_seq2seq(x, x, tf.nn.rnn_cell.GRUCell(2), 4, 5, 3,
                                        output_projection=(tf.zeros([2, 6]), tf.zeros([6])))
