"""TF-Slim's VGG nets (Simonyan and Zisserman, arXiv:1409.1556): configurations A (vgg_a), D
(vgg_16) and E (vgg_19), with the fully connected layers as convolutions (fc6 7x7 VALID, so the
input is 224x224 or larger), dropout after fc6 and fc7, and vgg_arg_scope."""
from pygrad.contrib.framework.arg_scope import arg_scope
from pygrad.contrib.layers import (
    conv2d,
    dropout,
    fully_connected,
    l2_regularizer,
    max_pool2d,
    repeat,
)
from pygrad.contrib.layers.utils import convert_collection_to_dict
from pygrad.ops.array_ops import squeeze
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.nn_ops import relu
from pygrad.ops.variable_scope import variable_scope

__all__ = ["vgg_16", "vgg_19", "vgg_a", "vgg_arg_scope", "vgg_d", "vgg_e"]


def vgg_arg_scope(weight_decay=0.0005):
    """relu, L2 weight decay and zero biases for conv2d and fully_connected; SAME convolutions."""
    with arg_scope([conv2d, fully_connected], activation_fn=relu, weights_regularizer=l2_regularizer(weight_decay),
                   biases_initializer=zeros_initializer()), arg_scope([conv2d], padding="SAME") as arg_sc:
        return arg_sc


def _vgg(inputs, repeats, num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope, default_name):
    """Five blocks of repeats[i] 3x3 convolutions (64, 128, 256, 512, 512 filters) each followed by
    a 2x2 max pool, then fc6 (7x7, 4096), fc7 (1x1, 4096) and fc8 (1x1, num_classes, linear)."""
    with variable_scope(scope, default_name, [inputs]) as sc:
        collection = (sc.name if default_name == "vgg_19" else sc.original_name_scope) + "_end_points"
        with arg_scope([conv2d, fully_connected, max_pool2d], outputs_collections=collection):
            net = inputs
            for i, (count, depth) in enumerate(zip(repeats, (64, 128, 256, 512, 512)), start=1):
                net = repeat(net, count, conv2d, depth, [3, 3], scope=f"conv{i}")
                net = max_pool2d(net, [2, 2], scope=f"pool{i}")
            net = conv2d(net, 4096, [7, 7], padding="VALID", scope="fc6")
            net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
            net = conv2d(net, 4096, [1, 1], scope="fc7")
            net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
            net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="fc8")
            end_points = convert_collection_to_dict(collection)
            if spatial_squeeze:
                net = squeeze(net, [1, 2], name="fc8/squeezed")
                end_points[sc.name + "/fc8"] = net
            return net, end_points


def vgg_a(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True, scope="vgg_a"):
    """VGG configuration A (11 layers); (logits, end_points)."""
    return _vgg(inputs, (1, 1, 2, 2, 2), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope, "vgg_a")


def vgg_16(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True, scope="vgg_16"):
    """VGG configuration D (16 layers); (logits, end_points)."""
    return _vgg(inputs, (2, 2, 3, 3, 3), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_16")


def vgg_19(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True, scope="vgg_19"):
    """VGG configuration E (19 layers); (logits, end_points)."""
    return _vgg(inputs, (2, 2, 4, 4, 4), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_19")


vgg_a.default_image_size = vgg_16.default_image_size = vgg_19.default_image_size = 224
vgg_d, vgg_e = vgg_16, vgg_19
