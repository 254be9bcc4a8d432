"""The event file's messages on the protobuf runtime: the same schema as TensorFlow's (field
numbers, types, oneofs, enums), built on first use and not by `import pygrad`; TensorFlow's and
TensorBoard's readers read pygrad's event files (tensor, text and audio summaries too), and pygrad's
writer and reader agree with TensorFlow's FileWriter event by event."""
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import pygrad as tf
from pygrad import tf_protos

EVENT_MESSAGES = ["Event", "LogMessage", "SessionLog", "TaggedRunMetadata", "SourceMetadata", "Summary",
                  "SummaryMetadata", "SummaryDescription", "HistogramProto"]


def _schema(descriptor):
    """A message's schema, nested messages and enums included, as comparable values."""
    fields = {f.name: (f.number, f.type, f.is_repeated, f.containing_oneof and f.containing_oneof.name,
                       f.message_type and f.message_type.full_name,
                       f.enum_type and [(v.name, v.number) for v in f.enum_type.values])
              for f in descriptor.fields}
    return (descriptor.full_name, fields, sorted(_schema(n) for n in descriptor.nested_types),
            [(e.name, [(v.name, v.number) for v in e.values]) for e in descriptor.enum_types])


@pytest.mark.parametrize("name", EVENT_MESSAGES)
def test_schema_is_tensorflows(name):
    pytest.importorskip("tensorflow")
    from tensorflow.core.framework import summary_pb2
    from tensorflow.core.util import event_pb2
    theirs = getattr(event_pb2, name, None) or getattr(summary_pb2, name)
    assert _schema(getattr(tf_protos, name).DESCRIPTOR) == _schema(theirs.DESCRIPTOR)


def test_import_pygrad_builds_no_message_and_tf_names_them():
    code = ("import sys, pygrad as tf; assert 'pygrad.tf_protos' not in sys.modules; "
            "from pygrad import tf_protos as p; "
            "assert (tf.Summary, tf.Event, tf.SessionLog, tf.HistogramProto, tf.SummaryMetadata, tf.LogMessage) == "
            "(p.Summary, p.Event, p.SessionLog, p.HistogramProto, p.SummaryMetadata, p.LogMessage); "
            "assert (tf.summary.Summary, tf.summary.Event, tf.summary.TaggedRunMetadata) == "
            "(p.Summary, p.Event, p.TaggedRunMetadata); print('ok')")
    # From outside the source tree, so the installed pygrad is the one imported.
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=tempfile.gettempdir()).stdout == "ok\n"


def test_the_message_api_of_tf1_code():
    s = tf.Summary(value=[tf.Summary.Value(tag="x", simple_value=0.0)])
    v = s.value.add(tag="h")
    v.histo.bucket.extend([1.0, 2.0])
    parsed = tf.Summary.FromString(s.SerializeToString())
    assert [x.WhichOneof("value") for x in parsed.value] == ["simple_value", "histo"]
    assert parsed.value[0].HasField("simple_value") and not parsed.value[0].HasField("metadata")
    assert list(parsed.value[1].histo.bucket) == [1.0, 2.0]
    event = tf.Event()
    event.ParseFromString(tf.Event(step=3, session_log=tf.SessionLog(status=tf.SessionLog.CHECKPOINT)).SerializeToString())
    assert (event.step, event.WhichOneof("what"), event.session_log.status) == (3, "session_log", 3)
    assert tf.LogMessage.WARN == 30 and tf.SessionLog.SessionStatus.Name(tf.SessionLog.STOP) == "STOP"


def _write_tensor_text_audio(logdir):
    with tf.Graph().as_default():
        tf.summary.tensor_summary("t", tf.constant([[1.5, -2.0]], tf.float64), summary_description="two")
        tf.summary.text("note", tf.constant("hello"))
        tf.summary.audio("sound", tf.constant(np.linspace(-1, 1, 40, dtype=np.float32).reshape(2, 20)), 8000.0,
                         max_outputs=1)
        merged = tf.summary.merge_all()
        with tf.Session() as sess, tf.summary.FileWriter(logdir) as writer:
            for step in range(2):
                writer.add_summary(sess.run(merged), step)
    return tf.summary.event_files(logdir)[0]


