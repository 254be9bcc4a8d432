"""tf.contrib.rnn beyond tf.nn.rnn_cell. The block cells against TensorFlow's own kernels from the
same weights (tf.raw_ops.LSTMBlockCell, BlockLSTM and its gradient, GRUBlockCell and
GRUBlockCellGrad), 1e-5; LayerNormBasicLSTMCell, the wrappers and the stacked bidirectional RNNs
against the contrib sources composed again on tensorflow.compat.v1 (contrib_rnn_ref.py, with
tf_slim's layer_norm) with TensorFlow's initial weights copied in: values and tf.gradients, 1e-5;
float64 finite differences for the gradients; variable names and shapes as read from TF 1.15's
contrib/rnn sources."""
import numpy as np
import pytest

import contrib_rnn_ref
import pygrad as tf
from rnn_check import assert_matches_tensorflow, check_model_gradients, peer

B, D, N, T = 3, 4, 5, 4
RNG = np.random.default_rng(7)


def _xs(steps=T, depth=D, dtype=np.float32, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((B, depth)).astype(dtype) for _ in range(steps)]


def _load(sess, values):
    """Variable.load of {short name: value} into the graph's variables (names without ':0')."""
    for v in tf.global_variables():
        v.load(values[v.op.name], sess)


def _names(variables=None):
    return [(v.op.name, v.shape.as_list()) for v in (variables or tf.global_variables())]


# ------------------------------------------------------------------------- block cells


