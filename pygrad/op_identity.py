"""The op-identity table: for each pygrad op type, the TensorFlow op it is (its NodeDef `op` and how
its attributes map onto the NodeDef's), or why it has none. registry.OpDef reads its entry as
`OpDef.tf` when it is declared; registry.check_registry fails for an op without an entry and for an
entry naming no op. GraphDef import and export read this table.

An entry `tf(type, ...)` has these fields, each a string of space-separated items ("a=b", or "a"
for "a=a"):
  attrs    pygrad attribute = TF attribute it is carried as (values as they are, unless `note` says)
  inputs   pygrad attribute = TF input it becomes (a Const input in TF; an input/attr move)
  derived  TF attribute or input = where export takes it from (one of DERIVED)
  ins      the TF input each pygrad input is, in pygrad's order: a TF input name, "shape:name" (this
           input's shape is that TF input), or "-" (pygrad's own: no TF input); a trailing "*"
           stands for any number of inputs. Absent: pygrad's inputs are TF's inputs left after the
           `inputs` moves, in TF's order.
  own      pygrad attributes with no TF counterpart (see `note`)
  also     other TF op types this pygrad op stands for (see `note` for which)
  note     one line on what does not map one to one
An entry `none(reason)` is an op with no TF counterpart: a pygrad-internal op (a gradient helper, a
fused update) or one TF spells as a composition of ops; `reason` says which.
TF attributes with a default value that pygrad does not set are left out (TF's default applies),
among them those newer than TF 1.15 (TopKV2's Tk, MatMul's grad_a, ...).
"""
from collections import namedtuple

# Where a derived TF attribute or input comes from.
DERIVED = {
    **{f"in{i}": f"the dtype of input {i}" for i in range(10)},
    **{f"out{i}": f"the dtype of output {i}" for i in range(3)},
    "ins": "the dtypes of all inputs", "ins1:": "the dtypes of the inputs after the first",
    "outs": "the dtypes of all outputs", "out_shapes": "the static shapes of all outputs",
    "n_ins": "the number of inputs", "n_outs": "the number of outputs",
    "int32": "int32, the dtype of an attribute moved to a constant input",
    "int64": "int64, the dtype of an attribute moved to a constant input",
    "regions": "the op's regions (its branches, or its loop's condition and body) as TF functions",
    "host": "the op's Python side (an attribute its host function reads: a dataset iterator, a function)",
    "array": "the handle (or the flow) of the chain's TensorArrayV3",
    "range": "the constant indices 0, ..., n - 1 of the array's rows",
    "dim": "dimension `axis` of input 0's shape (TF: Shape, then StridedSlice)",
    "inN": "the dtype of input N, N the op's attribute (the first of a second list of inputs)",
}

TFOp = namedtuple("TFOp", "type attrs inputs derived ins own also note")
TFOp.__doc__ = "One entry of the table (see the module's docstring); type is None for an op without a TF op."


def _pairs(spec):
    out = {}
    for item in spec.split():
        key, _, value = item.partition("=")
        out[key] = value or key
    return out


def tf(type, attrs="", inputs="", derived="", ins=None, own="", also="", note=""):
    return TFOp(type, _pairs(attrs), _pairs(inputs), _pairs(derived), None if ins is None else tuple(ins.split()),
                tuple(own.split()), tuple(also.split()), note)


def none(reason):
    return TFOp(None, {}, {}, {}, None, (), (), reason)


# ---------------------------------------------------------------- array_ops
_ARRAY = {
    "Placeholder":    tf("Placeholder",  attrs="dtype shape"),
    "Const":          tf("Const",        attrs="value dtype"),
    "Fill":           tf("Fill",         attrs="dtype=T", inputs="dims value", derived="index_type=int32", ins="-*",
                         note="dims may read sizes of the inputs' shapes (TF: Shape, StridedSlice, Pack into dims)"),
    "ZerosLike":      tf("ZerosLike",    derived="T=in0"),
    "OnesLike":       tf("OnesLike",     derived="T=in0"),
    "Identity":       tf("Identity",     derived="T=in0"),
    "IdentityN":      tf("IdentityN",    derived="T=ins"),
    "StopGradient":   tf("StopGradient", derived="T=in0"),
    "Reshape":        tf("Reshape",      inputs="shape", derived="T=in0 Tshape=int32", ins="tensor -*",
                         note="shape may read sizes of the inputs after the first (TF: Shape, StridedSlice, Pack)"),
    "ReshapeLike":    tf("Reshape",      derived="T=in0 Tshape=int32", ins="tensor shape:shape"),
    "ExpandDims":     tf("ExpandDims",   inputs="axis=dim", derived="T=in0 Tdim=int32"),
    "Squeeze":        tf("Squeeze",      attrs="axis=squeeze_dims", derived="T=in0", note="axis None: squeeze_dims []"),
    "Shape":          tf("Shape",        attrs="out_type", derived="T=in0"),
    "Size":           tf("Size",         attrs="out_type", derived="T=in0"),
    "Rank":           tf("Rank",         derived="T=in0", own="out_type", note="out_type: always int32, TF's"),
    "Cast":           tf("Cast",         attrs="DstT", derived="SrcT=in0"),
    "Transpose":      tf("Transpose",    inputs="perm", derived="T=in0 Tperm=int32"),
}

