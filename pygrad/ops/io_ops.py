"""Ops on whole files: tf.read_file (a file's bytes as a string scalar), tf.write_file (a string
written to a file, its directories made as TF makes them) and tf.matching_files (the sorted names
that glob patterns match). They run in Python: reading ones at stage BETWEEN, writing at stage
AFTER (see host.py); a missing file is TF's NotFoundError naming the op and its line.
"""
import glob
import os

import numpy as np

from pygrad import dtypes, errors
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.registry import AFTER, BETWEEN, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape


def _strings(t, what):
    if t.dtype != dtypes.string:
        fail_dtype(f"{what} must be a string tensor, got {t.dtype.name}")


def _path(value):
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


ReadFile = OpDef("ReadFile", host=BETWEEN, differentiable=False)


@ReadFile.shape
def _(filename):
    _strings(filename, "filename")
    if filename.shape.ndims not in (None, 0):
        fail(f"filename must be a scalar, got shape {filename.shape}")
    return Spec(dtypes.string, TensorShape([]))


@ReadFile.host
def _(ctx, op, values):
    path = _path(values[0])
    try:
        with open(path, "rb") as f:
            return [np.array(f.read(), dtype=object)]
    except FileNotFoundError:
        raise errors.NotFoundError(None, op, op.error(f"{path}; No such file or directory")) from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, op, op.error(f"{path}; Is a directory")) from None


def read_file(filename, name=None):
    """The bytes of the file named filename, as a string scalar."""
    return ReadFile(convert_to_tensor(filename), name=name or "ReadFile")


WriteFile = OpDef("WriteFile", host=AFTER, differentiable=False)


@WriteFile.shape
def _(filename, contents):
    _strings(filename, "filename")
    _strings(contents, "contents")
    for t, what in ((filename, "filename"), (contents, "contents")):
        if t.shape.ndims not in (None, 0):
            fail(f"{what} must be a scalar, got shape {t.shape}")
    return []


@WriteFile.host
def _(ctx, op, values):
    path = _path(values[0])
    contents = values[1].item() if isinstance(values[1], np.ndarray) else values[1]
    try:
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(contents.encode("utf-8") if isinstance(contents, str) else contents)
    except OSError as e:
        raise errors.PermissionDeniedError(None, op, op.error(f"{path}; {e.strerror}")) from None


def write_file(filename, contents, name=None):
    """An op that writes contents (a string scalar) to the file filename when run."""
    return WriteFile(convert_to_tensor(filename), convert_to_tensor(contents), name=name or "WriteFile")


MatchingFiles = OpDef("MatchingFiles", host=BETWEEN, differentiable=False)


@MatchingFiles.shape
def _(pattern):
    _strings(pattern, "pattern")
    if pattern.shape.ndims not in (None, 0, 1):
        fail(f"pattern must be a scalar or a vector, got shape {pattern.shape}")
    return Spec(dtypes.string, TensorShape([None]))


def matching_names(patterns):
    """The sorted file names any of patterns (str or bytes, glob syntax) match."""
    names = [name for p in patterns for name in glob.glob(_path(p))]
    return sorted(names)


@MatchingFiles.host
def _(ctx, op, values):
    names = matching_names(np.asarray(values[0], dtype=object).reshape(-1))
    out = np.empty(len(names), object)
    out[:] = [n.encode("utf-8") for n in names]
    return [out]


def matching_files(pattern, name=None):
    """The names of the files that pattern (a glob, or a vector of them) matches, sorted."""
    return MatchingFiles(convert_to_tensor(pattern), name=name or "MatchingFiles")
