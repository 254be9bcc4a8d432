"""TF1's string ops (tf.strings): as_string, string_join, length, substr, strip, lower/upper,
regex_replace, regex_full_match and reduce_join, with TF's kernels' semantics and messages. Strings
are bytes in Python, so these are host ops of stage BETWEEN (see host.py). The hash ops are in
string_hash.py, RE2's syntax in re2_syntax.py; tf.strings.to_number is decode_ops.string_to_number.
"""
import numpy as np

from pygrad import dtypes, errors
from pygrad.graph import Tensor
from pygrad.ops import re2_syntax
from pygrad.ops.array_ops import constant_value, convert_to_tensor
from pygrad.ops.logging_ops import summarize_v2
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape, broadcast_shape


def _require_strings(t, what):
    if t.dtype != dtypes.string:
        fail_dtype(f"{what} must be a string tensor, got {t.dtype.name}")


def _strings(value):
    return np.asarray(value, dtype=object)


def _map(fn, value, out_dtype=object):
    """fn of each string of value, in value's shape."""
    strings = _strings(value)
    out = np.empty(strings.shape, out_dtype)
    out.reshape(-1)[...] = [fn(s) for s in strings.reshape(-1)] if strings.size else []
    return out


def _shape_text(shape):
    """A concrete shape as TF's TensorShape::DebugString writes it: [2,3]."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def _string_tensor(value):
    return convert_to_tensor(value, dtype_hint=dtypes.string)


# ---------------------------------------------------------------- as_string
AsString = OpDef("AsString", host=BETWEEN, differentiable=False)
_AS_STRING_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16, dtypes.int32,
                    dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.bool_, dtypes.string)
_PRINTF_FLAGS = ("", "-", "+", " ", "#", "0")


@AsString.shape
def _(x, *, precision, scientific, shortest, width, fill):
    if x.dtype not in _AS_STRING_TYPES:
        fail_dtype(f"input must be one of {', '.join(d.name for d in _AS_STRING_TYPES)}, got {x.dtype.name}")
    if not x.dtype.is_floating:
        if scientific or shortest:
            fail(f"scientific and shortest format not supported for datatype {x.dtype.name}")
        if precision >= 0:
            fail(f"precision not supported for datatype {x.dtype.name}")
    if len(fill) > 1:
        fail("Fill string must be one or fewer characters")
    if fill not in _PRINTF_FLAGS:
        fail(f"fill {fill!r}: TF passes it to printf as a flag, so pygrad takes one of {_PRINTF_FLAGS[1:]} or ''")
    if scientific and shortest:
        fail("Cannot select both scientific and shortest notation")
    return Spec(dtypes.string, x.shape)


def _printf(a):
    """The printf format TF's AsString builds from the attributes."""
    return ("%" + (f"{a['fill']}{a['width']}" if a["width"] > -1 else "") +
            (f".{a['precision']}" if a["precision"] > -1 else ""))


@AsString.host
def _(ctx, op, values):
    x, a = np.asarray(values[0]), op.attrs
    if x.dtype == np.bool_:
        return [_map(lambda v: b"true" if v else b"false", x)]
    if x.dtype == object:
        fmt = (_printf(a) + "s").encode()
        return [_map(lambda v: fmt % v, x)]
    if x.dtype.kind in "iu":
        fmt = _printf(a) + "d"
        return [_map(lambda v: (fmt % int(v)).encode(), x)]
    conversion = "g" if a["shortest"] else "e" if a["scientific"] else "f"
    fmt = _printf(a) + conversion
    # glibc pads inf and nan with spaces even with the 0 flag, and prints NaN's sign (Python drops it)
    fmt_inf = _printf({**a, "fill": "" if a["fill"] == "0" else a["fill"]}) + conversion

    def one(v):
        v = float(v)
        if np.isnan(v):
            return (fmt_inf % (-np.inf if np.signbit(v) else np.inf)).replace("inf", "nan").encode()
        return (fmt_inf % v if np.isinf(v) else fmt % v).encode()
    return [_map(one, x)]


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):
    """Each number (or bool, or string) as text, printf's way: %f (%e with scientific, %g with
    shortest), `precision` digits, padded to `width` with `fill` ('' for spaces, or '0', '-', '+', ' ', '#')."""
    return AsString(convert_to_tensor(input), precision=int(precision), scientific=bool(scientific),
                    shortest=bool(shortest), width=int(width), fill=fill, name=name or "AsString")


# ---------------------------------------------------------------- string_join
StringJoin = OpDef("StringJoin", host=BETWEEN, differentiable=False)


