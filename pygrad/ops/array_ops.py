"""Placeholders, constants, and ops that move or reinterpret data: reshape, cast, transpose, ..."""
from __future__ import annotations

import numbers

import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, TensorLike, build_error, unwrap
from pygrad.ops.shape_exprs import has_refs, resolve, shape_expr
from pygrad.registry import ALIAS, CONST, FEED, SHAPE_ONLY_AFTER_FIRST, VALUE, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import ShapeLike, TensorShape, as_shape

# ---------------------------------------------------------------- conversion


def numpy_value(value, dtype=None):
    """value as a NumPy array of a supported dtype, with TF's defaults for Python numbers: ints are
    int32 when every one fits, else int64; floats are float32. An integer that does not fit the
    dtype it is converted to is refused, never wrapped (TypeError or ValueError; the caller names
    the op)."""
    if dtype is not None and dtypes.as_dtype(dtype) == dtypes.string or dtype is None and dtypes.is_string_value(value):
        return dtypes.as_bytes_array(value)
    is_numpy = isinstance(value, (np.ndarray, np.generic))
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "O" and _all_python_ints(value):
        raise TypeError(f"{value!r} does not fit int64 (range [{-2**63}, {2**63 - 1}]), pygrad's widest integer")
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if kind == "O":
            raise TypeError(f"Cannot convert {value!r} to a {dtype.name} tensor")
        if dtype.is_integer and kind == "f" and not np.all(np.mod(arr, 1) == 0):
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
        if dtype.is_bool and kind != "b":
            raise TypeError(f"Expected bool, got {value!r} of type '{type(value).__name__}' instead.")
        if dtype.is_integer and kind in "iuf":
            _check_fits(arr, dtype.np, value)
        return np.asarray(arr, dtype=dtype.np, order="C")
    if kind == "b":
        return np.asarray(arr, order="C")
    if is_numpy and arr.dtype in _NUMPY_KEPT:  # NumPy values keep their dtype, as in TF
        return np.asarray(arr, order="C")
    if kind in "iu":
        # TF's rule for Python ints: int32 when every one fits, else int64; NumPy's uint32 and
        # uint64, which pygrad lacks, become int64.
        target = np.int32 if not is_numpy and dtypes.fits(arr, np.int32) else np.int64
        if not dtypes.fits(arr, target):  # TF's class for a Python int no dtype holds
            raise TypeError(_out_of_range(arr, target, value))
        return np.asarray(arr, dtype=target, order="C")
    if kind == "f":
        return np.asarray(arr, dtype=np.float32, order="C")
    raise TypeError(f"Cannot convert {value!r} (dtype {arr.dtype}) to a tensor")


_NUMPY_KEPT = {d.np for d in dtypes.ALL_DTYPES}


