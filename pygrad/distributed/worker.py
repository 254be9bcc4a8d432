"""A worker: a long-running Dask task holding one model replica.

It builds the graph from the user's model function in its own process, checks the variables
against the driver's, and loops: one `Session.run` computes the loss and every gradient; every
push_every steps each shard gets its part of their sum (push), and every fetch_every steps (after
every push in sync mode) the fresh weights come back (pull): Downpour's n_push and n_fetch. A
worker restarted by its nanny resumes after the last step the shards recorded from it. When a
shard stops answering, the worker waits for the driver to publish the replacement's handle, pulls
from it and goes on; the push in flight is lost.

In async mode (with overlap) a courier thread makes the pushes and pulls while the loop computes;
each shard is reached through a link of `transport.py` (shared memory on the shard's host, Dask's
messages elsewhere).
"""
import os
import threading
import time

import numpy as np

from pygrad import errors
from pygrad.distributed.spec import EVENT_TOPIC, quiet_dead_actor_calls, read_model
from pygrad.distributed.transport import LocalLink, MessageLink, nbytes, non_finite, scaled, to_bfloat16_bits

# How long an overlapped async worker waits, before a step, for a shard still updating the weights
# it would load: a short update (the softmax model's, tens of microseconds) is waited for, and the
# step sees the worker's own last push; a long one (Adam over millions of weights, milliseconds) is
# not, and its weights are loaded before a later step.
INSTALL_PATIENCE = 0.001


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
        grads = gradient_tensors(model["loss"], variables, job.specs)
        fetches = {"loss": model["loss"], "grads": grads}
        if model["accuracy"] is not None:
            fetches["accuracy"] = model["accuracy"]
    batches = _Batches(data, job.batch_size, job.shuffle, [job.seed, index])
    counters = {"worker": index, "steps": 0, "examples": 0, "pushes": 0, "pulls": 0, "bytes_pushed": 0,
                "bytes_pulled": 0, "statuses": {}, "staleness": {}, "shard_failures": 0, "compute_seconds": 0.0,
                "push_seconds": 0.0, "pull_seconds": 0.0, "wait_seconds": 0.0, "loop_seconds": 0.0, "losses": [],
                "seen": {}, "links": {}}
    with tf.Session(graph=graph) as sess:
        generation, shards = _handles(job, timeout=job.timeout)
        generation, shards, resume = _retrying(
            job, generation, shards, counters, lambda sh, g: 1 + max(_wait([s.progress(index) for s in sh], job, g)))
        counters["resumed_at"] = resume
        worker.log_event(EVENT_TOPIC, {"event": "start", "run": job.run_id, "index": index,
                                       "address": worker.address, "pid": os.getpid(), "step": resume})

        def connect(generation, shards):
            """An exchange with these shards, the replica loaded with their weights."""
            while True:
                exchange = None
                try:
                    exchange = _Exchange(job, index, token, generation, shards, sess, variables, counters)
                    exchange.install(exchange.pull())
                    return generation, exchange
                except Exception as e:
                    if exchange is not None:
                        exchange.close()
                    if not _recoverable(e):
                        raise
                    generation, shards = _reconnect(job, generation, counters)

        def reconnect(e, generation, old):
            """After e: the exchange with the shards the driver publishes next (the old one closed),
            if a shard was found dead; else e is raised."""
            if not _recoverable(e):
                raise e
            old.close()
            return connect(*_reconnect(job, generation, counters))

        generation, exchange = connect(generation, shards)
        courier = _Courier() if job.mode == "async" and job.overlap else None
        last_log, loss_sum, acc_sum, logged = time.monotonic(), 0.0, 0.0, 0
        summed, summed_steps, summed_base, last_pull = None, 0, None, resume - 1
        merged = 0  # pushes waiting in the sum for the courier
        loop_start = time.perf_counter()
        try:
            for step in range(resume, job.steps):
                if courier is not None:
                    start = time.perf_counter()
                    try:
                        # (take raises what the courier's last exchange raised; weights a shard is
                        # still updating after INSTALL_PATIENCE are installed before a later step)
                        exchange.install(courier.take(exchange), INSTALL_PATIENCE)
                    except Exception as e:
                        summed, summed_steps, merged = None, 0, 0  # the push in flight is lost
                        generation, exchange = reconnect(e, generation, exchange)
                    counters["wait_seconds"] += time.perf_counter() - start
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
                step_grads = [(g.values, g.indices) if s.sparse else g for g, s in zip(out["grads"], job.specs)]
                if summed is None:
                    summed, summed_base = step_grads, list(exchange.base)
                else:
                    summed = [_sum(u, g) for u, g in zip(summed, step_grads)]
                summed_steps += 1
                last = step == job.steps - 1
                due = summed_steps >= job.push_every or last
                start = time.perf_counter()
                try:
                    if courier is None:  # sync, or async without overlap: push and pull in the loop
                        if due:
                            exchange.push(step, summed, summed_base)
                            summed, summed_steps = None, 0
                        if job.mode == "sync" and due or job.mode == "async" and (step + 1) % job.fetch_every == 0:
                            exchange.install(exchange.pull())
                    elif due and (not courier.busy or last):
                        pull = step - last_pull >= job.fetch_every
                        courier.wait()  # (only at the last step: it was idle otherwise)
                        courier.raise_error()  # (what its last exchange raised, before handing it more)
                        if merged:  # the mean of the pushes that waited for the courier
                            summed = [scaled(g, 1.0 / (merged + 1)) for g in summed]
                        courier.hand(exchange, step, summed, summed_base, pull)
                        summed, summed_steps, merged, last_pull = None, 0, 0, step if pull else last_pull
                        if last:
                            courier.wait()
                            courier.take(exchange)
                    elif due:
                        # The courier is still busy with the last push: this push waits in the sum
                        # for the next one, which carries their mean, and the worker goes on.
                        summed_steps, merged = 0, merged + 1
                except Exception as e:
                    summed, summed_steps, merged = None, 0, 0  # the push in flight is lost
                    generation, exchange = reconnect(e, generation, exchange)
                counters["wait_seconds"] += time.perf_counter() - start
                now = time.monotonic()
                if now - last_log >= job.log_every or last:
                    counters["losses"].append((step, loss_sum / logged))
                    worker.log_event(EVENT_TOPIC, {"event": "progress", "run": job.run_id, "index": index,
                                                   "step": step, "loss": loss_sum / logged,
                                                   "accuracy": acc_sum / logged, "examples": logged * job.batch_size,
                                                   "seen": [[list(gk), v] for gk, v in counters["seen"].items()]})
                    last_log, loss_sum, acc_sum, logged = now, 0.0, 0.0, 0
        finally:
            if courier is not None:
                courier.stop()
            exchange.close()
        counters["loop_seconds"] = time.perf_counter() - loop_start
    for s in exchange.shards:
        try:
            s.worker_done(index, token).result(timeout=job.timeout)
        except Exception:
            pass  # a shard that is gone needs no notice; its replacement is told by the driver
    counters["seen"] = [[list(gk), v] for gk, v in counters["seen"].items()]
    _digest(counters)
    return counters


