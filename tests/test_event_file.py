"""Event files: TFRecord framing against an independent computation, a corrupted record caught by
the reader, FileWriter's file name, first event, buffering and flush thread, and the files read by
TensorBoard's own EventAccumulator and by TensorFlow's summary_iterator."""
import os
import re
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import pygrad as tf
from pygrad.graph_def import graph_def
from pygrad.tf_protos import GraphDef
from pygrad.summary.records import encode_record, read_records

ROOT = Path(__file__).resolve().parents[1]


def crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c_bitwise(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


@pytest.mark.parametrize("data", [b"", b"x", bytes(range(256)) * 3])
def test_record_framing(data):
    length = struct.pack("<Q", len(data))
    assert encode_record(data) == length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


def _summary_graph():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(tf.ones([4, 2]), name="w")
    loss = tf.reduce_mean(tf.matmul(x, w), name="loss")
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    tf.summary.image("x", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=1)
    return x, tf.summary.merge_all()


def _write_run(logdir, steps=3):
    with tf.Graph().as_default():
        x, merged = _summary_graph()
        with tf.Session() as sess, tf.summary.FileWriter(logdir, sess.graph) as writer:
            sess.run(tf.global_variables_initializer())
            for step in range(steps):
                writer.add_summary(sess.run(merged, {x: np.full((2, 4), step, np.float32)}), step)
            writer.add_session_log(tf.SessionLog(status=tf.SessionLog.STOP), steps)
    return tf.summary.event_files(logdir)


def test_file_name_first_event_and_reader(tmp_path):
    before = time.time()
    files = _write_run(tmp_path)
    after = time.time()
    assert len(files) == 1
    name = os.path.basename(files[0])
    assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\." + re.escape(socket.gethostname()), name)
    events = list(tf.summary.summary_iterator(files[0]))
    assert events[0].file_version == "brain.Event:2" and before <= events[0].wall_time <= after
    assert events[1].WhichOneof("what") == "graph_def"
    nodes = {n.name: n for n in GraphDef.FromString(events[1].graph_def).node}
    assert nodes["loss"].op == "Mean" and nodes["MatMul"].input == ["x", "w"]
    summaries = [e for e in events if e.HasField("summary")]
    assert [e.step for e in summaries] == [0, 1, 2]
    # Tags are the summaries' scopes, made unique as TF does: "loss" and "w" name ops already.
    assert [v.tag for v in summaries[0].summary.value] == ["loss_1", "w_1", "x_1/image"]
    assert [e.summary.value[0].simple_value for e in summaries] == [0.0, 4.0, 8.0]
    assert events[-1].session_log.status == tf.SessionLog.STOP
    assert tf.summary.read_scalars(tmp_path) == {"loss_1": [(0, 0.0), (1, 4.0), (2, 8.0)]}


def test_graph_def_names_inputs_control_inputs_and_attrs():
    with tf.Graph().as_default() as g:
        a = tf.constant([1.0, 2.0], name="a")
        b = tf.placeholder(tf.float32, [None], name="b")
        with tf.control_dependencies([a]):
            tf.add(a, b, name="c")
        parts = tf.split(tf.constant([1.0, 2.0]), 2)
        tf.identity(parts[1], name="second")
        nodes = {n.name: n for n in graph_def(g, add_shapes=True).node}
    assert nodes["c"].op == "AddV2" and nodes["c"].input == ["a", "b", "^a"]
    assert nodes["second"].input == [f"{parts[1].op.name}:1"]
    attrs = nodes["a"].attr
    assert attrs["dtype"].type == 1
    assert np.frombuffer(attrs["value"].tensor.tensor_content, "<f4").tolist() == [1.0, 2.0]
    assert [d.size for d in nodes["b"].attr["shape"].shape.dim] == [-1]
    assert [d.size for d in nodes["c"].attr["_output_shapes"].list.shape[0].dim] == [2]


def test_corrupted_record_is_detected(tmp_path):
    path = _write_run(tmp_path)[0]
    data = bytearray(Path(path).read_bytes())
    first = 12 + struct.unpack("<Q", data[:8])[0] + 4
    data[first + 20] ^= 0x01  # a byte inside the second record's data
    Path(path).write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match=r"corrupted record at \d+ in .*: the data's checksum"):
        list(read_records(path))
    data[first + 20] ^= 0x01
    data[first + 2] ^= 0x40  # the second record's length
    Path(path).write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match="the length's checksum"):
        list(read_records(path))


def _scalar_event_file(logdir, tag, values, **kwargs):
    """An event file of one writer with values of tag at steps 0, 1, ...; its path."""
    with tf.summary.FileWriter(logdir, **kwargs) as writer:
        for step, v in enumerate(values):
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=v)]), step)
    return writer._path


