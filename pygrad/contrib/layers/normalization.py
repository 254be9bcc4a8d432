"""TF-Slim's batch_norm and layer_norm (tf.contrib.layers), in the variable scopes 'BatchNorm'
and 'LayerNorm', their variables model variables.

batch_norm takes one of TF-Slim's three paths, chosen as TF-Slim chooses:
* fused (the default, fused=None meaning True) for 2-D or 4-D inputs when zero_debias_moving_mean
  is set, or the inputs are 2-D, or updates_collections is not tf.GraphKeys.UPDATE_OPS:
  tf.nn.fused_batch_norm (2-D inputs seen as [-1, 1, 1, C]); variables beta, gamma (only with
  scale=True), moving_mean, moving_variance; the batch variance of the moving average is the
  unbiased one;
* otherwise, with updates_collections UPDATE_OPS: tf.layers.BatchNormalization, whose variables
  are gamma (scale=True), beta, moving_mean, moving_variance, fused for 4-D inputs when fused;
* otherwise (fused=False, or inputs of another rank, with other updates_collections or
  zero_debias_moving_mean): tf.nn.moments over all axes but the last (the biased variance).
updates_collections=None updates the moving statistics in place (the output depends on the
updates); otherwise the two update ops go to those collections. is_training is a Python bool or
a boolean tensor (then a tf.cond picks the path, and the updates run only when it is true)."""
from pygrad import dtypes
from pygrad.contrib.framework.arg_scope import add_arg_scope
from pygrad.contrib.framework.variables import model_variable
from pygrad.contrib.layers.utils import (
    NHWC,
    add_variable_to_collections,
    build_variable_getter,
    check_data_format,
    collect_named_outputs,
    get_variable_collections,
    smart_cond,
    static_flag,
)
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.layers.normalization import BatchNormalization
from pygrad.ops.array_ops import constant, convert_to_tensor, identity, reshape
from pygrad.ops.array_ops import shape as shape_of
from pygrad.ops.init_ops import ones_initializer, zeros_initializer
from pygrad.ops.nn_impl import batch_normalization, fused_batch_norm, moments
from pygrad.ops.variable_scope import variable_scope
from pygrad.train.moving_averages import assign_moving_average

__all__ = ["batch_norm", "layer_norm"]


def _params(inputs, params_shape, center, scale, param_initializers, param_regularizers, variables_collections,
            trainable, dtype):
    """(beta, gamma, moving_mean, moving_variance), created in TF-Slim's order; None for a missing
    beta or gamma."""
    inits, regs = param_initializers or {}, param_regularizers or {}

    def make(name, default_init, regularizer=None, train=trainable):
        return model_variable(name, shape=params_shape, dtype=dtype, initializer=inits.get(name, default_init),
                              regularizer=regularizer, trainable=train,
                              collections=get_variable_collections(variables_collections, name))

    beta = make("beta", zeros_initializer(), regs.get("beta")) if center else None
    gamma = make("gamma", ones_initializer(), regs.get("gamma")) if scale else None
    moving_mean = make("moving_mean", zeros_initializer(), train=False)
    moving_variance = make("moving_variance", ones_initializer(), train=False)
    return beta, gamma, moving_mean, moving_variance


def _updates(moving_mean, moving_variance, mean, variance, decay, zero_debias, is_training, updates_collections,
             outputs):
    """TF-Slim's update of the moving statistics: in place (the returned outputs wait for it) when
    updates_collections is None, else the update ops added to updates_collections."""
    def assign():
        return (assign_moving_average(moving_mean, mean, decay, zero_debias=zero_debias),
                assign_moving_average(moving_variance, variance, decay, zero_debias=False))

    graph = get_default_graph()
    if updates_collections is None:
        def forced():
            with graph.control_dependencies(list(assign())):
                return identity(outputs)

        return smart_cond(is_training, forced, lambda: outputs)
    update_mean, update_variance = smart_cond(is_training, assign, lambda: (moving_mean, moving_variance))
    collections = [updates_collections] if isinstance(updates_collections, str) else list(updates_collections)
    graph.add_to_collections(collections, update_mean)
    graph.add_to_collections(collections, update_variance)
    return outputs


def _fused_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers, param_regularizers,
                      updates_collections, is_training, reuse, variables_collections, outputs_collections, trainable,
                      zero_debias_moving_mean, scope):
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        original = inputs
        rank = inputs.shape.ndims
        if rank == 2:
            channels = inputs.shape[-1].value
            if channels is None:
                raise ValueError("`C` dimension must be known but is None")
            inputs = reshape(inputs, [-1, 1, 1, channels])
        params_shape = inputs.shape.as_list()[-1:]
        if params_shape[0] is None:
            raise ValueError(f"Inputs {inputs.name} has undefined `C` dimension {inputs.shape[-1:]}.")
        beta, gamma, moving_mean, moving_variance = _params(
            inputs, params_shape, center, scale, param_initializers, param_regularizers, variables_collections,
            trainable, dtypes.float32)
        beta = beta if beta is not None else constant(0.0, dtypes.float32, params_shape)
        gamma = gamma if gamma is not None else constant(1.0, dtypes.float32, params_shape)
        outputs, mean, variance = smart_cond(
            is_training, lambda: fused_batch_norm(inputs, gamma, beta, epsilon=epsilon),
            lambda: fused_batch_norm(inputs, gamma, beta, mean=moving_mean, variance=moving_variance,
                                     epsilon=epsilon, is_training=False))
        if static_flag(is_training) is not False:
            outputs = _updates(moving_mean, moving_variance, mean, variance, decay, zero_debias_moving_mean,
                               is_training, updates_collections, outputs)
        if rank == 2:
            dims = original.shape.as_list()
            outputs = reshape(outputs, [-1 if d is None else d for d in dims] if dims.count(None) <= 1
                              else shape_of(original))
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


