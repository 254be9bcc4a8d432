"""The TensorFlow nodes of the pygrad ops a GraphDef (graph_def.py) cannot write as one TF op of
their op-identity entry: the ops TF has no op for (none() entries: gradient helpers, fused
updates), written as the TF ops that compute the same value, mostly what TF's own gradient or
wrapper emits (named below); and the ops whose TF form depends on an attribute (a pad's mode, a
softmax's axis, tf.print's text).

COMPOSE maps a pygrad op type to fn(w, op) -> the TF names of op's outputs. fn writes through w
(graph_def's writer: w.add for a node under op's name, w.final for the last one, which takes op's
name, w.const, w.shape_of, w.dim, w.dims, w.mapped for op's own entry with changes) and raises
graph_def.NotExportableError (passed as w.unexportable) for what it cannot write.
"""
import sys

from pygrad.dtypes import int32

COMPOSE = {}


def composes(*types):
    def register(fn):
        for t in types:
            COMPOSE[t] = fn
        return fn
    return register


def _rank(w, op, t):
    if t.shape.ndims is None:
        raise w.unexportable(op.error(f"the rank of {t.name} is unknown; writing {op.type} as TF ops needs it"))
    return t.shape.ndims


def _const(w, value, dtype=int32, name="Const"):
    return w.const(value, dtype, w.scoped(name))


def _size(w, t):
    """The number of elements of t as an int32 scalar: a Const if known, else Size."""
    if t.shape.is_fully_defined():
        return _const(w, t.shape.num_elements(), int32, "Size")
    return w.add("Size", [t], {"T": t.dtype, "out_type": int32})


# ---------------------------------------------------------------- broadcasting (reduction_ops)


@composes("BroadcastLike")
def _(w, op):
    """x broadcast to like's shape (1s put back at the reduced `axes` first, as TF's _SumGrad
    reshapes to the kept dims), times size(x) / size(like) if mean (TF's _MeanGrad)."""
    x, like = op.inputs
    axes, y, dtype = op.attrs["axes"], w.tensor(x), x.dtype
    if axes is not None and _rank(w, op, x) != _rank(w, op, like):
        for a in sorted({a % like.shape.ndims for a in axes}):
            y = w.add("ExpandDims", [y, _const(w, a, int32, "ExpandDims/dim")], {"T": dtype, "Tdim": int32})
    attrs = {"T": dtype, "Tidx": int32}
    if not op.attrs["mean"]:
        return w.final("BroadcastTo", [y, w.shape_of(like, w.scoped("Shape"))], attrs)
    y = w.add("BroadcastTo", [y, w.shape_of(like, w.scoped("Shape"))], attrs)
    if x.shape.is_fully_defined() and like.shape.is_fully_defined():
        n_like = like.shape.num_elements()
        scale = _const(w, x.shape.num_elements() / n_like if n_like else float("nan"), dtype, "scale")
    else:
        sizes = [w.add("Cast", [_size(w, t)], {"SrcT": int32, "DstT": dtype, "Truncate": False}) for t in (x, like)]
        scale = w.add("RealDiv", sizes, {"T": dtype})
    return w.final("Mul", [y, scale], {"T": dtype})


@composes("SumToShape")
def _(w, op):
    """x summed over the dimensions broadcasting added to like's shape: TF's gradient of a
    broadcasting op (BroadcastGradientArgs, Sum, Reshape)."""
    x, like = op.inputs
    if x.shape.is_fully_defined() and x.shape == like.shape:
        return w.final("Identity", [x], {"T": x.dtype})
    shape_like, shape_x = w.shape_of(like, w.scoped("Shape")), w.shape_of(x, w.scoped("Shape_1"))
    axes = w.add("BroadcastGradientArgs", [shape_like, shape_x], {"T": int32})
    total = w.add("Sum", [x, axes], {"T": x.dtype, "Tidx": int32, "keep_dims": False})
    return w.final("Reshape", [total, shape_like], {"T": x.dtype, "Tshape": int32})


# ---------------------------------------------------------------- softmax (nn_ops)


