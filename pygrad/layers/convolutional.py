"""tf.layers.Conv2D, Conv2DTranspose, SeparableConv2D, MaxPooling2D and AveragePooling2D, and
their functional forms (TF1's layers/convolutional.py and pooling.py), channels_last only."""
import numbers

from pygrad.graph import build_error
from pygrad.ops.array_ops import shape
from pygrad.ops.conv_ops import avg_pool, conv2d as nn_conv2d, conv2d_transpose as nn_conv2d_transpose, max_pool
from pygrad.ops.depthwise_ops import separable_conv2d as nn_separable_conv2d
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.nn_ops import bias_add
from pygrad.layers.base import Layer, channels_last, input_rank


def _pair(value, what, layer):
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    v = tuple(int(d) for d in value)
    if len(v) != 2:
        raise build_error(type(layer).__name__, layer.name, f"{what} must be an int or a pair of ints, got {value!r}")
    return v


def _padding(value, layer):
    p = value.upper() if isinstance(value, str) else value
    if p not in ("SAME", "VALID"):
        raise build_error(type(layer).__name__, layer.name, f"padding must be 'valid' or 'same', got {value!r}")
    return p


class Conv2D(Layer):
    """activation(conv2d(inputs, kernel) + bias), kernel [kh, kw, in_channels, filters]."""
    transpose = False

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        channels_last(self, data_format)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size", self)
        self.strides = _pair(strides, "strides", self)
        self.padding = _padding(padding, self)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", self)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise build_error(type(self).__name__, self.name, f"`strides > 1` not supported in conjunction with "
                                                              f"`dilation_rate > 1`. Received: strides={self.strides} "
                                                              f"and dilation_rate={self.dilation_rate}")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def build(self, input_shape):
        if input_shape.ndims != 4 or input_shape[-1].value is None:
            raise build_error(type(self).__name__, self.name, f"The channel dimension of the inputs should be "
                                                              f"defined (4-D NHWC inputs), got inputs of shape "
                                                              f"{input_shape}")
        channels = input_shape[-1].value
        kshape = list(self.kernel_size) + ([self.filters, channels] if self.transpose else [channels, self.filters])
        self.kernel = self.add_weight("kernel", kshape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint)
        self.built = True

    def _convolve(self, inputs):
        return nn_conv2d(inputs, self.kernel, strides=(1,) + self.strides + (1,), padding=self.padding,
                         dilations=(1,) + self.dilation_rate + (1,))

    def call(self, inputs):
        outputs = self._convolve(inputs)
        if self.use_bias:
            outputs = bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs


def _deconv_length(size, k, stride, padding):
    """Keras's deconv_output_length (no output_padding, no dilation)."""
    if size is None:
        return None
    return size * stride if padding == "SAME" else size * stride + max(k - stride, 0)


class Conv2DTranspose(Conv2D):
    """The transpose of Conv2D: kernel [kh, kw, filters, in_channels]; the output's height is
    height * stride ('same') or height * stride + max(kh - stride, 0) ('valid')."""
    transpose = True

    def _convolve(self, inputs):
        if self.dilation_rate != (1, 1):
            raise build_error("Conv2DTranspose", self.name, f"dilation_rate other than 1 is not supported, got "
                                                            f"{self.dilation_rate}")
        _, h, w, _ = inputs.shape.as_list()
        if h is None or w is None:
            raise build_error("Conv2DTranspose", self.name, f"the inputs' height and width must be known, got "
                                                            f"inputs of shape {inputs.shape}")
        out_h = _deconv_length(h, self.kernel_size[0], self.strides[0], self.padding)
        out_w = _deconv_length(w, self.kernel_size[1], self.strides[1], self.padding)
        batch = inputs.shape[0].value
        batch = shape(inputs)[0] if batch is None else batch
        return nn_conv2d_transpose(inputs, self.kernel, [batch, out_h, out_w, self.filters],
                                   strides=(1,) + self.strides + (1,), padding=self.padding)


