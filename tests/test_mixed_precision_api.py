"""TF1's mixed-precision training API against TensorFlow 2.21's tf.compat.v1, side by side: the same
program, the same initial weights, in both. LossScale, FixedLossScale and DynamicLossScale
(defaults, config, update rule, variable names), MixedPrecisionLossScaleOptimizer (losses, weights
and the loss scale over several steps; a step with an Inf or a NaN gradient skipped and the scale
divided; the scale multiplied after increment_period good steps; dense and IndexedSlices gradients;
slots and variables; a TF checkpoint restored), enable/disable_mixed_precision_graph_rewrite (the
switch, the wrapping, TF's errors and warnings) and the namespaces that hold them.

The switch makes the Sessions created after it run their products in bfloat16 (tests/test_bfloat16.py
covers that); here it is off whenever a program runs, so that both sides compute in float32 (TF's
own rewrite does nothing on a CPU). The `switch` fixture leaves it off for the tests after.

TF runs with TF1's control flow (its `disable_v2_behavior()` one, and TF 1.15's), whose cond
pygrad's follows: the wrapped optimizer's apply_gradients runs in a cond, so TF1 names Adam's
beta1_power 'cond_1/beta1_power' (under TF 2's control flow it would be 'beta1_power')."""
import logging

import numpy as np
import pytest

import pygrad as tf
from pygrad import bfloat16
from pygrad.train import mixed_precision

RNG = np.random.default_rng(7)
W0 = RNG.standard_normal((3, 2)).astype(np.float32)
B0 = RNG.standard_normal(2).astype(np.float32)
XS = [RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(8)]
YS = [RNG.standard_normal((4, 2)).astype(np.float32) for _ in range(8)]


@pytest.fixture(autouse=True)
def switch(monkeypatch):
    """Each test starts with the switch off and no float32 Session noted, and leaves it off."""
    monkeypatch.setitem(bfloat16._state, "float32_session_created", False)
    bfloat16.set_graph_rewrite(False)
    yield
    if mixed_precision.graph_rewrite_enabled():
        tf.train.experimental.disable_mixed_precision_graph_rewrite()


@pytest.fixture
def peer(tf_peer):
    """tensorflow.compat.v1 with TF1's control flow, its own switch off afterwards."""
    from tensorflow.python.training.experimental import mixed_precision_global_state as state
    v2 = tf_peer.control_flow_v2_enabled()
    tf_peer.disable_control_flow_v2()
    yield tf_peer
    state.set_mixed_precision_graph_rewrite_enabled(False)
    if v2:
        tf_peer.enable_control_flow_v2()


def _logged(logger, fn):
    """(fn's result, the messages logger got from it)."""
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.WARNING)  # (another test may have quieted the logger)
    log.addHandler(handler)
    try:
        return fn(), [r.getMessage() for r in records]
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def _error(fn):
    with pytest.raises(ValueError) as e:
        fn()
    return str(e.value)


# ---------------------------------------------------------------- one program, run in both


def _train(m, make_opt, xs=XS, ys=YS, steps_in=None, steps_out=None):
    """Fits y = x w + b (mean squared error) in module m's graph mode, with make_opt(m) -> (the
    optimizer, its LossScale); per step [loss, w, b, loss scale, global step, good_steps (a dynamic
    scale's)], and the names of the global variables. steps_in: a checkpoint to restore first;
    steps_out: one to save at the end."""
    with m.Graph().as_default():
        x, y = m.placeholder(m.float32, [None, 3]), m.placeholder(m.float32, [None, 2])
        w, b = m.Variable(W0, name="w"), m.Variable(B0, name="b")
        loss = m.reduce_mean(m.square(m.matmul(x, w) + b - y))
        opt, scale = make_opt(m)
        gs = m.train.get_or_create_global_step()
        train_op = opt.minimize(loss, global_step=gs)
        variables = {v.op.name: v for v in m.global_variables()}
        fetch = [w, b, scale(), gs] + ([variables["good_steps"]] if "good_steps" in variables else [])
        with m.Session() as s:
            s.run(m.global_variables_initializer())
            if steps_in:
                m.train.Saver().restore(s, steps_in)
            out = []
            for xv, yv in zip(xs, ys):
                lv, _ = s.run([loss, train_op], {x: xv, y: yv})
                out.append([lv] + s.run(fetch))
            if steps_out:
                m.train.Saver().save(s, steps_out)
        return out, [v.name for v in m.global_variables()]


