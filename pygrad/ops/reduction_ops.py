"""Reductions (reduce_sum, reduce_mean, reduce_max, ..., argmax) and their inverse, broadcasting
(BroadcastLike, and SumToShape, with which the gradient driver sums a broadcast gradient back to
its input's shape). Each op's shape rule and gradient together."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import build_error
from pygrad.ops import array_ops
from pygrad.ops.array_ops import (ReshapeLike, cast, constant_value, convert_to_tensor, expand_dims, ones_like, size,
                                  static_int, static_ints)
from pygrad.ops.math_ops import BOOL, FLOATS, NUMBERS, check_dtype, equal, truediv
from pygrad.registry import CUSTOM, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape


# ---------------------------------------------------------------- broadcasting and its inverse
# The gradient driver and the reduction gradients use these two; each is the other's gradient.

BroadcastLike = OpDef("BroadcastLike", lowering=CUSTOM, shape_only_inputs={1})  # input 1 only gives the shape


@BroadcastLike.shape
def _(x, like, *, axes=None, mean=False):
    return Spec(x.dtype, like.shape)


@BroadcastLike.lower
def _(ctx, op):
    """y = x broadcast to like's shape (x re-read with 1s at `axes`), divided by the count if mean.
    axes: like's reduced axes, negative ones counted from like's rank here (where it is known), or
    None for plain broadcasting."""
    x, like = ctx.in_specs()
    out_dims = like.shape.as_list()
    x_dims = x.shape.as_list()
    axes = op.attrs["axes"]
    if axes is not None and len(x_dims) != len(out_dims):  # x lost the reduced axes: put back 1s
        axes = {a % len(out_dims) for a in axes}
        it = iter(x_dims)
        x_dims = [1 if i in axes else next(it) for i in range(len(out_dims))]
    scale = 1.0
    if op.attrs["mean"]:
        n_in = int(np.prod(out_dims, dtype=np.int64))
        n_x = int(np.prod(x_dims, dtype=np.int64))
        scale = n_x / n_in if n_in else float("nan")
    ctx.step("broadcast_to", [ctx.operand(op.inputs[0], shape=x_dims)], [ctx.output(0)], {"scale": scale})


@BroadcastLike.grad
def _(op, dy):
    x, like = op.inputs
    axes = op.attrs["axes"]
    if axes is None:
        g = SumToShape(dy, x)
        if op.attrs["mean"]:  # the forward scaled by size(x) / size(like)
            g = g * truediv(cast(size(x), dy.dtype), cast(size(like), dy.dtype))
        return [g, None]
    reduce = reduce_mean if op.attrs["mean"] else reduce_sum
    if x.shape.ndims is not None and dy.shape.ndims is not None:
        return [reduce(dy, axis=list(axes), keepdims=x.shape.ndims == dy.shape.ndims), None]
    # Ranks known only at run time: keep the reduced dims, then take x's shape (with or without them).
    return [ReshapeLike(reduce(dy, axis=list(axes), keepdims=True), x), None]


SumToShape = OpDef("SumToShape", lowering=CUSTOM, shape_only_inputs={1})


@SumToShape.shape
def _(x, like):
    return Spec(x.dtype, like.shape)


@SumToShape.lower
def _(ctx, op):
    """Sums x over the dimensions that broadcasting added to reach it from like's shape."""
    x, like = ctx.in_specs()
    xd, ld = x.shape.as_list(), like.shape.as_list()
    if xd == ld:
        ctx.alias(op.outputs[0], op.inputs[0])
        return
    lp = [1] * (len(xd) - len(ld)) + ld
    axes = [i for i, (a, b) in enumerate(zip(xd, lp)) if b == 1 and a != 1]
    ctx.step("reduce_fwd", [ctx.operand(op.inputs[0])], [ctx.output(0)], {"op": "sum", "axes": axes})


@SumToShape.grad
def _(op, dy):
    return [BroadcastLike(dy, op.inputs[0], axes=None, mean=False), None]


def sum_to_shape(x, like):
    """x summed over the dimensions broadcasting added to like's shape (the gradient of broadcasting)."""
    if x.shape.is_fully_defined() and x.shape == like.shape:
        return x
    return SumToShape(x, like)


