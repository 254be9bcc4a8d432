"""pygrad.distributed as an attacker or a fault sees it: the local cluster is reachable only with
its own credentials and listens only on 127.0.0.1; a shard refuses a bad push (wrong shape or
dtype, NaN, a replayed step, an unknown worker) without changing anything, and a rogue client's
pushes leave a run's weights exactly as without it; a bad gradient of a worker, non-finite weights,
a shard lost without a checkpoint and a lost scheduler each fail the run with an error saying so."""
import asyncio
import logging
import os
import threading
import time

import numpy as np
import pytest

import faults
import pygrad as tf
from pygrad import distributed, errors
from pygrad.distributed.shard import ParameterShard
from pygrad.distributed.spec import EVENT_TOPIC, VarSpec

from ps_testing import blobs, local_client, softmax_model, softmax_model_64

TOKENS = ["token-0", "token-1"]


# ------------------------------------------------------------------ the shard's checks, without Dask
def _shard(dtype="float64", lr=0.5, **kw):
    specs = [VarSpec("w", (3,), dtype, np.array([1.0, 2.0, 3.0], dtype))]
    return ParameterShard(0, specs, lambda: tf.train.GradientDescentOptimizer(lr), TOKENS, steps=10, **kw)


def _push(shard, worker=0, token="token-0", step=0, base=0, grads=None):
    grads = {"w": np.ones(3)} if grads is None else grads
    return asyncio.run(shard.push(worker, token, step, base, grads))


ROGUE_PUSHES = {
    "wrong shape": (dict(grads={"w": np.ones(4)}), r"the gradient of 'w' must be a float64 array of shape \(3,\), "
                                                   r"got float64 \(4,\)"),
    "wrong dtype": (dict(grads={"w": np.ones(3, np.float32)}), r"the gradient of 'w' must be a float64 array of shape \(3,\), got float32 \(3,\)"),
    "NaN": (dict(grads={"w": np.array([1.0, np.nan, 1.0])}), r"the gradient of 'w' has 1 non-finite values"),
    "infinity": (dict(grads={"w": np.array([np.inf, 1.0, -np.inf])}), r"the gradient of .w. has 2 non-finite values"),
    "not an array": (dict(grads={"w": [1.0, 1.0, 1.0]}), r"the gradient of 'w' must be a float64 array of shape \(3,\), got list"),
    "missing gradient": (dict(grads={}), r"no gradient for \['w'\]"),
    "unknown variable": (dict(grads={"w": np.ones(3), "v": np.ones(3)}), r"gradients for variables it does not hold: \['v'\]"),
    "unknown worker": (dict(worker=7), r"unknown worker or wrong token \(the run's workers are 0\.\.1\)"),
    "wrong token": (dict(token="token-1"), r"unknown worker or wrong token"),
    "step past the run": (dict(step=10), r"the step must be an integer in \[0, 10\)"),
    "future base version": (dict(base=5), r"base version 5 is not one this shard has had \(0\.\.0\)"),
}


@pytest.mark.parametrize("case", sorted(ROGUE_PUSHES))
def test_a_refused_push_changes_nothing_and_the_worker_goes_on(case):
    """Checked before the step is recorded: the same worker's good push of the same step is then
    applied (a refused push used to record its step, and every later push was a "duplicate")."""
    kw, message = ROGUE_PUSHES[case]
    shard = _shard()
    with pytest.raises(errors.InvalidArgumentError, match=r"^parameter-server shard 0 refused the push of worker "
                                                          r"\d+, step \d+: " + message):
        _push(shard, **kw)
    np.testing.assert_array_equal(asyncio.run(shard.pull())[1]["w"], [1.0, 2.0, 3.0])
    assert _push(shard, step=0)["status"] == "applied"
    np.testing.assert_array_equal(asyncio.run(shard.pull())[1]["w"], [0.5, 1.5, 2.5])
    assert asyncio.run(shard.stats())["counts"] == {"pushes": 2, "refused": 1, "applied": 1}


