"""tf.train.Supervisor, SessionManager and a worker's MonitoredTrainingSession against TensorFlow
(tensorflow.compat.v1, run side by side): the mnist_replica program (a hidden layer, softmax,
Adam, global step, variables placed by replica_device_setter) trained by a chief Supervisor
from the same initial weights, on TF's in-process ps and worker servers and on pygrad's server
of the same cluster: the same losses, checkpoints each library restores from the other's and
resumes with the same losses; the chief's checkpoint and summary threads; a worker waiting for
the chief."""
import glob
import os
import socket
import threading
import time

import numpy as np
import pytest

import pygrad as tf

RNG = np.random.default_rng(7)
W1, B1 = RNG.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)
W2, B2 = RNG.standard_normal((16, 3)).astype(np.float32) * 0.3, np.zeros(3, np.float32)
X = RNG.standard_normal((64, 8)).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 64)]


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tf_peer):
    """TF's ps and worker servers of a one-ps, one-worker cluster, and pygrad's worker server of
    the same cluster (pygrad listens on nothing, so the addresses do not clash)."""
    tf_peer.disable_resource_variables()
    spec = {"ps": [f"localhost:{_port()}"], "worker": [f"localhost:{_port()}"]}
    servers = {"ps": tf_peer.train.Server(spec, "ps", 0), "worker": tf_peer.train.Server(spec, "worker", 0),
               "ours": tf.train.Server(spec, "worker", 0)}
    assert servers["ours"].target == servers["worker"].target
    yield spec, servers
    tf_peer.enable_resource_variables()


def _model(m, spec):
    """mnist_replica's model and its Supervisor's parts, built in a new default graph."""
    with m.device(m.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)):
        global_step = m.Variable(0, name="global_step", trainable=False)
        hid_w, hid_b = m.Variable(W1, name="hid_w"), m.Variable(B1, name="hid_b")
        sm_w, sm_b = m.Variable(W2, name="sm_w"), m.Variable(B2, name="sm_b")
        x, y_ = m.placeholder(m.float32, [None, 8]), m.placeholder(m.float32, [None, 3])
        hid = m.nn.relu(m.nn.xw_plus_b(x, hid_w, hid_b))
        y = m.nn.softmax(m.nn.xw_plus_b(hid, sm_w, sm_b))
        loss = -m.reduce_sum(y_ * m.log(m.clip_by_value(y, 1e-10, 1.0)))
        m.summary.scalar("hid_w_norm", m.reduce_sum(hid_w * hid_w))  # what the chief's summary thread writes
        train = m.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    return {"x": x, "y_": y_, "loss": loss, "train": train, "global_step": global_step, "hid_w": hid_w}


def _train(m, sess, model, steps, first):
    losses = []
    for i in range(first, first + steps):
        rows = slice(16 * (i % 4), 16 * (i % 4) + 16)
        _, loss = sess.run([model["train"], model["loss"]], {model["x"]: X[rows], model["y_"]: Y[rows]})
        losses.append(loss)
    return losses


def _run(m, target, spec, logdir, steps, save):
    """Trains `steps` steps under a chief Supervisor on logdir (restoring its newest checkpoint);
    (losses, global step before, weights after)."""
    with m.Graph().as_default():
        model = _model(m, spec)
        sv = m.train.Supervisor(is_chief=True, logdir=logdir, init_op=m.global_variables_initializer(),
                                recovery_wait_secs=1, global_step=model["global_step"], save_model_secs=0,
                                save_summaries_secs=0)
        sess = sv.prepare_or_wait_for_session(target)
        start = sess.run(model["global_step"])
        losses = _train(m, sess, model, steps, int(start))
        if save:
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
        weights = sess.run(model["hid_w"])
        sv.stop()
        sess.close()
    return losses, start, weights


def test_supervised_training_matches_tf_and_checkpoints_cross(cluster, tf_peer, tmp_path):
    spec, servers = cluster
    ours = _run(tf, servers["ours"].target, spec, str(tmp_path / "ours"), 8, save=True)
    theirs = _run(tf_peer, servers["worker"].target, spec, str(tmp_path / "theirs"), 8, save=True)
    assert ours[1] == theirs[1] == 0
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-6)
    # A restart: each library's chief restores the other's checkpoint and resumes at step 8.
    resumed_ours = _run(tf, servers["ours"].target, spec, str(tmp_path / "theirs"), 4, save=False)
    resumed_theirs = _run(tf_peer, servers["worker"].target, spec, str(tmp_path / "ours"), 4, save=False)
    assert resumed_ours[1] == resumed_theirs[1] == 8
    np.testing.assert_allclose(resumed_ours[0], resumed_theirs[0], rtol=1e-5)
    # ... with the losses training on would have given (pygrad resuming its own checkpoint).
    own = _run(tf, servers["ours"].target, spec, str(tmp_path / "ours"), 4, save=False)
    np.testing.assert_allclose(own[0], resumed_theirs[0], rtol=1e-5)


