"""Tests for pygrad.examples.tutorials.mnist.input_data (TF 1 MNIST loader).

The canonical MNIST files are read from the directory named by the
environment variable PYGRAD_MNIST_DIR.
"""

import contextlib
import functools
import gzip
import hashlib
import http.server
import io
import os
import shutil
import socket
import struct
import threading

import numpy as np
import pytest

from pygrad.examples.tutorials.mnist import input_data

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
FILES = (TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)


# ---------------------------------------------------------------------------
# Fixtures and helpers


def _raw_parse(path):
    """Independent IDX parser: uint8 images [N, 28, 28] or labels [N]."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, rows, cols)
    assert magic == 2049
    return np.frombuffer(data, np.uint8, offset=8)


@pytest.fixture(scope="module")
def raw(mnist_dir):
    return {name: _raw_parse(os.path.join(mnist_dir, name)) for name in FILES}


@pytest.fixture(scope="module")
def mnist(mnist_dir):
    """Loaded once; tests must not call next_batch on it (it permutes)."""
    return input_data.read_data_sets(mnist_dir, one_hot=True)


def _assert_equal(actual, expected):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert np.array_equal(actual, expected)


def _scaled(images_uint8):
    return images_uint8.reshape(len(images_uint8), -1).astype(np.float32) * (1.0 / 255.0)


def _copy_files(src, dst, names=FILES):
    os.makedirs(dst, exist_ok=True)
    for name in names:
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class TruncatingHandler(QuietHandler):
    """Announces 100000 bytes, sends 100, then closes the connection."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.write(gzip.compress(b"x" * 1000)[:100])


