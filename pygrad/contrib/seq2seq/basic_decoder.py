"""tf.contrib.seq2seq's BasicDecoder and its helpers, as TF 1.15's basic_decoder.py and helper.py:
the decoder runs the cell (and an optional output layer such as tf.layers.Dense) one step, and
the helper picks the step's sample ids and the next inputs. TrainingHelper reads the next input
from the given (teacher-forced) inputs; GreedyEmbeddingHelper feeds back the embedding of the
argmax; SampleEmbeddingHelper of a sample from the softmax of the logits (over a temperature)."""
import collections

from pygrad import dtypes, nest
from pygrad.graph import Tensor
from pygrad.layers.base import Layer
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, shape, zeros_like
from pygrad.ops.control_flow_ops import cond
from pygrad.ops.embedding_ops import embedding_lookup
from pygrad.ops.random_ops import multinomial
from pygrad.ops.reduction_ops import argmax, reduce_all, reduce_max
from pygrad.ops.tensor_array_ops import TensorArray
from pygrad.contrib.seq2seq.decoder import Decoder
from pygrad.rnn.cells import assert_like_rnncell
from pygrad.rnn.dynamic import _transpose_batch_time
from pygrad.shapes import TensorShape, as_shape

__all__ = ["BasicDecoder", "BasicDecoderOutput", "GreedyEmbeddingHelper", "Helper", "SampleEmbeddingHelper",
           "TrainingHelper"]


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))):
    pass


def embedding_fn(embedding):
    """embedding if it is callable, else a lookup of ids in the params `embedding`."""
    if callable(embedding):
        return embedding
    return lambda ids: embedding_lookup(embedding, ids)


def batch_of(t):
    """The batch size of a vector t: an int when known, else tf.shape(t)[0] (TF's tf.size(t))."""
    n = t.shape[0].value if t.shape.ndims == 1 else None
    return n if n is not None else shape(t)[0]


def layer_output_size(layer, size):
    """The size the output layer gives for cell outputs of size `size` (without the batch)."""
    if layer is None:
        return size

    def one(s):
        full = TensorShape([None]).concatenate(as_shape(s))
        if hasattr(layer, "compute_output_shape"):
            return as_shape(layer.compute_output_shape(full))[1:]
        return full[1:-1].concatenate([layer.units])

    return nest.map_structure(one, size)


def check_output_layer(output_layer, what="output_layer"):
    if output_layer is not None and not isinstance(output_layer, Layer):
        raise TypeError(f"{what} must be a Layer, received: {type(output_layer)}")


class Helper:
    """How a BasicDecoder samples and what it feeds next (TF's abstract Helper): batch_size,
    sample_ids_shape, sample_ids_dtype, initialize() -> (finished, inputs), sample(time, outputs,
    state) -> sample_ids, next_inputs(time, outputs, state, sample_ids) -> (finished, inputs,
    state)."""

    @property
    def batch_size(self):
        raise NotImplementedError("batch_size has not been implemented")

    @property
    def sample_ids_shape(self):
        return TensorShape([])

    @property
    def sample_ids_dtype(self):
        return dtypes.int32

    def initialize(self, name=None):
        raise NotImplementedError

    def sample(self, time, outputs, state, name=None):
        raise NotImplementedError

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        raise NotImplementedError

    def _loop_bound(self):
        return None, None


