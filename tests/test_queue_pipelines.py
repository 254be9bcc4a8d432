"""TF1's queue-fed input pipelines end to end: producers, readers and batching fill queues in
QueueRunner threads while the main thread trains; the batches are TensorFlow's where the
pipeline is deterministic (no shuffling, one thread), and 200 start/train/stop/join/close cycles
leave no thread behind."""
import threading

import numpy as np
import pytest

import pygrad as tf


def _tf1():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_v2_behavior()
    return tf1


def _line(value):
    """A py_func's string scalar argument as bytes (TF passes bytes, pygrad a 0-d array)."""
    return value.item() if isinstance(value, np.ndarray) else value


def _decode_csv_line(line):
    a, b, y = _line(line).split(b",")
    return np.array([float(a), float(b)], np.float32), np.float32(y)


def drain(tfm, build, fetch_count=None):
    """Builds the pipeline with the module tfm, starts its queue runners, runs its fetches until
    OutOfRangeError (or fetch_count runs), stops and joins the threads; returns the values."""
    with tfm.Graph().as_default():
        fetches = build(tfm)
        out = []
        with tfm.Session() as sess:
            sess.run([tfm.global_variables_initializer(), tfm.local_variables_initializer()])
            coord = tfm.train.Coordinator()
            threads = tfm.train.start_queue_runners(sess, coord)
            try:
                while fetch_count is None or len(out) < fetch_count:
                    out.append(sess.run(fetches))
            except tfm.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return out


def assert_same_runs(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g if isinstance(g, (list, tuple)) else [g], w if isinstance(w, (list, tuple)) else [w]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
            assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.fixture
def csv_files(tmp_path):
    rng = np.random.default_rng(3)
    paths = []
    for f in range(2):
        rows = [f"{a:.3f},{b:.3f},{2 * a - b + 0.5:.3f}" for a, b in rng.uniform(-1, 1, size=(7 + f, 2))]
        path = tmp_path / f"part{f}.csv"
        path.write_text("a,b,y\n" + "\n".join(rows) + "\n")
        paths.append(str(path))
    return paths


def _csv_training(csv_files):
    def build(tfm):
        files = tfm.train.string_input_producer(csv_files, num_epochs=3, shuffle=False)
        key, line = tfm.TextLineReader(skip_header_lines=1).read(files)
        x, y = tfm.py_func(_decode_csv_line, [line], [tfm.float32, tfm.float32], stateful=False)
        x.set_shape([2])
        y.set_shape([])
        keys, xs, ys = tfm.train.batch([key, x, y], batch_size=4)
        w = tfm.Variable(np.zeros((2, 1), np.float32))
        b = tfm.Variable(np.zeros(1, np.float32))
        loss = tfm.reduce_mean(tfm.square(tfm.squeeze(tfm.matmul(xs, w) + b, 1) - ys))
        train = tfm.train.GradientDescentOptimizer(0.3).minimize(loss)
        return [keys, xs, ys, loss, train]
    return build


def test_csv_reader_pipeline_trains_on_tensorflows_batches(csv_files):
    tf1 = _tf1()
    want = drain(tf1, _csv_training(csv_files))
    got = drain(tf, _csv_training(csv_files))
    assert len(got) == len(want) == (3 * 15) // 4  # the last 1 record never makes a batch of 4
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g[0], w[0])  # keys: b"<file>:<line>"
        np.testing.assert_array_equal(g[1], w[1])
        np.testing.assert_array_equal(g[2], w[2])
        np.testing.assert_allclose(g[3], w[3], rtol=1e-5, atol=1e-6)
    assert got[0][0][0] == csv_files[0].encode() + b":2"
    assert got[-1][3] < 0.1 * got[0][3]


