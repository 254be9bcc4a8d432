"""tf.contrib.seq2seq's Decoder interface and dynamic_decode, as TF 1.15's decoder.py: one
tf.while_loop that calls the decoder's step until every batch entry is finished (or for
maximum_iterations steps), writing each step's outputs to TensorArrays that are stacked at the end.

pygrad plans static shapes, so the arrays are sized before the loop runs: by maximum_iterations
(a Python int or a constant), or else by the decoder's own bound (a TrainingHelper's inputs
have as many steps as the loop can run); a decoder that has neither is refused when the graph is
built. The stacked outputs are then cut to the steps the loop ran (the first dimension TF's
outputs have), with a gather of the positions tf.where finds. A TrainingHelper knows that number
without running the loop (the longest sequence), so a training graph's loop and its gradient
run in the same stage of the run. TensorArrays in the decoder's state that start empty with
dynamic_size (an AttentionWrapper's alignment_history) are sized and cut the same way."""
import numpy as np

from pygrad import dtypes, nest
from pygrad.ops import math_ops
from pygrad.ops.array_ops import constant, constant_value, convert_to_tensor, ones_like, zeros_like
from pygrad.ops.control_flow_ops import while_loop
from pygrad.ops.cumulative_ops import cumsum
from pygrad.ops.dynamic_shape_ops import where_true
from pygrad.ops.manip_ops import gather, where
from pygrad.ops.reduction_ops import reduce_all
from pygrad.ops.tensor_array_ops import TensorArray
from pygrad.ops.variable_scope import variable_scope
from pygrad.rnn.cells import batch_zeros
from pygrad.rnn.dynamic import _transpose_batch_time

__all__ = ["Decoder", "dynamic_decode"]


class Decoder:
    """An RNN decoder's interface (TF's abstract Decoder): batch_size, output_size,
    output_dtype, initialize() -> (finished, inputs, state), step(time, inputs, state) ->
    (outputs, next_state, next_inputs, finished), and optionally finalize(outputs, final_state,
    sequence_lengths) and tracks_own_finished."""

    @property
    def batch_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    @property
    def output_dtype(self):
        raise NotImplementedError

    def initialize(self, name=None):
        raise NotImplementedError

    def step(self, time, inputs, state, name=None):
        raise NotImplementedError

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False

    def _loop_bound(self):
        """(a tensor whose first dimension bounds the number of steps, a tensor of the number of
        steps the loop will run, computed without it), or (None, None): how pygrad sizes the
        output arrays when dynamic_decode has no maximum_iterations."""
        return None, None


def _error(message, cls=ValueError):
    return cls(f"dynamic_decode: {message}")


def _size_state_array(ta, bound):
    """An empty dynamic_size TensorArray of the state, sized to the loop's bound (others as given)."""
    if not isinstance(ta, TensorArray) or not (ta._dynamic_size and ta._size == 0 and ta._size_like is None):
        return ta
    element = ta.element_shape
    if not element.is_fully_defined():
        raise _error(f"a TensorArray of the decoder's state needs a fully known element_shape, got {element}")
    return TensorArray._sized_like(ta.dtype, bound, element_shape=element)


