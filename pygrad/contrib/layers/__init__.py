"""tf.contrib.layers: TF-Slim's layers (conv2d, fully_connected, batch_norm, ...) with
arg_scope support, their regularizers and initializers, and the summarize_* helpers."""
from pygrad.contrib.layers.convolutional import (  # noqa: F401
                                                 avg_pool2d,
                                                 conv2d,
                                                 conv2d_transpose,
                                                 convolution,
                                                 convolution2d,
                                                 convolution2d_transpose,
                                                 max_pool2d,
                                                 separable_conv2d,
                                                 separable_convolution2d,
)
from pygrad.contrib.layers.core import (  # noqa: F401
                                                 dropout,
                                                 elu,
                                                 embed_sequence,
                                                 flatten,
                                                 fully_connected,
                                                 linear,
                                                 one_hot_encoding,
                                                 relu,
                                                 relu6,
                                                 repeat,
                                                 stack,
)
from pygrad.contrib.layers.initializers import (  # noqa: F401
                                                 apply_regularization,
                                                 l1_l2_regularizer,
                                                 l1_regularizer,
                                                 l2_regularizer,
                                                 sum_regularizer,
                                                 variance_scaling_initializer,
                                                 xavier_initializer,
                                                 xavier_initializer_conv2d,
)
from pygrad.contrib.layers.normalization import batch_norm, layer_norm  # noqa: F401
from pygrad.contrib.layers.summaries import (  # noqa: F401
                                                 summarize_activation,
                                                 summarize_activations,
                                                 summarize_biases,
                                                 summarize_collection,
                                                 summarize_tensor,
                                                 summarize_tensors,
                                                 summarize_variables,
                                                 summarize_weights,
)
