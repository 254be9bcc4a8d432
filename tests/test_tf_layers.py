"""tf.layers: variable names and collections as TensorFlow's, values against NumPy, batch
normalization's updates, regularization losses, dropout and the training flag, and a model built in
both libraries from the same weights, dilated convolutions included (TensorFlow's tf.layers needs
the tf_keras package)."""
import os
import warnings

import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2 (tf_keras)
RNG = np.random.default_rng(2)


def model(lib, x, training):
    """The same program for both libraries (TF 2's compat.v1 has no contrib: regularizers by hand)."""
    def l2(w):
        return 0.01 * lib.nn.l2_loss(w)

    def l1(w):
        return 0.1 * lib.reduce_sum(lib.abs(w))

    h = lib.layers.conv2d(x, 4, 3, padding="same", activation=lib.nn.relu,
                          kernel_regularizer=l2)
    h = lib.layers.conv2d(h, 4, 3, padding="same", dilation_rate=(2, 1), name="atrous")
    h = lib.layers.separable_conv2d(h, 4, 3, padding="same", dilation_rate=2, depth_multiplier=2,
                                    activation=lib.nn.relu)  # a bias right before batch norm would get no gradient
    h = lib.layers.batch_normalization(h, training=training, momentum=0.9)
    h = lib.layers.max_pooling2d(h, 2, 2)
    h = lib.layers.conv2d_transpose(h, 3, 3, strides=2, padding="same")
    h = lib.layers.average_pooling2d(h, 2, 2, padding="same")
    with lib.variable_scope("head"):
        f = lib.layers.flatten(h)
        f = lib.layers.dropout(f, rate=0.3, training=False)
        d = lib.layers.dense(f, 6, activation=lib.nn.tanh, bias_regularizer=l1)
        d = lib.layers.batch_normalization(d, training=training, scale=False)
        out = lib.layers.dense(d, 2, name="logits")
    with lib.variable_scope("head", reuse=True):
        again = lib.layers.dense(d, 2, name="logits")
    return out, again


def names(vs):
    return [v.name for v in vs]


def tf_layers(tf_peer):
    if not hasattr(tf_peer, "layers"):
        pytest.skip("tf.compat.v1.layers is not available")
    try:
        _ = tf_peer.layers.Dense
    except (AttributeError, ImportError, RecursionError) as e:  # Keras 3 without tf_keras
        pytest.skip(str(e))
    return tf_peer


def test_same_model_as_tensorflow(tf_peer):
    peer = tf_layers(tf_peer)
    xv = RNG.standard_normal((3, 6, 6, 2)).astype(np.float32)
    with peer.Graph().as_default() as g, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TF's deprecation warnings of tf.layers
        peer.set_random_seed(7)  # the same initial weights in every run (pygrad loads them)
        x = peer.placeholder(peer.float32, [None, 6, 6, 2])
        training = peer.placeholder(peer.bool, [])
        out, again = model(peer, x, training)
        loss = peer.reduce_sum(out * out) + peer.losses.get_regularization_loss()
        grads = peer.gradients(loss, peer.trainable_variables()) + peer.gradients(loss, out)
        sess = peer.Session(graph=g)
        sess.run(peer.global_variables_initializer())
        weights = sess.run(peer.global_variables())
        updates = peer.get_collection(peer.GraphKeys.UPDATE_OPS)
        fetch = [out, again, loss] + grads
        want_train = sess.run(fetch + updates, {x: xv, training: True})[:len(fetch)]
        want_moving = sess.run(peer.global_variables())
        want_infer = sess.run(fetch, {x: xv, training: False})
        tf_names = (names(peer.global_variables()), names(peer.trainable_variables()), names(updates),
                    len(peer.losses.get_regularization_losses()))
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    training = tf.placeholder(tf.bool, [])
    out, again = model(tf, x, training)
    loss = tf.reduce_sum(out * out) + tf.losses.get_regularization_loss()
    grads = tf.gradients(loss, tf.trainable_variables()) + tf.gradients(loss, out)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    # Update ops' names differ (TF 2's compat.v1 builds them from resource-variable ops and tf.cond).
    assert (names(tf.global_variables()), names(tf.trainable_variables()), len(updates),
            len(tf.losses.get_regularization_losses())) == (tf_names[0], tf_names[1], len(tf_names[2]), tf_names[3])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v, w in zip(tf.global_variables(), weights):
            v.load(w, sess)
        fetch = [out, again, loss] + grads
        got_train = sess.run(fetch + updates, {x: xv, training: True})[:len(fetch)]
        got_moving = sess.run(tf.global_variables())
        got_infer = sess.run(fetch, {x: xv, training: False})
    # A gradient sums products over the batch and the image: an entry that cancels to near 0 keeps the
    # rounding of its large terms, so errors are relative to the tensor's magnitude. Some gradients
    # are 0 in theory (in training, the batch-normalized rows feeding the logits sum to 0 over the
    # batch, and so do the logits: the gradients of that batch norm's beta and of the logits' bias
    # are rounding noise): a gradient's scale is at least the largest entry of dL/dlogits (the last
    # fetch), from which every gradient is summed.
    def check(got, want, what):
        seed = np.max(np.abs(want[-1]))
        assert seed > 0.1, f"{what}: dL/dlogits is {seed}: the scale would vanish"
        for i, (a, b) in enumerate(zip(got, want)):
            scale = np.max(np.abs(b)) if i < 3 else max(np.max(np.abs(b)), seed)  # values, then gradients
            assert_close(a, b, np.float32, kind="grad", what=f"{what} value {i}", scale=scale)

    check(got_train, want_train, "training")
    check(got_infer, want_infer, "inference")
    for i, (a, b) in enumerate(zip(got_moving, want_moving)):
        assert_close(a, b, np.float32, kind="grad", what=f"variable {i}", scale=np.max(np.abs(b)))


