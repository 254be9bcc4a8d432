"""Convolution and pooling (tf.nn.conv2d, atrous_conv2d, max_pool, avg_pool), NHWC, with their
gradients. A dilated conv2d is composed of pad, reshapes, transposes and one plain convolution.

Padding follows TensorFlow. VALID: no padding, out = ceil((in - k + 1) / stride). SAME:
out = ceil(in / stride), pad_total = max((out - 1) * stride + k - in, 0), pad_total // 2 before
(top/left) and the rest after (bottom/right). The kernels take the stride and the padding before;
native_attrs computes it from the concrete shapes.

TF's gradient ops take the forward input's or the filter's shape as an int vector (input_sizes,
filter_sizes). Here they take the tensor itself, read for its shape only (shape_only_inputs),
so the shapes stay static where the forward's are, batch None included.
"""
import numbers

from pygrad.graph import Tensor, get_default_graph, unwrap
from pygrad.ops.array_ops import constant_value, convert_n_same_dtype, convert_to_tensor, reshape, transpose
from pygrad.ops.manip_ops import tile
from pygrad.ops.sequence_ops import pad
from pygrad.ops.slice_ops import strided_slice
from pygrad.ops.math_ops import FLOATS, check_dtype
from pygrad.registry import OpDef, RuleError, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

_PADDINGS = ("SAME", "VALID")


# ---------------------------------------------------------------- windows, shared by conv and pool


