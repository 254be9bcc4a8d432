"""What TF-Slim's ResNets share: Block (a scope, a unit function and its arguments per unit),
subsample, conv2d_same (a strided convolution padded explicitly, so its output does not depend on
the input's parity), stack_blocks_dense (with atrous convolution for an output_stride) and
resnet_arg_scope."""
import collections

from pygrad.contrib.framework.arg_scope import add_arg_scope, arg_scope
from pygrad.contrib.layers import (
    batch_norm,
    conv2d,
    l2_regularizer,
    max_pool2d,
    variance_scaling_initializer,
)
from pygrad.contrib.layers.utils import collect_named_outputs
from pygrad.graph import GraphKeys
from pygrad.ops.nn_ops import relu
from pygrad.ops.sequence_ops import pad
from pygrad.ops.variable_scope import variable_scope

__all__ = ["Block", "conv2d_same", "resnet_arg_scope", "stack_blocks_dense", "subsample"]


class Block(collections.namedtuple("Block", ["scope", "unit_fn", "args"])):
    """A ResNet block: its scope name, the unit function, and one dict of arguments per unit."""


def subsample(inputs, factor, scope=None):
    """inputs strided by factor (a 1x1 max pool), or inputs when factor is 1."""
    return inputs if factor == 1 else max_pool2d(inputs, [1, 1], stride=factor, scope=scope)


def conv2d_same(inputs, num_outputs, kernel_size, stride, rate=1, scope=None):
    """A SAME convolution for stride 1; for a larger stride, the input zero-padded by the
    (dilated) kernel size - 1, split as evenly as possible, then a VALID convolution."""
    if stride == 1:
        return conv2d(inputs, num_outputs, kernel_size, stride=1, rate=rate, padding="SAME", scope=scope)
    pad_total = kernel_size + (kernel_size - 1) * (rate - 1) - 1
    pad_beg = pad_total // 2
    inputs = pad(inputs, [[0, 0], [pad_beg, pad_total - pad_beg], [pad_beg, pad_total - pad_beg], [0, 0]])
    return conv2d(inputs, num_outputs, kernel_size, stride=stride, rate=rate, padding="VALID", scope=scope)


@add_arg_scope
def stack_blocks_dense(net, blocks, output_stride=None, outputs_collections=None):
    """The blocks' units in order (scopes <block>/unit_<i>). With output_stride, once the
    accumulated stride reaches it the units run at stride 1 with a growing atrous rate."""
    current_stride, rate = 1, 1
    for block in blocks:
        with variable_scope(block.scope, "block", [net]) as sc:
            for i, unit in enumerate(block.args):
                if output_stride is not None and current_stride > output_stride:
                    raise ValueError("The target output_stride cannot be reached.")
                with variable_scope(f"unit_{i + 1}", values=[net]):
                    if output_stride is not None and current_stride == output_stride:
                        net = block.unit_fn(net, rate=rate, **dict(unit, stride=1))
                        rate *= unit.get("stride", 1)
                    else:
                        net = block.unit_fn(net, rate=1, **unit)
                        current_stride *= unit.get("stride", 1)
            net = collect_named_outputs(outputs_collections, sc.name, net)
    if output_stride is not None and current_stride != output_stride:
        raise ValueError("The target output_stride cannot be reached.")
    return net


def resnet_arg_scope(weight_decay=0.0001, batch_norm_decay=0.997, batch_norm_epsilon=1e-5, batch_norm_scale=True):
    """conv2d with L2 weight decay, variance-scaling weights, relu and batch norm (these
    parameters, moving statistics updated through UPDATE_OPS); SAME max pools."""
    batch_norm_params = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon, "scale": batch_norm_scale,
                         "updates_collections": GraphKeys.UPDATE_OPS}
    with arg_scope([conv2d], weights_regularizer=l2_regularizer(weight_decay),
                   weights_initializer=variance_scaling_initializer(), activation_fn=relu, normalizer_fn=batch_norm,
                   normalizer_params=batch_norm_params), \
            arg_scope([batch_norm], **batch_norm_params), arg_scope([max_pool2d], padding="SAME") as arg_sc:
        return arg_sc
