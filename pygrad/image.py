"""tf.image: TF1's image functions and ops (geometry, dtype conversion, colour, resizing, and the
JPEG and PNG codecs), under their TF1 names and aliases."""
from pygrad.ops.image_codec import decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png  # noqa: F401
from pygrad.ops.image_color import (adjust_brightness, adjust_contrast, adjust_hue, adjust_saturation,  # noqa: F401
                                    hsv_to_rgb, random_brightness, random_contrast, random_hue, random_saturation,
                                    rgb_to_hsv)
from pygrad.ops.image_ops import (central_crop, convert_image_dtype, crop_to_bounding_box, flip_left_right,  # noqa: F401
                                  flip_up_down, grayscale_to_rgb, pad_to_bounding_box, per_image_standardization,
                                  random_crop, random_flip_left_right, random_flip_up_down,
                                  resize_image_with_crop_or_pad, rgb_to_grayscale, rot90, transpose_image)
from pygrad.ops.image_resize import (ResizeMethod, resize_bicubic, resize_bilinear, resize_images,  # noqa: F401
                                     resize_nearest_neighbor)

resize = resize_images
resize_with_crop_or_pad = resize_image_with_crop_or_pad
transpose = transpose_image
