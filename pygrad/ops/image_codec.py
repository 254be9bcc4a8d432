"""Image files: TensorFlow's DecodeJpeg, DecodePng, DecodeImage, EncodePng and EncodeJpeg ops, run
on the host through Pillow (an optional dependency: `pip install pillow`, or pygrad's `image`
extra), imported when an op first runs, not with pygrad.

JPEGs decode with libjpeg's accurate integer DCT (TF's dct_method INTEGER_ACCURATE; TF's default,
the fast DCT, differs by a few levels). Decoded images are uint8 (or uint16 for 16-bit grayscale PNGs) [height, width, channels]; channels
0 keeps the file's (decode_image reads JPEG, PNG and BMP files, not GIF; (1 gray, 2 gray and alpha, 3 RGB, 4 RGBA; palettes expand to RGB, or RGBA when
they have transparency), 1, 3 or 4 convert.) Encoded images are bytes scalars.
"""
import io

import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.image_ops import convert_image_dtype
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape


def pillow():
    """PIL.Image, or an ImportError that says how to install it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("tf.image's decode and encode ops need the Pillow package: pip install pillow "
                          "(or pip install pygrad[image])") from None
    return Image


_MODE_CHANNELS = {"1": 1, "L": 1, "I;16": 1, "I;16B": 1, "I": 1, "LA": 2, "RGB": 3, "RGBA": 4}
_CHANNEL_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _pixels(image, channels, dtype, what):
    """The [height, width, channels] array of an opened Pillow image, as TF's decoders give it."""
    png = image.format == "PNG"
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif image.mode == "CMYK":
        image = image.convert("RGB")
    if image.mode not in _MODE_CHANNELS:
        raise HostError(f"{what}: pixels of Pillow's mode {image.mode} are not supported")
    sixteen = image.mode.startswith("I")
    if sixteen:
        if channels not in (0, 1):
            raise HostError(f"{what}: a 16-bit grayscale image has 1 channel, not {channels}")
        a = np.asarray(image).astype(np.uint16)
        a = a if dtype == dtypes.uint16 else (a >> 8).astype(np.uint8)
        return a[:, :, None]
    if png and channels == 1 and image.mode in ("RGB", "RGBA"):
        return _gray(np.asarray(image, dtype=np.uint8), dtype)
    if channels and _MODE_CHANNELS[image.mode] != channels:
        image = image.convert(_CHANNEL_MODES[channels])
    a = np.asarray(image.convert("L") if image.mode == "1" else image, dtype=np.uint8)
    a = a.reshape(a.shape[0], a.shape[1], -1)
    return a.astype(np.uint16) * 257 if dtype == dtypes.uint16 else a


# libpng's rgb_to_gray with TF's weights (png_set_rgb_to_gray(png, 1, 0.299, 0.587)): 15-bit fixed
# point, the weights truncated and blue's the rest, the sum truncated.
_GRAY_WEIGHTS = (int(0.299 * 32768), int(0.587 * 32768), 32768 - int(0.299 * 32768) - int(0.587 * 32768))


def _gray(rgb, dtype):
    """One gray channel of RGB(A) pixels, as TF's PNG decoder makes it (alpha dropped)."""
    g = sum(w * rgb[..., k].astype(np.int64) for k, w in enumerate(_GRAY_WEIGHTS)) >> 15
    g = g.astype(np.uint8)[:, :, None]
    return g.astype(np.uint16) * 257 if dtype == dtypes.uint16 else g


def _open(data, formats, what, channels):
    Image = pillow()
    try:
        image = Image.open(io.BytesIO(bytes(data)), formats=formats)
        if image.format == "JPEG" and channels == 1:
            image.draft("L", image.size)  # libjpeg's own luma, as TF's decoder asks for
        image.load()
    except Exception as e:  # Pillow raises many kinds for a bad file
        raise HostError(f"{what}: the contents are not a valid {' or '.join(formats)} image ({e})") from None
    return image


def _check_channels(channels, allowed=(0, 1, 3, 4)):
    if channels not in allowed:
        fail(f"channels must be one of {list(allowed)}, got {channels}")


def _decode_op(type_name, formats, *attrs_of):
    d = OpDef(type_name, host=BETWEEN, differentiable=False)

    @d.shape
    def _(contents, *, channels, dtype=dtypes.uint8, **_):
        if contents.dtype != dtypes.string or contents.shape.ndims not in (None, 0):
            fail_dtype(f"contents must be a string scalar, got {contents.dtype.name} of shape {contents.shape}")
        _check_channels(channels)
        if dtype not in (dtypes.uint8, dtypes.uint16):
            fail_dtype(f"dtype must be uint8 or uint16, got {dtype.name}")
        return Spec(dtype, TensorShape([None, None, channels or None]))

    @d.host
    def _(ctx, op, values):
        image = _open(values[0], formats, op.type, op.attrs["channels"])
        image.seek(0)
        return [_pixels(image, op.attrs["channels"], op.attrs.get("dtype", dtypes.uint8), op.type)]

    return d


