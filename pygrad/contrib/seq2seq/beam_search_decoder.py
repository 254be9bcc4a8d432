"""tf.contrib.seq2seq's beam search, as TF 1.15's beam_search_decoder.py and its GatherTree
kernel: BeamSearchDecoder keeps beam_width hypotheses per batch entry; each step adds the
log-softmax of the logits to their log-probabilities (a finished beam can only emit end_token, at
no cost), scores the continuations (divided by the length penalty ((5 + length) / 6) **
length_penalty_weight, plus the coverage penalty when weighted), keeps the top beam_width of
each entry's beam_width * vocab_size, and reorders the cell states by the beams they came from.
finalize follows the parent pointers back from the last step (gather_tree) to the predicted ids.

The cell's state must be made for batch_size * beam_width entries: tile_batch repeats each entry
of the encoder's outputs and state beam_width times. gather_tree is composed of ops (a loop
backwards over time) where TF has a kernel."""
import collections

import numpy as np

from pygrad import dtypes, nest
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import (cast, constant_value, convert_to_tensor, expand_dims, ones_like, reshape, shape,
                                  zeros_like)
from pygrad.ops.control_flow_ops import cond, while_loop
from pygrad.ops.cumulative_ops import cumsum
from pygrad.ops.manip_ops import concat, one_hot, tile, where
from pygrad.ops.nn_ops import log_softmax
from pygrad.ops.reduction_ops import reduce_all, reduce_max, reduce_mean, reduce_sum
from pygrad.ops.scatter_ops import gather_nd
from pygrad.ops.manip_ops import stack
from pygrad.ops.tensor_array_ops import TensorArray
from pygrad.ops.topk_ops import top_k
from pygrad.contrib.seq2seq.attention_wrapper import AttentionWrapperState
from pygrad.contrib.seq2seq.basic_decoder import batch_of, check_output_layer, embedding_fn, layer_output_size
from pygrad.contrib.seq2seq.decoder import Decoder
from pygrad.rnn.cells import assert_like_rnncell
from pygrad.shapes import TensorShape, as_shape

__all__ = ["BeamSearchDecoder", "BeamSearchDecoderOutput", "BeamSearchDecoderState", "FinalBeamSearchDecoderOutput",
           "gather_tree", "tile_batch"]


class BeamSearchDecoderState(collections.namedtuple("BeamSearchDecoderState", (
        "cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"))):
    pass


class BeamSearchDecoderOutput(collections.namedtuple("BeamSearchDecoderOutput",
                                                     ("scores", "predicted_ids", "parent_ids"))):
    pass


class FinalBeamSearchDecoderOutput(collections.namedtuple("FinalBeamDecoderOutput",
                                                          ["predicted_ids", "beam_search_decoder_output"])):
    """The predicted ids [batch, time, beam_width] (best beam first) and the step outputs."""


def _rows_then(first, rest):
    """A shape for reshape: `first` (a list of ints or scalar tensors) then the dims `rest` of a
    tensor (its static ones when all are known)."""
    if all(isinstance(d, int) for d in first) and rest.is_fully_defined():
        return list(first) + rest.as_list()
    return None


def _tile_batch(t, multiplier):
    t = convert_to_tensor(t, name="t")
    if t.shape.ndims is None or t.shape.ndims < 1:
        raise ValueError("t must have statically known rank")
    tiling = [1] * (t.shape.ndims + 1)
    tiling[1] = multiplier
    tiled = tile(expand_dims(t, 1), tiling)
    rest = t.shape[1:]
    target = [-1] + rest.as_list() if rest.is_fully_defined() else \
        concat([[shape(t)[0] * multiplier], shape(t)[1:]], 0)
    tiled = reshape(tiled, target)
    batch = t.shape[0].value
    tiled.set_shape(TensorShape([batch * multiplier if batch is not None else None]).concatenate(rest))
    return tiled


def tile_batch(t, multiplier, name=None):
    """Each batch entry of t (a tensor [batch, ...] or a nested structure of them) repeated
    multiplier times in place: [batch * multiplier, ...], entries t[0], t[0], ..., t[1], ..."""
    with get_default_graph().name_scope(name or "tile_batch"):
        return nest.map_structure(lambda t_: _tile_batch(t_, multiplier), t)


