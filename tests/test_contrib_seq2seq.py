"""tf.contrib.seq2seq against NumPy references written from TF 1.15's contrib/seq2seq sources
(tests/seq2seq_reference.py, which imports no pygrad): the attention wrapper's steps, greedy and
beam-search decoding from the same weights (float64, 1e-9), gather_tree (TF 2.21 has no GatherTree
op to compare with), sequence_loss; gradients of a training graph by central differences in
float64 (rnn_check.check_model_gradients); TF1's variable names as read in the r1.15 sources; and
the issue's done-when: an attention model trained on a reverse task whose beam-search decode equals
the reference's from the trained weights."""
import numpy as np
import pytest

import pygrad as tf
import seq2seq_reference as ref
from rnn_check import check_model_gradients
from pygrad.contrib import seq2seq

RNG = np.random.default_rng(5)
B, S, E, H, U, A, V = 3, 5, 4, 6, 5, 4, 8  # batch, memory steps, embedding, units, attention units/layer, vocab
GO, EOS = 1, 2
LENGTHS = np.array([5, 3, 4], np.int32)


def weights_of(sess):
    return {v.op.name: sess.run(v) for v in tf.global_variables()}


def build_decoder_cell(memory, lengths, dtype, mechanism="bahdanau", **kw):
    """An AttentionWrapper over LSTMCell(H) with attention_layer_size A on memory."""
    if mechanism == "bahdanau":
        att = seq2seq.BahdanauAttention(U, memory, memory_sequence_length=lengths, dtype=dtype, **kw)
    else:
        att = seq2seq.LuongAttention(H, memory, memory_sequence_length=lengths, dtype=dtype, **kw)
    return seq2seq.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(H), att, attention_layer_size=A)


@pytest.mark.parametrize("mechanism, kw", [("bahdanau", {}), ("bahdanau", {"normalize": True}),
                                           ("luong", {}), ("luong", {"scale": True})])
