"""Lookup tables (tf.contrib.lookup, tf.lookup): a key -> value map a session fills once, from
tensors (KeyValueTensorInitializer) or a vocabulary file (TextFileInitializer), when the table's
initializer runs (tf.tables_initializer() runs them all), then looks keys up in (lookup, size).
index_table_from_tensor/_file map words to ids (unknown ones to default_value, or to one of
num_oov_buckets hash buckets after the vocabulary, by TF's Fingerprint64), and
index_to_string_table_from_* map ids back.

A table is a Python object of the graph; its ops name it in an attribute and its contents live
in the run's host context (see host.py): the initializer is a host op run after the plan (stage
AFTER), the lookups host ops of stage BETWEEN. TF's checks and messages: a table read before its
initializer ran is FailedPreconditionError, a key given two values too, an empty line or too
few lines in a vocabulary file InvalidArgumentError naming the file."""
import threading

import numpy as np

from pygrad import dtypes, errors
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, shape as shape_of
from pygrad.ops.manip_ops import where
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.ops.state_ops import group, no_op
from pygrad.ops.string_hash import string_to_hash_bucket, string_to_hash_bucket_fast, string_to_hash_bucket_strong
from pygrad.ops.string_ops import as_string
from pygrad.registry import AFTER, BETWEEN, OpDef, Spec
from pygrad.shapes import TensorShape


class _TableState:
    def __init__(self):
        self.lock = threading.Lock()
        self.items = None  # None until initialized


def _filled(ctx, op):
    state = ctx.state(op.attrs["table"], _TableState)
    if state.items is None:
        raise errors.FailedPreconditionError(None, op, op.error("Table not initialized."))
    return state


def _fill(ctx, op, keys, values):
    """Inserts the pairs, as TF's HashTable: a key already there with another value is an error."""
    state = ctx.state(op.attrs["table"], _TableState)
    with state.lock:
        items = dict(state.items or {})
        for k, v in zip(keys, values):
            old = items.setdefault(k, v)
            if old != v:
                shown = k.decode(errors="replace") if isinstance(k, bytes) else k
                raise errors.FailedPreconditionError(None, op, op.error(
                    f"HashTable has different value for same key. Key {shown} has {_shown(old)} and trying to add "
                    f"value {_shown(v)}"))
        state.items = items


