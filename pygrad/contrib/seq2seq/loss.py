"""tf.contrib.seq2seq.sequence_loss, as TF 1.15's loss.py: the weighted cross-entropy of a
sequence of logits, reduced over the time and batch dimensions as its flags say."""
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, reshape, shape
from pygrad.ops.cumulative_ops import count_nonzero
from pygrad.ops.nn_ops import sparse_softmax_cross_entropy_with_logits
from pygrad.ops.reduction_ops import reduce_sum

__all__ = ["sequence_loss"]


def sequence_loss(logits, targets, weights, average_across_timesteps=True, average_across_batch=True,
                  sum_over_timesteps=False, sum_over_batch=False, softmax_loss_function=None, name=None):
    """The cross-entropy of logits [batch, time, classes] against the int targets [batch, time],
    times weights [batch, time]. average_across_*: summed over the dimension and divided by the
    sum of the weights there; sum_over_*: divided by the number of non-zero weights instead (both
    0 where the divisor is 0). With neither for a dimension it is kept: the result has rank 0, 1
    ([batch] or [time]) or 2. softmax_loss_function(labels=, logits=) replaces the sparse softmax
    cross-entropy."""
    logits, targets, weights = convert_to_tensor(logits), convert_to_tensor(targets), convert_to_tensor(weights)
    for t, rank, what in ((logits, 3, "Logits must be a [batch_size x sequence_length x logits] tensor"),
                          (targets, 2, "Targets must be a [batch_size x sequence_length] tensor"),
                          (weights, 2, "Weights must be a [batch_size x sequence_length] tensor")):
        if t.shape.ndims != rank:
            raise ValueError(f"sequence_loss: {what}, got {t.name} of shape {t.shape}")
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at same time.")
    with get_default_graph().name_scope(name or "sequence_loss"):
        logits_flat = reshape(logits, [-1, shape(logits)[2]])
        targets_flat = reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = sparse_softmax_cross_entropy_with_logits(labels=targets_flat, logits=logits_flat)
        else:
            crossent = softmax_loss_function(labels=targets_flat, logits=logits_flat)
        crossent *= reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return math_ops.div_no_nan(reduce_sum(crossent), reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            total = cast(count_nonzero(weights), crossent.dtype)
            return math_ops.div_no_nan(reduce_sum(crossent), total)
        crossent = reshape(crossent, shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return math_ops.div_no_nan(reduce_sum(crossent, axis=axis), reduce_sum(weights, axis=axis))
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            total = cast(count_nonzero(weights, axis=axis), crossent.dtype)
            return math_ops.div_no_nan(reduce_sum(crossent, axis=axis), total)
        return crossent
