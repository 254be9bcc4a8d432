"""slim.nets' lenet and mobilenet_v1 (the models repository's nets, which the tf_slim package does
not ship) against reference nets written here on tf_slim from the models repository's definitions
(research/slim/nets/lenet.py and mobilenet_v1.py): built side by side (slim_check), the variables'
names, shapes and collections, the end_points, the outputs, the gradients and batch norm's updates
agree; and a checkpoint written by TensorFlow's Saver restores into pygrad's net, and pygrad's into
TensorFlow's, with equal outputs."""
import collections
import contextlib
import zlib

import numpy as np
import pytest
from slim_check import TOL, assert_values, compare, quiet

import pygrad as tf
from pygrad.contrib.slim.nets import lenet, mobilenet_v1

# ---------------------------------------------------------------- the reference nets (tf_slim only)


def ref_lenet(tf1, slim, images, num_classes=10, is_training=False, dropout_keep_prob=0.5):
    points = {}
    with tf1.variable_scope(None, "LeNet", [images]):
        net = points["conv1"] = slim.conv2d(images, 32, [5, 5], scope="conv1")
        net = points["pool1"] = slim.max_pool2d(net, [2, 2], 2, scope="pool1")
        net = points["conv2"] = slim.conv2d(net, 64, [5, 5], scope="conv2")
        net = points["pool2"] = slim.max_pool2d(net, [2, 2], 2, scope="pool2")
        net = points["Flatten"] = slim.flatten(net)
        net = points["fc3"] = slim.fully_connected(net, 1024, scope="fc3")
        net = points["dropout3"] = slim.dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout3")
        logits = points["Logits"] = slim.fully_connected(net, num_classes, activation_fn=None, scope="fc4")
    points["Predictions"] = slim.softmax(logits, scope="Predictions")
    return logits, points


def ref_lenet_arg_scope(tf1, slim, weight_decay):
    return slim.arg_scope([slim.conv2d, slim.fully_connected], weights_regularizer=slim.l2_regularizer(weight_decay),
                          weights_initializer=tf1.truncated_normal_initializer(stddev=0.1), activation_fn=tf1.nn.relu)


# (kind, stride, depth) of the 14 layers: a 3x3 convolution, then 3x3 depthwise-separable ones
REF_LAYERS = [("conv", 2, 32)] + [("sep", s, d) for s, d in [
    (1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512), (1, 512), (1, 512), (1, 512), (1, 512), (1, 512),
    (2, 1024), (1, 1024)]]