def _services(m, target, spec, logdir):
    """Trains for about 2.5 s under managed_session with 1 s checkpoint and summary services;
    (the tags of the event files, their SessionLog statuses, the newest checkpoint's step)."""
    with m.Graph().as_default():
        model = _model(m, spec)
        sv = m.train.Supervisor(logdir=logdir, global_step=model["global_step"], save_model_secs=1,
                                save_summaries_secs=1)
        with sv.managed_session(target) as sess:
            end = time.time() + 2.5
            step = 0
            while not sv.should_stop() and time.time() < end:
                _train(m, sess, model, 1, step)
                step += 1
                time.sleep(0.01)
    tags, statuses = set(), set()
    for path in glob.glob(os.path.join(logdir, "events.out.tfevents.*")):
        for event in m.train.summary_iterator(path):
            tags |= {v.tag for v in event.summary.value}
            if event.HasField("session_log"):
                statuses.add(event.session_log.status)
    step = m.train.load_variable(m.train.latest_checkpoint(logdir), "global_step")
    return tags, statuses, step, os.path.exists(os.path.join(logdir, "graph.pbtxt"))


def test_chief_services_write_what_tf_writes(cluster, tf_peer, tmp_path):
    spec, servers = cluster
    ours = _services(tf, servers["ours"].target, spec, str(tmp_path / "ours"))
    theirs = _services(tf_peer, servers["worker"].target, spec, str(tmp_path / "theirs"))
    assert ours[0] == theirs[0] == {"hid_w_norm", "global_step/sec"}
    assert ours[1] == theirs[1]  # START, CHECKPOINT, STOP
    assert ours[2] > 0 and ours[3] and theirs[3]


def test_managed_session_reraises_the_error_of_its_block(tf_peer):
    for m in (tf, tf_peer):
        with m.Graph().as_default():
            m.Variable(1.0)
            sv = m.train.Supervisor(logdir=None)
            with pytest.raises(ZeroDivisionError), sv.managed_session() as sess:
                sess.run(m.global_variables()[0])
                1 / 0
            assert sv.should_stop()


def test_report_uninitialized_variables_as_tf(tf_peer):
    out = []
    for m in (tf, tf_peer):
        with m.Graph().as_default():
            a, b = m.Variable(1.0, name="a"), m.Variable(2.0, name="b")
            c = m.Variable(3.0, name="c", collections=[m.GraphKeys.LOCAL_VARIABLES])
            report = m.report_uninitialized_variables()
            only_b = m.report_uninitialized_variables([b])
            with m.Session() as sess:
                first = sess.run(report).tolist()
                sess.run([a.initializer, c.initializer])
                out.append((first, sess.run(report).tolist(), sess.run(only_b).tolist(), report.op.device))
    assert out[0] == out[1] and out[0][0] == [b"a", b"b", b"c"]


def test_worker_supervisor_waits_for_the_chief(cluster):
    """In one process, a worker's Supervisor on the server's target waits until the chief's
    session on that target has initialized the variables (TF's ready_op), then sees them."""
    spec, servers = cluster
    target = servers["ours"].target
    model = _model(tf, spec)
    chief = tf.train.Supervisor(is_chief=True, logdir=None, recovery_wait_secs=0.1,
                                global_step=model["global_step"])
    worker = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.1, global_step=model["global_step"])
    got = {}

    def work():
        got["sess"] = worker.prepare_or_wait_for_session(target, max_wait_secs=30)
        got["at"] = time.time()

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(0.5)
    assert thread.is_alive()  # still waiting: nothing is initialized
    ready_at = time.time()
    chief_sess = chief.prepare_or_wait_for_session(target)
    thread.join(30)
    assert got["at"] >= ready_at
    np.testing.assert_array_equal(got["sess"].run(model["hid_w"]), W1)
    _train(tf, got["sess"], model, 2, 0)  # the worker's steps move the chief's variables
    assert chief_sess.run(model["global_step"]) == 2
    for sv in (chief, worker):
        sv.stop()
    # A worker with no chief gives up after max_wait_secs, as TF's.
    alone = tf.train.Server.create_local_server()  # a server whose sessions no chief initialized
    with pytest.raises(tf.errors.DeadlineExceededError, match="Session was not ready after waiting 0 secs"):
        tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.1).prepare_or_wait_for_session(
            alone.target, max_wait_secs=0.3)


def test_worker_needs_placed_variables():
    tf.Variable(1.0)
    with pytest.raises(ValueError, match="all Variables must have their device set"):
        tf.train.Supervisor(is_chief=False)


def test_monitored_training_session_worker_joins_the_chief(cluster):
    """A worker's MonitoredTrainingSession on the chief's server finds the model the chief made
    ready and trains it; with no chief it gives up after max_wait_secs (it checks every 30 s, TF's
    SessionManager default, so a wait shorter than that fails at the first check, as in TF)."""
    spec, servers = cluster
    target = servers["ours"].target
    model = _model(tf, spec)
    with tf.train.MonitoredTrainingSession(master=target, is_chief=True) as chief:
        with tf.train.MonitoredTrainingSession(master=target, is_chief=False, max_wait_secs=60) as worker:
            np.testing.assert_array_equal(worker.run(model["hid_w"]), W1)
            worker.run(model["train"], {model["x"]: X[:4], model["y_"]: Y[:4]})
        assert chief.run(model["global_step"]) == 1
    alone = tf.train.Server.create_local_server()
    with pytest.raises(tf.errors.DeadlineExceededError, match="Session was not ready after waiting 20 secs"):
        tf.train.MonitoredTrainingSession(master=alone.target, is_chief=False, max_wait_secs=20)