def test_training_decoder_matches_reference(mechanism, kw):
    """TrainingHelper + AttentionWrapper + BasicDecoder, float64: every step's logits and sample
    ids, the final state, and the sequence lengths against the NumPy wrapper step, 1e-9. Variable
    names are TF 1.15's (memory_layer in the scope the mechanism is made in; query_layer,
    attention_v/g/b and attention_layer under decoder/attention_wrapper)."""
    memory = RNG.standard_normal((B, S, H))
    inputs = RNG.standard_normal((B, 4, E))
    target_lengths = np.array([4, 2, 3], np.int32)
    cell = build_decoder_cell(tf.constant(memory), LENGTHS, tf.float64, mechanism, **kw)
    helper = seq2seq.TrainingHelper(tf.constant(inputs), target_lengths)
    decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(B, tf.float64),
                                   output_layer=tf.layers.Dense(V, name="output_projection"))
    outputs, state, lengths = seq2seq.dynamic_decode(decoder, impute_finished=True)
    names = sorted(v.op.name for v in tf.global_variables())
    scope = "decoder/attention_wrapper"
    want = ["decoder/output_projection/bias", "decoder/output_projection/kernel", f"{scope}/attention_layer/kernel",
            f"{scope}/lstm_cell/bias", f"{scope}/lstm_cell/kernel", "memory_layer/kernel"]
    if mechanism == "bahdanau":
        want += [f"{scope}/bahdanau_attention/attention_v", f"{scope}/bahdanau_attention/query_layer/kernel"]
        want += [f"{scope}/bahdanau_attention/attention_{x}" for x in "bg"] if kw else []
    else:
        want += [f"{scope}/luong_attention/attention_g"] if kw else []
    assert names == sorted(want)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w = weights_of(sess)
        got, got_state, got_lengths = sess.run([outputs, state, lengths])
    mask = np.arange(S) < LENGTHS[:, None]
    values = memory * mask[:, :, None]
    keys = values @ w["memory_layer/kernel"]
    fn = ref.bahdanau if mechanism == "bahdanau" else ref.luong
    st = (np.zeros((B, H)), np.zeros((B, H)), np.zeros((B, A)))
    logits = []
    for t in range(4):
        out, (c, h, att, align) = ref.attention_step(w, scope, inputs[:, t], st, values, keys, mask, fn, **kw)
        alive = (t < target_lengths)[:, None]
        st = tuple(np.where(alive, new, old) for new, old in zip((c, h, att), st))
        step_logits = out @ w["decoder/output_projection/kernel"] + w["decoder/output_projection/bias"]
        logits.append(np.where(alive, step_logits, 0))
    logits = np.stack(logits, 1)
    np.testing.assert_allclose(got.rnn_output, logits, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(got.sample_id, np.where(np.arange(4) < target_lengths[:, None],
                                                          logits.argmax(-1), 0))
    np.testing.assert_allclose(got_state.cell_state.h, st[1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_state.attention, st[2], rtol=1e-9, atol=1e-9)
    assert got_lengths.tolist() == target_lengths.tolist() and got_state.time == 4  # a scalar is not copied through


def test_training_graph_gradients_finite_differences():
    """Gradients of TrainingHelper + AttentionWrapper (Bahdanau, normalized) + sequence_loss with
    respect to the memory, the decoder inputs and every variable, float64 central differences."""
    memory = RNG.standard_normal((B, S, H))
    inputs = RNG.standard_normal((B, 4, E))
    targets = RNG.integers(0, V, (B, 3)).astype(np.int32)
    target_lengths = np.array([3, 2, 3], np.int32)

    def build(tf, xs):
        cell = build_decoder_cell(xs[0], LENGTHS, tf.float64, normalize=True)
        helper = seq2seq.TrainingHelper(xs[1], target_lengths)
        decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(B, tf.float64), output_layer=tf.layers.Dense(V))
        outputs, state, _ = seq2seq.dynamic_decode(decoder)
        loss = seq2seq.sequence_loss(outputs.rnn_output, targets,
                                     tf.sequence_mask(target_lengths, 3, dtype=tf.float64))
        return (tf.reshape(outputs.rnn_output, [B, 3, V]), loss), state.cell_state  # 3 steps: the longest

    check_model_gradients(build, [memory, inputs])


def _greedy_reference(w, embedding, memory, max_steps):
    mask = np.arange(S) < LENGTHS[:, None]
    values = memory * mask[:, :, None]
    keys = values @ w["memory_layer/kernel"]
    st = (np.zeros((B, H)), np.zeros((B, H)), np.zeros((B, A)))
    x, finished, ids, lengths = embedding[np.full(B, GO)], np.zeros(B, bool), [], np.zeros(B, np.int32)
    for t in range(max_steps):
        out, (c, h, att, _) = ref.attention_step(w, "decoder/attention_wrapper", x, st, values, keys, mask)
        st = (c, h, att)
        step_ids = (out @ w["decoder/dense/kernel"] + w["decoder/dense/bias"]).argmax(-1)
        lengths = np.where(finished, lengths, t + 1)
        finished = finished | (step_ids == EOS)
        ids.append(step_ids)
        x = embedding[step_ids]
        if finished.all():
            break
    return np.stack(ids, 1), lengths


@pytest.mark.parametrize("time_major", [False, True])
def test_greedy_decode_matches_reference(time_major):
    """GreedyEmbeddingHelper with maximum_iterations: the ids, the number of steps (until every
    entry emitted EOS or the limit) and the sequence lengths, as the NumPy loop; output_time_major
    transposes."""
    memory, embedding = RNG.standard_normal((B, S, H)), RNG.standard_normal((V, E)) * 3
    cell = build_decoder_cell(tf.constant(memory), LENGTHS, tf.float64)
    helper = seq2seq.GreedyEmbeddingHelper(tf.constant(embedding), tf.fill([B], GO), EOS)
    decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(B, tf.float64), output_layer=tf.layers.Dense(V))
    outputs, _, lengths = seq2seq.dynamic_decode(decoder, maximum_iterations=7, output_time_major=time_major)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ids, got_lengths = sess.run([outputs.sample_id, lengths])
        want, want_lengths = _greedy_reference(weights_of(sess), embedding, memory, 7)
    assert (ids.T if time_major else ids).tolist() == want.tolist()
    assert got_lengths.tolist() == want_lengths.tolist()


