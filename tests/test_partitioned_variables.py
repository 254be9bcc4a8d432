"""Partitioned variables against TensorFlow (tensorflow.compat.v1, the tf_peer fixture), built side
by side: the partitioners' splits, the parts' names, shapes and slices, the slots' checkpoint
names, a model on partitioned weights and embeddings trained in both (pygrad starts from TF's
checkpoint, TF continues from pygrad's, through the .meta too), and restores across different
partitionings; then the checkpoint format's slice keys and the errors."""
import os

import numpy as np
import pytest

import pygrad as tf
from pygrad.train import checkpoint_bundle

PARTITIONERS = [
    ("fixed_size_partitioner", (3,), {}, [7, 10]),
    ("fixed_size_partitioner", (4,), {"axis": 1}, [3, 6]),
    ("fixed_size_partitioner", (9,), {}, [5, 2]),  # more shards than rows: one per row
    ("min_max_variable_partitioner", (5,), {"min_slice_size": 256}, [100, 4]),
    ("min_max_variable_partitioner", (0,), {}, [10, 4]),  # the canned estimators' default: one part
    ("variable_axis_size_partitioner", (700,), {}, [200, 3]),
    ("variable_axis_size_partitioner", (64,), {"max_shards": 2}, [40, 8]),
]


def _describe(m, name, args, kwargs, shape):
    with m.Graph().as_default():
        partitioner = getattr(m, name)(*args, **kwargs)
        with m.variable_scope("outer", partitioner=partitioner):
            v = m.get_variable("v", shape=shape)
        scalar = m.get_variable("scalar", shape=[], partitioner=partitioner)  # not partitioned
        return ([(p.name, p.shape.as_list(), p._save_slice_info.spec, p._save_slice_info.full_name) for p in v],
                type(v).__name__, v._get_partitions(), scalar.name, [x.name for x in m.trainable_variables()])


@pytest.mark.parametrize("name,args,kwargs,shape", PARTITIONERS)
def test_partitions_names_and_slices_as_tensorflow(tf_peer, name, args, kwargs, shape):
    assert _describe(tf, name, args, kwargs, shape) == _describe(tf_peer, name, args, kwargs, shape)


def _model(m, rows=200, embed=True):
    """A wide-and-deep toy: an embedding on a partitioned table (looked up 'mod' over its parts, as
    TF does; left out with embed=False), a partitioned dense kernel used as a tensor (the
    concatenation), Adam."""
    ids = m.placeholder(m.int64, [None], name="ids")
    x = m.placeholder(m.float32, [None, 6], name="x")
    y = m.placeholder(m.float32, [None, 1], name="y")
    with m.variable_scope("model", partitioner=m.fixed_size_partitioner(3), use_resource=False):  # TF1's variables
        table = m.get_variable("table", shape=[rows, 4])
        kernel = m.get_variable("kernel", shape=[10, 1])
        with m.variable_scope("head", partitioner=m.min_max_variable_partitioner(2, min_slice_size=16)):
            bias = m.get_variable("bias", shape=[1], initializer=m.zeros_initializer())
    features = m.concat([m.nn.embedding_lookup(table, ids) if embed else m.tile(m.zeros_like(x[:, :1]), [1, 4]), x], 1)
    loss = m.reduce_mean(m.square(m.matmul(features, kernel) + bias - y))
    with m.variable_scope("train"):
        step = m.train.AdamOptimizer(0.05).minimize(loss)
    return loss, step


def _batches(n, rows=200):
    rng = np.random.default_rng(3)
    for _ in range(n):
        ids = rng.integers(0, rows, 16)
        x = rng.standard_normal((16, 6)).astype(np.float32)
        yield ids, x, (np.sin(ids / 7.0)[:, None] + x[:, :1]).astype(np.float32)


def _train(m, restore=None, save=None, meta=False, batches=(), embed=True):
    if save:
        os.makedirs(os.path.dirname(save), exist_ok=True)
    graph = m.Graph()
    with graph.as_default():
        if meta:
            saver = m.train.import_meta_graph(restore + ".meta")
            loss, step = graph.get_tensor_by_name("Mean:0"), graph.get_operation_by_name("train/Adam")
        else:
            loss, step = _model(m, embed=embed)
            saver = m.train.Saver()
        with m.Session() as s:
            if restore:
                saver.restore(s, restore)
            else:
                s.run(m.global_variables_initializer())
            losses = [s.run([loss, step], {"ids:0": i, "x:0": x, "y:0": y})[0] for i, x, y in batches]
            names = sorted(n for n, _ in m.train.list_variables(save)) if save and saver.save(s, save) else None
    return np.array(losses), names


