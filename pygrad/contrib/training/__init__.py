"""tf.contrib.training: HParams and create_train_op (with its gradient transforms)."""
from pygrad.contrib.training.hparam import HParams, parse_values  # noqa: F401
from pygrad.contrib.training.training import (  # noqa: F401
    add_gradients_summaries,
    clip_gradient_norms,
    create_train_op,
    multiply_gradients,
)
