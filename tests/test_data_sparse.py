"""SparseTensor components in tf.data, against TensorFlow: Examples with VarLenFeatures parsed in
Dataset.map, batched (the position in the batch first, the largest dense shape), mapped again and
read through one-shot, initializable and feedable iterators give TF's values and classes."""
import numpy as np
import pytest

import pygrad as tf


def _records(m, path):
    t = m.train
    with m.io.TFRecordWriter(path) as w:
        for i in range(7):
            feats = {"ids": t.Feature(int64_list=t.Int64List(value=[(5 * i + j) % 9 for j in range(i % 4)])),
                     "words": t.Feature(bytes_list=t.BytesList(value=[b"w%d" % j for j in range(i % 3)])),
                     "y": t.Feature(float_list=t.FloatList(value=[i * 0.5]))}
            w.write(t.Example(features=t.Features(feature=feats)).SerializeToString())


def _pipeline(m, path):
    spec = {"ids": m.VarLenFeature(m.int64), "words": m.VarLenFeature(m.string), "y": m.FixedLenFeature([], m.float32)}
    ds = m.data.TFRecordDataset(path).map(lambda s: m.parse_single_example(s, spec))
    batched = ds.batch(3).map(lambda x: {"ids": x["ids"], "dense": m.sparse_tensor_to_dense(x["ids"], -1),
                                         "words": x["words"], "y": x["y"] * 2.0})
    return ds, batched


def _values(m, path, how):
    with m.Graph().as_default(), m.Session() as s:
        ds, batched = _pipeline(m, path)
        classes = {k: v.__name__ for k, v in batched.output_classes.items()}
        if how == "feedable":
            handle = m.placeholder(m.string, [])
            it = m.data.Iterator.from_string_handle(handle, batched.output_types, batched.output_shapes,
                                                    batched.output_classes)
            source = batched.make_one_shot_iterator()
            feed = {handle: s.run(source.string_handle())}
        elif how == "initializable":
            it = batched.make_initializable_iterator()
            s.run(it.initializer)
            feed = None
        else:
            it = batched.make_one_shot_iterator()
            feed = None
        nxt = it.get_next()
        out = []
        while True:
            try:
                out.append(s.run(nxt, feed))
            except m.errors.OutOfRangeError:
                break
    return out, classes


@pytest.mark.parametrize("how", ["one_shot", "initializable", "feedable"])
def test_sparse_components_batch_and_iterate_as_tensorflows(tf_peer, tmp_path, how):
    path = str(tmp_path / "examples.tfrecord")
    _records(tf, path)
    ours, our_classes = _values(tf, path, how)
    theirs, their_classes = _values(tf_peer, path, how)
    assert our_classes == their_classes
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert sorted(a) == sorted(b)
        for k in a:
            for x, y in zip(a[k], b[k]) if isinstance(b[k], tuple) else [(a[k], b[k])]:
                np.testing.assert_array_equal(x, y, err_msg=k)


def test_sparse_components_refused_where_pygrad_cannot_take_them(tmp_path):
    path = str(tmp_path / "examples.tfrecord")
    _records(tf, path)
    ds, batched = _pipeline(tf, path)
    with pytest.raises(TypeError, match="padded_batch: pygrad pads dense components only"):
        ds.padded_batch(2)
    with pytest.raises(TypeError, match="unbatch: pygrad unbatches dense components only"):
        batched.unbatch()
