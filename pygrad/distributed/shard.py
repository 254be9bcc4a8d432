"""A parameter-server shard: a Dask actor holding some of the model's variables.

Each shard runs a small pygrad graph of its own: the variables it holds, one placeholder per
variable for a pushed gradient, and `optimizer.apply_gradients` over them, in one Session. So a
push is applied with the optimizer's TensorFlow formulas and slots by the same fused native
updates as in-process training, and a checkpoint is a `tf.train.Saver` checkpoint (TensorFlow's
V2 format) holding the variables, the optimizer's slots and the shard's version as `global_step`.

Modes:
- async (Downpour): a push is applied when it arrives. Its staleness is the shard's version now
  minus the version the worker's weights came from; with max_staleness set, a staler push is
  dropped (stale="drop") or scaled by (max_staleness + 1) / (staleness + 1) (stale="scale").
- sync (as SyncReplicasOptimizer): the pushes made against the current version are gathered and,
  once N - backup_workers of them have arrived (or every worker still running has pushed), their
  mean is applied once and the version moves on; a push against an older version is late: dropped
  and counted. A sync push returns when its step's update has been applied.

A push is checked before it counts (`_check_push`): the worker's index and token (the driver gives
each worker task its own random token), a step later than the last that worker pushed here and
below the run's steps, a base version the shard has had, and one gradient per variable of its
exact shape and dtype, every value finite. A push that fails a check changes nothing, not even the
worker's step; it is counted as refused and raised to the caller (a worker's task then fails, and
so does the run). A shard whose weights are not finite (a finite but huge update can overflow)
raises on every later pull and push that reaches it; a pull through shared memory reads the
weights without asking, and the non-finite gradients computed from them are refused at the next
push.

Every actor method is a coroutine that hands its work to a thread of the shard's own, so the
worker's event loop never blocks; the work itself runs under one lock, one update at a time, and
a sync push waits on its condition for the other workers' pushes. Workers on this host reach the
same `_push` through the shard's local endpoint (`transport.py`: shared memory and a Unix socket),
which the shard makes with its session where /dev/shm exists: its variables live in that shared
memory from the start (`Session.place_variable`), and its updates change them there in place,
under the endpoint's sequence lock.

A sparse variable (its gradient is `IndexedSlices`, as an embedding's is) takes a push of the rows
touched: (values, indices). Its update is the optimizer's sparse rule (`_apply_sparse`, TF's), fed
through placeholders of a row count padded to the next power of two with zero rows repeating the
first index, so that a few plans serve every push (the sparse rules sum repeated rows first).
"""
import asyncio
import collections
import concurrent.futures
import hmac
import numbers
import os
import threading
import time

import numpy as np

from pygrad import errors
from pygrad.distributed.transport import LocalEndpoint, all_finite, from_bfloat16_bits, nbytes, non_finite, scaled

# The sparse updates that change only the rows they are given (TF's Sparse* kernels; SparseApplyAdam,
# TF1's, decays m and v and moves every row).
ROW_LOCAL_UPDATES = {"SparseApplyGradientDescent", "SparseApplyMomentum", "SparseApplyAdagrad", "SparseApplyRMSProp",
                     "SparseApplyCenteredRMSProp"}


