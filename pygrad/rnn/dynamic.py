"""tf.nn.dynamic_rnn and tf.nn.bidirectional_dynamic_rnn, built as TF1's rnn.py builds them: one
tf.while_loop over time that reads each step's input from a TensorArray of the (time-major)
inputs and writes each output to a TensorArray, stacked at the end. A run is one native call
whatever the number of steps, and the time and batch dimensions may be unknown when the graph
is built: the arrays take their size and element shape from the inputs' and the zero output's
shapes when a plan is built (TensorArray._sized_like).

With sequence_length, TF1's _rnn_step copy-through at every step (skip_conditionals=True): an
entry whose sequence has ended gets a zero output and keeps its state; the loop stops after the
longest sequence (at least one step), and the outputs of the steps it did not run are zeros.

The cell's variables are made when it is first called, inside the loop's body; get_variable
builds them outside the loop (as TF1's init_scope), so the loop reads them like any tensor made
before it, and their gradients are summed over the steps."""
from pygrad import dtypes, nest
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, constant, convert_to_tensor, identity, shape, transpose
from pygrad.ops.control_flow_ops import while_loop
from pygrad.ops.reduction_ops import reduce_max
from pygrad.ops.sequence_ops import reverse_sequence
from pygrad.ops.tensor_array_ops import TensorArray
from pygrad.ops.variable_scope import variable_scope
from pygrad.rnn.cells import assert_like_rnncell, batch_zeros
from pygrad.rnn.static import _copy_through, _error, _infer_state_dtype


def _transpose_batch_time(x):
    """x with its first two dimensions swapped (TF's _transpose_batch_time); rank < 2 unchanged."""
    ndims = x.shape.ndims
    if ndims is not None and ndims < 2:
        return x
    return transpose(x, [1, 0] + list(range(2, ndims)))


def _check_inputs(flat_input, time_major, scope):
    """Every input [time, batch, depth...] (or [batch, time, ...]) with a known depth, all with one
    time and batch dimension as far as they are known (TF's _dynamic_rnn_loop checks)."""
    if not flat_input:
        raise _error("dynamic_rnn", scope, "inputs must not be empty")
    layout = "[max_time, batch_size, depth]" if time_major else "[batch_size, max_time, depth]"
    first = None
    for x in flat_input:
        s = x.shape
        if s.ndims is None or s.ndims < 3:
            raise _error("dynamic_rnn", scope, f"inputs must have rank at least 3 ({layout}), got {x.name} of shape "
                                               f"{s}")
        if not s[2:].is_fully_defined():
            raise _error("dynamic_rnn", scope, f"Input size (depth of inputs) must be accessible via shape "
                                               f"inference, but saw value None for input={x.name} of shape {s}")
        dims = s.as_list()[:2] if time_major else s.as_list()[1::-1]  # (time, batch)
        if first is not None:
            for k, what in ((0, "Time steps"), (1, "Batch_size")):
                if dims[k] != first[k][k]:
                    raise _error("dynamic_rnn", scope, f"{what} is not the same for all the elements in the input: "
                                                       f"{first[1].name} has shape {first[1].shape}, {x.name} has "
                                                       f"shape {s}")
        else:
            first = (dims, x)


def _best_effort_batch_size(flat_input):
    """The time-major inputs' static batch size, else tf.shape(first input)[1]."""
    for x in flat_input:
        if x.shape[1].value is not None:
            return x.shape[1].value
    return shape(flat_input[0])[1]


