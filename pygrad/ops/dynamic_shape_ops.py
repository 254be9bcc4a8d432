"""Ops whose output sizes depend on the values of their inputs: tf.where(condition) with one
argument (the coordinates of the true elements) and tf.unique. A plan's shapes are fixed when it is
built, so these are host ops of stage BETWEEN (see host.py): the run computes their inputs, the op
runs in Python on NumPy arrays with TensorFlow's semantics, and its outputs are fed to the rest of
the run, whose plan is built for their sizes. tf.boolean_mask of a computed mask is TF's own
construction on top: a gather of the positions tf.where finds. Neither op has a gradient in TF.
"""
import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.registry import BETWEEN, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

WhereOp = OpDef("Where", host=BETWEEN, differentiable=False)


@WhereOp.shape
def _(condition):
    return Spec(dtypes.int64, TensorShape([None, condition.shape.ndims]))


@WhereOp.host
def _(ctx, op, values):
    c = np.asarray(values[0])
    return [np.argwhere(c if c.dtype == np.bool_ else c != 0).astype(np.int64)]  # row-major order, as TF


def where_true(condition, name=None):
    """The int64 coordinates [n, rank] of condition's true (non-zero) elements, in row-major order."""
    c = convert_to_tensor(condition)
    if c.shape.ndims is None:
        raise WhereOp.error(f"condition {c.shape} must have a known rank", name)
    return WhereOp(c, name=name or "Where")


UniqueOp = OpDef("Unique", host=BETWEEN, differentiable=False)


@UniqueOp.shape
def _(x, *, out_idx):
    if x.shape.ndims not in (None, 1):
        fail(f"unique expects a 1D vector, got shape {x.shape}")
    if out_idx not in (dtypes.int32, dtypes.int64):
        fail_dtype(f"out_idx must be int32 or int64, got {out_idx.name}")
    return [Spec(x.dtype, TensorShape([None])), Spec(out_idx, x.shape)]


def unique_values(v, out_idx):
    """(y, idx) of tf.unique for the vector v: its distinct values in order of first appearance, and
    for each element the index of its value in y."""
    _, first, inverse = np.unique(v, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return v[np.sort(first)], rank[inverse.reshape(-1)].astype(out_idx.np)


@UniqueOp.host
def _(ctx, op, values):
    v = np.asarray(values[0])
    if v.ndim != 1:
        raise ValueError(f"unique expects a 1D vector, got shape {v.shape}")
    y, idx = unique_values(v, op.attrs["out_idx"])
    return [np.ascontiguousarray(y), idx]


def computed_unique(x, out_idx, name=None):
    return UniqueOp(convert_to_tensor(x), out_idx=out_idx, name=name or "Unique")
