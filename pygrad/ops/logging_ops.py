"""tf.Print and tf.print: printing tensor values while a graph runs.

Both are host ops of stage AFTER (see host.py): the plan computes the values to print, then the
op's host function writes them to stderr, as TF's kernels do. tf.Print's output is its first input
(an alias in the plan), so it sits on a data path; how many times it has printed is state the
run's host context keeps per session, as TF keeps it in the session's kernel.
"""
import sys

import numpy as np

from pygrad.graph import Tensor
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.registry import AFTER, ALIAS, OpDef, Spec

PrintOp = OpDef("Print", lowering=ALIAS, host=AFTER)


@PrintOp.shape
def _(x, *data, message, first_n, summarize):
    return Spec(x.dtype, x.shape)


@PrintOp.grad
def _(op, dy):
    return [dy] + [None] * (len(op.inputs) - 1)


def _element(v):
    """One value as TF's StrAppend writes it: floats in the shortest of 6/9 (float32) or 15/17
    (float64) significant digits that reads back exactly."""
    if isinstance(v, (np.floating, float)):
        if np.isnan(v):
            return "nan"
        if np.isinf(v):
            return "inf" if v > 0 else "-inf"
        short, long_ = (6, 9) if isinstance(v, np.float32) else (15, 17)
        s = "%.*g" % (short, v)
        return s if type(v)(float(s)) == v else "%.*g" % (long_, v)
    if isinstance(v, (bytes, np.bytes_)):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def summarize_v1(value, summarize):
    """TF1's Tensor::SummarizeValue: the first `summarize` elements in row-major order, nested in
    brackets by dimension (PrintOneDim), then "..." if some were left out."""
    arr = np.asarray(value)
    flat = arr.reshape(-1)
    limit = flat.size if summarize is None or summarize < 0 else min(summarize, flat.size)
    if arr.ndim == 0:
        return " ".join(_element(x) for x in flat[:limit]) + ("..." if flat.size > limit else "")
    out, index = [], [0]

    def one_dim(dim):
        if index[0] >= limit:
            return
        count = arr.shape[dim]
        if dim == arr.ndim - 1:
            for i in range(count):
                if index[0] >= limit:
                    if dim != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(_element(flat[index[0]]))
                index[0] += 1
            return
        for _ in range(count):
            opened = index[0] < limit
            if opened:
                out.append("[")
            one_dim(dim + 1)
            if index[0] < limit or opened:
                out.append("]")

    one_dim(0)
    return "".join(out) + ("..." if flat.size > limit else "")


def c_escape(b):
    """absl's Utf8SafeCEscape of the bytes b: quotes, backslashes and control characters escaped C's
    way, bytes from 0x80 kept."""
    out = bytearray()
    for c in b:
        if c in _C_ESCAPES:
            out += _C_ESCAPES[c]
        elif c < 0x20 or c == 0x7f:
            out += b"\\%03o" % c
        else:
            out.append(c)
    return bytes(out)


_C_ESCAPES = {ord("\n"): b"\\n", ord("\r"): b"\\r", ord("\t"): b"\\t", ord('"'): b'\\"', ord("'"): b"\\'",
              ord("\\"): b"\\\\"}