def _assert_same(ours, theirs):
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for k, (u, v) in enumerate(zip(a, b)):
            np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7, err_msg=f"step {step}, value {k}")


def _wrapped(opt_name, *args, scale):
    """make_opt for _train: tf.train.<opt_name>(*args) wrapped with the loss scale scale(m)."""
    def make(m):
        ls = scale(m)
        return m.train.experimental.MixedPrecisionLossScaleOptimizer(getattr(m.train, opt_name)(*args), ls), ls
    return make


OPTIMIZERS = [("GradientDescentOptimizer", 0.1), ("MomentumOptimizer", 0.05, 0.9), ("AdamOptimizer", 0.05)]


@pytest.mark.parametrize("opt", OPTIMIZERS, ids=lambda o: o[0])
def test_fixed_loss_scale_trains_as_tensorflow(peer, opt):
    make = _wrapped(*opt, scale=lambda m: m.train.experimental.FixedLossScale(128))
    ours, theirs = _train(tf, make), _train(peer, make)
    _assert_same(ours[0], theirs[0])
    assert ours[1] == theirs[1]
    assert ours[0][-1][3] == 128.0


def _with_bad_steps(bad):
    """XS with batch 2 holding bad (inf or nan) and batch 5 an inf: two skipped steps."""
    xs = [x.copy() for x in XS]
    xs[2][1, 0] = bad
    xs[5][0, 2] = np.inf
    return xs


@pytest.mark.parametrize("bad", [np.inf, np.nan], ids=["inf", "nan"])
@pytest.mark.parametrize("opt", OPTIMIZERS, ids=lambda o: o[0])
def test_dynamic_loss_scale_trains_skips_and_rescales_as_tensorflow(peer, opt, bad):
    make = _wrapped(*opt, scale=lambda m: m.train.experimental.DynamicLossScale(
        initial_loss_scale=2 ** 10, increment_period=2, multiplier=2.0))
    xs = _with_bad_steps(bad)
    ours, theirs = _train(tf, make, xs), _train(peer, make, xs)
    _assert_same(ours[0], theirs[0])
    assert ours[1] == theirs[1]
    # [loss, w, b, scale, global step, good_steps]: hand-checked
    assert [int(r[3]) for r in ours[0]] == [1024, 2048, 1024, 1024, 2048, 1024, 1024, 2048]
    assert [r[4] for r in ours[0]] == [1, 2, 2, 3, 4, 4, 5, 6]
    assert [r[5] for r in ours[0]] == [1, 0, 0, 1, 0, 0, 1, 0]
    for skipped in (2, 5):  # the weights of a skipped step are those of the step before
        assert not np.isfinite(ours[0][skipped][0])
        np.testing.assert_array_equal(ours[0][skipped][1], ours[0][skipped - 1][1])
        np.testing.assert_array_equal(ours[0][skipped][2], ours[0][skipped - 1][2])


def test_the_scale_grows_after_increment_period_good_steps_and_never_below_one(peer):
    make = _wrapped("GradientDescentOptimizer", 0.1, scale=lambda m: m.mixed_precision.experimental.DynamicLossScale(
        initial_loss_scale=4, increment_period=3, multiplier=4.0))
    xs = [x.copy() for x in XS]
    xs[6][0, 0] = np.nan
    xs[7][0, 0] = np.nan
    ours, theirs = _train(tf, make, xs), _train(peer, make, xs)
    _assert_same(ours[0], theirs[0])
    # x4 after the 3rd and the 6th good step, then /4 for each NaN
    assert [r[3] for r in ours[0]] == [4, 4, 16, 16, 16, 64, 16, 4]
    assert [r[5] for r in ours[0]] == [1, 2, 0, 1, 2, 0, 0, 0]
    one = _wrapped("GradientDescentOptimizer", 0.1, scale=lambda m: m.mixed_precision.DynamicLossScale(
        initial_loss_scale=2, increment_period=5, multiplier=8.0))
    ours, theirs = _train(tf, one, xs), _train(peer, one, xs)
    _assert_same(ours[0], theirs[0])
    assert [r[3] for r in ours[0]][-3:] == [16, 2, 1]  # 16 / 8, then max(2 / 8, 1)


