"""tf.nn.static_rnn and tf.nn.static_bidirectional_rnn: a cell unrolled in Python over a list of
inputs, as TF1's rnn.py does it.

With sequence_length, TF1's semantics: at step t an entry whose sequence has ended (t >= its
length) gets a zero output and keeps its state, chosen by a row select (tf.where with a vector
condition). TF wraps that select in tf.cond to skip the cell when every sequence has ended; the
values and gradients are the same (the gradient reaches the cell only for entries still running,
and the state's passes through the others), so pygrad selects at every step."""
from pygrad import dtypes, errors, nest
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, shape
from pygrad.ops.manip_ops import concat, stack, unstack, where
from pygrad.ops.sequence_ops import reverse_sequence
from pygrad.ops.variable_scope import variable_scope
from pygrad.rnn.cells import assert_like_rnncell, batch_zeros


def _error(fn, scope, rule, cls=ValueError):
    """An error of static_rnn in the one layout of op errors, named by its scope (default "rnn")."""
    name = getattr(scope, "name", scope) or ("bidirectional_rnn" if "bidirectional" in fn else "rnn")
    return cls(errors.op_message(fn, name, rule, errors.user_site()))


def _check_inputs(fn, inputs, name):
    if not nest.is_sequence(inputs):
        raise _error(fn, name, f"inputs must be a sequence (a list of [batch_size, input_size] tensors, one per "
                                    f"step), got {inputs!r}", TypeError)
    if not inputs:
        raise _error(fn, name, "inputs must not be empty")


def _infer_state_dtype(explicit_dtype, state):
    if explicit_dtype is not None:
        return dtypes.as_dtype(explicit_dtype)
    found = [t.dtype for t in nest.flatten(state)]
    if not found:
        raise ValueError("Unable to infer dtype from empty state.")
    if any(d != found[0] for d in found):
        raise ValueError("State has tensors of different inferred_dtypes. Unable to infer a single representative "
                         "dtype.")
    return found[0]


def _batch_size(inputs, name):
    """The batch size: the first inputs' static first dimension, else tf.shape(first input)[0];
    every input must be at least 2-D with known non-batch dimensions, unless the first is a vector
    [batch_size] (ids for an EmbeddingWrapper, as TF allows)."""
    batch = None
    first = nest.flatten(inputs)[0]
    if first.shape.ndims == 1:
        return first.shape[0].value if first.shape[0].value is not None else shape(first)[0]
    for x in nest.flatten(inputs):
        s = x.shape
        if s.ndims is None or s.ndims < 2:
            raise _error("static_rnn", name, f"inputs must have rank at least 2 ([batch_size, input_size]), got "
                                                  f"{x.name} of shape {s}")
        if s[0].value is not None:
            if batch is not None and s[0].value != batch:
                raise _error("static_rnn", name, f"the inputs' batch sizes differ: {batch} and {s[0].value} "
                                                      f"({x.name})")
            batch = s[0].value
        for i, d in enumerate(s.dims[1:]):
            if d is None:
                raise _error("static_rnn", name, f"Input size (dimension {i} of inputs) must be accessible via "
                                                      f"shape inference, but saw value None ({x.name}: {s}).")
    return batch if batch is not None else shape(nest.flatten(inputs)[0])[0]


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """The cell applied to each of inputs in turn, from initial_state (else the cell's zero state
    in dtype), in the variable scope `scope` (default "rnn"), reusing its variables after the first
    step. Returns (outputs, state): the list of outputs and the final state. sequence_length (int
    vector [batch_size]): outputs past an entry's end are zeros and its state is carried through."""
    assert_like_rnncell("cell", cell)
    _check_inputs("static_rnn", inputs, scope)
    inputs = [nest.map_structure(convert_to_tensor, x) for x in inputs]
    outputs = []
    with variable_scope(scope or "rnn") as varscope:
        batch_size = _batch_size(inputs, scope)
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise _error("static_rnn", scope, "If no initial_state is provided, dtype must be specified")
            state = cell.zero_state(batch_size, dtype)
        if sequence_length is not None:
            sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
            if sequence_length.shape.ndims not in (None, 1):
                raise _error("static_rnn", scope, f"sequence_length must be a vector of length batch_size, got "
                                                       f"shape {sequence_length.shape}")
            if not sequence_length.dtype.is_integer:
                raise _error("static_rnn", scope, f"sequence_length must be integers, got "
                                                       f"{sequence_length.dtype.name}", TypeError)
            if not sequence_length.shape.is_compatible_with([batch_size if isinstance(batch_size, int) else None]):
                raise _error("static_rnn", scope, f"sequence_length of shape {sequence_length.shape} must have "
                                                       f"the batch size {batch_size}")
            state_dtype = _infer_state_dtype(dtype, state)
            zero_output = nest.map_structure(lambda s: batch_zeros(batch_size, s, state_dtype, name="zero_output"),
                                             cell.output_size)
            sequence_length = cast(sequence_length, dtypes.int32)
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(input_, state)
            if sequence_length is not None:
                output, new_state = _copy_through(time, sequence_length, zero_output, state, output, new_state)
            state = new_state
            outputs.append(output)
        return outputs, state


def _copy_through(time, sequence_length, zero_output, state, output, new_state):
    """TF's _rnn_step: where time >= sequence_length, the zero output and the old state."""
    nest.assert_same_structure(state, new_state)
    with get_default_graph().name_scope("copy_through"):
        finished = math_ops.greater_equal(time, sequence_length)

        def pick(old, new):
            old = convert_to_tensor(old)
            return new if old.shape.ndims == 0 else where(finished, old, new)

        return nest.map_structure(pick, zero_output, output), nest.map_structure(pick, state, new_state)


def _reverse_seq(input_seq, lengths):
    """The list reversed; with lengths, each batch entry's first lengths[b] steps reversed and the
    rest left in place: TF's reverse_sequence of the steps stacked along a time axis."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_seq = [nest.flatten(x) for x in input_seq]
    results = [[] for _ in input_seq]
    with get_default_graph().name_scope("reverse_seq"):
        lengths = cast(convert_to_tensor(lengths), dtypes.int64)
        for k in range(len(flat_seq[0])):
            joined = stack([convert_to_tensor(s[k]) for s in flat_seq], axis=1)  # [batch, time, ...]
            reversed_steps = unstack(reverse_sequence(joined, lengths, seq_axis=1, batch_axis=0), axis=1)
            for r, step in zip(results, reversed_steps):
                r.append(step)
    return [nest.pack_sequence_as(x, r) for x, r in zip(input_seq, results)]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None, initial_state_bw=None, dtype=None,
                             sequence_length=None, scope=None):
    """A forward static_rnn of cell_fw over inputs (scope "<scope>/fw") and a backward one of
    cell_bw over the reversed inputs ("<scope>/bw"; scope defaults to "bidirectional_rnn").
    Returns (outputs, output_state_fw, output_state_bw); outputs[t] is the concatenation
    [fw output at t, bw output at t] along the depth."""
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    _check_inputs("static_bidirectional_rnn", inputs, scope)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, sequence_length,
                                                    scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, output_state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length,
                                              scope=bw_scope)
    output_bw = _reverse_seq(tmp, sequence_length)
    outputs = [nest.pack_sequence_as(fw, [concat([a, b], 1) for a, b in zip(nest.flatten(fw), nest.flatten(bw))])
               for fw, bw in zip(output_fw, output_bw)]
    return outputs, output_state_fw, output_state_bw