def test_dense_values_names_and_reuse():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    y = tf.layers.dense(x, 5, activation=tf.nn.relu)
    y2 = tf.layers.dense(tf.reshape(x, [2, 2, 3]), 2, use_bias=False, kernel_initializer=tf.ones_initializer())
    with tf.variable_scope("s"):
        z = tf.layers.dense(x, 2, name="d")
        with pytest.raises(ValueError, match="Variable s/d/kernel already exists"):
            tf.layers.dense(x, 2, name="d")
        z2 = tf.layers.dense(x, 2, name="d", reuse=True)
    assert names(tf.global_variables()) == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "s/d/kernel:0",
                                            "s/d/bias:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k, b, yv, y2v, zv, z2v = sess.run(["dense/kernel:0", "dense/bias:0", y, y2, z, z2])
    assert_close(yv, np.maximum(x @ k + b, 0), np.float32)
    assert_close(y2v, np.broadcast_to(x.sum(-1).reshape(2, 2, 1), (2, 2, 2)), np.float32)
    np.testing.assert_array_equal(zv, z2v)
    limit = np.sqrt(6 / (3 + 5))
    assert np.all(np.abs(k) <= limit) and np.abs(k).max() > limit / 2  # glorot_uniform by default


def test_class_form_shares_its_variables():
    layer = tf.layers.Dense(3, name="shared")
    a = layer(tf.zeros([2, 4]))
    b = layer.apply(tf.ones([5, 4]))
    assert names(layer.variables) == ["shared/kernel:0", "shared/bias:0"] == names(tf.global_variables())
    assert a.shape.as_list() == [2, 3] and b.shape.as_list() == [5, 3]


def test_batch_normalization_updates_and_training_flag():
    x = RNG.standard_normal((8, 3)).astype(np.float32) * 2 + 1
    flag = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=flag, momentum=0.5, epsilon=1e-3)
    assert names(tf.trainable_variables()) == ["batch_normalization/gamma:0", "batch_normalization/beta:0"]
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        step = tf.identity(y)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        train = sess.run(step, {flag: True})
        mean, var = sess.run(["batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"])
        infer = sess.run(step, {flag: False})
        mean2 = sess.run("batch_normalization/moving_mean:0")
    assert_close(train, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), np.float32)
    assert_close(mean, 0.5 * x.mean(0), np.float32)
    assert_close(var, 0.5 + 0.5 * x.var(0), np.float32)  # non-fused: the biased variance
    assert_close(mean2, mean, np.float32)  # training false: momentum 1, no change
    assert_close(infer, (x - mean) / np.sqrt(var + 1e-3), np.float32)
    y_false = tf.layers.batch_normalization(x, training=False)
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2 and y_false is not None


def test_dropout_training_tensor_and_rate():
    x = np.ones((200, 50), np.float32)
    flag = tf.placeholder_with_default(False, []) if hasattr(tf, "placeholder_with_default") else \
        tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.25, training=flag, seed=1)
    with tf.Session() as sess:
        on = sess.run(y, {flag: True})
        off = sess.run(y, {flag: False})
    np.testing.assert_array_equal(off, x)
    assert set(np.unique(on)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((on == 0).mean() - 0.25) < 0.02
    z = tf.layers.dropout(x, rate=0.5, training=False)
    assert z.op.type == "Identity"


def test_regularizers_and_activity_regularizer():
    x = tf.constant(RNG.standard_normal((4, 3)).astype(np.float32))
    y = tf.layers.dense(x, 2, kernel_regularizer=tf.contrib.layers.l2_regularizer(0.1),
                        activity_regularizer=tf.contrib.layers.l1_regularizer(0.5),
                        bias_regularizer=tf.contrib.layers.l2_regularizer(0.0))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k, yv, kl, al = sess.run(["dense/kernel:0", y] + losses)
    assert_close(kl, np.float32(0.1 * (k ** 2).sum() / 2), np.float32)
    assert_close(al, np.float32(0.5 * np.abs(yv).sum() / 4), np.float32)
    with pytest.raises(ValueError, match="scale cannot be an integer"):
        tf.contrib.layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="less than 0"):
        tf.contrib.layers.l1_regularizer(-0.5)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match=r"Conv2D.*channels_last.*channels_first"):
        tf.layers.conv2d(tf.zeros([1, 4, 4, 1]), 2, 3, data_format="channels_first")
    with pytest.raises(ValueError, match=r"Dense.*last dimension.*\(2, \?\)"):
        tf.layers.dense(tf.placeholder(tf.float32, [2, None]), 3)
    with pytest.raises(ValueError, match=r"MaxPooling2D.*4-D.*\(2, 3\)"):
        tf.layers.max_pooling2d(tf.zeros([2, 3]), 2, 2)
    with pytest.raises(ValueError, match=r"BatchNormalization.*fused=True"):
        tf.layers.batch_normalization(tf.zeros([2, 3]), fused=True)
    with pytest.raises(ValueError, match=r"Conv2D.*`strides > 1` not supported in conjunction with "
                                         r"`dilation_rate > 1`"):
        tf.layers.conv2d(tf.zeros([1, 8, 8, 1]), 2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match=r"Conv2DTranspose.*dilation_rate other than 1 is not supported"):
        tf.layers.Conv2DTranspose(2, 3, dilation_rate=2).apply(tf.zeros([1, 8, 8, 1]))


