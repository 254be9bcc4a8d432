"""decode_raw, string_to_number and decode_csv against TensorFlow on the same inputs; the file ops
(read_file, write_file, matching_files), the file datasets and tf.io.gfile against the file system."""
import os

import numpy as np
import pytest

import pygrad as tf
from test_data import elements

CSV = [b'1,2.5,"a,b",x', b",,,", b'3, 4 ,"c""d",']
CASES = [
    ("decode_raw", lambda lib: lib.decode_raw(lib.constant([b"\x01\x02\x03\x04", b"\x05\x06\x07\x08"]), lib.int16)),
    ("decode_raw big-endian", lambda lib: lib.io.decode_raw(lib.constant([b"\x01\x02\x03\x04"]), lib.int16,
                                                             little_endian=False)),
    ("decode_raw float", lambda lib: lib.decode_raw(lib.constant(b"\x00\x00\x80\x3f\x00\x00\x00\xc0"), lib.float32)),
    ("string_to_number", lambda lib: lib.string_to_number(
        lib.constant([b"1.5", b" 2", b"1e3", b"inf", b"-0x10", b"1e-50"]))),
    ("string_to_number int", lambda lib: lib.string_to_number(lib.constant([b"12", b"-3", b"+4", b" 5 "]), lib.int32)),
    ("string_to_number float64", lambda lib: lib.string_to_number(lib.constant([b"0.1", b"1e400"]), lib.float64)),
    ("decode_csv", lambda lib: lib.decode_csv(lib.constant(CSV), [[0], [0.0], [""], ["z"]])),
    ("decode_csv na_value", lambda lib: lib.decode_csv(lib.constant([b"1|NA", b"NA|3"]), [[7], [8]], field_delim="|",
                                                       na_value="NA")),
    ("decode_csv no quoting", lambda lib: lib.decode_csv(lib.constant([b'"1",2']), [[""], [8]],
                                                         use_quote_delim=False)),
    ("decode_csv types", lambda lib: lib.decode_csv(lib.constant([b"12345678901,2.5,1,0.1"]), [
        lib.constant([0], lib.int64), [0.0], lib.constant([0], lib.float64), lib.constant([0], lib.float64)])),
    ("decode_csv select_cols", lambda lib: lib.decode_csv(lib.constant([b"1,2,3"]), [[0], [0]], select_cols=[0, 2])),
]


def _run(lib, build):
    with lib.Session() as sess:
        return sess.run(build(lib))


@pytest.mark.parametrize("build", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_decoding_equals_tf(tf_peer, build):
    ours, theirs = _run(tf, build), _run(tf_peer, build)
    for a, b in zip(ours if isinstance(ours, list) else [ours], theirs if isinstance(theirs, list) else [theirs]):
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)


ERRORS = [
    (lambda lib: lib.decode_raw(lib.constant([b"\x01\x02\x03\x04", b"\x05\x06"]), lib.int16),
     "DecodeRaw requires input strings to all be the same size, but element 1 has size 4 != 2"),
    (lambda lib: lib.decode_raw(lib.constant([b"\x01\x02\x03"]), lib.int16),
     "Input to DecodeRaw has length 3 that is not a multiple of 2, the size of int16"),
    (lambda lib: lib.string_to_number(lib.constant([b"1.5x"])), "could not correctly convert string: 1.5x"),
    (lambda lib: lib.string_to_number(lib.constant([b"3000000000"]), lib.int32),
     "could not correctly convert string: 3000000000"),
    (lambda lib: lib.string_to_number(lib.constant([b"0x1A"]), lib.int32), "could not correctly convert string: 0x1A"),
    (lambda lib: lib.decode_csv(lib.constant(CSV), [lib.constant([], lib.int32), [0.0], [""], ["z"]]),
     "Field 0 is required but missing in record 1!"),
    (lambda lib: lib.decode_csv(lib.constant([b"1,2"]), [[0], [0], [0]]), "Expect 3 fields but have 2 in record 0"),
    (lambda lib: lib.decode_csv(lib.constant([b"1,x"]), [[0], [0.0]]), "Field 1 in record 0 is not a valid float: x"),
    (lambda lib: lib.decode_csv(lib.constant([b'"1,2']), [[""], [8]]),
     "Quoted field has to end with quote followed by delim or end"),
    (lambda lib: lib.decode_csv(lib.constant([b'a"b",2']), [[""], [8]]), "Unquoted fields cannot have quotes"),
    (lambda lib: lib.decode_csv(lib.constant([b'"ab"c,2']), [[""], [8]]),
     "Quote inside a string has to be escaped by another quote"),
]