def test_writers_of_the_same_second_never_truncate_each_other(tmp_path, monkeypatch):
    """TF names an event file by the second and truncates the file of an earlier writer of that
    second; pygrad adds .1, .2, ... to the name instead, and both readers see every file's events."""
    from pygrad.summary import writer as writer_module
    monkeypatch.setattr(writer_module, "time", type("FrozenClock", (), {"time": staticmethod(lambda: 1.7e9)}))
    paths = [_scalar_event_file(tmp_path, "a", [1.0, 2.0]), _scalar_event_file(tmp_path, "b", [3.0])]
    reopened = tf.summary.FileWriter(tmp_path, filename_suffix=".v2")
    reopened.close()
    reopened.reopen()
    reopened.add_summary(tf.Summary(value=[tf.Summary.Value(tag="c", simple_value=4.0)]), 5)
    reopened.close()
    host = socket.gethostname()
    assert [os.path.basename(p) for p in paths] == [f"events.out.tfevents.1700000000.{host}",
                                                     f"events.out.tfevents.1700000000.{host}.1"]
    names = [os.path.basename(p) for p in tf.summary.event_files(tmp_path)]
    assert set(names) == {os.path.basename(p) for p in paths} | {f"events.out.tfevents.1700000000.{host}.v2",
                                                                  f"events.out.tfevents.1700000000.{host}.1.v2"}
    assert names.index(os.path.basename(paths[0])) < names.index(os.path.basename(paths[1]))
    assert tf.summary.read_scalars(tmp_path) == {"a": [(0, 1.0), (1, 2.0)], "b": [(0, 3.0)], "c": [(5, 4.0)]}
    ea_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = ea_module.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]} == \
        {"a": [(0, 1.0), (1, 2.0)], "b": [(0, 3.0)], "c": [(5, 4.0)]}


def test_a_damaged_file_keeps_its_good_prefix(tmp_path, caplog):
    """As TensorBoard: the records before a damaged one are read, the rest of that file is skipped
    (with a warning naming the file and offset), and the run's later files are read."""
    damaged = _scalar_event_file(tmp_path, "a", [1.0, 2.0, 3.0, 4.0])
    data = bytearray(Path(damaged).read_bytes())
    pos = 0
    for _ in range(3):  # the file_version event and two summaries
        pos += 12 + struct.unpack("<Q", data[pos:pos + 8])[0] + 4
    data[pos + 14] ^= 0x01  # the data of the third summary
    Path(damaged).write_bytes(bytes(data))
    time.sleep(1.0)  # the next file, a second later
    _scalar_event_file(tmp_path, "b", [5.0])
    with caplog.at_level("WARNING", logger="pygrad"):
        assert tf.summary.read_scalars(tmp_path) == {"a": [(0, 1.0), (1, 2.0)], "b": [(0, 5.0)]}
    assert f"corrupted record at {pos} in {damaged}" in caplog.text and "skipped" in caplog.text
    events = tf.summary.summary_iterator(damaged)
    assert [next(events).step for _ in range(3)] == [0, 0, 1]
    with pytest.raises(tf.errors.DataLossError):
        next(events)
    ea_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = ea_module.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("a")] == [(0, 1.0), (1, 2.0)]


def test_buffering_flush_thread_and_close(tmp_path):
    writer = tf.summary.FileWriter(tmp_path, max_queue=100, flush_secs=0.2, filename_suffix=".v2")
    assert writer.get_logdir() == str(tmp_path)
    path = tf.summary.event_files(tmp_path)[0]
    assert path.endswith(".v2") and len(list(read_records(path))) == 1  # file_version, written at once
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.0)]), 7)
    assert len(list(read_records(path))) == 1  # buffered
    deadline = time.time() + 10
    while len(list(read_records(path))) == 1 and time.time() < deadline:
        time.sleep(0.05)
    assert len(list(read_records(path))) == 2  # the flush thread wrote it
    writer.add_event(tf.Event(step=9, wall_time=1.0))
    writer.close()
    events = list(tf.summary.summary_iterator(path))
    assert events[-1].step == 9 and events[1].summary.value[0].simple_value == 1.0
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_event(tf.Event())


def test_a_writer_never_closed_is_flushed_when_the_process_exits(tmp_path):
    """As TensorFlow's: a program that ends without close() (the deep MNIST tutorial's graph writer)
    still leaves every event it added in the file."""
    program = ("import sys, pygrad as tf\n"
               "w = tf.summary.FileWriter(sys.argv[1])\n"
               "w.add_graph(tf.get_default_graph())\n"
               "w.add_summary(tf.Summary(value=[tf.Summary.Value(tag='a', simple_value=2.5)]), 3)\n")
    subprocess.run([sys.executable, "-c", program, str(tmp_path)], check=True, cwd=tmp_path, timeout=60)
    (path,) = tf.summary.event_files(tmp_path)
    events = list(tf.summary.summary_iterator(path))
    assert [e.WhichOneof("what") for e in events] == ["file_version", "graph_def", "summary"]
    assert events[2].step == 3 and events[2].summary.value[0].simple_value == 2.5


