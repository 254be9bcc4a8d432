"""Ops that turn strings into numbers, as TF1 input pipelines use them: tf.decode_raw (bytes as a
vector of numbers), tf.string_to_number and tf.decode_csv (text records, quoting as TF's CSV
reader). Strings are bytes in Python, so these are host ops of stage BETWEEN (see host.py); their
errors are TF's kernels' messages.
"""
import re

import numpy as np

from pygrad import dtypes
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail_dtype
from pygrad.shapes import TensorShape

DecodeRaw = OpDef("DecodeRaw", host=BETWEEN, differentiable=False)
_RAW_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint16, dtypes.uint8,
              dtypes.int16, dtypes.int8, dtypes.int64)


@DecodeRaw.shape
def _(data, *, out_type, little_endian):
    if data.dtype != dtypes.string:
        fail_dtype(f"input_bytes must be a string tensor, got {data.dtype.name}")
    if out_type not in _RAW_TYPES:
        fail_dtype(f"out_type must be one of {', '.join(d.name for d in _RAW_TYPES)}, got {out_type.name}")
    return Spec(out_type, data.shape.concatenate([None]))


@DecodeRaw.host
def _(ctx, op, values):
    data, out_type = np.asarray(values[0], dtype=object), op.attrs["out_type"]
    width = np.dtype(out_type.np).itemsize
    dt = np.dtype(out_type.np).newbyteorder("<" if op.attrs["little_endian"] else ">")
    flat = data.reshape(-1)
    size = len(flat[0]) if flat.size else 0
    if size % width:
        raise HostError(f"Input to DecodeRaw has length {size} that is not a multiple of {width}, the size of "
                        f"{_type_name(out_type)}")
    for i, b in enumerate(flat):
        if len(b) != size:
            raise HostError(f"DecodeRaw requires input strings to all be the same size, but element {i} has size "
                            f"{size} != {len(b)}")  # TF's words: the first element's size, then this one's
    out = np.frombuffer(b"".join(flat), dt).astype(out_type.np)
    return [out.reshape(data.shape + (size // width,))]


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002 (TF's)
    """Each string of input_bytes as the vector of out_type numbers its bytes hold."""
    data = convert_to_tensor(input_bytes if input_bytes is not None else bytes)
    return DecodeRaw(data, out_type=dtypes.as_dtype(out_type), little_endian=bool(little_endian),
                     name=name or "DecodeRaw")


def _type_name(dtype):
    return {dtypes.float32: "float", dtypes.float64: "double"}.get(dtype, dtype.name)


# TF's strings::safe_strto* and safe_strtof/d: surrounding white space allowed; integers in decimal,
# floats as strtod reads them (hex floats, inf, nan).
_INT = re.compile(rb"\s*[+-]?[0-9]+\s*\Z")
_HEX_FLOAT = re.compile(rb"\s*[+-]?0[xX]")
_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def parse_number(s, dtype):
    """The number the bytes s spell as dtype, or None if they spell none that fits."""
    if dtype.is_integer:
        if not _INT.match(s):
            return None
        v = int(s)
        info = np.iinfo(dtype.np)
        return v if info.min <= v <= info.max else None
    if b"_" in s or not s.strip():
        return None
    try:
        return float.fromhex(s.decode("ascii")) if _HEX_FLOAT.match(s) else float(s)
    except (ValueError, UnicodeDecodeError, OverflowError):
        return None


StringToNumber = OpDef("StringToNumber", host=BETWEEN, differentiable=False)


@StringToNumber.shape
def _(strings, *, out_type):
    if strings.dtype != dtypes.string:
        fail_dtype(f"string_tensor must be a string tensor, got {strings.dtype.name}")
    if out_type not in _NUMBER_TYPES:
        fail_dtype(f"out_type must be one of {', '.join(d.name for d in _NUMBER_TYPES)}, got {out_type.name}")
    return Spec(out_type, strings.shape)


@StringToNumber.host
def _(ctx, op, values):
    strings, dtype = np.asarray(values[0], dtype=object), op.attrs["out_type"]
    out = np.empty(strings.shape, dtype.np)
    flat = out.reshape(-1)
    for i, s in enumerate(strings.reshape(-1)):
        v = parse_number(s, dtype)
        if v is None:
            raise HostError(f"StringToNumberOp could not correctly convert string: {s.decode('utf-8', 'replace')}")
        flat[i] = v
    return [out]


def string_to_number(string_tensor, out_type=dtypes.float32, name=None):
    """Each string of string_tensor as the number it spells (InvalidArgumentError if it spells none)."""
    return StringToNumber(convert_to_tensor(string_tensor), out_type=dtypes.as_dtype(out_type),
                          name=name or "StringToNumber")


DecodeCSV = OpDef("DecodeCSV", host=BETWEEN, differentiable=False)
_CSV_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)


@DecodeCSV.shape
def _(records, *defaults, field_delim, use_quote_delim, na_value, select_cols):
    if records.dtype != dtypes.string:
        fail_dtype(f"records must be a string tensor, got {records.dtype.name}")
    for d in defaults:
        if d.dtype not in _CSV_TYPES:
            fail_dtype(f"record_defaults must be of {', '.join(t.name for t in _CSV_TYPES)}, got {d.dtype.name}")
    return [Spec(d.dtype, records.shape) for d in defaults]


def split_fields(record, delim, quoted):
    """The fields of one CSV record (bytes), quotes as TF's DecodeCSV reads them: a field that
    begins with a quote ends at a quote followed by the delimiter or the end, "" inside it is a
    quote; other fields may hold no quote, CR or LF (when quoted is True)."""
    if not quoted or b'"' not in record and b"\n" not in record and b"\r" not in record:
        return record.split(delim)
    fields, i, n = [], 0, len(record)
    while True:
        if i < n and record[i:i + 1] == b'"':
            i += 1
            field = bytearray()
            while True:
                j = record.find(b'"', i)
                if j < 0:
                    raise HostError("Quoted field has to end with quote followed by delim or end")
                field += record[i:j]
                after = record[j + 1:j + 2]
                if after == b'"':
                    field += b'"'
                    i = j + 2
                elif after in (delim, b""):
                    i = j + 1
                    break
                else:
                    raise HostError("Quote inside a string has to be escaped by another quote")
            fields.append(bytes(field))
        else:
            j = record.find(delim, i)
            j = n if j < 0 else j
            field = record[i:j]
            if b'"' in field or b"\n" in field or b"\r" in field:
                raise HostError("Unquoted fields cannot have quotes/CRLFs inside")
            fields.append(field)
            i = j
        if i >= n:
            return fields
        i += 1  # the delimiter
        if i == n:
            fields.append(b"")
            return fields


@DecodeCSV.host
def _(ctx, op, values):
    a = op.attrs
    records, defaults = np.asarray(values[0], dtype=object), [np.asarray(d).reshape(-1) for d in values[1:]]
    kinds = [d.dtype for d in op.inputs[1:]]
    cols = a["select_cols"] or range(len(defaults))
    outs = [np.empty(records.shape, object if k == dtypes.string else k.np) for k in kinds]
    flats = [o.reshape(-1) for o in outs]
    delim, na = a["field_delim"].encode(), a["na_value"].encode()
    for r, record in enumerate(records.reshape(-1)):
        fields = split_fields(record, delim, a["use_quote_delim"])
        if a["select_cols"] and len(fields) <= cols[-1] or not a["select_cols"] and len(fields) != len(defaults):
            raise HostError(f"Expect {len(defaults) if not a['select_cols'] else cols[-1] + 1} fields but have "
                            f"{len(fields)} in record {r}")
        for f, (col, kind, default) in enumerate(zip(cols, kinds, defaults)):
            field = fields[col]
            if not field or field == na:
                if default.size == 0:
                    raise HostError(f"Field {f} is required but missing in record {r}!")
                flats[f][r] = default[0]
            elif kind == dtypes.string:
                flats[f][r] = field
            else:
                v = parse_number(field, kind)
                if v is None:
                    raise HostError(f"Field {f} in record {r} is not a valid {_type_name(kind)}: "
                                    f"{field.decode('utf-8', 'replace')}")
                flats[f][r] = v
    return outs


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="",
               select_cols=None):
    """The columns of CSV records: one tensor per entry of record_defaults, each with records'
    shape and the default's dtype; an empty default makes its column required."""
    records = convert_to_tensor(records)
    defaults = [convert_to_tensor(d) for d in record_defaults]
    for i, d in enumerate(defaults):
        if d.shape.ndims not in (0, 1) or d.shape.num_elements() not in (0, 1):
            raise DecodeCSV.error(f"record_defaults[{i}] has shape {d.shape}: a default must be a scalar or a "
                                  f"vector of 0 or 1 elements", name)
    if len(field_delim) != 1:
        raise DecodeCSV.error(f"field_delim must be one character, got {field_delim!r}", name)
    cols = [int(c) for c in select_cols or []]
    if cols and (len(cols) != len(defaults) or any(b <= a for a, b in zip(cols, cols[1:])) or cols[0] < 0):
        raise DecodeCSV.error(f"select_cols {cols} must be increasing column numbers, one per record default "
                              f"({len(defaults)})", name)
    outs = DecodeCSV(records, *defaults, field_delim=field_delim, use_quote_delim=bool(use_quote_delim),
                     na_value=na_value, select_cols=cols, name=name or "DecodeCSV")
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]
