"""Helpers for the RNN tests (no tests here): one model-building function runs in pygrad and, when
installed, in TensorFlow 1 (compat.v1, graph mode) with the same weights; and a finite-difference
check of a model's gradients with respect to its inputs and its variables.

build(lib, placeholders) -> (outputs, state) is written once against the TF1 API; lib is pygrad
or tensorflow.compat.v1."""
import os
import warnings

import numpy as np
import pytest

import pygrad as tf
from gradcheck import tolerance


def flatten(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in flatten(item)]
    return [x]


def peer():
    """tensorflow.compat.v1 with its TF1 RNN cells (TF 2.16 on keep them in the tf_keras package,
    which TF_USE_LEGACY_KERAS selects); skips the test without them."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import tensorflow.compat.v1 as v1
        except Exception as e:  # ImportError, or a broken install
            pytest.skip(f"tensorflow is not importable: {e}")
        v1.disable_eager_execution()
        v1.logging.set_verbosity(v1.logging.ERROR)
        try:
            v1.nn.rnn_cell.BasicLSTMCell  # noqa: B018
        except (AttributeError, ImportError, RecursionError) as e:  # the last: TF's lazy loader without tf_keras
            pytest.skip(f"TensorFlow's TF1 RNN cells are not available (pip install tf-keras): {e}")
    return v1


def run_model(lib, build, inputs, weights=None, seed=0):
    """Builds build(lib, placeholders) in a new graph of lib, sets its variables to `weights`
    ({name: value}) when given, and returns {"names", "weights", "values", "grads"}: the global
    variables' names and values, the values of the outputs and the flattened final state, and the
    gradients of sum(r * value) (fixed random r per value) with respect to the inputs and the
    variables."""
    graph = lib.Graph()
    with graph.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dtype = lib.float64 if inputs[0].dtype == np.float64 else lib.float32
        placeholders = [lib.placeholder(dtype, a.shape, name=f"x{i}") for i, a in enumerate(inputs)]
        outputs, state = build(lib, placeholders)
        values = flatten(outputs) + flatten(state)
        rng = np.random.default_rng(seed)
        loss = lib.add_n([lib.reduce_sum(v * lib.constant(rng.standard_normal(v.shape.as_list()), dtype=v.dtype))
                          for v in values])
        variables = lib.global_variables()
        grads = lib.gradients(loss, placeholders + variables)
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            if weights is not None:
                for v in variables:
                    v.load(weights[v.name].astype(inputs[0].dtype), sess)
            feed = dict(zip(placeholders, inputs))
            out = sess.run({"weights": variables, "values": values, "grads": grads}, feed)
    return {"names": [v.name for v in variables], "weights": dict(zip([v.name for v in variables], out["weights"])),
            "values": out["values"], "grads": out["grads"]}


def assert_matches_tensorflow(build, inputs, seed=0):
    """The model in pygrad, with TensorFlow's initial weights, gives TensorFlow's variable names,
    outputs, final state and gradients (float32: values to 1e-5, gradients to 1e-5 relative)."""
    v1 = peer()
    want = run_model(v1, build, inputs, seed=seed)
    got = run_model(tf, build, inputs, weights=want["weights"], seed=seed)
    assert got["names"] == want["names"]
    assert len(got["values"]) == len(want["values"])
    for i, (a, b) in enumerate(zip(got["values"], want["values"])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"value {i}")
    for i, (a, b) in enumerate(zip(got["grads"], want["grads"])):
        what = f"gradient {i} ({(['x'] * len(inputs) + want['names'])[i]})"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=what)
    return got


def check_model_gradients(build, inputs, seed=0, eps=1e-6):
    """Projection check in float64 of the gradients of a fixed random weighting of the outputs and
    final state, with respect to each input and each variable: <g, v> against the central difference
    along one random direction v per tensor (inputs moved by the feed, variables by Variable.load)."""
    inputs = [np.asarray(a, dtype=np.float64) for a in inputs]
    rng = np.random.default_rng(seed)
    tf.set_random_seed(seed)  # the same initial weights every run: a check that cannot pass by chance
    placeholders = [tf.placeholder(tf.float64, a.shape) for a in inputs]
    outputs, state = build(tf, placeholders)
    values = flatten(outputs) + flatten(state)
    weights = [rng.standard_normal(v.shape.as_list()) for v in values]
    loss = tf.add_n([tf.reduce_sum(v * tf.constant(w)) for v, w in zip(values, weights)])
    variables = tf.trainable_variables()
    assert variables, "the model has no variables"
    grads = tf.gradients(loss, placeholders + variables)
    tol = tolerance(np.float64, "projection")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start = sess.run(variables)
        feed = dict(zip(placeholders, inputs))
        analytic = sess.run(grads, feed)
        for k, g in enumerate(analytic):
            assert g is not None, f"no gradient for tensor {k}"
            direction = rng.standard_normal(g.shape)

            def values_at(step):
                if k < len(inputs):
                    moved = dict(feed)
                    moved[placeholders[k]] = inputs[k] + step * direction
                    return sess.run(values, moved)
                variables[k - len(inputs)].load(start[k - len(inputs)] + step * direction, sess)
                out = sess.run(values, feed)
                variables[k - len(inputs)].load(start[k - len(inputs)], sess)
                return out

            # Each value differenced before it is weighted, as gradcheck's projection check.
            plus, minus = values_at(eps), values_at(-eps)
            numeric = sum(float(np.sum(w * (a - b))) for w, a, b in zip(weights, plus, minus)) / (2 * eps)
            exact = float(np.sum(g * direction))
            scale = float(np.sum(np.abs(g * direction)))
            name = "input" if k < len(inputs) else variables[k - len(inputs)].name
            assert abs(numeric - exact) <= tol.atol + tol.rtol * scale, \
                f"{name}: <g, v> = {exact}, central difference {numeric}"
