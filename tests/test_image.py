"""tf.image against TensorFlow: one table of cases, each a call made the same way on pygrad and on
TensorFlow's tf.compat.v1.image (TensorFlow 2.21, graph mode) on the same test images, compared exactly for
flips, crops, pads and dtype conversions, to 1e-5 for resizes and colour ops. Then what the table
cannot hold: bilinear resize gradients against TensorFlow's, the random functions' seed rules,
PNG decode bit-exact and JPEG decode within 1 of TensorFlow's pixels, and bad input."""
import numpy as np
import pytest

import pygrad as pg

tf = pytest.importorskip("tensorflow")

RNG = np.random.RandomState(7)
F32 = RNG.rand(2, 6, 9, 3).astype(np.float32)  # a batch of two 6x9 RGB images in [0, 1)
U8 = (RNG.rand(5, 8, 3) * 256).astype(np.uint8)  # one 5x8 RGB image
GRAY = (RNG.rand(4, 7, 1) * 256).astype(np.uint8)
F64 = RNG.rand(1, 4, 5, 2)

EXACT, CLOSE = 0.0, 1e-5

# (id, image, function of (image module, image), tolerance)
CASES = [
    ("flip_lr_3d", U8, lambda m, x: m.flip_left_right(x), EXACT),
    ("flip_lr_4d", F32, lambda m, x: m.flip_left_right(x), EXACT),
    ("flip_ud_3d", U8, lambda m, x: m.flip_up_down(x), EXACT),
    ("flip_ud_4d", F32, lambda m, x: m.flip_up_down(x), EXACT),
    ("transpose_3d", U8, lambda m, x: m.transpose_image(x), EXACT),
    ("transpose_4d", F32, lambda m, x: m.transpose_image(x), EXACT),
    *[(f"rot90_k{k}_{r}d", x, (lambda k: lambda m, x: m.rot90(x, k))(k), EXACT)
      for k in (0, 1, 2, 3, -1, 5) for r, x in ((3, U8), (4, F32))],
    ("central_crop_3d", U8, lambda m, x: m.central_crop(x, 0.5), EXACT),
    ("central_crop_4d", F32, lambda m, x: m.central_crop(x, 0.33), EXACT),
    ("central_crop_all", U8, lambda m, x: m.central_crop(x, 1.0), EXACT),
    ("crop_bbox_3d", U8, lambda m, x: m.crop_to_bounding_box(x, 1, 2, 3, 4), EXACT),
    ("crop_bbox_4d", F32, lambda m, x: m.crop_to_bounding_box(x, 0, 3, 6, 6), EXACT),
    ("pad_bbox_3d", U8, lambda m, x: m.pad_to_bounding_box(x, 2, 1, 9, 10), EXACT),
    ("pad_bbox_4d", F32, lambda m, x: m.pad_to_bounding_box(x, 0, 0, 6, 12), EXACT),
    ("crop_or_pad_crop", U8, lambda m, x: m.resize_image_with_crop_or_pad(x, 3, 5), EXACT),
    ("crop_or_pad_pad", U8, lambda m, x: m.resize_image_with_crop_or_pad(x, 8, 11), EXACT),
    ("crop_or_pad_mixed", F32, lambda m, x: m.resize_image_with_crop_or_pad(x, 9, 4), EXACT),
    *[(f"convert_{a}_{b}{'_sat' if s else ''}", x, (lambda b, s: lambda m, x: m.convert_image_dtype(x, b, s))(b, s),
       EXACT)
      for a, x, sat in (("u8", U8, (False, True)), ("f32", F32, (False, True)), ("f32_out", F32 * 1.2 - 0.1, (True,)))
      for b in ("uint8", "uint16", "int8", "int16", "int32", "float32", "float64", "float16") for s in sat],
    ("convert_i32_u8", (U8.astype(np.int32) << 23), lambda m, x: m.convert_image_dtype(x, "uint8"), EXACT),
    ("convert_f64_i16", F64, lambda m, x: m.convert_image_dtype(x, "int16"), EXACT),
    ("grayscale_u8", U8, lambda m, x: m.rgb_to_grayscale(x), EXACT),
    ("grayscale_f32", F32, lambda m, x: m.rgb_to_grayscale(x), CLOSE),
    ("gray_to_rgb", GRAY, lambda m, x: m.grayscale_to_rgb(x), EXACT),
    ("standardize_u8", U8, lambda m, x: m.per_image_standardization(x), CLOSE),
    ("standardize_4d", F32, lambda m, x: m.per_image_standardization(x), CLOSE),
    ("standardize_flat", np.full((3, 3, 1), 7, np.uint8), lambda m, x: m.per_image_standardization(x), CLOSE),
    ("rgb_to_hsv", F32, lambda m, x: m.rgb_to_hsv(x), CLOSE),
    ("rgb_to_hsv_grays", np.array([[[0.5, 0.5, 0.5], [0, 0, 0], [1, 0, 1]]], np.float32),
     lambda m, x: m.rgb_to_hsv(x), CLOSE),
    ("hsv_to_rgb", F32, lambda m, x: m.hsv_to_rgb(x), CLOSE),
    ("brightness_f32", F32, lambda m, x: m.adjust_brightness(x, 0.3), CLOSE),
    ("brightness_u8", U8, lambda m, x: m.adjust_brightness(x, -0.2), EXACT),
    ("contrast_f32", F32, lambda m, x: m.adjust_contrast(x, 1.7), CLOSE),
    ("contrast_u8", U8, lambda m, x: m.adjust_contrast(x, 0.4), EXACT),
    ("saturation_f32", F32, lambda m, x: m.adjust_saturation(x, 1.8), CLOSE),
    ("saturation_u8", U8, lambda m, x: m.adjust_saturation(x, 0.3), EXACT),
    *[(f"hue_{d}", F32, (lambda d: lambda m, x: m.adjust_hue(x, d))(d), CLOSE) for d in (0.3, -0.45, 0.9)],
    ("hue_u8", U8, lambda m, x: m.adjust_hue(x, 0.2), EXACT),
    ("resize_images_same", U8, lambda m, x: m.resize_images(x, [5, 8]), EXACT),
    ("resize_images_nn_u8", U8, lambda m, x: m.resize_images(x, [9, 4], method=1), EXACT),
    ("resize_images_bilinear_u8", U8, lambda m, x: m.resize_images(x, [7, 13]), CLOSE),
    ("resize_images_aspect", F32, lambda m, x: m.resize_images(x, [12, 12], preserve_aspect_ratio=True), CLOSE),
    *[(f"resize_{k}_{size[0]}x{size[1]}_{'ac' if ac else 'hp' if hp else 'legacy'}", x,
       (lambda k, size, ac, hp: lambda m, x: getattr(m, f"resize_{k}")(x, size, align_corners=ac,
                                                                       half_pixel_centers=hp))(k, size, ac, hp), tol)
      for k, x, tol in (("bilinear", F32, CLOSE), ("nearest_neighbor", F32, EXACT), ("bicubic", F32, CLOSE),
                        ("bilinear", U8[None], CLOSE), ("nearest_neighbor", U8[None], EXACT))
      for size in ((13, 20), (4, 5), (1, 1), (6, 30))
      for ac, hp in ((False, False), (True, False), (False, True))],
]


