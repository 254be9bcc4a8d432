"""A pygrad graph written as TensorFlow's GraphDef (Graph.as_graph_def, pygrad/graph_def.py) is one
TensorFlow imports and runs with pygrad's numbers: for a table of small graphs (every op type with
a TF counterpart, conds and loops, and the gradient helpers and fused updates TF spells as several
ops), the values TF computes from the imported GraphDef are pygrad's; an MLP, a convnet and an
LSTM (dynamic_rnn) train five Adam steps in TF as in pygrad; every op either exports or is listed,
with its reason, as not exportable."""
import os
import sys
import tempfile

import numpy as np
import pytest

import pygrad as tf
from export_cases import MORE_CASES
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


# The table: each case is build(p) -> the tensors (or ops) to fetch, or a tuple of such lists run
# one after another (after the variables' initializer); p(value, dynamic=False) is a placeholder
# fed value (of its shape; of its rank only if dynamic; of any shape if dynamic is "rank").


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


def _dtypes(p):
    i, n, d = p(np.array([[3, -7], [5, 2]], np.int32)), p(np.array([4, -9, 2], np.int64)), p(X.astype(np.float64))
    h = p(X.astype(np.float16))
    return [i * 3 + i, i // 2, tf.floormod(i, 3), tf.abs(n) - 2, tf.cumsum(n), tf.matmul(d, tf.transpose(d)),
            tf.nn.softmax(d), h + h, tf.cast(h, tf.float32), tf.cast(i, tf.uint8), tf.reduce_sum(i, 1),
            tf.argmax(d, 1), tf.cast(n > 0, tf.int64)] + _grads([tf.nn.softmax(d)], d)


def _matmul(p):
    x, w = p(X), p(_normal(4, 5))
    ys = [tf.matmul(x, w), tf.matmul(w, x, transpose_a=True, transpose_b=True)]
    return ys + _grads(ys, [x, w])


def _reductions(p):
    x, dyn, unranked = p(X), p(X, dynamic=True), p(Y, dynamic="rank")
    ys = [tf.reduce_sum(x), tf.reduce_mean(x, 1), tf.reduce_max(x, 0, keepdims=True), tf.reduce_min(x, [0, 1]),
          tf.reduce_prod(x, 1), tf.reduce_sum(dyn, 0), tf.reduce_mean(dyn, keepdims=True), tf.reduce_prod(dyn, 0)]
    return ys + _grads(ys, [x, dyn]) + [tf.reduce_all(x > -3, 1), tf.reduce_any(x > 1, 0), tf.argmax(x, 1),
                                        tf.argmin(x, 0, output_type=tf.int32), tf.reduce_sum(unranked),
                                        tf.transpose(unranked)]


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
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(1, p(X)[0]).write(tf.reduce_max(x), p(X)[1])
    return [y, idx, tf.where(p(X) > 0), tf.range(tf.reduce_max(x), 0, -1), grown.stack(), grown.size()]


def _image(p):
    """tf.image's ops: the resizes and their gradients, and the codecs (JPEG's bytes and pixels are
    the encoder's and DCT's own, so only its decoded shape is compared)."""
    x = p(X.reshape(1, 3, 4, 1))
    resized = [tf.image.resize_bilinear(x, [5, 7], half_pixel_centers=True),
               tf.image.resize_nearest_neighbor(x, [2, 9], align_corners=True), tf.image.resize_bicubic(x, [6, 3])]
    u8 = tf.image.convert_image_dtype(tf.sigmoid(x[0]), tf.uint8)
    jpeg = tf.image.decode_jpeg(tf.image.encode_jpeg(tf.image.grayscale_to_rgb(u8), quality=80), channels=3)
    return resized + tf.gradients(resized, [x]) + [tf.image.decode_png(tf.image.encode_png(u8)), tf.shape(jpeg),
                                                    tf.image.decode_image(tf.image.encode_png(u8), channels=3)]


