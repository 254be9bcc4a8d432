"""The driver: starts (or joins) a Dask cluster, places the shards, runs the workers, watches
for failures and gathers the report.

The driver is the one coordinator: it builds the model once to learn the variables and their
initial values, partitions them over the shards, publishes the shards' actor handles in a Dask
`Variable` (with a generation number), and every few hundred milliseconds checks that each
shard's worker is still in the scheduler's list. A shard whose worker died is created anew on a
parameter-server worker (the restarted one, once its nanny has brought it back) from its last
checkpoint, and the new handle is published; the workers pick it up when a push fails. Killed
workers need nothing from the driver: the scheduler runs their task again on the restarted
worker, and the task resumes after the last step the shards recorded from it.
"""
import logging
import math
import os
import secrets
import signal
import threading
import time
import uuid

import numpy as np

from pygrad import errors
from pygrad.distributed import placement
from pygrad.distributed.report import Report, merge_counters
from pygrad.distributed.transport import remove_local_files
from pygrad.distributed.spec import (
    EVENT_TOPIC,
    Job,
    VarSpec,
    WorkerError,
    quiet_dead_actor_calls,
    read_model,
)

_log = logging.getLogger("pygrad")


LOOPBACK = "127.0.0.1"
SHARD_CHECK_SECONDS = 0.5  # how often the driver checks that each shard's worker is alive


def local_cluster(workers=2, ps_shards=1, threads_per_worker=1, dashboard_address=None, silence_logs=logging.WARNING,
                  security=None):
    """A Dask cluster on this machine for a parameter-server run: one process (under a nanny that
    restarts it) per shard, with the resource "ps", and one per worker, with the resource
    "compute"; each with one Dask thread and threads_per_worker pygrad threads.

    Only its owner can reach it: every connection is TLS with mutual authentication, by default
    with a key and certificate made for this cluster that only this process holds
    (`Security.temporary()`, in memory; reach them as `cluster.security`), and every listener
    (scheduler, nannies, workers and their HTTP servers) is bound to 127.0.0.1. dashboard_address
    ":PORT" or "127.0.0.1:PORT" turns the dashboard on; None serves only the scheduler's metrics,
    on a free port."""
    import dask
    from distributed import Nanny, Scheduler, SpecCluster
    from distributed.security import Security

    if security is None:
        security = Security.temporary()  # with require_encryption=True
    if dashboard_address is not None:
        host, _, port = str(dashboard_address).rpartition(":")
        if host not in ("", LOOPBACK, "localhost") or not port.isdigit():
            raise ValueError(f"local_cluster binds every listener to {LOOPBACK}: dashboard_address must be ':PORT' or "
                             f"'{LOOPBACK}:PORT', got {dashboard_address!r}")
        dashboard_address = f"{LOOPBACK}:{port}"
    env = {"PYGRAD_NUM_THREADS": str(threads_per_worker), "OMP_NUM_THREADS": str(threads_per_worker)}
    tls = {"security": security, "protocol": "tls://", "host": LOOPBACK}

    def spec(resource):
        return {"cls": Nanny, "options": {"nthreads": 1, "resources": {resource: 1}, "memory_limit": 0, "env": env,
                                          "dashboard": False, "dashboard_address": f"{LOOPBACK}:0",
                                          "silence_logs": silence_logs, **tls}}

    specs = {f"ps-{k}": spec("ps") for k in range(ps_shards)}
    specs.update({f"worker-{i}": spec("compute") for i in range(workers)})
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": dashboard_address or f"{LOOPBACK}:0",
                                               "dashboard": dashboard_address is not None, **tls}}
    # Dask's nannies set MALLOC_TRIM_THRESHOLD_ before they spawn a worker, which turns off glibc's
    # sliding mmap threshold there: every array above 128 kB (a batch, a gradient) is then a fresh
    # mapping, page-faulted in at each step. Unset, each process keeps glibc's default.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return SpecCluster(workers=specs, scheduler=scheduler, silence_logs=silence_logs, name="pygrad-ps",
                           security=security)


