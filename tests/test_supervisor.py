"""tf.train.Supervisor, SessionManager and a worker's MonitoredTrainingSession against TensorFlow
(tensorflow.compat.v1): the mnist_replica program of tests/replica_program.py (variables placed
by replica_device_setter) trained by a chief Supervisor from the same initial weights, by TF on
its in-process ps and worker servers (in a subprocess: TF's servers cannot be stopped) and by
pygrad on its server of the same cluster: the same losses and weights, checkpoints each library
restores from the other's and resumes with the same losses, the chief's checkpoint and summary
threads writing what TF's write; a worker waiting for the chief."""
import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pygrad as tf
from replica_program import W1, X, Y, model, run_chief, services, train

PROGRAM = pathlib.Path(__file__).resolve().parent / "replica_program.py"


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spec():
    return {"ps": [f"localhost:{_port()}"], "worker": [f"localhost:{_port()}"]}


@pytest.fixture
def server(tmp_path, monkeypatch):
    """pygrad's worker server of a one-ps, one-worker cluster whose ps task runs in this process
    too (so the variables placed on it stay here); (cluster spec, worker server)."""
    pytest.importorskip("distributed")  # a ps task serves through Dask
    monkeypatch.setenv("PYGRAD_CLUSTER_DIR", str(tmp_path / "cluster"))
    spec = _spec()
    ps = tf.train.Server(spec, "ps", 0)
    yield spec, tf.train.Server(spec, "worker", 0)
    del ps


def test_supervised_training_matches_tf_and_checkpoints_cross(tf_peer, server, tmp_path):
    spec, ours_server = server
    dirs = {k: str(tmp_path / k) for k in ("ours", "theirs", "services", "our_services")}
    ours = run_chief(tf, ours_server.target, spec, dirs["ours"], 8, save=True)
    their_spec = _spec()  # (pygrad's ps task holds the ports of spec)
    args = {"spec": their_spec, "ours": dirs["ours"], "theirs": dirs["theirs"], "services": dirs["services"],
            "out": str(tmp_path / "theirs.json")}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, str(PROGRAM), json.dumps(args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(args["out"]) as f:
        theirs = json.load(f)
    # "grpc://localhost:<port>" of the task's address, as TF's
    assert ours_server.target == "grpc://" + spec["worker"][0]
    assert theirs["target"] == "grpc://" + their_spec["worker"][0]
    assert ours[1] == theirs["start"] == 0
    np.testing.assert_allclose(ours[0], theirs["losses"], rtol=1e-5)
    np.testing.assert_allclose(ours[2], theirs["hid_w"], rtol=1e-5, atol=1e-6)
    # A restart: each library's chief restores the other's checkpoint and resumes at step 8, with
    # the losses pygrad resuming its own checkpoint gives.
    resumed = run_chief(tf, ours_server.target, spec, dirs["theirs"], 4, save=False)
    assert resumed[1] == theirs["resumed_start"] == 8
    np.testing.assert_allclose(resumed[0], theirs["resumed_losses"], rtol=1e-5)
    own = run_chief(tf, ours_server.target, spec, dirs["ours"], 4, save=False)
    np.testing.assert_allclose(own[0], theirs["resumed_losses"], rtol=1e-5)
    # The chief's services: the summary op's tag and the steps per second, SessionLog START,
    # CHECKPOINT and STOP, a checkpoint of a trained step, graph.pbtxt.
    tags, statuses, step, graph = services(tf, ours_server.target, spec, dirs["our_services"])
    their_tags, their_statuses, their_step, their_graph = theirs["services"]
    assert tags == their_tags == ["global_step/sec", "hid_w_norm"]
    assert statuses == their_statuses == [1, 2, 3]
    assert step > 0 and their_step > 0 and graph and their_graph


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


def test_worker_supervisor_waits_for_the_chief(server):
    """In one process, a worker's Supervisor on the server's target waits until the chief's
    session on that target has initialized the variables (TF's ready_op), then sees them."""
    spec, ours = server
    target = ours.target
    parts = model(tf, spec)
    chief = tf.train.Supervisor(is_chief=True, logdir=None, recovery_wait_secs=0.1,
                                global_step=parts["global_step"])
    worker = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.1, global_step=parts["global_step"])
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
    np.testing.assert_array_equal(got["sess"].run(parts["hid_w"]), W1)
    train(got["sess"], parts, 2, 0)  # the worker's steps move the chief's variables
    assert chief_sess.run(parts["global_step"]) == 2
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


def test_monitored_training_session_worker_joins_the_chief(server):
    """A worker's MonitoredTrainingSession on the chief's server finds the model the chief made
    ready and trains it; with no chief it gives up after max_wait_secs (it checks every 30 s, TF's
    SessionManager default, so a wait shorter than that fails at the first check, as in TF)."""
    spec, ours = server
    parts = model(tf, spec)
    with tf.train.MonitoredTrainingSession(master=ours.target, is_chief=True) as chief:
        with tf.train.MonitoredTrainingSession(master=ours.target, is_chief=False, max_wait_secs=60) as worker:
            np.testing.assert_array_equal(worker.run(parts["hid_w"]), W1)
            worker.run(parts["train"], {parts["x"]: X[:4], parts["y_"]: Y[:4]})
        assert chief.run(parts["global_step"]) == 1
    alone = tf.train.Server.create_local_server()
    with pytest.raises(tf.errors.DeadlineExceededError, match="Session was not ready after waiting 20 secs"):
        tf.train.MonitoredTrainingSession(master=alone.target, is_chief=False, max_wait_secs=20)