def _parsing(p):
    csv = tf.decode_csv(tf.constant(["1,a", "2,b"]), [[0], [""]])
    path = os.path.join(os.path.dirname(__file__), "test_graph_def_export.py")
    written = os.path.join(tempfile.mkdtemp(), "written.txt")
    return [tf.write_file(written, "both ways")], [
        tf.size(tf.read_file(written)), tf.decode_raw(tf.constant(b"\x01\x00\x02\x00"), tf.int16),
        tf.string_to_number(tf.constant(["1.5", "2"])) + p(np.float32(1.0)), csv[0], csv[1],
        tf.size(tf.read_file(path)), tf.matching_files(path)]


def _variables(p):
    v = tf.Variable(X, name="v")
    w = tf.Variable(np.float32(2.0), name="w")
    # One update of v per run: TF orders no two updates of one variable in a run that it is not told to.
    return ([tf.assign_add(v, Y), tf.assign(w, 3.0)], [tf.assign_sub(v, p(X))], [tf.scatter_update(v, [0], Y[:1])],
            [tf.scatter_add(v, [1, 1], Y[:2])], [tf.scatter_sub(v, p(np.int64([2])), Y[2:])],
            [v, w, tf.is_variable_initialized(w)])


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


def _control_flow(p):
    """A cond and a loop (TF1's Switch/Merge and loop frames; tests/test_graph_def_control_flow.py
    has the rest), and identity_n."""
    x = p(X)
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    _, v = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.sin(v) + y), [0, x])
    ys = [y, v, *tf.identity_n([v, y * 3.0])]
    return ys + _grads(ys, x)


CASES = {
    "unary": _unary, "binary": _binary, "compare": _compare, "dtypes": _dtypes, "matmul": _matmul,
    "reductions": _reductions,
    "prod_second_order": _prod_second_order, "broadcasting": _broadcasting, "array": _array, "manip": _manip,
    "slices": _slices, "scatter": _scatter, "sequences": _sequences, "top_k": _top_k, "losses": _losses,
    "conv": _conv, "linalg": _linalg, "clip": _clip, "host_values": _host_values, "image": _image,
    "parsing": _parsing, "variables": _variables, "summaries": _summaries, "tensor_array": _tensor_array,
    "control_flow": _control_flow,
    **{f"optimizer_{k}": _optimizer(v) for k, v in OPTIMIZERS.items()},
    **{f"sparse_optimizer_{k}": _optimizer(OPTIMIZERS[k], sparse=True) for k in SPARSE_OPTIMIZERS},
    **MORE_CASES,
}