def _records(tmp_path, n=24):
    """Binary records of 1 label byte and 2x3 uint8 pixels after a 5-byte header, with a footer."""
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, n).astype(np.uint8)
    pixels = rng.integers(0, 256, (n, 6)).astype(np.uint8)
    pixels[:, 0] = labels * 200 + 20  # the label shows in pixel 0
    path = tmp_path / "records.bin"
    path.write_bytes(b"HEAD!" + np.concatenate([labels[:, None], pixels], 1).tobytes() + b"FOOT")
    return str(path), labels, pixels


def _raw_record(value):
    record = np.frombuffer(_line(value), np.uint8)
    return record[:1].astype(np.int32), record[1:].copy()


def _fixed_length_pipeline(path, batcher):
    def build(tfm):
        files = tfm.train.string_input_producer([path], num_epochs=2, shuffle=False)
        reader = tfm.FixedLengthRecordReader(record_bytes=7, header_bytes=5, footer_bytes=4)
        key, value = reader.read(files)
        label, raw = tfm.py_func(_raw_record, [value], [tfm.int32, tfm.uint8], stateful=False)
        label = tfm.reshape(label, [])
        image = tfm.cast(tfm.reshape(raw, [2, 3]), tfm.float32)
        return batcher(tfm, [key, image, label])
    return build


def test_fixed_length_records_batch_as_tensorflow(tmp_path):
    tf1 = _tf1()
    path, _, _ = _records(tmp_path)
    build = _fixed_length_pipeline(path, lambda tfm, ts: tfm.train.batch(ts, 5, allow_smaller_final_batch=True))
    want = drain(tf1, build)
    got = drain(tf, build)
    assert [len(g[0]) for g in got] == [5] * 9 + [3]
    assert_same_runs(got, want)
    assert got[0][0][1] == path.encode() + b":1"


def test_fixed_length_records_shuffle_batch_trains(tmp_path):
    path, labels, pixels = _records(tmp_path)

    def batcher(tfm, tensors):
        keys, images, ys = tfm.train.shuffle_batch(tensors, 6, capacity=20, min_after_dequeue=8, seed=7,
                                                   allow_smaller_final_batch=True)
        dense = tfm.layers.Dense(2, kernel_initializer=tfm.zeros_initializer())
        logits = dense(tfm.reshape(images, [-1, 6]) / 255.0)
        loss = tfm.reduce_mean(tfm.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
        with tfm.control_dependencies([tfm.train.GradientDescentOptimizer(1.0).minimize(loss)]):
            return [keys, ys, tfm.identity(dense.kernel), tfm.identity(dense.bias)]

    runs = drain(tf, _fixed_length_pipeline(path, batcher))
    keys = np.concatenate([r[0] for r in runs])
    assert sorted(keys.tolist()) == sorted([f"{path}:{i}".encode() for i in range(24)] * 2)  # each record twice
    assert keys.tolist() != sorted(keys.tolist(), key=lambda k: int(k.rsplit(b":", 1)[1]))  # shuffled
    for r in runs:  # each label is its record's
        np.testing.assert_array_equal(r[1], labels[[int(k.rsplit(b":", 1)[1]) for k in r[0]]])
    # it trains: the trained weights' loss over all 24 records, ln 2 before training, falls well below it
    # (the batches' order depends on the queue's threads: 0.33 to 0.43 in 60 runs)
    kernel, bias = runs[-1][2], runs[-1][3]
    z = pixels / 255.0 @ kernel + bias
    z -= z.max(1, keepdims=True)
    loss = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(len(labels)), labels])
    assert loss < 0.8 * np.log(2), loss


def _producers(tfm):
    r = tfm.train.range_input_producer(5, num_epochs=2, shuffle=False).dequeue()
    s = tfm.train.slice_input_producer([tfm.constant([[1., 2.], [3., 4.], [5., 6.]]), tfm.constant([7, 8, 9])],
                                       num_epochs=2, shuffle=False)
    return [r] + s


def test_range_and_slice_input_producers_as_tensorflow():
    tf1 = _tf1()
    assert_same_runs(drain(tf, _producers), drain(tf1, _producers))


