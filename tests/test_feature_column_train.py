"""tf.feature_column in training, and the ops under it, against TensorFlow 1: a linear_model and a
network on input_layer train with Ftrl and Adagrad to TF's losses from TF's initial values; TF's
Bucketize and SparseCross (tf.sparse.cross, tf.sparse.cross_hashed) give TF's values; bad columns
and features raise errors that name the column and the op."""
import warnings

import numpy as np
import pytest

import pygrad as tf
from fc_check import const_features

FEATS = dict(
    price=np.array([[1.5], [3.0], [-2.0], [0.5], [2.5], [-1.0]], np.float32),
    city=np.array([["paris", "rome"], ["oslo", ""], ["rome", ""], ["lima", "paris"], ["", ""], ["oslo", "rome"]]),
    n=np.array([[1, 3], [4, -1], [0, 2], [-1, -1], [3, 3], [2, 0]], np.int64),
    wt=np.array([[0.5, 1.0], [2.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.5, 0.5], [1.0, 2.0]], np.float32),
)
LABELS = np.array([[1.0], [0.0], [1.0], [0.0], [1.0], [1.0]], np.float32)


def _columns(fc):
    price = fc.numeric_column("price")
    city = fc.categorical_column_with_hash_bucket("city", 12)
    n = fc.categorical_column_with_identity("n", 5)
    return price, city, n, fc.bucketized_column(price, [-1.0, 0.0, 2.0])


def _linear(m, f):
    fc = m.feature_column
    price, city, n, buckets = _columns(fc)
    logits = fc.linear_model(f, [price, city, buckets, fc.weighted_categorical_column(n, "wt"),
                                 fc.crossed_column(["city", buckets], 20)])
    loss = m.reduce_mean(m.nn.sigmoid_cross_entropy_with_logits(labels=m.constant(LABELS), logits=logits))
    return loss, m.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, l2_regularization_strength=0.02)


def _dnn(m, f):
    fc = m.feature_column
    price, city, n, buckets = _columns(fc)
    net = fc.input_layer(f, [price, buckets, fc.embedding_column(city, 4), fc.indicator_column(n),
                             fc.embedding_column(fc.weighted_categorical_column(n, "wt"), 3, combiner="sqrtn")])
    for i, width in enumerate((8, 1)):  # tf.layers.dense, which Keras 3 takes from TF
        with m.variable_scope(f"dense_{i}"):
            w = m.get_variable("kernel", [net.shape.as_list()[1], width])
            b = m.get_variable("bias", [width], initializer=m.constant_initializer(0.1))
            net = m.matmul(net, w) + b
            out, net = net, m.nn.relu(net)
    return m.reduce_mean(m.square(out - m.constant(LABELS))), m.train.AdagradOptimizer(0.2)


def _train(m, build, steps, values=None):
    graph = m.Graph()
    with graph.as_default():
        feats, _ = const_features(**FEATS)(m)
        m.set_random_seed(0)
        loss, opt = build(m, feats)
        model = m.global_variables()
        train_op = opt.minimize(loss)
        with m.Session(graph=graph) as s:
            s.run([m.global_variables_initializer(), m.tables_initializer()])
            if values is None:
                values = dict(zip([v.name for v in model], s.run(model)))
            for v in model:
                v.load(values[v.name], s)
            losses = [s.run([loss, train_op])[0] for _ in range(steps)]
            return values, losses, s.run(model)


@pytest.mark.parametrize("build", [_linear, _dnn], ids=["linear_model-ftrl", "input_layer-dnn-adagrad"])
def test_training_gives_tfs_losses(tf_peer, build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, theirs, their_final = _train(tf_peer, build, 6)
    _, ours, our_final = _train(tf, build, 6, values)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert theirs[-1] < theirs[0]
    for a, b in zip(our_final, their_final):
        np.testing.assert_allclose(a, b, rtol=3e-5, atol=3e-6)


# ---------------------------------------------------------------- the ops
def _run_both(peer, build):
    with tf.Graph().as_default(), tf.Session() as s:
        ours = s.run(build(tf))
    with peer.Graph().as_default(), peer.Session() as s:
        theirs = s.run(build(peer))
    return ours, theirs


def _crosses(m):
    a = m.SparseTensor([[0, 0], [1, 0], [1, 1], [3, 0]], ["a", "b", "c", "d"], [4, 2])
    b = m.SparseTensor([[0, 0], [1, 0], [2, 0], [3, 0], [3, 1]], np.array([-3, 5, 7, 1 << 40, 0], np.int64), [4, 2])
    d = m.constant([["f", "x"], ["g", "y"], ["h", "z"], ["i", "w"]])
    i32 = m.constant([[1], [2], [3], [-4]], m.int32)
    out = []
    for sp in (m.sparse.cross_hashed([a, d, b], num_buckets=1000), m.sparse.cross_hashed([a, d]),
               m.sparse.cross_hashed([b, i32], num_buckets=7, hash_key=99), m.sparse.cross([a, b, d]),
               m.sparse.cross([d, a])):
        out += [sp.indices, sp.values, sp.dense_shape]
    return out


def test_sparse_cross_is_tfs(tf_peer):
    ours, theirs = _run_both(tf_peer, _crosses)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_bucketize_is_tfs(tf_peer):
    from tensorflow.python.ops import math_ops as peer_math
    from pygrad.ops.math_ops import bucketize
    x = np.array([[-1.5, 0, 0.5, 1, 2.0000001, 1e9]])
    bounds = [0.0, 1.0, 2.0000001, 10.0]

    def build(m):
        fn = bucketize if m is tf else peer_math._bucketize
        return [fn(m.constant(x.astype(t)), boundaries=bounds) for t in (np.float32, np.float64, np.int32, np.int64)]
    ours, theirs = _run_both(tf_peer, build)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype == np.int32
        np.testing.assert_array_equal(a, b)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Bucketize 'Bucketize': Expected sorted boundaries"):
        bucketize(tf.constant([1.0]), [2.0, 1.0])


def test_sparse_cross_checks_batch_sizes():
    a = tf.sparse_placeholder(tf.string, shape=[None, None])
    cross = tf.sparse.cross_hashed([a, tf.constant([["x"], ["y"]])], num_buckets=5)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="SparseCross 'SparseCross': Expected batch size 3 got 2 at dense tensor 0"):
            s.run(cross.values, {a: tf.SparseTensorValue([[0, 0]], [b"a"], [3, 1])})
        assert len(s.run(cross.values, {a: tf.SparseTensorValue([[1, 0]], [b"a"], [2, 1])})) == 1


