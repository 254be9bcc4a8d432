"""tf.contrib.crf: the linear-chain CRF of TF 1.15's tensorflow/contrib/crf, computed as TF's is
(the forward algorithm and the Viterbi pass as dynamic_rnn over the cells below, masks from the
sequence lengths, a single time step handled apart; float32 as TF's, or float64):
crf_log_likelihood (which creates the variable "transitions" when not given one),
crf_sequence_score, crf_unary_score, crf_binary_score, crf_log_norm, crf_decode, and
viterbi_decode in NumPy."""
import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import (
    cast,
    convert_to_tensor,
    expand_dims,
    reshape,
    shape,
    squeeze,
    zeros_like,
)
from pygrad.ops.control_flow_ops import cond
from pygrad.ops.cumulative_ops import reduce_logsumexp
from pygrad.ops.manip_ops import concat, gather, stack, where
from pygrad.ops.math_ops import equal, less_equal, maximum
from pygrad.ops.reduction_ops import argmax, reduce_max, reduce_sum
from pygrad.ops.scatter_ops import gather_nd
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sequence_ops import reverse_sequence, sequence_mask
from pygrad.ops.slice_ops import slice as slice_
from pygrad.ops.variable_scope import get_variable
from pygrad.rnn.cells import RNNCell
from pygrad.rnn.dynamic import dynamic_rnn

__all__ = ["CrfDecodeBackwardRnnCell", "CrfDecodeForwardRnnCell", "CrfForwardRnnCell", "crf_binary_score",
           "crf_decode", "crf_log_likelihood", "crf_log_norm", "crf_sequence_score", "crf_unary_score",
           "viterbi_decode"]


def _check(fn, inputs, rank, what):
    inputs = convert_to_tensor(inputs)
    if inputs.shape.ndims is not None and inputs.shape.ndims != rank:
        raise ValueError(f"{fn}: {what} must have rank {rank}, got shape {inputs.shape}")
    return inputs


def _smart_cond(pred_static, pred, true_fn, false_fn):
    """true_fn() or false_fn() when the time dimension is known, else a cond on pred."""
    if pred_static is not None:
        return true_fn() if pred_static else false_fn()
    return cond(pred, true_fn, false_fn)


def _single_step(inputs):
    """(whether max_seq_len is 1 when known, the runtime test), TF's smart_cond predicate."""
    steps = inputs.shape[1].value
    return (None if steps is None else steps == 1), equal(shape(inputs)[1], 1)


