"""SignatureDefs: a meta graph's named entry points, inputs and outputs as TensorInfos, and their
method (predict, classify, regress) (TF's saved_model/signature_def_utils_impl.py)."""
from pygrad.graph import Tensor, unwrap
from pygrad.messages import DATA_TYPE
from pygrad.saved_model import signature_constants as sc
from pygrad.saved_model.utils import build_tensor_info

_STRING, _FLOAT = DATA_TYPE["string"], DATA_TYPE["float32"]


def build_signature_def(inputs=None, outputs=None, method_name=None, defaults=None):
    """A SignatureDef of {key: TensorInfo} inputs and outputs; defaults: {input key: a Const
    tensor} whose values the inputs default to."""
    from pygrad.tf_protos import SignatureDef, TensorInfo, TensorProto
    signature_def = SignatureDef()
    for field, items in (("inputs", inputs), ("outputs", outputs)):
        for key, info in (items or {}).items():
            getattr(signature_def, field)[key].CopyFrom(info if isinstance(info, TensorInfo)
                                                        else TensorInfo.FromString(info.SerializeToString()))
    if method_name is not None:
        signature_def.method_name = method_name
    for arg_name, default in (defaults or {}).items():
        default = unwrap(default)
        if not isinstance(default, Tensor) or default.op.type != "Const":
            raise ValueError(f"Unable to convert object {default} of type {type(default)} to TensorProto.")
        from pygrad.messages import tensor_proto
        value = default.op.attrs["value"]
        signature_def.defaults[arg_name].CopyFrom(TensorProto.FromString(
            tensor_proto(value, default.dtype.name).SerializeToString()))
    return signature_def


def predict_signature_def(inputs, outputs):
    """The predict SignatureDef of {key: tensor} inputs and outputs."""
    if not inputs:
        raise ValueError("Prediction `inputs` cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction `outputs` cannot be None or empty.")
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()},
                               {k: build_tensor_info(t) for k, t in outputs.items()}, sc.PREDICT_METHOD_NAME)


def _examples(examples, what):
    if examples is None:
        raise ValueError(f"{what} `examples` cannot be None.")
    if not isinstance(unwrap(examples), Tensor):
        raise ValueError(f"{what} `examples` must be a string Tensor. Found `examples` of type {type(examples)}.")
    info = build_tensor_info(examples)
    if info.dtype != _STRING:
        raise ValueError(f"{what} input tensors must be of type string. Found tensors of type "
                         f"{unwrap(examples).dtype.name}.")
    return info


def regression_signature_def(examples, predictions):
    """The regress SignatureDef: string examples in, float predictions out."""
    inputs = {sc.REGRESS_INPUTS: _examples(examples, "Regression")}
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    out = build_tensor_info(predictions)
    if out.dtype != _FLOAT:
        raise ValueError(f"Regression output tensors must be of type float. Found tensors with type "
                         f"{unwrap(predictions).dtype.name}.")
    return build_signature_def(inputs, {sc.REGRESS_OUTPUTS: out}, sc.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores):
    """The classify SignatureDef: string examples in, string classes and/or float scores out."""
    inputs = {sc.CLASSIFY_INPUTS: _examples(examples, "Classification")}
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    outputs = {}
    if classes is not None:
        outputs[sc.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
        if outputs[sc.CLASSIFY_OUTPUT_CLASSES].dtype != _STRING:
            raise ValueError("Classification classes must be of type string Tensor.")
    if scores is not None:
        outputs[sc.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
        if outputs[sc.CLASSIFY_OUTPUT_SCORES].dtype != _FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
    return build_signature_def(inputs, outputs, sc.CLASSIFY_METHOD_NAME)


def is_valid_signature(signature_def):
    """Whether signature_def is a well-formed predict, classify or regress signature."""
    if signature_def is None:
        return False
    inputs, outputs, method = signature_def.inputs, signature_def.outputs, signature_def.method_name
    if method == sc.PREDICT_METHOD_NAME:
        return bool(inputs) and bool(outputs)
    if method == sc.REGRESS_METHOD_NAME:
        return (set(inputs) == {sc.REGRESS_INPUTS} and inputs[sc.REGRESS_INPUTS].dtype == _STRING
                and set(outputs) == {sc.REGRESS_OUTPUTS} and outputs[sc.REGRESS_OUTPUTS].dtype == _FLOAT)
    if method == sc.CLASSIFY_METHOD_NAME:
        allowed = {sc.CLASSIFY_OUTPUT_CLASSES: _STRING, sc.CLASSIFY_OUTPUT_SCORES: _FLOAT}
        return (set(inputs) == {sc.CLASSIFY_INPUTS} and inputs[sc.CLASSIFY_INPUTS].dtype == _STRING and bool(outputs)
                and set(outputs) <= set(allowed) and all(outputs[k].dtype == allowed[k] for k in outputs))
    return False