@composes("Softmax", "LogSoftmax")
def _(w, op):
    """TF's op on the last axis; another axis is swapped with the last around it (TF1's
    _softmax: Transpose, the op, Transpose)."""
    x = op.inputs[0]
    axis = op.attrs["axis"]
    if axis == -1 or x.shape.ndims is not None and axis % x.shape.ndims == x.shape.ndims - 1:
        return w.mapped(op)
    rank = _rank(w, op, x)
    perm = list(range(rank))
    perm[axis % rank], perm[-1] = rank - 1, axis % rank
    attrs = {"T": x.dtype, "Tperm": int32}
    swapped = w.add("Transpose", [x, _const(w, perm, int32, "perm")], attrs)
    y = w.add(op.opdef.tf.type, [swapped], {"T": x.dtype})
    return w.final("Transpose", [y, _const(w, perm, int32, "perm_1")], attrs)


@composes("SoftmaxGrad")
def _(w, op):
    """(dy - sum(dy * y, axis, keepdims)) * y: TF's _SoftmaxGrad."""
    y, dy = op.inputs
    t = {"T": y.dtype}
    total = w.add("Sum", [w.add("Mul", [dy, y], t), _const(w, [op.attrs["axis"]], int32, "Sum/reduction_indices")],
                  {**t, "Tidx": int32, "keep_dims": True})
    return w.final("Mul", [w.add("Sub", [dy, total], t), y], t)


@composes("LogSoftmaxGrad")
def _(w, op):
    """dy - sum(dy, axis, keepdims) * exp(y): TF's _LogSoftmaxGrad."""
    y, dy = op.inputs
    t = {"T": y.dtype}
    total = w.add("Sum", [dy, _const(w, [op.attrs["axis"]], int32, "Sum/reduction_indices")],
                  {**t, "Tidx": int32, "keep_dims": True})
    return w.final("Sub", [dy, w.add("Mul", [total, w.add("Exp", [y], t)], t)], t)


# ---------------------------------------------------------------- manipulation (manip_ops, sequence_ops)


@composes("ConcatV2Grad")
def _(w, op):
    """dy split like the concatenated values along axis: SplitV by their sizes there."""
    dy, values, axis = op.inputs[0], op.inputs[1:], op.attrs["axis"]
    sizes = w.dims([(v, axis) for v in values], w.scoped("size_splits"))
    return w.final("SplitV", [dy, sizes, _const(w, axis, int32, "split_dim")],
                   {"T": dy.dtype, "Tlen": int32, "num_split": len(values)})


@composes("GatherV2Grad")
def _(w, op):
    """dy's slices added into zeros of x's shape at the indices along axis: TF's _GatherV2Grad
    (the gathered dimensions moved to the front, UnsortedSegmentSum over the flattened indices,
    moved back)."""
    dy, indices, x = op.inputs
    rank, n_idx = _rank(w, op, x), _rank(w, op, indices)
    axis = op.attrs["axis"] % rank
    values, flat = w.tensor(dy), w.tensor(indices)
    if axis:
        perm = list(range(axis, axis + n_idx)) + list(range(axis)) + list(range(axis + n_idx, _rank(w, op, dy)))
        values = w.add("Transpose", [values, _const(w, perm, int32, "perm")], {"T": dy.dtype, "Tperm": int32})
    if n_idx != 1:
        rows = w.dims([-1] + [(x, d) for d in range(rank) if d != axis], w.scoped("values_shape"))
        values = w.add("Reshape", [values, rows], {"T": dy.dtype, "Tshape": int32})
        flat = w.add("Reshape", [flat, _const(w, [-1], int32, "indices_shape")],
                     {"T": indices.dtype, "Tshape": int32})
    attrs = {"T": dy.dtype, "Tindices": indices.dtype, "Tnumsegments": int32}
    inputs = [values, flat, w.dim(x, axis, w.scoped("num_segments"))]
    if not axis:
        return w.final("UnsortedSegmentSum", inputs, attrs)
    summed = w.add("UnsortedSegmentSum", inputs, attrs)
    back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
    return w.final("Transpose", [summed, _const(w, back, int32, "perm_1")], {"T": dy.dtype, "Tperm": int32})


@composes("SegmentGather")
def _(w, op):
    """Each segment's row of dy gathered back to its entries: TF's _SegmentSumGrad (Gather)."""
    dy, ids = op.inputs[:2]
    return w.final("GatherV2", [dy, ids, _const(w, 0, int32, "axis")],
                   {"Tparams": dy.dtype, "Tindices": ids.dtype, "Taxis": int32, "batch_dims": 0})