@pytest.mark.parametrize("peephole,clip,forget_bias", [(False, None, 1.0), (True, 0.3, 0.5), (True, None, 0.0)])
def test_lstm_block_cell_step_matches_the_kernel(peephole, clip, forget_bias):
    v1 = peer()
    x, c, h = RNG.standard_normal((B, D)), RNG.standard_normal((B, N)), RNG.standard_normal((B, N))
    weights = {"lstm_cell/kernel": RNG.standard_normal((D + N, 4 * N)) * 0.5,
               "lstm_cell/bias": RNG.standard_normal(4 * N)}
    if peephole:
        weights.update({f"lstm_cell/w_{g}_diag": RNG.standard_normal(N) for g in "ifo"})
    cell = tf.contrib.rnn.LSTMBlockCell(N, forget_bias=forget_bias, cell_clip=clip, use_peephole=peephole)
    out, (new_c, new_h) = cell(tf.constant(x, tf.float32), tf.nn.rnn_cell.LSTMStateTuple(
        tf.constant(c, tf.float32), tf.constant(h, tf.float32)))
    assert _names() == [("lstm_cell/kernel", [D + N, 4 * N]), ("lstm_cell/bias", [4 * N])] + (
        [(f"lstm_cell/w_{g}_diag", [N]) for g in "ifo"] if peephole else [])
    with tf.Session() as sess:
        _load(sess, weights)
        got = sess.run([out, new_c, new_h])
    zeros = np.zeros(N)
    ref = v1.raw_ops.LSTMBlockCell(
        x=x.astype("f"), cs_prev=c.astype("f"), h_prev=h.astype("f"), w=weights["lstm_cell/kernel"].astype("f"),
        wci=weights.get("lstm_cell/w_i_diag", zeros).astype("f"), wcf=weights.get("lstm_cell/w_f_diag", zeros).astype(
            "f"), wco=weights.get("lstm_cell/w_o_diag", zeros).astype("f"), b=weights["lstm_cell/bias"].astype("f"),
        forget_bias=forget_bias, cell_clip=clip if clip is not None else -1.0, use_peephole=peephole)
    with v1.Session() as sess:
        want = sess.run(ref)
    for a, b in zip(got, [want[6], want[1], want[6]]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _block_lstm_reference(v1, x, c0, h0, weights, seq_len, peephole, clip, forget_bias, r):
    """BlockLSTM (TensorFlow's kernel, with its registered gradient) and LSTMBlockWrapper.call's
    masking and final-state gather: the loss sum(r0 * outputs) + sum(r1 * c) + sum(r2 * h) and its
    gradients."""
    graph = v1.Graph()
    with graph.as_default():
        xt, c0t, h0t = v1.constant(x), v1.constant(c0), v1.constant(h0)
        wt = {k: v1.constant(v) for k, v in weights.items()}
        zeros = v1.zeros([N])
        t = x.shape[0]
        max_len = t if seq_len is None else max(seq_len)
        _, cs, _, _, _, _, hs = v1.raw_ops.BlockLSTM(
            seq_len_max=np.int64(max_len), x=xt, cs_prev=c0t, h_prev=h0t, w=wt["kernel"],
            wci=wt.get("w_i_diag", zeros), wcf=wt.get("w_f_diag", zeros), wco=wt.get("w_o_diag", zeros),
            b=wt["bias"], forget_bias=forget_bias, cell_clip=clip if clip is not None else -1.0, use_peephole=peephole)
        if seq_len is None:
            outputs, c, h = hs, cs[-1], hs[-1]
        else:
            mask = v1.transpose(v1.sequence_mask(seq_len, t, dtype=v1.float32), [1, 0])
            outputs = hs * v1.expand_dims(mask, -1)
            index = v1.stack([seq_len, v1.range(B)], axis=1)
            c = v1.gather_nd(v1.concat([c0t[None], cs], 0), index)
            h = v1.gather_nd(v1.concat([h0t[None], outputs], 0), index)
        loss = v1.reduce_sum(r[0] * outputs) + v1.reduce_sum(r[1] * c) + v1.reduce_sum(r[2] * h)
        wrt = [xt, c0t, h0t] + [wt[k] for k in sorted(wt)]
        with v1.Session() as sess:
            return sess.run([outputs, c, h] + v1.gradients(loss, wrt))


@pytest.mark.parametrize("kind,seq_len", [("fused", None), ("fused", [3, 4, 1]), ("cell", None)])
def test_lstm_block_sequences_and_gradients_match_block_lstm(kind, seq_len):
    """LSTMBlockFusedCell (and LSTMBlockCell under static_rnn) over a sequence: outputs, the final
    state and the gradients of a loss with respect to the inputs, the initial state and every
    variable, against TensorFlow's BlockLSTM kernel and its gradient."""
    v1 = peer()
    peephole, clip, forget_bias = True, 0.8, 0.7
    x = RNG.standard_normal((T, B, D)).astype("f")
    c0, h0 = RNG.standard_normal((B, N)).astype("f"), RNG.standard_normal((B, N)).astype("f")
    r = [RNG.standard_normal((T, B, N)).astype("f"), RNG.standard_normal((B, N)).astype("f"),
         RNG.standard_normal((B, N)).astype("f")]
    weights = {"kernel": RNG.standard_normal((D + N, 4 * N)).astype("f") * 0.5,
               "bias": RNG.standard_normal(4 * N).astype("f"),
               **{f"w_{g}_diag": RNG.standard_normal(N).astype("f") for g in "ifo"}}
    want = _block_lstm_reference(v1, x, c0, h0, weights, seq_len, peephole, clip, forget_bias, r)

    xt, c0t, h0t = tf.constant(x), tf.constant(c0), tf.constant(h0)
    if kind == "fused":
        cell = tf.contrib.rnn.LSTMBlockFusedCell(N, forget_bias=forget_bias, cell_clip=clip, use_peephole=peephole)
        outputs, (c, h) = cell(xt, initial_state=(c0t, h0t), sequence_length=seq_len)
        prefix = "lstm_fused_cell"
    else:
        cell = tf.contrib.rnn.LSTMBlockCell(N, forget_bias=forget_bias, cell_clip=clip, use_peephole=peephole)
        steps, (c, h) = tf.nn.static_rnn(cell, tf.unstack(xt), initial_state=tf.nn.rnn_cell.LSTMStateTuple(c0t, h0t))
        outputs, prefix = tf.stack(steps), "rnn/lstm_cell"
    assert _names() == [(f"{prefix}/kernel", [D + N, 4 * N]), (f"{prefix}/bias", [4 * N])] + [
        (f"{prefix}/w_{g}_diag", [N]) for g in "ifo"]
    loss = tf.reduce_sum(r[0] * outputs) + tf.reduce_sum(r[1] * c) + tf.reduce_sum(r[2] * h)
    variables = sorted(tf.global_variables(), key=lambda v: v.op.name)
    grads = tf.gradients(loss, [xt, c0t, h0t] + variables)
    with tf.Session() as sess:
        for v in variables:
            v.load(weights[v.op.name.split("/")[-1]], sess)
        got = sess.run([outputs, c, h] + grads)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"value {i}")


