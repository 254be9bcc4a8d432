"""tf.contrib.legacy_seq2seq: TF1's first sequence-to-sequence library, the models of the old
translate tutorial. Inputs are Python lists with one tensor per step (static_rnn's form); models
are unrolled, and model_with_buckets builds one model per bucket of lengths sharing one set of
variables.

Variable names are TF1's, so that its checkpoints restore: embedding_attention_seq2seq makes
"embedding_attention_seq2seq/rnn/embedding_wrapper/embedding" and the encoder cell under it,
"embedding_attention_seq2seq/embedding_attention_decoder/embedding", and in
".../embedding_attention_decoder/attention_decoder" the attention's AttnW_0, AttnV_0,
Attention_0/{kernel,bias}, the input map {kernel,bias}, AttnOutputProjection/{kernel,bias} and the
decoder cell (in output_projection_wrapper/ without an output_projection)."""
import copy

from pygrad import dtypes, errors, nest
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, reshape, shape, stop_gradient
from pygrad.ops.control_flow_ops import cond
from pygrad.ops.embedding_ops import embedding_lookup
from pygrad.ops.manip_ops import concat
from pygrad.ops.nn_ops import bias_add, sparse_softmax_cross_entropy_with_logits
from pygrad.ops.reduction_ops import argmax, reduce_sum
from pygrad.ops.variable_scope import get_variable, get_variable_scope, variable_scope
from pygrad.rnn.cells import batch_zeros as _batch_zeros
from pygrad.rnn.contrib_wrappers import (EmbeddingWrapper as _EmbeddingWrapper,
                                         OutputProjectionWrapper as _OutputProjectionWrapper,
                                         attention_keys as _attention_keys, attention_read as _attention_read,
                                         linear as _linear)
from pygrad.rnn.static import static_rnn

__all__ = ["attention_decoder", "basic_rnn_seq2seq", "embedding_attention_decoder", "embedding_attention_seq2seq",
           "embedding_rnn_decoder", "embedding_rnn_seq2seq", "embedding_tied_rnn_seq2seq", "model_with_buckets",
           "rnn_decoder", "sequence_loss", "sequence_loss_by_example", "tied_rnn_seq2seq"]


def _error(fn, rule, cls=ValueError):
    return cls(errors.op_message(fn, get_variable_scope().name or fn, rule, errors.user_site()))


def _extract_argmax_and_embed(embedding, output_projection=None, update_embedding=True):
    """loop_function(prev, i): the embedding of argmax(prev) (prev projected by
    output_projection (W, B) first); no gradient into the embedding unless update_embedding."""

    def loop_function(prev, _):
        if output_projection is not None:
            prev = bias_add(math_ops.matmul(prev, output_projection[0]), output_projection[1])
        emb_prev = embedding_lookup(embedding, argmax(prev, 1))
        return emb_prev if update_embedding else stop_gradient(emb_prev)

    return loop_function


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """The cell run over decoder_inputs (a list of [batch, depth]) from initial_state, in the scope
    "rnn_decoder". With loop_function, every input after the first is loop_function(previous
    output, i). Returns (outputs, final state)."""
    with variable_scope(scope or "rnn_decoder"):
        state, outputs, prev = initial_state, [], None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            if i > 0:
                get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def basic_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, dtype=dtypes.float32, scope=None):
    """A copy of the cell encodes encoder_inputs (static_rnn); the cell decodes decoder_inputs from
    the encoder's final state (rnn_decoder). Scope "basic_rnn_seq2seq"."""
    with variable_scope(scope or "basic_rnn_seq2seq"):
        _, enc_state = static_rnn(copy.deepcopy(cell), encoder_inputs, dtype=dtype)
        return rnn_decoder(decoder_inputs, enc_state, cell)


def tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, loop_function=None, dtype=dtypes.float32, scope=None):
    """basic_rnn_seq2seq with one set of weights for the encoder and the decoder (both in
    "combined_tied_rnn_seq2seq/<scope or tied_rnn_seq2seq>")."""
    with variable_scope("combined_tied_rnn_seq2seq"):
        scope = scope or "tied_rnn_seq2seq"
        _, enc_state = static_rnn(cell, encoder_inputs, dtype=dtype, scope=scope)
        get_variable_scope().reuse_variables()
        return rnn_decoder(decoder_inputs, enc_state, cell, loop_function=loop_function, scope=scope)


def _check_projection(output_projection, num_symbols, dtype, fn):
    """output_projection (W [?, num_symbols], B [num_symbols]) as tensors, shapes checked."""
    if output_projection is None:
        return None
    w = convert_to_tensor(output_projection[0], dtype=dtype)
    b = convert_to_tensor(output_projection[1], dtype=dtype)
    if not w.shape.is_compatible_with([None, num_symbols]) or not b.shape.is_compatible_with([num_symbols]):
        raise _error(fn, f"output_projection must be (W [output_size, {num_symbols}], B [{num_symbols}]), got shapes "
                         f"{w.shape} and {b.shape}")
    return w, b


