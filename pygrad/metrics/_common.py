"""What the metrics share (TF's metrics_impl.py helpers): the metric variables, the squeezing of
predictions, labels and weights, the streaming confusion matrices, and the adding of a metric's
value and update op to the collections the caller names.

A metric's variables are local (GraphKeys.LOCAL_VARIABLES and METRIC_VARIABLES), not trainable,
and start at zero; tf.local_variables_initializer resets them. As TF, the value tensor reads the
variables and the update op adds one batch to them and gives the metric after that batch.
"""
from pygrad import dtypes
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import check_ops, math_ops
from pygrad.ops.array_ops import cast, constant, convert_to_tensor, expand_dims, reshape, squeeze, zeros
from pygrad.ops.manip_ops import tile
from pygrad.ops.confusion_matrix import broadcast_weights, confusion_matrix, remove_squeezable_dimensions
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.ops.state_ops import Variable, assign_add


def metric_variable(shape, dtype, validate_shape=True, name=None):
    """A zero-initialized, non-trainable variable in the LOCAL_VARIABLES and METRIC_VARIABLES
    collections (TF's metric_variable)."""
    return Variable(lambda: zeros(shape, dtype), trainable=False, validate_shape=validate_shape, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def add_to_collections(collections, value):
    if collections:
        get_default_graph().add_to_collections(collections, value)


def safe_div(numerator, denominator, name):
    """numerator / max(denominator, 0), 0 where that is 0 (TF's div_no_nan(t, maximum(c, 0)))."""
    return math_ops.div_no_nan(numerator, math_ops.maximum(denominator, 0.0), name=name)


def check_compatible(a, b, metric, what="predictions and labels"):
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"tf.metrics.{metric}: {what} must have compatible shapes, got {a.shape} and {b.shape}")


def remove_squeezable(predictions, labels, weights, metric):
    """TF's _remove_squeezable_dimensions: predictions or labels squeezed in a last dimension of 1
    when their ranks differ by one; weights squeezed or expanded to the predictions' rank (a
    scalar stays one). Static ranks only: an unknown rank is left as it is."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        check_compatible(predictions, labels, metric)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    w, p = weights.shape.ndims, predictions.shape.ndims
    if w == 0 or w is None or p is None:
        return predictions, labels, weights
    if w - p == 1:
        weights = squeeze(weights, [-1])
    elif p - w == 1:
        weights = expand_dims(weights, -1)
    return predictions, labels, weights


def flatten(t):
    """t as a vector when its rank is more than 1."""
    return reshape(t, [-1]) if t.shape.ndims is not None and t.shape.ndims > 1 else t


def streaming_confusion_matrix(labels, predictions, num_classes, weights=None):
    """(the float64 [num_classes, num_classes] variable total_confusion_matrix, the op adding a
    batch's confusion matrix to it) (TF's _streaming_confusion_matrix)."""
    total_cm = metric_variable([num_classes, num_classes], dtypes.float64, name="total_confusion_matrix")
    predictions = flatten(cast(predictions, dtypes.int64))
    labels = flatten(cast(labels, dtypes.int64))
    if weights is not None:
        weights = flatten(convert_to_tensor(weights))
    current = confusion_matrix(labels, predictions, num_classes, weights=weights, dtype=dtypes.float64)
    return total_cm, assign_add(total_cm, current)


KINDS = ("tp", "fn", "tn", "fp")
VARIABLE_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives", "fp": "false_positives"}


def confusion_at_thresholds(labels, predictions, thresholds, weights=None, includes=KINDS, metric="auc"):
    """({kind: variable}, {kind: update op}) of the float32 [len(thresholds)] counts of true
    positives, false negatives, true negatives and false positives (those in includes) when a
    prediction above a threshold is positive (TF's _confusion_matrix_at_thresholds). Predictions
    outside [0, 1] fail the run (assert ops)."""
    for kind in includes:
        if kind not in KINDS:
            raise ValueError(f"Invalid key: {kind}")
    predictions = convert_to_tensor(predictions)
    zero, one = constant(0, predictions.dtype), constant(1, predictions.dtype)
    checks = [check_ops.assert_greater_equal(predictions, zero, message="predictions must be in [0, 1]"),
              check_ops.assert_less_equal(predictions, one, message="predictions must be in [0, 1]")]
    with get_default_graph().control_dependencies(checks):
        predictions, labels, weights = remove_squeezable(cast(predictions, dtypes.float32),
                                                         cast(labels, dtypes.bool_), weights, metric)
    n = len(thresholds)
    predictions_2d = reshape(predictions, [1, -1])
    labels_2d = reshape(cast(labels, dtypes.bool_), [1, -1])
    thresh = constant([[float(t)] for t in thresholds], dtypes.float32)  # [n, 1]
    pred_is_pos = math_ops.greater(predictions_2d, thresh)  # [n, N], as TF's tiled comparison
    pred_is_neg = math_ops.logical_not(pred_is_pos)
    label_is_pos = tile(labels_2d, [n, 1])
    label_is_neg = math_ops.logical_not(label_is_pos)
    weights_2d = None
    if weights is not None:
        weights = broadcast_weights(cast(weights, dtypes.float32), predictions)
        weights_2d = reshape(weights, [1, -1])
    cases = {"tp": (label_is_pos, pred_is_pos), "fn": (label_is_pos, pred_is_neg),
             "tn": (label_is_neg, pred_is_neg), "fp": (label_is_neg, pred_is_pos)}
    values, updates = {}, {}
    for kind in KINDS:
        if kind not in includes:
            continue
        var = metric_variable([n], dtypes.float32, name=VARIABLE_NAMES[kind])
        is_case = cast(math_ops.logical_and(*cases[kind]), dtypes.float32)
        if weights_2d is not None:
            is_case = is_case * weights_2d
        updates[kind] = assign_add(var, reduce_sum(is_case, 1))
        values[kind] = var
    return values, updates
