"""MonitoredSession, MonitoredTrainingSession and the session run hooks, as TensorFlow 1's: hooks'
fetches and feeds, stopping, checkpoints saved and restored from checkpoint_dir, so that a run
interrupted and restarted ends where an uninterrupted one does."""
import logging
import os

import numpy as np
import pytest

import pygrad as tf


def _model(seed=1):
    """A small regression trained with Adam (slots and beta powers to restore), fed batches."""
    rng = np.random.RandomState(seed)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.get_variable("w", initializer=rng.randn(4, 1).astype(np.float32))
    b = tf.get_variable("b", initializer=np.zeros(1, np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
    return x, y, train, loss, step


def _batch(i):
    rng = np.random.RandomState(100 + i)
    xs = rng.randn(8, 4).astype(np.float32)
    return xs, xs @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.25


def _train(checkpoint_dir, last_step, stop_after=None, **kwargs):
    """Trains to last_step with MonitoredTrainingSession (leaving the with block after stop_after
    runs if given); returns the losses seen and the final variables."""
    tf.reset_default_graph()
    x, y, train, loss, step = _model()
    losses = []
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, save_checkpoint_steps=3,
                                           hooks=[tf.train.StopAtStepHook(last_step=last_step)], **kwargs) as sess:
        while not sess.should_stop():
            i = sess.run(step)
            xs, ys = _batch(i)  # the batch depends on the step, as a resumed input pipeline would
            losses.append(sess.run([train, loss], {x: xs, y: ys})[1])
            if stop_after is not None and len(losses) == stop_after:
                break
        final = {v.op.name: sess._tf_sess().run(v) for v in tf.global_variables()}
    return losses, final


def test_interrupted_training_resumes_where_an_uninterrupted_run_ends(tmp_path):
    straight, final_straight = _train(str(tmp_path / "a"), 10)
    assert len(straight) == 10 and final_straight["global_step"] == 10
    first, _ = _train(str(tmp_path / "b"), 10, stop_after=4)  # the with block is left early
    assert tf.train.latest_checkpoint(str(tmp_path / "b")).endswith("model.ckpt-4")  # saved at the end
    second, final = _train(str(tmp_path / "b"), 10)
    assert first + second == straight
    assert sorted(final) == sorted(final_straight) == ["b", "b/Adam", "b/Adam_1", "beta1_power", "beta2_power",
                                                       "global_step", "w", "w/Adam", "w/Adam_1"]
    for k in final:
        np.testing.assert_array_equal(final[k], final_straight[k], err_msg=k)
    kept = tf.train.get_checkpoint_state(str(tmp_path / "b")).all_model_checkpoint_paths
    # The restarted session saves at 4 again on start, then every 3 steps from there.
    assert [os.path.basename(p) for p in kept] == [f"model.ckpt-{s}" for s in (0, 3, 4, 7, 10)]


def test_checkpoint_saver_hook_steps_and_listener(tmp_path):
    x, y, train, loss, step = _model()
    events = []

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            events.append(global_step_value)
            return global_step_value >= 5  # asks the loop to stop

    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[Listener()])
    runs = 0
    with tf.train.SingularMonitoredSession(hooks=[hook]) as sess:
        while not sess.should_stop():
            sess.run(train, {x: _batch(0)[0], y: _batch(0)[1]})
            runs += 1
    assert events == [0, 2, 4, 6] and runs == 6
    with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided."):
        tf.train.CheckpointSaverHook(str(tmp_path))


def test_hooks_fetch_feed_and_stop():
    a = tf.placeholder(tf.float32, [], name="a")
    b = tf.placeholder(tf.float32, [], name="b")
    total = tf.Variable(0.0, name="total")
    add = tf.assign_add(total, a + b)
    before = tf.identity(total)  # a read, scheduled before the run's write
    seen = []

    class Hook(tf.train.SessionRunHook):
        def begin(self):
            seen.append("begin")

        def after_create_session(self, session, coord):
            seen.append(("created", session.run(total)))

        def before_run(self, run_context):
            assert run_context.original_args.feed_dict == {a: 1.0}
            return tf.train.SessionRunArgs({"total": before}, feed_dict={b: 10.0})

        def after_run(self, run_context, run_values):
            seen.append(run_values.results["total"])
            if run_values.results["total"] >= 10.0:
                run_context.request_stop()

        def end(self, session):
            seen.append("end")

    with tf.train.MonitoredSession(hooks=[Hook()]) as sess:
        assert sess.run(add, {a: 1.0}) == 11.0
        assert not sess.should_stop()
        assert sess.run(add, {a: 1.0}) == 22.0
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="Run called even after should_stop requested."):
            sess.run(add, {a: 1.0})
    assert seen == ["begin", ("created", 0.0), 0.0, 11.0, "end"]  # hook fetches see the value before the run

    class Clash(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(None, feed_dict={a: 2.0})

    with tf.train.MonitoredSession(hooks=[Clash()]) as sess:
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(add, {a: 1.0, b: 1.0})


def test_stop_at_step_hook():
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)
    with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=3)]) as sess:
        n = 0
        while not sess.should_stop():
            sess.run(inc)
            n += 1
    assert n == 3
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified."):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step can be specified."):
        tf.train.StopAtStepHook(1, 2)
    tf.reset_default_graph()
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook."):
        tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=1)])