# ---------------------------------------------------------------- math_ops
_MATH = {
    "Bucketize":      tf("Bucketize",    attrs="boundaries", derived="T=in0"),
    "Neg":            tf("Neg",          derived="T=in0"),
    "Abs":            tf("Abs",          derived="T=in0"),
    "Square":         tf("Square",       derived="T=in0"),
    "Sign":           tf("Sign",         derived="T=in0"),
    "Exp":            tf("Exp",          derived="T=in0"),
    "Log":            tf("Log",          derived="T=in0"),
    "Log1p":          tf("Log1p",        derived="T=in0"),
    "Sqrt":           tf("Sqrt",         derived="T=in0"),
    "Rsqrt":          tf("Rsqrt",        derived="T=in0"),
    "Reciprocal":     tf("Reciprocal",   derived="T=in0"),
    "Sin":            tf("Sin",          derived="T=in0"),
    "Cos":            tf("Cos",          derived="T=in0"),
    "Floor":          tf("Floor",        derived="T=in0"),
    "Ceil":           tf("Ceil",         derived="T=in0"),
    "Round":          tf("Round",        derived="T=in0"),
    "LogicalNot":     tf("LogicalNot"),
    "Relu":           tf("Relu",         derived="T=in0"),
    "Sigmoid":        tf("Sigmoid",      derived="T=in0"),
    "Tanh":           tf("Tanh",         derived="T=in0"),
    "ReluGrad":       tf("ReluGrad",     derived="T=in0", ins="features gradients",
                         note="pygrad passes relu's output as the features: the same mask (TF's gradient does too)"),
    "SigmoidGrad":    tf("SigmoidGrad",  derived="T=in0"),
    "TanhGrad":       tf("TanhGrad",     derived="T=in0"),
    "AddN":           tf("AddN",         derived="N=n_ins T=in0"),
    "Add":            tf("AddV2",        derived="T=in0", also="Add", note="TF1's tf.add and + emit AddV2 or Add"),
    "Sub":            tf("Sub",          derived="T=in0"),
    "Mul":            tf("Mul",          derived="T=in0"),
    "RealDiv":        tf("RealDiv",      derived="T=in0"),
    "FloorDiv":       tf("FloorDiv",     derived="T=in0"),
    "FloorMod":       tf("FloorMod",     derived="T=in0"),
    "Pow":            tf("Pow",          derived="T=in0"),
    "Maximum":        tf("Maximum",      derived="T=in0"),
    "Minimum":        tf("Minimum",      derived="T=in0"),
    "SquaredDifference": tf("SquaredDifference", derived="T=in0"),
    "Equal":          tf("Equal",        derived="T=in0"),
    "NotEqual":       tf("NotEqual",     derived="T=in0"),
    "Less":           tf("Less",         derived="T=in0"),
    "LessEqual":      tf("LessEqual",    derived="T=in0"),
    "Greater":        tf("Greater",      derived="T=in0"),
    "GreaterEqual":   tf("GreaterEqual", derived="T=in0"),
    "LogicalAnd":     tf("LogicalAnd"),
    "LogicalOr":      tf("LogicalOr"),
    "LogicalXor":     none("TF has no op: tf.math.logical_xor(x, y) is LogicalAnd(LogicalOr(x, y), "
                           "LogicalNot(LogicalAnd(x, y)))"),
    "MatMul":         tf("MatMul",       attrs="transpose_a transpose_b", derived="T=in0"),
}

# ---------------------------------------------------------------- reduction_ops


def _reduction(type, derived):
    """A reduction: TF takes its axes as the input reduction_indices, keepdims as keep_dims."""
    return tf(type, attrs="keepdims=keep_dims", inputs="axis=reduction_indices", derived=derived)


_REDUCTION = {
    "BroadcastLike":  none("gradient helper: x broadcast (or its mean spread) to like's shape; TF: Reshape and Tile"),
    "SumToShape":     none("gradient helper: x summed to like's shape; TF: BroadcastGradientArgs, Sum and Reshape"),
    "Sum":            _reduction("Sum", "T=in0 Tidx=int32"),
    "Mean":           _reduction("Mean", "T=in0 Tidx=int32"),
    "Max":            _reduction("Max", "T=in0 Tidx=int32"),
    "Min":            _reduction("Min", "T=in0 Tidx=int32"),
    "Prod":           _reduction("Prod", "T=in0 Tidx=int32"),
    "All":            _reduction("All", "Tidx=int32"),
    "Any":            _reduction("Any", "Tidx=int32"),
    "ProdGrad":       none("gradient helper of Prod; TF: Cumprod (exclusive, both ways), Mul, Reshape and Transpose"),
    "ProdGradGrad":   none("gradient helper of ProdGrad; TF differentiates ProdGrad's composition"),
    "ArgMax":         tf("ArgMax",       attrs="output_type", inputs="axis=dimension", derived="T=in0 Tidx=int32"),
    "ArgMin":         tf("ArgMin",       attrs="output_type", inputs="axis=dimension", derived="T=in0 Tidx=int32"),
}

