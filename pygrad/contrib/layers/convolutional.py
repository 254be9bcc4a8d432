"""TF-Slim's convolution and pooling layers (tf.contrib.layers.conv2d, conv2d_transpose,
separable_conv2d, max_pool2d, avg_pool2d), on pygrad.layers' Conv2D and Conv2DTranspose and tf.nn's
separable and pooling ops, with TF-Slim's defaults (SAME padding, relu, xavier weights), scopes
('Conv', 'Conv2d_transpose', 'SeparableConv2d', 'MaxPool2D', 'AvgPool2D') and variable names
('weights', 'biases', 'depthwise_weights', 'pointwise_weights'), all model variables."""
import numbers

from pygrad.contrib.framework.arg_scope import add_arg_scope
from pygrad.contrib.framework.variables import model_variable
from pygrad.contrib.layers.initializers import xavier_initializer
from pygrad.contrib.layers.utils import (
    NHWC,
    WEIGHTS_AND_BIASES,
    add_variable_to_collections,
    build_variable_getter,
    check_data_format,
    collect_named_outputs,
    get_variable_collections,
)
from pygrad.graph import get_default_graph
from pygrad.layers.convolutional import Conv2D, Conv2DTranspose, SeparableConv2D
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.conv_ops import avg_pool, max_pool
from pygrad.ops.depthwise_ops import depthwise_conv2d
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.nn_ops import bias_add, relu
from pygrad.ops.variable_scope import variable_scope

XAVIER, ZEROS = xavier_initializer(), zeros_initializer()  # TF-Slim's default initializers, made once as TF's

__all__ = ["avg_pool2d", "conv2d", "conv2d_transpose", "convolution", "convolution2d", "convolution2d_transpose",
           "max_pool2d", "separable_conv2d", "separable_convolution2d"]


def _two(value, what):
    """An int or a pair of ints as a pair (TF-Slim's two_element_tuple)."""
    if isinstance(value, numbers.Integral):
        return int(value), int(value)
    v = tuple(value)
    if len(v) != 2 or not all(isinstance(d, numbers.Integral) for d in v):
        raise ValueError(f"{what} must be an int or a list/tuple of 2 ints, got {value!r}")
    return int(v[0]), int(v[1])


def _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections, sc):
    """normalizer_fn, then activation_fn, then outputs_collections: the tail of every TF-Slim layer."""
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return collect_named_outputs(outputs_collections, sc.name, outputs)


def _conv_layer(cls, default_name, inputs, num_outputs, kernel_size, stride, padding, rate, activation_fn,
                normalizer_fn, normalizer_params, weights_initializer, weights_regularizer, biases_initializer,
                biases_regularizer, reuse, variables_collections, outputs_collections, trainable, scope):
    getter = build_variable_getter(WEIGHTS_AND_BIASES)
    with variable_scope(scope, default_name, [inputs], reuse=reuse, custom_getter=getter) as sc:
        inputs = convert_to_tensor(inputs)
        if inputs.shape.ndims != 4:
            raise ValueError(f"{default_name} '{sc.name}': pygrad's convolution takes 4-D NHWC inputs, got inputs of "
                             f"shape {inputs.shape}")
        kwargs = {} if rate is None else {"dilation_rate": rate}
        layer = cls(filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding,
                    data_format="channels_last", activation=None,
                    use_bias=not normalizer_fn and biases_initializer is not None,
                    kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
                    kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                    activity_regularizer=None, trainable=trainable, name=sc.name, dtype=inputs.dtype.base_dtype,
                    _scope=sc, _reuse=reuse, **kwargs)
        outputs = layer.apply(inputs)
        add_variable_to_collections(layer.kernel, variables_collections, "weights")
        if layer.bias is not None:
            add_variable_to_collections(layer.bias, variables_collections, "biases")
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections, sc)


