"""MNIST loading, compatible with TensorFlow 1's
``tensorflow.examples.tutorials.mnist.input_data``.

``read_data_sets(train_dir, one_hot=True)`` returns ``Datasets(train,
validation, test)``: the first ``validation_size`` (5000) training examples
form the validation set, the remaining 55000 the training set, plus the 10000
test examples. Images are float32 in [0, 1] of shape [N, 784]; labels are
uint8 class ids, or float64 one-hot rows of length 10.

Missing files are downloaded from ``source_url`` (default: the mirror TF used,
or ``$PYGRAD_MNIST_URL``) and checked against the md5 of their decompressed
content. Only numpy and the standard library are used.
"""

import collections
import gzip
import hashlib
import http.client
import logging
import os
import tempfile
import urllib.error
import urllib.request

import numpy as np

__all__ = [
    "DEFAULT_SOURCE_URL",
    "TRAIN_IMAGES",
    "TRAIN_LABELS",
    "TEST_IMAGES",
    "TEST_LABELS",
    "FILES",
    "MD5",
    "Datasets",
    "DataSet",
    "DownloadError",
    "ChecksumError",
    "read_data_sets",
    "load_mnist",
    "download_missing",
    "extract_images",
    "extract_labels",
    "dense_to_one_hot",
]

_log = logging.getLogger(__name__)

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
SOURCE_URL_ENV = "PYGRAD_MNIST_URL"
DOWNLOAD_TIMEOUT = 60.0  # seconds, per blocking socket operation

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
FILES = (TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)

# md5 of the decompressed content: gzip headers differ between mirrors.
MD5 = {
    TRAIN_IMAGES: "6bbc9ace898e44ae57da46a324031adb",
    TRAIN_LABELS: "a25bea736e30d166cdddb491f175f624",
    TEST_IMAGES: "2646ac647ad5339dbf082846283269ea",
    TEST_LABELS: "27ae3e4e09519cfbb04c329615203637",
}

_IMAGES_MAGIC = 2051
_LABELS_MAGIC = 2049
_BE_U32 = np.dtype(">u4")

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


class DownloadError(OSError):
    """MNIST files are missing and could not be downloaded."""

    def __init__(self, message, missing=(), directory=None, url=None):
        super().__init__(message)
        self.missing = list(missing)
        self.directory = directory
        self.url = url


class ChecksumError(DownloadError):
    """A downloaded MNIST file does not have the expected content."""


# ---------------------------------------------------------------------------
# IDX parsing


def _name_of(f):
    return getattr(f, "name", repr(f))


def _parse_idx(data, magic_expected, kind, name):
    """Split decompressed IDX bytes into (header uint32 values, payload)."""
    ndim = 3 if magic_expected == _IMAGES_MAGIC else 1
    header_len = 4 * (1 + ndim)
    if len(data) < 4:
        raise ValueError("Truncated MNIST %s file: %s" % (kind, name))
    magic = int(np.frombuffer(data, _BE_U32, 1)[0])
    if magic != magic_expected:
        raise ValueError(
            "Invalid magic number %d in MNIST %s file: %s" % (magic, kind, name))
    if len(data) < header_len:
        raise ValueError("Truncated MNIST %s file: %s" % (kind, name))
    dims = [int(d) for d in np.frombuffer(data, _BE_U32, ndim, offset=4)]
    size = int(np.prod(dims))
    if len(data) < header_len + size:
        raise ValueError(
            "Truncated MNIST %s file: %s (expected %d bytes of data, got %d)"
            % (kind, name, size, len(data) - header_len))
    payload = np.frombuffer(data, np.uint8, size, offset=header_len)
    return dims, payload


def extract_images(f):
    """Read a gzipped IDX image file object into a uint8 array [N, rows, cols, 1]."""
    data = gzip.decompress(f.read())
    (num, rows, cols), pixels = _parse_idx(data, _IMAGES_MAGIC, "image", _name_of(f))
    return pixels.reshape(num, rows, cols, 1)


def dense_to_one_hot(labels_dense, num_classes):
    """Convert class ids [N] to float64 one-hot rows [N, num_classes]."""
    num_labels = labels_dense.shape[0]
    index_offset = np.arange(num_labels) * num_classes
    labels_one_hot = np.zeros((num_labels, num_classes))
    labels_one_hot.flat[index_offset + labels_dense.ravel()] = 1
    return labels_one_hot


