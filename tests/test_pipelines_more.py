"""Input pipelines against TensorFlow, from the same files: tf.TFRecordReader (keys, compression,
damaged records), TensorFlow's CIFAR-10 input pipeline (binary records through
FixedLengthRecordReader, decode_raw and the image distortions into shuffle_batch, training a
small convnet; without the distortions, TF's batches exactly), TFRecordWriter -> TFRecordReader ->
parse_single_example -> batch -> training, Dataset.interleave / flat_map / parallel_interleave in
TF's order, compressed text and fixed-length datasets, and the feedable iterator."""
import gzip
import pathlib
import zlib

import numpy as np
import pytest

import pygrad as tf
from test_data import elements
from test_queue_pipelines import _tf1, assert_same_runs, drain

COMPRESS = {"": lambda b: b, "ZLIB": zlib.compress, "GZIP": gzip.compress}


def _tfrecords(tmp_path, compression, n_files=2):
    paths = []
    for f in range(n_files):
        path = str(tmp_path / f"part{f}.tfrecord")
        with tf.io.TFRecordWriter(path, compression) as w:
            for i in range(3 + f):
                w.write(b"%d:%d:" % (f, i) + b"x" * (5 * i))
        paths.append(path)
    return paths


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_tfrecord_reader_keys_and_records_as_tensorflows(tmp_path, compression):
    tf1 = _tf1()
    paths = _tfrecords(tmp_path, compression)

    def build(m):
        files = m.train.string_input_producer(paths, num_epochs=2, shuffle=False)
        options = m.python_io.TFRecordOptions(compression) if compression == "GZIP" else compression or None
        return list(m.TFRecordReader(options=options).read(files))

    got = drain(tf, build)
    assert_same_runs(got, drain(tf1, build))
    assert len(got) == 2 * (3 + 4) and got[1][0] == paths[0].encode() + b":20"  # offsets of the records' starts


def _read_all(m, path, reader):
    with m.Graph().as_default():
        q = m.FIFOQueue(2, [m.string], shapes=[[]])
        key, value = reader(m).read(q)
        out = []
        with m.Session() as sess:
            sess.run(q.enqueue([path]))
            sess.run(q.close())
            try:
                while True:
                    out.append(sess.run([key, value]))
            except m.errors.OutOfRangeError:
                return out, None
            except m.errors.OpError as e:
                return out, e


def test_tfrecord_reader_damaged_record_is_tfs_data_loss(tmp_path):
    tf1 = _tf1()
    (path,) = _tfrecords(tmp_path, "", 1)
    data = bytearray(pathlib.Path(path).read_bytes())
    data[20 + 12 + 1] ^= 1  # the second record's data
    pathlib.Path(path).write_bytes(bytes(data))
    ours, error = _read_all(tf, path, lambda m: m.TFRecordReader())
    theirs, their_error = _read_all(tf1, path, lambda m: m.TFRecordReader())
    assert ours == theirs and len(ours) == 1
    assert isinstance(error, tf.errors.DataLossError) and isinstance(their_error, tf1.errors.DataLossError)
    assert "corrupted record at 32" in their_error.message
    assert "corrupted record at 32" in error.message and path in error.message and "ReaderReadV2" in error.message
    _, missing = _read_all(tf, str(tmp_path / "nope"), lambda m: m.TFRecordReader())
    assert isinstance(missing, tf.errors.NotFoundError) and "nope" in missing.message


# ---- TensorFlow's CIFAR-10 input pipeline (models/tutorials/image/cifar10/cifar10_input.py)
CIFAR_BYTES = 1 + 32 * 32 * 3


def _cifar_files(tmp_path, n_files=2, per_file=24):
    """Records in CIFAR-10's binary format (a label byte, then 3 planes of 32x32 bytes); an image
    of class c (0..2) is brightest in channel c."""
    rng = np.random.default_rng(10)
    paths = []
    for f in range(n_files):
        labels = rng.integers(0, 3, per_file).astype(np.uint8)
        planes = rng.integers(0, 120, (per_file, 3, 32, 32)).astype(np.uint8)
        planes[np.arange(per_file), labels] += 120
        path = tmp_path / f"data_batch_{f + 1}.bin"
        path.write_bytes(np.concatenate([labels[:, None], planes.reshape(per_file, -1)], 1).tobytes())
        paths.append(str(path))
    return paths