def test_a_replayed_step_is_refused():
    shard = _shard()
    _push(shard, step=3)
    with pytest.raises(errors.InvalidArgumentError, match=r"refused the push of worker 0, step 3: a replayed or "
                                                          r"duplicate push: this worker's last step pushed here is 3"):
        _push(shard, step=3, base=1)
    assert _push(shard, step=4, base=1)["version"] == 2


def test_non_finite_weights_fail_every_later_pull_and_push():
    """A finite gradient can still overflow the weights (float32, learning rate 1e10)."""
    shard = _shard(dtype="float32", lr=1e10)
    _push(shard, grads={"w": np.array([1e30, 0.0, 0.0], np.float32)})
    for call in (lambda: asyncio.run(shard.pull()),
                 lambda: _push(shard, step=1, base=1, grads={"w": np.zeros(3, np.float32)})):
        with pytest.raises(errors.InvalidArgumentError, match=r"^parameter-server shard 0: the weights are not finite "
                                                              r"at version 1: 'w' \(1 of 3 values\)"):
            call()


def test_a_stranger_cannot_end_a_worker():
    shard = _shard(mode="sync")
    with pytest.raises(errors.InvalidArgumentError, match=r"refused the end of worker 1: unknown worker or wrong token"):
        asyncio.run(shard.worker_done(1, "guess"))
    assert shard._required() == 2


# --------------------------------------------------------------------------- on a local cluster
@pytest.fixture(scope="module")
def cluster_client():
    pytest.importorskip("distributed")
    with local_client(__name__, workers=2, ps_shards=1) as pair:
        yield pair


def _listening(pid):
    import psutil

    return [c.laddr for c in psutil.Process(pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]


def test_every_listener_of_the_local_cluster_is_on_loopback(cluster_client):
    """The scheduler (with its HTTP server) and the nannies run in this process, the workers
    (each with its HTTP server) in their own."""
    cluster, client = cluster_client
    worker_pids = client.run(os.getpid)
    here = _listening(os.getpid())
    ports = {a.port for a in here}
    assert int(cluster.scheduler_address.rsplit(":", 1)[1]) in ports
    assert cluster.scheduler.http_server is not None and len(here) >= 1 + 1 + 3  # scheduler, HTTP, nannies
    workers = {address: _listening(pid) for address, pid in worker_pids.items()}
    for address, addrs in workers.items():
        assert int(address.rsplit(":", 1)[1]) in {a.port for a in addrs} and len(addrs) >= 2  # worker, HTTP
    everything = here + [a for addrs in workers.values() for a in addrs]
    assert {a.ip for a in everything} == {"127.0.0.1"}, everything
    assert cluster.scheduler_address.startswith("tls://127.0.0.1:")


def test_a_client_without_the_clusters_credentials_cannot_connect(cluster_client):
    from distributed.comm import connect
    from distributed.security import Security

    cluster, _ = cluster_client
    address = cluster.scheduler_address
    # Other credentials (a key and certificate of its own): the TLS handshake fails both ways.
    with pytest.raises(errors.UnavailableError, match=rf"cannot reach the Dask scheduler at {address} within 3 s"):
        distributed.connect(address, security=Security.temporary(), timeout=3)
    with pytest.raises(errors.InvalidArgumentError, match=r"speaks TLS: pass security="):
        distributed.connect(address, timeout=3)
    with pytest.raises(OSError):  # a plain TCP connection to the TLS port
        asyncio.run(connect(address.replace("tls://", "tcp://"), timeout=3))


def test_a_scheduler_without_tls_needs_insecure_and_is_warned_about(caplog):
    pytest.importorskip("distributed")
    with pytest.raises(errors.InvalidArgumentError, match=r"the Dask scheduler at tcp://127\.0\.0\.1:9 would be "
                                                          r"reached without TLS or authentication.*insecure=True"):
        distributed.connect("tcp://127.0.0.1:9", timeout=1)
    with caplog.at_level(logging.WARNING, logger="pygrad"), pytest.raises(errors.UnavailableError):
        distributed.connect("tcp://127.0.0.1:9", timeout=1, insecure=True)
    assert "connecting to the Dask scheduler at tcp://127.0.0.1:9 without TLS" in caplog.text


def test_the_dashboard_of_a_local_cluster_is_on_loopback_only():
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match=r"local_cluster binds every listener to 127\.0\.0\.1: dashboard_address must "
                                         r"be ':PORT' or '127\.0\.0\.1:PORT', got '0\.0\.0\.0:8787'"):
        distributed.local_cluster(dashboard_address="0.0.0.0:8787")