def test_a_scale_that_would_overflow_stays(peer):
    """The product is assigned only if finite (TF's _assign_if_finite); good_steps is reset all the same."""
    make = _wrapped("GradientDescentOptimizer", 0.01, scale=lambda m: m.train.experimental.DynamicLossScale(
        initial_loss_scale=2.0 ** 100, increment_period=1, multiplier=2.0 ** 20))
    ours, theirs = _train(tf, make, XS[:3], YS[:3]), _train(peer, make, XS[:3], YS[:3])
    _assert_same(ours[0], theirs[0])
    assert [r[3] for r in ours[0]] == [2.0 ** 120] * 3 and [r[5] for r in ours[0]] == [0, 0, 0]


def test_a_fixed_loss_scale_applies_a_step_that_is_not_finite(peer):
    """TF's MixedPrecisionLossScaleOptimizer skips steps only with a DynamicLossScale."""
    make = _wrapped("GradientDescentOptimizer", 0.1, scale=lambda m: m.mixed_precision.FixedLossScale(8))
    xs = _with_bad_steps(np.inf)[:4]
    ours, theirs = _train(tf, make, xs), _train(peer, make, xs)
    _assert_same(ours[0], theirs[0])
    assert not np.isfinite(ours[0][2][1]).all() and ours[0][2][4] == 3


def test_variable_names_slots_and_variables_as_tensorflow(peer):
    def build(m):
        with m.Graph().as_default():
            w = m.Variable(W0, name="w")
            loss = m.reduce_sum(m.square(w))
            with m.name_scope("outer"):
                opt = m.train.experimental.enable_mixed_precision_graph_rewrite(m.train.AdamOptimizer(0.1))
            m.train.experimental.disable_mixed_precision_graph_rewrite()
            train_op = opt.minimize(loss, global_step=m.train.get_or_create_global_step())
            return (train_op.name, train_op.type, [v.name for v in m.global_variables()],
                    [v.name for v in m.trainable_variables()], [v.name for v in opt.variables()],
                    opt.get_slot_names(), opt.get_slot(w, "m"), opt.get_name())
    ours = build(tf)
    assert ours == build(peer)
    assert ours[2] == ["w:0", "outer/current_loss_scale:0", "outer/good_steps:0", "global_step:0",
                       "cond_1/beta1_power:0", "cond_1/beta2_power:0", "w/Adam:0", "w/Adam_1:0"]
    assert ours[4][-2:] == ["outer/current_loss_scale:0", "outer/good_steps:0"] and ours[5] == []


def test_a_tensorflow_checkpoint_restores_and_training_goes_on_alike(peer, tmp_path):
    """TF trains three steps (one skipped) and saves: weights, Adam's slots and beta powers and the
    loss scale's variables; pygrad and TF restore it and train on alike."""
    make = _wrapped("AdamOptimizer", 0.05, scale=lambda m: m.train.experimental.DynamicLossScale(8.0, 2, 2.0))
    path = str(tmp_path / "model")
    xs = _with_bad_steps(np.inf)
    saved = _train(peer, make, xs[:3], YS[:3], steps_out=path)[0]
    ours, theirs = _train(tf, make, xs[3:], YS[3:], steps_in=path), _train(peer, make, xs[3:], YS[3:], steps_in=path)
    _assert_same(ours[0], theirs[0])
    assert saved[-1][3:] == [8.0, 2, 0] and ours[0][0][3:] == [8.0, 3, 1]


