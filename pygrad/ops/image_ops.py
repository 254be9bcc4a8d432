"""tf.image's geometry and dtype functions (flips, rotations, crops, pads, convert_image_dtype,
grayscale, per-image standardization), each the composition of pygrad ops that TensorFlow's
image_ops_impl.py builds: reverse, transpose, slice, pad, tile, casts and arithmetic. Images are
3-D [height, width, channels] or 4-D [batch, height, width, channels], as TF accepts them.

The random ones draw from pygrad's random_uniform under TF1's seed rules (graph seed and op
seed): a seeded graph repeats its choices in every session, as TF's does, though pygrad's random
stream is its own, so the choices are not TF's.
"""
import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, build_error
from pygrad.ops import math_ops, reduction_ops
from pygrad.ops.array_ops import (cast, constant_value, convert_to_tensor, expand_dims, identity, reshape, squeeze,
                                  transpose)
from pygrad.ops.control_flow_ops import cond
from pygrad.ops.linalg_ops import tensordot
from pygrad.ops.manip_ops import concat, stack, tile
from pygrad.ops.random_ops import random_uniform
from pygrad.ops.sequence_ops import pad, reverse
from pygrad.ops.slice_ops import slice as slice_


def image_error(fn, rule, cls=ValueError):
    """The error of the tf.image function fn for a bad argument, naming the user's line."""
    return build_error(fn, None, rule, cls)


def image_rank(image, fn, ranks=(3, 4)):
    """image's static rank, checked to be one of ranks (TF needs it known to pick its layout)."""
    rank = image.shape.ndims
    if rank not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise image_error(fn, f"'image' (shape {image.shape}) must have {want} dimensions")
    return rank


def static_hw(image, fn):
    """(height, width) of a 4-D image, which must be known when the graph is built."""
    _, h, w, _ = image.shape.as_list()
    if h is None or w is None:
        raise image_error(fn, f"needs the image's height and width when the graph is built, but its shape is "
                              f"{image.shape}; give it one with set_shape([height, width, channels])")
    return h, w


def as_batch(image, fn):
    """(a 4-D image, whether it was one): 3-D images get a batch dimension of 1."""
    image = convert_to_tensor(image, name="image")
    if image_rank(image, fn) == 3:
        return expand_dims(image, 0), False
    return image, True


def _static_int(value):
    v = constant_value(value) if isinstance(value, Tensor) else value
    return None if v is None else int(np.asarray(v))


# ---------------------------------------------------------------- flips, rotations


def _flip(image, axis, fn):
    image = convert_to_tensor(image, name="image")
    return reverse(image, [axis + image_rank(image, fn) - 3], name=fn)


def flip_left_right(image):
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image):
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, axis, seed, fn):
    """TF's _random_flip: a 3-D image is flipped when a uniform draw is below 0.5; each image of a
    batch by its own draw, rounded to 0 or 1 (flips * flipped + (1 - flips) * image)."""
    image = convert_to_tensor(image, name="image")
    if image_rank(image, fn) == 3:
        flip = math_ops.less(random_uniform([], 0, 1.0, seed=seed), 0.5)
        return cond(flip, lambda: reverse(image, [axis]), lambda: identity(image), name=fn)
    n = image.shape.as_list()[0]
    if n is None:
        raise image_error(fn, f"needs the batch size of {image.shape} when the graph is built")
    flips = cast(math_ops.round(reshape(random_uniform([n], 0, 1.0, seed=seed), [n, 1, 1, 1])), image.dtype)
    return flips * reverse(image, [axis + 1]) + (1 - flips) * image


def random_flip_left_right(image, seed=None):
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, 0, seed, "random_flip_up_down")


def transpose_image(image):
    image = convert_to_tensor(image, name="image")
    perm = [1, 0, 2] if image_rank(image, "transpose_image") == 3 else [0, 2, 1, 3]
    return transpose(image, perm, name="transpose_image")


