"""tf.contrib.slim (TF-Slim): the contrib layers, arg_scope and the variable helpers under one
name, slim.losses, slim.metrics (tf.contrib.metrics), slim.learning (create_train_op, train),
slim.evaluation (evaluate_once, evaluation_loop) and slim.nets (the model zoo, imported on first
use)."""
from pygrad.contrib import metrics  # noqa: F401
from pygrad.contrib.framework.arg_scope import (  # noqa: F401
                                                add_arg_scope,
                                                arg_scope,
                                                arg_scope_func_key,
                                                arg_scoped_arguments,
                                                current_arg_scope,
                                                has_arg_scope,
)
from pygrad.contrib.framework.variables import (  # noqa: F401
                                                add_model_variable,
                                                assert_or_get_global_step,
                                                assign_from_checkpoint,
                                                assign_from_checkpoint_fn,
                                                assign_from_values,
                                                assign_from_values_fn,
                                                create_global_step,
                                                filter_variables,
                                                get_global_step,
                                                get_local_variables,
                                                get_model_variables,
                                                get_or_create_global_step,
                                                get_trainable_variables,
                                                get_unique_variable,
                                                get_variable_full_name,
                                                get_variables,
                                                get_variables_by_name,
                                                get_variables_by_suffix,
                                                get_variables_to_restore,
                                                global_variable,
                                                local_variable,
                                                model_variable,
                                                variable,
)
from pygrad.contrib.layers import (  # noqa: F401
                                                apply_regularization,
                                                avg_pool2d,
                                                batch_norm,
                                                conv2d,
                                                conv2d_transpose,
                                                convolution,
                                                convolution2d,
                                                convolution2d_transpose,
                                                dropout,
                                                elu,
                                                embed_sequence,
                                                flatten,
                                                fully_connected,
                                                l1_l2_regularizer,
                                                l1_regularizer,
                                                l2_regularizer,
                                                layer_norm,
                                                linear,
                                                max_pool2d,
                                                one_hot_encoding,
                                                relu,
                                                relu6,
                                                repeat,
                                                separable_conv2d,
                                                separable_convolution2d,
                                                softmax,
                                                stack,
                                                sum_regularizer,
                                                summarize_activation,
                                                summarize_activations,
                                                summarize_biases,
                                                summarize_collection,
                                                summarize_tensor,
                                                summarize_tensors,
                                                summarize_variables,
                                                summarize_weights,
                                                variance_scaling_initializer,
                                                xavier_initializer,
                                                xavier_initializer_conv2d,
)
from pygrad.contrib.slim import evaluation, learning, losses  # noqa: F401


def __getattr__(name):
    """slim.nets, imported when first named (as `import tensorflow.contrib.slim.nets` would)."""
    if name == "nets":
        import importlib
        return importlib.import_module("pygrad.contrib.slim.nets")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