def test_indexed_slices_gradients_are_unscaled_and_checked(peer):
    """An embedding's gradient (IndexedSlices): its values are divided by the scale and checked."""
    def run(m, bad):
        with m.Graph().as_default():
            emb = m.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="emb")
            ids = m.placeholder(m.int32, [None])
            scale = m.placeholder(m.float32, [])
            loss = m.reduce_sum(m.square(m.nn.embedding_lookup(emb, ids))) * scale
            ls = m.train.experimental.DynamicLossScale(16.0, 2, 2.0)
            opt = m.train.experimental.MixedPrecisionLossScaleOptimizer(m.train.GradientDescentOptimizer(0.1), ls)
            gv = opt.compute_gradients(loss)
            sparse = type(gv[0][0]).__name__
            train_op = opt.apply_gradients(gv)
            with m.Session() as s:
                s.run(m.global_variables_initializer())
                out = [s.run([loss, train_op], {ids: [0, 2, 0], scale: v})[0] for v in (1.0, bad, 2.0)]
                return sparse, out, s.run([emb, ls()])
    for bad in (np.inf, np.nan):
        ours, theirs = run(tf, bad), run(peer, bad)
        assert ours[0] == theirs[0] == "IndexedSlices"
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
        _assert_same([ours[2]], [theirs[2]])


def test_compute_gradients_scales_the_loss_and_unscales_the_gradients(peer):
    def run(m):
        with m.Graph().as_default():
            w = m.Variable(W0, name="w")
            loss = m.reduce_sum(m.square(w)) * 1e-3
            opt = m.train.experimental.MixedPrecisionLossScaleOptimizer(m.train.GradientDescentOptimizer(1.0), 1024)
            gv = opt.compute_gradients(loss)
            with m.Session() as s:
                s.run(m.global_variables_initializer())
                return s.run([g for g, _ in gv]), [v.name for _, v in gv]
    ours, theirs = run(tf), run(peer)
    np.testing.assert_allclose(ours[0][0], theirs[0][0], rtol=1e-6)
    np.testing.assert_allclose(ours[0][0], 2e-3 * W0, rtol=1e-6)
    assert ours[1] == theirs[1]
    w = tf.Variable(W0)
    opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(1.0), 4)
    (g, _), = opt.compute_gradients(lambda: tf.reduce_sum(w * w))  # a callable loss is scaled when called
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(g), 2 * W0, rtol=1e-6)


# ---------------------------------------------------------------- the loss scales


def test_loss_scales_defaults_config_repr_and_value(peer):
    def facts(m):
        with m.Graph().as_default():
            dyn = m.train.experimental.DynamicLossScale()
            fixed = m.train.experimental.FixedLossScale(8)
            again = m.mixed_precision.experimental.DynamicLossScale.from_config(
                {"initial_loss_scale": 4, "increment_period": 7, "multiplier": 3})
            values = [dyn(), fixed(), again()]
            assert [v.dtype.name for v in values] == ["float32"] * 3 and values[0].shape.ndims == 0
            with m.Session() as s:
                s.run(m.global_variables_initializer())
                return (dyn.get_config(), fixed.get_config(), again.get_config(), repr(dyn), repr(fixed),
                        repr(m.train.experimental.FixedLossScale.from_config(fixed.get_config())),
                        (dyn.initial_loss_scale, dyn.increment_period, dyn.multiplier), s.run(values),
                        fixed.update([None])[1], [v.name for v in m.global_variables()],
                        [v.name for v in m.trainable_variables()], m.global_variables()[1].dtype.name)
    ours = facts(tf)
    assert ours == facts(peer)
    assert ours[0] == {"initial_loss_scale": 32768.0, "increment_period": 2000, "multiplier": 2.0}
    assert ours[9] == ["current_loss_scale:0", "good_steps:0", "current_loss_scale_1:0", "good_steps_1:0"]
    assert ours[8] is True and ours[10] == [] and ours[11] == "int64"