@pytest.mark.parametrize("fail", [True, False])
def test_nan_tensor_hook(fail):
    v = tf.Variable(1.0, name="v")
    loss = tf.log(v - 1.0) * 0.0  # 0 * -inf: NaN
    hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=fail)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        if fail:
            with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training."):
                sess.run(v)
        else:
            sess.run(v)
            assert sess.should_stop()


def test_logging_tensor_hook(caplog):
    v = tf.Variable(0.0, name="v")
    inc = tf.assign_add(v, 1.5)
    hook = tf.train.LoggingTensorHook({"value": tf.identity(v)}, every_n_iter=2, at_end=True)
    with caplog.at_level(logging.INFO, logger="pygrad"):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run(inc)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("value")]
    assert [line.split(" (")[0] for line in lines] == ["value = 0.0", "value = 3.0", "value = 6.0", "value = 7.5"]
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        tf.train.LoggingTensorHook([v])


def test_scaffold_init_fn_and_restore_from_file(tmp_path):
    v = tf.Variable(1.0, name="v")
    set_5 = v.assign(5.0)  # built before the session finalizes the graph
    scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: sess.run(set_5))
    with tf.train.SingularMonitoredSession(scaffold=scaffold) as sess:
        assert sess.run(v) == 5.0
        path = tf.train.Saver().save(sess.raw_session(), str(tmp_path / "m"))
    assert not tf.get_default_graph().finalized  # unfinalized again on close, as TF
    tf.reset_default_graph()
    v = tf.Variable(1.0, name="v")
    with tf.train.SingularMonitoredSession(checkpoint_filename_with_path=path) as sess:
        assert sess.run(v) == 5.0
        assert tf.get_default_graph().finalized
        with pytest.raises(RuntimeError, match="Graph is finalized"):
            tf.constant(1.0)


def test_out_of_range_ends_the_with_block_quietly(tmp_path):
    v = tf.Variable(1.0, name="v")
    with tf.train.MonitoredSession() as sess:
        sess.run(v)
        raise tf.errors.OutOfRangeError(None, None, "input exhausted")
    with pytest.raises(ValueError, match="boom"):
        with tf.train.MonitoredSession() as sess:
            raise ValueError("boom")


def test_monitored_training_session_needs_a_global_step(tmp_path):
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StepCounterHook."):
        tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))


def test_step_counter_hook(caplog):
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)
    hook = tf.train.StepCounterHook(every_n_steps=2)
    with caplog.at_level(logging.INFO, logger="pygrad"), tf.train.MonitoredSession(hooks=[hook]) as sess:
        for _ in range(5):
            sess.run(inc)
    rates = [r.getMessage() for r in caplog.records if r.getMessage().startswith("global_step/sec: ")]
    assert len(rates) == 2 and hook.steps_per_sec > 0  # at steps 3 and 5 (the first trigger, at 1, only starts the clock)


def _summary_steps(logdir, module):
    """{tag: [steps]} and the steps of SessionLog START events in logdir, read with module's reader."""
    tags, starts = {}, []
    for name in sorted(os.listdir(logdir)):
        if "tfevents" not in name:
            continue
        for event in module.train.summary_iterator(os.path.join(logdir, name)):
            if event.HasField("summary") if hasattr(event, "HasField") else event.summary is not None:
                for value in event.summary.value:
                    tags.setdefault(value.tag, []).append(int(event.step))
            if (event.HasField("session_log") if hasattr(event, "HasField") else event.session_log is not None):
                starts.append(int(event.step))
    return tags, starts


def _train_with_summaries(module, logdir, steps=12):
    with module.Graph().as_default():
        v = module.Variable(3.0)
        step = module.train.get_or_create_global_step()
        loss = module.square(v)
        module.summary.scalar("loss", loss)
        train = module.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        with module.train.MonitoredTrainingSession(checkpoint_dir=logdir, save_summaries_steps=5,
                                                   save_checkpoint_secs=None, log_step_count_steps=4,
                                                   hooks=[module.train.StopAtStepHook(last_step=steps)]) as sess:
            while not sess.should_stop():
                sess.run(train)
    module.summary.FileWriterCache.clear()
    return _summary_steps(logdir, module)


