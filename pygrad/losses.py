"""tf.losses: TF1's loss functions (losses_impl.py), each a per-element loss reduced by
compute_weighted_loss and added to a collection (tf.GraphKeys.LOSSES by default).

As TF: the per-element losses and the weights are cast to float32 for the weighting and the result
back to the losses' dtype; the default reduction, SUM_BY_NONZERO_WEIGHTS, divides the weighted sum
by the number of losses whose (broadcast) weight is not zero, and a zero count gives 0.
"""
from pygrad import dtypes
from pygrad.graph import GraphKeys, build_error, get_default_graph
from pygrad.ops import activation_ops, math_ops
from pygrad.ops.array_ops import cast, constant, convert_to_tensor, ones_like, shape, size, squeeze, stop_gradient
from pygrad.ops.nn_ops import softmax_cross_entropy_with_logits_v2, sparse_softmax_cross_entropy_with_logits
from pygrad.ops.reduction_ops import reduce_sum


class Reduction:
    """How compute_weighted_loss reduces the weighted losses (TF's string values)."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


def _safe_div(numerator, denominator):
    """numerator / denominator, or 0 where the denominator is 0 (TF's div_no_nan)."""
    return math_ops.div_no_nan(numerator, denominator, name="value")


def _check_weights(weights, losses, op):
    """weights must broadcast to losses: a scalar, or the losses' rank with each dimension 1 or theirs."""
    w, s = weights.shape, losses.shape
    if w.ndims in (None, 0) or s.ndims is None:
        return
    ok = w.ndims == s.ndims and all(a is None or b is None or a in (1, b) for a, b in zip(w.as_list(), s.as_list()))
    if not ok:
        raise build_error(op, None, f"weights can not be broadcast to values: weights {w}, values {s} (weights must "
                                    f"be a scalar or have the values' rank, each dimension 1 or the values')")


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """losses * weights, reduced as `reduction` says, added to loss_collection (unless None)."""
    Reduction.validate(reduction)
    with get_default_graph().name_scope(scope or "weighted_loss"):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = cast(losses, dtypes.float32)
        weights = cast(convert_to_tensor(weights), dtypes.float32)
        _check_weights(weights, losses, "compute_weighted_loss")
        weighted = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_div(loss, reduce_sum(ones_like(losses) * weights))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                present = cast(math_ops.not_equal(weights, 0.0), dtypes.float32) * ones_like(losses)
                loss = _safe_div(loss, reduce_sum(present, name="num_present"))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(loss, cast(size(losses), dtypes.float32))
        loss = cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _required(op, **values):
    for what, v in values.items():
        if v is None:
            raise build_error(op, None, f"{what} must not be None.")


def _same_shape(op, a, b, what_a, what_b):
    if not a.shape.is_compatible_with(b.shape):
        raise build_error(op, None, f"{what_a} {a.shape} and {what_b} {b.shape} must have the same shape")


def _reduced(op, labels, predictions, weights, scope, loss_collection, reduction, fn):
    """compute_weighted_loss of fn(labels, predictions), both cast to float32 as TF does."""
    _required(op, labels=labels, predictions=predictions)
    with get_default_graph().name_scope(scope or op) as name:
        predictions = cast(convert_to_tensor(predictions), dtypes.float32)
        labels = cast(convert_to_tensor(labels), dtypes.float32)
        _same_shape(op, predictions, labels, "predictions", "labels")
        return compute_weighted_loss(fn(labels, predictions), weights, name, loss_collection, reduction)


# The per-element losses, in the dtype of their inputs (the loss functions give them float32).
def _absolute_error(y, p):
    return math_ops.abs(p - y)


def _squared_error(y, p):
    return math_ops.squared_difference(p, y)


def _huber_error(y, p, delta):
    """TF's form: 0.5 q^2 + delta (|e| - q) with q = min(|e|, delta), e = p - y."""
    abs_error = math_ops.abs(p - y)
    quadratic = math_ops.minimum(abs_error, delta)
    linear = abs_error - quadratic
    return 0.5 * (quadratic * quadratic) + delta * linear


def _log_error(y, p, epsilon):
    return -(y * math_ops.log(p + epsilon)) - (1 - y) * math_ops.log(1 - p + epsilon)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    return _reduced("absolute_difference", labels, predictions, weights, scope, loss_collection, reduction,
                    _absolute_error)


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels)^2, weighted and reduced."""
    return _reduced("mean_squared_error", labels, predictions, weights, scope, loss_collection, reduction,
                    _squared_error)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta), e = predictions - labels."""
    return _reduced("huber_loss", labels, predictions, weights, scope, loss_collection, reduction,
                    lambda y, p: _huber_error(y, p, delta))


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None, loss_collection=GraphKeys.LOSSES,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels log(predictions + epsilon) - (1 - labels) log(1 - predictions + epsilon)."""
    return _reduced("log_loss", labels, predictions, weights, scope, loss_collection, reduction,
                    lambda y, p: _log_error(y, p, epsilon))


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """max(0, 1 - (2 labels - 1) logits), labels in {0, 1}."""
    def fn(y, x):
        ones = ones_like(y)
        return math_ops.relu(ones - (2 * y - ones) * x)

    return _reduced("hinge_loss", labels, logits, weights, scope, loss_collection, reduction, fn)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross-entropy per element; label_smoothing moves the labels toward 1/2:
    z (1 - label_smoothing) + 0.5 label_smoothing."""
    _required("sigmoid_cross_entropy", multi_class_labels=multi_class_labels, logits=logits)
    with get_default_graph().name_scope(scope or "sigmoid_cross_entropy_loss") as name:
        logits = convert_to_tensor(logits)
        labels = cast(convert_to_tensor(multi_class_labels), logits.dtype)
        _same_shape("sigmoid_cross_entropy", logits, labels, "logits", "multi_class_labels")
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = activation_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy per row; label_smoothing gives labels (1 - label_smoothing) onehot +
    label_smoothing / num_classes. No gradient flows to the labels."""
    _required("softmax_cross_entropy", onehot_labels=onehot_labels, logits=logits)
    with get_default_graph().name_scope(scope or "softmax_cross_entropy_loss") as name:
        logits = convert_to_tensor(logits)
        labels = cast(convert_to_tensor(onehot_labels), logits.dtype)
        _same_shape("softmax_cross_entropy", logits, labels, "logits", "onehot_labels")
        if label_smoothing > 0:
            num_classes = cast(shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        labels = stop_gradient(labels, name="labels_stop_gradient")
        losses = softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def _squeeze_last(t, rank_wanted):
    """t without a last dimension of size 1 when its rank is one more than rank_wanted (TF's
    remove_squeezable_dimensions, for static ranks)."""
    if t.shape.ndims is not None and rank_wanted is not None and t.shape.ndims == rank_wanted + 1 and \
            t.shape[-1].value == 1:
        return squeeze(t, [-1])
    return t


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Cross-entropy against integer class ids; labels (and weights) of shape [batch, 1] are
    squeezed to [batch], as TF does."""
    _required("sparse_softmax_cross_entropy", labels=labels, logits=logits)
    with get_default_graph().name_scope(scope or "sparse_softmax_cross_entropy_loss") as name:
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels)
        rank = None if logits.shape.ndims is None else logits.shape.ndims - 1
        labels = _squeeze_last(labels, rank)
        weights = convert_to_tensor(weights)
        if weights.shape.ndims not in (None, 0):
            weights = _squeeze_last(weights, rank)
        losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


# ---------------------------------------------------------------- collections


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses, or a constant 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the losses in tf.GraphKeys.LOSSES (and the regularization losses)."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    if not losses:
        raise build_error("AddN", name, "get_total_loss found no losses in tf.GraphKeys.LOSSES" +
                          (" or tf.GraphKeys.REGULARIZATION_LOSSES" if add_regularization_losses else ""))
    return math_ops.add_n(losses, name=name)
