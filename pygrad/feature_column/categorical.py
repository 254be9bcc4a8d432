"""The categorical columns, as TF's (feature_column_v2.py, which tf.compat.v1 builds): ids from
integer identities, vocabularies (a list or a file), hash buckets and crosses of other columns, and
weights for another column's ids. Each one's _transform_feature makes a SparseTensor of int64 ids
of the features' shape; a dense input first loses its missing values ("" and -1).
"""
import collections
import contextlib

import numpy as np

from pygrad import dtypes
from pygrad.feature_column.base import (_CategoricalColumn, _FeatureColumn, require_string_key,
                                        require_string_or_int, to_sparse_input_and_drop_ignore_values)
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import cast, shape as shape_of
from pygrad.ops.lookup_ops import index_table_from_file, index_table_from_tensor
from pygrad.ops.manip_ops import where
from pygrad.ops.math_ops import greater_equal, less, logical_or
from pygrad.ops.parsing_ops import VarLenFeature
from pygrad.ops.reduction_ops import fill
from pygrad.ops.sparse_cross import sparse_cross_hashed
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_tensor_or_sparse_tensor, is_sparse
from pygrad.ops.string_hash import string_to_hash_bucket_fast
from pygrad.ops.string_ops import as_string
from pygrad.platform import gfile


def _same_kind(column, key, column_dtype, tensor):
    if column_dtype.is_integer != tensor.dtype.is_integer:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, column dtype: "
                         f"{column_dtype}, tensor dtype: {tensor.dtype}")
    require_string_or_int(tensor.dtype, f"column_name: {key} input_tensor")


@contextlib.contextmanager
def _init_scope():
    """TF's init_scope, where columns make their lookup tables: the root name scope, no control inputs."""
    graph = get_default_graph()
    with graph.name_scope(None), graph.control_dependencies(None):
        yield


def _ids(column, builder):
    return _CategoricalColumn.IdWeightPair(builder.get(column), None)


# ---------------------------------------------------------------- identity
class _IdentityCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "IdentityCategoricalColumn", ["key", "number_buckets", "default_value"])):
    """Integer features as their own ids; out-of-range ones become default_value when given."""

    @property
    def name(self):
        return self.key

    @property
    def _parse_example_spec(self):
        return {self.key: VarLenFeature(dtypes.int64)}

    @property
    def _num_buckets(self):
        return self.number_buckets

    def _transform_feature(self, inputs):
        sp = to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not sp.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: {sp.dtype}")
        values = sp.values if sp.values.dtype == dtypes.int64 else cast(sp.values, dtypes.int64, name="values")
        if self.default_value is not None:
            values = cast(sp.values, dtypes.int64, name="values")
            num_buckets = cast(self.number_buckets, dtypes.int64, name="num_buckets")
            zero = cast(0, dtypes.int64, name="zero")
            out = logical_or(less(values, zero), greater_equal(values, num_buckets), name="out_of_range")
            values = where(out, fill(shape_of(values), np.int64(self.default_value), name="default_values"), values)
        return SparseTensor(sp.indices, values, sp.dense_shape)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return _ids(self, inputs)


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Ids that are the integer features themselves, in [0, num_buckets); others become
    default_value, or fail in the lookup when it is None."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and not 0 <= default_value < num_buckets:
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), column_name {key}")
    require_string_key(key)
    return _IdentityCategoricalColumn(key, num_buckets, default_value)


# ---------------------------------------------------------------- vocabularies
class _VocabularyListCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "VocabularyListCategoricalColumn", ["key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"])):
    """Features looked up in a list: the index of their entry; others hashed into num_oov_buckets
    after it, or default_value."""

    @property
    def name(self):
        return self.key

    @property
    def _parse_example_spec(self):
        return {self.key: VarLenFeature(self.dtype)}

    @property
    def _num_buckets(self):
        return len(self.vocabulary_list) + self.num_oov_buckets

    def _transform_feature(self, inputs):
        sp = to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        _same_kind(self, self.key, self.dtype, sp)
        key_dtype = self.dtype
        if sp.dtype.is_integer:
            key_dtype = dtypes.int64
            sp = SparseTensor(sp.indices, cast(sp.values, dtypes.int64), sp.dense_shape)
        with _init_scope():
            table = index_table_from_tensor(vocabulary_list=tuple(self.vocabulary_list),
                                            default_value=self.default_value, num_oov_buckets=self.num_oov_buckets,
                                            dtype=key_dtype, name=f"{self.key}_lookup")
        return table.lookup(sp)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return _ids(self, inputs)