def extract_labels(f, one_hot=False, num_classes=10):
    """Read a gzipped IDX label file object into uint8 ids [N] (or one-hot)."""
    data = gzip.decompress(f.read())
    _, labels = _parse_idx(data, _LABELS_MAGIC, "label", _name_of(f))
    if one_hot:
        return dense_to_one_hot(labels, num_classes)
    return labels


# ---------------------------------------------------------------------------
# DataSet


def _image_dtype(dtype):
    """Normalise dtype (numpy type, name string, or an object with
    ``as_numpy_dtype``) to np.uint8 / np.float32."""
    np_dtype = getattr(dtype, "as_numpy_dtype", dtype)
    try:
        np_dtype = np.dtype(np_dtype)
    except TypeError:
        np_dtype = None
    if np_dtype not in (np.dtype(np.uint8), np.dtype(np.float32)):
        raise TypeError("Invalid image dtype %r, expected uint8 or float32" % (dtype,))
    return np_dtype


class DataSet:
    """Images and labels with TF 1's epoch-wise shuffled ``next_batch``."""

    def __init__(self, images, labels, fake_data=False, one_hot=False,
                 dtype=np.float32, reshape=True, seed=None):
        # TF called numpy.random.seed(seed) here, with None (fresh entropy)
        # when no seed was given. We reseed only for an explicit seed, so a
        # user's own numpy.random.seed(...) keeps the order reproducible.
        if seed is not None:
            np.random.seed(seed)
        dtype = _image_dtype(dtype)
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            images = np.asarray(images)
            labels = np.asarray(labels)
            assert images.shape[0] == labels.shape[0], (
                "images.shape: %s labels.shape: %s" % (images.shape, labels.shape))
            self._num_examples = images.shape[0]
            # [num examples, rows, columns, depth] -> [num examples, rows*columns]
            if reshape:
                assert images.shape[3] == 1
                images = images.reshape(images.shape[0],
                                        images.shape[1] * images.shape[2])
            if dtype == np.float32:
                # [0, 255] -> [0.0, 1.0], as TF: astype, then times 1/255.
                images = images.astype(np.float32)
                np.multiply(images, 1.0 / 255.0, out=images)
        self._images = images
        self._labels = labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self):
        return self._images

    @property
    def labels(self):
        return self._labels

    @property
    def num_examples(self):
        return self._num_examples

    @property
    def epochs_completed(self):
        return self._epochs_completed

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """Return the next ``batch_size`` examples as (images, labels)."""
        if fake_data:
            fake_image = [1] * 784
            fake_label = [1] + [0] * 9 if self.one_hot else 0
            return ([fake_image for _ in range(batch_size)],
                    [fake_label for _ in range(batch_size)])
        start = self._index_in_epoch
        # Shuffle for the first epoch.
        if self._epochs_completed == 0 and start == 0 and shuffle:
            perm0 = np.arange(self._num_examples)
            np.random.shuffle(perm0)
            self._images = self.images[perm0]
            self._labels = self.labels[perm0]
        if start + batch_size > self._num_examples:
            # Finished epoch: take the rest, reshuffle, start the next epoch.
            self._epochs_completed += 1
            rest_num_examples = self._num_examples - start
            images_rest_part = self._images[start:self._num_examples]
            labels_rest_part = self._labels[start:self._num_examples]
            if shuffle:
                perm = np.arange(self._num_examples)
                np.random.shuffle(perm)
                self._images = self.images[perm]
                self._labels = self.labels[perm]
            start = 0
            self._index_in_epoch = batch_size - rest_num_examples
            end = self._index_in_epoch
            images_new_part = self._images[start:end]
            labels_new_part = self._labels[start:end]
            return (np.concatenate((images_rest_part, images_new_part), axis=0),
                    np.concatenate((labels_rest_part, labels_new_part), axis=0))
        self._index_in_epoch += batch_size
        end = self._index_in_epoch
        return self._images[start:end], self._labels[start:end]


# ---------------------------------------------------------------------------
# Download


def _resolve_source_url(source_url):
    if not source_url or source_url == DEFAULT_SOURCE_URL:
        source_url = os.environ.get(SOURCE_URL_ENV) or DEFAULT_SOURCE_URL
    if not source_url.endswith("/"):
        source_url += "/"
    return source_url


def _decompressed_md5(path):
    """md5 hex digest of a gzip file's decompressed content."""
    digest = hashlib.md5(usedforsecurity=False)
    with gzip.open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _manual_hint(directory):
    return ("Without network access, place the four files %s by hand in %r."
            % (", ".join(FILES), directory))