@composes("Pad")
def _(w, op):
    """Mode 0: TF1's Pad (a constant of 0) or PadV2; modes 1, 2: MirrorPad REFLECT, SYMMETRIC."""
    mode = op.attrs["mode"]
    if mode:
        return w.mapped(op, "MirrorPad", {"mode": _MIRROR[mode]}, drop=("constant_values",))
    if op.attrs["constant_value"] == 0:
        return w.mapped(op, "Pad", drop=("constant_values",))
    return w.mapped(op)


_MIRROR = {1: "REFLECT", 2: "SYMMETRIC"}


@composes("MirrorPadGrad")
def _(w, op):
    return w.mapped(op, attrs={"mode": _MIRROR[op.attrs["mode"]]})


@composes("TileGrad")
def _(w, op):
    """dy's tiles summed: TF's _TileGrad (dy reshaped to [multiple, size] pairs, Sum over the
    multiples), as TF's GraphDefs since version 3 have no TileGrad op."""
    dy, x = op.inputs
    multiples = op.attrs["multiples"]
    pairs = w.dims([d for i, m in enumerate(multiples) for d in (m, (x, i))], w.scoped("split_shape"))
    split = w.add("Reshape", [dy, pairs], {"T": dy.dtype, "Tshape": int32})
    axes = _const(w, list(range(0, 2 * len(multiples), 2)), int32, "Sum/reduction_indices")
    return w.final("Sum", [split, axes], {"T": dy.dtype, "Tidx": int32, "keep_dims": False})


@composes("PadGrad")
def _(w, op):
    """The slice of dy that is x: TF's _PadGrad (Slice at the leading paddings, x's shape)."""
    dy, x = op.inputs
    begin = _const(w, [p[0] for p in op.attrs["paddings"]], int32, "begin")
    return w.final("Slice", [dy, begin, w.shape_of(x, w.scoped("size"))], {"T": dy.dtype, "Index": int32})


# ---------------------------------------------------------------- slices at computed begins (slice_ops)


def _dynamic_bounds(w, op):
    """(end, strides, masks) of the StridedSlice that is DynamicSlice(x, begin, shrink, size):
    end = begin + size (1 where shrunk; ends masked where size is -1, the whole dimension)."""
    begin, size, shrink = op.inputs[1], op.attrs["size"], op.attrs["shrink"]
    dtype = begin.dtype
    end = w.add("Add", [begin, _const(w, [0 if n == -1 else n for n in size], dtype, "size")], {"T": dtype})
    masks = {"begin_mask": 0, "end_mask": sum(1 << d for d, n in enumerate(size) if n == -1), "ellipsis_mask": 0,
             "new_axis_mask": 0, "shrink_axis_mask": sum(1 << d for d in shrink)}
    return end, _const(w, [1] * len(size), dtype, "strides"), masks


@composes("DynamicSlice")
def _(w, op):
    """x[begin:begin + size] with the `shrink` dimensions dropped: TF's StridedSlice with a
    computed begin (as TF1's x[i])."""
    x, begin = op.inputs
    end, strides, masks = _dynamic_bounds(w, op)
    return w.final("StridedSlice", [x, begin, end, strides], {"T": x.dtype, "Index": begin.dtype, **masks})


@composes("DynamicSliceGrad")
def _(w, op):
    """dy written at the slice into zeros of x's shape: TF's StridedSliceGrad."""
    dy, begin, x = op.inputs
    end, strides, masks = _dynamic_bounds(w, op)
    shape = w.shape_of(x, w.scoped("shape"), begin.dtype)
    return w.final("StridedSliceGrad", [shape, begin, end, strides, dy], {"T": dy.dtype, "Index": begin.dtype,
                                                                         **masks})


# ---------------------------------------------------------------- top_k (topk_ops)


