"""tf.mixed_precision: TF1's mixed-precision training API under its later name, as TF 2.21's
tf.compat.v1.mixed_precision holds it (pygrad/train/mixed_precision.py says what the switch does)."""
from pygrad.mixed_precision import experimental  # noqa: F401
from pygrad.train.loss_scale import DynamicLossScale, FixedLossScale, LossScale  # noqa: F401
from pygrad.train.loss_scale_optimizer import MixedPrecisionLossScaleOptimizer  # noqa: F401
from pygrad.train.mixed_precision import (disable_mixed_precision_graph_rewrite,  # noqa: F401
                                          enable_mixed_precision_graph_rewrite)
