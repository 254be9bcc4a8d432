"""ModeKeys and EstimatorSpec (what a model_fn returns), with TF's checks, and the export outputs
of a serving signature (PredictOutput, ClassificationOutput, RegressionOutput)."""
import collections

from pygrad import dtypes
from pygrad.graph import Operation, Tensor, get_default_graph, unwrap
from pygrad.ops.array_ops import reshape
from pygrad.saved_model import signature_constants, signature_def_utils
from pygrad.train.hooks import SessionRunHook
from pygrad.train.monitored_session import Scaffold


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


LOSS_METRIC_KEY = "loss"
AVERAGE_LOSS_METRIC_KEY = "average_loss"

_GRAPH_ERROR = ("{0} with {1} must be from the default graph. Possible causes of this error include: \n\n1) {0} was "
                "created outside the context of the default graph.\n\n2) The object passed through to EstimatorSpec "
                "was not created in the most recent call to \"model_fn\".")


def _tensor(x, what):
    x = unwrap(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} must be Tensor, given: {x}")
    if x.graph is not get_default_graph():
        raise ValueError(_GRAPH_ERROR.format(what, x.name))
    return x


def _train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    train_op = unwrap(train_op)
    if not isinstance(train_op, (Tensor, Operation)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    if train_op.graph is not get_default_graph():
        raise ValueError(_GRAPH_ERROR.format("train_op", train_op.name))
    return train_op


def _loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _tensor(loss, "loss")
    if loss.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    return loss if loss.shape.ndims == 0 else reshape(loss, [])


def _predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        return {k: _tensor(v, f"predictions[{k}]") for k, v in predictions.items()}
    return _tensor(predictions, "predictions")


def validate_hooks(hooks):
    hooks = tuple(hooks or [])
    for h in hooks:
        if not isinstance(h, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {h}")
    return hooks


def _metric_ops(ops):
    if ops is None:
        return {}
    if not isinstance(ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {ops}")
    for key, value in ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) tuples, given: {value} for "
                            f"key: {key}")
        for v in value:
            v = unwrap(v)
            if isinstance(v, (Tensor, Operation)) and v.graph is not get_default_graph():
                raise ValueError(_GRAPH_ERROR.format("eval_metric_ops", f"{key}: {v.name}"))
    return dict(ops)


class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs", "training_chief_hooks",
        "training_hooks", "scaffold", "evaluation_hooks", "prediction_hooks"])):
    """What a model_fn returns for its mode: TRAIN needs loss and train_op, EVAL loss (and metrics:
    {name: (value, update_op)}), PREDICT predictions (and export_outputs for serving)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None, export_outputs=None,
                training_chief_hooks=None, training_hooks=None, scaffold=None, evaluation_hooks=None,
                prediction_hooks=None):
        train_op = _train_op(train_op, mode)
        loss = _loss(loss, mode)
        predictions = _predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            export_outputs = get_export_outputs(export_outputs, predictions)
        if scaffold is not None and not isinstance(scaffold, Scaffold):
            raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
        return super().__new__(cls, mode, predictions, loss, train_op, _metric_ops(eval_metric_ops), export_outputs,
                               validate_hooks(training_chief_hooks), validate_hooks(training_hooks),
                               scaffold or Scaffold(), validate_hooks(evaluation_hooks),
                               validate_hooks(prediction_hooks))


# ---------------------------------------------------------------- export outputs

class ExportOutput:
    """One serving signature's outputs."""

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError


class PredictOutput(ExportOutput):
    def __init__(self, outputs):
        outputs = outputs if isinstance(outputs, dict) else {"output": outputs}
        for k, v in outputs.items():
            if not isinstance(k, str):
                raise ValueError(f"Prediction output key must be a string; got {k}.")
            if not isinstance(unwrap(v), Tensor):
                raise ValueError(f"Prediction output value must be a Tensor; got {v}.")
        self.outputs = {k: unwrap(v) for k, v in outputs.items()}

    def as_signature_def(self, receiver_tensors):
        return signature_def_utils.predict_signature_def(receiver_tensors, self.outputs)


def _single_string_input(receiver_tensors, what):
    if len(receiver_tensors) != 1:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    (t,) = receiver_tensors.values()
    if t.dtype != dtypes.string:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    return t


class ClassificationOutput(ExportOutput):
    def __init__(self, scores=None, classes=None):
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        if scores is not None and (not isinstance(unwrap(scores), Tensor) or not unwrap(scores).dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and (not isinstance(unwrap(classes), Tensor) or unwrap(classes).dtype != dtypes.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        self.scores, self.classes = unwrap(scores), unwrap(classes)

    def as_signature_def(self, receiver_tensors):
        return signature_def_utils.classification_signature_def(
            _single_string_input(receiver_tensors, "Classification"), self.classes, self.scores)


class RegressionOutput(ExportOutput):
    def __init__(self, value):
        if not isinstance(unwrap(value), Tensor) or not unwrap(value).dtype.is_floating:
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = unwrap(value)

    def as_signature_def(self, receiver_tensors):
        return signature_def_utils.regression_signature_def(_single_string_input(receiver_tensors, "Regression"),
                                                            self.value)


def get_export_outputs(export_outputs, predictions):
    """TF's export_utils.get_export_outputs: PredictOutput(predictions) under the default key when
    none are given; a single output is also the default."""
    default = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    if export_outputs is None:
        return {default: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for v in export_outputs.values():
        if not isinstance(v, ExportOutput):
            raise TypeError(f"Values in export_outputs must be ExportOutput objects. Given: {export_outputs}")
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        (value,) = export_outputs.values()
        export_outputs.setdefault(default, value)
    elif default not in export_outputs:
        raise ValueError("Multiple export_outputs were provided, but none of them is specified as the default.  Do "
                         "this by naming one of them with signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY.")
    return export_outputs
