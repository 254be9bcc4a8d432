"""The heads of TF1's canned estimators (tensorflow_estimator's canned/head.py): from logits, the
predictions, the loss (summed over the batch by default, TF1's Reduction.SUM), the evaluation's
metrics and the train op, as an EstimatorSpec. Binary classification (sigmoid cross entropy),
multi-class (softmax cross entropy) and regression (squared error)."""
import collections

from pygrad import dtypes, feature_column, losses, metrics
from pygrad.estimator.model_fn import (ClassificationOutput, EstimatorSpec, ModeKeys, PredictOutput,
                                       RegressionOutput)
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import check_ops, math_ops
from pygrad.ops.activation_ops import sigmoid_cross_entropy_with_logits
from pygrad.ops.array_ops import cast, convert_to_tensor, expand_dims, identity, ones_like, reshape, zeros_like
from pygrad.ops.lookup_ops import index_table_from_tensor, index_to_string_table_from_tensor
from pygrad.ops.manip_ops import concat
from pygrad.ops.nn_ops import softmax
from pygrad.ops.reduction_ops import argmax, reduce_sum
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.state_ops import group
from pygrad.ops.string_ops import as_string
from pygrad.ops.summary_ops import scalar
from pygrad.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY
from pygrad.train.training_util import get_global_step

LossSpec = collections.namedtuple("LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"])
_CLASSIFY, _REGRESS, _PREDICT = "classification", "regression", "predict"


def _labels(labels, logits, dimension):
    """labels as [D0, ..., DN, dimension] beside logits (TF's checks and messages)."""
    if labels is None:
        raise ValueError("You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check that "
                         "your data contain your label feature. Check that your input_fn properly parses and returns "
                         "labels.")
    if isinstance(labels, SparseTensor):
        raise ValueError(f"SparseTensor labels are not supported. labels must be a Tensor of shape [D0, D1, ..., DN, "
                         f"{dimension}], e.g. [batch_size, {dimension}].")
    with get_default_graph().name_scope("labels"):
        labels = convert_to_tensor(labels)
        if labels.shape.ndims is not None and logits.shape.ndims is not None and \
                labels.shape.ndims == logits.shape.ndims - 1:
            labels = expand_dims(labels, -1)
        if labels.shape.ndims is not None and labels.shape.dims[-1] not in (None, dimension):
            raise ValueError(f"Mismatched label shape. Expected labels dimension={dimension}.  Received "
                             f"{labels.shape.dims[-1]}. Suggested Fix:If your classifier expects one-hot encoding "
                             f"label,check your n_classes argument to the estimator and/or the shape of your label. "
                             f"Otherwise, check the shape of your label.")
        return identity(labels)


def _weights(features, weight_column, logits):
    """1. without a weight column, else its values as float32 [D0, ..., DN, 1]."""
    if weight_column is None:
        return 1.
    with get_default_graph().name_scope("weights"):
        if isinstance(weight_column, str):
            weight_column = feature_column.numeric_column(weight_column, shape=(1,))
        weights = feature_column.input_layer(features, [weight_column])
        return cast(reshape(weights, [-1, 1]), dtypes.float32)


def _in_range(labels, n_classes):
    """labels, after checks that they are in [0, n_classes) (TF's _assert_range)."""
    graph = get_default_graph()
    with graph.name_scope("assert_range"):
        checks = [check_ops.assert_less(labels, cast(n_classes, labels.dtype),
                                        message="Labels must <= n_classes - 1"),
                  check_ops.assert_non_negative(labels, message="Labels must >= 0")]
        with graph.control_dependencies(checks):
            return identity(labels)


