"""Shapes a plan knows although the graph does not: the sizes of fed tensors.

TF1 programs write `tf.zeros([tf.shape(x)[0], 10])`, `tf.reshape(x, [tf.shape(x)[0], -1])` or
`tf.random_normal(tf.shape(mu))`: shapes computed from other tensors' shapes. A pygrad plan is built
for concrete feed shapes, so such a shape is known then, without running anything. shape_expr
recognises these expressions in a shape argument (Python lists of ints and scalar tensors; tf.shape,
its elements, tf.strided_slice and tf.slice of it; tf.stack and tf.concat of those; constants) and
turns them into dims an op can carry: an int, or (k, axis), the size of dimension axis of the k-th tensor in refs, which
the op takes as a shape-only input. The op's shape rule reads them back with resolve, on static
shapes when the graph is built (None where unknown) and on concrete ones when the plan is built.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, unwrap

_PASS_THROUGH = ("Identity", "Cast", "StopGradient")


def shape_expr(value):
    """(dims, refs) for a shape argument a plan can know, or None for one a run computes."""
    refs = []

    def ref(x, axis):
        for k, r in enumerate(refs):
            if r is x:
                return k, axis
        refs.append(x)
        return len(refs) - 1, axis

    def dims_of(x):
        """Each dimension of x: its static size, or a reference when the graph does not know it."""
        if x.shape.ndims is None:
            return None
        return [d if d is not None else ref(x, i) for i, d in enumerate(x.shape.dims)]

    def vector(t):
        op = t.op
        if op.type in _PASS_THROUGH:
            return vector(op.inputs[0])
        if op.type == "Const":
            v = np.asarray(op.attrs["value"])
            return [int(d) for d in v] if v.ndim == 1 and v.dtype.kind in "iu" else None
        if op.type == "Shape":
            return dims_of(op.inputs[0])
        if op.type == "StridedSlice" and op.inputs[0].op.type == "Shape" and not op.attrs["shrink_axis_mask"]:
            full, a = dims_of(op.inputs[0].op.inputs[0]), op.attrs
            if full is None or len(a["begin"]) != 1 or a["ellipsis_mask"] or a["new_axis_mask"]:
                return None
            return full[slice(None if a["begin_mask"] & 1 else a["begin"][0],
                              None if a["end_mask"] & 1 else a["end"][0], a["strides"][0])]
        if op.type == "Slice" and op.inputs[0].op.type == "Shape" and len(op.attrs["begin"]) == 1:
            full = dims_of(op.inputs[0].op.inputs[0])
            if full is None:
                return None
            begin, size = op.attrs["begin"][0], op.attrs["size"][0]
            return full[begin:] if size == -1 else full[begin:begin + size]
        if op.type == "ExpandDims" and op.inputs[0].shape.ndims == 0:  # a size as a 1-element vector
            d = scalar(op.inputs[0])
            return None if d is None else [d]
        if op.type == "Pack" and op.attrs.get("axis", 0) == 0:
            items = [scalar(x) for x in op.inputs]
            return None if any(i is None for i in items) else items
        if op.type == "ConcatV2" and op.attrs.get("axis") == 0:
            parts = [vector(x) for x in op.inputs]
            return None if any(p is None for p in parts) else [d for p in parts for d in p]
        return None

    def scalar(t):
        if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
            return int(t)
        t = unwrap(t)
        if not isinstance(t, Tensor) or t.shape.ndims not in (None, 0):
            return None
        op = t.op
        if op.type in _PASS_THROUGH:
            return scalar(op.inputs[0])
        if op.type == "Const":
            v = np.asarray(op.attrs["value"])
            return int(v) if v.ndim == 0 and v.dtype.kind in "iu" else None
        if op.type == "StridedSlice" and op.inputs[0].op.type == "Shape" and op.attrs["shrink_axis_mask"] == 1:
            full, a = dims_of(op.inputs[0].op.inputs[0]), op.attrs
            if full is None or len(a["begin"]) != 1 or not -len(full) <= a["begin"][0] < len(full):
                return None
            return full[a["begin"][0]]
        return None

    value = unwrap(value)
    if isinstance(value, (list, tuple)):
        dims = [scalar(v) for v in value]
    elif isinstance(value, Tensor):
        dims = vector(value)
    else:
        return None
    return None if dims is None or any(d is None for d in dims) else (dims, refs)


def has_refs(dims):
    return any(isinstance(d, tuple) for d in dims)


def resolve(dims, ref_specs):
    """dims with each (k, axis) replaced by the size of that dimension of ref_specs[k] (None when
    it is not known yet)."""
    out = []
    for d in dims:
        if isinstance(d, tuple):
            k, axis = d
            shape = ref_specs[k].shape
            out.append(shape.dims[axis] if shape.dims is not None else None)
        else:
            out.append(d)
    return out


# ---------------------------------------------------------------- values of shape computations
# (what GraphDef import and a SparseTensor's static dense shape read)

_ARITHMETIC = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide,
               "FloorMod": np.mod, "Maximum": np.maximum, "Minimum": np.minimum}


def symbolic(t):
    """The value of t, an integer tensor of the kind TF computes shapes with, as an object array
    of ints and (tensor, axis) sizes the plan knows (dimension axis of tensor); None if t is not
    one. What it reads: constants, Shape, Size and Rank, Pack, ConcatV2, Transpose, Reshape,
    ExpandDims, StridedSlice and Slice of those, GatherV2 at constant indices, Fill and Range of
    known sizes, arithmetic on known values, and Prod or Sum of a vector with one unknown size."""
    v = _symbolic(t)
    return v if v is None or isinstance(v, np.ndarray) and v.dtype == object else dim_scalar(
        v.item() if isinstance(v, np.ndarray) else v)


def _symbolic(t):
    if not (t.dtype.is_integer or t.dtype == dtypes.bool_):
        return None
    op, ins = t.op, t.op.inputs
    a, ty = op.attrs, op.type
    if ty == "Const":
        return np.asarray(a["value"]).astype(object)
    if ty in ("Identity", "StopGradient", "Cast"):
        return symbolic(ins[0])
    if ty == "Shape":
        dims = ins[0].shape.dims
        return None if dims is None else np.array([d if d is not None else (ins[0], i) for i, d in enumerate(dims)]
                                                  + [0], object)[:-1]
    if ty in ("Size", "Rank"):
        x = ins[0].shape
        known = x.ndims if ty == "Rank" else x.num_elements() if x.is_fully_defined() else None
        if known is None and ty == "Size" and x.ndims is not None:  # one unknown dimension, the others 1
            unknown = [i for i, d in enumerate(x.dims) if d is None]
            if len(unknown) == 1 and all(d in (None, 1) for d in x.dims):
                return dim_scalar((ins[0], unknown[0]))
        return None if known is None else np.array(known, object)
    parts = [symbolic(i) for i in ins] if ty in ("Pack", "ConcatV2", "GatherV2") or ty in _ARITHMETIC else None
    if parts is not None and any(p is None for p in parts):
        return None
    if ty == "Pack":
        return np.stack(parts, axis=a["axis"])
    if ty == "ConcatV2":
        return np.concatenate(parts, axis=a["axis"])
    if ty == "GatherV2" and all_known(parts[1]):
        out = np.take(parts[0], parts[1].astype(np.int64), axis=a["axis"])
        return out if isinstance(out, np.ndarray) else dim_scalar(out)
    if ty in _ARITHMETIC:
        return _ARITHMETIC[ty](parts[0].astype(np.int64), parts[1].astype(np.int64)).astype(object) \
            if all(all_known(p) for p in parts) else None
    v = symbolic(ins[0]) if ins and ty not in ("Fill", "Range") else None
    if ty in ("Prod", "Sum") and v is not None and v.ndim == 1 and tuple(a["axis"]) in ((0,), (-1,)):
        known = [int(d) for d in v if not isinstance(d, tuple)]
        refs = [d for d in v if isinstance(d, tuple)]
        total = int(np.prod(known)) if ty == "Prod" else int(np.sum(known))
        if not refs:
            return np.array(total, object)
        return dim_scalar(refs[0]) if len(refs) == 1 and total == (1 if ty == "Prod" else 0) else None
    if ty == "Transpose" and v is not None:
        return np.transpose(v, a["perm"])
    if ty == "Reshape" and v is not None and len(ins) == 1:
        return v.reshape(a["shape"])
    if ty == "ExpandDims" and v is not None:
        return np.expand_dims(v, a["axis"])
    if ty == "StridedSlice" and v is not None and v.ndim == 1 and len(a["begin"]) == 1 and not (
            a["ellipsis_mask"] or a["new_axis_mask"]):
        if a["shrink_axis_mask"] & 1:
            return dim_scalar(v[a["begin"][0]])
        return v[slice(None if a["begin_mask"] & 1 else a["begin"][0], None if a["end_mask"] & 1 else a["end"][0],
                       a["strides"][0])]
    if ty == "Slice" and v is not None and len(ins) == 1:
        return v[tuple(slice(b, None if n == -1 else b + n) for b, n in zip(a["begin"], a["size"]))]
    if ty == "Fill" and len(ins) == 0:
        return np.full(a["dims"], a["value"], object)
    if ty == "Range" and ins[0].shape.dims is not None and ins[0].shape.dims[a["axis"]] is not None:
        return np.arange(int(a["start"]), ins[0].shape.dims[a["axis"]], int(a["delta"])).astype(object)
    return None


def dim_scalar(d):
    """A 0-d object array holding one dim (an int, or a (tensor, axis) pair kept whole)."""
    out = np.empty((), object)
    out[()] = d
    return out


def all_known(v):
    return v is not None and not any(isinstance(d, tuple) for d in v.reshape(-1))
