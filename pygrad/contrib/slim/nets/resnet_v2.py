"""TF-Slim's ResNet v2 (He et al., arXiv:1603.05027): pre-activation bottleneck units (batch
norm and relu before the convolutions), a 'postnorm' before the pool; resnet_v2_50/101/152/200
and resnet_arg_scope."""
from pygrad.contrib.framework.arg_scope import add_arg_scope, arg_scope
from pygrad.contrib.layers import batch_norm, conv2d, max_pool2d, softmax
from pygrad.contrib.layers.utils import (
    collect_named_outputs,
    convert_collection_to_dict,
    last_dimension,
)
from pygrad.contrib.slim.nets import resnet_utils
from pygrad.ops.nn_ops import relu
from pygrad.ops.reduction_ops import reduce_mean
from pygrad.ops.variable_scope import variable_scope

__all__ = [
    "bottleneck",
    "resnet_arg_scope",
    "resnet_v2",
    "resnet_v2_50",
    "resnet_v2_101",
    "resnet_v2_152",
    "resnet_v2_200",
    "resnet_v2_block",
]

resnet_arg_scope = resnet_utils.resnet_arg_scope


@add_arg_scope
def bottleneck(inputs, depth, depth_bottleneck, stride, rate=1, outputs_collections=None, scope=None):
    """shortcut + (1x1 -> 3x3 (stride, rate) -> 1x1 linear) of relu(batch_norm(inputs)) ('preact');
    the shortcut a 1x1 projection of preact when the depth changes, else the input subsampled."""
    with variable_scope(scope, "bottleneck_v2", [inputs]) as sc:
        depth_in = last_dimension(inputs.shape, min_rank=4)
        preact = batch_norm(inputs, activation_fn=relu, scope="preact")
        if depth == depth_in:
            shortcut = resnet_utils.subsample(inputs, stride, "shortcut")
        else:
            shortcut = conv2d(preact, depth, [1, 1], stride=stride, normalizer_fn=None, activation_fn=None,
                              scope="shortcut")
        residual = conv2d(preact, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = resnet_utils.conv2d_same(residual, depth_bottleneck, 3, stride, rate=rate, scope="conv2")
        residual = conv2d(residual, depth, [1, 1], stride=1, normalizer_fn=None, activation_fn=None, scope="conv3")
        return collect_named_outputs(outputs_collections, sc.name, shortcut + residual)


def resnet_v2(inputs, blocks, num_classes=None, is_training=True, global_pool=True, output_stride=None,
              include_root_block=True, reuse=None, scope=None):
    """(net, end_points): the root block (a plain 7x7/2 convolution, 3x3/2 max pool), the blocks,
    'postnorm' (batch norm, relu), the global average pool 'pool5' and the 1x1 'logits'
    convolution (with num_classes), end_points holding the layers' outputs and 'predictions'."""
    with variable_scope(scope, "resnet_v2", [inputs], reuse=reuse) as sc:
        collection = sc.original_name_scope + "_end_points"
        with arg_scope([conv2d, bottleneck, resnet_utils.stack_blocks_dense], outputs_collections=collection), \
                arg_scope([batch_norm], is_training=is_training):
            net = inputs
            if include_root_block:
                if output_stride is not None:
                    if output_stride % 4 != 0:
                        raise ValueError("The output_stride needs to be a multiple of 4.")
                    output_stride /= 4
                with arg_scope([conv2d], activation_fn=None, normalizer_fn=None):
                    net = resnet_utils.conv2d_same(net, 64, 7, stride=2, scope="conv1")
                net = max_pool2d(net, [3, 3], stride=2, scope="pool1")
            net = resnet_utils.stack_blocks_dense(net, blocks, output_stride)
            net = batch_norm(net, activation_fn=relu, scope="postnorm")
            if global_pool:
                net = reduce_mean(net, [1, 2], name="pool5", keepdims=True)
            if num_classes is not None:
                net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="logits")
            end_points = convert_collection_to_dict(collection)
            if num_classes is not None:
                end_points["predictions"] = softmax(net, scope="predictions")
            return net, end_points


resnet_v2.default_image_size = 224


def resnet_v2_block(scope, base_depth, num_units, stride):
    """num_units pre-activation bottleneck units of depth 4 * base_depth, the last one strided."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth}
    return resnet_utils.Block(scope, bottleneck, [dict(unit, stride=1)] * (num_units - 1) + [dict(unit, stride=stride)])


def _resnet_v2_n(units, default_scope):
    def net(inputs, num_classes=None, is_training=True, global_pool=True, output_stride=None, reuse=None,
            scope=default_scope):
        blocks = [resnet_v2_block("block1", base_depth=64, num_units=units[0], stride=2),
                  resnet_v2_block("block2", base_depth=128, num_units=units[1], stride=2),
                  resnet_v2_block("block3", base_depth=256, num_units=units[2], stride=2),
                  resnet_v2_block("block4", base_depth=512, num_units=units[3], stride=1)]
        return resnet_v2(inputs, blocks, num_classes, is_training, global_pool, output_stride,
                         include_root_block=True, reuse=reuse, scope=scope)

    net.__name__ = net.__qualname__ = default_scope
    net.__doc__ = f"ResNet v2 with {units} bottleneck units per block; (net, end_points)."
    net.default_image_size = resnet_v2.default_image_size
    return net


resnet_v2_50 = _resnet_v2_n((3, 4, 6, 3), "resnet_v2_50")
resnet_v2_101 = _resnet_v2_n((3, 4, 23, 3), "resnet_v2_101")
resnet_v2_152 = _resnet_v2_n((3, 8, 36, 3), "resnet_v2_152")
resnet_v2_200 = _resnet_v2_n((3, 24, 36, 3), "resnet_v2_200")
