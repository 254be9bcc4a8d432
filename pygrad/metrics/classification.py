"""Binary classification metrics (TF's metrics_impl.py): the counts true_positives, false_positives,
true_negatives, false_negatives and their _at_thresholds variants; precision and recall, at the
prediction's truth value or at thresholds; auc (ROC and PR); specificity_at_sensitivity and
sensitivity_at_specificity."""
from pygrad import dtypes
from pygrad.metrics._common import (add_to_collections, confusion_at_thresholds, metric_variable,
                                    remove_squeezable)
from pygrad.ops import check_ops, math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, identity, ones_like
from pygrad.ops.cumulative_ops import cumsum
from pygrad.ops.manip_ops import gather, where
from pygrad.ops.reduction_ops import argmax, argmin, reduce_min, reduce_sum
from pygrad.ops.state_ops import assign_add
from pygrad.ops.variable_scope import variable_scope
from pygrad.platform import tf_logging

# ---------------------------------------------------------------- counts


def _count_condition(values, weights, metrics_collections, updates_collections, metric):
    """The weighted count of the true values: variable `count` (TF's _count_condition)."""
    check_ops.assert_type(values, dtypes.bool_)
    count = metric_variable([], dtypes.float32, name="count")
    values = cast(values, dtypes.float32)
    if weights is not None:
        weights = convert_to_tensor(weights)
        w, v = weights.shape.ndims, values.shape.ndims
        if w is not None and v is not None and w not in (0, v):
            raise ValueError(f"tf.metrics.{metric}: weights must be a scalar or have the rank of the values ({v}), "
                             f"got shape {weights.shape}")
        values = math_ops.multiply(values, cast(weights, dtypes.float32))
    value = identity(count)
    add_to_collections(metrics_collections, value)
    update_op = assign_add(count, reduce_sum(values))
    add_to_collections(updates_collections, update_op)
    return value, update_op


# (label, prediction) of each count
_CONDITIONS = {"true_positives": (True, True), "false_positives": (False, True), "true_negatives": (False, False),
               "false_negatives": (True, False)}
_KIND = {"true_positives": "tp", "false_positives": "fp", "true_negatives": "tn", "false_negatives": "fn"}


def _count(metric, labels, predictions, weights, metrics_collections, updates_collections, name):
    label_is, prediction_is = _CONDITIONS[metric]
    with variable_scope(name, metric, (predictions, labels, weights)):
        predictions, labels, weights = remove_squeezable(cast(predictions, dtypes.bool_), cast(labels, dtypes.bool_),
                                                         weights, metric)
        condition = math_ops.logical_and(math_ops.equal(labels, label_is), math_ops.equal(predictions, prediction_is))
        return _count_condition(condition, weights, metrics_collections, updates_collections, metric)


def true_positives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _count("true_positives", labels, predictions, weights, metrics_collections, updates_collections, name)


def false_positives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _count("false_positives", labels, predictions, weights, metrics_collections, updates_collections, name)


def true_negatives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _count("true_negatives", labels, predictions, weights, metrics_collections, updates_collections, name)


def false_negatives(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _count("false_negatives", labels, predictions, weights, metrics_collections, updates_collections, name)


def _count_at_thresholds(metric, labels, predictions, thresholds, weights, metrics_collections, updates_collections,
                         name):
    kind = _KIND[metric]
    with variable_scope(name, metric, (predictions, labels, weights)):
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, (kind,), metric)
        value = identity(values[kind])
        add_to_collections(metrics_collections, value)
        add_to_collections(updates_collections, updates[kind])
        return value, updates[kind]