def _batch_rows(like):
    """[batch, 1] int32: 0, 1, ... down like's first dimension."""
    return cumsum(ones_like(like[:, :1], dtype=dtypes.int32), axis=0, exclusive=True)


def _pick(values, beams):
    """values[b, beams[b, k]] for [batch, beam] values and beam indices (a batched gather)."""
    rows = _batch_rows(beams) + zeros_like(beams)
    return gather_nd(values, stack([rows, beams], axis=2))


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """The beams' full sequences [max_time, batch, beam_width] from each step's ids and parent
    beams (both int32 [max_time, batch, beam_width]), as TF's GatherTree: from step
    min(max_sequence_lengths[b], max_time) - 1 back to 0, each beam's id at a step is that of the
    beam it descends from; steps past the length, and steps after the first end_token, are
    end_token."""
    with get_default_graph().name_scope(name or "GatherTree"):
        step_ids = convert_to_tensor(step_ids, dtype=dtypes.int32, name="step_ids")
        parent_ids = convert_to_tensor(parent_ids, dtype=dtypes.int32, name="parent_ids")
        max_sequence_lengths = convert_to_tensor(max_sequence_lengths, dtype=dtypes.int32,
                                                 name="max_sequence_lengths")
        end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if step_ids.shape.ndims != 3:
            raise ValueError(f"GatherTree: step_ids must be a 3-tensor, saw shape: {step_ids.shape}")
        if not step_ids.shape.is_compatible_with(parent_ids.shape):
            raise ValueError(f"GatherTree: step_ids.shape must match parent_ids.shape.  but shapes are: "
                             f"{step_ids.shape} and {parent_ids.shape}")
        if max_sequence_lengths.shape.ndims != 1 or not step_ids.shape[1:2].is_compatible_with(
                max_sequence_lengths.shape):
            raise ValueError(f"GatherTree: max_sequence_lengths must be a vector of the batch size "
                             f"step_ids.shape[1], but shapes are: {step_ids.shape} and {max_sequence_lengths.shape}")
        if end_token.shape.ndims != 0:
            raise ValueError(f"GatherTree: end_token must be a scalar, saw shape: {end_token.shape}")
        steps_ta = TensorArray._sized_like(dtypes.int32, step_ids).unstack(step_ids)
        parents_ta = TensorArray._sized_like(dtypes.int32, parent_ids).unstack(parent_ids)
        beams_ta = TensorArray._sized_like(dtypes.int32, step_ids, element_like=step_ids[0])
        max_time = shape(step_ids)[0] if step_ids.shape[0].value is None else step_ids.shape[0].value
        lengths = expand_dims(math_ops.minimum(max_sequence_lengths, max_time), 1)
        first = cumsum(ones_like(step_ids[0]), axis=1, exclusive=True)  # each beam its own

        def body(level, beam, beams_ta):
            active = math_ops.less(level, lengths) & math_ops.equal(beam, beam)
            ids = where(active, _pick(steps_ta.read(level), beam), end_token * ones_like(beam))
            beam = where(active, _pick(parents_ta.read(level), beam), beam)
            return level - 1, beam, beams_ta.write(level, ids)

        _, _, beams_ta = while_loop(lambda level, *_: math_ops.greater_equal(level, 0), body,
                                    (max_time - 1, first, beams_ta))
        beams = beams_ta.stack()
        ended = cumsum(cast(math_ops.equal(beams, end_token), dtypes.int32), axis=0, exclusive=True)
        return where(math_ops.greater(ended, 0), end_token * ones_like(beams), beams)


def _length_penalty(sequence_lengths, penalty_factor):
    """((5 + lengths) / 6) ** penalty_factor (in float32), or 1.0 when the factor is 0."""
    penalty_factor = convert_to_tensor(penalty_factor, name="penalty_factor")
    if penalty_factor.shape.ndims != 0:
        raise ValueError(f"length_penalty_weight must be a scalar, saw shape: {penalty_factor.shape}")
    static = constant_value(penalty_factor)
    if static is not None and static == 0:
        return 1.0
    penalty_factor = cast(penalty_factor, dtypes.float32)
    return (5. + cast(sequence_lengths, dtypes.float32)) ** penalty_factor / (5. + 1.) ** penalty_factor


