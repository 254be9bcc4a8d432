"""tf.image's colour functions: rgb_to_hsv / hsv_to_rgb and the brightness, contrast, saturation
and hue adjustments with their random_* forms, composed of elementwise pygrad ops with the
formulas of TensorFlow's kernels (RGBToHSV, HSVToRGB, AdjustContrastv2, AdjustSaturation,
AdjustHue). Images of an integer dtype are adjusted in float32 and converted back as TF does
(image_ops.convert_image_dtype); the last dimension holds the channels.

The random forms draw their factor with random_uniform under TF1's seed rules; pygrad's random
stream is its own, so a seeded graph repeats its draws but does not draw TF's.
"""
import numpy as np

from pygrad.graph import Tensor
from pygrad.ops import math_ops, reduction_ops
from pygrad.ops.array_ops import cast, constant_value, convert_to_tensor
from pygrad.ops.image_ops import convert_image_dtype, float_image, image_error, stack_channels
from pygrad.ops.manip_ops import unstack, where
from pygrad.ops.random_ops import random_uniform


def _channels(images, fn):
    images = convert_to_tensor(images, name="images")
    if images.shape.ndims is None or images.shape.ndims < 1 or images.shape.as_list()[-1] != 3:
        raise image_error(fn, f"the last dimension of images {images.shape} must be 3 (its channels), known when "
                              f"the graph is built")
    if not images.dtype.is_floating:
        raise image_error(fn, f"images must be float16, float32 or float64, got {images.dtype.name}", TypeError)
    return unstack(images, num=3, axis=-1)


def _hsv(r, g, b):
    """(h in [0, 1), s, v) of RGBToHSV's kernel: the hue from the largest channel, 0 for grays."""
    v = math_ops.maximum(r, math_ops.maximum(g, b))
    spread = v - math_ops.minimum(r, math_ops.minimum(g, b))
    zeros = v * 0
    positive = math_ops.greater(spread, zeros)
    s = where(math_ops.greater(v, zeros), spread / where(math_ops.greater(v, zeros), v, zeros + 1), zeros)
    norm = 1.0 / (6.0 * where(positive, spread, zeros + 1))
    h = where(math_ops.equal(r, v), norm * (g - b),
              where(math_ops.equal(g, v), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = where(positive, h, zeros)
    return where(math_ops.less(h, zeros), h + 1.0, h), s, v


def _rgb(h, s, v):
    """(r, g, b) of HSVToRGB's kernel: each channel (1 - s + s * ramp(6h)) * v."""
    dh = h * 6.0

    def ramp(x):
        return math_ops.minimum(math_ops.maximum(x, 0.0), 1.0)

    one_minus_s = 1.0 - s
    dr = ramp(math_ops.abs(dh - 3.0) - 1.0)
    dg = ramp(2.0 - math_ops.abs(dh - 2.0))
    db = ramp(2.0 - math_ops.abs(dh - 4.0))
    return [(one_minus_s + s * d) * v for d in (dr, dg, db)]


def rgb_to_hsv(images, name=None):
    return stack_channels(_hsv(*_channels(images, "rgb_to_hsv")))


def hsv_to_rgb(images, name=None):
    return stack_channels(_rgb(*_channels(images, "hsv_to_rgb")))


def _factor(value, dtype):
    return cast(value, dtype) if isinstance(value, Tensor) else np.asarray(value, dtype.np)


def adjust_brightness(image, delta):
    flt, orig = float_image(image)
    return convert_image_dtype(math_ops.add(flt, _factor(delta, flt.dtype)), orig, saturate=True)


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean per channel, the mean over each image's height and width."""
    flt, orig = float_image(images)
    if flt.shape.ndims is None or flt.shape.ndims < 3:
        raise image_error("adjust_contrast", f"images {flt.shape} must be at least three-dimensional")
    mean = reduction_ops.reduce_mean(flt, axis=[-3, -2], keepdims=True)
    adjusted = (flt - mean) * _factor(contrast_factor, flt.dtype) + mean
    return convert_image_dtype(adjusted, orig, saturate=True)


def adjust_saturation(image, saturation_factor, name=None):
    """The saturation of each pixel scaled by saturation_factor and clipped to [0, 1]."""
    flt, orig = float_image(image)
    h, s, v = _hsv(*_channels(flt, "adjust_saturation"))
    s = math_ops.minimum(math_ops.maximum(s * _factor(saturation_factor, flt.dtype), 0.0), 1.0)
    return convert_image_dtype(stack_channels(_rgb(h, s, v)), orig, saturate=True)


def adjust_hue(image, delta, name=None):
    """The hue of each pixel turned by delta (a fraction of the colour circle, in [-1, 1])."""
    known = constant_value(delta) if isinstance(delta, Tensor) else delta
    if known is not None and not -1 <= float(known) <= 1:
        raise image_error("adjust_hue", f"delta must be in the interval [-1, 1], got {float(known)}")
    flt, orig = float_image(image)
    h, s, v = _hsv(*_channels(flt, "adjust_hue"))
    h = math_ops.floormod(h + _factor(delta, flt.dtype), 1.0)
    return convert_image_dtype(stack_channels(_rgb(h, s, v)), orig)


def _bounds(fn, lower, upper):
    if upper <= lower:
        raise image_error(fn, f"upper must be > lower, got lower {lower} and upper {upper}")
    if lower < 0:
        raise image_error(fn, f"lower must be non-negative, got {lower}")


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise image_error("random_brightness", f"max_delta must be non-negative, got {max_delta}")
    return adjust_brightness(image, random_uniform([], -max_delta, max_delta, seed=seed))


def random_contrast(image, lower, upper, seed=None):
    _bounds("random_contrast", lower, upper)
    return adjust_contrast(image, random_uniform([], lower, upper, seed=seed))


def random_saturation(image, lower, upper, seed=None):
    _bounds("random_saturation", lower, upper)
    return adjust_saturation(image, random_uniform([], lower, upper, seed=seed))


def random_hue(image, max_delta, seed=None):
    if not 0 <= max_delta <= 0.5:
        raise image_error("random_hue", f"max_delta must be in [0, 0.5], got {max_delta}")
    return adjust_hue(image, random_uniform([], -max_delta, max_delta, seed=seed))
