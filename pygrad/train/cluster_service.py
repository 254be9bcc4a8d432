"""How the tasks of a TF1 cluster reach each other: the parameter-server tasks hold the variables
placed on them and run the ops that write them, for the workers' sessions (train/remote_run.py).

Underneath is Dask. Parameter-server task 0 runs a Dask scheduler on its ClusterSpec address;
every ps task runs a Dask worker holding one TaskService actor, whose handle it publishes (a Dask
Variable "pygrad-ps-<task>"); a worker task connects a Dask client to the scheduler and takes the
handles. Every connection is TLS with mutual authentication, with credentials only the user's own
processes read: made once in $PYGRAD_CLUSTER_DIR (default ~/.pygrad/cluster; the directory 0700,
the file 0600) and read by each task, so tasks started by hand find each other and another user
cannot join or run code in them; a cluster over several hosts shares that directory. A task that
cannot reach its cluster fails with UnavailableError naming the address after a timeout.
"""
import asyncio
import json
import logging
import os
import threading
import time

import numpy as np

from pygrad import errors

_CREDENTIALS = ("tls_ca_file", "tls_client_key", "tls_client_cert", "tls_scheduler_key", "tls_scheduler_cert",
                "tls_worker_key", "tls_worker_cert")


def require_dask():
    """ImportError saying what to install when Dask is missing (an optional dependency)."""
    try:
        import distributed  # noqa: F401
    except ImportError as e:
        raise ImportError(f"a cluster with ps tasks runs on Dask, which is not installed ({e}): pip install "
                          f"'pygrad[distributed]'") from e


def credentials():
    """The Dask Security of this user's clusters: TLS required, the certificates of
    $PYGRAD_CLUSTER_DIR/credentials.json, made there at first use."""
    from distributed.security import Security

    directory = os.environ.get("PYGRAD_CLUSTER_DIR") or os.path.join(os.path.expanduser("~"), ".pygrad", "cluster")
    path = os.path.join(directory, "credentials.json")
    if not os.path.exists(path):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        made = Security.temporary()
        pems = {k: getattr(made, k) for k in _CREDENTIALS}
        partial = f"{path}.{os.getpid()}.tmp"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(pems, f)
        try:
            os.link(partial, path)  # the first task to get here makes them; the others read them
        except FileExistsError:
            pass
        os.unlink(partial)
    if os.stat(path).st_mode & 0o077:
        raise errors.PermissionDeniedError(None, None, f"{path} (the cluster's credentials) can be read by other "
                                                       f"users: chmod 600 it")
    with open(path) as f:
        pems = json.load(f)
    return Security(require_encryption=True, **pems)