def rot90(image, k=1, name=None):
    """image turned counter-clockwise by k quarter turns (k known when the graph is built: the
    output's shape depends on it)."""
    image = convert_to_tensor(image, name="image")
    rank = image_rank(image, "rot90")
    turns = _static_int(k)
    if turns is None:
        raise image_error("rot90", "k must be known when the graph is built (the output's shape depends on it)")
    h, w = rank - 3, rank - 2
    perm = list(range(rank))
    perm[h], perm[w] = w, h
    turns %= 4
    if turns == 1:
        return transpose(reverse(image, [w]), perm, name=name or "rot90")
    if turns == 2:
        return reverse(image, [h, w], name=name or "rot90")
    if turns == 3:
        return reverse(transpose(image, perm), [w], name=name or "rot90")
    return identity(image, name=name or "rot90")


# ---------------------------------------------------------------- crops and pads


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    fn = "crop_to_bounding_box"
    image, is_batch = as_batch(image, fn)
    _, height, width, _ = image.shape.as_list()
    sizes = [_static_int(target_height), _static_int(target_width)]
    if None in sizes:
        raise image_error(fn, "target_height and target_width must be known when the graph is built")
    offsets = [_static_int(offset_height), _static_int(offset_width)]
    for what, v in (("offset_height", offsets[0]), ("offset_width", offsets[1])):
        if v is not None and v < 0:
            raise image_error(fn, f"{what} must be >= 0, got {v}")
    for what, v in (("target_height", sizes[0]), ("target_width", sizes[1])):
        if v <= 0:
            raise image_error(fn, f"{what} must be > 0, got {v}")
    for what, dim, o, s in (("width", width, offsets[1], sizes[1]), ("height", height, offsets[0], sizes[0])):
        if dim is not None and o is not None and dim < s + o:
            raise image_error(fn, f"{what} must be >= target + offset: {dim} < {s} + {o}")
    if None in offsets:  # offsets computed by the graph (random_crop's)
        begin = stack([0, cast(offset_height, dtypes.int32), cast(offset_width, dtypes.int32), 0])
        n, _, _, c = image.shape.as_list()
        if n is None or c is None:
            raise image_error(fn, f"computed offsets need the batch size and channels of {image.shape}")
        cropped = slice_(image, begin, [n, sizes[0], sizes[1], c])
    else:
        cropped = slice_(image, [0, offsets[0], offsets[1], 0], [-1, sizes[0], sizes[1], -1])
    return cropped if is_batch else squeeze(cropped, [0])


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    fn = "pad_to_bounding_box"
    image, is_batch = as_batch(image, fn)
    height, width = static_hw(image, fn)
    values = [_static_int(v) for v in (offset_height, offset_width, target_height, target_width)]
    if None in values:
        raise image_error(fn, "offsets and targets must be known when the graph is built")
    oh, ow, th, tw = values
    after_h, after_w = th - oh - height, tw - ow - width
    for what, v in (("offset_height", oh), ("offset_width", ow)):
        if v < 0:
            raise image_error(fn, f"{what} must be >= 0, got {v}")
    if after_w < 0:
        raise image_error(fn, f"width must be <= target - offset: {width} > {tw} - {ow}")
    if after_h < 0:
        raise image_error(fn, f"height must be <= target - offset: {height} > {th} - {oh}")
    padded = pad(image, [[0, 0], [oh, after_h], [ow, after_w], [0, 0]])
    return padded if is_batch else squeeze(padded, [0])


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """image centred in target_height x target_width: cropped where larger, zero-padded where
    smaller, the crop and pad offsets TF's (//2 of the difference, the extra pixel after)."""
    fn = "resize_image_with_crop_or_pad"
    image, is_batch = as_batch(image, fn)
    height, width = static_hw(image, fn)
    th, tw = _static_int(target_height), _static_int(target_width)
    if th is None or tw is None:
        raise image_error(fn, "target_height and target_width must be known when the graph is built")
    if th <= 0 or tw <= 0:
        raise image_error(fn, f"target_height and target_width must be > 0, got {th} and {tw}")
    dh, dw = th - height, tw - width
    cropped = crop_to_bounding_box(image, max(-dh // 2, 0), max(-dw // 2, 0), min(th, height), min(tw, width))
    resized = pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0), th, tw)
    return resized if is_batch else squeeze(resized, [0])


