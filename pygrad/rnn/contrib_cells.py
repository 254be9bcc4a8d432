"""The cells of TF1's tf.contrib.rnn beyond tf.nn.rnn_cell: LayerNormBasicLSTMCell (layer
normalization and recurrent dropout), the block cells LSTMBlockCell, GRUBlockCell and
GRUBlockCellV2 (TF ran them as one fused kernel; their math is LSTMCell's and GRUCell's, so they
are those cells under the block cells' variable names), and LSTMBlockFusedCell, an LSTM over a
whole [time, batch, depth] sequence in one call (LSTMBlockWrapper's contract)."""
import numbers

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops import init_ops, math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, expand_dims, stop_gradient, transpose, zeros
from pygrad.ops.array_ops import shape as shape_of
from pygrad.ops.functional_ops import scan
from pygrad.ops.manip_ops import concat, split, stack, unstack
from pygrad.ops.nn_impl import batch_normalization, moments
from pygrad.ops.nn_ops import bias_add
from pygrad.ops.random_ops import dropout
from pygrad.ops.scatter_ops import gather_nd
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sequence_ops import sequence_mask
from pygrad.ops.variable_scope import variable_scope
from pygrad.train.clip import clip_by_value
from pygrad.rnn.cells import GRUCell, LayerRNNCell, LSTMCell, LSTMStateTuple, RNNCell, _activation, cell_error


class LayerNormBasicLSTMCell(LayerRNNCell):
    """BasicLSTMCell's gates (i, j, f, o from concat([x, h]) @ kernel) each layer-normalized
    before its nonlinearity, and the new c too, with gamma and beta per gate in the scopes "input",
    "transform", "forget", "output" and "state" (starting at norm_gain and norm_shift; epsilon
    1e-12, contrib's layer_norm). Without layer_norm a "bias" is added instead. With
    dropout_keep_prob < 1 (or a tensor), the candidate act(j) is dropped (recurrent dropout
    without memory loss). A cell of TF's RNNCell kind: its scope "layer_norm_basic_lstm_cell" sits
    in the scope it is first called in."""

    __call__ = RNNCell.__call__

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=math_ops.tanh, layer_norm=True,
                 norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0, dropout_prob_seed=None, reuse=None):
        super().__init__(_reuse=reuse)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        if not self._layer_norm:
            self._bias = self.add_variable("bias", [4 * n])
            return
        self._norms = {}
        for scope in ("input", "transform", "forget", "output", "state"):
            gamma = self.add_variable(f"{scope}/gamma", [n], initializer=init_ops.constant_initializer(self._norm_gain))
            beta = self.add_variable(f"{scope}/beta", [n], initializer=init_ops.constant_initializer(self._norm_shift))
            self._norms[scope] = gamma, beta

    def _norm(self, x, scope):
        if not self._layer_norm:
            return x
        gamma, beta = self._norms[scope]
        with get_default_graph().name_scope(scope):
            mean, variance = moments(x, [1], keep_dims=True)
            return batch_normalization(x, mean, variance, beta, gamma, 1e-12)

    def call(self, inputs, state):
        self._check_call(inputs, state)
        if not (isinstance(state, (tuple, list)) and len(state) == 2):
            raise cell_error(self, f"state must be a (c, h) tuple, got {state!r}")
        c, h = state
        gates = math_ops.matmul(concat([inputs, h], 1), self._kernel)
        if not self._layer_norm:
            gates = bias_add(gates, self._bias)
        i, j, f, o = [self._norm(g, s) for g, s in zip(split(gates, 4, axis=1),
                                                         ("input", "transform", "forget", "output"))]
        g = self._activation(j)
        if not isinstance(self._keep_prob, numbers.Real) or self._keep_prob < 1:
            g = dropout(g, self._keep_prob, seed=self._seed)
        new_c = self._norm(c * math_ops.sigmoid(f + self._forget_bias) + math_ops.sigmoid(i) * g, "state")
        new_h = self._activation(new_c) * math_ops.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class LSTMBlockCell(LSTMCell):
    """TF's LSTMBlockCell: LSTMCell's math (gates i, j, f, o; peepholes w_i_diag, w_f_diag,
    w_o_diag with use_peephole; c clipped to [-cell_clip, cell_clip] when cell_clip > 0) with the
    variables kernel, bias, w_i_diag, w_f_diag, w_o_diag in the scope "lstm_cell". As TF's block
    kernel, the clip passes the gradient through unchanged (LSTMCell's clip_by_value stops it
    outside the range)."""

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False, dtype=None, reuse=None,
                 name="lstm_cell"):
        clip = cell_clip if cell_clip is not None and cell_clip > 0 else None
        super().__init__(num_units, use_peepholes=use_peephole, cell_clip=clip, forget_bias=forget_bias, reuse=reuse,
                         name=name, dtype=dtype)

    def _clip_cell(self, c):
        return c + stop_gradient(clip_by_value(c, -self._cell_clip, self._cell_clip) - c)

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n], initializer=init_ops.constant_initializer(0.0))
        if self._use_peepholes:
            self._w_i_diag = self.add_variable("w_i_diag", [n])
            self._w_f_diag = self.add_variable("w_f_diag", [n])
            self._w_o_diag = self.add_variable("w_o_diag", [n])


