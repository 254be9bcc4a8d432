"""slim.learning and slim.evaluation against TF-Slim (the tf_slim fixture): create_train_op's
losses and variables over a few steps under each of its options; train's returned loss, its
checkpoints, summaries and resuming in logdir; evaluate_once and evaluation_loop on one checkpoint."""
import os

import numpy as np
import pytest
from slim_check import assert_values, quiet

import pygrad as tf
import pygrad.contrib.slim as slim  # noqa: PLR0402  (the import TF-Slim programs write)
from pygrad.summary.reader import read_scalars

RNG = np.random.default_rng(5)
IMAGES = RNG.standard_normal((4, 6, 6, 2)).astype(np.float32)
LABELS = np.array([0, 2, 1, 2], np.int32)


def model_loss(lib, sl):
    """A conv (batch norm) -> fully connected model's total loss (softmax cross entropy and weight
    decay) on constant inputs, and its logits."""
    x, y = lib.constant(IMAGES), lib.constant(LABELS)
    with sl.arg_scope([sl.conv2d, sl.fully_connected], weights_regularizer=sl.l2_regularizer(0.01)):
        net = sl.conv2d(x, 3, [3, 3], normalizer_fn=sl.batch_norm, normalizer_params={"decay": 0.9}, scope="conv1")
        logits = sl.fully_connected(sl.flatten(net), 3, activation_fn=None, scope="logits")
    sl.losses.softmax_cross_entropy(logits, lib.one_hot(y, 3))
    return sl.losses.get_total_loss(), logits


def _weights(lib, graph, sess):
    return {v.op.name: sess.run(v) for v in lib.global_variables() if v.graph is graph}


TRAIN_OP_CASES = {
    "defaults": {},
    "clip": {"clip_gradient_norm": 0.05},
    "multipliers": {"gradient_multipliers": {"conv1/weights": 3.0, "logits/biases": 0.5}},
    "variables-to-train": {"variables_to_train": ["logits/weights", "logits/biases"]},
    "no-update-ops": {"update_ops": []},
    "summaries-no-global-step": {"summarize_gradients": True, "global_step": None},
}


def _create_train_op_run(lib, sl, case, weights=None, steps=3):
    """(losses, variables, global step, summary tags) of `steps` runs of create_train_op's op."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        lib.set_random_seed(2)
        loss, _ = model_loss(lib, sl)
        kwargs = dict(TRAIN_OP_CASES[case])
        by_name = {v.op.name: v for v in lib.global_variables()}
        if "variables_to_train" in kwargs:
            kwargs["variables_to_train"] = [by_name[n] for n in kwargs["variables_to_train"]]
        if "gradient_multipliers" in kwargs:  # one keyed by the Variable, one by its op name
            names = list(kwargs["gradient_multipliers"].items())
            kwargs["gradient_multipliers"] = {by_name[names[0][0]]: names[0][1], names[1][0]: names[1][1]}
        train_op = sl.learning.create_train_op(loss, lib.train.MomentumOptimizer(0.1, 0.9), **kwargs)
        assert train_op in lib.get_collection(lib.GraphKeys.TRAIN_OP)
        merged = lib.summary.merge_all()
        step = lib.train.get_global_step()
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            if weights is None:
                weights = _weights(lib, graph, sess)
            for v in lib.global_variables():
                v.load(weights[v.op.name], sess)
            losses = [sess.run(train_op) for _ in range(steps)]
            tags = sorted(v.tag for v in tf.Summary.FromString(sess.run(merged)).value) if merged is not None else []
            variables = sess.run([v for v in lib.global_variables() if v.op.name != "global_step"])
            return losses, variables, (sess.run(step) if step is not None else None), tags, weights


@pytest.mark.parametrize("case", sorted(TRAIN_OP_CASES))
def test_create_train_op_matches_tf_slim(tf_slim, tf_peer, case):
    want = _create_train_op_run(tf_peer, tf_slim, case)
    got = _create_train_op_run(tf, slim, case, weights=want[4])
    assert_values(got[0], want[0], "loss")
    assert_values(got[1], want[1], "variable after training")
    assert got[2] == want[2] and got[3] == want[3]
    assert want[0][-1] != want[0][0]


def test_gradient_helpers_match_tf_slim(tf_slim, tf_peer):
    def run(lib, sl):
        graph = lib.Graph()
        with graph.as_default():
            a, b = lib.Variable([3.0, 4.0], name="a"), lib.Variable([0.5], name="b")
            pairs = [(lib.constant([3.0, 4.0]), a), (lib.constant([0.25]), b)]
            out = sl.learning.clip_gradient_norms(pairs, 1.0) + sl.learning.multiply_gradients(pairs, {a: 2.0, "b": 3})
            with lib.Session(graph=graph) as sess:
                return sess.run([g for g, _ in out])

    assert_values(run(tf, slim), run(tf_peer, tf_slim), "gradient")
    with pytest.raises(ValueError, match="must be a list"):
        slim.learning.multiply_gradients((), {"a": 1.0})
    with pytest.raises(ValueError, match="is empty"):
        slim.learning.multiply_gradients([], {})
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="multiple of `None` gradient"):
        slim.learning.multiply_gradients([(None, v)], {v: 2.0})


def _train(lib, sl, logdir, weights, number_of_steps, **kwargs):
    """slim.learning.train of model_loss for number_of_steps global steps from `weights` (by
    init_fn), saving summaries of the loss; (returned loss, variables of the newest checkpoint)."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        loss, _ = model_loss(lib, sl)
        lib.summary.scalar("loss", loss)
        train_op = sl.learning.create_train_op(loss, lib.train.GradientDescentOptimizer(0.1))
        init_fn = sl.assign_from_values_fn({k: v for k, v in weights.items() if k != "global_step"})
        result = sl.learning.train(train_op, logdir, number_of_steps=number_of_steps, init_fn=init_fn,
                                   save_summaries_secs=0.0, **kwargs)
    ckpt = tf.train.latest_checkpoint(logdir) if logdir else None
    return result, ({n: tf.train.load_variable(ckpt, n) for n, _ in tf.train.list_variables(ckpt)} if ckpt else None)


