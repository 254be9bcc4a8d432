"""How each TensorFlow op type of an imported GraphDef becomes pygrad ops (used by importer.py).

The op-identity table (op_identity.TABLE) is read backwards: a TF type whose pygrad op takes
TF's inputs in TF's order and TF's attributes by name (renamed per the entry's `attrs`) is built
generically (GENERIC). The others have a builder here, BUILDERS[tf_type](b) with b an importer.NodeBuild:
they call pygrad's own wrappers, which take the attributes TF passes as inputs (a Reshape's shape, a
Sum's axes) as the values b.value(k) folds, or as shape expressions (tf.shape(x)[0]) the plan
resolves. TF ops that exist only inside TF's gradients (BroadcastGradientArgs, ShapeN,
ConcatOffset, ...) are computed here from what the graph knows of the shapes.
"""
import numpy as np

from pygrad import dtypes, import_control_flow, nn
from pygrad.op_identity import TABLE
from pygrad.ops import (array_ops, check_ops, cumulative_ops, logging_ops, manip_ops, math_ops, random_ops,
                        reduction_ops, scatter_ops, sequence_ops, slice_ops, state_ops, string_ops, topk_ops)
from pygrad.ops.shape_exprs import all_known
from pygrad.registry import OpDef

# pygrad attributes with no TF counterpart that a generic build may leave to the op's default.
_DEFAULTED_OWN = {"Rank": {"out_type"}}


def _generic_types():
    """{TF type: pygrad type} of the ops built generically: no attribute moved to an input, TF's
    inputs in TF's order, no attribute of pygrad's own."""
    out = {}
    for ptype, e in TABLE.items():
        if e.type is None or e.inputs or e.ins is not None or set(e.own) - _DEFAULTED_OWN.get(ptype, set()):
            continue
        for t in (e.type,) + e.also:
            out.setdefault(t, ptype)
    return out


def build_generic(b, ptype):
    entry = TABLE[ptype]
    attrs = {py: b.attr(tf_name) for py, tf_name in entry.attrs.items() if tf_name in b.node.attr}
    return OpDef.all[ptype](*b.x, name=b.name, **attrs)


# ---------------------------------------------------------------- shapes the graph knows

def materialize(v, dtype, name):
    """A tensor holding v (a symbolic() value): a constant if every size is known, else (1-D) a
    stack of tf.shape(t)[axis] sizes, which pygrad's shape arguments read back."""
    if all_known(v):
        return array_ops.constant(v.astype(np.int64).astype(dtype.np), name=name)
    if v.ndim != 1:
        raise ValueError(f"{name}: a {v.ndim}-D shape value with sizes known only when the graph runs")
    return manip_ops.stack([as_size(d, dtype) for d in v], name=name)


def as_size(d, dtype=dtypes.int32):
    """A dim of symbolic(): an int, or the scalar tensor tf.shape(tensor)[axis]."""
    if isinstance(d, tuple):
        return math_ops.cast(array_ops.shape(d[0])[d[1]], dtype) if dtype != dtypes.int32 else \
            array_ops.shape(d[0])[d[1]]
    return array_ops.constant(np.array(d, dtype.np))


def _same(a, b):
    """Whether two dims are the same size; two the graph does not know are taken as equal."""
    return isinstance(a, tuple) and isinstance(b, tuple) or a == b


