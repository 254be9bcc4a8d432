"""The metrics that are (weighted) means: mean, mean_tensor, accuracy, the regression errors,
percentage_below, mean_per_class_accuracy and mean_iou (TF's metrics_impl.py)."""
from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.metrics._common import (add_to_collections, check_compatible, flatten, metric_variable, remove_squeezable,
                                    safe_div, streaming_confusion_matrix)
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, ones_like, size, zeros_like
from pygrad.ops.confusion_matrix import broadcast_weights, remove_squeezable_dimensions
from pygrad.ops.manip_ops import where
from pygrad.ops.reduction_ops import reduce_mean, reduce_sum
from pygrad.ops.scatter_ops import gather_nd, scatter_add
from pygrad.ops.state_ops import assign_add
from pygrad.ops.variable_scope import variable_scope


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The weighted mean of values over the batches seen: variables `total` and `count`."""
    with variable_scope(name, "mean", (values, weights)):
        values = cast(convert_to_tensor(values), dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = cast(size(values), dtypes.float32)
        else:
            values, _, weights = remove_squeezable(values, None, weights, "mean")
            weights = broadcast_weights(cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = reduce_sum(weights)
        update_total = assign_add(total, reduce_sum(values))
        with get_default_graph().control_dependencies([values]):
            update_count = assign_add(count, num_values)
        value = safe_div(total, count, "value")
        add_to_collections(metrics_collections, value)
        update_op = safe_div(update_total, update_count, "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The elementwise weighted mean of values: variables `total_tensor` and `count_tensor` of
    values' shape."""
    with variable_scope(name, "mean", (values, weights)):
        values = cast(convert_to_tensor(values), dtypes.float32)
        total = metric_variable(values.shape, dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape, dtypes.float32, name="count_tensor")
        num_values = ones_like(values)
        if weights is not None:
            values, _, weights = remove_squeezable(values, None, weights, "mean_tensor")
            weights = broadcast_weights(cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.multiply(num_values, weights)
        update_total = assign_add(total, values)
        with get_default_graph().control_dependencies([values]):
            update_count = assign_add(count, num_values)
        value = safe_div(total, count, "value")
        add_to_collections(metrics_collections, value)
        update_op = safe_div(update_total, update_count, "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """How often predictions equal labels (weighted): the mean of the matches."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights, "accuracy")
    if labels.dtype != predictions.dtype:
        predictions = cast(predictions, labels.dtype)
    is_correct = cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                        name=None):
    predictions, labels, weights = remove_squeezable(predictions, labels, weights, "mean_absolute_error")
    errors = math_ops.abs(predictions - labels)
    return mean(errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                       name=None):
    predictions, labels, weights = remove_squeezable(predictions, labels, weights, "mean_squared_error")
    errors = math_ops.squared_difference(labels, predictions)
    return mean(errors, weights, metrics_collections, updates_collections, name or "mean_squared_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                            name=None):
    """sqrt of mean_squared_error's value and update op (its variables under this metric's name)."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights, "root_mean_squared_error")
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None, name or "root_mean_squared_error")
    rmse = math_ops.sqrt(mse)
    add_to_collections(metrics_collections, rmse)
    update_op = math_ops.sqrt(update_mse)
    add_to_collections(updates_collections, update_op)
    return rmse, update_op


def mean_relative_error(labels, predictions, normalizer, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of |labels - predictions| / normalizer (0 where normalizer is 0)."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights, "mean_relative_error")
    predictions, normalizer = remove_squeezable_dimensions(predictions, normalizer)
    check_compatible(predictions, normalizer, "mean_relative_error", "predictions and normalizer")
    relative = where(math_ops.equal(normalizer, 0.0), zeros_like(labels),
                     math_ops.divide(math_ops.abs(labels - predictions), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections, name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None, updates_collections=None,
                         name=None):
    """1 - the mean of the dot products of labels and predictions along dim (both unit-normalized)."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights, "mean_cosine_distance")
    radial = reduce_sum(math_ops.multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    mean_distance = math_ops.subtract(1.0, mean_distance)
    update_op = math_ops.subtract(1.0, update_op)
    add_to_collections(metrics_collections, mean_distance)
    add_to_collections(updates_collections, update_op)
    return mean_distance, update_op


def percentage_below(values, threshold, weights=None, metrics_collections=None, updates_collections=None,
                     name=None):
    """The (weighted) fraction of values below threshold."""
    below = cast(math_ops.less(values, threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections, name or "percentage_below_threshold")


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The mean over classes of each class's accuracy: variables `total` (the examples of each
    label) and `count` (the correct ones). As TF, the update op gives the per-class accuracies."""
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = flatten(cast(convert_to_tensor(labels), dtypes.int64))
        predictions = flatten(convert_to_tensor(predictions))
        check_compatible(predictions, labels, "mean_per_class_accuracy")
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = ones_like(labels, dtype=dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = cast(predictions, labels.dtype)
        is_correct = cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = cast(flatten(convert_to_tensor(weights)), dtypes.float32)
            is_correct = is_correct * weights
            ones = ones * weights
        update_total = scatter_add(total, labels, ones)
        update_count = scatter_add(count, labels, is_correct)
        per_class = math_ops.div_no_nan(count, math_ops.maximum(total, 0.0))
        value = reduce_mean(per_class, name="mean_accuracy")
        add_to_collections(metrics_collections, value)
        update_op = safe_div(update_count, update_total, "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None, updates_collections=None,
             name=None):
    """The mean over classes of intersection over union, from a float64 confusion matrix (the
    variable `total_confusion_matrix`); the update op adds a batch's matrix and gives it, as TF."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
        check_compatible(predictions, labels, "mean_iou")
        total_cm, update_op = streaming_confusion_matrix(labels, predictions, num_classes, weights)
        sum_over_row = cast(reduce_sum(total_cm, 0), dtypes.float32)
        sum_over_col = cast(reduce_sum(total_cm, 1), dtypes.float32)
        cm_diag = cast(gather_nd(total_cm, [[i, i] for i in range(num_classes)]), dtypes.float32)
        denominator = sum_over_row + sum_over_col - cm_diag
        num_valid = reduce_sum(cast(math_ops.not_equal(denominator, 0.0), dtypes.float32))
        denominator = where(math_ops.greater(denominator, 0.0), denominator, ones_like(denominator))
        iou = math_ops.divide(cm_diag, denominator)
        value = where(math_ops.greater(num_valid, 0.0), reduce_sum(iou, name="mean_iou") / num_valid, 0.0)
        add_to_collections(metrics_collections, value)
        add_to_collections(updates_collections, update_op)
        return value, update_op
