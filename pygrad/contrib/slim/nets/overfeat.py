"""TF-Slim's OverFeat (Sermanet et al., arXiv:1312.6229, the accurate model's layers without
local response normalization), fully connected layers as convolutions (fc6 6x6 VALID: inputs of
231x231 or more), and overfeat_arg_scope."""
from pygrad.contrib.framework.arg_scope import arg_scope
from pygrad.contrib.layers import (
    conv2d,
    dropout,
    fully_connected,
    l2_regularizer,
    max_pool2d,
)
from pygrad.contrib.layers.utils import convert_collection_to_dict
from pygrad.ops.array_ops import squeeze
from pygrad.ops.init_ops import (
    constant_initializer,
    truncated_normal_initializer,
    zeros_initializer,
)
from pygrad.ops.nn_ops import relu
from pygrad.ops.variable_scope import variable_scope

__all__ = ["overfeat", "overfeat_arg_scope"]


def overfeat_arg_scope(weight_decay=0.0005):
    """relu, L2 weight decay and zero biases; SAME convolutions, VALID max pools."""
    with arg_scope([conv2d, fully_connected], activation_fn=relu, weights_regularizer=l2_regularizer(weight_decay),
                   biases_initializer=zeros_initializer()), \
            arg_scope([conv2d], padding="SAME"), arg_scope([max_pool2d], padding="VALID") as arg_sc:
        return arg_sc


def overfeat(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True,
             scope="overfeat"):
    """(logits, end_points): conv1 11x11/4, 2x2 pools, conv2-5, then fc6-fc8 as convolutions."""
    with variable_scope(scope, "overfeat", [inputs]) as sc:
        collection = sc.name + "_end_points"
        with arg_scope([conv2d, fully_connected, max_pool2d], outputs_collections=collection):
            net = conv2d(inputs, 64, [11, 11], 4, padding="VALID", scope="conv1")
            net = max_pool2d(net, [2, 2], scope="pool1")
            net = conv2d(net, 256, [5, 5], padding="VALID", scope="conv2")
            net = max_pool2d(net, [2, 2], scope="pool2")
            net = conv2d(net, 512, [3, 3], scope="conv3")
            net = conv2d(net, 1024, [3, 3], scope="conv4")
            net = conv2d(net, 1024, [3, 3], scope="conv5")
            net = max_pool2d(net, [2, 2], scope="pool5")
            with arg_scope([conv2d], weights_initializer=truncated_normal_initializer(0.0, 0.005),
                           biases_initializer=constant_initializer(0.1)):
                net = conv2d(net, 3072, [6, 6], padding="VALID", scope="fc6")
                net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
                net = conv2d(net, 4096, [1, 1], scope="fc7")
                net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
                net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                             biases_initializer=zeros_initializer(), scope="fc8")
            end_points = convert_collection_to_dict(collection)
            if spatial_squeeze:
                net = squeeze(net, [1, 2], name="fc8/squeezed")
                end_points[sc.name + "/fc8"] = net
            return net, end_points


overfeat.default_image_size = 231
