"""Session.run with TensorFlow 1's semantics: fetch structures, each node run once per call, reads
before writes, feeds checked and converted, errors that name the op and the user's line and leave
the session usable, default sessions, separate variables per session, the plan cache."""
import collections
import os
import sys
import threading

import numpy as np
import pytest

import pygrad as tf

THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _line():
    """The caller's line number (call it on the line that builds the op)."""
    return sys._getframe(1).f_lineno


# ---------------------------------------------------------------- what can be fetched


def test_run_a_tensor_an_operation_and_a_variable():
    a = tf.constant([1., 2.])
    b = tf.add(a, 3.0)
    v = tf.Variable(np.array([4., 5.], np.float32), name="v")
    with tf.Session() as sess:
        assert sess.run(v.initializer) is None
        np.testing.assert_array_equal(sess.run(b), [4., 5.])
        np.testing.assert_array_equal(sess.run(v), [4., 5.])
        assert sess.run(tf.no_op()) is None


def test_run_by_name():
    a = tf.constant([1., 2.])
    b = tf.add(a, 3.0)
    assert b.name == "Add:0"
    tf.Variable(1.0, name="v")
    with tf.Session() as sess:
        assert sess.run("v/Assign") is None  # an op name runs the op
        np.testing.assert_array_equal(sess.run("Add:0"), [4., 5.])
        assert sess.run("Add") is None
        assert sess.run(["v:0", "Add:0"])[0] == 1.0
        with pytest.raises(ValueError):
            sess.run("NoSuchOp:0")


def test_nested_structures_come_back_in_the_same_structure():
    Pair = collections.namedtuple("Pair", "first second")
    a = tf.constant(1.0)
    b = tf.constant([2, 3])
    v = tf.Variable(7.0)
    init = tf.global_variables_initializer()
    with tf.Session() as sess:
        sess.run(init)
        out = sess.run({"a": a, "list": [b, (a, v)], "pair": Pair(first=init, second=[a]),
                        "ordered": collections.OrderedDict([("z", b), ("y", a)])})
    assert set(out) == {"a", "list", "pair", "ordered"}
    assert out["a"] == 1.0
    assert isinstance(out["list"], list) and isinstance(out["list"][1], tuple)
    np.testing.assert_array_equal(out["list"][0], [2, 3])
    assert out["list"][1] == (1.0, 7.0)
    assert type(out["pair"]) is Pair and out["pair"].first is None and out["pair"].second == [1.0]
    assert type(out["ordered"]) is collections.OrderedDict and list(out["ordered"]) == ["z", "y"]
    with tf.Session() as sess:
        assert sess.run([]) == [] and sess.run(()) == () and sess.run({}) == {}


def test_zero_d_results_are_numpy_scalars():
    f = tf.constant(2.5)
    i = tf.constant(3)
    d = tf.constant(np.float64(1.5))
    with tf.Session() as sess:
        rf, ri, rd, rv = sess.run([f, i, d, tf.reduce_sum(tf.constant([1., 2.]))])
    assert type(rf) is np.float32 and rf == 2.5
    assert type(ri) is np.int32 and ri == 3
    assert type(rd) is np.float64 and rd == 1.5
    assert type(rv) is np.float32 and rv == 3.0


def test_bad_fetches_are_rejected():
    with tf.Session() as sess:
        with pytest.raises(TypeError):
            sess.run(None)
        with pytest.raises(TypeError):
            sess.run(3)
        with pytest.raises(TypeError):
            sess.run([tf.constant(1.0), None])