@contextlib.contextmanager
def http_server(directory, handler_class=QuietHandler):
    """Serve ``directory`` on 127.0.0.1; yields the port."""
    handler = functools.partial(handler_class, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _closed_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _synthetic(n=100, **kwargs):
    """DataSet whose example i has label i and all pixels equal to i."""
    images = np.repeat(np.arange(n, dtype=np.uint8), 28 * 28).reshape(n, 28, 28, 1)
    return input_data.DataSet(images, np.arange(n), **kwargs)


def _check_pairs(images, labels):
    np.testing.assert_array_equal(np.rint(images * 255.0).astype(np.int64),
                                  np.repeat(labels[:, None], 784, axis=1))


# ---------------------------------------------------------------------------
# Loading


def test_shapes_dtypes_ranges(mnist):
    for ds, n in ((mnist.train, 55000), (mnist.validation, 5000), (mnist.test, 10000)):
        assert ds.num_examples == n
        assert ds.images.shape == (n, 784)
        assert ds.images.dtype == np.float32
        assert ds.images.min() == 0.0 and ds.images.max() == 1.0
        assert ds.labels.shape == (n, 10)
        assert ds.labels.dtype == np.float64
        assert set(np.unique(ds.labels)) == {0.0, 1.0}
        np.testing.assert_array_equal(ds.labels.sum(axis=1), np.ones(n))
        assert ds.epochs_completed == 0
    assert isinstance(mnist, input_data.Datasets)
    assert mnist._fields == ("train", "validation", "test")


def test_values_match_independent_parse(mnist, raw):
    train_images, train_labels = raw[TRAIN_IMAGES], raw[TRAIN_LABELS]
    _assert_equal(mnist.validation.images, _scaled(train_images[:5000]))
    _assert_equal(mnist.train.images, _scaled(train_images[5000:]))
    _assert_equal(mnist.test.images, _scaled(raw[TEST_IMAGES]))
    np.testing.assert_array_equal(mnist.validation.labels.argmax(1), train_labels[:5000])
    np.testing.assert_array_equal(mnist.train.labels.argmax(1), train_labels[5000:])
    np.testing.assert_array_equal(mnist.test.labels.argmax(1), raw[TEST_LABELS])


def test_md5_table_matches_canonical_content(mnist_dir):
    for name in FILES:
        with gzip.open(os.path.join(mnist_dir, name), "rb") as f:
            assert hashlib.md5(f.read()).hexdigest() == input_data.MD5[name], name


def test_class_ids_uint8_unreshaped(mnist_dir, raw):
    ds = input_data.read_data_sets(mnist_dir, one_hot=False, dtype="uint8",
                                   reshape=False, validation_size=1000)
    assert ds.train.images.shape == (59000, 28, 28, 1)
    assert ds.train.images.dtype == np.uint8
    assert ds.train.labels.shape == (59000,)
    assert ds.train.labels.dtype == np.uint8
    np.testing.assert_array_equal(ds.validation.images[..., 0], raw[TRAIN_IMAGES][:1000])
    _assert_equal(ds.train.images[..., 0], raw[TRAIN_IMAGES][1000:])
    np.testing.assert_array_equal(ds.validation.labels, raw[TRAIN_LABELS][:1000])
    np.testing.assert_array_equal(ds.test.labels, raw[TEST_LABELS])
    assert ds.test.images.shape == (10000, 28, 28, 1)


def test_one_hot_off_float_and_no_validation(mnist_dir, raw):
    ds = input_data.read_data_sets(mnist_dir, dtype="float32", validation_size=0)
    assert ds.validation.num_examples == 0
    assert ds.validation.images.shape == (0, 784)
    assert ds.train.num_examples == 60000
    assert ds.train.labels.dtype == np.uint8
    np.testing.assert_array_equal(ds.train.labels, raw[TRAIN_LABELS])
    _assert_equal(ds.train.images, _scaled(raw[TRAIN_IMAGES]))


@pytest.mark.parametrize("size", [-1, 60001])
def test_validation_size_out_of_range(mnist_dir, size):
    msg = "Validation size should be between 0 and 60000. Received: %d." % size
    with pytest.raises(ValueError, match=msg):
        input_data.read_data_sets(mnist_dir, dtype=np.uint8, validation_size=size)


def test_bad_magic_names_file(tmp_path, mnist_dir):
    _copy_files(mnist_dir, tmp_path, FILES[1:])
    with gzip.open(tmp_path / TRAIN_IMAGES, "wb") as f:
        f.write(struct.pack(">IIII", 2049, 0, 28, 28))
    with pytest.raises(ValueError, match="Invalid magic number 2049 .*" + TRAIN_IMAGES):
        input_data.read_data_sets(str(tmp_path))

    f = io.BytesIO(gzip.compress(struct.pack(">II", 2051, 0)))
    f.name = "some-labels.gz"
    with pytest.raises(ValueError, match="Invalid magic number 2051 in MNIST label file: some-labels.gz"):
        input_data.extract_labels(f)


def test_invalid_dtype():
    images = np.zeros((2, 28, 28, 1), np.uint8)
    with pytest.raises(TypeError, match="Invalid image dtype"):
        input_data.DataSet(images, np.zeros(2), dtype=np.int32)
    ds = input_data.DataSet(images, np.zeros(2), dtype="uint8")
    assert ds.images.dtype == np.uint8 and ds.images.shape == (2, 784)


def test_fake_data(tmp_path):
    target = tmp_path / "never-created"
    ds = input_data.read_data_sets(str(target), fake_data=True, one_hot=True)
    assert ds.train.num_examples == 10000
    images, labels = ds.train.next_batch(3, fake_data=True)
    assert len(images) == 3 and len(images[0]) == 784
    assert labels == [[1] + [0] * 9] * 3
    assert not target.exists()


# ---------------------------------------------------------------------------
# next_batch


def test_next_batch_sizes_and_pairing():
    ds = _synthetic(100)
    images, labels = ds.next_batch(10)
    assert images.shape == (10, 784) and images.dtype == np.float32
    assert labels.shape == (10,)
    _check_pairs(images, labels)


def test_epoch_covers_every_example_once():
    ds = _synthetic(100)
    seen = []
    for _ in range(10):
        images, labels = ds.next_batch(10)
        _check_pairs(images, labels)
        seen.append(labels)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(100))
    # TF's algorithm notices the end of the epoch on the next call.
    assert ds.epochs_completed == 0
    ds.next_batch(10)
    assert ds.epochs_completed == 1


