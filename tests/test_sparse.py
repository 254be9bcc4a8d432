"""SparseTensors against TensorFlow: every tf.sparse_* op's values, static shapes and gradients
(sum(w * outputs) wrt the values and the dense operands) equal TF's on the same inputs; fed and
fetched SparseTensorValues; errors with TF's messages; a wide (sparse-input) model trains to TF's
losses."""
import numpy as np
import pytest

import pygrad as tf

F = np.float32
IDS = (np.array([[0, 0], [0, 2], [1, 1], [3, 0], [3, 1], [3, 3]]), np.array([4, 1, 0, 2, 4, 3]), [5, 4])
VALS = np.array([0.5, -1.0, 2.0, 1.5, -0.25, 3.0], F)


def _sp(m, indices, values, shape):
    return m.SparseTensor(m.constant(np.asarray(indices, np.int64)), values, m.constant(np.asarray(shape, np.int64)))


def _flat(m, out):
    """(tensors, rebuild): a case's outputs, SparseTensors as their three parts."""
    outs = out if isinstance(out, (list, tuple)) else [out]
    tensors, layout = [], []
    for o in outs:
        if isinstance(o, m.SparseTensor):
            layout.append((len(tensors), 3, o.shape.as_list() if o.shape.ndims is not None else None))
            tensors += [o.indices, o.values, o.dense_shape]
        else:
            layout.append((len(tensors), 1, o.shape.as_list() if o.shape.ndims is not None else None))
            tensors.append(o)
    return tensors, layout


def _run(m, graph, fn, inputs, seed=0):
    with graph.as_default():
        ts = [m.constant(a) for a in inputs]
        tensors, layout = _flat(m, fn(m, *ts))
        with m.Session(graph=graph) as s:
            values = s.run(tensors)
            floats = [(t, v) for t, v in zip(tensors, values) if np.asarray(v).dtype.kind == "f"]
            grads = []
            wrt = [t for t, a in zip(ts, inputs) if np.asarray(a).dtype.kind == "f"]
            if floats and wrt:
                rng = np.random.default_rng(seed)
                ws = [m.constant(rng.standard_normal(np.shape(v)).astype(np.asarray(v).dtype)) for _, v in floats]
                gs = m.gradients([t for t, _ in floats], wrt, grad_ys=ws)
                grads = s.run([m.convert_to_tensor(g) if g is not None else m.constant(0.0) for g in gs])
            return values, layout, grads