def _shown(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else v


def _py(arr):
    arr = np.asarray(arr)
    return arr.reshape(-1).tolist()


InitializeTable = OpDef("InitializeTableV2", host=AFTER, differentiable=False)


@InitializeTable.shape
def _(keys, values, *, table):
    if keys.shape.ndims not in (None, 1) or values.shape.ndims not in (None, 1):
        raise InitializeTable.error(f"keys {keys.shape} and values {values.shape} must be vectors")
    return []


@InitializeTable.host
def _(ctx, op, values):
    keys, vals = (np.asarray(v) for v in values)
    if keys.shape != vals.shape:
        raise errors.InvalidArgumentError(None, op, op.error(
            f"Expected shape {list(keys.shape)} for value, got {list(vals.shape)}"))
    _fill(ctx, op, _py(keys), _py(vals))


WHOLE_LINE, LINE_NUMBER = -2, -1


class TextFileIndex:
    WHOLE_LINE = WHOLE_LINE
    LINE_NUMBER = LINE_NUMBER


def _column(line, number, index, delimiter, dtype, where):
    if index == LINE_NUMBER:
        return number
    text = line if index == WHOLE_LINE else None
    if text is None:
        parts = line.split(delimiter)
        if index >= len(parts):
            raise ValueError(f"Invalid number of columns in {where} line {number} ({line!r}) : expected {index + 1} "
                             f"got {len(parts)}")
        text = parts[index]
    if dtype == dtypes.string:
        return text
    try:
        return int(text) if dtype.is_integer else float(text)
    except ValueError:
        raise ValueError(f"Field {text.decode(errors='replace')} in line {number} is not a valid "
                         f"{dtype.name}.") from None


InitializeTableFromTextFile = OpDef("InitializeTableFromTextFileV2", host=AFTER, differentiable=False)


@InitializeTableFromTextFile.shape
def _(filename, *, table, key_index, value_index, vocab_size, delimiter):
    return []


@InitializeTableFromTextFile.host
def _(ctx, op, values):
    a, path = op.attrs, np.asarray(values[0]).reshape(())[()].decode()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise errors.from_os_error(e, op.error(f"reading the vocabulary file {path}"), path) from None
    keys, vals, offset, number = [], [], 0, 0
    table = a["table"]
    for raw in data.split(b"\n"):
        if offset >= len(data) or (a["vocab_size"] != -1 and number >= a["vocab_size"]):
            break
        offset += len(raw) + 1
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line:
            raise errors.InvalidArgumentError(None, op, op.error(
                f"Invalid content in {path}: empty line found at position {offset}."))
        try:
            keys.append(_column(line, number, a["key_index"], a["delimiter"].encode(), table.key_dtype, path))
            vals.append(_column(line, number, a["value_index"], a["delimiter"].encode(), table.value_dtype, path))
        except ValueError as e:
            raise errors.InvalidArgumentError(None, op, op.error(str(e))) from None
        number += 1
    if a["vocab_size"] != -1 and number != a["vocab_size"]:
        raise errors.InvalidArgumentError(None, op, op.error(
            f"Invalid vocab_size in {path}: expected {a['vocab_size']} but got {number}"))
    _fill(ctx, op, keys, vals)


LookupTableFind = OpDef("LookupTableFindV2", host=BETWEEN, differentiable=False)


@LookupTableFind.shape
def _(keys, default_value, *, table):
    return Spec(default_value.dtype, keys.shape)


@LookupTableFind.host
def _(ctx, op, values):
    items = _filled(ctx, op).items
    keys, default = np.asarray(values[0]), np.asarray(values[1])[()]
    dtype = op.outputs[0].dtype
    found = [items.get(k, default) for k in _py(keys)]
    out = np.empty(len(found), object) if dtype == dtypes.string else np.array(found, dtype.np)
    if dtype == dtypes.string:
        out[:] = found
    return [out.reshape(keys.shape)]


LookupTableSize = OpDef("LookupTableSizeV2", host=BETWEEN, differentiable=False)


@LookupTableSize.shape
def _(*, table):
    return Spec(dtypes.int64, TensorShape([]))


@LookupTableSize.host
def _(ctx, op, values):
    return [np.array(len(_filled(ctx, op).items), np.int64)]


# ---------------------------------------------------------------- the Python side


class KeyValueTensorInitializer:
    """Fills a table with keys[i] -> values[i]."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
        self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
        self.key_dtype, self.value_dtype = self._keys.dtype, self._values.dtype
        self._name = name or "key_value_init"

    def initialize(self, table):
        return InitializeTable(self._keys, self._values, table=table, name=self._name)


class TextFileInitializer:
    """Fills a table from a text file: per line, the key and the value from column key_index and
    value_index (split at delimiter), TextFileIndex.WHOLE_LINE or TextFileIndex.LINE_NUMBER;
    vocab_size lines (the file must have that many), or all of them."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, value_index_offset=0):
        self.key_dtype, self.value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        for dtype, index, what in ((self.key_dtype, key_index, "key"), (self.value_dtype, value_index, "value")):
            if index < WHOLE_LINE:
                raise ValueError(f"Invalid {what} index {index}.")
            if index == LINE_NUMBER and dtype != dtypes.int64:
                raise ValueError(f"{what.capitalize()} dtype must be int64 with the line number as {what}, got "
                                 f"{dtype.name}.")
            if index == WHOLE_LINE and dtype != dtypes.string and not dtype.is_integer:
                raise ValueError(f"Signature mismatch. {what.capitalize()}s must be dtype string or integer, got "
                                 f"{dtype.name}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self._filename = convert_to_tensor(filename, dtype=dtypes.string, name="asset_filepath")
        self._key_index, self._value_index, self._vocab_size = key_index, value_index, vocab_size
        self._delimiter, self._name = delimiter, name or "text_file_init"

    def initialize(self, table):
        return InitializeTableFromTextFile(self._filename, table=table, key_index=self._key_index,
                                           value_index=self._value_index, vocab_size=self._vocab_size or -1,
                                           delimiter=self._delimiter, name=self._name)


def TextFileIdTableInitializer(filename, key_column_index=WHOLE_LINE, value_column_index=LINE_NUMBER,  # noqa: N802
                               vocab_size=None, delimiter="\t", name="text_file_id_table_init",
                               key_dtype=dtypes.string):
    return TextFileInitializer(filename, key_dtype, key_column_index, dtypes.int64, value_column_index, vocab_size,
                               delimiter, name)


def TextFileStringTableInitializer(filename, key_column_index=LINE_NUMBER, value_column_index=WHOLE_LINE,  # noqa: N802
                                   vocab_size=None, delimiter="\t", name="text_file_string_table_init"):
    return TextFileInitializer(filename, dtypes.int64, key_column_index, dtypes.string, value_column_index,
                               vocab_size, delimiter, name)


def _values_of(keys):
    return keys.values if isinstance(keys, SparseTensor) else convert_to_tensor(keys)


def _like(keys, values):
    return SparseTensor(keys.indices, values, keys.dense_shape) if isinstance(keys, SparseTensor) else values


class HashTable:
    """A table filled once by its initializer (tf.contrib.lookup.HashTable, tf.lookup.StaticHashTable)."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        graph = get_default_graph()
        self.key_dtype, self.value_dtype = initializer.key_dtype, initializer.value_dtype
        self._name = graph.unique_name(name or "hash_table")  # TF's HashTableV2 op's name; the ops around it
        self._default_value = convert_to_tensor(default_value, dtype=self.value_dtype, name="default_value")
        if self._default_value.shape.ndims not in (None, 0):
            raise ValueError(f"default_value must be a scalar, got shape {self._default_value.shape}")
        self._init_op = initializer.initialize(self)  # are named where the table is made, as TF's
        graph.add_to_collection(GraphKeys.TABLE_INITIALIZERS, self._init_op)

    name = property(lambda self: self._name)
    default_value = property(lambda self: self._default_value)
    initializer = property(lambda self: self._init_op)
    init = initializer

    def lookup(self, keys, name=None):
        """The value of each key (default_value for one not in the table); a SparseTensor's values."""
        values = _values_of(keys)
        if values.dtype != self.key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self.key_dtype.name}, received: {values.dtype.name}")
        with get_default_graph().name_scope(name or f"{self._short}_Lookup"):
            return _like(keys, LookupTableFind(values, self._default_value, table=self))

    _short = property(lambda self: self._name.rsplit("/", 1)[-1])

    def size(self, name=None):
        return LookupTableSize(table=self, name=name or f"{self._short}_Size")


StaticHashTable = HashTable


class FastHashSpec:
    hasher, key = "fasthash", None


class StrongHashSpec:
    hasher = "stronghash"

    def __init__(self, key):
        if len(key) != 2:
            raise ValueError(f"`key` must have size 2, received {len(key)}")
        self.key = key


class IdTableWithHashBuckets:
    """A table of ids whose unknown keys go to num_oov_buckets buckets after the table's ids (by
    the hash of the key, its decimal text for integer keys)."""

    def __init__(self, table, num_oov_buckets, hasher_spec=FastHashSpec, name=None, key_dtype=None):
        if num_oov_buckets < 0:
            raise ValueError(f"num_oov_buckets must be greater or equal than 0, got {num_oov_buckets}.")
        self._table, self._buckets, self._hasher = table, num_oov_buckets, hasher_spec
        self.key_dtype = dtypes.as_dtype(key_dtype) if key_dtype is not None else table.key_dtype
        self.value_dtype = dtypes.int64
        self._name = name or (table.name if table is not None else "hash_bucket")

    name = property(lambda self: self._name)
    initializer = property(lambda self: self._table.initializer if self._table is not None else None)

    def size(self, name=None):
        n = self._table.size() if self._table is not None else convert_to_tensor(np.int64(0))
        return n + self._buckets

    def _hash(self, strings):
        h = self._hasher
        if h.hasher == "fasthash":
            return string_to_hash_bucket_fast(strings, self._buckets, name="hash_bucket")
        if h.hasher == "legacy":
            return string_to_hash_bucket(strings, self._buckets, name="hash_bucket")
        return string_to_hash_bucket_strong(strings, self._buckets, h.key, name="hash_bucket")

    def lookup(self, keys, name=None):
        values = _values_of(keys)
        if values.dtype != self.key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self.key_dtype.name}, received: {values.dtype.name}")
        if self._table is not None and self._table.key_dtype == dtypes.int64:
            values = cast(values, dtypes.int64)
        if self._buckets == 0:
            return _like(keys, self._table.lookup(values, name=name))
        with get_default_graph().name_scope(name or f"{self._name.rsplit('/', 1)[-1]}_Lookup"):
            buckets = self._hash(values if values.dtype == dtypes.string else as_string(values))
            if self._table is None:
                return _like(keys, buckets)
            ids = self._table.lookup(values)
            ids = where(math_ops.not_equal(ids, self._table.default_value), ids, buckets + self._table.size())
            return _like(keys, ids)


