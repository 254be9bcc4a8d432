"""The compiled Session.run path (pygrad/_run.pyx): the runs it takes give what the Python path
(BaseSession.run_general) gives, values, types and errors alike, and the runs it does not take
go to the Python path; the plan cache both paths look plans up in."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import plan_cache
from pygrad.plan_cache import PlanCache
from pygrad.session import BaseSession


@pytest.fixture
def general_calls(monkeypatch):
    """The number of runs that went to the Python path, as a one-element list."""
    calls = [0]
    general = BaseSession.run_general

    def counted(self, fetches, feed_dict, options=None):
        calls[0] += 1
        return general(self, fetches, feed_dict, options)

    monkeypatch.setattr(BaseSession, "run_general", counted)
    return calls


def both_paths(sess, fetches, feed_dict):
    """(the compiled path's value, the Python path's value) of one run, the plan already cached."""
    sess.run(fetches, feed_dict)
    return sess.run(fetches, feed_dict), sess.run_general(fetches, feed_dict)


def assert_same(a, b):
    assert type(a) is type(b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif a is not None:
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype, a, b", [
    (tf.float32, 1.5, 2.25), (tf.float32, 3, -7), (tf.float64, 0.1, 1e300), (tf.int32, 7, -2 ** 31),
    (tf.int64, 2 ** 40, -5), (tf.float32, np.float32(0.5), np.array(2.0, np.float64)),
    (tf.float16, 1.5, 2), (tf.bool, True, False),
])
def test_scalar_feeds_and_fetch(general_calls, dtype, a, b):
    x = tf.placeholder(dtype, [])
    y = tf.placeholder(dtype, [])
    z = tf.logical_or(x, y) if dtype == tf.bool else x + y
    with tf.Session() as sess:
        fast, general = both_paths(sess, z, {x: a, y: b})
        assert_same(fast, general)
        assert isinstance(fast, np.generic)  # a 0-d fetch is a NumPy scalar, as TF returns
        assert general_calls[0] == 2  # the first run (which built the plan) and the explicit one


def test_array_feeds_structures_and_ops(general_calls):
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
    y = tf.matmul(x, w)
    total = tf.reduce_sum(y)
    step = tf.assign_add(w, tf.ones([3, 2]))
    saved = tf.placeholder(tf.float32, [3, 2])
    restore = tf.assign(w, saved)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feeds = [np.ones((4, 3), np.float32),                         # bound as it is
                 np.ones((4, 3), np.float64),                         # converted
                 np.ones((3, 4), np.float32).T,                       # strided: copied
                 [[1.0, 2.0, 3.0]]]                                   # a list
        for value in feeds:
            for fetches in ([y, total, y], (total,), [total, step.op], []):
                sess.run(fetches, {x: value})  # builds the plan (a new one for a new feed shape)
                before = sess.run(w)
                calls = general_calls[0]
                fast = sess.run(fetches, {x: value})
                assert general_calls[0] == calls  # the compiled path took it
                sess.run(restore, {saved: before})
                general = sess.run_general(fetches, {x: value})
                assert_same(fast, general)
                sess.run(restore, {saved: before})


def test_the_compiled_record_is_made_with_the_plan(general_calls):
    x = tf.placeholder(tf.float32, [])
    s = tf.placeholder(tf.string, [])
    y = x + 1.0
    many = [x + float(i) for i in range(17)]  # more 0-d fetches than the compiled path holds
    with tf.Session() as sess:
        sess.run(y, {x: 1.0})
        sess.run([y, s], {x: 1.0, s: b"a"})
        sess.run(many, {x: 1.0})
        native, held, large = sess.plans.values()
        assert native.host is None and native.fast is not None
        assert held.host is not None and held.fast is None  # a string feed: values held in Python
        assert large.host is None and large.fast is None
        calls = general_calls[0]
        assert sess.run(y, {x: 2.0}) == 3.0
        assert sess.run([y, s], {x: 2.0, s: b"b"}) == [3.0, b"b"]
        assert sess.run(many, {x: 2.0}) == [2.0 + i for i in range(17)]
        assert general_calls[0] - calls == 2


def test_the_plan_cache_drops_the_oldest_past_its_limits(monkeypatch):
    class Run:  # what the cache reads of a CompiledRun
        def __init__(self, owned_bytes):
            self.owned_bytes = owned_bytes

    monkeypatch.setattr(plan_cache, "PLAN_CACHE_ENTRIES", 3)
    monkeypatch.setattr(plan_cache, "PLAN_CACHE_BYTES", 100)
    cache = PlanCache()
    runs = [Run(10) for _ in range(4)]
    for i, run in enumerate(runs):
        cache.put(PlanCache.key((i,), (), ()), run)
    assert len(cache) == 3 and list(cache.values()) == runs[1:]
    assert cache.get(PlanCache.key((0,), (), ())) is None and cache.get(PlanCache.key((3,), (), ())) is runs[3]
    big = Run(95)  # 125 bytes with the three others: they go, oldest first, until it fits
    cache.put(PlanCache.key((4,), (), ()), big)
    assert list(cache.values()) == [big]
    cache.clear()
    assert len(cache) == 0 and cache.get(PlanCache.key((4,), (), ())) is None
    cache.put(PlanCache.key((5,), (), ()), runs[0])  # the cache works on after clear, get included
    assert cache.get(PlanCache.key((5,), (), ())) is runs[0]


def test_the_fetch_is_a_new_array_each_run():
    x = tf.placeholder(tf.float32, [2])
    y = x * 2.0
    with tf.Session() as sess:
        a = sess.run(y, {x: np.ones(2, np.float32)})
        b = sess.run(y, {x: np.ones(2, np.float32)})
        assert a is not b and a.flags.writeable and a.flags.owndata
        b[0] = 7
        np.testing.assert_array_equal(a, [2, 2])


def test_other_structures_go_to_the_python_path(general_calls):
    x = tf.placeholder(tf.float32, [])
    y = x + 1.0
    with tf.Session() as sess:
        sess.run(y, {x: 1.0})
        calls = general_calls[0]
        assert sess.run({"y": y}, {x: 1.0}) == {"y": 2.0}
        assert sess.run([[y]], {x: 1.0}) == [[2.0]]
        assert sess.run("add:0", {x: 1.0}) == 2.0
        assert sess.run(y, {"Placeholder:0": 1.0}) == 2.0
        assert general_calls[0] - calls == 4


def test_refused_values_raise_as_the_python_path():
    x = tf.placeholder(tf.float32, [])
    i = tf.placeholder(tf.int32, [])
    y = x + 1.0
    j = i + 1
    with tf.Session() as sess:
        sess.run([y, j], {x: 1.0, i: 1})  # cached: the refusals below come after the lookup would
        with pytest.raises(TypeError, match="not compatible with Tensor type float32"):
            sess.run(y, {x: 1e39})
        with pytest.raises(TypeError, match="not compatible with Tensor type int32"):
            sess.run(j, {i: 2 ** 31})
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            sess.run(y, {x: y})
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(y, {x: np.ones(3, np.float32)})
        assert sess.run(y, {x: 2.0}) == 3.0


def test_native_errors_of_a_cached_plan_raise_tf_errors():
    v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [])
    y = v + x
    idx = tf.placeholder(tf.int32, [1])
    data = tf.constant([1.0, 2.0, 3.0])
    part = tf.slice(data, idx, [2])
    with tf.Session() as sess:
        for _ in range(2):  # the second time the plan is cached and the compiled path runs it
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
                sess.run(y, {x: 1.0})
        for _ in range(2):
            sess.run(part, {idx: np.array([0], np.int32)})
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(part, {idx: np.array([5], np.int32)})
            assert "Slice" in str(e.value)
        sess.run(v.initializer)
        assert sess.run(y, {x: 1.0}) == 2.0


def test_closed_session():
    x = tf.placeholder(tf.float32, [])
    sess = tf.Session()
    sess.run(x + 1.0, {x: 1.0})
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(x + 1.0, {x: 1.0})


def test_against_tensorflow():
    tft = pytest.importorskip("tensorflow").compat.v1
    tft.disable_v2_behavior()
    results = []
    for lib in (tf, tft):
        g = lib.Graph()
        with g.as_default():
            a = lib.placeholder(lib.float32, [])
            b = lib.placeholder(lib.float32, [None])
            c = a * b + 1.0
            with lib.Session() as sess:
                results.append([sess.run([c, lib.reduce_sum(c)], {a: 0.1, b: [1.0, 2.5]}) for _ in range(2)])
    for mine, theirs in zip(*results):
        assert type(mine[1]) is type(theirs[1])
        np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-6)
        np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-6)