def true_positives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                 updates_collections=None, name=None):
    return _count_at_thresholds("true_positives", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def false_positives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    return _count_at_thresholds("false_positives", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def true_negatives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                 updates_collections=None, name=None):
    return _count_at_thresholds("true_negatives", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def false_negatives_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    return _count_at_thresholds("false_negatives", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


# ---------------------------------------------------------------- precision and recall


def _ratio(metric, other, labels, predictions, weights, metrics_collections, updates_collections, name):
    """tp / (tp + other count), 0 when that is 0 (precision: false_positives; recall: false_negatives)."""
    with variable_scope(name, metric, (predictions, labels, weights)):
        predictions, labels, weights = remove_squeezable(cast(predictions, dtypes.bool_), cast(labels, dtypes.bool_),
                                                         weights, metric)
        tp, tp_update = true_positives(labels, predictions, weights)
        rest, rest_update = other(labels, predictions, weights)

        def compute(tp, rest, name):
            return where(math_ops.greater(tp + rest, 0.0), math_ops.divide(tp, tp + rest), 0.0, name=name)

        value = compute(tp, rest, "value")
        add_to_collections(metrics_collections, value)
        update_op = compute(tp_update, rest_update, "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


def precision(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _ratio("precision", false_positives, labels, predictions, weights, metrics_collections,
                  updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _ratio("recall", false_negatives, labels, predictions, weights, metrics_collections,
                  updates_collections, name)


def _ratio_at_thresholds(metric, other, labels, predictions, thresholds, weights, metrics_collections,
                         updates_collections, name):
    """tp / (1e-7 + tp + other) at each threshold (precision: fp; recall: fn)."""
    with variable_scope(name, metric + "_at_thresholds", (predictions, labels, weights)):
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, ("tp", other),
                                                  metric + "_at_thresholds")
        epsilon = 1e-7

        def compute(tp, rest, name):
            return math_ops.divide(tp, epsilon + tp + rest, name=f"{metric}_{name}")

        value = compute(values["tp"], values[other], "value")
        add_to_collections(metrics_collections, value)
        update_op = compute(updates["tp"], updates[other], "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


def precision_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    return _ratio_at_thresholds("precision", "fp", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def recall_at_thresholds(labels, predictions, thresholds, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    return _ratio_at_thresholds("recall", "fn", labels, predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


# ---------------------------------------------------------------- auc

_SUMMATIONS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")


def _interpolate_pr_auc(tp, fp, fn, n):
    """The PR curve's area by interpolating precision between thresholds (Davis & Goadrich 2006)."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    prec_slope = math_ops.div_no_nan(dtp, math_ops.maximum(p[:n - 1] - p[1:], 0.0), name="prec_slope")
    intercept = tp[1:] - math_ops.multiply(prec_slope, p[1:])
    safe_p_ratio = where(math_ops.logical_and(p[:n - 1] > 0.0, p[1:] > 0.0),
                         math_ops.div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0.0), name="recall_relative_ratio"),
                         ones_like(p[1:]))
    return reduce_sum(math_ops.div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                                          math_ops.maximum(tp[1:] + fn[1:], 0.0), name="pr_auc_increment"),
                      name="interpolate_pr_auc")


def _area(tp, fn, tn, fp, n, curve, summation_method, name):
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolate_pr_auc(tp, fp, fn, n)
    epsilon = 1.0e-6
    rec = math_ops.divide(tp + epsilon, tp + fn + epsilon)
    if curve == "ROC":
        x, y = math_ops.divide(fp, fp + tn + epsilon), rec
    else:
        x, y = rec, math_ops.divide(tp + epsilon, tp + fp + epsilon)
    if summation_method in ("trapezoidal", "careful_interpolation"):
        heights = (y[:n - 1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        heights = math_ops.minimum(y[:n - 1], y[1:])
    else:
        heights = math_ops.maximum(y[:n - 1], y[1:])
    return reduce_sum(math_ops.multiply(x[:n - 1] - x[1:], heights), name=name)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None, updates_collections=None,
        curve="ROC", name=None, summation_method="trapezoidal", thresholds=None):
    """The area under the ROC or PR curve, from counts at num_thresholds thresholds spread over
    [0, 1] (or the given ones): variables `true_positives`, `false_negatives`, `true_negatives`,
    `false_positives`. Predictions must be in [0, 1] (assert ops)."""
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if summation_method not in _SUMMATIONS:
            raise ValueError(f"Invalid summation_method: {summation_method} summation_method should be "
                             f"'trapezoidal', 'careful_interpolation', 'minoring', or 'majoring'.")
        if curve == "PR" and summation_method == "trapezoidal":
            tf_logging.warning("Trapezoidal rule is known to produce incorrect PR-AUCs; please switch to "
                               "\"careful_interpolation\" instead.")
        kepsilon = 1e-7
        if thresholds is not None:
            thresholds = sorted(thresholds)
            num_thresholds = len(thresholds) + 2
        else:
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon] + list(thresholds) + [1.0 + kepsilon]
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, metric="auc")
        value = _area(values["tp"], values["fn"], values["tn"], values["fp"], num_thresholds, curve,
                      summation_method, "value")
        add_to_collections(metrics_collections, value)
        update_op = _area(updates["tp"], updates["fn"], updates["tn"], updates["fp"], num_thresholds, curve,
                          summation_method, "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


# ---------------------------------------------------------------- one rate at a given other


def _at_rate(metric, given, labels, predictions, target, weights, num_thresholds, metrics_collections,
             updates_collections, name, last_threshold, compute):
    if target < 0 or target > 1:
        raise ValueError(f"`{given}` must be in the range [0, 1]. Currently, `{given}` is {target}.")
    with variable_scope(name, metric, (predictions, labels, weights)):
        kepsilon = 1e-7
        thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon] + thresholds + [last_threshold]
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights, metric=metric)
        value = compute(values["tp"], values["tn"], values["fp"], values["fn"], target, "value")
        add_to_collections(metrics_collections, value)
        update_op = compute(updates["tp"], updates["tn"], updates["fp"], updates["fn"], target, "update_op")
        add_to_collections(updates_collections, update_op)
        return value, update_op


def _specificity_at(tp, tn, fp, fn, sensitivity, name):
    """The specificity at the last threshold whose sensitivity is nearest the target."""
    kepsilon = 1e-7
    sensitivities = math_ops.divide(tp, tp + fn + kepsilon)
    min_val = reduce_min(math_ops.abs(sensitivities - sensitivity))
    at_min = cast(math_ops.equal(math_ops.abs(sensitivities - sensitivity), min_val), dtypes.int64)
    index = cast(argmax(cumsum(at_min), 0), dtypes.int32)
    tn_i, fp_i = gather(tn, index), gather(fp, index)
    return math_ops.divide(tn_i, tn_i + fp_i + kepsilon, name=name)


def _sensitivity_at(tp, tn, fp, fn, specificity, name):
    """The sensitivity at the first threshold whose specificity is nearest the target."""
    kepsilon = 1e-7
    specificities = math_ops.divide(tn, tn + fp + kepsilon)
    index = cast(argmin(math_ops.abs(specificities - specificity), 0), dtypes.int32)
    tp_i, fn_i = gather(tp, index), gather(fn, index)
    return math_ops.divide(tp_i, tp_i + fn_i + kepsilon, name=name)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None, num_thresholds=200,
                               metrics_collections=None, updates_collections=None, name=None):
    # As TF: the last threshold is 1 - 1e-7 here (1 + 1e-7 in sensitivity_at_specificity).
    return _at_rate("specificity_at_sensitivity", "sensitivity", labels, predictions, sensitivity, weights,
                    num_thresholds, metrics_collections, updates_collections, name, 1.0 - 1e-7, _specificity_at)


def sensitivity_at_specificity(labels, predictions, specificity, weights=None, num_thresholds=200,
                               metrics_collections=None, updates_collections=None, name=None):
    return _at_rate("sensitivity_at_specificity", "specificity", labels, predictions, specificity, weights,
                    num_thresholds, metrics_collections, updates_collections, name, 1.0 + 1e-7, _sensitivity_at)
