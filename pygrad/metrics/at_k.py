"""Metrics over the top k predictions (TF's metrics_impl.py): precision_at_k, recall_at_k, their
_at_top_k forms (given the top-k indices), average_precision_at_k, and TF1's older names
sparse_precision_at_k and sparse_average_precision_at_k.

TF counts with set operations on each example's set of predicted ids and set of labels: true
positives |predicted ∩ labels|, false positives |predicted - labels|, false negatives |labels -
predicted|. The labels are a dense int tensor ([D1, ... DN, num_labels], or [D1, ... DN] for one
label each; every entry is a label, -1 too, as in TF's dense sets) or a SparseTensor of
[D1, ... DN, num_labels] (its entries are the labels). Here the sets are computed with comparisons
over the last dimension: an id that occurs twice in a row counts once, as in a set. The counts are
float64 variables named after the metric ("precision_at_5/true_positive_at_5", ...).
"""
from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.metrics._common import add_to_collections, metric_variable
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, expand_dims, ones_like, size
from pygrad.ops.confusion_matrix import assert_broadcastable, broadcast_weights
from pygrad.ops.cumulative_ops import cumsum
from pygrad.ops.manip_ops import where
from pygrad.ops.reduction_ops import reduce_any, reduce_sum
from pygrad.ops.sparse_ops import sparse_tensor_to_dense
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_tensor_or_sparse_tensor
from pygrad.ops.state_ops import assign_add
from pygrad.ops.topk_ops import top_k


def _at_k_name(name, k=None, class_id=None):
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


class _Labels:
    """Each example's labels as int64 `ids` [..., n] and, for SparseTensor labels, `present`
    (bool [..., n]: where ids holds a label; None: everywhere)."""

    def __init__(self, ids, present=None):
        self.ids, self.present = ids, present

    def mask(self, x):
        return x if self.present is None else math_ops.logical_and(x, self.present)

    def map(self, fn):
        return _Labels(fn(self.ids), self.present)


def _labels(labels, predictions, metric):
    """_Labels of labels with predictions' rank (TF's _maybe_expand_labels: a last dimension of 1
    added to labels of one rank less)."""
    labels = convert_to_tensor_or_sparse_tensor(labels)
    p = predictions.shape.ndims
    if isinstance(labels, SparseTensor):
        r = labels.dense_shape.shape.as_list()[0]
        if r is not None and p is not None and r != p:
            raise ValueError(f"tf.metrics.{metric}: SparseTensor labels must have the predictions' rank {p}, got "
                             f"rank {r}")
        ids = cast(sparse_tensor_to_dense(labels, default_value=-1), dtypes.int64)
        present = math_ops.greater(sparse_tensor_to_dense(SparseTensor(
            labels.indices, ones_like(labels.values, dtype=dtypes.int32), labels.dense_shape)), 0)
        return _Labels(ids, present)
    r = labels.shape.ndims
    if r is not None and p is not None and r != p:
        if p != r + 1:
            raise ValueError(f"Unexpected labels shape {labels.shape} for predictions shape {predictions.shape}. "
                             f"Predictions rank should be the same rank as labels rank or labels rank plus one .")
        labels = expand_dims(labels, -1)
    return _Labels(cast(labels, dtypes.int64))


def _first_occurrences(x, present=None):
    """bool [..., n]: where x[..., i] holds a member of its row's set the first time (no x[..., j]
    with j < i is the same member)."""
    position = cumsum(ones_like(x, dtype=dtypes.int32), axis=-1)
    earlier = math_ops.less(expand_dims(position, -2), expand_dims(position, -1))  # [..., i, j]: j < i
    same = math_ops.logical_and(math_ops.equal(expand_dims(x, -1), expand_dims(x, -2)), earlier)
    if present is not None:
        same = math_ops.logical_and(same, expand_dims(present, -2))
    first = math_ops.logical_not(reduce_any(same, -1))
    return first if present is None else math_ops.logical_and(first, present)