def _check_oov(key, num_oov_buckets, default_value, no_default):
    if num_oov_buckets:
        if default_value != no_default:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1, num_oov_buckets=0):
    """Ids that are the features' indices in vocabulary_list (strings or integers)."""
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: {key}")
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: {key}")
    kind = np.array(vocabulary_list).dtype
    vocabulary_dtype = dtypes.string if kind.kind in "SUO" else dtypes.as_dtype(kind)
    _check_oov(key, num_oov_buckets, default_value, -1)
    require_string_or_int(vocabulary_dtype, f"column_name: {key} vocabulary")
    if dtype is None:
        dtype = vocabulary_dtype
    elif dtypes.as_dtype(dtype).is_integer != vocabulary_dtype.is_integer:
        raise ValueError(f"dtype {dtype} and vocabulary dtype {vocabulary_dtype} do not match, column_name: {key}")
    dtype = dtypes.as_dtype(dtype)
    require_string_or_int(dtype, f"column_name: {key}")
    require_string_key(key)
    return _VocabularyListCategoricalColumn(key, tuple(vocabulary_list), dtype, default_value, num_oov_buckets)


class _VocabularyFileCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "VocabularyFileCategoricalColumn",
        ["key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype", "default_value"])):
    """Features looked up in a file of one entry a line: the entry's line number."""

    @property
    def name(self):
        return self.key

    @property
    def _parse_example_spec(self):
        return {self.key: VarLenFeature(self.dtype)}

    @property
    def _num_buckets(self):
        return self.vocabulary_size + self.num_oov_buckets

    def _transform_feature(self, inputs):
        sp = to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        _same_kind(self, self.key, self.dtype, sp)
        key_dtype = self.dtype
        if sp.dtype.is_integer:
            key_dtype = dtypes.int64
            sp = SparseTensor(sp.indices, cast(sp.values, dtypes.int64), sp.dense_shape)
        with _init_scope():
            table = index_table_from_file(vocabulary_file=self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
                                          vocab_size=self.vocabulary_size, default_value=self.default_value,
                                          key_dtype=key_dtype, name=f"{self.key}_lookup")
        return table.lookup(sp)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return _ids(self, inputs)


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None, num_oov_buckets=0,
                                            default_value=None, dtype=dtypes.string):
    """Ids that are the features' line numbers in vocabulary_file (its first vocabulary_size lines;
    all of them when None)."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        if not gfile.Exists(vocabulary_file):
            raise ValueError(f"vocabulary_file in {key} does not exist.")
        with gfile.GFile(vocabulary_file, mode="rb") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    _check_oov(key, num_oov_buckets, default_value, None)
    dtype = dtypes.as_dtype(dtype)
    require_string_or_int(dtype, f"column_name: {key}")
    require_string_key(key)
    return _VocabularyFileCategoricalColumn(key, vocabulary_file, vocabulary_size, num_oov_buckets or 0, dtype,
                                            -1 if default_value is None else default_value)


# ---------------------------------------------------------------- hash buckets
class _HashedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    """Features hashed into hash_bucket_size buckets: FarmHash Fingerprint64 of the string (of an
    integer's decimal digits), as TF's string_to_hash_bucket_fast."""

    @property
    def name(self):
        return self.key

    @property
    def _parse_example_spec(self):
        return {self.key: VarLenFeature(self.dtype)}

    @property
    def _num_buckets(self):
        return self.hash_bucket_size

    def _transform_feature(self, inputs):
        sp = to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not is_sparse(sp):
            raise ValueError("SparseColumn input must be a SparseTensor.")
        require_string_or_int(sp.dtype, f"column_name: {self.key} input_tensor")
        if self.dtype.is_integer != sp.dtype.is_integer:
            raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {self.key}, column "
                             f"dtype: {self.dtype}, tensor dtype: {sp.dtype}")
        values = sp.values if self.dtype == dtypes.string else as_string(sp.values)
        ids = string_to_hash_bucket_fast(values, self.hash_bucket_size, name="lookup")
        return SparseTensor(sp.indices, ids, sp.dense_shape)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return _ids(self, inputs)


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Ids that are the features' hash buckets (string or integer features)."""
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: {hash_bucket_size}, key: {key}")
    require_string_key(key)
    dtype = dtypes.as_dtype(dtype)
    require_string_or_int(dtype, f"column_name: {key}")
    return _HashedCategoricalColumn(key, hash_bucket_size, dtype)


# ---------------------------------------------------------------- crosses
def _leaf_keys(cross):
    keys = []
    for k in cross.keys:
        keys.extend(_leaf_keys(k) if isinstance(k, _CrossedColumn) else [k])
    return keys


class _CrossedColumn(_CategoricalColumn, collections.namedtuple(
        "CrossedColumn", ["keys", "hash_bucket_size", "hash_key"])):
    """Every combination of one feature from each key in a row, hashed into hash_bucket_size
    buckets by TF's SparseCross (FingerprintCat64 over the features' fingerprints)."""

    @property
    def name(self):
        return "_X_".join(sorted(k.name if isinstance(k, _FeatureColumn) else k for k in _leaf_keys(self)))

    @property
    def _parse_example_spec(self):
        config = {}
        for key in self.keys:
            config.update(key._parse_example_spec if isinstance(key, _FeatureColumn)
                          else {key: VarLenFeature(dtypes.string)})
        return config

    @property
    def _num_buckets(self):
        return self.hash_bucket_size

    def _transform_feature(self, inputs):
        tensors = []
        for key in _leaf_keys(self):
            if isinstance(key, str):
                tensors.append(inputs.get(key))
                continue
            pair = key._get_sparse_tensors(inputs)
            if pair.weight_tensor is not None:
                raise ValueError(f"crossed_column does not support weight_tensor, but the given column populates "
                                 f"weight_tensor. Given column: {key.name}")
            tensors.append(pair.id_tensor)
        return sparse_cross_hashed(tensors, num_buckets=self.hash_bucket_size, hash_key=self.hash_key)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return _ids(self, inputs)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """The crosses of keys (feature names, holding strings, or categorical columns other than
    hash buckets), hashed into hash_bucket_size buckets exactly as TF's."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, _CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or categorical column except "
                             f"HashedCategoricalColumn. Given: {key}")
        if isinstance(key, _HashedCategoricalColumn):
            raise ValueError(f"categorical_column_with_hash_bucket is not supported for crossing. Hashing before "
                             f"crossing will increase probability of collision. Instead, use the feature name as a "
                             f"string. Given: {key}")
    return _CrossedColumn(tuple(keys), hash_bucket_size, hash_key)


# ---------------------------------------------------------------- weights
class _WeightedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "WeightedCategoricalColumn", ["categorical_column", "weight_feature_key", "dtype"])):
    """Another column's ids, each with the weight at its place in the weight feature."""

    @property
    def name(self):
        return f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}"

    @property
    def _parse_example_spec(self):
        config = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in config:
            raise ValueError(f"Parse config {config[self.weight_feature_key]} already exists for "
                             f"{self.weight_feature_key}.")
        config[self.weight_feature_key] = VarLenFeature(self.dtype)
        return config

    @property
    def _num_buckets(self):
        return self.categorical_column._num_buckets

    def _transform_feature(self, inputs):
        weights = inputs.get(self.weight_feature_key)
        if weights is None:
            raise ValueError(f"Missing weights {self.weight_feature_key}.")
        weights = convert_to_tensor_or_sparse_tensor(weights)
        if self.dtype != weights.dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {weights.dtype}.")
        if not is_sparse(weights):
            weights = to_sparse_input_and_drop_ignore_values(weights, ignore_value=0.0)
        if not weights.dtype.is_floating:
            weights = SparseTensor(weights.indices, cast(weights.values, dtypes.float32), weights.dense_shape)
        return inputs.get(self.categorical_column), weights

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        ids, weights = inputs.get(self)
        return _CategoricalColumn.IdWeightPair(ids, weights)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """categorical_column's ids weighted by the feature weight_feature_key (of the ids' shape)."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column. Given: {categorical_column}")
    return _WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)