def test_metadata_kept_for_the_first_value_of_a_tag_only(tmp_path):
    with tf.Graph().as_default():
        t = tf.summary.text("note", tf.constant("hi"))
        with tf.Session() as sess, tf.summary.FileWriter(tmp_path) as writer:
            writer.add_summary(sess.run(t), 0)
            writer.add_summary(sess.run(t), 1)
    events = [e for e in tf.summary.summary_iterator(tf.summary.event_files(tmp_path)[0]) if e.HasField("summary")]
    assert events[0].summary.value[0].metadata.plugin_data.plugin_name == "text"
    assert not events[1].summary.value[0].HasField("metadata")


def test_tensorboard_reads_scalars_histograms_images_and_graph(tmp_path):
    ea_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    _write_run(tmp_path)
    acc = ea_module.EventAccumulator(str(tmp_path), size_guidance={"images": 0, "histograms": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["loss_1"] and tags["histograms"] == ["w_1"] and tags["images"] == ["x_1/image"]
    assert [(s.step, s.value) for s in acc.Scalars("loss_1")] == [(0, 0.0), (1, 4.0), (2, 8.0)]
    histo = acc.Histograms("w_1")[0].histogram_value
    assert (histo.min, histo.max, histo.num) == (1.0, 1.0, 8.0)
    image = acc.Images("x_1/image")[2]
    assert (image.width, image.height) == (2, 2) and image.encoded_image_string.startswith(b"\x89PNG")
    graph = acc.Graph()
    assert {"x", "w", "loss", "MatMul"} <= {n.name for n in graph.node}


def test_tensorflow_reads_the_event_file(tmp_path):
    tft = pytest.importorskip("tensorflow.compat.v1")
    path = _write_run(tmp_path)[0]
    events = list(tft.train.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2"
    assert [v.simple_value for e in events if e.HasField("summary") for v in e.summary.value if v.tag == "loss_1"] == \
        [0.0, 4.0, 8.0]
    graph = tft.GraphDef.FromString(events[1].graph_def)
    assert {n.name: list(n.input) for n in graph.node}["loss"][0] == "MatMul"


def test_gradient_transform_seed_writes_x_and_dydx(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "seeds" / "gradient_transform.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == 14 and lines[0] == "step 0: x = 0.000000, dy/dx = -6.000000"
    assert lines[13] == "step 13: x = %.6f, dy/dx = %.6f" % (3 * (1 - 0.5 ** 13), -6 * 0.5 ** 13)
    series = tf.summary.read_scalars(tmp_path)
    assert [s for s, _ in series["x"]] == list(range(14))
    np.testing.assert_allclose([v for _, v in series["x"]], [3 * (1 - 0.5 ** k) for k in range(14)], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in series["dydx"]], [-6 * 0.5 ** k for k in range(14)], rtol=1e-6)


def test_plot_events_draws_the_scalars(tmp_path):
    pytest.importorskip("matplotlib")
    _write_run(tmp_path / "run")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "plot_events.py"), str(tmp_path / "run"),
                          "--out", str(tmp_path / "plot.png")], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert "loss_1" in out
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")


WRITER_KILL_SCRIPT = r'''
import json, os, random, signal, sys, time
import pygrad as tf

logdir, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
tf.summary.FileWriter(os.path.join(logdir, "warm")).close()  # the messages built before the forks
kills = 0
for i in range(n):
    pid = os.fork()
    if pid == 0:  # a writer that flushes every event
        writer = tf.summary.FileWriter(logdir, max_queue=1)
        step = 0
        while True:
            step += 1
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="x", simple_value=float(step))]), step)
            writer.flush()
    time.sleep(rng.uniform(0.0, 0.1))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    kills += 1

def steps_of(path):
    steps, torn = [], 0
    try:
        for event in tf.train.summary_iterator(path):
            steps.extend(int(event.step) for v in event.summary.value)
    except tf.errors.DataLossError:
        torn = 1
    assert steps == list(range(1, len(steps) + 1)), (path, steps[:10])  # every record before the cut, in order
    return len(steps), torn


files = tf.summary.event_files(logdir)
counts = [steps_of(p) for p in files]  # after all the kills: no file was overwritten or cut short later
series = tf.summary.read_scalars(logdir)["x"]
print(json.dumps({"kills": kills, "torn_tails": sum(t for _, t in counts), "files": len(files),
                  "values": len(series), "events": sum(n for n, _ in counts)}))
'''


def test_killed_writers_leave_every_flushed_event_readable(tmp_path):
    """A child writes and flushes events until SIGKILL, 100 times into one logdir: each file reads
    in order up to where it was cut (a torn last record is a DataLossError after the good ones),
    no earlier file is truncated, and read_scalars reads every file's good prefix."""
    out = subprocess.run([sys.executable, "-c", WRITER_KILL_SCRIPT, str(tmp_path / "logs"), "100", "3"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    result = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    # One file per writer that got to make one (a kill can come first): none overwritten.
    assert result["kills"] == 100 and 50 < result["files"] <= 100
    assert result["values"] == result["events"] > 100
    import faults
    faults.record("SIGKILL during FileWriter writes", kills=result["kills"], torn_tails=result["torn_tails"],
                  files_readable=result["files"], lost_flushed_events=0)