def _sequence_length(sequence_length, batch_size, scope):
    sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
    if not sequence_length.dtype.is_integer:
        raise _error("dynamic_rnn", scope, f"sequence_length must be integers, got {sequence_length.dtype.name}",
                     TypeError)
    sequence_length = cast(sequence_length, dtypes.int32)
    if sequence_length.shape.ndims not in (None, 1):
        raise _error("dynamic_rnn", scope, f"sequence_length must be a vector of length batch_size, but saw shape: "
                                           f"{sequence_length.shape}")
    if not sequence_length.shape.is_compatible_with([batch_size if isinstance(batch_size, int) else None]):
        raise _error("dynamic_rnn", scope, f"sequence_length of shape {sequence_length.shape} must have the batch "
                                           f"size {batch_size}")
    return identity(sequence_length, name="sequence_length")


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None, parallel_iterations=None,
                swap_memory=False, time_major=False, scope=None):
    """The cell run over the time dimension of inputs ([batch, time, depth], or [time, batch, depth]
    with time_major; or a nested structure of such tensors), from initial_state (else the cell's
    zero state in dtype), in the variable scope `scope` (default "rnn"). Returns (outputs, state):
    the outputs in inputs' layout, [.., .., cell.output_size], and the final state.
    sequence_length (int vector [batch]): outputs past an entry's end are zeros and its final state
    is the one at its end. parallel_iterations and swap_memory are accepted and have no effect."""
    assert_like_rnncell("cell", cell)
    with variable_scope(scope or "rnn"):
        flat_input = [convert_to_tensor(x) for x in nest.flatten(inputs)]
        _check_inputs(flat_input, time_major, scope)
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        batch_size = _best_effort_batch_size(flat_input)
        if sequence_length is not None:
            sequence_length = _sequence_length(sequence_length, batch_size, scope)
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise _error("dynamic_rnn", scope, "If no initial_state is provided, dtype must be specified")
            state = cell.zero_state(batch_size, dtype)
        inputs = nest.pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(cell, inputs, flat_input, state, batch_size, sequence_length, dtype)
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_rnn_loop(cell, inputs, flat_input, state, batch_size, sequence_length, dtype):
    """TF's _dynamic_rnn_loop on time-major inputs: (outputs [time, batch, ...], final state)."""
    state_dtype = _infer_state_dtype(dtype, state)
    flat_zero_output = [batch_zeros(batch_size, size, state_dtype, name="zeros")
                        for size in nest.flatten(cell.output_size)]
    zero_output = nest.pack_sequence_as(cell.output_size, flat_zero_output)
    steps = flat_input[0].shape[0].value
    time_steps = constant(steps, dtypes.int32) if steps is not None else shape(flat_input[0])[0]
    if sequence_length is not None:
        max_sequence_length = reduce_max(sequence_length)
        loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    else:
        loop_bound = time_steps
    time = constant(0, dtypes.int32, name="time")
    with get_default_graph().name_scope("dynamic_rnn") as base_name:
        pass
    output_ta = tuple(TensorArray._sized_like(state_dtype, flat_input[0], element_like=z,
                                              name=f"{base_name}output_{i}")
                      for i, z in enumerate(flat_zero_output))
    input_ta = tuple(TensorArray._sized_like(x.dtype, x, name=f"{base_name}input_{i}").unstack(x)
                     for i, x in enumerate(flat_input))

    def _time_step(time, output_ta_t, state):
        input_t = nest.pack_sequence_as(inputs, [ta.read(time) for ta in input_ta])
        output, new_state = cell(input_t, state)
        if sequence_length is not None:
            output, new_state = _copy_through(time, sequence_length, zero_output, state, output, new_state)
        else:
            nest.assert_same_structure(state, new_state)
        output_ta_t = tuple(ta.write(time, out) for ta, out in zip(output_ta_t, nest.flatten(output)))
        return time + 1, output_ta_t, new_state

    _, output_final_ta, final_state = while_loop(lambda time, *_: math_ops.less(time, loop_bound), _time_step,
                                                 (time, output_ta, state), maximum_iterations=time_steps)
    final_outputs = [ta.stack() for ta in output_final_ta]
    return nest.pack_sequence_as(cell.output_size, final_outputs), final_state


def _reverse(x, seq_lengths, seq_axis, batch_axis):
    """x reversed along seq_axis; with seq_lengths, each entry's first seq_lengths[b] steps only."""
    if seq_lengths is not None:
        return reverse_sequence(x, seq_lengths, seq_axis=seq_axis, batch_axis=batch_axis)
    index = [slice(None)] * seq_axis + [slice(None, None, -1)]
    return x[tuple(index)]


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None, initial_state_fw=None,
                              initial_state_bw=None, dtype=None, parallel_iterations=None, swap_memory=False,
                              time_major=False, scope=None):
    """A forward dynamic_rnn of cell_fw over inputs (scope "<scope>/fw") and a backward one of
    cell_bw over inputs reversed in time ("<scope>/bw"; scope defaults to "bidirectional_rnn"),
    within each sequence's length when sequence_length is given (tf.reverse_sequence). Returns
    ((output_fw, output_bw), (output_state_fw, output_state_bw)); output_bw is in the inputs' time
    order."""
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw, dtype,
                                                     parallel_iterations, swap_memory, time_major, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            inputs_reverse = nest.map_structure(
                lambda x: _reverse(convert_to_tensor(x), sequence_length, time_axis, batch_axis), inputs)
            tmp, output_state_bw = dynamic_rnn(cell_bw, inputs_reverse, sequence_length, initial_state_bw, dtype,
                                               parallel_iterations, swap_memory, time_major, scope=bw_scope)
    output_bw = nest.map_structure(lambda x: _reverse(x, sequence_length, time_axis, batch_axis), tmp)
    return (output_fw, output_bw), (output_state_fw, output_state_bw)
