"""The reference for the tf.contrib.legacy_seq2seq tests (no tests here): TF 1.15's
contrib/legacy_seq2seq/python/ops/seq2seq.py composed again on tensorflow.compat.v1 (its
static_rnn, cells, embedding_lookup, conv2d, softmax) and the core_rnn_cell wrappers of
contrib_rnn_ref.py, with TF's scopes and variable names, so that TensorFlow runs the models side
by side with pygrad. feed_previous is a Python bool here. It imports no pygrad.

seq2seq(v1) -> a namespace of the functions."""
import copy
import types

import contrib_rnn_ref


def seq2seq(v1):
    wrappers = contrib_rnn_ref.cells(v1)
    vs = v1.variable_scope

    def linear(args, output_size):
        args = args if isinstance(args, (list, tuple)) else [args]
        total = sum(a.shape.as_list()[1] for a in args)
        w = v1.get_variable("kernel", [total, output_size], dtype=args[0].dtype)
        b = v1.get_variable("bias", [output_size], dtype=args[0].dtype, initializer=v1.constant_initializer(0.0))
        return v1.nn.bias_add(v1.matmul(v1.concat(args, 1), w), b)

    def argmax_and_embed(embedding, output_projection, update_embedding):
        def loop_function(prev, _):
            if output_projection is not None:
                prev = v1.nn.xw_plus_b(prev, output_projection[0], output_projection[1])
            emb = v1.nn.embedding_lookup(embedding, v1.argmax(prev, 1))
            return emb if update_embedding else v1.stop_gradient(emb)
        return loop_function

    def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
        with vs(scope or "rnn_decoder"):
            state, outputs, prev = initial_state, [], None
            for i, inp in enumerate(decoder_inputs):
                if loop_function is not None and prev is not None:
                    with vs("loop_function", reuse=True):
                        inp = loop_function(prev, i)
                if i > 0:
                    v1.get_variable_scope().reuse_variables()
                output, state = cell(inp, state)
                outputs.append(output)
                if loop_function is not None:
                    prev = output
        return outputs, state

    def basic_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, dtype=v1.float32):
        with vs("basic_rnn_seq2seq"):
            _, enc_state = v1.nn.static_rnn(copy.deepcopy(cell), encoder_inputs, dtype=dtype)
            return rnn_decoder(decoder_inputs, enc_state, cell)

    def tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, loop_function=None, dtype=v1.float32):
        with vs("combined_tied_rnn_seq2seq"):
            _, enc_state = v1.nn.static_rnn(cell, encoder_inputs, dtype=dtype, scope="tied_rnn_seq2seq")
            v1.get_variable_scope().reuse_variables()
            return rnn_decoder(decoder_inputs, enc_state, cell, loop_function=loop_function, scope="tied_rnn_seq2seq")

    def embedding_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_enc, num_dec, emb_size,
                              output_projection=None, feed_previous=False, dtype=None):
        with vs("embedding_rnn_seq2seq", dtype=dtype) as scope:
            enc_cell = wrappers.EmbeddingWrapper(copy.deepcopy(cell), num_enc, emb_size)
            _, enc_state = v1.nn.static_rnn(enc_cell, encoder_inputs, dtype=scope.dtype)
            if output_projection is None:
                cell = wrappers.OutputProjectionWrapper(cell, num_dec)
            with vs("embedding_rnn_decoder"):
                embedding = v1.get_variable("embedding", [num_dec, emb_size])
                loop = argmax_and_embed(embedding, output_projection, True) if feed_previous else None
                emb_inp = [v1.nn.embedding_lookup(embedding, i) for i in decoder_inputs]
                return rnn_decoder(emb_inp, enc_state, cell, loop_function=loop)

    def attention_decoder(decoder_inputs, initial_state, attention_states, cell, output_size, num_heads,
                          loop_function, initial_state_attention):
        with vs("attention_decoder") as scope:
            dtype = scope.dtype
            batch = v1.shape(decoder_inputs[0])[0]
            length, size = attention_states.shape.as_list()[1:]
            hidden = v1.reshape(attention_states, [-1, length, 1, size])
            features, v = [], []
            for a in range(num_heads):
                k = v1.get_variable(f"AttnW_{a}", [1, 1, size, size])
                features.append(v1.nn.conv2d(hidden, k, [1, 1, 1, 1], "SAME"))
                v.append(v1.get_variable(f"AttnV_{a}", [size]))

            def attention(query):
                query = v1.concat(v1.nest.flatten(query), 1)
                ds = []
                for a in range(num_heads):
                    with vs(f"Attention_{a}"):
                        y = v1.reshape(linear(query, size), [-1, 1, 1, size])
                        s = v1.reduce_sum(v[a] * v1.tanh(features[a] + y), [2, 3])
                        att = v1.nn.softmax(s)
                        d = v1.reduce_sum(v1.reshape(att, [-1, length, 1, 1]) * hidden, [1, 2])
                        ds.append(v1.reshape(d, [-1, size]))
                return ds

            state, outputs, prev = initial_state, [], None
            attns = [v1.zeros(v1.stack([batch, size]), dtype=dtype) for _ in range(num_heads)]
            for a in attns:
                a.set_shape([None, size])
            if initial_state_attention:
                attns = attention(initial_state)
            for i, inp in enumerate(decoder_inputs):
                if i > 0:
                    v1.get_variable_scope().reuse_variables()
                if loop_function is not None and prev is not None:
                    with vs("loop_function", reuse=True):
                        inp = loop_function(prev, i)
                cell_output, state = cell(linear([inp] + attns, inp.shape.as_list()[1]), state)
                if i == 0 and initial_state_attention:
                    with vs(v1.get_variable_scope(), reuse=True):
                        attns = attention(state)
                else:
                    attns = attention(state)
                with vs("AttnOutputProjection"):
                    output = linear([cell_output] + attns, output_size)
                if loop_function is not None:
                    prev = output
                outputs.append(output)
        return outputs, state

    def embedding_attention_seq2seq(encoder_inputs, decoder_inputs, cell, num_enc, num_dec, emb_size, num_heads=1,
                                    output_projection=None, feed_previous=False, dtype=None,
                                    initial_state_attention=False, encoder_cell=None):
        with vs("embedding_attention_seq2seq", dtype=dtype) as scope:
            enc_cell = wrappers.EmbeddingWrapper(encoder_cell or copy.deepcopy(cell), num_enc, emb_size)
            enc_outputs, enc_state = v1.nn.static_rnn(enc_cell, encoder_inputs, dtype=scope.dtype)
            attention_states = v1.concat([v1.reshape(e, [-1, 1, cell.output_size]) for e in enc_outputs], 1)
            output_size = cell.output_size
            if output_projection is None:
                cell = wrappers.OutputProjectionWrapper(cell, num_dec)
                output_size = num_dec
            with vs("embedding_attention_decoder"):
                embedding = v1.get_variable("embedding", [num_dec, emb_size])
                loop = argmax_and_embed(embedding, output_projection, True) if feed_previous else None
                emb_inp = [v1.nn.embedding_lookup(embedding, i) for i in decoder_inputs]
                return attention_decoder(emb_inp, enc_state, attention_states, cell, output_size, num_heads, loop,
                                         initial_state_attention)

    def sequence_loss_by_example(logits, targets, weights):
        log_perps = v1.add_n([v1.nn.sparse_softmax_cross_entropy_with_logits(labels=t, logits=lg) * w
                              for lg, t, w in zip(logits, targets, weights)])
        return log_perps / (v1.add_n(weights) + 1e-12)

    def sequence_loss(logits, targets, weights):
        cost = v1.reduce_sum(sequence_loss_by_example(logits, targets, weights))
        return cost / v1.cast(v1.shape(targets[0])[0], cost.dtype)

    def model_with_buckets(encoder_inputs, decoder_inputs, targets, weights, buckets, model):
        outputs, losses = [], []
        for j, (enc_len, dec_len) in enumerate(buckets):
            with vs(v1.get_variable_scope(), reuse=True if j > 0 else None):
                bucket_outputs, _ = model(encoder_inputs[:enc_len], decoder_inputs[:dec_len])
                outputs.append(bucket_outputs)
                losses.append(sequence_loss(bucket_outputs, targets[:dec_len], weights[:dec_len]))
        return outputs, losses

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if callable(v) and k != "copy"})