@composes("TopKV2Grad")
def _(w, op):
    """dy scattered into zeros of x's shape at the indices along the last axis: TF's _TopKGrad
    (each row's indices offset by its start in the flattened x, then ScatterNd)."""
    x, indices, dy = op.inputs
    size = _size(w, x)
    rows = w.add("Reshape", [indices, w.dims([-1, (indices, -1)], w.scoped("rows_shape"))],
                 {"T": int32, "Tshape": int32})
    starts = w.add("Range", [_const(w, 0, int32, "start"), size, w.dim(x, -1, w.scoped("delta"))], {"Tidx": int32})
    starts = w.add("ExpandDims", [starts, _const(w, -1, int32, "dim")], {"T": int32, "Tdim": int32})
    flat = w.add("Reshape", [w.add("Add", [rows, starts], {"T": int32}), _const(w, [-1, 1], int32, "flat_shape")],
                 {"T": int32, "Tshape": int32})
    updates = w.add("Reshape", [dy, _const(w, [-1], int32, "updates_shape")], {"T": dy.dtype, "Tshape": int32})
    total = w.add("ExpandDims", [size, _const(w, 0, int32, "dim_1")], {"T": int32, "Tdim": int32})
    scattered = w.add("ScatterNd", [flat, updates, total], {"T": dy.dtype, "Tindices": int32})
    return w.final("Reshape", [scattered, w.shape_of(x, w.scoped("shape"))], {"T": dy.dtype, "Tshape": int32})


@composes("TopKV2GradGrad")
def _(w, op):
    """g gathered at the indices along the last axis, row by row: GatherV2 with batch_dims."""
    g, indices = op.inputs
    last = _rank(w, op, g) - 1
    return w.final("GatherV2", [g, indices, _const(w, last, int32, "axis")],
                   {"Tparams": g.dtype, "Tindices": indices.dtype, "Taxis": int32, "batch_dims": last})


# ---------------------------------------------------------------- reduce_prod's gradient (reduction_ops)


def _by_group(w, op, factor):
    """dy (one value per group of x's `axis`) times a factor of each x: TF's _ProdGrad's layout
    (the reduced axes moved to the front and flattened to [group size, groups], the factor
    computed there by factor(flat x, flat names of the inputs after dy), moved back)."""
    x, dy, *more = op.inputs
    rank, dtype = _rank(w, op, x), x.dtype
    axis = op.attrs["axis"]
    axes = sorted({a % rank for a in axis}) if axis is not None else list(range(rank))
    perm = axes + [d for d in range(rank) if d not in axes]
    t = {"T": dtype}
    reduced = w.dims([(x, a) for a in axes], w.scoped("reduced_shape"))
    count = w.add("Prod", [reduced, _const(w, [0], int32, "Prod/reduction_indices")],
                  {"T": int32, "Tidx": int32, "keep_dims": True})
    flat_shape = w.add("ConcatV2", [count, _const(w, [-1], int32, "other"), _const(w, 0, int32, "axis")],
                       {"T": int32, "Tidx": int32, "N": 2})

    def flat(v):
        if perm != sorted(perm):
            v = w.add("Transpose", [v, _const(w, perm, int32, "perm")], {**t, "Tperm": int32})
        return w.add("Reshape", [v, flat_shape], {**t, "Tshape": int32})

    moved = w.add("Reshape", [factor(flat(x), [flat(m) for m in more]),
                              w.dims([(x, p) for p in perm], w.scoped("moved_shape"))], {**t, "Tshape": int32})
    if perm != sorted(perm):
        back = [perm.index(d) for d in range(rank)]
        moved = w.add("Transpose", [moved, _const(w, back, int32, "perm_1")], {**t, "Tperm": int32})
    kept = w.dims([1 if d in axes else (x, d) for d in range(rank)], w.scoped("kept_shape"))
    grad = w.add("BroadcastTo", [w.add("Reshape", [dy, kept], {**t, "Tshape": int32}),
                                 w.shape_of(x, w.scoped("Shape"))], {**t, "Tidx": int32})
    return w.final("Mul", [grad, moved], t)


def _others(w, dtype, flat, axis=0):
    """The product of the other entries of each entry's group along axis: exclusive Cumprod both ways."""
    cumprods = [w.add("Cumprod", [flat, _const(w, axis, int32, "Cumprod/axis")],
                      {"T": dtype, "Tidx": int32, "exclusive": True, "reverse": reverse}) for reverse in (False, True)]
    return w.add("Mul", cumprods, {"T": dtype})