def _initial_weights(peer, tf_slim):
    """model_loss's variables as TensorFlow draws them."""
    graph = peer.Graph()
    with graph.as_default(), quiet(peer):
        peer.set_random_seed(4)
        model_loss(peer, tf_slim)
        with peer.Session(graph=graph) as sess:
            sess.run(peer.global_variables_initializer())
            return _weights(peer, graph, sess)


def test_train_matches_tf_slim_and_resumes(tf_slim, tf_peer, tmp_path):
    weights = _initial_weights(tf_peer, tf_slim)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    want = _train(tf_peer, tf_slim, theirs, weights, 3)
    got = _train(tf, slim, ours, weights, 3)
    assert_values([got[0]], [want[0]], "final loss")
    assert sorted(got[1]) == sorted(want[1])
    assert_values([got[1][k] for k in sorted(got[1])], [want[1][k] for k in sorted(want[1])], "checkpoint")
    assert tf.train.latest_checkpoint(ours) == os.path.join(ours, "model.ckpt-3")
    assert os.path.isfile(os.path.join(ours, "checkpoint")) and os.path.isfile(os.path.join(ours, "graph.pbtxt"))
    scalars = read_scalars(ours)
    assert scalars["loss"] and all(1 <= step <= 3 for step, _ in scalars["loss"])
    # Resuming: the checkpoint is restored (init_fn, which would reset the weights, is not run).
    want2 = _train(tf_peer, tf_slim, theirs, weights, 5)
    got2 = _train(tf, slim, ours, weights, 5)
    assert_values([got2[0]], [want2[0]], "final loss after resuming")
    assert got2[1]["global_step"] == want2[1]["global_step"] == 5
    assert_values([got2[1][k] for k in sorted(got2[1])], [want2[1][k] for k in sorted(want2[1])], "checkpoint")


def test_train_without_logdir_and_bad_arguments(tf_slim, tf_peer):
    weights = _initial_weights(tf_peer, tf_slim)
    want = _train(tf_peer, tf_slim, None, weights, 2)
    got = _train(tf, slim, None, weights, 2)
    assert_values([got[0]], [want[0]], "final loss")
    with pytest.raises(ValueError, match="train_op cannot be None"):
        slim.learning.train(None, None)
    loss = tf.reduce_sum(tf.Variable([1.0]) ** 2)
    train_op = slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
    with pytest.raises(ValueError, match="number_of_steps"):
        slim.learning.train(train_op, None, number_of_steps=0)
    with pytest.raises(ValueError, match="Cannot provide saver because logdir=None"):
        slim.learning.train(train_op, None, saver=tf.train.Saver())
    with pytest.raises(ValueError, match="not trainable"):
        slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1),
                                      variables_to_train=[tf.Variable(2.0, trainable=False)])


# ---------------------------------------------------------------- evaluation


def _eval_graph(lib, sl):
    """model_loss's graph with two accumulators: the sum of the logits and the number of evals."""
    loss, logits = model_loss(lib, sl)
    total = lib.Variable(0.0, trainable=False, collections=[lib.GraphKeys.LOCAL_VARIABLES], name="total")
    count = lib.Variable(0.0, trainable=False, collections=[lib.GraphKeys.LOCAL_VARIABLES], name="count")
    eval_op = [lib.assign_add(total, lib.reduce_sum(logits) + loss), lib.assign_add(count, 1.0)]
    lib.summary.scalar("eval/total", total)
    return eval_op, [total, count], lib.assign(count, 100.0)  # an initial_op, which the restore skips


def _evaluate(lib, sl, checkpoint_dir, logdir, loop):
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        eval_op, final_op, initial_op = _eval_graph(lib, sl)
        lib.train.get_or_create_global_step()
        if loop:
            return sl.evaluation.evaluation_loop("", checkpoint_dir, logdir, num_evals=3, eval_op=eval_op,
                                                 final_op=final_op, eval_interval_secs=0, initial_op=initial_op,
                                                 max_number_of_evaluations=1)
        return sl.evaluation.evaluate_once("", lib.train.latest_checkpoint(checkpoint_dir), logdir, num_evals=3,
                                           eval_op=eval_op, final_op=final_op, initial_op=initial_op)


