"""tf.feature_column against TensorFlow 1's: for each kind of column and combinations of them,
input_layer and linear_model build TF's variables (names, shapes, order) and, with TF's variable
values copied in, give TF's outputs and gradients (1e-5), on dense and sparse, string and integer
features. Indicator outputs show the ids exactly: hash buckets and crosses are TF's bit for bit."""
import numpy as np
import pytest

import pygrad as tf
from fc_check import compare, const_features

FEATS = dict(
    price=np.array([[1.5, 0.25], [3.0, -1.0], [-2.0, 7.5], [0.0, 2.0]], np.float32),
    age=np.array([18, 35, 70, 40], np.int64),
    rate=np.array([0.1, 0.9, 0.5, 0.3], np.float64),
    city=([[0, 0], [0, 1], [2, 0], [3, 0], [3, 1], [3, 2]],
          np.array([b"paris", b"rome", b"oslo", b"rome", b"lima", b"paris"], object), [4, 3]),
    word=np.array([["a", "b"], ["c", ""], ["", ""], ["zz", "a"]]),
    n=np.array([[1, -1], [4, 2], [-1, -1], [0, 9]], np.int64),
    n32=np.array([[3], [1], [-1], [2]], np.int32),
    code=([[0, 0], [1, 0], [1, 1], [3, 0]], np.array([7, -3, 123456789, 7], np.int64), [4, 2]),
    wt=np.array([[0.5, 0.0], [2.0, 1.0], [0.0, 0.0], [1.5, 0.25]], np.float32),
    tag=np.array([b"x", b"y", b"x", b""], object),
)
features = const_features(**FEATS)


def _numeric(m):
    fc = m.feature_column
    return [fc.numeric_column("price", shape=(2,)), fc.numeric_column("age", dtype=m.int64, normalizer_fn=lambda x: x / 10),
            fc.numeric_column("rate", dtype=m.float64)]


def _age(fc):
    return fc.bucketized_column(fc.numeric_column("age"), [20, 40, 60])


def _price_buckets(fc):
    return fc.bucketized_column(fc.numeric_column("price", shape=(2,)), [-1.0, 0.25, 2.0])


def _ids(m):
    """One of each categorical kind (the name, the column)."""
    fc = m.feature_column
    return {
        "identity": fc.categorical_column_with_identity("n", 10),
        "identity_default": fc.categorical_column_with_identity("n", 5, default_value=0),
        "identity_int32": fc.categorical_column_with_identity("n32", 4),
        "vocab_strings": fc.categorical_column_with_vocabulary_list("word", ["a", "b", "c"], num_oov_buckets=2),
        "vocab_default": fc.categorical_column_with_vocabulary_list("word", ["b", "a"], default_value=1),
        "vocab_ints": fc.categorical_column_with_vocabulary_list("code", [7, 123456789, 5], num_oov_buckets=3),
        "hash_sparse_strings": fc.categorical_column_with_hash_bucket("city", 10),
        "hash_dense_strings": fc.categorical_column_with_hash_bucket("word", 7),
        "hash_sparse_ints": fc.categorical_column_with_hash_bucket("code", 13, dtype=m.int64),
        "hash_dense_ints": fc.categorical_column_with_hash_bucket("n", 5, dtype=m.int64),
        "bucketized": _price_buckets(fc),
        "cross_strings": fc.crossed_column(["city", "word"], 17),
        "cross_mixed": fc.crossed_column(["tag", _age(fc), fc.categorical_column_with_identity("n", 10)], 1000,
                                         hash_key=12345),
        "cross_nested": fc.crossed_column([fc.crossed_column(["city", "tag"], 50), "word"], 23),
        "cross_vocab": fc.crossed_column([fc.categorical_column_with_vocabulary_list("word", ["a", "c"]), "code"],
                                         31),
        "weighted": fc.weighted_categorical_column(fc.categorical_column_with_identity("n", 10), "wt"),
    }


IDS = sorted(_ids(tf))


@pytest.mark.parametrize("kind", IDS)
def test_indicator_column_ids_are_tfs(tf_peer, kind):
    """The multi-hot of each kind's ids, exactly TF's: the same ids for every feature."""
    out = compare(tf_peer, lambda m, f: m.feature_column.input_layer(
        f, [m.feature_column.indicator_column(_ids(m)[kind])]), features, tol=dict(rtol=0, atol=0))
    assert out.shape[0] == 4 and out.any()


@pytest.mark.parametrize("kind", IDS)
def test_linear_model_of_each_categorical_column(tf_peer, kind):
    compare(tf_peer, lambda m, f: m.feature_column.linear_model(f, [_ids(m)[kind]]), features)


