"""TF1's between-graph replication across processes: TensorFlow's mnist_replica program
(tests/mnist_replica_program.py, `import tensorflow`) run unchanged by `python -m pygrad` as one
ps and two worker processes on this machine, the variables living in the ps process (train/
cluster_service.py, train/remote_run.py). Checked: the async run reaches the test accuracy of
the same number of steps trained in one process (within 1 point); every global step is taken
once; a worker killed and started again rejoins and trains; a worker whose cluster is not there
fails with UnavailableError naming the address; credentials of another user are refused."""
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest

import pygrad as tf
from pygrad.examples.tutorials.mnist import input_data

PROGRAM = pathlib.Path(__file__).resolve().parent / "mnist_replica_program.py"
STEPS = 400


def _ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Cluster:
    """The program's tasks as processes, with their JSON events."""

    def __init__(self, tmp_path, mnist_dir, *flags):
        ps, w0, w1 = _ports(3)
        self.dir = tmp_path
        self.env = {**os.environ, "PYGRAD_CLUSTER_DIR": str(tmp_path / "cluster"), "OMP_NUM_THREADS": "1",
                    "PYGRAD_NUM_THREADS": "1"}
        self.flags = ["--ps_hosts", f"localhost:{ps}", "--worker_hosts", f"localhost:{w0},localhost:{w1}",
                      "--data_dir", mnist_dir, "--train_steps", str(STEPS), *flags]
        self.procs, self.ended = {}, []

    def start(self, job, task, *extra, env=None):
        name = f"{job}{task}"
        if name in self.procs:  # a task started again: its events from now on
            self.ended.append(self.procs[name])
        log = open(self.dir / f"{name}.{len(self.ended)}.log", "w")
        self.procs[name] = (subprocess.Popen(
            [sys.executable, "-m", "pygrad", str(PROGRAM), *self.flags, "--job_name", job, "--task_index", str(task),
             *extra], cwd=self.dir, env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT), log)
        return self.procs[name][0]

    def text(self, name):
        with open(self.procs[name][1].name) as f:
            return f.read()

    def events(self, name):
        return [json.loads(line) for line in self.text(name).splitlines() if line.startswith("{")]

    def wait_for(self, name, predicate, timeout=240):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [e for e in self.events(name) if predicate(e)]
            if found:
                return found[0]
            proc = self.procs[name][0]
            if proc.poll() is not None and not [e for e in self.events(name) if predicate(e)]:
                raise AssertionError(f"{name} ended ({proc.returncode}):\n{self.text(name)}")
            time.sleep(0.2)
        raise AssertionError(f"{name}: no such event within {timeout} s:\n{self.text(name)}")

    def stop(self):
        for proc, log in [*self.procs.values(), *self.ended]:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            log.close()


@pytest.fixture
def cluster(tmp_path, mnist_dir):
    made = []

    def make(*flags):
        made.append(Cluster(tmp_path, mnist_dir, *flags))
        return made[-1]

    yield make
    for c in made:
        c.stop()


def _one_process_accuracy(mnist_dir, steps):
    """The same model, initial values and Adam trained `steps` steps of 100 in this process."""
    mnist = input_data.read_data_sets(mnist_dir, one_hot=True)
    with tf.Graph().as_default():
        hid_w = tf.Variable(tf.truncated_normal([784, 100], stddev=1.0 / 28, seed=1))
        hid_b = tf.Variable(tf.zeros([100]))
        sm_w = tf.Variable(tf.truncated_normal([100, 10], stddev=0.1, seed=2))
        sm_b = tf.Variable(tf.zeros([10]))
        x, y_ = tf.placeholder(tf.float32, [None, 784]), tf.placeholder(tf.float32, [None, 10])
        y = tf.nn.softmax(tf.nn.xw_plus_b(tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b)), sm_w, sm_b))
        loss = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                bx, by = mnist.train.next_batch(100)
                sess.run(train, {x: bx, y_: by})
            return float(sess.run(accuracy, {x: mnist.test.images, y_: mnist.test.labels}))


def test_async_replicas_in_three_processes_train_as_one(cluster, mnist_dir):
    c = cluster()
    c.start("ps", 0)
    c.start("worker", 0)
    c.start("worker", 1)
    done = [c.wait_for(f"worker{i}", lambda e: e["event"] == "done") for i in (0, 1)]
    assert all(d["local"] > 20 for d in done)  # both trained
    assert done[0]["accuracy"] == done[1]["accuracy"]  # one model, on the ps
    one = _one_process_accuracy(mnist_dir, STEPS)
    assert abs(done[0]["accuracy"] - one) <= 0.01, (done, one)
    # Every step of every worker incremented the global step once (async: no update is lost).
    assert max(d["global_step"] for d in done) == sum(d["local"] for d in done) >= STEPS
    assert c.procs["ps0"][0].poll() is None  # the ps serves on, as TF's server.join()


def test_a_killed_worker_rejoins(cluster):
    c = cluster("--step_pause", "0.01")
    c.start("ps", 0)
    c.start("worker", 0)
    victim = c.start("worker", 1)
    c.wait_for("worker1", lambda e: e["event"] == "step")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    step_at_kill = c.wait_for("worker0", lambda e: e["event"] == "step")["step"]
    c.start("worker", 1)  # the same task again
    assert c.wait_for("worker1", lambda e: e["event"] == "ready")
    back = c.wait_for("worker1", lambda e: e["event"] == "step")
    assert back["step"] > step_at_kill  # it resumed on the model the cluster kept
    done = [c.wait_for(f"worker{i}", lambda e: e["event"] == "done") for i in (0, 1)]
    assert done[0]["accuracy"] == done[1]["accuracy"] > 0.9


def test_a_worker_without_its_cluster_fails_naming_the_address(cluster):
    c = cluster()
    worker = c.start("worker", 0, env={"PYGRAD_CLUSTER_TIMEOUT": "2"})
    assert worker.wait(120) == 1
    text = c.text("worker0")
    ps = c.flags[1]
    assert f"UnavailableError: cannot reach the cluster's /job:ps/task:0 at {ps}" in text


def test_another_users_credentials_are_refused(cluster, tmp_path):
    c = cluster()
    c.start("ps", 0)
    c.wait_for("ps0", lambda e: e["event"] == "serving")
    intruder = c.start("worker", 0, env={"PYGRAD_CLUSTER_DIR": str(tmp_path / "elsewhere"),
                                         "PYGRAD_CLUSTER_TIMEOUT": "5"})
    assert intruder.wait(120) == 1
    text = c.text("worker0")
    assert "UnavailableError: cannot reach the cluster's /job:ps/task:0" in text and "TLS" in text
    assert oct(os.stat(tmp_path / "cluster" / "credentials.json").st_mode & 0o777) == "0o600"
