"""References for the tf.contrib.rnn tests (no tests here): the contrib cells and wrappers that
TensorFlow 2 no longer ships, written again on tensorflow.compat.v1's RNNCell and ops as TF 1.15's
contrib/rnn/python/ops/{core_rnn_cell,rnn_cell}.py and rnn.py compose them (the same formulas,
scopes and variable names), so that TensorFlow runs them side by side with pygrad. They import
no pygrad.

cells(v1, layer_norm) -> a namespace of the classes; layer_norm is tf_slim's (contrib's)."""
import math
import types


def cells(v1, layer_norm=None):
    RNNCell = v1.nn.rnn_cell.RNNCell

    def linear(args, output_size):
        args = args if isinstance(args, (list, tuple)) else [args]
        total = sum(a.shape.as_list()[1] for a in args)
        w = v1.get_variable("kernel", [total, output_size], dtype=args[0].dtype)
        b = v1.get_variable("bias", [output_size], dtype=args[0].dtype, initializer=v1.constant_initializer(0.0))
        return v1.nn.bias_add(v1.matmul(v1.concat(args, 1) if len(args) > 1 else args[0], w), b)

    class _Wrap(RNNCell):
        def __init__(self, cell):
            super().__init__()
            self._cell = cell

        @property
        def state_size(self):
            return self._cell.state_size

        @property
        def output_size(self):
            return self._cell.output_size

        def zero_state(self, batch_size, dtype):
            return self._cell.zero_state(batch_size, dtype)

    class EmbeddingWrapper(_Wrap):
        def __init__(self, cell, embedding_classes, embedding_size):
            super().__init__(cell)
            self._shape = [embedding_classes, embedding_size]

        def call(self, inputs, state):
            dtype = v1.nest.flatten(state)[0].dtype
            s3 = math.sqrt(3)
            initializer = v1.get_variable_scope().initializer or v1.random_uniform_initializer(-s3, s3)
            embedding = v1.get_variable("embedding", self._shape, initializer=initializer, dtype=dtype)
            return self._cell(v1.nn.embedding_lookup(embedding, v1.reshape(inputs, [-1])), state)

    class InputProjectionWrapper(_Wrap):
        def __init__(self, cell, num_proj):
            super().__init__(cell)
            self._num_proj = num_proj

        def call(self, inputs, state):
            return self._cell(linear(inputs, self._num_proj), state)

    class OutputProjectionWrapper(_Wrap):
        def __init__(self, cell, output_size):
            super().__init__(cell)
            self._out = output_size

        @property
        def output_size(self):
            return self._out

        def call(self, inputs, state):
            output, state = self._cell(inputs, state)
            return linear(output, self._out), state

    class HighwayWrapper(_Wrap):
        def __call__(self, inputs, state, scope=None):
            out, new_state = self._cell(inputs, state, scope=scope)
            n = inputs.shape.as_list()[1]
            carry = v1.sigmoid(v1.nn.xw_plus_b(inputs, v1.get_variable("carry_w", [n, n], dtype=inputs.dtype),
                                               v1.get_variable("carry_b", [n], dtype=inputs.dtype,
                                                               initializer=v1.constant_initializer(1.0))))
            return inputs * carry + out * (1 - carry), new_state

    class AttentionCellWrapper(_Wrap):
        def __init__(self, cell, attn_length):
            super().__init__(cell)
            self._len, self._size = attn_length, cell.output_size

        @property
        def state_size(self):
            return (self._cell.state_size, self._size, self._size * self._len)

        @property
        def output_size(self):
            return self._size

        def zero_state(self, batch_size, dtype):
            return RNNCell.zero_state(self, batch_size, dtype)

        def call(self, inputs, state):
            state, attns, window = state
            window = v1.reshape(window, [-1, self._len, self._size])
            cell_output, new_state = self._cell(linear([inputs, attns], inputs.shape.as_list()[1]), state)
            query = v1.concat(v1.nest.flatten(new_state), 1)
            with v1.variable_scope("attention"):
                k = v1.get_variable("attn_w", [1, 1, self._size, self._size], dtype=inputs.dtype)
                v = v1.get_variable("attn_v", [self._size], dtype=inputs.dtype)
                hidden = v1.reshape(window, [-1, self._len, 1, self._size])
                features = v1.nn.conv2d(hidden, k, [1, 1, 1, 1], "SAME")
                y = v1.reshape(linear(query, self._size), [-1, 1, 1, self._size])
                a = v1.nn.softmax(v1.reduce_sum(v * v1.tanh(features + y), [2, 3]))
                new_attns = v1.reshape(v1.reduce_sum(v1.reshape(a, [-1, self._len, 1, 1]) * hidden, [1, 2]),
                                       [-1, self._size])
            with v1.variable_scope("attn_output_projection"):
                output = linear([cell_output, new_attns], self._size)
            new_window = v1.concat([window[:, 1:, :], v1.expand_dims(output, 1)], 1)
            return output, (new_state, new_attns, v1.reshape(new_window, [-1, self._len * self._size]))

    class LayerNormBasicLSTMCell(RNNCell):
        def __init__(self, num_units, forget_bias=1.0, layer_norm_on=True, norm_gain=1.0, norm_shift=0.0):
            super().__init__()
            self._n, self._fb, self._ln, self._gain, self._shift = (num_units, forget_bias, layer_norm_on, norm_gain,
                                                                    norm_shift)

        @property
        def state_size(self):
            return v1.nn.rnn_cell.LSTMStateTuple(self._n, self._n)

        @property
        def output_size(self):
            return self._n

        def _norm(self, x, scope):
            with v1.variable_scope(scope):
                v1.get_variable("gamma", [self._n], initializer=v1.constant_initializer(self._gain), dtype=x.dtype)
                v1.get_variable("beta", [self._n], initializer=v1.constant_initializer(self._shift), dtype=x.dtype)
            return layer_norm(x, reuse=True, scope=scope)

        def call(self, inputs, state):
            c, h = state
            args = v1.concat([inputs, h], 1)
            gates = v1.matmul(args, v1.get_variable("kernel", [args.shape.as_list()[1], 4 * self._n],
                                                    dtype=args.dtype))
            if not self._ln:
                gates = v1.nn.bias_add(gates, v1.get_variable("bias", [4 * self._n], dtype=args.dtype))
            i, j, f, o = v1.split(gates, 4, axis=1)
            if self._ln:
                i, j, f, o = [self._norm(g, s) for g, s in zip((i, j, f, o), ("input", "transform", "forget",
                                                                              "output"))]
            new_c = c * v1.sigmoid(f + self._fb) + v1.sigmoid(i) * v1.tanh(j)
            if self._ln:
                new_c = self._norm(new_c, "state")
            new_h = v1.tanh(new_c) * v1.sigmoid(o)
            return new_h, v1.nn.rnn_cell.LSTMStateTuple(new_c, new_h)

    def stack_bidirectional_rnn(cells_fw, cells_bw, inputs, dtype, sequence_length=None):
        layer, states_fw, states_bw = inputs, [], []
        with v1.variable_scope("stack_bidirectional_rnn"):
            for i, (fw, bw) in enumerate(zip(cells_fw, cells_bw)):
                with v1.variable_scope(f"cell_{i}") as cell_scope:
                    layer, s_fw, s_bw = v1.nn.static_bidirectional_rnn(fw, bw, layer, dtype=dtype,
                                                                       sequence_length=sequence_length,
                                                                       scope=cell_scope)
                states_fw.append(s_fw)
                states_bw.append(s_bw)
        return layer, tuple(states_fw), tuple(states_bw)

    def stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, inputs, dtype, sequence_length=None):
        layer, states_fw, states_bw = inputs, [], []
        with v1.variable_scope("stack_bidirectional_rnn"):
            for i, (fw, bw) in enumerate(zip(cells_fw, cells_bw)):
                with v1.variable_scope(f"cell_{i}"):
                    outputs, (s_fw, s_bw) = v1.nn.bidirectional_dynamic_rnn(fw, bw, layer, dtype=dtype,
                                                                            sequence_length=sequence_length)
                    layer = v1.concat(outputs, 2)
                states_fw.append(s_fw)
                states_bw.append(s_bw)
        return layer, tuple(states_fw), tuple(states_bw)

    return types.SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_") and k != "v1"})
