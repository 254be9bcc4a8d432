"""tf.contrib.seq2seq's attention, as TF 1.15's attention_wrapper.py: the mechanisms
BahdanauAttention (additive, optionally weight-normalized) and LuongAttention (multiplicative,
optionally scaled), hardmax, and AttentionWrapper, a cell that runs its cell on the inputs joined
with the previous attention, scores the cell's output against the memory, and emits the
attention (the context, or attention_layer(concat([cell_output, context])) ).

Variable names are TF's: the mechanism's memory_layer/kernel in the scope it is made in, and,
inside the wrapper's scope (attention_wrapper), bahdanau_attention/query_layer/kernel,
bahdanau_attention/attention_v (with normalize: attention_g, attention_b),
luong_attention/attention_g (with scale) and attention_layer/kernel.

TF checks at run time that the memory, the state and the query have one batch size; pygrad checks
them when they are known as the graph is built (a mismatch known only at run time fails in the
batched matmul of the alignments and the memory). memory_sequence_length must be positive: that
is checked once, where the mechanism is made."""
import collections
import math

import numpy as np

from pygrad import dtypes, nest
from pygrad.graph import Tensor, get_default_graph
from pygrad.layers.core import Dense
from pygrad.ops import init_ops, math_ops
from pygrad.ops.array_ops import convert_to_tensor, expand_dims, identity, ones_like, shape, squeeze, zeros, zeros_like
from pygrad.ops.check_ops import assert_positive
from pygrad.ops.manip_ops import concat, one_hot, where
from pygrad.ops.nn_ops import softmax
from pygrad.ops.reduction_ops import argmax, reduce_sum
from pygrad.ops.sequence_ops import sequence_mask
from pygrad.ops.tensor_array_ops import TensorArray
from pygrad.ops.variable_scope import get_variable, variable_scope
from pygrad.contrib.seq2seq.basic_decoder import check_output_layer, layer_output_size
from pygrad.rnn.cells import RNNCell, assert_like_rnncell, zero_state_tensors
from pygrad.shapes import TensorShape

__all__ = ["AttentionMechanism", "AttentionWrapper", "AttentionWrapperState", "BahdanauAttention", "LuongAttention",
           "hardmax"]


class AttentionMechanism:
    """The base of the attention mechanisms an AttentionWrapper accepts."""

    @property
    def alignments_size(self):
        raise NotImplementedError

    @property
    def state_size(self):
        raise NotImplementedError


def _dim(t, i):
    """t's dimension i: an int when known, else tf.shape(t)[i]."""
    d = t.shape[i].value
    return d if d is not None else shape(t)[i]


def _prepare_memory(memory, memory_sequence_length, check_inner_dims_defined):
    """memory as tensors, each with its steps past memory_sequence_length zeroed."""
    memory = nest.map_structure(lambda m: convert_to_tensor(m, name="memory"), memory)
    if memory_sequence_length is not None:
        memory_sequence_length = convert_to_tensor(memory_sequence_length, name="memory_sequence_length")
    if check_inner_dims_defined:
        for m in nest.flatten(memory):
            if m.shape.ndims is None or not m.shape[2:].is_fully_defined():
                raise ValueError(f"Expected memory {m.name} to have fully defined inner dims, but saw shape: "
                                 f"{m.shape}")
    if memory_sequence_length is None:
        return memory
    first = nest.flatten(memory)[0]
    mask = sequence_mask(memory_sequence_length, maxlen=shape(first)[1], dtype=first.dtype)

    def masked(m):
        extra = m.shape.ndims - 2
        return m * (mask if not extra else mask[(Ellipsis,) + (None,) * extra])

    return nest.map_structure(masked, memory)


def hardmax(logits, name=None):
    """One-hot vectors at the argmax of the last axis of logits, in logits' dtype."""
    with get_default_graph().name_scope(name or "Hardmax"):
        logits = convert_to_tensor(logits, name="logits")
        depth = _dim(logits, logits.shape.ndims - 1)
        return one_hot(argmax(logits, -1), depth, dtype=logits.dtype)