def _rows(a):
    return np.arange(4 * (a + 1), dtype=np.int32).reshape(-1, 2) + 1


def test_batch_join_enqueue_many_and_dynamic_pad_as_tensorflow():
    tf1 = _tf1()

    def build(tfm):
        a = tfm.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
        rows = tfm.py_func(_rows, [a], tfm.int32, stateful=False)  # (a + 1) x 2: varies per element
        rows.set_shape([None, 2])
        padded = tfm.train.batch([a, rows], 2, dynamic_pad=True, allow_smaller_final_batch=True)
        return padded

    assert_same_runs(drain(tf, build), drain(tf1, build))

    def build_many(tfm):
        c = tfm.train.range_input_producer(3, num_epochs=1, shuffle=False).dequeue()
        three = tfm.stack([c, c + 10, c + 20])
        return tfm.train.batch([three], 2, enqueue_many=True, allow_smaller_final_batch=True)

    assert_same_runs(drain(tf, build_many), drain(tf1, build_many))

    def build_join(tfm):
        q = tfm.train.range_input_producer(4, num_epochs=1, shuffle=False)
        return tfm.train.batch_join([[q.dequeue()]], 3, allow_smaller_final_batch=True)

    assert_same_runs(drain(tf, build_join), drain(tf1, build_join))


def test_maybe_batch_keeps_the_elements_keep_input_selects():
    tf1 = _tf1()

    def build(tfm):
        x = tfm.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        return tfm.train.maybe_batch([x], tfm.equal(tfm.mod(x, 3), 0), 2, allow_smaller_final_batch=True)

    got = drain(tf, build)
    assert_same_runs(got, drain(tf1, build))
    assert [list(g) for g in got] == [[0, 3], [6, 9]]

    def build_join(tfm):
        x = tfm.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
        return tfm.train.maybe_batch_join([[x]], x < 3, 2, allow_smaller_final_batch=True)

    assert_same_runs(drain(tf, build_join), drain(tf1, build_join))

    def build_shuffled(tfm):
        x = tfm.train.range_input_producer(12, num_epochs=1, shuffle=False).dequeue()
        odd = tfm.train.maybe_shuffle_batch([x], 3, 8, 2, tfm.equal(tfm.mod(x, 2), 1),
                                            allow_smaller_final_batch=True)
        return odd

    shuffled = np.concatenate(drain(tf, build_shuffled))
    assert sorted(shuffled.tolist()) == [1, 3, 5, 7, 9, 11]


def test_epochs_is_a_local_variable_and_uninitialized_stops_the_runner_with_tfs_error():
    files = tf.train.string_input_producer(["a"], num_epochs=1)
    (epochs,) = tf.local_variables()
    assert epochs.op.name == "input_producer/limit_epochs/epochs" and epochs.dtype == tf.int64
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value input_producer/limit_epochs/"
                                                                    "epochs"):
            coord.join(threads, stop_grace_period_secs=10)
        del files


def _small_training():
    x = tf.train.range_input_producer(50, shuffle=False).dequeue()
    xs, = [tf.train.batch([tf.cast(x, tf.float32)], 4)]
    w = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(xs * w - xs))
    return tf.train.GradientDescentOptimizer(1e-4).minimize(loss), loss


def test_200_runs_of_start_train_stop_join_close_leave_no_thread():
    train, loss = _small_training()
    before = set(threading.enumerate())
    for _ in range(200):
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert len(threads) == 4  # the producer's and the batch's runner, with a canceller each
        for _ in range(3):
            sess.run(train)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        sess.close()
    assert set(threading.enumerate()) == before