def test_reshuffles_between_epochs():
    np.random.seed(0)
    ds = _synthetic(100)
    first = np.concatenate([ds.next_batch(20)[1] for _ in range(5)])
    second = np.concatenate([ds.next_batch(20)[1] for _ in range(5)])
    assert ds.epochs_completed == 1
    np.testing.assert_array_equal(np.sort(second), np.arange(100))
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, np.arange(100))


def test_shuffle_false_in_order_with_wrap():
    ds = _synthetic(100)
    for start in (0, 30, 60):
        _, labels = ds.next_batch(30, shuffle=False)
        np.testing.assert_array_equal(labels, np.arange(start, start + 30))
    images, labels = ds.next_batch(30, shuffle=False)
    np.testing.assert_array_equal(labels, np.r_[90:100, 0:20])
    _check_pairs(images, labels)
    assert ds.epochs_completed == 1
    _, labels = ds.next_batch(30, shuffle=False)
    np.testing.assert_array_equal(labels, np.arange(20, 50))


def test_wrap_around_batch_exact_tf_order():
    """Replays TF's permutations from the global numpy RNG."""
    np.random.seed(1)
    perm0 = np.arange(100)
    np.random.shuffle(perm0)
    perm = np.arange(100)
    np.random.shuffle(perm)
    second_epoch = perm0[perm]

    np.random.seed(1)
    ds = _synthetic(100)
    batches = [ds.next_batch(30)[1] for _ in range(3)]
    np.testing.assert_array_equal(np.concatenate(batches), perm0[:90])
    images, labels = ds.next_batch(30)
    assert images.shape == (30, 784) and labels.shape == (30,)
    _check_pairs(images, labels)
    np.testing.assert_array_equal(labels[:10], perm0[90:])  # tail of old epoch
    np.testing.assert_array_equal(labels[10:], second_epoch[:20])
    assert ds.epochs_completed == 1
    np.testing.assert_array_equal(ds.next_batch(30)[1], second_epoch[20:50])


def test_seeding():
    # A seed reseeds the global RNG when the DataSet is built, as in TF.
    first = _synthetic(50, seed=7).next_batch(50)[1]
    np.testing.assert_array_equal(_synthetic(50, seed=7).next_batch(50)[1], first)

    # Without a seed the global RNG is left alone ...
    np.random.seed(3)
    expected = np.random.rand()
    np.random.seed(3)
    _synthetic(10)
    assert np.random.rand() == expected

    # ... so a user's numpy.random.seed makes the order reproducible.
    orders = []
    for _ in range(2):
        np.random.seed(11)
        ds = _synthetic(50)
        orders.append(np.concatenate([ds.next_batch(20)[1] for _ in range(4)]))
    np.testing.assert_array_equal(orders[0], orders[1])


def test_next_batch_real_data(raw):
    ds = input_data.DataSet(raw[TEST_IMAGES][..., None], raw[TEST_LABELS], one_hot=False)
    labels = np.concatenate([ds.next_batch(1000)[1] for _ in range(10)])
    np.testing.assert_array_equal(np.bincount(labels), np.bincount(raw[TEST_LABELS]))
    images, labels = ds.next_batch(64)
    assert images.shape == (64, 784) and images.dtype == np.float32
    assert 0.0 <= images.min() and images.max() <= 1.0
    assert ds.epochs_completed == 1


# ---------------------------------------------------------------------------
# Download


def test_download_from_local_server(tmp_path, mnist_dir, mnist):
    served = tmp_path / "served"
    _copy_files(mnist_dir, served)
    target = tmp_path / "new" / "dir"
    with http_server(served) as port:
        ds = input_data.read_data_sets(str(target), one_hot=True,
                                       source_url="http://127.0.0.1:%d/" % port)
    assert sorted(os.listdir(target)) == sorted(FILES)
    for name in FILES:
        assert (target / name).read_bytes() == (served / name).read_bytes()
    for part in ("train", "validation", "test"):
        _assert_equal(getattr(ds, part).images, getattr(mnist, part).images)
        _assert_equal(getattr(ds, part).labels, getattr(mnist, part).labels)
    # Files already present are not fetched again.
    url = "http://127.0.0.1:%d/" % _closed_port()
    paths = input_data.download_missing(str(target), source_url=url)
    assert paths == [str(target / name) for name in FILES]


