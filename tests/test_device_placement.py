"""The graph-level pieces of TF1's distributed API against TensorFlow (tensorflow.compat.v1, run
side by side): DeviceSpec, the device each op gets in nested tf.device scopes, device functions
and colocation, replica_device_setter's placement of a between-graph replicated model (every op
both graphs name alike has TF's device), ClusterSpec and Server."""
import math
import socket

import numpy as np
import pytest

import pygrad as tf
from pygrad.tf_protos import ClusterDef

SPECS = ["/CPU:0", "cpu:0", "/job:ps/task:0/cpu:1", "/device:CPU:0", "/job:foo/replica:0/task:2/device:GPU:3",
         "/gpu:*", "GPU", "/job:a/", "//job:a", "", "/job:worker/replica:1/task:3/device:TPU:0"]
BAD_SPECS = ["/foo:bar", "/cpu:0/gpu:0", "/job:a/task:x", "/job:a/replica:x", "/device:GPU:x"]


@pytest.fixture
def peer(tf_peer):
    """TensorFlow with TF1's variables (VariableV2, Assign), as pygrad's."""
    tf_peer.disable_resource_variables()
    yield tf_peer
    tf_peer.enable_resource_variables()


def _fields(d):
    return d.to_string(), d.job, d.replica, d.task, d.device_type, d.device_index


def test_device_spec_parses_prints_and_merges_as_tf(peer):
    for s in SPECS:
        assert _fields(tf.DeviceSpec.from_string(s)) == _fields(peer.DeviceSpec.from_string(s)), s
    for s in BAD_SPECS:
        with pytest.raises(ValueError) as theirs:
            peer.DeviceSpec.from_string(s)
        with pytest.raises(ValueError) as ours:
            tf.DeviceSpec.from_string(s)
        assert str(ours.value) == str(theirs.value)
    for m in (tf, peer):
        d = m.DeviceSpec(job="a", task=1)
        d.merge_from(m.DeviceSpec(device_type="cpu", device_index=0))
        same = d.parse_from_string("/job:x/gpu:2") is d
        merged = m.DeviceSpec(job="a", device_type="CPU").make_merged_spec(m.DeviceSpec(device_type="GPU"))
        out = (same, d.to_string(), merged.to_string(), m.DeviceSpec(replica=1).replace(job="j").to_string(),
               m.DeviceSpec(job="a") == m.DeviceSpec(job="a"), m.DeviceSpec(task="3").task, repr(merged))
        if m is tf:
            ours = out
    assert ours == out


def _nested(m, g):
    """Ops built in nested device scopes of every kind; {op name: device}."""
    with g.as_default():
        with m.device(lambda op: "/cpu:0"):
            m.constant(1, name="fn_cpu")
            with m.device("/job:w"):
                m.constant(1, name="inner_job_under_fn")
        with m.device("/job:a/task:1"):
            m.constant(1, name="outer")
            with m.device(lambda op: "/gpu:1"):
                m.constant(1, name="fn_in_job")
            with m.device(lambda op: ""):
                m.constant(1, name="fn_empty")
            with m.device(m.DeviceSpec(job="b", device_type="CPU")):
                m.constant(1, name="spec")
            with m.device(None):
                m.constant(1, name="none")
                with m.device("/cpu:0"):
                    m.constant(1, name="none_cpu")
            with m.device(""):
                m.constant(1, name="empty")
            with m.device("/job:ps/replica:2/device:GPU:*"):
                m.constant(1, name="star")
                with m.device("/task:7/cpu:3"):
                    c = m.add(m.constant(1, name="deep"), m.constant(1, name="one"), name="deep_add")
        with m.device("/cpu:0"):
            v = m.Variable(1.0, name="v")
        with m.device("/job:z"):
            with g.colocate_with(v.op):
                m.constant(1, name="coloc")
                with m.device("/job:q"):
                    m.constant(1, name="coloc_dev")
            with g.colocate_with(c.op):
                m.constant(1, name="coloc_c")
                with g.colocate_with(None, ignore_existing=True):
                    m.constant(1, name="coloc_reset")
            m.assign(v, 2.0, name="assign_v")
            m.assign_add(v, 2.0, name="assign_add_v")
            m.is_variable_initialized(v)
            m.identity(v, name="read_v")
            m.group(v.initializer, c, name="grp")
            m.group(m.constant(1, name="g1"), m.constant(2, name="g2"), name="grp_one")
        with m.device("/job:ps/task:3"):
            w = m.get_variable("w", [2], initializer=m.truncated_normal_initializer(seed=1))
        assert v.device == g.get_operation_by_name("v").device and w.device == "/job:ps/task:3"
    return {op.name: op.device for op in g.get_operations()}


