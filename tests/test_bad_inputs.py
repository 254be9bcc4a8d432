"""A catalogue of bad inputs, one table. Each case builds a bad graph (and, for errors found at run
time, runs it) and gives the error class, the op the message must open with (`Type 'name'`, the
house layout "<Type> '<name>': <rule>\\n  op defined at <file>:<line>") and a regex for the rule with
the offending shapes or values. Every error must carry this file's path and the line that built the
op, and the session that saw it must still run a good graph and give the right value afterwards; a
variable it holds must keep its value (nothing half-written). A few cases are values that must not
come out wrong (error None).

The classes are TensorFlow's (tensorflow.compat.v1 in graph mode, TF 2.21): ValueError/TypeError
when the graph is built, tf.errors.* when it runs. Where pygrad finds a problem when the graph is
built that TF finds only when it runs, pygrad raises ValueError (its InvalidArgumentError is a
ValueError too). Comments note where TF behaves otherwise ("TF:")."""
import os
import re
import sys
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

import pygrad as tf

HERE = os.path.abspath(__file__)
_SITE = {}  # what at() saw: the line that builds the op, the graph's ops at that moment


def at(value=None):
    """Records the caller's line (call it on the line that builds the op) and returns value:
    `tf.matmul(a, b, name=at("mm"))`, `y = at(x // 0)`, or `(at(), a + b)` for an op without a name
    argument (the tuple evaluates at() before the op is built)."""
    _SITE["line"] = sys._getframe(1).f_lineno
    _SITE["ops"] = {op.name for op in tf.get_default_graph().get_operations()}
    return value


class Ctx:
    """What a case gets: the session, with the variable `kept` = [1, 2] (not trainable) initialized."""

    def __init__(self, sess, kept):
        self.sess, self.kept = sess, kept
        self.ran = False
        self.after = []

    def run(self, fetches, feed_dict=None):
        self.ran = True
        return self.sess.run(fetches, feed_dict)

    def then(self, fetches, feed_dict, want):
        """After the error, the same session must give `want` for these fetches and a good feed."""
        self.after.append((fetches, feed_dict, want))


class Case(NamedTuple):
    id: str
    build: Callable[[Ctx], object]
    error: type | None  # None: a value that must come out right (the build function checks it)
    op: str | None = None  # regex for "<Type> '<node name>'" opening the message
    match: str = ""  # regex for the rule broken, with the offending shapes or values
    xfail: str | None = None


def fed(build, bad, good=None, want=None):
    """A case found at run time: build() returns the fetch; running it with the feed `bad` raises,
    and afterwards the same session gives `want` for the feed `good`. Feeds are keyed by name."""
    def case(c):
        y = build()
        if good is not None:
            c.then(y, good, want)
        c.run(y, bad)
    return case


def ph(name, dtype=tf.float32, shape=None):
    return tf.placeholder(dtype, shape, name=name)


IAE = tf.errors.InvalidArgumentError
xent = tf.nn.softmax_cross_entropy_with_logits_v2
sparse_xent = tf.nn.sparse_softmax_cross_entropy_with_logits
ONES = np.ones((2, 3), np.float32)


# ---------------------------------------------------------------- cases that need a few lines


def _feed_placeholder_line(dtype, shape, bad):
    def case(c):
        x = tf.placeholder(dtype, shape, name=at("x"))
        y = x * 2
        c.run(y, {x: bad})
    return case


def _missing_feed(c):
    x = tf.placeholder(tf.float32, [2], name=at("x"))
    y = x * 2
    c.then(y, {x: [1., 2.]}, [2., 4.])
    c.run(y)


def _uninitialized(c):
    w = tf.Variable([1., 2.], name=at("w"))
    y = w * 2
    c.run(y)


def _assign_fed_wrong_shape(c):
    x = ph("x", shape=[None])
    a = tf.assign(c.kept, x, name=at("asg"))
    c.then(a, {x: [1., 2.]}, [1., 2.])
    c.run(a, {x: [7., 8., 9.]})


def _assign_from_a_failing_gather(c):
    i = ph("idx", tf.int32, [None])
    a = tf.assign(c.kept, tf.gather(tf.constant([1., 2., 3.]), i, name=at("g")))
    c.then(a, {i: [0, 1]}, [1., 2.])
    c.run(a, {i: [2, 3]})


def _gradients_of_int(c):
    x = tf.constant([1, 2], name="x")
    tf.gradients(tf.reduce_sum(x * x, name="y"), x, name=at("gradients"))


def _minimize_nothing_to_train(c):
    opt = tf.train.GradientDescentOptimizer(0.1)
    opt.minimize(tf.reduce_sum(tf.constant([1., 2.]), name="loss"), name=at("train"))


def _minimize_unconnected(c):
    tf.Variable(1.0, name="w")
    opt = tf.train.GradientDescentOptimizer(0.1)
    opt.minimize(tf.reduce_sum(tf.constant([1., 2.]), name="loss"), name=at("train"))


def _minimize_int_loss(c):
    w = tf.Variable(1.0, name="w")
    opt = tf.train.GradientDescentOptimizer(0.1)
    opt.minimize(tf.cast(w, tf.int32, name="loss"), name=at("train"))


def _closed_session(c):
    y = tf.constant(1.0) + 1
    sess = tf.Session()
    assert sess.run(y) == 2.0
    sess.close()
    sess.run(y)