def _all_python_ints(value):
    if isinstance(value, (list, tuple)):
        return all(_all_python_ints(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


def _check_fits(arr, np_dtype, value):
    if not dtypes.fits(arr, np_dtype):
        raise ValueError(_out_of_range(arr, np_dtype, value))


def _out_of_range(arr, np_dtype, value):
    info = np.iinfo(np_dtype)
    shown = repr(value) if np.size(value) <= 8 else f"an array with values in [{arr.min()}, {arr.max()}]"
    return f"{shown} does not fit {info.dtype.name} (range [{info.min}, {info.max}])"


# A list or tuple holding tensors converts by stacking them (TF's autopacking); manip_ops, which
# defines the stack op, registers the function that does it: autopack(values, name) -> Tensor.
autopack = None


def holds_tensor(value):
    return isinstance(value, (list, tuple)) and any(isinstance(v, TensorLike) or holds_tensor(v) for v in value)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, dtype_hint=None):
    """A Tensor for value: Tensors and Variables pass through (dtype checked), a list holding
    tensors is stacked, others become constants."""
    value = unwrap(value)
    if autopack is not None and holds_tensor(value):
        value = autopack(value, name)
    if isinstance(value, Tensor):
        if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
            raise TypeError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for Tensor with dtype "
                            f"{value.dtype.name}: {value!r}")
        return value
    hint = preferred_dtype or dtype_hint
    if dtype is None and hint is not None:
        try:
            return constant(value, dtype=hint, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def convert_n_same_dtype(values, op_name, name=None):
    """Converts values to tensors of one dtype for an op of type op_name (to be named name): Python
    numbers and NumPy values follow the first Tensor among them (TF1 converts `x32 * np.array([1.,
    2.])` to float32 too), and are built in that tensor's graph; a literal that does not fit that
    dtype is refused naming the op. A remaining dtype mismatch is left to the op's dtype rule, which
    names the op and the user's line."""
    first = next((unwrap(v) for v in values if isinstance(v, TensorLike)), None)
    if first is None:
        return [convert_to_tensor(v) for v in values]
    with first.graph.as_default():
        return [convert_for_op(v, first.dtype, op_name, name) if not isinstance(v, TensorLike) and _follows_hint(v)
                else convert_to_tensor(v) for v in values]


def convert_for_op(value, dtype, op_type, name=None):
    """value as a tensor of dtype, for an input of an op of type op_type (to be named name): a
    tensor of another dtype, or a literal that dtype cannot hold, is refused naming that op."""
    value = unwrap(value)
    if isinstance(value, Tensor):
        if value.dtype != dtypes.as_dtype(dtype):
            raise build_error(op_type, name, f"{value.name} has dtype {value.dtype.name}, expected "
                                             f"{dtypes.as_dtype(dtype).name}", TypeError)
        return value
    try:
        numpy_value(value, dtype)
    except (TypeError, ValueError) as e:
        raise build_error(op_type, name, str(e), type(e)) from None
    return convert_to_tensor(value, dtype=dtype)


def _follows_hint(v):
    """Literals that take a neighbouring tensor's dtype: Python numbers and lists, NumPy arrays and scalars."""
    return isinstance(v, (numbers.Number, list, tuple, np.ndarray, np.generic))


# ---------------------------------------------------------------- values known when the graph is built


def constant_value(value):
    """value as a NumPy array when the graph fixes it: a Python or NumPy value, or a constant tensor
    (its value is read-only); None for a tensor that only a run computes (as tf.get_static_value)."""
    value = unwrap(value)
    if isinstance(value, Tensor):
        return value.op.attrs["value"] if value.op.type == "Const" else None
    return numpy_value(value)


def static_value(value, what, opdef, name=None):
    """constant_value(value) for an argument `what` that opdef's op needs when the graph is built,
    since pygrad plans static shapes; the output of any other op is refused."""
    try:
        arr = constant_value(value)
    except TypeError as e:
        raise opdef.error(f"{what}: {e}", name, TypeError) from None
    if arr is None:
        t = unwrap(value)
        raise opdef.error(f"{what} must be known when the graph is built (a Python value or a constant), got the "
                          f"output of {t.op.type} '{t.op.name}'", name)
    return arr


def static_ints(value, what, opdef, name=None):
    """static_value(...) of integers, as an int64 array."""
    arr = static_value(value, what, opdef, name)
    if arr.size and arr.dtype.kind not in "iu":
        raise opdef.error(f"{what} must be integers, got {value!r}", name, TypeError)
    return arr.astype(np.int64)


def static_int(value, what, opdef, name=None):
    """static_value(...) of one integer, as a Python int."""
    arr = static_ints(value, what, opdef, name)
    if arr.size != 1:
        raise opdef.error(f"{what} must be a single integer, got {value!r}", name)
    return int(arr.reshape(()))


# ---------------------------------------------------------------- graph inputs

Placeholder = OpDef("Placeholder", lowering=FEED, differentiable=False)


@Placeholder.shape
def _(*, dtype, shape):
    return Spec(dtype, shape)


def placeholder(dtype: dtypes.DTypeLike, shape: ShapeLike = None, name: str | None = None) -> Tensor:
    """A tensor whose value must be fed to Session.run. Shape dims may be None."""
    return Placeholder(dtype=dtypes.as_dtype(dtype), shape=as_shape(shape), name=name or "Placeholder")


Const = OpDef("Const", lowering=CONST, differentiable=False)


@Const.shape
def _(*, value, dtype):
    return Spec(dtype, TensorShape(value.shape))


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A constant tensor. Python floats become float32 and ints int32, as in TF. With `shape`, TF1's
    rule: a value with fewer elements fills the shape in order and repeats its last element."""
    try:
        arr = numpy_value(value, dtype)
    except (TypeError, ValueError) as e:
        raise Const.error(str(e), name, type(e)) from None
    if shape is not None:
        shape = tuple(as_shape(shape).as_list())
        if verify_shape and arr.shape != shape:
            raise Const.error(f"Expected Tensor's shape: {shape}, got {arr.shape}.", name, TypeError)
        size = int(np.prod(shape))
        if arr.size > size:
            raise Const.error(f"Too many elements provided. Takes at most {size}, but got {arr.size}.", name)
        if arr.size == 0 and size:
            raise Const.error(f"Cannot fill shape {shape} from an empty value.", name)
        flat = arr.reshape(-1)
        arr = np.concatenate([flat, np.repeat(flat[-1:], size - flat.size)]).reshape(shape) if size else \
            np.empty(shape, arr.dtype)
    arr = arr.copy()  # a constant keeps the value it was built with
    arr.setflags(write=False)
    return Const(value=arr, dtype=dtypes.as_dtype(arr.dtype), name=name)


def zeros(shape, dtype=dtypes.float32, name=None):
    return _filled(shape, 0, dtypes.as_dtype(dtype).np, name or "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    return _filled(shape, 1, dtypes.as_dtype(dtype).np, name or "ones")


def fill(dims, value, name=None):
    v = numpy_value(value)
    return _filled(dims, v, v.dtype, name or "Fill")


def _filled(dims, value, np_dtype, name):
    """A constant of shape dims (sizes of at least 0) filled with value; with sizes read from other
    tensors' shapes (tf.shape(x)[0], ...), a Fill op the plan sizes."""
    expr = shape_expr(dims)
    if expr is not None and has_refs(expr[0]):
        return Fill(*expr[1], dims=tuple(expr[0]), dtype=dtypes.as_dtype(np_dtype), value=float(value),
                    name=name)
    shape = as_shape(expr[0] if expr is not None else dims)
    if not shape.is_fully_defined():
        raise Const.error(f"shape {dims!r} must be fully defined, with sizes of at least 0", name)
    nbytes = shape.num_elements() * np.dtype(np_dtype).itemsize
    if nbytes > dtypes.MEMORY_BYTES:
        raise Const.error(f"shape {shape} ({np.dtype(np_dtype).name}) needs {nbytes} bytes, more than the "
                          f"{dtypes.MEMORY_BYTES} bytes of this machine's memory", name, MemoryError)
    return constant(np.full(shape.as_list(), value, np_dtype), name=name)


# ---------------------------------------------------------------- filled like another tensor

# Every input only gives sizes the shape reads (shape_exprs).
Fill = OpDef("Fill", kernel="fill", differentiable=False, shape_only_inputs=range(1 << 31))


@Fill.shape
def _(*refs, dims, dtype, value):
    shape = resolve(dims, refs)
    if any(d is not None and d < 0 for d in shape):
        fail(f"dimensions must be at least 0, got {shape}")
    return Spec(dtype, TensorShape(shape))


@Fill.native_attrs
def _(attrs, ins, outs):
    return {"value": attrs["value"]}


ZerosLike = OpDef("ZerosLike", kernel="fill", differentiable=False, shape_only_inputs={0})
OnesLike = OpDef("OnesLike", kernel="fill", differentiable=False, shape_only_inputs={0})


@ZerosLike.shape
@OnesLike.shape
def _(x):
    return Spec(x.dtype, x.shape)


@ZerosLike.native_attrs
def _(attrs, ins, outs):
    return {"value": 0.0}


@OnesLike.native_attrs
def _(attrs, ins, outs):
    return {"value": 1.0}



def zeros_like(tensor, dtype=None, name=None, optimize=True):
    t = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) != t.dtype:
        t = cast(t, dtype)
    return ZerosLike(t, name=name or "zeros_like")


