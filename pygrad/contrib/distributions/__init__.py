"""tf.contrib.distributions: TF 1.15's Normal, Uniform, Bernoulli and Categorical
(tf.distributions) and contrib's MultivariateNormalDiag, with kl_divergence for each pair of one
family."""
from pygrad.contrib.distributions.continuous import (  # noqa: F401
    MultivariateNormalDiag,
    Normal,
    Uniform,
)
from pygrad.contrib.distributions.discrete import Bernoulli, Categorical  # noqa: F401
from pygrad.contrib.distributions.distribution import (  # noqa: F401
    FULLY_REPARAMETERIZED,
    NOT_REPARAMETERIZED,
    Distribution,
    RegisterKL,
    ReparameterizationType,
    kl_divergence,
)
