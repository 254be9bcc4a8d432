"""tf.contrib.distributions. References: Normal, Uniform, Bernoulli and Categorical (and their
KL divergences) against TensorFlow 2.21's tensorflow/python/ops/distributions, TF 1.15's code
still shipped there (the tf_peer fixture), on the same parameters; MultivariateNormalDiag against
NumPy (the density, entropy and KL of a diagonal Gaussian written out with math). Samples: shapes
as TF's (sample_shape + batch_shape + event_shape), reproducible for one seed in a new session,
and moments against NumPy's of the parameters. Gradients of log_prob, entropy, KL and of
Normal.sample (reparameterized) by central differences in float64."""
import math
import warnings

import numpy as np
import pytest
from gradcheck import check_grad

import pygrad as tf

ds = tf.contrib.distributions
RNG = np.random.default_rng(4)
F32 = np.float32  # TF's default: Python numbers become float32, and parameters must share one dtype
LOC, SCALE = RNG.standard_normal((2, 3)).astype(F32), RNG.uniform(0.5, 2.0, (3,)).astype(F32)
X = RNG.standard_normal((4, 2, 3)).astype(F32)
LOGITS = RNG.standard_normal((2, 4)).astype(F32)
LOGITS_B = RNG.standard_normal((2, 4)).astype(F32)
EVENTS = RNG.integers(0, 4, (3, 2))
BITS = RNG.integers(0, 2, (3, 2, 4))


@pytest.fixture(scope="module")
def peer_dists(tf_peer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from tensorflow.python.ops.distributions import (
            bernoulli,
            categorical,
            kullback_leibler,
            normal,
            uniform,
        )
    return {"Normal": normal.Normal, "Bernoulli": bernoulli.Bernoulli, "Categorical": categorical.Categorical,
            "Uniform": uniform.Uniform, "kl_divergence": kullback_leibler.kl_divergence}


def statistics(lib, d):
    """The same statistics from both libraries: lib is pygrad or tensorflow.compat.v1, d the
    distribution classes of the library."""
    n = d["Normal"](LOC, SCALE)
    u = d["Uniform"](-SCALE, LOC + 2.0)
    b, b2 = d["Bernoulli"](logits=LOGITS), d["Bernoulli"](probs=1 / (1 + np.exp(-LOGITS_B)))
    c, c2 = d["Categorical"](logits=LOGITS), d["Categorical"](probs=np.exp(LOGITS_B) / np.exp(LOGITS_B).sum(-1,
                                                                                                          keepdims=True))
    kl = d["kl_divergence"]
    return {
        "normal": [n.log_prob(X), n.prob(X), n.entropy(), n.mean(), n.stddev(), n.variance(), n.mode(),
                   kl(n, d["Normal"](0.5, SCALE[::-1].copy())), n.cross_entropy(d["Normal"](0.5, 1.5))],
        "uniform": [u.prob(X), u.log_prob(np.abs(X) * 0.1), u.entropy(), u.mean(), u.stddev(), u.variance()],
        "bernoulli": [b.log_prob(BITS), b.prob(BITS), b.entropy(), b.mean(), b.variance(), b.mode(), b2.logits,
                      kl(b, b2), b.log_prob(1)],
        "categorical": [c.log_prob(EVENTS), c.prob(EVENTS), c.entropy(), c.mode(), c2.logits, kl(c, c2),
                        c.log_prob(2), c.probs],
        "shapes": [lib.constant(x.batch_shape.as_list() + [-1] + x.event_shape.as_list()) for x in (n, u, b, c)],
    }


@pytest.mark.parametrize("family", ["normal", "uniform", "bernoulli", "categorical", "shapes"])
def test_statistics_match_tf_distributions(tf_peer, peer_dists, family):
    graph = tf_peer.Graph()
    with graph.as_default(), tf_peer.Session() as sess:
        want = sess.run(statistics(tf_peer, peer_dists)[family])
    ours = {"Normal": ds.Normal, "Bernoulli": ds.Bernoulli, "Categorical": ds.Categorical, "Uniform": ds.Uniform,
            "kl_divergence": ds.kl_divergence}
    with tf.Session() as sess:
        got = sess.run(statistics(tf, ours)[family])
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6, err_msg=f"{family} statistic {i}")


