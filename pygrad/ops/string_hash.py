"""TF's string hashes, bit for bit, and the ops built on them: tf.string_to_hash_bucket_fast
(FarmHash's Fingerprint64, farmhashna::Hash64), tf.string_to_hash_bucket_strong (SipHash-2-4
with a 128-bit key), tf.string_to_hash_bucket (TF's legacy Hash64, a MurmurHash2 variant of
tensorflow/core/lib/hash/hash.cc, seed 0xDECAFCAFFE) and tf.fingerprint (Fingerprint64 of each
row, little-endian bytes). Feature columns' hash buckets depend on these agreeing with TF's.
Host ops of stage BETWEEN (see host.py): strings are bytes in Python.
"""
import struct

import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import constant_value, convert_to_tensor
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail, fail_dtype

M64 = (1 << 64) - 1


def _rot(v, shift):
    """Rotate right, as farmhash's Rotate64."""
    return v if shift == 0 else (v >> shift | v << (64 - shift)) & M64


def _fetch64(s, i):
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s, i):
    return int.from_bytes(s[i:i + 4], "little")


# ---------------------------------------------------------------- FarmHash Fingerprint64 (farmhashna)
_K0, _K1, _K2 = 0xc3a5c85c97cb3127, 0xb492b66fbe98f273, 0x9ae16a3b2f90404f
_K_MUL = 0x9ddfea08eb382d69  # Hash128to64's multiplier


def _shift_mix(v):
    return v ^ (v >> 47)


def _hash_len16(u, v, mul=_K_MUL):
    a = ((u ^ v) * mul) & M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & M64
    b ^= b >> 47
    return (b * mul) & M64


def _len_0_to_16(s, n):
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & M64
        b = _fetch64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & M64
        d = ((_rot(a, 25) + b) * mul) & M64
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _hash_len16((n + (_fetch32(s, 0) << 3)) & M64, _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & M64) * _K2) & M64
    return _K2


def _len_17_to_32(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & M64
    d = (_fetch64(s, n - 16) * _K2) & M64
    return _hash_len16((_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64, (a + _rot((b + _K2) & M64, 18) + c) & M64,
                       mul)


def _len_33_to_64(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & M64
    d = (_fetch64(s, n - 16) * _K2) & M64
    y = (_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64
    z = _hash_len16(y, (a + _rot((b + _K2) & M64, 18) + c) & M64, mul)
    e = (_fetch64(s, 16) * mul) & M64
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & M64
    h = ((z + _fetch64(s, n - 24)) * mul) & M64
    return _hash_len16((_rot((e + f) & M64, 43) + _rot(g, 30) + h) & M64, (e + _rot((f + a) & M64, 18) + g) & M64,
                       mul)


def _weak_len32(s, i, a, b):
    """farmhashna's WeakHashLen32WithSeeds of s[i:i + 32], a and b."""
    w, x, y, z = _fetch64(s, i), _fetch64(s, i + 8), _fetch64(s, i + 16), _fetch64(s, i + 24)
    a = (a + w) & M64
    b = _rot((b + a + z) & M64, 21)
    c = a
    a = (a + x + y) & M64
    b = (b + _rot(a, 44)) & M64
    return (a + z) & M64, (b + c) & M64


def fingerprint64(s):
    """FarmHash's Fingerprint64 of the bytes s (farmhashna::Hash64), as TF's Fingerprint64."""
    n = len(s)
    if n <= 16:
        return _len_0_to_16(s, n)
    if n <= 32:
        return _len_17_to_32(s, n)
    if n <= 64:
        return _len_33_to_64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & M64
    z = (_shift_mix((y * _K2 + 113) & M64) * _K2) & M64
    v, w = (0, 0), (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & M64
    end = ((n - 1) // 64) * 64
    last64 = n - 64
    for i in range(0, end, 64):
        x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & M64, 37) * _K1) & M64
        y = (_rot((y + v[1] + _fetch64(s, i + 48)) & M64, 42) * _K1) & M64
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & M64
        z = (_rot((z + w[0]) & M64, 33) * _K1) & M64
        v = _weak_len32(s, i, (v[1] * _K1) & M64, (x + w[0]) & M64)
        w = _weak_len32(s, i + 32, (z + w[1]) & M64, (y + _fetch64(s, i + 16)) & M64)
        z, x = x, z
    mul = _K1 + ((z & 0xff) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & M64
    v0 = (v[0] + w0) & M64
    w0 = (w0 + v0) & M64
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & M64, 37) * mul) & M64
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & M64, 42) * mul) & M64
    x ^= (w[1] * 9) & M64
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & M64
    z = (_rot((z + w[0]) & M64, 33) * mul) & M64
    v = _weak_len32(s, i, (v[1] * mul) & M64, (x + w[0]) & M64)
    w = _weak_len32(s, i + 32, (z + w[1]) & M64, (y + _fetch64(s, i + 16)) & M64)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & M64,
                       (_hash_len16(v[1], w[1], mul) + x) & M64, mul)


