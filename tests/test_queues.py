"""tf.FIFOQueue, PaddingFIFOQueue, PriorityQueue and RandomShuffleQueue, the readers, and
tf.train.Coordinator: the values and errors of scripted runs are TensorFlow's; blocked runs wake
on a change, a close, the run's time limit and the session's close."""
import collections
import gzip
import re
import threading

import numpy as np
import pytest

import pygrad as tf

WAIT = 20  # seconds: the bound of every wait on a thread here (a failure, never a pause)
Timed = collections.namedtuple("Timed", "fetch ms")  # a run with RunOptions(timeout_in_ms=ms)


def _tf1():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_v2_behavior()
    return tf1


def outcomes(tfm, script):
    """Runs script(tfm) -> (runs, ...): each run a fetch (or a Timed one), in one session;
    the value of each, or its error's class and the message's line that names the reason."""
    out = []
    with tfm.Graph().as_default():
        runs = script(tfm)
        with tfm.Session() as sess:
            for run in runs:
                fetch, timeout = (run.fetch, run.ms) if isinstance(run, Timed) else (run, 0)
                options = tfm.RunOptions(timeout_in_ms=timeout) if timeout else None
                try:
                    value = sess.run(fetch, options=options)
                    out.append(("value", value))
                except tfm.errors.OpError as e:
                    reason = [line for line in str(e).splitlines() if "Queue" in line or "operation was" in line
                              or "Timed out" in line or "Reached" in line]
                    out.append((type(e).__name__, reason[0].split(": ", 1)[-1].split("\t")[0].strip()
                                if reason else ""))
    return out


def assert_same(got, want):
    assert len(got) == len(want)
    for (gk, gv), (wk, wv) in zip(got, want):
        assert gk == wk, (gk, gv, wk, wv)
        if gk == "value":
            for a, b in zip(gv if isinstance(gv, list) else [gv], wv if isinstance(wv, list) else [wv]):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
                assert np.asarray(a).dtype == np.asarray(b).dtype
        else:  # the number in a queue's resource name ('_3_fifo_queue') counts the process's queues
            assert re.sub(r"'_\d+_", "'_N_", gv) == re.sub(r"'_\d+_", "'_N_", wv)


def _fifo(tfm):
    q = tfm.FIFOQueue(3, [tfm.float32, tfm.int32], shapes=[[2], []])
    many = q.enqueue_many([[[1., 2.], [3., 4.]], [5, 6]])
    return [many, q.size(), Timed(q.enqueue([[7., 8.], 9]), 1000), Timed(q.enqueue([[0., 0.], 0]), 50), q.dequeue(),
            q.dequeue_many(2), q.close(), q.is_closed(), q.enqueue([[0., 0.], 0]), q.dequeue_up_to(2),
            q.dequeue(), q.dequeue_many(1)]


def _padding_and_priority(tfm):
    pq = tfm.PaddingFIFOQueue(5, [tfm.int32, tfm.string], shapes=[[None], []])
    prio = tfm.PriorityQueue(5, [tfm.string], shapes=[[]])
    return [pq.enqueue(([1, 2, 3], "a")), pq.enqueue(([4], "bb")), pq.enqueue(([], "")), pq.dequeue_many(3),
            prio.enqueue_many(([3, 1, 2, 1], ["c", "a", "b", "a2"])), prio.dequeue_many(3), prio.dequeue()]


def _unknown_shapes(tfm):
    q = tfm.FIFOQueue(2, [tfm.float32])
    return [q.dequeue_many(1), Timed(q.dequeue(), 50), q.enqueue([[1., 2.]]), q.enqueue([3.]),
            Timed(q.enqueue([4.]), 50), q.close(True), q.dequeue(), q.dequeue(), q.dequeue()]


def _random_shuffle(tfm):
    q = tfm.RandomShuffleQueue(10, 5, [tfm.int32], shapes=[[]], seed=3)
    def taken(d):  # 0, computed from the values (TF folds the shape of a tensor it knows, running nothing)
        return tfm.reduce_min(tfm.minimum(d, 0))

    return [q.enqueue_many([[0, 1, 2, 3, 4, 5, 6]]), taken(q.dequeue_many(2)), Timed(q.dequeue(), 50), q.size(),
            q.close(), taken(q.dequeue_up_to(3)), q.size(), taken(q.dequeue_up_to(10)), q.size(), q.dequeue()]


def _epochs(tfm):
    v = tfm.Variable(tfm.constant(0, tfm.int64), trainable=False)
    c = tfm.count_up_to(v, 2)
    return [v.initializer, c, c, c, v]


