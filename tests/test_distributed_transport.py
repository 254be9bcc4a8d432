"""How workers and parameter-server shards exchange data (pygrad/distributed/transport.py): the
local link through shared memory and a Unix socket against the shard's rules and against Dask's
messages, sparse pushes of IndexedSlices gradients and partial pulls, and async pushes overlapped
with compute. The shard's rules without Dask are exercised on a ParameterShard directly."""
import asyncio
import contextlib
import glob
import os
import threading
import time

import numpy as np
import pytest

import pygrad as tf
from pygrad import distributed, errors
from pygrad.distributed import transport
from pygrad.distributed.shard import ParameterShard
from pygrad.distributed.spec import VarSpec

from ps_testing import blobs, local_client, softmax_model, softmax_model_64

# The local link needs /dev/shm and Unix sockets (Linux has both); without them runs go through messages,
# which the tests with transport="messages" check on every machine.
needs_local_link = pytest.mark.skipif(not transport.LocalEndpoint.available(), reason="no /dev/shm or Unix sockets")

TOKENS = ["t0", "t1"]
ROWS, WIDTH = 6, 3


def _shard(optimizer, sparse=True, **kw):
    specs = [VarSpec("emb", (ROWS, WIDTH), "float64", np.arange(ROWS * WIDTH, dtype=np.float64).reshape(ROWS, WIDTH),
                     sparse=sparse),
             VarSpec("w", (2,), "float64", np.array([1.0, -1.0]))]
    return ParameterShard(0, specs, optimizer, TOKENS, run_id="test", **kw), specs


class _Replica:
    """A worker's session holding the shard's variables, for LocalLink.install."""

    def __init__(self, specs):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.vars = {s.name: tf.Variable(np.zeros(s.shape, s.dtype), name=s.name) for s in specs}
            init = tf.global_variables_initializer()
        self.sess = tf.Session(graph=self.graph)
        self.sess.run(init)

    def install(self, link, base, patience=None):
        return link.install(None, lambda n, v: self.sess.write_variable(self.vars[n], v),
                            lambda n, i, r: self.sess.copy_variable_rows(self.vars[n], i, r, True), base, patience)

    def value(self, name):
        return self.sess.run(self.vars[name])


def _link(shard, specs, worker=0, token=None):
    endpoint = asyncio.run(shard.local_endpoint())
    return transport.LocalLink(endpoint["directory"], specs, worker, TOKENS[worker] if token is None else token, 10.0,
                               endpoint["row_local"]), endpoint


@contextlib.contextmanager
def _serving(optimizer):
    """(shard, specs, open_link): a shard of _shard's variables, and open_link(worker=0, token=None),
    which opens a local link to it as _link does; on leaving, the links are closed, then the shard."""
    shard, specs = _shard(optimizer)
    links = []

    def open_link(**kw):
        made = _link(shard, specs, **kw)
        links.append(made[0])
        return made

    try:
        yield shard, specs, open_link
    finally:
        for made in links:
            made.close()
        asyncio.run(shard.close())


