"""TF1's tf.variable_scope / tf.get_variable: names, reuse (True, AUTO_REUSE, reuse_variables,
inheritance), captured scopes, default names, op name scopes versus variable names; the
initializers (exact ones by value, random ones statistically on large samples); collections,
variables_initializer and control_dependencies around variables."""
import math

import numpy as np
import pytest

import pygrad as tf

# Statistical checks draw SAMPLE values. With n = 240000, the standard error of a mean is
# 0.002 sigma and of a variance 0.003 (normal) or 0.002 (uniform) relative, so the bounds below
# (5 standard errors or more) fail by chance with probability < 1e-6, yet catch a wrong scale of
# even 2%.
SHAPE = [400, 600]
N = SHAPE[0] * SHAPE[1]


def _init_value(initializer, shape=SHAPE, dtype=tf.float32, seed_graph=1):
    """The value a get_variable with `initializer` gets (a fresh graph with a graph seed)."""
    tf.reset_default_graph()
    tf.set_random_seed(seed_graph)
    v = tf.get_variable("v", shape, dtype=dtype, initializer=initializer)
    with tf.Session() as sess:
        sess.run(v.initializer)
        return sess.run(v)


def _assert_mean_std(x, mean, std, what):
    x = x.astype(np.float64)
    assert abs(x.mean() - mean) < 5 * std / math.sqrt(x.size), f"{what}: mean {x.mean()}, expected {mean}"
    assert abs(x.std() / std - 1) < 0.02, f"{what}: std {x.std()}, expected {std}"


# ---------------------------------------------------------------- names and reuse


def test_names_nest():
    with tf.variable_scope("foo"):
        with tf.variable_scope("bar"):
            v = tf.get_variable("v", [1])
            assert tf.get_variable_scope().name == "foo/bar"
    assert v.name == "foo/bar/v:0" and v.op.name == "foo/bar/v"
    assert tf.get_variable("top", [1]).name == "top:0"
    assert tf.get_variable_scope().name == ""


def test_reuse_true_returns_the_same_variable():
    with tf.variable_scope("foo"):
        v = tf.get_variable("v", [2, 3])
    with tf.variable_scope("foo", reuse=True):
        v1 = tf.get_variable("v", [2, 3])
        v2 = tf.get_variable("v")  # shape may be left out when reusing
    assert v1 is v and v2 is v
    assert tf.global_variables() == [v] and tf.trainable_variables() == [v]


def test_creating_twice_without_reuse_is_a_value_error():
    with tf.variable_scope("foo"):
        tf.get_variable("v", [1])
    with pytest.raises(ValueError, match=r"Variable foo/v already exists, disallowed\. Did you mean to set "
                                         r"reuse=True or reuse=tf\.AUTO_REUSE in VarScope\?"):
        with tf.variable_scope("foo"):
            tf.get_variable("v", [1])


def test_reusing_a_missing_variable_is_a_value_error():
    with pytest.raises(ValueError, match=r"Variable foo/w does not exist, or was not created with "
                                         r"tf\.get_variable\(\)"):
        with tf.variable_scope("foo", reuse=True):
            tf.get_variable("w", [1])
    assert tf.global_variables() == []


def test_reuse_checks_shape_and_dtype():
    with tf.variable_scope("s"):
        tf.get_variable("v", [2])
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(ValueError, match=r"Trying to share variable s/v, but specified shape \(3,\) and found "
                                             r"shape \(2,\)"):
            tf.get_variable("v", [3])
        with pytest.raises(ValueError, match="Trying to share variable s/v, but specified dtype float64"):
            tf.get_variable("v", [2], dtype=tf.float64)


def test_auto_reuse_creates_then_reuses():
    def layer():
        with tf.variable_scope("layer", reuse=tf.AUTO_REUSE):
            return tf.get_variable("w", [3]), tf.get_variable("b", [1])

    first, second = layer(), layer()
    assert first[0] is second[0] and first[1] is second[1]
    assert [v.name for v in tf.global_variables()] == ["layer/w:0", "layer/b:0"]
    assert repr(tf.AUTO_REUSE) == "tf.AUTO_REUSE"


