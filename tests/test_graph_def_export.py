"""A pygrad graph written as TensorFlow's GraphDef (Graph.as_graph_def, pygrad/graph_def.py) is one
TensorFlow imports and runs with pygrad's numbers: for a table of small graphs (every op type with
a TF counterpart, and the gradient helpers and fused updates TF spells as several ops), the values
TF computes from the imported GraphDef are pygrad's; an MLP and a convnet train five Adam steps in
TF as in pygrad; every op either exports or is listed, with its reason, as not exportable."""
import sys

import numpy as np
import pytest

import pygrad as tf
from pygrad.graph_def import TF_INPUT_ORDER, TF_INPUT_TYPE, NotExportableError, graph_def
from pygrad.op_identity import TABLE

RNG = np.random.RandomState(7)


def _normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


X = _normal(3, 4)
Y = _normal(3, 4)
POS = np.abs(X) + 0.5
IMG = _normal(2, 5, 5, 3)
KERNEL = _normal(3, 3, 3, 4) * 0.3
DEPTH = _normal(3, 3, 3, 2) * 0.3
IDX = np.array([2, 0, 2], np.int32)
SQUARE = _normal(3, 3) + 3 * np.eye(3, dtype=np.float32)


def _grads(ys, xs, seed=1):
    """The gradients of sum(w * y) for fixed random cotangents w (so that no gradient is trivially
    1), or w = sin(1.7 y + seed) where y's shape is known only when the graph runs."""
    rng = np.random.RandomState(seed)
    ys = ys if isinstance(ys, list) else [ys]
    ws = [tf.constant(rng.standard_normal(y.shape.as_list()).astype(y.dtype.name)) if y.shape.is_fully_defined()
          else tf.sin(tf.stop_gradient(y) * 1.7 + seed) for y in ys]
    return tf.gradients(ys, xs, grad_ys=ws)


def _unary(p):
    x, pos = p(X), p(POS)
    fns = [tf.negative, tf.abs, tf.square, tf.sign, tf.exp, tf.floor, tf.ceil, tf.round, tf.sin, tf.cos,
           tf.sigmoid, tf.tanh, tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.softplus, tf.nn.softsign,
           lambda v: tf.nn.leaky_relu(v, alpha=0.2)]
    outs = [f(x) for f in fns] + [f(pos) for f in (tf.log, tf.log1p, tf.sqrt, tf.rsqrt, tf.reciprocal)]
    return outs + _grads(outs[10:19], x) + _grads(outs[19:], pos)


def _binary(p):
    x, y, pos = p(X), p(Y), p(POS)
    row = p(_normal(4))
    outs = [x + y, x - row, x * y, x / pos, tf.floordiv(x, pos), tf.floormod(x, pos), tf.pow(pos, y),
            tf.maximum(x, y), tf.minimum(x, row), tf.squared_difference(x, y), tf.add_n([x, y, x])]
    return outs + _grads(outs[:4] + outs[6:], [x, y, pos, row])


def _compare(p):
    x, y = p(X), p(Y)
    a, b = x > 0, y > 0
    return [tf.equal(x, y), tf.not_equal(x, x), tf.less(x, y), tf.less_equal(x, y), tf.greater(x, y),
            tf.greater_equal(x, y), tf.logical_and(a, b), tf.logical_or(a, b), tf.logical_not(a),
            tf.logical_xor(a, b), tf.is_nan(x / x), tf.is_inf(1 / tf.floor(x)), tf.is_finite(1 / tf.floor(x)),
            tf.where(a, x, y), tf.cast(x, tf.int32), tf.cast(a, tf.float32)]


def _matmul(p):
    x, w = p(X), p(_normal(4, 5))
    ys = [tf.matmul(x, w), tf.matmul(w, x, transpose_a=True, transpose_b=True)]
    return ys + _grads(ys, [x, w])


def _reductions(p):
    x, dyn = p(X), p(X, dynamic=True)
    ys = [tf.reduce_sum(x), tf.reduce_mean(x, 1), tf.reduce_max(x, 0, keepdims=True), tf.reduce_min(x, [0, 1]),
          tf.reduce_prod(x, 1), tf.reduce_sum(dyn, 0), tf.reduce_mean(dyn, keepdims=True), tf.reduce_prod(dyn, 0)]
    return ys + _grads(ys, [x, dyn]) + [tf.reduce_all(x > -3, 1), tf.reduce_any(x > 1, 0), tf.argmax(x, 1),
                                        tf.argmin(x, 0, output_type=tf.int32)]


