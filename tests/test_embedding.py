"""embedding_lookup and sparse gradients: the gradient of a gather from a variable is an
IndexedSlices (fetched as IndexedSlicesValue), dense where a tensor is needed; the optimizers apply
it with TF1's sparse rules (repeated rows summed first, Adam's dense-wide decay), checked against
NumPy references over several steps and against TensorFlow where installed; clip_by_global_norm
keeps it sparse."""
import numpy as np
import pytest

import pygrad as tf

IDS = np.array([[1, 3, 1], [0, 3, 3]], np.int32)  # repeated rows; row 2 and 4 untouched
PARAMS = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
W = np.random.default_rng(1).standard_normal((2, 3, 3)).astype(np.float32)  # the loss's weights


def _loss(m, params, ids=IDS):
    emb = m.nn.embedding_lookup(params, ids)
    return m.reduce_sum(emb * emb * W) * 0.5


def _dense_grad(params, ids=IDS):
    g = np.zeros_like(params, dtype=np.float64)
    rows = params[ids] * W
    np.add.at(g, ids.reshape(-1), rows.reshape(-1, params.shape[1]))
    return g


def test_lookup_forward_any_rank():
    with tf.Session() as sess:
        p = tf.constant(PARAMS)
        np.testing.assert_array_equal(sess.run(tf.nn.embedding_lookup(p, IDS)), PARAMS[IDS])
        np.testing.assert_array_equal(sess.run(tf.nn.embedding_lookup(p, 2)), PARAMS[2])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_lookup_and_gradient(strategy):
    table = np.arange(7 * 2, dtype=np.float32).reshape(7, 2)
    if strategy == "mod":
        shards = [table[i::3] for i in range(3)]
    else:
        shards = [table[0:3], table[3:5], table[5:7]]  # 7 ids over 3 shards: 3, 2, 2
    ids = np.array([[6, 0, 4], [2, 5, 1]])
    vs = [tf.Variable(s) for s in shards]
    y = tf.nn.embedding_lookup(vs, ids, partition_strategy=strategy)
    grads = tf.gradients(tf.reduce_sum(y * y), vs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y), table[ids])
        dense = np.zeros_like(table)
        np.add.at(dense, ids.reshape(-1), 2 * table[ids].reshape(-1, 2))
        want = [dense[i::3] for i in range(3)] if strategy == "mod" else [dense[0:3], dense[3:5], dense[5:7]]
        for g, w in zip(grads, want):
            np.testing.assert_allclose(sess.run(tf.convert_to_tensor(g)), w)


