"""More graphs for tests/test_graph_def_export.py (each exported, run by TensorFlow and compared
with pygrad's run): sparse tensors and their gradients, string ops, lookups of strings."""
import numpy as np

import pygrad as tf

IDS = np.array([[0, 0], [0, 2], [1, 1], [3, 0], [3, 1], [3, 3]], np.int64)
VALS = np.array([0.5, -1.0, 2.0, 1.5, -0.25, 3.0], np.float32)


def _grads(ys, x):
    return [g for g in tf.gradients([tf.reduce_sum(y * y) for y in ys], x) if g is not None]


def _bucketize(x, boundaries):
    from pygrad.ops.math_ops import bucketize
    return bucketize(x, boundaries)


def sp_ids():
    return tf.SparseTensor(IDS, tf.constant([4, 1, 0, 2, 4, 3], tf.int64), [5, 4])


def _sparse(p):
    v = p(VALS)
    sp = tf.SparseTensor(IDS, v, [5, 4])
    other = tf.SparseTensor([[0, 2], [1, 1], [2, 2]], v[1:4] * -1.0, [5, 4])
    dense = p(np.arange(20, dtype=np.float32).reshape(5, 4))
    summed = tf.sparse_add(sp, other, 0.1)
    filled, empty = tf.sparse_fill_empty_rows(sp, -2.0)
    reordered = tf.sparse_reorder(tf.SparseTensor([[3, 1], [0, 2], [3, 0]], v[:3], [4, 3]))
    values = [tf.sparse_tensor_to_dense(sp, -1.0), tf.sparse_to_dense([1, 3], [5], 7, default_value=-1),
              summed.values, summed.indices, tf.sparse_add(dense, sp), filled.values, filled.indices, empty,
              reordered.values, reordered.indices, tf.sparse_reshape(sp, [2, -1, 5]).indices,
              tf.sparse_concat(1, [sp, tf.SparseTensor([[0, 0]], v[:1], [5, 2])]).indices,
              tf.sparse_reduce_sum(sp, 1), tf.sparse_tensor_dense_matmul(sp, dense[:4, :3]),
              tf.sparse_tensor_dense_matmul(sp, dense, adjoint_a=True),
              (sp * dense[0]).values, (sp / (dense + 1.0)).values,
              tf.sparse_segment_sum(dense, [0, 2, 2, 1], [0, 0, 2, 3]),
              tf.sparse_segment_mean(dense, [0, 2, 2, 1], [0, 0, 2, 3]),
              tf.sparse_segment_sqrt_n(dense, [0, 2], [1, 1], num_segments=4),
              tf.sparse_segment_sqrt_n(dense, [0, 2, 1], [0, 1, 1]),
              tf.sparse_segment_sum(dense, [0, 2], [0, 2], num_segments=3),
              tf.sparse_segment_mean(dense, [0, 2], [0, 2], num_segments=3),
              tf.invert_permutation(tf.constant([2, 0, 1])),
              _bucketize(v, [0.0, 1.0, 2.5])]
    crossed = tf.sparse.cross_hashed([sp_ids(), tf.constant([[b"a"], [b"b"], [b"c"], [b"d"], [b"e"]])], 50)
    crossed_strings = tf.sparse.cross([sp_ids(), tf.constant([[b"a"], [b"b"], [b"c"], [b"d"], [b"e"]])])
    values += [crossed.indices, crossed.values, crossed_strings.values]
    floats = [t for t in values if t.dtype == tf.float32]
    with tf.control_dependencies([tf.Assert(tf.reduce_all(v < 10.0), [v])]):
        checked = tf.identity(v)
    return values + _grads(floats, [v, dense]) + [checked]


def _strings(p):
    words = p(np.array([b"Hello, World", b"  pad\t", b"caf\xc3\xa9"], object))
    split = tf.string_split(words, delimiter=" ,")
    split2 = tf.strings.split(words)
    return [tf.as_string(p(np.float32([1.5, -2.25])), precision=2), tf.string_join([words, words], separator="|"),
            tf.strings.length(words), tf.strings.length(words, unit="UTF8_CHAR"), tf.substr(words, 1, 3),
            tf.string_strip(words), tf.strings.lower(words), tf.strings.upper(words),
            tf.regex_replace(words, "[aeiou]", "_"), tf.regex_replace(words, p(np.array(b"l+", object)), "L"),
            tf.strings.regex_full_match(words, ".*o.*"), tf.strings.regex_full_match(words, p(np.array(b"c.*", object))),
            tf.reduce_join(words, 0, separator="/"), tf.strings.format("x={}", [p(np.int32(3))]),
            tf.string_to_hash_bucket_fast(words, 7), tf.string_to_hash_bucket_strong(words, 7, [1, 2]),
            tf.string_to_hash_bucket(words, 7), tf.fingerprint(words),
            split.indices, split.values, split.dense_shape, split2.values, tf.gather(words, [2, 0]),
            tf.gather_nd(words, [[2], [0]])]


MORE_CASES = {"sparse": _sparse, "strings": _strings}
