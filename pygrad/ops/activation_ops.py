"""The activations of tf.nn beyond relu, sigmoid and tanh (leaky_relu, elu, selu, softplus,
softsign, relu6, crelu), l2_normalize, and the sigmoid cross-entropies, with TensorFlow's
formulas and gradients (nn_ops.py, nn_impl.py, nn_grad.py). The activations and their *Grad ops
run on the activation_fwd / activation_bwd kernels (csrc/kernels/activation.cc)."""
from pygrad import dtypes
from pygrad.graph import build_error, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, zeros_like
from pygrad.ops.manip_ops import Select, concat
from pygrad.ops.math_ops import FLOATS, check_dtype
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.registry import OpDef, Spec, fail, fail_dtype

# ---------------------------------------------------------------- activations


def _activation(type_name, kernel_op, grad):
    """y = f(x) on activation_fwd; attrs: alpha (LeakyRelu only)."""
    d = OpDef(type_name, kernel="activation_fwd")

    @d.shape
    def _(x, **attrs):
        check_dtype(x, FLOATS, "features")
        return Spec(x.dtype, x.shape)

    d.kernel_op = kernel_op
    d.native_attrs(lambda attrs, ins, outs: {"op": kernel_op, "alpha": float(attrs.get("alpha", 0.0))})
    d.grad(grad)
    return d


def _activation_grad(type_name, kernel_op, grad):
    """dx = f'(t) * dy on activation_bwd, inputs (gradients, t) in TF's order: t is the forward's
    features or outputs, as TF's gradient op of that name takes it."""
    d = OpDef(type_name, kernel="activation_bwd")

    @d.shape
    def _(dy, t, **attrs):
        check_dtype(dy, FLOATS, "gradients")
        if dy.dtype != t.dtype:
            fail_dtype(f"gradients and features must have one dtype, got {dy.dtype.name} and {t.dtype.name}")
        if not dy.shape.is_compatible_with(t.shape):
            fail(f"gradients {dy.shape} and features {t.shape} must have the same shape")
        return Spec(dy.dtype, dy.shape.merge_with(t.shape))

    d.kernel_op = kernel_op
    d.native_attrs(lambda attrs, ins, outs: {"op": kernel_op, "alpha": float(attrs.get("alpha", 0.0))})
    d.grad(grad)
    return d


def _where_negative(t, a):
    """a where t < 0, else zeros (TF's array_ops.where(t < 0, a, zeros_like(t)))."""
    return Select(math_ops.less(t, zeros_like(t)), a, zeros_like(t))


# LeakyRelu: x > 0 ? x : alpha * x. Its gradient takes the features.
LeakyRelu = _activation("LeakyRelu", "leaky_relu", lambda op, dy: [
    LeakyReluGrad(dy, op.inputs[0], alpha=op.attrs["alpha"])])
LeakyReluGrad = _activation_grad("LeakyReluGrad", "leaky_relu", lambda op, g: [
    LeakyReluGrad(g, op.inputs[1], alpha=op.attrs["alpha"]), zeros_like(op.inputs[1])])
# Elu: x < 0 ? e^x - 1 : x. EluGrad takes the outputs: y < 0 ? dy * (y + 1) : dy.
Elu = _activation("Elu", "elu", lambda op, dy: [EluGrad(dy, op.outputs[0])])
EluGrad = _activation_grad("EluGrad", "elu", lambda op, g: [
    EluGrad(g, op.inputs[1]), _where_negative(op.inputs[1], g * op.inputs[0])])
# Selu: scale * (x < 0 ? alpha * (e^x - 1) : x). SeluGrad takes the outputs.
Selu = _activation("Selu", "selu", lambda op, dy: [SeluGrad(dy, op.outputs[0])])
SeluGrad = _activation_grad("SeluGrad", "selu", lambda op, g: [
    SeluGrad(g, op.inputs[1]), _where_negative(op.inputs[1], g * op.inputs[0])])
# Softplus: log(1 + e^x). SoftplusGrad takes the features: dy / (1 + e^-x) (TF1's rule).
Softplus = _activation("Softplus", "softplus", lambda op, dy: [SoftplusGrad(dy, op.inputs[0])])
SoftplusGrad = _activation_grad("SoftplusGrad", "softplus", lambda op, g: [
    SoftplusGrad(g, op.inputs[1]),
    g * op.inputs[0] / (math_ops.exp(-op.inputs[1]) + 2.0 + math_ops.exp(op.inputs[1]))])