@composes("ProdGrad")
def _(w, op):
    """dy times the product of the other factors of each x's group: TF's _ProdGrad."""
    return _by_group(w, op, lambda flat, _: _others(w, op.inputs[0].dtype, flat))


@composes("ProdGradGrad")
def _(w, op):
    """The derivative of ProdGrad along t, as TF's gradient of _ProdGrad's Cumprods gives it:
    dy times, for each x_j, the sum over i != j of the products of the group's other factors
    with t_i in place of x_i (row i of a [group, group, groups] stack, the diagonal masked)."""
    dtype = op.inputs[0].dtype
    t = {"T": dtype}

    def factor(x, more):
        tangent = more[0]
        size = w.dim_of(x, dtype, 0, w.scoped("size"))
        rows = w.add("Range", [_const(w, 0, int32, "start"), size, _const(w, 1, int32, "delta")], {"Tidx": int32})
        as_int = {"T": int32, "Tshape": int32}
        eye = w.add("Equal", [w.add("Reshape", [rows, _const(w, [-1, 1, 1], int32, "column")], as_int),
                              w.add("Reshape", [rows, _const(w, [1, -1, 1], int32, "row")], as_int)], {"T": int32})
        expand = {**t, "Tdim": int32}
        stacked = w.add("SelectV2", [eye, w.add("ExpandDims", [tangent, _const(w, 0, int32, "dim")], expand),
                                     w.add("ExpandDims", [x, _const(w, 0, int32, "dim")], expand)], t)
        products = _others(w, dtype, stacked, axis=1)
        masked = w.add("SelectV2", [eye, w.add("ZerosLike", [products], t), products], t)
        return w.add("Sum", [masked, _const(w, [0], int32, "Sum/reduction_indices")],
                     {**t, "Tidx": int32, "keep_dims": False})

    return _by_group(w, op, factor)


# ---------------------------------------------------------------- fused updates (training_ops, train/clip.py)


def _summed_rows(w, op, values_index):
    """(values, indices) with repeated rows summed: TF1's Optimizer._apply_sparse_duplicate_indices
    (Unique, UnsortedSegmentSum), which pygrad's sparse kernels do themselves."""
    values, indices = op.inputs[values_index:values_index + 2]
    unique = w.add("Unique", [indices], {"T": indices.dtype, "out_idx": int32})
    count = w.dim_of(unique, indices.dtype, 0, w.scoped("num_segments"))
    summed = w.add("UnsortedSegmentSum", [values, f"{unique}:1", count],
                   {"T": values.dtype, "Tindices": int32, "Tnumsegments": int32})
    return summed, unique


@composes("SparseApplyMomentum", "SparseApplyAdagrad", "SparseApplyRMSProp", "SparseApplyCenteredRMSProp")
def _(w, op):
    values_index = {"SparseApplyMomentum": 3, "SparseApplyAdagrad": 3}.get(op.type, 7)
    summed, unique = _summed_rows(w, op, values_index)
    return w.mapped(op, replace={values_index: summed, values_index + 1: unique})


@composes("SparseApplyGradientDescent")
def _(w, op):
    """var[indices] -= lr * values: TF1's GradientDescentOptimizer._apply_sparse (ScatterSub)."""
    var, lr, values, indices = op.inputs
    delta = w.add("Mul", [values, lr], {"T": var.dtype})
    return w.final("ScatterSub", [var, indices, delta], {"T": var.dtype, "Tindices": indices.dtype,
                                                         "use_locking": False})


@composes("SparseApplyAdam")
def _(w, op):
    """TF1's AdamOptimizer._apply_sparse_shared: m and v decayed whole, the rows' shares
    scatter-added, then var -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon)."""
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon = op.inputs[:9]
    values, indices = _summed_rows(w, op, 9)
    t = {"T": var.dtype}
    one = _const(w, 1, var.dtype, "one")

    def rest(x):
        return w.add("Sub", [one, x], t)

    lr = w.add("RealDiv", [w.add("Mul", [lr, w.add("Sqrt", [rest(beta2_power)], t)], t), rest(beta1_power)], t)
    slots = []
    for slot, beta, share in ((m, beta1, values), (v, beta2, w.add("Mul", [values, values], t))):
        decayed = w.add("Assign", [slot, w.add("Mul", [slot, beta], t)], {**t, "use_locking": False,
                                                                         "validate_shape": True})
        slots.append(w.add("ScatterAdd", [decayed, indices, w.add("Mul", [share, rest(beta)], t)],
                           {**t, "Tindices": op.inputs[10].dtype, "use_locking": False}))
    step = w.add("RealDiv", [w.add("Mul", [lr, slots[0]], t),
                             w.add("Add", [w.add("Sqrt", [slots[1]], t), epsilon], t)], t)
    return w.final("AssignSub", [var, step], {**t, "use_locking": False})