@StringJoin.shape
def _(*inputs, separator):
    for t in inputs:
        _require_strings(t, "inputs")
    if all(t.shape.ndims == 0 for t in inputs):
        return Spec(dtypes.string, [])
    out = TensorShape(None)
    for t in inputs:
        if t.shape.ndims != 0 and t.shape.ndims is not None:
            if not out.is_compatible_with(t.shape):
                fail(f"Input shapes do not match: {out} vs. {t.shape}")
            out = out.merge_with(t.shape)
    return Spec(dtypes.string, out)


@StringJoin.host
def _(ctx, op, values):
    arrays = [_strings(v) for v in values]
    shape = ()
    for a in arrays:
        if a.ndim:
            if shape and a.shape != shape:
                raise HostError(f"Input shapes do not match: {_shape_text(shape)} vs. {_shape_text(a.shape)}")
            shape = a.shape
    sep = op.attrs["separator"].encode()
    columns = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
    out = np.empty(shape, object)
    out.reshape(-1)[...] = [sep.join(parts) for parts in zip(*columns)] if out.size else []
    return [out]


def string_join(inputs, separator="", name=None):
    """The strings of inputs joined with separator, element by element (scalars go with every element)."""
    tensors = [_string_tensor(t) for t in inputs]
    if not tensors:
        raise StringJoin.error("inputs must hold at least one tensor", name)
    return StringJoin(*tensors, separator=separator, name=name or "StringJoin")


# ---------------------------------------------------------------- length
StringLength = OpDef("StringLength", host=BETWEEN, differentiable=False)
_UNITS = ("BYTE", "UTF8_CHAR")


def _check_unit(unit):
    if unit not in _UNITS:
        fail(f"unit must be one of {_UNITS}, got {unit!r}")


def _is_trail(byte):
    return 0x80 <= byte < 0xC0


@StringLength.shape
def _(x, *, unit):
    _require_strings(x, "input")
    _check_unit(unit)
    return Spec(dtypes.int32, x.shape)


@StringLength.host
def _(ctx, op, values):
    if op.attrs["unit"] == "BYTE":
        return [_map(len, values[0], np.int32)]
    return [_map(lambda s: sum(not _is_trail(b) for b in s), values[0], np.int32)]


def length(input, name=None, unit="BYTE"):
    """Each string's length in bytes (unit 'BYTE') or UTF-8 characters ('UTF8_CHAR'), int32."""
    return StringLength(_string_tensor(input), unit=unit, name=name or "StringLength")


# ---------------------------------------------------------------- substr
Substr = OpDef("Substr", host=BETWEEN, differentiable=False)


@Substr.shape
def _(x, pos, len_, *, unit):
    _require_strings(x, "input")
    _check_unit(unit)
    if pos.dtype not in (dtypes.int32, dtypes.int64) or len_.dtype != pos.dtype:
        fail_dtype(f"pos and len must both be int32 or both int64, got {pos.dtype.name} and {len_.dtype.name}")
    if pos.shape.ndims is not None and len_.shape.ndims is not None and pos.shape.as_list() != len_.shape.as_list():
        fail(f"pos and len shapes must match: {pos.shape} vs. {len_.shape}")
    try:
        return Spec(dtypes.string, broadcast_shape(x.shape, pos.shape))
    except ValueError:
        fail(f"Incompatible shapes: {x.shape} vs. {pos.shape}")


def _forward(s, n, p):
    """TF's ForwardNUTF8CharPositions: (whether n characters fit, the byte position n characters on from p)."""
    counted = 0
    while counted < n and p < len(s):
        p += 1
        while p < len(s) and _is_trail(s[p]):
            p += 1
        counted += 1
    return counted == n, p


def _back(s, n, p):
    """TF's BackNUTF8CharPositions: (whether n characters fit, the byte position n characters back from p)."""
    counted = 0
    while counted < n and p > 0:
        p -= 1
        while _is_trail(s[p]) and p > 0:
            p -= 1
        counted += 1
    return counted == n, p


def _utf8_span(s, pos, n):
    """(byte start, byte length) of n characters from character pos of s, or None if pos is out of range."""
    if pos >= 0:
        ok, start = _forward(s, pos, 0)
        if not ok:
            return None
        return start, _forward(s, n, start)[1] - start
    skip = max(-pos - n, 0)
    ok, end = _back(s, skip, len(s))
    ok2, start = _back(s, -pos - skip, end) if ok else (False, 0)
    return (start, end - start) if ok2 else None


