"""Arithmetic, comparisons and matmul, each op's shape rule and gradient together; and the
operators of Tensor and Variable (`a + b` builds Add), installed here as TF1's math_ops does."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import build_error, override_operator
from pygrad.ops.array_ops import cast, convert_n_same_dtype, convert_to_tensor, identity, ones_like, zeros_like
from pygrad.ops.manip_ops import Select
from pygrad.registry import BETWEEN, CUSTOM, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape, broadcast_shape

FLOATS = (dtypes.float32, dtypes.float64)
NUMBERS = FLOATS + (dtypes.int32, dtypes.int64)
ALL = NUMBERS + (dtypes.bool_,)
BOOL = (dtypes.bool_,)


def check_dtype(x, allowed, what="x"):
    if x.dtype not in allowed:
        fail_dtype(f"{what} has dtype {x.dtype.name}, expected one of {', '.join(d.name for d in allowed)}")


# ---------------------------------------------------------------- unary ops


def _unary(type_name, kernel_op, allowed, grad=None):
    """An elementwise op y = f(x) on the unary_fwd kernel, kernel_op its row of csrc/pg/elementwise.def
    (registry.check_elementwise checks it at import); grad(op, dy) gives [dx]."""
    d = OpDef(type_name, kernel="unary_fwd", differentiable=grad is not None)
    d.allowed = allowed

    @d.shape
    def _(x):
        check_dtype(x, allowed)
        return Spec(x.dtype, x.shape)

    d.kernel_op = kernel_op
    d.native_attrs(lambda attrs, ins, outs: {"op": kernel_op})
    if grad is not None:
        d.grad(grad)
    return d


def _x(op):
    return op.inputs[0]


def _y(op):
    return op.outputs[0]


Neg = _unary("Neg", "neg", NUMBERS, lambda op, dy: [-dy])
Abs = _unary("Abs", "abs", NUMBERS, lambda op, dy: [dy * sign(_x(op))])
Square = _unary("Square", "square", NUMBERS, lambda op, dy: [dy * (2.0 * _x(op))])
Sign = _unary("Sign", "sign", NUMBERS, lambda op, dy: [zeros_like(_x(op))])  # zeros, not None (TF)
Exp = _unary("Exp", "exp", FLOATS, lambda op, dy: [dy * _y(op)])
Log = _unary("Log", "log", FLOATS, lambda op, dy: [dy * reciprocal(_x(op))])
Log1p = _unary("Log1p", "log1p", FLOATS, lambda op, dy: [dy * reciprocal(1.0 + _x(op))])
Sqrt = _unary("Sqrt", "sqrt", FLOATS, lambda op, dy: [dy * 0.5 / _y(op)])
Rsqrt = _unary("Rsqrt", "rsqrt", FLOATS, lambda op, dy: [dy * (-0.5 * _y(op) * _y(op) * _y(op))])
Reciprocal = _unary("Reciprocal", "reciprocal", FLOATS, lambda op, dy: [-dy * _y(op) * _y(op)])
Sin = _unary("Sin", "sin", FLOATS, lambda op, dy: [dy * cos(_x(op))])
Cos = _unary("Cos", "cos", FLOATS, lambda op, dy: [-dy * sin(_x(op))])
Floor = _unary("Floor", "floor", FLOATS, lambda op, dy: [None])
Ceil = _unary("Ceil", "ceil", FLOATS, lambda op, dy: [None])
Round = _unary("Round", "round", FLOATS, lambda op, dy: [None])
LogicalNot = _unary("LogicalNot", "logical_not", BOOL)
# relu, sigmoid and tanh: their gradients are the unary_bwd kernel, with TF's op names.
Relu = _unary("Relu", "relu", FLOATS, lambda op, dy: [ReluGrad(_y(op), dy)])
Sigmoid = _unary("Sigmoid", "sigmoid", FLOATS, lambda op, dy: [SigmoidGrad(_y(op), dy)])
Tanh = _unary("Tanh", "tanh", FLOATS, lambda op, dy: [TanhGrad(_y(op), dy)])


def _unary_grad_op(type_name, kernel_op, grad):
    """dx = f'(y) * dy from the forward output y (unary_bwd kernel); inputs (y, dy)."""
    d = OpDef(type_name, kernel="unary_bwd")

    @d.shape
    def _(y, dy):
        check_dtype(y, FLOATS, "y")
        if y.dtype != dy.dtype:
            fail_dtype(f"y and dy must have one dtype, got {y.dtype.name} and {dy.dtype.name}")
        if not y.shape.is_compatible_with(dy.shape):
            fail(f"y {y.shape} and dy {dy.shape} must have the same shape")
        return Spec(y.dtype, y.shape.merge_with(dy.shape))

    d.kernel_op = kernel_op
    d.native_attrs(lambda attrs, ins, outs: {"op": kernel_op})
    d.grad(grad)
    return d


