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

Every method is a coroutine, so Dask runs them on the worker's event loop one at a time (an
update runs without yielding); only a sync push waits, for the other workers' pushes.
"""
import asyncio
import collections
import os
import time

import numpy as np


class ParameterShard:
    def __init__(self, index, specs, optimizer_fn, mode="async", num_workers=1, backup_workers=0,
                 max_staleness=None, stale="drop", checkpoint_dir=None, checkpoint_steps=None,
                 checkpoint_secs=None, restore=False, sync_timeout=60.0):
        import pygrad as tf

        self.index, self.mode, self.num_workers = index, mode, num_workers
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
            self._grads = [tf.placeholder(v.dtype.base_dtype, v.shape, name="grad_" + v.op.name.replace("/", "_"))
                           for v in self._vars]
            self._apply = optimizer_fn().apply_gradients(list(zip(self._grads, self._vars)))
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
        self._changed = None                 # asyncio.Condition, made on the event loop
        self.counts = collections.Counter()  # applied, dropped_stale, scaled, late, duplicate, pushes
        self.staleness = collections.Counter()
        self.apply_seconds = []
        self.bytes_in = self.bytes_out = 0

    # ------------------------------------------------------------------ reads
    async def ping(self):
        return self.version

    async def pull(self):
        """(version, {name: value}) of every variable this shard holds."""
        values = self._sess.run(self._vars)
        out = dict(zip(self.names, values))
        self.bytes_out += sum(v.nbytes for v in values)
        return self.version, out

    async def progress(self, worker):
        """The last step `worker` pushed here (-1: none)."""
        return self._last_step.get(worker, -1)

    async def stats(self):
        return {"shard": self.index, "version": self.version, "counts": dict(self.counts),
                "staleness": dict(self.staleness), "apply_seconds": list(self.apply_seconds),
                "bytes_in": self.bytes_in, "bytes_out": self.bytes_out, "restored_from": self.restored_from,
                "last_checkpoint": self.last_checkpoint}

    # ----------------------------------------------------------------- writes
    async def push(self, worker, step, base_version, grads):
        """Hands over worker's gradients ({name: array}) of its step, computed on weights of
        base_version. Returns {"status": applied | scaled | stale | late | duplicate, "version",
        "staleness"}."""
        self.counts["pushes"] += 1
        grads = {n: np.require(g, requirements="CA") for n, g in grads.items()}  # off the wire: maybe unaligned
        self.bytes_in += sum(g.nbytes for g in grads.values())
        if step <= self._last_step.get(worker, -1):
            self.counts["duplicate"] += 1
            return {"status": "duplicate", "version": self.version, "staleness": 0}
        self._last_step[worker] = step
        missing = [n for n in self.names if n not in grads]
        if missing:
            raise ValueError(f"parameter-server shard {self.index}: worker {worker}'s push has no gradient "
                             f"for {missing}")
        staleness = self.version - base_version
        if self.mode == "sync":
            return await self._push_sync(worker, base_version, grads, staleness)
        self.staleness[staleness] += 1
        status = "applied"
        if self.max_staleness is not None and staleness > self.max_staleness:
            if self.stale == "drop":
                self.counts["dropped_stale"] += 1
                return {"status": "stale", "version": self.version, "staleness": staleness}
            scale = (self.max_staleness + 1.0) / (staleness + 1.0)
            grads = {n: g * np.asarray(scale, g.dtype) for n, g in grads.items()}
            self.counts["scaled"] += 1
            status = "scaled"
        self._apply_update([grads[n] for n in self.names])
        return {"status": status, "version": self.version, "staleness": staleness}

    async def worker_done(self, worker):
        """worker has finished: sync steps stop waiting for it."""
        self._active.discard(worker)
        if self.mode == "sync" and self._pending and len(self._pending) >= self._required():
            await self._apply_pending()

    async def checkpoint(self):
        """Saves a checkpoint now; returns its prefix (None without a checkpoint directory)."""
        return self._save()

    # -------------------------------------------------------------- internals
    def _required(self):
        return max(1, min(self.num_workers - self.backup_workers, len(self._active)))

    async def _push_sync(self, worker, base_version, grads, staleness):
        if self._changed is None:
            self._changed = asyncio.Condition()
        if base_version != self.version:
            self.counts["late"] += 1
            return {"status": "late", "version": self.version, "staleness": staleness}
        self.staleness[0] += 1
        self._pending[worker] = grads
        if len(self._pending) >= self._required():
            await self._apply_pending()
        else:
            async with self._changed:
                try:
                    await asyncio.wait_for(self._changed.wait_for(lambda: self.version > base_version),
                                           self.sync_timeout)
                except asyncio.TimeoutError:
                    self._pending.pop(worker, None)
                    raise TimeoutError(
                        f"parameter-server shard {self.index}: worker {worker} waited {self.sync_timeout:g} s "
                        f"for the other workers' gradients of version {base_version} "
                        f"({len(self._pending) + 1} of {self._required()} arrived)") from None
        return {"status": "applied", "version": self.version, "staleness": 0}

    async def _apply_pending(self):
        workers = sorted(self._pending)
        mean = [sum(self._pending[w][n] for w in workers) / np.asarray(len(workers), self._pending[workers[0]][n].dtype)
                for n in self.names]
        self._pending = {}
        self._apply_update(mean)
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            self._changed.notify_all()

    def _apply_update(self, grads):
        start = time.perf_counter()
        self._sess.run(self._apply, feed_dict=dict(zip(self._grads, grads)))
        self.apply_seconds.append(time.perf_counter() - start)
        self.version += 1
        for n in self.names:
            self.versions[n] += 1
        self.counts["applied"] += 1
        due = (self._ckpt_every_steps and self.version - self._ckpt_version >= self._ckpt_every_steps
               or self._ckpt_every_secs and time.monotonic() - self._ckpt_time >= self._ckpt_every_secs)
        if self._ckpt_prefix and due:
            self._save()

    def _save(self):
        if not self._ckpt_prefix:
            return None
        self._step.load(self.version, self._sess)
        self._worker_steps.load(np.array([self._last_step.get(w, -1) for w in range(self.num_workers)], np.int64),
                                self._sess)
        self.last_checkpoint = self._saver.save(self._sess, self._ckpt_prefix, global_step=self.version)
        self._ckpt_version, self._ckpt_time = self.version, time.monotonic()
        return self.last_checkpoint
