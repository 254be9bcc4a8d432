"""Profiling a step as TF1 programs do: RunOptions(trace_level=FULL_TRACE) + RunMetadata filled with
TF's StepStats (checked against the plan's own steps and read with TensorFlow's message classes and
its timeline.py), pygrad.client.timeline's Chrome trace (against TF's Timeline on the same
StepStats), FileWriter.add_run_metadata (read back with TF's reader), and tf.profiler.profile's
parameter and FLOP counts (against tensorflow.compat.v1's profiler on the same graph built side by side)."""
import glob
import json
import re

import numpy as np
import pytest

import pygrad as tf
from pygrad import tf_protos
from pygrad.client import timeline
from pygrad.plan_cache import PlanCache

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def convnet(lib, batch=8):
    """The convnet of examples/convnet_layers.py written with tf.nn ops and get_variable, which both
    libraries build as the same ops: (x, labels, loss, logits)."""
    x = lib.placeholder(lib.float32, [batch, 784], name="x")
    labels = lib.placeholder(lib.int64, [batch], name="labels")
    init = lib.truncated_normal_initializer(stddev=0.1, seed=1)
    h = lib.reshape(x, [-1, 28, 28, 1])
    w1 = lib.get_variable("conv1/kernel", [3, 3, 1, 16], initializer=init)
    b1 = lib.get_variable("conv1/bias", [16], initializer=lib.zeros_initializer())
    h = lib.nn.relu(lib.nn.bias_add(lib.nn.conv2d(h, w1, [1, 1, 1, 1], "SAME"), b1))
    h = lib.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    w2 = lib.get_variable("conv2/kernel", [3, 3, 16, 32], initializer=init)
    h = lib.nn.relu(lib.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME"))
    h = lib.nn.avg_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    h = lib.reshape(h, [batch, 7 * 7 * 32])
    w3 = lib.get_variable("fc/kernel", [7 * 7 * 32, 64], initializer=init)
    b3 = lib.get_variable("fc/bias", [64], initializer=lib.zeros_initializer())
    h = lib.nn.relu(lib.matmul(h, w3) + b3)
    w4 = lib.get_variable("logits/kernel", [64, 10], initializer=init)
    logits = lib.matmul(h, w4)
    loss = lib.reduce_mean(lib.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return x, labels, loss, logits


def batch(n=8, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 784).astype(np.float32), rng.randint(0, 10, n).astype(np.int64)


@pytest.fixture
def traced_step():
    """(graph, the compiled run of the step, its RunMetadata) of one traced training step."""
    x, labels, loss, _ = convnet(tf)
    train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    xs, ys = batch()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        rm = tf.RunMetadata()
        sess.run([train, loss], {x: xs, labels: ys}, options=FULL, run_metadata=rm)
        compiled = sess.plans.get(PlanCache.key((train, loss), (x, labels), (xs.shape, ys.shape)))
    return tf.get_default_graph(), compiled, rm


def test_the_trace_of_a_convnet_step_lists_every_step_as_graph_ops(traced_step):
    graph, compiled, rm = traced_step
    (dev,) = rm.step_stats.dev_stats
    assert dev.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    nodes = list(dev.node_stats)
    # every kernel step of the plan is in the trace, by its op (jumps are no steps: this plan has none)
    assert compiled.plan.num_steps == len(compiled.step_ops) and len(nodes) <= compiled.plan.num_steps
    assert {n.node_name for n in nodes} == {op.name for op in compiled.step_ops}
    starts = [n.all_start_nanos for n in nodes]
    assert starts == sorted(starts)  # in the order they ran, one after another
    for a, b in zip(nodes, nodes[1:]):
        assert a.all_start_nanos + a.all_end_rel_nanos <= b.all_start_nanos
    for n in nodes:
        op = graph.get_operation_by_name(n.node_name)
        assert n.all_end_rel_nanos >= 0 and n.op_end_rel_nanos == n.all_end_rel_nanos and n.op_start_rel_nanos == 0
        assert n.all_start_micros == n.all_start_nanos // 1000 and n.all_end_rel_micros >= 0
        assert n.thread_id == next(iter(dev.thread_names))
        names, types, inputs = re.fullmatch(r"(.*) = (.*)\((.*)\)", n.timeline_label).groups()
        ops = [graph.get_operation_by_name(name) for name in names.split(", ")]
        assert ops[0] is op and types == "+".join(o.type for o in ops)
        outside = [t for o in ops for t in o.inputs if t.op not in ops]
        assert inputs.split(", ") == list(dict.fromkeys(
            t.op.name if t.value_index == 0 else t.name for t in outside)) or (inputs == "" and not outside)
        assert [o.slot for o in n.output] == list(range(len(op.outputs)))
        for o, t in zip(n.output, op.outputs):
            d = o.tensor_description
            assert [s.size for s in d.shape.dim] == t.shape.as_list()
            assert d.allocation_description.requested_bytes == t.dtype.size * int(np.prod(t.shape.as_list()))
    # the convolution's bias add and relu are fused into its step (fusion.py): one node names all three
    assert any(n.timeline_label.startswith("Conv2D, BiasAdd, Relu = Conv2D+") for n in nodes)


def test_untraced_runs_leave_run_metadata_empty():
    x = tf.placeholder(tf.float32, [3])
    y = x * 2.0
    with tf.Session() as sess:
        for options in (None, tf.RunOptions(), tf.RunOptions(trace_level=tf.RunOptions.NO_TRACE)):
            rm = tf.RunMetadata()
            np.testing.assert_array_equal(sess.run(y, {x: np.ones(3, np.float32)}, options=options, run_metadata=rm),
                                          [2.0, 2.0, 2.0])
            assert rm.ByteSize() == 0 and not rm.HasField("step_stats")
        sess.run(y, {x: np.ones(3, np.float32)}, options=FULL)  # traced without RunMetadata: nothing to fill


def test_the_step_stats_schema_is_tensorflows(tf_peer):
    from tensorflow.core.framework import step_stats_pb2
    from tensorflow.core.protobuf import config_pb2
    from test_event_protos import _schema
    for name in ("StepStats", "DeviceStepStats", "NodeExecStats", "NodeOutput", "AllocatorMemoryUsed"):
        assert _schema(getattr(tf_protos, name).DESCRIPTOR) == _schema(getattr(step_stats_pb2, name).DESCRIPTOR)
    assert _schema(tf_protos.RunMetadata.DESCRIPTOR)[1] == _schema(config_pb2.RunMetadata.DESCRIPTOR)[1]


def test_a_loop_body_is_traced_once_per_iteration_and_host_ops_in_python():
    i = tf.constant(0)
    _, total = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * 2.0), [i, tf.constant(1.0)])
    doubled = tf.py_func(lambda v: np.float32(v * 2), [total], tf.float32, name="double_in_python")
    with tf.Session() as sess:
        rm = tf.RunMetadata()
        assert sess.run(doubled, options=FULL, run_metadata=rm) == 64.0
    nodes = rm.step_stats.dev_stats[0].node_stats
    muls = [n for n in nodes if n.timeline_label.split(" = ")[1].startswith("Mul(")]
    assert len(muls) == 5
    (host,) = [n for n in nodes if n.node_name == "double_in_python"]
    assert host.timeline_label == f"double_in_python = PyFunc({total.name})" and host.all_end_rel_nanos > 0
    assert host.output[0].tensor_description.dtype == 1  # DT_FLOAT
    assert nodes[-1] is host or nodes[-1].all_start_nanos <= host.all_start_nanos