def _attention_probs(cell_state, coverage_penalty_weight):
    """The alignments [batch, beam, max_time] of the AttentionWrapper state(s) in cell_state,
    averaged over mechanisms and wrappers, when coverage is penalized (else None)."""
    if coverage_penalty_weight == 0.0:
        return None

    def of(state):
        a = state.alignments
        return reduce_mean(stack(list(a), axis=-1), -1) if isinstance(a, tuple) else a

    if isinstance(cell_state, AttentionWrapperState):
        probs = [of(cell_state)]
    else:
        probs = [of(s) for s in (cell_state if isinstance(cell_state, tuple) else ())
                 if isinstance(s, AttentionWrapperState)]
    if not probs:
        raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
    return probs[0] if len(probs) == 1 else reduce_mean(stack(probs, axis=-1), -1)


def _get_scores(log_probs, sequence_lengths, length_penalty_weight, coverage_penalty_weight, finished,
                accumulated_attention_probs):
    """The scores: log_probs over the length penalty, plus, for finished beams, the weighted
    coverage penalty sum(log(min(accumulated attention, 1))) (zeros counted as ones)."""
    scores = log_probs / cast(_length_penalty(sequence_lengths, length_penalty_weight), log_probs.dtype)
    if coverage_penalty_weight == 0.0:
        return scores
    acc = accumulated_attention_probs
    acc = where(math_ops.equal(acc, 0.0), ones_like(acc), acc)
    coverage = reduce_sum(math_ops.log(math_ops.minimum(acc, 1.0)), 2) * cast(finished, acc.dtype)
    return scores + expand_dims(coverage * coverage_penalty_weight, 2)


def _gather_beams(beam_ids, values):
    """values [batch, beam, ...] taken from the beams beam_ids [batch, beam] (TF's
    _tensor_gather_helper); TensorArrays and tensors of rank < 2 unchanged."""
    if isinstance(values, TensorArray):
        return values
    if values.shape.ndims is None:
        raise ValueError(f"Expected tensor ({values}) to have known rank, but ndims == None.")
    return _pick(values, beam_ids) if values.shape.ndims >= 2 else values