def central_crop(image, central_fraction):
    """The central central_fraction of image's height and width, its start TF's
    int((size - size * fraction) / 2)."""
    fn = "central_crop"
    image = convert_to_tensor(image, name="image")
    fraction = constant_value(central_fraction) if isinstance(central_fraction, Tensor) else central_fraction
    if fraction is None:
        raise image_error(fn, "central_fraction must be known when the graph is built")
    fraction = float(fraction)
    if fraction <= 0.0 or fraction > 1.0:
        raise image_error(fn, f"central_fraction must be within (0, 1], got {fraction}")
    rank = image_rank(image, fn)
    if fraction == 1.0:
        return image
    batch, _ = as_batch(image, fn)
    h, w = static_hw(batch, fn)
    top, left = int((float(h) - float(h) * fraction) / 2), int((float(w) - float(w) * fraction) / 2)
    begin, size = [top, left, 0], [h - 2 * top, w - 2 * left, -1]
    if rank == 4:
        begin, size = [0] + begin, [-1] + size
    return slice_(image, begin, size, name=fn)


def random_crop(value, size, seed=None, name=None):
    """A block of value of the given size (all of it known) at a uniformly drawn offset."""
    fn = "random_crop"
    value = convert_to_tensor(value, name="value")
    shape = value.shape.as_list() if value.shape.ndims is not None else None
    size = [_static_int(s) for s in (size if isinstance(size, (list, tuple)) else np.asarray(constant_value(
        convert_to_tensor(size)) if isinstance(size, Tensor) else size).reshape(-1))]
    if shape is None or None in shape or None in size:
        raise image_error(fn, f"needs value's shape ({value.shape}) and size ({size}) known when the graph is built")
    if len(size) != len(shape) or any(s > d or s < 0 for s, d in zip(size, shape)):
        raise image_error(fn, f"Need value.shape >= size, got shape {shape} and size {size}")
    limit = np.array(shape) - np.array(size) + 1
    draw = random_uniform([len(shape)], 0, 1.0, seed=seed)
    offset = math_ops.minimum(cast(math_ops.floor(draw * limit.astype(np.float32)), dtypes.int32), limit - 1)
    return slice_(value, offset, size, name=name or fn)


# ---------------------------------------------------------------- dtype conversion