def embedding_rnn_decoder(decoder_inputs, initial_state, cell, num_symbols, embedding_size, output_projection=None,
                          feed_previous=False, update_embedding_for_previous=True, scope=None):
    """rnn_decoder on the embeddings ("embedding" [num_symbols, embedding_size]) of the integer
    decoder_inputs ([batch] each); with feed_previous, greedy decoding: each input after the
    first is the embedding of the previous output's argmax (after output_projection)."""
    with variable_scope(scope or "embedding_rnn_decoder") as scope:
        output_projection = _check_projection(output_projection, num_symbols, scope.dtype, "embedding_rnn_decoder")
        embedding = get_variable("embedding", [num_symbols, embedding_size])
        loop_function = _extract_argmax_and_embed(embedding, output_projection, update_embedding_for_previous) \
            if feed_previous else None
        emb_inp = [embedding_lookup(embedding, i) for i in decoder_inputs]
        return rnn_decoder(emb_inp, initial_state, cell, loop_function=loop_function)


def _decode_either_way(feed_previous, decoder, num_outputs, state_structure):
    """feed_previous a bool: decoder(feed_previous). A bool tensor: both decoders built (the one
    that feeds its outputs back first, making the variables), chosen by tf.cond."""
    if isinstance(feed_previous, bool):
        return decoder(feed_previous, True)

    def branch(feed):
        with variable_scope(get_variable_scope(), reuse=None if feed else True):
            outputs, state = decoder(feed, False)
            return outputs + nest.flatten(state)

    outputs_and_state = cond(feed_previous, lambda: branch(True), lambda: branch(False))
    state_list = outputs_and_state[num_outputs:]
    state = nest.pack_sequence_as(state_structure, state_list) if nest.is_sequence(state_structure) else state_list[0]
    return outputs_and_state[:num_outputs], state


def embedding_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols, num_decoder_symbols,
                          embedding_size, output_projection=None, feed_previous=False, dtype=None, scope=None):
    """An EmbeddingWrapper around a copy of the cell encodes the integer encoder_inputs; the cell
    (in an OutputProjectionWrapper to num_decoder_symbols unless output_projection is given)
    decodes with embedding_rnn_decoder. feed_previous: a bool, or a bool tensor choosing at run
    time. Scope "embedding_rnn_seq2seq"."""
    with variable_scope(scope or "embedding_rnn_seq2seq", dtype=dtype) as scope:
        dtype = scope.dtype
        encoder_cell = _EmbeddingWrapper(copy.deepcopy(cell), embedding_classes=num_encoder_symbols,
                                        embedding_size=embedding_size)
        _, encoder_state = static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        if output_projection is None:
            cell = _OutputProjectionWrapper(cell, num_decoder_symbols)

        def decoder(feed, update_embedding):
            return embedding_rnn_decoder(decoder_inputs, encoder_state, cell, num_decoder_symbols, embedding_size,
                                         output_projection=output_projection, feed_previous=feed,
                                         update_embedding_for_previous=update_embedding)

        return _decode_either_way(feed_previous, decoder, len(decoder_inputs), encoder_state)


def embedding_tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_symbols, embedding_size,
                               num_decoder_symbols=None, output_projection=None, feed_previous=False, dtype=None,
                               scope=None):
    """tied_rnn_seq2seq on the embeddings of encoder and decoder inputs, one "embedding"
    [num_symbols, embedding_size] for both; outputs over num_decoder_symbols (default
    num_symbols). Scope "embedding_tied_rnn_seq2seq"."""
    with variable_scope(scope or "embedding_tied_rnn_seq2seq", dtype=dtype) as scope:
        dtype = scope.dtype
        output_projection = _check_projection(output_projection, num_symbols, dtype, "embedding_tied_rnn_seq2seq")
        embedding = get_variable("embedding", [num_symbols, embedding_size], dtype=dtype)
        emb_encoder_inputs = [embedding_lookup(embedding, x) for x in encoder_inputs]
        emb_decoder_inputs = [embedding_lookup(embedding, x) for x in decoder_inputs]
        if output_projection is None:
            cell = _OutputProjectionWrapper(cell, num_decoder_symbols if num_decoder_symbols is not None
                                           else num_symbols)

        def decoder(feed, update_embedding):
            loop_function = _extract_argmax_and_embed(embedding, output_projection, update_embedding) \
                if feed else None
            return tied_rnn_seq2seq(emb_encoder_inputs, emb_decoder_inputs, cell, loop_function=loop_function,
                                    dtype=dtype)

        return _decode_either_way(feed_previous, decoder, len(decoder_inputs), cell.state_size)


