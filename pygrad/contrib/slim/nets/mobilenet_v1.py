"""TF-Slim's MobileNet v1 (Howard et al., arXiv:1704.04861; the models repository's
nets/mobilenet_v1.py): a 3x3 convolution, then 13 depthwise-separable layers, each a 3x3 depthwise
convolution ('Conv2d_<i>_depthwise') and a 1x1 one ('Conv2d_<i>_pointwise'), with batch norm and
relu6. mobilenet_v1_base (up to any end point, atrous past an output_stride, optionally explicit
padding), mobilenet_v1 (average pool, dropout, 1x1 logits 'Logits/Conv2d_1c_1x1'), its 0.75, 0.5
and 0.25 widths, and mobilenet_v1_arg_scope."""
import collections
import functools

from pygrad.contrib.framework.arg_scope import arg_scope
from pygrad.contrib.layers import (
    avg_pool2d,
    batch_norm,
    conv2d,
    dropout,
    l2_regularizer,
    separable_conv2d,
    softmax,
)
from pygrad.graph import GraphKeys
from pygrad.ops.activation_ops import relu6
from pygrad.ops.array_ops import squeeze
from pygrad.ops.init_ops import truncated_normal_initializer
from pygrad.ops.reduction_ops import reduce_mean
from pygrad.ops.sequence_ops import pad
from pygrad.ops.variable_scope import variable_scope

__all__ = ["Conv", "DepthSepConv", "MOBILENETV1_CONV_DEFS", "mobilenet_v1", "mobilenet_v1_025", "mobilenet_v1_050",
           "mobilenet_v1_075", "mobilenet_v1_arg_scope", "mobilenet_v1_base"]

Conv = collections.namedtuple("Conv", ["kernel", "stride", "depth"])  # a plain convolution
DepthSepConv = collections.namedtuple("DepthSepConv", ["kernel", "stride", "depth"])  # depthwise, then 1x1

MOBILENETV1_CONV_DEFS = [Conv([3, 3], 2, 32)] + [DepthSepConv([3, 3], stride, depth) for stride, depth in [
    (1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512), (1, 512), (1, 512), (1, 512), (1, 512), (1, 512),
    (2, 1024), (1, 1024)]]


def _fixed_padding(inputs, kernel_size, rate=1):
    """inputs zero-padded so that a VALID convolution gives SAME's output size: by the (dilated)
    kernel size - 1, split as evenly as possible. As the models repository's, the kernel's first
    dimension sets both."""
    pad_total = kernel_size[0] + (kernel_size[0] - 1) * (rate - 1) - 1
    before = pad_total // 2
    return pad(inputs, [[0, 0], [before, pad_total - before], [before, pad_total - before], [0, 0]])


def mobilenet_v1_base(inputs, final_endpoint="Conv2d_13_pointwise", min_depth=8, depth_multiplier=1.0,
                      conv_defs=None, output_stride=None, use_explicit_padding=False, scope=None):
    """(net, end_points) up to final_endpoint ('Conv2d_0', 'Conv2d_<i>_depthwise' or
    'Conv2d_<i>_pointwise'). Depths are max(int(depth * depth_multiplier), min_depth). With
    output_stride (8, 16 or 32), once the strides reach it the depthwise convolutions run at
    stride 1 with a growing atrous rate. use_explicit_padding: VALID convolutions on inputs
    padded as _fixed_padding."""
    if depth_multiplier <= 0:
        raise ValueError("depth_multiplier is not greater than zero.")
    if output_stride is not None and output_stride not in [8, 16, 32]:
        raise ValueError("Only allowed output_stride values are 8, 16, 32.")
    conv_defs = MOBILENETV1_CONV_DEFS if conv_defs is None else conv_defs
    end_points = {}

    def depth(d):
        return max(int(d * depth_multiplier), min_depth)

    with variable_scope(scope, "MobilenetV1", [inputs]), \
            arg_scope([conv2d, separable_conv2d], padding="VALID" if use_explicit_padding else "SAME"):
        current_stride, rate, net = 1, 1, inputs
        for i, conv_def in enumerate(conv_defs):
            if output_stride is not None and current_stride == output_stride:
                layer_stride, layer_rate = 1, rate
                rate *= conv_def.stride
            else:
                layer_stride, layer_rate = conv_def.stride, 1
                current_stride *= conv_def.stride
            if isinstance(conv_def, Conv):
                name = f"Conv2d_{i}"
                if use_explicit_padding:
                    net = _fixed_padding(net, conv_def.kernel)
                # the models repository's stride: conv_def's, never atrous
                net = end_points[name] = conv2d(net, depth(conv_def.depth), conv_def.kernel, stride=conv_def.stride,
                                                scope=name)
                if name == final_endpoint:
                    return net, end_points
            elif isinstance(conv_def, DepthSepConv):
                name = f"Conv2d_{i}_depthwise"
                if use_explicit_padding:
                    net = _fixed_padding(net, conv_def.kernel, layer_rate)
                net = end_points[name] = separable_conv2d(net, None, conv_def.kernel, depth_multiplier=1,
                                                          stride=layer_stride, rate=layer_rate, scope=name)
                if name == final_endpoint:
                    return net, end_points
                name = f"Conv2d_{i}_pointwise"
                net = end_points[name] = conv2d(net, depth(conv_def.depth), [1, 1], stride=1, scope=name)
                if name == final_endpoint:
                    return net, end_points
            else:
                raise ValueError(f"Unknown convolution type {type(conv_def).__name__} for layer {i}")
    raise ValueError(f"Unknown final endpoint {final_endpoint}")