class _BaseAttentionMechanism(AttentionMechanism):
    """The memory (masked past memory_sequence_length) as values, memory_layer(values) as keys,
    and the probability function applied to the scores masked past the memory's lengths."""

    def __init__(self, query_layer, memory, probability_fn, memory_sequence_length=None, memory_layer=None,
                 check_inner_dims_defined=True, score_mask_value=None, custom_key_value_fn=None, name=None):
        check_output_layer(query_layer, "query_layer")
        check_output_layer(memory_layer, "memory_layer")
        if not callable(probability_fn):
            raise TypeError(f"probability_fn must be callable, saw type: {type(probability_fn).__name__}")
        self._query_layer, self._memory_layer = query_layer, memory_layer
        self.dtype = memory_layer.dtype
        if score_mask_value is None:
            score_mask_value = float(-np.inf)
        with get_default_graph().name_scope(name or "BaseAttentionMechanismInit"):
            self._values = _prepare_memory(memory, memory_sequence_length, check_inner_dims_defined)
            score_mask = None
            if memory_sequence_length is not None:
                check = assert_positive(memory_sequence_length,
                                        message="All values in memory_sequence_length must be greater than zero.")
                with get_default_graph().control_dependencies([check]):
                    time = _dim(nest.flatten(self._values)[0], 1)
                    score_mask = identity(sequence_mask(memory_sequence_length, maxlen=time), name="score_mask")
            self._keys = self._memory_layer(self._values) if self._memory_layer else self._values
            if custom_key_value_fn is not None:
                self._keys, self._values = custom_key_value_fn(self._keys, self._values)
            self._batch_size = _dim(self._keys, 0)
            self._alignments_size = _dim(self._keys, 1)

        def masked_probability(score, prev):
            if score_mask is not None:
                score = where(score_mask, score, score_mask_value * ones_like(score))
            return probability_fn(score, prev)

        self._probability_fn = masked_probability

    @property
    def memory_layer(self):
        return self._memory_layer

    @property
    def query_layer(self):
        return self._query_layer

    @property
    def values(self):
        return self._values

    @property
    def keys(self):
        return self._keys

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def alignments_size(self):
        return self._alignments_size

    @property
    def state_size(self):
        return self._alignments_size

    def initial_alignments(self, batch_size, dtype):
        """Zeros [batch_size, max_time] (max_time: the memory's)."""
        if isinstance(self._alignments_size, int):
            return zero_state_tensors(self._alignments_size, batch_size, dtype)
        return zeros_like(self._keys[:, :, 0], dtype=dtype)  # a time known when the graph runs

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)


def _wrapped(probability_fn):
    fn = probability_fn if probability_fn is not None else softmax
    return lambda score, _: fn(score)


class LuongAttention(_BaseAttentionMechanism):
    """score = query . keys (times the scalar attention_g with scale=True, starting at 1); the keys
    are memory_layer(memory) with num_units units, which must be the query's depth."""

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False, probability_fn=None,
                 score_mask_value=None, dtype=None, custom_key_value_fn=None, name="LuongAttention"):
        dtype = dtype or dtypes.float32
        super().__init__(query_layer=None, memory_layer=Dense(num_units, name="memory_layer", use_bias=False,
                                                              dtype=dtype),
                         memory=memory, probability_fn=_wrapped(probability_fn),
                         memory_sequence_length=memory_sequence_length, score_mask_value=score_mask_value,
                         custom_key_value_fn=custom_key_value_fn, name=name)
        self._num_units, self._scale, self._name = num_units, scale, name

    def __call__(self, query, state):
        with variable_scope(None, default_name="luong_attention"):
            depth, key_units = query.shape[-1].value, self._keys.shape[-1].value
            if depth is None or depth != key_units:
                raise ValueError(f"Incompatible or unknown inner dimensions between query and keys.  Query "
                                 f"({query.name}) has units: {depth}.  Keys ({self._keys.name}) have units: "
                                 f"{key_units}.  Perhaps you need to set num_units to the keys' dimension "
                                 f"({key_units})?")
            score = squeeze(math_ops.matmul(expand_dims(query, 1), self._keys, transpose_b=True), [1])
            if self._scale:
                attention_g = get_variable("attention_g", shape=(), dtype=query.dtype,
                                           initializer=init_ops.ones_initializer())
                score = attention_g * score
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class BahdanauAttention(_BaseAttentionMechanism):
    """score = sum(v * tanh(keys + query_layer(query))) over the units; with normalize=True,
    sum(g * v / |v| * tanh(keys + query_layer(query) + b)), g starting at sqrt(1 / num_units)
    and b at zeros."""

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False, probability_fn=None,
                 score_mask_value=None, dtype=None, custom_key_value_fn=None, name="BahdanauAttention"):
        dtype = dtype or dtypes.float32
        super().__init__(query_layer=Dense(num_units, name="query_layer", use_bias=False, dtype=dtype),
                         memory_layer=Dense(num_units, name="memory_layer", use_bias=False, dtype=dtype),
                         memory=memory, probability_fn=_wrapped(probability_fn),
                         custom_key_value_fn=custom_key_value_fn, memory_sequence_length=memory_sequence_length,
                         score_mask_value=score_mask_value, name=name)
        self._num_units, self._normalize, self._name = num_units, normalize, name

    def __call__(self, query, state):
        with variable_scope(None, default_name="bahdanau_attention"):
            processed_query = self.query_layer(query) if self.query_layer else query
            attention_v = get_variable("attention_v", [self._num_units], dtype=query.dtype)
            processed_query = expand_dims(processed_query, 1)
            if self._normalize:
                attention_g = get_variable("attention_g", shape=(), dtype=query.dtype,
                                           initializer=init_ops.constant_initializer(math.sqrt(1. / self._num_units)))
                attention_b = get_variable("attention_b", [self._num_units], dtype=query.dtype,
                                           initializer=init_ops.zeros_initializer())
                normed_v = attention_g * attention_v * math_ops.rsqrt(reduce_sum(math_ops.square(attention_v)))
                score = reduce_sum(normed_v * math_ops.tanh(self._keys + processed_query + attention_b), [2])
            else:
                score = reduce_sum(attention_v * math_ops.tanh(self._keys + processed_query), [2])
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class AttentionWrapperState(collections.namedtuple("AttentionWrapperState", (
        "cell_state", "attention", "time", "alignments", "alignment_history", "attention_state"))):
    """An AttentionWrapper's state: the cell's state, the last attention, the step (int32), the
    last alignments, their history (TensorArrays, when kept) and the mechanisms' states."""

    def clone(self, **kwargs):
        """This state with the fields in kwargs replaced; a new tensor must have the shape of the
        one it replaces (ValueError), which it then takes."""

        def with_same_shape(old, new):
            if isinstance(old, Tensor) and isinstance(new, Tensor):
                if not old.shape.is_compatible_with(new.shape):
                    raise ValueError(f"AttentionWrapperState.clone: the new {new.name} of shape {new.shape} does not "
                                     f"match the shape {old.shape} of the value it replaces")
                new = identity(new)
                new.set_shape(old.shape.merge_with(new.shape))
            return new

        return nest.map_structure(with_same_shape, self, self._replace(**kwargs))