def read_cifar10(m, filename_queue):
    """cifar10_input.read_cifar10: (key, int32 label of shape [1], uint8 image [32, 32, 3])."""
    key, value = m.FixedLengthRecordReader(record_bytes=CIFAR_BYTES).read(filename_queue)
    record = m.decode_raw(value, m.uint8)
    label = m.cast(m.strided_slice(record, [0], [1]), m.int32)
    depth_major = m.reshape(m.strided_slice(record, [1], [CIFAR_BYTES]), [3, 32, 32])
    return key, label, m.transpose(depth_major, [1, 2, 0])


def _cifar_eval_inputs(paths, batch_size=8):
    """cifar10_input.inputs: crop (or pad) to 24x24, per-image standardization, tf.train.batch."""
    def build(m):
        files = m.train.string_input_producer(paths, num_epochs=1, shuffle=False)
        key, label, image = read_cifar10(m, files)
        cropped = m.image.resize_image_with_crop_or_pad(m.cast(image, m.float32), 24, 24)
        image = m.image.per_image_standardization(cropped)
        image.set_shape([24, 24, 3])
        label.set_shape([1])
        keys, crops, images, labels = m.train.batch([key, cropped, image, label], batch_size, num_threads=1,
                                                    capacity=40)
        return [keys, crops, m.reshape(labels, [batch_size]), images]
    return build


def test_cifar10_eval_pipeline_gives_tensorflows_batches(tmp_path):
    tf1 = _tf1()
    build = _cifar_eval_inputs(_cifar_files(tmp_path))
    got, want = drain(tf, build), drain(tf1, build)
    assert len(got) == len(want) == 6
    assert_same_runs([g[:3] for g in got], [w[:3] for w in want])  # keys, crops, labels: exactly
    for g, w in zip(got, want):  # the standardized images: to float32 rounding (the sums' order differs)
        np.testing.assert_allclose(g[3], w[3], rtol=1e-6, atol=1e-6)


def _convnet(m, images, labels):
    init = m.truncated_normal_initializer(stddev=0.1, seed=3)
    net = m.layers.conv2d(images, 8, 5, padding="same", activation=m.nn.relu, kernel_initializer=init)
    net = m.layers.max_pooling2d(net, 3, 2, padding="same")
    net = m.layers.conv2d(net, 8, 5, padding="same", activation=m.nn.relu, kernel_initializer=init)
    net = m.layers.max_pooling2d(net, 3, 2, padding="same")
    logits = m.layers.dense(m.layers.flatten(net), 10, kernel_initializer=init)
    loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return loss, m.train.GradientDescentOptimizer(0.05).minimize(loss)


def test_cifar10_distorted_inputs_train_a_convnet(tmp_path):
    paths = _cifar_files(tmp_path)

    def build(m):  # cifar10_input.distorted_inputs with 2 preprocessing threads
        files = m.train.string_input_producer(paths, seed=1)
        _, label, image = read_cifar10(m, files)
        image = m.random_crop(m.cast(image, m.float32), [24, 24, 3], seed=2)
        image = m.image.random_flip_left_right(image, seed=3)
        image = m.image.random_brightness(image, max_delta=63, seed=4)
        image = m.image.random_contrast(image, lower=0.2, upper=1.8, seed=5)
        image = m.image.per_image_standardization(image)
        image.set_shape([24, 24, 3])
        label.set_shape([1])
        images, labels = m.train.shuffle_batch([image, label], batch_size=16, num_threads=2, capacity=64,
                                               min_after_dequeue=20, seed=6)
        labels = m.reshape(labels, [16])
        loss, train = _convnet(m, images, labels)
        return [loss, labels, train]

    runs = drain(tf, build, fetch_count=60)
    losses = np.array([r[0] for r in runs])
    assert set(np.concatenate([r[1] for r in runs]).tolist()) == {0, 1, 2}
    assert losses[-10:].mean() < 0.5 * losses[:5].mean(), losses


