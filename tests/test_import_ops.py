"""Each TF op type pygrad imports, from a graph TensorFlow builds: the op and the gradient ops TF
writes for it (tf.gradients), imported with tf.import_graph_def, give TF's values. The cases are
one table; a last test checks that every TF type the op-identity table names imports, or is in
NOT_IMPORTED with its reason."""
import numpy as np
import pytest

import pygrad
from pygrad import import_control_flow
from pygrad.import_ops import builder
from pygrad.op_identity import TABLE

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

R = np.random.RandomState(0)
X = R.uniform(0.2, 2.0, (4, 6)).astype(np.float32)  # positive, for log, sqrt, pow
S = R.randn(4, 6).astype(np.float32)
IMG = R.randn(2, 6, 6, 3).astype(np.float32)


def _unary(fn):
    return lambda x, s: fn(s)


# name: fn(x, s) of two float32 [4, 6] placeholders (x > 0) -> a tensor; gradients are taken of
# float outputs with respect to both.
CASES = {
    **{n: _unary(getattr(tf1.math, n)) for n in ("negative", "abs", "square", "sign", "exp", "sin", "cos", "floor",
                                                 "ceil", "round", "sigmoid", "tanh", "reciprocal", "is_nan",
                                                 "is_inf", "is_finite", "softplus", "softsign")},
    **{n: (lambda f: lambda x, s: f(x))(getattr(tf1.math, n)) for n in ("log", "log1p", "sqrt", "rsqrt")},
    **{n: _unary(getattr(tf1.nn, n)) for n in ("relu", "relu6", "elu", "selu", "leaky_relu", "softmax",
                                               "log_softmax", "l2_loss")},
    **{n: (lambda f: lambda x, s: f(s, x[0]))(getattr(tf1.math, n)) for n in (
        "add", "subtract", "multiply", "truediv", "floordiv", "floormod", "maximum", "minimum",
        "squared_difference", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal")},
    "pow": lambda x, s: tf1.pow(x, s),
    "add_n": lambda x, s: tf1.add_n([x, s, x * s]),
    "logical": lambda x, s: tf1.logical_or(tf1.logical_and(s > 0, x > 1), tf1.logical_not(s < -1)),
    "matmul": lambda x, s: tf1.matmul(x, s, transpose_b=True),
    "matmul_ta": lambda x, s: tf1.matmul(x, s, transpose_a=True),
    "batch_matmul": lambda x, s: tf1.matmul(tf1.reshape(x, [2, 2, 6]), tf1.reshape(s, [2, 6, 2])),
    "sum": lambda x, s: tf1.reduce_sum(s, axis=1),
    "mean_keep": lambda x, s: tf1.reduce_mean(s, axis=[0], keepdims=True),
    "max": lambda x, s: tf1.reduce_max(s, axis=0),
    "min": lambda x, s: tf1.reduce_min(s),
    "prod": lambda x, s: tf1.reduce_prod(x, axis=1),
    "all_any": lambda x, s: tf1.logical_and(tf1.reduce_all(s > -3, axis=1), tf1.reduce_any(s > 1, axis=1)),
    "argmax": lambda x, s: tf1.argmax(s, axis=1),
    "argmin": lambda x, s: tf1.argmin(s, axis=0, output_type=tf1.int32),
    "reshape_dynamic": lambda x, s: tf1.reshape(s, [tf1.shape(x)[0], 3, -1]),
    "expand_squeeze": lambda x, s: tf1.squeeze(tf1.expand_dims(s, 1), [1]),
    "transpose": lambda x, s: tf1.transpose(tf1.reshape(s, [2, 2, 6]), [2, 0, 1]),
    "tile": lambda x, s: tf1.tile(s, [2, 3]),
    "concat": lambda x, s: tf1.concat([x, s, x], axis=1),
    "stack_unstack": lambda x, s: tf1.stack(tf1.unstack(s, axis=1)[::-1], axis=0),
    "split": lambda x, s: tf1.split(s, 3, axis=1)[1] * tf1.split(x, [1, 3, 2], axis=1)[2][:, :1],
    "gather": lambda x, s: tf1.gather(s, [3, 0, 0, 2]) + tf1.gather(x, [1, 5, 0, 2, 2, 1], axis=1)[0],
    "one_hot": lambda x, s: tf1.one_hot(tf1.argmax(s, axis=1), 6, 2.0, -1.0) * s,
    "where": lambda x, s: tf1.where(s > 0, x, s),
    "where_v2": lambda x, s: tf1.where_v2(s > 0, x, 0.5),
    "strided_slice": lambda x, s: s[1:, ::2] * x[:-1, 1::2],
    "shrink_slice": lambda x, s: s[2] + x[:, 3][0],
    "slice": lambda x, s: tf1.slice(tf1.reshape(s, [4, 6]), [1, 2], [2, -1]),
    "pad": lambda x, s: tf1.pad(s, [[1, 0], [2, 1]]),
    "pad_value": lambda x, s: tf1.pad(s, [[1, 0], [2, 1]], constant_values=3.0),
    "mirror_pad": lambda x, s: tf1.pad(s, [[1, 1], [2, 2]], mode="REFLECT"),
    "reverse": lambda x, s: tf1.reverse(s, [1]),
    "cumsum": lambda x, s: tf1.cumsum(s, axis=1, exclusive=True),
    "cumprod": lambda x, s: tf1.cumprod(x, axis=0, reverse=True),
    "top_k": lambda x, s: tf1.nn.top_k(tf1.reshape(s, [4, 6]), 3).values,  # its gradient needs the batch size
    "in_top_k": lambda x, s: tf1.nn.in_top_k(s, tf1.constant([0, 1, 2, 3]), 2),
    "scatter_nd": lambda x, s: tf1.scatter_nd([[1], [3]], s[:2], [5, 6]),
    "segment_sum": lambda x, s: tf1.math.segment_sum(s, [0, 0, 1, 2]),
    "unsorted_segment_sum": lambda x, s: tf1.math.unsorted_segment_sum(s, [2, 0, 2, 1], 4),
    "range_of_values": lambda x, s: tf1.cast(tf1.range(tf1.cast(tf1.reduce_sum(x), tf1.int32), 0, -3), tf1.float32),
    "range_fill": lambda x, s: tf1.cast(tf1.range(tf1.shape(s)[1]), tf1.float32) + tf1.fill([4, 6], 2.0) * s,
    "zeros_ones_like": lambda x, s: tf1.zeros_like(s) + tf1.ones_like(x) * s,
    "cast": lambda x, s: tf1.cast(tf1.cast(s * 3, tf1.int32), tf1.float32),
    "shape_size_rank": lambda x, s: tf1.cast(tf1.size(s) + tf1.rank(s) + tf1.shape(s)[1], tf1.float32) * s,
    "softmax_xent": lambda x, s: tf1.nn.softmax_cross_entropy_with_logits_v2(labels=tf1.nn.softmax(x), logits=s),
    "sparse_xent": lambda x, s: tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 5, 2, 1], logits=s),
    "matrix_inverse": lambda x, s: tf1.linalg.inv(tf1.reshape(s[:, :4], [4, 4]) + 4 * np.eye(4, dtype=np.float32)),
    "determinant": lambda x, s: tf1.linalg.det(tf1.reshape(s[:, :4], [4, 4])),
    "check_numerics": lambda x, s: tf1.debugging.check_numerics(s, "bad"),
    "conv2d": lambda x, s: tf1.nn.conv2d(tf1.reshape(tf1.tile(s, [3, 3]), [2, 6, 6, 3]),
                                         tf1.reshape(x[:3, :4] * x[1:, :4], [2, 2, 3, 1]), [1, 2, 1, 1], "SAME"),
    "conv2d_transpose": lambda x, s: tf1.nn.conv2d_transpose(tf1.reshape(tf1.tile(s, [3, 1]), [2, 2, 3, 6]),
                                                             tf1.reshape(tf1.tile(x, [1, 4]), [2, 2, 4, 6]),
                                                             [2, 4, 6, 4], [1, 2, 2, 1], "SAME"),
    "depthwise": lambda x, s: tf1.nn.depthwise_conv2d(tf1.reshape(tf1.tile(s, [3, 3]), [2, 6, 6, 3]),
                                                      tf1.reshape(tf1.tile(x, [1, 2])[:3, :12], [2, 2, 3, 3]),
                                                      [1, 1, 1, 1], "VALID"),
    "pools": lambda x, s: tf1.nn.max_pool(tf1.reshape(tf1.tile(s, [3, 3]), [2, 6, 6, 3]), [1, 2, 2, 1],
                                          [1, 2, 2, 1], "SAME") + tf1.nn.avg_pool(
        tf1.reshape(tf1.tile(x, [3, 3]), [2, 6, 6, 3]), [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    "bias_add": lambda x, s: tf1.nn.bias_add(s, x[0]),
}


def _freeze(outputs_fn):
    tf1.disable_v2_behavior()
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf1.float32, [None, 6], name="x")
        s = tf1.placeholder(tf1.float32, [None, 6], name="s")
        y = tf1.identity(outputs_fn(x, s), name="y")
        fetches = ["y"]
        if y.dtype.is_floating:
            grads = tf1.gradients(tf1.reduce_sum(y * tf1.sin(y)), [x, s])
            fetches += [tf1.identity(gr, name=f"grad{i}").op.name for i, gr in enumerate(grads) if gr is not None]
        sess = tf1.Session(graph=g)
        want = sess.run([f + ":0" for f in fetches], {x: X, s: S})
        assert all(np.all(np.isfinite(w)) for w in want if w.dtype.kind == "f")
        frozen = tf1.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), fetches)
    return frozen.SerializeToString(), fetches, want


