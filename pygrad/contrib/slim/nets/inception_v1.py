"""TF-Slim's Inception v1 (GoogLeNet, Szegedy et al., arXiv:1409.4842) with batch norm:
inception_v1_base (up to any end point), inception_v1 (7x7 average pool, dropout, 1x1 logits;
inputs of 193x193 or more) and inception_v1_arg_scope."""
from pygrad.contrib.framework.arg_scope import arg_scope
from pygrad.contrib.layers import (
    avg_pool2d,
    batch_norm,
    conv2d,
    dropout,
    fully_connected,
    l2_regularizer,
    max_pool2d,
    softmax,
    variance_scaling_initializer,
)
from pygrad.contrib.slim.nets.inception_blocks import run_layers
from pygrad.graph import GraphKeys
from pygrad.ops.array_ops import squeeze
from pygrad.ops.init_ops import truncated_normal_initializer
from pygrad.ops.nn_ops import relu
from pygrad.ops.variable_scope import variable_scope

__all__ = ["inception_v1", "inception_v1_arg_scope", "inception_v1_base"]


def _mixed(d0, d1a, d1b, d2a, d2b, d3, b2_scope="Conv2d_0b_3x3"):
    """A v1 module: 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 | 3x3 max pool -> 1x1."""
    return [[("conv", d0, [1, 1], "Conv2d_0a_1x1")],
            [("conv", d1a, [1, 1], "Conv2d_0a_1x1"), ("conv", d1b, [3, 3], "Conv2d_0b_3x3")],
            [("conv", d2a, [1, 1], "Conv2d_0a_1x1"), ("conv", d2b, [3, 3], b2_scope)],
            [("max", [3, 3], "MaxPool_0a_3x3"), ("conv", d3, [1, 1], "Conv2d_0b_1x1")]]


_LAYERS = [
    ("Conv2d_1a_7x7", "conv", 64, [7, 7], {"stride": 2}),
    ("MaxPool_2a_3x3", "max", [3, 3], {"stride": 2}),
    ("Conv2d_2b_1x1", "conv", 64, [1, 1]),
    ("Conv2d_2c_3x3", "conv", 192, [3, 3]),
    ("MaxPool_3a_3x3", "max", [3, 3], {"stride": 2}),
    ("Mixed_3b", "module", _mixed(64, 96, 128, 16, 32, 32)),
    ("Mixed_3c", "module", _mixed(128, 128, 192, 32, 96, 64)),
    ("MaxPool_4a_3x3", "max", [3, 3], {"stride": 2}),
    ("Mixed_4b", "module", _mixed(192, 96, 208, 16, 48, 64)),
    ("Mixed_4c", "module", _mixed(160, 112, 224, 24, 64, 64)),
    ("Mixed_4d", "module", _mixed(128, 128, 256, 24, 64, 64)),
    ("Mixed_4e", "module", _mixed(112, 144, 288, 32, 64, 64)),
    ("Mixed_4f", "module", _mixed(256, 160, 320, 32, 128, 128)),
    ("MaxPool_5a_2x2", "max", [2, 2], {"stride": 2}),
    ("Mixed_5b", "module", _mixed(256, 160, 320, 32, 128, 128, b2_scope="Conv2d_0a_3x3")),  # TF-Slim's scope
    ("Mixed_5c", "module", _mixed(384, 192, 384, 48, 128, 128)),
]


def inception_v1_base(inputs, final_endpoint="Mixed_5c", scope="InceptionV1"):
    """(net, end_points) up to final_endpoint; convolutions and max pools SAME with stride 1 unless
    given, weights truncated normal (0.01)."""
    with variable_scope(scope, "InceptionV1", [inputs]), \
            arg_scope([conv2d, fully_connected], weights_initializer=truncated_normal_initializer(0.0, 0.01)), \
            arg_scope([conv2d, max_pool2d], stride=1, padding="SAME"):
        return run_layers(inputs, _LAYERS, final_endpoint)


def inception_v1(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.8, prediction_fn=softmax,
                 spatial_squeeze=True, reuse=None, scope="InceptionV1"):
    """(logits, end_points): the base, then Logits/ a 7x7 average pool, dropout and a 1x1
    convolution; end_points adds 'Logits' and 'Predictions'."""
    with variable_scope(scope, "InceptionV1", [inputs, num_classes], reuse=reuse) as sc, \
            arg_scope([batch_norm, dropout], is_training=is_training):
        net, end_points = inception_v1_base(inputs, scope=sc)
        with variable_scope("Logits"):
            net = avg_pool2d(net, [7, 7], stride=1, scope="MaxPool_0a_7x7")
            net = dropout(net, dropout_keep_prob, scope="Dropout_0b")
            logits = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="Conv2d_0c_1x1")
            if spatial_squeeze:
                logits = squeeze(logits, [1, 2], name="SpatialSqueeze")
            end_points["Logits"] = logits
            end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v1.default_image_size = 224


def inception_v1_arg_scope(weight_decay=0.00004, use_batch_norm=True, batch_norm_var_collection="moving_vars"):
    """L2 weight decay; conv2d with variance-scaling weights, relu and (use_batch_norm) batch norm
    whose moving statistics are also in batch_norm_var_collection."""
    batch_norm_params = {
        "decay": 0.9997, "epsilon": 0.001, "updates_collections": GraphKeys.UPDATE_OPS,
        "variables_collections": {"beta": None, "gamma": None, "moving_mean": [batch_norm_var_collection],
                                  "moving_variance": [batch_norm_var_collection]},
    }
    normalizer_fn, normalizer_params = (batch_norm, batch_norm_params) if use_batch_norm else (None, {})
    with arg_scope([conv2d, fully_connected], weights_regularizer=l2_regularizer(weight_decay)), \
            arg_scope([conv2d], weights_initializer=variance_scaling_initializer(), activation_fn=relu,
                      normalizer_fn=normalizer_fn, normalizer_params=normalizer_params) as sc:
        return sc