def _layer_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers, param_regularizers,
                      is_training, reuse, variables_collections, outputs_collections, trainable, fused, scope):
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse, custom_getter=build_variable_getter()) as sc:
        inits, regs = param_initializers or {}, param_regularizers or {}
        layer = BatchNormalization(axis=-1, momentum=decay, epsilon=epsilon, center=center, scale=scale,
                                   beta_initializer=inits.get("beta", zeros_initializer()),
                                   gamma_initializer=inits.get("gamma", ones_initializer()),
                                   moving_mean_initializer=inits.get("moving_mean", zeros_initializer()),
                                   moving_variance_initializer=inits.get("moving_variance", ones_initializer()),
                                   beta_regularizer=regs.get("beta"), gamma_regularizer=regs.get("gamma"),
                                   trainable=trainable, name=sc.name, _scope=sc, _reuse=reuse,
                                   fused=bool(fused) and inputs.shape.ndims == 4)
        outputs = layer.apply(inputs, training=is_training)
        for var, name in ((layer.moving_mean, "moving_mean"), (layer.moving_variance, "moving_variance"),
                          (layer.beta, "beta"), (layer.gamma, "gamma")):
            if var is not None:
                add_variable_to_collections(var, variables_collections, name)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


def _moments_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers,
                        updates_collections, is_training, reuse, variables_collections, outputs_collections,
                        trainable, zero_debias_moving_mean, scope):
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        params_shape = inputs.shape.as_list()[-1:]
        if params_shape[0] is None:
            raise ValueError(f"Inputs {inputs.name} has undefined channels dimension {inputs.shape[-1:]}.")
        beta, gamma, moving_mean, moving_variance = _params(
            inputs, params_shape, center, scale, param_initializers, None, variables_collections, trainable,
            inputs.dtype.base_dtype)
        if static_flag(is_training) is False:
            mean, variance = moving_mean, moving_variance
        else:
            mean, variance = moments(inputs, list(range(inputs.shape.ndims - 1)))
            moving = (lambda: (identity(moving_mean), identity(moving_variance)))
            if updates_collections is None:
                def forced():
                    updates = [assign_moving_average(moving_mean, mean, decay, zero_debias=zero_debias_moving_mean),
                               assign_moving_average(moving_variance, variance, decay, zero_debias=False)]
                    with get_default_graph().control_dependencies(updates):
                        return identity(mean), identity(variance)

                mean, variance = smart_cond(is_training, forced, moving)
            else:
                _updates(moving_mean, moving_variance, mean, variance, decay, zero_debias_moving_mean, is_training,
                         updates_collections, None)
                batch = (mean, variance)
                mean, variance = smart_cond(is_training, lambda: batch, moving)
        outputs = batch_normalization(inputs, mean, variance, beta, gamma, epsilon)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001, activation_fn=None,
               param_initializers=None, param_regularizers=None, updates_collections=GraphKeys.UPDATE_OPS,
               is_training=True, reuse=None, variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format=NHWC, zero_debias_moving_mean=False, scope=None,
               renorm=False, renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """Batch normalization over all axes but the last, with a moving mean and variance for
    inference (see the module's docstring for the paths and the updates)."""
    if batch_weights is not None or renorm or adjustment is not None:
        raise ValueError("batch_norm: batch_weights, renorm and adjustment are not supported")
    check_data_format(data_format, "batch_norm")
    inputs = convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    fused = True if fused is None else fused
    default_updates = isinstance(updates_collections, str) and updates_collections == GraphKeys.UPDATE_OPS
    if fused and rank in (2, 4) and (zero_debias_moving_mean or rank == 2 or not default_updates):
        return _fused_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers,
                                 param_regularizers, updates_collections, is_training, reuse, variables_collections,
                                 outputs_collections, trainable, zero_debias_moving_mean, scope)
    if default_updates and not zero_debias_moving_mean:
        return _layer_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers,
                                 param_regularizers, is_training, reuse, variables_collections,
                                 outputs_collections, trainable, fused, scope)
    return _moments_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers,
                               updates_collections, is_training, reuse, variables_collections, outputs_collections,
                               trainable, zero_debias_moving_mean, scope)


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None, variables_collections=None,
               outputs_collections=None, trainable=True, begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """Normalizes over the axes from begin_norm_axis on (mean and variance per example), then
    beta + gamma * x with beta and gamma of shape inputs.shape[begin_params_axis:] (variable scope
    `scope`, default 'LayerNorm'); variance epsilon 1e-12."""
    with variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        if begin_norm_axis < 0:
            begin_norm_axis += rank
        if begin_params_axis >= rank or begin_norm_axis >= rank:
            raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis ({begin_norm_axis}) must "
                             f"be < rank(inputs) ({rank})")
        params_shape = inputs.shape.as_list()[begin_params_axis:]
        if None in params_shape:
            raise ValueError(f"Inputs {inputs.name}: shape(inputs)[{begin_params_axis}:] is not fully defined: "
                             f"{inputs.shape}")
        dtype = inputs.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = model_variable("beta", shape=params_shape, dtype=dtype, initializer=zeros_initializer(),
                                  collections=get_variable_collections(variables_collections, "beta"),
                                  trainable=trainable)
        if scale:
            gamma = model_variable("gamma", shape=params_shape, dtype=dtype, initializer=ones_initializer(),
                                   collections=get_variable_collections(variables_collections, "gamma"),
                                   trainable=trainable)
        mean, variance = moments(inputs, list(range(begin_norm_axis, rank)), keep_dims=True)
        outputs = batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                      variance_epsilon=1e-12 if dtype != dtypes.float16 else 1e-3)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)
