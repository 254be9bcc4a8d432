"""What TensorFlow's summary kernels compute from a tensor's values, byte for byte:

    histogram(values)          HistogramProto with TF1's default buckets (lib/histogram/histogram.cc)
    float_image_to_uint8(x)    the rescaling of float images (kernels/summary_image_op.cc)
    png(image)                 PNG as TensorFlow's libpng writer makes it (lib/png/png_io.cc, zlib)
    wav(audio, sample_rate)    16-bit PCM WAV (lib/wav/wav_io.cc)
"""
import struct
import sys
import zlib

import numpy as np

DBL_MAX = sys.float_info.max


def _default_bucket_limits():
    """Buckets growing by 10% from 1e-12 to 1e20, mirrored for negatives, with 0 and +-DBL_MAX."""
    buckets, v = [], 1.0e-12
    while v < 1.0e20:
        buckets.append(v)
        v *= 1.1
    buckets.append(DBL_MAX)
    return np.array([-b for b in reversed(buckets)] + [0.0] + buckets)


BUCKET_LIMITS = _default_bucket_limits()


def histogram(values):
    """The HistogramProto of finite values (any real dtype), empty buckets collapsed into runs as
    Histogram::EncodeToProto(preserve_zero_buckets=false) does; sums accumulate in order, as TF's."""
    from pygrad.tf_protos import HistogramProto
    v = np.asarray(values).astype(np.float64).ravel()
    counts = np.bincount(np.searchsorted(BUCKET_LIMITS, v, side="right"), minlength=len(BUCKET_LIMITS))
    h = HistogramProto(min=float(v.min()) if v.size else DBL_MAX, max=float(v.max()) if v.size else -DBL_MAX,
                       num=float(v.size), sum=float(np.cumsum(v)[-1]) if v.size else 0.0,
                       sum_squares=float(np.cumsum(v * v)[-1]) if v.size else 0.0)
    i, n = 0, len(counts)
    while i < n:
        end, count = BUCKET_LIMITS[i], counts[i]
        i += 1
        if count <= 0:
            while i < n and counts[i] <= 0:
                end, count = BUCKET_LIMITS[i], counts[i]
                i += 1
        h.bucket_limit.append(float(end))
        h.bucket.append(float(count))
    return h


def float_image_to_uint8(image, bad_color):
    """A [h, w, depth] float image as uint8: scaled by 255 / max when no pixel is negative, else by
    127 / max|x| around 128; pixels with a non-finite channel become bad_color."""
    dtype = image.dtype.type
    pixels = image.reshape(-1, image.shape[-1])
    finite = np.isfinite(pixels).all(axis=1)
    good = pixels[finite].astype(np.float32)
    lo = np.float32(good.min()) if good.size else np.float32(np.inf)
    hi = np.float32(good.max()) if good.size else np.float32(-np.inf)
    if lo < 0:
        max_val = max(abs(lo), abs(hi))
        scale, offset = np.float32(0.0) if max_val < np.float32(1e-6) else np.float32(127.0) / max_val, 128.0
    else:
        scale, offset = np.float32(0.0) if hi < np.float32(1e-6) else np.float32(255.0) / hi, 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        out = (pixels * dtype(scale) + dtype(offset)).astype(np.uint8)
    out[~finite] = np.asarray(bad_color, np.uint8)[:image.shape[-1]]
    return out.reshape(image.shape)