def test_fetch_from_another_graph_is_rejected():
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(1.0)
        other_v = tf.Variable(2.0)
    mine = tf.constant(3.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run(other)
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run([mine, other])
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run(other_v)
        assert sess.run(mine) == 3.0


# ---------------------------------------------------------------- each node runs once per call


def test_an_op_fetched_twice_runs_once():
    v = tf.Variable(0, name="counter")
    inc = tf.assign_add(v, 1)
    with tf.Session() as sess:
        sess.run(v.initializer)
        a, b = sess.run([inc, inc])
        assert a == b == 1
        assert sess.run(v) == 1
        sess.run([inc.op, inc, {"again": inc}])
        assert sess.run(v) == 2


def test_an_op_and_a_tensor_depending_on_it_run_it_once():
    v = tf.Variable(0, name="counter")
    inc = tf.assign_add(v, 1)
    doubled = inc * 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        a, b = sess.run([inc, doubled])
        assert (a, b) == (1, 2)
        assert sess.run(v) == 1
        b, a = sess.run([doubled, inc])
        assert (a, b) == (2, 4)
        assert sess.run(v) == 2


def test_each_run_call_runs_the_op_again():
    v = tf.Variable(0)
    inc = tf.assign_add(v, 5)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(inc) for _ in range(3)] == [5, 10, 15]


def test_loss_fetched_with_train_op_is_the_value_before_the_update():
    rng = np.random.RandomState(0)
    xv = rng.randn(6, 3).astype(np.float32)
    yv = rng.randn(6, 1).astype(np.float32)
    w0 = rng.randn(3, 1).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable(w0)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    w = w0.astype(np.float64)
    with tf.Session() as sess:
        sess.run(W.initializer)
        for _ in range(3):
            _, got = sess.run([train, loss], {x: xv, y: yv})
            err = xv @ w - yv
            assert got == pytest.approx(np.mean(err ** 2), rel=1e-5)
            w -= 0.1 * 2 * xv.T @ err / len(xv)
            np.testing.assert_allclose(sess.run(W), w, rtol=1e-5)
        # the other order of the fetches gives the same: reads of W happen before the update
        got, _ = sess.run([loss, train], {x: xv, y: yv})
        assert got == pytest.approx(np.mean((xv @ w - yv) ** 2), rel=1e-5)


def test_readers_built_after_the_update_still_see_the_old_value():
    """pygrad's rule (lowering.py): a variable's readers that do not depend on a write run before it.
    (TF1 leaves this order to chance; pygrad makes it the order of sess.run([train_op, loss]).)"""
    w0 = np.array([[1.], [2.]], np.float32)
    x = tf.placeholder(tf.float32, [None, 2])
    W = tf.Variable(w0)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(tf.matmul(x, W)))
    late_read = tf.reduce_sum(W * 1.0)  # built after the update op
    counter = tf.Variable(0)
    inc = tf.assign_add(counter, 1)
    late_count = counter * 10
    xv = np.array([[1., 1.], [0., 2.]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _, before = sess.run([train, late_read], {x: xv})
        assert before == 3.0
        np.testing.assert_allclose(sess.run(W), w0 - 0.5 * xv.sum(0, keepdims=True).T)
        assert sess.run([inc, late_count]) == [1, 0]
        assert sess.run(late_count) == 10


# ---------------------------------------------------------------- feeds


def test_wrong_feed_shape_is_a_value_error_naming_the_tensor_and_line():
    x, line = tf.placeholder(tf.float32, [None, 3], name="x"), _line()
    y = tf.identity(x)
    with tf.Session() as sess:
        with pytest.raises(ValueError) as info:
            sess.run(y, {x: np.zeros((2, 4), np.float32)})
        msg = str(info.value)
        assert "Cannot feed value of shape (2, 4) for Tensor 'x:0', which has shape '(?, 3)'" in msg
        assert f"{THIS_FILE}:{line}" in msg
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(y, {x: np.zeros(3, np.float32)})
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 3))}), np.ones((2, 3)))


def test_fixed_shape_placeholder_rejects_another_size():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor 'x:0'"):
            sess.run(x * 2, {x: [1., 2., 3.]})
        np.testing.assert_array_equal(sess.run(x * 2, {x: [1., 2.]}), [2., 4.])


