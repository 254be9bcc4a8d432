"""TF-Slim's Inception v2 (Ioffe and Szegedy, arXiv:1502.03167): inception_v2_base (up to any end
point, depths scaled by depth_multiplier, at least min_depth; a separable 7x7 stem), inception_v2
(average pool, dropout, 1x1 logits) and inception_v2_arg_scope."""
from pygrad.contrib.framework.arg_scope import arg_scope
from pygrad.contrib.layers import (
    avg_pool2d,
    batch_norm,
    conv2d,
    dropout,
    fully_connected,
    l2_regularizer,
    max_pool2d,
    separable_conv2d,
    softmax,
    variance_scaling_initializer,
)
from pygrad.contrib.slim.nets.inception_blocks import run_layers
from pygrad.contrib.slim.nets.inception_v3 import (
    _depth_fn,
    _reduced_kernel_size_for_small_input,
)
from pygrad.graph import GraphKeys
from pygrad.ops.array_ops import squeeze
from pygrad.ops.init_ops import truncated_normal_initializer
from pygrad.ops.nn_ops import relu
from pygrad.ops.variable_scope import variable_scope

__all__ = ["inception_v2", "inception_v2_arg_scope", "inception_v2_base"]


def _tn(stddev):
    return {"weights_initializer": truncated_normal_initializer(0.0, stddev)}


def _mixed(d0, d1a, d1b, d2a, d2b, pool, d3):
    """1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 -> 3x3 | 3x3 pool ("avg" or "max") -> 1x1."""
    return [[("conv", d0, [1, 1], "Conv2d_0a_1x1")],
            [("conv", d1a, [1, 1], "Conv2d_0a_1x1", _tn(0.09)), ("conv", d1b, [3, 3], "Conv2d_0b_3x3")],
            [("conv", d2a, [1, 1], "Conv2d_0a_1x1", _tn(0.09)), ("conv", d2b, [3, 3], "Conv2d_0b_3x3"),
             ("conv", d2b, [3, 3], "Conv2d_0c_3x3")],
            [(pool, [3, 3], f"{pool.capitalize()}Pool_0a_3x3"), ("conv", d3, [1, 1], "Conv2d_0b_1x1", _tn(0.1))]]


def _reduction(d0a, d0b, d1a, d1b):
    """1x1 -> 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | 3x3/2 max pool."""
    s2 = {"stride": 2}
    return [[("conv", d0a, [1, 1], "Conv2d_0a_1x1", _tn(0.09)), ("conv", d0b, [3, 3], "Conv2d_1a_3x3", s2)],
            [("conv", d1a, [1, 1], "Conv2d_0a_1x1", _tn(0.09)), ("conv", d1b, [3, 3], "Conv2d_0b_3x3"),
             ("conv", d1b, [3, 3], "Conv2d_1a_3x3", s2)],
            [("max", [3, 3], "MaxPool_1a_3x3", s2)]]


# After the stem's separable Conv2d_1a_7x7: SAME convolutions and pools with stride 1 unless given.
_LAYERS = [
    ("MaxPool_2a_3x3", "max", [3, 3], {"stride": 2}),
    ("Conv2d_2b_1x1", "conv", 64, [1, 1], _tn(0.1)),
    ("Conv2d_2c_3x3", "conv", 192, [3, 3]),
    ("MaxPool_3a_3x3", "max", [3, 3], {"stride": 2}),
    ("Mixed_3b", "module", _mixed(64, 64, 64, 64, 96, "avg", 32)),
    ("Mixed_3c", "module", _mixed(64, 64, 96, 64, 96, "avg", 64)),
    ("Mixed_4a", "module", _reduction(128, 160, 64, 96)),
    ("Mixed_4b", "module", _mixed(224, 64, 96, 96, 128, "avg", 128)),
    ("Mixed_4c", "module", _mixed(192, 96, 128, 96, 128, "avg", 128)),
    ("Mixed_4d", "module", _mixed(160, 128, 160, 128, 160, "avg", 96)),
    ("Mixed_4e", "module", _mixed(96, 128, 192, 160, 192, "avg", 96)),
    ("Mixed_5a", "module", _reduction(128, 192, 192, 256)),
    ("Mixed_5b", "module", _mixed(352, 192, 320, 160, 224, "avg", 128)),
    ("Mixed_5c", "module", _mixed(352, 192, 320, 192, 224, "max", 128)),
]


def inception_v2_base(inputs, final_endpoint="Mixed_5c", min_depth=16, depth_multiplier=1.0, scope=None):
    """(net, end_points) up to final_endpoint."""
    depth = _depth_fn(depth_multiplier, min_depth)
    with variable_scope(scope, "InceptionV2", [inputs]), \
            arg_scope([conv2d, max_pool2d, avg_pool2d, separable_conv2d], stride=1, padding="SAME"):
        end_point = "Conv2d_1a_7x7"
        net = separable_conv2d(inputs, depth(64), [7, 7], depth_multiplier=min(int(depth(64) / 3), 8), stride=2,
                               weights_initializer=truncated_normal_initializer(0.0, 1.0), scope=end_point)
        end_points = {end_point: net}
        if final_endpoint == end_point:
            return net, end_points
        net, more = run_layers(net, _LAYERS, final_endpoint, depth)
        end_points.update(more)
        return net, end_points


def inception_v2(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.8, min_depth=16,
                 depth_multiplier=1.0, prediction_fn=softmax, spatial_squeeze=True, reuse=None, scope="InceptionV2"):
    """(logits, end_points): the base, then Logits/ a 7x7 average pool (smaller for small inputs),
    dropout and a 1x1 convolution; end_points adds 'Logits' and 'Predictions'."""
    _depth_fn(depth_multiplier, min_depth)
    with variable_scope(scope, "InceptionV2", [inputs, num_classes], reuse=reuse) as sc, \
            arg_scope([batch_norm, dropout], is_training=is_training):
        net, end_points = inception_v2_base(inputs, scope=sc, min_depth=min_depth, depth_multiplier=depth_multiplier)
        with variable_scope("Logits"):
            kernel = _reduced_kernel_size_for_small_input(net, [7, 7])
            net = avg_pool2d(net, kernel, padding="VALID", scope="AvgPool_1a_{}x{}".format(*kernel))
            net = dropout(net, keep_prob=dropout_keep_prob, scope="Dropout_1b")
            logits = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="Conv2d_1c_1x1")
            if spatial_squeeze:
                logits = squeeze(logits, [1, 2], name="SpatialSqueeze")
        end_points["Logits"] = logits
        end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v2.default_image_size = 224


def inception_v2_arg_scope(weight_decay=0.00004, batch_norm_var_collection="moving_vars"):
    """L2 weight decay; conv2d with variance-scaling weights, relu and batch norm whose moving
    statistics are also in batch_norm_var_collection."""
    batch_norm_params = {
        "decay": 0.9997, "epsilon": 0.001, "updates_collections": GraphKeys.UPDATE_OPS,
        "variables_collections": {"beta": None, "gamma": None, "moving_mean": [batch_norm_var_collection],
                                  "moving_variance": [batch_norm_var_collection]},
    }
    with arg_scope([conv2d, fully_connected], weights_regularizer=l2_regularizer(weight_decay)), \
            arg_scope([conv2d], weights_initializer=variance_scaling_initializer(), activation_fn=relu,
                      normalizer_fn=batch_norm, normalizer_params=batch_norm_params) as sc:
        return sc
