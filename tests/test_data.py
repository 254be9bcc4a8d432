"""tf.data: datasets, iterators and the end of data, against Python references and TensorFlow."""
import numpy as np
import pytest

import pygrad as tf

X = np.arange(24, dtype=np.float32).reshape(12, 2)
Y = np.arange(12, dtype=np.int64)


def ragged(tf, stop):
    """Elements [1], [2, 2], [3, 3, 3], ... up to stop - 1 (int64)."""
    return tf.data.Dataset.from_generator(lambda: (np.full([n], n, np.int64) for n in range(1, stop)),
                                          tf.int64, [None])


def drain(sess, next_element, feed_dict=None, module=tf):
    out = []
    while True:
        try:
            out.append(sess.run(next_element, feed_dict))
        except module.errors.OutOfRangeError:
            return out


def elements(module, build):
    """All elements of the dataset build(module) makes, through a one-shot iterator."""
    with module.Graph().as_default():
        nxt = build(module).make_one_shot_iterator().get_next()
        with module.Session() as sess:
            return drain(sess, nxt, module=module)


PIPELINES = {
    "slices_batch": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).batch(5),
    "slices_dict_map": lambda tf: tf.data.Dataset.from_tensor_slices({"x": X, "y": Y}).map(
        lambda d: (d["x"] * 2.0 + 1.0, d["y"] * 3)),
    "map_filter_batch_drop": lambda tf: tf.data.Dataset.from_tensor_slices(X).map(
        lambda v: tf.reduce_sum(v)).filter(lambda s: s > 5.0).batch(4, drop_remainder=True),
    "repeat_take_skip": lambda tf: tf.data.Dataset.from_tensor_slices(Y).repeat(3).skip(5).take(20),
    "range_args": lambda tf: tf.data.Dataset.range(3, 20, 4),
    "zip_concat": lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(5), tf.data.Dataset.range(10, 20))).concatenate(
        tf.data.Dataset.zip((tf.data.Dataset.range(2), tf.data.Dataset.range(2)))),
    "padded_batch": lambda tf: ragged(tf, 6).padded_batch(2, padded_shapes=[None]),
    "padded_batch_fixed_value": lambda tf: ragged(tf, 4).padded_batch(
        2, padded_shapes=[5], padding_values=tf.constant(-1, tf.int64)),
    "from_tensors_repeat": lambda tf: tf.data.Dataset.from_tensors(X[:3]).repeat(2),
    "batch_unbatch": lambda tf: tf.data.Dataset.from_tensor_slices(X).batch(5).unbatch().take(7),
    "repeat_then_batch": lambda tf: tf.data.Dataset.from_tensor_slices(Y).repeat(2).batch(7),
}

EXPECTED = {
    "slices_batch": [(X[i:i + 5], Y[i:i + 5]) for i in range(0, 12, 5)],
    "slices_dict_map": [(X[i] * 2 + 1, Y[i] * 3) for i in range(12)],
    "map_filter_batch_drop": [np.array([9, 13, 17, 21.]), np.array([25, 29, 33, 37.])],
    "repeat_take_skip": list(np.tile(Y, 3)[5:25]),
    "range_args": [3, 7, 11, 15, 19],
    "zip_concat": [(i, 10 + i) for i in range(5)] + [(0, 0), (1, 1)],
    "padded_batch": [np.array([[1, 0], [2, 2]]), np.array([[3, 3, 3, 0], [4, 4, 4, 4]]),
                     np.array([[5, 5, 5, 5, 5]])],
    "padded_batch_fixed_value": [np.array([[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]]),
                                 np.array([[3, 3, 3, -1, -1]])],
    "from_tensors_repeat": [X[:3], X[:3]],
    "batch_unbatch": list(X[:7]),
    "repeat_then_batch": [np.tile(Y, 2)[i:i + 7] for i in range(0, 24, 7)],
}