def test_training_crosses_both_ways_with_the_slots_checkpoint_names(tf_peer, tmp_path):
    data = list(_batches(30))
    _train(tf_peer, batches=data[:10], save=str(tmp_path / "tf" / "m"))
    tf_first, _ = _train(tf_peer, restore=str(tmp_path / "tf" / "m"), batches=data[10:20],
                         save=str(tmp_path / "tf2" / "m"))
    ours, names = _train(tf, restore=str(tmp_path / "tf" / "m"), batches=data[10:20],
                         save=str(tmp_path / "pg" / "m"))
    np.testing.assert_allclose(ours, tf_first, rtol=1e-5)
    _, tf_names = _train(tf_peer, restore=str(tmp_path / "tf2" / "m"), batches=[], save=str(tmp_path / "tf3" / "m"))
    # the whole variables and the slots' TF names: 'model/kernel/art_0/Adam' (TF's arithmetic on the
    # slot 'train/model/kernel/part_0/Adam' of the part 'model/kernel/part_0' drops 19 characters)
    assert names == tf_names and "model/kernel/art_0/Adam" in names and "model/table" in names
    theirs, _ = _train(tf_peer, restore=str(tmp_path / "pg" / "m"), batches=data[20:])
    again, _ = _train(tf, restore=str(tmp_path / "pg" / "m"), batches=data[20:])
    np.testing.assert_allclose(again, theirs, rtol=1e-5)
    via_meta, _ = _train(tf_peer, restore=str(tmp_path / "pg" / "m"), batches=data[20:], meta=True)
    np.testing.assert_allclose(via_meta, theirs, rtol=1e-5)


def test_tensorflows_meta_graph_with_partitioned_variables_continues_in_pygrad(tf_peer, tmp_path):
    """TF's .meta (its parts' VariableDefs with their save-slice infos, the Saver's sliced
    RestoreV2) imported; TF's sharded embedding lookup (DynamicPartition, ParallelDynamicStitch)
    is not among the ops pygrad imports, so this model has no embedding."""
    data = list(_batches(20))
    _train(tf_peer, batches=data[:10], save=str(tmp_path / "tf" / "m"), embed=False)
    ours, _ = _train(tf, restore=str(tmp_path / "tf" / "m"), batches=data[10:], meta=True,
                     save=str(tmp_path / "pg" / "m"))
    theirs, _ = _train(tf_peer, restore=str(tmp_path / "tf" / "m"), batches=data[10:], meta=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "pg" / "m.meta"))
        parts = {v.op.name: v._save_slice_info.spec for v in tf.global_variables() if hasattr(v, "_save_slice_info")}
    assert parts["model/kernel/part_2"] == "10 1 7,3:0,1" and parts["train/model/kernel/part_0/Adam"] == "10 1 0,4:0,1"


def _values(m, path, partitioner, shape=(200, 3)):
    """The whole variable 'w', read after restoring path into 'w' made with partitioner (or plain)."""
    with m.Graph().as_default():
        w = m.get_variable("w", shape=list(shape), partitioner=partitioner)
        with m.Session() as s:
            m.train.Saver().restore(s, path)
            return s.run(m.convert_to_tensor(w) if partitioner is None else w.as_tensor())


@pytest.mark.parametrize("saved_by", ["tf", "pygrad"])
def test_restores_across_partitionings(tf_peer, tmp_path, saved_by):
    m = tf_peer if saved_by == "tf" else tf
    path = str(tmp_path / "m")
    with m.Graph().as_default():  # 200 rows in 3 parts: offsets 67 and 134 take two bytes in the slice keys
        w = m.get_variable("w", shape=[200, 3], partitioner=m.fixed_size_partitioner(3))
        with m.Session() as s:
            s.run(m.global_variables_initializer())
            whole = s.run(w.as_tensor())
            m.train.Saver().save(s, path)
    for lib in (tf, tf_peer):
        for partitioner in (None, lib.fixed_size_partitioner(2), lib.fixed_size_partitioner(7)):
            np.testing.assert_array_equal(_values(lib, path, partitioner), whole)
    with tf.Graph().as_default():  # a plain variable's checkpoint into parts
        w = tf.get_variable("w", initializer=whole)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, str(tmp_path / "plain"))
    np.testing.assert_array_equal(_values(tf, str(tmp_path / "plain"), tf.fixed_size_partitioner(4)), whole)
    np.testing.assert_array_equal(_values(tf_peer, str(tmp_path / "plain"), tf_peer.fixed_size_partitioner(4)), whole)