def fill(dims, value, name=None):
    """tf.fill: a tensor of shape dims filled with value, a number or a scalar tensor (one a run
    computes is broadcast to dims, and its gradient is the sum of the output's, as in TF)."""
    known = constant_value(value)
    if known is not None:
        return array_ops.fill(dims, known, name)
    value = convert_to_tensor(value)
    if value.shape.ndims is None:  # a scalar, checked when the step runs
        value = array_ops.reshape(value, [])
    if value.shape.ndims != 0:
        raise build_error("Fill", name or "Fill", f"Shape must be rank 0 but is rank {value.shape.ndims}: "
                                                  f"value must be a scalar, got shape {value.shape}", ValueError)
    return BroadcastLike(value, array_ops.zeros(dims, value.dtype), axes=None, mean=False, name=name or "Fill")


# ---------------------------------------------------------------- reductions


def _norm_axes(axes, ndims, what="axis"):
    """Sorted distinct non-negative axes; None means all."""
    if axes is None:
        return tuple(range(ndims))
    out = set()
    for a in axes:
        if not -ndims <= a < ndims:
            fail(f"{what} {a} is out of range for a tensor of rank {ndims}")
        out.add(a % ndims)
    return tuple(sorted(out))


def _reduce(type_name, kernel_op, allowed, grad=None):
    d = OpDef(type_name, kernel="reduce_fwd", differentiable=grad is not None)

    @d.shape
    def _(x, *, axis, keepdims):
        check_dtype(x, allowed)
        if x.shape.dims is None:
            return Spec(x.dtype, TensorShape(None))
        axes = _norm_axes(axis, len(x.shape.dims))
        dims = [1 if i in axes else dim for i, dim in enumerate(x.shape.dims) if keepdims or i not in axes]
        return Spec(x.dtype, TensorShape(dims))

    d.native_attrs(lambda attrs, ins, outs: {
        "op": kernel_op, "axes": list(_norm_axes(attrs["axis"], len(ins[0].shape.dims)))})
    if grad is not None:
        d.grad(grad)
    return d


def _grad_axes(op):
    """A reduction's axes for its gradient: normalized when the input's rank is known; otherwise as
    given (BroadcastLike and the reductions resolve negative axes when the plan is built), with
    None for all axes (the reduced gradient is then a scalar, or all 1s with keepdims)."""
    x, axis = op.inputs[0], op.attrs["axis"]
    if x.shape.ndims is not None:
        return _norm_axes(axis, x.shape.ndims)
    return None if axis is None else tuple(axis)


def _sum_grad(op, dy):
    return [BroadcastLike(dy, op.inputs[0], axes=_grad_axes(op), mean=False)]


def _mean_grad(op, dy):
    return [BroadcastLike(dy, op.inputs[0], axes=_grad_axes(op), mean=True)]


def _keep(t, x, axes, keepdims):
    """t with size-1 dims at the reduced axes, so it broadcasts against x: a view when x's rank is
    known, else t broadcast to x's shape."""
    if keepdims:
        return t
    if x.shape.ndims is None:
        return BroadcastLike(t, x, axes=axes, mean=False)
    for a in axes:
        t = expand_dims(t, a)
    return t


def _max_min_grad_reduce(op, dy):
    """TF's rule: the gradient is split evenly between the entries that tie for the max (min)."""
    x = op.inputs[0]
    axes = _grad_axes(op)
    keep = op.attrs["keepdims"]
    y, dy = _keep(op.outputs[0], x, axes, keep), _keep(dy, x, axes, keep)
    indicators = cast(equal(y, x), dy.dtype)
    num_selected = reduce_sum(indicators, axis=None if axes is None else list(axes), keepdims=True)
    return [indicators / num_selected * dy]


Sum = _reduce("Sum", "sum", NUMBERS, _sum_grad)
Mean = _reduce("Mean", "mean", NUMBERS, _mean_grad)
Max = _reduce("Max", "max", NUMBERS, _max_min_grad_reduce)
Min = _reduce("Min", "min", NUMBERS, _max_min_grad_reduce)


def _prod_grad(op, dy):
    """TF's _ProdGrad, exactly and without dividing by x: each x gets dy times the product of the
    other factors of its group (prefix and suffix products in the prod_bwd kernel), so zeros are
    handled like any other value."""
    return [ProdGrad(op.inputs[0], dy, axis=_grad_axes(op))]


Prod = _reduce("Prod", "prod", NUMBERS, _prod_grad)