def test_nested_scopes_functions_and_colocation_give_tf_devices(peer):
    ours, theirs = _nested(tf, tf.Graph()), _nested(peer, peer.Graph())
    common = sorted(set(ours) & set(theirs))
    for name in ("fn_cpu", "inner_job_under_fn", "deep_add", "coloc_c", "coloc_reset", "assign_v",
                 "IsVariableInitialized", "grp", "grp_one", "w", "w/Assign", "v/Assign"):
        assert name in common
    assert {n: ours[n] for n in common} == {n: theirs[n] for n in common}
    # The initializer of get_variable is built on no device (TF colocates it with the variable).
    assert {d for n, d in ours.items() if n.startswith("w/Initializer/")} == {""}


def test_bad_devices_are_refused_with_tf_errors(peer):
    for bad in BAD_SPECS:
        with pytest.raises(ValueError) as theirs, peer.Graph().as_default(), peer.device(bad):
            pass
        with pytest.raises(ValueError) as ours, tf.Graph().as_default(), tf.device(bad):
            pass
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Unknown attribute 'garbage!'"), tf.device("/job:a"), \
            tf.device(lambda op: "garbage!"):
        tf.constant(1)
    with tf.device(lambda op: None), \
            pytest.raises(TypeError, match="returned None for op 'Const_1'; it must return a device string"):
        tf.constant(1)
    assert not tf.get_default_graph().get_operations()  # nothing built by the failed ops
    with pytest.raises(ValueError, match="ignore_existing"):
        with tf.get_default_graph().colocate_with(None):
            pass


def _mnist_replica(m, g, optimizer, strategy=None):
    """The model of TensorFlow's mnist_replica.py (a hidden layer, softmax, global step) on a
    2-ps, 2-worker cluster, built as worker 1; {op name: device}, {variable: device}."""
    cluster = m.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222"]})
    with g.as_default():
        ps_strategy = strategy(m) if strategy else None
        with m.device(m.train.replica_device_setter(worker_device="/job:worker/task:1/cpu:0", ps_device="/job:ps/cpu:0",
                                                    cluster=cluster, ps_strategy=ps_strategy)):
            global_step = m.Variable(0, name="global_step", trainable=False)
            hid_w = m.Variable(m.truncated_normal([784, 100], stddev=1.0 / 28), name="hid_w")
            hid_b = m.Variable(m.zeros([100]), name="hid_b")
            sm_w = m.Variable(m.truncated_normal([100, 10], stddev=1.0 / math.sqrt(100)), name="sm_w")
            sm_b = m.Variable(m.zeros([10]), name="sm_b")
            x = m.placeholder(m.float32, [None, 784])
            y_ = m.placeholder(m.float32, [None, 10])
            hid = m.nn.relu(m.nn.xw_plus_b(x, hid_w, hid_b))
            y = m.nn.softmax(m.nn.xw_plus_b(hid, sm_w, sm_b))
            cross_entropy = -m.reduce_sum(y_ * m.log(m.clip_by_value(y, 1e-10, 1.0)))
            optimizer(m).minimize(cross_entropy, global_step=global_step)
            m.global_variables_initializer()
        variables = {v.op.name: v.device for v in m.global_variables()}
    return {op.name: op.device for op in g.get_operations()}, variables


OPTIMIZERS = {"adam": lambda m: m.train.AdamOptimizer(0.01), "sgd": lambda m: m.train.GradientDescentOptimizer(0.5)}
STRATEGIES = {"round_robin": None,
              "greedy": lambda m: m.contrib.training.GreedyLoadBalancingStrategy(
                  2, m.contrib.training.byte_size_load_fn) if m is tf else _tf_contrib_strategy("greedy"),
              "random": lambda m: m.contrib.training.RandomStrategy(2, seed=3) if m is tf
              else _tf_contrib_strategy("random")}