def _prod_second_order(p):
    x = p(X)
    g = _grads(tf.reduce_prod(x, 1), x)[0]
    return [g] + _grads(g, x, seed=2)


def _broadcasting(p):
    x, row, col, dyn = p(X), p(_normal(4)), p(_normal(3, 1)), p(X, dynamic=True)
    ys = [x * row + col, dyn - row, dyn * col]
    return ys + _grads(ys, [x, row, col, dyn])


def _array(p):
    x, dyn = p(X), p(X, dynamic=True)
    shape = tf.shape(dyn)
    ys = [tf.reshape(x, [2, 6]), tf.reshape(dyn, [shape[0], 2, -1]), tf.expand_dims(x, 1), tf.squeeze(x[:1]),
          tf.squeeze(tf.expand_dims(x, 0), [0]), tf.transpose(x), tf.identity(x), tf.stop_gradient(x),
          tf.zeros_like(x), tf.ones_like(dyn), tf.fill([shape[0], 2], 1.5), tf.fill([2, 3], 7),
          tf.reshape(x, tf.shape(tf.transpose(x)))]
    return ys + [shape, tf.size(dyn), tf.rank(x)] + _grads([ys[0], ys[1], ys[2], ys[5], ys[12]], [x, dyn])


def _manip(p):
    x, y = p(X), p(Y)
    a, b = tf.split(x, 2, axis=1)
    c, d, e = tf.split(y, [1, 2, 1], axis=1)
    ys = [tf.concat([a, y, b], 1), tf.concat([x, y], 0), c * 2.0, d, e, tf.stack([x, y], 1), tf.unstack(x)[1],
          tf.gather(x, p(IDX)), tf.gather(x, [[1, 3], [0, 0]], axis=1), tf.tile(x, [2, 3]), tf.reverse(x, [1]),
          tf.one_hot(p(IDX), 4, on_value=2.0, off_value=-1.0)]
    return ys + _grads(ys[:11], [x, y])


def _slices(p):
    x, dyn, i = p(X), p(X, dynamic=True), p(np.int32(-1))
    ys = [x[1:, ::2], x[:, 1], x[..., tf.newaxis, 2:3], dyn[-1], tf.slice(x, [1, 1], [2, -1]), x[i], x[:, i],
          tf.slice(x, tf.stack([i + 2, 0]), [1, 3])]
    return ys + _grads(ys, [x, dyn])


def _scatter(p):
    x = p(X)
    nd = p(np.array([[0, 1], [2, 3]], np.int32))
    ys = [tf.gather_nd(x, nd), tf.scatter_nd(nd, p(np.float32([1, 2])), [3, 4]), tf.segment_sum(x, [0, 0, 1]),
          tf.unsorted_segment_sum(x, p(np.array([2, 0, 2], np.int32)), 4),
          tf.scatter_nd(nd, p(np.float32([1, 2])), tf.shape(x))]
    return ys + _grads(ys[:1] + ys[2:4], x)


def _sequences(p):
    x, dyn = p(X), p(X, dynamic=True)
    lengths = p(np.array([2, 4, 1], np.int64))
    ys = [tf.pad(x, [[1, 0], [2, 1]]), tf.pad(x, [[1, 1], [0, 2]], constant_values=-2.0),
          tf.pad(x, [[1, 1], [2, 2]], mode="REFLECT"), tf.pad(x, [[0, 2], [1, 1]], mode="SYMMETRIC"),
          tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0), tf.cumsum(x, 1), tf.cumprod(x, 0, exclusive=True),
          tf.cumsum(x, 1, reverse=True)]
    return ys + _grads(ys, x) + [tf.range(tf.shape(dyn)[0]) * 2, tf.range(2, 11, 3),
                                 tf.placeholder_with_default(x, [None, 4]) * 2.0]


def _top_k(p):
    x, dy = p(X), p(_normal(3, 2))
    values, indices = tf.nn.top_k(x, 2)
    g = tf.gradients(values, x, grad_ys=dy)[0]
    return [values, indices, tf.nn.in_top_k(x, p(np.array([1, 0, 3], np.int32)), 2), g] + _grads(g, dy, seed=3)


