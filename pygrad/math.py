"""tf.math: the math ops under their TF 1 names in this namespace."""
from pygrad.ops.cumulative_ops import (count_nonzero, cumprod, cumsum, is_finite, is_inf, is_nan,  # noqa: F401
                                       reduce_logsumexp)
from pygrad.ops.math_ops import (abs, add, divide, equal, exp, floor, greater, less, log, log1p, maximum,  # noqa: F401,A004
                                 minimum, multiply, negative, not_equal, pow, reciprocal, sigmoid, sign, sqrt, square,
                                 subtract, tanh, truediv)
from pygrad.ops.reduction_ops import (argmax, argmin, reduce_all, reduce_any, reduce_max, reduce_mean,  # noqa: F401
                                      reduce_min, reduce_prod, reduce_sum)
from pygrad.ops.scatter_ops import segment_sum, unsorted_segment_sum  # noqa: F401
from pygrad.ops.confusion_matrix import confusion_matrix  # noqa: F401,E402
from pygrad.ops.math_ops import div_no_nan as divide_no_nan  # noqa: F401,E402