def summarize_v2(value, summarize):
    """TF's Tensor::SummarizeValue with print_v2 (PrintOneDimV2), as tf.strings.format writes a
    tensor: numpy-style nested brackets with `summarize` items at each end of every dimension (all
    when negative) and "..." between, strings quoted and C-escaped. Returns bytes (strings' bytes
    are kept as they are)."""
    arr = np.asarray(value)
    arr = arr.astype(np.float32) if arr.dtype == np.float16 else arr  # TF prints a half as a float
    flat = arr.reshape(-1)
    limit = flat.size if summarize < 0 else min(summarize, flat.size)

    def one(v):
        if isinstance(v, bytes):
            return b'"' + c_escape(v) + b'"'
        return (str(int(v)) if isinstance(v, (bool, np.bool_)) else _element(v)).encode()

    if arr.ndim == 0:
        return b" ".join(one(v) for v in flat[:limit]) + (b"..." if flat.size > limit else b"")

    def spacing(dim):
        return b" " if dim == arr.ndim - 1 else b"\n" * (arr.ndim - dim - 1) + b" " * (dim + 1)

    def dim_text(dim, index):
        if dim == arr.ndim:
            return one(flat[index])
        count, step = arr.shape[dim], int(np.prod(arr.shape[dim + 1:]))
        text = spacing(dim).join(dim_text(dim + 1, index + step * i) for i in range(min(limit, count)))
        if count > 2 * limit:
            text += spacing(dim) + b"..."
        for i in range(max(limit, count - limit), count):
            text += spacing(dim) + dim_text(dim + 1, index + step * i)
        return b"[" + text + b"]"

    return dim_text(0, 0)


class _Printed:
    """How many more times a tf.Print op prints in a session (-1: always)."""

    __slots__ = ("left",)

    def __init__(self, first_n):
        self.left = first_n


@PrintOp.host
def _(ctx, op, values):
    printed = ctx.state(op, lambda: _Printed(op.attrs["first_n"]))
    if printed.left == 0:
        return
    printed.left -= 1 if printed.left > 0 else 0
    summarize = op.attrs["summarize"]
    sys.stderr.write(op.attrs["message"] + "".join(f"[{summarize_v1(v, summarize)}]" for v in values[1:]) + "\n")
    sys.stderr.flush()


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802 (TF's name)
    """Returns input_; each time it is computed (the first first_n times), writes message and the
    values of data (each summarized to `summarize` elements, 3 by default) to stderr."""
    x = convert_to_tensor(input_)
    data = [convert_to_tensor(d) for d in (data or [])]
    return PrintOp(x, *data, message=message or "", first_n=-1 if first_n is None else first_n,
                   summarize=3 if summarize is None else summarize, name=name or "Print")


PrintV2 = OpDef("PrintV2", host=AFTER, differentiable=False)


@PrintV2.shape
def _(*inputs, parts, output_stream, summarize, sep, end):
    return []


def _format_v2(value, summarize):
    arr = np.asarray(value)
    if arr.dtype.kind in "SO":
        arr = np.vectorize(lambda b: b.decode("utf-8", "backslashreplace") if isinstance(b, bytes) else b)(arr)
    if arr.ndim == 0:
        return _element(arr[()])
    edge = arr.size if summarize is None or summarize < 0 else summarize
    return np.array2string(arr, separator=" ", threshold=2 * edge, edgeitems=edge,
                           formatter={"all": lambda v: _element(v)})


@PrintV2.host
def _(ctx, op, values):
    a = op.attrs
    it = iter(values)
    text = a["sep"].join(_format_v2(next(it), a["summarize"]) if p is None else p for p in a["parts"])
    stream = sys.stderr if a["output_stream"] is None else a["output_stream"]
    if isinstance(stream, str):  # TF's "file://path" or "stderr"/"stdout"
        if stream.startswith("file://"):
            with open(stream[len("file://"):], "a") as f:
                f.write(text + a["end"])
            return
        stream = {"stderr": sys.stderr, "stdout": sys.stdout}[stream]
    stream.write(text + a["end"])
    stream.flush()


def print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    """tf.print: an op that writes its inputs (tensors, or Python values printed as they are) to
    output_stream (sys.stderr by default) when run, numpy-style with `summarize` elements at each
    end of each dimension."""
    parts = [convert_to_tensor(x) if isinstance(x, Tensor) or hasattr(x, "_as_graph_element") or
             isinstance(x, np.ndarray) else x for x in inputs]
    tensors = [p for p in parts if isinstance(p, Tensor)]
    # parts: the Python values' text, None where a tensor's value goes
    return PrintV2(*tensors, parts=[None if isinstance(p, Tensor) else str(p) for p in parts],
                   output_stream=output_stream, summarize=summarize, sep=sep, end=end, name=name or "PrintV2")
