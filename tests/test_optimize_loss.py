"""tf.contrib.layers.optimize_loss against a hand-written TensorFlow equivalent of TF 1.15's
contrib/layers/python/layers/optimizers.py (contrib is not in TensorFlow 2): the returned losses,
the variables and the global step over a few steps, and the summary tags, for each way of naming
the optimizer and each gradient option."""
import numpy as np
import pytest
from slim_check import assert_values, quiet

import pygrad as tf

RNG = np.random.default_rng(9)
X = RNG.standard_normal((6, 3)).astype(np.float32)
Y = RNG.standard_normal((6, 2)).astype(np.float32)
W0 = RNG.standard_normal((3, 2)).astype(np.float32)
NAMES = {"Adagrad": "AdagradOptimizer", "Adam": "AdamOptimizer", "Ftrl": "FtrlOptimizer",
         "RMSProp": "RMSPropOptimizer", "SGD": "GradientDescentOptimizer"}


def _optimizer(lib, spec, lr):
    """TF 1.15's OPTIMIZER_CLS_NAMES, and the class, callable and instance forms."""
    if spec == "Momentum":
        return lib.train.MomentumOptimizer(lr, momentum=0.9)
    if spec in NAMES:
        return getattr(lib.train, NAMES[spec])(learning_rate=lr)
    if spec == "class":
        return lib.train.AdamOptimizer(learning_rate=lr)
    if spec == "callable":
        return lib.train.MomentumOptimizer(lr, momentum=0.5)
    return lib.train.RMSPropOptimizer(0.05)  # "instance"


def _as_argument(lib, spec):
    if spec == "class":
        return lib.train.AdamOptimizer
    if spec == "callable":
        return lambda lr: lib.train.MomentumOptimizer(lr, momentum=0.5)
    if spec == "instance":
        return lib.train.RMSPropOptimizer(0.05)
    return spec


def reference(lib, loss, global_step, opts):
    """TF 1.15's optimize_loss for the options used here, written in TensorFlow."""
    with lib.variable_scope("OptimizeLoss"):
        update_ops = set(lib.get_collection(lib.GraphKeys.UPDATE_OPS))
        if update_ops:
            with lib.control_dependencies(list(update_ops)):
                loss = lib.identity(loss)
        lr = lib.get_variable("learning_rate", [], trainable=False, initializer=lib.constant_initializer(opts["lr"]))
        if opts.get("decay"):
            lr = lib.train.exponential_decay(lr, global_step, 2, 0.5)
            lib.summary.scalar("learning_rate", lr)
        opt = _optimizer(lib, opts["optimizer"], lr)
        variables = [lib.trainable_variables()[0]] if opts.get("first_variable") else lib.trainable_variables()
        grads = opt.compute_gradients(loss, variables)
        if "multipliers" in opts:
            grads = [(g * lib.constant(opts["multipliers"].get(v.name, 1.0)), v) for g, v in grads]
        lib.summary.scalar("global_norm/gradient_norm", lib.global_norm([g for g, _ in grads]))
        if "clip" in opts:
            clipped, _ = lib.clip_by_global_norm([g for g, _ in grads], opts["clip"])
            grads = list(zip(clipped, [v for _, v in grads]))
        lib.summary.scalar("loss", loss)
        if "clip" in opts:
            lib.summary.scalar("global_norm/clipped_gradient_norm", lib.global_norm([g for g, _ in grads]))
        step = None if opts.get("no_increment") else global_step
        update = opt.apply_gradients(grads, global_step=step, name="train")
        with lib.control_dependencies([update]):
            return lib.identity(loss)


def ours(loss, global_step, opts):
    kwargs = {}
    if opts.get("decay"):
        kwargs["learning_rate_decay_fn"] = lambda lr, gs: tf.train.exponential_decay(lr, gs, 2, 0.5)
    if "multipliers" in opts:
        var = tf.trainable_variables()[0]  # one keyed by the Variable, the other by its name
        kwargs["gradient_multipliers"] = {var if k == var.name else k: m for k, m in opts["multipliers"].items()}
    if "clip" in opts:
        kwargs["clip_gradients"] = opts["clip"]
    if opts.get("first_variable"):
        kwargs["variables"] = [tf.trainable_variables()[0]]
    if opts.get("no_increment"):
        kwargs["increment_global_step"] = False
    return tf.contrib.layers.optimize_loss(loss, global_step, opts["lr"], _as_argument(tf, opts["optimizer"]),
                                           **kwargs)


