"""DType objects (tf.float32, ...) and their NumPy and native counterparts."""
from __future__ import annotations

import builtins
import math
import os

import numpy as np

from pygrad import _C

# This machine's memory: a tensor, or a run's buffers, larger than it fail with a MemoryError that
# names the op when the graph or the plan is built, rather than when memory runs out.
MEMORY_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class DType:
    """A tensor element type. Compare with ``==``; ``as_numpy_dtype`` gives the NumPy type."""

    __slots__ = ("name", "np", "code")

    def __init__(self, name):
        self.name = name
        self.np = np.dtype(object if name == "string" else name)
        self.code = _C.dtypes.get(name)  # None: no native kernel holds it (string)

    @property
    def as_numpy_dtype(self):
        return self.np.type

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self.np.kind == "f"

    @property
    def is_integer(self):
        return self.np.kind in "iu"

    @property
    def is_unsigned(self):
        return self.np.kind == "u"

    @property
    def min(self):
        """The lowest value (TF's DType.min)."""
        if self.is_bool:
            return False
        return builtins.float(np.finfo(self.np).min) if self.is_floating else int(np.iinfo(self.np).min)

    @property
    def max(self):
        """The highest finite value (TF's DType.max)."""
        if self.is_bool:
            return True
        return builtins.float(np.finfo(self.np).max) if self.is_floating else int(np.iinfo(self.np).max)

    @property
    def is_bool(self):
        return self.np.kind == "b"

    @property
    def size(self):
        return self.np.itemsize

    def __repr__(self):
        return f"tf.{self.name}"

    def __reduce__(self):
        return as_dtype, (self.name,)


float32 = DType("float32")
float64 = DType("float64")
int32 = DType("int32")
int64 = DType("int64")
bool_ = DType("bool")
# Storage types (image data, quantized values, half precision): kept, fed, fetched, cast, moved
# (reshape, transpose, concat, gather, slice, tile, where, assign); arithmetic takes the five above.
uint8 = DType("uint8")
int8 = DType("int8")
int16 = DType("int16")
uint16 = DType("uint16")
float16 = DType("float16")
# Byte strings: constants, feeds and fetches, kept in Python (a NumPy object array of bytes).
string = DType("string")
float = float32  # noqa: A001  (TF1 accepted "float" for float32)
double = float64
half = float16

ALL_DTYPES = (float32, float64, int32, int64, bool_, uint8, int8, int16, uint16, float16)
_BY_NAME = {d.name: d for d in ALL_DTYPES + (string,)}
_BY_NAME.update({"float": float32, "double": float64, "bool_": bool_, "half": float16})
_BY_NP = {d.np: d for d in ALL_DTYPES + (string,)}

# What as_dtype takes (type hints of the public entry points).
DTypeLike = DType | str | np.dtype | builtins.type


def as_dtype(value):
    """Converts a DType, a name ("float", "float32", ...), a NumPy dtype or a Python type to a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is builtins.float:
        return float32
    if value is builtins.int:
        return int32
    if value in (builtins.str, builtins.bytes):
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NP:
        return _BY_NP[npd]
    if npd is not None and npd.kind in "SU":
        return string
    raise TypeError(f"Cannot convert {value!r} to a pygrad DType (supported: "
                    f"{', '.join(d.name for d in ALL_DTYPES)})")


def scalar_fits(v, target):
    """fits() for one Python int or float v and a NumPy dtype target (an int or float type)."""
    if target.kind == "f":
        return not (isinstance(v, builtins.float) and math.isfinite(v) and abs(v) > _FLOAT_MAX[target])
    lo, hi = _INT_RANGE[target]
    return lo <= v <= hi if not isinstance(v, builtins.float) else lo <= v < -lo


_FLOAT_MAX = {np.dtype(t): builtins.float(np.finfo(t).max) for t in ("float16", "float32", "float64")}
_INT_RANGE = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
              for t in ("uint8", "int8", "int16", "uint16", "int32", "int64")}


def as_bytes_array(value):
    """value (str, bytes, or nested lists or arrays of them) as a NumPy object array of bytes, str
    encoded as UTF-8, as TF holds strings; TypeError for anything else."""
    arr = np.asarray(value, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for i, v in enumerate(arr.flat):
        if isinstance(v, (str, np.str_)):
            v = v.encode("utf-8")
        elif not isinstance(v, (bytes, np.bytes_)):
            raise TypeError(f"Expected a string (str or bytes), got {v!r} of type {type(v).__name__}")
        out.flat[i] = bytes(v)
    return out


def is_string_value(value):
    """Whether value is a str or bytes, or an array or nested list holding only those (and at least one)."""
    arr = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if arr.dtype.kind in "SU":
        return True
    return arr.dtype.kind == "O" and arr.size > 0 and all(isinstance(v, (str, bytes)) for v in arr.flat)


def fits(arr, np_dtype):
    """Whether every element of arr (a NumPy array) keeps its value as np_dtype: integers within
    its range (floats must have integral values), and finite floats within a float type's range."""
    target = np.dtype(np_dtype)
    if arr.size == 0 or arr.dtype.kind == "b" or target.kind == "b":
        return True
    if arr.size == 1:  # a fed Python number: compared in Python, without NumPy's reductions
        return scalar_fits(arr.item(), target)
    lo, hi = arr.min(), arr.max()
    if target.kind == "f":
        finite = np.finfo(target).max
        return arr.dtype.kind != "f" or not bool(np.any(np.isfinite(arr) & (np.abs(arr) > finite)))
    info = np.iinfo(target)
    if arr.dtype.kind == "f":  # as a float, info.max rounds up to -info.min, which does not fit
        return bool(lo >= info.min and hi < -float(info.min))
    return int(lo) >= info.min and int(hi) <= info.max
