"""What every feature column shares, as TF1's feature_column.py: the column kinds (_DenseColumn,
_CategoricalColumn), the builder that turns a features dict into each column's tensors once
(_LazyBuilder), TF's dropping of missing values from dense inputs, and the checks of a column list.

A column is an immutable namedtuple (so it can key the builder's cache and compare by value) with
TF1's protocol, which input_layer, linear_model and the canned estimators call:
  name, _var_scope_name, _parse_example_spec        what it is called and what it parses
  _transform_feature(builder)                       its tensors from the features (the builder caches them)
  _DenseColumn: _variable_shape, _get_dense_tensor(builder, weight_collections, trainable)
  _CategoricalColumn: _num_buckets, _get_sparse_tensors(builder, ...) -> IdWeightPair of SparseTensors
"""
import collections

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import cast, constant, expand_dims, reshape, shape as shape_of
from pygrad.ops.dynamic_shape_ops import where_true
from pygrad.ops.manip_ops import gather, stack
from pygrad.ops.math_ops import greater, not_equal
from pygrad.ops.reduction_ops import reduce_prod
from pygrad.ops.scatter_ops import gather_nd
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sparse_ops import sparse_reshape
from pygrad.ops.sparse_tensor import SparseTensor, convert_to_tensor_or_sparse_tensor, is_sparse
from pygrad.ops.string_ops import length as string_length
from pygrad.shapes import TensorShape


class _FeatureColumn:
    """A feature column: what a model reads of the features and how (see the module's docstring)."""

    __slots__ = ()

    @property
    def _var_scope_name(self):
        return self.name

    @property
    def parse_example_spec(self):
        return self._parse_example_spec


class _DenseColumn(_FeatureColumn):
    """A column with a dense representation of shape [batch, *_variable_shape] (input_layer)."""

    __slots__ = ()

    @property
    def variable_shape(self):
        return self._variable_shape


class _CategoricalColumn(_FeatureColumn):
    """A column of ids in [0, _num_buckets): a SparseTensor of ids, with weights or None."""

    __slots__ = ()
    IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])

    @property
    def num_buckets(self):
        return self._num_buckets


def require_string_key(key):
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Got: type {type(key)}. Given key: {key}.")


def require_string_or_int(dtype, prefix):
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError(f"{prefix} dtype must be string or integer. dtype: {dtype}.")


class _LazyBuilder:
    """The features dict, each feature and each column's transformation built once (TF's _LazyBuilder).
    A raw feature of rank 1 becomes [batch, 1]; of rank 0, an error naming its key; a SparseTensor
    of unknown rank, [batch, n]."""

    def __init__(self, features):
        self._features = dict(features)
        self._feature_tensors = {}

    def get(self, key):
        if key in self._feature_tensors:
            return self._feature_tensors[key]
        if isinstance(key, str):
            if key not in self._features:
                raise ValueError(f"Feature {key} is not in features dictionary.")
            tensor = self._raw_feature(key)
        elif isinstance(key, _FeatureColumn):
            tensor = key._transform_feature(self)
            if tensor is None:
                raise ValueError(f"Column {key.name} is not supported.")
        else:
            raise TypeError(f'"key" must be either a "str" or "_FeatureColumn". Provided: {key}')
        self._feature_tensors[key] = tensor
        return tensor

    def _raw_feature(self, key):
        t = convert_to_tensor_or_sparse_tensor(self._features[key])
        rank = t.shape.ndims
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {t}")
        if rank is not None and rank != 1:
            return t
        if is_sparse(t):
            if rank == 1:
                return sparse_reshape(t, rows_by(t.dense_shape, 1))
            # Of unknown rank (TF: a cond on the rank): as [batch, n], which every column reads alike
            return sparse_reshape(t, _batch_by_rest(t.dense_shape))
        if t.dtype == dtypes.string and rank == 1:  # strings live in Python: expanded by the gather that takes them
            return gather(t, reshape(range_(0, shape_of(t)[0]), [-1, 1]))
        # Of unknown rank, a dense feature stays as it is: input_layer and linear_model flatten a
        # column's tensor to [-1, n], and a categorical column asks for a known rank.
        return expand_dims(t, -1) if rank == 1 else t


def rows_by(dense_shape, width):
    """The int64 shape [dense_shape[0], width] (width an int, -1 to infer)."""
    return stack([dense_shape[0], constant(width, dense_shape.dtype)])


def _batch_by_rest(shape):
    """[shape[0], the product of the rest]: a shape of length 1 gets a trailing 1."""
    return stack([shape[0], reduce_prod(shape[1:])])


def to_sparse_input_and_drop_ignore_values(input_tensor, ignore_value=None):
    """A dense tensor as a SparseTensor without the entries equal to ignore_value ("" for strings,
    -1 for integers, 0 for floats by default: TF's missing values); a SparseTensor as it is."""
    t = convert_to_tensor_or_sparse_tensor(input_tensor)
    if is_sparse(t):
        return t
    with get_default_graph().name_scope("to_sparse_input"):
        if t.dtype == dtypes.string:  # TF's ignore_value '' (the only one columns use): the non-empty strings
            if ignore_value not in (None, "", b""):
                raise ValueError(f"to_sparse_input: pygrad drops only empty strings, got ignore_value {ignore_value!r}")
            present = greater(string_length(t), 0)
        else:
            if ignore_value is None:
                ignore_value = -1 if t.dtype.is_integer else 0
            present = not_equal(t, cast(ignore_value, t.dtype, name="ignore_value"))
        indices = where_true(present, name="indices")
        result = SparseTensor(indices, gather_nd(t, indices, name="values"),
                              shape_of(t, out_type=dtypes.int64, name="dense_shape"))
        result.set_shape(t.shape)
        return result


def normalize_feature_columns(feature_columns):
    """The columns as a list, each a _FeatureColumn, none twice by name (TF's checks and messages)."""
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    feature_columns = list(feature_columns)
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(f"Items of feature_columns must be a _FeatureColumn. Given (type {type(column)}): "
                             f"{column}.")
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    by_name = {}
    for column in feature_columns:
        if column.name in by_name:
            raise ValueError(f"Duplicate feature column name found for columns: {column} and {by_name[column.name]}. "
                             f"This usually means that these columns refer to same base feature. Either one must be "
                             f"discarded or a duplicated but renamed item must be inserted in features dict.")
        by_name[column.name] = column
    return feature_columns


def verify_static_batch_size_equality(tensors, columns):
    """Every tensor's static first dimension, where known, is one size (TF's message)."""
    expected, first = None, None
    for tensor, column in zip(tensors, columns):
        size = tensor.shape.dims[0] if tensor.shape.ndims else None
        if size is None:
            continue
        if expected is None:
            expected, first = size, column
        elif size != expected:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. Batch size of columns "
                             f"({first.name}, {column.name}): ({expected}, {size})")


def check_shape(shape, key):
    """A column's shape as a tuple of positive ints (an int is a 1-d shape)."""
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    for dim in shape:
        if not isinstance(dim, int):
            raise TypeError(f"shape dimensions must be integer. shape: {shape}, key: {key}")
        if dim < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    return shape