def test_gradient_of_variable_gather_is_indexed_slices():
    v = tf.Variable(PARAMS)
    (g,) = tf.gradients(_loss(tf, v), [v])
    assert isinstance(g, tf.IndexedSlices) and g.dtype == tf.float32
    (gp,) = tf.gradients(_loss(tf, tf.identity(v)), [v])  # through a tensor: dense, as before
    assert not isinstance(gp, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        val = sess.run(g)
        assert isinstance(val, tf.IndexedSlicesValue)
        np.testing.assert_array_equal(val.indices, IDS.reshape(-1))
        np.testing.assert_array_equal(val.dense_shape, [5, 3])
        np.testing.assert_allclose(val.values, (PARAMS[IDS] * W).reshape(-1, 3), rtol=1e-6)
        want = _dense_grad(PARAMS)
        np.testing.assert_allclose(sess.run(tf.convert_to_tensor(g)), want, rtol=1e-5)
        np.testing.assert_allclose(sess.run(tf.add_n([g, tf.ones([5, 3])])), want + 1, rtol=1e-5)
        np.testing.assert_allclose(sess.run(gp), want, rtol=1e-5)


def test_two_lookups_concatenate_rows_and_mixed_sums_are_dense():
    v = tf.Variable(PARAMS)
    a, b = tf.gather(v, [0, 1]), tf.gather(v, [1])
    (g,) = tf.gradients(tf.reduce_sum(a) + tf.reduce_sum(b * 2.0), [v])
    (gm,) = tf.gradients(tf.reduce_sum(a) + tf.reduce_sum(v * 3.0), [v])
    assert isinstance(g, tf.IndexedSlices) and not isinstance(gm, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        val = sess.run(g)
        rows = sorted(zip(val.indices.tolist(), val.values[:, 0].tolist()))  # the rows of both, concatenated
        assert rows == [(0, 1.0), (1, 1.0), (1, 2.0)]
        np.testing.assert_allclose(sess.run(gm), np.array([[4] * 3, [4] * 3, [3] * 3, [3] * 3, [3] * 3]))


def test_clip_by_global_norm_keeps_slices():
    v = tf.Variable(PARAMS)
    (g,) = tf.gradients(_loss(tf, v), [v])
    (c,), norm = tf.clip_by_global_norm([g], 1.0)
    assert isinstance(c, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = (PARAMS[IDS] * W).reshape(-1, 3).astype(np.float64)
        n = np.sqrt((values ** 2).sum())  # TF: the norm of the values, repeated rows and all
        np.testing.assert_allclose(sess.run(norm), n, rtol=1e-5)
        np.testing.assert_allclose(sess.run(c).values, values / n, rtol=1e-5)
        np.testing.assert_allclose(sess.run(tf.global_norm([g])), n, rtol=1e-5)


# ---------------------------------------------------------------- sparse optimizer updates


def _summed(values, indices):
    rows, sums = [], []
    for j, r in enumerate(indices):
        if r in rows:
            sums[rows.index(r)] = sums[rows.index(r)] + values[j]
        else:
            rows.append(r)
            sums.append(values[j].copy())
    return rows, sums


def _reference(name, var, values, indices, state, step):
    """TF1's sparse update of var (float64) by rows, in place; state holds the slots. The
    hyperparameters are float32 constants cast to the variable's dtype, as in TF."""
    f = lambda x: float(np.float32(x))  # noqa: E731
    lr = f(0.1)
    if name == "sgd":
        for j, r in enumerate(indices):
            var[r] -= lr * values[j]
        return
    rows, sums = _summed(values, indices)
    if name == "adam":
        b1, b2, eps = f(0.9), f(0.999), f(1e-8)
        m, v = state.setdefault("m", np.zeros_like(var)), state.setdefault("v", np.zeros_like(var))
        b1p = float(np.prod(np.full(step, np.float32(0.9), np.float32)))  # float32 beta powers
        b2p = float(np.prod(np.full(step, np.float32(0.999), np.float32)))
        alpha = lr * np.sqrt(1 - b2p) / (1 - b1p)
        m *= b1
        v *= b2
        for r, g in zip(rows, sums):
            m[r] += g * (1 - b1)
            v[r] += g * g * (1 - b2)
        var -= alpha * m / (np.sqrt(v) + eps)
        return
    for r, g in zip(rows, sums):
        if name == "momentum":
            a = state.setdefault("a", np.zeros_like(var))
            a[r] = a[r] * f(0.9) + g
            var[r] -= lr * a[r]
        elif name == "adagrad":
            a = state.setdefault("a", np.full_like(var, 0.1))
            a[r] += g * g
            var[r] -= lr * g / np.sqrt(a[r])
        elif name == "rmsprop":
            ms, mom = state.setdefault("ms", np.ones_like(var)), state.setdefault("mom", np.zeros_like(var))
            ms[r] += (g * g - ms[r]) * (1 - f(0.9))
            mom[r] = mom[r] * 0.5 + lr * g / np.sqrt(ms[r] + f(1e-10))
            var[r] -= mom[r]


OPTIMIZERS = {
    "sgd": lambda m: m.train.GradientDescentOptimizer(0.1),
    "momentum": lambda m: m.train.MomentumOptimizer(0.1, 0.9),
    "adagrad": lambda m: m.train.AdagradOptimizer(0.1),
    "rmsprop": lambda m: m.train.RMSPropOptimizer(0.1, momentum=0.5),
    "adam": lambda m: m.train.AdamOptimizer(0.1),
}


def _train(m, name, steps, dtype=np.float32):
    m.reset_default_graph()
    v = m.Variable(PARAMS.astype(dtype))
    emb = m.nn.embedding_lookup(v, IDS)
    loss = m.reduce_sum(emb * emb * W.astype(dtype)) * 0.5
    train = OPTIMIZERS[name](m).minimize(loss)
    out = []
    with m.Session() as sess:
        sess.run(m.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
            out.append(sess.run(v))
    return out


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_sparse_update_matches_reference(name):
    got = _train(tf, name, 4, np.float64)
    var, state = PARAMS.astype(np.float64), {}
    for step in range(1, 5):
        values = (var[IDS] * W).reshape(-1, 3)
        _reference(name, var, values, IDS.reshape(-1), state, step)
        np.testing.assert_allclose(got[step - 1], var, rtol=1e-12, atol=1e-12)
    if name not in ("adam",):
        np.testing.assert_array_equal(got[-1][[2, 4]], PARAMS[[2, 4]])  # untouched rows stay


def test_bad_sparse_index_raises_and_leaves_variable():
    v = tf.Variable(PARAMS)
    ids = tf.placeholder(tf.int32, [None])
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(tf.gather(v, ids)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"7.*\[0, 5\)"):
            sess.run(train, {ids: [0, 7]})
        np.testing.assert_array_equal(sess.run(v), PARAMS)
        sess.run(train, {ids: [0, 4]})


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_sparse_update_matches_tensorflow(name):
    tensorflow = pytest.importorskip("tensorflow")
    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    want = _train(v1, name, 3)
    got = _train(tf, name, 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_gradient_of_lookups_with_int32_and_int64_ids():
    """Two lookups of one table, by int32 and by int64 ids: their sparse gradients aggregate (rows
    as int64, as TF does) to the counts of each row (NumPy)."""
    table = tf.Variable(np.ones((5, 2), np.float32))
    loss = tf.reduce_sum(tf.nn.embedding_lookup(table, tf.constant([1, 3], tf.int32))) + tf.reduce_sum(
        tf.nn.embedding_lookup(table, tf.constant([3, 4, 3], tf.int64)))
    grad = tf.gradients(loss, [table])[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        dense = sess.run(tf.convert_to_tensor(grad))
    np.testing.assert_array_equal(dense, np.array([[0, 0], [1, 1], [0, 0], [3, 3], [1, 1]], np.float32))