@pytest.mark.parametrize("combiner", ["mean", "sum", "sqrtn"])
def test_embedding_columns(tf_peer, combiner):
    """Embeddings of several kinds of ids (weighted too), one combiner, with max_norm on one."""
    def case(m, f):
        fc, ids = m.feature_column, _ids(m)
        return fc.input_layer(f, [
            fc.embedding_column(ids["hash_sparse_strings"], 3, combiner=combiner),
            fc.embedding_column(ids["vocab_strings"], 2, combiner=combiner, max_norm=0.5, trainable=False),
            fc.embedding_column(ids["weighted"], 4, combiner=combiner),
            fc.embedding_column(ids["cross_mixed"], 2, combiner=combiner,
                                initializer=m.random_uniform_initializer(-1, 1))])
    compare(tf_peer, case, features)


def test_input_layer_of_dense_columns(tf_peer):
    def case(m, f):
        fc = m.feature_column
        return fc.input_layer(f, _numeric(m) + [_age(fc), _price_buckets(fc),
                                                 fc.indicator_column(_ids(m)["weighted"])])
    out = compare(tf_peer, case, features)
    assert out.shape == (4, 2 + 1 + 1 + 4 + 8 + 10)


def test_linear_model_of_every_kind_with_units_and_combiners(tf_peer):
    for combiner in ("sum", "mean", "sqrtn"):
        def case(m, f, combiner=combiner):
            fc = m.feature_column
            columns = _numeric(m) + [_age(fc), fc.embedding_column(_ids(m)["vocab_ints"], 2),
                                      fc.indicator_column(_ids(m)["cross_strings"])]
            columns += [c for k, c in _ids(m).items() if k in ("weighted", "hash_sparse_strings", "bucketized",
                                                                 "cross_mixed", "vocab_default")]
            return fc.linear_model(f, columns, units=3, sparse_combiner=combiner)
        compare(tf_peer, case, features)


def test_shared_embedding_columns(tf_peer):
    """One variable, named after the columns, made by the first column (by name) and shared."""
    def case(m, f):
        fc = m.feature_column
        a = fc.categorical_column_with_identity("n", 10)
        b = fc.weighted_categorical_column(fc.categorical_column_with_identity("n32", 10), "wt2")
        shared = fc.shared_embedding_columns([b, a], 3, combiner="sum")
        named = fc.shared_embedding_columns([fc.categorical_column_with_hash_bucket("city", 6),
                                             fc.categorical_column_with_hash_bucket("word", 6)], 2,
                                            shared_embedding_collection_name="words")
        return fc.input_layer(f, shared + named)
    feats = const_features(**FEATS, wt2=np.array([[1.0], [2.0], [0.0], [3.0]], np.float32))
    compare(tf_peer, case, feats)


def test_vocabulary_file_columns(tf_peer, tmp_path):
    path = str(tmp_path / "vocab.txt")
    with open(path, "w") as f:
        f.write("rome\nparis\nlima\nberlin\n")
    ints = str(tmp_path / "ints.txt")
    with open(ints, "w") as f:
        f.write("7\n-3\n")

    def case(m, f):
        fc = m.feature_column
        return fc.input_layer(f, [
            fc.indicator_column(fc.categorical_column_with_vocabulary_file("city", path, num_oov_buckets=2)),
            fc.indicator_column(fc.categorical_column_with_vocabulary_file("word", path, vocabulary_size=2,
                                                                           default_value=0)),
            fc.embedding_column(fc.categorical_column_with_vocabulary_file("code", ints, dtype=m.int64), 2)])
    compare(tf_peer, case, features)


def test_sparse_and_rank_one_inputs(tf_peer):
    """A rank-1 dense feature and a rank-1 SparseTensor are [batch, 1]; a 3-d dense numeric is flattened."""
    feats = const_features(
        s=([[0], [2]], np.array([b"u", b"v"], object), [3]), d=np.array([2, 0, 1], np.int64),
        cube=np.arange(12, dtype=np.float32).reshape(3, 2, 2))

    def case(m, f):
        fc = m.feature_column
        return fc.input_layer(f, [fc.indicator_column(fc.categorical_column_with_hash_bucket("s", 4)),
                                  fc.embedding_column(fc.categorical_column_with_identity("d", 3), 2),
                                  fc.numeric_column("cube", shape=(2, 2))])
    compare(tf_peer, case, feats)