class TaskService:
    """A parameter-server task's state: its variables, by name, in a pygrad graph of its own, and
    the ops the workers' runs send to write them (built once per signature, run by one session).
    Dask runs an actor's methods one at a time, so a batch of ops is applied atomically."""

    def __init__(self, task):
        from pygrad.graph import Graph
        from pygrad.session import Session

        self.task = task
        self._graph = Graph()
        self._sess = Session(graph=self._graph)
        self._vars = {}  # name -> Variable
        self._batches = {}  # signature -> (placeholders, targets, outputs)
        self._sync = {}  # global step's name -> the sums of the current step (SyncReplicasOptimizer)

    def _variable(self, name, dtype, shape):
        v = self._vars.get(name)
        if v is None:
            from pygrad.ops.array_ops import zeros
            from pygrad.ops.state_ops import Variable
            with self._graph.as_default():
                v = Variable(zeros(shape, dtype), name=name)
            if v.op.name != name:
                raise errors.InternalError(None, None, f"variable {name} of /job:ps/task:{self.task} took the name "
                                                       f"{v.op.name}")
            self._vars[name] = v
        if v.dtype.name != dtype or v.shape.as_list() != list(shape):
            raise errors.InvalidArgumentError(None, None, f"variable {name} of /job:ps/task:{self.task} is "
                                                          f"{v.dtype.name} {v.shape}, a run sends it as {dtype} "
                                                          f"{list(shape)}")
        return v

    async def read(self, names):
        """{name: value} of the named variables that are initialized (the others are left out)."""
        out = {}
        for name in names:
            v = self._vars.get(name)
            if v is not None:
                try:
                    out[name] = self._sess.run(v)
                except errors.FailedPreconditionError:
                    pass
        return out

    async def run(self, signature, values):
        """Runs a batch of ops on this task's variables: signature is ((type, attrs, inputs,
        controls, n_out), ...), an input ("var", name, dtype, shape), ("value", i) or ("out", j, k)
        (output k of the batch's op j), controls the earlier ops of the batch it waits for;
        values the fed arrays; n_out the number of an op's outputs to return. Returns the
        outputs of every op, as arrays. A batch of a SyncReplicasOptimizer's train op waits for
        its step (_run_sync)."""
        accumulates = [j for j, op in enumerate(signature) if op[0] == "SyncReplicasAccumulate"]
        if accumulates:
            return await self._run_sync(signature, values, accumulates)
        return self._run_batch(signature, values)

    def _run_batch(self, signature, values):
        batch = self._batches.get(signature)
        if batch is None:
            batch = self._batches[signature] = self._build(signature, values)
        placeholders, targets, outputs = batch
        got = self._sess.run([targets, outputs], {p: v for p, v in zip(placeholders, values) if p is not None})
        return got[1]

    async def _run_sync(self, signature, values, accumulates):
        """A SyncReplicasOptimizer's step (train/sync_replicas.py): the gradients of a push against
        the current global step are added to the step's sums; the push that makes
        replicas_to_aggregate of them runs the rest of the batch (the wrapped optimizer's update,
        the global step's increment) on their means and wakes the others; a push against an older
        step changes nothing. Every push returns the global step after its step (the token)."""
        (token,) = [j for j, op in enumerate(signature) if op[0] == "SyncReplicasToken"]
        global_step = self._variable(*signature[token][2][0][1:])
        step = int(self._sess.run(global_step))
        first = signature[accumulates[0]]
        local_step = int(np.asarray(values[first[2][2][1]]))
        replicas = dict(first[1])["replicas"]
        state = self._sync.get(global_step.op.name)
        if state is None or state["step"] != step:
            state = self._sync[global_step.op.name] = {"step": step, "sums": None, "count": 0,
                                                       "done": asyncio.Event()}
        grads = [np.asarray(values[signature[j][2][1][1]]) for j in accumulates]
        if local_step < step:  # stale: dropped, as TF's accumulators drop it
            return self._outputs(signature, grads, accumulates, token, step)
        state["sums"] = grads if state["sums"] is None else [a + b for a, b in zip(state["sums"], grads)]
        state["count"] += 1
        if state["count"] < replicas:
            await state["done"].wait()
            return self._outputs(signature, grads, accumulates, token, int(self._sess.run(global_step)))
        means = [(s / state["count"]).astype(s.dtype) for s in state["sums"]]
        rest, rest_values, where = _without(signature, accumulates + [token], values, dict(zip(accumulates, means)))
        done = self._run_batch(rest, rest_values)
        new_step = int(self._sess.run(global_step))
        state["done"].set()
        outputs = self._outputs(signature, means, accumulates, token, new_step)
        for j, k in where.items():
            outputs[j] = done[k]
        return outputs

    def _outputs(self, signature, grads, accumulates, token, step):
        """Every op's outputs for a push that did not run the update: an accumulate's gradient,
        the token, and the current value of what the others write."""
        out = []
        for j, (type_name, attrs, inputs, controls, n_out) in enumerate(signature):
            if j in accumulates:
                out.append([grads[accumulates.index(j)]][:n_out])
            elif j == token:
                dtype = inputs[0][2]
                out.append([np.asarray(step, dtype)])
            else:
                out.append([self._sess.run(self._variable(*inputs[0][1:]))] * n_out if n_out else [])
        return out

    def _build(self, signature, values):
        from pygrad.dtypes import as_dtype
        from pygrad.graph import unwrap
        from pygrad.ops.array_ops import placeholder
        from pygrad.registry import OpDef

        placeholders = [None] * len(values)
        built, outputs = [], []
        with self._graph.as_default():
            for type_name, attrs, inputs, controls, n_out in signature:
                args = []
                for kind, *where in inputs:
                    if kind == "var":
                        args.append(unwrap(self._variable(*where)))
                    elif kind == "value":
                        i = where[0]
                        if placeholders[i] is None:
                            v = np.asarray(values[i])
                            placeholders[i] = placeholder(as_dtype(v.dtype), v.shape)
                        args.append(placeholders[i])
                    else:
                        j, k = where
                        args.append(built[j].outputs[k])
                with self._graph.control_dependencies([built[j] for j in controls]):
                    out = OpDef.all[type_name](*args, **dict(attrs))
                op = out[0].op if isinstance(out, (list, tuple)) else out.op if hasattr(out, "op") else out
                built.append(op)
                outputs.append(list(op.outputs[:n_out]))
        return placeholders, built, outputs


def _without(signature, dropped, values, replaced):
    """The batch without the ops `dropped`, an input ("out", j, 0) of a replaced op j becoming a
    fed value; (batch, its values, {op index in signature: op index in the batch})."""
    where = {j: len([i for i in range(j) if i not in dropped]) for j in range(len(signature)) if j not in dropped}
    values = list(values)
    fed = {}
    ops = []
    for j, (type_name, attrs, inputs, controls, n_out) in enumerate(signature):
        if j in dropped:
            continue
        ins = []
        for kind, *at in inputs:
            if kind == "out" and at[0] in replaced:
                if at[0] not in fed:
                    fed[at[0]] = len(values)
                    values.append(replaced[at[0]])
                ins.append(("value", fed[at[0]]))
            elif kind == "out":
                ins.append(("out", where[at[0]], at[1]))
            else:
                ins.append((kind, *at))
        ops.append((type_name, attrs, tuple(ins), tuple(where[c] for c in controls if c in where), n_out))
    return tuple(ops), values, where