def attention_decoder(decoder_inputs, initial_state, attention_states, cell, output_size=None, num_heads=1,
                      loop_function=None, dtype=None, scope=None, initial_state_attention=False):
    """The cell decodes decoder_inputs (a list of [batch, depth]) attending to attention_states
    [batch, length, size] with num_heads heads: at each step the cell runs on
    _linear([input] + attns) ("kernel", "bias"), each head reads the states with the new state as
    query (keys by "AttnW_<a>" [1, 1, size, size], scores by "AttnV_<a>", the query's map in
    "Attention_<a>"), and the output is _linear([cell output] + attns, output_size) in
    "AttnOutputProjection". The first attns are zeros, or read with initial_state when
    initial_state_attention. Scope "attention_decoder". Returns (outputs, final state)."""
    if not decoder_inputs:
        raise ValueError("Must provide at least 1 input to attention decoder.")
    if num_heads < 1:
        raise ValueError("With less than 1 heads, use a non-attention decoder.")
    attention_states = convert_to_tensor(attention_states)
    if attention_states.shape.ndims != 3 or attention_states.shape[2].value is None:
        raise ValueError(f"Shape[2] of attention_states must be known: {attention_states.shape}")
    output_size = output_size if output_size is not None else cell.output_size
    with variable_scope(scope or "attention_decoder", dtype=dtype) as scope:
        dtype = scope.dtype
        first = convert_to_tensor(decoder_inputs[0])
        batch_size = first.shape[0].value if first.shape[0].value is not None else shape(first)[0]
        attn_size = attention_states.shape[2].value
        keys, v = [], []
        for a in range(num_heads):
            keys.append(_attention_keys(attention_states, get_variable(f"AttnW_{a}", [1, 1, attn_size, attn_size])))
            v.append(get_variable(f"AttnV_{a}", [attn_size]))

        def attention(query):
            if nest.is_sequence(query):
                flat = nest.flatten(query)
                if any(q.shape.ndims not in (None, 2) for q in flat):
                    raise _error("attention_decoder", f"the state's parts must be 2-D, got {flat}")
                query = concat(flat, 1)
            reads = []
            for a in range(num_heads):
                with variable_scope(f"Attention_{a}"):
                    reads.append(_attention_read(attention_states, keys[a], v[a], _linear(query, attn_size, True)))
            return reads

        state, outputs, prev = initial_state, [], None
        attns = [_batch_zeros(batch_size, [attn_size], dtype) for _ in range(num_heads)]
        if initial_state_attention:
            attns = attention(initial_state)
        for i, inp in enumerate(decoder_inputs):
            if i > 0:
                get_variable_scope().reuse_variables()
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            inp = convert_to_tensor(inp)
            if inp.shape.ndims != 2 or inp.shape[1].value is None:
                raise _error("attention_decoder", f"Could not infer input size from input: {inp.name} of shape "
                                                  f"{inp.shape}")
            cell_output, state = cell(_linear([inp] + attns, inp.shape[1].value, True), state)
            if i == 0 and initial_state_attention:
                with variable_scope(get_variable_scope(), reuse=True):
                    attns = attention(state)
            else:
                attns = attention(state)
            with variable_scope("AttnOutputProjection"):
                output = _linear([cell_output] + attns, output_size, True)
            if loop_function is not None:
                prev = output
            outputs.append(output)
    return outputs, state


def embedding_attention_decoder(decoder_inputs, initial_state, attention_states, cell, num_symbols, embedding_size,
                                num_heads=1, output_size=None, output_projection=None, feed_previous=False,
                                update_embedding_for_previous=True, dtype=None, scope=None,
                                initial_state_attention=False):
    """attention_decoder on the embeddings ("embedding" [num_symbols, embedding_size]) of the
    integer decoder_inputs, greedy with feed_previous (as embedding_rnn_decoder). Scope
    "embedding_attention_decoder"."""
    output_size = output_size if output_size is not None else cell.output_size
    with variable_scope(scope or "embedding_attention_decoder", dtype=dtype) as scope:
        output_projection = _check_projection(output_projection, num_symbols, scope.dtype,
                                              "embedding_attention_decoder")
        embedding = get_variable("embedding", [num_symbols, embedding_size])
        loop_function = _extract_argmax_and_embed(embedding, output_projection, update_embedding_for_previous) \
            if feed_previous else None
        emb_inp = [embedding_lookup(embedding, i) for i in decoder_inputs]
        return attention_decoder(emb_inp, initial_state, attention_states, cell, output_size=output_size,
                                 num_heads=num_heads, loop_function=loop_function,
                                 initial_state_attention=initial_state_attention)