def dynamic_decode(decoder, output_time_major=False, impute_finished=False, maximum_iterations=None,
                   parallel_iterations=32, swap_memory=False, scope=None):
    """Runs decoder's steps until every entry is finished or maximum_iterations steps have run, in
    the variable scope `scope` (default "decoder"). Returns (final_outputs, final_state,
    final_sequence_lengths): the outputs [batch, time, ...] (time major with output_time_major),
    the last state, and the int32 step at which each entry finished. impute_finished: the outputs
    of finished entries are zeros and their state is copied through. parallel_iterations and
    swap_memory are accepted and have no effect."""
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder)}")
    with variable_scope(scope, default_name="decoder"):
        fixed = None
        if maximum_iterations is not None:
            maximum_iterations = convert_to_tensor(maximum_iterations, dtype=dtypes.int32, name="maximum_iterations")
            if maximum_iterations.shape.ndims != 0:
                raise ValueError("maximum_iterations must be a scalar")
            value = constant_value(maximum_iterations)
            fixed = None if value is None else max(int(value), 0)
        bound, steps = decoder._loop_bound()
        if fixed is not None:
            bound = constant(np.zeros([fixed], np.int32), name="bound")  # its first dimension sizes the arrays
        elif bound is None:
            raise _error(f"pygrad sizes the decoder's outputs before the loop runs: give maximum_iterations as a "
                         f"Python int or a constant (the {type(decoder).__name__}'s number of steps is not bounded "
                         f"by its inputs)")
        initial_finished, initial_inputs, initial_state = decoder.initialize()
        initial_state = nest.map_structure(lambda s: _size_state_array(s, bound), initial_state)
        batch_size = decoder.batch_size
        zero_outputs = nest.map_structure(lambda s, d: batch_zeros(batch_size, s, d), decoder.output_size,
                                          decoder.output_dtype)
        if maximum_iterations is not None:
            initial_finished = math_ops.logical_or(initial_finished, math_ops.greater_equal(0, maximum_iterations))
            if steps is not None:
                steps = math_ops.minimum(steps, maximum_iterations)
        initial_sequence_lengths = zeros_like(initial_finished, dtype=dtypes.int32)
        initial_time = constant(0, dtypes.int32)
        initial_outputs_ta = nest.map_structure(lambda z: TensorArray._sized_like(z.dtype, bound, element_like=z),
                                                zero_outputs)

        def condition(unused_time, unused_outputs_ta, unused_state, unused_inputs, finished, unused_lengths):
            return math_ops.logical_not(reduce_all(finished))

        def body(time, outputs_ta, state, inputs, finished, sequence_lengths):
            next_outputs, decoder_state, next_inputs, decoder_finished = decoder.step(time, inputs, state)
            if decoder.tracks_own_finished:
                next_finished = decoder_finished
            else:
                next_finished = math_ops.logical_or(decoder_finished, finished)
            next_sequence_lengths = where(math_ops.logical_not(finished), ones_like(sequence_lengths) * (time + 1),
                                          sequence_lengths)
            nest.assert_same_structure(state, decoder_state)
            nest.assert_same_structure(outputs_ta, next_outputs)
            nest.assert_same_structure(inputs, next_inputs)
            if impute_finished:
                emit = nest.map_structure(lambda out, zero: where(finished, zero, out), next_outputs, zero_outputs)

                def copy_state(new, cur):
                    if isinstance(cur, TensorArray):
                        return new
                    new.set_shape(cur.shape)
                    return new if new.shape.ndims == 0 else where(finished, cur, new)

                next_state = nest.map_structure(copy_state, decoder_state, state)
            else:
                emit, next_state = next_outputs, decoder_state
            outputs_ta = nest.map_structure(lambda ta, out: ta.write(time, out), outputs_ta, emit)
            return time + 1, outputs_ta, next_state, next_inputs, next_finished, next_sequence_lengths

        res = while_loop(condition, body, (initial_time, initial_outputs_ta, initial_state, initial_inputs,
                                           initial_finished, initial_sequence_lengths),
                         maximum_iterations=maximum_iterations)
        final_time, final_outputs_ta, final_state, final_sequence_lengths = res[0], res[1], res[2], res[5]
        keep = _steps_kept(bound, steps if steps is not None else final_time)
        final_outputs = nest.map_structure(lambda ta: gather(ta.stack(), keep), final_outputs_ta)
        final_state = nest.map_structure(lambda s: _cut_state_array(s, bound, keep), final_state)
        try:
            final_outputs, final_state = decoder.finalize(final_outputs, final_state, final_sequence_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = nest.map_structure(_transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_sequence_lengths


def _steps_kept(bound, steps):
    """The positions 0 .. steps - 1 of the arrays' rows (tf.where: known once the run has computed
    steps)."""
    column = bound
    while column.shape.ndims > 1:
        column = column[:, 0]
    positions = cumsum(ones_like(column, dtype=dtypes.int32), exclusive=True)
    return where_true(math_ops.less(positions, steps))[:, 0]


def _cut_state_array(s, bound, keep):
    """A TensorArray of the state that dynamic_decode sized, holding only the rows the loop wrote."""
    if not isinstance(s, TensorArray) or s._size_like is not bound or s._element_like is not None:
        return s
    cut = s._with_flow(gather(s.stack(), keep))
    cut._size = cut._size_like = None  # its size is the number of steps, known when the graph runs
    return cut
