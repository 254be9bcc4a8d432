"""tf.contrib.slim against TF-Slim (the tf_slim package on TensorFlow's compat.v1 graph mode): a
small model built with arg_scope and slim's layers has TF-Slim's variables, collections, outputs,
gradients, moving statistics and training steps; arg_scope behaves as TF-Slim's; slim.losses."""
import inspect

import numpy as np
import pytest
from slim_check import assert_values, compare, quiet, structure

import pygrad as tf
import pygrad.contrib.slim as slim  # noqa: PLR0402  (the import TF-Slim programs write)

RNG = np.random.default_rng(3)
IMAGES = RNG.standard_normal((4, 8, 8, 3)).astype(np.float32)
LABELS = np.array([0, 2, 1, 2], np.int32)


def model(lib, sl, x, is_training, bn_params):
    """conv (batch norm) -> max pool -> conv (batch norm) -> flatten -> dropout (off) -> fully
    connected (batch norm) -> logits, with weight decay, all through arg_scope."""
    params = {"is_training": is_training, "decay": 0.9, **bn_params}
    with sl.arg_scope([sl.conv2d, sl.fully_connected], weights_regularizer=sl.l2_regularizer(0.01),
                      normalizer_fn=sl.batch_norm, normalizer_params=params):
        with sl.arg_scope([sl.conv2d], padding="SAME", stride=1):
            net = sl.conv2d(x, 4, [3, 3], scope="conv1")
            net = sl.max_pool2d(net, [2, 2], scope="pool1")
            net = sl.conv2d(net, 5, 3)
        net = sl.flatten(net)
        net = sl.dropout(net, 0.5, is_training=False)
        net = sl.fully_connected(net, 6, scope="fc1")
        return sl.fully_connected(net, 3, activation_fn=None, normalizer_fn=None, scope="logits",
                                  biases_regularizer=sl.l1_regularizer(0.1))


BN_CASES = {
    "layer-path": {},  # 4-D, UPDATE_OPS: tf.layers' BatchNormalization (fused); 2-D: fused
    "scale-center": {"scale": True, "center": True},
    "in-place-updates": {"updates_collections": None, "scale": True},
    "not-fused": {"fused": False, "updates_collections": None},
    "zero-debias": {"zero_debias_moving_mean": True, "epsilon": 1e-4},
    "initializers": {"param_initializers": {"beta": tf.constant_initializer(0.5)}, "center": True},
}


def _bn_params(lib, case):
    params = dict(BN_CASES[case])
    if "param_initializers" in params:  # an initializer of the library that builds the model
        params["param_initializers"] = {"beta": lib.constant_initializer(0.5)}
    return params


@pytest.mark.parametrize("training", ["true", "false", "tensor"])
@pytest.mark.parametrize("case", sorted(BN_CASES))
def test_model_matches_tf_slim(tf_slim, tf_peer, case, training):
    def build(lib, sl, x):
        flag = {"true": True, "false": False}.get(training)
        if flag is None:
            flag = lib.placeholder_with_default(True, [])
        return model(lib, sl, x, flag, _bn_params(lib, case))

    compare(tf_slim, tf_peer, build, [IMAGES])


def _names(ours):
    return {k: [name for name, _ in v] for k, v in ours[0].items() if isinstance(v, list) and k != "REGULARIZATION_LOSSES"}


def test_model_variable_names_and_collections(tf_slim, tf_peer):
    ours = compare(tf_slim, tf_peer, lambda lib, sl, x: model(lib, sl, x, True, {"scale": True}), [IMAGES])
    names = _names(ours)
    assert names["MODEL_VARIABLES"][:6] == ["conv1/weights:0", "conv1/BatchNorm/gamma:0", "conv1/BatchNorm/beta:0",
                                            "conv1/BatchNorm/moving_mean:0", "conv1/BatchNorm/moving_variance:0",
                                            "Conv/weights:0"]
    assert "logits/biases:0" in names["TRAINABLE_VARIABLES"] and "conv1/biases:0" not in names["GLOBAL_VARIABLES"]
    assert ours[0]["UPDATE_OPS"] == 6 and len(ours[0]["REGULARIZATION_LOSSES"]) == 5


