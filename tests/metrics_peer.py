"""Running a streaming metric in pygrad and in TensorFlow (tf.compat.v1.metrics, graph mode) on the
same batches: one case function written against a module `m`, built in both."""
import numpy as np

import pygrad as tf

RTOL = 1e-6
COLLECTIONS = ("metric_values", "metric_updates")  # the collections cases may name


def build(m, graph, case, specs):
    """(placeholders by name, (value, update_op)) of case(m, placeholders) built in graph; a spec
    (dtype, "sparse") is a sparse placeholder, fed (indices, values, dense_shape) tuples."""
    with graph.as_default():
        phs = {k: m.sparse_placeholder(dtype(m), name=k) if shape == "sparse" else
               m.placeholder(dtype(m), shape, name=k) for k, (dtype, shape) in specs.items()}
        return phs, case(m, phs)


def stream(m, graph, case, specs, batches):
    """[(update value, value after it) per batch], then the local variables' (name, shape) and the
    value after local_variables_initializer, from one session of module m."""
    phs, (value, update) = build(m, graph, case, specs)
    out = []
    with graph.as_default(), m.Session(graph=graph) as s:
        s.run(m.local_variables_initializer())
        for batch in batches:
            feed = {phs[k]: m.SparseTensorValue(*v) if isinstance(v, tuple) else v for k, v in batch.items()
                    if k in phs}
            u = s.run(update, feed)
            out.append((u, s.run(value)))
        variables = [(v.op.name, tuple(v.shape.as_list())) for v in m.local_variables()]
        metric_variables = [v.op.name for v in graph.get_collection("metric_variables")]
        collections = {key: [t.name for t in graph.get_collection(key)] for key in COLLECTIONS}
        s.run(m.local_variables_initializer())
        reset = s.run(value) if batches else None
    return out, variables, metric_variables, reset, collections, (value.name, update.name)


def assert_same(a, b, what, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape}, TF {b.shape}"
    if b.dtype.kind in "fc":
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype}, TF {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-7, equal_nan=True, err_msg=what)
    else:
        assert np.array_equal(a, b), f"{what}: {a} != TF {b}"


def compare(peer, case, specs, batches, rtol=RTOL):
    """The metric's update and value after each batch, its local variables (names and shapes, in
    order), its METRIC_VARIABLES, the value after a reset and the tensors in COLLECTIONS agree
    with TensorFlow's."""
    tf.reset_default_graph()
    ours = stream(tf, tf.get_default_graph(), case, specs, batches)
    peer.disable_resource_variables()  # TF1's variables (RefVariable, its AssignAdd ops), as pygrad's
    try:
        theirs = stream(peer, peer.Graph(), case, specs, batches)
    finally:
        peer.enable_resource_variables()
    for i, ((u, v), (tu, tv)) in enumerate(zip(ours[0], theirs[0])):
        assert_same(u, tu, f"update op after batch {i}", rtol)
        assert_same(v, tv, f"value after batch {i}", rtol)
    assert ours[1] == theirs[1], f"local variables {ours[1]}, TF {theirs[1]}"
    assert ours[2] == theirs[2], f"metric variables {ours[2]}, TF {theirs[2]}"
    assert_same(ours[3], theirs[3], "value after local_variables_initializer", rtol)
    assert ours[4] == theirs[4], f"collections {ours[4]}, TF {theirs[4]}"
    assert ours[5] == theirs[5], f"value and update op {ours[5]}, TF {theirs[5]}"
    return ours
