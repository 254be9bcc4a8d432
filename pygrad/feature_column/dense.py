"""The dense columns, as TF's: numbers (numeric_column), their buckets (bucketized_column, also
categorical), and categorical columns made dense: embedded (embedding_column,
shared_embedding_columns: a variable of [num_buckets, dimension] and a sparse lookup) or
multi-hot (indicator_column).
"""
import collections
import math

from pygrad import dtypes
from pygrad.feature_column.base import _CategoricalColumn, _DenseColumn, check_shape, require_string_key
from pygrad.feature_column.categorical import _WeightedCategoricalColumn
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops.array_ops import cast, expand_dims, reshape, shape as shape_of, transpose, zeros_like
from pygrad.ops.init_ops import truncated_normal_initializer
from pygrad.ops.manip_ops import one_hot, stack
from pygrad.ops.math_ops import add, bucketize, multiply
from pygrad.ops.parsing_ops import FixedLenFeature
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.ops.sequence_ops import range as range_
from pygrad.ops.sparse_embedding import safe_embedding_lookup_sparse
from pygrad.ops.sparse_ops import sparse_tensor_to_dense
from pygrad.ops.sparse_tensor import SparseTensor, is_sparse
from pygrad.ops.variable_scope import get_variable
from pygrad.shapes import TensorShape


# ---------------------------------------------------------------- numbers
class _NumericColumn(_DenseColumn, collections.namedtuple(
        "NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """A dense feature of shape [batch, *shape], normalized by normalizer_fn, as float32."""

    @property
    def name(self):
        return self.key

    @property
    def _parse_example_spec(self):
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, inputs):
        t = inputs.get(self.key)
        if is_sparse(t):
            raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. SparseTensor is not "
                             f"supported. key: {self.key}")
        if self.normalizer_fn is not None:
            t = self.normalizer_fn(t)
        return cast(t, dtypes.float32)

    @property
    def _variable_shape(self):
        return TensorShape(self.shape)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


def _default_tuple(shape, value):
    return tuple(_default_tuple(shape[1:], value) for _ in range(shape[0])) if shape else value


def _nested(value):
    return isinstance(value, (list, tuple))


def _fits(value, shape):
    if _nested(value) != bool(shape):
        return False
    return not shape or len(value) == shape[0] and all(_fits(v, shape[1:]) for v in value)


def _flat(value):
    return [x for v in value for x in _flat(v)] if _nested(value) else [value]


def _as_tuple(value):
    return tuple(_as_tuple(v) for v in value) if _nested(value) else value


def _check_default_value(shape, default_value, dtype, key):
    """TF's fc_utils.check_default_value: a scalar repeated over shape, or nested lists of shape."""
    if default_value is None:
        return None
    if isinstance(default_value, int) or isinstance(default_value, float) and dtype.is_floating:
        return _default_tuple(shape, default_value)
    if callable(getattr(default_value, "tolist", None)):
        default_value = default_value.tolist()
    if _nested(default_value):
        if not _fits(default_value, shape):
            raise ValueError(f"The shape of default_value must be equal to given shape. default_value: "
                             f"{default_value}, shape: {shape}, key: {key}")
        flat = _flat(default_value)
        if all(isinstance(v, int) for v in flat) or dtype.is_floating and any(isinstance(v, float) for v in flat):
            return _as_tuple(default_value)
    raise TypeError(f"default_value must be compatible with dtype. default_value: {default_value}, dtype: {dtype}, "
                    f"key: {key}")


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32, normalizer_fn=None):
    """A dense feature of the given shape; default_value fills it where an Example lacks it."""
    shape = check_shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    default_value = _check_default_value(shape, default_value, dtype, key)
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    require_string_key(key)
    return _NumericColumn(key, shape, default_value, dtype, normalizer_fn)


class _BucketizedColumn(_DenseColumn, _CategoricalColumn, collections.namedtuple(
        "BucketizedColumn", ["source_column", "boundaries"])):
    """A numeric column's values as bucket ids (TF's Bucketize: the number of boundaries <= the
    value): one-hot in input_layer, an id per value (offset by the value's position) in linear_model."""

    @property
    def name(self):
        return f"{self.source_column.name}_bucketized"

    @property
    def _parse_example_spec(self):
        return self.source_column._parse_example_spec

    def _transform_feature(self, inputs):
        return bucketize(inputs.get(self.source_column), boundaries=self.boundaries)

    @property
    def _variable_shape(self):
        return TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,))

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return one_hot(cast(inputs.get(self), dtypes.int64), depth=len(self.boundaries) + 1, on_value=1.,
                       off_value=0.)

    @property
    def _num_buckets(self):
        return (len(self.boundaries) + 1) * self.source_column.shape[0]

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        buckets = inputs.get(self)
        batch_size = shape_of(buckets)[0]
        width = self.source_column.shape[0]
        zeros = zeros_like(buckets)  # TF tiles the row and column numbers; broadcasting them is the same
        i1 = reshape(add(reshape(range_(0, batch_size), [-1, 1]), zeros), [-1])
        i2 = reshape(add(range_(0, width), zeros), [-1])
        ids = add(reshape(buckets, [-1]), multiply(len(self.boundaries) + 1, i2))
        indices = cast(transpose(stack([i1, i2])), dtypes.int64)
        dense_shape = cast(stack([batch_size, width]), dtypes.int64)
        return _CategoricalColumn.IdWeightPair(SparseTensor(indices, ids, dense_shape), None)


