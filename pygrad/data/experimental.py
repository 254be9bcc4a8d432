"""tf.data.experimental: the names TF1 programs take from it."""
from pygrad.data.dataset_ops import AUTOTUNE  # noqa: F401
from pygrad.data.interleave_ops import parallel_interleave  # noqa: F401