@needs_local_link
def test_a_sparse_push_over_the_local_link_applies_the_rows_and_installs_only_those_changed():
    """SGD on an embedding: the rows pushed (one repeated, summed first) move by lr times their
    gradient, the other rows not; an install after it copies only those rows, and the weights equal
    the shard's own."""
    with _serving(lambda: tf.train.GradientDescentOptimizer(0.5)) as (shard, specs, open_link):
        link, endpoint = open_link()
        assert endpoint["row_local"] == ["emb"] and os.path.isdir(endpoint["directory"])
        assert oct(os.stat(endpoint["directory"]).st_mode & 0o777) == "0o700"
        replica = _Replica(specs)
        version, moved = replica.install(link, None)
        assert version == 0 and moved == (ROWS * WIDTH + 2) * 8
        values = np.array([[1.0, 2.0, 3.0], [10.0, 10.0, 10.0]])
        link.start_push(0, "t0", 0, 0, {"emb": (values, np.array([4, 1])), "w": np.array([2.0, 2.0])})
        assert link.finish_push() == {"status": "applied", "version": 1, "staleness": 0}
        want = np.arange(ROWS * WIDTH, dtype=np.float64).reshape(ROWS, WIDTH)
        want[4] -= 0.5 * values[0]
        want[1] -= 0.5 * values[1]
        version, moved = replica.install(link, 0)
        assert version == 1 and moved == 2 * WIDTH * 8 + 2 * 8  # two rows of emb, and w whole
        np.testing.assert_array_equal(replica.value("emb"), want)
        np.testing.assert_array_equal(replica.value("w"), [0.0, -2.0])
        np.testing.assert_array_equal(asyncio.run(shard.pull())[1]["emb"], want)
        # Over messages, a pull since version 1 has no rows of emb; since 0, the two.
        _, since1 = asyncio.run(shard.pull(since=1))
        assert since1["emb"][1].tolist() == [] and since1["w"].shape == (2,)
        rows, indices = asyncio.run(shard.pull(since=0))[1]["emb"]
        assert indices.tolist() == [1, 4]
        np.testing.assert_array_equal(rows, want[[1, 4]])
    assert not os.path.exists(endpoint["directory"])


@needs_local_link
def test_an_update_that_moves_every_row_is_installed_whole():
    """Adam's sparse rule (TF1's) decays m and v everywhere, so a row with momentum moves in a step
    that has no gradient for it: the shard says its updates are not row-local, and an install
    copies the whole embedding."""
    with _serving(lambda: tf.train.AdamOptimizer(0.1)) as (shard, specs, open_link):
        link, endpoint = open_link()
        assert endpoint["row_local"] == []
        replica = _Replica(specs)
        replica.install(link, None)
        for step, rows in enumerate([[0, 2], [2]]):
            link.start_push(0, "t0", step, step, {"emb": (np.ones((len(rows), WIDTH)), np.array(rows)),
                                                  "w": np.ones(2)})
            link.finish_push()
            if step == 0:
                replica.install(link, None)
                row0 = replica.value("emb")[0]
        version, moved = replica.install(link, 1)
        assert version == 2 and moved == (ROWS * WIDTH + 2) * 8
        np.testing.assert_array_equal(replica.value("emb"), asyncio.run(shard.pull())[1]["emb"])
        assert not np.array_equal(replica.value("emb")[0], row0)  # row 0 moved without a gradient


@needs_local_link
def test_the_shards_variables_are_its_shared_memory_and_an_install_waits_out_an_update():
    """The shard's session keeps its variables in the shared memory workers copy from (no copy per
    update): what its optimizer writes is there, and what is written there is what it updates. An
    install that starts while an update runs (the sequence count odd) waits for its end and gets
    its version, or after its patience copies nothing and says so."""
    with _serving(lambda: tf.train.GradientDescentOptimizer(0.5)) as (shard, specs, open_link):
        link, _ = open_link()
        shared_w = link.weights.arrays(link.places)["w"]
        link.start_push(0, "t0", 0, 0, {"emb": (np.ones((1, WIDTH)), np.array([0])), "w": np.array([2.0, 4.0])})
        link.finish_push()
        np.testing.assert_array_equal(shared_w, [0.0, -3.0])
        shared_w[...] = [10.0, 20.0]  # (only a test writes there: the shard's update reads it)
        link.start_push(0, "t0", 1, 1, {"emb": (np.ones((1, WIDTH)), np.array([0])), "w": np.array([2.0, 4.0])})
        link.finish_push()
        np.testing.assert_array_equal(asyncio.run(shard.pull())[1]["w"], [9.0, 18.0])
        np.testing.assert_array_equal(shared_w, [9.0, 18.0])

        replica, done = _Replica(specs), []
        shard._endpoint.begin_write()
        assert replica.install(link, None, patience=0.05) is None  # (a worker's loop goes on, and tries later)
        np.testing.assert_array_equal(replica.value("w"), [0.0, 0.0])
        waiter = threading.Thread(target=lambda: done.append(replica.install(link, None)))
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not done
        shard._endpoint.end_write(7)
        waiter.join(10)
        assert done and done[0][0] == 7
        np.testing.assert_array_equal(replica.value("w"), [9.0, 18.0])


