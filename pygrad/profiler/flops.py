"""The floating-point operations TF's profiler counts for a node: the "flops" statistics TF registers
(ops.RegisterStatistics in tensorflow/python/profiler/internal/flops_registry.py and, for Conv2D,
Conv3D, DepthwiseConv2dNative, Dilation2D and BiasAdd, tensorflow/python/ops/nn_ops.py), with
their formulas, on a NodeDef of TF's GraphDef and the static shapes of the graph's tensors.

An op type not listed has no statistic and counts nothing, as in TF. An attribute the NodeDef leaves
out has its OpDef's default (data_format NHWC, transpose_a false). A shape the formula needs
that is not fully known raises ValueError, as TF's assert_is_fully_defined does (TF's profiler
then counts the node as one without flops statistics).
"""


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _unary(per_element=1):
    return lambda node, shape: _numel(shape(node.input[0])) * per_element


def _binary(per_element=1):  # counted on the output (broadcasting)
    return lambda node, shape: _numel(shape(node.name)) * per_element


def _reduction(reduce_flops=1, finalize_flops=0):
    def count(node, shape):
        return _numel(shape(node.input[0])) * reduce_flops + _numel(shape(node.name)) * (finalize_flops - reduce_flops)
    return count


def _nhwc(node):  # (pygrad's GraphDef leaves out attributes at their OpDef default, NHWC here)
    if "data_format" in node.attr and node.attr["data_format"].s != b"NHWC":
        raise ValueError("Only NHWC format is supported in flops computations")


def _pool(node, shape):
    _nhwc(node)
    return _numel(node.attr["ksize"].list.i) * _numel(shape(node.name))


def _avg_pool_grad(node, shape):
    _nhwc(node)
    return _numel(node.attr["ksize"].list.i) * _numel(shape(node.input[1])) * 2


def _max_pool_grad(node, shape):
    _nhwc(node)
    orig_out = _numel(shape(node.input[1]))
    return _numel(node.attr["ksize"].list.i) * orig_out + orig_out


def _conv2d_backprop_input(node, shape):
    _nhwc(node)
    out, kernel, strides = shape(node.name), shape(node.input[1]), node.attr["strides"].list.i
    return 2 * _numel(out) * _numel(kernel) / (out[-1] * strides[1] * strides[2])


def _conv2d_backprop_filter(node, shape):
    _nhwc(node)
    image, kernel, strides = shape(node.input[0]), shape(node.name), node.attr["strides"].list.i
    return 2 * _numel(image) * _numel(kernel) / (image[-1] * strides[1] * strides[2])


def _add_n(node, shape):
    if not node.input:
        return 0
    return _numel(shape(node.input[0])) * (len(node.input) - 1)


def _matmul(node, shape, batch=False):
    a = shape(node.input[0])
    if batch:
        k = a[-2] if node.attr["transpose_a"].b else a[-1]
    else:
        k = a[0] if node.attr["transpose_a"].b else a[1]
    return k * _numel(shape(node.name)) * 2


def _conv2d(node, shape):
    shape(node.input[0])
    f = shape(node.input[1])
    return _numel(shape(node.name)) * f[2] * f[0] * f[1] * 2


def _conv3d(node, shape):
    shape(node.input[0])
    f = shape(node.input[1])
    return _numel(shape(node.name)) * f[3] * f[0] * f[1] * f[2] * 2


def _window2d(node, shape):  # DepthwiseConv2dNative, Dilation2D
    shape(node.input[0])
    f = shape(node.input[1])
    return _numel(shape(node.name)) * f[0] * f[1] * 2


FLOPS = {
    "Reciprocal": _unary(), "Square": _unary(), "Rsqrt": _unary(2), "Log": _unary(), "Neg": _unary(),
    "AssignSub": _unary(), "AssignAdd": _unary(), "Softmax": _unary(5),
    "L2Loss": lambda node, shape: _numel(shape(node.input[0])) * 3 - 1,
    "Add": _binary(), "AddV2": _binary(), "Sub": _binary(), "Mul": _binary(), "RealDiv": _binary(),
    "Maximum": _binary(), "Minimum": _binary(), "Pow": _binary(), "RsqrtGrad": _binary(4),
    "GreaterEqual": _binary(), "Greater": _binary(), "LessEqual": _binary(), "Less": _binary(), "Equal": _binary(),
    "NotEqual": _binary(), "SquaredDifference": _binary(2),
    "Mean": _reduction(1, 1), "Sum": _reduction(), "ArgMax": _reduction(), "ArgMin": _reduction(),
    "BiasAddGrad": _reduction(),
    "AvgPool": _pool, "MaxPool": _pool, "AvgPoolGrad": _avg_pool_grad, "MaxPoolGrad": _max_pool_grad,
    "Conv2DBackpropInput": _conv2d_backprop_input, "Conv2DBackpropFilter": _conv2d_backprop_filter,
    "AddN": _add_n, "MatMul": _matmul,
    "BatchMatMul": lambda node, shape: _matmul(node, shape, batch=True),
    "BatchMatMulV2": lambda node, shape: _matmul(node, shape, batch=True),
    "BatchMatMulV3": lambda node, shape: _matmul(node, shape, batch=True),
    "Conv2D": _conv2d, "Conv3D": _conv3d, "DepthwiseConv2dNative": _window2d, "Dilation2D": _window2d,
    "BiasAdd": lambda node, shape: _numel(shape(node.input[0])),
}


def float_ops(node, shape):
    """The flops TF's profiler logs for node (a NodeDef); shape(name) gives the fully known dims of
    a tensor named as a NodeDef input ("op", "op:1"), or raises ValueError. 0 for an op type TF
    registers no statistic for."""
    count = FLOPS.get(node.op)
    return int(count(node, shape)) if count is not None else 0