def bucketized_column(source_column, boundaries):
    """source_column (a 1-d numeric_column) split at the sorted boundaries into len(boundaries) + 1 buckets."""
    if not isinstance(source_column, _NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if not boundaries:
        raise ValueError("boundaries must not be empty.")
    if not isinstance(boundaries, (list, tuple)) or any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("boundaries must be a sorted list.")
    return _BucketizedColumn(source_column, tuple(boundaries))


# ---------------------------------------------------------------- embeddings
def _lookup(column, weights, pair):
    return safe_embedding_lookup_sparse(weights, pair.id_tensor, pair.weight_tensor, combiner=column.combiner,
                                        name=f"{column.name}_weights", max_norm=column.max_norm)


def _require_categorical(column):
    if not isinstance(column.categorical_column, _CategoricalColumn):
        raise ValueError(f"In embedding_column: {column.name}. categorical_column must be a categorical column. "
                         f"Given (type {type(column.categorical_column)}): {column.categorical_column}")


class _EmbeddingColumn(_DenseColumn, collections.namedtuple(
        "EmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer", "ckpt_to_load_from",
                            "tensor_name_in_ckpt", "max_norm", "trainable"])):
    """A categorical column's ids as the combination (mean, sum or sqrtn) of their rows in a
    [num_buckets, dimension] variable "embedding_weights"."""

    @property
    def name(self):
        return f"{self.categorical_column.name}_embedding"

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    @property
    def _variable_shape(self):
        return TensorShape([self.dimension])

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        _require_categorical(self)
        pair = self.categorical_column._get_sparse_tensors(inputs, weight_collections, trainable)
        collections_ = list(weight_collections) if weight_collections else None
        if collections_ and GraphKeys.GLOBAL_VARIABLES not in collections_:
            collections_.append(GraphKeys.GLOBAL_VARIABLES)
        weights = get_variable("embedding_weights", shape=(self.categorical_column._num_buckets, self.dimension),
                               dtype=dtypes.float32, initializer=self.initializer,
                               trainable=self.trainable and trainable is not False, collections=collections_)
        return _lookup(self, weights, pair)


def _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt, initializer, what):
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. {what}")
    return initializer or truncated_normal_initializer(mean=0.0, stddev=1 / math.sqrt(dimension))


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None, ckpt_to_load_from=None,
                     tensor_name_in_ckpt=None, max_norm=None, trainable=True, use_safe_embedding_lookup=True):
    """categorical_column embedded in `dimension` floats (the initializer defaults to TF's
    truncated normal of stddev 1/sqrt(dimension)). ckpt_to_load_from is accepted and not read:
    restore the variable with a Saver instead."""
    initializer = _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt, initializer,
                                        f"Embedding of column_name: {categorical_column.name}")
    return _EmbeddingColumn(categorical_column, dimension, combiner, initializer, ckpt_to_load_from,
                            tensor_name_in_ckpt, max_norm, trainable)