def mvn_numpy(loc, scale, x):
    """(log density, entropy) of N(loc, diag(scale)^2) at x, over the last axis."""
    k = loc.shape[-1]
    log_prob = (-0.5 * np.sum(((x - loc) / scale) ** 2, -1) - 0.5 * k * math.log(2 * math.pi)
                - np.sum(np.log(np.abs(scale)), -1))
    return log_prob, 0.5 * k * (1 + math.log(2 * math.pi)) + np.sum(np.log(np.abs(scale)), -1)


def mvn_kl_numpy(la, sa, lb, sb):
    """KL of diagonal Gaussians: (tr(Sb^-1 Sa) + (mb - ma)^T Sb^-1 (mb - ma) - k + ln det Sb / det Sa) / 2."""
    va, vb = sa ** 2, sb ** 2
    return 0.5 * np.sum(va / vb + (lb - la) ** 2 / vb - 1 + np.log(vb / va), -1)


def test_mvn_diag_matches_numpy():
    loc, scale, scale_b = LOC.astype(np.float64), np.stack([SCALE, SCALE[::-1]]).astype(np.float64), RNG.uniform(
        0.5, 2.0, (2, 3))
    x = X.astype(np.float64)
    m = ds.MultivariateNormalDiag(loc, scale)
    m_b = ds.MultivariateNormalDiag(np.zeros(3), scale_b)
    with_multiplier = ds.MultivariateNormalDiag(loc, scale, scale_identity_multiplier=0.5)
    only_multiplier = ds.MultivariateNormalDiag(loc, scale_identity_multiplier=2.0)
    with tf.Session() as sess:
        got = sess.run([m.log_prob(x), m.entropy(), m.mean(), m.stddev(), m.variance(), ds.kl_divergence(m, m_b),
                        with_multiplier.log_prob(x), only_multiplier.entropy(), m.prob(x)])
    log_prob, entropy = mvn_numpy(loc, scale, x)
    np.testing.assert_allclose(got[0], log_prob, rtol=1e-12)
    np.testing.assert_allclose(got[1], entropy, rtol=1e-12)
    np.testing.assert_allclose(got[2], loc)
    np.testing.assert_allclose(got[3], scale)
    np.testing.assert_allclose(got[4], scale ** 2)
    np.testing.assert_allclose(got[5], mvn_kl_numpy(loc, scale, np.zeros(3), scale_b), rtol=1e-12)
    np.testing.assert_allclose(got[6], mvn_numpy(loc, scale + 0.5, x)[0], rtol=1e-12)
    np.testing.assert_allclose(got[7], mvn_numpy(loc, np.full((2, 3), 2.0), x)[1], rtol=1e-12)
    np.testing.assert_allclose(got[8], np.exp(log_prob), rtol=1e-12)
    assert m.batch_shape.as_list() == [2] and m.event_shape.as_list() == [3]


@pytest.mark.parametrize("make, batch, event", [
    (lambda: ds.Normal(LOC, SCALE), [2, 3], []),
    (lambda: ds.Uniform(0.0, [1.0, 2.0]), [2], []),
    (lambda: ds.Bernoulli(logits=LOGITS), [2, 4], []),
    (lambda: ds.Categorical(logits=LOGITS), [2], []),
    (lambda: ds.MultivariateNormalDiag(LOC, SCALE), [2], [3]),
])
def test_sample_shapes_and_seeds(make, batch, event):
    d = make()
    samples = [d.sample(), d.sample(5, seed=3), d.sample([2, 3], seed=3)]
    assert [s.shape.as_list() for s in samples] == [batch + event, [5] + batch + event, [2, 3] + batch + event]
    first = [tf.Session().run(samples[1]) for _ in range(2)]  # a new session starts the seeded stream anew
    np.testing.assert_array_equal(first[0], first[1])
    assert d.batch_shape.as_list() == batch and d.event_shape.as_list() == event


