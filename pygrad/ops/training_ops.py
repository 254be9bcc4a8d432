"""Fused optimizer updates: each op updates its variable (and slots) in place in one native pass."""
from pygrad.ops.math_ops import FLOATS, _check_dtype
from pygrad.registry import OpDef, Spec, fail, fail_dtype

ApplyGradientDescent = OpDef("ApplyGradientDescent", kernel="apply_gradient_descent", differentiable=False,
                             ref_input=0, stateful=True)


@ApplyGradientDescent.shape
def _(var, alpha, delta):
    """var -= alpha * delta."""
    _check_dtype(var, FLOATS, "var")
    if alpha.dtype != var.dtype or delta.dtype != var.dtype:
        fail_dtype(f"var, alpha and delta must share one dtype, got {var.dtype.name}, {alpha.dtype.name} and "
                   f"{delta.dtype.name}")
    if alpha.shape.ndims not in (None, 0):
        fail(f"alpha must be a scalar, got shape {alpha.shape}")
    if not var.shape.is_compatible_with(delta.shape):
        fail(f"delta shape {delta.shape} does not match the variable's shape {var.shape}")
    return Spec(var.dtype, var.shape)