# Second-order rules: d/dy of dy*f'(y) is again the grad op; d/dy of the y-part as TF's *GradGrad
# (zeros for relu, whose f' is piecewise constant: TF returns zeros there, not None).
ReluGrad = _unary_grad_op("ReluGrad", "relu", lambda op, g: [zeros_like(op.inputs[0]), ReluGrad(op.inputs[0], g)])
SigmoidGrad = _unary_grad_op("SigmoidGrad", "sigmoid", lambda op, g: [
    g * op.inputs[1] * (1.0 - 2.0 * op.inputs[0]), SigmoidGrad(op.inputs[0], g)])
TanhGrad = _unary_grad_op("TanhGrad", "tanh", lambda op, g: [
    g * op.inputs[1] * (-2.0 * op.inputs[0]), TanhGrad(op.inputs[0], g)])


# The storage dtypes compute through a wider one and are rounded back, as TF's CPU kernels for
# them do (Eigen's half converts each element to float; int8/int16 results wrap around as in C).
_WIDER = {dtypes.float16: dtypes.float32, dtypes.int8: dtypes.int32, dtypes.int16: dtypes.int32,
          dtypes.uint8: dtypes.int32, dtypes.uint16: dtypes.int32}


def widened(opdef, xs, name, **attrs):
    """opdef applied to xs, through the wider dtype when xs have a storage dtype opdef does not
    take but takes its wider one (_WIDER); None when they do not."""
    wide = _WIDER.get(xs[0].dtype)
    allowed = getattr(opdef, "allowed", None)
    if wide is None or allowed is None or xs[0].dtype in allowed or wide not in allowed:
        return None
    out = opdef(*[cast(x, wide) for x in xs], name=name, **attrs)
    return cast(out, xs[0].dtype) if out.dtype == wide else out  # comparisons give bool


def _unary_fn(opdef, default_name):
    def fn(x, name=None):
        x = convert_to_tensor(x)
        out = widened(opdef, [x], name or default_name)
        return out if out is not None else opdef(x, name=name or default_name)

    fn.__name__ = default_name
    return fn


negative = _unary_fn(Neg, "Neg")
abs = _unary_fn(Abs, "Abs")  # noqa: A001
square = _unary_fn(Square, "Square")
sign = _unary_fn(Sign, "Sign")
exp = _unary_fn(Exp, "Exp")
log = _unary_fn(Log, "Log")
log1p = _unary_fn(Log1p, "Log1p")
sqrt = _unary_fn(Sqrt, "Sqrt")
rsqrt = _unary_fn(Rsqrt, "Rsqrt")
reciprocal = _unary_fn(Reciprocal, "Reciprocal")
sin = _unary_fn(Sin, "Sin")
cos = _unary_fn(Cos, "Cos")
floor = _unary_fn(Floor, "Floor")
ceil = _unary_fn(Ceil, "Ceil")
round = _unary_fn(Round, "Round")  # noqa: A001
logical_not = _unary_fn(LogicalNot, "LogicalNot")
relu = _unary_fn(Relu, "Relu")
sigmoid = _unary_fn(Sigmoid, "Sigmoid")
tanh = _unary_fn(Tanh, "Tanh")


