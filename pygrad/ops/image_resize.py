"""Image resizing: TensorFlow's ResizeBilinear, ResizeNearestNeighbor and ResizeBicubic ops and
their gradients, and tf.image's resize_images on top.

The ops are host ops (stage BETWEEN, see host.py): an image decoded in the graph has a height and
width known only when it runs, and the sampling positions depend on them. Each op samples the
[batch, height, width, channels] input along the width, then along the height, with the taps and
weights TF's kernels compute in float32: the legacy (x * scale) or half-pixel ((x + 0.5) * scale
- 0.5) source position, align_corners' (in - 1) / (out - 1) scale, nearest's round-or-floor,
bilinear's lerp, and bicubic's 1024-entry table of Keys' cubic (a = -0.5 with half-pixel
centres, renormalized at the borders; -0.75 and clamped taps without). A gradient spreads dy back
through the same weights.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor
from pygrad.ops.array_ops import constant_value, convert_to_tensor, expand_dims, identity, squeeze
from pygrad.ops.array_ops import shape as shape_of
from pygrad.ops.image_ops import image_error, image_rank
from pygrad.ops.slice_ops import strided_slice
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

TABLE_SIZE = 1024  # TF's bicubic coefficient table: weights at multiples of 1/1024


def _cubic_table(a):
    """[TABLE_SIZE + 1, 2]: the cubic's weights at distance x and 1 + x, x = i / TABLE_SIZE."""
    x = (np.arange(TABLE_SIZE + 1) / TABLE_SIZE).astype(np.float32).astype(np.float64)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = (x.astype(np.float32) + np.float32(1.0)).astype(np.float64)
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return np.stack([near, far], 1).astype(np.float32)


CUBIC = {True: _cubic_table(-0.5), False: _cubic_table(-0.75)}