def broadcast_gradient_args(b):
    """TF's BroadcastGradientArgs: for shapes s0, s1 broadcast together, the axes each input's
    gradient is summed over. Sizes the graph does not know on both sides are taken as equal (a run
    that broadcasts one of them then fails in the Reshape after the Sum, it does not go wrong)."""
    s0, s1 = b.symbolic(0), b.symbolic(1)
    n = max(len(s0), len(s1))
    s0, s1 = [1] * (n - len(s0)) + list(s0), [1] * (n - len(s1)) + list(s1)
    r0, r1 = [], []
    for i, (a, c) in enumerate(zip(s0, s1)):
        if _same(a, c):
            if a == 1 and c == 1:
                r0.append(i), r1.append(i)
            continue
        if a == 1:
            r0.append(i)
        elif c == 1:
            r1.append(i)
        elif not isinstance(a, tuple) and not isinstance(c, tuple):
            raise b.error(f"shapes {s0} and {s1} do not broadcast")
    dtype = b.attr("T")
    return [array_ops.constant(np.array(r0, dtype.np), name=b.name), array_ops.constant(np.array(r1, dtype.np),
                                                                                         name=b.name + "_1")]


def dynamic_stitch(b):
    """DynamicStitch of shapes (TF's gradients of reductions build the kept-dims shape with it)."""
    n = len(b.x) // 2
    indices = [b.ints(k) for k in range(n)]
    data = [b.symbolic(n + k) for k in range(n)]
    out = np.empty(max(int(i.max()) for i in indices if i.size) + 1, object)
    for idx, d in zip(indices, data):
        out[idx.reshape(-1)] = d.reshape(len(idx.reshape(-1)), -1)[:, 0] if d.ndim > idx.ndim else d.reshape(-1)
    return materialize(out, b.attr("T"), b.name)


def broadcast_to(b):
    like = array_ops.zeros(b.shape_arg(1), dtype=b.x[0].dtype)  # shape-only: never computed
    return OpDef.all["BroadcastLike"](b.x[0], like, axes=None, mean=False, name=b.name)


def concat_offset(b):
    """TF's ConcatOffset: where each input of a ConcatV2 starts along the axis (whose sizes the
    graph must know; the other sizes need not be)."""
    axis = int(b.value(0))
    sizes = [b.symbolic(k) for k in range(1, len(b.x))]
    if any(isinstance(s[axis], tuple) for s in sizes):
        raise b.unimplemented(f"the sizes along axis {axis} must be known when the graph is built")
    starts = np.cumsum([0] + [int(s[axis]) for s in sizes[:-1]])
    out = []
    for k, start in enumerate(starts):
        offset = np.zeros(len(sizes[0]), np.int32)
        offset[axis] = start
        out.append(array_ops.constant(offset, name=b.name if k == 0 else f"{b.name}_{k}"))
    return out


def _reduce(fn):
    def build(b):
        axes = b.ints(1).reshape(-1).tolist()
        return fn(b.x[0], axis=axes, keepdims=b.attr("keep_dims", False), name=b.name)
    return build


def _batch_norm(b):
    if b.attr("is_training", True):
        raise b.unimplemented("is_training true (import inference graphs, or set the op's is_training to false)")
    x, scale, offset, mean, var = b.x[:5]
    fmt = b.attr("data_format", "NHWC")
    eps = b.attr("epsilon", 1e-4)
    if all(constant(t) is not None for t in b.x[1:5]):
        # a frozen graph's statistics: y = x * a + c, with a and c computed once here, in float32 as TF
        s, o, m, v = (constant(t).astype(np.float32) for t in b.x[1:5])
        a = (s / np.sqrt(v + np.float32(eps))).astype(np.float32)
        scale, mean, offset, var = a, None, (o - m * a).astype(np.float32), None
        if fmt == "NCHW":
            scale, offset = scale.reshape(-1, 1, 1), offset.reshape(-1, 1, 1)
        return [math_ops.add(x * scale, offset, name=b.name), b.x[3], b.x[4]]
    if fmt == "NCHW":
        scale, offset, mean, var = (array_ops.reshape(t, [-1, 1, 1]) for t in (scale, offset, mean, var))
    y = (x - mean) * math_ops.rsqrt(var + eps) * scale + offset
    return [y, b.x[3], b.x[4]]


def constant(t):
    """The value of t if it is a constant, read through Identity and StopGradient; else None."""
    while t.op.type in ("Identity", "StopGradient") and t.op.inputs:
        t = t.op.inputs[0]
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