class _Loop:
    """An asyncio loop on a thread of its own, for the Dask scheduler and worker of a ps task."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="pygrad cluster", daemon=True).start()

    def run(self, coroutine, timeout):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


LOOPBACK = "127.0.0.1"


def quiet():
    """Dask's per-connection INFO lines off (warnings and errors stay)."""
    logging.getLogger("distributed").setLevel(logging.WARNING)


def _host_port(address):
    host, _, port = address.rpartition(":")
    return host or "localhost", int(port)


def serve(cluster, task, timeout=60.0):
    """Starts ps task `task` of the ClusterSpec cluster in this process: the scheduler (task 0),
    a Dask worker and its TaskService, published for the workers. Returns what keeps them alive."""
    require_dask()
    from distributed import Client, Scheduler, Variable, Worker

    quiet()
    security = credentials()
    address = cluster.task_address("ps", task)
    scheduler_address = "tls://" + cluster.task_address("ps", 0)
    host, port = _host_port(address)
    runner = _Loop()

    async def start():
        scheduler = None
        if task == 0:
            scheduler = await Scheduler(host=host, port=port, protocol="tls://", security=security, dashboard=False,
                                        dashboard_address=f"{LOOPBACK}:0")  # (its metrics: loopback only)
        worker = await Worker(scheduler_address, nthreads=1, resources={f"ps{task}": 1}, security=security,
                              host=host, protocol="tls://", dashboard=False, dashboard_address=f"{LOOPBACK}:0",
                              name=f"/job:ps/task:{task}", memory_limit=0)
        return scheduler, worker

    try:
        scheduler, worker = runner.run(start(), timeout)
    except (OSError, TimeoutError, asyncio.TimeoutError) as e:
        raise errors.UnavailableError(None, None, f"/job:ps/task:{task} could not start on {address} or reach the "
                                                  f"cluster's scheduler at {scheduler_address}: "
                                                  f"{type(e).__name__}: {e}") from e
    client = Client(scheduler_address, security=security, timeout=timeout, set_as_default=False)
    future = client.submit(TaskService, task, actor=True, resources={f"ps{task}": 1}, key=f"pygrad-ps-{task}")
    future.result(timeout)
    Variable(f"pygrad-ps-{task}", client=client).set({"key": future.key, "address": worker.address})
    return _Service(runner, scheduler, worker, client, future)


class _Service:
    """What keeps a ps task serving; close() stops it (a Server that is collected, a test)."""

    def __init__(self, runner, scheduler, worker, client, future):
        self._parts = runner, scheduler, worker, client, future

    def close(self):
        if self._parts is None:
            return
        runner, scheduler, worker, client, future = self._parts
        self._parts = None
        del future
        client.close()

        async def stop():
            await worker.close()
            if scheduler is not None:
                await scheduler.close()

        runner.run(stop(), 30)
        runner.loop.call_soon_threadsafe(runner.loop.stop)


class Cluster:
    """A worker task's view of its cluster: a Dask client and the TaskService of each ps task."""

    def __init__(self, cluster, timeout=60.0):
        require_dask()
        from distributed import Client, Variable
        from distributed.actor import Actor

        quiet()
        address = cluster.task_address("ps", 0)
        try:
            self.client = Client("tls://" + address, security=credentials(), timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise errors.UnavailableError(None, None, f"cannot reach the cluster's /job:ps/task:0 at {address} "
                                                      f"(waited up to {timeout:g} s): {type(e).__name__}: {e}") from e
        self.tasks = []
        for task in cluster.task_indices("ps"):
            deadline = time.monotonic() + timeout
            while True:
                try:
                    where = Variable(f"pygrad-ps-{task}", client=self.client).get(timeout=1.0)
                    break
                except (TimeoutError, asyncio.TimeoutError):
                    if time.monotonic() > deadline:
                        raise errors.UnavailableError(None, None, f"/job:ps/task:{task} at "
                                                                  f"{cluster.task_address('ps', task)} did not join "
                                                                  f"the cluster within {timeout:g} s") from None
            self.tasks.append(Actor(TaskService, where["address"], where["key"], worker=None))
        self._lock = threading.Lock()

    def call(self, task, method, *args):
        """The reply of TaskService method of ps task `task`; the task's error, raised here."""
        with self.client.as_current():
            return getattr(self.tasks[task], method)(*args).result()

    def close(self):
        self.client.close()