def test_contrib_initializers():
    v = tf.get_variable("v", [200, 100], initializer=tf.contrib.layers.xavier_initializer(seed=3))
    n = tf.get_variable("n", [200, 100], initializer=tf.contrib.layers.variance_scaling_initializer(seed=3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vv, nv = sess.run([v, n])
    limit = np.sqrt(6 / 300)
    assert np.abs(vv).max() <= limit and abs(vv.std() - limit / np.sqrt(3)) < 0.01 * limit
    stddev = np.sqrt(1.3 * 2.0 / 200)
    assert np.abs(nv).max() <= 2 * stddev + 1e-6 and abs(nv.std() - stddev * 0.8796) < 0.05 * stddev


class _Scale:
    """A Layer subclass written against either library's tf.layers.Layer: one weight per channel."""

    @staticmethod
    def make(lib, init):
        class Scale(lib.layers.Layer):
            def build(self, input_shape):
                self.gain = self.add_weight("gain", [int(input_shape[-1])], initializer=lib.constant_initializer(init))
                super().build(input_shape)

            def call(self, inputs):
                return inputs * self.gain
        return Scale(name="scale")


def test_layer_classes_as_tensorflows(tf_peer):
    """The class forms TF's tf.layers has beside the functions, with the same weights: values,
    variable names and shapes as TensorFlow's; the aliases are the same classes, as in TF."""
    peer = tf_layers(tf_peer)
    rng = np.random.default_rng(11)
    xv = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)
    k_t = rng.standard_normal((3, 3, 4, 3)).astype(np.float32)  # Conv2DTranspose: [h, w, out, in]
    b_t = rng.standard_normal(4).astype(np.float32)
    k_d = rng.standard_normal((3, 3, 4, 2)).astype(np.float32)  # depthwise, multiplier 2
    k_p = rng.standard_normal((1, 1, 8, 5)).astype(np.float32)
    gain = rng.standard_normal(5).astype(np.float32)

    def build(lib):
        c = lib.constant_initializer
        layers = [lib.layers.Conv2DTranspose(4, 3, strides=2, padding="same", kernel_initializer=c(k_t),
                                             bias_initializer=c(b_t), activation=lib.nn.relu),
                  lib.layers.SeparableConv2D(5, 3, depth_multiplier=2, depthwise_initializer=c(k_d),
                                             pointwise_initializer=c(k_p)),
                  lib.layers.AveragePooling2D(2, 2, padding="same"),
                  _Scale.make(lib, gain),
                  lib.layers.Flatten()]
        h, outs = lib.constant(xv), []
        for layer in layers:
            h = layer(h)
            outs.append(h)
        names = [(v.name, v.shape.as_list()) for v in lib.global_variables()]
        return outs, names

    with peer.Graph().as_default() as g, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs, their_names = build(peer)
        with peer.Session(graph=g) as sess:
            sess.run(peer.global_variables_initializer())
            theirs = sess.run(outs)
    outs, our_names = build(tf)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ours = sess.run(outs)
    assert our_names == their_names
    assert [o.shape for o in ours] == [o.shape for o in theirs] == [(2, 10, 10, 4), (2, 8, 8, 5), (2, 4, 4, 5),
                                                                    (2, 4, 4, 5), (2, 80)]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        # sums of products (the convolutions): errors relative to the tensor's magnitude
        assert_close(a, b, np.float32, what=f"layer {i}", scale=np.max(np.abs(b)))
    # The aliases of TF 1's tf/python/layers/convolutional.py and pooling.py (tf_keras exports some of them).
    for alias, same in [("Convolution2DTranspose", "Conv2DTranspose"), ("Deconvolution2D", "Conv2DTranspose"),
                        ("SeparableConvolution2D", "SeparableConv2D"), ("AveragePool2D", "AveragePooling2D")]:
        assert getattr(tf.layers, alias) is getattr(tf.layers, same)
        assert getattr(peer.layers, alias, getattr(peer.layers, same)) is getattr(peer.layers, same)