@composes("ClipByGlobalNorm")
def _(w, op):
    """TF's clip_by_global_norm: the global norm from L2Loss of each tensor (unless use_norm is
    given), scale = clip_norm * min(1 / norm, 1 / clip_norm) (+ norm - norm, NaN when the norm is
    not finite), each tensor times the scale."""
    n = op.attrs["n"]
    ts, clip = op.inputs[:n], op.inputs[n]
    t = {"T": clip.dtype}
    if op.attrs["has_use_norm"]:
        norm = w.tensor(op.inputs[n + 1])
    else:
        halves = w.add("Pack", [w.add("L2Loss", [x], t) for x in ts], {**t, "N": n, "axis": 0})
        half = w.add("Sum", [halves, _const(w, [0], int32, "Sum/reduction_indices")], {**t, "Tidx": int32,
                                                                                     "keep_dims": False})
        norm = w.add("Sqrt", [w.add("Mul", [half, _const(w, 2, clip.dtype, "two")], t)], t)
    one = _const(w, 1, clip.dtype, "one")
    smaller = w.add("Minimum", [w.add("RealDiv", [one, norm], t), w.add("RealDiv", [one, clip], t)], t)
    scale = w.add("Add", [w.add("Mul", [clip, smaller], t), w.add("Sub", [norm, norm], t)], t)
    return [w.add("Mul", [x, scale], t) for x in ts] + [norm]


# ---------------------------------------------------------------- tensor arrays (tensor_array_ops)
# pygrad's TensorArray is a value, its flow a [size, *element] tensor (not TF's resource and
# scalar flow): written as the value ops that compute that tensor.


@composes("TensorArrayV3")
def _(w, op):
    """The array's zeros: Fill of [size, *element shape], the size and element sizes the graph
    does not know read from the shape-only inputs (size_like's first dimension, element_like's)."""
    like = list(op.inputs)
    size = op.attrs["size"] if op.attrs["size"] is not None else (like[0], 0)
    element = op.attrs["meta"].element_shape
    element_like = like[-1] if op.attrs["element_like"] else None
    if element_like is not None:
        element = element.merge_with(element_like.shape)
    if element.ndims is None:
        raise w.unexportable(op.error(f"the element shape of TensorArray {op.name} is not known"))
    dims = [size] + [d if d is not None else (element_like, i) for i, d in enumerate(element.dims)]
    if any(isinstance(d, tuple) and d[0] is None for d in dims):
        raise w.unexportable(op.error(f"the element shape {element} of TensorArray {op.name} is not fully known"))
    dtype = op.attrs["dtype"]
    return w.final("Fill", [w.dims(dims, w.scoped("dims")), _const(w, 0, dtype, "value")],
                   {"T": dtype, "index_type": int32})


def _row_index(w, index):
    return w.add("Reshape", [index, _const(w, [1, 1], int32, "indices_shape")], {"T": index.dtype, "Tshape": int32})


@composes("TensorArrayWriteV3")
def _(w, op):
    """The flow with row index set to value: TensorScatterUpdate."""
    flow, index, value = op.inputs
    row = w.add("ExpandDims", [value, _const(w, 0, int32, "dim")], {"T": value.dtype, "Tdim": int32})
    return w.final("TensorScatterUpdate", [flow, _row_index(w, index), row], {"T": flow.dtype,
                                                                             "Tindices": index.dtype})


