"""tf.contrib: the parts of TF1's contrib that TF1 programs commonly use."""
from pygrad.contrib import framework, layers, lookup, rnn, slim  # noqa: F401