def _substr(s, pos, n, unit, where):
    if unit == "UTF8_CHAR":
        span = _utf8_span(s, pos, n)
        if span is None:
            raise HostError(f"pos {pos} out of range for string at index {where[0]}")
        start, n = span
    else:
        start = pos + len(s) if pos < 0 else pos
        if not 0 <= start <= len(s):
            text = s.decode("utf-8", "backslashreplace")
            at = where[0] if len(where) == 1 else f"({where[0]}, {where[1]})"
            raise HostError(f"pos {pos} out of range for string b'{text}' at index {at}")
    return s[start:] if n < 0 else s[start:start + n]


@Substr.host
def _(ctx, op, values):
    x, pos, n = _strings(values[0]), np.asarray(values[1]), np.asarray(values[2])
    unit = op.attrs["unit"]
    if pos.shape != n.shape:
        raise HostError(f"pos and len should have the same shape, got: {_shape_text(pos.shape)} vs. "
                        f"{_shape_text(n.shape)}")
    if pos.size == 0:
        raise HostError("received empty tensor pos_tensor")
    if pos.ndim == 0 or pos.shape == x.shape:
        xs, ps, ns = (np.broadcast_to(a, x.shape).reshape(-1) for a in (x, pos, n))
        return [_map_indexed(x.shape, lambda i: _substr(xs[i], int(ps[i]), int(ns[i]), unit, (i,)))]
    try:
        shape = np.broadcast_shapes(x.shape, pos.shape)
    except ValueError:
        raise HostError(f"Incompatible shapes: {_shape_text(x.shape)} vs. {_shape_text(pos.shape)}") from None
    if len(shape) not in (1, 2):
        raise errors.UnimplementedError(None, op, op.error(f"Substr broadcast not implemented for {len(shape)} "
                                                           f"dimensions"))
    xs, ps, ns = (np.broadcast_to(a, shape) for a in (x, pos, n))
    return [_map_indexed(shape, lambda i: _substr(xs.flat[i], int(ps.flat[i]), int(ns.flat[i]), unit,
                                                  np.unravel_index(i, shape)))]


def _map_indexed(shape, fn):
    out = np.empty(shape, object)
    out.reshape(-1)[...] = [fn(i) for i in range(out.size)] if out.size else []
    return out


def substr(input, pos, len, name=None, unit="BYTE"):
    """len bytes (or UTF-8 characters, unit 'UTF8_CHAR') of each string from pos (negative: from the
    end); past the end takes the rest, and so does len < 0 in bytes (in characters it takes none).
    pos and len have one shape: a scalar, input's, or one that broadcasts with it in 1 or 2 dimensions."""
    x = _string_tensor(input)
    with x.graph.as_default():
        pos = convert_to_tensor(pos)
        n = convert_to_tensor(len, pos.dtype)
    return Substr(x, pos, n, unit=unit, name=name or "Substr")


# ---------------------------------------------------------------- strip, lower, upper
StringStrip = OpDef("StringStrip", host=BETWEEN, differentiable=False)
StringLower = OpDef("StringLower", host=BETWEEN, differentiable=False)
StringUpper = OpDef("StringUpper", host=BETWEEN, differentiable=False)


@StringStrip.shape
def _(x):
    _require_strings(x, "input")
    return Spec(dtypes.string, x.shape)


@StringStrip.host
def _(ctx, op, values):
    return [_map(bytes.strip, values[0])]  # ASCII white space, as absl's RemoveWhitespaceContext


def _case_shape(x, *, encoding):
    _require_strings(x, "input")
    if encoding not in ("", "utf-8"):
        fail(f"only utf-8 or '' (no encoding) is supported, received {encoding}")
    return Spec(dtypes.string, x.shape)