@pytest.mark.parametrize("corruption", ["wrong content", "not gzip"])
def test_download_checksum_mismatch(tmp_path, mnist_dir, raw, corruption):
    served = tmp_path / "served"
    _copy_files(mnist_dir, served)
    if corruption == "wrong content":
        content = bytearray(struct.pack(">II", 2049, 60000) + raw[TRAIN_LABELS].tobytes())
        content[-1] ^= 1
        (served / TRAIN_LABELS).write_bytes(gzip.compress(bytes(content)))
        got = hashlib.md5(content).hexdigest()
    else:
        (served / TRAIN_LABELS).write_bytes(b"<html>Not the file</html>")
        got = "unreadable"
    target = tmp_path / "target"
    _copy_files(mnist_dir, target, [TRAIN_IMAGES])  # present: not downloaded
    with http_server(served) as port:
        with pytest.raises(input_data.ChecksumError) as info:
            input_data.read_data_sets(str(target), source_url="http://127.0.0.1:%d/" % port)
    message = str(info.value)
    assert isinstance(info.value, OSError)
    assert "md5" in message and TRAIN_LABELS in message
    assert input_data.MD5[TRAIN_LABELS] in message and got in message
    assert os.listdir(target) == [TRAIN_IMAGES]


@contextlib.contextmanager
def _silent_listener():
    """A listening socket that never answers; yields its port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


@pytest.mark.parametrize("failure", ["refused", "http 404", "truncated", "timeout", "env url"])
def test_download_failure_names_missing_files(tmp_path, monkeypatch, failure):
    target = tmp_path / "empty"
    with contextlib.ExitStack() as stack:
        kwargs = {}
        if failure == "http 404":
            port = stack.enter_context(http_server(tmp_path))
        elif failure == "truncated":
            port = stack.enter_context(http_server(tmp_path, TruncatingHandler))
        elif failure == "timeout":
            monkeypatch.setattr(input_data, "DOWNLOAD_TIMEOUT", 0.5)
            port = stack.enter_context(_silent_listener())
        else:
            port = _closed_port()
        url = "http://127.0.0.1:%d/" % port
        if failure == "env url":
            monkeypatch.setenv("PYGRAD_MNIST_URL", url)
        else:
            kwargs["source_url"] = url
        with pytest.raises(input_data.DownloadError) as info:
            input_data.read_data_sets(str(target), **kwargs)
    error = info.value
    assert isinstance(error, OSError)
    message = str(error)
    for name in FILES:
        assert name in message
    assert str(target) in message and url in message and "by hand" in message
    assert error.missing == list(FILES)
    assert os.listdir(target) == []


def test_extract_images_and_dense_to_one_hot(mnist_dir, raw):
    """tf.contrib.learn.datasets.mnist's extract_images (a gzipped IDX file object to uint8
    [N, 28, 28, 1]) against the independent parse; dense_to_one_hot against rows of an identity."""
    import pygrad as tf
    mnist_module = tf.contrib.learn.datasets.mnist
    with open(os.path.join(mnist_dir, TEST_IMAGES), "rb") as f:
        images = mnist_module.extract_images(f)
    _assert_equal(images, raw[TEST_IMAGES][..., None])
    labels = raw[TEST_LABELS][:50]
    _assert_equal(mnist_module.dense_to_one_hot(labels, 10), np.eye(10)[labels])
    _assert_equal(mnist_module.dense_to_one_hot(np.array([2, 0]), 3), np.array([[0.0, 0, 1], [1, 0, 0]]))
    f = io.BytesIO(gzip.compress(struct.pack(">II", 2049, 0)))
    f.name = "some-images.gz"
    with pytest.raises(ValueError, match="Invalid magic number 2049 in MNIST image file: some-images.gz"):
        mnist_module.extract_images(f)