def test_tensorflow_reads_tensor_text_and_audio_summaries(tmp_path):
    tft = pytest.importorskip("tensorflow.compat.v1")
    path = _write_tensor_text_audio(tmp_path)
    values = [(e.step, v) for e in tft.train.summary_iterator(path) if e.HasField("summary") for v in e.summary.value]
    assert [(step, v.tag) for step, v in values] == [(s, t) for s in (0, 1) for t in ("t", "note", "sound/audio")]
    tensor, text, audio = (v for _, v in values[:3])
    np.testing.assert_array_equal(tft.make_ndarray(tensor.tensor), [[1.5, -2.0]])
    assert tensor.metadata.summary_description == "two" and text.metadata.plugin_data.plugin_name == "text"
    assert tft.make_ndarray(text.tensor) == b"hello"
    assert (audio.audio.sample_rate, audio.audio.num_channels, audio.audio.length_frames) == (8000.0, 1, 20)
    assert not values[3][1].HasField("metadata")  # the second value of a tag has none, as TF writes


def test_tensorboard_reads_tensor_text_and_audio_summaries(tmp_path):
    ea_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    pytest.importorskip("tensorflow")  # the accumulator turns tensors into arrays with TF's make_ndarray
    _write_tensor_text_audio(tmp_path)
    acc = ea_module.EventAccumulator(str(tmp_path), size_guidance={"tensors": 0, "audio": 0})
    acc.Reload()
    assert sorted(acc.Tags()["tensors"]) == ["note", "t"] and acc.Tags()["audio"] == ["sound/audio"]
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"
    assert [e.step for e in acc.Tensors("t")] == [0, 1]
    assert acc.Tensors("note")[1].tensor_proto.string_val == [b"hello"]
    audio = acc.Audio("sound/audio")[0]
    assert audio.encoded_audio_string.startswith(b"RIFF") and audio.content_type == "audio/wav"


def _same_events(writer, lib, summary_ops):
    """Writes through writer what TF1 code writes: summaries as bytes and as messages (metadata is
    kept on the first value of a tag only), a session log and run metadata."""
    scalar, text = summary_ops
    writer.add_summary(scalar, 0)
    writer.add_summary(lib.Summary(value=[lib.Summary.Value(tag="loss", simple_value=2.0, metadata=lib.SummaryMetadata(
        display_name="Loss"))]), 1)
    writer.add_summary(text, 1)
    writer.add_summary(text, 2)
    writer.add_session_log(lib.SessionLog(status=lib.SessionLog.START), 3)
    writer.add_run_metadata(lib.RunMetadata(), "step_3", 3)
    writer.close()


def test_pygrads_writer_and_reader_agree_with_tensorflows(tmp_path):
    tft = pytest.importorskip("tensorflow.compat.v1")
    with tft.Graph().as_default():
        ops = [tft.summary.scalar("loss", tft.constant(1.5)), tft.summary.text("note", tft.constant("hi"))]
        with tft.Session() as sess:
            summaries = sess.run(ops)
        _same_events(tft.summary.FileWriter(str(tmp_path / "tf")), tft, summaries)
    # pygrad's writer given TensorFlow's own messages (taken by their bytes) and pygrad's
    _same_events(tf.summary.FileWriter(tmp_path / "pygrad_tf_messages"), tft, summaries)
    _same_events(tf.summary.FileWriter(tmp_path / "pygrad"), tf, summaries)

    def events(run, reader):
        """The events after the file_version one, without their wall times, serialized."""
        out = []
        for e in list(reader(tf.summary.event_files(tmp_path / run)[0]))[1:]:
            e.ClearField("wall_time")
            out.append(e.SerializeToString())
        return out

    theirs = events("tf", tft.train.summary_iterator)
    assert len(theirs) == 6
    assert events("tf", tf.summary.summary_iterator) == theirs  # pygrad reads TF's file
    assert events("pygrad", tft.train.summary_iterator) == theirs
    assert events("pygrad_tf_messages", tf.summary.summary_iterator) == theirs
    assert tf.summary.read_scalars(tmp_path / "tf") == {"loss": [(0, 1.5), (1, 2.0)]}
    first = next(tf.summary.summary_iterator(tf.summary.event_files(tmp_path / "tf")[0]))
    assert first.file_version == "brain.Event:2"