def _matches(labels, predictions_idx):
    """bool [..., k, n]: predictions_idx[..., i] is the label at [..., j]."""
    match = math_ops.equal(expand_dims(predictions_idx, -1), expand_dims(labels.ids, -2))
    return match if labels.present is None else math_ops.logical_and(match, expand_dims(labels.present, -2))


def _set_counts(labels, predictions_idx, class_id):
    """{"tp", "fp", "fn"}: bool or count tensors [D1, ... DN] of each example's set sizes."""
    if class_id is not None:
        in_preds = reduce_any(math_ops.equal(predictions_idx, class_id), -1)
        in_labels = reduce_any(labels.mask(math_ops.equal(labels.ids, class_id)), -1)
        return {"tp": math_ops.logical_and(in_preds, in_labels),
                "fp": math_ops.logical_and(in_preds, math_ops.logical_not(in_labels)),
                "fn": math_ops.logical_and(in_labels, math_ops.logical_not(in_preds))}
    match = _matches(labels, predictions_idx)
    pred_in_labels, label_in_preds = reduce_any(match, -1), reduce_any(match, -2)
    pred_first, label_first = _first_occurrences(predictions_idx), _first_occurrences(labels.ids, labels.present)

    def count(a, b):
        return reduce_sum(cast(math_ops.logical_and(a, b), dtypes.int64), -1)

    return {"tp": count(pred_first, pred_in_labels), "fp": count(pred_first, math_ops.logical_not(pred_in_labels)),
            "fn": count(label_first, math_ops.logical_not(label_in_preds))}


def _streaming_count(kind, counts, k, class_id, weights, metric):
    """(float64 variable `<name>_at_<k>`, the op adding a batch's weighted count to it)."""
    label = {"tp": "true_positive", "fp": "false_positive", "fn": "false_negative"}[kind]
    graph = get_default_graph()
    with graph.name_scope(_at_k_name(label, k, class_id)) as scope:
        c = cast(counts[kind], dtypes.float64)
        if weights is not None:
            weights = convert_to_tensor(weights)
            assert_broadcastable(weights, c, "Mul")
            c = math_ops.multiply(c, cast(weights, dtypes.float64))
        batch_total = cast(reduce_sum(c), dtypes.float64)
        var = metric_variable([], dtypes.float64, name=scope)
        return var, assign_add(var, batch_total, name="update")


def _at_top_k(metric, other, labels, predictions_idx, k, class_id, weights, metrics_collections, updates_collections,
              name):
    """tp / (tp + other) over the batches (precision: fp; recall: fn)."""
    with get_default_graph().name_scope(name or _at_k_name(metric, k, class_id)) as scope:
        predictions_idx = convert_to_tensor(predictions_idx)
        labels = _labels(labels, predictions_idx, metric)
        counts = _set_counts(labels, cast(predictions_idx, dtypes.int64), class_id)
        tp, tp_update = _streaming_count("tp", counts, k, class_id, weights, metric)
        rest, rest_update = _streaming_count(other, counts, k, class_id, weights, metric)
        value = math_ops.divide(tp, math_ops.add(tp, rest), name=scope)  # named as the scope, as TF's
        add_to_collections(metrics_collections, value)
        update = math_ops.divide(tp_update, math_ops.add(tp_update, rest_update), name="update")
        add_to_collections(updates_collections, update)
        return value, update


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    return _at_top_k("precision", "fp", labels, predictions_idx, k, class_id, weights, metrics_collections,
                     updates_collections, name)


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    return _at_top_k("recall", "fn", labels, predictions_idx, k, class_id, weights, metrics_collections,
                     updates_collections, name)


def precision_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """Of the top k predicted classes of each example, the fraction among its labels (with
    class_id: of the examples with class_id in the top k, the fraction labelled class_id)."""
    with get_default_graph().name_scope(name or _at_k_name("precision", k, class_id)) as scope:
        _, top_k_idx = top_k(predictions, k)
        return precision_at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections, updates_collections,
                                  scope)


