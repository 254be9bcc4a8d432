"""tf.nn: re-exports only."""
from pygrad.ops.activation_ops import (crelu, elu, l2_normalize, leaky_relu, relu6, selu,  # noqa: F401
                                       sigmoid_cross_entropy_with_logits, softplus, softsign,
                                       weighted_cross_entropy_with_logits)
from pygrad.ops.candidate_sampling import (log_uniform_candidate_sampler, nce_loss, sampled_softmax_loss,  # noqa: F401
                                           uniform_candidate_sampler)
from pygrad.ops.conv_ops import avg_pool, avg_pool2d, conv2d, conv2d_transpose, max_pool, max_pool2d  # noqa: F401
from pygrad.ops.depthwise_ops import depthwise_conv2d, depthwise_conv2d_native, separable_conv2d  # noqa: F401
from pygrad.ops.embedding_ops import embedding_lookup  # noqa: F401
from pygrad.ops.sparse_embedding import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: F401
from pygrad.ops.math_ops import relu, sigmoid, tanh  # noqa: F401
from pygrad.ops.nn_impl import batch_normalization, fused_batch_norm, moments  # noqa: F401
from pygrad.ops.nn_ops import (bias_add, l2_loss, log_softmax, softmax, softmax_cross_entropy_with_logits,  # noqa: F401
                               softmax_cross_entropy_with_logits_v2, sparse_softmax_cross_entropy_with_logits,
                               xw_plus_b)
from pygrad.ops.random_ops import dropout  # noqa: F401
from pygrad.ops.topk_ops import in_top_k, top_k  # noqa: F401
from pygrad.rnn import rnn_cell  # noqa: F401
from pygrad.rnn.dynamic import bidirectional_dynamic_rnn, dynamic_rnn  # noqa: F401
from pygrad.rnn.static import static_bidirectional_rnn, static_rnn  # noqa: F401