def _check_window_attrs(strides, padding, data_format, ksize=None):
    if data_format != "NHWC":
        fail(f"data_format must be 'NHWC', got {data_format!r} (pygrad's CPU kernels are NHWC only)")
    if not isinstance(padding, str) or padding not in _PADDINGS:
        fail(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    for what, v in (("strides", strides), ("ksize", ksize)):
        if v is None and what == "ksize":
            continue
        if len(v) != 4 or v[0] != 1 or v[3] != 1:
            fail(f"{what} must be [1, {what[0]}h, {what[0]}w, 1] (none over the batch or the channels), got {list(v)}")
        if v[1] < 1 or v[2] < 1:
            fail(f"{what} must be positive, got {list(v)}")


def _out_size(size, k, stride, padding):
    """The output length of one spatial dimension (None if size is)."""
    if padding == "SAME":
        return None if size is None else -(-size // stride)
    if size is None or k is None:
        return None
    return -(-(size - k + 1) // stride)


def _pad_before(size, k, stride, padding):
    """TF's padding at the top (left) of one spatial dimension."""
    if padding == "VALID":
        return 0
    out = -(-size // stride)
    return max((out - 1) * stride + k - size, 0) // 2


def _window_out(x, k, strides, padding, what):
    """[N, OH, OW] of a window of size k [kh, kw] moved over x [N, H, W, C] (static, None-aware)."""
    _, h, w, _ = x.shape.dims or (None,) * 4
    for size, ki, dim in ((h, k[0], "height"), (w, k[1], "width")):
        if padding == "VALID" and size is not None and ki is not None and size < ki:
            fail(f"with VALID padding the {what} must fit in the input, got input: {x.shape} and {what} {dim} "
                 f"{ki} ({size} < {ki})")
    return [x.shape.dims[0] if x.shape.dims else None,
            _out_size(h, k[0], strides[1], padding), _out_size(w, k[1], strides[2], padding)]


def _check_input(x, what="input"):
    check_dtype(x, FLOATS, what)
    if x.shape.ndims not in (None, 4):
        fail(f"{what} must be 4-D [batch, height, width, channels], got {what}: {x.shape}")


def _check_grad_input(dy, expected, dtype, what):
    """dy has the dtype and (compatibly) the shape of the forward's output; returns the merged shape."""
    if dy.dtype != dtype:
        fail_dtype(f"dy must have the {what}'s dtype {dtype.name}, got {dy.dtype.name}")
    if not dy.shape.is_compatible_with(expected):
        fail(f"dy must have the forward output's shape {expected}, got dy: {dy.shape}")
    return expected.merge_with(dy.shape)


def _with_batch(shape, batch):
    """shape [N, H, W, C] with N filled in from batch when N is unknown."""
    if shape.dims is None:
        return shape
    return TensorShape([shape.dims[0] if shape.dims[0] is not None else batch] + list(shape.dims[1:]))


def _hw4(value):
    """An int, [h, w] or [1, h, w, 1] as (1, h, w, 1); other lengths are left to the shape rule."""
    if isinstance(value, numbers.Integral):
        return (1, int(value), int(value), 1)
    v = tuple(int(d) for d in value)
    if len(v) == 1:
        return (1, v[0], v[0], 1)
    return (1, v[0], v[1], 1) if len(v) == 2 else v


def _padding(padding):
    return padding.upper() if isinstance(padding, str) else padding


# ---------------------------------------------------------------- conv2d
# x [N, H, W, C] * filter [KH, KW, C, O] -> y [N, OH, OW, O]. The gradients are the backprop ops,
# and each of those is linear in each input, so their own gradients are again convolutions
# (TF nn_grad.py): all three ops form one closed family.


def _conv_shape(x, f, strides, padding, data_format="NHWC", dilations=(1, 1, 1, 1)):
    """The output shape of conv2d(x, f), after checking dtypes, ranks, channels and attributes."""
    _check_window_attrs(strides, padding, data_format)
    if len(dilations) != 4 or any(d != 1 for d in dilations):
        fail(f"dilations other than 1 are not supported, got {list(dilations)}")
    _check_input(x)
    if f.dtype != x.dtype:
        fail_dtype(f"input and filter must have one dtype, got input: {x.dtype.name} and filter: {f.dtype.name}")
    if f.shape.ndims not in (None, 4):
        fail(f"filter must be 4-D [height, width, in_channels, out_channels], got filter: {f.shape}")
    kh, kw, ci, co = f.shape.dims or (None,) * 4
    c = x.shape.dims[3] if x.shape.dims else None
    if c is not None and ci is not None and c != ci:
        fail(f"input depth must equal filter in_channels, got input: {x.shape} and filter: {f.shape} ({c} != {ci})")
    if 0 in (kh, kw):
        fail(f"filter height and width must be positive, got filter: {f.shape}")
    return TensorShape(_window_out(x, (kh, kw), strides, padding, "filter") + [co])


def _conv_attrs(attrs, ins, outs):
    """Kernel attributes from the forward input (ins[0]) and filter (ins[1]) of every conv op."""
    _, h, w, _ = ins[0].shape.dims
    kh, kw = ins[1].shape.dims[:2]
    s, p = attrs["strides"], attrs["padding"]
    return {"strides": [s[1], s[2]], "pad_top": _pad_before(h, kh, s[1], p), "pad_left": _pad_before(w, kw, s[2], p)}


def _conv_grad_attrs(op):
    return {"strides": op.attrs["strides"], "padding": op.attrs["padding"]}


Conv2D = OpDef("Conv2D", kernel="conv2d_fwd")


@Conv2D.shape
def _(x, f, *, strides, padding, data_format, dilations):
    return Spec(x.dtype, _conv_shape(x, f, strides, padding, data_format, dilations))


Conv2D.native_attrs(_conv_attrs)


@Conv2D.grad
def _(op, dy):
    x, f = op.inputs
    a = _conv_grad_attrs(op)
    return [Conv2DBackpropInput(x, f, dy, **a), Conv2DBackpropFilter(x, f, dy, **a)]


# dx = Conv2DBackpropInput(x_like, filter, dy): x_like gives the input's shape only.
Conv2DBackpropInput = OpDef("Conv2DBackpropInput", kernel="conv2d_bwd_input", shape_only_inputs={0})


@Conv2DBackpropInput.shape
def _(x_like, f, dy, *, strides, padding):
    y = _check_grad_input(dy, _conv_shape(x_like, f, strides, padding), x_like.dtype, "input")
    return Spec(x_like.dtype, _with_batch(x_like.shape, y.dims[0] if y.dims else None))


Conv2DBackpropInput.native_attrs(_conv_attrs)


@Conv2DBackpropInput.grad
def _(op, g):
    # dx is bilinear in (filter, dy): <g, dx> = <conv2d(g, filter), dy>.
    x_like, f, dy = op.inputs
    a = _conv_grad_attrs(op)
    return [None, Conv2DBackpropFilter(g, f, dy, **a), Conv2D(g, f, data_format="NHWC", dilations=(1, 1, 1, 1), **a)]


# dfilter = Conv2DBackpropFilter(x, filter_like, dy): filter_like gives the filter's shape only.
Conv2DBackpropFilter = OpDef("Conv2DBackpropFilter", kernel="conv2d_bwd_filter", shape_only_inputs={1})


@Conv2DBackpropFilter.shape
def _(x, f_like, dy, *, strides, padding):
    _check_grad_input(dy, _conv_shape(x, f_like, strides, padding), x.dtype, "input")
    return Spec(x.dtype, f_like.shape)


Conv2DBackpropFilter.native_attrs(_conv_attrs)


@Conv2DBackpropFilter.grad
def _(op, g):
    # dfilter is bilinear in (x, dy): <g, dfilter> = <conv2d(x, g), dy>.
    x, f_like, dy = op.inputs
    a = _conv_grad_attrs(op)
    return [Conv2DBackpropInput(x, g, dy, **a), None, Conv2D(x, g, data_format="NHWC", dilations=(1, 1, 1, 1), **a)]


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True, data_format="NHWC",  # noqa: A002
           dilations=(1, 1, 1, 1), name=None, filters=None):
    """2-D convolution of input [batch, height, width, in_channels] with filter [height, width,
    in_channels, out_channels]; strides and dilations as [1, h, w, 1] (or an int, or [h, w]);
    padding 'SAME' or 'VALID'. NHWC only. Dilations above 1 are composed (_dilated_conv2d)."""
    if filter is not None and filters is not None:
        raise Conv2D.error("conv2d: pass filter or filters, not both", name)
    filter = filters if filter is None else filter  # noqa: A001
    if filter is None or strides is None or padding is None:
        raise Conv2D.error("conv2d() needs filter, strides and padding", name, TypeError)
    x, f = convert_n_same_dtype([input, filter], "Conv2D")
    strides, padding, dilations = _hw4(strides), _padding(padding), _hw4(dilations)
    if len(dilations) == 4 and dilations[1:3] != (1, 1) and (dilations[0], dilations[3]) == (1, 1):
        return _dilated_conv2d(x, f, strides, padding, data_format, dilations[1:3], name or "Conv2D")
    return Conv2D(x, f, strides=strides, padding=padding, data_format=data_format, dilations=dilations,
                  name=name or "Conv2D")


def atrous_conv2d(value, filters, rate, padding, name=None):
    """conv2d with dilations [1, rate, rate, 1] and strides 1 (tf.nn.atrous_conv2d)."""
    return conv2d(value, filters, strides=1, padding=padding, dilations=rate, name=name or "atrous_conv2d")


def _dilated_conv2d(x, f, strides, padding, data_format, rates, name):
    """conv2d with dilations (rh, rw), composed as TF's space_to_batch route: padded as TF pads the
    dilated window ((k - 1) * r + 1), each of the r * r phases (rows i with i % rh fixed, columns
    likewise) moved into the batch, one VALID convolution with the undilated filter, the phases
    interleaved back and the stride taken. The input's height, width and channels must be known."""
    if data_format != "NHWC" or padding not in _PADDINGS or min(rates) < 1 or len(strides) != 4 or \
            min(strides) < 1 or (strides[0], strides[3]) != (1, 1):
        raise Conv2D.error(f"data_format must be 'NHWC', padding 'SAME' or 'VALID', strides [1, sh, sw, 1] and "
                           f"dilations [1, dh, dw, 1], all positive; got data_format {data_format!r}, padding "
                           f"{padding!r}, strides {list(strides)}, dilations {[1, *rates, 1]}", name)
    dims = x.shape.as_list() if x.shape.ndims == 4 else [None] * 4
    fdims = f.shape.as_list() if f.shape.ndims == 4 else [None] * 4
    if None in dims[1:] or None in fdims:
        raise Conv2D.error(f"with dilations {[1, *rates, 1]} the input must be 4-D with its height, width and "
                           f"channels known when the graph is built, and the filter's shape known; got input: "
                           f"{x.shape} and filter: {f.shape}", name)
    if dims[3] != fdims[2]:
        raise Conv2D.error(f"input depth must equal filter in_channels, got input: {x.shape} and filter: {f.shape} "
                           f"({dims[3]} != {fdims[2]})", name)
    pads, phases, outs = [[0, 0]], [], []
    for size, k, s, r in zip(dims[1:3], fdims[:2], strides[1:3], rates):
        window = (k - 1) * r + 1
        before = _pad_before(size, window, s, padding)
        # the stride-1 output's length, after TF's padding for this stride
        full = size - window + 1 + (max((-(-size // s) - 1) * s + window - size, 0) if padding == "SAME" else 0)
        if full < 1:
            raise Conv2D.error(f"with VALID padding the dilated filter ({window} wide: {k} taps, dilation {r}) "
                               f"must fit in the input, got input: {x.shape}", name)
        phase = k - 1 + -(-full // r)  # each phase's length: r of them cover the padded input
        pads.append([before, phase * r - size - before])
        phases.append(phase)
        outs.append(full)
    (ph, pw), (rh, rw), c = phases, rates, dims[3]
    qh, qw, o = ph - fdims[0] + 1, pw - fdims[1] + 1, fdims[3]
    with get_default_graph().name_scope(name) as scope:
        x = reshape(pad(x, pads + [[0, 0]]), [-1, ph, rh, pw, rw, c])
        x = reshape(transpose(x, [2, 4, 0, 1, 3, 5]), [-1, ph, pw, c])
        y = Conv2D(x, f, strides=(1, 1, 1, 1), padding="VALID", data_format="NHWC", dilations=(1, 1, 1, 1))
        y = transpose(reshape(y, [rh, rw, -1, qh, qw, o]), [2, 3, 0, 4, 1, 5])
        y = reshape(y, [-1, qh * rh, qw * rw, o])
        return strided_slice(y, [0, 0, 0, 0], [0, outs[0], outs[1], 0], [1, strides[1], strides[2], 1],
                             begin_mask=9, end_mask=9, name=scope)


def _output_dims(output_shape):
    """The 4 entries of conv2d_transpose's output_shape: ints, or None where only a run knows them
    (a list holding tensors, or tf.stack of them)."""
    value = unwrap(output_shape)
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is not None:
            return [int(d) for d in known.reshape(-1)]
        if value.op.type != "Pack":
            return None if value.shape.ndims != 1 else [None] * (value.shape[0].value or 0)
        value = value.op.inputs
    dims = []
    for d in value:
        known = constant_value(d) if isinstance(unwrap(d), Tensor) else d
        dims.append(None if known is None else int(known))
    return dims


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NHWC", name=None, input=None, filters=None, dilations=None):  # noqa: A002
    """The transpose (gradient) of conv2d: value [batch, height, width, in_channels] and filter
    [height, width, output_channels, in_channels] give [batch, out_height, out_width,
    output_channels] = output_shape, the shape of a conv2d input that conv2d(., filter, strides,
    padding) maps to value's shape. TF's op: Conv2DBackpropInput. Its gradients are conv2d (for
    value) and the conv2d filter gradient. output_shape's height, width and channels must be known
    when the graph is built; its batch is value's."""
    name = name or "conv2d_transpose"
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise Conv2DBackpropInput.error("conv2d_transpose() needs value, filter, output_shape and strides", name,
                                        TypeError)
    if data_format != "NHWC":
        raise Conv2DBackpropInput.error(f"data_format must be 'NHWC', got {data_format!r} (pygrad's CPU kernels "
                                        f"are NHWC only)", name)
    if dilations is not None and any(d != 1 for d in _hw4(dilations)):
        raise Conv2DBackpropInput.error(f"dilations other than 1 are not supported, got {dilations}", name)
    x, f = convert_n_same_dtype([value, filter], "Conv2DBackpropInput")
    dims = _output_dims(output_shape)
    if dims is None or len(dims) != 4:
        raise Conv2DBackpropInput.error(f"output_shape must have length 4, got {output_shape!r}", name)
    if any(d is None for d in dims[1:]):
        raise Conv2DBackpropInput.error(f"output_shape's height, width and channels must be known when the graph "
                                        f"is built, got {dims}", name)
    if x.shape.ndims not in (None, 4) or f.shape.ndims not in (None, 4):
        raise Conv2DBackpropInput.error(f"value and filter must be 4-D, got value: {x.shape} and filter: "
                                        f"{f.shape}", name)
    if f.shape.ndims == 4 and x.shape.ndims == 4 and None not in (f.shape[3].value, x.shape[3].value) and \
            f.shape[3].value != x.shape[3].value:
        raise Conv2DBackpropInput.error(f"input channels does not match filter's input channels, "
                                        f"{x.shape[3].value} != {f.shape[3].value} (value: {x.shape}, filter: "
                                        f"{f.shape})", name)
    if f.shape.ndims == 4 and f.shape[2].value is not None and f.shape[2].value != dims[3]:
        raise Conv2DBackpropInput.error(f"output_shape does not match filter's output channels, {dims[3]} != "
                                        f"{f.shape[2].value} (output_shape: {dims}, filter: {f.shape})", name)
    batch = x.shape[0].value if x.shape.ndims == 4 else None
    if dims[0] is not None and batch is not None and dims[0] != batch:
        raise Conv2DBackpropInput.error(f"output_shape's batch {dims[0]} must be value's, got value: {x.shape}", name)
    # A tensor of the output's shape (batch from value), read for its shape only: never computed.
    corner = strided_slice(x, [0, 0, 0, 0], [0, 1, 1, 1], end_mask=1)
    x_like = tile(corner, [1] + dims[1:])
    s, p = _hw4(strides), _padding(padding)
    expected = _conv_expected(x_like, f, s, p, name)
    if x.shape.ndims == 4 and not expected.is_compatible_with(x.shape):
        raise Conv2DBackpropInput.error(f"conv2d of output_shape {dims} with filter {f.shape}, strides {list(s)} "
                                        f"and padding {p} gives {expected}, not value's shape {x.shape}", name)
    return Conv2DBackpropInput(x_like, f, x, strides=s, padding=p, name=name)


def _conv_expected(x_like, f, strides, padding, name):
    """The shape conv2d(x_like, f) would have, or the op's error."""
    try:
        return _conv_shape(x_like, f, strides, padding)
    except RuleError as e:
        raise Conv2DBackpropInput.error(str(e), name) from None


# ---------------------------------------------------------------- pooling
# Padding positions never win a max and are not counted by an average (TF).


def _pool_shape(x, ksize, strides, padding, data_format="NHWC"):
    _check_window_attrs(strides, padding, data_format, ksize)
    _check_input(x)
    c = x.shape.dims[3] if x.shape.dims else None
    return TensorShape(_window_out(x, ksize[1:3], strides, padding, "window") + [c])


def _pool_attrs(attrs, ins, outs):
    """Kernel attributes from the forward input (ins[0]) of every pooling op."""
    _, h, w, _ = ins[0].shape.dims
    k, s, p = attrs["ksize"], attrs["strides"], attrs["padding"]
    return {"ksize": [k[1], k[2]], "strides": [s[1], s[2]],
            "pad_top": _pad_before(h, k[1], s[1], p), "pad_left": _pad_before(w, k[2], s[2], p)}


def _pool_grad_attrs(op):
    return {"ksize": op.attrs["ksize"], "strides": op.attrs["strides"], "padding": op.attrs["padding"]}


def _pool_fn(opdef):
    def fn(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None, input=None):  # noqa: A002
        if value is not None and input is not None:
            raise opdef.error("pass value or input, not both", name)
        value = input if value is None else value
        if value is None or ksize is None or strides is None or padding is None:
            raise opdef.error("needs value, ksize, strides and padding", name, TypeError)
        return opdef(convert_to_tensor(value), ksize=_hw4(ksize), strides=_hw4(strides), padding=_padding(padding),
                     data_format=data_format, name=name or opdef.type)

    return fn


MaxPool = OpDef("MaxPool", kernel="max_pool_fwd")


@MaxPool.shape
def _(x, *, ksize, strides, padding, data_format):
    return Spec(x.dtype, _pool_shape(x, ksize, strides, padding, data_format))


MaxPool.native_attrs(_pool_attrs)


@MaxPool.grad
def _(op, dy):
    return [MaxPoolGrad(op.inputs[0], op.outputs[0], dy, **_pool_grad_attrs(op))]


# dx = MaxPoolGrad(x, y, dy): each window's dy goes to its FIRST maximum. Not differentiable here:
# its gradient needs TF's MaxPoolGradGrad (a gather at the argmax), which has no kernel yet.
MaxPoolGrad = OpDef("MaxPoolGrad", kernel="max_pool_bwd", differentiable=False)


@MaxPoolGrad.shape
def _(x, y, dy, *, ksize, strides, padding):
    expected = _pool_shape(x, ksize, strides, padding)
    if y.dtype != x.dtype:
        fail_dtype(f"y must have the input's dtype {x.dtype.name}, got {y.dtype.name}")
    if not y.shape.is_compatible_with(expected):
        fail(f"y must have the forward output's shape {expected}, got y: {y.shape}")
    out = _check_grad_input(dy, expected.merge_with(y.shape), x.dtype, "input")
    return Spec(x.dtype, _with_batch(x.shape, out.dims[0] if out.dims else None))


MaxPoolGrad.native_attrs(_pool_attrs)

max_pool = _pool_fn(MaxPool)
max_pool.__name__ = "max_pool"
max_pool.__doc__ = """Max over windows ksize [1, kh, kw, 1] (or an int, or [kh, kw]) moved by strides; NHWC."""


AvgPool = OpDef("AvgPool", kernel="avg_pool_fwd")


@AvgPool.shape
def _(x, *, ksize, strides, padding, data_format):
    return Spec(x.dtype, _pool_shape(x, ksize, strides, padding, data_format))


AvgPool.native_attrs(_pool_attrs)


@AvgPool.grad
def _(op, dy):
    return [AvgPoolGrad(op.inputs[0], dy, **_pool_grad_attrs(op))]


# dx = AvgPoolGrad(x_like, dy): x_like gives the input's shape only.
AvgPoolGrad = OpDef("AvgPoolGrad", kernel="avg_pool_bwd", shape_only_inputs={0})


@AvgPoolGrad.shape
def _(x_like, dy, *, ksize, strides, padding):
    out = _check_grad_input(dy, _pool_shape(x_like, ksize, strides, padding), x_like.dtype, "input")
    return Spec(x_like.dtype, _with_batch(x_like.shape, out.dims[0] if out.dims else None))


AvgPoolGrad.native_attrs(_pool_attrs)


@AvgPoolGrad.grad
def _(op, g):
    # dx is linear in dy, the transpose of the average: <g, dx> = <avg_pool(g), dy>.
    return [None, AvgPool(g, data_format="NHWC", **_pool_grad_attrs(op))]


avg_pool = _pool_fn(AvgPool)
avg_pool.__name__ = "avg_pool"
avg_pool.__doc__ = """Mean over the valid positions of windows ksize [1, kh, kw, 1] moved by strides; NHWC."""
max_pool2d = max_pool
avg_pool2d = avg_pool
