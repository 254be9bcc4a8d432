"""pygrad's cond and while_loop exported as TF1's dataflow control flow (Switch and Merge; a frame of
Enter, Merge, LoopCond, Switch, NextIteration and Exit; pygrad/graph_def_control_flow.py): TF imports
the GraphDef and computes pygrad's values (conds on both predicates, nested, in loops; loops with
several variables and invariants, map_fn, scan, dynamic_rnn, and their gradients, popped from
stacks), and pygrad's own importer lifts what is written back into cond and while_loop with the
same values. (tests/test_graph_def_export.py trains an LSTM five Adam steps in TF as in pygrad.)"""
import numpy as np
import pytest

import pygrad as tf
from pygrad.graph_def import NotExportableError

RNG = np.random.RandomState(3)
X = RNG.standard_normal((4, 3)).astype(np.float32)
SEQ = RNG.standard_normal((2, 5, 3)).astype(np.float32)


# Each case builds its values and returns (values, the tensors their gradients are taken for).


def _cond_outputs(p):
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    a, b, c = tf.cond(p, lambda: (x * 2.0, tf.constant(1.5), tf.shape(x)),
                      lambda: (tf.exp(x), tf.reduce_sum(x), tf.constant([0, 1])))
    return [a, b, c], [x]


def _nested_cond(p):
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    q = tf.reduce_sum(x) > 0
    inner = lambda: tf.cond(q, lambda: x + 1.0, lambda: tf.constant(np.ones((4, 3), np.float32)))
    return [tf.cond(p, inner, lambda: tf.cond(tf.logical_not(q), lambda: x * x, lambda: x))], [x]


def _while_vars():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    w = tf.constant(RNG.standard_normal((3, 3)).astype(np.float32))

    def body(i, v, s):
        v = tf.tanh(tf.matmul(v, w) + x)  # w and x: loop invariants
        s = tf.cond(tf.equal(i % 2, 0), lambda: s + tf.reduce_sum(v), lambda: s - 1.0)
        return i + 1, v, s
    return list(tf.while_loop(lambda i, v, s: i < n, body, [0, x, 0.0])), [x, w]


def _nested_loops():
    x = tf.placeholder(tf.float32, [4, 3], name="x")

    def outer(i, v):
        j, u = tf.while_loop(lambda j, u: j < i + 1, lambda j, u: (j + 1, tf.sin(u) * 1.1), [0, v])
        return i + 1, u + v * 0.5
    return list(tf.while_loop(lambda i, v: i < 3, outer, [0, x], maximum_iterations=5)), [x]


def _map_and_scan():
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    return [tf.map_fn(lambda r: tf.reduce_sum(r * r) + r, x), tf.scan(lambda acc, r: acc * 0.5 + tf.sin(r), x)], [x]


def _lstm():
    x = tf.placeholder(tf.float32, [2, 5, 3], name="seq")
    cell = tf.nn.rnn_cell.LSTMCell(4, initializer=tf.constant_initializer(0.1))
    out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return out, state, tf.reduce_mean(tf.square(out[:, -1] - 0.5))


def _dynamic_rnn():
    out, state, _ = _lstm()
    return [out, state.c, state.h], tf.trainable_variables() + [tf.get_default_graph().get_tensor_by_name("seq:0")]


FEEDS = {"x:0": X, "n:0": np.int32(5), "seq:0": SEQ, "p:0": False}
CASES = {
    "cond_true": lambda: _cond_outputs(tf.constant(True)),
    "cond_false": lambda: _cond_outputs(tf.placeholder(tf.bool, [], name="p")),
    "nested_cond_true": lambda: _nested_cond(tf.constant(True)),
    "nested_cond_false": lambda: _nested_cond(tf.constant(False)),
    "while_vars_invariants_cond": _while_vars,
    "nested_loops": _nested_loops,
    "map_fn_scan": _map_and_scan,
    "dynamic_rnn": _dynamic_rnn,
}


