"""tf.TensorArray: a [size, *element_shape] tensor (its "flow") written and read a row at a time.

A write returns a new TensorArray whose flow is the same buffer, written in place (a TF1
TensorArray is written once per index, so nothing reads the old flow afterwards); a read copies
a row out. As a loop variable the flow is the loop variable, so a loop that writes one row per
iteration does O(row) work per iteration. The size and the element shape must be known when a
plan is built, not necessarily when the graph is: the size is a Python int or a constant, or the
first dimension of a tensor (the one given to unstack, or `size_like` of _sized_like); the element
shape is element_shape merged with what the first value written says (as TF1's infer_shape) and
with the shape of a tensor (`element_like` of _sized_like). Those tensors are shape-only inputs of
the TensorArrayV3 op: their shapes, concrete per plan, size the array, and their values are never
computed. So an array of a [time, batch, units] sequence may have an unknown time and batch when
the graph is built (tf.nn.dynamic_rnn's outputs). A dynamic_size array grows, as TF's, with a write
past its size: at an index the graph fixes (a constant), the flow is padded with zero rows up to the
index, then written. An array that starts empty grows by writes at any index: since its size is then
a value of the run, such a write is a host op between two plans (TensorArrayGrowWrite), and a
tf.while_loop that carries the array relaxes its size across iterations and runs in Python
(control_flow_ops' WhileInPython, a plan per iteration's size). A computed index past the size of an
array that started non-empty raises when it runs (its loop runs natively, at a fixed size). Reads do
not clear rows (clear_after_read is accepted and has no effect).
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, unwrap
from pygrad.kernels import COPY, TEMP_BUFFER
from pygrad.ops import array_ops, manip_ops, sequence_ops, state_ops
from pygrad.registry import ALIAS, BETWEEN, CUSTOM, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape, as_shape


class _Meta:
    """What the TensorArrays of one chain of writes share: the element shape as known so far."""

    def __init__(self, element_shape, started_empty=False):
        self.element_shape = element_shape
        self.started_empty = started_empty  # a dynamic_size array of size 0: it grows in the run


# Inputs (shape-only, both optional, in this order): size_like, whose first dimension is the size
# when `size` is None, and element_like, whose shape is merged into the element shape.
TensorArrayV3 = OpDef("TensorArrayV3", kernel="fill", differentiable=False, shape_only_inputs={0, 1})


@TensorArrayV3.shape
def _(*like, dtype, size, meta, element_like):
    size_like = like[0] if size is None and len(like) > element_like else None
    rows = size
    if size_like is not None:
        known = TensorShape(size_like.shape)
        rows = known.as_list()[0] if known.ndims else None
    element = meta.element_shape
    if element_like:
        given = TensorShape(like[-1].shape)
        if not element.is_compatible_with(given):
            fail(f"the element shape {element} does not match element_like {given}")
        element = element.merge_with(given)
    shape = TensorShape([rows]).concatenate(element)
    at_plan = like and not isinstance(like[0], Tensor)
    if at_plan and not shape.is_fully_defined():
        fail(f"the shape {shape} (size, then element shape) must be known when the plan is built: give "
             f"element_shape, or write to the array before using it")
    return Spec(dtype, shape)


@TensorArrayV3.native_attrs
def _(attrs, ins, outs):
    return {"value": 0.0}


TensorArrayWriteV3 = OpDef("TensorArrayWriteV3", lowering=CUSTOM)


@TensorArrayWriteV3.shape
def _(flow, index, value):
    if index.dtype not in (dtypes.int32, dtypes.int64) or index.shape.ndims not in (None, 0):
        fail(f"index must be an int32 or int64 scalar, got {index.dtype.name} of shape {index.shape}")
    if value.dtype != flow.dtype:
        fail(f"Could not write to TensorArray: the array holds {flow.dtype.name}, the value is {value.dtype.name}")
    elem = TensorShape(flow.shape).as_list()[1:] if TensorShape(flow.shape).ndims is not None else None
    value_shape = TensorShape(value.shape)
    if elem is not None and not value_shape.is_compatible_with(elem):
        fail(f"Could not write to TensorArray: its element shape is {TensorShape(elem)}, the value has shape "
             f"{value_shape}")
    rows = TensorShape(flow.shape).as_list()[0] if TensorShape(flow.shape).ndims is not None else None
    return Spec(flow.dtype, TensorShape([rows]).concatenate(value_shape.merge_with(elem) if elem is not None
                                                            else value_shape))


@TensorArrayWriteV3.lower
def _(ctx, op):
    flow, index, value = op.inputs
    src = ctx.program.buffer_of[flow]
    if src.kind == TEMP_BUFFER:
        ctx.program.buffer_of[op.outputs[0]] = src
        out = ctx.operand(op.outputs[0])
    else:  # a constant or a feed is never written: write a copy
        out = ctx.output(0)
        ctx.copy(ctx.operand(flow), out)
    ctx.step("ta_write", [ctx.operand(index), ctx.operand(value)], [out], {})


@TensorArrayWriteV3.grad
def _(op, dy):
    return [dy, None, TensorArrayReadV3(dy, op.inputs[1])]


# A write that grows an array whose size is a value of the run (one that started empty, dynamic_size).
TensorArrayGrowWrite = OpDef("TensorArrayGrowWrite", host=BETWEEN)


@TensorArrayGrowWrite.shape
def _(flow, index, value):
    spec = TensorArrayWriteV3.shape_fn(flow, index, value)
    return Spec(spec.dtype, TensorShape([None]).concatenate(spec.shape[1:]))


@TensorArrayGrowWrite.host
def _(ctx, op, values):
    flow, index, value = (np.asarray(v) for v in values)
    index = int(index)
    if index < 0:
        raise HostError(f"Tried to write to index {index} of a TensorArray of size {flow.shape[0]}")
    if flow.shape[1:] != value.shape and flow.shape[0]:
        raise HostError(f"Could not write to TensorArray index {index}: its elements have shape "
                        f"{list(flow.shape[1:])}, the value has shape {list(value.shape)}")
    out = np.zeros((max(flow.shape[0], index + 1),) + value.shape, value.dtype)
    out[:flow.shape[0]] = flow
    out[index] = value
    return [out]


@TensorArrayGrowWrite.grad
def _(op, dy):
    return [None, None, TensorArrayReadV3(dy, op.inputs[1])]


TensorArrayReadV3 = OpDef("TensorArrayReadV3", kernel="ta_read")


@TensorArrayReadV3.shape
def _(flow, index):
    shape = TensorShape(flow.shape)
    return Spec(flow.dtype, shape[1:] if shape.ndims is not None else TensorShape(None))


@TensorArrayReadV3.grad
def _(op, dy):
    return [TensorArrayReadGrad(dy, op.inputs[1], op.inputs[0]), None]


# The gradient of a read: zeros of the array's shape with the read row set to dy.
TensorArrayReadGrad = OpDef("TensorArrayReadGrad", lowering=CUSTOM, differentiable=False, shape_only_inputs={2})


@TensorArrayReadGrad.shape
def _(dy, index, like):
    return Spec(dy.dtype, like.shape)


@TensorArrayReadGrad.lower
def _(ctx, op):
    out = ctx.output(0)
    ctx.step("fill", [], [out], {"value": 0.0})
    ctx.step("ta_write", [ctx.operand(op.inputs[1]), ctx.operand(op.inputs[0])], [out], {})


TensorArrayCopy = OpDef("TensorArrayCopy", kernel=COPY)  # unstack: a buffer of its own, written in place


@TensorArrayCopy.shape
def _(x):
    return Spec(x.dtype, x.shape)


@TensorArrayCopy.grad
def _(op, dy):
    return [dy]


TensorArrayStack = OpDef("TensorArrayStack", lowering=ALIAS)


@TensorArrayStack.shape
def _(flow):
    return Spec(flow.dtype, flow.shape)


@TensorArrayStack.grad
def _(op, dy):
    return [dy]


class TensorArray:
    """TF1's tf.TensorArray (see the module's docstring for how pygrad holds it)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._name = name or tensor_array_name or "TensorArray"
        self._size_like = self._element_like = None
        if flow is not None:  # a TensorArray of a loop or of a write: shares its array's metadata
            self._flow, self._meta, self._size = flow, handle, size
            return
        self._meta = _Meta(as_shape(element_shape) if element_shape is not None else TensorShape(None),
                           self._dynamic_size and size is not None and array_ops.constant_value(size) == 0)
        if isinstance(unwrap(size), Tensor) and array_ops.constant_value(size) is None:
            raise TensorArrayV3.error(f"size must be known when the graph is built (a Python int or a constant), "
                                      f"got the output of {unwrap(size).op.type}", name)
        self._size = None if size is None else array_ops.static_int(size, "size", TensorArrayV3, name)
        self._flow = None

    @classmethod
    def _sized_like(cls, dtype, like, element_shape=None, element_like=None, name=None):
        """An array of like's first dimension (map_fn, scan, dynamic_rnn), whose elements have
        element_like's shape when given; both shapes need only be known when the plan is built."""
        ta = cls(dtype, element_shape=element_shape, name=name)
        ta._size_like = like
        ta._size = like.shape.as_list()[0] if like.shape.ndims else None
        if element_like is not None:
            if not ta._meta.element_shape.is_compatible_with(element_like.shape):
                raise TensorArrayV3.error(f"element_shape {ta._meta.element_shape} does not match element_like "
                                          f"{element_like.name} of shape {element_like.shape}", name)
            ta._meta.element_shape = ta._meta.element_shape.merge_with(element_like.shape)
            ta._element_like = element_like
        return ta

    # ---- the flow ----
    @property
    def flow(self):
        if self._flow is None:
            like = [self._size_like] if self._size_like is not None else []
            if not like and self._size is None:
                raise TensorArrayV3.error("size must be given", self._name)
            if self._element_like is not None:
                like.append(self._element_like)
            size = None if self._size_like is not None else self._size
            self._flow = TensorArrayV3(*like, dtype=self._dtype, size=size, meta=self._meta,
                                       element_like=self._element_like is not None, name=self._name)
        return self._flow

    def _as_loop_var(self):
        return self.flow

    def _grows_in_run(self):
        """A dynamic_size array that started empty: a loop that carries it lets its size vary across
        iterations."""
        return self._dynamic_size and self._size_like is None and self._meta.started_empty

    def _with_flow(self, flow, size=...):
        """The array of this one's chain whose rows are flow's; size None: a size only the run knows."""
        ta = TensorArray(self._dtype, size=self._size if size is ... else size, dynamic_size=self._dynamic_size,
                         handle=self._meta, flow=flow, name=self._name)
        ta._size_like, ta._element_like = self._size_like, self._element_like
        return ta

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._meta.element_shape

    @property
    def handle(self):
        return self.flow

    def identity(self):
        return self._with_flow(array_ops.identity(self.flow))

    # ---- reading and writing ----
    def write(self, index, value, name=None):
        value = array_ops.convert_to_tensor(value, dtype=self._dtype)
        if self._infer_shape:
            if not self._meta.element_shape.is_compatible_with(value.shape):
                raise TensorArrayWriteV3.error(f"Could not write to TensorArray: its element shape is "
                                               f"{self._meta.element_shape}, the value has shape {value.shape}", name)
            self._meta.element_shape = self._meta.element_shape.merge_with(value.shape)
        index = array_ops.convert_to_tensor(index, dtype=dtypes.int32)
        flow, size = self.flow, self._size
        if self._dynamic_size and self._size_like is None:
            at = array_ops.constant_value(index)
            if size is None or at is None and self._meta.started_empty:  # a size of the run: grown by a host op
                return self._with_flow(TensorArrayGrowWrite(flow, index, value, name=name), None)
            if at is not None and int(at) >= size:
                flow, size = self._grown(int(at) + 1, name), int(at) + 1
        return self._with_flow(TensorArrayWriteV3(flow, index, value, name=name), size)

    def _grown(self, rows, name):
        """The flow padded with zero rows to rows rows (a dynamic_size array written past its size)."""
        rank = TensorShape(self.flow.shape).ndims
        if rank is None:
            raise TensorArrayWriteV3.error("this dynamic_size TensorArray grows only when its element shape's rank "
                                           "is known: give element_shape", name)
        return sequence_ops.pad(self.flow, [[0, rows - self._size]] + [[0, 0]] * (rank - 1))

    def read(self, index, name=None):
        index = array_ops.convert_to_tensor(index, dtype=dtypes.int32)
        return TensorArrayReadV3(self.flow, index, name=name)

    def stack(self, name=None):
        return TensorArrayStack(self.flow, name=name)

    def gather(self, indices, name=None):
        return manip_ops.gather(self.flow, indices, name=name)

    def unstack(self, value, name=None):
        value = array_ops.convert_to_tensor(value, dtype=self._dtype)
        if value.shape.ndims == 0:
            raise TensorArrayCopy.error(f"Input value must be non-scalar, got {value.name} of shape ()", name)
        if self._size is not None and value.shape.as_list()[0] not in (None, self._size):
            raise TensorArrayCopy.error(f"Could not unstack a value of shape {value.shape} into a TensorArray of "
                                        f"size {self._size}", name)
        self._meta.element_shape = self._meta.element_shape.merge_with(value.shape[1:])
        ta = self._with_flow(TensorArrayCopy(value, name=name))
        ta._size_like = value
        return ta

    def size(self, name=None):
        if self._size is not None:
            return array_ops.constant(self._size, dtypes.int32, name=name or "size")
        return manip_ops.gather(array_ops.shape(self.flow), 0, name=name)

    def close(self, name=None):
        return state_ops.no_op(name=name)