def test_float64_fed_to_float32_is_converted():
    x = tf.placeholder(tf.float32, [None, 2])
    y = x * 2
    with tf.Session() as sess:
        out = sess.run(y, {x: np.array([[0.1, 1e-3]], np.float64)})
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array([[0.1, 1e-3]], np.float32) * 2)


def test_python_lists_and_ints_are_converted():
    x = tf.placeholder(tf.float32, [2])
    i = tf.placeholder(tf.int32, [2])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x + 1, {x: [1, 2]}), [2., 3.])
        out = sess.run(i + 1, {i: np.array([1, 2], np.int64)})
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, [2, 3])


def test_float_array_fed_to_int32_is_a_type_error():
    """pygrad refuses to truncate floats into an integer feed. (TF1's session converts with
    np.asarray(value, dtype=int32) and truncates silently; this check is stricter on purpose.)"""
    i, line = tf.placeholder(tf.int32, [2], name="labels"), _line()
    with tf.Session() as sess:
        with pytest.raises(TypeError) as info:
            sess.run(i + 1, {i: np.array([1.5, 2.0])})
        assert "labels" in str(info.value) and f"{THIS_FILE}:{line}" in str(info.value)
        np.testing.assert_array_equal(sess.run(i + 1, {i: [1, 2]}), [2, 3])


def test_a_tensor_is_not_a_feed_value():
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            sess.run(x * 2, {x: tf.constant([1., 2.])})


def test_feed_keys_by_name_and_bad_keys():
    x = tf.placeholder(tf.float32, [2], name="x")
    g = tf.Graph()
    with g.as_default():
        foreign = tf.placeholder(tf.float32, [2], name="x")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x * 2, {"x:0": [1., 2.]}), [2., 4.])
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            sess.run(x * 2, {foreign: [1., 2.], x: [1., 2.]})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            sess.run(x * 2, {"nope:0": [1., 2.], x: [1., 2.]})


def test_missing_feed_names_the_placeholder_and_its_line():
    x, line = tf.placeholder(tf.float32, [None, 3], name="images"), _line()
    y = tf.reduce_sum(x * 2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y)
        msg = str(info.value)
        assert "You must feed a value for placeholder tensor 'images'" in msg
        assert "defined at" in msg and f"{THIS_FILE}:{line}" in msg
        assert sess.run(y, {x: np.ones((2, 3))}) == 12.0


def test_uninitialized_variable_is_a_failed_precondition_naming_it():
    v = tf.Variable(3.0, name="my_weights")
    y = v * 2
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as info:
            sess.run(y)
        assert "uninitialized value my_weights" in str(info.value)
        assert isinstance(info.value, tf.errors.OpError)
        with pytest.raises(tf.errors.FailedPreconditionError, match="my_weights"):
            sess.run(v)
        assert sess.run(tf.constant(5.0) + 1) == 6.0  # the same session still runs
        sess.run(v.initializer)
        assert sess.run(y) == 6.0  # and the fetch that failed now runs


