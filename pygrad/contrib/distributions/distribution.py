"""The Distribution base class of TF 1.15's tf.distributions, and kl_divergence with its registry
(RegisterKL): a distribution gives its batch shape, _sample_n(n, seed) and the statistics it has;
sample reshapes n = prod(sample_shape) draws to sample_shape + batch_shape + event_shape."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import constant, convert_to_tensor, identity, reshape
from pygrad.ops.check_ops import Assert
from pygrad.ops.cumulative_ops import is_nan
from pygrad.ops.manip_ops import concat
from pygrad.ops.math_ops import exp, logical_not, sqrt, square
from pygrad.ops.reduction_ops import reduce_any
from pygrad.shapes import TensorShape, as_shape

__all__ = ["FULLY_REPARAMETERIZED", "NOT_REPARAMETERIZED", "Distribution", "RegisterKL", "ReparameterizationType",
           "kl_divergence"]


class ReparameterizationType:
    """Whether samples are differentiable functions of the parameters (TF's two instances)."""

    def __init__(self, rep_type):
        self._rep_type = rep_type

    def __repr__(self):
        return f"<Reparameteriation Type: {self._rep_type}>"


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


def float_params(cls_name, common=False, **params):
    """The parameters, each converted to a tensor as given (Python floats as float32), which must
    share one floating dtype (TF's assert_same_float_dtype; ValueError naming the distribution).
    common: Python numbers take the dtype of the other parameters (contrib's common_dtype)."""
    out = {k: convert_to_tensor(v, name=k) for k, v in params.items() if not (common and isinstance(v, (int, float)))}
    dtype = next(iter(out.values())).dtype if out else dtypes.float32
    out = {k: out[k] if k in out else convert_to_tensor(v, dtype=dtype, name=k) for k, v in params.items()}
    dtypes_ = {t.dtype for t in out.values()}
    for k, t in out.items():
        if not t.dtype.is_floating:
            raise ValueError(f"{cls_name}: expected floating point type for {k}, got {t.dtype.name}")
    if len(dtypes_) > 1:
        raise ValueError(f"{cls_name}: the parameters must be of the same type, got "
                         + ", ".join(f"{k}: {t.dtype.name}" for k, t in out.items()))
    return out


class Distribution:
    """A batch of distributions of one family (TF's Distribution). Subclasses set _batch_shape
    (static), implement _batch_shape_tensor, _sample_n and the statistics they have."""

    def __init__(self, dtype, reparameterization_type, validate_args, allow_nan_stats, parameters, name):
        self._dtype = dtypes.as_dtype(dtype)
        self._reparameterization_type = reparameterization_type
        self._validate_args = validate_args
        self._allow_nan_stats = allow_nan_stats
        self._parameters = dict(parameters)
        self._name = name

    # ---- properties
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)
    reparameterization_type = property(lambda self: self._reparameterization_type)
    validate_args = property(lambda self: self._validate_args)
    allow_nan_stats = property(lambda self: self._allow_nan_stats)
    parameters = property(lambda self: dict(self._parameters))

    @property
    def batch_shape(self):
        return as_shape(self._batch_shape())

    @property
    def event_shape(self):
        return as_shape(self._event_shape())

    def _event_shape(self):
        return TensorShape([])

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        if self.batch_shape.is_fully_defined():
            return constant(self.batch_shape.as_list(), dtypes.int32, name=name)
        return self._batch_shape_tensor()

    def event_shape_tensor(self, name="event_shape_tensor"):
        if self.event_shape.is_fully_defined():
            return constant(self.event_shape.as_list(), dtypes.int32, name=name)
        return self._event_shape_tensor()

    def _event_shape_tensor(self):
        return constant([], dtypes.int32)

    def is_scalar_batch(self):
        return self.batch_shape.ndims == 0

    def is_scalar_event(self):
        return self.event_shape.ndims == 0

    def _scope(self, name):
        return get_default_graph().name_scope(f"{self._name}/{name}/")

    # ---- sampling
    def sample(self, sample_shape=(), seed=None, name="sample"):
        """Samples of shape sample_shape + batch_shape + event_shape."""
        sample_shape = [int(d) for d in np.reshape(sample_shape, [-1])]
        if any(d < 0 for d in sample_shape):
            raise ValueError(f"{type(self).__name__}.sample: sample_shape must be non-negative, got {sample_shape}")
        n = int(np.prod(sample_shape))
        with self._scope(name):
            draws = self._sample_n(n, seed)
            static = TensorShape(sample_shape).concatenate(self.batch_shape).concatenate(self.event_shape)
            if static.is_fully_defined():
                return reshape(draws, static.as_list())
            return reshape(draws, concat([constant(sample_shape, dtypes.int32), self.batch_shape_tensor(),
                                          self.event_shape_tensor()], 0))

    def _n_shape(self, n):
        """[n] + batch_shape (+ event_shape): a Python list when known, else a tensor."""
        static = TensorShape([n]).concatenate(self.batch_shape).concatenate(self.event_shape)
        if static.is_fully_defined():
            return static.as_list()
        return concat([constant([n], dtypes.int32), self.batch_shape_tensor(), self.event_shape_tensor()], 0)

    # ---- statistics
    def _value(self, value):
        return convert_to_tensor(value, dtype=self._value_dtype()) if not hasattr(value, "op") else value

    def _value_dtype(self):
        return self._dtype

    def log_prob(self, value, name="log_prob"):
        with self._scope(name):
            return self._log_prob(self._value(value))

    def prob(self, value, name="prob"):
        with self._scope(name):
            return exp(self._log_prob(self._value(value)))

    def entropy(self, name="entropy"):
        with self._scope(name):
            return self._entropy()

    def mean(self, name="mean"):
        with self._scope(name):
            return self._mean()

    def mode(self, name="mode"):
        with self._scope(name):
            return self._mode()

    def variance(self, name="variance"):
        with self._scope(name):
            return square(self._stddev()) if type(self)._variance is Distribution._variance else self._variance()

    def stddev(self, name="stddev"):
        with self._scope(name):
            return sqrt(self._variance()) if type(self)._stddev is Distribution._stddev else self._stddev()

    def _not_implemented(self, what):
        raise NotImplementedError(f"{what} is not implemented: {type(self).__name__}")

    def _log_prob(self, value):
        self._not_implemented("log_prob")

    def _entropy(self):
        self._not_implemented("entropy")

    def _mean(self):
        self._not_implemented("mean")

    def _mode(self):
        self._not_implemented("mode")

    def _variance(self):
        self._not_implemented("variance")

    def _stddev(self):
        self._not_implemented("stddev")

    def kl_divergence(self, other, name="kl_divergence"):
        return kl_divergence(self, other, name=name)

    def cross_entropy(self, other, name="cross_entropy"):
        """H[self, other] = entropy(self) + KL(self || other)."""
        return self.entropy() + kl_divergence(self, other, name=name)

    def __repr__(self):
        return (f"<tf.distributions.{type(self).__name__} '{self._name}' batch_shape={self.batch_shape} "
                f"event_shape={self.event_shape} dtype={self._dtype.name}>")