def _variable(b):
    """A VariableV2 node: a variable of the session's store, as pygrad's Variable has, without
    collections (import_meta_graph adds those from the MetaGraphDef's VariableDefs)."""
    return state_ops.Variable.over_new_op(b.name, b.attr("shape"), b.attr("dtype"))


def _like(b, k):
    """A tensor whose shape is input k's value (a conv gradient's input_sizes): the tensor a Shape
    reads, or zeros of that shape."""
    t = b.x[k]
    if t.op.type == "Shape":
        return t.op.inputs[0]
    return array_ops.zeros(b.shape_arg(k), dtype=b.x[1 - k if k < 2 else 0].dtype)


def _conv_grad(ptype, ins):
    """Conv2DBackpropInput/Filter and the depthwise ones: (x or its shape, filter or its shape, dy)."""
    def build(b):
        if _fmt(b) != "NHWC" or any(d != 1 for d in b.attr("dilations", [1, 1, 1, 1])):
            raise b.unimplemented(f"data_format {_fmt(b)} and dilations {b.attr('dilations')} (pygrad's gradient "
                                  f"ops take NHWC without dilations)")
        x = [_like(b, k) if k in ins else b.x[k] for k in range(3)]
        extra = {"dilations": (1, 1, 1, 1)} if ptype.startswith("Depthwise") else {}
        return OpDef.all[ptype](*x, strides=tuple(b.attr("strides")), padding=b.attr("padding"), name=b.name, **extra)
    return build


def _tile(b):
    """Tile; multiples only a plan knows (TF's gradient of a reduction tiles a [1, ..., 1] tensor
    by tf.shape(x)) are a broadcast to the tiled shape, where each dimension of x is 1 or tiled
    once."""
    dims = b.shape_arg_dims(1)
    x = b.x[0]
    if dims is None or not any(isinstance(d, tuple) for d in dims):
        return manip_ops.tile(x, b.ints(1).tolist(), name=b.name)
    if x.shape.ndims != len(dims):
        raise b.unimplemented(f"multiples {dims} for input 0 of shape {x.shape}")
    out = []
    for i, (d, m) in enumerate(zip(x.shape.dims, dims)):
        if d == 1:
            out.append(as_size(m) if isinstance(m, tuple) else int(m))
        elif m == 1:
            out.append(d if d is not None else as_size((x, i)))
        else:
            raise b.unimplemented(f"multiples {dims} only a run knows for input 0 of shape {x.shape} (pygrad tiles "
                                  f"such dimensions of size 1 only)")
    like = array_ops.zeros(out, dtype=x.dtype)  # shape-only: never computed
    return OpDef.all["BroadcastLike"](x, like, axes=None, mean=False, name=b.name)


def _broadcast(b, xs):
    """xs broadcast to the shape of the one whose shape is that of all together (SelectV2)."""
    shapes = [x.shape for x in xs]
    full = next((x for x in xs if all(s.ndims is not None and s.ndims <= x.shape.ndims for s in shapes)
                 and all(_covers(x.shape, s) for s in shapes)), None)
    if full is None:
        raise b.unimplemented(f"inputs of shapes {[str(s) for s in shapes]}: none has the broadcast shape of all")
    return [x if x.shape.as_list() == full.shape.as_list() else
            OpDef.all["BroadcastLike"](x, full, axes=None, mean=False) for x in xs]


def _covers(big, small):
    """Whether small broadcasts to big without growing it."""
    pairs = zip(reversed(big.as_list()), reversed(small.as_list()))
    return all(s in (1, b) for b, s in pairs)


def _list_diff(b):
    x, y = b.value(0), set(b.value(1).reshape(-1).tolist())
    keep = [i for i, v in enumerate(x.reshape(-1).tolist()) if v not in y]
    return [array_ops.constant(x.reshape(-1)[keep], name=b.name),
            array_ops.constant(np.array(keep, b.attr("out_idx", dtypes.int32).np), name=b.name + "_idx")]