def assert_elements_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert isinstance(g, tuple) and len(g) == len(w)
            for a, b in zip(g, w):
                np.testing.assert_array_equal(a, b)
                assert np.asarray(a).dtype == np.asarray(b).dtype or np.asarray(b).dtype.kind == np.asarray(a).dtype.kind
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_against_reference(name):
    assert_elements_equal(elements(tf, PIPELINES[name]), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_against_tensorflow(name):
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_eager_execution()
    want = elements(tf1, PIPELINES[name])
    got = elements(tf, PIPELINES[name])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(tf.nest.flatten(g), tf.nest.flatten(w)):
            np.testing.assert_array_equal(a, b)
            assert np.asarray(a).dtype == np.asarray(b).dtype


def test_output_types_and_shapes_match_tensorflow():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    for name, build in PIPELINES.items():
        with tf1.Graph().as_default():
            ref = build(tf1)
            ref_types, ref_shapes = tf1.data.get_output_types(ref), tf1.data.get_output_shapes(ref)
        with tf.Graph().as_default():
            ds = build(tf)
        assert tf.nest.flatten(ds.output_types) == [tf.as_dtype(t.name) for t in tf.nest.flatten(ref_types)], name
        assert [s.as_list() if s.ndims is not None else None for s in tf.nest.flatten(ds.output_shapes)] == \
            [s.as_list() if s.ndims is not None else None for s in tf.nest.flatten(ref_shapes)], name


def test_end_of_data_raises_out_of_range_and_the_session_goes_on():
    nxt = tf.data.Dataset.range(2).make_one_shot_iterator().get_next()
    c = tf.constant(7)
    with tf.Session() as sess:
        assert [sess.run(nxt) for _ in range(2)] == [0, 1]
        for _ in range(2):  # stays at the end
            with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
                sess.run(nxt)
        assert sess.run(c) == 7


def test_one_element_per_run_per_get_next_op():
    it = tf.data.Dataset.range(10).make_one_shot_iterator()
    a = it.get_next()
    b = it.get_next()
    twice = a + a
    with tf.Session() as sess:
        assert sess.run(twice) == 0  # one element, used twice
        x, y = sess.run([a, b])  # two get_next ops: two elements
        assert {int(x), int(y)} == {1, 2}
        assert sess.run(a) == 3


def test_iterators_are_per_session():
    nxt = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
    with tf.Session() as s1, tf.Session() as s2:
        assert s1.run(nxt) == 0
        assert s2.run(nxt) == 0
        assert s1.run(nxt) == 1


def test_initializable_iterator_with_placeholder_and_reinitialization():
    p = tf.placeholder(tf.float32, [None, 2])
    it = tf.data.Dataset.from_tensor_slices(p).batch(2).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        sess.run(it.initializer, {p: X[:3]})
        got = drain(sess, nxt)
        np.testing.assert_array_equal(np.concatenate(got), X[:3])
        sess.run(it.initializer, {p: X[5:9]})  # runs again from the start, on new data
        np.testing.assert_array_equal(np.concatenate(drain(sess, nxt)), X[5:9])


def test_reinitializable_iterator_switches_datasets():
    train = tf.data.Dataset.from_tensor_slices(X[:6]).batch(3)
    valid = tf.data.Dataset.from_tensor_slices(X[6:]).batch(6)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    init_train, init_valid = it.make_initializer(train), it.make_initializer(valid)
    total = tf.reduce_sum(nxt)
    with tf.Session() as sess:
        sess.run(init_train)
        assert sess.run(total) == X[:3].sum()
        sess.run(init_valid)
        assert sess.run(total) == X[6:].sum()
        sess.run(init_train)
        assert sess.run(total) == X[:3].sum()
    with pytest.raises(TypeError):
        it.make_initializer(tf.data.Dataset.range(3))


def test_shuffle_is_a_seeded_permutation_within_its_buffer():
    n, buffer = 50, 8

    def order(seed, epochs=1, reshuffle=True):
        with tf.Graph().as_default():
            ds = tf.data.Dataset.range(n).shuffle(buffer, seed=seed, reshuffle_each_iteration=reshuffle).repeat(epochs)
            with tf.Session() as sess:
                return [int(v) for v in drain(sess, ds.make_one_shot_iterator().get_next())]

    first = order(3)
    assert sorted(first) == list(range(n)) and first != list(range(n))
    assert order(3) == first  # the same seed, the same order
    assert order(4) != first
    # Element i is read into the buffer after the first i - buffer + 1 outputs: it cannot come sooner.
    assert all(pos >= v - buffer + 1 for pos, v in enumerate(first))
    two = order(3, epochs=2)
    assert two[:n] == first and sorted(two[n:]) == list(range(n)) and two[n:] != first
    same = order(3, epochs=2, reshuffle=False)
    assert same[:n] == same[n:]
    with tf.Graph().as_default():
        in_order = tf.data.Dataset.range(10).shuffle(1).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert drain(sess, in_order) == list(range(10))


def test_from_generator():
    def gen():
        for i in range(4):
            yield np.full([i + 1], i, np.float64), i

    ds = tf.data.Dataset.from_generator(gen, (tf.float32, tf.int32), ([None], []))
    assert ds.output_shapes[0].as_list() == [None]
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = drain(sess, nxt)
    assert [g[1] for g in got] == [0, 1, 2, 3]
    assert got[2][0].dtype == np.float32 and got[2][0].tolist() == [2, 2, 2]

    bad = tf.data.Dataset.from_generator(lambda: iter([np.zeros(3)]), tf.float32, [2]).make_one_shot_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
            sess.run(bad.get_next())


@pytest.mark.parametrize("kind, error", [(RuntimeError, "UnknownError"), (KeyError, "UnknownError"),
                                         (ValueError, "InvalidArgumentError")])
def test_generator_exception_becomes_the_error_class_tensorflow_gives(kind, error, tf_peer):
    """TF runs the generator in a py_func: a RuntimeError is an UnknownError naming it, a ValueError an
    InvalidArgumentError; the elements before it are delivered, and pygrad keeps it as __cause__."""
    def gen():
        yield 1
        raise kind("boom")

    for module in (tf, tf_peer):
        with module.Graph().as_default():
            nxt = module.data.make_one_shot_iterator(module.data.Dataset.from_generator(gen, module.int64)).get_next()
            with module.Session() as sess:
                assert sess.run(nxt) == 1
                with pytest.raises(getattr(module.errors, error), match=f"{kind.__name__}: .*boom") as info:
                    sess.run(nxt)
        if module is tf:
            assert isinstance(info.value.__cause__, kind)


def test_batch_of_different_shapes_is_refused():
    ds = ragged(tf, 4).batch(2)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
            sess.run(nxt)
        assert sess.run(tf.constant(1.0)) == 1.0


def test_map_uses_graph_tensors_and_variables():
    scale = tf.constant(3.0)
    v = tf.Variable(10.0)
    ds = tf.data.Dataset.from_tensor_slices(X[:, 0]).map(lambda x: x * scale + v)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(drain(sess, nxt), X[:, 0] * 3 + 10)


def test_tensor_valued_batch_size():
    size = tf.placeholder(tf.int64, [])
    it = tf.data.Dataset.range(7).batch(size).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {size: 3})
        assert [list(b) for b in drain(sess, nxt)] == [[0, 1, 2], [3, 4, 5], [6]]