class GRUBlockCell(GRUCell):
    """TF's GRUBlockCell: GRUCell's math under the block kernel's variable names, which TF gives
    crossed: "w_c" is the gates' kernel [depth + n, 2n] and "w_ru" the candidate's [depth + n, n];
    "b_ru" (starting at 1) and "b_c" (at 0) are the gates' and the candidate's biases."""

    def __init__(self, num_units=None, cell_size=None, reuse=None, name="gru_cell"):
        if (cell_size is None) == (num_units is None):
            raise ValueError("Exactly one of num_units or cell_size must be provided.")
        super().__init__(num_units if num_units is not None else cell_size, reuse=reuse, name=name)

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_variable("w_c", [depth + n, 2 * n])
        self._gate_bias = self.add_variable("b_ru", [2 * n], initializer=init_ops.constant_initializer(1.0))
        self._candidate_kernel = self.add_variable("w_ru", [depth + n, n])
        self._candidate_bias = self.add_variable("b_c", [n], initializer=init_ops.constant_initializer(0.0))

    def call(self, inputs, state):
        shape = convert_to_tensor(state).shape
        depth = shape[1].value if shape.ndims == 2 else None
        if depth != self._num_units:
            raise cell_error(self, f"Shape of h_prev[1] incorrect: cell_size {self._num_units} vs {depth}")
        return super().call(inputs, state)


class GRUBlockCellV2(GRUBlockCell):
    """GRUBlockCell with GRUCell's variable names (gates/kernel, gates/bias, candidate/kernel,
    candidate/bias)."""

    build = GRUCell.build


class LSTMBlockWrapper:
    """An LSTM run over a whole sequence in one call (TF's LSTMBlockWrapper, a layer): inputs
    [time, batch, depth] (or a list of [batch, depth]), initial_state (c, h) or zeros of dtype;
    returns (outputs, LSTMStateTuple(c, h)), outputs in the inputs' form. With sequence_length
    (int vector [batch]), outputs past an entry's end are zeros and its final state is the one at
    its end. Subclasses give num_units and _call_cell(inputs, c, h, dtype, sequence_length) ->
    (c at every step, h at every step), each [time, batch, num_units]."""

    def __init__(self, name, reuse=None):
        self._base_name = name
        self._reuse = reuse
        self._scope = None

    @property
    def num_units(self):
        raise NotImplementedError("Abstract method")

    def _call_cell(self, inputs, initial_cell_state, initial_output, dtype, sequence_length):
        raise NotImplementedError("Abstract method")

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
        is_list = isinstance(inputs, list)
        inputs = stack(inputs) if is_list else convert_to_tensor(inputs)
        name = type(self).__name__
        if inputs.shape.ndims != 3 or inputs.shape[2].value is None:
            raise cell_error(self, f"inputs must be [time, batch, depth] with a known depth, got shape {inputs.shape}")
        if self._scope is None:
            with variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured
        batch = inputs.shape[1].value if inputs.shape[1].value is not None else shape_of(inputs)[1]
        if initial_state is None:
            if dtype is None:
                raise cell_error(self, "Either initial_state or dtype needs to be specified")
            z = zeros(stack([batch, self.num_units]) if not isinstance(batch, int) else [batch, self.num_units],
                      dtype=dtype)
            initial_state = (z, z)
        elif len(initial_state) != 2:
            raise cell_error(self, f"Expecting initial_state to be a tuple with length 2 or None, got "
                                   f"{initial_state!r}")
        dtype = dtype or initial_state[0].dtype
        with get_default_graph().name_scope(name):
            if sequence_length is not None:
                sequence_length = convert_to_tensor(sequence_length)
            c0, h0 = initial_state
            cs, outputs = self._call_cell(inputs, c0, h0, dtype, sequence_length)
            if sequence_length is None:
                final = LSTMStateTuple(cs[-1], outputs[-1])
            else:
                time_len = inputs.shape[0].value if inputs.shape[0].value is not None else shape_of(inputs)[0]
                mask = transpose(sequence_mask(sequence_length, time_len, dtype=dtype), [1, 0])
                outputs = outputs * expand_dims(mask, 2)
                # Index sequence_length of [initial; states] is the state at each entry's end.
                index = stack([cast(sequence_length, dtypes.int32), range_(batch)], axis=1)
                final = LSTMStateTuple(*[gather_nd(concat([expand_dims(first, 0), steps], 0), index)
                                         for first, steps in ((c0, cs), (h0, outputs))])
        return (unstack(outputs) if is_list else outputs), final

    def _node_name(self):
        return self._scope.name if self._scope is not None else self._base_name


class LSTMBlockFusedCell(LSTMBlockWrapper):
    """LSTMBlockCell's step over the time axis (the variables kernel, bias and the peepholes in
    the scope "lstm_fused_cell"), the steps run in one while loop (tf.scan). Past the longest
    sequence TF's kernel stops; the steps pygrad runs there change no output."""

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False, reuse=None, dtype=None,
                 name="lstm_fused_cell"):
        super().__init__(name, reuse)
        self._cell = LSTMBlockCell(num_units, forget_bias, cell_clip, use_peephole, dtype=dtype, reuse=reuse)

    @property
    def num_units(self):
        return self._cell._num_units

    @property
    def variables(self):
        return self._cell.variables

    def _call_cell(self, inputs, initial_cell_state, initial_output, dtype, sequence_length):
        def step(state, x):
            _, new_state = self._cell(x, LSTMStateTuple(*state), scope=self._scope)
            return tuple(new_state)

        cs, hs = scan(step, inputs, initializer=(convert_to_tensor(initial_cell_state, dtype=dtype),
                                                 convert_to_tensor(initial_output, dtype=dtype)))
        return cs, hs

