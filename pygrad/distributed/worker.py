"""A worker: a long-running Dask task holding one model replica.

It builds the graph from the user's model function in its own process, checks the variables
against the driver's, and loops: one `Session.run` computes the loss and every gradient; every
push_every steps each shard gets its part of their sum (push), and every fetch_every steps (after
every push in sync mode) the fresh weights come back (pull): Downpour's n_push and n_fetch. A
worker restarted by its nanny resumes after the last step the shards recorded from it. When a
shard stops answering, the worker waits for the driver to publish the replacement's handle, pulls
from it and goes on; the push in flight is lost.
"""
import os
import time

import numpy as np

from pygrad import errors
from pygrad.distributed.spec import EVENT_TOPIC, quiet_dead_actor_calls, read_model


def _handles(job, generation=-1, timeout=60.0):
    """(generation, [actor per shard]) as the driver last published them, newer than generation."""
    from distributed import Variable, get_worker
    from distributed.actor import Actor

    from pygrad.distributed.shard import ParameterShard

    var = Variable(job.handles_name)
    deadline = time.monotonic() + timeout
    while True:
        published = var.get(timeout=timeout)
        if published.get("stopped"):
            raise errors.CancelledError(None, None, "the run was stopped (it failed, or its driver ended it)")
        if published["generation"] > generation:
            worker = get_worker()
            return published["generation"], [Actor(ParameterShard, address, key, worker=worker)
                                             for key, address in published["shards"]]
        if time.monotonic() > deadline:
            raise errors.UnavailableError(None, None, f"no parameter-server shard came back within {timeout:g} s")
        time.sleep(0.1)


class _ShardReplaced(Exception):
    """The driver published new shard handles while this worker waited for a reply."""


def _wait(futures, job, generation):
    """The replies of these actor calls. A call to a shard that died may never be answered, so
    while waiting this checks every half second whether the driver has replaced a shard."""
    from distributed import Variable

    deadline = time.monotonic() + job.timeout
    out = []
    for f in futures:
        while True:
            try:
                out.append(f.result(timeout=0.5))
                break
            except TimeoutError:
                pass
            if Variable(job.handles_name).get(timeout=job.timeout)["generation"] != generation:
                raise _ShardReplaced()
            if time.monotonic() > deadline:
                raise errors.DeadlineExceededError(None, None, f"no reply from a parameter-server shard within "
                                                               f"{job.timeout:g} s")
    return out


class _Batches:
    """The batch of a step from this worker's rows; with shuffle, a new permutation per epoch."""

    def __init__(self, arrays, batch_size, shuffle, seed):
        self.arrays, self.batch_size, self.shuffle, self.seed = arrays, batch_size, shuffle, seed
        self.n = len(arrays[0])
        self._perms = {}

    def __call__(self, step):
        pos = step * self.batch_size + np.arange(self.batch_size)
        epochs, rows = pos // self.n, pos % self.n
        if self.shuffle:
            for e in np.unique(epochs):
                if e not in self._perms:
                    self._perms = {e: np.random.RandomState(list(self.seed) + [int(e)]).permutation(self.n)}
                rows[epochs == e] = self._perms[e][rows[epochs == e]]
        return [a[rows] for a in self.arrays]


