"""tf.contrib.training: HParams, create_train_op (with its gradient transforms) and the ps
placement strategies of tf.train.replica_device_setter."""
from pygrad.contrib.training.hparam import HParams, parse_values  # noqa: F401
from pygrad.contrib.training.training import (  # noqa: F401
    add_gradients_summaries,
    clip_gradient_norms,
    create_train_op,
    multiply_gradients,
)
from pygrad.train.device_setter import (  # noqa: F401
    GreedyLoadBalancingStrategy,
    RandomStrategy,
    byte_size_load_fn,
)