class AttentionWrapper(RNNCell):
    """Wraps cell with attention over one mechanism or a list of them (see the module's
    docstring). Each step: cell_output, cell_state = cell(cell_input_fn(inputs, attention),
    cell_state); for each mechanism, alignments = its probabilities of cell_output against the
    keys, context = alignments @ values, attention = attention_layer(concat([cell_output,
    context])) (attention_layer_size: a Dense without bias named attention_layer; or the given
    attention_layer), or the context; the attentions joined. Output: the attention, or with
    output_attention=False the cell's output."""

    def __init__(self, cell, attention_mechanism, attention_layer_size=None, alignment_history=False,
                 cell_input_fn=None, output_attention=True, initial_cell_state=None, name=None, attention_layer=None,
                 attention_fn=None):
        super().__init__(name=name)
        assert_like_rnncell("cell", cell)
        self._is_multi = isinstance(attention_mechanism, (list, tuple))
        mechanisms = tuple(attention_mechanism) if self._is_multi else (attention_mechanism,)
        for m in mechanisms:
            if not isinstance(m, AttentionMechanism):
                raise TypeError(f"attention_mechanism must be an AttentionMechanism or list of multiple "
                                f"AttentionMechanism instances, saw type: {type(m).__name__}")
        if cell_input_fn is None:
            cell_input_fn = lambda inputs, attention: concat([inputs, attention], -1)  # noqa: E731
        elif not callable(cell_input_fn):
            raise TypeError(f"cell_input_fn must be callable, saw type: {type(cell_input_fn).__name__}")
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be set")
        if attention_layer_size is not None:
            sizes = tuple(attention_layer_size if isinstance(attention_layer_size, (list, tuple))
                          else (attention_layer_size,))
            if len(sizes) != len(mechanisms):
                raise ValueError(f"If provided, attention_layer_size must contain exactly one integer per "
                                 f"attention_mechanism, saw: {len(sizes)} vs {len(mechanisms)}")
            self._attention_layers = tuple(Dense(size, name="attention_layer", use_bias=False, dtype=m.dtype)
                                           for size, m in zip(sizes, mechanisms))
            self._attention_layer_size = sum(sizes)
        elif attention_layer is not None:
            self._attention_layers = tuple(attention_layer if isinstance(attention_layer, (list, tuple))
                                           else (attention_layer,))
            if len(self._attention_layers) != len(mechanisms):
                raise ValueError(f"If provided, attention_layer must contain exactly one layer per "
                                 f"attention_mechanism, saw: {len(self._attention_layers)} vs {len(mechanisms)}")
            self._attention_layer_size = sum(
                layer_output_size(layer, [cell.output_size + m.values.shape[-1].value])[-1].value
                for layer, m in zip(self._attention_layers, mechanisms))
        else:
            self._attention_layers = None
            self._attention_layer_size = sum(m.values.shape[-1].value for m in mechanisms)
        self._attention_fn = attention_fn or _compute_attention
        self._cell, self._attention_mechanisms = cell, mechanisms
        self._cell_input_fn, self._output_attention = cell_input_fn, output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = None
        if initial_cell_state is not None:
            last = nest.flatten(initial_cell_state)[-1]
            self._check_batch(_dim(last, 0), "When constructing AttentionWrapper %s: Non-matching batch sizes between "
                              "the memory (encoder output) and initial_cell_state.  Are you using the "
                              "BeamSearchDecoder?  You may need to tile your initial state via the "
                              "tf.contrib.seq2seq.tile_batch function with argument multiple=beam_width.")
            self._initial_cell_state = initial_cell_state

    def _check_batch(self, batch_size, message):
        """ValueError when batch_size and a mechanism's batch size are both known and differ."""
        for m in self._attention_mechanisms:
            if isinstance(batch_size, int) and isinstance(m.batch_size, int) and batch_size != m.batch_size:
                raise ValueError((message % self.name) + f" (batch size {batch_size}, the memory's {m.batch_size})")

    def _item_or_tuple(self, seq):
        t = tuple(seq)
        return t if self._is_multi else t[0]

    @property
    def output_size(self):
        return self._attention_layer_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size, time=TensorShape([]), attention=self._attention_layer_size,
            alignments=self._item_or_tuple(a.alignments_size for a in self._attention_mechanisms),
            attention_state=self._item_or_tuple(a.state_size for a in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(a.alignments_size if self._alignment_history else ()
                                                  for a in self._attention_mechanisms))

    def zero_state(self, batch_size, dtype):
        """The initial state: the initial_cell_state given (else the cell's zero state), zero
        attention and alignments, time 0, and empty alignment histories when kept."""
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            if self._initial_cell_state is not None:
                cell_state = self._initial_cell_state
            else:
                cell_state = self._cell.zero_state(batch_size, dtype)
            static = batch_size if isinstance(batch_size, int) else None
            self._check_batch(static, "When calling zero_state of AttentionWrapper %s: Non-matching batch sizes "
                              "between the memory (encoder output) and the requested batch size.  Are you using "
                              "the BeamSearchDecoder?  If so, make sure your encoder output has been tiled to "
                              "beam_width via tf.contrib.seq2seq.tile_batch, and the batch_size= argument passed "
                              "to zero_state is batch_size * beam_width.")
            cell_state = nest.map_structure(lambda s: identity(s, name="checked_cell_state"), cell_state)
            alignments = [m.initial_alignments(batch_size, dtype) for m in self._attention_mechanisms]
            return AttentionWrapperState(
                cell_state=cell_state, time=zeros([], dtype=dtypes.int32),
                attention=zero_state_tensors(self._attention_layer_size, batch_size, dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(m.initial_state(batch_size, dtype)
                                                    for m in self._attention_mechanisms),
                alignment_history=self._item_or_tuple(
                    TensorArray(dtype, size=0, dynamic_size=True, element_shape=a.shape) if self._alignment_history
                    else () for a in alignments))

    def call(self, inputs, state):
        if not isinstance(state, AttentionWrapperState):
            raise TypeError(f"Expected state to be instance of AttentionWrapperState. Received type {type(state)} "
                            f"instead.")
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        self._check_batch(cell_output.shape[0].value, "When applying AttentionWrapper %s: Non-matching batch sizes "
                          "between the memory (encoder output) and the query (decoder output).  Are you using the "
                          "BeamSearchDecoder?  You may need to tile your memory input via the "
                          "tf.contrib.seq2seq.tile_batch function with argument multiple=beam_width.")
        if self._is_multi:
            previous_states, previous_histories = state.attention_state, state.alignment_history
        else:
            previous_states, previous_histories = [state.attention_state], [state.alignment_history]
        alignments_all, attentions, states, histories = [], [], [], []
        for i, mechanism in enumerate(self._attention_mechanisms):
            attention, alignments, next_attention_state = self._attention_fn(
                mechanism, cell_output, previous_states[i],
                self._attention_layers[i] if self._attention_layers else None)
            history = previous_histories[i].write(state.time, alignments) if self._alignment_history else ()
            states.append(next_attention_state)
            alignments_all.append(alignments)
            attentions.append(attention)
            histories.append(history)
        attention = concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1, cell_state=next_cell_state, attention=attention,
            attention_state=self._item_or_tuple(states), alignments=self._item_or_tuple(alignments_all),
            alignment_history=self._item_or_tuple(histories))
        return (attention if self._output_attention else cell_output), next_state


def _compute_attention(attention_mechanism, cell_output, attention_state, attention_layer):
    """(attention, alignments, next attention state) of one mechanism for the query cell_output."""
    alignments, next_attention_state = attention_mechanism(cell_output, state=attention_state)
    context = squeeze(math_ops.matmul(expand_dims(alignments, 1), attention_mechanism.values), [1])
    attention = attention_layer(concat([cell_output, context], 1)) if attention_layer is not None else context
    return attention, alignments, next_attention_state
