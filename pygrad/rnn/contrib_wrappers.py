"""The cell wrappers of TF1's tf.contrib.rnn that own variables: EmbeddingWrapper,
InputProjectionWrapper and OutputProjectionWrapper (TF's core_rnn_cell, which the old
legacy_seq2seq models are built of), HighwayWrapper and AttentionCellWrapper; and `linear`, TF's
rnn_cell_impl._linear, the one affine map they all use.

Each wrapper but HighwayWrapper is a cell with its own variable scope, as in TF1: an
OutputProjectionWrapper around a GRUCell run by static_rnn makes
"rnn/output_projection_wrapper/kernel" for the projection and
"rnn/output_projection_wrapper/gru_cell/gates/kernel" for the wrapped cell. HighwayWrapper opens
no scope: its carry_w and carry_b sit in the scope it is called in."""
import math

from pygrad import errors, nest
from pygrad.graph import get_default_graph
from pygrad.ops import init_ops, math_ops
from pygrad.ops.array_ops import convert_to_tensor, expand_dims, reshape
from pygrad.ops.conv_ops import conv2d
from pygrad.ops.embedding_ops import embedding_lookup
from pygrad.ops.manip_ops import concat
from pygrad.ops.nn_ops import bias_add, softmax
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.ops.slice_ops import slice as slice_
from pygrad.ops.variable_scope import get_variable, get_variable_scope, variable_scope
from pygrad.rnn.cells import RNNCell, assert_like_rnncell, cell_error
from pygrad.rnn.wrappers import _Wrapper


def linear(args, output_size, bias, bias_initializer=None, kernel_initializer=None, make_variable=get_variable):
    """concat(args, 1) @ kernel (+ bias): "kernel" [sum of the args' depths, output_size] and "bias"
    [output_size] (zeros unless bias_initializer) in the current variable scope. args: a 2-D tensor
    or a list of them, each with a known depth. make_variable: get_variable, or a cell's
    add_variable, which also records the variable as the cell's."""
    if args is None or (nest.is_sequence(args) and not args):
        raise ValueError("`args` must be specified")
    args = [convert_to_tensor(a) for a in (args if nest.is_sequence(args) else [args])]
    total = 0
    for a in args:
        if a.shape.ndims != 2 or a.shape[1].value is None:
            rule = (f"linear expects 2-D arguments with a known depth, got shapes {[str(x.shape) for x in args]}")
            raise ValueError(errors.op_message("Linear", get_variable_scope().name, rule, errors.user_site()))
        total += a.shape[1].value
    dtype = args[0].dtype
    kernel = make_variable("kernel", [total, output_size], dtype=dtype, initializer=kernel_initializer)
    res = math_ops.matmul(args[0] if len(args) == 1 else concat(args, 1), kernel)
    if not bias:
        return res
    biases = make_variable("bias", [output_size], dtype=dtype, initializer=bias_initializer
                          if bias_initializer is not None else init_ops.constant_initializer(0.0))
    return bias_add(res, biases)


class _OwnScopeWrapper(_Wrapper):
    """A wrapper that is a cell of its own (TF's RNNCell): its scope, named after its class, holds
    its variables and the wrapped cell's scope."""

    def __init__(self, cell, reuse=None):
        assert_like_rnncell("cell", cell)
        super().__init__(cell)
        self._reuse = reuse

    @property
    def variables(self):
        own = list(self._variables)
        return own + [v for v in self._cell.variables if all(v is not w for w in own)]

    weights = variables

    def __call__(self, inputs, state, scope=None):
        return RNNCell.__call__(self, inputs, state, scope=scope)

    def _linear(self, args, output_size):
        """linear(args, output_size, bias=True) in the current scope, its variables the cell's."""
        return linear(args, output_size, True, make_variable=self.add_variable)