class _Head:
    """What a canned estimator's model_fn asks of its head: create_estimator_spec."""

    def __init__(self, n_classes, weight_column, label_vocabulary, loss_reduction, name=None):
        self._n_classes, self._weight_column = n_classes, weight_column
        self._label_vocabulary, self._loss_reduction, self._name = label_vocabulary, loss_reduction, name

    name = property(lambda self: self._name)

    def _key(self, key):
        return f"{key}/{self._name}" if self._name else key

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, train_op_fn=None,
                              regularization_losses=None):
        with get_default_graph().name_scope(self._name or "head"):
            predictions, export_outputs = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
            spec = self.create_loss(features, mode, logits, labels)
            loss = spec.training_loss
            reg = math_ops.add_n(regularization_losses) if regularization_losses else None
            if reg is not None:
                loss = math_ops.add_n([loss, reg])
            if mode == ModeKeys.EVAL:
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops=self._metrics(spec, predictions, reg))
            if optimizer is not None:
                if train_op_fn is not None:
                    raise ValueError("train_op_fn and optimizer cannot both be set.")
                train_op = optimizer.minimize(loss, global_step=get_global_step())
            elif train_op_fn is not None:
                train_op = train_op_fn(loss)
            else:
                raise ValueError("train_op_fn and optimizer cannot both be None.")
            updates = get_default_graph().get_collection(GraphKeys.UPDATE_OPS)
            if updates:
                train_op = group(train_op, *updates)
            mean_loss = None
            if self._loss_reduction == losses.Reduction.SUM:
                mean_loss = spec.training_loss / reduce_sum(spec.weights * ones_like(spec.unreduced_loss))
        scalar(self._key("loss"), loss)
        if mean_loss is not None:
            scalar(self._key("average_loss"), mean_loss)
        if reg is not None:
            scalar(self._key("regularization_loss"), reg)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)

    def _reduce(self, unweighted, weights):
        return losses.compute_weighted_loss(unweighted, weights=weights, reduction=self._loss_reduction)

    def _class_strings(self, class_ids):
        if self._label_vocabulary:
            return index_to_string_table_from_tensor(list(self._label_vocabulary),
                                                     name="class_string_lookup").lookup(class_ids)
        return as_string(class_ids, name="str_classes")

    def _all_classes(self, class_ids):
        """[batch, n] rows of the class ids 0..n-1 and of their names (TF's tiles of them)."""
        ids = zeros_like(class_ids) + cast(range_(max(self._n_classes, 2)), class_ids.dtype)
        return ids, self._class_strings(ids)

    def _label_ids(self, labels):
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype.name}.")
            return labels
        if labels.dtype != dtypes.string:
            raise ValueError("Labels must be a string tensor with a label_vocabulary")
        return index_table_from_tensor(list(self._label_vocabulary), name="class_id_lookup").lookup(labels)