def _tf(build):
    """TensorFlow's values of build() (tensors or a list of them), in graph mode: other tests may
    have turned eager execution off."""
    with tf.Graph().as_default():
        fetches = build()
        with tf.compat.v1.Session() as sess:
            return sess.run(fetches)


def _reference(fn, image):
    return _tf(lambda: fn(tf.compat.v1.image, tf.constant(image)))


def _pygrad(fn, image):
    with pg.Graph().as_default():
        x = pg.placeholder(pg.as_dtype(image.dtype), image.shape)
        y = fn(pg.image, x)
        with pg.Session() as sess:
            return sess.run(y, {x: image})


@pytest.mark.parametrize("image,fn,tol", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_tensorflow(image, fn, tol):
    want = _reference(fn, image)
    got = _pygrad(fn, image)
    assert got.dtype == want.dtype and got.shape == want.shape
    if tol == EXACT:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["bilinear", "bicubic", "nearest_neighbor"])
@pytest.mark.parametrize("ac,hp", [(False, False), (True, False), (False, True)])
def test_resize_gradient_matches_tensorflow(kind, ac, hp):
    dy = RNG.rand(2, 11, 4, 3).astype(np.float32)
    def build():
        x = tf.constant(F32)
        y = getattr(tf.compat.v1.image, f"resize_{kind}")(x, [11, 4], align_corners=ac, half_pixel_centers=hp)
        return tf.compat.v1.gradients(y, [x], grad_ys=[tf.constant(dy)])[0]
    want = _tf(build)
    with pg.Graph().as_default():
        xp = pg.placeholder(pg.float32, F32.shape)
        yp = getattr(pg.image, f"resize_{kind}")(xp, [11, 4], align_corners=ac, half_pixel_centers=hp)
        (g,) = pg.gradients(yp, [xp], grad_ys=[dy])
        with pg.Session() as sess:
            got = sess.run(g, {xp: F32})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_of_an_image_of_unknown_size():
    """The resize ops take sizes known only when the graph runs (a decoded image's)."""
    fn = lambda m, x: m.resize_images(x, [7, 3])  # noqa: E731
    with pg.Graph().as_default():
        x = pg.placeholder(pg.uint8, [None, None, 3])
        y = fn(pg.image, x)
        assert y.shape.as_list() == [7, 3, 3]
        with pg.Session() as sess:
            got = sess.run(y, {x: U8})
    np.testing.assert_allclose(got, _reference(fn, U8), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- random functions


RANDOM = [
    ("flip_lr", lambda x, s: pg.image.random_flip_left_right(x, seed=s),
     lambda x: [x, x[:, ::-1]]),
    ("flip_ud", lambda x, s: pg.image.random_flip_up_down(x, seed=s), lambda x: [x, x[::-1]]),
    ("crop", lambda x, s: pg.image.random_crop(x, [3, 5, 3], seed=s),
     lambda x: [x[i:i + 3, j:j + 5] for i in range(3) for j in range(4)]),
]


@pytest.mark.parametrize("fn,choices", [c[1:] for c in RANDOM], ids=[c[0] for c in RANDOM])
def test_random_choices(fn, choices):
    """Every draw is one of TF's possible results; a seeded graph repeats its draws in a new
    session (TF1's rule) and over runs they take more than one choice."""
    with pg.Graph().as_default():
        pg.set_random_seed(3)
        y = fn(pg.constant(U8), 5)
        runs = []
        for _ in range(2):
            with pg.Session() as sess:
                runs.append([sess.run(y) for _ in range(16)])
    assert all(np.array_equal(a, b) for a, b in zip(*runs))
    seen = set()
    for v in runs[0]:
        index = [i for i, c in enumerate(choices(U8)) if np.array_equal(v, c)]
        assert index, "a draw that TF could not make"
        seen.add(index[0])
    assert len(seen) > 1


def test_random_batch_flip_and_colour_ranges():
    with pg.Graph().as_default():
        x = pg.constant(F32)
        flips = pg.image.random_flip_left_right(x, seed=1)
        bright = pg.image.random_brightness(x, 0.25, seed=2)
        contrast = pg.image.random_contrast(x, 0.5, 1.5, seed=3)
        hue = pg.image.random_hue(x, 0.1, seed=4)
        sat = pg.image.random_saturation(x, 0.5, 1.5, seed=5)
        with pg.Session() as sess:
            for f, b, c, h, s in [sess.run([flips, bright, contrast, hue, sat]) for _ in range(4)]:
                for i in range(2):
                    assert np.array_equal(f[i], F32[i]) or np.array_equal(f[i], F32[i, :, ::-1])
                delta = b - F32
                assert np.allclose(delta, delta.flat[0], atol=1e-6) and abs(delta.flat[0]) <= 0.25
                assert not np.allclose(h, F32) and not np.allclose(s, F32) and not np.allclose(c, F32)


# ---------------------------------------------------------------- codecs

PIL = pytest.importorskip("PIL")


def _decode(fn, data):
    with pg.Graph().as_default():
        s = pg.placeholder(pg.string, [])
        y = fn(s)
        with pg.Session() as sess:
            return sess.run(y, {s: data})


@pytest.mark.parametrize("image", [U8, GRAY, np.concatenate([U8, U8[..., :1]], -1), U8[..., :2]],
                         ids=["rgb", "gray", "rgba", "gray_alpha"])
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_png_round_trip_bit_exact(image, channels):
    data = _tf(lambda: tf.io.encode_png(image))
    want = _tf(lambda: tf.io.decode_png(data, channels=channels))
    np.testing.assert_array_equal(_decode(lambda s: pg.image.decode_png(s, channels=channels), data), want)
    ours = _decode(lambda s: pg.image.encode_png(pg.constant(image)), b"")
    np.testing.assert_array_equal(_tf(lambda: tf.io.decode_png(ours)), image)


def test_png_16_bit_and_decode_image():
    image = (RNG.rand(6, 5, 1) * 65535).astype(np.uint16)
    data = _tf(lambda: tf.io.encode_png(image))
    np.testing.assert_array_equal(_decode(lambda s: pg.image.decode_png(s, dtype=pg.uint16), data), image)
    u8 = _tf(lambda: tf.io.encode_png(U8))
    for dtype in ("uint8", "uint16", "float32"):
        want = _tf(lambda: tf.io.decode_image(u8, dtype=dtype))
        got = _decode(lambda s: pg.image.decode_image(s, dtype=dtype), u8)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0)  # floats: TF's kernel divides by 255


