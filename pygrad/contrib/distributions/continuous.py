"""Normal, Uniform and MultivariateNormalDiag with TF 1.15's formulas
(tensorflow/python/ops/distributions/normal.py and uniform.py; contrib's MultivariateNormalDiag,
whose scale is the diagonal scale_diag + scale_identity_multiplier), and their KL divergences."""
import math

from pygrad.contrib.distributions.distribution import (
    FULLY_REPARAMETERIZED,
    Distribution,
    RegisterKL,
    float_params,
)
from pygrad.ops.array_ops import expand_dims, ones_like, shape, zeros_like
from pygrad.ops.cumulative_ops import is_nan
from pygrad.ops.manip_ops import where
from pygrad.ops.math_ops import abs as abs_
from pygrad.ops.math_ops import greater_equal, less, log, logical_or, square
from pygrad.ops.random_ops import random_normal, random_uniform
from pygrad.ops.reduction_ops import reduce_sum
from pygrad.shapes import broadcast_shape

__all__ = ["MultivariateNormalDiag", "Normal", "Uniform"]


class Normal(Distribution):
    """N(loc, scale**2); samples loc + scale * N(0, 1), differentiable in both."""

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        params = float_params("Normal", loc=loc, scale=scale)
        self._loc, self._scale = params["loc"], params["scale"]
        super().__init__(self._loc.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         {"loc": loc, "scale": scale}, name)

    loc = property(lambda self: self._loc)
    scale = property(lambda self: self._scale)

    def _batch_shape(self):
        return broadcast_shape(self._loc.shape, self._scale.shape)

    def _batch_shape_tensor(self):
        return shape(self._loc + self._scale)

    def _sample_n(self, n, seed=None):
        sampled = random_normal(self._n_shape(n), mean=0.0, stddev=1.0, dtype=self._loc.dtype, seed=seed)
        return sampled * self._scale + self._loc

    def _z(self, x):
        return (x - self._loc) / self._scale

    def _log_prob(self, x):
        return -0.5 * square(self._z(x)) - (0.5 * math.log(2.0 * math.pi) + log(self._scale))

    def _entropy(self):
        return 0.5 * math.log(2.0 * math.pi * math.e) + log(self._scale * ones_like(self._loc))

    def _mean(self):
        return self._loc * ones_like(self._scale)

    def _stddev(self):
        return self._scale * ones_like(self._loc)

    _mode = _mean


@RegisterKL(Normal, Normal)
def _kl_normal_normal(n_a, n_b, name=None):
    s_a_squared, s_b_squared = square(n_a.scale), square(n_b.scale)
    ratio = s_a_squared / s_b_squared
    return square(n_a.loc - n_b.loc) / (2.0 * s_b_squared) + 0.5 * (ratio - 1.0 - log(ratio))


class Uniform(Distribution):
    """The uniform distribution on [low, high); samples low + (high - low) * U[0, 1)."""

    def __init__(self, low=0.0, high=1.0, validate_args=False, allow_nan_stats=True, name="Uniform"):
        params = float_params("Uniform", low=low, high=high)
        self._low, self._high = params["low"], params["high"]
        super().__init__(self._low.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         {"low": low, "high": high}, name)

    low = property(lambda self: self._low)
    high = property(lambda self: self._high)

    def range(self, name="range"):
        with self._scope(name):
            return self._high - self._low

    def _batch_shape(self):
        return broadcast_shape(self._low.shape, self._high.shape)

    def _batch_shape_tensor(self):
        return shape(self._low + self._high)

    def _sample_n(self, n, seed=None):
        samples = random_uniform(self._n_shape(n), dtype=self._low.dtype, seed=seed)
        return self._low + (self._high - self._low) * samples

    def _log_prob(self, x):
        return log(self._prob(x))

    def prob(self, value, name="prob"):
        with self._scope(name):
            return self._prob(self._value(value))

    def _prob(self, x):
        x = x * ones_like(self._low * self._high)  # broadcast to the batch
        inside = ones_like(x) / (self._high - self._low)
        outside = logical_or(less(x, self._low), greater_equal(x, self._high))
        return where(is_nan(x), x, where(outside, zeros_like(x), inside))

    def _entropy(self):
        return log(self._high - self._low)

    def _mean(self):
        return (self._low + self._high) / 2.0

    def _variance(self):
        return square(self._high - self._low) / 12.0

    def _stddev(self):
        return (self._high - self._low) / math.sqrt(12.0)