@pytest.mark.parametrize("script", [_fifo, _padding_and_priority, _unknown_shapes, _random_shuffle, _epochs])
def test_runs_give_tensorflows_values_and_errors(script):
    tf1 = _tf1()
    assert_same(outcomes(tf, script), outcomes(tf1, script))


def test_static_shapes_names_and_refusals_are_tensorflows():
    tf1 = _tf1()
    for tfm in (tf, tf1):
        with tfm.Graph().as_default():
            q = tfm.FIFOQueue(3, [tfm.float32], shapes=[[2]])
            assert q.dequeue().shape.as_list() == [2] and q.dequeue_many(4).shape.as_list() == [4, 2]
            assert q.dequeue_up_to(4).shape.as_list() == [None, 2] and q.size().dtype == tfm.int32
            assert q.name == "fifo_queue" and q.dequeue().op.name == "fifo_queue_Dequeue_1"
            with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(2,\) are incompatible"):
                q.enqueue([[1., 2., 3.]])
            named = tfm.FIFOQueue(3, [tfm.int32, tfm.float32], names=["a", "b"])
            assert sorted(named.dequeue()) == ["a", "b"] and named.names == ["a", "b"]
            with pytest.raises(ValueError, match="You must enqueue a dictionary in a Queue with names"):
                named.enqueue((1, 2.))
            with pytest.raises(ValueError, match="capacity 10 must be bigger than min_after_dequeue 10"):
                tfm.train.shuffle_batch([tfm.constant(1)], 2, 10, 10)
            with pytest.raises(ValueError, match="All shapes must be fully defined"):
                tfm.FIFOQueue(3, [tfm.float32], shapes=[[None]])
            assert tfm.PriorityQueue(2, [tfm.string], shapes=[[]]).dtypes == [tfm.int64, tfm.string]


def _in_thread(fn):
    box = {}

    def work():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 (the test reads it)
            box["error"] = e

    t = threading.Thread(target=work)
    t.start()
    return t, box


def test_a_blocked_enqueue_waits_for_a_dequeue_on_another_thread():
    q = tf.FIFOQueue(1, [tf.int32], shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue(1))
        t, box = _in_thread(lambda: sess.run(q.enqueue(2)))
        assert sess.run(q.dequeue()) == 1
        assert sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=WAIT * 1000)) == 2
        t.join(WAIT)
        assert not t.is_alive() and box == {"value": None}


def test_close_wakes_a_blocked_dequeue_with_out_of_range_and_session_close_cancels():
    q = tf.FIFOQueue(2, [tf.int32], shapes=[[]])
    dequeue = q.dequeue()
    sess = tf.Session()
    started = threading.Event()
    t, box = _in_thread(lambda: (started.set(), sess.run(dequeue)))
    started.wait(WAIT)
    sess.run(q.close())
    t.join(WAIT)
    assert isinstance(box.get("error"), tf.errors.OutOfRangeError)
    assert "is closed and has insufficient elements (requested 1, current size 0)" in str(box["error"])
    other = tf.FIFOQueue(2, [tf.int32], shapes=[[]])
    sess.run(other.enqueue_many([[1, 2]]))
    waiters = [_in_thread(lambda: sess.run(other.dequeue_many(3))), _in_thread(lambda: sess.run(other.enqueue(3))),
               _in_thread(lambda: sess.run(other.enqueue(4)))]
    sess.close()
    for t, box in waiters:
        t.join(WAIT)
        assert not t.is_alive()
        assert isinstance(box.get("error"), (tf.errors.CancelledError, RuntimeError)), box
    cancelled = [box["error"] for _, box in waiters if isinstance(box["error"], tf.errors.CancelledError)]
    assert all("operation was cancelled" in str(e) for e in cancelled)


def test_queues_are_per_session_and_runs_from_threads_share_one_state():
    q = tf.FIFOQueue(100, [tf.int32], shapes=[[]])
    enqueue = q.enqueue_many([tf.range(10)])
    with tf.Session() as a, tf.Session() as b:
        threads = [_in_thread(lambda: a.run(enqueue)) for _ in range(5)]
        for t, _ in threads:
            t.join(WAIT)
        assert a.run(q.size()) == 50 and b.run(q.size()) == 0
        values = a.run(q.dequeue_many(50))
        assert sorted(values.tolist()) == sorted(list(range(10)) * 5)
        assert all(list(values[i:i + 10]) == list(range(10)) for i in range(0, 50, 10))  # each enqueue_many whole


def test_random_shuffle_queue_is_seeded_and_keeps_min_after_dequeue():
    def order():
        with tf.Graph().as_default():
            tf.set_random_seed(5)
            q = tf.RandomShuffleQueue(20, 4, [tf.int32], shapes=[[]], seed=1)
            with tf.Session() as sess:
                sess.run(q.enqueue_many([tf.range(12)]))
                first = sess.run(q.dequeue_many(8))
                with pytest.raises(tf.errors.DeadlineExceededError):
                    sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=30))
                sess.run(q.close())
                return list(first) + list(sess.run(q.dequeue_up_to(10)))

    a, b = order(), order()
    assert a == b and sorted(a) == list(range(12)) and a != list(range(12))


