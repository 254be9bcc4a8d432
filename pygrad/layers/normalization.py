"""tf.layers.BatchNormalization and batch_normalization (TF1's, over Keras's BatchNormalization).

Variables, in TF's order: gamma (scale), beta (center), moving_mean, moving_variance (these two not
trainable). training=True normalizes with the batch's statistics and adds to
tf.GraphKeys.UPDATE_OPS two ops, 'AssignMovingAvg' and 'AssignMovingAvg_1', that do
moving -= (moving - batch_statistic) * (1 - momentum). As TF, a 4-D input normalized over its last
axis takes the fused path (tf.nn.fused_batch_norm), whose batch variance for the moving average is
the unbiased one; other inputs use tf.nn.moments (the biased variance). training=False normalizes
with the moving statistics and adds no update. A boolean tensor builds both paths and selects one;
its updates use momentum 1 (no change) when it is false.
"""
from pygrad.graph import build_error
from pygrad.ops import math_ops
from pygrad.ops.array_ops import ones, reshape, zeros
from pygrad.ops.init_ops import ones_initializer, zeros_initializer
from pygrad.ops.nn_impl import batch_normalization as nn_batch_normalization, fused_batch_norm, moments
from pygrad.layers.base import Layer, is_tensor_flag, select
from pygrad.train.moving_averages import assign_moving_average


class BatchNormalization(Layer):
    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                 moving_mean_initializer=zeros_initializer(), moving_variance_initializer=ones_initializer(),
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None, trainable=True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise build_error("BatchNormalization", name, "renorm, virtual_batch_size and adjustment are not "
                                                          "supported", TypeError)
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise build_error("BatchNormalization", name, f"axis must be one int, got {axis!r}")
            axis = axis[0]
        self.axis = int(axis)
        self.momentum, self.epsilon, self.center, self.scale, self.fused = momentum, epsilon, center, scale, fused
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer, self.moving_variance_initializer = (moving_mean_initializer,
                                                                          moving_variance_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        n = input_shape.ndims
        if n is None:
            raise build_error("BatchNormalization", self.name, f"Input has undefined rank: {input_shape}")
        if not -n <= self.axis < n:
            raise build_error("BatchNormalization", self.name, f"Invalid axis: {self.axis} for inputs of shape "
                                                               f"{input_shape}")
        self.axis %= n
        channels = input_shape[self.axis].value
        if channels is None:
            raise build_error("BatchNormalization", self.name, f"Input has undefined `axis` dimension. Input shape: "
                                                               f"{input_shape}")
        can_fuse = n == 4 and self.axis == 3
        if self.fused and not can_fuse:
            raise build_error("BatchNormalization", self.name, f"fused=True needs 4-D inputs normalized over axis 3 "
                                                               f"(NHWC), got inputs {input_shape} and axis {self.axis}")
        self.fused = can_fuse if self.fused is None else bool(self.fused)
        if self.scale:
            self.gamma = self.add_weight("gamma", [channels], initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", [channels], initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint)
        self.moving_mean = self.add_weight("moving_mean", [channels], initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", [channels],
                                               initializer=self.moving_variance_initializer, trainable=False)
        self.built = True

    def _assign_moving_average(self, variable, value, momentum):
        return assign_moving_average(variable, math_ops.cast(value, variable.dtype), momentum, zero_debias=False)

    def _fused_params(self):
        """(scale, offset) for fused_batch_norm: ones and zeros stand for a missing gamma or beta."""
        channels = self.moving_mean.shape.as_list()
        return (self.gamma if self.scale else ones(channels, self.dtype),
                self.beta if self.center else zeros(channels, self.dtype))

    def _statistics(self, inputs):
        """(output, batch mean, batch variance for the moving average) with batch statistics."""
        if self.fused:
            return fused_batch_norm(inputs, *self._fused_params(), epsilon=self.epsilon, is_training=True)
        axes = [i for i in range(inputs.shape.ndims) if i != self.axis]
        mean, variance = moments(inputs, axes)
        return self._normalize(inputs, mean, variance), mean, variance

    def _normalize(self, inputs, mean, variance):
        """batch_normalization with the statistics and parameters shaped to broadcast on the axis."""
        n = inputs.shape.ndims
        if self.axis == n - 1:
            shaped = (lambda t: t)
        else:
            shaped = (lambda t: None if t is None else reshape(t, [-1 if i == self.axis else 1 for i in range(n)]))
        return nn_batch_normalization(inputs, shaped(mean), shaped(variance), shaped(self.beta), shaped(self.gamma),
                                      self.epsilon)

    def _inference(self, inputs):
        if self.fused:
            return fused_batch_norm(inputs, *self._fused_params(), mean=self.moving_mean, variance=self.moving_variance,
                                    epsilon=self.epsilon, is_training=False)[0]
        return self._normalize(inputs, self.moving_mean, self.moving_variance)

    def call(self, inputs, training=False):
        if inputs.dtype != self.dtype:
            inputs = math_ops.cast(inputs, self.dtype)
        if not is_tensor_flag(training):
            if not training:
                return self._inference(inputs)
            outputs, mean, variance = self._statistics(inputs)
            momentum = self.momentum
        else:
            train_out, mean, variance = self._statistics(inputs)
            outputs = select(training, train_out, self._inference(inputs))
            momentum = select(training, self.momentum, 1.0)
        self.add_update(self._assign_moving_average(self.moving_mean, mean, momentum))
        self.add_update(self._assign_moving_average(self.moving_variance, variance, momentum))
        return outputs


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                        moving_mean_initializer=zeros_initializer(), moving_variance_initializer=ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                        training=False, trainable=True, name=None, reuse=None, renorm=False, renorm_clipping=None,
                        renorm_momentum=0.99, fused=None, virtual_batch_size=None, adjustment=None):
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                               beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                               beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
                               renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
                               trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
                               name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)