def _reduced_kernel_size_for_small_input(net, kernel_size):
    """kernel_size, each side at most the input's (when the graph knows it)."""
    shape = net.shape.as_list()
    if shape[1] is None or shape[2] is None:
        return kernel_size
    return [min(shape[1], kernel_size[0]), min(shape[2], kernel_size[1])]


def mobilenet_v1(inputs, num_classes=1000, dropout_keep_prob=0.999, is_training=True, min_depth=8,
                 depth_multiplier=1.0, conv_defs=None, prediction_fn=softmax, spatial_squeeze=True, reuse=None,
                 scope="MobilenetV1", global_pool=False):
    """(logits, end_points): the base, then in 'Logits' a 7x7 VALID average pool (smaller for
    small inputs; 'global_pool' the mean over all positions instead), dropout and the 1x1
    convolution 'Conv2d_1c_1x1' (linear), squeezed to [batch, num_classes] with spatial_squeeze.
    Without num_classes (0 or None): the pooled features instead of the logits."""
    if inputs.shape.ndims != 4:
        raise ValueError(f"Invalid input tensor rank, expected 4, was: {inputs.shape.ndims}")
    with variable_scope(scope, "MobilenetV1", [inputs], reuse=reuse) as sc, \
            arg_scope([batch_norm, dropout], is_training=is_training):
        net, end_points = mobilenet_v1_base(inputs, scope=sc, min_depth=min_depth,
                                            depth_multiplier=depth_multiplier, conv_defs=conv_defs)
        with variable_scope("Logits"):
            if global_pool:
                net = end_points["global_pool"] = reduce_mean(net, [1, 2], keepdims=True, name="global_pool")
            else:
                net = end_points["AvgPool_1a"] = avg_pool2d(net, _reduced_kernel_size_for_small_input(net, [7, 7]),
                                                            padding="VALID", scope="AvgPool_1a")
            if not num_classes:
                return net, end_points
            net = dropout(net, keep_prob=dropout_keep_prob, scope="Dropout_1b")
            logits = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="Conv2d_1c_1x1")
            if spatial_squeeze:
                logits = squeeze(logits, [1, 2], name="SpatialSqueeze")
        end_points["Logits"] = logits
        if prediction_fn:
            end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


mobilenet_v1.default_image_size = 224


def _width(depth_multiplier):
    net = functools.partial(mobilenet_v1, depth_multiplier=depth_multiplier)
    functools.update_wrapper(net, mobilenet_v1)
    return net


mobilenet_v1_075 = _width(0.75)
mobilenet_v1_050 = _width(0.50)
mobilenet_v1_025 = _width(0.25)


def mobilenet_v1_arg_scope(is_training=True, weight_decay=0.00004, stddev=0.09, regularize_depthwise=False,
                           batch_norm_decay=0.9997, batch_norm_epsilon=0.001,
                           batch_norm_updates_collections=GraphKeys.UPDATE_OPS, normalizer_fn=batch_norm):
    """conv2d and separable_conv2d with truncated normal (stddev) weights, relu6 and normalizer_fn;
    batch norm centered and scaled (is_training unless None); L2 weight decay on conv2d, and on
    the depthwise convolutions with regularize_depthwise."""
    batch_norm_params = {"center": True, "scale": True, "decay": batch_norm_decay, "epsilon": batch_norm_epsilon,
                         "updates_collections": batch_norm_updates_collections}
    if is_training is not None:
        batch_norm_params["is_training"] = is_training
    regularizer = l2_regularizer(weight_decay)
    with arg_scope([conv2d, separable_conv2d], weights_initializer=truncated_normal_initializer(stddev=stddev),
                   activation_fn=relu6, normalizer_fn=normalizer_fn), \
            arg_scope([batch_norm], **batch_norm_params), \
            arg_scope([conv2d], weights_regularizer=regularizer), \
            arg_scope([separable_conv2d], weights_regularizer=regularizer if regularize_depthwise else None) as sc:
        return sc