# ---------------------------------------------------------------- PNG (libpng 1.6's writer)

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ZBUF_SIZE = 8192  # libpng writes the compressed stream in IDAT chunks of this size


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _filter_row(row, prev, bpp):
    """libpng's adaptive filter choice: the filtered row (type byte first) whose bytes, read as
    signed, have the smallest sum of magnitudes; ties go to the earlier of None, Sub, Up, Avg, Paeth."""
    r, p = row.astype(np.int32), prev.astype(np.int32)
    left = np.concatenate([np.zeros(bpp, np.int32), r[:-bpp]])
    upleft = np.concatenate([np.zeros(bpp, np.int32), p[:-bpp]])
    pa, pb, pc = np.abs(p - upleft), np.abs(left - upleft), np.abs(p + left - 2 * upleft)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, p, upleft))
    candidates = [r, r - left, r - p, r - (p + left) // 2, r - paeth]
    best, best_sum = None, None
    for kind, c in enumerate(candidates):
        c = c & 0xFF
        total = int(np.where(c < 128, c, 256 - c).sum())
        if best is None or total < best_sum:
            best, best_sum = (kind, c), total
    return bytes([best[0]]) + best[1].astype(np.uint8).tobytes()


def png(image):
    """PNG of a [h, w, channels] uint8 image (1: gray, 2: gray+alpha, 3: RGB, 4: RGBA), as
    png::WriteImageToBuffer writes it: zlib's default level, memory level 9, the filtered
    strategy, all five filters tried per row (only None and Sub for one row, as libpng), the zlib
    window shrunk to the image's size and IDAT chunks of 8192 bytes."""
    h, w, channels = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = image.reshape(h, w * channels)
    filters = [0, 1, 2, 3, 4] if h > 1 else [0, 1]
    if w == 1:
        filters = [f for f in filters if f in (0, 2)]
    prev = np.zeros(w * channels, np.uint8)
    raw = []
    for row in rows:
        if len(filters) == 1:
            raw.append(b"\x00" + row.tobytes())
        else:
            raw.append(_filter_row_among(row, prev, channels, filters))
        prev = row
    data = b"".join(raw)
    strategy = zlib.Z_FILTERED if filters != [0] else zlib.Z_DEFAULT_STRATEGY
    stream = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, _window_bits(len(data)), 9, strategy)
    compressed = bytearray(stream.compress(data) + stream.flush())
    _optimize_cmf(compressed, len(data))
    idat = b"".join(_chunk(b"IDAT", bytes(compressed[i:i + _ZBUF_SIZE])) for i in range(0, len(compressed), _ZBUF_SIZE))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return _PNG_SIGNATURE + _chunk(b"IHDR", ihdr) + idat + _chunk(b"IEND", b"")


def _filter_row_among(row, prev, bpp, filters):
    if filters == [0, 1, 2, 3, 4]:
        return _filter_row(row, prev, bpp)
    # One row (no Up, Avg or Paeth) or one column (no Sub, Avg or Paeth): the same rule, fewer filters.
    r = row.astype(np.int32)
    left = np.concatenate([np.zeros(bpp, np.int32), r[:-bpp]])
    options = {0: r, 1: r - left, 2: r - prev.astype(np.int32)}
    best = None
    for kind in filters:
        c = options[kind] & 0xFF
        total = int(np.where(c < 128, c, 256 - c).sum())
        if best is None or total < best[0]:
            best = (total, kind, c)
    return bytes([best[1]]) + best[2].astype(np.uint8).tobytes()


def _window_bits(size):
    """png_deflate_claim: a window no larger than the data needs (plus zlib's 262 bytes)."""
    bits = 15
    if size <= 16384:
        half = 1 << (bits - 1)
        while size + 262 <= half:
            half >>= 1
            bits -= 1
    return max(bits, 9)


def _optimize_cmf(data, size):
    """libpng's optimize_cmf: the zlib header names the smallest window that covers the data."""
    if size > 16384:
        return
    cmf = data[0]
    if (cmf & 0x0F) != 8 or (cmf & 0xF0) > 0x70:
        return
    cinfo = cmf >> 4
    half = 1 << (cinfo + 7)
    if size <= half:
        while True:
            half >>= 1
            cinfo -= 1
            if not (cinfo > 0 and size <= half):
                break
        cmf = (cmf & 0x0F) | (cinfo << 4)
        data[0] = cmf
        flg = data[1] & 0xE0
        flg += 0x1F - ((cmf << 8) + flg) % 0x1F
        data[1] = flg


def read_png(data):
    """The [h, w, channels] uint8 pixels of an 8-bit non-interlaced PNG: the inverse of png()."""
    if data[:8] != _PNG_SIGNATURE:
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    w, h, _, color_type, _, _, _ = header
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color_type]
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    out, prev = np.zeros((h, stride), np.uint8), np.zeros(stride, np.int32)
    for y in range(h):
        kind, line = raw[y * (stride + 1)], np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            pred = [0, a, b, (a + b) // 2, _paeth(a, b, c)][kind]
            cur[x] = (line[x] + pred) & 0xFF
        out[y], prev = cur, cur
    return out.reshape(h, w, channels)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


# ---------------------------------------------------------------- WAV


def wav(audio, sample_rate):
    """16-bit little-endian PCM WAV of [frames, channels] float audio in [-1, 1] (clipped):
    round(x * 32768) with halves away from zero, as wav::EncodeAudioAsS16LEWav."""
    frames, channels = audio.shape
    x = audio.astype(np.float64) * 32768.0
    samples = np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), -32768, 32767).astype("<i2").tobytes()
    header = (b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE" + b"fmt " +
              struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * channels * 2, channels * 2, 16) +
              b"data" + struct.pack("<I", len(samples)))
    return header + samples