# ---------------------------------------------------------------- manip_ops
_MANIP = {
    "ConcatV2":       tf("ConcatV2",     inputs="axis", derived="N=n_ins T=in0 Tidx=int32"),
    "ConcatV2Grad":   none("gradient helper of ConcatV2: dy split like the values; TF: ConcatOffset and Slice"),
    "Split":          tf("Split",        attrs="num_split", inputs="axis=split_dim", derived="T=in0"),
    "SplitV":         tf("SplitV",       inputs="size_splits axis=split_dim",
                         derived="num_split=n_outs T=in0 Tlen=int32"),
    "Pack":           tf("Pack",         attrs="axis", derived="N=n_ins T=in0"),
    "Unpack":         tf("Unpack",       attrs="num axis", derived="T=in0"),
    "GatherV2":       tf("GatherV2",     inputs="axis", derived="Tparams=in0 Tindices=in1 Taxis=int32"),
    "StringGather":   tf("GatherV2",     inputs="axis", derived="Tparams=in0 Tindices=in1 Taxis=int32",
                         note="GatherV2 of strings, which pygrad runs in Python"),
    "GatherV2Grad":   none("gradient helper of GatherV2: dy's rows added at the indices; TF: IndexedSlices, "
                           "then UnsortedSegmentSum"),
    "OneHot":         tf("OneHot",       attrs="axis dtype=T", inputs="depth on_value off_value", derived="TI=in0"),
    "Select":         tf("Select",       derived="T=in1"),
    "Tile":           tf("Tile",         inputs="multiples", derived="T=in0 Tmultiples=int32"),
    "TileGrad":       tf("TileGrad",     inputs="multiples", derived="T=in0", ins="input -",
                         note="input 1 gives x's shape only; TF's GraphDefs since version 3 have no TileGrad: its "
                              "gradient of Tile is Reshape and Sum, as export writes it"),
}

# ---------------------------------------------------------------- slice_ops
_SLICE = {
    "StridedSlice":   tf("StridedSlice", attrs="begin_mask end_mask ellipsis_mask new_axis_mask shrink_axis_mask",
                         inputs="begin end strides", derived="T=in0 Index=int32"),
    "StridedSliceGrad": tf("StridedSliceGrad", attrs="begin_mask end_mask ellipsis_mask new_axis_mask shrink_axis_mask",
                           inputs="begin end strides", derived="T=in0 Index=int32", ins="dy shape:shape"),
    "DynamicSlice":   none("a slice at a begin computed at run time (loops' x[i]); TF: Slice or StridedSlice with a "
                           "begin tensor, then Squeeze of the `shrink` dimensions"),
    "DynamicSliceGrad": none("gradient helper of DynamicSlice: dy written at begin in zeros; TF: Pad or "
                             "StridedSliceGrad"),
    "Slice":          tf("Slice",        inputs="begin size", derived="T=in0 Index=int32", ins="input -*",
                         note="size may read sizes of the inputs after the first (TF: Shape, StridedSlice, Pack)"),
}

# ---------------------------------------------------------------- scatter_ops
_SCATTER = {
    "GatherNd":       tf("GatherNd",     derived="Tparams=in0 Tindices=in1"),
    "StringGatherNd": tf("GatherNd",     derived="Tparams=in0 Tindices=in1",
                         note="GatherNd of a string tensor, which pygrad holds in Python"),
    "ScatterNdLike":  tf("ScatterNd",    derived="T=in0 Tindices=in1", ins="updates indices shape:shape"),
    "ScatterNd":      tf("ScatterNd",    inputs="shape", derived="T=in0 Tindices=in1", ins="updates indices"),
    "SegmentSum":     tf("SegmentSum",   derived="T=in0 Tindices=in1",
                         own="num_segments", note="num_segments: pygrad's static count, the last id + 1"),
    "UnsortedSegmentSum": tf("UnsortedSegmentSum", inputs="num_segments",
                             derived="T=in0 Tindices=in1 Tnumsegments=int32"),
    "SegmentGather":  none("gradient helper of SegmentSum: each segment's row gathered back; TF: Gather"),
    "ScatterUpdate":  tf("ScatterUpdate", derived="T=in0 Tindices=in1"),
    "ScatterAdd":     tf("ScatterAdd",   derived="T=in0 Tindices=in1"),
    "ScatterSub":     tf("ScatterSub",   derived="T=in0 Tindices=in1"),
}

# ---------------------------------------------------------------- sequence_ops
_SEQUENCE = {
    "Range":          tf("Range",        attrs="dtype=Tidx", inputs="start delta", derived="limit=dim", ins="-",
                         own="axis", note="limit is dimension `axis` of input 0's shape; constant ranges are Consts"),
    "ComputedRange":  tf("Range",        derived="Tidx=in0", note="a range of values a run computes"),
    "ReverseV2":      tf("ReverseV2",    inputs="axis", derived="T=in0 Tidx=int32"),
    "ReverseSequence": tf("ReverseSequence", attrs="seq_dim batch_dim", derived="T=in0 Tlen=in1"),
    "Pad":            tf("PadV2",        inputs="paddings constant_value=constant_values",
                         derived="T=in0 Tpaddings=int32", own="mode", also="Pad MirrorPad",
                         note="mode 0 with constant_value 0 is TF's Pad; mode 1, 2 are MirrorPad's REFLECT, SYMMETRIC"),
    "PadGrad":        none("gradient helper of Pad: the slice of dy; TF: Slice of dy"),
    "MirrorPadGrad":  tf("MirrorPadGrad", attrs="mode", inputs="paddings", derived="T=in0 Tpaddings=int32",
                         ins="input -", note="mode: pygrad's 1, 2 are TF's REFLECT, SYMMETRIC; input 1 gives x's "
                                             "shape"),
    "PlaceholderWithDefault": tf("PlaceholderWithDefault", attrs="shape", derived="dtype=in0"),
}