def _range(b):
    """Range's arguments as values where the graph knows them, as sizes where a plan does, else
    as the tensors a run computes."""
    args = []
    for k in range(3):
        dims = b.shape_arg_dims(k)
        args.append(b.x[k] if dims is None else as_size(dims[0]) if isinstance(dims[0], tuple) else b.value(k))
    return sequence_ops.range(*args, name=b.name)


def _random(ptype):
    def build(b):
        return random_ops.draw(OpDef.all[ptype], b.shape_arg(0), b.attr("dtype"), b.attr("seed", 0),
                               b.attr("seed2", 0), b.name)
    return build


def _unpadded(b):
    """A tensor of the shape of a pad's input, from dy and the paddings: a slice of dy (shape-only)."""
    p = b.ints(1)
    return slice_ops.strided_slice(b.x[0], p[:, 0].tolist(), [-int(a) if a else 0 for a in p[:, 1]],
                                   [1] * len(p), end_mask=sum(1 << i for i, a in enumerate(p[:, 1]) if not a))


def _slice_attrs(b):
    return dict(begin=tuple(b.ints(1).tolist()), end=tuple(b.ints(2).tolist()), strides=tuple(b.ints(3).tolist()),
                **{m: b.attr(m, 0) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                             "shrink_axis_mask")})


def _reordered(ptype, order):
    """An op whose pygrad inputs are TF's in another order (order[i]: the TF input of pygrad's i-th)."""
    return lambda b: OpDef.all[ptype](*(b.x[i] for i in order), name=b.name)


def _resource_apply(ptype):
    """ResourceApplyX: ApplyX on the variables the handles name (a handle is its variable here)."""
    return lambda b: build_generic(b, ptype).op


def _is_initialized(b):
    return state_ops.is_variable_initialized(b.x[0], name=b.name)


def _fmt(b):
    return b.attr("data_format", "NHWC")


def _window(b, fn):
    return fn(b.x[0], ksize=b.attr("ksize"), strides=b.attr("strides"), padding=b.attr("padding"),
              data_format=_fmt(b), name=b.name)


