"""TFRecord files, tf.train.Example and Example parsing against TensorFlow: records written by one
read by the other, byte for byte, with each compression; damaged files give DataLossError naming
the file and the offset; a TFRecordDataset -> parse_single_example -> batch pipeline gives TF's
batches; parse errors are TF's."""
import pathlib

import numpy as np
import pytest

import pygrad as tf
from test_data import elements

RECORDS = [b"", b"hello", bytes(range(256)) * 40, b"x" * 70000]


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_records_both_ways_byte_for_byte(tf_peer, tmp_path, compression):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    with tf.python_io.TFRecordWriter(ours, tf.python_io.TFRecordOptions(compression)) as w:
        for r in RECORDS:
            w.write(r)
    with tf_peer.io.TFRecordWriter(theirs, options=compression) as w:
        for r in RECORDS:
            w.write(r)
    assert pathlib.Path(ours).read_bytes() == pathlib.Path(theirs).read_bytes()
    assert list(tf_peer.io.tf_record_iterator(ours, options=tf_peer.io.TFRecordOptions(compression))) == RECORDS
    assert list(tf.io.tf_record_iterator(theirs, options=compression)) == RECORDS
    assert tf.io.TFRecordOptions.get_compression_type_string(compression) == compression


def _damaged(tmp_path, edit):
    path = str(tmp_path / "damaged")
    with tf.io.TFRecordWriter(path) as w:
        w.write(b"hello")
        w.write(b"world!!")
    data = bytearray(pathlib.Path(path).read_bytes())
    pathlib.Path(path).write_bytes(bytes(edit(data)))
    return path


def _flip(i):
    def edit(data):
        data[i] ^= 1
        return data
    return edit


@pytest.mark.parametrize("edit, message", [
    (_flip(14), "corrupted record at 12"),  # the first record's data
    (_flip(23), "corrupted record at 21"),  # the second record's length
    (lambda d: d[:-3], "truncated record at 21"),  # cut inside the second record's data
])
def test_damaged_files_raise_data_loss_with_file_and_offset(tf_peer, tmp_path, edit, message):
    path = _damaged(tmp_path, edit)
    with pytest.raises(tf.errors.DataLossError, match=message) as e:
        list(tf.python_io.tf_record_iterator(path))
    assert path in str(e.value)
    with pytest.raises(Exception, match=message):  # TF's offset and words
        list(tf_peer.io.tf_record_iterator(path))
    it = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        if message != "corrupted record at 12":
            assert sess.run(it) == b"hello"
        with pytest.raises(tf.errors.DataLossError, match=message):
            sess.run(it)


def test_a_file_cut_inside_a_header_ends_the_records_as_in_tf(tf_peer, tmp_path):
    path = _damaged(tmp_path, lambda d: d[:26])
    assert list(tf.io.tf_record_iterator(path)) == list(tf_peer.io.tf_record_iterator(path)) == [b"hello"]


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="nope"):
        list(tf.io.tf_record_iterator(str(tmp_path / "nope")))


def _example(i):
    return {"f": [1.5 * i, -2.0, 3.25], "i": [7 + i], "s": [b"ab%d" % i, b""], "seq": [0.5, i]}


def _build(lib, i):
    t = lib.train
    feats = {"f": t.Feature(float_list=t.FloatList(value=_example(i)["f"])),
             "i": t.Feature(int64_list=t.Int64List(value=_example(i)["i"])),
             "s": t.Feature(bytes_list=t.BytesList(value=_example(i)["s"]))}
    feats["seq"] = t.Feature(float_list=t.FloatList(value=_example(i)["seq"]))
    ctx = t.Features(feature={"k": t.Feature(int64_list=t.Int64List(value=[i]))})
    lists = t.FeatureLists(feature_list={"w": t.FeatureList(feature=[feats["f"], feats["i"]])})
    return t.Example(features=t.Features(feature=feats)), t.SequenceExample(context=ctx, feature_lists=lists)


def test_examples_are_wire_compatible_both_ways(tf_peer):
    for i in range(3):
        ours, theirs = _build(tf, i), _build(tf_peer, i)
        for a, b in zip(ours, theirs):
            assert type(b).FromString(a.SerializeToString()) == b
            assert type(a).FromString(b.SerializeToString()) == a