def embedding_attention_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols, num_decoder_symbols,
                                embedding_size, encoder_cell=None, num_heads=1, output_projection=None,
                                feed_previous=False, dtype=None, scope=None, initial_state_attention=False):
    """An EmbeddingWrapper around encoder_cell (default a copy of the cell) encodes the integer
    encoder_inputs; the cell (in an OutputProjectionWrapper to num_decoder_symbols unless
    output_projection is given) decodes with embedding_attention_decoder, attending to the
    encoder's outputs. feed_previous: a bool, or a bool tensor choosing at run time. Scope
    "embedding_attention_seq2seq"."""
    with variable_scope(scope or "embedding_attention_seq2seq", dtype=dtype) as scope:
        dtype = scope.dtype
        encoder_cell = _EmbeddingWrapper(encoder_cell if encoder_cell is not None else copy.deepcopy(cell),
                                        embedding_classes=num_encoder_symbols, embedding_size=embedding_size)
        encoder_outputs, encoder_state = static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        attention_states = concat([reshape(e, [-1, 1, cell.output_size]) for e in encoder_outputs], 1)
        output_size = None
        if output_projection is None:
            cell = _OutputProjectionWrapper(cell, num_decoder_symbols)
            output_size = num_decoder_symbols

        def decoder(feed, update_embedding):
            return embedding_attention_decoder(
                decoder_inputs, encoder_state, attention_states, cell, num_decoder_symbols, embedding_size,
                num_heads=num_heads, output_size=output_size, output_projection=output_projection, feed_previous=feed,
                update_embedding_for_previous=update_embedding, initial_state_attention=initial_state_attention)

        return _decode_either_way(feed_previous, decoder, len(decoder_inputs), encoder_state)


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True, softmax_loss_function=None,
                             name=None):
    """Per example, sum_t weights[t] * crossentropy(logits[t], targets[t]) (divided by
    sum_t weights[t] + 1e-12 with average_across_timesteps): the log-perplexity [batch].
    softmax_loss_function(labels=, logits=) replaces the sparse softmax cross-entropy."""
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise ValueError(f"Lengths of logits, weights, and targets must be the same {len(logits)}, {len(weights)}, "
                         f"{len(targets)}.")
    with get_default_graph().name_scope(name or "sequence_loss_by_example"):
        log_perp_list = []
        for logit, target, weight in zip(logits, targets, weights):
            if softmax_loss_function is None:
                crossent = sparse_softmax_cross_entropy_with_logits(labels=reshape(target, [-1]), logits=logit)
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            log_perp_list.append(crossent * weight)
        log_perps = math_ops.add_n(log_perp_list)
        if average_across_timesteps:
            log_perps /= math_ops.add_n(weights) + 1e-12
    return log_perps


def sequence_loss(logits, targets, weights, average_across_timesteps=True, average_across_batch=True,
                  softmax_loss_function=None, name=None):
    """The sum over the batch of sequence_loss_by_example, divided by the batch size when
    average_across_batch: a scalar."""
    with get_default_graph().name_scope(name or "sequence_loss"):
        cost = reduce_sum(sequence_loss_by_example(logits, targets, weights, average_across_timesteps,
                                                   softmax_loss_function=softmax_loss_function))
        if average_across_batch:
            return cost / cast(shape(targets[0])[0], cost.dtype)
        return cost


def model_with_buckets(encoder_inputs, decoder_inputs, targets, weights, buckets, seq2seq, softmax_loss_function=None,
                       per_example_loss=False, name=None):
    """One model per bucket (input length, output length) on the first steps of the inputs:
    seq2seq(encoder_inputs[:i], decoder_inputs[:o]), the later buckets reusing the first's
    variables. Returns (outputs per bucket, losses per bucket): sequence_loss of each, or
    sequence_loss_by_example with per_example_loss."""
    if len(encoder_inputs) < buckets[-1][0]:
        raise ValueError(f"Length of encoder_inputs ({len(encoder_inputs)}) must be at least that of last bucket "
                         f"({buckets[-1][0]}).")
    if len(targets) < buckets[-1][1]:
        raise ValueError(f"Length of targets ({len(targets)}) must be at least that of last bucket ({buckets[-1][1]}).")
    if len(weights) < buckets[-1][1]:
        raise ValueError(f"Length of weights ({len(weights)}) must be at least that of last bucket ({buckets[-1][1]}).")
    losses, outputs = [], []
    with get_default_graph().name_scope(name or "model_with_buckets"):
        for j, (enc_len, dec_len) in enumerate(buckets):
            with variable_scope(get_variable_scope(), reuse=True if j > 0 else None):
                bucket_outputs, _ = seq2seq(encoder_inputs[:enc_len], decoder_inputs[:dec_len])
                outputs.append(bucket_outputs)
                loss = sequence_loss_by_example if per_example_loss else sequence_loss
                losses.append(loss(bucket_outputs, targets[:dec_len], weights[:dec_len],
                                   softmax_loss_function=softmax_loss_function))
    return outputs, losses