def test_sample_moments():
    """Sample means and standard deviations within 5 standard errors of the parameters'."""
    n = 20000
    normal = ds.Normal(LOC[0], SCALE).sample(n, seed=1)
    uniform = ds.Uniform(-1.0, SCALE).sample(n, seed=2)
    bern = ds.Bernoulli(probs=[0.2, 0.7]).sample(n, seed=3)
    cat = ds.Categorical(probs=[[0.1, 0.2, 0.7]]).sample(n, seed=4)
    mvn = ds.MultivariateNormalDiag(LOC[1], SCALE).sample(n, seed=5)
    with tf.Session() as sess:
        s = sess.run([normal, uniform, bern, cat, mvn])
    se = 5 / math.sqrt(n)
    assert np.all(np.abs(s[0].mean(0) - LOC[0]) < se * SCALE) and np.allclose(s[0].std(0), SCALE, rtol=0.05)
    assert np.all(np.abs(s[1].mean(0) - (SCALE - 1) / 2) < se * (SCALE + 1))
    assert s[2].dtype == np.int32 and np.all(np.abs(s[2].mean(0) - [0.2, 0.7]) < se)
    assert s[3].dtype == np.int32 and np.all(np.abs(np.bincount(s[3][:, 0], minlength=3) / n - [0.1, 0.2, 0.7]) < se)
    assert np.all(np.abs(s[4].mean(0) - LOC[1]) < se * SCALE) and np.allclose(s[4].std(0), SCALE, rtol=0.05)


def test_normal_sample_is_reparameterized():
    """d sum(w * sample) / d (loc, scale) by central differences, each point drawn in a new
    session (the same seeded noise)."""
    loc, scale = tf.placeholder(tf.float64, [3]), tf.placeholder(tf.float64, [3])
    sample = ds.Normal(loc, scale).sample(4, seed=7)
    w = RNG.standard_normal((4, 3))
    f = tf.reduce_sum(w * sample)
    grads = tf.gradients(f, [loc, scale])
    point = {loc: LOC[0].astype(np.float64), scale: SCALE.astype(np.float64)}
    with tf.Session() as sess:
        analytic = sess.run(grads, point)
    eps = 1e-6
    for which, g in zip([loc, scale], analytic):
        for i in range(3):
            up, down = dict(point), dict(point)
            up[which], down[which] = point[which].copy(), point[which].copy()
            up[which][i] += eps
            down[which][i] -= eps
            fd = (tf.Session().run(f, up) - tf.Session().run(f, down)) / (2 * eps)
            np.testing.assert_allclose(g[i], fd, rtol=1e-6)
    assert ds.Normal(0.0, 1.0).reparameterization_type is ds.FULLY_REPARAMETERIZED
    assert ds.Bernoulli(probs=0.5).reparameterization_type is ds.NOT_REPARAMETERIZED


@pytest.mark.parametrize("case", ["normal", "mvn", "bernoulli", "categorical"])
def test_gradients_by_finite_differences(case):
    """Of log_prob + entropy + KL with respect to every float parameter."""
    def fn(a, b):
        if case == "normal":
            p, q = ds.Normal(a[0], tf.exp(a[1])), ds.Normal(b[0], tf.exp(b[1]))
            value = X[0]
        elif case == "mvn":
            p, q = ds.MultivariateNormalDiag(a[0], tf.exp(a[1])), ds.MultivariateNormalDiag(b[0], tf.exp(b[1]))
            value = X[0]
        elif case == "bernoulli":
            p, q = ds.Bernoulli(logits=a), ds.Bernoulli(logits=b)
            value = BITS[0, 0, :3]
        else:
            p, q = ds.Categorical(logits=a), ds.Categorical(logits=b)
            value = EVENTS[0]
        return [p.log_prob(value), p.entropy(), ds.kl_divergence(p, q)]
    shape = (2, 2, 3) if case in ("normal", "mvn") else (2, 3) if case == "categorical" else (3,)
    check_grad(fn, [RNG.standard_normal(shape), RNG.standard_normal(shape)])


