"""TF1's RNN cells (tf.nn.rnn_cell): the RNNCell base and BasicRNNCell, GRUCell, BasicLSTMCell and
LSTMCell, with TensorFlow's formulas, gate order, kernel layouts and variable names.

A cell builds its variables on its first call, under TF's scopes: the cell's own variable scope
(its snake-cased class name, "basic_lstm_cell", made unique in the enclosing scope) inside the scope
it is first called in, so that tf.nn.static_rnn gives "rnn/basic_lstm_cell/kernel". Later calls
reuse that scope and its variables. The cells are built from ordinary ops, so tf.gradients
differentiates through them."""
import collections
import copy
import re

from pygrad import dtypes, errors, nest
from pygrad.graph import Tensor, build_error, get_default_graph
from pygrad.ops import init_ops, math_ops
from pygrad.ops.array_ops import constant, constant_value, convert_to_tensor, reshape, shape, zeros, zeros_like
from pygrad.ops.manip_ops import concat, split
from pygrad.ops.nn_ops import bias_add
from pygrad.ops.slice_ops import slice as slice_, strided_slice
from pygrad.ops.state_ops import trainable_variables
from pygrad.ops.variable_scope import get_variable, get_variable_scope, variable_scope
from pygrad.shapes import as_shape
from pygrad.train.clip import clip_by_value

_WEIGHTS_VARIABLE_NAME = "kernel"
_BIAS_VARIABLE_NAME = "bias"

_ACTIVATIONS = {"tanh": math_ops.tanh, "sigmoid": math_ops.sigmoid, "relu": math_ops.relu,
                "linear": lambda x: x}


def _activation(activation, default=math_ops.tanh):
    """A callable, or the name of one of TF's activations; None gives tanh (TF's default)."""
    if not activation:
        return default
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"Unknown activation function: {activation} (pygrad knows {sorted(_ACTIVATIONS)})")
        return _ACTIVATIONS[activation]
    return activation


