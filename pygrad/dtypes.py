"""DType objects (tf.float32, ...) and their NumPy and native counterparts."""
import builtins
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
        self.np = np.dtype(name)
        self.code = _C.dtypes[name]

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
        return self.np.kind == "i"

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
float = float32  # noqa: A001  (TF1 accepted "float" for float32)
double = float64

_BY_NAME = {d.name: d for d in (float32, float64, int32, int64, bool_)}
_BY_NAME.update({"float": float32, "double": float64, "bool_": bool_})
_BY_NP = {d.np: d for d in (float32, float64, int32, int64, bool_)}


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
    try:
        npd = np.dtype(value)
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NP:
        return _BY_NP[npd]
    raise TypeError(f"Cannot convert {value!r} to a pygrad DType (supported: float32, float64, int32, int64, bool)")


def fits(arr, np_dtype):
    """Whether every element of arr (a NumPy array) keeps its value as np_dtype: integers within
    its range (floats must have integral values), and finite floats within a float type's range."""
    target = np.dtype(np_dtype)
    if arr.size == 0 or arr.dtype.kind == "b" or target.kind == "b":
        return True
    lo, hi = arr.min(), arr.max()
    if target.kind == "f":
        finite = np.finfo(target).max
        return arr.dtype.kind != "f" or not bool(np.any(np.isfinite(arr) & (np.abs(arr) > finite)))
    info = np.iinfo(target)
    if arr.dtype.kind == "f":  # as a float, info.max rounds up to -info.min, which does not fit
        return bool(lo >= info.min and hi < -float(info.min))
    return int(lo) >= info.min and int(hi) <= info.max