# ---------------------------------------------------------------- cumulative_ops
_CUMULATIVE = {
    "Cumsum":         tf("Cumsum",       attrs="exclusive reverse", inputs="axis", derived="T=in0 Tidx=int32"),
    "Cumprod":        tf("Cumprod",      attrs="exclusive reverse", inputs="axis", derived="T=in0 Tidx=int32"),
    "IsNan":          tf("IsNan",        derived="T=in0"),
    "IsInf":          tf("IsInf",        derived="T=in0"),
    "IsFinite":       tf("IsFinite",     derived="T=in0"),
}

# ---------------------------------------------------------------- topk_ops
_TOPK = {
    "TopKV2":         tf("TopKV2",       attrs="sorted", inputs="k", derived="T=in0"),
    "TopKV2Grad":     none("gradient helper of TopKV2: dy scattered at the indices; TF: Reshape, ScatterNd"),
    "TopKV2GradGrad": none("gradient helper of TopKV2Grad: g gathered at the indices; TF: Gather"),
    "InTopKV2":       tf("InTopKV2",     inputs="k", derived="T=in1"),
}

# ---------------------------------------------------------------- nn_ops
_NN = {
    "Softmax":        tf("Softmax",      derived="T=in0", own="axis",
                         note="TF's op takes the last axis; for another, TF1's wrapper transposes around it"),
    "SoftmaxGrad":    none("gradient helper of Softmax: (dy - sum(dy * y)) * y; TF: Mul, Sum, Sub"),
    "LogSoftmax":     tf("LogSoftmax",   derived="T=in0", own="axis",
                         note="TF's op takes the last axis; for another, TF1's wrapper transposes around it"),
    "LogSoftmaxGrad": none("gradient helper of LogSoftmax: dy - exp(y) * sum(dy); TF: Exp, Sum, Mul, Sub"),
    "SoftmaxCrossEntropyWithLogits": tf("SoftmaxCrossEntropyWithLogits", derived="T=in0"),
    "SparseSoftmaxCrossEntropyWithLogits": tf("SparseSoftmaxCrossEntropyWithLogits", derived="T=in0 Tlabels=in1"),
}

# ---------------------------------------------------------------- activation_ops
_ACTIVATION = {
    "LeakyRelu":      tf("LeakyRelu",    attrs="alpha", derived="T=in0"),
    "LeakyReluGrad":  tf("LeakyReluGrad", attrs="alpha", derived="T=in0"),
    "Elu":            tf("Elu",          derived="T=in0"),
    "EluGrad":        tf("EluGrad",      derived="T=in0"),
    "Selu":           tf("Selu",         derived="T=in0"),
    "SeluGrad":       tf("SeluGrad",     derived="T=in0"),
    "Softplus":       tf("Softplus",     derived="T=in0"),
    "SoftplusGrad":   tf("SoftplusGrad", derived="T=in0"),
    "Softsign":       tf("Softsign",     derived="T=in0"),
    "SoftsignGrad":   tf("SoftsignGrad", derived="T=in0"),
    "Relu6":          tf("Relu6",        derived="T=in0"),
    "Relu6Grad":      tf("Relu6Grad",    derived="T=in0"),
}

# ---------------------------------------------------------------- conv_ops
_CONV = {
    "Conv2D":         tf("Conv2D",       attrs="strides padding data_format dilations", derived="T=in0"),
    "Conv2DBackpropInput": tf("Conv2DBackpropInput", attrs="strides padding", derived="T=in1",
                              ins="shape:input_sizes filter out_backprop"),
    "Conv2DBackpropFilter": tf("Conv2DBackpropFilter", attrs="strides padding", derived="T=in0",
                               ins="input shape:filter_sizes out_backprop"),
    "MaxPool":        tf("MaxPool",      attrs="ksize strides padding data_format", derived="T=in0"),
    "MaxPoolGrad":    tf("MaxPoolGrad",  attrs="ksize strides padding", derived="T=in0"),
    "AvgPool":        tf("AvgPool",      attrs="ksize strides padding data_format", derived="T=in0"),
    "AvgPoolGrad":    tf("AvgPoolGrad",  attrs="ksize strides padding", derived="T=in1",
                         ins="shape:orig_input_shape grad"),
}

# ---------------------------------------------------------------- depthwise_ops
_DEPTHWISE = {
    "DepthwiseConv2dNative": tf("DepthwiseConv2dNative", attrs="strides padding data_format dilations",
                                derived="T=in0"),
    "DepthwiseConv2dNativeBackpropInput": tf("DepthwiseConv2dNativeBackpropInput", attrs="strides padding dilations",
                                             derived="T=in1", ins="shape:input_sizes filter out_backprop"),
    "DepthwiseConv2dNativeBackpropFilter": tf("DepthwiseConv2dNativeBackpropFilter", attrs="strides padding dilations",
                                              derived="T=in0", ins="input shape:filter_sizes out_backprop"),
}

# ---------------------------------------------------------------- linalg_ops, numerics
_LINALG = {
    "MatrixInverse":  tf("MatrixInverse", attrs="adjoint", derived="T=in0"),
    "MatrixDeterminant": tf("MatrixDeterminant", derived="T=in0"),
    "CheckNumerics":  tf("CheckNumerics", attrs="message", derived="T=in0"),
}