def test_loss_scale_is_abstract_and_update_takes_nested_gradients(peer):
    for m in (tf, peer):
        with pytest.raises(TypeError):
            m.train.experimental.LossScale()
        with pytest.raises(TypeError):
            m.mixed_precision.LossScale()

    def run(m):
        with m.Graph().as_default():
            ls = m.train.experimental.DynamicLossScale(8.0, 1, 2.0)
            grads = {"a": m.constant([1.0, np.inf]), "b": [None, m.constant(2.0)]}
            update, apply = ls.update(grads)
            good = [v for v in m.global_variables() if v.op.name == "good_steps"][0]
            with m.Session() as s:
                s.run(m.global_variables_initializer())
                finite = s.run(apply)
                s.run(update)
                return finite, s.run([ls(), good])
    assert run(tf) == run(peer)


# ---------------------------------------------------------------- errors


def test_errors_as_tensorflow(peer):
    def errors(m):
        exp = m.train.experimental
        with m.Graph().as_default():
            sgd = m.train.GradientDescentOptimizer(0.1)
            wrapped = exp.MixedPrecisionLossScaleOptimizer(sgd, 2)
            return [_error(lambda: exp.MixedPrecisionLossScaleOptimizer(3, "dynamic")),
                    _error(lambda: exp.MixedPrecisionLossScaleOptimizer(sgd, None)),
                    _error(lambda: exp.MixedPrecisionLossScaleOptimizer(sgd, "static")),
                    _error(lambda: exp.FixedLossScale(0.5)), _error(lambda: exp.FixedLossScale("8")),
                    _error(lambda: exp.enable_mixed_precision_graph_rewrite("sgd")),
                    _error(lambda: m.mixed_precision.enable_mixed_precision_graph_rewrite(wrapped))]
    ours = errors(tf)
    assert ours == errors(peer)
    assert ours[0] == "\"opt\" must be an instance of Optimizer, but got: <class 'int'>"
    assert ours[-1].startswith('"opt" must not already be an instance of a MixedPrecisionLossScaleOptimizer.')
    assert not mixed_precision.graph_rewrite_enabled()  # a failed enable leaves the switch off
    with pytest.raises(RuntimeError, match="This function should never be called"):
        tf.train.experimental.MixedPrecisionLossScaleOptimizer(tf.train.AdamOptimizer(), 1)._apply_dense(None, None)


# ---------------------------------------------------------------- the switch


def test_enable_wraps_the_optimizer_and_turns_the_switch_on_for_new_sessions():
    assert not mixed_precision.graph_rewrite_enabled()
    sgd = tf.train.GradientDescentOptimizer(0.1)
    opt = tf.mixed_precision.enable_mixed_precision_graph_rewrite(sgd)
    assert mixed_precision.graph_rewrite_enabled() and bfloat16.graph_rewrite_enabled()
    assert isinstance(opt, tf.mixed_precision.MixedPrecisionLossScaleOptimizer) and opt.get_name() == "GradientDescent"
    assert isinstance(opt._loss_scale, tf.train.experimental.DynamicLossScale) and opt._optimizer is sgd
    fixed = tf.train.experimental.enable_mixed_precision_graph_rewrite(tf.train.AdamOptimizer(), loss_scale=64)
    assert fixed._loss_scale.get_config() == {"loss_scale_value": 64.0}
    tf.mixed_precision.disable_mixed_precision_graph_rewrite()
    assert not mixed_precision.graph_rewrite_enabled()


def test_warnings_as_tensorflow(peer):
    """enable warns when a Session without mixed precision exists; disable when the switch is off."""
    def warnings_of(m, logger):
        mp = m.mixed_precision  # (TF logs a deprecation under the tf.train.experimental names)
        log = []
        log += _logged(logger, lambda: mp.enable_mixed_precision_graph_rewrite(m.train.AdamOptimizer(), 4))[1]
        log += _logged(logger, mp.disable_mixed_precision_graph_rewrite)[1]
        log += _logged(logger, mp.disable_mixed_precision_graph_rewrite)[1]
        with m.Graph().as_default(), m.Session():  # the switch is off: a float32 Session
            pass
        log += _logged(logger, lambda: mp.enable_mixed_precision_graph_rewrite(m.train.AdamOptimizer(), 4))[1]
        mp.disable_mixed_precision_graph_rewrite()
        return [line for line in log if "mixed_precision_graph_rewrite()" in line]

    from tensorflow.python.training.experimental import mixed_precision_global_state as state
    state.set_non_mixed_precision_session_created(False)
    ours, theirs = warnings_of(tf, "pygrad"), warnings_of(peer, "tensorflow")
    assert ours == theirs == [
        "disable_mixed_precision_graph_rewrite() called when mixed precision is already disabled.",
        "You already have existing Sessions that do not use mixed precision. enable_mixed_precision_graph_rewrite() "
        "will not affect these Sessions."]