@pytest.mark.parametrize("case", sorted(CASES))
def test_imported_op_and_its_gradients_give_tf_values(case):
    data, fetches, want = _freeze(CASES[case])
    names = {n.name for n in pygrad.GraphDef.FromString(data).node}
    feed = {f"{k}:0": v for k, v in (("x", X), ("s", S)) if k in names}  # freezing drops an unused input
    with pygrad.Graph().as_default():
        pygrad.import_graph_def(data, name="")
        got = pygrad.Session().run([f + ":0" for f in fetches], feed)
    for name, w, g in zip(fetches, want, got):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=f"{case}: {name}")


# TF types the op-identity table names that import does not build, and why.
NOT_IMPORTED = {
    "If": "functional control flow (TF 2's cond_v2): its branches are functions in the GraphDef's library",
    "While": "functional control flow (TF 2's while_v2): its condition and body are library functions",
    "IteratorGetNext": "a tf.data iterator: the dataset is a library function",
    "MakeIterator": "a tf.data iterator: the dataset is a library function",
    "IteratorToStringHandle": "a tf.data iterator's handle: the dataset is a library function",
    "PyFunc": "a Python function, which a GraphDef cannot hold",
    "PyFuncStateless": "a Python function, which a GraphDef cannot hold",
    "PrintV2": "its string input comes from StringFormat, a string op pygrad does not run",
    "Multinomial": "a random op whose stream is not TF's; not yet mapped",
    "RandomShuffle": "a random op whose stream is not TF's; not yet mapped",
    "UniformCandidateSampler": "sampling ops are not yet mapped",
    "LogUniformCandidateSampler": "sampling ops are not yet mapped",
    "TileGrad": "not written by TF 1.15's gradients (Tile's gradient is Reshape and Sum)",
    "SparseApplyCenteredRMSProp": "not yet mapped",
    "ParseExampleV2": "string and Example ops are not yet mapped (its keys are string inputs in TF)",
    "ParseSequenceExampleV2": "not yet mapped (its keys are string inputs in TF)",
    "AddSparseToTensorsMap": "a map of the session, which tf.train.batch creates in Python; not yet mapped",
    "AddManySparseToTensorsMap": "a map of the session, which tf.train.batch creates in Python; not yet mapped",
    "TakeManySparseFromTensorsMap": "a map of the session, which tf.train.batch creates in Python; not yet mapped",
    **{t: "a lookup table: its handle is a resource (HashTableV2); not yet mapped" for t in (
        "InitializeTableV2", "InitializeTableFromTextFileV2", "LookupTableFindV2", "LookupTableSizeV2")},
    "DecodeCSV": "not yet mapped (its defaults are a list input of several types)",
    "SparseCross": "not yet mapped (four list inputs, two of several types)",
    **{t: "a queue or reader op: its inputs are resource handles (FIFOQueueV2, TextLineReaderV2, ...), which the "
          "import does not build" for t in ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                                            "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2",
                                            "QueueIsClosedV2", "ReaderReadV2", "ReaderReadUpToV2",
                                            "ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2",
                                            "ReaderResetV2")},
    "CountUpTo": "its input is a reference to a variable; not yet mapped",
}


def test_every_table_type_imports_or_is_listed():
    types = {t for e in TABLE.values() if e.type for t in (e.type,) + e.also}
    missing = sorted(t for t in types if builder(t) is None and t not in import_control_flow.CONTROL_FLOW_TYPES
                     and t not in NOT_IMPORTED)
    assert not missing, f"TF op types of op_identity.TABLE that import_graph_def neither builds nor lists: {missing}"
    stale = sorted(t for t in NOT_IMPORTED if builder(t) is not None)
    assert not stale, f"listed as not imported, but imported: {stale}"
