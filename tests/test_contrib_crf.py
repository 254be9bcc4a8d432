"""tf.contrib.crf against three references: TF 1.15's crf.py computed with TensorFlow 2.21's raw
ops (tf.compat.v1, the recursions unrolled over the time steps: a peer of the same formulas), a
brute-force NumPy enumeration of every tag sequence (the log partition function and the best
sequence, by definition) on tiny sizes, and TF 1.15's NumPy viterbi_decode as written there.
Gradients are checked by central differences in float64."""
import itertools

import numpy as np
import pytest
from gradcheck import check_grad

import pygrad as tf
from pygrad.contrib import crf

RNG = np.random.default_rng(11)
B, T, N = 4, 4, 3
X = RNG.standard_normal((B, T, N)).astype(np.float32)
TRANS = RNG.standard_normal((N, N)).astype(np.float32)
TAGS = RNG.integers(0, N, (B, T)).astype(np.int32)
LENGTHS = np.array([4, 2, 1, 3], np.int32)


def brute(x, trans, length):
    """(log partition function, best score, best tags) of one sequence by enumerating all tags."""
    scores = {}
    for tags in itertools.product(range(x.shape[1]), repeat=length):
        scores[tags] = sum(x[t, k] for t, k in enumerate(tags)) + sum(
            trans[a, b] for a, b in itertools.pairwise(tags))
    values = np.array(list(scores.values()), np.float64)
    best = max(scores, key=scores.get)
    return np.log(np.sum(np.exp(values - values.max()))) + values.max(), scores[best], list(best)


def sequence_score_np(x, trans, tags, length):
    return sum(x[t, tags[t]] for t in range(length)) + sum(trans[tags[t - 1], tags[t]] for t in range(1, length))


def peer_crf(peer, x, tags, lengths, trans):
    """TF 1.15's crf formulas on TensorFlow's raw ops, the time loop unrolled: (sequence scores,
    unary scores, binary scores, log norms, decoded tags, best scores)."""
    x, trans = peer.constant(x), peer.constant(trans)
    tags, lengths = peer.constant(tags), peer.constant(lengths)
    steps = x.shape[1]
    masks = peer.sequence_mask(lengths, steps, dtype=peer.float32)
    unary = peer.reduce_sum(peer.gather(x, tags, batch_dims=2) * masks, 1)
    binary = peer.reduce_sum(peer.gather(peer.reshape(trans, [-1]), tags[:, :-1] * N + tags[:, 1:]) * masks[:, 1:], 1)
    alphas, score, backpointers = x[:, 0], x[:, 0], []
    for t in range(1, steps):
        active = peer.expand_dims(t < lengths, 1)
        alphas = peer.where_v2(active, x[:, t] + peer.reduce_logsumexp(alphas[:, :, None] + trans[None], [1]), alphas)
        v = score[:, :, None] + trans[None]
        score = peer.where_v2(active, x[:, t] + peer.reduce_max(v, [1]), score)
        backpointers.append(peer.cast(peer.argmax(v, 1), peer.int32))
    log_norm = peer.where(lengths <= 0, peer.zeros([B]), peer.reduce_logsumexp(alphas, [1]))
    last = peer.cast(peer.argmax(score, 1), peer.int32)
    decoded, tag = [None] * steps, last  # tag at position length - 1, walked back through the pointers
    rows = peer.range(B)
    for t in range(steps - 1, -1, -1):
        at_end = peer.equal(t, lengths - 1)
        inside = t < lengths - 1
        follow = peer.gather_nd(backpointers[t], peer.stack([rows, tag], 1)) if t < steps - 1 else tag
        tag = peer.where(at_end, last, peer.where(inside, follow, peer.zeros_like(last)))
        decoded[t] = tag
    with peer.Session() as sess:
        return sess.run([unary + binary, unary, binary, log_norm, peer.stack(decoded, 1), peer.reduce_max(score, 1)])


def run(*fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(fetches))


def test_crf_matches_tf_ops_and_enumeration(tf_peer):
    x, tags, lengths, trans = tf.constant(X), tf.constant(TAGS), tf.constant(LENGTHS), tf.constant(TRANS)
    got = run(crf.crf_sequence_score(x, tags, lengths, trans), crf.crf_unary_score(tags, lengths, x),
              crf.crf_binary_score(tags, lengths, trans), crf.crf_log_norm(x, lengths, trans),
              *crf.crf_decode(x, trans, lengths), crf.crf_log_likelihood(x, tags, lengths, trans)[0])
    graph = tf_peer.Graph()
    with graph.as_default():
        want = peer_crf(tf_peer, X, TAGS, LENGTHS, TRANS)
    for g, w, what in zip(got, want, ["sequence score", "unary", "binary", "log norm", "tags", "best score"]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=what)
    for b, n in enumerate(LENGTHS):
        log_z, best, best_tags = brute(X[b].astype(np.float64), TRANS.astype(np.float64), n)
        np.testing.assert_allclose(got[3][b], log_z, rtol=1e-5)
        np.testing.assert_allclose(got[0][b], sequence_score_np(X[b], TRANS, TAGS[b], n), rtol=1e-5)
        np.testing.assert_allclose(got[6][b], got[0][b] - log_z, rtol=1e-5, atol=1e-5)
        assert got[4][b, :n].tolist() == best_tags and np.all(got[4][b, n:] == 0)
        np.testing.assert_allclose(got[5][b], best, rtol=1e-5)