def _less_one(lengths):
    """sequence_lengths - 1, not below 0."""
    return maximum(cast(0, lengths.dtype), lengths - 1)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """[batch] unnormalized scores of the tag sequences: the unary plus the binary scores (one
    time step: the unary score, 0 where the length is 0)."""
    inputs = _check("crf_sequence_score", inputs, 3, "inputs [batch_size, max_seq_len, num_tags]")
    tag_indices = _check("crf_sequence_score", tag_indices, 2, "tag_indices [batch_size, max_seq_len]")
    sequence_lengths = convert_to_tensor(sequence_lengths)

    def single():
        batch = shape(inputs, out_type=tag_indices.dtype)[0]
        example = reshape(range_(batch, dtype=tag_indices.dtype), [-1, 1])
        scores = gather_nd(inputs[:, 0], concat([example, tag_indices[:, :1]], 1))  # the one step
        return where(less_equal(sequence_lengths, 0), zeros_like(scores), scores)

    def multi():
        return (crf_unary_score(tag_indices, sequence_lengths, inputs) +
                crf_binary_score(tag_indices, sequence_lengths, transition_params))

    return _smart_cond(*_single_step(inputs), single, multi)


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """[batch] log partition functions (the forward algorithm), 0 where the length is 0."""
    inputs = _check("crf_log_norm", inputs, 3, "inputs [batch_size, max_seq_len, num_tags]")
    sequence_lengths = convert_to_tensor(sequence_lengths)
    first_input = squeeze(slice_(inputs, [0, 0, 0], [-1, 1, -1]), [1])

    def masked(log_norm):
        return where(less_equal(sequence_lengths, 0), zeros_like(log_norm), log_norm)

    def single():
        return masked(reduce_logsumexp(first_input, [1]))

    def multi():
        rest = slice_(inputs, [0, 1, 0], [-1, -1, -1])
        _, alphas = dynamic_rnn(CrfForwardRnnCell(transition_params), rest, sequence_length=_less_one(
            sequence_lengths), initial_state=first_input, dtype=inputs.dtype)
        return masked(reduce_logsumexp(alphas, [1]))

    return _smart_cond(*_single_step(inputs), single, multi)


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """([batch] log-likelihoods of the tag sequences, the [num_tags, num_tags] transitions):
    transition_params, or else the variable "transitions" of the current variable scope."""
    inputs = _check("crf_log_likelihood", inputs, 3, "inputs [batch_size, max_seq_len, num_tags]")
    num_tags = inputs.shape[2].value
    if transition_params is None:
        if num_tags is None:
            raise ValueError("crf_log_likelihood: the number of tags (inputs' last dimension) must be known "
                             "to create the transitions variable")
        transition_params = get_variable("transitions", [num_tags, num_tags])
    sequence_scores = crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
    log_norm = crf_log_norm(inputs, sequence_lengths, transition_params)
    return sequence_scores - log_norm, transition_params


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """[batch] sums of the tags' unary potentials over each sequence's length."""
    inputs = _check("crf_unary_score", inputs, 3, "inputs [batch_size, max_seq_len, num_tags]")
    tag_indices = _check("crf_unary_score", tag_indices, 2, "tag_indices [batch_size, max_seq_len]")
    batch_size, max_seq_len, num_tags = shape(inputs)[0], shape(inputs)[1], shape(inputs)[2]
    flattened_inputs = reshape(inputs, [-1])
    offsets = expand_dims(range_(batch_size) * max_seq_len * num_tags, 1)
    offsets += expand_dims(range_(max_seq_len) * num_tags, 0)
    if tag_indices.dtype == dtypes.int64:
        offsets = cast(offsets, dtypes.int64)
    flattened_tag_indices = reshape(offsets + tag_indices, [-1])
    unary_scores = reshape(gather(flattened_inputs, flattened_tag_indices), [batch_size, max_seq_len])
    masks = sequence_mask(sequence_lengths, maxlen=shape(tag_indices)[1], dtype=inputs.dtype)
    return reduce_sum(unary_scores * masks, 1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """[batch] sums of the transition potentials between consecutive tags within each length."""
    tag_indices = _check("crf_binary_score", tag_indices, 2, "tag_indices [batch_size, max_seq_len]")
    transition_params = _check("crf_binary_score", transition_params, 2, "transition_params [num_tags, num_tags]")
    num_tags = transition_params.shape[0].value
    if num_tags is None:
        num_tags = cast(shape(transition_params)[0], tag_indices.dtype)
    start_tag_indices, end_tag_indices = tag_indices[:, :-1], tag_indices[:, 1:]  # each transition's ends
    flattened_transition_indices = start_tag_indices * num_tags + end_tag_indices
    binary_scores = gather(reshape(transition_params, [-1]), flattened_transition_indices)
    masks = sequence_mask(sequence_lengths, maxlen=shape(tag_indices)[1], dtype=transition_params.dtype)
    truncated_masks = slice_(masks, [0, 1], [-1, -1])
    return reduce_sum(binary_scores * truncated_masks, 1)


class CrfForwardRnnCell(RNNCell):
    """The forward algorithm's step: alphas' = inputs + logsumexp over the previous tag of
    (alphas + transitions)."""

    def __init__(self, transition_params):
        super().__init__()
        transition_params = convert_to_tensor(transition_params)
        self._transition_params = expand_dims(transition_params, 0)
        self._num_tags = transition_params.shape[0].value

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags

    def __call__(self, inputs, state, scope=None):
        transition_scores = expand_dims(state, 2) + self._transition_params
        new_alphas = inputs + reduce_logsumexp(transition_scores, [1])
        return new_alphas, new_alphas


def viterbi_decode(score, transition_params):
    """(the highest-scoring tag sequence as a list, its score) of a [seq_len, num_tags] score
    matrix, in NumPy."""
    score, transition_params = np.asarray(score), np.asarray(transition_params)
    if score.ndim != 2 or transition_params.shape != (score.shape[1], score.shape[1]):
        raise ValueError(f"viterbi_decode: score must be [seq_len, num_tags] and transition_params "
                         f"[num_tags, num_tags], got {score.shape} and {transition_params.shape}")
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        v = np.expand_dims(trellis[t - 1], 1) + transition_params
        trellis[t] = score[t] + np.max(v, 0)
        backpointers[t] = np.argmax(v, 0)
    viterbi = [np.argmax(trellis[-1])]
    for bp in reversed(backpointers[1:]):
        viterbi.append(bp[viterbi[-1]])
    viterbi.reverse()
    return viterbi, np.max(trellis[-1])


class CrfDecodeForwardRnnCell(CrfForwardRnnCell):
    """The Viterbi forward step: (backpointers, the new scores); a max where the forward
    algorithm takes a logsumexp."""

    def __call__(self, inputs, state, scope=None):
        transition_scores = expand_dims(state, 2) + self._transition_params  # [B, O, O]
        new_state = inputs + reduce_max(transition_scores, [1])
        backpointers = cast(argmax(transition_scores, 1), dtypes.int32)
        return backpointers, new_state


class CrfDecodeBackwardRnnCell(RNNCell):
    """The Viterbi backward step: the previous tag, looked up in the backpointers."""

    def __init__(self, num_tags):
        super().__init__()
        self._num_tags = num_tags

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return 1

    def __call__(self, inputs, state, scope=None):
        state = squeeze(state, axis=[1])
        indices = stack([range_(shape(inputs)[0]), state], axis=1)
        new_tags = expand_dims(gather_nd(inputs, indices), axis=-1)
        return new_tags, new_tags


def crf_decode(potentials, transition_params, sequence_length):
    """([batch, max_seq_len] int32 highest-scoring tags, [batch] their scores), by the Viterbi
    algorithm in the graph."""
    potentials = _check("crf_decode", potentials, 3, "potentials [batch_size, max_seq_len, num_tags]")
    sequence_length = convert_to_tensor(sequence_length)

    def single():
        squeezed = potentials[:, 0]  # the one step
        decode_tags = expand_dims(argmax(squeezed, axis=1), 1)
        return cast(decode_tags, dtypes.int32), reduce_max(squeezed, axis=1)

    def multi():
        num_tags = potentials.shape[2].value
        initial_state = squeeze(slice_(potentials, [0, 0, 0], [-1, 1, -1]), axis=[1])
        inputs = slice_(potentials, [0, 1, 0], [-1, -1, -1])
        length_less_one = _less_one(sequence_length)
        backpointers, last_score = dynamic_rnn(CrfDecodeForwardRnnCell(transition_params), inputs,
                                               sequence_length=length_less_one, initial_state=initial_state,
                                               dtype=dtypes.int32)
        backpointers = reverse_sequence(backpointers, length_less_one, seq_axis=1)
        initial_state = expand_dims(cast(argmax(last_score, axis=1), dtypes.int32), axis=-1)
        decode_tags, _ = dynamic_rnn(CrfDecodeBackwardRnnCell(num_tags), backpointers,
                                     sequence_length=length_less_one, initial_state=initial_state,
                                     dtype=dtypes.int32)
        decode_tags = concat([initial_state, squeeze(decode_tags, axis=[2])], axis=1)
        decode_tags = reverse_sequence(decode_tags, sequence_length, seq_axis=1)
        return decode_tags, reduce_max(last_score, axis=1)

    return _smart_cond(*_single_step(potentials), single, multi)