class MultivariateNormalDiag(Distribution):
    """N(loc, diag(scale)**2) over the last dimension (the event), scale = scale_diag +
    scale_identity_multiplier (each optional, the identity when neither is given); samples
    loc + scale * N(0, I)."""

    def __init__(self, loc=None, scale_diag=None, scale_identity_multiplier=None, validate_args=False,
                 allow_nan_stats=True, name="MultivariateNormalDiag"):
        given = {k: v for k, v in {"loc": loc, "scale_diag": scale_diag,
                                   "scale_identity_multiplier": scale_identity_multiplier}.items() if v is not None}
        if loc is None and scale_diag is None:
            raise ValueError("MultivariateNormalDiag: give loc or scale_diag (the event size comes from them)")
        params = float_params("MultivariateNormalDiag", common=True, **given)
        first = params.get("loc", params.get("scale_diag"))
        self._loc = params["loc"] if "loc" in params else zeros_like(params["scale_diag"])
        scale = params.get("scale_diag")
        if "scale_identity_multiplier" in params:  # a scalar per batch member, times the identity
            m = params["scale_identity_multiplier"]
            m = expand_dims(m, -1) if m.shape.ndims else m
            scale = m * ones_like(self._loc) if scale is None else scale + m
        if scale is None:
            scale = ones_like(self._loc)
        self._scale_diag = scale
        for t, what in ((self._loc, "loc"), (self._scale_diag, "the scale")):
            if t.shape.ndims == 0:
                raise ValueError(f"MultivariateNormalDiag: {what} must have rank at least 1 (the event), got a scalar")
        super().__init__(first.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats, given, name)

    loc = property(lambda self: self._loc)
    scale_diag = property(lambda self: self._scale_diag)

    def _full_shape(self):
        return broadcast_shape(self._loc.shape, self._scale_diag.shape)

    def _batch_shape(self):
        full = self._full_shape()
        return full[:-1] if full.ndims is not None else full

    def _event_shape(self):
        full = self._full_shape()
        return full[-1:] if full.ndims is not None else full

    def _batch_shape_tensor(self):
        return shape(self._loc + self._scale_diag)[:-1]

    def _event_shape_tensor(self):
        return shape(self._loc + self._scale_diag)[-1:]

    def _event_size(self):
        return self._event_shape()[0].value if self._event_shape().ndims else None

    def _sample_n(self, n, seed=None):
        sampled = random_normal(self._n_shape(n), dtype=self._loc.dtype, seed=seed)
        return self._loc + self._scale_diag * sampled

    def _log_abs_det(self):
        return reduce_sum(log(abs_(self._scale_diag * ones_like(self._loc))), -1)

    def _log_prob(self, x):
        z = (x - self._loc) / self._scale_diag
        k = self._event_size()
        k = k if k is not None else shape(z)[-1]
        return -0.5 * reduce_sum(square(z), -1) - 0.5 * k * math.log(2.0 * math.pi) - self._log_abs_det()

    def _entropy(self):
        k = self._event_size()
        return 0.5 * k * (1.0 + math.log(2.0 * math.pi)) + self._log_abs_det()

    def _mean(self):
        return self._loc * ones_like(self._scale_diag)

    def _stddev(self):
        return abs_(self._scale_diag) * ones_like(self._loc)

    _mode = _mean


@RegisterKL(MultivariateNormalDiag, MultivariateNormalDiag)
def _kl_mvn_diag(a, b, name=None):
    """TF's _kl_brute_force for diagonal scales: log|det B| - log|det A| + (-k + ||B^-1 A||_F^2 +
    ||B^-1 (mean_b - mean_a)||^2) / 2."""
    k = a._event_size()
    b_inv_a = a.scale_diag / b.scale_diag
    diff = (b.mean() - a.mean()) / b.scale_diag
    return (b._log_abs_det() - a._log_abs_det() +
            0.5 * (-k + reduce_sum(square(b_inv_a), -1) + reduce_sum(square(diff), -1)))