@pytest.mark.parametrize("channels", [0, 1, 3])
def test_jpeg_decode(channels):
    """pygrad decodes with libjpeg's accurate integer DCT: TF's pixels with dct_method
    INTEGER_ACCURATE exactly; TF's default, the fast DCT, differs by a few levels."""
    smooth = np.clip(np.cumsum(RNG.randint(-9, 10, (48, 40, 3)), 1) + 128, 0, 255).astype(np.uint8)
    data = _tf(lambda: tf.io.encode_jpeg(smooth, quality=90))
    want = _tf(lambda: tf.io.decode_jpeg(data, channels=channels, dct_method="INTEGER_ACCURATE"))
    got = _decode(lambda s: pg.image.decode_jpeg(s, channels=channels), data)
    np.testing.assert_array_equal(got, want)
    fast = _tf(lambda: tf.io.decode_jpeg(data, channels=channels))
    assert np.abs(got.astype(int) - fast).mean() < 2  # about 1 level on this image
    ours = _decode(lambda s: pg.image.encode_jpeg(pg.constant(smooth), quality=95), b"")
    theirs = _tf(lambda: tf.io.encode_jpeg(smooth, quality=95))
    error = [np.abs(_tf(lambda: tf.io.decode_jpeg(d)).astype(int) - smooth).mean() for d in (ours, theirs)]
    assert error[0] < 1.5 * error[1] + 1, f"encode_jpeg's mean error {error[0]}, TF's {error[1]}"