def _tf_contrib_strategy(kind):
    """TF 1.15's contrib strategies (contrib is gone from TF 2): the same rules written from its
    device_setter.py, over TensorFlow's own ops."""
    import hashlib

    if kind == "random":
        return lambda op: int(int(hashlib.md5(f"{op.name}_3".encode()).hexdigest(), 16) % 2)
    loads = np.zeros(2)

    def greedy(op):
        task = int(np.argmin(loads))
        loads[task] += op.outputs[0].shape.num_elements() * op.outputs[0].dtype.size
        return task
    return greedy


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_replica_device_setter_places_the_mnist_replica_model_as_tf(peer, optimizer, strategy):
    ours, our_vars = _mnist_replica(tf, tf.Graph(), OPTIMIZERS[optimizer], STRATEGIES[strategy])
    theirs, their_vars = _mnist_replica(peer, peer.Graph(), OPTIMIZERS[optimizer], STRATEGIES[strategy])
    assert our_vars == their_vars  # every variable, slot and beta power on TF's ps task
    assert len({d for d in our_vars.values()}) == 2 if strategy != "random" else True
    common = set(ours) & set(theirs)
    assert {n: ours[n] for n in common} == {n: theirs[n] for n in common}
    updates = [n for n in theirs if "/update_" in n and n.startswith(("Adam/", "GradientDescent/"))]
    groups = [n for n in theirs if n.startswith(("init", "Adam/update", "GradientDescent/update"))]
    assert set(updates) <= common and set(groups) <= common and len(common) > 45
    # Ops only pygrad builds (its graph differs in places) are on a device TF uses for such ops.
    assert {ours[n] for n in set(ours) - common} <= set(theirs.values()) | {""}


def test_group_by_device_and_graph_def_devices(peer):
    """tf.group of ops on several devices: a NoOp per device (TF's names and order); exported
    GraphDef nodes carry the devices, which TF's import keeps."""
    ours, _ = _mnist_replica(tf, tf.get_default_graph(), OPTIMIZERS["adam"])
    theirs, _ = _mnist_replica(peer, peer.Graph(), OPTIMIZERS["adam"])
    assert [n for n in ours if n.startswith("init")] == [n for n in theirs if n.startswith("init")] == [
        "init/NoOp", "init/NoOp_1", "init"]
    graph_def = tf.get_default_graph().as_graph_def()
    exported = {n.name: n.device for n in graph_def.node}
    assert {n: d for n, d in exported.items() if n in theirs} == {n: theirs[n] for n in exported if n in theirs}
    g = peer.Graph()
    with g.as_default():
        peer.import_graph_def(peer.GraphDef.FromString(graph_def.SerializeToString()), name="")
    assert {op.name: op.device for op in g.get_operations() if op.name in theirs} == {
        n: theirs[n] for n in exported if n in theirs}


def test_replica_device_setter_edge_cases(peer):
    for m in (tf, peer):
        assert m.train.replica_device_setter() is None
        assert m.train.replica_device_setter(cluster={"worker": ["w:1"]}) is None
        with pytest.raises(TypeError, match="ps_strategy must be callable"):
            m.train.replica_device_setter(ps_tasks=2, ps_strategy=3)
    for m, g in ((tf, tf.Graph()), (peer, peer.Graph())):
        with g.as_default():
            with m.device(m.train.replica_device_setter(ps_tasks=3, merge_devices=False)):
                with m.device("/job:other"):
                    m.Variable(1.0, name="kept")
                m.Variable(1.0, name="a")
                m.Variable(1.0, name="b")
            with m.device(m.train.replica_device_setter(ps_tasks=2, ps_device="/job:ps/cpu:0")):
                with m.device("/job:ps/task:5"):
                    m.Variable(1.0, name="own_task")
                with m.device("/job:mine"):
                    m.Variable(1.0, name="own_job")
                m.constant(1.0, name="work")
            out = {op.name: op.device for op in g.get_operations() if op.type in ("VariableV2", "Const")}
        if m is tf:
            ours = out
    assert ours == out


def test_byte_size_load_fn_and_strategies():
    v = tf.Variable(np.zeros((3, 5), np.float64))
    assert tf.contrib.training.byte_size_load_fn(v.op) == 3 * 5 * 8
    with pytest.raises(ValueError, match="single output"):
        tf.contrib.training.byte_size_load_fn(tf.group(v.initializer))
    greedy = tf.contrib.training.GreedyLoadBalancingStrategy(3, lambda op: {"a": 5, "b": 1, "c": 1, "d": 1}[op.name])
    Op = type("Op", (), {})
    ops = [Op() for _ in range(4)]
    for op, name in zip(ops, "abcd"):
        op.name = name
    assert [greedy(op) for op in ops] == [0, 1, 2, 1]
    import hashlib
    assert [tf.contrib.training.RandomStrategy(4, seed=1)(op) for op in ops] == [
        int(hashlib.md5(f"{n}_1".encode()).hexdigest(), 16) % 4 for n in "abcd"]


def _cluster_view(c):
    return (repr(c), c.as_dict(), c.jobs, c.job_tasks("ps"), c.num_tasks("ps"), c.task_indices("ps"), bool(c),
            c.task_address("ps", 3))