def test_gather_tree_matches_kernel_semantics():
    """gather_tree against the GatherTree kernel's loops (NumPy): lengths beyond max_time, 0, and
    end tokens inside a beam's path."""
    T, K = 6, 3
    step_ids = RNG.integers(0, 5, (T, 4, K)).astype(np.int32)
    parent_ids = RNG.integers(0, K, (T, 4, K)).astype(np.int32)
    lengths = np.array([6, 9, 0, 3], np.int32)
    got = tf.Session().run(seq2seq.gather_tree(step_ids, parent_ids, lengths, 2))
    np.testing.assert_array_equal(got, ref.gather_tree(step_ids, parent_ids, lengths, 2))
    with pytest.raises(ValueError, match="step_ids must be a 3-tensor"):
        seq2seq.gather_tree(step_ids[0], parent_ids[0], lengths, 2)


def test_tile_batch_repeats_entries():
    t = RNG.standard_normal((3, 2, 4))
    got = tf.Session().run(seq2seq.tile_batch((tf.constant(t), tf.constant([1, 2, 3])), 2))
    np.testing.assert_array_equal(got[0], np.repeat(t, 2, axis=0))
    assert got[1].tolist() == [1, 1, 2, 2, 3, 3]


def _beam_model(memory, embedding, beam, penalty, maximum_iterations):
    tiled = seq2seq.tile_batch(tf.constant(memory), beam)
    cell = build_decoder_cell(tiled, seq2seq.tile_batch(tf.constant(LENGTHS), beam), tf.float64)
    decoder = seq2seq.BeamSearchDecoder(cell, tf.constant(embedding), tf.fill([B], GO), EOS,
                                        cell.zero_state(B * beam, tf.float64), beam,
                                        output_layer=tf.layers.Dense(V), length_penalty_weight=penalty)
    return seq2seq.dynamic_decode(decoder, maximum_iterations=maximum_iterations)


def _beam_reference(w, embedding, memory, beam, penalty, max_steps):
    mask = np.repeat(np.arange(S) < LENGTHS[:, None], beam, 0)
    values = np.repeat(memory, beam, 0) * mask[:, :, None]
    keys = values @ w["memory_layer/kernel"]

    def step(x, state):
        out, (c, h, att, _) = ref.attention_step(w, "decoder/attention_wrapper", x, state, values, keys, mask)
        return out @ w["decoder/dense/kernel"] + w["decoder/dense/bias"], (c, h, att)

    zeros = (np.zeros((B * beam, H)), np.zeros((B * beam, H)), np.zeros((B * beam, A)))
    return ref.beam_search(step, zeros, lambda ids: embedding[ids], GO, EOS, B, beam, max_steps, penalty)


@pytest.mark.parametrize("penalty", [0.0, 0.8])
def test_beam_search_matches_reference(penalty):
    """BeamSearchDecoder (beam 3, tile_batch, AttentionWrapper) from random float64 weights: the
    predicted ids after gather_tree and every step's scores, as the NumPy beam search (TF's
    log-prob accumulation, finished beams, length penalty, top_k and GatherTree)."""
    memory, embedding = RNG.standard_normal((B, S, H)), RNG.standard_normal((V, E)) * 3
    outputs, state, _ = _beam_model(memory, embedding, 3, penalty, 6)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ids, scores = sess.run([outputs.predicted_ids, outputs.beam_search_decoder_output.scores])
        want_ids, want_scores = _beam_reference(weights_of(sess), embedding, memory, 3, penalty, 6)
    assert ids.tolist() == want_ids.tolist()
    # TF computes the length penalty in float32 (pow's last ulp differs between libraries): 1e-6
    np.testing.assert_allclose(scores, want_scores, rtol=1e-6 if penalty else 1e-9)


@pytest.mark.parametrize("flags", [{}, {"average_across_timesteps": False}, {"average_across_batch": False},
                                   {"average_across_timesteps": False, "average_across_batch": False},
                                   {"average_across_timesteps": False, "average_across_batch": False,
                                    "sum_over_timesteps": True, "sum_over_batch": True},
                                   {"average_across_batch": False, "sum_over_batch": True},
                                   {"average_across_timesteps": False, "sum_over_timesteps": True}])
