"""Feature columns cross-checked with TensorFlow 1 (the tf_peer fixture): one case, written against
a module `m` (pygrad or tensorflow.compat.v1) and its feature_column, built and run in both; TF's
initial variable values are copied into pygrad, then outputs and gradients must agree."""
import warnings

import numpy as np

import pygrad as tf

TOL = dict(rtol=1e-5, atol=1e-6)


def dense(grad, shape):
    """A gradient's value as an array (an IndexedSlicesValue summed into its rows)."""
    if hasattr(grad, "indices"):
        out = np.zeros(shape, grad.values.dtype)
        np.add.at(out, np.asarray(grad.indices), grad.values)
        return out
    return np.asarray(grad)


def run_case(m, case, features, values=None, seed=0):
    """(variables [(name, shape)], their values, [output, gradients of sum(w * output) wrt the
    trainable variables...]) of case(m, features made by features(m)); values: the variables' values
    to assign first (by name)."""
    graph = m.Graph()
    with graph.as_default():
        feats, feed = features(m)
        out = case(m, feats)
        variables = m.global_variables()
        trainable = m.trainable_variables()
        rng = np.random.default_rng(seed)
        w = m.placeholder(m.float32, name="cotangent")
        grads = m.gradients(m.reduce_sum(out * w), trainable) if trainable else []
        with m.Session(graph=graph) as s:
            s.run([m.global_variables_initializer(), m.tables_initializer()])
            if values is not None:
                for v in variables:
                    v.load(values[v.name], s)
            else:  # TF's side: zero-initialized weights (a linear model's) get random values, to show in the output
                for v in variables:
                    if not s.run(v).any():
                        v.load(np.random.default_rng(1).standard_normal(v.shape.as_list()).astype(np.float32), s)
            got = s.run(out, feed)
            feed = {**feed, w: rng.standard_normal(got.shape).astype(np.float32)}
            outs = [got] + [dense(g, v.shape.as_list()) for g, v in zip(s.run(grads, feed), trainable)]
            names = [(v.name, tuple(v.shape.as_list())) for v in variables]
            return names, dict(zip([v.name for v in variables], s.run(variables))), outs


def compare(peer, case, features, tol=None):
    """case's variables (names, shapes), output and gradients agree between pygrad and TF (TF's
    initial values copied in); returns TF's output."""
    with warnings.catch_warnings():  # TF's deprecation warnings (tests turn warnings into errors)
        warnings.simplefilter("ignore")
        names, values, theirs = run_case(peer, case, features)
    our_names, _, ours = run_case(tf, case, features, values)
    assert our_names == names
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape, f"result {i}: shape {a.shape}, TF's {b.shape}"
        np.testing.assert_allclose(a, b, **(tol or TOL), err_msg=f"result {i}")
    return theirs[0]


def const_features(**arrays):
    """features(m): each array (or (indices, values, dense_shape) triple: a SparseTensor) a constant."""
    def features(m):
        out = {}
        for k, a in arrays.items():
            if isinstance(a, tuple):
                out[k] = m.SparseTensor(np.asarray(a[0], np.int64), np.asarray(a[1]), np.asarray(a[2], np.int64))
            else:
                out[k] = m.constant(np.asarray(a))
        return out, {}
    return features