# ---------------------------------------------------------------- random_ops, candidate_sampling
# Input 0 of these ops is pygrad's stream counter (a variable of the op's own), which TF keeps in
# the kernel; shape may read sizes of the inputs after it, or be None for input 1's shape.
_RANDOM = {
    "RandomUniform":  tf("RandomUniform", attrs="dtype seed seed2", inputs="shape", derived="T=int32", ins="- -*"),
    "RandomStandardNormal": tf("RandomStandardNormal", attrs="dtype seed seed2", inputs="shape", derived="T=int32",
                               ins="- -*"),
    "TruncatedNormal": tf("TruncatedNormal", attrs="dtype seed seed2", inputs="shape", derived="T=int32", ins="- -*"),
    "RandomShuffle":  tf("RandomShuffle", attrs="seed seed2", derived="T=in1", ins="- value"),
    "Multinomial":    tf("Multinomial",  attrs="output_dtype seed seed2", inputs="num_samples", derived="T=in1",
                         ins="- logits"),
    "UniformCandidateSampler": tf("UniformCandidateSampler", attrs="num_true num_sampled unique range_max seed seed2",
                                  ins="- true_classes"),
    "LogUniformCandidateSampler": tf("LogUniformCandidateSampler",
                                     attrs="num_true num_sampled unique range_max seed seed2", ins="- true_classes"),
}

# ---------------------------------------------------------------- state_ops
_STATE = {
    "VariableV2":     tf("VariableV2",   attrs="shape dtype", own="var_index",
                         note="var_index: the variable's slot in the session's store"),
    "Assign":         tf("Assign",       derived="T=in0"),
    "AssignAdd":      tf("AssignAdd",    derived="T=in0"),
    "AssignSub":      tf("AssignSub",    derived="T=in0"),
    "NoOp":           tf("NoOp"),
    "IsVariableInitialized": tf("IsVariableInitialized", derived="dtype=host ref=host", own="variable",
                                also="VarIsInitializedOp",
                                note="the variable is an attribute, TF's input ref (graph_def_compose writes it); "
                                     "VarIsInitializedOp is a resource variable's"),
}

# ---------------------------------------------------------------- training_ops, train/sync_replicas
_TRAINING = {
    "ApplyGradientDescent": tf("ApplyGradientDescent", derived="T=in0"),
    "ApplyMomentum":  tf("ApplyMomentum", attrs="use_nesterov", derived="T=in0"),
    "ApplyAdagrad":   tf("ApplyAdagrad",  derived="T=in0"),
    "ApplyRMSProp":   tf("ApplyRMSProp",  derived="T=in0"),
    "ApplyCenteredRMSProp": tf("ApplyCenteredRMSProp", derived="T=in0",
                               ins="var ms mom lr rho momentum epsilon grad mg"),
    "ApplyAdam":      tf("ApplyAdam",     derived="T=in0"),
    "ApplyAdadelta":  tf("ApplyAdadelta", derived="T=in0"),
    "ApplyProximalGradientDescent": tf("ApplyProximalGradientDescent", derived="T=in0"),
    "ApplyProximalAdagrad": tf("ApplyProximalAdagrad", derived="T=in0"),
    "ApplyFtrl":      tf("ApplyFtrl",     derived="T=in0"),
    "ApplyFtrlV2":    tf("ApplyFtrlV2",   derived="T=in0", ins="var accum linear grad lr l1 l2 lr_power l2_shrinkage"),
    "SparseApplyGradientDescent": none("fused sparse update; TF1's optimizer spells it ScatterAdd of -lr * values"),
    # pygrad's sparse kernels sum repeated rows first, as TF1's optimizers do before these ops
    # (Unique, UnsortedSegmentSum: what export writes before them); TF's kernels apply each row.
    "SparseApplyMomentum": tf("SparseApplyMomentum", attrs="use_nesterov", derived="T=in0 Tindices=in4"),
    "SparseApplyAdagrad": tf("SparseApplyAdagrad", derived="T=in0 Tindices=in4"),
    "SparseApplyRMSProp": tf("SparseApplyRMSProp", derived="T=in0 Tindices=in8"),
    "SparseApplyCenteredRMSProp": tf("SparseApplyCenteredRMSProp", derived="T=in0 Tindices=in8",
                                     ins="var ms mom lr rho momentum epsilon grad indices mg"),
    "SparseApplyAdam": none("fused sparse update; TF1's Adam spells it Assign and ScatterAdd of m, v and var"),
    "SyncReplicasAccumulate": none("SyncReplicasOptimizer's gradient of a step, summed on the ps task (TF: "
                                   "ConditionalAccumulatorApplyGradient, then TakeGradient)"),
    "SyncReplicasToken": none("SyncReplicasOptimizer's token, the global step after the update (TF: the token "
                              "queue's QueueDequeueV2)"),
}