# Softsign: x / (1 + |x|). SoftsignGrad takes the features: dy / (1 + |x|)^2.
Softsign = _activation("Softsign", "softsign", lambda op, dy: [SoftsignGrad(dy, op.inputs[0])])
SoftsignGrad = _activation_grad("SoftsignGrad", "softsign", lambda op, g: [
    SoftsignGrad(g, op.inputs[1]),
    -2.0 * g * op.inputs[0] * math_ops.sign(op.inputs[1])
    / math_ops.pow(1.0 + math_ops.abs(op.inputs[1]), 3.0)])
# Relu6: min(max(x, 0), 6). Relu6Grad takes the outputs: dy where 0 < y < 6.
Relu6 = _activation("Relu6", "relu6", lambda op, dy: [Relu6Grad(dy, op.outputs[0])])
Relu6Grad = _activation_grad("Relu6Grad", "relu6", lambda op, g: [
    Relu6Grad(g, op.inputs[1]), zeros_like(op.inputs[1])])


def _features(features):
    features = convert_to_tensor(features, name="features")
    return cast(features, dtypes.float32) if features.dtype.is_integer else features


def leaky_relu(features, alpha=0.2, name=None):
    """features where features > 0, else alpha * features (TF's LeakyRelu; ints become float32)."""
    alpha = alpha.item() if hasattr(alpha, "item") else alpha
    return LeakyRelu(_features(features), alpha=float(alpha), name=name or "LeakyRelu")


def elu(features, name=None):
    return Elu(convert_to_tensor(features), name=name or "Elu")


def selu(features, name=None):
    return Selu(convert_to_tensor(features), name=name or "Selu")


def softplus(features, name=None):
    return Softplus(convert_to_tensor(features), name=name or "Softplus")


def softsign(features, name=None):
    return Softsign(convert_to_tensor(features), name=name or "Softsign")


def relu6(features, name=None):
    return Relu6(convert_to_tensor(features), name=name or "Relu6")


def crelu(features, name=None, axis=-1):
    """concat([relu(x), relu(-x)], axis): the positive and negative parts side by side."""
    with get_default_graph().name_scope(name or "CRelu"):
        features = convert_to_tensor(features, name="features")
        return math_ops.relu(concat([features, -features], axis))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x^2, axis), epsilon)), as TF's nn_impl.l2_normalize."""
    axis = dim if axis is None else axis
    with get_default_graph().name_scope(name or "l2_normalize"):
        x = convert_to_tensor(x, name="x")
        square_sum = reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm)


# ---------------------------------------------------------------- sigmoid cross-entropies


def _labels_logits(labels, logits, opname, name):
    logits = convert_to_tensor(logits, name="logits")
    labels = convert_to_tensor(labels, dtype=logits.dtype, name="labels")
    if not labels.shape.is_compatible_with(logits.shape):
        raise build_error(opname, name, f"logits and labels must have the same shape ({logits.shape} vs "
                                        f"{labels.shape})")
    return labels, logits


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x and labels z: TF's stable formula, built
    from the same ops as TF's, so its gradient is TF's too."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named arguments (labels=..., logits=...)")
    with get_default_graph().name_scope(name or "logistic_loss"):
        labels, logits = _labels_logits(labels, logits, "logistic_loss", name)
        zeros = zeros_like(logits)
        cond = math_ops.greater_equal(logits, zeros)
        relu_logits = Select(cond, logits, zeros)
        neg_abs_logits = Select(cond, -logits, logits)
        return math_ops.add(relu_logits - logits * labels, math_ops.log1p(math_ops.exp(neg_abs_logits)))


def weighted_cross_entropy_with_logits(targets=None, logits=None, pos_weight=None, name=None, labels=None):
    """(1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0)) for logits x, targets
    (labels) z and pos_weight q, as TF's nn_impl."""
    targets = labels if targets is None else targets
    if targets is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs targets (or labels), logits and pos_weight")
    with get_default_graph().name_scope(name or "logistic_loss"):
        targets, logits = _labels_logits(targets, logits, "logistic_loss", name)
        log_weight = 1.0 + (pos_weight - 1.0) * targets
        return math_ops.add((1.0 - targets) * logits,
                            log_weight * (math_ops.log1p(math_ops.exp(-math_ops.abs(logits)))
                                          + math_ops.relu(-logits)))
