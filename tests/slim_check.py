"""Cross-checks against TF-Slim (the tf_slim fixture): one model function, written against a module
`lib` (pygrad or tensorflow.compat.v1) and its slim (tf.contrib.slim or tf_slim), built in both;
TensorFlow draws the initial values and pygrad loads them; then the variables' names, shapes and
collections, the outputs, the gradients and the variables after the update ops must agree."""
import contextlib
import warnings

import numpy as np

import pygrad as tf

COLLECTIONS = ("GLOBAL_VARIABLES", "TRAINABLE_VARIABLES", "MODEL_VARIABLES", "LOCAL_VARIABLES")
TOL = 1e-5  # relative to each tensor's largest magnitude (sums of products cancel to near 0)


@contextlib.contextmanager
def quiet(lib):
    """TensorFlow's deprecation warnings of tf.layers and tf_slim ignored (pygrad's still raise)."""
    with warnings.catch_warnings():
        if lib is not tf:
            warnings.simplefilter("ignore")
        yield


def structure(lib):
    """{collection: [(name, shape)]} of the variable collections, the number of update ops and
    the names of the regularization losses."""
    keys = lib.GraphKeys
    out = {k: [(v.name, tuple(v.shape.as_list())) for v in lib.get_collection(getattr(keys, k))] for k in COLLECTIONS}
    out["UPDATE_OPS"] = len(lib.get_collection(keys.UPDATE_OPS))
    out["REGULARIZATION_LOSSES"] = [t.name for t in lib.get_collection(keys.REGULARIZATION_LOSSES)]
    return out


def run(lib, slim, build, inputs, weights=None, seed=7):
    """(structure, fetched, variables after the updates, initial weights) of build(lib, slim,
    *placeholders) in a new graph: fetched is the outputs, then the gradients of sum(c * output)
    (c fixed random) wrt the float inputs and the trainable variables. weights {op name: value}
    are loaded; None draws them (seeded) and returns them."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        if weights is None:
            lib.set_random_seed(seed)
        xs = [lib.placeholder(lib.as_dtype(a.dtype), a.shape) for a in inputs]
        outs = build(lib, slim, *xs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        rng = np.random.default_rng(seed)
        floats = [o for o in outs if o.dtype.is_floating]
        cs = [rng.standard_normal(o.shape.as_list()).astype(o.dtype.as_numpy_dtype) for o in floats]
        wrt = [x for x in xs if x.dtype.is_floating] + lib.trainable_variables()
        grads = lib.gradients([lib.reduce_sum(o * c) for o, c in zip(floats, cs)], wrt) if floats and wrt else []
        grads = [lib.convert_to_tensor(g) for g in grads if g is not None]
        updates = lib.get_collection(lib.GraphKeys.UPDATE_OPS)
        feed = dict(zip(xs, inputs))
        with lib.Session(graph=graph) as sess:
            sess.run([lib.global_variables_initializer(), lib.local_variables_initializer()])
            if weights is None:
                weights = {v.op.name: sess.run(v) for v in lib.global_variables()}
            else:
                for v in lib.global_variables():
                    v.load(weights[v.op.name], sess)
            fetched = sess.run(outs + grads, feed)
            if updates:
                sess.run(updates, feed)
            after = sess.run(lib.global_variables())
        return structure(lib), fetched, after, weights


def assert_values(ours, theirs, what, tol=TOL):
    assert len(ours) == len(theirs), f"{what}: {len(ours)} values, TF-Slim {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{what} {i}: {a.dtype} {a.shape}, TF {b.dtype} {b.shape}"
        if b.dtype.kind == "f":
            scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=f"{what} {i} against TF-Slim")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what} {i} against TF-Slim")


def compare(tf_slim, peer, build, inputs, seed=7, tol=TOL):
    """build's structure and values agree between pygrad's slim and TF-Slim; returns pygrad's run.
    tol: TOL, or more for a deep net whose float32 rounding grows through the layers."""
    theirs = run(peer, tf_slim, build, inputs, seed=seed)
    ours = run(tf, tf.contrib.slim, build, inputs, weights=theirs[3], seed=seed)
    assert ours[0] == theirs[0]
    assert_values(ours[1], theirs[1], "output or gradient", tol)
    assert_values(ours[2], theirs[2], "variable after the updates", tol)
    return ours
