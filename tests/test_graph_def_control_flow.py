"""pygrad's cond and while_loop exported as TF1's dataflow control flow (Switch and Merge; a frame of
Enter, Merge, LoopCond, Switch, NextIteration and Exit; pygrad/graph_def_control_flow.py): TF imports
the GraphDef and computes pygrad's values (conds on both predicates, nested, in loops; loops with
several variables and invariants, map_fn, scan, dynamic_rnn, and their gradients, popped from
stacks), an LSTM trains five Adam steps in TF as in pygrad, and pygrad's own importer lifts what is
written back into cond and while_loop with the same values."""
import numpy as np
import pytest

import pygrad as tf

RNG = np.random.RandomState(3)
X = RNG.standard_normal((4, 3)).astype(np.float32)
SEQ = RNG.standard_normal((2, 5, 3)).astype(np.float32)


def _cond_outputs(p):
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    a, b, c = tf.cond(p, lambda: (x * 2.0, tf.constant(1.5), tf.shape(x)),
                      lambda: (tf.exp(x), tf.reduce_sum(x), tf.constant([0, 1])))
    return [a, b, c]


def _nested_cond(p):
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    q = tf.reduce_sum(x) > 0
    inner = lambda: tf.cond(q, lambda: x + 1.0, lambda: tf.constant(np.ones((4, 3), np.float32)))
    y = tf.cond(p, inner, lambda: tf.cond(tf.logical_not(q), lambda: x * x, lambda: x))
    return [y] + tf.gradients(tf.reduce_sum(y * y), [x])


def _while_vars():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    w = tf.constant(RNG.standard_normal((3, 3)).astype(np.float32))

    def body(i, v, s):
        v = tf.tanh(tf.matmul(v, w) + x)  # w and x: loop invariants
        s = tf.cond(tf.equal(i % 2, 0), lambda: s + tf.reduce_sum(v), lambda: s - 1.0)
        return i + 1, v, s
    i, v, s = tf.while_loop(lambda i, v, s: i < n, body, [0, x, 0.0])
    return [i, v, s] + tf.gradients(tf.reduce_sum(v) + s, [x, w])


def _nested_loops():
    x = tf.placeholder(tf.float32, [4, 3], name="x")

    def outer(i, v):
        j, u = tf.while_loop(lambda j, u: j < i + 1, lambda j, u: (j + 1, tf.sin(u) * 1.1), [0, v])
        return i + 1, u + v * 0.5
    _, v = tf.while_loop(lambda i, v: i < 3, outer, [0, x], maximum_iterations=5)
    return [v] + tf.gradients(tf.reduce_sum(v * v), [x])


def _map_and_scan():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    m = tf.map_fn(lambda r: tf.reduce_sum(r * r) + r, x)
    s = tf.scan(lambda acc, r: acc * 0.5 + tf.sin(r), x)
    return [m, s] + tf.gradients(tf.reduce_sum(m) + tf.reduce_sum(s * s), [x])


def _lstm():
    x = tf.placeholder(tf.float32, [2, 5, 3], name="seq")
    cell = tf.nn.rnn_cell.LSTMCell(4, initializer=tf.constant_initializer(0.1))
    out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(out[:, -1] - 0.5))
    return out, state, loss


def _dynamic_rnn():
    out, state, loss = _lstm()
    return [out, state.c, state.h] + tf.gradients(loss, tf.trainable_variables() + [tf.get_default_graph().
                                                                                   get_tensor_by_name("seq:0")])


FEEDS = {"x:0": X, "n:0": np.int32(5), "seq:0": SEQ}
CASES = {
    "cond_true": lambda: _cond_outputs(tf.constant(True)),
    "cond_false": lambda: _cond_outputs(tf.placeholder_with_default(False, [])),
    "nested_cond_true": lambda: _nested_cond(tf.constant(True)),
    "nested_cond_false": lambda: _nested_cond(tf.constant(False)),
    "while_vars_invariants_cond": _while_vars,
    "nested_loops": _nested_loops,
    "map_fn_scan": _map_and_scan,
    "dynamic_rnn": _dynamic_rnn,
}


def _build(case):
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(1)
        fetches = CASES[case]()
        feeds = {k: v for k, v in FEEDS.items() if any(op.name == k[:-2] for op in graph.get_operations())}
        init = tf.global_variables_initializer()
        with tf.Session() as s:
            s.run(init)
            ours = s.run(fetches, {graph.get_tensor_by_name(k): v for k, v in feeds.items()})
            start = s.run(tf.global_variables())
    return graph, fetches, feeds, ours, start


def _types(graph_def):
    return {n.op for n in graph_def.node}


@pytest.mark.parametrize("case", CASES)
def test_tf_runs_exported_control_flow_with_pygrads_values(tf_peer, case):
    graph, fetches, feeds, ours, start = _build(case)
    gd = graph.as_graph_def()
    assert {"Switch", "Merge"} <= _types(gd) and not {"If", "While"} & _types(gd)
    g = tf_peer.Graph()
    with g.as_default():
        tf_peer.import_graph_def(tf_peer.GraphDef.FromString(gd.SerializeToString()), name="")
        assigns = [tf_peer.assign(g.get_tensor_by_name(v.name), value)
                   for v, value in zip(graph.get_collection("variables"), start)]
        with tf_peer.Session() as s:
            s.run(assigns)
            theirs = s.run([f.name for f in fetches], feeds)
    _assert_same(ours, theirs, fetches)


def _assert_same(ours, theirs, fetches):
    """float32's 1e-5, relative to each value's largest element (sums of many terms cancel)."""
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), fetches[k].name
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max(initial=1e-1), err_msg=fetches[k].name)