class _SharedEmbeddingColumn(_DenseColumn, collections.namedtuple(
        "SharedEmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer",
                                  "shared_embedding_collection_name", "ckpt_to_load_from", "tensor_name_in_ckpt",
                                  "max_norm", "trainable"])):
    """An embedding whose variable several columns share: the first to be built makes it (under the
    collection's name) and puts it in the graph collection of that name; the others take it there."""

    @property
    def name(self):
        return f"{self.categorical_column.name}_shared_embedding"

    @property
    def _var_scope_name(self):
        return self.shared_embedding_collection_name

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    @property
    def _variable_shape(self):
        return TensorShape([self.dimension])

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        _require_categorical(self)
        graph = get_default_graph()
        with graph.name_scope(self.name):
            pair = self.categorical_column._get_sparse_tensors(inputs, weight_collections, trainable)
            shape = (self.categorical_column._num_buckets, self.dimension)
            shared = graph.get_collection(self.shared_embedding_collection_name)
            if shared:
                if len(shared) > 1:
                    raise ValueError(f"Collection {shared} can only contain one variable. Suggested fix A: Choose a "
                                     f"unique name for this collection. Suggested fix B: Do not add any variables to "
                                     f"this collection. The feature_column library already adds a variable under the "
                                     f"hood.")
                weights = shared[0]
                if tuple(weights.shape.as_list()) != shape:
                    raise ValueError(f"Shared embedding collection {self.shared_embedding_collection_name} contains "
                                     f"variable {weights.name} of unexpected shape {weights.shape}. Expected shape is "
                                     f"{TensorShape(shape)}.")
            else:
                weights = get_variable("embedding_weights", shape=shape, dtype=dtypes.float32,
                                       initializer=self.initializer,
                                       trainable=self.trainable and trainable is not False,
                                       collections=list(weight_collections) if weight_collections else None)
                graph.add_to_collection(self.shared_embedding_collection_name, weights)
            return _lookup(self, weights, pair)


def _base(column):
    """A column under its weighting: the column whose type shared embeddings compare."""
    while isinstance(column, _WeightedCategoricalColumn):
        column = column.categorical_column
    return column


def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None, tensor_name_in_ckpt=None,
                             max_norm=None, trainable=True, use_safe_embedding_lookup=True):
    """One embedding column per categorical column (all of one type and size), all sharing one
    variable, named after the columns ("a_b_shared_embedding") unless the name is given."""
    initializer = _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt, initializer, "")
    columns = sorted(categorical_columns, key=lambda c: c.name)
    c0 = columns[0]
    if not isinstance(c0, _CategoricalColumn):
        raise ValueError(f"All categorical_columns must be subclasses of _CategoricalColumn. Given: {c0}, of type: "
                         f"{type(c0)}")
    num_buckets, base0 = c0._num_buckets, _base(c0)
    for c in columns[1:]:
        if not isinstance(_base(c), type(base0)):
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have the same type, or be "
                             f"weighted_categorical_column or sequence column of the same type. Given column: {base0} "
                             f"of type: {type(base0)} does not match given column: {_base(c)} of type: "
                             f"{type(_base(c))}")
        if num_buckets != c._num_buckets:
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have the same number of "
                             f"buckets. Given column: {base0} with buckets: {num_buckets} does not match column: {c} "
                             f"with buckets: {c._num_buckets}")
    name = shared_embedding_collection_name or "_".join(c.name for c in columns) + "_shared_embedding"
    return [_SharedEmbeddingColumn(c, dimension, combiner, initializer, name, ckpt_to_load_from, tensor_name_in_ckpt,
                                   max_norm, trainable) for c in categorical_columns]


# ---------------------------------------------------------------- multi-hot
class _IndicatorColumn(_DenseColumn, collections.namedtuple("IndicatorColumn", ["categorical_column"])):
    """A categorical column as a [batch, num_buckets] count of each id in the row (the sum of the
    ids' weights, for a weighted column)."""

    @property
    def name(self):
        return f"{self.categorical_column.name}_indicator"

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs):
        pair = self.categorical_column._get_sparse_tensors(inputs)
        size = self.categorical_column._num_buckets
        weights = pair.weight_tensor
        if weights is None:
            dense_ids = sparse_tensor_to_dense(pair.id_tensor, default_value=-1)
            return reduce_sum(one_hot(dense_ids, depth=size, on_value=1.0, off_value=0.0), axis=[-2])
        # TF sums each id's weights with sparse_merge and scatter_nd (ids at the weights' places);
        # the same sum from the one-hot ids scaled by their weights, which needs no static shape.
        ids = SparseTensor(weights.indices, pair.id_tensor.values, weights.dense_shape)
        dense_ids = sparse_tensor_to_dense(ids, default_value=-1)
        dense_weights = expand_dims(sparse_tensor_to_dense(weights, default_value=0.0), -1)
        return reduce_sum(multiply(one_hot(dense_ids, depth=size, on_value=1.0, off_value=0.0), dense_weights),
                          axis=[-2])

    @property
    def _variable_shape(self):
        return TensorShape([1, self.categorical_column._num_buckets])

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


def indicator_column(categorical_column):
    """categorical_column as a multi-hot (count) vector of its num_buckets ids."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. Given: {categorical_column}")
    return _IndicatorColumn(categorical_column)