# ---------------------------------------------------------------- binary ops (NumPy broadcasting)


def _binary(type_name, kernel_op, allowed, grad=None, out_dtype=None):
    """c = f(a, b) with broadcasting (binary_fwd). Gradients are for same-shape inputs: the
    gradient driver sums them back to each input's shape."""
    d = OpDef(type_name, kernel="binary_fwd", differentiable=grad is not None, broadcasting=True)
    d.allowed = allowed

    @d.shape
    def _(a, b):
        if a.dtype != b.dtype:
            fail_dtype(f"x and y must have the same dtype, got x: {a.dtype.name} and y: {b.dtype.name}")
        check_dtype(a, allowed)
        try:
            shape = broadcast_shape(a.shape, b.shape)
        except ValueError:
            fail(f"incompatible shapes for broadcasting, got x: {a.shape} and y: {b.shape}")
        return Spec(out_dtype or a.dtype, shape)

    d.kernel_op = kernel_op
    d.native_attrs(lambda attrs, ins, outs: {"op": kernel_op})
    if grad is not None:
        d.grad(grad)
    return d


def _pow_grad(op, dy):
    x, y = op.inputs
    z = op.outputs[0]
    positive = greater(x, 0.0)  # TF's _PowGrad: log(x) where x > 0, else 0, selected (not masked
    safe_log_x = Select(positive, log(Select(positive, x, ones_like(x))), zeros_like(x))  # by a product)
    return [dy * y * pow(x, y - 1.0), dy * z * safe_log_x]


def _max_min_grad(compare):
    def grad(op, dy):
        x, y = op.inputs
        first = cast(compare(x, y), dy.dtype)  # ties go to the first input, as in TF
        return [dy * first, dy * (1.0 - first)]

    return grad


Add = _binary("Add", "add", NUMBERS, lambda op, dy: [dy, dy])
Sub = _binary("Sub", "sub", NUMBERS, lambda op, dy: [dy, -dy])
Mul = _binary("Mul", "mul", NUMBERS, lambda op, dy: [dy * op.inputs[1], op.inputs[0] * dy])
RealDiv = _binary("RealDiv", "div", FLOATS, lambda op, dy: [
    dy / op.inputs[1], dy * (-op.inputs[0] / op.inputs[1]) / op.inputs[1]])
FloorDiv = _binary("FloorDiv", "floordiv", NUMBERS)
# x - floor(x / y) * y, with y's sign (TF's FloorMod and its gradient).
FloorMod = _binary("FloorMod", "floormod", NUMBERS, lambda op, dy: [
    dy, dy * negative(floordiv(op.inputs[0], op.inputs[1]))])
Pow = _binary("Pow", "pow", NUMBERS, _pow_grad)  # ints: the gradient driver skips them
Maximum = _binary("Maximum", "maximum", NUMBERS, _max_min_grad(lambda x, y: greater_equal(x, y)))
Minimum = _binary("Minimum", "minimum", NUMBERS, _max_min_grad(lambda x, y: less_equal(x, y)))
SquaredDifference = _binary("SquaredDifference", "squared_difference", FLOATS, lambda op, dy: [
    2.0 * (op.inputs[0] - op.inputs[1]) * dy, -2.0 * (op.inputs[0] - op.inputs[1]) * dy])
Equal = _binary("Equal", "equal", ALL, out_dtype=dtypes.bool_)
NotEqual = _binary("NotEqual", "not_equal", ALL, out_dtype=dtypes.bool_)
Less = _binary("Less", "less", NUMBERS, out_dtype=dtypes.bool_)
LessEqual = _binary("LessEqual", "less_equal", NUMBERS, out_dtype=dtypes.bool_)
Greater = _binary("Greater", "greater", NUMBERS, out_dtype=dtypes.bool_)
GreaterEqual = _binary("GreaterEqual", "greater_equal", NUMBERS, out_dtype=dtypes.bool_)
LogicalAnd = _binary("LogicalAnd", "logical_and", BOOL)
LogicalOr = _binary("LogicalOr", "logical_or", BOOL)
LogicalXor = _binary("LogicalXor", "logical_xor", BOOL)