def _build(case, grads=True):
    """(graph, fetches, feeds, pygrad's values, the variables' initial values); grads: the
    gradients of sum(sin(value)) for the values that are floats are fetched too."""
    graph = tf.Graph()
    with graph.as_default():
        fetches, xs = CASES[case]()
        if grads:
            fetches += tf.gradients([tf.reduce_sum(tf.sin(v)) for v in fetches if v.dtype.is_floating], xs)
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
    _assert_same(ours, _imported_values(tf_peer, gd.SerializeToString(), graph, start, fetches, feeds), fetches)


def _imported_values(t, data, graph, start, fetches, feeds):
    """The fetches run by t (TF, or pygrad) from the GraphDef's bytes, graph's variables assigned start."""
    g = t.Graph()
    with g.as_default():
        t.import_graph_def(t.GraphDef.FromString(data), name="")
        assert t is not tf or {"If", "While"} & {op.type for op in g.get_operations()}
        assigns = [t.assign(g.get_tensor_by_name(v.name), value)
                   for v, value in zip(graph.get_collection("variables"), start)]
        with t.Session() as s:
            s.run(assigns)
            return s.run([f.name for f in fetches], feeds)


def _assert_same(ours, theirs, fetches):
    """float32's 1e-5, relative to each value's largest element (sums of many terms cancel)."""
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), fetches[k].name
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max(initial=1e-1), err_msg=fetches[k].name)


@pytest.mark.parametrize("case", [c for c in CASES if c not in ("map_fn_scan", "dynamic_rnn")])
def test_pygrads_importer_lifts_what_is_written(case):
    """export, then pygrad's import_graph_def (which lifts TF1's Switch/Merge and frames into cond
    and while_loop): the same values under the same names. Without gradients and TensorArrays: the
    importer rebuilds TF1's loop gradients from the loss rather than reading stacks, and reads
    TensorArrays as TF's resources, not as the value ops pygrad writes them as."""
    graph, fetches, feeds, ours, start = _build(case, grads=False)
    _assert_same(ours, _imported_values(tf, graph.as_graph_def().SerializeToString(), graph, start, fetches, feeds),
                 fetches)


def _bumped_sum(t):
    """A loop whose body waits for an update made outside it: t is pygrad or TF."""
    v = t.Variable(1.0, name="v")
    bump = t.assign_add(v, 1.0, name="bump")

    def body(i, s):
        with t.control_dependencies([bump]):
            return i + 1, s + t.identity(v)
    return t.while_loop(lambda i, s: i < 3, body, [0, 0.0])[1]


def test_a_control_input_from_outside_a_loop_enters_its_frame(tf_peer):
    """In TF the exported body waits for the update, through the Enter of its output, as the same
    program built in TF does (TF's WhileContext brings it in so)."""
    graph = tf.Graph()
    with graph.as_default():
        s = _bumped_sum(tf)
        init = tf.global_variables_initializer()
    exported = graph.as_graph_def().SerializeToString()
    with tf_peer.Graph().as_default():
        tf_peer.import_graph_def(tf_peer.GraphDef.FromString(exported), name="")
        theirs = _init_and_run(tf_peer, init.name, s.name)
    with tf_peer.Graph().as_default():
        native = _bumped_sum(tf_peer)
        expected = _init_and_run(tf_peer, tf_peer.global_variables_initializer(), native)
    assert theirs == expected == 6.0


def _init_and_run(peer, init, fetch):
    with peer.Session() as sess:
        sess.run(init)
        return sess.run(fetch)


def test_a_cond_without_outputs_raises_naming_it_and_its_line():
    p = tf.placeholder(tf.bool, [], name="p")
    tf.cond(p, lambda: None, lambda: None)
    with pytest.raises(NotExportableError, match=r"If 'cond/If'.*without outputs(.|\n)*test_graph_def_control_flow"):
        tf.get_default_graph().as_graph_def()