def gradient_tensors(loss, variables, specs):
    """The gradient of loss for each variable: IndexedSlices for a sparse spec, dense otherwise (a
    zero tensor for a variable loss does not reach)."""
    import pygrad as tf

    out = []
    for g, v, s in zip(tf.gradients(loss, variables), variables, specs):
        if g is None:
            g = tf.zeros_like(v)
        if s.sparse and not isinstance(g, tf.IndexedSlices):
            raise errors.InvalidArgumentError(None, None, f"the gradient of '{s.name}' was expected as IndexedSlices")
        out.append(g if s.sparse else tf.convert_to_tensor(g))
    return out


def _sum(a, b):
    """The sum of two steps' gradients of one variable: arrays, or (values, indices) rows joined."""
    if isinstance(a, tuple):
        return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])
    return a + b


def _rows_touched(g):
    """(values, indices) of a sparse gradient's (values, indices) with each row once, repeated rows
    summed (in the order they came), sorted by row."""
    indices = np.asarray(g[1], np.int64)
    order = np.argsort(indices, kind="stable")
    indices = indices[order]
    starts = np.flatnonzero(np.concatenate([[True], indices[1:] != indices[:-1]])) if len(indices) else order
    values = np.asarray(g[0])[order]
    if len(starts) < len(indices):
        values = np.add.reduceat(values, starts, axis=0)
    return np.ascontiguousarray(values), indices[starts]


def _compressed(g, name, step, index):
    """A float32 gradient (or the values of (values, indices)) as the bits of bfloat16; refused here,
    as the shard would refuse it, when a value is not finite (its bits could round into the sign)."""
    values = g[0] if isinstance(g, tuple) else g
    bad = non_finite(name, values)
    if bad:
        raise errors.InvalidArgumentError(None, None, f"worker {index}, step {step}: {bad}")
    bits = to_bfloat16_bits(values)
    return (bits, g[1]) if isinstance(g, tuple) else bits