def _binary_fn(opdef, default_name):
    def fn(x, y, name=None):
        x, y = convert_n_same_dtype([x, y], opdef.type, name or default_name)
        out = widened(opdef, [x, y], name or default_name) if x.dtype == y.dtype else None
        return out if out is not None else opdef(x, y, name=name or default_name)

    fn.__name__ = default_name
    return fn


add = _binary_fn(Add, "Add")
subtract = _binary_fn(Sub, "Sub")
multiply = _binary_fn(Mul, "Mul")
floordiv = _binary_fn(FloorDiv, "FloorDiv")
floormod = _binary_fn(FloorMod, "FloorMod")
mod = floormod
maximum = _binary_fn(Maximum, "Maximum")
minimum = _binary_fn(Minimum, "Minimum")
squared_difference = _binary_fn(SquaredDifference, "SquaredDifference")
equal = _binary_fn(Equal, "Equal")
not_equal = _binary_fn(NotEqual, "NotEqual")
less = _binary_fn(Less, "Less")
less_equal = _binary_fn(LessEqual, "LessEqual")
greater = _binary_fn(Greater, "Greater")
greater_equal = _binary_fn(GreaterEqual, "GreaterEqual")
logical_and = _binary_fn(LogicalAnd, "LogicalAnd")
logical_or = _binary_fn(LogicalOr, "LogicalOr")
logical_xor = _binary_fn(LogicalXor, "LogicalXor")
_real_div = _binary_fn(RealDiv, "RealDiv")
_pow = _binary_fn(Pow, "Pow")


def truediv(x, y, name=None):
    """x / y; integer tensors are converted first, as in TF: 8- and 16-bit ones to float32, the
    others to float64."""
    x, y = convert_n_same_dtype([x, y], "RealDiv")
    if x.dtype.is_integer and y.dtype == x.dtype:
        to = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
        x, y = cast(x, to), cast(y, to)
    return _real_div(x, y, name=name or "truediv")


def divide(x, y, name=None):
    return truediv(x, y, name=name)


def div(x, y, name=None):
    """TF1 tf.div: true division for floats, floor division for integers."""
    x, y = convert_n_same_dtype([x, y], "Div")
    if x.dtype.is_integer:
        return floordiv(x, y, name=name or "div")
    return _real_div(x, y, name=name or "div")


realdiv = _real_div


def div_no_nan(x, y, name=None):
    """x / y, or 0 where y is 0 (TF's DivNoNan, for floats), its result named `name`. y is replaced
    by 1 where it is 0 before dividing, so the gradient is finite too (TF's: div_no_nan of the
    incoming gradient)."""
    x, y = convert_n_same_dtype([x, y], "DivNoNan")
    if not x.dtype.is_floating:
        raise build_error("DivNoNan", name or "div_no_nan", f"x and y must be floats, got {x.dtype.name}", TypeError)
    if x.shape.ndims is None or y.shape.ndims is None or x.shape.as_list() != y.shape.as_list():
        x, y = x + zeros_like(y), y + zeros_like(x)  # both in the broadcast shape
    zero = equal(y, 0.0)
    q = _real_div(x, Select(zero, ones_like(y), y))
    return Select(zero, zeros_like(q), q, name=name or "div_no_nan")


def pow(x, y, name=None):  # noqa: A001
    x, y = convert_n_same_dtype([x, y], "Pow")
    return _pow(x, y, name=name or "Pow")


def scalar_mul(scalar, x, name=None):
    return multiply(scalar, x, name=name)


# ---------------------------------------------------------------- add_n

AddN = OpDef("AddN", lowering=CUSTOM)
AddN.allowed = NUMBERS