def _check_vocab(num_oov_buckets, vocab_size=None, what="vocabulary_file"):
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got {num_oov_buckets}.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"`vocab_size` must be greater than 0, got {vocab_size} for {what}.")


def index_table_from_tensor(vocabulary_list, num_oov_buckets=0, default_value=-1, hasher_spec=FastHashSpec,
                            dtype=dtypes.string, name=None):
    """A table of vocabulary_list[i] -> i (int64)."""
    if vocabulary_list is None:
        raise ValueError("`vocabulary_list` must be specified.")
    _check_vocab(num_oov_buckets)
    dtype = dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or "string_to_index"):
        keys = convert_to_tensor(vocabulary_list)
        if keys.dtype.is_integer != dtype.is_integer or not dtype.is_integer and keys.dtype != dtype:
            raise ValueError(f"Invalid `dtype`: Expected {dtype.name}, got {keys.dtype.name}.")
        values = cast(range_(shape_of(keys)[0]), dtypes.int64)
        with get_default_graph().name_scope("hash_table"):
            table_keys = cast(keys, dtypes.int64) if keys.dtype.is_integer else keys
            table = HashTable(KeyValueTensorInitializer(table_keys, values, name="table_init"), default_value)
        return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec, key_dtype=dtype) if num_oov_buckets \
            else table