@composes("TensorArrayGrowWrite")
def _(w, op):
    """The flow padded with zero rows up to index + 1 rows (PadV2 by max(index + 1 - size, 0)), then
    written as TensorArrayWriteV3's."""
    flow, index, value = op.inputs
    if flow.shape.ndims is None:
        raise w.unexportable(op.error(f"the rank of TensorArray {op.name}'s elements is not known"))
    t = {"T": index.dtype}
    more = w.add("Sub", [w.add("Add", [index, _const(w, 1, index.dtype, "one")], t, "Add"),
                         w.dim(flow, 0, w.scoped("size"), index.dtype)], t)
    grow = w.add("Maximum", [more, _const(w, 0, index.dtype, "zero")], t)
    zero = _const(w, 0, index.dtype, "no_padding")
    pairs = w.add("Pack", [zero, grow] + [zero] * (2 * flow.shape.ndims - 2),
                  {"N": 2 * flow.shape.ndims, **t, "axis": 0})
    paddings = w.add("Reshape", [pairs, _const(w, [flow.shape.ndims, 2], int32, "paddings_shape")],
                     {**t, "Tshape": int32})
    padded = w.add("PadV2", [flow, paddings, _const(w, 0, flow.dtype, "constant_values")],
                   {"T": flow.dtype, "Tpaddings": index.dtype})
    row = w.add("ExpandDims", [value, _const(w, 0, int32, "dim")], {"T": value.dtype, "Tdim": int32})
    return w.final("TensorScatterUpdate", [padded, _row_index(w, index), row], {"T": flow.dtype,
                                                                               "Tindices": index.dtype})


@composes("TensorArrayReadV3")
def _(w, op):
    """Row index of the flow: GatherV2."""
    flow, index = op.inputs
    return w.final("GatherV2", [flow, index, _const(w, 0, int32, "axis")],
                   {"Tparams": flow.dtype, "Tindices": index.dtype, "Taxis": int32, "batch_dims": 0})


@composes("TensorArrayReadGrad")
def _(w, op):
    """Zeros of the array's shape with row index set to dy: ScatterNd."""
    dy, index, like = op.inputs
    row = w.add("ExpandDims", [dy, _const(w, 0, int32, "dim")], {"T": dy.dtype, "Tdim": int32})
    return w.final("ScatterNd", [_row_index(w, index), row, w.shape_of(like, w.scoped("shape"), index.dtype)],
                   {"T": dy.dtype, "Tindices": index.dtype})


@composes("TensorArrayCopy", "TensorArrayStack")
def _(w, op):
    """unstack's rows and stack's array are the flow itself: Identity."""
    return w.final("Identity", op.inputs, {"T": op.inputs[0].dtype})


# ---------------------------------------------------------------- logic and printing (math_ops, logging_ops)


@composes("LogicalXor")
def _(w, op):
    """TF's tf.math.logical_xor: (x or y) and not (x and y)."""
    x, y = op.inputs
    both = w.add("LogicalAnd", [x, y])
    return w.final("LogicalAnd", [w.add("LogicalOr", [x, y]), w.add("LogicalNot", [both])])


def _stream(w, op):
    """TF's name of a tf.print's output stream."""
    stream = op.attrs["output_stream"]
    if stream is None or stream is sys.stderr:
        return "stderr"
    if stream is sys.stdout:
        return "stdout"
    if isinstance(stream, str) and (stream in ("stderr", "stdout") or stream.startswith("file://")):
        return stream
    raise w.unexportable(op.error(f"output_stream {stream!r}: TF's PrintV2 writes to sys.stderr, sys.stdout or "
                                  f"'file://path'"))


@composes("PrintV2")
def _(w, op):
    """TF's tf.print: the parts joined by sep into one template (a placeholder for each tensor),
    formatted by StringFormat, written by PrintV2."""
    a = op.attrs
    stream = _stream(w, op)
    text = " ".join(p for p in a["parts"] if p is not None)
    placeholder = "{}"
    while placeholder in text:
        placeholder = "{" + placeholder + "}"
    template = a["sep"].join(placeholder if p is None else p for p in a["parts"])
    formatted = w.add("StringFormat", op.inputs, {"T": [t.dtype for t in op.inputs], "template": template,
                                                  "placeholder": placeholder, "summarize": a["summarize"]})
    w.final("PrintV2", [formatted], {"output_stream": stream, "end": a["end"]})
    return []


@composes("IsVariableInitialized")
def _(w, op):
    """TF's IsVariableInitialized reads the variable (a ref input); pygrad holds it as an attribute."""
    v = op.attrs["variable"]
    return w.final("IsVariableInitialized", [v], {"dtype": v.dtype})
