"""The two graph ops of an input pipeline (tf.data); the pipeline itself runs in Python
(pygrad/data/).

IteratorGetNext's outputs are one element of a dataset: before a run that needs them, the session
takes the next element and binds its arrays like fed values (host stage BEFORE), so the plan sees
feeds. MakeIterator (an iterator's initializer) starts a pipeline after the plan has computed the
tensors the dataset captured, such as a placeholder's value (host stage AFTER). Each op's
attributes hold the iterator's Python callable its host function calls with the run's context:
``next_element(ctx, op)`` and ``start(ctx, input_values)``.
"""
import numpy as np

from pygrad import dtypes
from pygrad.registry import AFTER, BEFORE, OpDef, Spec


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


def iterator_get_next(next_element, specs, name=None):
    """The element tensors (a list, one per (dtype, TensorShape) of specs) that
    next_element(ctx, op) returns as arrays for each run that needs them."""
    outs = IteratorGetNext(next_element=next_element, specs=list(specs), name=name or "IteratorGetNext")
    return [outs] if hasattr(outs, "op") else list(outs)


def make_iterator(start, captured, name=None):
    """An op that, when run, calls start(ctx, values of captured) after the plan."""
    return MakeIterator(*captured, start=start, name=name or "MakeIterator")