def _losses(p):
    x, labels = p(X), p(np.eye(3, 4, dtype=np.float32))
    ys = [tf.nn.softmax(x), tf.nn.log_softmax(x), tf.nn.softmax(x, axis=0), tf.nn.log_softmax(x, axis=0),
          tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x),
          tf.nn.sparse_softmax_cross_entropy_with_logits(labels=p(np.array([3, 0, 1], np.int64)), logits=x)]
    return ys + _grads(ys, x)


def _conv(p):
    img, k, dk = p(IMG), p(KERNEL), p(DEPTH)
    ys = [tf.nn.conv2d(img, k, [1, 1, 1, 1], "SAME"), tf.nn.conv2d(img, k, [1, 2, 2, 1], "VALID"),
          tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), tf.nn.avg_pool(img, [1, 3, 3, 1], [1, 1, 1, 1],
                                                                                  "VALID"),
          tf.nn.depthwise_conv2d_native(img, dk, [1, 1, 1, 1], "SAME")]
    return ys + _grads(ys, [img, k, dk])


def _linalg(p):
    m = p(SQUARE)
    ys = [tf.matrix_inverse(m), tf.matrix_determinant(m), tf.check_numerics(m, "m is bad")]
    return ys + _grads(ys, m)


def _clip(p):
    a, b = p(X), p(_normal(5))
    clipped, norm = tf.clip_by_global_norm([a, b], 2.0)
    return clipped + [norm] + _grads(clipped + [norm], [a, b]) + tf.clip_by_global_norm([a], 1.0, use_norm=norm)[0]


def _host_values(p):
    x = p(np.array([3, 1, 3, 2, 1], np.int32))
    y, idx = tf.unique(x)
    return [y, idx, tf.where(p(X) > 0)]


def _variables(p):
    v = tf.Variable(X, name="v")
    w = tf.Variable(np.float32(2.0), name="w")
    return ([tf.assign_add(v, Y), tf.assign(w, 3.0)], [tf.assign_sub(v, p(X)), tf.scatter_update(v, [0], Y[:1]),
                                                       tf.scatter_add(v, [1, 1], Y[:2]),
                                                       tf.scatter_sub(v, p(np.int64([2])), Y[2:])], [v, w])


def _optimizer(make, sparse=False):
    def build(p):
        v = tf.Variable(X, name="v")
        x = p(_normal(2, 4))
        rows = tf.gather(v, [2, 0, 2]) if sparse else v
        loss = tf.reduce_sum(tf.square(tf.matmul(x, rows, transpose_b=True))) + tf.reduce_sum(rows)
        train = make().minimize(loss)
        return [train], [train], [v, loss]
    return build


OPTIMIZERS = {
    "sgd": lambda: tf.train.GradientDescentOptimizer(0.05),
    "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adagrad": lambda: tf.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5),
    "rmsprop_centered": lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
    "adam": lambda: tf.train.AdamOptimizer(0.05),
    "adadelta": lambda: tf.train.AdadeltaOptimizer(1.0),
    "proximal_sgd": lambda: tf.train.ProximalGradientDescentOptimizer(0.05, l1_regularization_strength=0.01),
    "proximal_adagrad": lambda: tf.train.ProximalAdagradOptimizer(0.1, l2_regularization_strength=0.01),
    "ftrl": lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
    "ftrl_shrinkage": lambda: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1),
}
SPARSE_OPTIMIZERS = ("sgd", "momentum", "adagrad", "rmsprop", "rmsprop_centered", "adam")


def _summaries(p):
    x = p(X)
    tf.summary.scalar("loss", tf.reduce_sum(x))
    tf.summary.histogram("x", x)
    tf.summary.image("image", tf.reshape(tf.sigmoid(x), [1, 3, 4, 1]))
    tf.summary.audio("audio", tf.reshape(tf.tanh(x), [1, 12]), 8000)
    tf.summary.tensor_summary("t", x)
    printed = tf.Print(x, [x, tf.shape(x)], "x: ", summarize=5)
    tf.print("x is", x, {"k": 1}, output_stream=sys.stdout)
    return [tf.summary.merge_all(), printed]