def test_monitored_training_session_writes_summaries(tmp_path):
    tags, starts = _train_with_summaries(tf, str(tmp_path))
    assert tags["loss"] == [1, 6, 11]  # the step after the run that computed the summary, as TF
    assert len(tags["global_step/sec"]) == 2  # every 4 steps, the first one starting the clock
    assert starts == [1]
    series = tf.summary.read_scalars(str(tmp_path))["loss"]
    np.testing.assert_allclose([value for _, value in series], [9.0, 9.0 * 0.8 ** 10, 9.0 * 0.8 ** 20], rtol=1e-5)


def test_monitored_training_session_summaries_match_tensorflow(tmp_path):
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_eager_execution()
    ours = _train_with_summaries(tf, str(tmp_path / "pygrad"))
    theirs = _train_with_summaries(tf1, str(tmp_path / "tf"))
    # TensorFlow's hook reads the global step beside the update, before or after it as its executor
    # happens to order them, so its steps can be one lower; pygrad's are the steps after the update.
    assert len(ours[0]["loss"]) == len(theirs[0]["loss"])
    assert all(o - 1 <= t <= o for o, t in zip(ours[0]["loss"], theirs[0]["loss"]))
    assert len(ours[0]["global_step/sec"]) == len(theirs[0]["global_step/sec"])
    assert ours[1] == theirs[1]


def test_second_or_step_timer_as_tensorflow(tf_peer):
    """SecondOrStepTimer: which steps trigger, the steps since the last trigger (None first), by
    steps and by seconds (0: every new step; 1000: the first only), and TF's errors."""
    def run(lib):
        out = []
        for kwargs in ({"every_steps": 3}, {"every_secs": 0}, {"every_secs": 1000}):
            timer = lib.train.SecondOrStepTimer(**kwargs)
            for step in (0, 1, 2, 3, 3, 5, 6, 9, 20):
                fire = timer.should_trigger_for_step(step)
                if fire:
                    secs, steps = timer.update_last_triggered_step(step)
                    out.append((step, secs is None, steps, timer.last_triggered_step()))
            timer.reset()
            out.append(("reset", timer.last_triggered_step(), timer.should_trigger_for_step(20)))
        for kwargs in ({}, {"every_secs": 1, "every_steps": 1}):
            with pytest.raises(ValueError) as e:
                lib.train.SecondOrStepTimer(**kwargs)
            out.append(str(e.value))
        return out

    ours = run(tf)
    assert ours == run(tf_peer)
    assert ours[:4] == [(0, True, None, 0), (3, False, 3, 3), (6, False, 3, 6), (9, False, 3, 9)]
    assert tf.estimator.SecondOrStepTimer is tf.train.SecondOrStepTimer


def _summary_saver_run(module, logdir, use_scaffold):
    with module.Graph().as_default():
        v = module.Variable(3.0)
        step = module.train.get_or_create_global_step()
        loss = module.square(v)
        merged = module.summary.merge([module.summary.scalar("loss", loss), module.summary.histogram("v", [v])])
        train = module.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        kwargs = {"scaffold": module.train.Scaffold(summary_op=merged)} if use_scaffold else {"summary_op": merged}
        hook = module.train.SummarySaverHook(save_steps=4, output_dir=logdir, **kwargs)
        with module.train.SingularMonitoredSession(hooks=[hook]) as sess:
            for _ in range(10):
                sess.run(train)
    module.summary.FileWriterCache.clear()
    return _summary_steps(logdir, module)


@pytest.mark.parametrize("use_scaffold", [False, True], ids=["summary_op", "scaffold"])
def test_summary_saver_hook_as_tensorflow(tmp_path, tf_peer, use_scaffold):
    """SummarySaverHook every 4 steps, with a summary_op or a scaffold's: the tags, how many times
    and at which steps they are written (TF's read of the step may be one lower, as above), the
    SessionLog START; exactly one of scaffold and summary_op."""
    ours = _summary_saver_run(tf, str(tmp_path / "pygrad"), use_scaffold)
    theirs = _summary_saver_run(tf_peer, str(tmp_path / "tf"), use_scaffold)
    assert sorted(ours[0]) == sorted(theirs[0]) == ["loss", "v"]
    for tag in ("loss", "v"):
        assert len(ours[0][tag]) == len(theirs[0][tag]) == 3
        assert all(o - 1 <= t <= o for o, t in zip(ours[0][tag], theirs[0][tag]))
    assert ours[0]["loss"] == [1, 5, 9] and ours[1] == theirs[1]
    for lib in (tf, tf_peer):
        with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
            lib.train.SummarySaverHook(save_steps=1, output_dir=str(tmp_path))
    assert tf.estimator.SummarySaverHook is tf.train.SummarySaverHook is tf.contrib.slim.learning.SummarySaverHook
