"""Weight regularizers (tf.contrib.layers.l1_regularizer, l2_regularizer, ...): callables that map a
weight tensor to a scalar loss, or to None when their scale is 0, as TF1's."""
import numbers

from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.nn_ops import l2_loss
from pygrad.ops.reduction_ops import reduce_sum


def _check_scale(scale):
    """None when the scale disables the regularizer; ValueError for integer or negative scales (TF's rules)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}.")
        if scale == 0.0:
            return None
    return scale


def _scaled(default_name, scale, scope, penalty):
    if _check_scale(scale) is None:
        return lambda _: None

    def regularizer(weights):
        with get_default_graph().name_scope(scope or default_name) as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype, name="scale")
            return math_ops.multiply(my_scale, penalty(weights), name=name)

    return regularizer


def l1_regularizer(scale, scope=None):
    """scale * sum(|w|)."""
    return _scaled("l1_regularizer", scale, scope, lambda w: reduce_sum(math_ops.abs(w)))


def l2_regularizer(scale, scope=None):
    """scale * sum(w^2) / 2 (tf.nn.l2_loss)."""
    return _scaled("l2_regularizer", scale, scope, l2_loss)


def sum_regularizer(regularizer_list, scope=None):
    """The sum of the regularizers' losses (None if none gives one)."""
    regularizer_list = [r for r in regularizer_list if r is not None]
    if not regularizer_list:
        return None

    def regularizer(weights):
        with get_default_graph().name_scope(scope or "sum_regularizer") as name:
            losses = [t for t in (r(weights) for r in regularizer_list) if t is not None]
            return math_ops.add_n(losses, name=name) if losses else None

    return regularizer


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """l1_regularizer(scale_l1) + l2_regularizer(scale_l2) in name scope 'l1_l2_regularizer'; the
    other one alone when a scale is 0."""
    for name, scale in (("scale_l1", scale_l1), ("scale_l2", scale_l2)):
        if isinstance(scale, numbers.Integral):
            raise ValueError(f"{name} cannot be an integer: {scale}")
    scope = scope or "l1_l2_regularizer"
    if isinstance(scale_l1, numbers.Real) and scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if isinstance(scale_l2, numbers.Real) and scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer, weights_list=None):
    """The sum of regularizer(w) over weights_list (default: tf.GraphKeys.WEIGHTS), a None penalty
    counting 0, named 'get_regularization_penalty' and added to tf.GraphKeys.REGULARIZATION_LOSSES."""
    graph = get_default_graph()
    if not weights_list:
        weights_list = graph.get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with graph.name_scope("get_regularization_penalty") as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else convert_to_tensor(0.0) for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a Tensor with rank "
                                 f"{p.shape.ndims}.")
        total = math_ops.add_n(penalties, name=scope)
    graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total