def _build(build):
    """(graph, feeds {placeholder name: value}, stages: lists of fetches run one after another)."""
    graph, feeds = tf.Graph(), {}
    with graph.as_default():
        def placeholder(value, dynamic=False):
            value = np.asarray(value)
            shape = None if dynamic == "rank" else [None] * value.ndim if dynamic else value.shape
            t = tf.placeholder(value.dtype.name, shape)
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
    """One value: the same shape and dtype, floats to float32's 1e-5, the rest exactly."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype), f"{what}: {ours.dtype} {ours.shape}, TF " \
                                                                      f"{theirs.dtype} {theirs.shape}"
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        assert ours.tolist() == theirs.tolist(), what


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


# ---------------------------------------------------------------- random ops: TF draws its own numbers


def _in_unit(v):
    return v.dtype == np.float32 and (0 <= v).all() and (v < 1).all()


def _shuffled(v):
    return sorted(map(tuple, v)) == sorted(map(tuple, X))


def _candidates(v):
    return v.dtype == np.int64 and (0 <= v).all() and (v < 10).all()


RANDOM_CASES = {  # name: (build(placeholder, dynamic x) -> tensors, checks of each value)
    "uniform": (lambda x: [tf.random_uniform([3, 4], seed=1)], [_in_unit]),
    "normal_sized_from_a_shape": (lambda x: [tf.random_normal([tf.shape(x)[0], 5], seed=2)],
                                  [lambda v: v.shape == (3, 5) and np.isfinite(v).all()]),
    "truncated_like_a_shape": (lambda x: [tf.truncated_normal(tf.shape(x), seed=3)],
                               [lambda v: v.shape == X.shape and (np.abs(v) <= 2).all()]),
    "shuffle": (lambda x: [tf.random_shuffle(x, seed=4)], [_shuffled]),
    "multinomial": (lambda x: [tf.multinomial(x[:, :2] * 0.0, 6, seed=5)],
                    [lambda v: v.shape == (3, 6) and v.dtype == np.int64 and set(v.ravel()) <= {0, 1}]),
    "candidate_samplers": (
        lambda x: list(tf.nn.uniform_candidate_sampler(tf.constant([[1], [3]], tf.int64), 1, 4, True, 10, seed=6)) +
        list(tf.nn.log_uniform_candidate_sampler(tf.constant([[1], [3]], tf.int64), 1, 4, False, 10, seed=6)),
        [lambda v: _candidates(v) and len(set(v)) == 4, lambda v: v.shape == (2, 1), lambda v: v.shape == (4,),
         _candidates, lambda v: v.shape == (2, 1) and (v > 0).all(), lambda v: v.shape == (4,) and (v > 0).all()]),
}


@pytest.mark.parametrize("name", sorted(RANDOM_CASES))
def test_random_ops_draw_in_tf_with_the_seeds(tf_peer, name):
    """TF draws its own numbers (its Philox streams are not pygrad's), from the same distribution
    and seeds, the same ones in every session; pygrad's stream counters are not written."""
    build, checks = RANDOM_CASES[name]
    graph, feeds, stages = _build(lambda p: build(p(X, dynamic=True)))
    ours = _run_pygrad(graph, feeds, stages)[-1]
    data = graph.as_graph_def(add_shapes=True).SerializeToString()
    theirs, again = (_run_tf(tf_peer, data, feeds, stages)[-1] for _ in range(2))
    for check, a, b, c in zip(checks, ours, theirs, again):
        assert check(np.asarray(a)) and check(np.asarray(b)), (a, b)
        assert np.asarray(a).shape == np.asarray(b).shape and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(b, c)
    nodes = {n.name: n for n in tf_peer.GraphDef.FromString(data).node}
    assert not [n for n in nodes if "counter" in n]
    for op in graph.get_operations():
        if "seed2" in op.attrs:
            assert (nodes[op.name].attr["seed"].i, nodes[op.name].attr["seed2"].i) == (op.attrs["seed"],
                                                                                       op.attrs["seed2"])


# ---------------------------------------------------------------- every op exports, or is listed

# Changing this set is a deliberate act, as the op-identity table's NO_TF_COUNTERPART is.
NOT_EXPORTABLE = {
    "PyFunc": "TF's PyFunc calls a Python function registered in the process that built its graph",
    "IteratorGetNext": "a dataset iterator: in TF a resource made from the dataset's graph (its functions)",
    "MakeIterator": "a dataset iterator's initializer (see IteratorGetNext)",
    "IteratorToStringHandle": "a dataset iterator's string handle (see IteratorGetNext)",
    "IteratorGetNextFromStringHandle": "the feedable iterator's get_next (see IteratorGetNext)",
    "ParseExampleV2": "its feature keys become string Const inputs; the export moves int attributes to inputs only",
    **{t: "a queue's op: in TF its input is the handle of a queue resource (FIFOQueueV2, ...), which pygrad's "
          "Python queue object stands for" for t in ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                                                     "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2",
                                                     "QueueSizeV2", "QueueIsClosedV2")},
    **{t: "a reader's op: in TF its inputs are reader and queue resource handles, which pygrad's Python objects "
          "stand for" for t in ("ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2",
                                "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2")},
    "CountUpTo": "TF's takes the counter variable as a reference input; pygrad's runs read and increment it",
    "ParseSequenceExampleV2": "its feature keys become string Const inputs (as ParseExampleV2's)",
    **{t: "a lookup table's op: in TF its input is the handle of a table resource (HashTableV2), which pygrad's "
          "Python table object stands for" for t in ("InitializeTableV2", "InitializeTableFromTextFileV2",
                                                     "LookupTableFindV2", "LookupTableSizeV2")},
    **{t: "tf.train.batch's map of SparseTensors: in TF a resource of the session (SparseTensorsMap)"
       for t in ("AddSparseToTensorsMap", "AddManySparseToTensorsMap", "TakeManySparseFromTensorsMap")},
    "IfInPython": "a tf.cond whose branches run Python ops (py_func, ...), which a GraphDef cannot hold",
    "WhileInPython": "a tf.while_loop whose body runs Python ops (py_func, ...), which a GraphDef cannot hold",
    **{t: "SyncReplicasOptimizer's step on its ps task (train/sync_replicas.py): TF builds it from conditional "
          "accumulators and a token queue, resources of the session" for t in ("SyncReplicasAccumulate",
                                                                               "SyncReplicasToken")},
}