def recall_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                updates_collections=None, name=None):
    """Of each example's labels, the fraction among its top k predicted classes (with class_id:
    of the examples labelled class_id, the fraction with class_id in the top k)."""
    with get_default_graph().name_scope(name or _at_k_name("recall", k, class_id)) as scope:
        _, top_k_idx = top_k(predictions, k)
        return recall_at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections, updates_collections,
                               scope)


sparse_precision_at_k = precision_at_k


def _average_precision(labels, predictions_idx, k):
    """float64 [D1, ... DN]: each example's average precision of its top k (TF's
    _sparse_average_precision_at_top_k): the mean over its relevant labels (at most k) of the
    precision at each rank that holds one."""
    with get_default_graph().name_scope("average_precision"):
        relevant_per_k = cast(reduce_any(_matches(labels, predictions_idx), -1), dtypes.float64)
        tp_per_k = cumsum(relevant_per_k, axis=-1)
        retrieved_per_k = cumsum(ones_like(relevant_per_k), axis=-1)
        precision_per_k = math_ops.divide(tp_per_k, retrieved_per_k)
        precision_sum = reduce_sum(math_ops.multiply(precision_per_k, relevant_per_k), axis=(-1,))
        if labels.present is None:  # TF: the labels that are not negative
            num_labels = reduce_sum(cast(math_ops.greater_equal(labels.ids, 0), dtypes.int64), axis=-1)
        else:  # TF: the size of each example's set of labels
            num_labels = reduce_sum(cast(_first_occurrences(labels.ids, labels.present), dtypes.int64), axis=-1)
        num_relevant = cast(math_ops.minimum(num_labels, k), dtypes.float64)
        return math_ops.divide(precision_sum, num_relevant)


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None, updates_collections=None,
                           name=None):
    """The mean over examples of the average precision of the top k predictions: float64
    variables `max` (the examples' weight) and `total`. Labels outside [0, num_classes) are not
    relevant to any prediction."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    metric = "average_precision_at_k"
    graph = get_default_graph()
    with graph.name_scope(name or _at_k_name("average_precision", k)) as scope:
        predictions = convert_to_tensor(predictions)
        _, predictions_idx = top_k(predictions, k)
        num_classes = predictions.shape.ndims and predictions.shape[-1].value
        if not num_classes:
            raise ValueError(f"tf.metrics.{metric}: the predictions' last dimension must be known when the graph is "
                             f"built, got shape {predictions.shape}")
        predictions_idx = cast(predictions_idx, dtypes.int64)
        # TF's _clean_out_of_range_indices: labels of no class become -1, which no prediction is
        labels = _labels(labels, predictions_idx, metric).map(
            lambda ids: where(math_ops.greater_equal(ids, num_classes), -1 * ones_like(ids), ids))
        average_precision = _average_precision(labels, predictions_idx, k)
        if weights is not None:
            weights = broadcast_weights(cast(weights, dtypes.float64), average_precision)
            average_precision = math_ops.multiply(average_precision, weights)
        # TF's name scope "max" comes out "max_1": TF's names are unique regardless of case, and the
        # reduce_max ("Max") of its check of the labels' range took "max".
        with graph.name_scope("max_1") as max_scope:
            max_var = metric_variable([], dtypes.float64, name=max_scope)
            batch_max = cast(size(average_precision), dtypes.float64) if weights is None else reduce_sum(weights)
            max_update = assign_add(max_var, batch_max, name="update")
        with graph.name_scope("total") as total_scope:
            total_var = metric_variable([], dtypes.float64, name=total_scope)
            total_update = assign_add(total_var, reduce_sum(average_precision), name="update")
        value = math_ops.div_no_nan(total_var, max_var, name="mean")
        add_to_collections(metrics_collections, value)
        update = math_ops.div_no_nan(total_update, max_update, name=scope)  # named as the scope, as TF's
        add_to_collections(updates_collections, update)
        return value, update


sparse_average_precision_at_k = average_precision_at_k