class TrainingHelper(Helper):
    """Reads the inputs of each step from `inputs` ([batch, time, ...], or time major); an entry
    is finished after sequence_length[b] steps. Its sample ids are the argmax of the outputs."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        inputs = nest.map_structure(lambda x: convert_to_tensor(x, name="inputs"), inputs)
        if not time_major:
            inputs = nest.map_structure(_transpose_batch_time, inputs)
        self._inputs = inputs
        self._input_tas = nest.map_structure(lambda x: TensorArray._sized_like(x.dtype, x).unstack(x), inputs)
        self._sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
        if self._sequence_length.shape.ndims != 1:
            raise ValueError(f"Expected sequence_length to be a vector, but received shape: "
                             f"{self._sequence_length.shape}")
        if self._sequence_length.dtype != dtypes.int32:
            raise TypeError(f"TrainingHelper: sequence_length must be int32, got {self._sequence_length.dtype.name}")
        self._zero_inputs = nest.map_structure(lambda x: zeros_like(x[0]), inputs)
        self._batch_size = batch_of(self._sequence_length)

    @property
    def inputs(self):
        return self._inputs

    @property
    def sequence_length(self):
        return self._sequence_length

    @property
    def batch_size(self):
        return self._batch_size

    def initialize(self, name=None):
        finished = math_ops.equal(0, self._sequence_length)
        next_inputs = cond(reduce_all(finished), lambda: self._zero_inputs,
                           lambda: nest.map_structure(lambda ta: ta.read(0), self._input_tas))
        return finished, next_inputs

    def sample(self, time, outputs, name=None, **unused_kwargs):
        return cast(argmax(outputs, axis=-1), dtypes.int32)

    def next_inputs(self, time, outputs, state, name=None, **unused_kwargs):
        next_time = time + 1
        finished = math_ops.greater_equal(next_time, self._sequence_length)
        next_inputs = cond(reduce_all(finished), lambda: self._zero_inputs,
                           lambda: nest.map_structure(lambda ta: ta.read(next_time), self._input_tas))
        return finished, next_inputs, state

    def _loop_bound(self):
        """The inputs' time dimension bounds the steps; the loop runs max(sequence_length) of them."""
        return nest.flatten(self._inputs)[0], math_ops.maximum(reduce_max(self._sequence_length), 0)


class GreedyEmbeddingHelper(Helper):
    """Feeds back the embedding of the argmax of the outputs (logits), from the embedding of
    start_tokens; an entry is finished when it emits end_token."""

    def __init__(self, embedding, start_tokens, end_token):
        self._embedding_fn = embedding_fn(embedding)
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32, name="start_tokens")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if self._start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._batch_size = batch_of(self._start_tokens)
        if self._end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._start_inputs = self._embedding_fn(self._start_tokens)

    @property
    def batch_size(self):
        return self._batch_size

    def initialize(self, name=None):
        return zeros_like(self._start_tokens, dtype=dtypes.bool_), self._start_inputs

    def _check_logits(self, outputs):
        if not isinstance(outputs, Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")

    def sample(self, time, outputs, state, name=None):
        self._check_logits(outputs)
        return cast(argmax(outputs, axis=-1), dtypes.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = math_ops.equal(sample_ids, self._end_token)
        next_inputs = cond(reduce_all(finished), lambda: self._start_inputs, lambda: self._embedding_fn(sample_ids))
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As GreedyEmbeddingHelper, with the sample ids drawn from softmax(outputs /
    softmax_temperature) (tf.multinomial) instead of the argmax."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None, seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time, outputs, state, name=None):
        self._check_logits(outputs)
        logits = outputs if self._softmax_temperature is None else outputs / self._softmax_temperature
        return multinomial(logits, 1, seed=self._seed, output_dtype=dtypes.int32)[:, 0]


class BasicDecoder(Decoder):
    """One step: cell_outputs, state = cell(inputs, state); the output layer, if any, on the
    outputs; then the helper's sample ids and next inputs. Outputs: BasicDecoderOutput(rnn_output,
    sample_id)."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        assert_like_rnncell("cell", cell)
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        check_output_layer(output_layer)
        self._cell, self._helper = cell, helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self):
        return self._helper.batch_size

    @property
    def output_size(self):
        return BasicDecoderOutput(rnn_output=layer_output_size(self._output_layer, self._cell.output_size),
                                  sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self):
        dtype = nest.flatten(self._initial_state)[0].dtype
        rnn_size = layer_output_size(self._output_layer, self._cell.output_size)
        return BasicDecoderOutput(nest.map_structure(lambda _: dtype, rnn_size), self._helper.sample_ids_dtype)

    def initialize(self, name=None):
        return self._helper.initialize() + (self._initial_state,)

    def step(self, time, inputs, state, name=None):
        cell_outputs, cell_state = self._cell(inputs, state)
        if self._output_layer is not None:
            cell_outputs = self._output_layer(cell_outputs)
        sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
        finished, next_inputs, next_state = self._helper.next_inputs(time=time, outputs=cell_outputs,
                                                                     state=cell_state, sample_ids=sample_ids)
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished

    def _loop_bound(self):
        return self._helper._loop_bound()