FEATURES = {"f": ("FixedLenFeature", [3], "float32", None), "i": ("FixedLenFeature", [], "int64", None),
            "s": ("FixedLenFeature", [2], "string", None),
            "d": ("FixedLenFeature", [2, 1], "int64", [[4], [5]]),
            "seq": ("FixedLenSequenceFeature", [], "float32", None)}


def _features(lib):
    out = {}
    for k, (kind, shape, dtype, default) in FEATURES.items():
        if kind == "FixedLenFeature":
            out[k] = lib.FixedLenFeature(shape, getattr(lib, dtype), default_value=default)
        else:
            out[k] = lib.FixedLenSequenceFeature(shape, getattr(lib, dtype), allow_missing=True)
    return out


def _batches(lib, path):
    return elements(lib, lambda m: m.data.TFRecordDataset(path).map(
        lambda s: m.parse_single_example(s, _features(m))).batch(3))


def test_tfrecord_pipeline_gives_tfs_batches(tf_peer, tmp_path):
    path = str(tmp_path / "examples.tfrecord")
    with tf.io.TFRecordWriter(path, "GZIP") as w:
        for i in range(7):
            w.write(_build(tf, i)[0].SerializeToString())
    path_gz = path
    plain = str(tmp_path / "plain.tfrecord")
    with tf.io.TFRecordWriter(plain) as w:
        for r in tf.io.tf_record_iterator(path_gz, "GZIP"):
            w.write(r)
    ours, theirs = _batches(tf, plain), _batches(tf_peer, plain)
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert sorted(a) == sorted(b)
        for k in a:
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
            np.testing.assert_array_equal(a[k], b[k])


def _parse(lib, features, data, single):
    with lib.Session() as sess:
        if single:
            return sess.run(lib.parse_single_example(data, features))
        return sess.run(lib.parse_example([data, data], features))


@pytest.mark.parametrize("features, message", [
    ({"g": ("FixedLenFeature", [3], "float32")}, "Feature: g \\(data type: float\\) is required but could not be found"),
    ({"f": ("FixedLenFeature", [2], "float32")}, "Number of float values != expected.  Values size: 3 but output "
                                                 "shape: \\[2\\]"),
    ({"f": ("FixedLenFeature", [3], "int64")}, "Data types don't match. Data type: float but expected type: int64"),
    ({"f": ("FixedLenSequenceFeature", [2], "float32")}, "Number of float values is not a multiple of stride length. "
                                                        "Saw 3 values but output shape is: \\[\\?,2\\]"),
])
def test_parse_errors_are_tfs(tf_peer, features, message):
    data = _build(tf, 1)[0].SerializeToString()

    def feats(lib):
        return {k: getattr(lib, kind)(shape, getattr(lib, dtype), **({"allow_missing": True} if "Seq" in kind else {}))
                for k, (kind, shape, dtype) in features.items()}
    with pytest.raises(tf_peer.errors.InvalidArgumentError, match=message):
        _parse(tf_peer, feats(tf_peer), data, single=False)
    for single in (False, True):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message.replace("Name: <unknown>, ", "")):
            _parse(tf, feats(tf), data, single)


def test_parse_refuses_what_it_cannot_parse():
    data = tf.placeholder(tf.string, [])
    with pytest.raises(ValueError, match="requires allow_missing to be True"):
        tf.parse_single_example(data, {"q": tf.FixedLenSequenceFeature([], tf.float32)})
    with pytest.raises(NotImplementedError, match="RaggedFeature.*RaggedTensor"):
        tf.io.parse_example(tf.placeholder(tf.string, [None]), {"v": tf.io.RaggedFeature(tf.float32)})
    with pytest.raises(TypeError, match="float32, int64 or string"):
        tf.parse_single_example(data, {"x": tf.FixedLenFeature([], tf.float64)})
    parsed = tf.parse_single_example(data, {"x": tf.FixedLenFeature([], tf.float32)})
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example input"):
        sess.run(parsed, {data: b"\xff\xff"})
