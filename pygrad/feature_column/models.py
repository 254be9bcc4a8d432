"""What models make of feature columns, as TF1's feature_column.py: input_layer (the dense columns
side by side, a [batch, n] float32 tensor), linear_model (a weighted sum of every column, with a
bias) and make_parse_example_spec (what tf.parse_example must read for them).

Columns are built in the order of their names, each in a variable scope of its own, so variables
have TF's names: "input_layer/<column>/embedding_weights", "linear_model/<column>/weights",
"linear_model/bias_weights".
"""
from pygrad.feature_column.base import (_CategoricalColumn, _DenseColumn, _FeatureColumn, _LazyBuilder,
                                        normalize_feature_columns, rows_by, verify_static_batch_size_equality)
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops.array_ops import reshape, shape as shape_of
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.manip_ops import concat
from pygrad.ops.math_ops import add_n, matmul
from pygrad.ops.nn_ops import bias_add
from pygrad.ops.partitioned_variables import PartitionedVariable
from pygrad.ops.sparse_embedding import safe_embedding_lookup_sparse
from pygrad.ops.sparse_ops import sparse_reshape
from pygrad.ops.variable_scope import get_variable, get_variable_scope, variable_scope


def _collections(weight_collections):
    out = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in out:
            out.append(key)
    return out


def _flat_rows(tensor, num_elements):
    """tensor as [batch, num_elements] (TF's reshape to (shape(tensor)[0], num_elements))."""
    out = reshape(tensor, [shape_of(tensor)[0] if tensor.shape.ndims else -1, num_elements])
    out.set_shape([tensor.shape.dims[0] if tensor.shape.ndims else None, num_elements])
    return out


def _scope_vars(scope_name):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope_name)


def input_layer(features, feature_columns, weight_collections=None, trainable=True, cols_to_vars=None,
                cols_to_output_tensors=None):
    """The dense columns' tensors for features (a dict of feature name -> Tensor or SparseTensor),
    each flattened to [batch, n] and concatenated in the order of the columns' names."""
    feature_columns = normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, _DenseColumn):
            raise ValueError(f"Items of feature_columns must be a _DenseColumn. You can wrap a categorical column "
                             f"with an embedding_column or indicator_column. Given: {column}")
    weight_collections = _collections(weight_collections)
    with variable_scope(None, default_name="input_layer", values=list(features.values())):
        builder = _LazyBuilder(features)
        outputs, ordered = [], []
        for column in sorted(feature_columns, key=lambda c: c.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                tensor = column._get_dense_tensor(builder, weight_collections=weight_collections,
                                                  trainable=trainable)
                output = _flat_rows(tensor, column._variable_shape.num_elements())
                outputs.append(output)
                if cols_to_vars is not None:
                    cols_to_vars[column] = _scope_vars(get_variable_scope().name)
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[column] = output
        verify_static_batch_size_equality(outputs, ordered)
        return concat(outputs, 1)


def _weighted_sum(column, builder, units, sparse_combiner, weight_collections, trainable):
    """One column's [batch, units] part of a linear model: its dense tensor times "weights", or,
    for a categorical column, the combination of its ids' rows of "weights" (TF's
    safe_embedding_lookup_sparse: a row without ids gives 0)."""
    categorical = isinstance(column, _CategoricalColumn)
    # TF's _FCLinearWrapper makes the weights (when the layer is built) before the column's tensors
    rows = column._num_buckets if categorical else column._variable_shape.num_elements()
    var = get_variable("weights", shape=(rows, units), initializer=zeros_initializer(), trainable=trainable,
                       collections=weight_collections)
    if categorical:
        pair = column._get_sparse_tensors(builder, weight_collections=weight_collections, trainable=trainable)
        ids = sparse_reshape(pair.id_tensor, rows_by(pair.id_tensor.dense_shape, -1))
        weights = pair.weight_tensor
        if weights is not None:
            weights = sparse_reshape(weights, rows_by(weights.dense_shape, -1))
        return safe_embedding_lookup_sparse(var, ids, sparse_weights=weights, combiner=sparse_combiner,
                                            name="weighted_sum")
    tensor = column._get_dense_tensor(builder, weight_collections=weight_collections, trainable=trainable)
    return matmul(_flat_rows(tensor, rows), var, name="weighted_sum")


def linear_model(features, feature_columns, units=1, sparse_combiner="sum", weight_collections=None, trainable=True,
                 cols_to_vars=None):
    """A [batch, units] linear prediction: each column's weighted sum (categorical columns as their
    ids' weights, combined by sparse_combiner: "sum", "mean" or "sqrtn"), plus "bias_weights"."""
    feature_columns = normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, (_DenseColumn, _CategoricalColumn)):
            raise ValueError(f"Items of feature_columns must be either a _DenseColumn or _CategoricalColumn. "
                             f"Given: {column}")
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"linear_model: sparse_combiner must be one of 'sum', 'mean', 'sqrtn', got "
                         f"{sparse_combiner!r}")
    weight_collections = _collections(weight_collections)
    # As TF's _LinearModel: its name and its columns' scope names are made unique where it is
    # called (a second model's column "n" is "linear_model_1/n_1"), then entered by those names.
    with variable_scope(None, default_name="linear_model") as vs:
        model_name = vs.name.rsplit("/", 1)[-1]
    ordered = sorted(feature_columns, key=lambda c: c.name)
    scope_names = []
    for column in ordered:
        with variable_scope(None, default_name=column._var_scope_name) as vs:
            scope_names.append(vs.name.rsplit("/", 1)[-1])
    with variable_scope(model_name):
        builder = _LazyBuilder(features)
        sums = []
        for column, scope_name in zip(ordered, scope_names):
            with variable_scope(scope_name):
                sums.append(_weighted_sum(column, builder, units, sparse_combiner, weight_collections, trainable))
                if cols_to_vars is not None:
                    cols_to_vars[column] = _scope_vars(get_variable_scope().name)
        verify_static_batch_size_equality(sums, ordered)
        no_bias = add_n(sums, name="weighted_sum_no_bias")
        bias = get_variable("bias_weights", shape=[units], initializer=zeros_initializer(), trainable=trainable,
                            collections=weight_collections)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = list(bias) if isinstance(bias, PartitionedVariable) else [bias]
        return bias_add(no_bias, bias, name="weighted_sum")


def make_parse_example_spec(feature_columns):
    """The features tf.parse_example must read for the columns: feature name -> FixedLenFeature or
    VarLenFeature; two columns asking one feature differently is an error."""
    result = {}
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: {column}")
        for key, value in column._parse_example_spec.items():
            if key in result and value != result[key]:
                raise ValueError(f"feature_columns contain different parse_spec for key {key}. Given {value} and "
                                 f"{result[key]}")
        result.update(column._parse_example_spec)
    return result