def test_sequence_loss_matches_reference(flags):
    logits = RNG.standard_normal((3, 4, 5))
    targets = RNG.integers(0, 5, (3, 4)).astype(np.int32)
    weights = (RNG.random((3, 4)) > 0.3) * RNG.random((3, 4))
    weights[1] = 0
    got = tf.Session().run(seq2seq.sequence_loss(tf.constant(logits), targets, tf.constant(weights), **flags))
    np.testing.assert_allclose(got, ref.sequence_loss(logits, targets, weights, **flags), rtol=1e-12, atol=1e-12)


def test_sequence_loss_custom_function_and_errors():
    logits = RNG.standard_normal((2, 3, 4))
    targets = RNG.integers(0, 4, (2, 3)).astype(np.int32)
    called = []

    def loss_fn(labels, logits):
        called.append(labels.shape.as_list())
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits) * 2
    got = tf.Session().run(seq2seq.sequence_loss(tf.constant(logits), targets, tf.ones([2, 3], tf.float64),
                                                 softmax_loss_function=loss_fn))
    assert called == [[6]]
    np.testing.assert_allclose(got, 2 * ref.sequence_loss(logits, targets, np.ones((2, 3))), rtol=1e-12)
    with pytest.raises(ValueError, match="Logits must be a"):
        seq2seq.sequence_loss(tf.constant(logits[0]), targets, tf.ones([2, 3], tf.float64))
    with pytest.raises(ValueError, match="cannot be set to True at same time"):
        seq2seq.sequence_loss(tf.constant(logits), targets, tf.ones([2, 3], tf.float64), sum_over_batch=True)


def test_hardmax_clone_and_errors():
    x = RNG.standard_normal((3, 5))
    got = tf.Session().run(seq2seq.hardmax(tf.constant(x)))
    np.testing.assert_array_equal(got, np.eye(5)[x.argmax(1)])
    memory = tf.constant(RNG.standard_normal((B, S, H)))
    cell = build_decoder_cell(memory, LENGTHS, tf.float64)
    state = cell.zero_state(B, tf.float64)
    fresh = tf.nn.rnn_cell.LSTMStateTuple(tf.ones([B, H], tf.float64), tf.ones([B, H], tf.float64))
    assert state.clone(cell_state=fresh).cell_state.c.shape.as_list() == [B, H]
    with pytest.raises(ValueError, match="does not match the shape"):
        state.clone(attention=tf.zeros([B, A + 1], tf.float64))
    with pytest.raises(ValueError, match="Non-matching batch sizes"):
        cell.zero_state(B + 1, tf.float64)
    helper = seq2seq.GreedyEmbeddingHelper(tf.zeros([V, E], tf.float64), tf.fill([B], GO), EOS)
    decoder = seq2seq.BasicDecoder(cell, helper, state)
    with pytest.raises(ValueError, match="give maximum_iterations as a Python int or a constant"):
        seq2seq.dynamic_decode(decoder)
    with pytest.raises(TypeError, match="helper must be a Helper"):
        seq2seq.BasicDecoder(cell, object(), state)


def test_the_structures_are_tensorflows():
    """The types TF1's contrib.seq2seq hands back: the decoders are Decoders, the mechanisms
    AttentionMechanisms, and the outputs and states the namedtuples of TF's field names."""
    memory = tf.constant(RNG.standard_normal((B, S, H)))
    cell = build_decoder_cell(memory, LENGTHS, tf.float64)
    state = cell.zero_state(B, tf.float64)
    assert isinstance(state, seq2seq.AttentionWrapperState) and state._fields == (
        "cell_state", "attention", "time", "alignments", "alignment_history", "attention_state")
    assert isinstance(seq2seq.LuongAttention(H, memory), seq2seq.AttentionMechanism)
    helper = seq2seq.TrainingHelper(tf.zeros([B, 4, E], tf.float64), [4, 2, 3])
    decoder = seq2seq.BasicDecoder(cell, helper, state)
    assert isinstance(decoder, seq2seq.Decoder)
    out = seq2seq.dynamic_decode(decoder)[0]
    assert isinstance(out, seq2seq.BasicDecoderOutput) and out._fields == ("rnn_output", "sample_id")
    beam_cell = tf.nn.rnn_cell.GRUCell(3, dtype=tf.float64)
    beam = seq2seq.BeamSearchDecoder(beam_cell, tf.ones([V, 3], tf.float64), tf.fill([B], GO), EOS,
                                     beam_cell.zero_state(B * 2, tf.float64), 2)
    final, beam_state, _ = seq2seq.dynamic_decode(beam, maximum_iterations=3)
    assert isinstance(final, seq2seq.FinalBeamSearchDecoderOutput) and final._fields == (
        "predicted_ids", "beam_search_decoder_output")
    assert isinstance(final.beam_search_decoder_output, seq2seq.BeamSearchDecoderOutput)
    assert final.beam_search_decoder_output._fields == ("scores", "predicted_ids", "parent_ids")
    assert isinstance(beam_state, seq2seq.BeamSearchDecoderState) and beam_state._fields == (
        "cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs")