class BinaryClassHead(_Head):
    """Two classes: one logit, sigmoid cross entropy."""

    logits_dimension = 1

    def create_loss(self, features, mode, logits, labels):
        labels = _labels(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = self._label_ids(labels)
        labels = _in_range(cast(labels, dtypes.float32), 2)
        unweighted = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        weights = _weights(features, self._weight_column, logits)
        return LossSpec(self._reduce(unweighted, weights), unweighted, weights, labels)

    def _predictions(self, logits):
        with get_default_graph().name_scope("predictions"):
            logistic = math_ops.sigmoid(logits, name="logistic")
            two = concat([zeros_like(logits), logits], axis=-1, name="two_class_logits")
            probabilities = softmax(two, name="probabilities")
            class_ids = expand_dims(argmax(two, axis=-1, name="class_ids"), -1)
            classes = self._class_strings(class_ids)
            all_ids, all_classes = self._all_classes(class_ids)
            predictions = {"logits": logits, "logistic": logistic, "probabilities": probabilities,
                           "class_ids": class_ids, "classes": classes, "all_class_ids": all_ids,
                           "all_classes": all_classes}
        out = ClassificationOutput(scores=probabilities, classes=all_classes)
        return predictions, {DEFAULT_SERVING_SIGNATURE_DEF_KEY: out, _CLASSIFY: out,
                             _REGRESS: RegressionOutput(value=logistic), _PREDICT: PredictOutput(predictions)}

    def _metrics(self, spec, predictions, reg):
        labels, weights = spec.processed_labels, spec.weights
        w = None if isinstance(weights, float) else weights
        with get_default_graph().name_scope("metrics"):
            labels_mean = metrics.mean(labels, weights=_broadcast(w, labels), name="label/mean")
            logistic = predictions["logistic"]
            ops = {
                self._key("average_loss"): metrics.mean(spec.unreduced_loss, weights=w, name="average_loss"),
                self._key("accuracy"): metrics.accuracy(labels, predictions["class_ids"], weights=w, name="accuracy"),
                self._key("precision"): metrics.precision(labels, predictions["class_ids"], weights=w,
                                                          name="precision"),
                self._key("recall"): metrics.recall(labels, predictions["class_ids"], weights=w, name="recall"),
                self._key("prediction/mean"): metrics.mean(logistic, weights=_broadcast(w, logistic),
                                                           name="prediction/mean"),
                self._key("label/mean"): labels_mean,
                self._key("accuracy_baseline"): (math_ops.maximum(labels_mean[0], 1. - labels_mean[0]),
                                                  math_ops.maximum(labels_mean[1], 1. - labels_mean[1])),
                self._key("auc"): metrics.auc(labels, logistic, weights=_broadcast(w, logistic), name="auc"),
                self._key("auc_precision_recall"): metrics.auc(labels, logistic, weights=_broadcast(w, logistic),
                                                               curve="PR", name="auc_precision_recall"),
            }
            if reg is not None:
                ops[self._key("regularization_loss")] = metrics.mean(reg, name="regularization_loss")
        return ops


def _broadcast(weights, values):
    return None if weights is None else weights * ones_like(values)


class MultiClassHead(_Head):
    """n_classes > 2: n logits, softmax cross entropy."""

    logits_dimension = property(lambda self: self._n_classes)

    def create_loss(self, features, mode, logits, labels):
        labels = _in_range(self._label_ids(_labels(labels, logits, 1)), self._n_classes)
        unweighted = expand_dims(losses.sparse_softmax_cross_entropy(labels=labels, logits=logits,
                                                                     reduction=losses.Reduction.NONE), -1)
        weights = _weights(features, self._weight_column, logits)
        return LossSpec(self._reduce(unweighted, weights), unweighted, weights, labels)

    def _predictions(self, logits):
        with get_default_graph().name_scope("predictions"):
            probabilities = softmax(logits, name="probabilities")
            class_ids = expand_dims(argmax(logits, axis=-1, name="class_ids"), -1)
            classes = self._class_strings(class_ids)
            all_ids, all_classes = self._all_classes(class_ids)
            predictions = {"logits": logits, "probabilities": probabilities, "class_ids": class_ids,
                           "classes": classes, "all_class_ids": all_ids, "all_classes": all_classes}
        out = ClassificationOutput(scores=probabilities, classes=all_classes)
        return predictions, {DEFAULT_SERVING_SIGNATURE_DEF_KEY: out, _CLASSIFY: out,
                             _PREDICT: PredictOutput(predictions)}

    def _metrics(self, spec, predictions, reg):
        w = None if isinstance(spec.weights, float) else spec.weights
        with get_default_graph().name_scope("metrics"):
            ops = {self._key("average_loss"): metrics.mean(spec.unreduced_loss, weights=w, name="average_loss"),
                   self._key("accuracy"): metrics.accuracy(spec.processed_labels, predictions["class_ids"], weights=w,
                                                           name="accuracy")}
            if reg is not None:
                ops[self._key("regularization_loss")] = metrics.mean(reg, name="regularization_loss")
        return ops


class RegressionHead(_Head):
    """label_dimension real outputs, squared error."""

    def __init__(self, weight_column=None, label_dimension=1, loss_reduction=None, name=None):
        super().__init__(0, weight_column, None, loss_reduction or losses.Reduction.SUM, name)
        self._dimension = label_dimension

    logits_dimension = property(lambda self: self._dimension)

    def create_loss(self, features, mode, logits, labels):
        labels = cast(_labels(labels, logits, self._dimension), dtypes.float32)
        unweighted = losses.mean_squared_error(labels=labels, predictions=logits, reduction=losses.Reduction.NONE)
        weights = _weights(features, self._weight_column, logits)
        return LossSpec(self._reduce(unweighted, weights), unweighted, weights, labels)

    def _predictions(self, logits):
        with get_default_graph().name_scope("predictions"):
            predictions = {"predictions": identity(logits, name="predictions")}
        out = RegressionOutput(value=predictions["predictions"])
        return predictions, {DEFAULT_SERVING_SIGNATURE_DEF_KEY: out, _REGRESS: out,
                             _PREDICT: PredictOutput(predictions)}

    def _metrics(self, spec, predictions, reg):
        w = None if isinstance(spec.weights, float) else spec.weights
        with get_default_graph().name_scope("metrics"):
            ops = {self._key("average_loss"): metrics.mean(spec.unreduced_loss, weights=w, name="average_loss"),
                   self._key("prediction/mean"): metrics.mean(predictions["predictions"],
                                                              weights=_broadcast(w, predictions["predictions"]),
                                                              name="prediction/mean"),
                   self._key("label/mean"): metrics.mean(spec.processed_labels,
                                                         weights=_broadcast(w, spec.processed_labels),
                                                         name="label/mean")}
            if reg is not None:
                ops[self._key("regularization_loss")] = metrics.mean(reg, name="regularization_loss")
        return ops


def classification_head(n_classes, weight_column, label_vocabulary, loss_reduction):
    """TF's _binary_logistic_or_multi_class_head."""
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}")
    if label_vocabulary is not None and len(label_vocabulary) != n_classes:
        raise ValueError(f"label_vocabulary has {len(label_vocabulary)} entries, n_classes is {n_classes}")
    if n_classes is None or n_classes < 2:
        raise ValueError(f"n_classes must be > 1: {n_classes}")
    head = BinaryClassHead if n_classes == 2 else MultiClassHead
    return head(n_classes, weight_column, label_vocabulary, loss_reduction or losses.Reduction.SUM)
