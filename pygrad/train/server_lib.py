"""tf.train.ClusterSpec and tf.train.Server, as TensorFlow 1's server_lib.py.

A ClusterSpec is TF's in every respect (jobs, tasks, addresses, its ClusterDef). A Server is this
process's task of a cluster: its ServerDef and its target, "grpc://<host>:<port>" of the task's
address, as TF's. A session on that target runs here, in the process that built the graph, as
tf.Session("") does; a session on another process's server is refused (see session.check_target).

A parameter-server task ("ps" job) serves the variables placed on it to the cluster's other
processes (train/cluster_service.py; ps task 0 listens on its address); join() blocks for good,
as TF's, while it serves. In a cluster with a ps job, the sessions of another task's server keep
the variables placed on /job:ps/task:N on that task (train/remote_run.py) unless that task's
server runs in this same process; the cluster is reached at the first run that needs it, waiting
up to $PYGRAD_CLUSTER_TIMEOUT seconds (else the config's operation_timeout_in_ms, else 60 s).
"""
import os
import socket
import threading
import weakref

from pygrad import errors
from pygrad.session import LOCAL_TARGETS, REMOTE_TARGETS

_LOCAL_PS = weakref.WeakValueDictionary()  # address -> the started ps Server of this process there


class ClusterSpec:
    """A cluster: job names, each with its tasks' network addresses ("host:port"), from a dict of
    lists, a dict of {task index: address} per job, a ClusterDef or another ClusterSpec."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_cluster_def()
        if isinstance(cluster, dict):
            self._spec = {}
            for job, tasks in cluster.items():
                if isinstance(tasks, (list, tuple)):
                    self._spec[job] = dict(enumerate(tasks))
                elif isinstance(tasks, dict):
                    self._spec[job] = {int(i): t for i, t in tasks.items()}
                else:
                    raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary from integers to "
                                    f"strings.")
            for job, tasks in sorted(self._spec.items(), key=lambda kv: str(kv[0])):
                if not isinstance(job, (str, bytes)):
                    raise TypeError(f"Job name {job!r} must be bytes or unicode")
                for address in tasks.values():
                    if not isinstance(address, (str, bytes)):
                        raise TypeError(f"Task address {address!r} must be bytes or unicode")
        elif hasattr(cluster, "job") and hasattr(cluster, "SerializeToString"):  # a ClusterDef (pygrad's or TF's)
            self._spec = {job.name: dict(job.tasks.items()) for job in cluster.job}
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of network "
                            "addresses, or a `ClusterDef` protocol buffer")

    def __bool__(self):
        return bool(self._spec)

    def __eq__(self, other):
        return self._spec == other

    def __ne__(self, other):
        return self._spec != other

    def __repr__(self):
        d = self.as_dict()
        return "ClusterSpec({" + ", ".join(f"{k!r}: {d[k]!r}" for k in sorted(d)) + "})"

    def as_dict(self):
        """{job: [addresses]} for a job whose task indices are 0..n-1, else {job: {index: address}}."""
        out = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if indices and max(indices) + 1 == len(indices):
                out[job] = self.job_tasks(job)
            else:
                out[job] = {i: self.task_address(job, i) for i in indices}
        return out

    def as_cluster_def(self):
        """The cluster as TF's ClusterDef message (jobs in name order)."""
        from pygrad.tf_protos import ClusterDef

        cluster_def = ClusterDef()
        for job, tasks in sorted(self._spec.items()):
            job_def = cluster_def.job.add(name=job.decode() if isinstance(job, bytes) else job)
            for i, address in sorted(tasks.items()):
                job_def.tasks[i] = address.decode() if isinstance(address, bytes) else address
        return cluster_def

    @property
    def jobs(self):
        return list(self._spec)

    def _job(self, job_name):
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        """[address per task index], None where a sparse job has no task."""
        job = self._job(job_name)
        out = [None] * (max(job) + 1) if job else []
        for i, address in job.items():
            out[i] = address
        return out