def test_sample_embedding_helper_follows_the_softmax():
    """SampleEmbeddingHelper's first ids are drawn from softmax(logits / temperature): with a
    constant cell output, the frequencies over 3000 entries are within 0.03 of the softmax."""
    logits = np.array([1.0, 0.0, -1.0, 2.0])

    class Const(tf.nn.rnn_cell.RNNCell):
        state_size, output_size = 1, 4

        def call(self, inputs, state):
            return tf.zeros_like(inputs[:, :1]) + tf.constant(logits, tf.float32), state

    n = 3000
    helper = seq2seq.SampleEmbeddingHelper(tf.constant(np.eye(4, dtype=np.float32)), tf.zeros([n], tf.int32), 9,
                                           softmax_temperature=2.0, seed=3)
    decoder = seq2seq.BasicDecoder(Const(), helper, tf.zeros([n, 1]))
    outputs, _, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=1)
    ids = tf.Session().run(outputs.sample_id)[:, 0]
    p = np.exp(logits / 2) / np.exp(logits / 2).sum()
    np.testing.assert_allclose(np.bincount(ids, minlength=4) / n, p, atol=0.03)


# ---- the done-when: a reverse task trained, then decoded by beam search and greedily

VOCAB, MAX_LEN, BATCH, BEAM = 8, 5, 32, 3  # tokens 3..7; 0 pads, 1 starts, 2 ends


def reverse_batch(rng):
    lengths = rng.integers(3, MAX_LEN + 1, BATCH).astype(np.int32)
    src = np.zeros((BATCH, MAX_LEN), np.int32)
    for b, n in enumerate(lengths):
        src[b, :n] = rng.integers(3, VOCAB, n)
    tgt = np.full((BATCH, MAX_LEN + 1), EOS, np.int32)
    for b, n in enumerate(lengths):
        tgt[b, :n] = src[b, :n][::-1]
    dec_in = np.concatenate([np.full((BATCH, 1), GO, np.int32), tgt[:, :-1]], 1)
    return src, lengths, dec_in, tgt


def reverse_model(mode, units=32):
    """The model of the NMT tutorial at toy size: embedding, LSTM encoder (dynamic_rnn), Bahdanau
    attention, AttentionWrapper(LSTMCell) decoder, output projection."""
    src = tf.placeholder(tf.int32, [BATCH, MAX_LEN])
    src_len = tf.placeholder(tf.int32, [BATCH])
    embedding = tf.get_variable("embedding", [VOCAB, 16])
    with tf.variable_scope("encoder"):
        enc_out, enc_state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(units), tf.nn.embedding_lookup(embedding, src),
                                               sequence_length=src_len, dtype=tf.float32)
    projection = tf.layers.Dense(VOCAB, name="output_projection")
    beam = BEAM if mode == "beam" else 1
    memory, lengths, state = (seq2seq.tile_batch(x, beam) for x in (enc_out, src_len, enc_state))
    att = seq2seq.BahdanauAttention(units, memory, memory_sequence_length=lengths)
    cell = seq2seq.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(units), att, attention_layer_size=units)
    init = cell.zero_state(BATCH * beam, tf.float32).clone(cell_state=state)
    feeds = {"src": src, "src_len": src_len}
    if mode == "train":
        feeds["dec_in"] = tf.placeholder(tf.int32, [BATCH, MAX_LEN + 1])
        feeds["tgt"] = tf.placeholder(tf.int32, [BATCH, MAX_LEN + 1])
        helper = seq2seq.TrainingHelper(tf.nn.embedding_lookup(embedding, feeds["dec_in"]), src_len + 1)
        outputs, _, _ = seq2seq.dynamic_decode(seq2seq.BasicDecoder(cell, helper, init, projection))
        weights = tf.sequence_mask(src_len + 1, MAX_LEN + 1, dtype=tf.float32)
        return feeds, seq2seq.sequence_loss(outputs.rnn_output, feeds["tgt"], weights)
    start = tf.fill([BATCH], GO)
    if mode == "greedy":
        helper = seq2seq.GreedyEmbeddingHelper(embedding, start, EOS)
        outputs, _, _ = seq2seq.dynamic_decode(seq2seq.BasicDecoder(cell, helper, init, projection),
                                               maximum_iterations=MAX_LEN + 2)
        return feeds, outputs.sample_id
    decoder = seq2seq.BeamSearchDecoder(cell, embedding, start, EOS, init, BEAM, output_layer=projection,
                                        length_penalty_weight=0.6)
    outputs, _, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=MAX_LEN + 2)
    return feeds, (outputs.predicted_ids, outputs.beam_search_decoder_output.scores)