class _Rogue(threading.Thread):
    """Waits for the next run on the cluster (its start event), finds its shard from the handle
    the driver publishes, and pushes bad gradients to it, as any client of the scheduler could;
    .errors: what each push raised."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.client, self.errors, self.failure = client, {}, None
        self.known = {e["run"] for _, e in client.get_events(EVENT_TOPIC)}

    def run(self):
        from distributed import Variable
        from distributed.actor import Actor

        try:
            deadline = time.monotonic() + 30
            while not (runs := {e["run"] for _, e in self.client.get_events(EVENT_TOPIC)} - self.known):
                if time.monotonic() > deadline:  # a hang guard, not a speed check
                    raise TimeoutError("no run started within 30 s")
                time.sleep(0.05)
            (run,) = runs
            (key, address), = Variable(f"pygrad-ps-{run}", client=self.client).get(timeout=10)["shards"]
            with self.client.as_current():
                shard = Actor(ParameterShard, address, key)
            ok = {"W": np.zeros((20, 4)), "b": np.zeros(4)}
            pushes = {"wrong shape": (0, 1, {**ok, "W": np.zeros((4, 20))}),
                      "wrong dtype": (0, 1, {**ok, "b": np.zeros(4, np.float32)}),
                      "NaN": (0, 1, {**ok, "b": np.full(4, np.nan)}),
                      "replayed step": (0, 0, ok), "unknown worker": (5, 1, ok),
                      "crafted gradient": (1, 2, {"W": np.full((20, 4), 1e3), "b": np.full(4, -1e3)})}
            for name, (worker, step, grads) in pushes.items():
                try:
                    shard.push(worker, "stolen?", step, 0, grads).result(timeout=10)
                except Exception as e:
                    self.errors[name] = e
        except Exception as e:
            self.failure = e


def test_a_rogue_clients_pushes_are_refused_and_change_nothing(cluster_client):
    """Sync, float64: the same run with a rogue client pushing bad gradients meanwhile ends with
    the same weights, to the bit."""
    _, client = cluster_client
    x, y = blobs(n=1600, dtype=np.float64)
    kw = dict(workers=2, ps_shards=1, mode="sync", steps=100, batch_size=8, shuffle=False,
              optimizer=lambda: tf.train.MomentumOptimizer(0.1, 0.9), client=client, progress=False, verbose=False,
              timeout=30)
    clean = distributed.train(softmax_model_64, (x, y), **kw)
    rogue = _Rogue(client)
    rogue.start()
    attacked = distributed.train(softmax_model_64, (x, y), **kw)
    rogue.join(timeout=30)
    assert not rogue.is_alive() and rogue.failure is None, rogue.failure
    assert sorted(rogue.errors) == ["NaN", "crafted gradient", "replayed step", "unknown worker", "wrong dtype",
                                    "wrong shape"]
    for name, e in rogue.errors.items():
        assert isinstance(e, errors.InvalidArgumentError) and "refused the push" in str(e), (name, e)
    assert attacked.counts["refused"] == 6 and attacked.shard_versions == clean.shard_versions == [100]
    for n in ("W", "b"):
        assert np.isfinite(attacked.weights[n]).all()
        np.testing.assert_array_equal(attacked.weights[n], clean.weights[n])
    faults.record("a rogue client pushing bad data", pushes=6, refused=attacked.counts["refused"], weights_changed=0)


def test_a_worker_pushing_non_finite_gradients_fails_the_run(cluster_client):
    """A NaN in the data makes a worker's gradient NaN; its push is refused and the run fails,
    naming the worker, the step and the variable, instead of returning NaN weights."""
    _, client = cluster_client
    x, y = blobs(n=400)
    x[250, 3] = np.nan  # worker 1's part starts at row 200: its step 5 (batch 10, no shuffle)
    with pytest.raises(distributed.WorkerError, match=r"^worker 1 \(tls://127\.0\.0\.1:\d+\) failed: InvalidArgumentError: "
                                                      r"parameter-server shard 0 refused the push of worker 1, step 5: "
                                                      r"the gradient of 'W' has \d+ non-finite values"):
        distributed.train(softmax_model, (x, y), workers=2, steps=20, batch_size=10, shuffle=False, client=client,
                          progress=False, verbose=False, timeout=20, overlap=False)


def test_a_shard_lost_without_a_checkpoint_fails_the_run_unless_allowed(cluster_client):
    _, client = cluster_client
    x, y = blobs()
    kw = dict(workers=2, ps_shards=1, mode="async", steps=2000, batch_size=20, client=client, progress=False,
              verbose=False, timeout=30, log_every=0.05, kill_ps_at=30, overlap=False,
              optimizer=lambda: tf.train.GradientDescentOptimizer(0.1))
    with pytest.raises(errors.DataLossError, match=r"^parameter-server shard 0 died \(its worker tls://[\d.:]+ is "
                                                   r"gone\) at version \d+ or later, and there is no checkpoint to "
                                                   r"restore it from: its updates are lost.*allow_lost_updates=True"):
        distributed.train(softmax_model, (x, y), **kw)
    report = distributed.train(softmax_model, (x, y), allow_lost_updates=True, **kw)
    (failure,) = report.shard_failures
    assert failure["checkpoint"] is None and failure["restored_version"] == 0
    assert report.updates_lost == failure["version_at_failure"] > 30
    assert report.shard_versions[0] <= 4000 - report.updates_lost
    faults.record("a shard killed in a run without a checkpoint", kills=2, runs_failed=1,
                  runs_allowed_to_lose=1, updates_lost=report.updates_lost)


def test_losing_the_scheduler_is_reported_as_such():
    """The scheduler closes under a run: the error names it, not a worker. (Short connect
    timeouts: closing a cluster whose scheduler is gone waits for them.)"""
    pytest.importorskip("distributed")
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "5s"}), \
            local_client(__name__, workers=1, ps_shards=1, timeout=5) as (cluster, client):
        x, y = blobs()
        stopper = threading.Thread(target=lambda: (_wait_for_progress(client), cluster.sync(cluster.scheduler.close)),
                                   daemon=True)
        stopper.start()
        with pytest.raises(errors.UnavailableError, match=rf"^lost the Dask scheduler at {cluster.scheduler_address} "
                                                          r"\(the client is \w+\): the run cannot go on"):
            distributed.train(softmax_model, (x, y), workers=1, steps=100000, batch_size=20, client=client,
                              progress=False, verbose=False, timeout=20, log_every=0.05)
        stopper.join(timeout=10)
        assert not stopper.is_alive()
    faults.record("the scheduler lost in a run", losses=1, reported_as_scheduler=1)


def _wait_for_progress(client):
    deadline = time.monotonic() + 30
    while not any(e.get("event") == "progress" for _, e in client.get_events(EVENT_TOPIC)):
        if time.monotonic() > deadline:
            raise TimeoutError("no progress within 30 s")
        time.sleep(0.05)