def test_slice_keys_are_tensorflows_ordered_code():
    # keys and signed numbers as TF's ordered_code.cc writes them (the first key and the one-byte codes
    # read off TF's checkpoints; the longer codes by the encoding's length classes, 6, 13 and 20 value
    # bits, which the next test checks against the keys of a TF checkpoint)
    assert checkpoint_bundle.slice_key("s/w", [(3, 2), (0, 10)]) == b"\x00s/w\x00\x01\x01\x02\x83\x82\x80\x8a"
    codes = {0: "80", 63: "bf", 64: "c040", 8191: "dfff", 8192: "e02000", -1: "7f", -64: "40", -65: "3fbf"}
    assert {n: checkpoint_bundle._signed_num_increasing(n).hex() for n in codes} == codes
    assert checkpoint_bundle.slice_key("a\x00", [(0, 1)])[:6] == b"\x00a\x00\xff\x00\x01"


def test_value_initializer_assign_and_create_partitioned_variables(tf_peer):
    def build(m):
        with m.Graph().as_default():
            value = np.arange(12, dtype=np.float32).reshape(6, 2)
            v = m.get_variable("v", shape=[6, 2], initializer=value, partitioner=m.fixed_size_partitioner(4))
            parts = m.create_partitioned_variables([5, 2], [2, 1], m.constant_initializer(1.5), name="legacy")
            assign = v.assign(np.ones((6, 2), np.float32) * 7)
            with m.Session() as s:
                s.run(m.global_variables_initializer())
                before = s.run(v.as_tensor())
                s.run(assign)
                return before, s.run(v.as_tensor()), [p.name for p in parts], s.run(parts), len(v)
    ours, theirs = build(tf), build(tf_peer)
    for a, b in zip(ours, theirs):
        if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(a, b)


def test_reuse_and_errors_as_tensorflow(tf_peer):
    def outcomes(m):
        out = []
        cases = [
            lambda: m.get_variable("p", shape=[4, 2], partitioner=m.fixed_size_partitioner(2)),
            lambda: m.get_variable("p", shape=[4, 2], partitioner=m.fixed_size_partitioner(2)),  # no reuse
            lambda: m.get_variable("p/part_0", shape=[2, 2]),
            lambda: m.get_variable("p", shape=[4, 2]),  # unpartitioned, a partitioned one exists
            lambda: m.get_variable("q", shape=[4, 4], partitioner=lambda shape, dtype: [2, 2]),
            lambda: m.get_variable("r", partitioner=m.fixed_size_partitioner(2)),  # no shape
            lambda: m.get_variable("s", shape=[4], partitioner="two"),
        ]
        with m.Graph().as_default():
            for case in cases:
                try:
                    case()
                    out.append("ok")
                except (ValueError, TypeError) as e:
                    out.append(type(e).__name__ + ": " + str(e).split(".")[0])
            with m.variable_scope("", reuse=True):
                again = m.get_variable("p")  # reuse without the partitioner gives the partitioned one
                out.append([x.name for x in again])
            with m.variable_scope("", reuse=True):
                try:
                    m.get_variable("p", shape=[4, 2], partitioner=m.fixed_size_partitioner(4))
                except ValueError as e:
                    out.append(str(e).split(".")[0])
        return out
    assert outcomes(tf) == outcomes(tf_peer)


def test_slice_keys_equal_tensorflows_in_its_own_checkpoint(tf_peer, tmp_path):
    """The slice keys of a TF checkpoint whose parts start at 0, 8193 and 16386 (one-, two- and
    three-byte codes of their offsets and lengths) are the keys pygrad computes for them."""
    with tf_peer.Graph().as_default():
        tf_peer.get_variable("w", shape=[24579], partitioner=tf_peer.fixed_size_partitioner(3))
        with tf_peer.Session() as s:
            s.run(tf_peer.global_variables_initializer())
            tf_peer.train.Saver().save(s, str(tmp_path / "m"))
    stored = {k for k, _ in checkpoint_bundle.read_table((tmp_path / "m.index").read_bytes(), "m.index")
              if k[:1] == b"\x00"}
    assert stored == {checkpoint_bundle.slice_key("w", [(o, 8193)]) for o in (0, 8193, 16386)}
    np.testing.assert_array_equal(tf.train.load_checkpoint(str(tmp_path / "m")).get_tensor("w").shape, [24579])