def test_cluster_spec_as_tf(peer):
    spec = {"ps": {1: "a:1", 3: "b:2"}, "worker": ["w0:1", "w1:1"], "e": []}
    ours, theirs = tf.train.ClusterSpec(spec), peer.train.ClusterSpec(spec)
    assert _cluster_view(ours) == _cluster_view(theirs)
    assert _cluster_view(tf.train.ClusterSpec(ours)) == _cluster_view(peer.train.ClusterSpec(theirs))
    their_def = theirs.as_cluster_def()
    assert type(their_def).FromString(ours.as_cluster_def().SerializeToString()) == their_def
    from_def = tf.train.ClusterSpec(ClusterDef.FromString(their_def.SerializeToString()))
    assert _cluster_view(from_def) == _cluster_view(peer.train.ClusterSpec(their_def))
    assert _cluster_view(tf.train.ClusterSpec(their_def)) == _cluster_view(from_def)  # TF's message itself
    assert ours == {"ps": {1: "a:1", 3: "b:2"}, "worker": {0: "w0:1", 1: "w1:1"}, "e": {}}
    assert not tf.train.ClusterSpec({}) and not peer.train.ClusterSpec({})
    bad = [lambda m: m.train.ClusterSpec(3), lambda m: m.train.ClusterSpec({"a": "x"}),
           lambda m: m.train.ClusterSpec(spec).num_tasks("zz"), lambda m: m.train.ClusterSpec(spec).task_address(
               "ps", 0), lambda m: m.train.ClusterSpec({"a": {"x": "y"}}), lambda m: m.train.ClusterSpec({1: ["a"]}),
           lambda m: m.train.ClusterSpec({"a": [1]})]
    for make in bad:
        with pytest.raises((TypeError, ValueError)) as theirs_error:
            make(peer)
        with pytest.raises(theirs_error.type) as ours_error:
            make(tf)
        assert str(ours_error.value) == str(theirs_error.value)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_def_target_and_session_targets(peer):
    port = _free_port()
    cluster = {"worker": [f"127.0.0.1:{port}"], "ps": ["127.0.0.1:1"]}
    # TF's ServerDef from TF's own rule (a TF Server would listen on every interface until the
    # process ends; tests/test_supervisor.py compares targets with a TF server in a subprocess).
    from tensorflow.python.training.server_lib import _make_server_def
    theirs = _make_server_def(cluster, "worker", 0, None, None)
    ours = tf.train.Server(cluster, job_name="worker", task_index=0)
    assert ours.target == f"grpc://127.0.0.1:{port}"
    assert type(theirs).FromString(ours.server_def.SerializeToString()) == theirs
    local = tf.train.Server.create_local_server()
    assert local.target.startswith("grpc://localhost:") and local.server_def.job_name == "localhost"
    for args in [({"a": ["x:1"], "b": ["y:2"]},), ({"a": ["x:1", "x:2"]},), (3,)]:
        with pytest.raises((TypeError, ValueError)) as their_error:
            _make_server_def(*args, None, None, None, None)
        with pytest.raises(their_error.type, match=str(their_error.value).replace("`", ".")):
            tf.train.Server(*args, start=False)
    with pytest.raises(tf.errors.InternalError, match='Task 3 was not defined in job "a"'):
        tf.train.Server({"a": ["localhost:1"]}, task_index=3)
    # A session on this process's server runs here; sessions on one server share its variables.
    v = tf.Variable(3.0)
    with tf.Session(ours.target) as first:
        first.run(v.initializer)
        first.run(v.assign_add(1.0))
        assert first.sess_str == ours.target
        with tf.Session(ours.target) as second:
            assert second.run(v) == 4.0
    with tf.Session(local.target) as other, pytest.raises(tf.errors.FailedPreconditionError):
        other.run(v)
    with tf.Session() as plain, pytest.raises(tf.errors.FailedPreconditionError):
        plain.run(v)
    with pytest.raises(tf.errors.UnimplementedError, match="127.0.0.1:1"):
        tf.Session("grpc://127.0.0.1:1")
    with pytest.raises(tf.errors.NotFoundError, match="No session factory registered") as ours_error:
        tf.Session("foo")
    with pytest.raises(peer.errors.NotFoundError, match="No session factory registered"):
        peer.Session("foo")
    assert ours_error.type.__name__ == "NotFoundError"
    with pytest.raises(tf.errors.UnknownError, match="already uses"):
        tf.train.Server(cluster, job_name="worker", task_index=0)
