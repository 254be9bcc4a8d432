"""TF-Slim's LeNet variant (the models repository's nets/lenet.py): two 5x5 convolutions with 2x2
max pools, a 1024-unit fully connected layer, dropout and the logits; lenet_arg_scope."""
from pygrad.contrib.framework.arg_scope import arg_scope
from pygrad.contrib.layers import (
    conv2d,
    dropout,
    flatten,
    fully_connected,
    l2_regularizer,
    max_pool2d,
    softmax,
)
from pygrad.ops.init_ops import truncated_normal_initializer
from pygrad.ops.nn_ops import relu
from pygrad.ops.variable_scope import variable_scope

__all__ = ["lenet", "lenet_arg_scope"]


def lenet(images, num_classes=10, is_training=False, dropout_keep_prob=0.5, prediction_fn=softmax, scope="LeNet"):
    """(logits, end_points): conv1 (32) and conv2 (64), each 5x5 and followed by a 2x2/2 max pool,
    flattened, fc3 (1024), dropout3 and fc4 (linear). Without num_classes (0 or None): fc3's
    output instead of the logits, and no predictions."""
    end_points = {}
    with variable_scope(scope, "LeNet", [images]):
        net = end_points["conv1"] = conv2d(images, 32, [5, 5], scope="conv1")
        net = end_points["pool1"] = max_pool2d(net, [2, 2], 2, scope="pool1")
        net = end_points["conv2"] = conv2d(net, 64, [5, 5], scope="conv2")
        net = end_points["pool2"] = max_pool2d(net, [2, 2], 2, scope="pool2")
        net = end_points["Flatten"] = flatten(net)
        net = end_points["fc3"] = fully_connected(net, 1024, scope="fc3")
        if not num_classes:
            return net, end_points
        net = end_points["dropout3"] = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout3")
        logits = end_points["Logits"] = fully_connected(net, num_classes, activation_fn=None, scope="fc4")
    end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


lenet.default_image_size = 28


def lenet_arg_scope(weight_decay=0.0):
    """conv2d and fully_connected with L2 weight decay, truncated normal (0.1) weights and relu."""
    with arg_scope([conv2d, fully_connected], weights_regularizer=l2_regularizer(weight_decay),
                   weights_initializer=truncated_normal_initializer(stddev=0.1), activation_fn=relu) as sc:
        return sc
