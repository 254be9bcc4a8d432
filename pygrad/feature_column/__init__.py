"""tf.feature_column: TF1's feature columns, which turn a dict of raw features (dense tensors,
SparseTensors, parsed tf.train.Examples) into a model's inputs: input_layer for a network,
linear_model for a linear one. Columns, ids, hashes, crosses and variable names are TF's.

    price = tf.feature_column.numeric_column("price")
    city = tf.feature_column.categorical_column_with_hash_bucket("city", 100)
    net = tf.feature_column.input_layer(features, [price, tf.feature_column.embedding_column(city, 8)])
"""
from pygrad.feature_column.categorical import (categorical_column_with_hash_bucket,  # noqa: F401
                                               categorical_column_with_identity,
                                               categorical_column_with_vocabulary_file,
                                               categorical_column_with_vocabulary_list, crossed_column,
                                               weighted_categorical_column)
from pygrad.feature_column.dense import (bucketized_column, embedding_column, indicator_column,  # noqa: F401
                                         numeric_column, shared_embedding_columns)
from pygrad.feature_column.models import input_layer, linear_model, make_parse_example_spec  # noqa: F401