# ---------------------------------------------------------------- control_flow_ops, tensor_array_ops
_CONTROL_FLOW = {
    "LoopVar":        none("a loop region's placeholder for one loop variable; TF: the While body's argument "
                           "(TF1: Enter and Merge)"),
    "If":             tf("If",           derived="Tcond=in0 Tin=ins1: Tout=outs then_branch=regions "
                                                 "else_branch=regions output_shapes=out_shapes",
                         ins="cond input*", own="out",
                         note="TF1's tf.cond emits Switch and Merge, which import lifts into If"),
    "IfInPython":     none("a tf.cond whose branches run Python ops: Python runs the branch (TF: If, or Switch and "
                           "Merge)"),
    "WhileInPython":  none("a tf.while_loop whose condition or body runs Python ops: Python runs the loop (TF: While, "
                           "or Enter, Merge, Switch, Exit)"),
    "While":          tf("While",        derived="T=ins cond=regions body=regions output_shapes=out_shapes",
                         ins="input*", own="n_vars shapes",
                         note="inputs after n_vars are captures (TF: loop-invariant inputs, also outputs); TF1's "
                              "tf.while_loop emits Enter, Merge, Switch, NextIteration, Exit"),
    # pygrad's TensorArray is a value (its flow holds the rows); TF's is a resource with a flow.
    "TensorArrayV3":  tf("TensorArrayV3", attrs="dtype", inputs="size", ins="-*", own="meta element_like",
                         note="size None: input 0's first dimension; the element shape is meta's, with the last "
                              "input's merged in"),
    "TensorArrayWriteV3": tf("TensorArrayWriteV3", derived="T=in2 handle=array", ins="flow_in index value"),
    "TensorArrayGrowWrite": tf("TensorArrayWriteV3", derived="T=in2 handle=array", ins="flow_in index value",
                               note="a write that grows an array whose size is a value of the run"),
    "TensorArrayReadV3": tf("TensorArrayReadV3", derived="dtype=in0 handle=array", ins="flow_in index"),
    "TensorArrayReadGrad": none("gradient helper of a read: zeros with the read row set to dy; TF: TensorArrayGradV3, "
                                "then TensorArrayWriteV3"),
    "TensorArrayCopy": tf("TensorArrayScatterV3", derived="T=in0 handle=array indices=range flow_in=array",
                          ins="value", note="unstack: TF scatters value's rows into the array"),
    "TensorArrayStack": tf("TensorArrayGatherV3", derived="dtype=in0 handle=array indices=range", ins="flow_in",
                           note="stack: TF gathers rows 0, ..., size - 1"),
}

# ---------------------------------------------------------------- summary_ops, logging_ops
_SUMMARY = {
    "ScalarSummary":  tf("ScalarSummary", derived="T=in1"),
    "HistogramSummary": tf("HistogramSummary", derived="T=in1"),
    "ImageSummary":   tf("ImageSummary", attrs="max_images bad_color", derived="T=in1"),
    "AudioSummaryV2": tf("AudioSummaryV2", attrs="max_outputs"),
    "TensorSummaryV2": tf("TensorSummaryV2", derived="T=in1"),
    "MergeSummary":   tf("MergeSummary", derived="N=n_ins"),
    "Print":          tf("Print",        attrs="message first_n summarize", derived="T=in0 U=ins1:",
                         ins="input data*"),
    "PrintV2":        tf("PrintV2",      attrs="output_stream end", derived="input=host", ins="-*",
                         own="parts summarize sep",
                         note="TF1's tf.print formats the inputs with StringFormat (parts, summarize, sep) into "
                              "PrintV2's one string input"),
}

# ---------------------------------------------------------------- data_ops, script_ops, dynamic_shape_ops
# Their Python side (a dataset iterator's functions, py_func's function) is an attribute.
_HOST = {
    "Assert":         tf("Assert",       attrs="summarize", derived="T=ins1:", ins="condition data*",
                         note="pygrad's Assert outputs its condition, which later stages of a run are fed (TF's "
                              "has no output)"),
    "IteratorGetNext": tf("IteratorGetNext", derived="iterator=host output_types=outs output_shapes=out_shapes",
                          own="next_element specs"),
    "IteratorToStringHandle": tf("IteratorToStringHandle", derived="resource_handle=host", own="handle",
                                 note="the handle names the Python iterator, in every session"),
    "IteratorGetNextFromStringHandle": tf("IteratorGetNext", derived="iterator=host output_types=outs "
                                          "output_shapes=out_shapes", ins="-", own="next_element specs",
                                          note="TF: IteratorFromStringHandleV2 of the handle, then IteratorGetNext"),
    "MakeIterator":   tf("MakeIterator", derived="dataset=host iterator=host", ins="-*", own="start",
                         note="the inputs are the tensors the dataset captures"),
    "PyFunc":         tf("PyFunc",       attrs="Tout", derived="Tin=ins token=host", ins="input*", own="func",
                         also="PyFuncStateless", note="TF1's py_func(stateful=False) is PyFuncStateless; pygrad "
                                                      "runs both alike"),
    # Queues and readers (ops/queue_ops.py, ops/reader_ops.py): the queue or reader is a Python
    # object the op names, where TF has a resource handle input (FIFOQueueV2, TextLineReaderV2, ...).
    "QueueEnqueueV2": tf("QueueEnqueueV2", derived="handle=host Tcomponents=ins", ins="components*", own="queue keep",
                         note="keep (tf.train.maybe_batch's keep_input) is a last bool input; TF: cond"),
    "QueueEnqueueManyV2": tf("QueueEnqueueManyV2", derived="handle=host Tcomponents=ins", ins="components*",
                             own="queue keep", note="keep: a last bool input; TF: cond or DynamicPartition"),
    "QueueDequeueV2": tf("QueueDequeueV2", derived="handle=host component_types=outs", own="queue"),
    "QueueDequeueManyV2": tf("QueueDequeueManyV2", inputs="n", derived="handle=host component_types=outs",
                             own="queue"),
    "QueueDequeueUpToV2": tf("QueueDequeueUpToV2", inputs="n", derived="handle=host component_types=outs",
                             own="queue"),
    "QueueCloseV2":   tf("QueueCloseV2", attrs="cancel_pending_enqueues", derived="handle=host", own="queue"),
    "QueueSizeV2":    tf("QueueSizeV2",  derived="handle=host", own="queue"),
    "QueueIsClosedV2": tf("QueueIsClosedV2", derived="handle=host", own="queue"),
    "CountUpTo":      tf("CountUpTo",    attrs="limit", derived="ref=host T=out0", own="read increment",
                         note="the counter variable is read and increased by runs of `read` and `increment`"),
    "ReaderReadV2":   tf("ReaderReadV2", derived="reader_handle=host queue_handle=host", own="reader queue"),
    "ReaderReadUpToV2": tf("ReaderReadUpToV2", inputs="num_records", derived="reader_handle=host queue_handle=host",
                             own="reader queue"),
    "ReaderNumRecordsProducedV2": tf("ReaderNumRecordsProducedV2", derived="reader_handle=host", own="reader"),
    "ReaderNumWorkUnitsCompletedV2": tf("ReaderNumWorkUnitsCompletedV2", derived="reader_handle=host",
                                        own="reader"),
    "ReaderResetV2":  tf("ReaderResetV2", derived="reader_handle=host", own="reader"),
    "Where":          tf("Where",        derived="T=in0"),
    "Unique":         tf("Unique",       attrs="out_idx", derived="T=in0"),
    "ResizeBilinear": tf("ResizeBilinear", attrs="align_corners half_pixel_centers", derived="T=in0"),
    "ResizeNearestNeighbor": tf("ResizeNearestNeighbor", attrs="align_corners half_pixel_centers", derived="T=in0"),
    "ResizeBicubic":  tf("ResizeBicubic", attrs="align_corners half_pixel_centers", derived="T=in0"),
    "ResizeBilinearGrad": tf("ResizeBilinearGrad", attrs="align_corners half_pixel_centers", derived="T=in1"),
    "ResizeNearestNeighborGrad": tf("ResizeNearestNeighborGrad", attrs="align_corners half_pixel_centers",
                                    derived="T=in0"),
    "ResizeBicubicGrad": tf("ResizeBicubicGrad", attrs="align_corners half_pixel_centers", derived="T=in1"),
    "DecodeJpeg":     tf("DecodeJpeg",   attrs="channels"),
    "DecodePng":      tf("DecodePng",    attrs="channels dtype"),
    "DecodeImage":    tf("DecodeImage",  attrs="channels dtype"),
    "EncodePng":      tf("EncodePng",    attrs="compression", derived="T=in0"),
    "EncodeJpeg":     tf("EncodeJpeg",   attrs="quality progressive optimize_for_size=optimize_size chroma_downsampling"),
}

