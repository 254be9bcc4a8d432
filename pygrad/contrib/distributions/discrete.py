"""Bernoulli and Categorical with TF 1.15's formulas (tensorflow/python/ops/distributions/
bernoulli.py, categorical.py): parameterized by logits or probs, log_prob through the cross
entropy of the logits (sigmoid, sparse softmax), integer samples (int32 by default, not
differentiable), and their KL divergences."""
from pygrad import dtypes
from pygrad.contrib.distributions.distribution import (
    NOT_REPARAMETERIZED,
    Distribution,
    RegisterKL,
)
from pygrad.ops.activation_ops import sigmoid_cross_entropy_with_logits, softplus
from pygrad.ops.array_ops import (
    cast,
    convert_to_tensor,
    expand_dims,
    ones,
    ones_like,
    reshape,
    shape,
    transpose,
)
from pygrad.ops.math_ops import greater, less, log, log1p, sigmoid
from pygrad.ops.nn_ops import (
    log_softmax,
    softmax,
    sparse_softmax_cross_entropy_with_logits,
)
from pygrad.ops.random_ops import multinomial, random_uniform
from pygrad.ops.reduction_ops import argmax, reduce_sum

__all__ = ["Bernoulli", "Categorical"]


def logits_and_probs(cls_name, logits, probs, multidimensional, dtype=None):
    """(logits, probs) from the one given (TF's get_logits_and_probs): probs = sigmoid or softmax
    of logits; logits = log(p) - log1p(-p), or log(p) for a categorical."""
    if (probs is None) == (logits is None):
        raise ValueError(f"{cls_name}: Must pass probs or logits, but not both.")
    if probs is None:
        logits = convert_to_tensor(logits, dtype=dtype, name="logits")
        if not logits.dtype.is_floating:
            raise TypeError(f"{cls_name}: logits must having floating type.")
        return logits, softmax(logits, name="probs") if multidimensional else sigmoid(logits, name="probs")
    probs = convert_to_tensor(probs, dtype=dtype, name="probs")
    if not probs.dtype.is_floating:
        raise TypeError(f"{cls_name}: probs must having floating type.")
    return (log(probs) if multidimensional else log(probs) - log1p(-1.0 * probs)), probs


def _check_int_dtype(cls_name, dtype):
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating or dtype == dtypes.bool):
        raise TypeError(f"{cls_name}: dtype must be an integer, floating or bool type, got {dtype.name}")
    return dtype


class Bernoulli(Distribution):
    """Bernoulli(p) for a batch of p (or of logits log(p / (1 - p))); samples of dtype (int32)."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False, allow_nan_stats=True,
                 name="Bernoulli"):
        self._logits, self._probs = logits_and_probs("Bernoulli", logits, probs, multidimensional=False)
        super().__init__(_check_int_dtype("Bernoulli", dtype), NOT_REPARAMETERIZED, validate_args, allow_nan_stats,
                         {"logits": logits, "probs": probs}, name)

    logits = property(lambda self: self._logits)
    probs = property(lambda self: self._probs)

    def _batch_shape(self):
        return self._logits.shape

    def _batch_shape_tensor(self):
        return shape(self._logits)

    def _sample_n(self, n, seed=None):
        uniform = random_uniform(self._n_shape(n), seed=seed, dtype=self._probs.dtype)
        return cast(less(uniform, self._probs), self._dtype)

    def _value(self, value):
        return convert_to_tensor(value) if not hasattr(value, "op") else value

    def _log_prob(self, event):
        event = cast(event, self._logits.dtype)
        logits = self._logits
        if not (event.shape.is_fully_defined() and logits.shape.is_fully_defined() and event.shape == logits.shape):
            logits, event = ones_like(event) * logits, ones_like(logits) * event
        return -sigmoid_cross_entropy_with_logits(labels=event, logits=logits)

    def _entropy(self):
        return -self._logits * (sigmoid(self._logits) - 1) + softplus(-self._logits)

    def _mean(self):
        return 1.0 * self._probs

    def _variance(self):
        return self._mean() * (1.0 - self._probs)

    def _mode(self):
        return cast(greater(self._probs, 0.5), self._dtype)


@RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(a, b, name=None):
    delta_probs0 = softplus(-b.logits) - softplus(-a.logits)
    delta_probs1 = softplus(b.logits) - softplus(a.logits)
    return sigmoid(a.logits) * delta_probs0 + sigmoid(-a.logits) * delta_probs1


class Categorical(Distribution):
    """Categorical over the last dimension of logits (or probs): the classes 0 .. K-1; samples of
    dtype (int32)."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False, allow_nan_stats=True,
                 name="Categorical"):
        self._logits, self._probs = logits_and_probs("Categorical", logits, probs, multidimensional=True)
        if self._logits.shape.ndims == 0:
            raise ValueError("Categorical: logits (or probs) must have rank at least 1, got a scalar")
        super().__init__(_check_int_dtype("Categorical", dtype), NOT_REPARAMETERIZED, validate_args, allow_nan_stats,
                         {"logits": logits, "probs": probs}, name)

    logits = property(lambda self: self._logits)
    probs = property(lambda self: self._probs)

    @property
    def event_size(self):
        k = self._logits.shape[-1].value if self._logits.shape.ndims else None
        return k if k is not None else shape(self._logits)[-1]

    def _batch_shape(self):
        return self._logits.shape[:-1] if self._logits.shape.ndims is not None else self._logits.shape

    def _batch_shape_tensor(self):
        return shape(self._logits)[:-1]

    def _sample_n(self, n, seed=None):
        logits_2d = self._logits if self._logits.shape.ndims == 2 else reshape(self._logits, [-1, self.event_size])
        sample_dtype = dtypes.int64 if self._dtype.size > 4 else dtypes.int32
        draws = multinomial(logits_2d, n, seed=seed, output_dtype=sample_dtype)
        draws = reshape(transpose(draws), self._n_shape(n))
        return cast(draws, self._dtype)

    def _value(self, value):
        return convert_to_tensor(value) if not hasattr(value, "op") else value

    def _log_prob(self, k):
        if k.dtype.is_floating:
            k = cast(k, dtypes.int32)
        elif not k.dtype.is_integer:
            raise TypeError(f"`value` should have integer `dtype` or `self.dtype` ({self._dtype.name})")
        logits = self._logits
        known = logits.shape.ndims is not None and logits.shape[:-1].is_fully_defined() and \
            k.shape.is_fully_defined()
        if not known or logits.shape[:-1] != k.shape:
            logits = logits * ones_like(expand_dims(k, -1), dtype=logits.dtype)
            k = k * ones(shape(logits)[:-1], dtype=k.dtype)
        return -sparse_softmax_cross_entropy_with_logits(labels=k, logits=logits)

    def _entropy(self):
        return -reduce_sum(log_softmax(self._logits) * self._probs, axis=-1)

    def _mode(self):
        return cast(argmax(self._logits, axis=-1), self._dtype)


@RegisterKL(Categorical, Categorical)
def _kl_categorical_categorical(a, b, name=None):
    delta_log_probs1 = log_softmax(a.logits) - log_softmax(b.logits)
    return reduce_sum(softmax(a.logits) * delta_log_probs1, axis=-1)