def _server_def(server_or_cluster_def, job_name, task_index, protocol):
    """The ServerDef of a Server's arguments, by TF's rules (_make_server_def)."""
    from pygrad.tf_protos import ServerDef

    if hasattr(server_or_cluster_def, "job_name") and hasattr(server_or_cluster_def, "cluster"):  # a ServerDef
        server_def = ServerDef.FromString(server_or_cluster_def.SerializeToString())
        if job_name is not None:
            server_def.job_name = job_name
        if task_index is not None:
            server_def.task_index = task_index
        if protocol is not None:
            server_def.protocol = protocol
        return server_def
    try:
        cluster = ClusterSpec(server_or_cluster_def)
    except TypeError:
        raise TypeError("Could not convert `server_or_cluster_def` to a `tf.train.ServerDef` or "
                        "`tf.train.ClusterSpec`.") from None
    if job_name is None:
        if len(cluster.jobs) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = cluster.jobs[0]
    if task_index is None:
        indices = cluster.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = indices[0]
    return ServerDef(cluster=cluster.as_cluster_def(), job_name=job_name, task_index=task_index,
                     protocol=protocol or "grpc")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


class Server:
    """This process's task `job_name`/`task_index` of a cluster. Its target, "grpc://host:port" of
    the task's address (a free port for port 0), runs sessions in this process once the server
    has started (start=True does that)."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None, config=None,
                 start=True):
        self._server_def = _server_def(server_or_cluster_def, job_name, task_index, protocol)
        self._config = config
        job = self._server_def.job_name
        jobs = {j.name: j for j in self._server_def.cluster.job}
        if job not in jobs:
            raise errors.InvalidArgumentError(None, None, f"Job \"{job}\" was not defined in cluster")
        task = self._server_def.task_index
        if task not in jobs[job].tasks:
            raise errors.InternalError(None, None, f"Task {task} was not defined in job \"{job}\"")
        host, _, port = jobs[job].tasks[task].rpartition(":")
        if not port.isdigit():
            raise errors.InvalidArgumentError(None, None, f"Could not parse the port of the address "
                                                          f"{jobs[job].tasks[task]!r} of /job:{job}/task:{task}")
        self._target = f"grpc://{host}:{int(port) or _free_port()}"
        self._started = False
        if start:
            self.start()

    def start(self):
        """Sessions on self.target run in this process from now on. A second server of this process
        on the same address fails, as a second bind of the port does in TF."""
        if self._started:
            return
        if self._target in LOCAL_TARGETS:
            raise errors.UnknownError(None, None, f"Could not start server {self._target}: a server of this "
                                                  f"process already uses {self._target[len('grpc://'):]}")
        LOCAL_TARGETS[self._target] = weakref.WeakKeyDictionary()
        weakref.finalize(self, LOCAL_TARGETS.pop, self._target, None)  # as TF's server stops when collected
        self._started = True
        cluster = ClusterSpec(self._server_def.cluster)
        if "ps" not in cluster.jobs:
            return
        timeout = float(os.environ.get("PYGRAD_CLUSTER_TIMEOUT") or
                        (getattr(self._config, "operation_timeout_in_ms", 0) or 60000) / 1000)
        if self._server_def.job_name == "ps":
            from pygrad.train import cluster_service
            service = cluster_service.serve(cluster, self._server_def.task_index, timeout)
            address = cluster.task_address("ps", self._server_def.task_index)
            _LOCAL_PS[address] = self
            weakref.finalize(self, service.close)
        else:
            from pygrad.train.remote_run import RemoteTarget
            REMOTE_TARGETS[self._target] = RemoteTarget(cluster, _LOCAL_PS, timeout)
            weakref.finalize(self, REMOTE_TARGETS.pop, self._target, None)

    def join(self):
        """Blocks for good, as TF's (Ctrl-C ends it): a parameter-server task's main thread waits
        here while the task serves its variables; the workers' sessions run in the workers."""
        forever = threading.Event()
        while not forever.wait(1.0):
            pass

    @property
    def server_def(self):
        return self._server_def

    @property
    def target(self):
        return self._target

    @staticmethod
    def create_local_server(config=None, start=True):
        """A server of a one-task cluster {"localhost": ["localhost:0"]}, on a free port."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)