@needs_local_link
def test_an_update_waits_for_a_copy_under_way_and_not_for_a_worker_gone(monkeypatch):
    """A shard's update that would start under a worker's copy of the weights waits for the copy's
    end, so the copy is not torn and taken again; a mark its worker left (killed mid-copy) holds an
    update back READER_WAIT seconds at most."""
    with _serving(lambda: tf.train.GradientDescentOptimizer(0.5)) as (shard, specs, open_link):
        link, _ = open_link()
        replica, copying, release, writes, begun = _Replica(specs), threading.Event(), threading.Event(), [], []

        def write(name, value):
            writes.append(name)
            copying.set()
            release.wait(10)
            replica.sess.write_variable(replica.vars[name], value)

        monkeypatch.setattr(transport, "READER_WAIT", 10.0)
        done = []
        copier = threading.Thread(target=lambda: done.append(link.install(None, write, None, None)))
        copier.start()
        assert copying.wait(10)
        writer = threading.Thread(target=lambda: begun.append(shard._endpoint.begin_write()))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and link.weights.header[0] % 2 == 0  # the update waits
        release.set()
        copier.join(10)
        writer.join(10)
        assert done and done[0][0] == 0 and sorted(writes) == ["emb", "w"]  # one copy, not torn
        assert begun and link.weights.header[0] % 2 == 1
        shard._endpoint.end_write(0)

        monkeypatch.setattr(transport, "READER_WAIT", 0.05)
        link._slot.header[0] = 1  # a worker killed while copying
        start = time.monotonic()
        shard._endpoint.begin_write()
        assert 0.05 <= time.monotonic() - start < 5 and link.weights.header[0] % 2 == 1
        shard._endpoint.end_write(0)


@needs_local_link
def test_an_install_under_an_update_a_dead_shard_left_fails_instead_of_waiting_forever():
    """A shard killed between begin_write and end_write leaves its weights' count odd for good: the
    worker's install notices the shard's end of the link closed and raises ConnectionError (a
    failure to reach a shard, which the worker's loop recovers from) instead of spinning."""
    with _serving(lambda: tf.train.GradientDescentOptimizer(0.5)) as (shard, specs, open_link):
        link, _ = open_link()
        replica, outcome = _Replica(specs), []

        def install():
            try:
                outcome.append(replica.install(link, None))
            except ConnectionError as e:
                outcome.append(e)

        shard._endpoint.begin_write()
        waiter = threading.Thread(target=install)
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not outcome  # a live shard's update is waited for
        asyncio.run(shard.close())  # its sockets closed, as a dead process's are
        waiter.join(10)
        assert not waiter.is_alive() and isinstance(outcome[0], ConnectionError), outcome
        assert "closed its link" in str(outcome[0]) and "parameter-server shard" not in str(outcome[0])


def test_a_placed_variable_lives_in_its_array_and_cannot_move_once_a_plan_uses_it():
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        step = tf.assign_add(v, [1.0, 1.0, 1.0])
        init = tf.global_variables_initializer()
        other = tf.Variable(np.zeros(2, np.float64), name="other")  # (not in init)
    sess = tf.Session(graph=g)
    buf = np.zeros(64 + 3, np.float32)
    offset = (-buf.ctypes.data % 64) // 4
    home = buf[offset:offset + 3]  # 64-byte aligned
    sess.place_variable(v, home)
    sess.run(init)
    np.testing.assert_array_equal(home, [1.0, 2.0, 3.0])
    sess.run(step)
    np.testing.assert_array_equal(home, [2.0, 3.0, 4.0])
    home[0] = 100.0
    np.testing.assert_array_equal(sess.run(v), [100.0, 3.0, 4.0])
    del buf, home  # the session keeps the memory alive
    np.testing.assert_array_equal(sess.run(step), [101.0, 4.0, 5.0])
    with pytest.raises(RuntimeError, match="variable 'v' is already used by a plan of this session"):
        sess.place_variable(v, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"variable 'other' is float64 of shape \(2,\), the array float32"):
        sess.place_variable(other, np.zeros(2, np.float32))
    buf = np.zeros(8 + 3, np.float64)
    offset = (-buf.ctypes.data % 64) // 8
    with pytest.raises(ValueError, match="64-byte aligned"):
        sess.place_variable(other, buf[offset + 1:offset + 3])
    sess.place_variable(other, buf[offset:offset + 2])  # the session goes on
    sess.run(other.initializer)
    np.testing.assert_array_equal(sess.run(other), [0.0, 0.0])