def _case_host(ascii_fn, text_fn):
    def host(ctx, op, values):
        if op.attrs["encoding"] == "":
            return [_map(ascii_fn, values[0])]
        return [_map(lambda s: text_fn(s.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"),
                     values[0])]
    return host


StringLower.shape(_case_shape)
StringUpper.shape(_case_shape)
StringLower.host(_case_host(bytes.lower, str.lower))
StringUpper.host(_case_host(bytes.upper, str.upper))


def string_strip(input, name=None):
    """Each string without its leading and trailing ASCII white space."""
    return StringStrip(_string_tensor(input), name=name or "StringStrip")


def lower(input, encoding="", name=None):
    """Each string in lower case: ASCII letters only (encoding ''), or all of Unicode's ('utf-8')."""
    return StringLower(_string_tensor(input), encoding=encoding, name=name or "StringLower")


def upper(input, encoding="", name=None):
    """Each string in upper case: ASCII letters only (encoding ''), or all of Unicode's ('utf-8')."""
    return StringUpper(_string_tensor(input), encoding=encoding, name=name or "StringUpper")


# ---------------------------------------------------------------- regex_replace, regex_full_match
# A pattern given as a Python string makes TF's Static* op (the pattern an attribute, checked here
# when the op is built); a tensor pattern makes the op with a pattern input.
RegexReplace = OpDef("RegexReplace", host=BETWEEN, differentiable=False)
StaticRegexReplace = OpDef("StaticRegexReplace", host=BETWEEN, differentiable=False)
RegexFullMatch = OpDef("RegexFullMatch", host=BETWEEN, differentiable=False)
StaticRegexFullMatch = OpDef("StaticRegexFullMatch", host=BETWEEN, differentiable=False)


def _untranslatable(pattern, e):
    return f"pattern {pattern!r} uses RE2 syntax pygrad cannot translate to Python's re: {e}"


def _check_pattern(pattern):
    """Refuses at build time a pattern Python's re cannot run as RE2 would (RE2's own errors come at run time)."""
    try:
        re2_syntax.compile_re2(pattern)
    except re2_syntax.UnsupportedPattern as e:
        fail(_untranslatable(pattern, e))
    except re2_syntax.InvalidPattern:
        pass


def _scalar_strings(*ts):
    for what, t in ts:
        _require_strings(t, what)
        if t.shape.ndims not in (None, 0):
            fail(f"{what} must be a scalar, got shape {t.shape}")


@RegexReplace.shape
def _(x, pattern, rewrite, *, replace_global):
    _require_strings(x, "input")
    _scalar_strings(("pattern", pattern), ("rewrite", rewrite))
    return Spec(dtypes.string, x.shape)


@StaticRegexReplace.shape
def _(x, *, pattern, rewrite, replace_global):
    _require_strings(x, "input")
    _check_pattern(pattern)
    try:
        re2_syntax.parse_rewrite(rewrite)
    except re2_syntax.InvalidPattern as e:
        fail(f"{e}: RE2 rewrites take \\0 to \\9 (groups) and \\\\ (a backslash) only")
    return Spec(dtypes.string, x.shape)


@RegexFullMatch.shape
def _(x, pattern):
    _require_strings(x, "input")
    _scalar_strings(("pattern", pattern))
    return Spec(dtypes.bool_, x.shape)


@StaticRegexFullMatch.shape
def _(x, *, pattern):
    _require_strings(x, "input")
    _check_pattern(pattern)
    return Spec(dtypes.bool_, x.shape)


def _text(value):
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _regex(pattern):
    pattern = _text(pattern if isinstance(pattern, (str, bytes)) else _strings(pattern).item())
    try:
        return re2_syntax.compile_re2(pattern)
    except re2_syntax.InvalidPattern as e:
        raise HostError(f"Invalid pattern: {pattern}, error: {e}") from None
    except re2_syntax.UnsupportedPattern as e:
        raise HostError(_untranslatable(pattern, e)) from None


def _replace_host(ctx, op, values):
    static = op.type == "StaticRegexReplace"
    rx = _regex(op.attrs["pattern"] if static else values[1])
    rewrite = _text(op.attrs["rewrite"] if static else _strings(values[2]).item())
    try:
        parts = re2_syntax.parse_rewrite(rewrite)
    except re2_syntax.InvalidPattern as e:
        raise HostError(str(e)) from None
    glob = op.attrs["replace_global"]
    return [_map(lambda s: re2_syntax.replace(rx, parts, _text(s), glob).encode("utf-8", "surrogateescape"),
                 values[0])]


def _full_match_host(ctx, op, values):
    rx = _regex(op.attrs["pattern"] if op.type == "StaticRegexFullMatch" else values[1])
    return [_map(lambda s: rx.fullmatch(_text(s)) is not None, values[0], np.bool_)]


RegexReplace.host(_replace_host)
StaticRegexReplace.host(_replace_host)
RegexFullMatch.host(_full_match_host)
StaticRegexFullMatch.host(_full_match_host)


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    """Each string with the first (or every) match of the RE2 pattern replaced by rewrite (\\1 a group)."""
    x = _string_tensor(input)
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        return StaticRegexReplace(x, pattern=_text(pattern), rewrite=_text(rewrite),
                                  replace_global=bool(replace_global), name=name or "StaticRegexReplace")
    with x.graph.as_default():
        pattern, rewrite = _string_tensor(pattern), _string_tensor(rewrite)
    return RegexReplace(x, pattern, rewrite, replace_global=bool(replace_global), name=name or "RegexReplace")


def regex_full_match(input, pattern, name=None):
    """Whether each string matches the RE2 pattern as a whole (bool)."""
    x = _string_tensor(input)
    if isinstance(pattern, (str, bytes)):
        return StaticRegexFullMatch(x, pattern=_text(pattern), name=name or "StaticRegexFullMatch")
    with x.graph.as_default():
        pattern = _string_tensor(pattern)
    return RegexFullMatch(x, pattern, name=name or "RegexFullMatch")


# ---------------------------------------------------------------- reduce_join
ReduceJoin = OpDef("ReduceJoin", host=BETWEEN, differentiable=False)


@ReduceJoin.shape
def _(x, *, axis, keep_dims, separator):
    _require_strings(x, "inputs")
    rank = x.shape.ndims
    if rank is None:
        return Spec(dtypes.string, TensorShape(None))
    for a in axis:
        if not -rank <= a < rank:
            fail(f"Invalid reduction dimension {a} for input with {rank} dimensions")
    seen = {a % rank for a in axis}  # a duplicate is an error of the run, as TF's
    dims = x.shape.as_list()
    return Spec(dtypes.string, [1 if i in seen else d for i, d in enumerate(dims) if keep_dims or i not in seen])


@ReduceJoin.host
def _(ctx, op, values):
    x, a = _strings(values[0]), op.attrs
    axes = []
    for d in a["axis"]:
        if not -x.ndim <= d < x.ndim:
            raise errors.OutOfRangeError(None, op, op.error(f"Invalid reduction dimension {d} for input with "
                                                            f"{x.ndim} dimension(s)"))
        if d % x.ndim in axes:
            raise HostError(f"Duplicate reduction dimension {d}")
        axes.append(d % x.ndim)
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + axes[::-1])  # TF's order: the first axis listed varies fastest
    groups = moved.reshape(int(np.prod([x.shape[d] for d in kept])), int(np.prod([x.shape[d] for d in axes])))
    sep = a["separator"].encode()
    shape = [1 if d in axes else x.shape[d] for d in range(x.ndim) if a["keep_dims"] or d not in axes]
    out = np.empty(len(groups), object)
    out[...] = [sep.join(g) for g in groups] if len(groups) else []
    return [out.reshape(shape)]


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None, reduction_indices=None, keepdims=None):
    """The strings of inputs joined with separator along axis (every axis when None, in row-major
    order; listed axes: the first listed varies fastest, as TF's), keep_dims keeping them as 1s."""
    x = _string_tensor(inputs)
    axis = axis if axis is not None else reduction_indices
    keep = keepdims if keepdims is not None else bool(keep_dims)
    if axis is None:
        if x.shape.ndims is None:
            raise ReduceJoin.error("axis=None needs the rank of inputs, which the graph does not know", name)
        axes = list(range(x.shape.ndims))[::-1]  # TF's _reduce_join_reduction_dims
    else:
        value = constant_value(axis)
        if value is None:
            raise ReduceJoin.error(f"axis must be known when the graph is built, got {axis}", name)
        axes = [int(a) for a in np.reshape(value, -1)]
    return ReduceJoin(x, axis=axes, keep_dims=keep, separator=separator, name=name or "ReduceJoin")


# ---------------------------------------------------------------- format
StringFormat = OpDef("StringFormat", host=BETWEEN, differentiable=False)


@StringFormat.shape
def _(*inputs, template, placeholder, summarize):
    return Spec(dtypes.string, [])


@StringFormat.host
def _(ctx, op, values):
    a = op.attrs
    pieces = a["template"].encode().split(a["placeholder"].encode())
    return [np.array(pieces[0] + b"".join(summarize_v2(v, a["summarize"]) + after
                                          for v, after in zip(values, pieces[1:])), object)]


def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """template with each placeholder replaced by the next tensor of inputs (one tensor, or a list),
    written as tf.print writes it: `summarize` items at each end of every dimension."""
    tensors = [inputs] if isinstance(inputs, Tensor) else [convert_to_tensor(x) for x in inputs]
    if template.count(placeholder) != len(tensors):
        raise ValueError(f"The template expects {template.count(placeholder)} tensors, but the inputs only has "
                         f"{len(tensors)}. Please ensure the number of placeholders in template matches inputs length.")
    return StringFormat(*tensors, template=template, placeholder=placeholder, summarize=int(summarize),
                        name=name or "StringFormat")