class BeamSearchDecoder(Decoder):
    """Beam search over cell (whose state is for batch_size * beam_width entries: see
    tile_batch), from the embedding of start_tokens, each hypothesis ending at end_token.
    Outputs per step: BeamSearchDecoderOutput(scores, predicted_ids, parent_ids), each
    [batch, beam_width]; dynamic_decode's final outputs are a FinalBeamSearchDecoderOutput."""

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width, output_layer=None,
                 length_penalty_weight=0.0, coverage_penalty_weight=0.0, reorder_tensor_arrays=True):
        assert_like_rnncell("cell", cell)
        check_output_layer(output_layer)
        self._cell, self._output_layer = cell, output_layer
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._embedding_fn = embedding_fn(embedding)
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32, name="start_tokens")
        if self._start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if self._end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = batch_of(self._start_tokens)
        self._beam_width = beam_width
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        self._initial_cell_state = nest.map_structure(self._maybe_split_batch_beams, initial_state,
                                                      self._cell.state_size)
        self._start_tokens = tile(expand_dims(self._start_tokens, 1), [1, beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = one_hot(zeros_like(self._start_tokens[:, 0]), beam_width, on_value=False, off_value=True,
                                 dtype=dtypes.bool_)

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def tracks_own_finished(self):
        """True: the beams are reordered with their finished flags, so dynamic_decode keeps none."""
        return True

    @property
    def output_size(self):
        k = TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=k, predicted_ids=k, parent_ids=k)

    @property
    def output_dtype(self):
        dtype = nest.flatten(self._initial_cell_state)[0].dtype
        rnn_size = layer_output_size(self._output_layer, self._cell.output_size)
        return BeamSearchDecoderOutput(scores=nest.map_structure(lambda _: dtype, rnn_size),
                                       predicted_ids=dtypes.int32, parent_ids=dtypes.int32)

    def initialize(self, name=None):
        dtype = nest.flatten(self._initial_cell_state)[0].dtype
        log_probs = one_hot(zeros_like(self._start_tokens[:, 0]), self._beam_width, on_value=np.array(0, dtype.np),
                            off_value=np.array(-np.inf, dtype.np), dtype=dtype)
        attention_probs = _attention_probs(self._initial_cell_state, self._coverage_penalty_weight)
        state = BeamSearchDecoderState(cell_state=self._initial_cell_state, log_probs=log_probs,
                                       finished=self._finished,
                                       lengths=zeros_like(self._start_tokens, dtype=dtypes.int64),
                                       accumulated_attention_probs=() if attention_probs is None else attention_probs)
        return self._finished, self._start_inputs, state

    def finalize(self, outputs, final_state, sequence_lengths):
        """(FinalBeamSearchDecoderOutput with the gather_tree of the predicted ids, final_state);
        the lengths are final_state.lengths (sequence_lengths is ignored, as TF)."""
        max_sequence_lengths = cast(reduce_max(final_state.lengths, axis=1), dtypes.int32)
        predicted_ids = gather_tree(outputs.predicted_ids, outputs.parent_ids, max_sequence_lengths,
                                    self._end_token)
        if self._reorder_tensor_arrays and any(isinstance(s, TensorArray)
                                               for s in nest.flatten(final_state.cell_state)):
            raise ValueError("BeamSearchDecoder: pygrad does not reorder the TensorArrays of the cell state (an "
                             "AttentionWrapper's alignment_history) along the beams; pass "
                             "reorder_tensor_arrays=False to keep them in the order the steps wrote them")
        return FinalBeamSearchDecoderOutput(beam_search_decoder_output=outputs,
                                            predicted_ids=predicted_ids), final_state

    def _static_batch(self):
        b = self._batch_size
        return b if isinstance(b, int) else None

    def _merge_batch_beams(self, t, s):
        """t [batch, beam, *s] as [batch * beam, *s]."""
        s = as_shape(s)
        target = _rows_then([-1], s) or concat([[-1], shape(t)[2:]], 0)
        out = reshape(t, target)
        b = self._static_batch()
        out.set_shape(TensorShape([b * self._beam_width if b is not None else None]).concatenate(s))
        return out

    def _split_batch_beams(self, t, s):
        """t [batch * beam, *s] as [batch, beam, *s]; ValueError when its known shape cannot be."""
        s = as_shape(s)
        b = self._static_batch()
        expected = TensorShape([b, self._beam_width]).concatenate(s)
        rows = t.shape[0].value
        if rows is not None and b is not None and rows != b * self._beam_width or \
                not t.shape[1:].is_compatible_with(s):
            raise ValueError(f"Unexpected behavior when reshaping between beam width and batch size.  The tensor "
                             f"{t.name} has shape: {t.shape}.  We expected it to have shape (batch_size * "
                             f"beam_width, depth) with (batch_size, beam_width, depth) == {expected}.  Perhaps you "
                             f"forgot to create a zero_state with batch_size=encoder_batch_size * beam_width?")
        target = _rows_then([-1, self._beam_width], s) or concat([[-1, self._beam_width], shape(t)[1:]], 0)
        out = reshape(t, target)
        out.set_shape(expected)
        return out

    def _maybe_split_batch_beams(self, t, s):
        if isinstance(t, TensorArray):
            return t
        if t.shape.ndims is None:
            raise ValueError(f"Expected tensor ({t}) to have known rank, but ndims == None.")
        return self._split_batch_beams(t, s) if t.shape.ndims >= 1 else t

    def _maybe_merge_batch_beams(self, t, s):
        if isinstance(t, TensorArray):
            return t
        if t.shape.ndims is None:
            raise ValueError(f"Expected tensor ({t}) to have known rank, but ndims == None.")
        return self._merge_batch_beams(t, s) if t.shape.ndims >= 2 else t

    def step(self, time, inputs, state, name=None):
        with get_default_graph().name_scope(name or "BeamSearchDecoderStep"):
            inputs = nest.map_structure(lambda inp: self._merge_batch_beams(inp, inp.shape[2:]), inputs)
            cell_state = nest.map_structure(self._maybe_merge_batch_beams, state.cell_state, self._cell.state_size)
            cell_outputs, next_cell_state = self._cell(inputs, cell_state)
            cell_outputs = nest.map_structure(lambda out: self._split_batch_beams(out, out.shape[1:]), cell_outputs)
            next_cell_state = nest.map_structure(self._maybe_split_batch_beams, next_cell_state,
                                                 self._cell.state_size)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            output, next_state = self._beam_search_step(cell_outputs, next_cell_state, state)
            next_inputs = cond(reduce_all(next_state.finished), lambda: self._start_inputs,
                               lambda: self._embedding_fn(output.predicted_ids))
        return output, next_state, next_inputs, next_state.finished

    def _beam_search_step(self, logits, next_cell_state, beam_state):
        """TF's _beam_search_step: (BeamSearchDecoderOutput, BeamSearchDecoderState) of one step."""
        beam_width, end_token = self._beam_width, self._end_token
        previously_finished = beam_state.finished
        not_finished = math_ops.logical_not(previously_finished)
        step_log_probs = _mask_probs(log_softmax(logits), end_token, previously_finished)
        total_probs = expand_dims(beam_state.log_probs, 2) + step_log_probs
        vocab_size = logits.shape[-1].value
        if vocab_size is None:
            raise ValueError(f"BeamSearchDecoder: the vocabulary size (the logits' last dimension) must be known, "
                             f"got logits of shape {logits.shape}")
        lengths_to_add = cast(math_ops.not_equal(np.arange(vocab_size, dtype=np.int32), end_token), dtypes.int64)
        lengths_to_add = lengths_to_add * expand_dims(cast(not_finished, dtypes.int64), 2)
        new_prediction_lengths = lengths_to_add + expand_dims(beam_state.lengths, 2)
        accumulated = None
        attention_probs = _attention_probs(next_cell_state, self._coverage_penalty_weight)
        if attention_probs is not None:
            attention_probs *= expand_dims(cast(not_finished, attention_probs.dtype), 2)
            accumulated = beam_state.accumulated_attention_probs + attention_probs
        scores = _get_scores(total_probs, new_prediction_lengths, self._length_penalty_weight,
                             self._coverage_penalty_weight, previously_finished, accumulated)
        scores_flat = reshape(scores, [-1, beam_width * vocab_size])
        next_beam_scores, word_indices = top_k(scores_flat, k=beam_width)
        next_beam_probs = _pick(reshape(total_probs, [-1, beam_width * vocab_size]), word_indices)
        next_word_ids = math_ops.floormod(word_indices, vocab_size)
        next_beam_ids = math_ops.floordiv(word_indices, vocab_size)
        previously_finished = _pick(previously_finished, next_beam_ids)
        next_finished = math_ops.logical_or(previously_finished, math_ops.equal(next_word_ids, end_token))
        next_prediction_len = _pick(beam_state.lengths, next_beam_ids) + cast(
            math_ops.logical_not(previously_finished), dtypes.int64)
        next_accumulated = () if accumulated is None else _gather_beams(next_beam_ids, accumulated)
        next_cell_state = nest.map_structure(lambda v: _gather_beams(next_beam_ids, v), next_cell_state)
        next_state = BeamSearchDecoderState(cell_state=next_cell_state, log_probs=next_beam_probs,
                                            lengths=next_prediction_len, finished=next_finished,
                                            accumulated_attention_probs=next_accumulated)
        output = BeamSearchDecoderOutput(scores=next_beam_scores, predicted_ids=next_word_ids,
                                         parent_ids=next_beam_ids)
        return output, next_state


def _mask_probs(probs, eos_token, finished):
    """probs [batch, beam, vocab] with each finished beam's row replaced by 0 at eos_token and the
    dtype's lowest value elsewhere."""
    vocab = probs.shape[2].value
    finished_row = one_hot(eos_token, vocab, on_value=np.array(0, probs.dtype.np),
                           off_value=np.array(np.finfo(probs.dtype.np).min, probs.dtype.np), dtype=probs.dtype)
    finished_mask = math_ops.logical_and(expand_dims(finished, 2), ones_like(probs, dtype=dtypes.bool_))
    return where(finished_mask, zeros_like(probs) + finished_row, probs)
