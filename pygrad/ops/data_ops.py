"""The graph ops of an input pipeline (tf.data); the pipeline itself runs in Python
(pygrad/data/).

IteratorGetNext's outputs are one element of a dataset: before a run that needs them, the session
takes the next element and binds its arrays like fed values (host stage BEFORE), so the plan sees
feeds. MakeIterator (an iterator's initializer) starts a pipeline after the plan has computed the
tensors the dataset captured, such as a placeholder's value (host stage AFTER). Each op's
attributes hold the iterator's Python callable its host function calls with the run's context:
``next_element(ctx, op)`` and ``start(ctx, input_values)``. The feedable iterator's ops:
IteratorToStringHandle gives an iterator's string handle (bound like a feed), and
IteratorGetNextFromStringHandle, once its handle input's value is known (host stage BETWEEN),
the next element of the iterator that handle names, ``next_element(ctx, op, handle)``.
"""
import numpy as np

from pygrad import dtypes
from pygrad.registry import AFTER, BEFORE, BETWEEN, OpDef, Spec
from pygrad.shapes import TensorShape


def feedable(value, dtype):
    """value as the array a plan binds for a tensor of dtype (an element component, a dequeued
    value): C-contiguous and aligned; for a string, an object array of bytes."""
    if dtype == dtypes.string:
        return dtypes.as_bytes_array(value)
    arr = np.asarray(value, dtype=dtype.np)
    return arr if arr.flags.c_contiguous and arr.flags.aligned else arr.copy()


IteratorGetNext = OpDef("IteratorGetNext", host=BEFORE, differentiable=False)


@IteratorGetNext.shape
def _(*, next_element, specs):
    return [Spec(dtype, shape) for dtype, shape in specs]


@IteratorGetNext.host
def _(ctx, op, values):
    return op.attrs["next_element"](ctx, op)


MakeIterator = OpDef("MakeIterator", host=AFTER, differentiable=False)


@MakeIterator.shape
def _(*captured, start):
    return []


@MakeIterator.host
def _(ctx, op, values):
    op.attrs["start"](ctx, values)


IteratorToStringHandle = OpDef("IteratorToStringHandle", host=BEFORE, differentiable=False)


@IteratorToStringHandle.shape
def _(*, handle):
    return Spec(dtypes.string, TensorShape([]))


@IteratorToStringHandle.host
def _(ctx, op, values):
    return [dtypes.as_bytes_array(op.attrs["handle"])]


IteratorGetNextFromStringHandle = OpDef("IteratorGetNextFromStringHandle", host=BETWEEN, differentiable=False)


@IteratorGetNextFromStringHandle.shape
def _(string_handle, *, next_element, specs):
    return [Spec(dtype, shape) for dtype, shape in specs]


@IteratorGetNextFromStringHandle.host
def _(ctx, op, values):
    return op.attrs["next_element"](ctx, op, np.asarray(values[0], dtype=object).item())


def iterator_to_string_handle(handle, name=None):
    """A string scalar whose value is handle (bytes)."""
    return IteratorToStringHandle(handle=handle, name=name or "IteratorToStringHandle")


def iterator_get_next_from_string_handle(string_handle, next_element, specs, name=None):
    """The element tensors next_element(ctx, op, handle) gives for the value of string_handle."""
    outs = IteratorGetNextFromStringHandle(string_handle, next_element=next_element, specs=list(specs),
                                           name=name or "IteratorGetNext")
    return [outs] if hasattr(outs, "op") else list(outs)


def iterator_get_next(next_element, specs, name=None):
    """The element tensors (a list, one per (dtype, TensorShape) of specs) that
    next_element(ctx, op) returns as arrays for each run that needs them."""
    outs = IteratorGetNext(next_element=next_element, specs=list(specs), name=name or "IteratorGetNext")
    return [outs] if hasattr(outs, "op") else list(outs)


def make_iterator(start, captured, name=None):
    """An op that, when run, calls start(ctx, values of captured) after the plan."""
    return MakeIterator(*captured, start=start, name=name or "MakeIterator")