def test_the_session_survives_each_error():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    i = tf.placeholder(tf.int32, [2], name="i")
    v = tf.Variable(np.array([1., 2.], np.float32), name="v")
    good = tf.reduce_sum(x * 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        bad = tf.Variable(0.0, name="never_initialized")
        failures = [
            (ValueError, lambda: sess.run(good, {x: np.ones((2, 3))})),
            (TypeError, lambda: sess.run(i * 2, {i: [0.5, 1.5]})),
            (tf.errors.InvalidArgumentError, lambda: sess.run(good)),
            (tf.errors.FailedPreconditionError, lambda: sess.run(bad + v)),
        ]
        for n, (error, fail) in enumerate(failures, 1):
            with pytest.raises(error):
                fail()
            assert sess.run(good, {x: np.full((n, 2), 2.0)}) == 12.0 * n
            np.testing.assert_array_equal(sess.run(v + 1), [2., 3.])


def test_feeding_does_not_change_the_fed_array():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.nn.softmax(tf.exp(x) * 2 - x)
    z = tf.reshape(x, [-1]) + 1
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    keep = arr.copy()
    with tf.Session() as sess:
        out_id, out_y, out_z = sess.run([tf.identity(x), y, z], {x: arr})
    np.testing.assert_array_equal(arr, keep)
    np.testing.assert_array_equal(out_id, keep)
    np.testing.assert_array_equal(out_z, keep.reshape(-1) + 1)


def test_a_fed_value_assigned_to_a_variable_is_copied():
    x = tf.placeholder(tf.float32, [3])
    v = tf.Variable(tf.zeros([3]))
    set_v = tf.assign(v, x)
    inc = tf.assign_add(v, tf.ones([3]))
    arr = np.array([1., 2., 3.], np.float32)
    with tf.Session() as sess:
        sess.run(set_v, {x: arr})
        sess.run(inc)
        np.testing.assert_array_equal(sess.run(v), [2., 3., 4.])
    np.testing.assert_array_equal(arr, [1., 2., 3.])


def test_fetched_values_are_not_changed_by_later_runs():
    v = tf.Variable([1., 2.])
    inc = tf.assign_add(v, [1., 1.])
    x = tf.placeholder(tf.float32, [2])
    y = x * 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        after_inc = sess.run(inc)
        y1 = sess.run(y, {x: [1., 1.]})
        sess.run(inc)
        sess.run(y, {x: [5., 5.]})
    np.testing.assert_array_equal(before, [1., 2.])
    np.testing.assert_array_equal(after_inc, [2., 3.])
    np.testing.assert_array_equal(y1, [2., 2.])


@pytest.mark.parametrize("make", [
    lambda a: np.ascontiguousarray(a.T).T,              # a transposed view (Fortran order)
    lambda a: np.repeat(a, 2, axis=0)[::2],             # rows with a step
    lambda a: np.repeat(a, 2, axis=1)[:, ::2],          # columns with a step
    lambda a: np.asfortranarray(a.astype(np.float64)),  # another dtype and order
], ids=["transposed", "row-step", "column-step", "fortran-float64"])
def test_non_contiguous_feeds(make):
    base = np.arange(12, dtype=np.float32).reshape(4, 3) * 0.5 - 1
    fed = make(base)
    assert fed.shape == (4, 3) and not fed.flags.c_contiguous
    np.testing.assert_array_equal(fed, base)
    want = base
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.Session() as sess:
        out_id, out_sum, out_mm = sess.run([tf.identity(x), tf.reduce_sum(x, 1), tf.matmul(x, x, transpose_b=True)],
                                           {x: fed})
    np.testing.assert_array_equal(out_id, want)
    np.testing.assert_allclose(out_sum, want.sum(1), rtol=1e-6)
    np.testing.assert_allclose(out_mm, want @ want.T, rtol=1e-6)


def test_feeding_an_intermediate_tensor_overrides_it():
    x = tf.placeholder(tf.float32, [2])
    h = x * 10
    y = h + 1
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {h: [1., 2.]}), [2., 3.])  # x need not be fed
        np.testing.assert_array_equal(sess.run(y, {x: [1., 2.]}), [11., 21.])
        np.testing.assert_array_equal(sess.run([h, y], {h: [5., 6.]})[0], [5., 6.])


def test_feeding_a_variable_read_overrides_it():
    v = tf.Variable(3.0)
    y = v * 2
    with tf.Session() as sess:
        assert sess.run(y, {v: 10.0}) == 20.0  # v need not be initialized when fed
        sess.run(v.initializer)
        assert sess.run(y) == 6.0


# ---------------------------------------------------------------- default sessions


def test_eval_and_run_inside_as_default():
    v = tf.Variable(5.0)
    d = v * 2
    x = tf.placeholder(tf.float32, [])
    sess = tf.Session()
    with sess.as_default():
        assert tf.get_default_session() is sess
        v.initializer.run()
        assert d.eval() == 10.0
        assert (x + 1).eval({x: 2.0}) == 3.0
        assert (x + 1).eval(feed_dict={x: 4.0}) == 5.0
        assert v.eval() == 5.0
    assert tf.get_default_session() is None
    assert d.eval(session=sess) == 10.0
    sess.close()