def test_every_op_exports_or_is_listed():
    """Each op type of the op-identity table is in a graph TF ran above, or is listed here as not
    exportable, with its reason; a new op without an export path fails this test."""
    seen = set()
    for build in [*CASES.values(), *(lambda p, b=b: b(p(X, dynamic=True)) for b, _ in RANDOM_CASES.values())]:
        graph, _, _ = _build(build)
        seen |= {op.type for op in graph.get_operations()}
    assert sorted(set(TABLE) - seen - set(NOT_EXPORTABLE)) == []
    assert sorted(seen & set(NOT_EXPORTABLE)) == []


def _unexportable_graph():
    x = tf.placeholder(tf.float32, [3], name="x")
    tf.py_func(lambda a: a * 2, [x], tf.float32)
    tf.parse_single_example(tf.constant(b""), {"f": tf.FixedLenFeature([], tf.float32, 1.0)})
    q = tf.FIFOQueue(3, [tf.string], shapes=[[]])
    [q.enqueue("a"), q.enqueue_many([["b"]]), q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(2), q.close(),
     q.size(), q.is_closed()]
    reader = tf.TextLineReader()
    [reader.read(q), reader.read_up_to(q, 2), reader.num_records_produced(), reader.num_work_units_completed(),
     reader.reset(), tf.count_up_to(tf.Variable(tf.constant(0, tf.int64)), 2)]
    iterator = tf.data.Dataset.from_tensor_slices(np.arange(4.0, dtype=np.float32)).make_initializable_iterator()
    handle = iterator.string_handle()
    tf.data.Iterator.from_string_handle(handle, iterator.output_types).get_next()
    tf.parse_single_sequence_example(tf.constant(b""), {"c": tf.FixedLenFeature([], tf.float32, 1.0)})
    table = tf.contrib.lookup.index_table_from_tensor(["a"])
    [table.lookup(tf.constant(["a"])), table.size(), tf.contrib.lookup.index_table_from_file("vocab.txt").size()]
    tf.train.batch([tf.SparseTensor([[0]], ["x"], [1])], 1)
    tf.train.batch([tf.SparseTensor([[0, 0]], ["x"], [1, 1])], 1, enqueue_many=True)
    tf.cond(x[0] > 0, lambda: tf.py_func(lambda a: a, [x], tf.float32), lambda: x)
    tf.while_loop(lambda i: i < 2, lambda i: tf.reshape(tf.py_func(lambda k: k + 1, [i], tf.int32), []), [0])
    w = tf.Variable([1.0])
    tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 1).minimize(
        tf.reduce_sum(w * x[0]), global_step=tf.train.get_or_create_global_step())
    return iterator.get_next()


