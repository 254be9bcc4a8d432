"""TF-Slim's Inception v3 (Szegedy et al., arXiv:1512.00567): inception_v3_base (up to any end
point, depths scaled by depth_multiplier, at least min_depth), inception_v3 (auxiliary logits on
Mixed_6e, average pool, dropout, 1x1 logits; inputs of 107x107 or more with the auxiliary head, 75x75
without) and inception_v3_arg_scope."""
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

__all__ = ["inception_v3", "inception_v3_arg_scope", "inception_v3_base"]

_S2_VALID = {"stride": 2, "padding": "VALID"}

# The stem: VALID convolutions and pools with stride 1 unless given.
_STEM = [
    ("Conv2d_1a_3x3", "conv", 32, [3, 3], {"stride": 2}),
    ("Conv2d_2a_3x3", "conv", 32, [3, 3]),
    ("Conv2d_2b_3x3", "conv", 64, [3, 3], {"padding": "SAME"}),
    ("MaxPool_3a_3x3", "max", [3, 3], {"stride": 2}),
    ("Conv2d_3b_1x1", "conv", 80, [1, 1]),
    ("Conv2d_4a_3x3", "conv", 192, [3, 3]),
    ("MaxPool_5a_3x3", "max", [3, 3], {"stride": 2}),
]


def _mixed_5(pool_depth, b1_scopes=("Conv2d_0a_1x1", "Conv2d_0b_5x5")):
    """35x35 module: 1x1 | 1x1 -> 5x5 | 1x1 -> 3x3 -> 3x3 | 3x3 average pool -> 1x1."""
    return [[("conv", 64, [1, 1], "Conv2d_0a_1x1")],
            [("conv", 48, [1, 1], b1_scopes[0]), ("conv", 64, [5, 5], b1_scopes[1])],
            [("conv", 64, [1, 1], "Conv2d_0a_1x1"), ("conv", 96, [3, 3], "Conv2d_0b_3x3"),
             ("conv", 96, [3, 3], "Conv2d_0c_3x3")],
            [("avg", [3, 3], "AvgPool_0a_3x3"), ("conv", pool_depth, [1, 1], "Conv2d_0b_1x1")]]


def _mixed_6(c7):
    """17x17 module with factorized 7x7 convolutions of c7 filters."""
    return [[("conv", 192, [1, 1], "Conv2d_0a_1x1")],
            [("conv", c7, [1, 1], "Conv2d_0a_1x1"), ("conv", c7, [1, 7], "Conv2d_0b_1x7"),
             ("conv", 192, [7, 1], "Conv2d_0c_7x1")],
            [("conv", c7, [1, 1], "Conv2d_0a_1x1"), ("conv", c7, [7, 1], "Conv2d_0b_7x1"),
             ("conv", c7, [1, 7], "Conv2d_0c_1x7"), ("conv", c7, [7, 1], "Conv2d_0d_7x1"),
             ("conv", 192, [1, 7], "Conv2d_0e_1x7")],
            [("avg", [3, 3], "AvgPool_0a_3x3"), ("conv", 192, [1, 1], "Conv2d_0b_1x1")]]


def _mixed_7(b1_second_scope):
    """8x8 module with expanded (1x3 and 3x1 side by side) filter banks."""
    return [[("conv", 320, [1, 1], "Conv2d_0a_1x1")],
            [("conv", 384, [1, 1], "Conv2d_0a_1x1"),
             ("fork", [("conv", 384, [1, 3], "Conv2d_0b_1x3"), ("conv", 384, [3, 1], b1_second_scope)])],
            [("conv", 448, [1, 1], "Conv2d_0a_1x1"), ("conv", 384, [3, 3], "Conv2d_0b_3x3"),
             ("fork", [("conv", 384, [1, 3], "Conv2d_0c_1x3"), ("conv", 384, [3, 1], "Conv2d_0d_3x1")])],
            [("avg", [3, 3], "AvgPool_0a_3x3"), ("conv", 192, [1, 1], "Conv2d_0b_1x1")]]


# The modules: SAME convolutions and pools with stride 1 unless given.
_MODULES = [
    ("Mixed_5b", "module", _mixed_5(32)),
    ("Mixed_5c", "module", _mixed_5(64, ("Conv2d_0b_1x1", "Conv_1_0c_5x5"))),  # TF-Slim's scopes
    ("Mixed_5d", "module", _mixed_5(64)),
    ("Mixed_6a", "module", [
        [("conv", 384, [3, 3], "Conv2d_1a_1x1", _S2_VALID)],
        [("conv", 64, [1, 1], "Conv2d_0a_1x1"), ("conv", 96, [3, 3], "Conv2d_0b_3x3"),
         ("conv", 96, [3, 3], "Conv2d_1a_1x1", _S2_VALID)],
        [("max", [3, 3], "MaxPool_1a_3x3", _S2_VALID)]]),
    ("Mixed_6b", "module", _mixed_6(128)),
    ("Mixed_6c", "module", _mixed_6(160)),
    ("Mixed_6d", "module", _mixed_6(160)),
    ("Mixed_6e", "module", _mixed_6(192)),
    ("Mixed_7a", "module", [
        [("conv", 192, [1, 1], "Conv2d_0a_1x1"), ("conv", 320, [3, 3], "Conv2d_1a_3x3", _S2_VALID)],
        [("conv", 192, [1, 1], "Conv2d_0a_1x1"), ("conv", 192, [1, 7], "Conv2d_0b_1x7"),
         ("conv", 192, [7, 1], "Conv2d_0c_7x1"), ("conv", 192, [3, 3], "Conv2d_1a_3x3", _S2_VALID)],
        [("max", [3, 3], "MaxPool_1a_3x3", _S2_VALID)]]),
    ("Mixed_7b", "module", _mixed_7("Conv2d_0b_3x1")),
    ("Mixed_7c", "module", _mixed_7("Conv2d_0c_3x1")),
]


