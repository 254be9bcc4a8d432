"""TF-Slim's summary helpers (tf.contrib.layers.summarize_*): a scalar summary for a scalar, a
histogram for any other tensor, and for an activation also the fraction of zeros (relu, softplus,
relu6) and of sixes (relu6). Tags are '<op name>_summary' unless given."""
import functools
import re

from pygrad import dtypes
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.reduction_ops import reduce_mean
from pygrad.ops.summary_ops import histogram, scalar

__all__ = ["summarize_activation", "summarize_activations", "summarize_biases", "summarize_collection",
           "summarize_tensor", "summarize_tensors", "summarize_variables", "summarize_weights"]


def _scalar(tensor, tag=None):
    if tensor.shape.ndims != 0:
        raise ValueError(f"Shape {tensor.shape} must have rank 0")
    return scalar(tag or f"{tensor.op.name}_summary", tensor)


def _histogram(tensor, tag=None):
    return histogram(tag or f"{tensor.op.name}_summary", tensor)


def _fraction(compare, x, bound):
    return reduce_mean(math_ops.cast(compare(x, math_ops.cast(bound, x.dtype)), dtypes.float32))


def summarize_activation(op):
    """A histogram '<op>/activation' of an activation tensor, and the fraction of its inputs below 0
    ('<op>/zeros', for Relu, Softplus and Relu6) and above 6 ('<op>/sixes', for Relu6)."""
    name, kind = op.op.name, op.op.type
    if kind in ("Relu", "Softplus", "Relu6"):
        _scalar(_fraction(math_ops.less, op.op.inputs[0], 0.0), f"{name}/zeros")
    if kind == "Relu6":
        _scalar(_fraction(math_ops.greater, op.op.inputs[0], 6.0), f"{name}/sixes")
    return _histogram(op, f"{name}/activation")


def summarize_tensor(tensor, tag=None):
    """A scalar summary of a scalar tensor, a histogram of any other; None for string and bool tensors."""
    if tensor.dtype in (dtypes.string, dtypes.bool_):
        return None
    if tensor.shape.ndims == 0:
        return _scalar(tensor, tag)
    return _histogram(tensor, tag)


def summarize_tensors(tensors, summarizer=summarize_tensor):
    return [summarizer(t) for t in tensors]


def summarize_collection(collection, name_filter=None, summarizer=summarize_tensor):
    """summarizer of every tensor of a collection whose op name matches name_filter (re.match)."""
    tensors = [t for t in get_default_graph().get_collection(collection)
               if name_filter is None or re.match(name_filter, t.op.name)]
    return summarize_tensors(tensors, summarizer)


summarize_variables = functools.partial(summarize_collection, GraphKeys.GLOBAL_VARIABLES)
summarize_weights = functools.partial(summarize_collection, GraphKeys.WEIGHTS)
summarize_biases = functools.partial(summarize_collection, GraphKeys.BIASES)


def summarize_activations(name_filter=None, summarizer=summarize_activation):
    return summarize_collection(GraphKeys.ACTIVATIONS, name_filter, summarizer)