def _write_files(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"head\nl1\r\n\nl3 no newline")
    (tmp_path / "b.txt").write_bytes(b"")
    (tmp_path / "c.txt").write_bytes(b"head\nx\ny\n")
    (tmp_path / "r.bin").write_bytes(b"HH" + bytes(range(10)) + b"F")
    (tmp_path / "r.gz").write_bytes(gzip.compress(b"HH" + bytes(range(10, 20)) + b"F"))
    return [str(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt", "r.bin", "r.gz")]


def _reads(tfm, files):
    def queue(names):
        q = tfm.FIFOQueue(10, [tfm.string], shapes=[[]])
        return q, q.enqueue_many([names]), q.close()

    lines, fill_lines, close_lines = queue(files[:3])
    text = tfm.TextLineReader(skip_header_lines=1)
    records, fill_records, close_records = queue(files[3:4] * 2)
    fixed = tfm.FixedLengthRecordReader(3, header_bytes=2, footer_bytes=1, hop_bytes=2)
    zipped, fill_zipped, close_zipped = queue(files[4:])
    gz = tfm.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=1, encoding="GZIP")
    whole, fill_whole, close_whole = queue(files[3:4] + files[1:2])
    work, fill_work, close_work = queue(["w1", "w2"])
    identity = tfm.IdentityReader()
    runs = [fill_lines, close_lines] + [text.read(lines)] * 5 + [text.read(lines), text.num_records_produced(),
                                                                 text.num_work_units_completed(), text.reset(),
                                                                 text.num_records_produced()]
    runs += [fill_records, close_records, fixed.read_up_to(records, 3), fixed.read_up_to(records, 5),
             fixed.read_up_to(records, 5)]
    runs += [fill_zipped, close_zipped, gz.read(zipped), gz.read(zipped)]
    runs += [fill_whole, close_whole, tfm.WholeFileReader().read(whole), tfm.WholeFileReader().read(whole)]
    runs += [fill_work, close_work, identity.read_up_to(work, 5), identity.num_work_units_completed()]
    return runs


def test_readers_give_tensorflows_keys_values_and_counts(tmp_path):
    tf1 = _tf1()
    files = _write_files(tmp_path)
    got = outcomes(tf, lambda tfm: _reads(tfm, files))
    assert_same(got, outcomes(tf1, lambda tfm: _reads(tfm, files)))
    assert got[2][1][0] == files[0].encode() + b":2" and got[2][1][1] == b"l1"


def test_coordinator_join_reraises_the_first_error_and_names_stragglers():
    coord = tf.train.Coordinator()

    def fail():
        with coord.stop_on_exception():
            raise ValueError("from a worker")

    threads = [threading.Thread(target=fail), threading.Thread(target=coord.wait_for_stop)]
    for t in threads:
        t.start()
    with pytest.raises(ValueError, match="from a worker"):
        coord.join(threads, stop_grace_period_secs=WAIT)
    assert coord.joined and coord.should_stop()
    with pytest.raises(TypeError):
        coord.request_stop(TypeError("after join"))
    coord.clear_stop()
    assert not coord.should_stop() and not coord.wait_for_stop(0.01)
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "a clean stop"))
    coord.join([])
    coord.clear_stop()
    hold = threading.Event()
    straggler = threading.Thread(target=hold.wait, args=(WAIT,), name="straggler")
    straggler.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="Coordinator stopped with threads still running: straggler"):
        coord.join([straggler], stop_grace_period_secs=0.01)
    hold.set()
    straggler.join(WAIT)


def test_queue_runner_without_coordinator_records_its_error_and_closes_on_out_of_range():
    q = tf.FIFOQueue(10, [tf.int32], shapes=[[]])
    v = tf.Variable(tf.constant(0, tf.int64), trainable=False)
    runner = tf.train.QueueRunner(q, [q.enqueue(tf.cast(tf.count_up_to(v, 3), tf.int32))])
    with tf.Session() as sess:
        sess.run(v.initializer)
        (t,) = runner.create_threads(sess, start=True)
        t.join(WAIT)
        assert sess.run(q.dequeue_up_to(10)).tolist() == [0, 1, 2]
        assert sess.run(q.is_closed()) and runner.exceptions_raised == []
    with pytest.raises(ValueError, match="Must provide queue and enqueue_ops"):
        tf.train.QueueRunner(q, [])
    assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