@pytest.mark.parametrize("v2", [False, True])
def test_gru_block_cell_matches_the_kernel_and_its_gradient(v2):
    """GRUBlockCell's step against tf.raw_ops.GRUBlockCell; its gradients against
    GRUBlockCellGrad composed as contrib's registered gradient composes it. TF names the gates'
    kernel "w_c" and the candidate's "w_ru" (GRUBlockCellV2: GRUCell's names)."""
    v1 = peer()
    x, h = RNG.standard_normal((B, D)).astype("f"), RNG.standard_normal((B, N)).astype("f")
    r_out = RNG.standard_normal((B, N)).astype("f")
    w_gates, w_cand = RNG.standard_normal((D + N, 2 * N)).astype("f"), RNG.standard_normal((D + N, N)).astype("f")
    b_gates, b_cand = RNG.standard_normal(2 * N).astype("f"), RNG.standard_normal(N).astype("f")
    names = (["gates/kernel", "gates/bias", "candidate/kernel", "candidate/bias"] if v2 else
             ["w_c", "b_ru", "w_ru", "b_c"])
    cell = (tf.contrib.rnn.GRUBlockCellV2 if v2 else tf.contrib.rnn.GRUBlockCell)(N)
    xt, ht = tf.constant(x), tf.constant(h)
    out, new_h = cell(xt, ht)
    assert _names() == [(f"gru_cell/{n}", s) for n, s in zip(names, [[D + N, 2 * N], [2 * N], [D + N, N], [N]])]
    grads = tf.gradients(tf.reduce_sum(r_out * new_h), [xt, ht] + tf.global_variables())
    with tf.Session() as sess:
        _load(sess, dict(zip([f"gru_cell/{n}" for n in names], [w_gates, b_gates, w_cand, b_cand])))
        got = sess.run([out, new_h] + grads)
    with v1.Graph().as_default(), v1.Session() as sess:
        r, u, c, hn = v1.raw_ops.GRUBlockCell(x=x, h_prev=h, w_ru=w_gates, w_c=w_cand, b_ru=b_gates, b_c=b_cand)
        d_x, d_h, d_c_bar, d_ru = v1.raw_ops.GRUBlockCellGrad(x=x, h_prev=h, w_ru=w_gates, w_c=w_cand, b_ru=b_gates,
                                                              b_c=b_cand, r=r, u=u, c=c, d_h=r_out)
        d_w_gates = v1.matmul(v1.concat([x, h], 1), d_ru, transpose_a=True)
        d_w_cand = v1.matmul(v1.concat([x, h * r], 1), d_c_bar, transpose_a=True)
        want = sess.run([hn, hn, d_x, d_h, d_w_gates, v1.reduce_sum(d_ru, 0), d_w_cand, v1.reduce_sum(d_c_bar, 0)])
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"value {i}")


# ------------------------------------------------------------- cells and wrappers vs TF


def _ref(lib, tf_slim=None):
    if lib is tf:
        return tf.contrib.rnn
    return contrib_rnn_ref.cells(lib, tf_slim.layers.layer_norm if tf_slim is not None else None)


@pytest.mark.parametrize("layer_norm,forget_bias,gain,shift", [(True, 1.0, 1.0, 0.0), (True, 0.5, 1.3, 0.2),
                                                               (False, 1.0, 1.0, 0.0)])
def test_layer_norm_basic_lstm_cell_matches_tensorflow(tf_slim, layer_norm, forget_bias, gain, shift):
    def build(lib, xs):
        if lib is tf:
            cell = tf.contrib.rnn.LayerNormBasicLSTMCell(N, forget_bias=forget_bias, layer_norm=layer_norm,
                                                         norm_gain=gain, norm_shift=shift)
        else:
            cell = _ref(lib, tf_slim).LayerNormBasicLSTMCell(N, forget_bias, layer_norm, gain, shift)
        return lib.nn.static_rnn(cell, xs, dtype=xs[0].dtype)

    got = assert_matches_tensorflow(build, _xs(dtype=np.float64))  # float32 rounds the normalizations apart
    prefix = "rnn/layer_norm_basic_lstm_cell/"
    expected = [prefix + "kernel"] + ([f"{prefix}{s}/{p}" for s in ("input", "transform", "forget", "output",
                                                                      "state") for p in ("gamma", "beta")]
                                      if layer_norm else [prefix + "bias"])
    assert got["names"] == [n + ":0" for n in expected]