# dx = dy * (product of the other factors of x's group). dy: one value per group, any shape.
ProdGrad = OpDef("ProdGrad", kernel="prod_bwd")
# The derivative of ProdGrad in x along t: dy * sum over i != j of t[i] * (product without i, j).
ProdGradGrad = OpDef("ProdGradGrad", kernel="prod_bwd")


@ProdGrad.shape
@ProdGradGrad.shape
def _(x, dy, *t, axis):
    check_dtype(x, FLOATS)
    for other in (dy, *t):
        if other.dtype != x.dtype:
            fail_dtype(f"x and dy must have one dtype, got {x.dtype.name} and {other.dtype.name}")
    if t and not t[0].shape.is_compatible_with(x.shape):
        fail(f"the tangent {t[0].shape} must have the shape of x {x.shape}")
    return Spec(x.dtype, x.shape)


@ProdGrad.native_attrs
@ProdGradGrad.native_attrs
def _(attrs, ins, outs):
    return {"axes": list(_norm_axes(attrs["axis"], len(ins[0].shape.dims)))}


@ProdGrad.grad
def _(op, g):
    x, dy = op.inputs
    axis = op.attrs["axis"]
    # d/d dy: sum of g * (product of the others) over each group, shaped like dy.
    d_dy = reduce_sum(g * ProdGrad(x, ones_like(dy), axis=axis), axis=None if axis is None else list(axis),
                      keepdims=True)
    return [ProdGradGrad(x, dy, g, axis=axis), ReshapeLike(d_dy, dy)]


@ProdGradGrad.grad
def _(op, g):
    raise LookupError(f"ProdGradGrad '{op.name}': third and higher derivatives of reduce_prod are not implemented")


Any = _reduce("Any", "any", BOOL)
All = _reduce("All", "all", BOOL)


def _reduce_fn(opdef, default_name):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        name = name or default_name
        if axis is not None and reduction_indices is not None:
            raise opdef.error("Cannot specify both 'axis' and 'reduction_indices'.", name)
        if keepdims is not None and keep_dims is not None:
            raise opdef.error("Cannot specify both 'keepdims' and 'keep_dims'.", name)
        axis = reduction_indices if axis is None else axis
        keepdims = bool(keep_dims if keepdims is None else keepdims)
        x = convert_to_tensor(input_tensor)
        if axis is not None:
            axis = tuple(int(a) for a in static_ints(axis, "axis", opdef, name).reshape(-1))
        if axis is not None and x.shape.ndims is not None:
            axis = tuple(a % x.shape.ndims if -x.shape.ndims <= a < x.shape.ndims else a for a in axis)
        return opdef(x, axis=axis, keepdims=keepdims, name=name)

    fn.__name__ = default_name
    return fn


reduce_sum = _reduce_fn(Sum, "Sum")
reduce_mean = _reduce_fn(Mean, "Mean")
reduce_max = _reduce_fn(Max, "Max")
reduce_min = _reduce_fn(Min, "Min")
reduce_prod = _reduce_fn(Prod, "Prod")
reduce_any = _reduce_fn(Any, "Any")
reduce_all = _reduce_fn(All, "All")


def _arg_reduce(type_name, kernel_op):
    d = OpDef(type_name, kernel="arg_reduce_fwd", differentiable=False)

    @d.shape
    def _(x, *, axis, output_type):
        check_dtype(x, NUMBERS)
        if x.shape.dims is None:
            return Spec(output_type, TensorShape(None))
        (a,) = _norm_axes([axis], len(x.shape.dims))
        if x.shape.dims[a] == 0:
            fail(f"cannot take {kernel_op} over an empty dimension of shape {x.shape}")
        return Spec(output_type, TensorShape([dim for i, dim in enumerate(x.shape.dims) if i != a]))

    d.native_attrs(lambda attrs, ins, outs: {"op": kernel_op, "axis": attrs["axis"] % len(ins[0].shape.dims)})
    return d


ArgMax = _arg_reduce("ArgMax", "argmax")
ArgMin = _arg_reduce("ArgMin", "argmin")


def _arg_fn(opdef, default_name):
    def fn(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):
        name = name or default_name
        axis = dimension if axis is None else axis
        axis = 0 if axis is None else static_int(axis, "axis", opdef, name)
        return opdef(convert_to_tensor(input), axis=axis, output_type=dtypes.as_dtype(output_type), name=name)

    fn.__name__ = default_name
    return fn


argmax = _arg_fn(ArgMax, "ArgMax")
argmin = _arg_fn(ArgMin, "ArgMin")