def connect(scheduler, security=None, timeout=10.0, insecure=False):
    """A Dask Client of the scheduler at this address, or of a cluster object (with its own
    security). Over TLS with a `distributed.security.Security`; without one, a scheduler address
    that is not tls:// is refused unless insecure=True (then a warning is logged): anyone who
    reaches an unauthenticated Dask scheduler can run any code on it and on every worker.
    UnavailableError naming the address when it cannot be reached within timeout seconds."""
    from distributed import Client

    if isinstance(scheduler, str) and security is None and not scheduler.startswith("tls://"):
        if not insecure:
            raise errors.InvalidArgumentError(
                None, None, f"the Dask scheduler at {scheduler} would be reached without TLS or authentication, so "
                            f"anyone who can reach it can run code on it and on its workers: pass "
                            f"security=distributed.security.Security(...) for a tls:// scheduler, or insecure=True "
                            f"to connect anyway")
        _log.warning("connecting to the Dask scheduler at %s without TLS: anyone who can reach it can run code on "
                     "it and on its workers", scheduler)
    try:
        return Client(scheduler, security=security, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise errors.UnavailableError(None, None, f"cannot reach the Dask scheduler at {scheduler} within "
                                                  f"{timeout:g} s: {type(e).__name__}: {e}") from e
    except TypeError as e:
        if "TLS" not in str(e):
            raise
        raise errors.InvalidArgumentError(None, None, f"the Dask scheduler at {scheduler} speaks TLS: pass "
                                                      f"security=distributed.security.Security(...) with its "
                                                      f"certificates ({e})") from e


def model_variables(model_fn, where="the driver"):
    """[VarSpec] of the trainable variables model_fn builds, with their initial values; sparse:
    the gradient of the loss is IndexedSlices (an embedding's)."""
    import pygrad as tf

    with tf.Graph().as_default() as graph:
        model = read_model(model_fn(), where)
        variables = tf.trainable_variables()
        if not variables:
            raise ValueError("the model function built no trainable variable")
        sparse = [isinstance(g, tf.IndexedSlices) for g in tf.gradients(model["loss"], variables)]
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(variables)
    return [VarSpec(v.op.name, tuple(v.shape.as_list()), v.dtype.base_dtype.name, value, sparse=s)
            for v, value, s in zip(variables, values, sparse)]


def _check_args(mode, workers, ps_shards, steps, batch_size, backup_workers, stale, fetch_every, push_every,
                max_staleness, transport, compression):
    if mode not in ("async", "sync"):
        raise ValueError(f"mode must be 'async' or 'sync', got {mode!r}")
    if transport not in ("auto", "messages"):
        raise ValueError(f"transport must be 'auto' or 'messages', got {transport!r}")
    if compression not in (None, "bfloat16"):
        raise ValueError(f"compression must be None or 'bfloat16', got {compression!r}")
    if stale not in ("drop", "scale"):
        raise ValueError(f"stale must be 'drop' or 'scale', got {stale!r}")
    for name, value in [("workers", workers), ("ps_shards", ps_shards), ("steps", steps),
                        ("batch_size", batch_size), ("fetch_every", fetch_every), ("push_every", push_every)]:
        if int(value) < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not 0 <= backup_workers < workers:
        raise ValueError(f"backup_workers must be in [0, workers), got {backup_workers} with {workers} workers")
    if max_staleness is not None and max_staleness < 0:
        raise ValueError(f"max_staleness must be None or at least 0, got {max_staleness}")


def train(model_fn, data, *, workers=2, ps_shards=1, mode="async", steps=100, batch_size=50, optimizer=None,
          fetch_every=1, push_every=1, max_staleness=None, stale="drop", backup_workers=0, shuffle=True, seed=0,
          checkpoint_dir=None, checkpoint_steps=None, checkpoint_secs=None, scheduler=None, security=None,
          client=None, threads_per_worker=1, timeout=60.0, connect_timeout=10.0, progress=True, log_every=0.5,
          allow_lost_updates=False, insecure=False, kill_worker_at=None, kill_ps_at=None, verbose=True,
          transport="auto", overlap=True, sparse=True, compression=None):
    """Trains model_fn's model on a parameter server; returns a Report (printed when verbose).

    model_fn() builds the model in the default graph (plain TF1 code on `import pygrad as tf`) and
    returns {"loss": ..., "inputs": [placeholders fed by data's arrays, in order]}, optionally with
    "accuracy" and "train_feed" ({keep_prob: 0.5}). data is a tuple of arrays (rows split into
    `workers` contiguous parts, part i for worker i) or a function (index, workers) -> arrays run
    on each worker. optimizer() makes the tf.train optimizer each shard applies (default
    GradientDescentOptimizer(0.01)). steps counts steps per worker; a worker pushes the sum of its
    gradients every push_every steps and pulls every fetch_every steps (async; sync pulls after each
    push). In async mode with overlap=True a thread of the worker's pushes and pulls while it
    computes its next steps, and a push still under way when the next is due is not waited for: the
    pushes due meanwhile wait, and the next carries their mean (each the sum of push_every steps);
    overlap=False pushes and pulls in the worker's loop, exactly every push_every and
    fetch_every steps. transport="auto" exchanges through shared memory with the shards on the
    worker's host and through Dask's messages with the others; "messages" always through messages.
    sparse=True pushes an IndexedSlices gradient (an embedding's) as the rows it touches, and pulls
    only the rows changed since the worker's last pull where the optimizer's sparse update changes
    only the rows it is given (SGD, momentum, Adagrad, RMSProp); False: dense, as other gradients.
    compression="bfloat16" pushes float32 gradients rounded to bfloat16 (half the bytes; the shards
    widen them back and apply in float32); None (the default) pushes them exactly.
    Where it runs: `client`, else
    the scheduler at `scheduler` (with `security`; without TLS only with insecure=True), else a
    local_cluster started and closed here. A shard that dies and has no checkpoint to come back
    from fails the run (DataLossError) unless allow_lost_updates=True: then it starts again from
    its initial values and the report counts the updates lost.
    kill_worker_at / kill_ps_at: fault drills on a cluster of this machine: SIGKILL worker 0's
    process once it reports that step (shard 0's once any worker does)."""
    _check_args(mode, workers, ps_shards, steps, batch_size, backup_workers, stale, fetch_every, push_every,
                max_staleness, transport, compression)
    if optimizer is None:
        def optimizer():
            import pygrad as tf
            return tf.train.GradientDescentOptimizer(0.01)
    specs = model_variables(model_fn)
    if not sparse:
        for s in specs:
            s.sparse = False
    for k, shard_specs in enumerate(placement.partition(specs, ps_shards)):
        for s in shard_specs:
            s.shard = k
    job = Job(run_id=uuid.uuid4().hex[:12], model_fn=model_fn,
              specs=[VarSpec(s.name, s.shape, s.dtype, None, s.shard, s.sparse) for s in specs],
              num_workers=workers, num_shards=ps_shards, mode=mode, steps=steps, batch_size=batch_size,
              fetch_every=fetch_every, push_every=push_every, shuffle=shuffle, seed=seed, threads=threads_per_worker,
              timeout=timeout,
              log_every=log_every, data_fn=data if callable(data) else None, transport=transport,
              overlap=bool(overlap), compression=compression)
    # Each worker task gets its own token; the shards refuse a push that does not carry it.
    shard_args = dict(optimizer_fn=optimizer, tokens=[secrets.token_hex(16) for _ in range(workers)], mode=mode,
                      steps=steps, backup_workers=backup_workers,
                      max_staleness=max_staleness, stale=stale, checkpoint_dir=checkpoint_dir,
                      checkpoint_steps=checkpoint_steps, checkpoint_secs=checkpoint_secs, sync_timeout=timeout,
                      run_id=job.run_id, compression=compression)
    cluster = own_client = None
    if client is None:
        if scheduler is None:
            cluster = local_cluster(workers, ps_shards, threads_per_worker, security=security)
            client = connect(cluster, security, connect_timeout)
        else:
            client = connect(scheduler, security, connect_timeout, insecure)
        own_client = client
    elif not client.scheduler.address.startswith("tls://") and not insecure:
        _log.warning("the Dask scheduler at %s is reached without TLS: anyone who can reach it can run code on it "
                     "and on its workers (insecure=True: no warning)", client.scheduler.address)
    quiet_dead_actor_calls()
    run = _Run(client, job, specs, shard_args, progress, allow_lost_updates)
    try:
        with client.as_current():  # actor handles find their client as the current one
            return run.train(data, kill_worker_at, kill_ps_at, verbose)
    finally:
        run.close()
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()


class _Run:
    def __init__(self, client, job, specs, shard_args, progress, allow_lost_updates):
        self.allow_lost_updates, self.scheduler_address = allow_lost_updates, client.scheduler.address
        self.client, self.job, self.specs, self.shard_args = client, job, specs, shard_args
        self.shards, self.addresses, self.generation = [], [], 0
        self.events, self.lock = [], threading.Lock()
        self.started, self.latest, self.done = {}, {}, set()
        self.failures, self.resumes, self.restarts, self.known_version = [], [], 0, []
        self.futures, self.bar, self.progress = [], None, progress
        self.ps_resource = None

    # ------------------------------------------------------------ the shards
    def _ps_workers(self):
        """(the workers that may hold shards, {address: info} of every worker). Workers with the
        resource "ps" if the cluster has any (it had at the start), else all of them."""
        info = self.client.sync(self.client.scheduler.identity)["workers"]
        ps = sorted(a for a, w in info.items() if w.get("resources", {}).get("ps"))
        if self.ps_resource is None:
            self.ps_resource = bool(ps)
        return (ps if self.ps_resource else sorted(info)), info

    def _make_shard(self, k, address, restore):
        from pygrad.distributed.shard import ParameterShard

        # The initial values travel as data, not inside the task (large graphs are slow to send).
        shard_specs = self.client.scatter([s for s in self.specs if s.shard == k], workers=[address], hash=False)
        future = self.client.submit(ParameterShard, k, shard_specs, restore=restore, **self.shard_args,
                                    workers=[address], actor=True, pure=False,
                                    key=f"pygrad-ps-{self.job.run_id}-{k}-{self.generation}")
        return future.result(timeout=self.job.timeout)

    def _publish(self):
        from distributed import Variable

        self.generation += 1
        Variable(self.job.handles_name, client=self.client).set(
            {"generation": self.generation, "shards": [(s.key, a) for s, a in zip(self.shards, self.addresses)]})

    def _start_shards(self):
        deadline = time.monotonic() + self.job.timeout
        ps, _ = self._ps_workers()
        while not ps:
            if time.monotonic() > deadline:
                raise errors.UnavailableError(None, None, f"the Dask cluster of {self.client.scheduler.address} has "
                                                          f"no worker to hold the parameter-server shards "
                                                          f"(waited {self.job.timeout:g} s)")
            time.sleep(0.2)
            self.ps_resource = None
            ps, _ = self._ps_workers()
        for k in range(self.job.num_shards):
            address = ps[k % len(ps)]
            self.shards.append(self._make_shard(k, address, restore=False))
            self.addresses.append(address)
        self.known_version = [0] * self.job.num_shards
        self._publish()

    def _check_shards(self):
        _, alive = self._ps_workers()
        for k, address in enumerate(self.addresses):
            if address in alive:
                try:
                    self.known_version[k] = max(self.known_version[k], self.shards[k].ping().result(timeout=5))
                except Exception:
                    pass
                continue
            self._restart_shard(k)

    def _settle_shards(self):
        """After the workers: a shard that does not answer (killed as the run ended, before a check
        saw it) is waited for until its worker is gone, and restarted as during the run."""
        for k in range(len(self.shards)):
            try:
                self.shards[k].ping().result(timeout=5)
                continue
            except Exception:
                pass
            deadline = time.monotonic() + self.job.timeout
            while self.addresses[k] in self._ps_workers()[1] and time.monotonic() < deadline:
                time.sleep(0.1)
            self._restart_shard(k)

    def _restart_shard(self, k):
        _log.info("parameter-server shard %d: its worker %s is gone; restarting it", k, self.addresses[k])
        deadline = time.monotonic() + self.job.timeout
        while True:
            ps, alive = self._ps_workers()
            alive_shards = [a for a in self.addresses if a in alive]
            free = [a for a in ps if a not in alive_shards] or ps
            if free:
                break
            if time.monotonic() > deadline:
                raise errors.UnavailableError(None, None, f"parameter-server shard {k} died and no worker came back "
                                                          f"within {self.job.timeout:g} s to hold it")
            time.sleep(0.2)
        _log.info("parameter-server shard %d: creating it on %s", k, free[0])
        shard = self._make_shard(k, free[0], restore=True)
        stats = shard.stats().result(timeout=self.job.timeout)
        if stats["restored_from"] is None and not self.allow_lost_updates:
            raise errors.DataLossError(
                None, None, f"parameter-server shard {k} died (its worker {self.addresses[k]} is gone) at version "
                            f"{self.known_version[k]} or later, and there is no checkpoint to restore it from: its "
                            f"updates are lost. Set checkpoint_dir (with checkpoint_steps or checkpoint_secs), or pass "
                            f"allow_lost_updates=True to start it again from its initial values")
        for w in self.done:
            shard.worker_done(w, self.shard_args["tokens"][w]).result(timeout=self.job.timeout)
        self.failures.append({"shard": k, "generation": self.generation, "version_at_failure": self.known_version[k],
                              "restored_version": stats["version"], "checkpoint": stats["restored_from"],
                              "updates_lost": 0})
        self.shards[k], self.addresses[k] = shard, free[0]
        self.known_version[k] = stats["version"]
        _log.warning("parameter-server shard %d restarted on %s from %s", k, free[0],
                     stats["restored_from"] or "its initial values (no checkpoint)")
        self._publish()

    # ----------------------------------------------------------- the workers
    def _on_event(self, event):
        stamp, msg = event
        if isinstance(msg, dict) and msg.get("run") == self.job.run_id:
            msg = dict(msg, time=stamp)
            with self.lock:
                self.events.append(msg)

    def _drain_events(self):
        with self.lock:
            events, self.events = self.events, []
        for e in events:
            w = e["index"]
            if e["event"] == "start":
                _log.info("worker %d started on %s at step %d", w, e["address"], e["step"])
                if w in self.started:
                    self.restarts += 1
                    self.resumes.append((w, e["step"]))
                self.started[w] = e
            elif e["event"] == "progress":
                self.latest[w] = e
                for (gen, k), v in e.get("seen", []):
                    for f in self.failures:
                        if f["shard"] == k and f["generation"] == gen:
                            f["version_at_failure"] = max(f["version_at_failure"], v)
        if self.bar is not None and events and self.latest:
            self.bar.n = sum(e["step"] + 1 for e in self.latest.values())
            self.bar.set_postfix(loss=f"{np.mean([e['loss'] for e in self.latest.values()]):.4f}",
                                 accuracy=f"{_mean_known([e['accuracy'] for e in self.latest.values()]):.3f}",
                                 refresh=False)
            self.bar.refresh()

    def _kill(self, address):
        pid = self.client.run(os.getpid, workers=[address])[address]
        os.kill(pid, signal.SIGKILL)

    def _drills(self, drills):
        reached = max((e["step"] for e in self.latest.values()), default=-1)
        own = self.latest[0]["step"] if 0 in self.latest else -1
        if drills.get("worker") is not None and own >= drills["worker"] and 0 in self.started:
            _log.warning("fault drill: SIGKILL to worker 0 at its step %d", own)
            self._kill(self.started[0]["address"])
            drills["worker"] = None
        if drills.get("ps") is not None and reached >= drills["ps"]:
            _log.warning("fault drill: SIGKILL to parameter-server shard 0 at step %d", reached)
            self._kill(self.addresses[0])
            drills["ps"] = None

    def _check_scheduler(self):
        """Raises UnavailableError when this run's connection to the scheduler is lost (its
        futures are cancelled then: no worker is to blame)."""
        if self.client.status != "running":
            raise errors.UnavailableError(None, None, f"lost the Dask scheduler at {self.scheduler_address} "
                                                      f"(the client is {self.client.status}): the run cannot go on; "
                                                      f"its shards' state is lost with it")

    def _worker_error(self, index, exc):
        address = self.started.get(index, {}).get("address")
        return WorkerError(index, address, exc)

    def train(self, data, kill_worker_at, kill_ps_at, verbose):
        client, job = self.client, self.job
        self._start_shards()
        client.subscribe_topic(EVENT_TOPIC, self._on_event)
        info = self._ps_workers()[1]
        has_compute = any(w.get("resources", {}).get("compute") for w in info.values())
        parts = [None] * job.num_workers
        if job.data_fn is None:
            arrays = [np.asarray(a) for a in data]
            bounds = np.linspace(0, len(arrays[0]), job.num_workers + 1).astype(int)
            # Inside the task, which the scheduler keeps: the task of a restarted worker finds its part
            # again. (Scattered data would not do: Dask keeps one replica, which a killed worker may
            # hold.) Large data is better read on the workers: pass a function.
            parts = [[a[bounds[i]:bounds[i + 1]] for a in arrays] for i in range(job.num_workers)]
        from pygrad.distributed.worker import run_worker

        if self.progress:
            try:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=job.num_workers * job.steps, unit="step", desc=f"ps {job.mode}")
            except ImportError:
                self.bar = None
        submitted = time.time()
        self.futures = [client.submit(run_worker, job, i, self.shard_args["tokens"][i], parts[i], pure=False,
                                      key=f"pygrad-worker-{job.run_id}-{i}",
                                      resources={"compute": 1} if has_compute else None)
                        for i in range(job.num_workers)]
        drills = {"worker": kill_worker_at, "ps": kill_ps_at}
        pending = list(enumerate(self.futures))
        next_check = 0.0
        while pending:
            time.sleep(0.1)
            try:
                self._drain_events()
                for i, f in list(pending):
                    if f.status == "error":
                        raise self._worker_error(i, f.exception()) from f.exception()
                    if f.status in ("lost", "cancelled"):
                        self._check_scheduler()
                        raise self._worker_error(i, errors.AbortedError(None, None, f"its task was {f.status}"))
                    if f.status == "finished":
                        pending.remove((i, f))
                        self.done.add(i)
                if pending:
                    self._drills(drills)
                    if time.monotonic() >= next_check:  # (asking the scheduler costs it CPU the run shares)
                        self._check_shards()
                        next_check = time.monotonic() + SHARD_CHECK_SECONDS
            except (OSError, TimeoutError, errors.OpError):
                self._check_scheduler()  # blame the scheduler when it is the one gone
                raise
        end = time.time()
        self._settle_shards()
        results = [f.result() for f in self.futures]
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        # The scheduler's log holds every event, also those not yet delivered to the subscription.
        self.events, self.started, self.restarts, self.resumes = [], {}, 0, []
        for event in self.client.get_events(EVENT_TOPIC):
            self._on_event(event)
        self._drain_events()
        # Training time: from the first worker's start (its process built the model and read its
        # data by then) to the end.
        wall = end - min([e["time"] for e in self.started.values()] or [submitted])
        return self._report(results, wall, verbose)

    def _report(self, results, wall, verbose):
        job = self.job
        stats = [s.stats().result(timeout=job.timeout) for s in self.shards]
        checkpoints = [s.checkpoint().result(timeout=job.timeout) for s in self.shards]
        weights = {}
        for s in self.shards:
            weights.update({n: np.require(v, requirements="CA")  # off the wire: maybe unaligned
                            for n, v in s.pull().result(timeout=job.timeout)[1].items()})
        for f in self.failures:
            for r in results:
                for (gen, k), v in r.get("seen", []):
                    if f["shard"] == k and f["generation"] == gen:
                        f["version_at_failure"] = max(f["version_at_failure"], v)
            f["updates_lost"] = max(0, f["version_at_failure"] - f["restored_version"])
        last = [self.latest[w] for w in sorted(self.latest)]
        report = Report(
            mode=job.mode, workers=job.num_workers, ps_shards=job.num_shards, steps=job.steps,
            batch_size=job.batch_size, wall_seconds=wall,
            examples=sum((r["steps"] + r["resumed_at"]) * job.batch_size for r in results),
            pushes=sum(r["pushes"] for r in results), bytes_pushed=sum(r["bytes_pushed"] for r in results),
            bytes_pulled=sum(r["bytes_pulled"] for r in results),
            staleness=merge_counters(s["staleness"] for s in stats),
            apply_seconds=[t for s in stats for t in s["apply_seconds"]],
            counts=merge_counters(s["counts"] for s in stats), shard_versions=[s["version"] for s in stats],
            worker_restarts=self.restarts, resumes=self.resumes, shard_failures=self.failures,
            losses={r["worker"]: r["losses"] for r in results},
            final_loss=float(np.mean([e["loss"] for e in last])) if last else float("nan"),
            final_accuracy=_mean_known([e["accuracy"] for e in last]),
            checkpoints=checkpoints, weights=weights,
            worker_seconds={k: sum(r[f"{k}_seconds"] for r in results)
                            for k in ("compute", "push", "pull", "wait", "loop")},
            links=merge_counters(r["links"] for r in results))
        if verbose:
            print(report)
        return report

    def close(self):
        """Ends the run. After a failure, worker tasks may still be running (Dask cannot interrupt
        them): the shard handles are replaced by a stop mark, which makes them end at their next
        contact with a shard instead of waiting for a replacement, and which stays (a few bytes)."""
        if self.bar is not None:
            self.bar.close()
        shards, self.shards = self.shards, []
        if self.client.status != "running":
            return  # the scheduler is gone, and the run's state with it
        try:
            self.client.unsubscribe_topic(EVENT_TOPIC)
        except Exception:
            pass
        finished = all(f.status == "finished" for f in self.futures)
        for f in self.futures:
            f.cancel()
        if self.generation:
            from distributed import Variable
            try:
                handles = Variable(self.job.handles_name, client=self.client)
                if finished:
                    handles.delete()
                else:
                    handles.set({"generation": self.generation + 1, "shards": [], "stopped": True})
            except Exception:
                pass  # the scheduler is gone already
        for shard in shards:
            try:
                shard.close().result(timeout=5)
            except Exception:
                pass  # gone with its process
        try:  # the shared-memory files of shards that died (a live shard's close removes its own)
            self.client.run(remove_local_files, self.job.run_id)
        except Exception:
            pass


def _mean_known(values):
    known = [v for v in values if not math.isnan(v)]
    return float(np.mean(known)) if known else float("nan")