def test_run_metadata_is_tensorflows_message_and_its_timeline_reads_it(traced_step, tf_peer):
    """TF's RunMetadata parses pygrad's bytes to the same nodes, and TF's own timeline.py makes the
    same Chrome trace of them as pygrad.client.timeline (pygrad's lanes, events and flows)."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.client import timeline as tf_timeline
    _, _, rm = traced_step
    theirs = config_pb2.RunMetadata.FromString(rm.SerializeToString())
    assert [n.node_name for n in theirs.step_stats.dev_stats[0].node_stats] == \
        [n.node_name for n in rm.step_stats.dev_stats[0].node_stats]
    for dataflow in (True, False):
        for memory in (False, True):
            ours = json.loads(timeline.Timeline(rm.step_stats).generate_chrome_trace_format(dataflow, memory))
            ref = json.loads(tf_timeline.Timeline(theirs.step_stats).generate_chrome_trace_format(dataflow, memory))

            def events(trace, phases="XstNODC"):
                return sorted(json.dumps(e, sort_keys=True) for e in trace["traceEvents"] if e["ph"] in phases)
            assert events(ours) == events(ref)
            names = lambda t: sorted((e["pid"], e["args"]["name"]) for e in t["traceEvents"]  # noqa: E731
                                     if e["name"] == "process_name")
            assert names(ours) == names(ref)


def test_the_chrome_trace_has_an_event_per_traced_op(traced_step):
    graph, _, rm = traced_step
    nodes = rm.step_stats.dev_stats[0].node_stats
    trace = json.loads(timeline.Timeline(rm.step_stats, graph).generate_chrome_trace_format())
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["args"]["name"], e["ts"], e["dur"]) for e in ops] == \
        [(n.node_name, n.all_start_micros, n.all_end_rel_micros) for n in nodes]
    for e in ops:
        assert e["name"] == e["args"]["op"] and e["dur"] >= 0
    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "t"}
    assert starts.keys() == ends.keys() and all(starts[k]["ts"] <= ends[k]["ts"] for k in starts)


def test_add_run_metadata_writes_an_event_tensorflow_reads(traced_step, tmp_path, tf_peer):
    from tensorflow.core.protobuf import config_pb2
    _, _, rm = traced_step
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(rm, "step_1", global_step=1)
    writer.close()
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    (event,) = [e for e in tf_peer.train.summary_iterator(path) if e.HasField("tagged_run_metadata")]
    assert event.step == 1 and event.tagged_run_metadata.tag == "step_1"
    parsed = config_pb2.RunMetadata.FromString(event.tagged_run_metadata.run_metadata)
    assert [n.node_name for n in parsed.step_stats.dev_stats[0].node_stats] == \
        [n.node_name for n in rm.step_stats.dev_stats[0].node_stats]


def _profiles(lib, graph, run_meta=None):
    """{(option preset, cmd): (total_parameters, total_float_ops)}, and TF's 'op' view per op type."""
    P = lib.profiler.ProfileOptionBuilder
    presets = {"params": P.trainable_variables_parameter(), "flops": P.float_operation(),
               "default": P().with_empty_output().build()}
    out = {}
    for name, options in presets.items():
        for cmd in ("scope", "op"):
            r = lib.profiler.profile(graph, run_meta=run_meta, cmd=cmd, options={**options, "output": "none"})
            out[name, cmd] = (r.total_parameters, r.total_float_ops)
    r = lib.profiler.profile(graph, cmd="op", options={**P.float_operation(), "output": "none"})
    nodes, todo = [], list(r.children)
    while todo:  # (TF's 'op' view nests each op type under the one before)
        nodes.append(todo.pop())
        todo.extend(nodes[-1].children if lib is not tf else [])
    return out, {n.name: n.float_ops for n in nodes}


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_parameter_and_flop_counts_equal_tensorflows(tf_peer, training, capsys):
    counts = []
    for lib in (tf, tf_peer):
        with lib.Graph().as_default() as g:
            _, _, loss, _ = convnet(lib, batch=50)
            if training:
                lib.train.GradientDescentOptimizer(0.1).minimize(loss)
            counts.append(_profiles(lib, g))
    (ours, our_types), (theirs, their_types) = counts
    assert ours[("params", "scope")] == (1 * 9 * 16 + 16 + 16 * 9 * 32 + 1568 * 64 + 64 + 640, 0)
    if not training:
        assert ours == theirs
        return
    # A training graph's helper ops differ (pygrad writes bias_add as an AddV2 and the gradients of
    # broadcasts through BroadcastGradientArgs); the counts of the ops both build are TF's.
    assert {k: v for k, v in ours.items() if k[0] != "flops" and k[0] != "default"} == \
        {k: v for k, v in theirs.items() if k[0] != "flops" and k[0] != "default"}
    same = ["Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad", "AvgPool",
            "AvgPoolGrad", "MatMul", "Mean"]
    assert {k: our_types[k] for k in same} == {k: their_types[k] for k in same}