def _tensor_array(p):
    x = p(X)
    ta = tf.TensorArray(tf.float32, size=3).unstack(x)
    written = tf.TensorArray(tf.float32, size=2, element_shape=[4]).write(1, x[0] * 2.0).write(0, x[2])
    ys = [ta.read(1), ta.read(2) + ta.read(1), ta.stack() * 2.0, written.stack()]
    return ys + _grads(ys, x)


CASES = {
    "unary": _unary, "binary": _binary, "compare": _compare, "matmul": _matmul, "reductions": _reductions,
    "prod_second_order": _prod_second_order, "broadcasting": _broadcasting, "array": _array, "manip": _manip,
    "slices": _slices, "scatter": _scatter, "sequences": _sequences, "top_k": _top_k, "losses": _losses,
    "conv": _conv, "linalg": _linalg, "clip": _clip, "host_values": _host_values, "variables": _variables,
    "summaries": _summaries, "tensor_array": _tensor_array,
    **{f"optimizer_{k}": _optimizer(v) for k, v in OPTIMIZERS.items()},
    **{f"sparse_optimizer_{k}": _optimizer(OPTIMIZERS[k], sparse=True) for k in SPARSE_OPTIMIZERS},
}


def _build(build):
    """(graph, feeds {placeholder name: value}, stages: lists of fetches run one after another)."""
    graph, feeds = tf.Graph(), {}
    with graph.as_default():
        def placeholder(value, dynamic=False):
            value = np.asarray(value)
            t = tf.placeholder(value.dtype.name, [None] * value.ndim if dynamic else value.shape)
            feeds[t.name] = value
            return t
        stages = build(placeholder)
        stages = list(stages) if isinstance(stages, tuple) else [stages]
        init = tf.global_variables_initializer()
    return graph, feeds, [[init]] + stages


def _run_pygrad(graph, feeds, stages):
    with tf.Session(graph=graph) as s:
        fd = {graph.get_tensor_by_name(k): v for k, v in feeds.items()}
        return [s.run(stage, fd) for stage in stages]


def _run_tf(peer, data, feeds, stages):
    """The stages run in TF from the GraphDef's bytes, fetched by pygrad's names."""
    g = peer.Graph()
    with g.as_default():
        peer.import_graph_def(peer.GraphDef.FromString(data), name="")
        with peer.Session() as s:
            return [s.run([f.name for f in stage], feeds) for stage in stages]


def _assert_same(ours, theirs, what):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, TF {theirs.shape}"
    if ours.dtype.kind == "f":
        assert ours.dtype == theirs.dtype, f"{what}: {ours.dtype}, TF {theirs.dtype}"
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=what)
    elif ours.dtype.kind in "OSU":
        assert ours.tolist() == theirs.tolist(), what
    else:
        np.testing.assert_array_equal(ours, theirs.astype(ours.dtype), err_msg=what)


def _assert_close_tree(ours, theirs, what):
    """Two messages as dicts (json_format): the same fields, numbers to float32's 1e-5."""
    if isinstance(ours, dict):
        assert sorted(ours) == sorted(theirs), what
        for k in ours:
            _assert_close_tree(ours[k], theirs[k], f"{what}.{k}")
    elif isinstance(ours, list):
        assert len(ours) == len(theirs), what
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _assert_close_tree(a, b, f"{what}[{i}]")
    elif isinstance(ours, float):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        assert ours == theirs, what


def _summary(data):
    from google.protobuf import json_format
    from tensorflow.core.framework import summary_pb2
    return json_format.MessageToDict(summary_pb2.Summary.FromString(data))


@pytest.mark.parametrize("name", sorted(CASES))
def test_tf_runs_the_graph_def_with_pygrads_numbers(tf_peer, name):
    graph, feeds, stages = _build(CASES[name])
    ours = _run_pygrad(graph, feeds, stages)
    theirs = _run_tf(tf_peer, graph.as_graph_def(add_shapes=True).SerializeToString(), feeds, stages)
    for stage, a, b in zip(stages, ours, theirs):
        for fetch, x, y in zip(stage, a, b):
            if isinstance(x, bytes) and fetch.op.type == "MergeSummary":
                _assert_close_tree(_summary(x), _summary(y), f"{name}: {fetch.name}")
            elif x is not None or y is not None:
                _assert_same(x, y, f"{name}: {fetch.name}")

