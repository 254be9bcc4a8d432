"""tf.contrib.rnn's stacked bidirectional RNNs: layers of bidirectional RNNs, each layer's
forward and backward outputs concatenated along the depth as the next layer's inputs, in the
scope "stack_bidirectional_rnn/cell_<i>" per layer. stack_bidirectional_rnn runs
static_bidirectional_rnn in that scope itself ("stack_bidirectional_rnn/cell_0/fw/..."),
stack_bidirectional_dynamic_rnn runs bidirectional_dynamic_rnn inside it
("stack_bidirectional_rnn/cell_0/bidirectional_rnn/fw/...")."""
from pygrad.ops.manip_ops import concat
from pygrad.ops.variable_scope import variable_scope
from pygrad.rnn.dynamic import bidirectional_dynamic_rnn
from pygrad.rnn.static import _error, static_bidirectional_rnn


def _check_layers(fn, cells_fw, cells_bw, initial_states_fw, initial_states_bw, scope):
    """TF's checks of the per-layer arguments (ValueError)."""
    for cells, what in ((cells_fw, "fw"), (cells_bw, "bw")):
        if not cells:
            raise _error(fn, scope or "stack_bidirectional_rnn",
                         f"Must specify at least one {what} cell for BidirectionalRNN.")
        if not isinstance(cells, list):
            raise _error(fn, scope or "stack_bidirectional_rnn",
                         f"cells_{what} must be a list of RNNCells (one per layer).")
    if len(cells_fw) != len(cells_bw):
        raise _error(fn, scope or "stack_bidirectional_rnn", f"Forward and Backward cells must have the same depth, "
                                                             f"got {len(cells_fw)} and {len(cells_bw)}.")
    for states, what in ((initial_states_fw, "fw"), (initial_states_bw, "bw")):
        if states is not None and (not isinstance(states, list) or len(states) != len(cells_fw)):
            raise _error(fn, scope or "stack_bidirectional_rnn",
                         f"initial_states_{what} must be a list of state tensors (one per layer).")


def _layer_states(initial_states, i):
    return initial_states[i] if initial_states else None


def stack_bidirectional_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None, initial_states_bw=None, dtype=None,
                            sequence_length=None, scope=None):
    """Layers of static_bidirectional_rnn over a list of inputs. Returns (outputs, the forward
    final states, the backward final states): outputs a list of [batch, fw depth + bw depth], the
    states tuples with one entry per layer."""
    _check_layers("stack_bidirectional_rnn", cells_fw, cells_bw, initial_states_fw, initial_states_bw, scope)
    states_fw, states_bw, layer = [], [], inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with variable_scope(f"cell_{i}") as cell_scope:
                layer, state_fw, state_bw = static_bidirectional_rnn(
                    cell_fw, cell_bw, layer, initial_state_fw=_layer_states(initial_states_fw, i),
                    initial_state_bw=_layer_states(initial_states_bw, i), sequence_length=sequence_length,
                    dtype=dtype, scope=cell_scope)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None, initial_states_bw=None,
                                    dtype=None, sequence_length=None, parallel_iterations=None, time_major=False,
                                    scope=None):
    """Layers of bidirectional_dynamic_rnn over inputs [batch, time, depth] (or time-major).
    Returns (outputs [batch, time, fw depth + bw depth], the forward final states, the backward
    final states), the states tuples with one entry per layer."""
    _check_layers("stack_bidirectional_dynamic_rnn", cells_fw, cells_bw, initial_states_fw, initial_states_bw, scope)
    states_fw, states_bw, layer = [], [], inputs
    with variable_scope(scope or "stack_bidirectional_rnn"):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with variable_scope(f"cell_{i}"):
                outputs, (state_fw, state_bw) = bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, layer, initial_state_fw=_layer_states(initial_states_fw, i),
                    initial_state_bw=_layer_states(initial_states_bw, i), sequence_length=sequence_length,
                    parallel_iterations=parallel_iterations, dtype=dtype, time_major=time_major)
                layer = concat(outputs, 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer, tuple(states_fw), tuple(states_bw)