@add_arg_scope
def convolution(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
                activation_fn=relu, normalizer_fn=None, normalizer_params=None,
                weights_initializer=XAVIER, weights_regularizer=None,
                biases_initializer=ZEROS, biases_regularizer=None, reuse=None,
                variables_collections=None, outputs_collections=None, trainable=True, scope=None, conv_dims=None):
    """activation_fn(normalizer_fn(conv(inputs, weights)) or conv(inputs, weights) + biases), in
    the variable scope `scope` (default 'Conv'). 4-D NHWC inputs only (pygrad has no 1-D or 3-D
    convolutions); rate: the dilation, which needs stride 1."""
    if data_format not in (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise ValueError(f"Invalid data_format: {data_format!r}")
    check_data_format(data_format if data_format in (None, NHWC) else "NCHW", "convolution")
    if conv_dims is not None and conv_dims != 2:
        raise ValueError(f"convolution: conv_dims={conv_dims} is not supported (pygrad convolves 4-D NHWC inputs)")
    return _conv_layer(Conv2D, "Conv", inputs, num_outputs, kernel_size, stride, padding, rate, activation_fn,
                       normalizer_fn, normalizer_params, weights_initializer, weights_regularizer,
                       biases_initializer, biases_regularizer, reuse, variables_collections, outputs_collections,
                       trainable, scope)


@add_arg_scope
def convolution2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
                  activation_fn=relu, normalizer_fn=None, normalizer_params=None,
                  weights_initializer=XAVIER, weights_regularizer=None,
                  biases_initializer=ZEROS, biases_regularizer=None, reuse=None,
                  variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """convolution with conv_dims=2 (TF-Slim's conv2d)."""
    return convolution(inputs, num_outputs, kernel_size, stride=stride, padding=padding, data_format=data_format,
                       rate=rate, activation_fn=activation_fn, normalizer_fn=normalizer_fn,
                       normalizer_params=normalizer_params, weights_initializer=weights_initializer,
                       weights_regularizer=weights_regularizer, biases_initializer=biases_initializer,
                       biases_regularizer=biases_regularizer, reuse=reuse,
                       variables_collections=variables_collections, outputs_collections=outputs_collections,
                       trainable=trainable, scope=scope, conv_dims=2)


conv2d = convolution2d


@add_arg_scope
def convolution2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=NHWC,
                            activation_fn=relu, normalizer_fn=None, normalizer_params=None,
                            weights_initializer=XAVIER, weights_regularizer=None,
                            biases_initializer=ZEROS, biases_regularizer=None, reuse=None,
                            variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """The transpose of conv2d (weights [kh, kw, num_outputs, in_channels]), in the variable scope
    `scope` (default 'Conv2d_transpose')."""
    check_data_format(data_format, "conv2d_transpose")
    return _conv_layer(Conv2DTranspose, "Conv2d_transpose", inputs, num_outputs, kernel_size, stride, padding, None,
                       activation_fn, normalizer_fn, normalizer_params, weights_initializer, weights_regularizer,
                       biases_initializer, biases_regularizer, reuse, variables_collections, outputs_collections,
                       trainable, scope)


conv2d_transpose = convolution2d_transpose


@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1, padding="SAME",
                            data_format=NHWC, rate=1, activation_fn=relu, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=XAVIER, pointwise_initializer=None,
                            weights_regularizer=None, biases_initializer=ZEROS, biases_regularizer=None, reuse=None,
                            variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """A depthwise convolution (depth_multiplier filters per input channel), then, unless
    num_outputs is None, a 1x1 convolution to num_outputs channels (tf.layers' SeparableConv2D);
    in the variable scope `scope` (default 'SeparableConv2d'): depthwise_weights
    [kh, kw, in, depth_multiplier], pointwise_weights [1, 1, in * depth_multiplier, num_outputs],
    biases."""
    check_data_format(data_format, "separable_conv2d")
    if pointwise_initializer is None:
        pointwise_initializer = weights_initializer
    getter = build_variable_getter({"bias": "biases", "depthwise_kernel": "depthwise_weights",
                                    "pointwise_kernel": "pointwise_weights"})
    with variable_scope(scope, "SeparableConv2d", [inputs], reuse=reuse, custom_getter=getter) as sc:
        inputs = convert_to_tensor(inputs)
        if inputs.shape.ndims != 4 or inputs.shape[-1].value is None:
            raise ValueError(f"separable_conv2d '{sc.name}': needs 4-D NHWC inputs with known channels, got inputs "
                             f"of shape {inputs.shape}")
        if num_outputs is not None:
            layer = SeparableConv2D(filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding,
                                    data_format="channels_last", dilation_rate=_two(rate, "rate"), activation=None,
                                    depth_multiplier=depth_multiplier,
                                    use_bias=not normalizer_fn and biases_initializer is not None,
                                    depthwise_initializer=weights_initializer,
                                    pointwise_initializer=pointwise_initializer, bias_initializer=biases_initializer,
                                    depthwise_regularizer=weights_regularizer,
                                    pointwise_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                                    activity_regularizer=None, trainable=trainable, name=sc.name,
                                    dtype=inputs.dtype.base_dtype, _scope=sc, _reuse=reuse)
            outputs = layer.apply(inputs)
            add_variable_to_collections(layer.depthwise_kernel, variables_collections, "weights")
            add_variable_to_collections(layer.pointwise_kernel, variables_collections, "weights")
            if layer.bias is not None:
                add_variable_to_collections(layer.bias, variables_collections, "biases")
            return _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections, sc)
        # Depthwise only: TF-Slim makes the variables itself (not through the getter's renaming).
        dtype = inputs.dtype.base_dtype
        kh, kw = _two(kernel_size, "kernel_size")
        sh, sw = _two(stride, "stride")
        channels = inputs.shape[-1].value
        depthwise = model_variable("depthwise_weights", shape=[kh, kw, channels, depth_multiplier], dtype=dtype,
                                   initializer=weights_initializer, regularizer=weights_regularizer,
                                   trainable=trainable,
                                   collections=get_variable_collections(variables_collections, "weights"))
        outputs = depthwise_conv2d(inputs, depthwise, [1, sh, sw, 1], padding.upper(), rate=_two(rate, "rate"))
        if normalizer_fn is None and biases_initializer is not None:
            biases = model_variable("biases", shape=[depth_multiplier * channels], dtype=dtype,
                                    initializer=biases_initializer, regularizer=biases_regularizer,
                                    trainable=trainable,
                                    collections=get_variable_collections(variables_collections, "biases"))
            outputs = bias_add(outputs, biases)
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections, sc)