class EmbeddingWrapper(_OwnScopeWrapper):
    """The cell run on embedding_lookup(embedding, ids) of its integer inputs [batch] (or
    [batch, 1]); "embedding" [embedding_classes, embedding_size] is drawn from U(-sqrt(3), sqrt(3))
    (variance 1) unless `initializer` or the scope's initializer is given."""

    def __init__(self, cell, embedding_classes, embedding_size, initializer=None, reuse=None):
        super().__init__(cell, reuse)
        if embedding_classes <= 0 or embedding_size <= 0:
            raise ValueError(f"Both embedding_classes and embedding_size must be > 0: {embedding_classes}, "
                             f"{embedding_size}.")
        self._embedding_classes = embedding_classes
        self._embedding_size = embedding_size
        self._initializer = initializer

    def call(self, inputs, state):
        with get_default_graph().device("/cpu:0"):
            initializer = self._initializer or get_variable_scope().initializer
            if not initializer:
                initializer = init_ops.random_uniform_initializer(-math.sqrt(3), math.sqrt(3))
            dtype = nest.flatten(state)[0].dtype
            embedding = self.add_variable("embedding", [self._embedding_classes, self._embedding_size],
                                          initializer=initializer, dtype=dtype)
            inputs = convert_to_tensor(inputs)
            if not inputs.dtype.is_integer:
                raise cell_error(self, f"inputs must be integer ids, got {inputs.dtype.name} {inputs.name}", TypeError)
            embedded = embedding_lookup(embedding, reshape(inputs, [-1]))
        return self._cell(embedded, state)


class InputProjectionWrapper(_OwnScopeWrapper):
    """The cell run on linear(inputs, num_proj) (then `activation`, when given): "kernel" and
    "bias" in the wrapper's scope. input_size is accepted and unused, as in TF."""

    def __init__(self, cell, num_proj, activation=None, input_size=None, reuse=None):
        super().__init__(cell, reuse)
        self._num_proj = num_proj
        self._activation = activation

    def call(self, inputs, state):
        projected = self._linear(inputs, self._num_proj)
        if self._activation:
            projected = self._activation(projected)
        return self._cell(projected, state)


class OutputProjectionWrapper(_OwnScopeWrapper):
    """The cell's output mapped by linear(output, output_size) (then `activation`, when given):
    "kernel" [cell.output_size, output_size] and "bias" in the wrapper's scope."""

    def __init__(self, cell, output_size, activation=None, reuse=None):
        super().__init__(cell, reuse)
        if output_size < 1:
            raise ValueError(f"Parameter output_size must be > 0: {output_size}.")
        self._output_size = output_size
        self._activation = activation

    @property
    def output_size(self):
        return self._output_size

    def call(self, inputs, state):
        output, new_state = self._cell(inputs, state)
        projected = self._linear(output, self._output_size)
        if self._activation:
            projected = self._activation(projected)
        return projected, new_state


class HighwayWrapper(_Wrapper):
    """A highway connection around the cell: inputs * carry + outputs * transform, with
    carry = sigmoid(inputs @ carry_w + carry_b) (carry_b starts at carry_bias_init) and
    transform = 1 - carry, or, uncoupled, sigmoid(inputs @ transform_w + transform_b)
    (transform_b starts at -carry_bias_init). The inputs and outputs must have one shape."""

    def __init__(self, cell, couple_carry_transform_gates=True, carry_bias_init=1.0):
        super().__init__(cell)
        self._couple_carry_transform_gates = couple_carry_transform_gates
        self._carry_bias_init = carry_bias_init

    def _highway(self, inp, out):
        size = inp.shape[1].value
        carry = math_ops.sigmoid(bias_add(math_ops.matmul(inp, get_variable("carry_w", [size, size])), get_variable(
            "carry_b", [size], initializer=init_ops.constant_initializer(self._carry_bias_init))))
        if self._couple_carry_transform_gates:
            transform = 1 - carry
        else:
            transform = math_ops.sigmoid(bias_add(
                math_ops.matmul(inp, get_variable("transform_w", [size, size])),
                get_variable("transform_b", [size], initializer=init_ops.constant_initializer(-self._carry_bias_init))))
        return inp * carry + out * transform

    def __call__(self, inputs, state, scope=None):
        outputs, new_state = self._cell(inputs, state, scope=scope)
        nest.assert_same_structure(inputs, outputs)

        def highway(inp, out):
            inp = convert_to_tensor(inp)
            if inp.shape.ndims != 2 or inp.shape[1].value is None or not inp.shape.is_compatible_with(out.shape):
                raise cell_error(self, f"the inputs {inp.shape} and the cell's outputs {out.shape} must have one "
                                       f"shape [batch, depth] with a known depth")
            return self._highway(inp, out)

        return nest.map_structure(highway, inputs, outputs), new_state