# ---------------------------------------------------------------- SipHash-2-4
def _sip_round(v0, v1, v2, v3):
    v0 = (v0 + v1) & M64
    v1 = _rot(v1, 64 - 13) ^ v0
    v0 = _rot(v0, 32)
    v2 = (v2 + v3) & M64
    v3 = _rot(v3, 64 - 16) ^ v2
    v0 = (v0 + v3) & M64
    v3 = _rot(v3, 64 - 21) ^ v0
    v2 = (v2 + v1) & M64
    v1 = _rot(v1, 64 - 17) ^ v2
    v2 = _rot(v2, 32)
    return v0, v1, v2, v3


def siphash24(key, s):
    """SipHash-2-4 of the bytes s with the key (k0, k1) of two unsigned 64-bit words."""
    k0, k1 = key
    v0, v1, v2, v3 = k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573
    n = len(s)
    tail = n - n % 8
    for i in range(0, tail + 8, 8):  # the 8-byte words, then the tail with the length in the top byte
        m = _fetch64(s, i) if i < tail else int.from_bytes(s[tail:], "little") | (n & 0xff) << 56
        v3 ^= m
        for _ in range(2):
            v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0 ^= m
    v2 ^= 0xff
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


# ---------------------------------------------------------------- TF's legacy Hash64
def legacy_hash64(s, seed=0xDECAFCAFFE):
    """tensorflow/core/lib/hash/hash.cc's Hash64 (MurmurHash64A's mixing) of the bytes s."""
    m, r = 0xc6a4a7935bd1e995, 47
    n = len(s)
    h = (seed ^ (n * m)) & M64
    body = n - n % 8
    for i in range(0, body, 8):
        k = (_fetch64(s, i) * m) & M64
        k ^= k >> r
        k = (k * m) & M64
        h = ((h ^ k) * m) & M64
    if n % 8:
        h = ((h ^ int.from_bytes(s[body:], "little")) * m) & M64
    h ^= h >> r
    h = (h * m) & M64
    return h ^ (h >> r)


# ---------------------------------------------------------------- the ops
StringToHashBucketFast = OpDef("StringToHashBucketFast", host=BETWEEN, differentiable=False)
StringToHashBucketStrong = OpDef("StringToHashBucketStrong", host=BETWEEN, differentiable=False)
StringToHashBucket = OpDef("StringToHashBucket", host=BETWEEN, differentiable=False)


def _bucket_spec(strings, num_buckets):
    if strings.dtype != dtypes.string:
        fail_dtype(f"input must be a string tensor, got {strings.dtype.name}")
    if num_buckets < 1:
        fail(f"num_buckets must be at least 1, got {num_buckets}")
    return Spec(dtypes.int64, strings.shape)


@StringToHashBucketFast.shape
def _(strings, *, num_buckets):
    return _bucket_spec(strings, num_buckets)


@StringToHashBucket.shape
def _(strings, *, num_buckets):
    return _bucket_spec(strings, num_buckets)


@StringToHashBucketStrong.shape
def _(strings, *, num_buckets, key):
    if len(key) != 2:
        fail(f"Key must have 2 elements, got {len(key)}")
    return _bucket_spec(strings, num_buckets)


