"""slim.losses (tf.contrib.losses): TF1's losses under their contrib signatures, which take the
predictions or logits first (softmax_cross_entropy(logits, onehot_labels), ...). Each is
pygrad.losses' function with the default reduction (the weighted sum over the number of non-zero
weights, contrib's mean), contrib's weights (a trailing 1 dropped, the rest weighing the losses'
leading dimensions) given as weights that broadcast the same way;
hinge_loss returns the unreduced losses and collects nothing, as contrib's."""
from pygrad import losses as tf_losses
from pygrad.contrib.framework.arg_scope import add_arg_scope
from pygrad.graph import GraphKeys
from pygrad.ops.array_ops import convert_to_tensor, reshape, squeeze

__all__ = ["absolute_difference", "add_loss", "compute_weighted_loss", "get_losses", "get_regularization_losses",
           "get_total_loss", "hinge_loss", "log_loss", "mean_squared_error", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy"]

get_losses = tf_losses.get_losses
get_regularization_losses = tf_losses.get_regularization_losses


@add_arg_scope
def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    tf_losses.add_loss(loss, loss_collection)


def get_total_loss(add_regularization_losses=True, name="total_loss"):
    return tf_losses.get_total_loss(add_regularization_losses=add_regularization_losses, name=name)


def _weights(weights, rank):
    """contrib's weights for losses of the given rank: a trailing dimension of 1 dropped, then
    weights of a lower rank weigh the losses' leading dimensions (given trailing 1s, for
    tf.losses' broadcasting)."""
    weights = convert_to_tensor(weights)
    n = weights.shape.ndims
    if n is None or n == 0:
        return weights
    if n > 1 and weights.shape[-1].value in (1, None):
        weights, n = squeeze(weights, [-1]), n - 1
    return reshape(weights, weights.shape.as_list() + [1] * (rank - n)) if n < rank else weights


def _rank(t):
    return convert_to_tensor(t).shape.ndims


def compute_weighted_loss(losses, weights=1.0, scope=None):
    return tf_losses.compute_weighted_loss(losses, _weights(weights, _rank(losses)), scope=scope)


def absolute_difference(predictions, labels=None, weights=1.0, scope=None):
    return tf_losses.absolute_difference(labels, predictions, _weights(weights, _rank(predictions)), scope=scope)


def mean_squared_error(predictions, labels=None, weights=1.0, scope=None):
    return tf_losses.mean_squared_error(labels, predictions, _weights(weights, _rank(predictions)), scope=scope)


def log_loss(predictions, labels=None, weights=1.0, epsilon=1e-7, scope=None):
    return tf_losses.log_loss(labels, predictions, _weights(weights, _rank(predictions)), epsilon=epsilon, scope=scope)


def hinge_loss(logits, labels=None, scope=None):
    return tf_losses.hinge_loss(labels, logits, scope=scope, loss_collection=None,
                                reduction=tf_losses.Reduction.NONE)


def sigmoid_cross_entropy(logits, multi_class_labels, weights=1.0, label_smoothing=0, scope=None):
    return tf_losses.sigmoid_cross_entropy(multi_class_labels, logits, _weights(weights, _rank(logits)),
                                           label_smoothing=label_smoothing, scope=scope)


def softmax_cross_entropy(logits, onehot_labels, weights=1.0, label_smoothing=0, scope=None):
    return tf_losses.softmax_cross_entropy(onehot_labels, logits, _weights(weights, 1),
                                           label_smoothing=label_smoothing, scope=scope)


def sparse_softmax_cross_entropy(logits, labels, weights=1.0, scope=None):
    labels = convert_to_tensor(labels)
    batch = labels.shape[0].value if labels.shape.ndims else None
    labels = reshape(labels, [-1 if batch is None else batch])  # contrib: labels of shape [batch]
    return tf_losses.sparse_softmax_cross_entropy(labels, logits, _weights(weights, 1), scope=scope)