class ParameterShard:
    def __init__(self, index, specs, optimizer_fn, tokens, mode="async", steps=None, backup_workers=0,
                 max_staleness=None, stale="drop", checkpoint_dir=None, checkpoint_steps=None,
                 checkpoint_secs=None, restore=False, sync_timeout=60.0, run_id="local", compression=None):
        """tokens: the token of each worker (so num_workers is their number); steps: the run's steps
        per worker (None: no bound); compression="bfloat16": float32 gradients come as the bits of
        bfloat16 (uint16), widened back before they are checked."""
        import pygrad as tf

        num_workers = len(tokens)
        self.index, self.mode, self.num_workers, self.steps = index, mode, num_workers, steps
        self._tokens = [str(t).encode() for t in tokens]
        self._shapes = {s.name: tuple(s.shape) for s in specs}
        self._sparse = {s.name for s in specs if s.sparse}
        self._dtypes = {s.name: np.dtype(s.dtype) for s in specs}
        self.broken = None  # why the weights are unusable (not finite), once they are
        self.backup_workers, self.max_staleness, self.stale = backup_workers, max_staleness, stale
        self.sync_timeout = sync_timeout
        self.names = [s.name for s in specs]
        self._graph = tf.Graph()
        with self._graph.as_default():
            self._vars = []
            for s in specs:
                scope, _, base = s.name.rpartition("/")
                with tf.name_scope(scope + "/" if scope else None):
                    self._vars.append(tf.Variable(s.value, name=base, dtype=tf.as_dtype(s.dtype)))
            self._grads, grads = [], []
            for v, s in zip(self._vars, specs):
                name = "grad_" + v.op.name.replace("/", "_")
                if s.sparse:
                    values = tf.placeholder(v.dtype.base_dtype, [None] + list(s.shape[1:]), name=name + "_values")
                    indices = tf.placeholder(tf.int64, [None], name=name + "_indices")
                    self._grads.append((values, indices))
                    grads.append(tf.IndexedSlices(values, indices, tf.constant(list(s.shape), tf.int64)))
                else:
                    self._grads.append(tf.placeholder(v.dtype.base_dtype, v.shape, name=name))
                    grads.append(self._grads[-1])
            self._apply = optimizer_fn().apply_gradients(list(zip(grads, self._vars)))
            # Sparse variables whose update changes only the rows pushed (not Adam's, say, which moves
            # every row): their pulls can be partial.
            self.row_local = {s.name for s, g in zip(specs, self._grads)
                              if s.sparse and all(c.type in ROW_LOCAL_UPDATES for c in g[0].consumers())}
            self._step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
            # The last step each worker pushed, so that a worker restarted after this shard was
            # restored resumes from the checkpoint's step.
            self._worker_steps = tf.Variable(np.full(num_workers, -1, np.int64), trainable=False,
                                             name="worker_steps")
            self._saver = tf.train.Saver(max_to_keep=3) if checkpoint_dir else None
            init = tf.global_variables_initializer()
        for v, s in zip(self._vars, specs):
            if v.op.name != s.name:
                raise ValueError(f"parameter-server shard {index}: variable '{s.name}' was created as "
                                 f"'{v.op.name}' (names must be unique)")
        self._sess = tf.Session(graph=self._graph)
        self._lock = threading.Condition()
        self._run_id, self.compression = run_id, compression
        # On a host with shared memory, the variables live there from the start (before any run
        # takes their addresses): workers on this host copy them from there (transport.py).
        self._endpoint = None
        if LocalEndpoint.available():
            self._endpoint = LocalEndpoint(f"{run_id}-ps{index}", specs, num_workers, self._known, self._push,
                                           compression)
            for v, s in zip(self._vars, specs):
                self._sess.place_variable(v, self._endpoint.weight_views[s.name])
            self._endpoint.begin_write()  # (until they are initialized or restored)
        self._sess.run(init)
        self.version = 0
        self.restored_from = None
        self._ckpt_prefix = os.path.join(checkpoint_dir, f"shard-{index}", "model.ckpt") if checkpoint_dir else None
        if self._ckpt_prefix:
            os.makedirs(os.path.dirname(self._ckpt_prefix), exist_ok=True)
            latest = tf.train.latest_checkpoint(os.path.dirname(self._ckpt_prefix)) if restore else None
            if latest:
                self._saver.restore(self._sess, latest)
                self.version = int(self._sess.run(self._step))
                self.restored_from = latest
                restored_steps = {w: int(t) for w, t in enumerate(self._sess.run(self._worker_steps)) if t >= 0}
        self.versions = {n: self.version for n in self.names}
        self._ckpt_every_steps, self._ckpt_every_secs = checkpoint_steps, checkpoint_secs
        self._ckpt_version, self._ckpt_time = self.version, time.monotonic()
        self.last_checkpoint = self.restored_from
        self._last_step = restored_steps if self.restored_from else {}  # worker -> its last step pushed here
        self._active = set(range(num_workers))
        self._pending = {}                   # sync: worker -> its gradients for the current version
        self.counts = collections.Counter()  # pushes, applied, dropped_stale, scaled, late, refused
        self.staleness = collections.Counter()
        self.apply_seconds = []
        self.bytes_in = self.bytes_out = 0
        # Sync pushes wait in these threads for the others: one per worker, and some for the rest.
        self._pool = concurrent.futures.ThreadPoolExecutor(num_workers + 4, thread_name_prefix=f"pygrad-ps{index}")
        # The version that last changed each row of a variable in row_local (beside the weights, in
        # shared memory, when they are there).
        self.row_versions = {n: self._endpoint.versions[n] if self._endpoint else np.zeros(self._shapes[n][0], np.int64)
                             for n in self.row_local}
        if self._endpoint:
            self._endpoint.end_write(self.version)

    async def _threaded(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    # ------------------------------------------------------------------ reads
    async def ping(self):
        return self.version

    async def pull(self, since=None):
        """(version, {name: value}) of every variable this shard holds. With since (a version), the
        variables in row_local are (rows, indices) of the rows changed after it."""
        return await self._threaded(self._pull, since)

    async def local_endpoint(self):
        """{"directory" of this shard's local endpoint (made at the first call), for workers on its
        host, "row_local"}; None where shared memory or Unix sockets are missing."""
        return await self._threaded(self._local_endpoint)

    async def close(self):
        """Closes the local endpoint (its files go) and the shard's threads."""
        with self._lock:
            if self._endpoint is not None:
                self._endpoint.close()
                self._endpoint = None
        self._pool.shutdown(wait=False)

    def _local_endpoint(self):
        with self._lock:
            if self._endpoint is None:
                return None
            return {"directory": self._endpoint.directory, "row_local": sorted(self.row_local)}

    def _pull(self, since=None):
        with self._lock:
            self._check_not_broken()
            values = self._sess.run(self._vars)
            bad = [f"'{n}' ({np.size(v) - np.count_nonzero(np.isfinite(v))} of {np.size(v)} values)"
                   for n, v in zip(self.names, values) if not all_finite(np.asarray(v))]
            if bad:
                self.broken = (f"parameter-server shard {self.index}: the weights are not finite at version "
                               f"{self.version}: {', '.join(bad)}")
                self._check_not_broken()
            if since is not None:
                for i, n in enumerate(self.names):
                    if n in self.row_local:
                        changed = np.flatnonzero(self.row_versions[n] > since)
                        values[i] = (np.ascontiguousarray(values[i][changed]), changed)
            self.bytes_out += sum(nbytes(v) for v in values)
            return self.version, dict(zip(self.names, values))

    async def progress(self, worker):
        """The last step `worker` pushed here (-1: none)."""
        return self._last_step.get(worker, -1)

    async def stats(self):
        with self._lock:
            return {"shard": self.index, "version": self.version, "counts": dict(self.counts),
                    "staleness": dict(self.staleness), "apply_seconds": list(self.apply_seconds),
                    "bytes_in": self.bytes_in, "bytes_out": self.bytes_out, "restored_from": self.restored_from,
                    "last_checkpoint": self.last_checkpoint}

    # ----------------------------------------------------------------- writes
    async def push(self, worker, token, step, base_version, grads):
        """Hands over worker's gradients ({name: array, or (values, indices) of the rows touched
        for a sparse variable}) of its step, computed on weights of base_version. Returns
        {"status": applied | scaled | stale | late, "version", "staleness"}; raises
        InvalidArgumentError for a push it refuses."""
        return await self._threaded(self._push, worker, token, step, base_version, grads)

    async def worker_done(self, worker, token):
        """worker has finished: sync steps stop waiting for it."""
        return await self._threaded(self._worker_done, worker, token)

    async def checkpoint(self):
        """Saves a checkpoint now; returns its prefix (None without a checkpoint directory)."""
        return await self._threaded(self._save)

    # -------------------------------------------------------------- internals
    def _push(self, worker, token, step, base_version, grads):
        with self._lock:
            self.counts["pushes"] += 1
            if self.compression and isinstance(grads, dict):
                grads = {n: self._widened(n, g) for n, g in grads.items()}
            try:
                self._check_push(worker, token, step, base_version, grads)
            except errors.InvalidArgumentError:
                self.counts["refused"] += 1
                raise
            grads = {n: _aligned(g) for n, g in grads.items()}
            self.bytes_in += sum(nbytes(g) for g in grads.values())
            self._last_step[worker] = step
            staleness = self.version - base_version
            if self.mode == "sync":
                return self._push_sync(worker, base_version, grads, staleness)
            self.staleness[staleness] += 1
            status = "applied"
            if self.max_staleness is not None and staleness > self.max_staleness:
                if self.stale == "drop":
                    self.counts["dropped_stale"] += 1
                    return {"status": "stale", "version": self.version, "staleness": staleness}
                scale = (self.max_staleness + 1.0) / (staleness + 1.0)
                grads = {n: scaled(g, scale) for n, g in grads.items()}
                self.counts["scaled"] += 1
                status = "scaled"
            self._apply_update([grads[n] for n in self.names])
            return {"status": status, "version": self.version, "staleness": staleness}

    def _widened(self, name, g):
        """A compressed gradient (bfloat16 bits) of a float32 variable as float32; anything else as it came."""
        if self._dtypes.get(name) != np.float32:
            return g
        if isinstance(g, tuple) and len(g) == 2 and isinstance(g[0], np.ndarray) and g[0].dtype == np.uint16:
            return from_bfloat16_bits(g[0]), g[1]
        if isinstance(g, np.ndarray) and g.dtype == np.uint16:
            return from_bfloat16_bits(g)
        return g

    def _worker_done(self, worker, token):
        with self._lock:
            if not self._known(worker, token):
                self.counts["refused"] += 1
                raise errors.InvalidArgumentError(None, None, f"parameter-server shard {self.index} refused the end "
                                                              f"of worker {worker!r}: unknown worker or wrong token")
            self._active.discard(worker)
            if self.mode == "sync" and self._pending and len(self._pending) >= self._required():
                self._apply_pending()

    def _known(self, worker, token):
        return (isinstance(worker, numbers.Integral) and not isinstance(worker, bool)
                and 0 <= worker < self.num_workers and isinstance(token, str)
                and hmac.compare_digest(self._tokens[worker], token.encode()))

    def _check_push(self, worker, token, step, base_version, grads):
        """Raises InvalidArgumentError naming what is wrong with this push, before it changes anything."""
        def refuse(reason):
            raise errors.InvalidArgumentError(None, None, f"parameter-server shard {self.index} refused the push of "
                                                          f"worker {worker!r}, step {step!r}: {reason}")

        self._check_not_broken()
        if not self._known(worker, token):
            refuse(f"unknown worker or wrong token (the run's workers are 0..{self.num_workers - 1})")
        if not isinstance(step, numbers.Integral) or step < 0 or self.steps is not None and step >= self.steps:
            refuse(f"the step must be an integer in [0, {self.steps})")
        last = self._last_step.get(worker, -1)
        if step <= last:
            refuse(f"a replayed or duplicate push: this worker's last step pushed here is {last}")
        if not isinstance(base_version, numbers.Integral) or not 0 <= base_version <= self.version:
            refuse(f"base version {base_version!r} is not one this shard has had (0..{self.version})")
        if not isinstance(grads, dict):
            refuse(f"the gradients must be a dict {{variable name: array}}, got {type(grads).__name__}")
        missing, unknown = [n for n in self.names if n not in grads], sorted(set(grads) - set(self.names), key=str)
        if missing or unknown:
            refuse(f"no gradient for {missing}" if missing else f"gradients for variables it does not hold: {unknown}")
        for n in self.names:
            g, shape, dtype = grads[n], self._shapes[n], self._dtypes[n]
            if n in self._sparse:
                if not (isinstance(g, tuple) and len(g) == 2 and all(isinstance(a, np.ndarray) for a in g)):
                    refuse(f"the gradient of '{n}' must be (values, indices) of the rows touched, got "
                           f"{type(g).__name__}")
                g, indices = g
                if (indices.dtype.kind not in "iu" or indices.ndim != 1 or g.dtype != dtype
                        or g.shape != (len(indices),) + shape[1:]):
                    refuse(f"the gradient of '{n}' must be {dtype} values of shape [rows] + {list(shape[1:])} and "
                           f"rows integer indices, got {g.dtype} {g.shape} and {indices.dtype} {indices.shape}")
                if len(indices) and (indices.min() < 0 or indices.max() >= shape[0]):
                    refuse(f"the gradient of '{n}' has row indices outside [0, {shape[0]})")
            elif not isinstance(g, np.ndarray) or g.dtype != dtype or g.shape != shape:
                got = f"{g.dtype} {g.shape}" if isinstance(g, np.ndarray) else type(g).__name__
                refuse(f"the gradient of '{n}' must be a {dtype} array of shape {shape}, got {got}")
            bad = non_finite(n, g)
            if bad:
                refuse(bad)

    def _check_not_broken(self):
        if self.broken:
            raise errors.InvalidArgumentError(None, None, self.broken)

    def _required(self):
        return max(1, min(self.num_workers - self.backup_workers, len(self._active)))

    def _push_sync(self, worker, base_version, grads, staleness):
        """(Holding the lock.)"""
        if base_version != self.version:
            self.counts["late"] += 1
            return {"status": "late", "version": self.version, "staleness": staleness}
        self.staleness[0] += 1
        self._pending[worker] = grads
        if len(self._pending) >= self._required():
            self._apply_pending()
        elif not self._lock.wait_for(lambda: self.version > base_version, self.sync_timeout):
            self._pending.pop(worker, None)
            raise TimeoutError(f"parameter-server shard {self.index}: worker {worker} waited {self.sync_timeout:g} s "
                               f"for the other workers' gradients of version {base_version} "
                               f"({len(self._pending) + 1} of {self._required()} arrived)")
        return {"status": "applied", "version": self.version, "staleness": 0}

    def _apply_pending(self):
        workers = sorted(self._pending)
        count = len(workers)
        mean = []
        for n in self.names:
            parts = [self._pending[w][n] for w in workers]
            if n in self._sparse:
                values = np.concatenate([v for v, _ in parts])
                mean.append((values / np.asarray(count, values.dtype), np.concatenate([i for _, i in parts])))
            else:
                mean.append(sum(parts) / np.asarray(count, parts[0].dtype))
        self._pending = {}
        self._apply_update(mean)
        self._lock.notify_all()

    def _apply_update(self, grads):
        start = time.perf_counter()
        feed, touched = {}, {}
        for ph, g, n in zip(self._grads, grads, self.names):
            if n in self._sparse:
                (values_ph, indices_ph), (values, indices) = ph, _padded(*g, self._shapes[n][0])
                feed[values_ph], feed[indices_ph] = values, indices
                if n in self.row_local:
                    touched[n] = np.unique(indices)
            else:
                feed[ph] = g
        if self._endpoint:
            self._endpoint.begin_write()
        try:
            self._sess.run(self._apply, feed_dict=feed)
            self.version += 1
            for n, indices in touched.items():
                self.row_versions[n][indices] = self.version
        finally:
            if self._endpoint:
                self._endpoint.end_write(self.version)
        self.apply_seconds.append(time.perf_counter() - start)
        for n in self.names:
            self.versions[n] += 1
        self.counts["applied"] += 1
        due = (self._ckpt_every_steps and self.version - self._ckpt_version >= self._ckpt_every_steps
               or self._ckpt_every_secs and time.monotonic() - self._ckpt_time >= self._ckpt_every_secs)
        if self._ckpt_prefix and due:
            self._save()

    def _save(self):
        with self._lock:
            if not self._ckpt_prefix:
                return None
            self._step.load(self.version, self._sess)
            self._worker_steps.load(np.array([self._last_step.get(w, -1) for w in range(self.num_workers)],
                                             np.int64), self._sess)
            self.last_checkpoint = self._saver.save(self._sess, self._ckpt_prefix, global_step=self.version)
            self._ckpt_version, self._ckpt_time = self.version, time.monotonic()
            return self.last_checkpoint


def _aligned(g):
    """A pushed array as a feed takes it: arrays off the wire may be unaligned."""
    if isinstance(g, tuple):
        return tuple(np.require(a, requirements="CA") for a in g)
    return np.require(g, requirements="CA")


def _padded(values, indices, rows):
    """values and indices with rows of zeros added up to a power of two (at most `rows`), each
    repeating the first index, so that a few feed shapes (and so plans) serve every push."""
    n = len(indices)
    want = n if n >= rows else min(1 << max(0, n - 1).bit_length(), rows) if n else 1
    if want == n:
        return values, indices.astype(np.int64, copy=False)
    pad = want - n
    first = indices[0] if n else 0
    return (np.concatenate([values, np.zeros((pad,) + values.shape[1:], values.dtype)]),
            np.concatenate([indices.astype(np.int64, copy=False), np.full(pad, first, np.int64)]))