def test_eval_and_run_inside_a_with_session_block():
    v = tf.Variable(5.0)
    d = v * 2
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        v.initializer.run()
        assert d.eval() == 10.0
    assert tf.get_default_session() is None


def test_eval_without_a_default_session_is_a_value_error():
    c = tf.constant(1.0)
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with pytest.raises(ValueError, match="No default session"):
        tf.no_op().run()


def test_interactive_session_is_the_default_until_closed():
    v = tf.Variable(2.0)
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        v.initializer.run()
        assert (v * 3).eval() == 6.0
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_run_after_close_raises():
    c = tf.constant(1.0)
    sess = tf.Session()
    assert sess.run(c) == 1.0
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)
    with tf.Session() as sess2:
        pass
    with pytest.raises(RuntimeError, match="closed Session"):
        sess2.run(c)


def test_two_sessions_keep_separate_variables():
    v = tf.Variable(1.0, name="v")
    inc = tf.assign_add(v, 10.0)
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s1.run(inc)
    with pytest.raises(tf.errors.FailedPreconditionError):
        s2.run(v)  # initialized in s1 only
    s2.run(v.initializer)
    assert s2.run(v) == 1.0
    s2.run(inc)
    s2.run(inc)
    assert (s1.run(v), s2.run(v)) == (11.0, 21.0)
    s1.close()
    assert s2.run(v) == 21.0
    s2.close()


def test_session_on_an_explicit_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(2.0)
        d = c * 3
    with tf.Session(graph=g) as sess:
        assert sess.graph is g
        assert sess.run(d) == 6.0
        assert d.eval() == 6.0
    with tf.Session() as sess:
        with pytest.raises(ValueError):
            d.eval(session=sess)


# ---------------------------------------------------------------- the plan cache


def test_plans_are_cached_per_run_signature():
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.reduce_sum(x * 3, 1)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 2))}), [6., 6.])
        assert len(sess.plans) == 1
        np.testing.assert_array_equal(sess.run(y, {x: np.full((2, 2), 2.0)}), [12., 12.])
        assert len(sess.plans) == 1
        np.testing.assert_array_equal(sess.run(y, {x: np.arange(8.).reshape(4, 2)}), [3., 15., 27., 39.])
        assert len(sess.plans) == 2
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 2))}), [6., 6.])
        assert len(sess.plans) == 2
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((1, 2))}), [6.])
        assert len(sess.plans) == 3


# ---------------------------------------------------------------- variables, groups, control dependencies


def test_variable_load():
    v = tf.Variable(np.zeros((2, 2), np.float32))
    d = v * 2
    with tf.Session() as sess:
        v.load(np.eye(2), sess)  # loading initializes
        np.testing.assert_array_equal(sess.run(d), 2 * np.eye(2))
        v.load([[1, 2], [3, 4]])  # the default session
        np.testing.assert_array_equal(sess.run(v), [[1., 2.], [3., 4.]])
        assert sess.run(v).dtype == np.float32
    with pytest.raises(ValueError):
        v.load(np.eye(2))  # no default session


def test_group_runs_all_its_inputs():
    a = tf.Variable(0.0)
    b = tf.Variable(0.0)
    grp = tf.group(tf.assign(a, 3.0), tf.assign_add(b, 1.0), name="both")
    assert grp.name == "both" and isinstance(grp, tf.Operation)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(grp) is None
        assert sess.run([a, b]) == [3.0, 1.0]
        sess.run(grp)
        assert sess.run([a, b]) == [3.0, 2.0]