@needs_local_link
def test_the_local_link_refuses_what_messages_refuse():
    with _serving(lambda: tf.train.GradientDescentOptimizer(0.5)) as (shard, specs, open_link):
        with pytest.raises(errors.InvalidArgumentError, match="refused worker 1: unknown worker or wrong token"):
            open_link(worker=1, token="t0")
        link, _ = open_link()
        link.start_push(0, "t0", 0, 0, {"emb": (np.full((1, WIDTH), np.nan), np.array([0])), "w": np.zeros(2)})
        with pytest.raises(errors.InvalidArgumentError, match=r"refused the push of worker 0, step 0: the gradient of "
                                                              r"'emb' has 3 non-finite values"):
            link.finish_push()
        link.start_push(0, "t0", 0, 0, {"emb": (np.ones((1, WIDTH)), np.array([0])), "w": np.zeros(2)})
        assert link.finish_push()["version"] == 1  # the refused push changed nothing, not even the step
        link.start_push(0, "t0", 0, 1, {"emb": (np.ones((1, WIDTH)), np.array([0])), "w": np.zeros(2)})
        with pytest.raises(errors.InvalidArgumentError, match="a replayed or duplicate push"):
            link.finish_push()
        with pytest.raises(errors.InvalidArgumentError, match=r"row indices outside \[0, 6\)"):
            asyncio.run(shard.push(1, "t1", 0, 0, {"emb": (np.ones((1, WIDTH)), np.array([6])), "w": np.zeros(2)}))


def test_padded_sparse_pushes_equal_numpy_for_row_local_rules():
    """Row counts are padded to a power of two with zero rows repeating the first index; the sparse
    rules sum repeated rows first, so Adagrad's accumulators and weights are NumPy's."""
    shard, specs = _shard(lambda: tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.5))
    emb = np.arange(ROWS * WIDTH, dtype=np.float64).reshape(ROWS, WIDTH)
    acc = np.full_like(emb, 0.5)
    rng = np.random.RandomState(0)
    try:
        for step, rows in enumerate([[1, 2, 3], [0, 5, 4, 2, 1], [3]]):
            values = rng.randn(len(rows), WIDTH)
            asyncio.run(shard.push(0, "t0", step, step, {"emb": (values, np.array(rows)), "w": np.zeros(2)}))
            acc[rows] += values ** 2
            emb[rows] -= 0.5 * values / np.sqrt(acc[rows])
        np.testing.assert_allclose(asyncio.run(shard.pull())[1]["emb"], emb, rtol=1e-12)
    finally:
        asyncio.run(shard.close())


# ------------------------------------------------------------------------- whole runs
V, D, K = 200, 8, 4


def embedding_model(partitions=None):
    ids = tf.placeholder(tf.int64, [None, 3])
    y_ = tf.placeholder(tf.float64, [None, K])
    if partitions:  # TF's partitioned variable: parts embedding/part_0, ... (an embedding too large for one shard)
        emb = tf.get_variable("embedding", [V, D], tf.float64, tf.random_uniform_initializer(-0.1, 0.1, seed=3),
                              partitioner=tf.fixed_size_partitioner(partitions))
    else:
        emb = tf.Variable(tf.random_uniform([V, D], -0.1, 0.1, seed=3, dtype=tf.float64), name="embedding")
    w = tf.Variable(tf.random_uniform([D, K], -1.0, 1.0, seed=4, dtype=tf.float64), name="w")
    logits = tf.matmul(tf.reduce_mean(tf.nn.embedding_lookup(emb, ids), 1), w)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    return {"loss": loss, "inputs": [ids, y_]}


