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
from pygrad.ops import (array_ops, manip_ops, math_ops, random_ops, reduction_ops, sequence_ops, slice_ops,
                        state_ops)
from pygrad.ops.shape_exprs import shape_expr
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

def _dims(t):
    """The dims of t, a 1-D integer tensor holding a shape: ints, or (tensor, axis) for a size the
    graph does not know; None when t is not such an expression."""
    expr = shape_expr(t)
    if expr is None:
        return None
    dims, refs = expr
    return [d if isinstance(d, (int, np.integer)) else (refs[d[0]], d[1]) for d in dims]


def _same(a, b):
    """Whether two dims are the same size; two the graph does not know are taken as equal."""
    return isinstance(a, tuple) and isinstance(b, tuple) or a == b


def broadcast_gradient_args(b):
    """TF's BroadcastGradientArgs: for shapes s0, s1 broadcast together, the axes each input's
    gradient is summed over. Sizes the graph does not know on both sides are taken as equal (a run
    that broadcasts one of them then fails in the Reshape after the Sum, it does not go wrong)."""
    s0, s1 = _dims(b.x[0]), _dims(b.x[1])
    if s0 is None or s1 is None:
        s0, s1 = b.ints(0).tolist(), b.ints(1).tolist()
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
    dtype = b.dtype("T")
    return [array_ops.constant(np.array(r0, dtype.np), name=b.name), array_ops.constant(np.array(r1, dtype.np),
                                                                                         name=b.name + "_1")]


def concat_offset(b):
    """TF's ConcatOffset: where each input of a ConcatV2 starts along the axis."""
    axis = int(b.value(0))
    sizes = [b.ints(k) for k in range(1, len(b.x))]
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
    if fmt == "NCHW":
        scale, offset, mean, var = (array_ops.reshape(t, [-1, 1, 1]) for t in (scale, offset, mean, var))
    y = (x - mean) * math_ops.rsqrt(var + b.attr("epsilon", 1e-4)) * scale + offset
    return [y, b.x[3], b.x[4]]


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
        return OpDef.all[ptype](*x, strides=tuple(b.attr("strides")), padding=b.attr("padding"), name=b.name)
    return build


def _tile(b):
    """Tile; multiples read from a shape (TF's gradient of a reduction tiles a [1, ..., 1] tensor by
    tf.shape(x)) is a broadcast to that tensor's shape."""
    multiples = b.shape_arg(1)
    if isinstance(multiples, list):
        return manip_ops.tile(b.x[0], multiples, name=b.name)
    x, t = b.x[0], b.x[1]
    if t.op.type == "Shape" and x.shape.ndims == t.op.inputs[0].shape.ndims and all(d == 1 for d in x.shape.dims):
        return OpDef.all["BroadcastLike"](x, t.op.inputs[0], axes=None, mean=False, name=b.name)
    raise b.unimplemented(f"multiples '{b.node.input[1]}' must be known when the graph is built, or be the shape "
                          f"of a tensor that input 0 (shape {x.shape}) is broadcast to")


def _random(ptype):
    def build(b):
        return random_ops.draw(OpDef.all[ptype], b.shape_arg(0), b.attr("dtype"), b.attr("seed", 0),
                               b.attr("seed2", 0), b.name)
    return build


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
    "InvertPermutation": lambda b: array_ops.constant(np.argsort(b.ints(0)).astype(b.dtype("T").np), name=b.name),
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
    "Unpack": lambda b: manip_ops.unstack(b.x[0], num=b.attr("num"), axis=b.attr("axis", 0), name=b.name),
    "Split": lambda b: manip_ops.split(b.x[1], b.attr("num_split"), axis=int(b.value(0)), name=b.name),
    "SplitV": lambda b: manip_ops.split(b.x[0], b.ints(1).tolist(), axis=int(b.value(2)), name=b.name),
    "GatherV2": lambda b: manip_ops.gather(b.x[0], b.x[1], axis=int(b.value(2)), name=b.name),
    "Gather": lambda b: manip_ops.gather(b.x[0], b.x[1], name=b.name),
    "Tile": _tile,
    "OneHot": lambda b: manip_ops.one_hot(b.x[0], int(b.value(1)), b.x[2], b.x[3], axis=b.attr("axis", -1),
                                          name=b.name),
    "Select": lambda b: manip_ops.where(b.x[0], b.x[1], b.x[2], name=b.name),
    "SelectV2": lambda b: manip_ops.where(b.x[0], b.x[1], b.x[2], name=b.name),
    "StridedSlice": lambda b: slice_ops.strided_slice(
        b.x[0], b.ints(1).tolist(), b.ints(2).tolist(), b.ints(3).tolist(), begin_mask=b.attr("begin_mask", 0),
        end_mask=b.attr("end_mask", 0), ellipsis_mask=b.attr("ellipsis_mask", 0),
        new_axis_mask=b.attr("new_axis_mask", 0), shrink_axis_mask=b.attr("shrink_axis_mask", 0), name=b.name),
    "Slice": lambda b: slice_ops.slice(b.x[0], b.ints(1).tolist(), b.shape_arg(2), name=b.name),
    "Range": lambda b: sequence_ops.range(b.x[0], b.x[1], b.x[2], name=b.name),
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