BUILDERS = {
    "Const": lambda b: array_ops.constant(b.attr("value"), name=b.name),
    "Placeholder": lambda b: array_ops.placeholder(b.attr("dtype"), shape=b.attr("shape"), name=b.name),
    "PlaceholderWithDefault": lambda b: array_ops.placeholder_with_default(b.x[0], b.attr("shape"), name=b.name),
    "VariableV2": _variable,
    # Resource variables (TF 2's tf.Variable, and compat.v1 graphs with resource variables on): the
    # handle is the variable itself.
    "VarHandleOp": _variable,
    "ReadVariableOp": lambda b: array_ops.identity(b.x[0], name=b.name),
    "AssignVariableOp": lambda b: state_ops.assign(b.x[0], b.x[1], name=b.name).op,
    "AssignAddVariableOp": lambda b: state_ops.assign_add(b.x[0], b.x[1], name=b.name).op,
    "AssignSubVariableOp": lambda b: state_ops.assign_sub(b.x[0], b.x[1], name=b.name).op,
    "IsVariableInitialized": _is_initialized,
    "VarIsInitializedOp": _is_initialized,
    **{"Resource" + t: _resource_apply(t) for t in ("ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad",
                                                    "ApplyRMSProp", "ApplyAdam", "ApplyAdadelta", "ApplyFtrl",
                                                    "ApplyProximalGradientDescent", "ApplyProximalAdagrad")},
    "Snapshot": lambda b: array_ops.identity(b.x[0], name=b.name),
    "BiasAdd": lambda b: nn.bias_add(b.x[0], b.x[1], data_format=_fmt(b), name=b.name),
    "BiasAddV1": lambda b: nn.bias_add(b.x[0], b.x[1], name=b.name),
    "BiasAddGrad": lambda b: reduction_ops.reduce_sum(
        b.x[0], axis=[i for i in range(b.x[0].shape.ndims) if i != (1 if _fmt(b) == "NCHW" else b.x[0].shape.ndims - 1)],
        name=b.name),
    "L2Loss": lambda b: nn.l2_loss(b.x[0], name=b.name),
    "Softmax": lambda b: nn.softmax(b.x[0], name=b.name),
    "LogSoftmax": lambda b: nn.log_softmax(b.x[0], name=b.name),
    "Conv2D": lambda b: nn.conv2d(b.x[0], b.x[1], strides=b.attr("strides"), padding=b.attr("padding"),
                                  data_format=_fmt(b), dilations=b.attr("dilations", [1, 1, 1, 1]), name=b.name),
    "DepthwiseConv2dNative": lambda b: nn.depthwise_conv2d_native(
        b.x[0], b.x[1], strides=b.attr("strides"), padding=b.attr("padding"), data_format=_fmt(b),
        dilations=b.attr("dilations", [1, 1, 1, 1]), name=b.name),
    "MaxPool": lambda b: _window(b, nn.max_pool),
    "AvgPool": lambda b: _window(b, nn.avg_pool),
    "FusedBatchNorm": _batch_norm,
    "FusedBatchNormV2": _batch_norm,
    "FusedBatchNormV3": _batch_norm,
    "Reshape": lambda b: array_ops.reshape(b.x[0], b.shape_arg(1), name=b.name),
    "Fill": lambda b: array_ops.fill(b.shape_arg(0), b.value(1), name=b.name),
    "ExpandDims": lambda b: array_ops.expand_dims(b.x[0], int(b.value(1)), name=b.name),
    "Squeeze": lambda b: array_ops.squeeze(b.x[0], axis=b.attr("squeeze_dims") or None, name=b.name),
    "Transpose": lambda b: array_ops.transpose(b.x[0], b.ints(1).tolist(), name=b.name),
    "Cast": lambda b: array_ops.cast(b.x[0], b.attr("DstT"), name=b.name),
    "Shape": lambda b: array_ops.shape(b.x[0], out_type=b.attr("out_type", dtypes.int32), name=b.name),
    "ShapeN": lambda b: [array_ops.shape(x, out_type=b.attr("out_type", dtypes.int32),
                                         name=b.name if k == 0 else f"{b.name}_{k}") for k, x in enumerate(b.x)],
    "Size": lambda b: array_ops.size(b.x[0], out_type=b.attr("out_type", dtypes.int32), name=b.name),
    "Rank": lambda b: array_ops.rank(b.x[0], name=b.name),
    "BroadcastGradientArgs": broadcast_gradient_args,
    "ConcatOffset": concat_offset,
    "DynamicStitch": dynamic_stitch,
    "BroadcastTo": broadcast_to,
    "DivNoNan": lambda b: math_ops.div_no_nan(b.x[0], b.x[1], name=b.name),
    "MirrorPadGrad": lambda b: OpDef.all["MirrorPadGrad"](
        b.x[0], _unpadded(b), paddings=tuple(map(tuple, b.ints(1).tolist())),
        mode={"REFLECT": 1, "SYMMETRIC": 2}[b.attr("mode")], name=b.name),
    "InvertPermutation": lambda b: array_ops.constant(np.argsort(b.ints(0)).astype(b.dtype("T").np), name=b.name),
    "ReduceJoin": lambda b: string_ops.reduce_join(b.x[0], b.ints(1).reshape(-1).tolist(), b.attr("keep_dims", False),
                                                   b.attr("separator", ""), name=b.name),
    "Sum": _reduce(reduction_ops.reduce_sum),
    "Mean": _reduce(reduction_ops.reduce_mean),
    "Max": _reduce(reduction_ops.reduce_max),
    "Min": _reduce(reduction_ops.reduce_min),
    "Prod": _reduce(reduction_ops.reduce_prod),
    "All": _reduce(reduction_ops.reduce_all),
    "Any": _reduce(reduction_ops.reduce_any),
    "ArgMax": lambda b: reduction_ops.argmax(b.x[0], axis=int(b.value(1)), output_type=b.attr("output_type"),
                                             name=b.name),
    "ArgMin": lambda b: reduction_ops.argmin(b.x[0], axis=int(b.value(1)), output_type=b.attr("output_type"),
                                             name=b.name),
    "ConcatV2": lambda b: manip_ops.concat(b.x[:-1], int(b.value(len(b.x) - 1)), name=b.name),
    "Pack": lambda b: manip_ops.stack(b.x, axis=b.attr("axis", 0), name=b.name),
    "SparseConcat": lambda b: OpDef.all["SparseConcat"](*b.x, concat_dim=b.attr("concat_dim"), N=b.attr("N"),
                                                        name=b.name),
    "Unpack": lambda b: manip_ops.unstack(b.x[0], num=b.attr("num"), axis=b.attr("axis", 0), name=b.name),
    "Split": lambda b: manip_ops.split(b.x[1], b.attr("num_split"), axis=int(b.value(0)), name=b.name),
    "SplitV": lambda b: manip_ops.split(b.x[0], b.ints(1).tolist(), axis=int(b.value(2)), name=b.name),
    "GatherV2": lambda b: manip_ops.gather(b.x[0], b.x[1], axis=int(b.value(2)), name=b.name),
    "Gather": lambda b: manip_ops.gather(b.x[0], b.x[1], name=b.name),
    "Tile": _tile,
    "OneHot": lambda b: manip_ops.one_hot(b.x[0], int(b.value(1)), b.x[2], b.x[3], axis=b.attr("axis", -1),
                                          name=b.name),
    "Select": lambda b: manip_ops.where(b.x[0], b.x[1], b.x[2], name=b.name),
    "SelectV2": lambda b: manip_ops.where(*_broadcast(b, b.x), name=b.name),
    "StridedSlice": lambda b: slice_ops.strided_slice(
        b.x[0], b.ints(1).tolist(), b.ints(2).tolist(), b.ints(3).tolist(), begin_mask=b.attr("begin_mask", 0),
        end_mask=b.attr("end_mask", 0), ellipsis_mask=b.attr("ellipsis_mask", 0),
        new_axis_mask=b.attr("new_axis_mask", 0), shrink_axis_mask=b.attr("shrink_axis_mask", 0), name=b.name),
    "Slice": lambda b: slice_ops.slice(b.x[0], b.ints(1).tolist(), b.shape_arg(2), name=b.name),
    "Range": _range,
    "ListDiff": _list_diff,
    "ReciprocalGrad": lambda b: math_ops.multiply(-b.x[1], b.x[0] * b.x[0], name=b.name),
    "RsqrtGrad": lambda b: math_ops.multiply(b.x[1] * -0.5, b.x[0] * b.x[0] * b.x[0], name=b.name),
    "SqrtGrad": lambda b: math_ops.realdiv(b.x[1] * 0.5, b.x[0], name=b.name),
    "Pad": lambda b: sequence_ops.pad(b.x[0], b.ints(1).tolist(), name=b.name),
    "PadV2": lambda b: sequence_ops.pad(b.x[0], b.ints(1).tolist(), constant_values=b.value(2), name=b.name),
    "MirrorPad": lambda b: sequence_ops.pad(b.x[0], b.ints(1).tolist(), mode=b.attr("mode"), name=b.name),
    "ReverseV2": lambda b: sequence_ops.reverse(b.x[0], b.ints(1).tolist(), name=b.name),
    "MatMul": lambda b: math_ops.matmul(b.x[0], b.x[1], transpose_a=b.attr("transpose_a", False),
                                        transpose_b=b.attr("transpose_b", False), name=b.name),
    "BatchMatMulV2": lambda b: math_ops.matmul(b.x[0], b.x[1], adjoint_a=b.attr("adj_x", False),
                                               adjoint_b=b.attr("adj_y", False), name=b.name),
    "ReluGrad": lambda b: OpDef.all["ReluGrad"](b.x[1], b.x[0], name=b.name),
    "Conv2DBackpropInput": _conv_grad("Conv2DBackpropInput", {0}),
    "Conv2DBackpropFilter": _conv_grad("Conv2DBackpropFilter", {1}),
    "DepthwiseConv2dNativeBackpropInput": _conv_grad("DepthwiseConv2dNativeBackpropInput", {0}),
    "DepthwiseConv2dNativeBackpropFilter": _conv_grad("DepthwiseConv2dNativeBackpropFilter", {1}),
    "AvgPoolGrad": lambda b: OpDef.all["AvgPoolGrad"](_like(b, 0), b.x[1], ksize=tuple(b.attr("ksize")),
                                                      strides=tuple(b.attr("strides")), padding=b.attr("padding"),
                                                      name=b.name),
    "StridedSliceGrad": lambda b: OpDef.all["StridedSliceGrad"](b.x[4], _like(b, 0), name=b.name, **_slice_attrs(b)),
    "ApplyCenteredRMSProp": _reordered("ApplyCenteredRMSProp", (0, 2, 3, 4, 5, 6, 7, 8, 1)),
    "ApplyFtrlV2": _reordered("ApplyFtrlV2", (0, 1, 2, 3, 4, 5, 6, 8, 7)),
    "Cumsum": lambda b: cumulative_ops.cumsum(b.x[0], int(b.value(1)), exclusive=b.attr("exclusive", False),
                                              reverse=b.attr("reverse", False), name=b.name),
    "Cumprod": lambda b: cumulative_ops.cumprod(b.x[0], int(b.value(1)), exclusive=b.attr("exclusive", False),
                                                reverse=b.attr("reverse", False), name=b.name),
    "TopKV2": lambda b: topk_ops.top_k(b.x[0], int(b.value(1)), sorted=b.attr("sorted", True), name=b.name),
    "InTopKV2": lambda b: topk_ops.in_top_k(b.x[0], b.x[1], int(b.value(2)), name=b.name),
    "ScatterNd": lambda b: scatter_ops.scatter_nd(b.x[0], b.x[1], b.shape_arg(2), name=b.name),
    "SegmentSum": lambda b: scatter_ops.segment_sum(b.x[0], b.x[1], name=b.name),
    "UnsortedSegmentSum": lambda b: scatter_ops.unsorted_segment_sum(b.x[0], b.x[1], int(b.value(2)), name=b.name),
    "Assert": lambda b: check_ops.Assert(b.x[0], b.x[1:], summarize=b.attr("summarize", 3), name=b.name),
    "Print": lambda b: logging_ops.Print(b.x[0], b.x[1:], message=b.attr("message", ""), first_n=b.attr("first_n", -1),
                                         summarize=b.attr("summarize", 3), name=b.name),
    "RandomUniform": _random("RandomUniform"),
    "RandomStandardNormal": _random("RandomStandardNormal"),
    "TruncatedNormal": _random("TruncatedNormal"),
}


def builder(tf_type):
    """The builder of a TF op type, or None for a type pygrad does not import."""
    if tf_type in BUILDERS:
        return BUILDERS[tf_type]
    if tf_type in import_control_flow.BUILDERS:
        return import_control_flow.BUILDERS[tf_type]
    ptype = GENERIC.get(tf_type)
    return None if ptype is None else (lambda b: build_generic(b, ptype))


GENERIC = {t: p for t, p in _generic_types().items() if t not in BUILDERS}
