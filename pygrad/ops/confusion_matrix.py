"""tf.confusion_matrix and remove_squeezable_dimensions (TF's confusion_matrix.py), with the
broadcasting rule of metric and loss weights (TF's weights_broadcast_ops.py).

pygrad plans static shapes, so the ranks these functions compare are the static ones (TF adds tf.cond
ops when a rank is unknown; here an unknown rank is left as it is), and the confusion matrix's
num_classes must be known when the graph is built.
"""
from pygrad import dtypes
from pygrad.graph import build_error, get_default_graph
from pygrad.ops import check_ops
from pygrad.ops.array_ops import cast, constant, convert_to_tensor, identity, ones_like, squeeze, static_int
from pygrad.ops.manip_ops import stack
from pygrad.ops.math_ops import multiply
from pygrad.ops.scatter_ops import ScatterNd, scatter_nd


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff=0, name=None):
    """(labels, predictions), the one whose rank is one more than expected (rank(predictions) -
    rank(labels) == expected_rank_diff) squeezed in its last dimension when that is 1."""
    with get_default_graph().name_scope(name or "remove_squeezable_dimensions"):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        p, lb = predictions.shape, labels.shape
        if p.ndims is None or lb.ndims is None:
            return labels, predictions
        rank_diff = p.ndims - lb.ndims
        if rank_diff == expected_rank_diff + 1 and p.as_list()[-1] in (None, 1):
            predictions = squeeze(predictions, [-1])
        elif rank_diff == expected_rank_diff - 1 and lb.as_list()[-1] in (None, 1):
            labels = squeeze(labels, [-1])
        return labels, predictions


def _with_check(x, check):
    """x after check has run (TF's control_flow_ops.with_dependencies)."""
    with get_default_graph().control_dependencies([check]):
        return identity(x)


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None, weights=None):
    """The [num_classes, num_classes] matrix whose [i, j] entry sums the weights (1 without them) of
    the examples with label i and prediction j. As TF, negative or out-of-range labels and
    predictions fail the run (assert ops). num_classes must be known when the graph is built."""
    with get_default_graph().name_scope(name or "confusion_matrix") as scope:
        if num_classes is None:
            raise build_error("ScatterNd", scope + "ScatterNd", "num_classes must be given: pygrad plans static "
                              "shapes and cannot size the matrix from the values")
        n = static_int(num_classes, "num_classes", ScatterNd)
        labels, predictions = remove_squeezable_dimensions(convert_to_tensor(labels, name="labels"),
                                                           convert_to_tensor(predictions, name="predictions"))
        predictions = cast(predictions, dtypes.int64)
        labels = cast(labels, dtypes.int64)
        labels = _with_check(labels, check_ops.assert_non_negative(
            labels, message="`labels` contains negative values"))
        predictions = _with_check(predictions, check_ops.assert_non_negative(
            predictions, message="`predictions` contains negative values"))
        limit = constant(n, dtypes.int64)
        labels = _with_check(labels, check_ops.assert_less(labels, limit, message="`labels` out of bound"))
        predictions = _with_check(predictions, check_ops.assert_less(
            predictions, limit, message="`predictions` out of bound"))
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            if not predictions.shape.is_compatible_with(weights.shape):
                raise build_error("ScatterNd", scope + "ScatterNd", f"weights shape {weights.shape} must match "
                                  f"the predictions' {predictions.shape}")
            weights = cast(weights, dtype)
        indices = stack([labels, predictions], axis=1)
        values = ones_like(predictions, dtype=dtype) if weights is None else weights
        return scatter_nd(indices, values, [n, n])


# ---------------------------------------------------------------- weights (TF's weights_broadcast_ops)


def assert_broadcastable(weights, values, op_type):
    """TF's static check: weights are a scalar, or have the values' rank with each dimension 1 or
    the values'. Unknown ranks or dimensions pass (TF checks them at run time)."""
    w, v = weights.shape, values.shape
    if w.ndims is None or v.ndims is None or w.ndims == 0:
        return
    if w.ndims != v.ndims:
        raise build_error(op_type, None, f"weights can not be broadcast to values. values.rank={v.ndims}. "
                                         f"weights.rank={w.ndims}. values.shape={v}. weights.shape={w}.")
    for i, (a, b) in enumerate(zip(w.as_list(), v.as_list())):
        if a is not None and b is not None and a not in (1, b):
            raise build_error(op_type, None, f"weights can not be broadcast to values. Mismatch at dim {i}. "
                                             f"values.shape={v}, weights.shape={w}.")


def broadcast_weights(weights, values, op_type="Mul"):
    """weights broadcast to values' shape (TF's broadcast_weights): weights themselves when their
    static shape is the values' fully defined one, else weights * ones_like(values)."""
    values = convert_to_tensor(values)
    weights = convert_to_tensor(weights, dtype=values.dtype)
    if weights.shape.is_fully_defined() and values.shape.is_fully_defined() and \
            weights.shape.is_compatible_with(values.shape):
        return weights
    assert_broadcastable(weights, values, op_type)
    return multiply(weights, ones_like(values), name="broadcast_weights")