def ones_like(tensor, dtype=None, name=None, optimize=True):
    t = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) != t.dtype:
        t = cast(t, dtype)
    return OnesLike(t, name=name or "ones_like")


# ---------------------------------------------------------------- identity and stop_gradient

Identity = OpDef("Identity", lowering=ALIAS)


@Identity.shape
def _(x):
    return Spec(x.dtype, x.shape)


@Identity.grad
def _(op, dy):
    return [dy]


def identity(input, name=None):
    return Identity(convert_to_tensor(input), name=name or "Identity")


StopGradient = OpDef("StopGradient", lowering=ALIAS, differentiable=False)


@StopGradient.shape
def _(x):
    return Spec(x.dtype, x.shape)


def stop_gradient(input, name=None):
    """The value of input, through which no gradient flows."""
    return StopGradient(convert_to_tensor(input), name=name or "StopGradient")


# ---------------------------------------------------------------- reshape

def _reshape_target(in_shape, target):
    """Resolves one -1 in target against in_shape; None where unknown (in_shape's, or a target
    dimension read from a shape the graph does not know yet)."""
    target = list(target)
    if sum(1 for d in target if d == -1) > 1:
        fail(f"at most one dimension may be -1, got {target}")
    if any(d is not None and d < -1 for d in target):
        fail(f"invalid target shape {target}")
    known = 1
    for d in target:
        if d is not None and d != -1:
            known *= d
    n = in_shape.num_elements()
    if -1 in target:
        if n is None or None in target:
            return TensorShape([None if d == -1 else d for d in target])
        if known == 0 or n % known:
            fail(f"cannot reshape a tensor of {n} elements {in_shape} into shape {target}")
        return TensorShape([n // known if d == -1 else d for d in target])
    if n is not None and None not in target and n != known:
        fail(f"cannot reshape a tensor of {n} elements {in_shape} into shape {tuple(target)} ({known} elements)")
    return TensorShape(target)


# Inputs after the first only give sizes the target shape reads (shape_exprs).
Reshape = OpDef("Reshape", lowering=ALIAS, shape_only_inputs=SHAPE_ONLY_AFTER_FIRST)


@Reshape.shape
def _(x, *refs, shape):
    return Spec(x.dtype, _reshape_target(x.shape, resolve(shape, refs)))


@Reshape.grad
def _(op, dy):
    return [ReshapeLike(dy, op.inputs[0])] + [None] * (len(op.inputs) - 1)


ReshapeLike = OpDef("ReshapeLike", lowering=ALIAS, shape_only_inputs={1})  # input 1 only gives the shape


@ReshapeLike.shape
def _(x, like):
    n, m = x.shape.num_elements(), like.shape.num_elements()
    if n is not None and m is not None and n != m:
        fail(f"cannot reshape {x.shape} into {like.shape}")
    return Spec(x.dtype, like.shape)


@ReshapeLike.grad
def _(op, dy):
    return [ReshapeLike(dy, op.inputs[0]), None]


def reshape(tensor, shape, name=None):
    """tensor with a new shape; one dimension may be -1. shape: a list (of ints, and of sizes read
    from other tensors' shapes, such as tf.shape(x)[0]), a constant, or tf.shape(t)."""
    t = convert_to_tensor(tensor)
    if isinstance(shape, Tensor) and shape.op.type == "Shape":
        return ReshapeLike(t, shape.op.inputs[0], name=name or "Reshape")
    expr = shape_expr(shape)
    if expr is not None and has_refs(expr[0]):
        return Reshape(t, *expr[1], shape=tuple(expr[0]), name=name or "Reshape")
    if expr is not None:  # sizes the graph knows, in any of the forms shape_expr reads
        shape = expr[0]
    if isinstance(shape, Tensor) and constant_value(shape) is None:
        raise Reshape.error(f"the target shape must be a list, a constant, tf.shape(t) or sizes read from "
                            f"shapes (tf.shape(t)[i]); got the output of {shape.op.type} '{shape.op.name}'", name)
    shape = constant_value(shape) if isinstance(shape, Tensor) else shape
    target = [int(d) if d is not None else -1 for d in np.asarray(shape, dtype=object).reshape(-1)]
    return Reshape(t, shape=tuple(target), name=name or "Reshape")


ExpandDims = OpDef("ExpandDims", lowering=ALIAS)


@ExpandDims.shape
def _(x, *, axis):
    if x.shape.dims is None:
        return Spec(x.dtype, TensorShape(None))
    n = len(x.shape.dims)
    if not -n - 1 <= axis <= n:
        fail(f"axis {axis} is out of range for a tensor of rank {n}")
    dims = list(x.shape.dims)
    dims.insert(axis if axis >= 0 else axis + n + 1, 1)
    return Spec(x.dtype, TensorShape(dims))


@ExpandDims.grad
def _(op, dy):
    return [ReshapeLike(dy, op.inputs[0])]


def expand_dims(input, axis=None, name=None, dim=None):
    axis = dim if axis is None else axis
    return ExpandDims(convert_to_tensor(input), axis=int(axis), name=name or "ExpandDims")


Squeeze = OpDef("Squeeze", lowering=ALIAS)


@Squeeze.shape
def _(x, *, axis):
    if x.shape.dims is None:
        return Spec(x.dtype, TensorShape(None))
    n = len(x.shape.dims)
    axes = [a % n if -n <= a < n else fail(f"axis {a} is out of range for rank {n}") for a in axis]
    dims = []
    for i, d in enumerate(x.shape.dims):
        if axes and i in axes:
            if d is not None and d != 1:
                fail(f"cannot squeeze dimension {i} of shape {x.shape}: its size is {d}, not 1")
            continue
        if not axes and d == 1:
            continue
        if not axes and d is None:
            fail(f"cannot squeeze unknown dimension {i} of shape {x.shape}; pass axis")
        dims.append(d)
    return Spec(x.dtype, TensorShape(dims))


@Squeeze.grad
def _(op, dy):
    return [ReshapeLike(dy, op.inputs[0])]


def squeeze(input, axis=None, name=None, squeeze_dims=None):
    axis = squeeze_dims if axis is None else axis
    axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    return Squeeze(convert_to_tensor(input), axis=axis, name=name or "Squeeze")


# ---------------------------------------------------------------- shape as a value

def _shape_op(type_name, compute):
    """An op whose int output is computed from its input's concrete shape when a plan is built."""
    opdef = OpDef(type_name, lowering=VALUE, differentiable=False, shape_only_inputs={0})
    @opdef.value
    def _(attrs, x):
        value, out_type = np.asarray(compute(x.shape.as_list()), dtype=np.int64), attrs["out_type"]
        if not dtypes.fits(value, out_type.np):
            fail(f"{type_name} output type is {out_type.name} but the shape {x.shape} needs {value.tolist()}")
        return value.astype(out_type.np)

    return opdef


Shape = _shape_op("Shape", lambda dims: dims)
Size = _shape_op("Size", lambda dims: int(np.prod(dims, dtype=np.int64)))
Rank = _shape_op("Rank", len)


@Shape.shape
def _(x, *, out_type):
    return Spec(out_type, TensorShape([x.shape.ndims]))


@Size.shape
@Rank.shape
def _(x, *, out_type):
    return Spec(out_type, TensorShape([]))


def shape(input, name=None, out_type=dtypes.int32):
    return Shape(convert_to_tensor(input), out_type=dtypes.as_dtype(out_type), name=name or "Shape")


def size(input, name=None, out_type=dtypes.int32):
    return Size(convert_to_tensor(input), out_type=dtypes.as_dtype(out_type), name=name or "Size")


def rank(input, name=None):
    return Rank(convert_to_tensor(input), out_type=dtypes.int32, name=name or "Rank")


# ---------------------------------------------------------------- cast

Cast = OpDef("Cast", kernel="cast")


@Cast.shape
def _(x, *, DstT):
    if (x.dtype == dtypes.string) != (DstT == dtypes.string):  # TF: "Cast string to float is not supported"
        fail_dtype(f"Cast {x.dtype.name} to {DstT.name} is not supported (tf.strings.to_number, tf.as_string convert)")
    return Spec(DstT, x.shape)


@Cast.grad
def _(op, dy):
    src = op.inputs[0].dtype
    if src.is_floating and op.outputs[0].dtype.is_floating:
        return [cast(dy, src)]
    return [None]


def cast(x, dtype, name=None):
    """x converted to dtype (float to int truncates toward zero; to bool is x != 0)."""
    x = convert_to_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return Cast(x, DstT=dtype, name=name or "Cast")


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, dtypes.int64, name=name)


# ---------------------------------------------------------------- transpose

Transpose = OpDef("Transpose", kernel="transpose")


@Transpose.shape
def _(x, *, perm):
    if x.shape.dims is None:
        return Spec(x.dtype, TensorShape(None) if perm is None else TensorShape([None] * len(perm)))
    n = len(x.shape.dims)
    if perm is None:
        perm = tuple(range(n - 1, -1, -1))
    if sorted(perm) != list(range(n)):
        fail(f"perm {list(perm)} is not a permutation of the {n} dimensions of {x.shape}")
    return Spec(x.dtype, TensorShape([x.shape.dims[p] for p in perm]))


@Transpose.native_attrs
def _(attrs, ins, outs):
    n = len(ins[0].shape.dims)
    return {"perm": list(attrs["perm"] if attrs["perm"] is not None else range(n - 1, -1, -1))}


@Transpose.grad
def _(op, dy):
    perm = op.attrs["perm"]
    if perm is None:
        return [Transpose(dy, perm=None)]
    return [Transpose(dy, perm=tuple(int(i) for i in np.argsort(perm)))]


def transpose(a, perm=None, name="transpose", conjugate=False):
    perm = None if perm is None else tuple(int(p) for p in perm)
    return Transpose(convert_to_tensor(a), perm=perm, name=name)