_ZEROS = zeros_initializer()


class SeparableConv2D(Conv2D):
    """A depthwise convolution (depth_multiplier filters per input channel) and then a 1x1 one:
    depthwise_kernel [kh, kw, in_channels, depth_multiplier], pointwise_kernel
    [1, 1, in_channels * depth_multiplier, filters], bias [filters] (tf.nn.separable_conv2d)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer=None, pointwise_initializer=None, bias_initializer=_ZEROS,
                 depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer, self.pointwise_initializer = depthwise_initializer, pointwise_initializer
        self.depthwise_regularizer, self.pointwise_regularizer = depthwise_regularizer, pointwise_regularizer
        self.depthwise_constraint, self.pointwise_constraint = depthwise_constraint, pointwise_constraint
        self.depthwise_kernel = self.pointwise_kernel = None

    def build(self, input_shape):
        if input_shape.ndims != 4 or input_shape[-1].value is None:
            raise build_error(type(self).__name__, self.name, f"The channel dimension of the inputs should be "
                                                              f"defined (4-D NHWC inputs), got inputs of shape "
                                                              f"{input_shape}")
        channels = input_shape[-1].value
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", list(self.kernel_size) + [channels, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1, 1, channels * self.depth_multiplier, self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint)
        self.built = True

    def _convolve(self, inputs):
        return nn_separable_conv2d(inputs, self.depthwise_kernel, self.pointwise_kernel,
                                   strides=(1,) + self.strides + (1,), padding=self.padding, rate=self.dilation_rate)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                     dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                     depthwise_initializer=None, pointwise_initializer=None, bias_initializer=_ZEROS,
                     depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
                     activity_regularizer=None, depthwise_constraint=None, pointwise_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    layer = SeparableConv2D(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                            dilation_rate=dilation_rate, depth_multiplier=depth_multiplier, activation=activation,
                            use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                            pointwise_initializer=pointwise_initializer, bias_initializer=bias_initializer,
                            depthwise_regularizer=depthwise_regularizer, pointwise_regularizer=pointwise_regularizer,
                            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                            depthwise_constraint=depthwise_constraint, pointwise_constraint=pointwise_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name, _scope=name,
                            _reuse=reuse)
    return layer.apply(inputs)


def _conv_fn(cls):
    def fn(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None, dilation_rate=(1, 1)):
        layer = cls(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                    dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                    bias_constraint=bias_constraint, trainable=trainable, name=name, _scope=name, _reuse=reuse)
        return layer.apply(inputs)

    return fn


conv2d = _conv_fn(Conv2D)
conv2d.__name__ = "conv2d"
conv2d_transpose = _conv_fn(Conv2DTranspose)
conv2d_transpose.__name__ = "conv2d_transpose"


class _Pooling2D(Layer):
    pool = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        channels_last(self, data_format)
        self.pool_size = _pair(pool_size, "pool_size", self)
        self.strides = _pair(strides, "strides", self)
        self.padding = _padding(padding, self)

    def call(self, inputs):
        input_rank(self, inputs, (4,), "pooling needs 4-D NHWC inputs")
        return type(self).pool(inputs, ksize=(1,) + self.pool_size + (1,), strides=(1,) + self.strides + (1,),
                               padding=self.padding)


class MaxPooling2D(_Pooling2D):
    pool = staticmethod(max_pool)


class AveragePooling2D(_Pooling2D):
    pool = staticmethod(avg_pool)


def _pool_fn(cls):
    def fn(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return cls(pool_size, strides, padding=padding, data_format=data_format, name=name).apply(inputs)

    return fn


max_pooling2d = _pool_fn(MaxPooling2D)
max_pooling2d.__name__ = "max_pooling2d"
average_pooling2d = _pool_fn(AveragePooling2D)
average_pooling2d.__name__ = "average_pooling2d"