_KL = {}


class RegisterKL:
    """A decorator registering fn(a, b, name) as KL(a || b) for two distribution classes."""

    def __init__(self, dist_cls_a, dist_cls_b):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn):
        if not callable(kl_fn):
            raise TypeError(f"kl_fn must be callable, received: {kl_fn}")
        if self._key in _KL:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) has already been registered "
                             f"to: {_KL[self._key]}")
        _KL[self._key] = kl_fn
        return kl_fn


def _registered_kl(type_a, type_b):
    """The function registered for the pair of ancestors of type_a and type_b (along each MRO)
    nearest in the sum of the two distances; of pairs as near, the first in MRO order."""
    best, fn = None, None
    for i, a in enumerate(type_a.__mro__):
        for j, b in enumerate(type_b.__mro__):
            candidate = _KL.get((a, b))
            if candidate is not None and (best is None or i + j < best):
                best, fn = i + j, candidate
    return fn


def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """Batchwise KL(distribution_a || distribution_b), by the function registered for the nearest
    classes of the two (along each one's MRO); NotImplementedError if there is none. Without
    allow_nan_stats, a NaN in the result fails the run."""
    fn = _registered_kl(type(distribution_a), type(distribution_b))
    if fn is None:
        raise NotImplementedError(f"No KL(distribution_a || distribution_b) registered for distribution_a type "
                                  f"{type(distribution_a).__name__} and distribution_b type "
                                  f"{type(distribution_b).__name__}")
    graph = get_default_graph()
    with graph.name_scope("KullbackLeibler"):
        kl = fn(distribution_a, distribution_b, name=name)
        if allow_nan_stats:
            return kl
        kl = identity(kl, name="kl")
        message = (f"KL calculation between {distribution_a.name} and {distribution_b.name} returned NaN values "
                   f"(and was called with allow_nan_stats=False). Values:")
        with graph.control_dependencies([Assert(logical_not(reduce_any(is_nan(kl))), [message, kl])]):
            return identity(kl, name="checked_kl")