# ---------------------------------------------------------------- values that must not come out wrong


def _int_beyond_int32_is_int64(c):
    a, b, d, e = tf.constant(2**40), tf.constant([1, 2**40]), tf.constant(2**31), tf.constant(-2**31)
    assert (a.dtype, b.dtype, d.dtype, e.dtype) == (tf.int64, tf.int64, tf.int64, tf.int32)
    got = c.run([a, b, d, e])
    assert type(got[0]) is np.int64 and got[0] == 2**40
    assert got[1].dtype == np.int64 and got[1].tolist() == [1, 2**40]
    assert (got[2], got[3]) == (2**31, -2**31)


def _feed_2_40_into_int64(c):
    x = ph("x", tf.int64, [])
    assert c.run(x + 1, {x: 2**40}) == 2**40 + 1


def _one_hot_index_beyond_int32(c):
    y = tf.one_hot(tf.constant([2**32 + 1, 1], tf.int64), 3)  # not index 1 wrapped around: a row of zeros
    np.testing.assert_array_equal(c.run(y), [[0., 0., 0.], [0., 1., 0.]])


def _one_hot_depth_beyond_int32(c):
    y = tf.one_hot(tf.zeros([0], tf.int32), 2**32 + 3)  # TF: depth wraps to 3, shape (0, 3)
    assert y.shape.as_list() == [0, 2**32 + 3] and c.run(y).shape == (0, 2**32 + 3)


def _static_shapes_beyond_int32(c):
    assert tf.tile(tf.zeros([2]), [2**32 + 2]).shape.as_list() == [2**33 + 4]
    assert tf.zeros([2, 3])[2**32:].shape.as_list() == [0, 3]
    assert c.run(tf.zeros([2, 3])[2**32:]).shape == (0, 3)