def _depth_fn(depth_multiplier, min_depth):
    if depth_multiplier <= 0:
        raise ValueError("depth_multiplier is not greater than zero.")
    return lambda d: max(int(d * depth_multiplier), min_depth)


def inception_v3_base(inputs, final_endpoint="Mixed_7c", min_depth=16, depth_multiplier=1.0, scope=None):
    """(net, end_points) up to final_endpoint."""
    depth = _depth_fn(depth_multiplier, min_depth)
    in_stem = final_endpoint in [layer[0] for layer in _STEM]
    with variable_scope(scope, "InceptionV3", [inputs]):
        with arg_scope([conv2d, max_pool2d, avg_pool2d], stride=1, padding="VALID"):
            net, end_points = run_layers(inputs, _STEM, final_endpoint if in_stem else _STEM[-1][0], depth)
        if in_stem:
            return net, end_points
        with arg_scope([conv2d, max_pool2d, avg_pool2d], stride=1, padding="SAME"):
            net, more = run_layers(net, _MODULES, final_endpoint, depth)
        end_points.update(more)
        return net, end_points


def _reduced_kernel_size_for_small_input(input_tensor, kernel_size):
    """kernel_size, each dimension bounded by the input's (when static)."""
    shape = input_tensor.shape.as_list()
    if shape[1] is None or shape[2] is None:
        return kernel_size
    return [min(shape[1], kernel_size[0]), min(shape[2], kernel_size[1])]


def inception_v3(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.8, min_depth=16,
                 depth_multiplier=1.0, prediction_fn=softmax, spatial_squeeze=True, reuse=None,
                 create_aux_logits=True, scope="InceptionV3"):
    """(logits, end_points): the base; AuxLogits on Mixed_6e (5x5/3 average pool, 1x1, 5x5 VALID,
    1x1 logits) when create_aux_logits; Logits/ an 8x8 average pool (smaller for small inputs),
    dropout and a 1x1 convolution. end_points adds 'AuxLogits', 'PreLogits', 'Logits' and
    'Predictions'."""
    depth = _depth_fn(depth_multiplier, min_depth)
    with variable_scope(scope, "InceptionV3", [inputs, num_classes], reuse=reuse) as sc, \
            arg_scope([batch_norm, dropout], is_training=is_training):
        net, end_points = inception_v3_base(inputs, scope=sc, min_depth=min_depth, depth_multiplier=depth_multiplier)
        if create_aux_logits and num_classes:
            end_points["AuxLogits"] = _aux_logits(end_points["Mixed_6e"], num_classes, depth, spatial_squeeze)
        with variable_scope("Logits"):
            kernel = _reduced_kernel_size_for_small_input(net, [8, 8])
            net = avg_pool2d(net, kernel, padding="VALID", scope="AvgPool_1a_{}x{}".format(*kernel))
            net = dropout(net, keep_prob=dropout_keep_prob, scope="Dropout_1b")
            end_points["PreLogits"] = net
            logits = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="Conv2d_1c_1x1")
            if spatial_squeeze:
                logits = squeeze(logits, [1, 2], name="SpatialSqueeze")
        end_points["Logits"] = logits
        end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


def _aux_logits(net, num_classes, depth, spatial_squeeze):
    """The auxiliary head (scope AuxLogits): 5x5/3 average pool, 1x1, 5x5 VALID (smaller for small
    inputs), 1x1 logits."""
    with arg_scope([conv2d, max_pool2d, avg_pool2d], stride=1, padding="SAME"), variable_scope("AuxLogits"):
        aux = avg_pool2d(net, [5, 5], stride=3, padding="VALID", scope="AvgPool_1a_5x5")
        aux = conv2d(aux, depth(128), [1, 1], scope="Conv2d_1b_1x1")
        kernel = _reduced_kernel_size_for_small_input(aux, [5, 5])
        aux = conv2d(aux, depth(768), kernel, weights_initializer=truncated_normal_initializer(0.0, 0.01),
                     padding="VALID", scope="Conv2d_2a_{}x{}".format(*kernel))
        aux = conv2d(aux, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                     weights_initializer=truncated_normal_initializer(0.0, 0.001), scope="Conv2d_2b_1x1")
        return squeeze(aux, [1, 2], name="SpatialSqueeze") if spatial_squeeze else aux


inception_v3.default_image_size = 299


def inception_v3_arg_scope(weight_decay=0.00004, batch_norm_var_collection="moving_vars", batch_norm_decay=0.9997,
                           batch_norm_epsilon=0.001, updates_collections=GraphKeys.UPDATE_OPS,
                           use_fused_batchnorm=True):
    """L2 weight decay; conv2d with variance-scaling weights, relu and batch norm (these
    parameters; moving statistics also in batch_norm_var_collection)."""
    batch_norm_params = {
        "decay": batch_norm_decay, "epsilon": batch_norm_epsilon, "updates_collections": updates_collections,
        "fused": use_fused_batchnorm,
        "variables_collections": {"beta": None, "gamma": None, "moving_mean": [batch_norm_var_collection],
                                  "moving_variance": [batch_norm_var_collection]},
    }
    with arg_scope([conv2d, fully_connected], weights_regularizer=l2_regularizer(weight_decay)), \
            arg_scope([conv2d], weights_initializer=variance_scaling_initializer(), activation_fn=relu,
                      normalizer_fn=batch_norm, normalizer_params=batch_norm_params) as sc:
        return sc