separable_conv2d = separable_convolution2d


def _pool(pool_fn, default_name, inputs, kernel_size, stride, padding, data_format, outputs_collections, scope):
    check_data_format(data_format, default_name)
    graph = get_default_graph()
    with graph.name_scope(scope or default_name) as sc:
        inputs = convert_to_tensor(inputs)
        if inputs.shape.ndims != 4:
            raise ValueError(f"{default_name} '{sc[:-1]}': pooling needs 4-D NHWC inputs, got inputs of shape "
                             f"{inputs.shape}")
        kh, kw = _two(kernel_size, "kernel_size")
        sh, sw = _two(stride, "stride")
        p = padding.upper() if isinstance(padding, str) else padding
        if p not in ("SAME", "VALID"):
            raise ValueError(f"{default_name} '{sc[:-1]}': padding must be 'SAME' or 'VALID', got {padding!r}")
        outputs = pool_fn(inputs, ksize=[1, kh, kw, 1], strides=[1, sh, sw, 1], padding=p)
        return collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format=NHWC, outputs_collections=None,
               scope=None):
    """2-D max pooling (name scope `scope`, default 'MaxPool2D')."""
    return _pool(max_pool, "MaxPool2D", inputs, kernel_size, stride, padding, data_format, outputs_collections,
                 scope)


@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format=NHWC, outputs_collections=None,
               scope=None):
    """2-D average pooling (name scope `scope`, default 'AvgPool2D')."""
    return _pool(avg_pool, "AvgPool2D", inputs, kernel_size, stride, padding, data_format, outputs_collections,
                 scope)