def compare_sparse(peer, fn, inputs, rtol=1e-5):
    tf.reset_default_graph()
    ours, our_layout, our_grads = _run(tf, tf.get_default_graph(), fn, inputs)
    theirs, their_layout, their_grads = _run(peer, peer.Graph(), fn, inputs)
    assert our_layout == their_layout, "static shapes differ from TF's"
    for i, (a, b) in enumerate(zip(ours + our_grads, theirs + their_grads)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"result {i}: {a.dtype} {a.shape}, TF {b.dtype} {b.shape}"
        if b.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6, err_msg=f"result {i}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"result {i}")


def _ids(m, values=None):
    ind, ids, shape = IDS
    return _sp(m, ind, ids.astype(np.int64) if values is None else values, shape)


CASES = {
    "to_dense": (lambda m, v: m.sparse_tensor_to_dense(_ids(m, v), default_value=-1.0), [VALS]),
    "sparse_to_dense_2d": (lambda m, v: m.sparse_to_dense(IDS[0], [5, 4], v, 0.5), [VALS]),
    "sparse_to_dense_1d_scalar": (lambda m: m.sparse_to_dense([1, 3], [5], 7, default_value=-1), []),
    "sparse_to_dense_unordered": (lambda m, v: m.sparse_to_dense([[2, 1], [0, 3]], [3, 4], v, validate_indices=False),
                                  [VALS[:2]]),
    "reorder": (lambda m, v: m.sparse_reorder(_sp(m, [[3, 1], [0, 2], [3, 0], [1, 1]], v, [4, 3])), [VALS[:4]]),
    "reshape": (lambda m, v: m.sparse_reshape(_ids(m, v), [2, -1, 5]), [VALS]),
    "reshape_fed_shape": (lambda m, v: m.sparse_reshape(_ids(m, v), m.constant(np.array([10, 2], np.int64)) * 1),
                          [VALS]),
    "concat_0": (lambda m, v: m.sparse_concat(0, [_ids(m, v), _sp(m, [[0, 3]], v[:1], [2, 4])]), [VALS]),
    "concat_1": (lambda m, v: m.sparse_concat(1, [_ids(m, v), _sp(m, [[0, 0], [4, 1]], v[:2], [5, 2])]), [VALS]),
    "concat_expand": (lambda m, v: m.sparse_concat(-1, [_ids(m, v), _sp(m, [[6, 0]], v[:1], [7, 2])],
                                                   expand_nonconcat_dim=True), [VALS]),
    "add_sparse": (lambda m, v: m.sparse_add(_ids(m, v), _sp(m, [[0, 2], [1, 1], [2, 2]], -v[1:4], [5, 4]), 0.1),
                   [VALS]),
    "add_dense": (lambda m, v, d: m.sparse_add(d, _ids(m, v)), [VALS, np.arange(20, dtype=F).reshape(5, 4)]),
    "reduce_sum_all": (lambda m, v: m.sparse_reduce_sum(_ids(m, v)), [VALS]),
    "reduce_sum_1": (lambda m, v: m.sparse_reduce_sum(_ids(m, v), 1), [VALS]),
    "reduce_sum_0_keep": (lambda m, v: m.sparse_reduce_sum(_ids(m, v), 0, keepdims=True), [VALS]),
    "reduce_sum_neg": (lambda m, v: m.sparse_reduce_sum(_sp(m, [[0, 1, 2], [1, 0, 1]], v[:2], [2, 2, 3]), [-1, 0]),
                       [VALS]),
    "retain": (lambda m, v: m.sparse_retain(_ids(m, v), [True, False, True, True, False, True]), [VALS]),
    "fill_empty_rows": (lambda m, v: list(m.sparse_fill_empty_rows(_ids(m, v), -2.0)), [VALS]),
    "fill_empty_rows_none": (lambda m, v: list(m.sparse_fill_empty_rows(
        m.SparseTensor(m.zeros([0, 2], m.int64), v[:0], m.constant(np.array([3, 2], np.int64))), 1.0)), [VALS]),
    "to_indicator": (lambda m: m.sparse_to_indicator(_ids(m), 6), []),
    "merge": (lambda m, v: m.sparse_merge(_ids(m), _ids(m, v), 6), [VALS]),
    "from_dense": (lambda m, d: m.sparse.from_dense(d), [np.array([[0, 1.5, 0], [2, 0, -1]], F)]),
    "matmul": (lambda m, v, b: m.sparse_tensor_dense_matmul(_ids(m, v), b), [VALS, np.arange(12, dtype=F).reshape(4, 3)]),
    "matmul_adj_a": (lambda m, v, b: m.sparse_tensor_dense_matmul(_ids(m, v), b, adjoint_a=True),
                     [VALS, np.linspace(-1, 1, 15, dtype=F).reshape(5, 3)]),
    "matmul_adj_b": (lambda m, v, b: m.sparse_tensor_dense_matmul(_ids(m, v), b, adjoint_b=True),
                     [VALS, np.linspace(-1, 1, 8, dtype=F).reshape(2, 4)]),
    "matmul_adj_ab": (lambda m, v, b: m.sparse_tensor_dense_matmul(_ids(m, v), b, adjoint_a=True, adjoint_b=True),
                      [VALS, np.linspace(-1, 1, 10, dtype=F).reshape(2, 5)]),
    "segment_sum": (lambda m, d: m.sparse_segment_sum(d, [0, 2, 2, 1], [0, 0, 2, 3]), [np.arange(9, dtype=F).reshape(3, 3)]),
    "segment_mean": (lambda m, d: m.sparse_segment_mean(d, [0, 2, 2, 1], [0, 0, 2, 3]), [np.arange(9, dtype=F).reshape(3, 3)]),
    "segment_sqrt_n": (lambda m, d: m.sparse_segment_sqrt_n(d, [0, 2, 2, 1], [1, 1, 1, 3]),
                       [np.arange(6, dtype=F).reshape(3, 2)]),
    "segment_sum_n": (lambda m, d: m.sparse_segment_sum(d, [0, 1], [0, 2], num_segments=5), [np.ones((3, 2), F)]),
    "mul_dense": (lambda m, v, d: _ids(m, v) * d, [VALS, np.linspace(1, 2, 4, dtype=F)]),
    "div_dense": (lambda m, v, d: _ids(m, v) / d, [VALS, np.linspace(1, 2, 20, dtype=F).reshape(5, 4)]),
    "string_split": (lambda m: m.string_split(["a b  c", "", "de,f"], delimiter=" ,"), []),
    "string_split_keep_empty": (lambda m: m.string_split(["a b  c", "x"], skip_empty=False), []),
    "string_split_chars": (lambda m: m.string_split(["abc", "de"], delimiter=""), []),
    "strings_split": (lambda m: m.strings.split(["a  b c ", " d"]), []),
    "strings_split_sep": (lambda m: m.strings.split(["a<>b<><>c", "d"], sep="<>", maxsplit=1), []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_ops_equal_tensorflow(tf_peer, case):
    fn, inputs = CASES[case]
    compare_sparse(tf_peer, fn, inputs)


def _lookup(m, params, weights, combiner, safe=False, default_id=None):
    ind, ids, shape = IDS
    ids_values = np.array(ids) if not safe else np.array([4, -1, 0, 2, 4, 3])
    sp_ids = _sp(m, ind, ids_values.astype(np.int64), shape)
    sp_w = None if weights is None else _sp(m, ind, weights, shape)
    if safe:
        return m.nn.safe_embedding_lookup_sparse(params, sp_ids, sp_w, combiner=combiner, default_id=default_id)
    return m.nn.embedding_lookup_sparse(params, sp_ids, sp_w, combiner=combiner)


EMB = np.linspace(-1, 1, 15, dtype=F).reshape(5, 3)
WEIGHTS = np.array([1.0, 2.0, 0.5, 1.0, -1.0, 3.0], F)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("safe", [False, True])
def test_embedding_lookups_equal_tensorflow(tf_peer, combiner, weighted, safe):
    if weighted:
        compare_sparse(tf_peer, lambda m, p, w: _lookup(m, p, w, combiner, safe), [EMB, WEIGHTS])
    else:
        compare_sparse(tf_peer, lambda m, p: _lookup(m, p, None, combiner, safe), [EMB])


def test_safe_lookup_default_id(tf_peer):
    compare_sparse(tf_peer, lambda m, p: _lookup(m, p, None, "mean", True, default_id=2), [EMB])


def test_feed_and_fetch_and_static_shapes():
    sp = tf.sparse_placeholder(tf.float32, shape=[None, 4], name="x")
    assert sp.shape.as_list() == [None, 4] and sp.indices.name == "x/indices:0" and sp.dense_shape.name == "x/shape:0"
    dense = tf.sparse_tensor_to_dense(sp)
    value = tf.SparseTensorValue(np.array([[0, 1], [2, 3]]), np.array([1.0, 2.0], F), np.array([3, 4]))
    with tf.Session() as s:
        out = s.run({"d": dense, "sp": sp}, {sp: value})
        np.testing.assert_array_equal(out["d"], [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]])
        assert isinstance(out["sp"], tf.SparseTensorValue)
        np.testing.assert_array_equal(out["sp"].dense_shape, [3, 4])
        np.testing.assert_array_equal(s.run(dense, {sp: ([[1, 0]], [5.0], [2, 4])}), [[0, 0, 0, 0], [5, 0, 0, 0]])
        with pytest.raises(TypeError, match="SparseTensorValue"):
            s.run(dense, {sp: np.zeros(3)})
    with pytest.raises(TypeError):
        tf.convert_to_tensor(sp)


@pytest.mark.parametrize("build, message", [
    (lambda m: m.sparse_to_dense([[0, 1], [0, 0]], [2, 2], [1.0, 2.0]), "is out of order"),
    (lambda m: m.sparse_to_dense([[0, 1], [0, 1]], [2, 2], [1.0, 2.0]), r"indices\[1\] = \[0,1\] is repeated"),
    (lambda m: m.sparse_to_dense([[0, 1], [2, 1]], [2, 2], [1.0, 2.0]),
     r"indices\[1\] = \[2,1\] is out of bounds: need 0 <= index < \[2,2\]"),
    (lambda m: m.sparse_to_dense([[0, 1], [1, 0]], [2, 2], [1.0, 2.0, 3.0]),
     r"sparse_values has incorrect shape \[3\], should be \[\] or \[2\]"),
    (lambda m: m.sparse_concat(1, [m.SparseTensor([[0, 1]], [1.0], [2, 3]), m.SparseTensor([[0, 1]], [1.0], [3, 4])]),
     "Input shapes must match: expected 2 for dimension 0 but got 3 at position 1"),
    (lambda m: m.sparse_tensor_dense_matmul(m.SparseTensor([[0, 5]], [1.0], [2, 3]), np.ones((3, 2), F)),
     r"k \(5\) from index\[0,1\] out of bounds \(>=3\)"),
    (lambda m: m.sparse_segment_sum(np.ones((3, 2), F), [0, 1, 2], [0, 2, 1]), "segment ids are not increasing"),
    (lambda m: m.sparse_segment_sum(np.ones((3, 2), F), [0, 5], [0, 1]), r"Bad: indices\[1\] == 5 out of range \[0, 3\)"),
    (lambda m: m.sparse_reduce_sum(m.SparseTensor([[0, 1]], [1.0], [2, 3]), 5),
     "Invalid reduction dimension 5, for input with 2 dimensions"),
    (lambda m: m.sparse_fill_empty_rows(m.SparseTensor([[5, 1]], [1.0], [2, 3]), 0.0)[0].values,
     r"indices\(0, 0\) is invalid: 5 >= 2"),
])
def test_run_errors_are_tfs(tf_peer, build, message):
    with tf.Session() as s:
        t = build(tf)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            s.run(t)
        assert s.run(tf.constant(1.0)) == 1.0  # the session stays usable
    with tf_peer.Graph().as_default(), tf_peer.Session() as s:
        with pytest.raises(tf_peer.errors.InvalidArgumentError, match=message):
            s.run(build(tf_peer))


def test_graph_errors_are_tfs():
    sp = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 3])
    with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 6 elements to shape \[4, None\]"):
        tf.sparse_reshape(sp, [4, -1])
    with pytest.raises(ValueError, match="At most one dimension can be inferred"):
        tf.sparse_reshape(sp, [-1, -1])
    with pytest.raises(ValueError, match="incompatible"):
        tf.sparse_add(sp, tf.SparseTensor([[0, 1]], [1.0], [2, 4]))
    with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
        tf.sparse_add(tf.constant(1.0), tf.constant(2.0))