_HASHES = {"StringToHashBucketFast": lambda attrs: fingerprint64,
           "StringToHashBucketStrong": lambda attrs: lambda s: siphash24([k & M64 for k in attrs["key"]], s),
           "StringToHashBucket": lambda attrs: legacy_hash64}


def _buckets(ctx, op, values):
    hash_fn, n = _HASHES[op.type](op.attrs), op.attrs["num_buckets"]
    strings = np.asarray(values[0], dtype=object)
    return [np.array([hash_fn(s) % n for s in strings.reshape(-1)], np.int64).reshape(strings.shape)]


for _op in (StringToHashBucketFast, StringToHashBucketStrong, StringToHashBucket):
    _op.host(_buckets)


def string_to_hash_bucket_fast(input, num_buckets, name=None):
    """Each string's bucket in [0, num_buckets): FarmHash Fingerprint64 mod num_buckets (TF's, bit for bit)."""
    return StringToHashBucketFast(convert_to_tensor(input), num_buckets=int(num_buckets),
                                  name=name or "StringToHashBucketFast")


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):
    """Each string's bucket in [0, num_buckets): SipHash-2-4 under the key (two ints) mod num_buckets."""
    return StringToHashBucketStrong(convert_to_tensor(input), num_buckets=int(num_buckets), key=[int(k) for k in key],
                                    name=name or "StringToHashBucketStrong")


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None, input=None):
    """Each string's bucket in [0, num_buckets): TF's legacy Hash64 mod num_buckets (prefer the _fast one)."""
    strings = string_tensor if string_tensor is not None else input
    return StringToHashBucket(convert_to_tensor(strings), num_buckets=int(num_buckets),
                              name=name or "StringToHashBucket")


Fingerprint = OpDef("Fingerprint", host=BETWEEN, differentiable=False)


@Fingerprint.shape
def _(data, method):
    if data.dtype not in dtypes.ALL_DTYPES + (dtypes.string,):
        fail_dtype(f"Data type not supported: {data.dtype.name}")
    if method.dtype != dtypes.string or method.shape.ndims not in (None, 0):
        fail(f"`method` should be a scalar string, got a {method.dtype.name} tensor of shape {method.shape}")
    known = constant_value(method)
    if known is not None and known.size == 1 and known.item() != b"farmhash64":
        fail(f"Unsupported method: {known.item().decode('utf-8', 'replace')}")  # TF's shape rule's words
    if data.shape.ndims == 0:
        fail(f"`data` should have at least one dimension: {data.shape}")
    return Spec(dtypes.uint8, data.shape[:1].concatenate([8]) if data.shape.ndims is not None else [None, 8])


@Fingerprint.host
def _(ctx, op, values):
    data, method = np.asarray(values[0]), np.asarray(values[1], dtype=object).item()
    if method != b"farmhash64":
        raise HostError(f"Unsupported fingerprint method: {method.decode('utf-8', 'replace')}")
    rows = data.reshape(len(data), -1) if len(data) else data.reshape(0, 0)
    if data.dtype == object:  # one string a row: its fingerprint; several: the fingerprint of theirs
        rows = [r[0] if len(r) == 1 else b"".join(struct.pack("<Q", fingerprint64(s)) for s in r) for r in rows]
    else:
        rows = [np.ascontiguousarray(r).astype(r.dtype.newbyteorder("<")).tobytes() for r in rows]
    out = np.frombuffer(b"".join(struct.pack("<Q", fingerprint64(r)) for r in rows), np.uint8)
    return [out.reshape(len(rows), 8)]


def fingerprint(data, method="farmhash64", name=None):
    """An 8-byte fingerprint of each row data[i, ...] (uint8, little-endian FarmHash Fingerprint64 of
    the row's bytes; of a row of strings, of their fingerprints), as tf.fingerprint."""
    data = convert_to_tensor(data)
    with data.graph.as_default():
        method = convert_to_tensor(method, dtypes.string)
    return Fingerprint(data, method, name=name or "Fingerprint")