def ref_mobilenet_base(tf1, slim, x, final, multiplier, output_stride=None, explicit=False, scope=None):
    points, stride_so_far, rate = {}, 1, 1

    def same_pad(t, r):  # VALID after this gives SAME's size (3x3 kernels)
        k = 3 + 2 * (r - 1)
        return tf1.pad(t, [[0, 0], [(k - 1) // 2, k - 1 - (k - 1) // 2], [(k - 1) // 2, k - 1 - (k - 1) // 2], [0, 0]])

    with tf1.variable_scope(scope, "MobilenetV1", [x]), \
            slim.arg_scope([slim.conv2d, slim.separable_conv2d], padding="VALID" if explicit else "SAME"):
        for i, (kind, stride, d) in enumerate(REF_LAYERS):
            d = max(int(d * multiplier), 8)
            if output_stride is not None and stride_so_far == output_stride:
                this_stride, this_rate, rate = 1, rate, rate * stride
            else:
                this_stride, this_rate, stride_so_far = stride, 1, stride_so_far * stride
            if kind == "conv":
                x = points[f"Conv2d_{i}"] = slim.conv2d(same_pad(x, 1) if explicit else x, d, [3, 3], stride=stride,
                                                        scope=f"Conv2d_{i}")
                if f"Conv2d_{i}" == final:
                    return x, points
                continue
            x = points[f"Conv2d_{i}_depthwise"] = slim.separable_conv2d(
                same_pad(x, this_rate) if explicit else x, None, [3, 3], depth_multiplier=1, stride=this_stride,
                rate=this_rate, scope=f"Conv2d_{i}_depthwise")
            if f"Conv2d_{i}_depthwise" == final:
                return x, points
            x = points[f"Conv2d_{i}_pointwise"] = slim.conv2d(x, d, [1, 1], stride=1, scope=f"Conv2d_{i}_pointwise")
            if f"Conv2d_{i}_pointwise" == final:
                return x, points
    raise AssertionError(final)


def ref_mobilenet(tf1, slim, x, num_classes, multiplier, is_training, keep_prob, global_pool=False,
                  spatial_squeeze=True):
    with tf1.variable_scope("MobilenetV1", "MobilenetV1", [x]) as sc, \
            slim.arg_scope([slim.batch_norm, slim.dropout], is_training=is_training):
        net, points = ref_mobilenet_base(tf1, slim, x, "Conv2d_13_pointwise", multiplier, scope=sc)
        with tf1.variable_scope("Logits"):
            if global_pool:
                net = points["global_pool"] = tf1.reduce_mean(net, [1, 2], keepdims=True, name="global_pool")
            else:
                kernel = [min(net.shape[1], 7), min(net.shape[2], 7)]
                net = points["AvgPool_1a"] = slim.avg_pool2d(net, kernel, padding="VALID", scope="AvgPool_1a")
            net = slim.dropout(net, keep_prob=keep_prob, scope="Dropout_1b")
            logits = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                                 scope="Conv2d_1c_1x1")
            if spatial_squeeze:
                logits = tf1.squeeze(logits, [1, 2], name="SpatialSqueeze")
        points["Logits"] = logits
        points["Predictions"] = slim.softmax(logits, scope="Predictions")
    return logits, points


def ref_mobilenet_arg_scope(tf1, slim, is_training=True, regularize_depthwise=False):
    bn = {"center": True, "scale": True, "decay": 0.9997, "epsilon": 0.001,
          "updates_collections": tf1.GraphKeys.UPDATE_OPS, "is_training": is_training}
    l2 = slim.l2_regularizer(0.00004)
    scopes = [slim.arg_scope([slim.conv2d, slim.separable_conv2d], activation_fn=tf1.nn.relu6,
                             weights_initializer=tf1.truncated_normal_initializer(stddev=0.09),
                             normalizer_fn=slim.batch_norm),
              slim.arg_scope([slim.batch_norm], **bn), slim.arg_scope([slim.conv2d], weights_regularizer=l2),
              slim.arg_scope([slim.separable_conv2d], weights_regularizer=l2 if regularize_depthwise else None)]
    return scopes


# ---------------------------------------------------------------- the cases


class Case(collections.namedtuple("Case", ["pygrad", "reference", "shape", "tol"], defaults=[TOL])):
    """pygrad(slim) and reference(tf1, slim): (net, end_points) under their arg_scopes; the
    images' shape; the tolerance (slim_check's)."""


def _nested(scopes):
    stack = contextlib.ExitStack()
    for s in scopes:
        stack.enter_context(s)
    return stack


CASES = {
    "lenet": Case(
        lambda sl, x: _in(sl.arg_scope(lenet.lenet_arg_scope(0.01)), lambda: lenet.lenet(x)),
        lambda tf1, sl, x: _in(ref_lenet_arg_scope(tf1, sl, 0.01), lambda: ref_lenet(tf1, sl, x)),
        (2, 28, 28, 1)),
    "mobilenet_v1_025": Case(
        lambda sl, x: _in(sl.arg_scope(mobilenet_v1.mobilenet_v1_arg_scope()),
                          lambda: mobilenet_v1.mobilenet_v1_025(x, num_classes=5, is_training=False)),
        lambda tf1, sl, x: _in(_nested(ref_mobilenet_arg_scope(tf1, sl)),
                               lambda: ref_mobilenet(tf1, sl, x, 5, 0.25, False, 0.999)),
        (2, 32, 32, 3)),
    "mobilenet_v1_base-training": Case(
        lambda sl, x: _in(sl.arg_scope(mobilenet_v1.mobilenet_v1_arg_scope()),
                          lambda: mobilenet_v1.mobilenet_v1_base(x, "Conv2d_7_pointwise", depth_multiplier=0.25)),
        lambda tf1, sl, x: _in(_nested(ref_mobilenet_arg_scope(tf1, sl)),
                               lambda: ref_mobilenet_base(tf1, sl, x, "Conv2d_7_pointwise", 0.25)),
        (4, 32, 32, 3)),
    "mobilenet_v1_050-global_pool-inference": Case(
        lambda sl, x: _in(sl.arg_scope(mobilenet_v1.mobilenet_v1_arg_scope(regularize_depthwise=True)),
                          lambda: mobilenet_v1.mobilenet_v1_050(x, num_classes=4, is_training=False,
                                                                global_pool=True, spatial_squeeze=False)),
        lambda tf1, sl, x: _in(_nested(ref_mobilenet_arg_scope(tf1, sl, regularize_depthwise=True)),
                               lambda: ref_mobilenet(tf1, sl, x, 4, 0.5, False, 0.999, global_pool=True,
                                                     spatial_squeeze=False)),
        (1, 40, 48, 3)),
    "mobilenet_v1_base-output_stride_8-explicit_padding": Case(
        lambda sl, x: _in(sl.arg_scope(mobilenet_v1.mobilenet_v1_arg_scope()),
                          lambda: mobilenet_v1.mobilenet_v1_base(x, "Conv2d_9_pointwise", depth_multiplier=0.25,
                                                                 output_stride=8, use_explicit_padding=True)),
        lambda tf1, sl, x: _in(_nested(ref_mobilenet_arg_scope(tf1, sl)),
                               lambda: ref_mobilenet_base(tf1, sl, x, "Conv2d_9_pointwise", 0.25, output_stride=8,
                                                          explicit=True)),
        # the gradients of Conv2d_0's batch norm, through ten batch-normalized layers, differ by
        # up to 2.7e-5 between the two float32 computations. (Images that put a pre-activation
        # within rounding of relu6's kink at 0, as some draws do, flip one element of its gradient
        # mask: both batch norms leave residues of 1e-7 there, of either sign.)
        (2, 33, 33, 3), 1e-4),
}


def _in(scope, fn):
    with scope:
        return fn()


def _build(case, points):
    """slim_check's build: the net's output, then its end_points' in order; their keys and static
    shapes go to points[library]."""
    def build(lib, sl, x):
        net, end_points = CASES[case].pygrad(sl, x) if lib is tf else CASES[case].reference(lib, sl, x)
        points[lib is tf] = [(k, v.shape.as_list()) for k, v in end_points.items()]
        return [net] + list(end_points.values())
    return build


@pytest.mark.parametrize("case", sorted(CASES))
def test_net_matches_the_reference(tf_slim, tf_peer, case):
    points = {}
    images = np.random.default_rng(zlib.crc32(case.encode())).uniform(-1, 1, CASES[case].shape).astype(np.float32)
    compare(tf_slim, tf_peer, _build(case, points), [images], tol=CASES[case].tol)
    assert points[True] == points[False]


def test_checkpoints_cross(tf_slim, tf_peer, tmp_path):
    """TensorFlow's Saver writes the reference mobilenet_v1_025 (random values in every variable,
    the moving statistics included) and pygrad's Saver restores it into pygrad's net; then pygrad
    writes new values and TensorFlow restores them: each time the logits agree."""
    case = CASES["mobilenet_v1_025"]
    images = np.random.default_rng(5).uniform(-1, 1, case.shape).astype(np.float32)

    def session(lib, build):
        graph = lib.Graph()
        with graph.as_default(), quiet(lib):
            x = lib.placeholder(lib.float32, images.shape)
            logits = build(x)[0]
            saver = lib.train.Saver()
            sess = lib.Session(graph=graph)
            sess.run(lib.global_variables_initializer())
        return sess, saver, lambda: sess.run(logits, {x: images})

    def randomize(lib, sess, seed):
        rng = np.random.default_rng(seed)
        for v in lib.global_variables():
            shape = v.shape.as_list()
            value = rng.uniform(0.5, 1.5, shape) if "moving_variance" in v.op.name else rng.normal(0, 0.3, shape)
            v.load(value.astype(np.float32), sess)

    theirs, their_saver, their_logits = session(tf_peer, lambda x: case.reference(tf_peer, tf_slim, x))
    ours, our_saver, our_logits = session(tf, lambda x: case.pygrad(tf.contrib.slim, x))
    with theirs.graph.as_default():
        randomize(tf_peer, theirs, 1)
        their_saver.save(theirs, str(tmp_path / "tf.ckpt"))
    our_saver.restore(ours, str(tmp_path / "tf.ckpt"))
    assert_values([our_logits()], [their_logits()], "logits restored from TensorFlow's checkpoint")
    with ours.graph.as_default():
        randomize(tf, ours, 2)
        our_saver.save(ours, str(tmp_path / "pygrad.ckpt"))
    their_saver.restore(theirs, str(tmp_path / "pygrad.ckpt"))
    assert_values([our_logits()], [their_logits()], "logits restored from pygrad's checkpoint")


def test_heads_reuse_and_bad_arguments():
    """Without num_classes the nets return their features; reuse shares the variables; the
    models repository's errors for bad arguments."""
    slim = tf.contrib.slim
    x = tf.placeholder(tf.float32, [2, 32, 32, 3])
    with slim.arg_scope(mobilenet_v1.mobilenet_v1_arg_scope(is_training=None)):
        features, points = mobilenet_v1.mobilenet_v1_025(x, num_classes=None)
        n = len(tf.global_variables())
        logits, again = mobilenet_v1.mobilenet_v1_025(x, num_classes=3, reuse=tf.AUTO_REUSE)
    assert features.shape.as_list() == [2, 1, 1, 256] and "Logits" not in points and "AvgPool_1a" in points
    assert logits.shape.as_list() == [2, 3] and again["Predictions"].shape.as_list() == [2, 3]
    assert len(tf.global_variables()) == n + 2  # only Logits/Conv2d_1c_1x1's weights and biases are new
    fc3, points = lenet.lenet(tf.placeholder(tf.float32, [1, 28, 28, 1]), num_classes=0)
    assert fc3.shape.as_list() == [1, 1024] and "Predictions" not in points
    assert (lenet.lenet.default_image_size, mobilenet_v1.mobilenet_v1.default_image_size) == (28, 224)
    assert mobilenet_v1.mobilenet_v1_050.keywords == {"depth_multiplier": 0.5}
    assert mobilenet_v1.mobilenet_v1_075.__doc__ == mobilenet_v1.mobilenet_v1.__doc__
    base = mobilenet_v1.mobilenet_v1_base
    with pytest.raises(ValueError, match="depth_multiplier is not greater than zero."):
        base(x, depth_multiplier=0)
    with pytest.raises(ValueError, match="Only allowed output_stride values are 8, 16, 32."):
        base(x, output_stride=4)
    with pytest.raises(ValueError, match="Unknown final endpoint Conv2d_14_pointwise"):
        base(x, final_endpoint="Conv2d_14_pointwise", scope="again")
    with pytest.raises(ValueError, match="Invalid input tensor rank, expected 4, was: 3"):
        mobilenet_v1.mobilenet_v1(tf.placeholder(tf.float32, [2, 32, 3]))