CASES = [
    # ------------------------------------------------------------ shapes, when the graph is built
    Case("matmul_inner_dims", lambda c: tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]), name=at("mm")),
         ValueError, "MatMul 'mm'", r"inner dimensions must agree.*\(2, 3\).*\(4, 5\)"),
    Case("matmul_rank_1", lambda c: tf.matmul(tf.zeros([3]), tf.zeros([3, 2]), name=at("mm")),
         ValueError, "MatMul 'mm'", r"rank 2.*\(3,\).*\(3, 2\)"),
    Case("add_shapes", lambda c: tf.add(tf.zeros([2, 3]), tf.zeros([4]), name=at("sum")),
         ValueError, "Add 'sum'", r"broadcasting.*\(2, 3\).*\(4,\)"),
    Case("add_operator_shapes", lambda c: (at(), tf.zeros([2, 3]) + tf.zeros([2])),
         ValueError, "Add 'add'", r"broadcasting.*\(2, 3\).*\(2,\)"),
    Case("add_n_shapes", lambda c: tf.add_n([tf.zeros([2]), tf.zeros([3])], name=at("an")),
         ValueError, "AddN 'an'", r"same shape.*\(2,\).*\(3,\)"),
    Case("concat_dims", lambda c: tf.concat([tf.zeros([2, 3]), tf.zeros([3, 3])], 1, name=at("cat")),
         ValueError, "ConcatV2 'cat'", r"dimension 0 of input 1 \(3, 3\) does not match.*\(2\)"),
    Case("concat_axis", lambda c: tf.concat([tf.zeros([2, 3]), tf.zeros([2, 3])], 2, name=at("cat")),
         ValueError, "ConcatV2 'cat'", r"axis 2 is out of range \[-2, 2\)"),
    Case("concat_axis_2_32_plus_1",  # TF: ValueError "Rank cannot exceed kint32max"
         lambda c: tf.concat([tf.zeros([2, 3]), tf.zeros([2, 3])], 2**32 + 1, name=at("cat")),
         ValueError, "ConcatV2 'cat'", r"axis 4294967297 is out of range \[-2, 2\)"),
    Case("reshape_count", lambda c: tf.reshape(tf.zeros([2, 3]), [4], name=at("rs")),
         ValueError, "Reshape 'rs'", r"6 elements \(2, 3\) into shape \(4,\)"),
    Case("reshape_two_unknowns",  # TF: InvalidArgumentError when run ("Only one input size may be -1")
         lambda c: tf.reshape(tf.zeros([2, 3]), [-1, -1], name=at("rs")),
         ValueError, "Reshape 'rs'", r"at most one dimension may be -1, got \[-1, -1\]"),
    Case("reshape_2_32_plus_6", lambda c: tf.reshape(tf.zeros([6]), [2**32 + 6], name=at("rs")),
         ValueError, "Reshape 'rs'", r"6 elements \(6,\) into shape \(4294967302,\)"),
    Case("conv2d_channels",
         lambda c: tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 4, 8]), [1, 1, 1, 1], "SAME", name=at("conv")),
         ValueError, "Conv2D 'conv'", r"in_channels.*\(1, 5, 5, 3\).*\(3, 3, 4, 8\) \(3 != 4\)"),
    Case("conv2d_rank", lambda c: tf.nn.conv2d(tf.zeros([5, 5, 3]), tf.zeros([3, 3, 3, 8]), 1, "SAME", name=at("conv")),
         ValueError, "Conv2D 'conv'", r"4-D.*\(5, 5, 3\)"),
    Case("conv2d_strides",  # TF: ValueError without the op's name
         lambda c: tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 3, 8]), [1, 1, 1], "SAME", name=at("conv")),
         ValueError, "Conv2D 'conv'", r"strides.*\[1, 1, 1\]"),
    Case("conv2d_padding",
         lambda c: tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 3, 8]), 1, "FULL", name=at("conv")),
         ValueError, "Conv2D 'conv'", r"padding.*'FULL'"),
    Case("conv2d_filter_larger_than_input",
         lambda c: tf.nn.conv2d(tf.zeros([1, 2, 2, 3]), tf.zeros([3, 3, 3, 8]), 1, "VALID", name=at("conv")),
         ValueError, "Conv2D 'conv'", r"VALID.*\(1, 2, 2, 3\).*filter height 3"),
    Case("max_pool_window_larger_than_input",
         lambda c: tf.nn.max_pool(tf.zeros([1, 2, 2, 1]), [1, 3, 3, 1], [1, 1, 1, 1], "VALID", name=at("pool")),
         ValueError, "MaxPool 'pool'", r"window must fit.*\(1, 2, 2, 1\).*window height 3"),
    Case("max_pool_rank",
         lambda c: tf.nn.max_pool(tf.zeros([2, 2, 1]), [1, 2, 2, 1], [1, 1, 1, 1], "VALID", name=at("pool")),
         ValueError, "MaxPool 'pool'", r"4-D.*\(2, 2, 1\)"),
    Case("softmax_xent_shapes",
         lambda c: xent(labels=tf.zeros([2, 4]), logits=tf.zeros([2, 3]), name=at("xent")),
         ValueError, "SoftmaxCrossEntropyWithLogits 'xent'", r"same shape.*\(2, 3\).*\(2, 4\)"),
    Case("sparse_softmax_xent_label_rank",  # TF: ValueError without the op's name
         lambda c: sparse_xent(labels=tf.zeros([2, 3], tf.int32), logits=tf.zeros([2, 3]), name=at("xent")),
         ValueError, "SparseSoftmaxCrossEntropyWithLogits 'xent'", r"labels \[batch\].*\(2, 3\).*\(2, 3\)"),
    Case("softmax_axis",  # TF: InvalidArgumentError when built; pygrad: ValueError, its class for errors found then
         lambda c: tf.nn.softmax(tf.zeros([2, 3]), axis=2, name=at("sm")),
         ValueError, "Softmax 'sm'", r"axis 2 is out of range.*\(2, 3\)"),
    Case("gather_axis", lambda c: tf.gather(tf.zeros([2, 3]), [0], axis=2, name=at("g")),
         ValueError, "GatherV2 'g'", r"axis 2 is out of range \[-2, 2\)"),
    Case("gather_scalar_params", lambda c: tf.gather(tf.constant(1.0), [0], name=at("g")),
         ValueError, "GatherV2 'g'", r"rank at least 1, got a scalar"),
    Case("one_hot_negative_depth", lambda c: tf.one_hot([0], -1, name=at("oh")),
         ValueError, "OneHot 'oh'", r"depth must be at least 0, got -1"),
    Case("one_hot_axis",  # TF: InvalidArgumentError when run ("Expected axis to be -1 or between [0, 2)")
         lambda c: tf.one_hot([0], 3, axis=2, name=at("oh")),
         ValueError, "OneHot 'oh'", r"axis 2 must be in \[-1, 1\] for indices of shape \(1,\)"),
    Case("where_condition_shape",
         lambda c: tf.where(tf.zeros([3], tf.bool), tf.zeros([2, 3]), tf.zeros([2, 3]), name=at("sel")),
         ValueError, "Select 'sel'", r"condition \(3,\) must have the shape of x and y \(2, 3\)"),
    Case("where_xy_shapes",
         lambda c: tf.where(tf.zeros([2], tf.bool), tf.zeros([2, 3]), tf.zeros([2, 2]), name=at("sel")),
         ValueError, "Select 'sel'", r"same shape.*\(2, 3\).*\(2, 2\)"),
    Case("tile_rank", lambda c: tf.tile(tf.zeros([2, 3]), [2], name=at("t")),
         ValueError, "Tile 't'", r"multiples \[2\] must have one entry per dimension of \(2, 3\)"),
    Case("tile_2_62_copies",  # TF: ResourceExhaustedError when run (OOM allocating shape [4611686018427387904])
         lambda c: c.run(tf.tile([1.], [2**62], name=at("t"))),
         MemoryError, "Tile 't'", r"\(4611686018427387904,\).*bytes"),
    Case("zeros_beyond_memory",  # TF: returns 0.0 (its grappler folds the sum of zeros)
         lambda c: c.run(tf.reduce_sum(tf.zeros([2**40, 2**40], name=at("z")))),
         MemoryError, r"\w+ 'z'", r"\(1099511627776, 1099511627776\).*bytes"),
    Case("split_uneven", lambda c: tf.split(tf.zeros([2, 3]), 2, axis=1, name=at("sp")),
         ValueError, "Split 'sp'", r"2 splits do not evenly divide dimension 1 of \(2, 3\)"),
    Case("split_2_32_plus_2", lambda c: tf.split(tf.zeros([2, 4]), 2**32 + 2, axis=1, name=at("sp")),
         ValueError, "Split 'sp'", r"4294967298 splits do not evenly divide dimension 1 of \(2, 4\)"),
    Case("split_axis_2_32_plus_1",  # TF: no error, splits axis 1 (the axis wraps around in int32)
         lambda c: tf.split(tf.zeros([2, 4]), 2, axis=2**32 + 1, name=at("sp")),
         ValueError, "Split 'sp'", r"axis 4294967297 is out of range \[-2, 2\)"),
    Case("split_sizes", lambda c: tf.split(tf.zeros([2, 3]), [1, 1], axis=1, name=at("sp")),
         ValueError, "SplitV 'sp'", r"size_splits \[1, 1\] do not add up to dimension 1 of \(2, 3\)"),
    Case("stack_shapes", lambda c: tf.stack([tf.zeros([2, 3]), tf.zeros([3, 2])], name=at("st")),
         ValueError, "Pack 'st'", r"\(2, 3\) \(input 0\) and \(3, 2\) \(input 1\)"),
    Case("stack_axis", lambda c: tf.stack([tf.zeros([2, 3]), tf.zeros([2, 3])], axis=3, name=at("st")),
         ValueError, "Pack 'st'", r"axis 3 is out of range \[-3, 3\)"),
    Case("stack_axis_2_32_plus_1",
         lambda c: tf.stack([tf.zeros([2, 3]), tf.zeros([2, 3])], axis=2**32 + 1, name=at("st")),
         ValueError, "Pack 'st'", r"axis 4294967297 is out of range \[-3, 3\)"),
    Case("unstack_num", lambda c: tf.unstack(tf.zeros([2, 3]), num=3, name=at("un")),
         ValueError, "Unpack 'un'", r"dimension 0 of \(2, 3\) has size 2, not num=3"),
    Case("unstack_axis",  # TF: ValueError "Argument `axis` = 2 not in range [-2, 2)"
         lambda c: tf.unstack(tf.zeros([2, 3]), axis=2, name=at("un")),
         ValueError, "Unpack 'un'", r"axis 2 is out of range"),
    Case("index_out_of_bounds", lambda c: (at(), tf.zeros([2, 3])[2]),
         ValueError, "StridedSlice 'strided_slice'", r"index 2 is out of bounds for dimension 0 of size 2"),
    Case("index_2_32_plus_1", lambda c: (at(), tf.zeros([2, 3])[2**32 + 1]),
         ValueError, "StridedSlice 'strided_slice'", r"index 4294967297 is out of bounds for dimension 0 of size 2"),
    Case("index_too_many", lambda c: (at(), tf.zeros([2, 3])[1, 2, 0]),
         ValueError, "StridedSlice 'strided_slice'", r"too many indices for a tensor of rank 2"),
    Case("slice_bounds",  # TF: InvalidArgumentError only when run
         lambda c: tf.slice(tf.zeros([2, 3]), [1, 0], [2, -1], name=at("sl")),
         ValueError, "Slice 'sl'", r"begin 1 and size 2 do not fit in size 2 of \(2, 3\)"),
    Case("reduce_axis_2_32_plus_1", lambda c: tf.reduce_sum(tf.zeros([2, 3]), 2**32 + 1, name=at("rsum")),
         ValueError, "Sum 'rsum'", r"axis 4294967297 is out of range for a tensor of rank 2"),
    Case("argmax_axis_2_32_plus_1", lambda c: tf.argmax(tf.zeros([2, 3]), 2**32 + 1, name=at("am")),
         ValueError, "ArgMax 'am'", r"axis 4294967297 is out of range for a tensor of rank 2"),
    Case("expand_dims_axis_2_32_plus_1", lambda c: tf.expand_dims(tf.zeros([2, 3]), 2**32 + 1, name=at("ed")),
         ValueError, "ExpandDims 'ed'", r"axis 4294967297 is out of range for a tensor of rank 2"),
    Case("transpose_perm", lambda c: tf.transpose(tf.zeros([2, 3]), [0, 2], name=at("tr")),
         ValueError, "Transpose 'tr'", r"perm \[0, 2\] is not a permutation of the 2 dimensions of \(2, 3\)"),
    Case("squeeze_a_dimension_not_1", lambda c: tf.squeeze(tf.zeros([2, 3]), [0], name=at("sq")),
         ValueError, "Squeeze 'sq'", r"dimension 0 of shape \(2, 3\): its size is 2, not 1"),
    Case("rank_above_8", lambda c: tf.placeholder(tf.float32, [1] * 9, name=at("p")),  # TF: accepts rank 9
         ValueError, "Placeholder 'p'", r"\(1, 1, 1, 1, 1, 1, 1, 1, 1\) has rank 9, above 8"),

    # ------------------------------------------------------------ dtypes, when the graph is built
    Case("add_float_int", lambda c: tf.add(tf.constant(1.0), tf.constant(1), name=at("sum")),
         TypeError, "Add 'sum'", r"same dtype, got x: float32 and y: int32"),
    Case("add_operator_float_int", lambda c: (at(), tf.constant([1.0]) + tf.constant([1])),
         TypeError, "Add 'add'", r"same dtype, got x: float32 and y: int32"),
    Case("multiply_float32_float64", lambda c: tf.multiply(tf.constant(1.0), tf.constant(np.float64(1)), name=at("m")),
         TypeError, "Mul 'm'", r"same dtype, got x: float32 and y: float64"),
    Case("less_float_int", lambda c: tf.less(tf.constant([1.0]), tf.constant([1]), name=at("ls")),
         TypeError, "Less 'ls'", r"same dtype, got x: float32 and y: int32"),
    Case("add_n_dtypes", lambda c: tf.add_n([tf.zeros([2]), tf.zeros([2], tf.int32)], name=at("an")),
         TypeError, "AddN 'an'", r"one dtype, got float32 and int32"),
    Case("concat_dtypes", lambda c: tf.concat([tf.zeros([2]), tf.zeros([2], tf.int32)], 0, name=at("cat")),
         TypeError, "ConcatV2 'cat'", r"one dtype, got float32 \(input 0\) and int32"),
    Case("bool_add", lambda c: tf.add(tf.constant(True), tf.constant(False), name=at("sum")),
         TypeError, "Add 'sum'", r"x has dtype bool"),
    Case("bool_add_operator", lambda c: (at(), tf.constant([True]) + tf.constant([False])),
         TypeError, "Add 'add'", r"x has dtype bool"),
    Case("bool_negative", lambda c: tf.negative(tf.constant([True]), name=at("n")),
         TypeError, "Neg 'n'", r"x has dtype bool"),
    Case("bool_reduce_mean", lambda c: tf.reduce_mean(tf.constant([True]), name=at("rm")),
         TypeError, "Mean 'rm'", r"x has dtype bool"),
    Case("int_matmul",  # TF: computes it ([[11]]); pygrad's MatMul is float-only
         lambda c: tf.matmul(tf.constant([[1, 2]]), tf.constant([[3], [4]]), name=at("mm")),
         TypeError, "MatMul 'mm'", r"a has dtype int32, expected one of float32, float64"),
    Case("matmul_float_int", lambda c: tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2], tf.int32), name=at("mm")),
         TypeError, "MatMul 'mm'", r"same dtype, got a: float32 and b: int32"),
    Case("int_sqrt", lambda c: tf.sqrt(tf.constant([4]), name=at("sq")),
         TypeError, "Sqrt 'sq'", r"x has dtype int32"),
    Case("float_logical_and", lambda c: tf.logical_and(tf.constant([1.0]), tf.constant([0.0]), name=at("la")),
         TypeError, "LogicalAnd 'la'", r"x has dtype float32, expected one of bool"),
    Case("int_softmax", lambda c: tf.nn.softmax(tf.zeros([2, 3], tf.int32), name=at("sm")),
         TypeError, "Softmax 'sm'", r"logits has dtype int32"),
    Case("conv2d_float32_float64",
         lambda c: tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 3, 8], tf.float64), 1, "SAME", name=at("conv")),
         TypeError, "Conv2D 'conv'", r"input: float32 and filter: float64"),
    Case("sparse_softmax_xent_float_labels",
         lambda c: sparse_xent(labels=tf.zeros([2]), logits=tf.zeros([2, 3]), name=at("xent")),
         TypeError, "SparseSoftmaxCrossEntropyWithLogits 'xent'", r"labels has dtype float32, expected one of int32"),
    Case("gather_float_indices", lambda c: tf.gather(tf.zeros([3]), [0.5], name=at("g")),
         TypeError, "GatherV2 'g'", r"indices must be int32 or int64, got float32"),
    Case("one_hot_float_indices", lambda c: tf.one_hot([0.5], 3, name=at("oh")),
         TypeError, "OneHot 'oh'", r"indices must be int32 or int64, got float32"),
    Case("where_float_condition", lambda c: tf.where(tf.zeros([2]), tf.zeros([2]), tf.zeros([2]), name=at("sel")),
         TypeError, "Select 'sel'", r"condition must be bool, got float32"),
    Case("int_check_numerics", lambda c: tf.check_numerics(tf.constant([1]), "ints", name=at("chk")),
         TypeError, "CheckNumerics 'chk'", r"floating point, got int32"),
    Case("int_l2_loss",  # TF: TypeError, int32 not allowed for L2Loss's parameter 't'
         lambda c: tf.nn.l2_loss(tf.constant([1, 2]), name=at("l2")),
         TypeError, r"(L2Loss|Mul) 'l2'", r"int32"),

    # ------------------------------------------------------------ Python values that fit no dtype
    Case("constant_2_64",  # TF: TypeError "Failed to convert elements of 18446744073709551616 to Tensor"
         lambda c: tf.constant(2**64, name=at("c")),
         TypeError, "Const 'c'", r"18446744073709551616"),
    Case("constant_2_40_as_int32",  # TF: no error, the value wraps to 0
         lambda c: tf.constant(2**40, dtype=tf.int32, name=at("c")),
         ValueError, "Const 'c'", r"1099511627776 does not fit int32"),
    Case("int32_plus_2_40",  # TF: no error, 2**40 wraps to 0 in int32 ([1] + 2**40 gives [1])
         lambda c: tf.add(tf.constant([1]), 2**40, name=at("sum")),
         ValueError, "Add 'sum'", r"1099511627776 does not fit int32"),
    # TF: InvalidArgumentError "Shape output type is 32-bit but dim 0 is 2147483648"
    Case("shape_of_a_fed_dimension_beyond_int32",
         fed(lambda: tf.shape(ph("x", shape=[None, None]), name=at("sh")), {"x:0": np.zeros((2**31, 0), np.float32)},
             {"x:0": np.zeros((2, 0), np.float32)}, [2, 0]),
         IAE, "Shape 'sh'", r"2147483648"),

    # ------------------------------------------------------------ feeds
    Case("missing_feed", _missing_feed,
         IAE, "Placeholder 'x'", r"You must feed a value for placeholder tensor 'x' with dtype float32 and shape \(2,"),
    Case("feed_shape", _feed_placeholder_line(tf.float32, [None, 3], np.ones((2, 4))),
         ValueError, "Placeholder 'x'",
         r"Cannot feed value of shape \(2, 4\) for Tensor 'x:0', which has shape '\(\?, 3\)'"),
    Case("feed_2_40_into_int32", _feed_placeholder_line(tf.int32, [], 2**40),
         TypeError, "Placeholder 'x'", r"feed value 1099511627776 .* not compatible with Tensor type int32"),
    Case("feed_list_with_2_40_into_int32",  # TF: no error, feeds [1, 0]
         _feed_placeholder_line(tf.int32, [2], [1, 2**40]),
         TypeError, "Placeholder 'x'", r"\[1, 1099511627776\] .* not compatible with Tensor type int32"),
    Case("feed_1e300_into_float32",  # TF: no error, feeds inf
         _feed_placeholder_line(tf.float32, [], 1e300),
         TypeError, "Placeholder 'x'", r"feed value 1e\+300 .* not compatible with Tensor type float32"),
    Case("feed_floats_into_int32",  # TF: no error, truncates to [1, 2]
         _feed_placeholder_line(tf.int32, [2], np.array([1.5, 2.0])),
         TypeError, "Placeholder 'x'", r"float64 values to a tensor of dtype int32: the value 1.5 at index \[0\] is "
                                        r"not a whole number"),

    # ------------------------------------------------------------ shapes and values found at run time
    Case("matmul_fed_inner_dims",
         fed(lambda: tf.matmul(ph("a", shape=[None, None]), tf.ones([4, 2]), name=at("mm")), {"a:0": ONES},
             {"a:0": np.ones((1, 4))}, [[4., 4.]]),
         IAE, "MatMul 'mm'", r"inner dimensions must agree.*\(2, 3\).*\(4, 2\)"),
    Case("add_fed_shapes",
         fed(lambda: tf.add(ph("a", shape=[None]), tf.ones([3]), name=at("sum")), {"a:0": [1., 2.]},
             {"a:0": [1., 2., 3.]}, [2., 3., 4.]),
         IAE, "Add 'sum'", r"broadcasting.*\(2,\).*\(3,\)"),
    Case("reshape_fed_count",
         fed(lambda: tf.reshape(ph("a", shape=[None]), [2, 3], name=at("rs")), {"a:0": np.ones(5)},
             {"a:0": np.ones(6)}, np.ones((2, 3))),
         IAE, "Reshape 'rs'", r"5 elements \(5,\) into shape \(2, 3\)"),
    Case("conv2d_fed_channels",
         fed(lambda: tf.nn.conv2d(ph("x", shape=[None] * 4), tf.ones([1, 1, 3, 1]), 1, "SAME", name=at("conv")),
             {"x:0": np.ones((1, 2, 2, 2))}, {"x:0": np.ones((1, 1, 1, 3))}, [[[[3.]]]]),
         IAE, "Conv2D 'conv'", r"\(1, 2, 2, 2\).*\(1, 1, 3, 1\) \(2 != 3\)"),
    Case("max_pool_fed_window_larger_than_input",  # TF: the process dies (SIGFPE)
         fed(lambda: tf.nn.max_pool(ph("x", shape=[None, None, None, 1]), [1, 3, 3, 1], 1, "VALID", name=at("pool")),
             {"x:0": np.ones((1, 2, 2, 1))}, {"x:0": np.ones((1, 3, 3, 1))}, [[[[1.]]]]),
         IAE, "MaxPool 'pool'", r"window must fit.*\(1, 2, 2, 1\).*window height 3"),
    Case("softmax_xent_fed_shapes",
         fed(lambda: xent(labels=ph("lab", shape=[None, 2]), logits=tf.zeros([1, 2]), name=at("xent")),
             {"lab:0": np.ones((3, 2))}, {"lab:0": [[0., 1.]]}, [np.log(2.)]),
         IAE, "SoftmaxCrossEntropyWithLogits 'xent'", r"same shape.*\(1, 2\).*\(3, 2\)"),
    Case("sparse_label_out_of_range",
         fed(lambda: sparse_xent(labels=ph("lab", tf.int32, [None]), logits=tf.zeros([2, 2]), name=at("xent")),
             {"lab:0": [0, 2]}, {"lab:0": [0, 1]}, [np.log(2.)] * 2),
         IAE, "SparseSoftmaxCrossEntropyWithLogits 'xent'", r"label 2 at row 1 is outside the valid range \[0, 2\)"),
    Case("sparse_label_2_32_plus_1",
         fed(lambda: sparse_xent(labels=ph("lab", tf.int64, [None]), logits=tf.zeros([2, 2]), name=at("xent")),
             {"lab:0": [0, 2**32 + 1]}, {"lab:0": [1, 0]}, [np.log(2.)] * 2),
         IAE, "SparseSoftmaxCrossEntropyWithLogits 'xent'", r"label 4294967297 at row 1 is outside the valid range"),
    Case("gather_index_out_of_range",
         fed(lambda: tf.gather(tf.constant([1., 2., 3.]), ph("idx", tf.int32, [None]), name=at("g")),
             {"idx:0": [0, 3]}, {"idx:0": [2, 0]}, [3., 1.]),
         IAE, "GatherV2 'g'", r"indices\[1\] = 3 is not in \[0, 3\)"),
    Case("gather_index_2_32_plus_1",
         lambda c: c.run(tf.gather(tf.constant([1., 2., 3.]), [2**32 + 1], name=at("g"))),
         IAE, "GatherV2 'g'", r"indices\[0\] = 4294967297 is not in \[0, 3\)"),
    Case("where_fed_condition_length",
         fed(lambda: tf.where(ph("cond", tf.bool, [None]), tf.ones([2]), tf.zeros([2]), name=at("sel")),
             {"cond:0": [True, False, True]}, {"cond:0": [False, True]}, [0., 1.]),
         IAE, "Select 'sel'", r"condition \(3,\) must have the shape of x and y \(2,\)"),
    Case("index_fed_out_of_bounds",
         fed(lambda: at(ph("x", shape=[None])[4]), {"x:0": np.zeros(3)}, {"x:0": np.arange(5.)}, 4.),
         IAE, "StridedSlice 'strided_slice'", r"index 4 is out of bounds for dimension 0 of size 3"),
    Case("assign_fed_wrong_shape", _assign_fed_wrong_shape,
         IAE, "Assign 'asg'", r"value shape \(3,\) does not match the variable's shape \(2,\)"),
    Case("assign_from_a_failing_gather_writes_nothing", _assign_from_a_failing_gather,
         IAE, "GatherV2 'g'", r"indices\[1\] = 3 is not in \[0, 3\)"),

    # ------------------------------------------------------------ integer arithmetic at run time
    Case("floordiv_by_zero",
         fed(lambda: tf.floordiv(ph("x", tf.int32, [2]), ph("y", tf.int32, [2]), name=at("fd")),
             {"x:0": [4, 6], "y:0": [1, 0]}, {"x:0": [4, -7], "y:0": [1, 2]}, [4, -4]),
         IAE, "FloorDiv 'fd'", r"Integer division by zero"),
    Case("floormod_by_zero",
         fed(lambda: tf.floormod(ph("x", tf.int32, [2]), ph("y", tf.int32, [2]), name=at("fm")),
             {"x:0": [4, 6], "y:0": [4, 0]}, {"x:0": [4, 6], "y:0": [4, 4]}, [0, 2]),
         IAE, "FloorMod 'fm'", r"Integer division by zero"),
    Case("div_by_zero",
         fed(lambda: tf.div(ph("x", tf.int32, [2]), ph("y", tf.int32, [2]), name=at("dv")),
             {"x:0": [4, 6], "y:0": [0, 2]}, {"x:0": [4, -7], "y:0": [2, 2]}, [2, -4]),
         IAE, r"FloorDiv 'dv'", r"Integer division by zero"),
    Case("floordiv_operator_int64_by_zero",
         fed(lambda: at(ph("x", tf.int64, [2]) // ph("y", tf.int64, [2])), {"x:0": [4, 6], "y:0": [0, 2]},
             {"x:0": [4, 6], "y:0": [3, 2]}, [1, 3]),
         IAE, "FloorDiv 'floordiv'", r"Integer division by zero"),
    Case("mod_operator_by_zero", lambda c: c.run(at(tf.constant([4, 6]) % 0)),
         IAE, "FloorMod 'mod'", r"Integer division by zero"),
    Case("int_pow_negative_exponent",
         fed(lambda: tf.pow(ph("x", tf.int32, [2]), ph("y", tf.int32, [2]), name=at("pw")),
             {"x:0": [4, 6], "y:0": [2, -1]}, {"x:0": [4, 6], "y:0": [2, 0]}, [16, 1]),
         IAE, "Pow 'pw'", r"Integers to negative integer powers are not allowed"),
    Case("int_pow_operator_negative_exponent", lambda c: c.run(at(tf.constant([2, 3], tf.int64) ** -1)),
         IAE, "Pow 'pow'", r"Integers to negative integer powers are not allowed"),

    # ------------------------------------------------------------ numerics
    Case("check_numerics_nan",
         fed(lambda: tf.check_numerics(tf.log(ph("x", shape=[2])), "log of x", name=at("chk")), {"x:0": [1., -1.]},
             {"x:0": [1., 1.]}, [0., 0.]),
         IAE, "CheckNumerics 'chk'", r"log of x : Tensor had NaN values"),
    Case("check_numerics_inf",
         fed(lambda: tf.check_numerics(1.0 / ph("x", shape=[2]), "recip", name=at("chk")), {"x:0": [1., 0.]},
             {"x:0": [1., 2.]}, [1., .5]),
         IAE, "CheckNumerics 'chk'", r"recip : Tensor had Inf values"),

    # ------------------------------------------------------------ variables, gradients, optimizers
    Case("uninitialized_variable", _uninitialized,
         tf.errors.FailedPreconditionError, "VariableV2 'w'", r"Attempting to use uninitialized value w"),
    Case("assign_wrong_shape", lambda c: tf.assign(c.kept, [1., 2., 3.], name=at("asg")),
         ValueError, "Assign 'asg'", r"value shape \(3,\) does not match the variable's shape \(2,\)"),
    Case("assign_add_wrong_shape", lambda c: tf.assign_add(c.kept, [1., 2., 3.], name=at("aa")),
         ValueError, "AssignAdd 'aa'", r"value shape \(3,\) does not match the variable's shape \(2,\)"),
    Case("variable_assign_method_wrong_shape", lambda c: (at(), c.kept.assign([[1., 2.]])),
         ValueError, "Assign 'Assign'", r"value shape \(1, 2\) does not match the variable's shape \(2,\)"),
    Case("assign_wrong_dtype",  # TF: TypeError "Input 'value' of 'Assign' Op has type int32 ..."
         lambda c: tf.assign(c.kept, tf.constant([1, 2]), name=at("asg")),
         TypeError, "Assign 'asg'", r"int32.*float32|float32.*int32"),
    # TF: TypeError "Expected int32 passed to parameter 'value' of op 'Assign', got [1.5, 2.5]"
    Case("assign_floats_to_an_int_variable",
         lambda c: tf.assign(tf.Variable([1, 2], name="w"), [1.5, 2.5], name=at("asg")),
         TypeError, "Assign 'asg'", r"int32.*1\.5"),
    Case("gradients_of_int_ys",  # TF: no error, returns [None]
         _gradients_of_int, TypeError, "Sum 'y'", r"int32"),
    Case("minimize_with_no_variables",  # TF: ValueError "No variables to optimize." (no op, no line)
         _minimize_nothing_to_train, ValueError, "Sum 'loss'", r"No variables to optimize"),
    Case("minimize_with_no_connected_variable",  # TF: ValueError "No gradients provided for any variable"
         _minimize_unconnected, ValueError, "Sum 'loss'", r"No gradients provided for any variable.*w:0"),
    Case("minimize_an_int_loss",  # TF: ValueError "Invalid type tf.int32 for loss:0, expected: [tf.float32, ...]"
         _minimize_int_loss, ValueError, "Cast 'loss'", r"Invalid type tf.int32 for loss:0"),

    # ------------------------------------------------------------ the session
    # The one case that is no op's error: the session is closed (TF: the same RuntimeError).
    Case("closed_session", _closed_session, RuntimeError, None, r"^Attempted to use a closed Session\.$"),

    # ------------------------------------------------------------ values that must not be wrong
    Case("ok_python_ints_beyond_int32_are_int64", _int_beyond_int32_is_int64, None),
    Case("ok_feed_2_40_into_int64", _feed_2_40_into_int64, None),
    Case("ok_one_hot_index_2_32_plus_1", _one_hot_index_beyond_int32, None),
    Case("ok_one_hot_depth_beyond_int32", _one_hot_depth_beyond_int32, None),
    Case("ok_static_shapes_beyond_int32", _static_shapes_beyond_int32, None),
]