def test_reuse_variables():
    with tf.variable_scope("r") as scope:
        v = tf.get_variable("v", [1])
        assert scope.reuse is False
        scope.reuse_variables()
        assert scope.reuse is True and tf.get_variable_scope().reuse is True
        assert tf.get_variable("v", [1]) is v
        with pytest.raises(ValueError, match="does not exist"):
            tf.get_variable("new", [1])


def test_reuse_is_inherited_by_nested_scopes():
    with tf.variable_scope("a"):
        with tf.variable_scope("b"):
            v = tf.get_variable("v", [1])
    with tf.variable_scope("a", reuse=True):
        with tf.variable_scope("b"):
            assert tf.get_variable_scope().reuse is True
            assert tf.get_variable("v", [1]) is v
        with tf.variable_scope("b", reuse=False):  # False means "inherit": still reusing
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        with tf.variable_scope("inner"):
            assert tf.get_variable_scope().reuse is tf.AUTO_REUSE
        with tf.variable_scope("strict", reuse=True):
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope("on", reuse=True):
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            assert tf.get_variable_scope().reuse is tf.AUTO_REUSE
    assert tf.get_variable_scope().reuse is False


def test_reentering_with_the_scope_object():
    """A captured scope: its own name wherever it is entered, its own reuse (not the enclosing
    scope's), and a new op name scope named after its last component."""
    with tf.variable_scope("outer"):
        with tf.variable_scope("x") as captured:
            v = tf.get_variable("v", [1])
    assert captured.name == "outer/x" and captured.original_name_scope == "outer/x/"
    with tf.variable_scope(captured, reuse=True) as again:
        assert again.name == "outer/x" and again.reuse is True
        assert again.original_name_scope == "outer/x/"  # the captured scope's
        assert tf.get_variable("v", [1]) is v
        assert tf.add(v, 1.0).op.name == "x/Add"  # op names: a fresh "x" at the current level
    with tf.variable_scope("elsewhere", reuse=True):
        with tf.variable_scope(captured) as jumped:
            assert jumped.name == "outer/x" and jumped.reuse is False  # the captured scope's reuse
            assert tf.get_variable("w", [1]).name == "outer/x/w:0"
            assert tf.add(v, 1.0).op.name == "elsewhere/x/Add"
            with tf.variable_scope("deeper"):
                assert tf.get_variable("u", [1]).name == "outer/x/deeper/u:0"
    with tf.variable_scope(captured):
        assert tf.add(v, 1.0).op.name == "x_1/Add"


def test_captured_scope_keeps_its_initializer():
    with tf.variable_scope("init", initializer=tf.constant_initializer(7.0)) as scope:
        pass
    with tf.variable_scope("other", initializer=tf.constant_initializer(-1.0)):
        with tf.variable_scope(scope):
            v = tf.get_variable("v", [2])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [7.0, 7.0])


def test_default_names_are_unique():
    """default_name gives a scope never entered before, counting scopes opened by name too."""
    with tf.variable_scope("dense"):
        tf.get_variable("w", [1])
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="dense") as scope:
            names.append((scope.name, tf.get_variable("w", [1]).name, scope.original_name_scope))
    assert names == [("dense_1", "dense_1/w:0", "dense_1/"), ("dense_2", "dense_2/w:0", "dense_2/"),
                     ("dense_3", "dense_3/w:0", "dense_3/")]
    with tf.variable_scope("model"):
        with tf.variable_scope(None, default_name="dense") as scope:
            assert scope.name == "model/dense"
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="x", reuse=True):
            pass
    with pytest.raises(TypeError):
        with tf.variable_scope(None):
            pass