def _wide_model(m, steps):
    """A linear model of sparse features (sparse_tensor_dense_matmul) plus an embedding of sparse ids
    (embedding_lookup_sparse), trained by Adagrad: the losses of each step."""
    rng = np.random.RandomState(0)
    batch, features, vocab = 8, 20, 12
    truth = rng.randn(features)  # the labels: the sign of the features' dot product with it
    sp = m.sparse_placeholder(m.float32, shape=[batch, features])
    ids = m.sparse_placeholder(m.int64, shape=[batch, 3])
    y = m.placeholder(m.float32, [batch, 1])
    w = m.Variable(rng.randn(features, 1).astype(F) * 0.1)
    emb = m.Variable(rng.randn(vocab, 4).astype(F) * 0.1)
    v = m.Variable(rng.randn(4, 1).astype(F) * 0.1)
    logits = m.sparse_tensor_dense_matmul(sp, w) + m.matmul(m.nn.embedding_lookup_sparse(emb, ids, None, combiner="sqrtn"), v)
    loss = m.reduce_mean(m.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    train = m.train.AdagradOptimizer(0.5).minimize(loss)
    losses = []
    with m.Session() as s:
        s.run(m.global_variables_initializer())
        for step in range(steps):
            r = np.random.RandomState(step)
            cells = sorted({(i, int(j)) for i in range(batch) for j in r.choice(features, 3, replace=False)})
            id_cells = [(i, j) for i in range(batch) for j in range(1 + i % 3)]
            x = r.rand(len(cells)).astype(F)
            score = np.zeros(batch)
            np.add.at(score, [i for i, _ in cells], x * truth[[j for _, j in cells]])
            feed = {sp: (np.array(cells), x, [batch, features]),
                    ids: (np.array(id_cells), r.randint(0, vocab, len(id_cells)).astype(np.int64), [batch, 3]),
                    y: (score > 0).astype(F).reshape(batch, 1)}
            losses.append(s.run([loss, train], feed)[0])
    return np.array(losses)


def test_a_wide_model_trains_to_tensorflows_losses(tf_peer):
    ours = _wide_model(tf, 30)
    with tf_peer.Graph().as_default():
        theirs = _wide_model(tf_peer, 30)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert ours[-10:].mean() < ours[:10].mean()


def _serialized_examples(m):
    t = m.train
    out = []
    for i in range(4):
        feats = {"tokens": t.Feature(bytes_list=t.BytesList(value=[b"w%d" % j for j in range(i)])),
                 "ids": t.Feature(int64_list=t.Int64List(value=[(3 * i + j) % 7 for j in range(i + 1)])),
                 "w": t.Feature(float_list=t.FloatList(value=[0.5 * j - i for j in range(i + 1)])),
                 "label": t.Feature(int64_list=t.Int64List(value=[i % 2]))}
        if i == 2:
            del feats["tokens"]
        out.append(t.Example(features=t.Features(feature=feats)).SerializeToString())
    return out


def _sparse_features(m):
    return {"tokens": m.VarLenFeature(m.string), "ids": m.VarLenFeature(m.int64),
            "pairs": m.SparseFeature("ids", "w", m.float32, 7), "label": m.FixedLenFeature([], m.int64)}


@pytest.mark.parametrize("single", [False, True])
def test_var_len_and_sparse_features_parse_as_tensorflows(tf_peer, single):
    data = _serialized_examples(tf_peer)

    def parsed(m):
        if single:
            return [m.parse_single_example(m.constant(data[3]), _sparse_features(m))]
        return [m.parse_example(m.constant(data), _sparse_features(m))]

    def fn(m):
        out = parsed(m)[0]
        return [out[k] for k in sorted(out)]
    compare_sparse(tf_peer, fn, [])


def _sequence_examples(m):
    t = m.train
    out = []
    for i in range(3):
        steps = [t.Feature(float_list=t.FloatList(value=[1.0 * s + i, -s])) for s in range(i + 1)]
        words = [t.Feature(bytes_list=t.BytesList(value=[b"w%d" % j for j in range(s % 3)])) for s in range(i + 2)]
        lists = {"frames": t.FeatureList(feature=steps), "words": t.FeatureList(feature=words)}
        if i == 1:
            lists["extra"] = t.FeatureList(feature=[t.Feature(int64_list=t.Int64List(value=[4]))])
        context = {"length": t.Feature(int64_list=t.Int64List(value=[i + 1])),
                   "tags": t.Feature(int64_list=t.Int64List(value=list(range(i))))}
        out.append(t.SequenceExample(context=t.Features(feature=context),
                                     feature_lists=t.FeatureLists(feature_list=lists)).SerializeToString())
    return out


def _sequence_features(m):
    return ({"length": m.FixedLenFeature([], m.int64), "tags": m.VarLenFeature(m.int64),
             "missing": m.FixedLenFeature([2], m.float32, default_value=[0.5, 1.5])},
            {"frames": m.FixedLenSequenceFeature([2], m.float32), "words": m.VarLenFeature(m.string),
             "extra": m.FixedLenSequenceFeature([], m.int64, allow_missing=True)})


@pytest.mark.parametrize("single", [False, True])
def test_sequence_examples_parse_as_tensorflows(tf_peer, single):
    data = _sequence_examples(tf_peer)

    def fn(m):
        context, sequence = _sequence_features(m)
        if single:
            parts = m.parse_single_sequence_example(m.constant(data[2]), context, sequence)
        else:
            parts = m.io.parse_sequence_example(m.constant(data), context, sequence)
        return [d[k] for d in parts for k in sorted(d)]
    compare_sparse(tf_peer, fn, [])


def test_a_required_feature_list_missing_is_tfs_error(tf_peer):
    data = _sequence_examples(tf_peer)[0]
    for m in (tf, tf_peer):
        with m.Graph().as_default(), m.Session() as s:
            _, seq = m.parse_single_sequence_example(m.constant(data), None,
                                                     {"extra": m.FixedLenSequenceFeature([], m.int64)})
            with pytest.raises(m.errors.InvalidArgumentError, match="Feature list 'extra' is required"):
                s.run(seq)


@pytest.mark.parametrize("enqueue_many", [False, True])
def test_sparse_tensors_batch_through_queues_as_tensorflows(tf_peer, enqueue_many):
    data = _serialized_examples(tf_peer)

    def batches(m):
        with m.Graph().as_default():
            if enqueue_many:
                parsed = m.parse_example(m.constant(data), _sparse_features(m))
            else:
                one = m.train.string_input_producer(data, shuffle=False).dequeue()
                parsed = m.parse_single_example(one, _sparse_features(m))
            out = m.train.batch(parsed, batch_size=3, num_threads=1, enqueue_many=enqueue_many)
            assert isinstance(out["tokens"], m.SparseTensor) and out["tokens"].shape.ndims == 2
            with m.Session() as s:
                s.run(m.local_variables_initializer())
                coord = m.train.Coordinator()
                threads = m.train.start_queue_runners(s, coord)
                got = [s.run(out) for _ in range(2)]
                coord.request_stop()
                coord.join(threads)
        return got

    for a, b in zip(batches(tf), batches(tf_peer)):
        assert sorted(a) == sorted(b)
        for k in a:
            for x, y in zip(a[k], b[k]) if isinstance(b[k], tuple) else [(a[k], b[k])]:
                np.testing.assert_array_equal(x, y, err_msg=k)


def test_convert_to_tensor_or_sparse_tensor_as_tensorflow(tf_peer):
    """A SparseTensor passes through, a SparseTensorValue becomes a SparseTensor, anything else a
    Tensor of the dtype asked for; a SparseTensor of another dtype is TF's RuntimeError."""
    def run(m):
        with m.Graph().as_default(), m.Session() as sess:
            sp = _sp(m, *IDS)
            out = [m.convert_to_tensor_or_sparse_tensor(sp), m.convert_to_tensor_or_sparse_tensor(
                m.SparseTensorValue(IDS[0], VALS, IDS[2])), m.convert_to_tensor_or_sparse_tensor([1, 2], m.float64)]
            assert out[0] is sp and isinstance(out[1], m.SparseTensor) and not isinstance(out[2], m.SparseTensor)
            with pytest.raises(RuntimeError, match="float64.*int64"):
                m.convert_to_tensor_or_sparse_tensor(sp, m.float64)
            got = sess.run(out)
            return [(v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()) for v in got[:2]] + [
                got[2].tolist(), got[2].dtype]

    assert run(tf) == run(tf_peer)