# ---------------------------------------------------------------- parsing_ops, decode_ops, io_ops
_PARSING = {
    "ParseExampleV2": tf("ParseExampleV2", attrs="num_sparse sparse_types ragged_value_types ragged_split_types "
                                                 "dense_shapes",
                         derived="Tdense=ins1: names=host sparse_keys=host dense_keys=host ragged_keys=host",
                         own="names sparse_keys dense_keys ragged_keys", ins="serialized dense_defaults*",
                         note="tf.parse_single_example is ParseExampleV2 of a scalar, as TF 2's; the keys and "
                              "names, string inputs in TF, are attributes the parse reads"),
    "ParseSequenceExampleV2": tf(
        "ParseSequenceExampleV2",
        attrs="context_sparse_types feature_list_dense_types feature_list_sparse_types context_dense_shapes "
              "feature_list_dense_shapes",
        derived="Tcontext_dense=ins1: debug_name=host context_sparse_keys=host context_dense_keys=host "
                "context_ragged_keys=host feature_list_sparse_keys=host feature_list_dense_keys=host "
                "feature_list_ragged_keys=host feature_list_dense_missing_assumed_empty=host",
        own="names context_sparse_keys context_dense_keys feature_list_sparse_keys feature_list_dense_keys "
            "feature_list_dense_missing_assumed_empty", ins="serialized context_dense_defaults*",
        note="the keys, names and flags, string and bool inputs in TF, are attributes the parse reads; no ragged "
             "features"),
    "DecodeRaw":      tf("DecodeRaw",    attrs="out_type little_endian"),
    "StringToNumber": tf("StringToNumber", attrs="out_type"),
    "DecodeCSV":      tf("DecodeCSV",    attrs="field_delim use_quote_delim na_value select_cols",
                         derived="OUT_TYPE=ins1:", ins="records record_defaults*"),
    "ReadFile":       tf("ReadFile"),
    "WriteFile":      tf("WriteFile"),
    "MatchingFiles":  tf("MatchingFiles"),
}