def _scale(n_in, n_out, align_corners):
    if align_corners and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def axis_taps(method, n_in, n_out, align_corners, half_pixel_centers):
    """(indices [n_out, taps], weights [n_out, taps]) of one axis; bilinear's weight is its lerp."""
    scale = _scale(n_in, n_out, align_corners)
    x = np.arange(n_out).astype(np.float32)
    if method == "nearest":
        pos = (x + np.float32(0.5)) * scale if half_pixel_centers else x * scale
        i = np.floor(pos + np.float32(0.5)) if align_corners else np.floor(pos)
        i = np.minimum(i.astype(np.int64), n_in - 1)
        return np.maximum(i, 0)[:, None], np.ones((n_out, 1), np.float32)
    pos = (x + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else x * scale
    floor = np.floor(pos)
    if method == "bilinear":
        lower = np.maximum(floor.astype(np.int64), 0)
        upper = np.minimum(np.ceil(pos).astype(np.int64), n_in - 1)
        return np.stack([lower, upper], 1), (pos - floor)[:, None].astype(np.float32)
    base = floor.astype(np.int64)
    offset = np.rint((pos - floor).astype(np.float32) * np.float32(TABLE_SIZE)).astype(np.int64)
    table = CUBIC[half_pixel_centers]
    wanted = base[:, None] + np.arange(-1, 3)
    index = np.clip(wanted, 0, n_in - 1)
    weight = np.stack([table[offset, 1], table[offset, 0], table[TABLE_SIZE - offset, 0],
                       table[TABLE_SIZE - offset, 1]], 1)
    if half_pixel_centers:  # taps outside the image get no weight; the rest are renormalized
        weight = np.where(index == wanted, weight, np.float32(0))
        total = weight.sum(1, dtype=np.float32, keepdims=True)
        weight = np.where(np.abs(total) >= 1000 * np.finfo(np.float32).tiny, weight * (np.float32(1) / total), weight)
    return index, weight.astype(np.float32)


def _along(x, axis, method, index, weight):
    """x sampled along axis by the taps, in the arithmetic of TF's kernel."""
    taps = [np.take(x, index[:, j], axis=axis) for j in range(index.shape[1])]
    shape = [1] * x.ndim
    shape[axis] = -1
    w = [weight[:, j].reshape(shape) for j in range(weight.shape[1])]
    if method == "nearest":
        return taps[0]
    if method == "bilinear":
        return taps[0] + (taps[1] - taps[0]) * w[0]
    return taps[0] * w[0] + taps[1] * w[1] + taps[2] * w[2] + taps[3] * w[3]


def _matrix(n_in, index, weight, method):
    """The [n_out, n_in] matrix of one axis's sampling (gradients are its transpose)."""
    if method == "bilinear":
        weight = np.concatenate([1 - weight, weight], 1)
    m = np.zeros((index.shape[0], n_in), np.float64)
    np.add.at(m, (np.repeat(np.arange(index.shape[0]), index.shape[1]), index.reshape(-1)), weight.reshape(-1))
    return m


def _sizes(op, values):
    images, size = values
    size = np.asarray(size).reshape(-1)
    if size.shape != (2,):
        raise HostError(f"size must be 2 numbers (height, width), got {size.tolist()}")
    if (size <= 0).any() or 0 in np.shape(images)[1:3]:
        raise HostError(f"input and output sizes must be positive: input {list(np.shape(images))}, output "
                        f"{size.tolist()}")
    return [int(s) for s in size]


def _resize_op(type_name, method):
    d = OpDef(type_name, host=BETWEEN)

    @d.shape
    def _(images, size, *, align_corners, half_pixel_centers):
        if images.shape.ndims not in (None, 4):
            fail(f"input must be 4-dimensional, got {images.shape}")
        if size.dtype != dtypes.int32:
            fail_dtype(f"size must be int32, got {size.dtype.name}")
        if not (images.dtype.is_integer or images.dtype.is_floating) or images.dtype.is_bool:
            fail_dtype(f"images must be numbers, got {images.dtype.name}")
        if align_corners and half_pixel_centers:
            fail("If half_pixel_centers is True, align_corners must be False.")
        known = constant_value(size) if isinstance(size, Tensor) else None
        hw = [None, None] if known is None else [int(v) for v in np.asarray(known).reshape(-1)]
        n, c = (images.shape.as_list()[0], images.shape.as_list()[3]) if images.shape.ndims else (None, None)
        return Spec(images.dtype if method == "nearest" else dtypes.float32, TensorShape([n, *hw, c]))

    @d.host
    def _(ctx, op, values):
        x = np.asarray(values[0])
        out_h, out_w = _sizes(op, values)
        attrs = (op.attrs["align_corners"], op.attrs["half_pixel_centers"])
        y = x if method == "nearest" else x.astype(np.float32)
        y = _along(y, 2, method, *axis_taps(method, x.shape[2], out_w, *attrs))
        return [np.ascontiguousarray(_along(y, 1, method, *axis_taps(method, x.shape[1], out_h, *attrs)))]

    return d


ResizeBilinear = _resize_op("ResizeBilinear", "bilinear")
ResizeNearestNeighbor = _resize_op("ResizeNearestNeighbor", "nearest")
ResizeBicubic = _resize_op("ResizeBicubic", "bicubic")


def _grad_op(type_name, method):
    """dy [batch, out h, out w, channels] back to the input's [height, width]: the second input is
    the original image (TF's bilinear and bicubic gradients) or its size (nearest's)."""
    d = OpDef(type_name, host=BETWEEN, differentiable=False)

    @d.shape
    def _(dy, like, *, align_corners, half_pixel_centers):
        if method == "nearest":
            known = constant_value(like) if isinstance(like, Tensor) else None
            hw = [None, None] if known is None else [int(v) for v in np.asarray(known).reshape(-1)]
            return Spec(dy.dtype, TensorShape([dy.shape.as_list()[0], *hw, dy.shape.as_list()[3]]))
        return Spec(like.dtype, like.shape)

    @d.host
    def _(ctx, op, values):
        dy, like = np.asarray(values[0]), np.asarray(values[1])
        in_h, in_w = [int(v) for v in like.reshape(-1)] if method == "nearest" else like.shape[1:3]
        attrs = (op.attrs["align_corners"], op.attrs["half_pixel_centers"])
        mh = _matrix(in_h, *axis_taps(method, in_h, dy.shape[1], *attrs), method)
        mw = _matrix(in_w, *axis_taps(method, in_w, dy.shape[2], *attrs), method)
        g = np.einsum("bhwc,hH,wW->bHWc", dy.astype(np.float64), mh, mw, optimize=True)
        return [g.astype(dy.dtype if method == "nearest" else like.dtype)]

    return d


ResizeBilinearGrad = _grad_op("ResizeBilinearGrad", "bilinear")
ResizeNearestNeighborGrad = _grad_op("ResizeNearestNeighborGrad", "nearest")
ResizeBicubicGrad = _grad_op("ResizeBicubicGrad", "bicubic")


def _float_grad(forward, backward, second):
    @forward.grad
    def _(op, dy):
        images, size = op.inputs
        if not images.dtype.is_floating:
            return [None, None]
        return [backward(dy, second(op), **op.attrs), None]


_float_grad(ResizeBilinear, ResizeBilinearGrad, lambda op: op.inputs[0])
_float_grad(ResizeBicubic, ResizeBicubicGrad, lambda op: op.inputs[0])


@ResizeNearestNeighbor.grad
def _(op, dy):
    images = op.inputs[0]
    if not images.dtype.is_floating:
        return [None, None]
    hw = images.shape[1:3]
    if hw.is_fully_defined():
        size = convert_to_tensor(np.array(hw.as_list(), np.int32))
    else:
        size = strided_slice(shape_of(images), [1], [3])
    return [ResizeNearestNeighborGrad(dy, size, **op.attrs), None]


def _batch_op(opdef, fn, images, size, align_corners, half_pixel_centers, name):
    images = convert_to_tensor(images, name="images")
    if images.shape.ndims != 4:
        raise image_error(fn, f"images {images.shape} must be 4-dimensional [batch, height, width, channels]")
    size = convert_to_tensor(size, dtype=dtypes.int32) if not isinstance(size, Tensor) else size
    if size.shape.ndims not in (None, 1) or size.shape.ndims == 1 and size.shape.as_list()[0] not in (None, 2):
        raise image_error(fn, f"size must be a 1-D int32 tensor of 2 elements: new_height, new_width; got "
                              f"{size.shape}")
    return opdef(images, size, align_corners=bool(align_corners), half_pixel_centers=bool(half_pixel_centers),
                 name=name or opdef.type)


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _batch_op(ResizeBilinear, "resize_bilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _batch_op(ResizeNearestNeighbor, "resize_nearest_neighbor", images, size, align_corners,
                     half_pixel_centers, name)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _batch_op(ResizeBicubic, "resize_bicubic", images, size, align_corners, half_pixel_centers, name)


class ResizeMethod:
    """TF1's resize methods (tf.image.ResizeMethod); AREA is not supported."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_BY_METHOD = {ResizeMethod.BILINEAR: resize_bilinear, "bilinear": resize_bilinear,
              ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor, "nearest": resize_nearest_neighbor,
              ResizeMethod.BICUBIC: resize_bicubic, "bicubic": resize_bicubic}


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False, preserve_aspect_ratio=False,
                  name=None):
    """TF1's tf.image.resize_images: 3-D or 4-D images to size [height, width]; an image already of
    that size is returned as it is (not converted to float)."""
    fn = "resize_images"
    resize = _BY_METHOD.get(method)
    if resize is None:
        raise image_error(fn, f"Resize method is not implemented: {method} (pygrad has bilinear, nearest "
                              f"neighbor and bicubic)")
    images = convert_to_tensor(images, name="images")
    is_batch = image_rank(images, fn) == 4
    if not is_batch:
        images = expand_dims(images, 0)
    size_value = constant_value(size) if isinstance(size, Tensor) else size
    if size_value is None:
        raise image_error(fn, "size must be known when the graph is built")
    new_h, new_w = [int(v) for v in np.asarray(size_value).reshape(-1)]
    _, height, width, _ = images.shape.as_list()
    if preserve_aspect_ratio:
        if height is None or width is None:
            raise image_error(fn, f"preserve_aspect_ratio needs the image's height and width: {images.shape}")
        f = min(np.float32(new_h) / np.float32(height), np.float32(new_w) / np.float32(width))
        new_h, new_w = int(np.rint(f * np.float32(height))), int(np.rint(f * np.float32(width)))
    if (height, width) == (new_h, new_w):
        out = identity(images)
    else:
        out = resize(images, np.array([new_h, new_w], np.int32), align_corners=align_corners, name=name)
    return out if is_batch else squeeze(out, [0])