def _fetch(url, tmp):
    """Stream ``url`` into the open binary file ``tmp``."""
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
            expected = response.headers.get("Content-Length")
            received = 0
            for chunk in iter(lambda: response.read(1 << 20), b""):
                tmp.write(chunk)
                received += len(chunk)
        # read(n) returns b"" on a connection closed early; catch it here.
        if expected is not None and expected.isdigit() and received < int(expected):
            raise OSError("connection closed after %d of %s bytes" % (received, expected))
    except urllib.error.HTTPError as e:
        e.close()  # an HTTPError holds the open response
        raise


def _download_one(filename, directory, url):
    """Download one file atomically; raise ChecksumError on a bad md5."""
    fd, tmp_path = tempfile.mkstemp(prefix="." + filename + ".", suffix=".part",
                                    dir=directory)
    try:
        with os.fdopen(fd, "wb") as tmp:
            _fetch(url, tmp)
            tmp.flush()
            try:
                got = _decompressed_md5(tmp_path)
            except (OSError, EOFError) as e:  # not a valid gzip stream
                got = "unreadable (%s)" % e
            expected = MD5[filename]
            if got != expected:
                raise ChecksumError(
                    "Downloaded MNIST file %s from %s failed the md5 check of its "
                    "decompressed content: expected %s, got %s. The file was not "
                    "saved. %s" % (filename, url, expected, got, _manual_hint(directory)),
                    missing=[filename], directory=directory, url=url)
            os.fsync(tmp.fileno())
        os.chmod(tmp_path, 0o644)  # mkstemp creates files readable by the owner only
        os.replace(tmp_path, os.path.join(directory, filename))
    except BaseException:
        try:
            os.remove(tmp_path)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def download_missing(train_dir, source_url=DEFAULT_SOURCE_URL, filenames=FILES):
    """Download those of ``filenames`` that are missing from ``train_dir``.

    Returns the list of paths. Raises DownloadError (an OSError) naming every
    file still missing when a download fails, and ChecksumError (a
    DownloadError) when downloaded content has the wrong md5.
    """
    source_url = _resolve_source_url(source_url)
    os.makedirs(train_dir, exist_ok=True)
    paths = [os.path.join(train_dir, name) for name in filenames]
    missing = [name for name, path in zip(filenames, paths)
               if not os.path.exists(path)]
    for i, name in enumerate(missing):
        url = source_url + name
        _log.info("Downloading %s", url)
        try:
            _download_one(name, train_dir, url)
        except DownloadError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            still_missing = missing[i:]
            raise DownloadError(
                "Could not download the MNIST files %s into %r from %s "
                "(fetching %s failed: %s). %s"
                % (", ".join(still_missing), train_dir, source_url, url, e,
                   _manual_hint(train_dir)),
                missing=still_missing, directory=train_dir, url=source_url) from e
    return paths


# ---------------------------------------------------------------------------
# Entry points


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=np.float32,
                   reshape=True, validation_size=5000, seed=None,
                   source_url=DEFAULT_SOURCE_URL):
    """Load MNIST from ``train_dir`` (downloading missing files) as Datasets."""
    if fake_data:
        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot,
                           dtype=dtype, seed=seed)
        return Datasets(train=fake(), validation=fake(), test=fake())

    paths = download_missing(train_dir, source_url)
    train_images_path, train_labels_path, test_images_path, test_labels_path = paths
    with open(train_images_path, "rb") as f:
        train_images = extract_images(f)
    with open(train_labels_path, "rb") as f:
        train_labels = extract_labels(f, one_hot=one_hot)
    with open(test_images_path, "rb") as f:
        test_images = extract_images(f)
    with open(test_labels_path, "rb") as f:
        test_labels = extract_labels(f, one_hot=one_hot)

    if not 0 <= validation_size <= len(train_images):
        raise ValueError(
            "Validation size should be between 0 and {}. Received: {}."
            .format(len(train_images), validation_size))

    validation_images = train_images[:validation_size]
    validation_labels = train_labels[:validation_size]
    train_images = train_images[validation_size:]
    train_labels = train_labels[validation_size:]

    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    train = DataSet(train_images, train_labels, **options)
    validation = DataSet(validation_images, validation_labels, **options)
    test = DataSet(test_images, test_labels, **options)
    return Datasets(train=train, validation=validation, test=test)


def load_mnist(train_dir="MNIST-data"):
    """``read_data_sets(train_dir)`` with default options, as in TF."""
    return read_data_sets(train_dir)