def saturate_cast(value, dtype, name=None):
    """value cast to dtype after clamping to the range both dtypes hold (TF's saturate_cast, its
    limits nudged towards zero where the source dtype cannot hold the target's bound exactly)."""
    value = convert_to_tensor(value)
    src, dtype = value.dtype, dtypes.as_dtype(dtype)
    np_src = src.np
    promoted = np.promote_types(np_src, dtype.np) if src.is_integer == dtype.is_integer else np.float64
    lo = np_src.type(np.maximum(src.min, dtype.min))
    if np.array(lo, promoted) < np.array(dtype.min, promoted):
        lo = np.nextafter(lo, np_src.type(0), dtype=np_src)
    hi = np_src.type(np.minimum(float(src.max), float(dtype.max)))
    if np.array(hi, promoted) > np.array(dtype.max, promoted):
        hi = np.nextafter(hi, np_src.type(0), dtype=np_src)
    clamped = math_ops.minimum(math_ops.maximum(value, np.asarray(lo, np_src)), np.asarray(hi, np_src))
    return cast(clamped, dtype, name=name)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """image in dtype with TF's scaling: floats span [0, 1], integers [0, max]; integer to
    integer by the ratio of (max + 1)s; float to integer scaled by max + 0.5 and truncated."""
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    for what, d in (("dtype", dtype), ("image dtype", image.dtype)):
        if not (d.is_floating or d.is_integer) or d.is_bool:
            raise image_error("convert_image_dtype", f"{what} must be either floating point or integer, got "
                                                     f"{d.name}", TypeError)
    if dtype == image.dtype:
        return identity(image, name=name)
    src = image.dtype
    if src.is_integer and dtype.is_integer:
        if src.max > dtype.max:
            scaled = math_ops.floordiv(image, np.asarray((src.max + 1) // (dtype.max + 1), src.np))
            return saturate_cast(scaled, dtype, name) if saturate else cast(scaled, dtype, name=name)
        converted = saturate_cast(image, dtype) if saturate else cast(image, dtype)
        return math_ops.multiply(converted, np.asarray((dtype.max + 1) // (src.max + 1), dtype.np), name=name)
    if src.is_floating and dtype.is_floating:
        return cast(image, dtype, name=name)
    if src.is_integer:
        return math_ops.multiply(cast(image, dtype), np.asarray(1.0 / src.max, dtype.np), name=name)
    scaled = math_ops.multiply(image, np.asarray(dtype.max + 0.5, src.np))
    return saturate_cast(scaled, dtype, name) if saturate else cast(scaled, dtype, name=name)


def float_image(image):
    """(image as float32 in [0, 1], or as it is when float16 or float32; its dtype), the first
    step of TF's colour adjustments."""
    image = convert_to_tensor(image, name="image")
    if image.dtype in (dtypes.float16, dtypes.float32):
        return image, image.dtype
    return convert_image_dtype(image, dtypes.float32), image.dtype


# ---------------------------------------------------------------- grayscale, standardization


def rgb_to_grayscale(images, name=None):
    images = convert_to_tensor(images, name="images")
    if images.shape.ndims is not None and images.shape.as_list()[-1] not in (None, 3):
        raise image_error("rgb_to_grayscale", f"the last dimension of {images.shape} must be 3 (red, green, blue)")
    gray = tensordot(convert_image_dtype(images, dtypes.float32),
                     np.array([0.2989, 0.5870, 0.1140], np.float32), [[-1], [-1]])
    return convert_image_dtype(expand_dims(gray, -1), images.dtype, name=name)


def grayscale_to_rgb(images, name=None):
    images = convert_to_tensor(images, name="images")
    if images.shape.ndims is None or images.shape.ndims < 2 or images.shape.as_list()[-1] not in (None, 1):
        raise image_error("grayscale_to_rgb", f"images {images.shape} must be at least two-dimensional with a last "
                                              f"dimension of 1")
    return tile(images, [1] * (images.shape.ndims - 1) + [3], name=name)


def per_image_standardization(image):
    """(image - mean) / max(stddev, 1 / sqrt(pixels)) over each image's height, width and channels,
    in float32 (integers cast, not scaled, as TF 2's does)."""
    image = convert_to_tensor(image, name="image")
    if image.shape.ndims is None or image.shape.ndims < 3 or None in image.shape.as_list()[-3:]:
        raise image_error("per_image_standardization", f"'image' {image.shape} must be at least three-dimensional "
                                                       f"with known height, width and channels")
    image = cast(image, dtypes.float32)
    pixels = int(np.prod(image.shape.as_list()[-3:]))
    axes = [-1, -2, -3]
    mean = reduction_ops.reduce_mean(image, axis=axes, keepdims=True)
    centred = image - mean
    stddev = math_ops.sqrt(reduction_ops.reduce_mean(math_ops.square(centred), axis=axes, keepdims=True))
    adjusted = math_ops.maximum(stddev, np.float32(1.0 / np.sqrt(np.float32(pixels))))
    return math_ops.divide(centred, adjusted, name="per_image_standardization")


def stack_channels(channels):
    """The last-axis stack of per-channel tensors (the inverse of unstacking an image's channels)."""
    return concat([expand_dims(c, -1) for c in channels], -1)