def test_fed_sparse_and_string_features(tf_peer):
    """Features fed at run time: SparseTensors and dense tensors of unknown rank (a rank-1 one is
    [batch, 1]), a string placeholder of unknown batch."""
    def features(m):
        sp, sp1 = m.sparse_placeholder(m.string), m.sparse_placeholder(m.int64)
        words, price = m.placeholder(m.string, [None, 2]), m.placeholder(m.float32)
        feed = {sp: m.SparseTensorValue([[0, 0], [1, 0], [1, 1]], [b"paris", b"oslo", b"rome"], [3, 2]),
                sp1: m.SparseTensorValue([[0], [2]], [3, 1], [3]), words: FEATS["word"][:3], price: [0.5, 1.0, 2.0]}
        return {"city": sp, "n": sp1, "word": words, "price": price}, feed

    def case(m, f):
        fc = m.feature_column
        ids = [fc.categorical_column_with_hash_bucket("city", 10), fc.crossed_column(["city", "word"], 9),
               _ids(m)["vocab_strings"], _ids(m)["identity"]]
        return m.concat([fc.linear_model(f, ids + [fc.numeric_column("price")], units=2), fc.input_layer(
            f, [fc.embedding_column(ids[0], 2), fc.indicator_column(ids[3]), fc.numeric_column("price")])], 1)
    compare(tf_peer, case, features)


def test_make_parse_example_spec_and_parsed_examples(tf_peer):
    """The spec is TF's; Examples parsed with it feed input_layer and linear_model as in TF."""
    ex = tf_peer.train

    def example(price, city, n, wt):
        feature = {"price": ex.Feature(float_list=ex.FloatList(value=price)),
                   "city": ex.Feature(bytes_list=ex.BytesList(value=city)),
                   "n": ex.Feature(int64_list=ex.Int64List(value=n)),
                   "wt": ex.Feature(float_list=ex.FloatList(value=wt))}
        if not price:
            del feature["price"]
        return ex.Example(features=ex.Features(feature=feature)).SerializeToString()
    records = [example([1.0, 2.0], [b"a", b"b"], [3, 1], [0.5, 2.0]), example([], [b"c"], [0], [1.0]),
               example([-1.0, 0.5], [], [], [])]

    def columns(fc):
        n = fc.categorical_column_with_identity("n", 5)
        return [fc.numeric_column("price", shape=(2,), default_value=(9.0, 8.0)),
                fc.embedding_column(fc.categorical_column_with_hash_bucket("city", 8), 3),
                fc.embedding_column(fc.weighted_categorical_column(n, "wt"), 2),
                fc.crossed_column(["city", n], 20)]

    def case(m, f):
        fc = m.feature_column
        cols = columns(fc)
        parsed = m.parse_example(f["records"], fc.make_parse_example_spec(cols))
        return m.concat([fc.input_layer(parsed, cols[:3]), fc.linear_model(parsed, cols, units=2)], 1)
    assert tf.feature_column.make_parse_example_spec(columns(tf.feature_column)) == {
        "price": tf.FixedLenFeature((2,), tf.float32, (9.0, 8.0)), "city": tf.VarLenFeature(tf.string),
        "n": tf.VarLenFeature(tf.int64), "wt": tf.VarLenFeature(tf.float32)}
    compare(tf_peer, case, const_features(records=np.array(records, object)))


def test_column_names_and_cols_to_vars(tf_peer):
    fc, peer_fc = tf.feature_column, tf_peer.feature_column
    for a, b in zip(_ids(tf).values(), _ids(tf_peer).values()):
        assert (a.name, a._num_buckets) == (b.name, b._num_buckets)
        assert fc.indicator_column(a).name == peer_fc.indicator_column(b).name
        assert fc.embedding_column(a, 2).name == peer_fc.embedding_column(b, 2).name
    with tf.Graph().as_default():
        cols_to_vars = {}
        column = fc.categorical_column_with_identity("n", 10)
        fc.linear_model({"n": tf.constant(FEATS["n"])}, [column], cols_to_vars=cols_to_vars)
        assert [v.name for v in cols_to_vars[column]] == ["linear_model/n/weights:0"]
        assert [v.name for v in cols_to_vars["bias"]] == ["linear_model/bias_weights:0"]
        assert [v.name for v in tf.trainable_variables()] == ["linear_model/n/weights:0", "linear_model/bias_weights:0"]
        assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 2


def test_two_models_in_one_graph_have_tfs_scopes(tf_peer):
    def case(m, f):
        fc = m.feature_column
        columns = [fc.embedding_column(_ids(m)["identity"], 2), _numeric(m)[0]]
        with m.variable_scope("tower"):
            a = fc.input_layer(f, columns)
        b = fc.input_layer(f, columns)
        c = fc.linear_model(f, [_ids(m)["identity"]])
        with m.variable_scope("tower"):
            d = fc.linear_model(f, [_ids(m)["identity"]])
        e = fc.linear_model(f, [_ids(m)["identity"]])  # TF's "linear_model_1/n_1/weights"
        return m.concat([a, b, c, d, e], 1)
    compare(tf_peer, case, features)
