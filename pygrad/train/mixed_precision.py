"""TF1's mixed-precision switch: tf.train.experimental.enable_mixed_precision_graph_rewrite and
disable_mixed_precision_graph_rewrite (tensorflow/python/training/experimental/mixed_precision.py).

What the switch means in pygrad: on a CPU with AVX512-BF16 (or AMX), a Session created while it
is on runs the graph's float32 convolutions and matrix products in bfloat16 (their inputs rounded
to bfloat16, the products accumulated and written in float32; master weights, optimizer state and
every other op stay float32), as TensorFlow's oneDNN bfloat16 rewrite does on the CPU; on any other
CPU it runs float32, with a warning. (TF's own v1 function rewrites to float16 on GPUs only, and
does nothing on a CPU.) Sessions created before keep their precision, and a Session's
RewriterConfig auto_mixed_precision = OFF keeps it float32 (TF's rule). The rewrite is
pygrad/bfloat16.py's pass; enable also wraps the optimizer in a MixedPrecisionLossScaleOptimizer,
whose loss scaling guards the gradients of the reduced-precision products against underflow.

The process-wide state (TF's mixed_precision_global_state) lives with the pass, in
pygrad/bfloat16.py, below the Session that reads it (TF keeps it apart from this module for the
same reason: a Session must not import the training API). graph_rewrite_enabled and
note_session_created are its two facts, seen from here.
"""
from __future__ import annotations

from typing import Any

from pygrad import bfloat16
from pygrad.platform import tf_logging
from pygrad.train.loss_scale_optimizer import MixedPrecisionLossScaleOptimizer
from pygrad.train.optimizer import Optimizer


def graph_rewrite_enabled() -> bool:
    """Whether enable_mixed_precision_graph_rewrite is in effect (for the Sessions created now)."""
    return bfloat16.graph_rewrite_enabled()


def note_session_created(uses_mixed_precision: bool) -> None:
    """Records a new Session; one that does not use mixed precision makes a later enable warn.
    (Session.__init__ records it through bfloat16.session_uses_bfloat16.)"""
    bfloat16.note_session_created(uses_mixed_precision)


def _wrap_optimizer(opt, loss_scale):
    if isinstance(opt, MixedPrecisionLossScaleOptimizer):
        raise ValueError('"opt" must not already be an instance of a MixedPrecisionLossScaleOptimizer. '
                         '`enable_mixed_precision_graph_rewrite` will automatically wrap the optimizer with a '
                         'MixedPrecisionLossScaleOptimizer.')
    if isinstance(opt, Optimizer):
        return MixedPrecisionLossScaleOptimizer(opt, loss_scale)
    raise ValueError(f'"opt" must be an instance of a tf.train.Optimizer or a tf.keras.optimizers.Optimizer, but '
                     f'got: {opt}')


def enable_mixed_precision_graph_rewrite(opt: Optimizer, loss_scale: Any = "dynamic") -> \
        MixedPrecisionLossScaleOptimizer:
    """Turns the switch on for the Sessions created from now on, and returns opt wrapped in a
    MixedPrecisionLossScaleOptimizer with loss_scale (a number, 'dynamic' or a LossScale).
    Compute and apply the gradients with the returned optimizer: tf.gradients does no loss scaling."""
    if bfloat16.float32_session_created():
        tf_logging.warning("You already have existing Sessions that do not use mixed precision. "
                           "enable_mixed_precision_graph_rewrite() will not affect these Sessions.")
    opt = _wrap_optimizer(opt, loss_scale)
    bfloat16.set_graph_rewrite(True)
    return opt


def disable_mixed_precision_graph_rewrite() -> None:
    """Turns the switch off for the Sessions created from now on; Sessions created while it was on
    keep their bfloat16 products, and wrapped optimizers keep scaling their loss."""
    if not bfloat16.graph_rewrite_enabled():
        tf_logging.warning("disable_mixed_precision_graph_rewrite() called when mixed precision is already disabled.")
    bfloat16.set_graph_rewrite(False)