def test_profile_completes_shapes_from_a_traced_run(tf_peer):
    """With a batch dimension of None, FLOPs need the run's shapes: TF's profiler takes them from the
    RunMetadata's outputs, and so does pygrad's from its own traced run."""
    counts = []
    for lib in (tf, tf_peer):
        with lib.Graph().as_default() as g:
            x = lib.placeholder(lib.float32, [None, 6], name="x")
            w = lib.get_variable("w", [6, 4], initializer=lib.ones_initializer())
            y = lib.nn.softmax(lib.matmul(x, w) * 2.0)
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                rm = lib.RunMetadata()
                sess.run(y, {x: np.ones((5, 6), np.float32)}, options=lib.RunOptions(trace_level=3), run_metadata=rm)
            options = {**lib.profiler.ProfileOptionBuilder.float_operation(), "output": "none"}
            counts.append((lib.profiler.profile(g, options=options).total_float_ops,
                           lib.profiler.profile(g, run_meta=rm, options=options).total_float_ops))
    # Mul and Softmax (their own outputs' shapes); MatMul's input is a feed, whose shape no node records
    assert counts[0] == counts[1] == (0, 5 * 4 + 5 * 5 * 4)


def test_profile_prints_its_table_and_refuses_what_it_cannot_do(capsys, tmp_path):
    tf.get_variable("w", [3, 4])
    r = tf.profiler.profile(cmd="scope")  # TF's default options: trainable parameters, to stdout
    assert r.total_parameters == 12 and [c.name for c in r.children] == ["w"]
    assert "_TFProfRoot (12 params" in capsys.readouterr().out
    path = tmp_path / "profile.txt"
    tf.profiler.profile(options=tf.profiler.ProfileOptionBuilder(
        tf.profiler.ProfileOptionBuilder.trainable_variables_parameter()).with_file_output(str(path)).build())
    assert "w (12 params" in path.read_text()
    with pytest.raises(tf.errors.InvalidArgumentError, match="unknown cmd: bogus"):
        tf.profiler.profile(cmd="bogus")


def test_the_profile_step_example(mnist_dir, tmp_path):
    """examples/profile_step.py traces a step of the layers convnet: its Chrome trace opens, its top
    ops are traced ops, and its parameter count is the layers' (3x3x1x16 + 16, 3x3x16x32, batch norm's
    2x32, 1568x128 + 128, 128x10 + 10)."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "examples" / "profile_step.py"
    trace = tmp_path / "timeline.json"
    out = subprocess.run([sys.executable, str(script), mnist_dir, "--trace", str(trace), "--logdir", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, check=True, cwd=tmp_path).stdout
    events = json.loads(trace.read_text())["traceEvents"]
    ops = {e["args"]["name"] for e in events if e["ph"] == "X"}
    top = re.findall(r"^ +[\d.]+ us +[\d.]+%  (\S+) \(", out, re.M)
    assert len(top) == 10 and set(top) <= ops and "conv2d_1/Conv2D" in ops, out
    params = 3 * 3 * 16 + 16 + 3 * 3 * 16 * 32 + 2 * 32 + 1568 * 128 + 128 + 128 * 10 + 10
    assert f"trainable parameters: {params:,}" in out, out
    assert glob.glob(str(tmp_path / "events.out.tfevents.*"))
