"""tf.mixed_precision.experimental: the loss scales, as TF 2.21's tf.compat.v1.mixed_precision.experimental."""
from pygrad.train.loss_scale import DynamicLossScale, FixedLossScale, LossScale  # noqa: F401