DecodeJpeg = _decode_op("DecodeJpeg", ["JPEG"])
DecodePng = _decode_op("DecodePng", ["PNG"])
DecodeImage = _decode_op("DecodeImage", ["JPEG", "PNG", "BMP"])


def _encode_op(type_name, channels, encode):
    d = OpDef(type_name, host=BETWEEN, differentiable=False)

    @d.shape
    def _(image, **attrs):
        if image.shape.ndims not in (None, 3):
            fail(f"image must be 3-dimensional [height, width, channels], got {image.shape}")
        if image.dtype not in ((dtypes.uint8, dtypes.uint16) if type_name == "EncodePng" else (dtypes.uint8,)):
            fail_dtype(f"image must be uint8{' or uint16' if type_name == 'EncodePng' else ''}, got "
                       f"{image.dtype.name}")
        if image.shape.ndims == 3 and image.shape.as_list()[2] not in (None,) + channels:
            fail(f"image must have {' or '.join(map(str, channels))} channels, got {image.shape}")
        return Spec(dtypes.string, TensorShape([]))

    @d.host
    def _(ctx, op, values):
        a = np.asarray(values[0])
        if a.ndim != 3 or a.shape[2] not in channels:
            raise HostError(f"{type_name}: image must be [height, width, {' or '.join(map(str, channels))}], got "
                            f"{list(a.shape)}")
        out = io.BytesIO()
        encode(pillow(), a, op.attrs, out)
        return [np.array(out.getvalue(), dtype=object)]

    return d


def _png(Image, a, attrs, out):
    if a.dtype == np.uint16:
        if a.shape[2] != 1:
            raise HostError("EncodePng: 16-bit images must be grayscale (1 channel) to be written through Pillow")
        image = Image.fromarray(a[:, :, 0].astype(np.uint16), "I;16")
    else:
        image = Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a, _CHANNEL_MODES[a.shape[2]])
    level = attrs["compression"]
    image.save(out, "PNG", compress_level=6 if level == -1 else level)


def _jpeg(Image, a, attrs, out):
    image = Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a, _CHANNEL_MODES[a.shape[2]])
    image.save(out, "JPEG", quality=attrs["quality"], progressive=attrs["progressive"],
               optimize=attrs["optimize_for_size"], subsampling=0 if not attrs["chroma_downsampling"] else 2)


EncodePng = _encode_op("EncodePng", (1, 2, 3, 4), _png)
EncodeJpeg = _encode_op("EncodeJpeg", (1, 3), _jpeg)


def _contents(contents):
    return convert_to_tensor(contents, dtype=dtypes.string)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    if ratio != 1 or not fancy_upscaling or try_recover_truncated or acceptable_fraction != 1:
        raise DecodeJpeg.error("pygrad decodes JPEGs at full size (ratio=1) with fancy upscaling, and not truncated "
                               "files", name)
    return DecodeJpeg(_contents(contents), channels=int(channels), name=name or "DecodeJpeg")


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    return DecodePng(_contents(contents), channels=int(channels), dtype=dtypes.as_dtype(dtype),
                     name=name or "DecodePng")


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None, expand_animations=True):
    """A JPEG, PNG or BMP file's pixels in dtype (uint8, uint16 or a float dtype scaled to [0, 1])."""
    dtype = dtypes.as_dtype(dtype)
    decoded = DecodeImage(_contents(contents), channels=int(channels or 0),
                          dtype=dtype if dtype == dtypes.uint16 else dtypes.uint8, name=name or "decode_image")
    return decoded if decoded.dtype == dtype else convert_image_dtype(decoded, dtype)


def encode_png(image, compression=-1, name=None):
    if not -1 <= compression <= 9:
        raise EncodePng.error(f"compression must be in [-1, 9], got {compression}", name)
    return EncodePng(convert_to_tensor(image), compression=int(compression), name=name or "EncodePng")


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_for_size=False, chroma_downsampling=True,
                density_unit="in", x_density=300, y_density=300, xmp_metadata="", name=None):
    if not 0 <= quality <= 100:
        raise EncodeJpeg.error(f"quality must be in [0, 100], got {quality}", name)
    image = convert_to_tensor(image)
    if format:
        want = {"grayscale": 1, "rgb": 3}.get(format)
        if want is None or image.shape.ndims == 3 and image.shape.as_list()[2] not in (None, want):
            raise EncodeJpeg.error(f"format {format!r} does not fit image {image.shape}", name)
    return EncodeJpeg(image, quality=int(quality), progressive=bool(progressive),
                      optimize_for_size=bool(optimize_for_size), chroma_downsampling=bool(chroma_downsampling),
                      name=name or "EncodeJpeg")