def _to_snake_case(name):
    """TF's layer naming: BasicLSTMCell -> basic_lstm_cell, GRUCell -> gru_cell."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


def assert_like_rnncell(cell_name, cell):
    """TypeError (TF's words) unless cell has output_size, state_size, zero_state and is callable."""
    conditions = [hasattr(cell, "output_size"), hasattr(cell, "state_size"),
                  hasattr(cell, "get_initial_state") or hasattr(cell, "zero_state"), callable(cell)]
    errors = ["'output_size' property is missing", "'state_size' property is missing",
              "either 'zero_state' or 'get_initial_state' method is required", "is not callable"]
    if not all(conditions):
        missing = [e for e, ok in zip(errors, conditions) if not ok]
        raise TypeError(f"The argument {cell_name!r} ({cell}) is not an RNNCell: {', '.join(missing)}.")


def _batch_source(batch_size):
    """(t, axis) when batch_size is the tensor tf.shape(t)[axis], else None."""
    op = batch_size.op
    if op.type != "StridedSlice" or op.inputs[0].op.type != "Shape":
        return None
    a = op.attrs
    if len(a["begin"]) != 1 or a["shrink_axis_mask"] != 1 or a["ellipsis_mask"] or a["new_axis_mask"]:
        return None
    t = op.inputs[0].op.inputs[0]
    if t.shape.ndims is None:
        return None
    return t, a["begin"][0] % t.shape.ndims


def batch_zeros(batch_size, size, dtype, name="zeros"):
    """Zeros of shape [batch_size] + size. batch_size: an int, a constant, or tf.shape(t)[i] of a
    tensor t (a batch known only when the graph runs: the zeros then take t's size, as pygrad plans
    shapes per run signature)."""
    size = as_shape(size).as_list()
    dtype = dtypes.as_dtype(dtype)
    if isinstance(batch_size, Tensor) and constant_value(batch_size) is not None:
        batch_size = int(constant_value(batch_size))
    if not isinstance(batch_size, Tensor):
        return zeros([int(batch_size)] + size, dtype=dtype, name=name)
    source = _batch_source(batch_size)
    if source is None:
        raise build_error("ZeroState", name, f"batch_size must be a Python int, a constant or tf.shape(t)[i] of a "
                                             f"tensor t, got the output of {batch_size.op.type} "
                                             f"'{batch_size.op.name}'")
    t, axis = source
    # One element of t per batch entry: t's batch column, whose shape alone the zeros take.
    rank = t.shape.ndims
    begin, end = [0] * rank, [1] * rank
    column = strided_slice(t, begin, end, begin_mask=1 << axis, end_mask=1 << axis,
                           shrink_axis_mask=((1 << rank) - 1) & ~(1 << axis))
    column = reshape(zeros_like(column, dtype=dtype), [-1] + [1] * len(size))
    return math_ops.add(column, zeros([1] + size, dtype=dtype), name=name)


def zero_state_tensors(state_size, batch_size, dtype):
    """Zeros shaped [batch_size, s] for each s of the (nested) state_size."""
    return nest.map_structure(lambda s: batch_zeros(batch_size, s, dtype), state_size)


def cell_error(cell, rule, cls=ValueError):
    """An error of a cell in the one layout of op errors: the cell's class, its scope, the rule
    broken, and the user's line."""
    return cls(errors.op_message(type(cell).__name__, cell._node_name(), rule, errors.user_site()))


def _check_supported_dtype(cell, dtype, where):
    if dtype is not None and not dtypes.as_dtype(dtype).is_floating:
        raise cell_error(cell, f"RNN cell only supports floating point inputs, but saw dtype: "
                               f"{dtypes.as_dtype(dtype).name} ({where})")


class RNNCell:
    """An RNN cell: (output, new_state) = cell(inputs, state). Subclasses give state_size,
    output_size, build(inputs_shape) and call(inputs, state).

    As TF1, a cell is a layer: its first call opens its variable scope (named after the cell, unique
    in the enclosing scope, or `scope` when given), builds its variables there with get_variable,
    and later calls reuse them."""

    def __init__(self, trainable=True, name=None, dtype=None, _reuse=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown keyword arguments {sorted(kwargs)}")
        self.trainable = trainable
        self._base_name = name or _to_snake_case(type(self).__name__)
        self._reuse = _reuse
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._scope = None
        self._rnncell_scope = None
        self._variables = []
        self.built = False

    # ---- sizes and the zero state
    @property
    def state_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._scope.name.split("/")[-1] if self._scope is not None else self._base_name

    def zero_state(self, batch_size, dtype):
        """Zero-filled state(s): [batch_size, s] for each s of state_size, in its structure."""
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return zero_state_tensors(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = inputs.shape[0].value if inputs.shape.ndims else None
            if batch_size is None:
                batch_size = shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(f"batch_size and dtype cannot be None while constructing initial state: "
                             f"batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def __deepcopy__(self, memo):
        """A new, unbuilt cell of the same configuration (TF1's legacy seq2seq models copy the cell
        they are given for the encoder): the cells inside are copied the same way, every other
        setting (numbers, functions, tensors) is shared. Copying a built cell works too: the copy
        makes or, under a reusing scope, finds its variables when first called."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if isinstance(value, RNNCell) or (isinstance(value, (list, tuple))
                                              and any(isinstance(c, RNNCell) for c in value)):
                value = copy.deepcopy(value, memo)
            new.__dict__[key] = value
        new._scope, new._rnncell_scope, new._variables, new.built = None, None, [], False
        return new

    # ---- variables
    @property
    def variables(self):
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self):
        trainable = set(map(id, trainable_variables()))
        return [v for v in self._variables if id(v) in trainable]

    trainable_weights = trainable_variables

    def add_variable(self, name, shape, initializer=None, dtype=None, trainable=True):
        """get_variable in the cell's scope (TF's Layer.add_weight)."""
        var = get_variable(name, shape=shape, dtype=dtype or self._dtype, initializer=initializer,
                           trainable=trainable and self.trainable)
        if all(v is not var for v in self._variables):
            self._variables.append(var)
        return var

    add_weight = add_variable

    def build(self, inputs_shape):
        pass

    def call(self, inputs, state):
        raise NotImplementedError("Abstract method")

    # ---- calling
    def _node_name(self):
        return self._scope.name if self._scope is not None else self._base_name

    def __call__(self, inputs, state, scope=None):
        """Runs the cell on inputs from state; returns (output, new_state). TF1's RNNCell.__call__:
        the scope the cell is first called in is kept for later calls."""
        if scope is not None:
            with variable_scope(scope) as opened:
                return self._layer_call(inputs, state, opened)
        if self._rnncell_scope is None:
            self._rnncell_scope = get_variable_scope()
        with variable_scope(self._rnncell_scope, auxiliary_name_scope=False):
            return self._layer_call(inputs, state, None)

    def _layer_call(self, inputs, state, scope):
        """TF's Layer.__call__: the cell's own scope (captured on the first call), reused once built."""
        if self._scope is None:
            if self._reuse:
                opener = variable_scope(scope if scope is not None else self._base_name)
            else:
                opener = variable_scope(scope, default_name=self._base_name)
            with opener as captured:
                self._scope = captured
        reuse = True if self.built else self._reuse
        graph = get_default_graph()
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False), \
                graph.name_scope(self._scope.original_name_scope):
            if not self.built:
                self._build_for(inputs)
                self.built = True
            return self.call(inputs, state)

    def _build_for(self, inputs):
        shapes = [convert_to_tensor(x).shape for x in nest.flatten(inputs)]
        if self._dtype is None:
            self._dtype = convert_to_tensor(nest.flatten(inputs)[0]).dtype
        self.build(shapes[0] if len(shapes) == 1 else shapes)


class LayerRNNCell(RNNCell):
    """A cell whose variables are made in build() (TF's LayerRNNCell): it opens only its own
    scope, not the enclosing RNNCell one."""

    def __call__(self, inputs, state, scope=None):
        return self._layer_call(inputs, state, scope)

    def _input_depth(self, inputs_shape):
        """The inputs' last dimension, checked as TF's layers check it (2-D inputs, known depth)."""
        inputs_shape = as_shape(inputs_shape)
        if inputs_shape.ndims is not None and inputs_shape.ndims != 2:
            raise cell_error(self, f"inputs must be 2-D [batch_size, input_depth] (expected ndim=2, found "
                                   f"ndim={inputs_shape.ndims}), got shape {inputs_shape}")
        if inputs_shape.ndims is None or inputs_shape[-1].value is None:
            raise cell_error(self, f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        _check_supported_dtype(self, self._dtype, "the inputs")
        return inputs_shape[-1].value

    def _check_call(self, inputs, state):
        for t in [inputs] + nest.flatten(state):
            _check_supported_dtype(self, convert_to_tensor(t).dtype, "inputs and state")


def _state_error(cell, state, expected):
    return cell_error(cell, f"state must be {expected}, got {state!r}")


class BasicRNNCell(LayerRNNCell):
    """output = new_state = activation(concat([inputs, state]) @ kernel + bias)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[depth + self._num_units, self._num_units])
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[self._num_units],
                                       initializer=init_ops.zeros_initializer())

    def call(self, inputs, state):
        self._check_call(inputs, state)
        gate_inputs = bias_add(math_ops.matmul(concat([inputs, state], 1), self._kernel), self._bias)
        output = self._activation(gate_inputs)
        return output, output


class GRUCell(LayerRNNCell):
    """TF's GRU: r, u = sigmoid(concat([x, h]) @ gates/kernel + gates/bias) (r first);
    c = act(concat([x, r * h]) @ candidate/kernel + candidate/bias); h' = u * h + (1 - u) * c.
    The gate bias starts at 1.0 unless bias_initializer is given."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None, bias_initializer=None,
                 name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_variable(f"gates/{_WEIGHTS_VARIABLE_NAME}", shape=[depth + n, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(f"gates/{_BIAS_VARIABLE_NAME}", shape=[2 * n],
                                            initializer=self._bias_initializer if self._bias_initializer is not None
                                            else init_ops.constant_initializer(1.0))
        self._candidate_kernel = self.add_variable(f"candidate/{_WEIGHTS_VARIABLE_NAME}", shape=[depth + n, n],
                                                   initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(f"candidate/{_BIAS_VARIABLE_NAME}", shape=[n],
                                                 initializer=self._bias_initializer
                                                 if self._bias_initializer is not None
                                                 else init_ops.zeros_initializer())

    def call(self, inputs, state):
        self._check_call(inputs, state)
        gate_inputs = bias_add(math_ops.matmul(concat([inputs, state], 1), self._gate_kernel), self._gate_bias)
        r, u = split(math_ops.sigmoid(gate_inputs), 2, axis=1)
        candidate = bias_add(math_ops.matmul(concat([inputs, r * state], 1), self._candidate_kernel),
                             self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


_LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


class LSTMStateTuple(_LSTMStateTuple):
    """An LSTM's state (c, h): the cell state, then the output."""
    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype.name} vs {h.dtype.name}")
        return c.dtype


def _split_lstm_state(cell, state, c_size, h_size):
    """(c, h) of a tuple state, or of a concatenated one ([batch, c_size + h_size])."""
    if cell._state_is_tuple:
        if not (isinstance(state, (tuple, list)) and len(state) == 2):
            raise _state_error(cell, state, "a (c, h) tuple (state_is_tuple=True)")
        return state
    if isinstance(state, (tuple, list)):
        raise _state_error(cell, state, f"one tensor [batch, {c_size + h_size}] (state_is_tuple=False)")
    return slice_(state, [0, 0], [-1, c_size]), slice_(state, [0, c_size], [-1, h_size])


def _joined_lstm_state(cell, c, h):
    return LSTMStateTuple(c, h) if cell._state_is_tuple else concat([c, h], 1)


class BasicLSTMCell(LayerRNNCell):
    """TF's basic LSTM: i, j, f, o = split(concat([x, h]) @ kernel + bias, 4) (in that order);
    c' = c * sigmoid(f + forget_bias) + sigmoid(i) * act(j); h' = act(c') * sigmoid(o).
    kernel: [input_depth + num_units, 4 * num_units]; bias starts at zeros."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[depth + n, 4 * n])
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[4 * n], initializer=init_ops.zeros_initializer())

    def call(self, inputs, state):
        self._check_call(inputs, state)
        c, h = _split_lstm_state(self, state, self._num_units, self._num_units)
        gate_inputs = bias_add(math_ops.matmul(concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = split(gate_inputs, 4, axis=1)
        forget_bias = constant(self._forget_bias, dtype=f.dtype)
        sigmoid = math_ops.sigmoid
        new_c = math_ops.add(math_ops.multiply(c, sigmoid(math_ops.add(f, forget_bias))),
                             math_ops.multiply(sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), sigmoid(o))
        return new_h, _joined_lstm_state(self, new_c, new_h)


class LSTMCell(LayerRNNCell):
    """TF's LSTM with optional peepholes (w_f_diag, w_i_diag, w_o_diag), cell clipping, and a
    projection of the output (projection/kernel: [num_units, num_proj]) with optional clipping.
    Gates as BasicLSTMCell's (i, j, f, o); kernel: [input_depth + h_depth, 4 * num_units], where
    h_depth is num_proj when given, else num_units."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None, num_proj=None, proj_clip=None,
                 num_unit_shards=None, num_proj_shards=None, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise cell_error(self, "num_unit_shards and num_proj_shards (partitioned variables) are not supported; "
                                   "leave them None")
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)
        h = num_proj if num_proj else num_units
        self._state_size = LSTMStateTuple(num_units, h) if state_is_tuple else num_units + h
        self._output_size = h

    @property
    def state_size(self):
        return self._state_size

    @property
    def output_size(self):
        return self._output_size

    def build(self, inputs_shape):
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        h_depth = n if self._num_proj is None else self._num_proj
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[depth + h_depth, 4 * n],
                                         initializer=self._initializer)
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[4 * n], initializer=init_ops.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", shape=[n], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", shape=[n], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", shape=[n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(f"projection/{_WEIGHTS_VARIABLE_NAME}", shape=[n, self._num_proj],
                                                  initializer=self._initializer)

    def _clip_cell(self, c):
        return clip_by_value(c, -self._cell_clip, self._cell_clip)

    def call(self, inputs, state):
        self._check_call(inputs, state)
        n = self._num_units
        num_proj = n if self._num_proj is None else self._num_proj
        sigmoid, act = math_ops.sigmoid, self._activation
        c_prev, m_prev = _split_lstm_state(self, state, n, num_proj)
        lstm_matrix = bias_add(math_ops.matmul(concat([inputs, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = split(lstm_matrix, 4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * act(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * act(j)
        if self._cell_clip is not None:
            c = self._clip_cell(c)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * act(c)
        else:
            m = sigmoid(o) * act(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, _joined_lstm_state(self, c, m)