@pytest.mark.parametrize("build, message", ERRORS)
def test_decoding_errors_are_tfs(tf_peer, build, message):
    for lib in (tf_peer, tf):
        with pytest.raises(lib.errors.InvalidArgumentError, match=message.replace("(", "\\(")):
            _run(lib, build)


def _all(ds):
    return elements(tf, lambda module: ds)


def test_file_ops_and_datasets(tmp_path):
    d = str(tmp_path)
    text = os.path.join(d, "a.txt")
    with tf.Session() as sess:
        sess.run(tf.write_file(os.path.join(d, "sub", "a.txt"), "made"))
        sess.run(tf.io.write_file(text, b"a\r\nb\n\nc"))
        assert sess.run(tf.read_file(os.path.join(d, "sub", "a.txt"))) == b"made"
        assert list(sess.run(tf.matching_files([os.path.join(d, "*.txt"), os.path.join(d, "s*", "*")]))) == [
            text.encode(), os.path.join(d, "sub", "a.txt").encode()]
        with pytest.raises(tf.errors.NotFoundError, match="nope.*\n  op defined at .*test_decode_io.py"):
            sess.run(tf.io.read_file(os.path.join(d, "nope")))
    assert _all(tf.data.TextLineDataset(text)) == [b"a", b"b", b"", b"c"]
    assert _all(tf.data.FixedLengthRecordDataset(text, 2, header_bytes=1, footer_bytes=2)) == [b"\r\n", b"b\n"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="body length 7 bytes, which is not an exact multiple"):
        _all(tf.data.FixedLengthRecordDataset(text, 2))
    names = tf.data.Dataset.list_files(os.path.join(d, "**", "*.txt"), shuffle=False)
    assert _all(names) == [os.path.join(d, "sub", "a.txt").encode()]
    assert sorted(_all(tf.data.Dataset.list_files(os.path.join(d, "*"), seed=1))) == sorted(
        os.path.join(d, n).encode() for n in os.listdir(d))
    assert _all(tf.data.TextLineDataset(tf.data.Dataset.list_files(text))) == [b"a", b"b", b"", b"c"]


def test_io_gfile_is_tf_gfile_on_the_file_system(tmp_path):
    g, d = tf.io.gfile, str(tmp_path)
    g.makedirs(os.path.join(d, "x", "y"))
    assert g.isdir(os.path.join(d, "x", "y")) and os.path.isdir(os.path.join(d, "x", "y"))
    with g.GFile(os.path.join(d, "x", "f"), "w") as f:
        f.write("abc")
    assert g.exists(os.path.join(d, "x", "f")) and g.listdir(os.path.join(d, "x")) == sorted(os.listdir(
        os.path.join(d, "x")))
    assert g.stat(os.path.join(d, "x", "f")).length == 3 and g.stat(os.path.join(d, "x")).is_directory
    g.copy(os.path.join(d, "x", "f"), os.path.join(d, "g"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        g.copy(os.path.join(d, "x", "f"), os.path.join(d, "g"))
    g.rename(os.path.join(d, "g"), os.path.join(d, "h"))
    assert g.glob(os.path.join(d, "*")) == sorted([os.path.join(d, "h"), os.path.join(d, "x")])
    assert [(r, sorted(ds), fs) for r, ds, fs in g.walk(d)] == [(r, sorted(ds), fs) for r, ds, fs in os.walk(d)]
    g.remove(os.path.join(d, "h"))
    g.rmtree(os.path.join(d, "x"))
    assert os.listdir(d) == []
    with pytest.raises(tf.errors.NotFoundError):
        g.stat(os.path.join(d, "x"))