def test_bad_input():
    with pytest.raises(ValueError, match="Must pass probs or logits, but not both"):
        ds.Bernoulli(logits=[0.0], probs=[0.5])
    with pytest.raises(ValueError, match="Must pass probs or logits, but not both"):
        ds.Categorical()
    with pytest.raises(ValueError, match="Normal: the parameters must be of the same type"):
        ds.Normal(np.zeros(2), tf.constant(1.0))
    with pytest.raises(ValueError, match="Normal: expected floating point type for loc, got int32"):
        ds.Normal(tf.constant(1), tf.constant(1))
    with pytest.raises(NotImplementedError, match="No KL.*Normal and distribution_b type Bernoulli"):
        ds.kl_divergence(ds.Normal(0.0, 1.0), ds.Bernoulli(probs=0.5))
    with pytest.raises(NotImplementedError, match="mean is not implemented: Categorical"):
        ds.Categorical(logits=[0.0, 1.0]).mean()
    with pytest.raises(ValueError, match="sample_shape must be non-negative"):
        ds.Normal(0.0, 1.0).sample(-1)
    with pytest.raises(ValueError, match="MultivariateNormalDiag: give loc or scale_diag"):
        ds.MultivariateNormalDiag()


def test_register_kl_picks_tensorflows_function(tf_peer):
    """RegisterKL on subclasses of Normal, in both libraries: kl_divergence takes the function of
    the pair of ancestors nearest in the sum of MRO distances (the first found on a tie), else
    Normal's own KL; the op is named under KullbackLeibler; allow_nan_stats=False fails a NaN at
    run time; a second registration and a non-callable are refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from tensorflow.python.ops.distributions import kullback_leibler, normal

    def run(lib, normal_cls, register, kl_divergence):
        class A1(normal_cls):
            pass

        class A2(A1):
            pass

        class B1(normal_cls):
            pass

        class B2(B1):
            pass

        class C1(normal_cls):
            pass

        class C2(C1):
            pass

        def constant(value):
            return lambda a, b, name=None: lib.constant(value, name=name or "registered")

        register(A2, normal_cls)(constant(1.0))  # for (A2, B2): distance 0 + 2, found first along the MROs
        register(A1, B2)(constant(2.0))  # distance 1 + 0: nearer, so taken
        register(A1, C2)(constant(4.0))  # for (A2, C2): distance 1 + 0
        register(A2, C1)(constant(3.0))  # distance 0 + 1, a tie found first: taken
        register(B2, B2)(constant(float("nan")))
        with pytest.raises(ValueError, match=r"KL\(A1 \|\| B2\) has already been registered to"):
            register(A1, B2)(constant(0.0))
        with pytest.raises(TypeError, match="kl_fn must be callable"):
            register(B1, B1)(3.0)
        with lib.Graph().as_default() as g:
            def d(cls):
                return cls(loc=0.5, scale=2.0)
            kls = [kl_divergence(d(A2), d(B2), name="ab"), kl_divergence(d(A2), d(C2)), kl_divergence(d(A2), d(B1)),
                   kl_divergence(d(A1), d(C2)), kl_divergence(d(A1), d(B1)), kl_divergence(d(B2), d(B2))]
            checked = kl_divergence(d(B2), d(B2), allow_nan_stats=False)
            with lib.Session(graph=g) as sess:
                values = sess.run(kls)
                with pytest.raises(lib.errors.InvalidArgumentError, match="returned NaN values"):
                    sess.run(checked)
            return kls[0].op.name, values[:5]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = run(tf_peer, normal.Normal, kullback_leibler.RegisterKL, kullback_leibler.kl_divergence)
    ours = run(tf, ds.Normal, ds.RegisterKL, ds.kl_divergence)
    assert ours[0] == theirs[0] == "KullbackLeibler/ab"
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[1][:4] == [2.0, 3.0, 1.0, 4.0] and ours[1][4] == 0.0  # the last: Normal's KL of equal normals
