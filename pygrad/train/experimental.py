"""tf.train.experimental: TF1's mixed-precision training API (loss scales, the loss-scaling
optimizer and the graph-rewrite switch), as TF 2.21's tf.compat.v1.train.experimental holds it."""
from pygrad.train.loss_scale import DynamicLossScale, FixedLossScale, LossScale  # noqa: F401
from pygrad.train.loss_scale_optimizer import MixedPrecisionLossScaleOptimizer  # noqa: F401
from pygrad.train.mixed_precision import (disable_mixed_precision_graph_rewrite,  # noqa: F401
                                          enable_mixed_precision_graph_rewrite)