def test_an_unexportable_op_raises_naming_it_and_its_line():
    graph = tf.get_default_graph()
    _unexportable_graph()
    listed = [op for op in graph.get_operations() if op.type in NOT_EXPORTABLE
              and op._control_flow_context is None]  # (an op of a cond or loop is written with it)
    assert {op.type for op in listed} == set(NOT_EXPORTABLE)
    for op in listed:  # the graph from op on: op is the first one written
        with pytest.raises(NotExportableError, match=rf"{op.type} '{op.name}'.*\n.*test_graph_def_export.py:\d+"):
            graph_def(graph, from_version=graph.get_operations().index(op))


def test_tensorboard_gets_a_picture_of_any_graph(tmp_path):
    """FileWriter's graph: the ops TF cannot run from a GraphDef are nodes of their type."""
    _unexportable_graph()
    with tf.summary.FileWriter(str(tmp_path), tf.get_default_graph()):
        pass
    events = list(tf.summary.summary_iterator(tf.summary.event_files(str(tmp_path))[0]))
    nodes = tf.GraphDef.FromString(events[1].graph_def).node
    assert {TABLE[t].type or t for t in NOT_EXPORTABLE} <= {n.op for n in nodes}  # TF's op types, where they exist
    assert {n.op for n in nodes if n.name == "x"} == {"Placeholder"}


def test_tf_input_order_and_types_are_tfs(tf_peer):
    """The facts graph_def.py carries over from TF's OpDefs: input orders and input type attributes."""
    from tensorflow.python.framework import op_def_registry
    for tf_type, order in TF_INPUT_ORDER.items():
        assert [a.name for a in op_def_registry.get(tf_type).input_arg] == order.split(), tf_type
    for (tf_type, name), attr in TF_INPUT_TYPE.items():
        assert {a.name: a.type_attr for a in op_def_registry.get(tf_type).input_arg}[name] == attr, (tf_type, name)


# ---------------------------------------------------------------- training in TF from pygrad's GraphDef


def _mlp():
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    h = tf.layers.dense(x, 8, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 3)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    rng = np.random.RandomState(1)
    return loss, {"x:0": rng.standard_normal((16, 6)).astype(np.float32),
                  "labels:0": rng.randint(0, 3, 16).astype(np.int32)}


def _convnet():
    x = tf.placeholder(tf.float32, [None, 8, 8, 2], name="x")
    labels = tf.placeholder(tf.float32, [None, 4], name="labels")
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 3, 3, strides=2, padding="valid", activation=tf.nn.tanh)
    logits = tf.layers.dense(tf.reshape(h, [-1, 3]), 4)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    rng = np.random.RandomState(2)
    return loss, {"x:0": rng.standard_normal((5, 8, 8, 2)).astype(np.float32),
                  "labels:0": np.eye(4, dtype=np.float32)[rng.randint(0, 4, 5)]}


def _lstm():
    """tf.nn.dynamic_rnn: a loop whose gradient pops the forward loop's values from stacks."""
    x = tf.placeholder(tf.float32, [None, 5, 3], name="x")
    out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(4), x, dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(out[:, -1] - 0.5))
    return loss, {"x:0": np.random.RandomState(3).standard_normal((2, 5, 3)).astype(np.float32)}


