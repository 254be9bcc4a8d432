"""tf.contrib.framework: arg_scope, TF-Slim's variable helpers, nest, and sort/argsort."""
from pygrad import nest  # noqa: F401
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
from pygrad.ops.topk_ops import argsort, sort  # noqa: F401
