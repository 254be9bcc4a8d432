"""TF-Slim's fully_connected, dropout, flatten, one_hot_encoding, repeat and stack, and
contrib's embed_sequence: on pygrad.layers' Dense, Dropout and flatten, with TF-Slim's defaults
(relu, xavier weights, keep_prob 0.5 with is_training=True) and scopes ('fully_connected',
'Dropout', 'Flatten', 'OneHotEncoding', 'Repeat', 'Stack', 'EmbedSequence')."""
import functools
import numbers

from pygrad import dtypes
from pygrad.contrib.framework.arg_scope import add_arg_scope
from pygrad.contrib.framework.variables import model_variable
from pygrad.contrib.layers.convolutional import XAVIER, ZEROS, _finish
from pygrad.contrib.layers.utils import (
    WEIGHTS_AND_BIASES,
    add_variable_to_collections,
    build_variable_getter,
    collect_named_outputs,
    model_variable_getter,
)
from pygrad.graph import get_default_graph
from pygrad.layers.core import Dense, Dropout
from pygrad.layers.core import flatten as layers_flatten
from pygrad.ops import math_ops
from pygrad.ops.activation_ops import elu as nn_elu
from pygrad.ops.activation_ops import relu6 as nn_relu6
from pygrad.ops.array_ops import convert_to_tensor, reshape
from pygrad.ops.array_ops import shape as shape_of
from pygrad.ops.embedding_ops import embedding_lookup
from pygrad.ops.manip_ops import concat, gather, one_hot
from pygrad.ops.nn_ops import relu as nn_relu
from pygrad.ops.scatter_ops import unique
from pygrad.ops.variable_scope import variable_scope

__all__ = ["dropout", "elu", "embed_sequence", "flatten", "fully_connected", "linear", "one_hot_encoding", "relu", "relu6",
           "repeat", "stack"]


@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                    weights_initializer=XAVIER, weights_regularizer=None,
                    biases_initializer=ZEROS, biases_regularizer=None, reuse=None,
                    variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """activation_fn(inputs @ weights + biases) (the normalizer_fn, when given, replaces the biases),
    in the variable scope `scope` (default 'fully_connected'); inputs of rank > 2 are multiplied
    along their last axis."""
    if not isinstance(num_outputs, numbers.Integral):
        raise ValueError(f"num_outputs type should be one of [<class 'int'>], got {type(num_outputs)}.")  # noqa: TRY004  (TF's)
    getter = build_variable_getter(WEIGHTS_AND_BIASES)
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse, custom_getter=getter) as sc:
        inputs = convert_to_tensor(inputs)
        layer = Dense(units=int(num_outputs), activation=None,
                      use_bias=not normalizer_fn and biases_initializer is not None,
                      kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
                      kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                      activity_regularizer=None, trainable=trainable, name=sc.name, dtype=inputs.dtype.base_dtype,
                      _scope=sc, _reuse=reuse)
        outputs = layer.apply(inputs)
        add_variable_to_collections(layer.kernel, variables_collections, "weights")
        if layer.bias is not None:
            add_variable_to_collections(layer.bias, variables_collections, "biases")
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections, sc)


# TF-Slim's layers named after their activation: fully_connected with that activation_fn.
elu = functools.partial(fully_connected, activation_fn=nn_elu)
relu = functools.partial(fully_connected, activation_fn=nn_relu)
relu6 = functools.partial(fully_connected, activation_fn=nn_relu6)
linear = functools.partial(fully_connected, activation_fn=None)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None, scope=None,
            seed=None):
    """inputs / keep_prob where kept (probability keep_prob) when is_training (a bool or a boolean
    tensor), else inputs; in the scope `scope` (default 'Dropout')."""
    with variable_scope(scope, "Dropout", [inputs], custom_getter=model_variable_getter) as sc:
        inputs = convert_to_tensor(inputs)
        layer = Dropout(rate=1 - keep_prob, noise_shape=noise_shape, seed=seed, name=sc.name, _scope=sc)
        outputs = layer.apply(inputs, training=is_training)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """[batch, ...] -> [batch, k] (name scope `scope`, default 'Flatten')."""
    with get_default_graph().name_scope(scope or "Flatten") as sc:
        inputs = convert_to_tensor(inputs)
        if inputs.shape.ndims is None or inputs.shape.ndims < 2:
            raise ValueError(f"Inputs must have a least 2 dimensions, got inputs of shape {inputs.shape}")
        outputs = layers_flatten(inputs)
        return collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0, outputs_collections=None, scope=None):
    """one_hot(labels, num_classes) with float on/off values (name scope `scope`, default 'OneHotEncoding')."""
    with get_default_graph().name_scope(scope or "OneHotEncoding") as sc:
        labels = convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = math_ops.cast(labels, dtypes.int64)
        outputs = one_hot(labels, num_classes, on_value=on_value, off_value=off_value)
        return collect_named_outputs(outputs_collections, sc, outputs)


def _layer_name(layer, fallback):
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(layer, "func") and hasattr(layer.func, "__name__"):
        return layer.func.__name__  # a functools.partial
    return fallback


def repeat(inputs, repetitions, layer, *args, **kwargs):
    """layer applied repetitions times, with the same arguments, in scopes <scope>/<scope>_1,
    <scope>_2, ... (scope defaults to 'Repeat', each layer's to the layer function's name)."""
    scope = kwargs.pop("scope", None)
    with variable_scope(scope, "Repeat", [inputs]):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "repeat")
        for i in range(repetitions):
            kwargs["scope"] = f"{scope}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs, layer, stack_args, **kwargs):
    """layer applied once per entry of stack_args (its extra positional arguments), each output the
    next input, in scopes <scope>/<scope>_1, _2, ... (scope defaults to 'Stack')."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")  # noqa: TRY004  (TF's)
    with variable_scope(scope, "Stack", [inputs]):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "stack")
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = f"{scope}_{i + 1}"
            if not isinstance(layer_args, (list, tuple)):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, **kwargs)
        return outputs


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None, regularizer=None,
                   trainable=True, scope=None, reuse=None):
    """[batch, length] ids -> [batch, length, embed_dim] rows of the model variable
    '<scope>/embeddings' [vocab_size, embed_dim] (scope default 'EmbedSequence'). unique=True looks
    each distinct id up once (contrib's embedding_lookup_unique)."""
    if not (reuse or (vocab_size and embed_dim)):
        raise ValueError(f"Must specify vocab size and embedding dimension when not reusing. Got "
                         f"vocab_size={vocab_size} and embed_dim={embed_dim}")
    with variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        shape = None if vocab_size is None or embed_dim is None else [vocab_size, embed_dim]
        embeddings = model_variable("embeddings", shape=shape, initializer=initializer, regularizer=regularizer,
                                    trainable=trainable)
        if not unique:
            return embedding_lookup(embeddings, ids)
        return _embedding_lookup_unique(embeddings, ids)


def _embedding_lookup_unique(params, ids):
    with get_default_graph().name_scope("EmbeddingLookupUnique"):
        ids = convert_to_tensor(ids)
        unique_ids, idx = unique(reshape(ids, [-1]))
        embeds = gather(embedding_lookup(params, unique_ids), idx)
        dims = ids.shape.as_list() if ids.shape.ndims is not None else None
        if dims is not None and None not in dims:
            return reshape(embeds, dims + params.shape.as_list()[1:])
        return reshape(embeds, concat([shape_of(ids), shape_of(params)[1:]], 0))