# ---------------------------------------------------------------- sparse_ops, sparse_math, sparse_embedding, string_split, lookup_ops
_SPARSE = {
    "SparseToDense":  tf("SparseToDense", attrs="validate_indices", derived="T=in2 Tindices=in0"),
    "SparseReorder":  tf("SparseReorder", derived="T=in1"),
    "InvertPermutation": tf("InvertPermutation", derived="T=in0"),
    "SparseReshape":  tf("SparseReshape"),
    "SparseConcat":   tf("SparseConcat", attrs="concat_dim N", derived="T=inN", ins="indices* values* shapes*",
                         note="inputs: N indices, then N values, then N shapes"),
    "SparseAdd":      tf("SparseAdd",    derived="T=in1 Treal=in6"),
    "SparseAddGrad":  tf("SparseAddGrad", derived="T=in0"),
    "SparseTensorDenseAdd": tf("SparseTensorDenseAdd", derived="T=in1 Tindices=in0"),
    "SparseTensorDenseMatMul": tf("SparseTensorDenseMatMul", attrs="adjoint_a adjoint_b", derived="T=in1 Tindices=in0"),
    "SparseDenseCwiseMul": tf("SparseDenseCwiseMul", derived="T=in1"),
    "SparseDenseCwiseDiv": tf("SparseDenseCwiseDiv", derived="T=in1"),
    "SparseReduceSum": tf("SparseReduceSum", attrs="keep_dims", derived="T=in1"),
    "SparseFillEmptyRows": tf("SparseFillEmptyRows", derived="T=in1"),
    "SparseFillEmptyRowsGrad": tf("SparseFillEmptyRowsGrad", derived="T=in1"),
    **{f"SparseSegment{k}": tf(f"SparseSegment{k}", derived="T=in0 Tidx=in1 Tsegmentids=in2")
       for k in ("Sum", "Mean", "SqrtN")},
    **{f"SparseSegment{k}WithNumSegments": tf(f"SparseSegment{k}WithNumSegments",
                                              derived="T=in0 Tidx=in1 Tsegmentids=in2 Tnumsegments=in3")
       for k in ("Sum", "Mean", "SqrtN")},
    **{f"SparseSegment{k}Grad": tf(f"SparseSegment{k}Grad", derived="T=in0 Tidx=in1 Tsegmentids=in2")
       for k in ("Sum", "Mean", "SqrtN")},
    "AddSparseToTensorsMap": tf("AddSparseToTensorsMap", derived="T=in1 shared_name=host",
                                ins="sparse_indices sparse_values sparse_shape -", own="tensors_map",
                                note="the last input, whether to store (TF1's batch wraps the op in a cond on it)"),
    "AddManySparseToTensorsMap": tf("AddManySparseToTensorsMap", derived="T=in1 shared_name=host",
                                    ins="sparse_indices sparse_values sparse_shape -", own="tensors_map",
                                    note="the last input, which rows to store"),
    "TakeManySparseFromTensorsMap": tf("TakeManySparseFromTensorsMap", attrs="dtype", derived="shared_name=host",
                                       own="rank tensors_map", note="rank: TF's is the output's static shape"),
    "StringSplit":    tf("StringSplit",  attrs="skip_empty"),
    "InitializeTableV2": tf("InitializeTableV2", derived="table_handle=host Tkey=in0 Tval=in1", ins="keys values",
                            own="table", note="the table, a resource handle in TF, is the Python object it fills"),
    "InitializeTableFromTextFileV2": tf("InitializeTableFromTextFileV2",
                                        attrs="key_index value_index vocab_size delimiter",
                                        derived="table_handle=host", ins="filename", own="table"),
    "LookupTableFindV2": tf("LookupTableFindV2", derived="table_handle=host Tin=in0 Tout=in1",
                            ins="keys default_value", own="table"),
    "LookupTableSizeV2": tf("LookupTableSizeV2", derived="table_handle=host", own="table"),
    "StringSplitV2":  tf("StringSplitV2", attrs="maxsplit"),
    "SparseCross":    tf("SparseCross",  attrs="N hashed_output num_buckets hash_key sparse_types dense_types "
                                               "out_type internal_type", ins="indices* values* shapes* dense_inputs*",
                         note="inputs: N indices, then N values, then N shapes, then the dense inputs"),
}

# ---------------------------------------------------------------- string_ops, string_hash
_STRING = {
    "AsString":       tf("AsString",     attrs="precision scientific shortest width fill", derived="T=in0"),
    "StringJoin":     tf("StringJoin",   attrs="separator", derived="N=n_ins"),
    "StringLength":   tf("StringLength", attrs="unit"),
    "Substr":         tf("Substr",       attrs="unit", derived="T=in1"),
    "StringStrip":    tf("StringStrip"),
    "StringLower":    tf("StringLower",  attrs="encoding"),
    "StringUpper":    tf("StringUpper",  attrs="encoding"),
    "RegexReplace":   tf("RegexReplace", attrs="replace_global"),
    "StaticRegexReplace": tf("StaticRegexReplace", attrs="pattern rewrite replace_global"),
    "RegexFullMatch": tf("RegexFullMatch"),
    "StaticRegexFullMatch": tf("StaticRegexFullMatch", attrs="pattern"),
    "ReduceJoin":     tf("ReduceJoin",   attrs="keep_dims separator", inputs="axis=reduction_indices"),
    "StringToHashBucketFast": tf("StringToHashBucketFast", attrs="num_buckets"),
    "StringToHashBucketStrong": tf("StringToHashBucketStrong", attrs="num_buckets key"),
    "StringToHashBucket": tf("StringToHashBucket", attrs="num_buckets"),
    "Fingerprint":    tf("Fingerprint",  derived="T=in0"),
    "StringFormat":   tf("StringFormat", attrs="template placeholder summarize", derived="T=ins"),
}

# ---------------------------------------------------------------- train
_TRAIN = {
    "ClipByGlobalNorm": none("fused tf.clip_by_global_norm: the global norm and every clipped tensor in one op; "
                             "TF: L2Loss, AddN, Sqrt, Minimum, Mul"),
}

FAMILIES = (_ARRAY, _MATH, _REDUCTION, _MANIP, _SLICE, _SCATTER, _SEQUENCE, _CUMULATIVE, _TOPK, _NN, _ACTIVATION,
            _CONV, _DEPTHWISE, _LINALG, _RANDOM, _STATE, _TRAINING, _CONTROL_FLOW, _SUMMARY, _HOST, _PARSING, _SPARSE,
            _STRING, _TRAIN)
TABLE = {t: entry for family in FAMILIES for t, entry in family.items()}