def test_viterbi_decode_is_the_enumerations_best():
    for n in (1, 2, 4):
        tags, score = crf.viterbi_decode(X[0, :n], TRANS)
        _, best, best_tags = brute(X[0, :n].astype(np.float64), TRANS.astype(np.float64), n)
        assert list(map(int, tags)) == best_tags
        np.testing.assert_allclose(score, best, rtol=1e-6)
    with pytest.raises(ValueError, match="viterbi_decode: score must be"):
        crf.viterbi_decode(X[0], TRANS[:2])


def test_single_step_and_zero_length_as_tfs():
    """max_seq_len 1: the unary score and the first step's logsumexp (0 where the length is 0)."""
    x1, tags1 = X[:, :1], TAGS[:, :1]
    lengths = np.array([1, 0, 1, 1], np.int32)
    score, norm, (decoded, best) = run(crf.crf_sequence_score(x1, tags1, lengths, TRANS),
                                       crf.crf_log_norm(x1, lengths, TRANS), crf.crf_decode(x1, TRANS, lengths))
    rows = np.arange(B)
    want_score = np.where(lengths > 0, x1[rows, 0, tags1[:, 0]], 0)
    want_norm = np.where(lengths > 0, np.log(np.exp(x1[:, 0]).sum(1)), 0)
    np.testing.assert_allclose(score, want_score, rtol=1e-6)
    np.testing.assert_allclose(norm, want_norm, rtol=1e-6)
    assert decoded.tolist() == x1[:, 0].argmax(1)[:, None].tolist() and np.allclose(best, x1[:, 0].max(1))
    # zero lengths among longer sequences: log-likelihood 0, as TF's masks give
    ll = run(crf.crf_log_likelihood(X, TAGS, np.array([4, 0, 2, 0], np.int32), TRANS)[0])[0]
    assert ll[1] == 0 and ll[3] == 0


def test_placeholder_time_dimension_takes_the_cond():
    x = tf.placeholder(tf.float32, [B, None, N])
    ll, _ = crf.crf_log_likelihood(x, tf.placeholder_with_default(TAGS, [B, None]), LENGTHS, TRANS)
    with tf.Session() as sess:
        full = sess.run(ll, {x: X})
    for b, n in enumerate(LENGTHS):
        log_z, _, _ = brute(X[b].astype(np.float64), TRANS.astype(np.float64), n)
        np.testing.assert_allclose(full[b], sequence_score_np(X[b], TRANS, TAGS[b], n) - log_z, rtol=1e-5)


def test_crf_log_likelihood_creates_transitions_and_trains():
    """The variable is named as TF's ("transitions" in the current scope); a few steps of SGD on
    -log-likelihood raise the likelihood."""
    with tf.variable_scope("crf_layer"):
        ll, trans = crf.crf_log_likelihood(tf.constant(X), TAGS, LENGTHS)
    assert trans.op.name == "crf_layer/transitions" and trans.shape.as_list() == [N, N]
    assert trans in tf.trainable_variables()
    step = tf.train.GradientDescentOptimizer(0.5).minimize(-tf.reduce_mean(ll))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(ll).mean()
        for _ in range(5):
            sess.run(step)
        assert sess.run(ll).mean() > before


@pytest.mark.parametrize("lengths", [[4, 2, 1, 3], [4, 4, 4, 4]])
def test_crf_gradients_by_finite_differences(lengths):
    lengths = np.array(lengths, np.int32)
    check_grad(lambda x, t: crf.crf_log_likelihood(x, TAGS, lengths, t)[0],
               [X.astype(np.float64), TRANS.astype(np.float64)])


def test_bad_input_ranks_name_the_function():
    with pytest.raises(ValueError, match=r"crf_log_norm: inputs \[batch_size, max_seq_len, num_tags\] must have rank 3"):
        crf.crf_log_norm(X[0], LENGTHS, TRANS)
    with pytest.raises(ValueError, match=r"crf_binary_score: transition_params \[num_tags, num_tags\] must have rank 2"):
        crf.crf_binary_score(TAGS, LENGTHS, TRANS[0])
    with pytest.raises(ValueError, match="the number of tags"):
        crf.crf_log_likelihood(tf.placeholder(tf.float32, [B, T, None]), TAGS, LENGTHS)


def test_reshape_of_a_variable_reads_it_in_the_new_shape():
    """crf_binary_score flattens the transitions; a variable's read takes the reshape's dims."""
    v = tf.Variable(TRANS)
    flat, expanded = run(tf.reshape(v, [-1]), tf.expand_dims(v, 0))
    np.testing.assert_array_equal(flat, TRANS.reshape(-1))
    np.testing.assert_array_equal(expanded, TRANS[None])