# ---------------------------------------------------------------- errors
fc = tf.feature_column


@pytest.mark.parametrize("make, match", [
    (lambda: fc.bucketized_column(fc.numeric_column("x"), [2, 1]), "boundaries must be a sorted list"),
    (lambda: fc.bucketized_column(fc.numeric_column("x", shape=(2, 2)), [1]), "must be one-dimensional"),
    (lambda: fc.categorical_column_with_hash_bucket("h", 0), "hash_bucket_size must be at least 1.*key: h"),
    (lambda: fc.categorical_column_with_vocabulary_list("v", ["a", "a"]), "Duplicate keys.*column_name: v"),
    (lambda: fc.categorical_column_with_vocabulary_list("v", ["a"], default_value=0, num_oov_buckets=1),
     "Can't specify both num_oov_buckets and default_value in v"),
    (lambda: fc.categorical_column_with_identity("i", 3, default_value=3), r"default_value 3 not in range \[0, 3\)"),
    (lambda: fc.crossed_column([fc.categorical_column_with_hash_bucket("h", 3), "b"], 5), "not supported for crossing"),
    (lambda: fc.crossed_column(["a"], 5), "keys must be a list with length > 1"),
    (lambda: fc.embedding_column(fc.categorical_column_with_identity("i", 3), 0), "Invalid dimension 0"),
    (lambda: fc.numeric_column("x", shape=(2,), default_value=[1.0]), "shape of default_value must be equal"),
    (lambda: fc.numeric_column("x", dtype=tf.string), "dtype must be convertible to float.*key: x"),
    (lambda: fc.shared_embedding_columns([fc.categorical_column_with_identity("a", 3),
                                          fc.categorical_column_with_identity("b", 4)], 2), "same number of buckets"),
])
def test_bad_columns(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


@pytest.mark.parametrize("build, match", [
    (lambda f: fc.input_layer(f, [fc.categorical_column_with_identity("n", 5)]), "must be a _DenseColumn"),
    (lambda f: fc.input_layer(f, [fc.numeric_column("nope")]), "Feature nope is not in features dictionary"),
    (lambda f: fc.input_layer(f, [fc.numeric_column("price"), fc.numeric_column("price")]),
     "Duplicate feature column name"),
    (lambda f: fc.input_layer({"s": tf.SparseTensor([[0, 0]], [1.0], [1, 1])}, [fc.numeric_column("s")]),
     "numerical column must be a Tensor. SparseTensor is not supported. key: s"),
    (lambda f: fc.linear_model(f, [fc.categorical_column_with_identity("price", 5)]),
     "Invalid input, not integer. key: price"),
    (lambda f: fc.linear_model(f, [fc.categorical_column_with_vocabulary_list("n", ["a"])]),
     "Column dtype and SparseTensors dtype must be compatible. key: n"),
    (lambda f: fc.linear_model(f, [fc.weighted_categorical_column(fc.categorical_column_with_identity("n", 5),
                                                                  "price", dtype=tf.int64)]), "Bad dtype"),
    (lambda f: fc.linear_model({"s": tf.constant(1.0)}, [fc.numeric_column("s")]), "Feature \\(key: s\\) cannot have rank 0"),
    (lambda f: fc.linear_model(f, [fc.numeric_column("price")], sparse_combiner="max"), "sparse_combiner must be one"),
])
def test_bad_features(build, match):
    with tf.Graph().as_default():
        feats, _ = const_features(**FEATS)(tf)
        with pytest.raises((ValueError, TypeError), match=match):
            build(feats)


def test_an_id_out_of_range_fails_the_run_naming_the_lookup():
    with tf.Graph().as_default():
        feats, _ = const_features(**FEATS)(tf)
        out = fc.linear_model(feats, [fc.categorical_column_with_identity("n", 3)])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="n/weighted_sum/.*indices.* = 3 is not in"):
                s.run(out)