def token_accuracy(ids, tgt, lengths):
    hits = total = 0
    for b, n in enumerate(lengths):
        got = list(ids[b, :n + 1]) + [None] * (n + 1 - len(ids[b, :n + 1]))
        hits += sum(int(g == t) for g, t in zip(got, tgt[b, :n + 1]))
        total += n + 1
    return hits / total


def test_reverse_task_trains_and_beam_search_matches_reference(tmp_path):
    """Adam on the reverse task for 300 steps; then the greedy and the beam-search (beam 3,
    length penalty 0.6) decodes of fresh sequences reach 0.9 token accuracy, and the beam-search
    ids equal the NumPy beam search's from the checkpointed weights (scores to 1e-4)."""
    rng = np.random.default_rng(0)
    tf.set_random_seed(1)
    feeds, loss = reverse_model("train")
    step = tf.train.AdamOptimizer(0.01).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(300):
            src, lengths, dec_in, tgt = reverse_batch(rng)
            last, _ = sess.run([loss, step], {feeds["src"]: src, feeds["src_len"]: lengths,
                                              feeds["dec_in"]: dec_in, feeds["tgt"]: tgt})
        tf.train.Saver().save(sess, str(tmp_path / "model"))
    assert last < 0.1
    src, lengths, _, tgt = reverse_batch(rng)
    results = {}
    for mode in ("greedy", "beam"):
        tf.reset_default_graph()
        feeds, fetch = reverse_model(mode)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, str(tmp_path / "model"))
            results[mode] = sess.run(fetch, {feeds["src"]: src, feeds["src_len"]: lengths})
            w = weights_of(sess)
    assert token_accuracy(results["greedy"], tgt, lengths) > 0.9
    ids, scores = results["beam"]
    assert token_accuracy(ids[:, :, 0], tgt, lengths) > 0.9
    w = {k: v.astype(np.float64) for k, v in w.items() if v.dtype == np.float32}
    enc_out, (c, h) = ref.encode(w, w["embedding"], src, lengths)
    mask = np.repeat(np.arange(MAX_LEN) < lengths[:, None], BEAM, 0)
    values = np.repeat(enc_out, BEAM, 0)
    keys = values @ w["memory_layer/kernel"]

    def step(x, state):
        out, (c, h, att, _) = ref.attention_step(w, "decoder/attention_wrapper", x, state, values, keys, mask)
        return out @ w["decoder/output_projection/kernel"] + w["decoder/output_projection/bias"], (c, h, att)

    start = (np.repeat(c, BEAM, 0), np.repeat(h, BEAM, 0), np.zeros((BATCH * BEAM, 32)))
    want_ids, want_scores = ref.beam_search(step, start, lambda i: w["embedding"][i], GO, EOS, BATCH, BEAM,
                                            MAX_LEN + 2, 0.6)
    assert ids.tolist() == want_ids.tolist()
    np.testing.assert_allclose(scores, want_scores, rtol=3e-5, atol=3e-5)