def test_op_name_scopes_get_suffixes_but_variable_names_do_not():
    with tf.variable_scope("foo"):
        v = tf.get_variable("v", [1])
        a = tf.add(v, 1.0)
    with tf.variable_scope("foo", reuse=True):
        v1 = tf.get_variable("v", [1])
        a1 = tf.add(v1, 1.0)
    with tf.variable_scope("foo", reuse=True):
        a2 = tf.add(tf.get_variable("v"), 1.0)
    assert v1 is v and v1.name == "foo/v:0"
    assert [a.op.name, a1.op.name, a2.op.name] == ["foo/Add", "foo_1/Add", "foo_2/Add"]
    with tf.variable_scope("foo") as scope:
        assert scope.original_name_scope == "foo_3/"
        assert tf.get_variable("w", [1]).name == "foo/w:0"
    with tf.name_scope("plain"):
        w = tf.get_variable("plain_w", [1])  # a name scope does not prefix get_variable names
        assert w.name == "plain_w:0" and tf.add(w, 1.0).op.name == "plain/Add"


def test_auxiliary_name_scope_false_keeps_the_op_name_scope():
    with tf.name_scope("ns"):
        with tf.variable_scope("vs", auxiliary_name_scope=False) as scope:
            v = tf.get_variable("v", [1])
            assert tf.add(v, 1.0).op.name == "ns/Add"
    assert scope.name == "vs" and v.name == "vs/v:0"


def test_scope_dtype_and_integer_variables():
    with tf.variable_scope("d", dtype=tf.float64):
        v = tf.get_variable("v", [2])
        with tf.variable_scope("inner"):
            u = tf.get_variable("u", [2])
        i = tf.get_variable("i", [3], dtype=tf.int32)  # integers default to zeros
    assert v.dtype == tf.float64 and u.dtype == tf.float64 and i.dtype == tf.int32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(i), [0, 0, 0])
        assert sess.run(i).dtype == np.int32


def test_get_variable_needs_a_shape_unless_the_initializer_has_one():
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("v")
    v = tf.get_variable("c", initializer=tf.constant([[1.0, 2.0]]))
    assert v.shape.as_list() == [1, 2]
    w = tf.get_variable("n", initializer=np.array([3, 4], np.int64))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), [[1.0, 2.0]])
        assert sess.run(w).dtype == np.int64


def test_trainable_false_and_collections():
    with tf.variable_scope("t"):
        frozen = tf.get_variable("frozen", [1], trainable=False)
        local = tf.get_variable("local", [1], collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
        w = tf.get_variable("w", [1])
    assert tf.trainable_variables() == [w]
    assert tf.global_variables() == [frozen, w]
    assert tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES) == [local]


def test_scope_regularizer_adds_regularization_losses():
    with tf.variable_scope("reg", regularizer=lambda v: tf.reduce_sum(tf.square(v)) * 0.5):
        v = tf.get_variable("v", [3], initializer=tf.constant_initializer([1.0, 2.0, 3.0]))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(losses[0]) == 7.0


# ---------------------------------------------------------------- initializers


def test_default_initializer_is_glorot_uniform():
    x = _init_value(None)
    bound = math.sqrt(6.0 / (SHAPE[0] + SHAPE[1]))
    assert x.dtype == np.float32
    assert np.all(np.abs(x) <= bound) and np.abs(x).max() > 0.999 * bound
    _assert_mean_std(x, 0.0, bound / math.sqrt(3.0), "glorot_uniform")
    y = _init_value(tf.glorot_uniform_initializer(), shape=[3, 3, 20, 30])  # conv: fans times 3 x 3
    bound = math.sqrt(6.0 / (9 * 20 + 9 * 30))
    assert np.all(np.abs(y) <= bound) and np.abs(y).max() > 0.99 * bound


def test_initializer_from_the_scope():
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.5)):
        a = tf.get_variable("a", [2])
        with tf.variable_scope("inner"):
            b = tf.get_variable("b", [2])  # inherited
        c = tf.get_variable("c", [2], initializer=tf.ones_initializer())  # explicit wins
        with tf.variable_scope("other", initializer=tf.zeros_initializer()):
            d = tf.get_variable("d", [2])
    scope = tf.get_variable_scope()
    with tf.variable_scope("set"):
        tf.get_variable_scope().set_initializer(tf.constant_initializer(-3.0))
        e = tf.get_variable("e", [1])
    assert scope.initializer is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [sess.run(v).tolist() for v in (a, b, c, d, e)] == [[0.5, 0.5], [0.5, 0.5], [1.0, 1.0], [0.0, 0.0],
                                                                    [-3.0]]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32], ids=lambda d: d.name)