@pytest.mark.parametrize("model", [_mlp, _convnet, _lstm])
def test_five_adam_steps_in_tf_are_pygrads(tf_peer, model):
    """A model and its Adam training op, exported: TF, its variables assigned pygrad's initial
    values, takes the same five steps (gradients and Adam's slots included): same losses, same
    variables after. The initial weights are seeded, so that every run compares the same five
    steps: Adam divides by the root of its second moment, so a gradient near zero turns a rounding
    difference between the two libraries into a visible step, and an unseeded run's weights can
    land there (the suite failed once on the fifth loss, 8e-5 apart; 400 runs of the test alone
    stayed within 2.4e-7)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        loss, feeds = model()
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
        variables = tf.global_variables()
        with tf.Session() as s:
            s.run(init)
            start = s.run(variables)
            feed = {graph.get_tensor_by_name(k): v for k, v in feeds.items()}
            losses = [s.run([loss, train], feed)[0] for _ in range(5)]
            end = s.run(variables)
    g = tf_peer.Graph()
    with g.as_default():
        tf_peer.import_graph_def(tf_peer.GraphDef.FromString(graph.as_graph_def().SerializeToString()), name="")
        assigns = [tf_peer.assign(g.get_tensor_by_name(v.name), value) for v, value in zip(variables, start)]
        with tf_peer.Session() as s:
            s.run(init.name)
            s.run(assigns)
            tf_losses = [s.run([loss.name, train.name], feeds)[0] for _ in range(5)]
            tf_end = s.run([v.name for v in variables])
    np.testing.assert_allclose(losses, tf_losses, rtol=1e-5)
    assert len(variables) > 4 and all(np.any(a != b) for a, b in zip(start[:2], end[:2]))
    # atol 1e-5, a thousandth of one Adam step (0.01): a gradient near zero, whose rounding the two
    # libraries' summation orders differ in, moves its parameter by a step of Adam's own scale.
    for v, ours, theirs in zip(variables, end, tf_end):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, err_msg=v.name)


# ---------------------------------------------------------------- printing, versions, devices


def _printed(capfd):
    out, err = capfd.readouterr()
    noise = ("WARNING: All log messages", "I0000", "E0000", "W0000")
    return out, [line for line in err.splitlines() if not line.startswith(noise)]


def test_print_ops_print_in_tf_what_they_print_in_pygrad(tf_peer, capfd):
    """tf.Print (to stderr) and tf.print (its text, a template of the parts, StringFormat, PrintV2)."""
    graph = tf.get_default_graph()
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    fetches = [tf.Print(x, [x, tf.shape(x)], "x: ", summarize=4), tf.print("x is", x, {"k": 1}, "{}", x[0] * 2,
                                                                          output_stream=sys.stdout, summarize=2)]
    feeds = {"x:0": X[:2, :3]}
    _printed(capfd)
    _run_pygrad(graph, feeds, [fetches])
    ours = _printed(capfd)
    _run_tf(tf_peer, graph.as_graph_def().SerializeToString(), feeds, [fetches])
    assert _printed(capfd) == ours and ours[0].startswith("x is [[") and ours[1][0].startswith("x: [[")


def test_from_version_writes_the_ops_added_since(tf_peer):
    x = tf.placeholder(tf.float32, [3, 4], name="x")
    graph = tf.get_default_graph()
    version = graph.version
    with tf.device("/cpu:0"):
        y = tf.reduce_sum(x * 2.0, 1, name="y")
    names = [n.name for n in graph.as_graph_def(from_version=version).node]
    assert names == ["Const", "mul", "y/reduction_indices", "y"]
    full = graph_def(graph)
    assert [n.device for n in full.node if n.name == "y"] == ["/device:CPU:0"]  # TF's canonical name
    g = tf_peer.Graph()
    with g.as_default(), tf_peer.device("/cpu:0"):
        tf_peer.reduce_sum(tf_peer.placeholder(tf_peer.float32, [3, 4]) * 2.0, 1, name="y")
    assert g.get_operation_by_name("y").device == "/device:CPU:0"
    g = tf_peer.Graph()
    with g.as_default():
        tf_peer.import_graph_def(tf_peer.GraphDef.FromString(full.SerializeToString()), name="")
        with tf_peer.Session() as s:
            np.testing.assert_allclose(s.run(y.name, {"x:0": X}), (X * 2).sum(1), rtol=1e-6)