# ---------------------------------------------------------------- bad input


BAD = [
    ("rank", lambda: pg.image.flip_left_right(pg.zeros([3, 3])), "must have 3 or 4 dimensions"),
    ("crop_outside", lambda: pg.image.crop_to_bounding_box(pg.zeros([4, 4, 3]), 2, 0, 3, 2), "height must be >="),
    ("pad_smaller", lambda: pg.image.pad_to_bounding_box(pg.zeros([4, 4, 3]), 0, 1, 4, 4), "width must be <="),
    ("fraction", lambda: pg.image.central_crop(pg.zeros([4, 4, 3]), 1.5), "within (0, 1]"),
    ("hue_delta", lambda: pg.image.random_hue(pg.zeros([4, 4, 3]), 0.7), "max_delta"),
    ("contrast_bounds", lambda: pg.image.random_contrast(pg.zeros([4, 4, 3]), 1.0, 0.5), "upper must be > lower"),
    ("resize_corners", lambda: pg.image.resize_bilinear(pg.zeros([1, 4, 4, 3]), [2, 2], align_corners=True,
                                                        half_pixel_centers=True), "align_corners must be False"),
    ("resize_area", lambda: pg.image.resize_images(pg.zeros([4, 4, 3]), [2, 2], method=3), "not implemented"),
    ("unknown_size", lambda: pg.image.resize_image_with_crop_or_pad(pg.placeholder(pg.uint8, [None, None, 3]), 2, 2),
     "height and width"),
]


@pytest.mark.parametrize("build,message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_names_the_call(build, message):
    with pg.Graph().as_default():
        with pytest.raises((ValueError, TypeError)) as e:
            build()
    assert message in str(e.value) and "test_image.py" in str(e.value)


def test_bad_file_is_an_error_of_the_op():
    with pytest.raises(pg.errors.InvalidArgumentError, match="DecodePng.*not a valid PNG"):
        _decode(lambda s: pg.image.decode_png(s), b"not a png")