# ---- TFRecordWriter -> TFRecordReader -> parse_single_example -> batch -> training
def _example_files(tmp_path):
    rng = np.random.default_rng(11)
    paths = []
    for f in range(2):
        path = str(tmp_path / f"examples{f}.tfrecord")
        with tf.io.TFRecordWriter(path, "ZLIB") as w:
            for _ in range(9):
                x = rng.uniform(-1, 1, 3).astype(np.float32)
                y = int(x @ [1.0, -2.0, 0.5] > 0)
                w.write(tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))})).SerializeToString())
        paths.append(path)
    return paths


def test_tfrecord_reader_parse_batch_trains_as_tensorflow(tmp_path):
    tf1 = _tf1()
    paths = _example_files(tmp_path)

    def build(m):
        files = m.train.string_input_producer(paths, num_epochs=4, shuffle=False)
        key, record = m.TFRecordReader(options=m.python_io.TFRecordOptions("ZLIB")).read(files)
        parsed = m.parse_single_example(record, {"x": m.FixedLenFeature([3], m.float32),
                                                 "y": m.FixedLenFeature([], m.int64)})
        keys, xs, ys = m.train.batch([key, parsed["x"], parsed["y"]], 6)
        w, b = m.Variable(np.zeros((3, 2), np.float32)), m.Variable(np.zeros(2, np.float32))
        loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=m.matmul(xs, w) + b))
        return [keys, xs, ys, loss, m.train.GradientDescentOptimizer(1.0).minimize(loss)]

    got, want = drain(tf, build), drain(tf1, build)
    assert len(got) == len(want) == 4 * 18 // 6
    for g, w in zip(got, want):
        assert_same_runs([g[:3]], [w[:3]])
        np.testing.assert_allclose(g[3], w[3], rtol=1e-5, atol=1e-6)
    assert got[-1][3] < 0.7 * got[0][3]


# ---- tf.data: interleave, flat_map, parallel_interleave; compressed files; num_parallel_reads
LENGTHS = np.array([3, 1, 4, 0, 2, 5], np.int64)


def _numbered(m, x):
    return m.data.Dataset.range(x).map(lambda y: x * 10 + y)


INTERLEAVES = {
    "cycle2_block2": lambda m, d: d.interleave(lambda x: _numbered(m, x), cycle_length=2, block_length=2),
    "cycle3": lambda m, d: d.interleave(lambda x: _numbered(m, x), 3),
    "autotune": lambda m, d: d.interleave(lambda x: _numbered(m, x)),
    "flat_map": lambda m, d: d.flat_map(lambda x: m.data.Dataset.from_tensors(x).repeat(x)),
    "parallel_interleave": lambda m, d: d.apply(m.data.experimental.parallel_interleave(
        lambda x: _numbered(m, x), cycle_length=2, block_length=3)),
    "tuples": lambda m, d: m.data.Dataset.zip((d, d.map(lambda x: x + 1))).interleave(lambda a, b: m.data.Dataset.zip((
        m.data.Dataset.range(a), m.data.Dataset.range(b).map(lambda y: y * a))), 2).batch(4),
}


@pytest.mark.parametrize("case", sorted(INTERLEAVES))
def test_interleave_order_as_tensorflows(tf_peer, case):
    def build(m):
        return INTERLEAVES[case](m, m.data.Dataset.from_tensor_slices(LENGTHS))
    assert_same_runs(elements(tf, build), elements(tf_peer, build))


def test_interleave_refuses_what_tensorflow_refuses():
    d = tf.data.Dataset.range(3)
    with pytest.raises(TypeError, match="must return a `Dataset` object"):
        d.interleave(lambda x: x * 2, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="block_length must be greater than zero"):
        d.interleave(lambda x: tf.data.Dataset.range(x), 2, 0)


