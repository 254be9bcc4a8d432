"""NumPy references for the tf.contrib.seq2seq tests, written from TF 1.15's contrib/seq2seq sources
(attention_wrapper.py, beam_search_decoder.py, the GatherTree kernel, loss.py) and rnn_cell_impl's
LSTMCell; they import no pygrad. Weights are a dict of NumPy arrays keyed by TF1's variable
names (without ":0"). No tests here."""
import numpy as np


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def lstm(kernel, bias, x, c, h):
    """TF's LSTMCell (no peepholes, forget_bias 1): gates i, j, f, o of concat([x, h]) @ kernel."""
    i, j, f, o = np.split(np.concatenate([x, h], -1) @ kernel + bias, 4, -1)
    c = sigmoid(f + 1.0) * c + sigmoid(i) * np.tanh(j)
    return c, sigmoid(o) * np.tanh(c)


def bahdanau(w, scope, query, keys, mask, normalize=False):
    """Alignments [batch, time] of BahdanauAttention (softmax of the scores, -inf past the mask)."""
    processed = query @ w[f"{scope}/bahdanau_attention/query_layer/kernel"]
    v = w[f"{scope}/bahdanau_attention/attention_v"]
    if normalize:
        g, b = w[f"{scope}/bahdanau_attention/attention_g"], w[f"{scope}/bahdanau_attention/attention_b"]
        score = (g * v / np.sqrt((v * v).sum()) * np.tanh(keys + processed[:, None] + b)).sum(-1)
    else:
        score = (v * np.tanh(keys + processed[:, None])).sum(-1)
    score = np.where(mask, score, -np.inf)
    e = np.exp(score - score.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def luong(w, scope, query, keys, mask, scale=False):
    score = np.einsum("bd,btd->bt", query, keys)
    if scale:
        score = w[f"{scope}/luong_attention/attention_g"] * score
    score = np.where(mask, score, -np.inf)
    e = np.exp(score - score.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention_step(w, scope, x, state, values, keys, mask, mechanism=bahdanau, **kw):
    """One AttentionWrapper step over an LSTMCell with attention_layer_size set and
    output_attention=True: (attention, (c, h, attention, alignments))."""
    c, h, attention = state
    c, h = lstm(w[f"{scope}/lstm_cell/kernel"], w[f"{scope}/lstm_cell/bias"], np.concatenate([x, attention], -1),
                c, h)
    alignments = mechanism(w, scope, h, keys, mask, **kw)
    context = np.einsum("bt,btd->bd", alignments, values)
    attention = np.concatenate([h, context], -1) @ w[f"{scope}/attention_layer/kernel"]
    return attention, (c, h, attention, alignments)


def encode(w, embedding, src, lengths):
    """The encoder of the test model: dynamic_rnn of an LSTMCell over embedded src, outputs zero
    and state frozen past each length. Returns (outputs [batch, time, units], (c, h))."""
    kernel, bias = w["encoder/rnn/lstm_cell/kernel"], w["encoder/rnn/lstm_cell/bias"]
    units = bias.shape[0] // 4
    c = h = np.zeros((src.shape[0], units))
    outputs = []
    for t in range(src.shape[1]):
        c2, h2 = lstm(kernel, bias, embedding[src[:, t]], c, h)
        alive = (t < lengths)[:, None]
        c, h = np.where(alive, c2, c), np.where(alive, h2, h)
        outputs.append(np.where(alive, h2, 0))
    return np.stack(outputs, 1), (c, h)


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token):
    """TF's GatherTree kernel: [time, batch, beam] ids along each beam's parents."""
    max_time, batch, beam = step_ids.shape
    beams = np.full_like(step_ids, end_token)
    for b in range(batch):
        length = min(max_time, max_sequence_lengths[b])
        for k in range(beam):
            if length <= 0:
                continue
            beams[length - 1, b, k] = step_ids[length - 1, b, k]
            parent = parent_ids[length - 1, b, k]
            for level in range(length - 2, -1, -1):
                beams[level, b, k] = step_ids[level, b, parent]
                parent = parent_ids[level, b, parent]
            finished = False
            for t in range(length):
                if finished:
                    beams[t, b, k] = end_token
                elif beams[t, b, k] == end_token:
                    finished = True
    return beams


def beam_search(step, state, embed, start_token, end_token, batch, beam, max_steps, length_penalty_weight=0.0):
    """TF's BeamSearchDecoder run by dynamic_decode. step(inputs [batch * beam, ...], state) ->
    (logits [batch * beam, vocab], state), the state a tuple of [batch * beam, ...] arrays.
    Returns (predicted_ids [batch, time, beam] after gather_tree, scores [batch, time, beam])."""
    log_probs = np.tile(np.array([0.0] + [-np.inf] * (beam - 1)), (batch, 1))
    finished = np.tile(np.array([False] + [True] * (beam - 1)), (batch, 1))
    lengths = np.zeros((batch, beam), np.int64)
    inputs = embed(np.full(batch * beam, start_token))
    ids, parents, scores = [], [], []
    rows = np.arange(batch)[:, None]
    for _ in range(max_steps):
        logits, state = step(inputs, state)
        vocab = logits.shape[-1]
        logp = log_softmax(logits.reshape(batch, beam, vocab))
        finished_row = np.full(vocab, np.finfo(logits.dtype).min)
        finished_row[end_token] = 0.0
        logp = np.where(finished[:, :, None], finished_row, logp)
        total = log_probs[:, :, None] + logp
        new_lengths = lengths[:, :, None] + (~finished)[:, :, None] * (np.arange(vocab) != end_token)
        w32 = np.float32(length_penalty_weight)  # TF computes the penalty in float32
        penalty = (np.float32(5) + new_lengths.astype(np.float32)) ** w32 / np.float32(6) ** w32
        flat = (total / penalty).reshape(batch, -1)
        top = np.argsort(-flat, axis=1, kind="stable")[:, :beam]  # top_k: ties to the lower index
        word, parent = top % vocab, top // vocab
        log_probs = total.reshape(batch, -1)[rows, top]
        prev_finished = finished[rows, parent]
        finished = prev_finished | (word == end_token)
        lengths = lengths[rows, parent] + ~prev_finished
        flat_parent = (rows * beam + parent).reshape(-1)
        state = tuple(s[flat_parent] for s in state)
        ids.append(word)
        parents.append(parent)
        scores.append(flat[rows, top])
        if finished.all():
            break
        inputs = embed(word.reshape(-1))
    tree = gather_tree(np.stack(ids), np.stack(parents), lengths.max(1), end_token)
    return tree.transpose(1, 0, 2), np.stack(scores, 1)


def sequence_loss(logits, targets, weights, average_across_timesteps=True, average_across_batch=True,
                  sum_over_timesteps=False, sum_over_batch=False):
    """contrib's sequence_loss in NumPy (0 where a divisor is 0)."""
    crossent = -np.take_along_axis(log_softmax(logits), targets[..., None], -1)[..., 0] * weights

    def div(a, b):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))

    if average_across_timesteps and average_across_batch:
        return div(crossent.sum(), weights.sum())
    if sum_over_timesteps and sum_over_batch:
        return div(crossent.sum(), np.count_nonzero(weights))
    if average_across_timesteps or average_across_batch:
        axis = 0 if average_across_batch else 1
        return div(crossent.sum(axis), weights.sum(axis))
    if sum_over_timesteps or sum_over_batch:
        axis = 0 if sum_over_batch else 1
        return div(crossent.sum(axis), np.count_nonzero(weights, axis))
    return crossent