def run_worker(job, index, token, data):
    """The task of worker `index` (token: its token, which its pushes carry): trains job.steps
    steps and returns its counters."""
    from distributed import get_worker

    import pygrad as tf

    worker = get_worker()
    quiet_dead_actor_calls()
    where = f"worker {index} ({worker.address})"
    tf.set_num_threads(job.threads)
    if data is None:
        data = job.data_fn(index, job.num_workers)
    data = [np.asarray(a) for a in data]
    graph = tf.Graph()
    with graph.as_default():
        try:
            model = job.model_fn()
        except Exception as e:
            raise errors.UnknownError(None, None, f"{where}: the model function raised {type(e).__name__}: {e}") from e
        model = read_model(model, where)
        variables = tf.trainable_variables()
        _check_variables(variables, job.specs, where)
        if len(model["inputs"]) != len(data):
            raise errors.InvalidArgumentError(None, None, f"{where}: the model has {len(model['inputs'])} inputs but "
                                                          f"the data has {len(data)} arrays")
        grads = tf.gradients(model["loss"], variables)
        grads = [g if g is not None else tf.zeros_like(v) for g, v in zip(grads, variables)]
        fetches = {"loss": model["loss"], "grads": grads}
        if model["accuracy"] is not None:
            fetches["accuracy"] = model["accuracy"]
    by_shard = [[i for i, s in enumerate(job.specs) if s.shard == k] for k in range(job.num_shards)]
    batches = _Batches(data, job.batch_size, job.shuffle, [job.seed, index])
    counters = {"worker": index, "steps": 0, "examples": 0, "pushes": 0, "pulls": 0, "bytes_pushed": 0,
                "bytes_pulled": 0, "statuses": {}, "staleness": {}, "shard_failures": 0, "compute_seconds": 0.0,
                "push_seconds": 0.0, "pull_seconds": 0.0, "losses": [], "seen": {}}
    with tf.Session(graph=graph) as sess:
        def pull(shards, generation):
            return _pull(sess, shards, variables, job, counters, generation)

        generation, shards = _handles(job, timeout=job.timeout)
        generation, shards, resume = _retrying(
            job, generation, shards, counters, lambda sh, g: 1 + max(_wait([s.progress(index) for s in sh], job, g)))
        counters["resumed_at"] = resume
        worker.log_event(EVENT_TOPIC, {"event": "start", "run": job.run_id, "index": index,
                                       "address": worker.address, "pid": os.getpid(), "step": resume})
        generation, shards, base = _retrying(job, generation, shards, counters, pull)
        last_log, loss_sum, acc_sum, logged = time.monotonic(), 0.0, 0.0, 0
        unpushed = None  # the gradients summed since the last push (push_every > 1)
        for step in range(resume, job.steps):
            feed = dict(zip(model["inputs"], batches(step)))
            feed.update(model["train_feed"])
            start = time.perf_counter()
            out = sess.run(fetches, feed_dict=feed)
            counters["compute_seconds"] += time.perf_counter() - start
            counters["steps"] += 1
            counters["examples"] += job.batch_size
            loss_sum += float(out["loss"])
            acc_sum += float(out.get("accuracy", np.nan))
            logged += 1
            unpushed = out["grads"] if unpushed is None else [u + g for u, g in zip(unpushed, out["grads"])]
            pushed = (step + 1) % job.push_every == 0 or step == job.steps - 1
            if pushed:
                start = time.perf_counter()
                grads, unpushed = unpushed, None
                try:
                    replies = [shards[k].push(index, token, step, base[k], {job.specs[i].name: grads[i] for i in ids})
                               for k, ids in enumerate(by_shard)]
                    replies = _wait(replies, job, generation)
                except Exception as e:
                    if not _recoverable(e):
                        raise
                    # The push is lost; go on from the replacement's weights.
                    generation, shards = _reconnect(job, generation, counters)
                    generation, shards, base = _retrying(job, generation, shards, counters, pull)
                    continue
                counters["push_seconds"] += time.perf_counter() - start
                counters["pushes"] += len(replies)
                counters["bytes_pushed"] += sum(g.nbytes for g in grads)
                for k, r in enumerate(replies):
                    seen = counters["seen"]
                    seen[generation, k] = max(seen.get((generation, k), 0), r["version"])
                    counters["statuses"][r["status"]] = counters["statuses"].get(r["status"], 0) + 1
                    counters["staleness"][r["staleness"]] = counters["staleness"].get(r["staleness"], 0) + 1
            if job.mode == "sync" and pushed or job.mode == "async" and (step + 1) % job.fetch_every == 0:
                generation, shards, base = _retrying(job, generation, shards, counters, pull)
            now = time.monotonic()
            if now - last_log >= job.log_every or step == job.steps - 1:
                counters["losses"].append((step, loss_sum / logged))
                worker.log_event(EVENT_TOPIC, {"event": "progress", "run": job.run_id, "index": index, "step": step,
                                               "loss": loss_sum / logged, "accuracy": acc_sum / logged,
                                               "examples": logged * job.batch_size,
                                               "seen": [[list(gk), v] for gk, v in counters["seen"].items()]})
                last_log, loss_sum, acc_sum, logged = now, 0.0, 0.0, 0
    for s in shards:
        try:
            s.worker_done(index, token).result(timeout=job.timeout)
        except Exception:
            pass  # a shard that is gone needs no notice; its replacement is told by the driver
    counters["seen"] = [[list(gk), v] for gk, v in counters["seen"].items()]
    _digest(counters)
    return counters


def _digest(counters):
    """The task's totals as Dask fine performance metrics (the scheduler sums them by task prefix;
    the dashboard plots them), sent when the task ends."""
    from distributed.metrics import context_meter

    for what in ("compute", "push", "pull"):
        context_meter.digest_metric(f"pygrad-{what}", counters[f"{what}_seconds"], "seconds")
    context_meter.digest_metric("pygrad-pushed", counters["bytes_pushed"], "bytes")
    context_meter.digest_metric("pygrad-pulled", counters["bytes_pulled"], "bytes")


def _recoverable(e):
    """A failure to reach a shard (it died), not an error the shard or this worker raised."""
    return not (isinstance(e, errors.OpError) or "parameter-server shard" in str(e))


def _reconnect(job, generation, counters):
    counters["shard_failures"] += 1
    return _handles(job, generation, timeout=job.timeout)


def _retrying(job, generation, shards, counters, call):
    """(generation, shards, call(shards, generation)); while a shard is found dead, waits for the
    handles of its replacement and calls again."""
    while True:
        try:
            return generation, shards, call(shards, generation)
        except Exception as e:
            if not _recoverable(e):
                raise
            generation, shards = _reconnect(job, generation, counters)


def _pull(sess, shards, variables, job, counters, generation):
    """Loads every shard's values into the replica; returns each shard's version."""
    start = time.perf_counter()
    replies = _wait([s.pull() for s in shards], job, generation)
    by_name = {}
    for _, values in replies:
        by_name.update(values)
    for v in variables:
        value = np.require(by_name[v.op.name], requirements="CA")  # arrays off the wire may be unaligned
        sess.write_variable(v, value)
        counters["bytes_pulled"] += value.nbytes
    counters["pulls"] += 1
    counters["pull_seconds"] += time.perf_counter() - start
    return [version for version, _ in replies]


def _check_variables(variables, specs, where):
    """The replica's trainable variables must be the driver's: same names, shapes and dtypes."""
    got = [(v.op.name, tuple(v.shape.as_list()), v.dtype.base_dtype.name) for v in variables]
    want = [(s.name, tuple(s.shape), s.dtype) for s in specs]
    if got != want:
        diff = [f"{g} != {w}" for g, w in zip(got, want) if g != w]
        if len(got) != len(want):
            diff.append(f"{len(got)} variables != {len(want)}")
        raise errors.InvalidArgumentError(
            None, None, f"{where}: the model function built variables that differ from the driver's "
                        f"(name, shape, dtype): {'; '.join(diff[:5])}")