def _text_and_binary_files(tmp_path, compression):
    texts, binaries = [], []
    for i in range(2):
        texts.append(tmp_path / f"t{i}.txt")
        texts[-1].write_bytes(COMPRESS[compression](b"ab\ncd\r\ne\rf\n\nlast%d" % i))
        binaries.append(tmp_path / f"b{i}.bin")
        binaries[-1].write_bytes(COMPRESS[compression](b"HH" + bytes(range(3 * (4 + i))) + b"FFF"))
    return [str(p) for p in texts], [str(p) for p in binaries]


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_file_datasets_compressed_and_interleaved_as_tensorflows(tf_peer, tmp_path, compression):
    texts, binaries = _text_and_binary_files(tmp_path, compression)
    records = _tfrecords(tmp_path, compression)
    cases = [
        lambda m: m.data.TextLineDataset(texts, compression_type=compression),
        lambda m: m.data.TextLineDataset(m.data.Dataset.from_tensor_slices(texts), compression, 3,
                                         num_parallel_reads=2),
        lambda m: m.data.FixedLengthRecordDataset(binaries, 3, 2, 3, compression_type=compression),
        lambda m: m.data.TFRecordDataset(records, compression, buffer_size=10, num_parallel_reads=2),
    ]
    for build in cases:
        ours = elements(tf, build)
        assert ours and ours == elements(tf_peer, build)


def test_compressed_fixed_length_records_with_a_part_record_are_data_loss(tf_peer, tmp_path):
    path = tmp_path / "bad.bin"
    path.write_bytes(gzip.compress(b"HH" + bytes(13) + b"FFF"))
    message = (f'input file "{path}" has body length 13 bytes, which is not an exact multiple of the record '
               f"length \\(3 bytes\\)")
    for m in (tf_peer, tf):
        with pytest.raises(m.errors.DataLossError, match=message):
            elements(m, lambda m: m.data.FixedLengthRecordDataset([str(path)], 3, 2, 3, compression_type="GZIP"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="`buffer_size` must be >= 0"):
        tf.data.TextLineDataset(str(path), buffer_size=-1)


# ---- the feedable iterator
def _feedable(m):
    """TF1's train/validation switch: one get_next, fed the handle of the iterator to read."""
    with m.Graph().as_default():
        data = m.data.Dataset
        training = data.range(10).map(lambda x: (x, m.cast(x, m.float32) * 2)).repeat().make_one_shot_iterator()
        validation = data.range(100, 103).map(lambda x: (x, m.cast(x, m.float32))).make_initializable_iterator()
        other = data.from_tensors((np.float32(1), np.float32(2))).make_one_shot_iterator()
        handle = m.placeholder(m.string, [])
        feedable = m.data.Iterator.from_string_handle(handle, training.output_types, training.output_shapes)
        x, y = feedable.get_next()
        total = m.Variable(0.0)
        add = m.assign_add(total, y)
        out = []
        with m.Session() as sess:
            sess.run(m.global_variables_initializer())
            train_handle, valid_handle = sess.run([training.string_handle(), validation.string_handle()])
            for _ in range(2):
                sess.run(validation.initializer)
                out += [sess.run([x, add], {handle: train_handle}) for _ in range(3)]
                out += [sess.run([x, y], {handle: valid_handle}) for _ in range(3)]
                with pytest.raises(m.errors.OutOfRangeError):
                    sess.run(x, {handle: valid_handle})
            out.append(sess.run(training.get_next()))
            with pytest.raises(m.errors.InvalidArgumentError, match="Data type mismatch at component 0"):
                sess.run(x, {handle: sess.run(other.string_handle())})
            with pytest.raises(m.errors.InvalidArgumentError, match="Could not parse string_handle"):
                sess.run(x, {handle: b"no such iterator"})
            assert x.shape.as_list() == [] and feedable.output_types == (m.int64, m.float32)
        return out


def test_feedable_iterator_switches_iterators_as_tensorflow(tf_peer):
    ours = _feedable(tf)
    assert_same_runs(ours, _feedable(tf_peer))
    assert ours[-1] == (6, 12.0)