class _Exchange:
    """This worker's links to the shards of one generation (`transport.py`), and the version of
    each shard's weights the replica holds (`base`)."""

    def __init__(self, job, index, token, generation, shards, sess, variables, counters):
        self.job, self.index, self.token, self.generation, self.shards = job, index, token, generation, shards
        self.counters = counters
        self._vars = {v.op.name: v for v in variables}
        self._sess = sess
        self.by_shard = [[i for i, s in enumerate(job.specs) if s.shard == k] for k in range(job.num_shards)]
        self.base = [None] * job.num_shards  # None: nothing installed yet
        self._left = {}  # shard -> what a pull gave that is not installed yet (install's patience)
        self.links = []
        try:
            for k, actor in enumerate(shards):
                self.links.append(self._link(actor, [job.specs[i] for i in self.by_shard[k]]))
        except BaseException:
            self.close()
            raise
        for link in self.links:
            kind = "shared memory" if link.local else "messages"
            counters["links"][kind] = counters["links"].get(kind, 0) + 1

    def _link(self, actor, specs):
        wait = lambda future: _wait([future], self.job, self.generation)[0]  # noqa: E731
        if self.job.transport == "auto":
            endpoint = wait(actor.local_endpoint())
            if endpoint is not None and os.path.isdir(endpoint["directory"]):
                # (A sync push waits up to the timeout on the shard, which then answers: wait longer here.)
                return LocalLink(endpoint["directory"], specs, self.index, self.token, self.job.timeout + 10.0,
                                 endpoint["row_local"], self.job.compression)
        return MessageLink(actor, wait)

    def push(self, step, grads, base):
        """Pushes each shard its part of grads (one per variable, summed over the steps since the
        last push), computed on weights of versions base."""
        start = time.perf_counter()
        pushed, started, failures = 0, [], []
        for k, link in enumerate(self.links):
            part = {}
            for i in self.by_shard[k]:
                spec = self.job.specs[i]
                g = _rows_touched(grads[i]) if spec.sparse else grads[i]
                if self.job.compression and spec.dtype == "float32":
                    g = _compressed(g, spec.name, step, self.index)
                part[spec.name] = g
                pushed += nbytes(g)
            try:
                link.start_push(self.index, self.token, step, base[k], part)
                started.append(k)
            except Exception as e:
                failures.append(e)
        replies = []
        for k in started:  # every shard that took the push applies it, even when another failed
            try:
                replies.append(self.links[k].finish_push())
            except Exception as e:
                failures.append(e)
        if failures:  # (a refusal or a deadline before a shard found dead)
            raise next((e for e in failures if not _recoverable(e)), failures[0])
        c = self.counters
        c["push_seconds"] += time.perf_counter() - start
        c["pushes"] += len(replies)
        c["bytes_pushed"] += pushed
        for k, r in enumerate(replies):
            c["seen"][self.generation, k] = max(c["seen"].get((self.generation, k), 0), r["version"])
            c["statuses"][r["status"]] = c["statuses"].get(r["status"], 0) + 1
            c["staleness"][r["staleness"]] = c["staleness"].get(r["staleness"], 0) + 1
        return replies

    def pull(self):
        start = time.perf_counter()
        pulled = [link.pull(base) for link, base in zip(self.links, list(self.base))]
        self.counters["pull_seconds"] += time.perf_counter() - start
        return pulled

    def install(self, pulled, patience=None):
        """Loads the pulled weights into the replica (from shared memory, for a local link). pulled:
        one pull's values per shard; None: only what an earlier call left. With patience (seconds),
        the weights of a shard still updating them in shared memory after that long are left for
        the next call."""
        start = time.perf_counter()
        if pulled is not None:
            self._left = dict(enumerate(pulled))
        sess, variables = self._sess, self._vars
        for k in list(self._left):
            done = self.links[k].install(
                self._left[k], lambda name, value: sess.write_variable(variables[name], value),
                lambda name, indices, rows: sess.copy_variable_rows(variables[name], indices, rows, True),
                self.base[k], patience)
            if done is not None:
                self.base[k], moved = done
                self.counters["bytes_pulled"] += moved
                del self._left[k]
        if pulled is not None:
            self.counters["pulls"] += 1
        self.counters["pull_seconds"] += time.perf_counter() - start

    def close(self):
        for link in self.links:
            link.close()


class _Courier(threading.Thread):
    """Async mode: pushes the gradients handed to it, then pulls, while the worker computes its
    next steps; the worker loads what it pulled before its next step (`take`)."""

    def __init__(self):
        super().__init__(daemon=True, name="pygrad-courier")
        self._cond = threading.Condition()
        self._work, self._pulled, self._error, self._stopped, self.busy = None, None, None, False, False
        self.start()

    def hand(self, exchange, step, grads, base, pull):
        with self._cond:
            self._work, self.busy = (exchange, step, grads, base, pull), True
            self._cond.notify_all()

    def wait(self):
        with self._cond:
            self._cond.wait_for(lambda: not self.busy)

    def raise_error(self):
        with self._cond:
            error, self._error = self._error, None
        if error is not None:
            raise error

    def take(self, exchange):
        """What the courier last pulled through this exchange (None: nothing new, or it came
        through another); raises what its last exchange raised."""
        self.raise_error()
        with self._cond:
            pulled, self._pulled = self._pulled, None
        return pulled[1] if pulled is not None and pulled[0] is exchange else None

    def stop(self):
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def run(self):
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._work is not None or self._stopped)
                if self._work is None:
                    return
                exchange, step, grads, base, pull = self._work
            pulled = error = None
            try:
                exchange.push(step, grads, base)
                if pull:
                    pulled = exchange.pull()
            except BaseException as e:  # handed to the worker's loop, which decides
                error = e
            with self._cond:
                self._work, self.busy = None, False
                self._pulled = (exchange, pulled) if pulled is not None else self._pulled
                self._error = error
                self._cond.notify_all()


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
