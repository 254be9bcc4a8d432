"""tf.contrib.metrics and slim.metrics: TF1's streaming_* names for tf.metrics (pygrad/metrics),
predictions first as contrib's order is, the same variables and ops; aggregate_metrics and
aggregate_metric_map gather (value, update_op) pairs."""
from pygrad import metrics
from pygrad.ops.math_ops import cast
from pygrad.ops.topk_ops import in_top_k
from pygrad import dtypes


_TAIL = ("weights", "metrics_collections", "updates_collections", "name")


def _swapped(fn, *extra, order=None):
    """contrib's wrapper of a tf.metrics function: predictions, labels, then extra (num_classes,
    k, ...), weights, the collections and name, positionally or by keyword."""
    names = order or extra + _TAIL

    def wrapper(predictions, labels, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"streaming_{fn.__name__} takes at most {len(names) + 2} positional arguments")
        for key, value in zip(names, args):
            if key in kwargs:
                raise TypeError(f"streaming_{fn.__name__} got multiple values for argument '{key}'")
            kwargs[key] = value
        return fn(labels=labels, predictions=predictions, **kwargs)
    wrapper.__name__ = "streaming_" + fn.__name__
    wrapper.__doc__ = f"tf.metrics.{fn.__name__} with predictions first (tf.contrib.metrics)."
    return wrapper


streaming_true_positives = _swapped(metrics.true_positives)
streaming_true_negatives = _swapped(metrics.true_negatives)
streaming_false_positives = _swapped(metrics.false_positives)
streaming_false_negatives = _swapped(metrics.false_negatives)
streaming_accuracy = _swapped(metrics.accuracy)
streaming_precision = _swapped(metrics.precision)
streaming_recall = _swapped(metrics.recall)
streaming_auc = _swapped(metrics.auc, order=("weights", "num_thresholds", "metrics_collections",
                                              "updates_collections", "curve", "name"))
streaming_mean_absolute_error = _swapped(metrics.mean_absolute_error)
streaming_mean_squared_error = _swapped(metrics.mean_squared_error)
streaming_root_mean_squared_error = _swapped(metrics.root_mean_squared_error)
streaming_mean_relative_error = _swapped(metrics.mean_relative_error, "normalizer")
streaming_mean_cosine_distance = _swapped(metrics.mean_cosine_distance, "dim")
streaming_mean_iou = _swapped(metrics.mean_iou, "num_classes")
streaming_precision_at_thresholds = _swapped(metrics.precision_at_thresholds, "thresholds")
streaming_recall_at_thresholds = _swapped(metrics.recall_at_thresholds, "thresholds")
streaming_specificity_at_sensitivity = _swapped(metrics.specificity_at_sensitivity, "sensitivity")
streaming_sensitivity_at_specificity = _swapped(metrics.sensitivity_at_specificity, "specificity")
streaming_sparse_precision_at_k = _swapped(metrics.precision_at_k, "k", "class_id")
streaming_sparse_recall_at_k = _swapped(metrics.recall_at_k, "k", "class_id")
streaming_sparse_average_precision_at_k = _swapped(metrics.average_precision_at_k, "k")


def streaming_mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return metrics.mean(values, weights=weights, metrics_collections=metrics_collections,
                        updates_collections=updates_collections, name=name)


def streaming_mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return metrics.mean_tensor(values, weights=weights, metrics_collections=metrics_collections,
                               updates_collections=updates_collections, name=name)


def streaming_percentage_less(values, threshold, weights=None, metrics_collections=None, updates_collections=None,
                              name=None):
    return metrics.percentage_below(values, threshold, weights=weights, metrics_collections=metrics_collections,
                                    updates_collections=updates_collections, name=name)


def streaming_recall_at_k(predictions, labels, k, weights=None, metrics_collections=None, updates_collections=None,
                          name=None):
    """The mean of in_top_k(predictions, labels, k) (contrib's; its default name recall_at_<k>)."""
    hits = cast(in_top_k(predictions, labels, k), dtypes.float32)
    return streaming_mean(hits, weights, metrics_collections, updates_collections, name or f"recall_at_{k}")


def aggregate_metrics(*value_update_tuples):
    """([values], [update_ops]) of (value, update_op) pairs."""
    if not value_update_tuples:
        raise ValueError("Expected at least one value_tensor/update_op pair")
    values, updates = zip(*value_update_tuples)
    return list(values), list(updates)


def aggregate_metric_map(names_to_tuples):
    """({name: value}, {name: update_op}) of {name: (value, update_op)}."""
    names = names_to_tuples.keys()
    values, updates = zip(*names_to_tuples.values())
    return dict(zip(names, values)), dict(zip(names, updates))