def test_layer_norm_basic_lstm_cell_drops_the_candidate():
    """dropout_keep_prob: each element of the new c is c * sigmoid(f + 1) + sigmoid(i) * tanh(j) * m
    with m 0 or 1 / keep_prob (NumPy from the cell's weights), and both occur."""
    x, c, h = RNG.standard_normal((50, D)), RNG.standard_normal((50, N)), RNG.standard_normal((50, N))
    keep = tf.placeholder_with_default(0.5, [])
    cell = tf.contrib.rnn.LayerNormBasicLSTMCell(N, layer_norm=False, dropout_keep_prob=keep)
    _, (new_c, _) = cell(tf.constant(x, tf.float32), (tf.constant(c, tf.float32), tf.constant(h, tf.float32)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, kernel, bias = sess.run([new_c] + tf.global_variables())
    i, j, f, _ = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    kept, dropped = c * sig(f + 1) + sig(i) * np.tanh(j) * 2, c * sig(f + 1)
    is_kept, is_dropped = np.isclose(got, kept, atol=1e-5), np.isclose(got, dropped, atol=1e-5)
    assert np.all(is_kept | is_dropped) and is_kept.sum() > 20 and is_dropped.sum() > 20


WRAPPERS = {
    "input_projection": (lambda c, lib: c.InputProjectionWrapper(lib.nn.rnn_cell.GRUCell(N), 6),
                         ["rnn/input_projection_wrapper/kernel", "rnn/input_projection_wrapper/bias",
                          "rnn/input_projection_wrapper/gru_cell/gates/kernel",
                          "rnn/input_projection_wrapper/gru_cell/gates/bias",
                          "rnn/input_projection_wrapper/gru_cell/candidate/kernel",
                          "rnn/input_projection_wrapper/gru_cell/candidate/bias"]),
    "output_projection": (lambda c, lib: c.OutputProjectionWrapper(lib.nn.rnn_cell.BasicLSTMCell(N), 7),
                          ["rnn/output_projection_wrapper/basic_lstm_cell/kernel",
                           "rnn/output_projection_wrapper/basic_lstm_cell/bias",
                           "rnn/output_projection_wrapper/kernel", "rnn/output_projection_wrapper/bias"]),
    "highway": (lambda c, lib: c.HighwayWrapper(lib.nn.rnn_cell.GRUCell(D)),
                ["rnn/gru_cell/gates/kernel", "rnn/gru_cell/gates/bias", "rnn/gru_cell/candidate/kernel",
                 "rnn/gru_cell/candidate/bias", "rnn/carry_w", "rnn/carry_b"]),
    "attention_cell": (lambda c, lib: c.AttentionCellWrapper(lib.nn.rnn_cell.LSTMCell(N), 3),
                       [f"rnn/attention_cell_wrapper/{n}" for n in (
                           "kernel", "bias", "lstm_cell/kernel", "lstm_cell/bias", "attention/attn_w",
                           "attention/attn_v", "attention/kernel", "attention/bias",
                           "attn_output_projection/kernel", "attn_output_projection/bias")]),
}


@pytest.mark.parametrize("case", sorted(WRAPPERS))
def test_wrappers_match_tensorflow(case):
    make, names = WRAPPERS[case]

    def build(lib, xs):
        return lib.nn.static_rnn(make(_ref(lib), lib), xs, dtype=xs[0].dtype)

    got = assert_matches_tensorflow(build, _xs())
    assert got["names"] == [n + ":0" for n in names]


@pytest.mark.parametrize("dynamic,seq_len", [(False, None), (False, [4, 2, 3]), (True, None), (True, [4, 1, 3])])
def test_stack_bidirectional_rnns_match_tensorflow(dynamic, seq_len):
    def build(lib, xs):
        cells_fw = [lib.nn.rnn_cell.GRUCell(3), lib.nn.rnn_cell.BasicLSTMCell(2)]
        cells_bw = [lib.nn.rnn_cell.GRUCell(2), lib.nn.rnn_cell.GRUCell(3)]
        fn = _ref(lib).stack_bidirectional_dynamic_rnn if dynamic else _ref(lib).stack_bidirectional_rnn
        inputs = lib.stack(xs, axis=1) if dynamic else xs
        return fn(cells_fw, cells_bw, inputs, dtype=lib.float32, sequence_length=seq_len)[0], ()

    got = assert_matches_tensorflow(build, _xs())
    mid = "bidirectional_rnn/" if dynamic else ""
    expected = []
    for i, (fw, bw) in enumerate([(["gru_cell"], ["gru_cell"]), (["basic_lstm_cell"], ["gru_cell"])]):
        for d, cell in (("fw", fw[0]), ("bw", bw[0])):
            parts = ["gates/kernel", "gates/bias", "candidate/kernel", "candidate/bias"] if cell == "gru_cell" \
                else ["kernel", "bias"]
            expected += [f"stack_bidirectional_rnn/cell_{i}/{mid}{d}/{cell}/{p}:0" for p in parts]
    assert got["names"] == expected


def test_stacked_states_are_per_layer():
    xs = [tf.constant(x) for x in _xs()]
    out, fw, bw = tf.contrib.rnn.stack_bidirectional_rnn([tf.nn.rnn_cell.GRUCell(3)] * 1, [tf.nn.rnn_cell.GRUCell(2)],
                                                         xs, dtype=tf.float32)
    assert len(out) == T and out[0].shape.as_list() == [B, 5] and len(fw) == len(bw) == 1


# ---------------------------------------------------------------- float64 gradients


GRAD_CASES = {
    "layer_norm_lstm": lambda: tf.contrib.rnn.LayerNormBasicLSTMCell(3, norm_gain=0.8, norm_shift=0.1),
    "lstm_block_peephole": lambda: tf.contrib.rnn.LSTMBlockCell(3, use_peephole=True),
    "gru_block": lambda: tf.contrib.rnn.GRUBlockCell(3),
    "attention_cell": lambda: tf.contrib.rnn.AttentionCellWrapper(tf.nn.rnn_cell.GRUCell(3), 2,
                                                                   state_is_tuple=False),
    "highway_uncoupled": lambda: tf.contrib.rnn.HighwayWrapper(tf.nn.rnn_cell.GRUCell(D),
                                                               couple_carry_transform_gates=False),
    "input_projection": lambda: tf.contrib.rnn.InputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(3), 2,
                                                                      activation=tf.tanh),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_finite_differences(case):
    def build(lib, xs):
        with lib.variable_scope("m", dtype=lib.float64):
            return lib.nn.static_rnn(GRAD_CASES[case](), xs, dtype=lib.float64)

    # Four steps: the attention window is full of outputs (not its starting zeros) for two of them.
    check_model_gradients(build, _xs(steps=4, dtype=np.float64, seed=3))


def test_fused_cell_gradients_match_finite_differences():
    def build(lib, xs):
        cell = lib.contrib.rnn.LSTMBlockFusedCell(3, use_peephole=True)
        return cell(lib.stack(xs), dtype=lib.float64, sequence_length=[3, 1, 2])

    check_model_gradients(build, _xs(steps=3, dtype=np.float64))


# ---------------------------------------------------------------- surface and bad input


def test_contrib_rnn_reexports_the_core_names():
    c = tf.contrib.rnn
    assert c.static_rnn is tf.nn.static_rnn and c.static_bidirectional_rnn is tf.nn.static_bidirectional_rnn
    for name in ("DropoutWrapper", "MultiRNNCell", "LSTMStateTuple", "ResidualWrapper", "GRUCell", "LSTMCell",
                 "BasicLSTMCell", "BasicRNNCell", "RNNCell", "DeviceWrapper"):
        assert getattr(c, name) is getattr(tf.nn.rnn_cell, name)


def test_bad_arguments_raise():
    c = tf.contrib.rnn
    with pytest.raises(ValueError, match="Exactly one of num_units or cell_size"):
        c.GRUBlockCell(num_units=2, cell_size=2)
    with pytest.raises(ValueError, match="attn_length should be greater than zero"):
        c.AttentionCellWrapper(tf.nn.rnn_cell.GRUCell(2), 0)
    with pytest.raises(ValueError, match="output_size must be > 0"):
        c.OutputProjectionWrapper(tf.nn.rnn_cell.GRUCell(2), 0)
    with pytest.raises(TypeError, match="is not an RNNCell"):
        c.EmbeddingWrapper("cell", 3, 2)
    xs = [tf.constant(x) for x in _xs()]
    with pytest.raises(ValueError, match="at least one bw cell"):
        c.stack_bidirectional_rnn([tf.nn.rnn_cell.GRUCell(2)], [], xs, dtype=tf.float32)
    with pytest.raises(ValueError, match="same depth"):
        c.stack_bidirectional_dynamic_rnn([tf.nn.rnn_cell.GRUCell(2)], [tf.nn.rnn_cell.GRUCell(2)] * 2,
                                          tf.stack(xs, 1), dtype=tf.float32)
    with pytest.raises(ValueError, match=r"(?s)LSTMBlockFusedCell .*\[time, batch, depth\].*test_contrib_rnn_cells"):
        c.LSTMBlockFusedCell(2)(xs[0], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"HighwayWrapper .*must have one shape"):
        tf.nn.static_rnn(c.HighwayWrapper(tf.nn.rnn_cell.GRUCell(2)), xs, dtype=tf.float32)
    with pytest.raises(ValueError, match=r"GRUBlockCell .*cell_size 3 vs 2"):
        c.GRUBlockCell(3)(xs[0], tf.zeros([B, 2]))