def test_monitored_training_session_runs_and_stops_the_queue_runners():
    x = tf.train.range_input_producer(6, num_epochs=2, shuffle=False).dequeue()
    batch = tf.train.batch([x], 4, allow_smaller_final_batch=True)
    tf.train.get_or_create_global_step()
    before = set(threading.enumerate())
    seen = []
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            seen.append(list(sess.run(batch)))
    assert seen == [[0, 1, 2, 3], [4, 5, 0, 1], [2, 3, 4, 5]]
    assert set(threading.enumerate()) == before
    # A session closed with its runners blocked on full queues still stops them.
    y = tf.train.range_input_producer(100, shuffle=False, capacity=2).dequeue()
    with tf.train.MonitoredTrainingSession() as sess:
        assert sess.run(y) == 0
    assert set(threading.enumerate()) == before


def test_shuffle_batch_join_and_add_queue_runner_as_tensorflow():
    """shuffle_batch_join and maybe_shuffle_batch_join: one enqueuing thread per tensor list into
    one RandomShuffleQueue (TF's names), whole batches of the elements (kept together, the kept
    ones only), all of them once, as TensorFlow's; a QueueRunner added by add_queue_runner to a
    collection is started from it and fills its queue as TensorFlow's."""
    tf1 = _tf1()

    shapes = {}

    def build(tfm, keep):
        # the two lists share one producer, each thread dequeuing an x for its list; keep_input is
        # computed from that same x in each enqueue run
        x = tfm.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        lists = [[y, tfm.stack([y, -y])] for y in (x, x + 100)]
        if keep:
            out = tfm.train.maybe_shuffle_batch_join(lists, 4, 20, 3, tfm.equal(tfm.mod(x, 3), 0), seed=5,
                                                     allow_smaller_final_batch=True)
        else:
            out = tfm.train.shuffle_batch_join(lists, 4, 20, 3, seed=5, allow_smaller_final_batch=True)
        runner = tfm.get_collection(tfm.GraphKeys.QUEUE_RUNNERS)[-1]
        shapes[tfm, keep] = (len(runner.enqueue_ops), type(runner.queue).__name__, runner.queue.name,
                             [t.shape.as_list() for t in out])
        return out

    for keep in (False, True):
        runs = {m: drain(m, lambda m: build(m, keep)) for m in (tf, tf1)}
        got, want = ([np.concatenate([r[i] for r in runs[m]]) for i in (0, 1)] for m in (tf, tf1))
        # which thread took which x varies from run to run: each x comes once, from one list or the other
        assert sorted((got[0] % 100).tolist()) == sorted((want[0] % 100).tolist()) == (
            [0, 3, 6, 9] if keep else list(range(10)))
        assert got[0].dtype == want[0].dtype and got[1].shape == want[1].shape
        np.testing.assert_array_equal(got[1], np.stack([got[0], -got[0]], 1))  # an element's parts stay together
        assert [len(r[0]) for r in runs[tf]][:-1] == [4] * (len(runs[tf]) - 1)
        assert shapes[tf, keep] == shapes[tf1, keep] == (2, "RandomShuffleQueue", "shuffle_batch_join/random_shuffle_queue",
                                                         [[None], [None, 2]])

    def build_runner(tfm):
        q = tfm.FIFOQueue(10, tfm.int32, shapes=[[]])
        counter = tfm.Variable(0, name="counter")
        enqueue = q.enqueue_many(tfm.range(3) + 10 * tfm.assign_add(counter, 1))
        tfm.train.add_queue_runner(tfm.train.QueueRunner(q, [enqueue]), collection="mine")
        assert not tfm.get_collection(tfm.GraphKeys.QUEUE_RUNNERS) and len(tfm.get_collection("mine")) == 1
        return q.dequeue()

    def drain_mine(tfm):
        with tfm.Graph().as_default():
            value = build_runner(tfm)
            with tfm.Session() as sess:
                sess.run(tfm.global_variables_initializer())
                coord = tfm.train.Coordinator()
                threads = tfm.train.start_queue_runners(sess, coord, collection="mine")
                out = [sess.run(value) for _ in range(7)]
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=10)
        return out

    assert drain_mine(tf) == drain_mine(tf1) == [10, 11, 12, 20, 21, 22, 30]