def _params():
    """One test per case; a case pygrad gets wrong is a strict xfail, so that its fix is noticed."""
    params = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def test_the_catalogue_is_complete():
    ids = [case.id for case in CASES]
    assert len(set(ids)) == len(ids)
    assert sum(case.error is not None for case in CASES) >= 60


@pytest.mark.parametrize("case", _params())
def test_bad_input(case):
    _SITE.clear()
    kept = tf.Variable(np.array([1., 2.], np.float32), name="kept", trainable=False)
    with tf.Session() as sess:
        sess.run(kept.initializer)
        c = Ctx(sess, kept)
        if case.error is None:
            case.build(c)
        else:
            with pytest.raises(case.error) as info:
                case.build(c)
            msg = str(info.value)
            assert re.search(case.match, msg, re.DOTALL), msg
            if case.op is not None:
                opened = re.match(rf"({case.op}): ", msg)
                assert opened, f"the message does not open with {case.op!r}: {msg}"
                assert "line" in _SITE, "the case did not call at() on the line that builds the op"
                site = f"\n  op defined at {HERE}:{_SITE['line']}"
                assert re.search(re.escape(site) + "$", msg, re.MULTILINE), f"no {site.strip()!r} in: {msg}"
                if not c.ran:  # an op refused when built is not left in the graph
                    node = opened.group(1).split(" ", 1)[1].strip("'")
                    added = {op.name for op in tf.get_default_graph().get_operations()} - _SITE["ops"]
                    assert node not in added, f"the refused op {node!r} is in the graph"
        # the same session still runs a good graph, and what failed wrote nothing
        x = tf.placeholder(tf.float32, [None], name="good_x")
        good = tf.reduce_sum(kept * 3.0) + tf.reduce_sum(x)
        assert sess.run(good, {x: [1., 2.]}) == 12.0
        np.testing.assert_array_equal(sess.run(kept), [1., 2.])
        for fetches, feed_dict, want in c.after:
            got = sess.run(fetches, feed_dict)
            if want is not None:
                np.testing.assert_allclose(got, want, rtol=1e-6)