def test_a_session_created_after_enable_trains_with_bfloat16_products():
    """The switch end to end (the rewrite itself: tests/test_bfloat16.py): the Session created after
    enable has bfloat16 products, and trains as float32 does, to bfloat16's precision."""
    if not bfloat16.cpu_has_bfloat16():
        pytest.skip("this CPU has no bfloat16 instructions (AVX512-BF16 or AMX)")

    def enabled(m):
        opt = m.train.experimental.enable_mixed_precision_graph_rewrite(m.train.AdamOptimizer(0.05), 2 ** 8)
        assert bfloat16.session_uses_bfloat16(None)
        return opt, opt._loss_scale
    mixed = _train(tf, enabled)[0]
    tf.train.experimental.disable_mixed_precision_graph_rewrite()
    assert not bfloat16.session_uses_bfloat16(None)
    float32 = _train(tf, _wrapped("AdamOptimizer", 0.05, scale=lambda m: m.train.experimental.FixedLossScale(256)))[0]
    assert mixed[0][0] != float32[0][0]  # the products differ ...
    np.testing.assert_allclose([r[0] for r in mixed], [r[0] for r in float32], rtol=2e-2)  # ... by little
    np.testing.assert_allclose(mixed[-1][1], float32[-1][1], rtol=2e-2, atol=2e-3)


def test_sessions_are_noted_by_whether_they_use_mixed_precision():
    assert not bfloat16.float32_session_created()
    mixed_precision.note_session_created(True)
    assert not bfloat16.float32_session_created()
    mixed_precision.note_session_created(False)
    assert bfloat16.float32_session_created()


# ---------------------------------------------------------------- namespaces


def test_namespaces_as_tensorflow(peer):
    names = ["DynamicLossScale", "FixedLossScale", "LossScale", "MixedPrecisionLossScaleOptimizer",
             "disable_mixed_precision_graph_rewrite", "enable_mixed_precision_graph_rewrite"]

    def public(module):
        return sorted(n for n in dir(module) if not n.startswith("_"))
    assert public(tf.mixed_precision) == public(peer.mixed_precision) == names + ["experimental"]
    assert public(tf.mixed_precision.experimental) == public(peer.mixed_precision.experimental) == names[:3]
    assert public(tf.train.experimental) == names and set(names) <= set(public(peer.train.experimental))
    for name in names:
        assert getattr(tf.mixed_precision, name) is getattr(tf.train.experimental, name)
        assert getattr(tf.compat.v1.mixed_precision, name) is getattr(tf.train.experimental, name)
    for name in names[:3]:
        assert getattr(tf.mixed_precision.experimental, name) is getattr(tf.train.experimental, name)


def test_tensorflow_module_paths_under_the_import_hook():
    """What `import tensorflow` (pygrad/tf_alias.py) answers for TF's paths to these names."""
    from pygrad.tf_alias import view_for
    exp = tf.train.experimental
    assert view_for("tensorflow.train.experimental").DynamicLossScale is exp.DynamicLossScale
    assert view_for("tensorflow.compat.v1.mixed_precision").FixedLossScale is exp.FixedLossScale
    assert view_for("tensorflow.mixed_precision.experimental").LossScale is exp.LossScale
    internal = "tensorflow.python.training.experimental."
    assert view_for(internal + "loss_scale_optimizer").MixedPrecisionLossScaleOptimizer is \
        exp.MixedPrecisionLossScaleOptimizer
    assert view_for(internal + "loss_scale").DynamicLossScale is exp.DynamicLossScale
    assert view_for(internal + "mixed_precision").disable_mixed_precision_graph_rewrite is \
        exp.disable_mixed_precision_graph_rewrite