def attention_keys(values, kernel):
    """The keys W * h of attention over values [batch, length, size]: a 1x1 convolution of
    values [batch, length, 1, size] with kernel [1, 1, size, key_size], as TF computes them."""
    return conv2d(expand_dims(values, 2), kernel, [1, 1, 1, 1], "SAME")


def attention_read(values, keys, v, query):
    """TF1's additive attention read: a = softmax(sum(v * tanh(keys + query), key axis)) over the
    positions, and the values weighted by it, sum(a * values) [batch, size]. values
    [batch, length, size]; keys [batch, length, 1, key_size]; query [batch, key_size]."""
    query = reshape(query, [-1, 1, 1, v.shape[0].value])
    scores = reduce_sum(v * math_ops.tanh(keys + query), [2, 3])
    weights = softmax(scores)
    return reduce_sum(expand_dims(weights, 2) * values, [1])


class AttentionCellWrapper(_OwnScopeWrapper):
    """Bahdanau-style attention over the last attn_length outputs: the cell runs on
    linear([inputs, attns], input_size); the new state (flattened) queries the window
    ("attention/attn_w" [1, 1, attn_size, attn_vec_size], "attention/attn_v", and a linear map of
    the query in "attention"); the output is linear([cell_output, new_attns], attn_size) in
    "attn_output_projection", and enters the window, whose oldest entry leaves. The state is
    (cell state, attns [batch, attn_size], window [batch, attn_length * attn_size]), or their
    concatenation with state_is_tuple=False."""

    def __init__(self, cell, attn_length, attn_size=None, attn_vec_size=None, input_size=None, state_is_tuple=True,
                 reuse=None):
        super().__init__(cell, reuse)
        if nest.is_sequence(cell.state_size) and not state_is_tuple:
            raise ValueError(f"Cell returns tuple of states, but the flag state_is_tuple is not set. State size is: "
                             f"{cell.state_size}")
        if attn_length <= 0:
            raise ValueError(f"attn_length should be greater than zero, got {attn_length}")
        self._state_is_tuple = state_is_tuple
        self._attn_size = attn_size if attn_size is not None else cell.output_size
        self._attn_vec_size = attn_vec_size if attn_vec_size is not None else self._attn_size
        self._input_size = input_size
        self._attn_length = attn_length

    @property
    def state_size(self):
        size = (self._cell.state_size, self._attn_size, self._attn_size * self._attn_length)
        return size if self._state_is_tuple else sum(size)

    @property
    def output_size(self):
        return self._attn_size

    def zero_state(self, batch_size, dtype):
        return RNNCell.zero_state(self, batch_size, dtype)

    def call(self, inputs, state):
        length, size = self._attn_length, self._attn_size
        if self._state_is_tuple:
            state, attns, window = state
        else:
            n = self._cell.state_size
            state, attns, window = (slice_(state, [0, 0], [-1, n]), slice_(state, [0, n], [-1, size]),
                                    slice_(state, [0, n + size], [-1, size * length]))
        window = reshape(window, [-1, length, size])
        input_size = self._input_size if self._input_size is not None else inputs.shape.as_list()[1]
        cell_output, new_state = self._cell(self._linear([inputs, attns], input_size), state)
        query = concat(nest.flatten(new_state), 1) if self._state_is_tuple else new_state
        with variable_scope("attention"):
            kernel = self.add_variable("attn_w", [1, 1, size, self._attn_vec_size])
            v = self.add_variable("attn_v", [self._attn_vec_size])
            new_attns = attention_read(window, attention_keys(window, kernel), v,
                                       self._linear(query, self._attn_vec_size))
        with variable_scope("attn_output_projection"):
            output = self._linear([cell_output, new_attns], size)
        new_window = reshape(concat([slice_(window, [0, 1, 0], [-1, -1, -1]), expand_dims(output, 1)], 1),
                             [-1, length * size])
        new_state = (new_state, new_attns, new_window)
        return output, (new_state if self._state_is_tuple else concat(list(new_state), 1))