def test_no_op_and_identity():
    x = tf.placeholder(tf.float32, [2])
    y = tf.identity(x, name="same")
    assert y.name == "same:0" and y.shape.as_list() == [2]
    n = tf.no_op(name="nothing")
    assert n.name == "nothing" and n.outputs == ()
    with tf.Session() as sess:
        assert sess.run(n) is None
        np.testing.assert_array_equal(sess.run(y, {x: [1., 2.]}), [1., 2.])


def test_identity_of_a_variable_is_a_snapshot():
    v = tf.Variable(1.0)
    snap = tf.identity(v)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([snap]):
        later = tf.assign_add(v, 100.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(inc)
        assert sess.run(snap) == 2.0
        s, _ = sess.run([snap, later])
        assert s == 2.0 and sess.run(v) == 102.0


def test_control_dependencies_see_the_assigned_value():
    w = tf.Variable(1.0)
    set_w = tf.assign(w, 10.0)
    with tf.control_dependencies([set_w]):
        read = tf.identity(w)
        doubled = w * 2
    plain = w * 2
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(plain) == 2.0
        assert sess.run(read) == 10.0
        sess.run(w.initializer)
        assert sess.run(doubled) == 20.0
        sess.run(w.initializer)
        assert sess.run(plain) == 2.0


def test_control_dependencies_order_side_effects():
    counter = tf.Variable(0)
    log = tf.Variable(0)
    inc = tf.assign_add(counter, 1)
    with tf.control_dependencies([inc]):
        copy = tf.assign(log, counter * 10)
    with tf.control_dependencies(None):
        free = tf.identity(counter)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(copy)
        sess.run(copy)
        assert sess.run([counter, log]) == [2, 20]
        assert sess.run(free) == 2 and sess.run(counter) == 2


def test_variable_created_under_control_dependencies_ignores_them():
    """As TF's init_scope: initializing a variable built inside control_dependencies([inc]) does not
    run inc (a moving-average or slot variable built under the training op's dependencies)."""
    counter = tf.Variable(0)
    inc = tf.assign_add(counter, 1)
    with tf.control_dependencies([inc]):
        v = tf.Variable(5.0, name="v")
        after = tf.identity(v)
    assert not v.initializer.control_inputs and inc.op in after.op.control_inputs
    with tf.Session() as sess:
        sess.run(counter.initializer)
        sess.run(v.initializer)
        assert sess.run(counter) == 0
        assert sess.run(after) == 5.0 and sess.run(counter) == 1


def test_runs_of_one_plan_on_several_threads_each_get_their_own_scratch():
    x = tf.placeholder(tf.float64, [None, 64])
    y = tf.reduce_sum(tf.tanh(tf.matmul(x, tf.constant(np.eye(64) * 0.5))) * 3.0, axis=1)
    inputs = [np.full((32, 64), i / 10.0) for i in range(8)]
    with tf.Session() as sess:
        expected = [sess.run(y, {x: a}) for a in inputs]
        results = {}

        def work(i):
            for _ in range(50):
                results.setdefault(i, []).append(sess.run(y, {x: inputs[i]}))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i, outs in results.items():
        for out in outs:
            np.testing.assert_array_equal(out, expected[i])


def test_plans_share_the_graphs_constants_and_the_sessions_scratch():
    big = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024)  # 4 MB
    c = tf.constant(big)
    x = tf.placeholder(tf.float32, [None, 1024])
    y = tf.matmul(x, c)
    with tf.Session() as sess:
        for n in range(1, 41):
            sess.run(y, {x: np.ones((n, 1024), np.float32)})
        plans = list(sess.plans.values())
        assert len(plans) == 40
        # every plan reads the graph's constant itself (no copy) and owns nothing
        assert all(any(np.shares_memory(k, c.op.attrs["value"]) for k in p.consts) for p in plans)
        assert sum(p.owned_bytes for p in plans) == 0
        # the free scratch is at most a few arenas (the largest plan's), not one per plan
        largest = max(p.plan.arena_bytes for p in plans)
        assert sess._store.arenas.free_bytes <= 4 * largest