@AddN.shape
def _(*xs):
    if not xs:
        fail("needs at least one input")
    check_dtype(xs[0], NUMBERS)
    shape = xs[0].shape
    for x in xs[1:]:
        if x.dtype != xs[0].dtype:
            fail_dtype(f"all inputs must have one dtype, got {xs[0].dtype.name} and {x.dtype.name}")
        if not shape.is_compatible_with(x.shape):
            fail(f"all inputs must have the same shape, got {xs[0].shape} and {x.shape}")
        shape = shape.merge_with(x.shape)
    return Spec(xs[0].dtype, shape)


@AddN.grad
def _(op, dy):
    return [dy] * len(op.inputs)


@AddN.lower
def _(ctx, op):
    """A chain of adds; partial sums accumulate in the output buffer."""
    out = ctx.output(0)
    acc = ctx.operand(op.inputs[0])
    if len(op.inputs) == 1:
        ctx.step(Add.kernel, [acc, ctx.zero_like(op.inputs[0])], [out], {"op": Add.kernel_op})
    for t in op.inputs[1:]:
        ctx.step(Add.kernel, [acc, ctx.operand(t)], [out], {"op": Add.kernel_op})
        acc = out


def add_n(inputs, name=None):
    """The elementwise sum of inputs; a single input is returned as it is (an Identity when named, as TF's)."""
    inputs = [convert_to_tensor(t) for t in inputs]
    if len(inputs) == 1:
        return identity(inputs[0], name=name) if name else inputs[0]
    if all(t.dtype == inputs[0].dtype for t in inputs):
        out = widened(AddN, inputs, name or "AddN")
        if out is not None:
            return out
    return AddN(*inputs, name=name or "AddN")


# ---------------------------------------------------------------- matmul

MatMul = OpDef("MatMul", kernel="matmul_fwd", broadcasting=True)


@MatMul.shape
def _(a, b, *, transpose_a, transpose_b):
    """Matrices, or batches of them (TF's BatchMatMul): the leading dimensions of a and b agree, or
    one of them is a matrix, the same for every batch."""
    if a.dtype != b.dtype:
        fail_dtype(f"a and b must have the same dtype, got a: {a.dtype.name} and b: {b.dtype.name}")
    check_dtype(a, FLOATS, "a")
    ra, rb = a.shape.ndims, b.shape.ndims
    if (ra is not None and ra < 2) or (rb is not None and rb < 2):
        fail(f"a and b must be matrices (rank 2) or batches of them, got a: {a.shape} and b: {b.shape}")
    if ra is not None and rb is not None and ra != rb and 2 not in (ra, rb):
        fail(f"a and b must have the same rank, or one be a matrix, got a: {a.shape} and b: {b.shape}")
    ad = a.shape.dims[-2:] if ra is not None else (None, None)
    bd = b.shape.dims[-2:] if rb is not None else (None, None)
    m, ka = (ad[1], ad[0]) if transpose_a else ad
    kb, n = (bd[1], bd[0]) if transpose_b else bd
    if ka is not None and kb is not None and ka != kb:
        fail(f"inner dimensions must agree, got a: {a.shape} and b: {b.shape} ({ka} != {kb})")
    if ra is None or rb is None:
        return Spec(a.dtype, TensorShape(None) if max(ra or 0, rb or 0) > 2 or ra is None and rb is None
                    else TensorShape([m, n]))
    batch_a, batch_b = a.shape.dims[:-2], b.shape.dims[:-2]
    if batch_a and batch_b:
        if not TensorShape(batch_a).is_compatible_with(batch_b):
            fail(f"batch dimensions must agree, got a: {a.shape} and b: {b.shape}")
        batch = TensorShape(batch_a).merge_with(batch_b).dims
    else:
        batch = batch_a or batch_b
    return Spec(a.dtype, TensorShape(list(batch) + [m, n]))


MatMul.native_attrs(lambda attrs, ins, outs: {"transpose_a": attrs["transpose_a"], "transpose_b": attrs["transpose_b"]})