@pytest.mark.parametrize("loop", [False, True], ids=["evaluate_once", "evaluation_loop"])
def test_evaluation_matches_tf_slim(tf_slim, tf_peer, tmp_path, loop):
    ckpt_dir = str(tmp_path / "train")
    _train(tf_peer, tf_slim, ckpt_dir, _initial_weights(tf_peer, tf_slim), 2)  # a checkpoint TF wrote, read by both
    want = _evaluate(tf_peer, tf_slim, ckpt_dir, str(tmp_path / "theirs"), loop)
    got = _evaluate(tf, slim, ckpt_dir, str(tmp_path / "ours"), loop)
    assert_values(got, want, "final_op")
    assert got[1] == 3.0
    assert read_scalars(str(tmp_path / "ours"))["eval/total"] == [(2, pytest.approx(float(got[0])))]


def test_evaluation_loop_times_out_without_checkpoints(tmp_path):
    eval_op, final_op, _ = _eval_graph(tf, slim)
    out = slim.evaluation.evaluation_loop("", str(tmp_path), str(tmp_path), eval_op=eval_op, final_op=final_op,
                                          timeout=0.2, eval_interval_secs=0)
    assert out is None
    assert slim.evaluation.wait_for_new_checkpoint(str(tmp_path), timeout=0.1, seconds_to_sleep=0.05) is None
    with pytest.raises(ValueError, match="log_dir or summary_writer"):
        slim.evaluation.SummaryAtEndHook()


def test_add_gradients_summaries_as_tf_slim(tf_slim, tf_peer):
    """slim.learning's add_gradients_summaries ('<var>/gradient', '/gradient_norm') and
    contrib.training's ('<var>_gradient', '_gradient_norm'), over a dense gradient, IndexedSlices
    and a None: TF-Slim's summary ops and bytes."""
    def run(lib, learning, training):
        with lib.Graph().as_default() as g:
            a, b, c = lib.Variable([[1.0, 2.0]], name="a"), lib.Variable(np.ones((4, 2), np.float32), name="b"), \
                lib.Variable(0.0, name="c")
            pairs = [(lib.constant([[3.0, -4.0]]), a),
                     (lib.IndexedSlices(lib.constant([[0.5, 1.5]]), lib.constant([2]), lib.constant([4, 2])), b),
                     (None, c)]
            made = learning.add_gradients_summaries(pairs) + training.add_gradients_summaries(pairs)
            with lib.Session(graph=g) as sess:
                return [s.op.name for s in made], sess.run(made)

    ours = run(tf, slim.learning, tf.contrib.training)
    assert ours == run(tf_peer, tf_slim.learning, tf_slim.training)
    assert ours[0] == ["a/gradient", "a/gradient_norm", "b/gradient", "b/gradient_norm", "a_gradient",
                       "a_gradient_norm", "b_gradient", "b_gradient_norm"]
    assert tf.Summary.FromString(ours[1][1]).value[0].simple_value == 5.0


def test_evaluate_repeatedly_and_its_parts_as_tf_slim(tf_slim, tf_peer, tmp_path):
    """slim.evaluation's evaluate_repeatedly with StopAfterNEvalsHook(3) on the checkpoint TF
    wrote: TF-Slim's final values; get_or_create_eval_step's variable (one per graph), and
    checkpoints_iterator yielding the newest checkpoint, then stopping at its timeout."""
    ckpt_dir = str(tmp_path / "train")
    _train(tf_peer, tf_slim, ckpt_dir, _initial_weights(tf_peer, tf_slim), 2)

    def run(lib, sl):
        with lib.Graph().as_default() as g, quiet(lib):
            step = sl.evaluation.get_or_create_eval_step()
            assert sl.evaluation.get_or_create_eval_step() is step
            made = (step.name, step.dtype.base_dtype.name, g.get_collection(lib.GraphKeys.EVAL_STEP) == [step],
                    step in lib.local_variables())
            eval_op, final_op, _ = _eval_graph(lib, sl)
            lib.train.get_or_create_global_step()
            final = sl.evaluation.evaluate_repeatedly(ckpt_dir, eval_ops=eval_op, final_ops=final_op,
                                                      hooks=[sl.evaluation.StopAfterNEvalsHook(3)],
                                                      eval_interval_secs=0, max_number_of_evaluations=1)
        paths = list(sl.evaluation.checkpoints_iterator(ckpt_dir, timeout=0.1))
        return made, final, paths

    ours, theirs = run(tf, slim), run(tf_peer, tf_slim)
    assert ours[0] == theirs[0] == ("eval_step:0", "int64", True, True)
    assert_values(ours[1], theirs[1], "final_ops")
    assert ours[1][1] == 3.0  # three evaluations counted
    assert ours[2] == theirs[2] == [os.path.join(ckpt_dir, "model.ckpt-2")]