def test_training_on_a_dataset_matches_training_on_feeds():
    """The same SGD steps, once fed from a dataset and once through feed_dict: the same weights."""
    rng = np.random.RandomState(0)
    xs = rng.randn(40, 3).astype(np.float32)
    ys = xs @ np.array([[1.], [-2.], [0.5]], np.float32) + 0.3

    def train(use_dataset):
        with tf.Graph().as_default():
            if use_dataset:
                x, y = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(8).repeat(2).make_one_shot_iterator().get_next()
            else:
                x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 1])
            w = tf.Variable(tf.zeros([3, 1]))
            b = tf.Variable(0.0)
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                if use_dataset:
                    while True:
                        try:
                            sess.run(step)
                        except tf.errors.OutOfRangeError:
                            break
                else:
                    for _ in range(2):
                        for i in range(0, 40, 8):
                            sess.run(step, {x: xs[i:i + 8], y: ys[i:i + 8]})
                return sess.run([w, b])

    a, b = train(True), train(False)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="dimension 0"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch_size"):
        tf.data.Dataset.range(3).batch(0)
    with pytest.raises(ValueError, match="scalar tf.bool"):
        tf.data.Dataset.range(3).filter(lambda x: x)
    with pytest.raises(RuntimeError, match="make_one_shot_iterator"):
        iter(tf.data.Dataset.range(3))