@MatMul.grad
def _(op, dy):
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if not ta and not tb:
        grads = [matmul(dy, b, transpose_b=True), matmul(a, dy, transpose_a=True)]
    elif not ta and tb:
        grads = [matmul(dy, b), matmul(dy, a, transpose_a=True)]
    elif ta and not tb:
        grads = [matmul(b, dy, transpose_b=True), matmul(a, dy)]
    else:
        grads = [matmul(b, dy, transpose_a=True, transpose_b=True), matmul(dy, a, transpose_a=True, transpose_b=True)]
    return grads  # a matrix used for every batch: the driver sums its gradient over the batch (broadcasting)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    a, b = convert_n_same_dtype([a, b], "MatMul")
    attrs = {"transpose_a": bool(transpose_a or adjoint_a), "transpose_b": bool(transpose_b or adjoint_b)}
    if a.dtype == dtypes.float16 and b.dtype == dtypes.float16:  # accumulated in float32, as TF's CPU kernel
        return cast(MatMul(cast(a, dtypes.float32), cast(b, dtypes.float32), name=name or "MatMul", **attrs),
                    dtypes.float16)
    return MatMul(a, b, name=name or "MatMul", **attrs)


# ---------------------------------------------------------------- bucketize
# TF's Bucketize (bucketize_op.cc): each value's bucket, the number of boundaries <= it
# (std::upper_bound over the float boundaries; a value compares as float, a double as double).
# No native kernel: a host op (see host.py), of stage BETWEEN.
Bucketize = OpDef("Bucketize", host=BETWEEN, differentiable=False)


@Bucketize.shape
def _(input, *, boundaries):
    check_dtype(input, NUMBERS, "input")
    if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
        fail(f"Expected sorted boundaries, got {list(boundaries)}")
    return Spec(dtypes.int32, input.shape)


@Bucketize.host
def _(ctx, op, values):
    x = np.asarray(values[0])
    bounds = np.asarray(op.attrs["boundaries"], np.float32)
    if x.dtype == np.float64:
        return [np.searchsorted(bounds.astype(np.float64), x, side="right").astype(np.int32)]
    return [np.searchsorted(bounds, x.astype(np.float32), side="right").astype(np.int32)]


def bucketize(input, boundaries, name=None):
    """Each value's bucket in [0, len(boundaries)]: how many boundaries are <= it (TF's Bucketize)."""
    return Bucketize(convert_to_tensor(input), boundaries=[float(b) for b in boundaries], name=name or "Bucketize")


# ---------------------------------------------------------------- operators of Tensor and Variable
# Each builds the op TF1 builds for it, under TF1's name (`a + b` is op 'add' of type Add, `a @ b`
# is 'matmul'); comparisons and `-a` keep the type's name.


def _binary_operator(operator, fn, name):
    override_operator(f"__{operator}__", lambda a, b: fn(a, b, name=name))
    override_operator(f"__r{operator}__", lambda a, b: fn(b, a, name=name))


_binary_operator("add", add, "add")
_binary_operator("sub", subtract, "sub")
_binary_operator("mul", multiply, "mul")
_binary_operator("truediv", truediv, "truediv")
_binary_operator("floordiv", floordiv, "floordiv")
_binary_operator("mod", floormod, "mod")
_binary_operator("pow", pow, "pow")
_binary_operator("matmul", matmul, "matmul")
_binary_operator("and", logical_and, "and")
_binary_operator("or", logical_or, "or")
_binary_operator("xor", logical_xor, "xor")
override_operator("__lt__", lambda a, b: less(a, b))
override_operator("__le__", lambda a, b: less_equal(a, b))
override_operator("__gt__", lambda a, b: greater(a, b))
override_operator("__ge__", lambda a, b: greater_equal(a, b))
override_operator("__neg__", lambda a: negative(a))
override_operator("__abs__", lambda a: abs(a))
override_operator("__invert__", lambda a: logical_not(a))