def _train(lib, sl, steps, weights=None):
    """Losses and final variables of `steps` SGD steps on slim's softmax loss plus the
    regularization losses, the update ops run with each step."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        if weights is None:
            lib.set_random_seed(11)
        x = lib.placeholder(lib.float32, IMAGES.shape)
        y = lib.placeholder(lib.int32, LABELS.shape)
        logits = model(lib, sl, x, True, {"scale": True})
        sl.losses.softmax_cross_entropy(logits, lib.one_hot(y, 3))
        loss = sl.losses.get_total_loss()
        with lib.control_dependencies(lib.get_collection(lib.GraphKeys.UPDATE_OPS)):
            step = lib.train.GradientDescentOptimizer(0.1).minimize(loss)
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            if weights is None:
                weights = {v.op.name: sess.run(v) for v in lib.global_variables()}
            for v in lib.global_variables():
                v.load(weights[v.op.name], sess)
            losses = [sess.run([loss, step], {x: IMAGES, y: LABELS})[0] for _ in range(steps)]
            return losses, sess.run(lib.global_variables()), weights


def test_training_steps_match_tf_slim(tf_slim, tf_peer):
    want, want_vars, weights = _train(tf_peer, tf_slim, 4)
    got, got_vars, _ = _train(tf, slim, 4, weights)
    assert_values(got, want, "loss")
    assert_values(got_vars, want_vars, "variable after training")
    assert want[-1] < want[0]


# ---------------------------------------------------------------- arg_scope


def test_arg_scope_nesting_and_reentry_as_tf_slim(tf_slim):
    def scopes(sl):
        out = []

        @sl.add_arg_scope
        def f(a, b=1, c=2, d=3):
            return (a, b, c, d)

        with sl.arg_scope([f], b=10):
            out.append(f(0))
            with sl.arg_scope([f], c=20) as inner:
                out.append(f(0, b=5))
            out.append(f(0))
        with sl.arg_scope(inner):
            out.append(f(0))
        out.append(f(0))
        out.append(tuple(sl.arg_scoped_arguments(f)))
        out.append(sl.has_arg_scope(f))
        with sl.arg_scope([f], e=1), pytest.raises(TypeError):
            f(0)
        return out

    assert scopes(slim) == scopes(tf_slim)
    assert scopes(slim)[:5] == [(0, 10, 2, 3), (0, 5, 20, 3), (0, 10, 2, 3), (0, 10, 20, 3), (0, 1, 2, 3)]


LAYERS = ["conv2d", "conv2d_transpose", "separable_conv2d", "fully_connected", "batch_norm", "layer_norm",
          "max_pool2d", "avg_pool2d", "flatten", "dropout", "one_hot_encoding", "model_variable", "variable"]


def _defaults(fn):
    """The parameters with defaults, in order, and their defaults when they are plain values
    (TF's enums for distributed variables, which pygrad has not, count as objects)."""
    def shown(p):
        plain = isinstance(p.default, (type(None), bool, int, float, str))
        return p.default if plain and p.name not in ("synchronization", "aggregation") else "<object>"

    params = inspect.signature(fn).parameters.values()
    return [(p.name, shown(p)) for p in params if p.default is not inspect.Parameter.empty]


@pytest.mark.parametrize("name", LAYERS)
def test_layer_signatures_and_arg_scoped_arguments_as_tf_slim(tf_slim, name):
    """The same arguments and defaults as TF-Slim's function; arg_scope can set each of them.
    (TF-Slim's own arg_scoped_arguments slices co_varnames from the end, which counts a function's
    local variables: its answer for its layers is not a list of their arguments.)"""
    ours, theirs = getattr(slim, name), getattr(tf_slim, name)
    defaults = _defaults(ours)
    assert defaults == _defaults(theirs)
    assert tuple(slim.arg_scoped_arguments(ours)) == tuple(n for n, _ in defaults)


def test_arg_scope_errors_as_tf_slim(tf_slim):
    def undecorated(x, y=1):
        return x

    for sl in (slim, tf_slim):
        with pytest.raises(ValueError, match="is not decorated with @add_arg_scope"), sl.arg_scope([undecorated], y=2):
            pass
        with pytest.raises(TypeError, match="list_ops_or_scope must either be a list/tuple"), \
                sl.arg_scope(sl.conv2d, padding="VALID"):
            pass
        with pytest.raises(ValueError, match="kwargs must be empty"), sl.arg_scope({}, padding="VALID"):
            pass
        with pytest.raises(AssertionError):
            sl.arg_scoped_arguments(undecorated)
        assert not sl.has_arg_scope(undecorated)


def test_arg_scope_sets_layer_defaults():
    x = tf.zeros([2, 6, 6, 3])
    with slim.arg_scope([slim.conv2d], padding="VALID", activation_fn=None):
        with slim.arg_scope([slim.conv2d], stride=2):
            a = slim.conv2d(x, 4, 3)
        b = slim.conv2d(x, 4, 3, padding="SAME")
    assert a.shape.as_list() == [2, 2, 2, 4] and b.shape.as_list() == [2, 6, 6, 4]
    assert a.op.type != "Relu" and slim.conv2d(x, 4, 3).op.type == "Relu"


# ---------------------------------------------------------------- slim.losses

LOSS_CASES = {  # (slim.losses, library, logits or predictions, one-hot labels, weights) -> loss
    "softmax_cross_entropy": lambda L, lib, p, y, w: L.softmax_cross_entropy(
        lib.constant(p), lib.constant(y), weights=w, label_smoothing=0.1),
    "sigmoid_cross_entropy": lambda L, lib, p, y, w: L.sigmoid_cross_entropy(lib.constant(p), lib.constant(y),
                                                                            weights=w),
    "sparse_softmax_cross_entropy": lambda L, lib, p, y, w: L.sparse_softmax_cross_entropy(
        lib.constant(p), lib.constant(np.argmax(y, 1).astype(np.int32)[:, None]), weights=w),
    "mean_squared_error": lambda L, lib, p, y, w: L.mean_squared_error(lib.constant(p), lib.constant(y), weights=w),
    "absolute_difference": lambda L, lib, p, y, w: L.absolute_difference(lib.constant(p), lib.constant(y),
                                                                        weights=w),
    "log_loss": lambda L, lib, p, y, w: L.log_loss(lib.constant(1 / (1 + np.exp(-p))), lib.constant(y), weights=w),
    "hinge_loss": lambda L, lib, p, y, w: L.hinge_loss(lib.constant(p), lib.constant(y)),
}


@pytest.mark.parametrize("weights", ["scalar", "per-example", "per-example-flat"])
@pytest.mark.parametrize("name", sorted(LOSS_CASES))
def test_slim_losses_as_tf_slim(tf_slim, tf_peer, name, weights):
    p = RNG.standard_normal((4, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    w = {"scalar": 2.0, "per-example": np.array([[1.0], [0.0], [2.0], [0.5]], np.float32),
         "per-example-flat": np.array([1.0, 0.0, 2.0, 0.5], np.float32)}[weights]
    results = []
    for lib, sl in ((tf, slim), (tf_peer, tf_slim)):
        with lib.Graph().as_default() as g, quiet(lib):
            loss = LOSS_CASES[name](sl.losses, lib, p, y, w)
            total = sl.losses.get_total_loss() if name != "hinge_loss" else lib.constant(0.0)
            with lib.Session(graph=g) as sess:
                results.append((sess.run([loss, total]), len(sl.losses.get_losses())))
    assert results[0][1] == results[1][1]
    assert_values(results[0][0], results[1][0], name)


def test_slim_names_point_at_one_implementation():
    assert slim.conv2d is tf.contrib.layers.conv2d is tf.contrib.layers.convolution2d
    assert slim.l2_regularizer is tf.contrib.layers.l2_regularizer
    assert slim.arg_scope is tf.contrib.framework.arg_scope
    assert slim.get_variables_to_restore is tf.contrib.framework.get_variables_to_restore
    assert tf.contrib.slim is slim
    assert structure(tf)["UPDATE_OPS"] == 0