def embedding_data(n=1200, seed=0):
    """Each id belongs to a class (id % K); an example's label is the class of its first id."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, V, size=(n, 3))
    return ids.astype(np.int64), np.eye(K)[ids[:, 0] % K]


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    with local_client(__name__, workers=2, ps_shards=2) as (_, c):
        yield c


@needs_local_link
def test_sparse_and_dense_pushes_train_the_same_weights_and_sparse_moves_less(client):
    """Sync SGD, float64, two workers: pushing the rows touched (and pulling those changed) gives
    the weights of dense pushes, through shared memory and through messages, with a fraction of
    the bytes."""
    kw = dict(workers=2, mode="sync", steps=40, batch_size=20, shuffle=False, client=client, progress=False,
              verbose=False, timeout=30, optimizer=lambda: tf.train.GradientDescentOptimizer(4.0))
    runs = {(sparse, transport_): distributed.train(embedding_model, embedding_data(), sparse=sparse,
                                                    transport=transport_, **kw)
            for sparse in (True, False) for transport_ in ("auto", "messages")}
    dense = runs[False, "messages"]
    for (sparse, transport_), r in runs.items():
        assert r.links == {"shared memory" if transport_ == "auto" else "messages": 2}
        assert r.shard_versions == [40]
        for name in ("embedding", "w"):
            np.testing.assert_allclose(r.weights[name], dense.weights[name], rtol=1e-12, atol=1e-14)
    # A push has at most 20 x 3 of the 200 rows (and their indices); a pull the rows either worker pushed.
    for transport_ in ("auto", "messages"):
        assert runs[True, transport_].bytes_pushed < 0.4 * dense.bytes_pushed
        assert runs[True, transport_].bytes_pulled < 0.8 * dense.bytes_pulled
    assert runs[True, "auto"].final_loss < np.log(K) - 0.1  # it learns (from about log(K))


@needs_local_link
def test_overlapped_async_pushes_merge_while_the_courier_is_busy(client):
    """Async with the courier: every step's gradient reaches the shard once (a push due while the
    last is under way waits and goes with the next, as their mean), so with push_every=1 the
    pushes number at most the steps; the weights come from the shard, the loss falls, and the
    worker waits on the parameter server for a part of its loop only."""
    x, y = blobs(dtype=np.float64)
    report = distributed.train(softmax_model_64, (x, y), workers=2, steps=200, batch_size=20, client=client,
                               progress=False, verbose=False, timeout=30,
                               optimizer=lambda: tf.train.GradientDescentOptimizer(0.5))
    assert report.examples == 2 * 200 * 20 and report.links == {"shared memory": 2}
    assert 2 <= report.pushes <= 400 and report.counts["applied"] == report.pushes == report.shard_versions[0]
    assert report.final_loss < np.log(4) - 0.3  # from zero weights: log(4)
    assert 0.0 <= report.wait_share < 1.0 and "waiting on the parameter server" in str(report)


@needs_local_link
def test_a_run_leaves_no_files_in_shared_memory(client):
    before = set(glob.glob(os.path.join(transport.SHM_ROOT, "pygrad-*")))
    x, y = blobs(dtype=np.float64)
    distributed.train(softmax_model_64, (x, y), workers=2, steps=20, batch_size=20, client=client, progress=False,
                      verbose=False, timeout=30)
    assert set(glob.glob(os.path.join(transport.SHM_ROOT, "pygrad-*"))) <= before


def partitioned_embedding_model():
    return embedding_model(partitions=2)


@needs_local_link
def test_a_partitioned_embedding_is_spread_over_the_shards_and_pushed_sparse(client):
    """tf.fixed_size_partitioner(2): the parts are variables of their own, placed on the two shards
    as replica_device_setter's greedy strategy places them, each pushed as its rows touched; the
    weights equal those of dense pushes."""
    specs = distributed.model_variables(partitioned_embedding_model)
    assert [(s.name, s.shape, s.sparse) for s in specs] == [
        ("embedding/part_0", (100, D), True), ("embedding/part_1", (100, D), True), ("w", (D, K), False)]
    assert [[s.name for s in p] for p in distributed.partition(specs, 2)] == [["embedding/part_0", "w"],
                                                                             ["embedding/part_1"]]
    kw = dict(workers=2, ps_shards=2, mode="sync", steps=30, batch_size=20, shuffle=False, client=client,
              progress=False, verbose=False, timeout=30, optimizer=lambda: tf.train.GradientDescentOptimizer(4.0))
    sparse = distributed.train(partitioned_embedding_model, embedding_data(), **kw)
    dense = distributed.train(partitioned_embedding_model, embedding_data(), sparse=False, **kw)
    assert sparse.shard_versions == dense.shard_versions == [30, 30]
    assert sparse.links == {"shared memory": 4} and sparse.bytes_pushed < 0.4 * dense.bytes_pushed
    for name in ("embedding/part_0", "embedding/part_1", "w"):
        np.testing.assert_allclose(sparse.weights[name], dense.weights[name], rtol=1e-12, atol=1e-14)


def test_bfloat16_bits_round_to_nearest_even_as_ml_dtypes_does():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.RandomState(0)
    x = (rng.randn(100_000) * np.exp(rng.randn(100_000) * 20)).astype(np.float32)
    x = np.concatenate([x[np.isfinite(x)], np.float32([3.4e38, -3.4e38, 1e-40, -0.0, 0.0, 1.0 + 2 ** -8])])
    np.testing.assert_array_equal(transport.from_bfloat16_bits(transport.to_bfloat16_bits(x)),
                                  x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_bfloat16_compression_halves_the_pushed_bytes_and_stays_near_exact_pushes(client):
    """Sync SGD, float32: pushes rounded to bfloat16 carry half the bytes, and the weights stay
    within bfloat16's rounding of the exact run's (through shared memory and messages alike). A
    non-finite gradient is refused on the worker, before it is rounded."""
    x, y = blobs()
    kw = dict(workers=2, mode="sync", steps=40, batch_size=20, shuffle=False, client=client, progress=False,
              verbose=False, timeout=30, optimizer=lambda: tf.train.GradientDescentOptimizer(0.5))
    exact = distributed.train(softmax_model, (x, y), **kw)
    for transport_ in ("auto", "messages"):
        rounded = distributed.train(softmax_model, (x, y), compression="bfloat16", transport=transport_, **kw)
        assert rounded.bytes_pushed * 2 == exact.bytes_pushed and rounded.shard_versions == [40]
        for name in ("W", "b"):
            scale = np.abs(exact.weights[name]).max()
            assert np.abs(rounded.weights[name] - exact.weights[name]).max() < 2e-2 * scale
            assert not np.array_equal(rounded.weights[name], exact.weights[name])
    x[30, 2] = np.nan
    with pytest.raises(distributed.WorkerError, match=r"worker 0, step 1: the gradient of 'W' has \d+ non-finite"):
        distributed.train(softmax_model, (x, y), compression="bfloat16", **dict(kw, workers=1))
    with pytest.raises(ValueError, match="compression must be None or 'bfloat16'"):
        distributed.train(softmax_model, (x, y), compression="float16")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
def test_non_finite_counts_every_nan_and_infinity(dtype):
    values = np.zeros((70000, 3), dtype)
    assert transport.non_finite("w", values) is None
    assert transport.non_finite("w", values[:, 1]) is None  # strided: NumPy's check
    values[69999, 2], values[5, 0] = np.inf, np.nan
    assert transport.non_finite("w", values) == \
        "the gradient of 'w' has 2 non-finite values (NaN or infinity) of 210000"
    assert transport.non_finite("w", values[:, 2]).startswith("the gradient of 'w' has 1 non-finite")