def run(lib, opts, steps=4):
    """(losses, variables, global step, summary tags) of steps runs of the train tensor on a
    linear model whose forward pass also counts its runs through an update op."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        global_step = lib.train.get_or_create_global_step()
        w = lib.Variable(W0, name="w")
        b = lib.Variable(np.zeros(2, np.float32), name="b")
        counter = lib.Variable(0.0, trainable=False, name="counter")
        lib.add_to_collection(lib.GraphKeys.UPDATE_OPS, lib.assign_add(counter, 1.0))
        loss = lib.reduce_mean(lib.square(lib.matmul(lib.constant(X), w) + b - Y))
        train = reference(lib, loss, global_step, opts) if lib is not tf else ours(loss, global_step, opts)
        merged = lib.summary.merge_all()
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            losses = [sess.run(train) for _ in range(steps)]
            tags = sorted(v.tag for v in tf.Summary.FromString(sess.run(merged)).value)
            return losses, sess.run([w, b, counter]), sess.run(global_step), tags


CASES = {
    **{name: {"optimizer": name, "lr": 0.1} for name in ("SGD", "Adam", "Adagrad", "Momentum", "RMSProp", "Ftrl")},
    "class": {"optimizer": "class", "lr": 0.05},
    "callable": {"optimizer": "callable", "lr": 0.05},
    "instance": {"optimizer": "instance", "lr": 0.05},
    "clip-decay": {"optimizer": "SGD", "lr": 0.5, "clip": 0.3, "decay": True},
    "multipliers": {"optimizer": "Momentum", "lr": 0.1, "multipliers": {"w:0": 0.5, "b:0": 3.0}},
    "variables-no-increment": {"optimizer": "SGD", "lr": 0.1, "first_variable": True, "no_increment": True},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_optimize_loss_matches_tf(tf_peer, case):
    want = run(tf_peer, CASES[case])
    got = run(tf, CASES[case])
    assert_values(got[0], want[0], "loss")
    assert_values(got[1], want[1], "variable after training")
    assert got[2] == want[2] and got[3] == want[3]
    assert want[0][-1] < want[0][0]


def test_optimize_loss_clip_function_and_noise():
    loss = tf.reduce_sum(tf.Variable([3.0, 4.0]) ** 2)
    seen = []

    def clip(grads_and_vars):
        seen.append(len(grads_and_vars))
        return [(g * 0.0, v) for g, v in grads_and_vars]

    step = tf.contrib.layers.optimize_loss(loss, None, 0.1, "SGD", clip_gradients=clip, gradient_noise_scale=1.0,
                                           summaries=["gradients", "gradient_norm"])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [sess.run(step) for _ in range(2)] == [25.0, 25.0]  # the clip function zeroed the noisy gradients
    assert seen == [1]


def test_optimize_loss_bad_arguments():
    loss = tf.reduce_sum(tf.Variable([3.0, 4.0]) ** 2)
    opt = tf.contrib.layers.optimize_loss
    with pytest.raises(ValueError, match="Optimizer name should be one of"):
        opt(loss, None, 0.1, "Nope")
    with pytest.raises(ValueError, match="Learning rate is None"):
        opt(loss, None, None, "SGD")
    with pytest.raises(ValueError, match="Summaries should be one of"):
        opt(loss, None, 0.1, "SGD", summaries=["weights"])
    with pytest.raises(ValueError, match="Unknown type <class 'int'> for clip_gradients"):
        opt(loss, None, 0.1, "SGD", clip_gradients=1)
    with pytest.raises(ValueError, match="Learning rate should be 0d Tensor or float"):
        opt(loss, None, 1, "SGD")
    with pytest.raises(ValueError, match="global_step is required"):
        opt(loss, None, 0.1, "SGD", learning_rate_decay_fn=lambda lr, gs: lr)
    with pytest.raises(ValueError, match="function should return subclass of Optimizer"):
        opt(loss, None, 0.1, lambda lr: None)
    with pytest.raises(ValueError, match="must be a scalar"):
        opt(tf.constant([1.0, 2.0]), None, 0.1, "SGD")


def test_adaptive_clipping_fn_matches_tf_slim(tf_slim, tf_peer):
    """adaptive_clipping_fn against TF-Slim's over 8 steps of fed gradients whose norm jumps at
    steps 5 and 7: the clipped gradients (dense and IndexedSlices), the moving statistics of the
    log-norm (with a global step: a faster start), a static bound, the summary's name."""
    rng = np.random.default_rng(3)
    scales = [1.0, 1.2, 0.9, 1.1, 30.0, 1.0, 500.0, 1.0]
    grads = [(rng.standard_normal((3, 2)) * s).astype(np.float32) for s in scales]
    rows = [(rng.standard_normal((2, 4)) * s).astype(np.float32) for s in scales]

    def run(lib, clip_fn):
        with lib.Graph().as_default() as g, quiet(lib):
            step = lib.train.get_or_create_global_step()
            a, b = lib.Variable(np.zeros((3, 2), np.float32), name="a"), lib.Variable(np.zeros((5, 4), np.float32))
            ga, gb = lib.placeholder(lib.float32, [3, 2]), lib.placeholder(lib.float32, [2, 4])
            pairs = [(ga, a), (lib.IndexedSlices(gb, lib.constant([4, 1]), lib.constant([5, 4])), b)]
            kwargs = dict(std_factor=1.5, decay=0.9, global_step=step, report_summary=True, name="clip")
            clipped = clip_fn(**kwargs)(pairs) + clip_fn(static_max_norm=2.0, name="static")(pairs)
            out = [g_ if i % 2 == 0 else g_.values for i, (g_, _) in enumerate(clipped)]
            tick = lib.assign_add(step, 1)
            stats = sorted(lib.global_variables()[3:], key=lambda v: v.name)
            with lib.Session(graph=g) as sess:
                sess.run(lib.global_variables_initializer())
                got = []
                for x, r in zip(grads, rows):
                    got.append(sess.run(out, {ga: x, gb: r}))
                    sess.run(tick)
                summaries = [s.op.name for s in g.get_collection(lib.GraphKeys.SUMMARIES)]
                return got, [v.name for v in stats], sess.run(stats), summaries

    ours = run(tf, tf.contrib.layers.adaptive_clipping_fn)
    theirs = run(tf_peer, tf_slim.adaptive_clipping_fn)
    for i, (o, t) in enumerate(zip(ours[0], theirs[0])):
        assert_values(o, t, f"clipped gradients at step {i + 1}")
    assert ours[1] == theirs[1] == ["clip/mean:0", "clip/sq_mean:0", "static/mean:0", "static/sq_mean:0"]
    assert_values(ours[2], theirs[2], "moving statistics")
    assert ours[3] == theirs[3]
    # the jumps were clipped, the steady steps were not
    assert np.linalg.norm(ours[0][4][0]) < 0.2 * np.linalg.norm(grads[4])
    np.testing.assert_allclose(ours[0][1][0], grads[1], rtol=1e-6)