def test_zeros_and_ones_initializers(dtype):
    z = _init_value(tf.zeros_initializer(), shape=[3, 4], dtype=dtype)
    o = _init_value(tf.ones_initializer(), shape=[3, 4], dtype=dtype)
    assert z.dtype == dtype.np and o.dtype == dtype.np
    np.testing.assert_array_equal(z, np.zeros((3, 4)))
    np.testing.assert_array_equal(o, np.ones((3, 4)))


def test_constant_initializer_scalar_and_list():
    np.testing.assert_array_equal(_init_value(tf.constant_initializer(2.5), shape=[2, 3]), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(_init_value(tf.constant_initializer([1, 2, 3, 4, 5, 6]), shape=[2, 3]),
                                  [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(_init_value(tf.constant_initializer([[1.0, 2.0], [3.0, 4.0]]), shape=[4]),
                                  [1, 2, 3, 4])
    got = _init_value(tf.constant_initializer(np.arange(6.0)), shape=[3, 2], dtype=tf.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.arange(6.0).reshape(3, 2))
    # TF1: a shorter list fills in order and repeats its last element; a longer one is refused.
    np.testing.assert_array_equal(_init_value(tf.constant_initializer([1, 2, 3, 4]), shape=[2, 3]),
                                  [[1, 2, 3], [4, 4, 4]])
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2, but got 3"):
        _init_value(tf.constant_initializer([1, 2, 3]), shape=[2])


def test_truncated_normal_initializer():
    x = _init_value(tf.truncated_normal_initializer(mean=0.5, stddev=0.2))
    assert np.all(np.abs(x.astype(np.float64) - 0.5) <= 2 * 0.2 * (1 + 1e-6))
    assert np.abs(x - 0.5).max() > 0.99 * 0.4  # the tails reach the cut
    # a standard normal cut at +-2 has standard deviation 0.8796
    _assert_mean_std(x, 0.5, 0.87962566 * 0.2, "truncated_normal")


def test_random_normal_initializer():
    x = _init_value(tf.random_normal_initializer(mean=-1.0, stddev=3.0)).astype(np.float64)
    _assert_mean_std(x, -1.0, 3.0, "random_normal")
    beyond = np.mean(np.abs(x + 1.0) > 2 * 3.0)  # not truncated: 4.55% lie beyond 2 sigma
    assert abs(beyond - 0.0455) < 0.003
    kurtosis = np.mean(((x + 1.0) / x.std()) ** 4)
    assert abs(kurtosis - 3.0) < 0.1


def test_random_uniform_initializer():
    x = _init_value(tf.random_uniform_initializer(minval=-0.3, maxval=0.7))
    assert x.min() >= -0.3 and x.max() < 0.7
    assert x.min() < -0.299 and x.max() > 0.699
    _assert_mean_std(x, 0.2, 1.0 / math.sqrt(12.0), "random_uniform")
    counts, _ = np.histogram(x, bins=10, range=(-0.3, 0.7))  # flat: each bin about N / 10
    assert np.all(np.abs(counts / (N / 10) - 1) < 0.03)
    d = _init_value(tf.random_uniform_initializer(), dtype=tf.float64)  # default [0, 1)
    assert d.dtype == np.float64 and d.min() >= 0.0 and d.max() < 1.0
    _assert_mean_std(d, 0.5, 1.0 / math.sqrt(12.0), "random_uniform default")


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
def test_variance_scaling_initializer(mode):
    fan_in, fan_out = SHAPE
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    std = math.sqrt(2.0 / n)
    # the default distribution: truncated normal scaled so that its std is sqrt(scale / n)
    x = _init_value(tf.variance_scaling_initializer(scale=2.0, mode=mode))
    assert np.all(np.abs(x) <= 2 * std / 0.87962566 * (1 + 1e-6))
    _assert_mean_std(x, 0.0, std, f"variance_scaling {mode} truncated")
    u = _init_value(tf.variance_scaling_initializer(scale=2.0, mode=mode, distribution="uniform"))
    limit = math.sqrt(3.0 * 2.0 / n)
    assert np.all(np.abs(u) <= limit) and np.abs(u).max() > 0.999 * limit
    _assert_mean_std(u, 0.0, std, f"variance_scaling {mode} uniform")


def test_glorot_normal_initializer_as_tensorflow(tf_peer):
    """glorot_normal_initializer (tf.initializers.glorot_normal): a normal truncated at two of its
    stddevs, scaled to the stddev sqrt(2 / (fan_in + fan_out)); conv fans count the window. The
    draws' bound and stddev are the formula's and those of TensorFlow's draws."""
    assert tf.initializers.glorot_normal is tf.glorot_normal_initializer
    for shape, fans in ((SHAPE, SHAPE[0] + SHAPE[1]), ([3, 3, 40, 60], 9 * 100)):
        std = math.sqrt(2.0 / fans)
        x = _init_value(tf.glorot_normal_initializer(seed=4), shape=shape)
        with tf_peer.Graph().as_default(), tf_peer.Session() as sess:
            theirs = sess.run(tf_peer.glorot_normal_initializer(seed=4)(shape))
        for values, who in ((x, "pygrad"), (theirs, "TensorFlow")):
            assert values.dtype == np.float32 and values.shape == tuple(shape)
            assert np.all(np.abs(values) <= 2 * std / 0.87962566 * (1 + 1e-6)), who
            _assert_mean_std(values, 0.0, std, f"glorot_normal {who} {shape}")
    d = _init_value(tf.glorot_normal_initializer(dtype=tf.float64), dtype=tf.float64)
    assert d.dtype == np.float64


def test_variance_scaling_conv_fans_and_bad_arguments():
    x = _init_value(tf.variance_scaling_initializer(), shape=[5, 5, 64, 8])  # fan_in = 5 * 5 * 64
    _assert_mean_std(x, 0.0, math.sqrt(1.0 / 1600), "variance_scaling conv")
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(mode="fan_sideways")
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(distribution="cauchy")


def test_random_initializers_with_seeds_repeat():
    a = _init_value(tf.truncated_normal_initializer(seed=3), shape=[50])
    b = _init_value(tf.truncated_normal_initializer(seed=3), shape=[50])
    c = _init_value(tf.truncated_normal_initializer(seed=4), shape=[50])
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# ---------------------------------------------------------------- collections


def test_graph_keys_have_tfs_values():
    keys = tf.GraphKeys
    assert (keys.GLOBAL_VARIABLES, keys.TRAINABLE_VARIABLES, keys.LOCAL_VARIABLES) == (
        "variables", "trainable_variables", "local_variables")
    assert (keys.MOVING_AVERAGE_VARIABLES, keys.REGULARIZATION_LOSSES, keys.UPDATE_OPS, keys.GLOBAL_STEP) == (
        "moving_average_variables", "regularization_losses", "update_ops", "global_step")
    assert (keys.LOSSES, keys.SUMMARIES, keys.MODEL_VARIABLES, keys.TRAIN_OP) == (
        "losses", "summaries", "model_variables", "train_op")


def test_get_collection_filters_by_scope():
    with tf.variable_scope("enc"):
        e1 = tf.get_variable("w", [1])
        with tf.variable_scope("inner"):
            e2 = tf.get_variable("w", [1])
    with tf.variable_scope("encoder"):
        e3 = tf.get_variable("w", [1])
    with tf.variable_scope("dec"):
        d1 = tf.get_variable("w", [1], trainable=False)
    key = tf.GraphKeys.GLOBAL_VARIABLES
    assert tf.get_collection(key) == [e1, e2, e3, d1]
    assert tf.get_collection(key, scope="enc") == [e1, e2, e3]  # re.match: a prefix
    assert tf.get_collection(key, scope="enc/") == [e1, e2]
    assert tf.get_collection(key, scope="enc/inner") == [e2]
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="dec") == []
    assert tf.trainable_variables("enc/") == [e1, e2] and tf.global_variables("dec") == [d1]


def test_add_to_collection():
    with tf.variable_scope("s"):
        loss = tf.add(tf.get_variable("v", [1]), 1.0, name="loss")
    tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
    tf.add_to_collection("mine", 3)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
    assert tf.get_collection(tf.GraphKeys.LOSSES, scope="s/") == [loss]
    assert tf.get_collection(tf.GraphKeys.LOSSES, scope="t") == []
    assert tf.get_collection("mine") == [3]
    tf.get_collection("mine").append(4)  # a copy
    assert tf.get_collection("mine") == [3]


def test_variables_initializer_initializes_only_its_list():
    a = tf.get_variable("a", [2], initializer=tf.ones_initializer())
    b = tf.get_variable("b", [2], initializer=tf.ones_initializer())
    init_a = tf.variables_initializer([a])
    empty = tf.variables_initializer([])
    with tf.Session() as sess:
        assert sess.run(empty) is None
        sess.run(init_a)
        np.testing.assert_array_equal(sess.run(a), [1.0, 1.0])
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value b"):
            sess.run(b)
        sess.run(tf.variables_initializer([b]))
        np.testing.assert_array_equal(sess.run(b), [1.0, 1.0])


def test_control_dependencies_order_runs():
    v = tf.get_variable("v", [], initializer=tf.zeros_initializer())
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        read = tf.identity(v)
        double = tf.assign_add(v, 0.0)
        with tf.control_dependencies(None):
            free = tf.identity(v)
    assert inc.op in read.op.control_inputs and free.op.control_inputs == []
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(read) == 1.0  # the increment ran first
        assert sess.run(read) == 2.0
        assert sess.run(free) == 2.0  # no increment
        sess.run(double)
        assert sess.run(v) == 3.0


def test_get_variable_inside_control_dependencies_initializes_alone():
    """As TF (init_scope), a variable made inside control_dependencies does not gate its
    initializer on them: initializing it does not run the update, nor need its feed."""
    x = tf.placeholder(tf.float32, [None])
    count = tf.get_variable("count", [], initializer=tf.zeros_initializer(), trainable=False)
    update = tf.assign_add(count, tf.reduce_sum(x))
    with tf.control_dependencies([update]):
        w = tf.get_variable("w", [3], initializer=tf.ones_initializer())
    assert w.initializer.control_inputs == []
    with tf.Session() as sess:
        sess.run(count.initializer)
        sess.run(w.initializer)  # no feed needed
        assert sess.run(count) == 0.0


def test_matches_tensorflow(tf_peer):
    """Optional: the same variable names, scope names, name scopes and op names as TensorFlow."""
    def names(lib):
        out = []
        with lib.Graph().as_default():
            def op(x):
                return lib.identity(x, name="op").op.name
            with lib.variable_scope("foo") as foo:
                v = lib.get_variable("v", [1])
                out += [v.name, op(v)]
            with lib.variable_scope("foo", reuse=True):
                out += [lib.get_variable("v", [1]).name, op(v)]
            with lib.variable_scope(foo):
                out += [op(v), lib.get_variable_scope().original_name_scope]
            with lib.variable_scope("p", reuse=True):
                with lib.variable_scope(foo) as s:
                    out += [s.reuse, op(v), lib.get_variable("w", [1]).name]
            for _ in range(2):
                with lib.variable_scope(None, default_name="foo") as s:
                    out += [s.name, s.original_name_scope, op(v)]
            with lib.variable_scope("m"):
                with lib.variable_scope(None, default_name="d") as s:
                    out += [s.name, op(v)]
            with lib.variable_scope("m"):
                with lib.variable_scope(None, default_name="d") as s:
                    out += [s.name, op(v)]
        return out

    tf.reset_default_graph()
    assert names(tf) == names(tf_peer)