def index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None, default_value=-1,
                          hasher_spec=FastHashSpec, key_dtype=dtypes.string, name=None,
                          key_column_index=WHOLE_LINE, value_column_index=LINE_NUMBER, delimiter="\t"):
    """A table of the file's lines (one key per line) -> their line numbers."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("`vocabulary_file` must be specified and must not be empty.")
    _check_vocab(num_oov_buckets, vocab_size, vocabulary_file)
    key_dtype = dtypes.as_dtype(key_dtype)
    if not key_dtype.is_integer and key_dtype != dtypes.string:
        raise TypeError("Dtype for `keys` should be either integer or string.")
    with get_default_graph().name_scope(name or "string_to_index"):
        with get_default_graph().name_scope("hash_table"):
            init = TextFileIdTableInitializer(vocabulary_file, key_column_index, value_column_index, vocab_size,
                                              delimiter, "table_init",
                                              dtypes.int64 if key_dtype.is_integer else key_dtype)
            table = HashTable(init, default_value)
        return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec, key_dtype=key_dtype) if num_oov_buckets \
            else table


def index_to_string_table_from_tensor(vocabulary_list, default_value="UNK", name=None):
    """A table of i (int64) -> vocabulary_list[i]."""
    if vocabulary_list is None:
        raise ValueError("`vocabulary_list` argument must be specified.")
    with get_default_graph().name_scope(name or "index_to_string"):
        words = convert_to_tensor(vocabulary_list, dtype=dtypes.string)
        ids = cast(range_(shape_of(words)[0]), dtypes.int64)
        return HashTable(KeyValueTensorInitializer(ids, words, name="table_init"), default_value)


def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK", name=None,
                                    key_column_index=LINE_NUMBER, value_column_index=WHOLE_LINE, delimiter="\t"):
    """A table of line numbers -> the file's lines."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("`vocabulary_file` must be specified and must not be empty.")
    _check_vocab(0, vocab_size, vocabulary_file)
    with get_default_graph().name_scope(name or "index_to_string"):
        init = TextFileStringTableInitializer(vocabulary_file, key_column_index, value_column_index, vocab_size,
                                              delimiter, "table_init")
        return HashTable(init, default_value)


def tables_initializer(name="init_all_tables"):
    """One op running every table's initializer (the TABLE_INITIALIZERS collection)."""
    inits = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*inits, name=name) if inits else no_op(name=name)
