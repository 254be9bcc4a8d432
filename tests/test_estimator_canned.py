"""The canned estimators against TensorFlow 2.15's (recorded by
tests/references/record_estimators.py): LinearClassifier, DNNClassifier,
DNNLinearCombinedClassifier, BaselineClassifier, LinearRegressor and DNNRegressor on numeric, bucketized, vocabulary, hashed, crossed and embedding
columns, from TF's initial weights: TF's model variables (names and shapes), loss at every step,
evaluation metrics and predicted probabilities, for 100 steps; then the checkpoints both ways: every
value of pygrad's checkpoint (the optimizers' slots too) equals TF's after those steps, and
training resumed from TF's checkpoint continues with TF's losses."""
import os

import numpy as np
import pytest

import pygrad as tf
from pygrad.train import checkpoint_bundle
from estimator_models import canned_estimators, census_like, loss_recorder

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "references", "estimator_canned.npz")
STEPS = 100


def _is_model_variable(name):
    return name != "global_step" and not any(s in name for s in ("Ftrl", "Adagrad"))


def _initial_checkpoint(ref, kind, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    names = [n for n in ref[f"{kind}/names"] if _is_model_variable(n)]
    with tf.Graph().as_default():
        variables = [tf.Variable(ref[f"{kind}/init/{n}"], name=n) for n in names]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return tf.train.Saver(variables).save(s, path)


@pytest.fixture(scope="module")
def reference():
    return np.load(REFERENCE)


@pytest.mark.parametrize("kind", ["linear", "dnn", "combined", "baseline", "linear_regressor", "dnn_regressor"])
def test_canned_estimator_trains_evaluates_and_predicts_as_tensorflow(reference, tmp_path, kind):
    ref = reference
    features, label = census_like()
    target = features["income"] / 10.0 if kind.endswith("regressor") else label
    warm = tf.estimator.WarmStartSettings(_initial_checkpoint(ref, kind, str(tmp_path / "init" / "model")),
                                          vars_to_warm_start=".*")
    config = tf.estimator.RunConfig(save_checkpoints_steps=STEPS, log_step_count_steps=None)
    make = canned_estimators(tf, None, config)[kind]
    est = make(str(tmp_path / "model"))
    est._warm_start_settings = warm
    rec = loss_recorder(tf)()
    est.train(tf.estimator.inputs.numpy_input_fn(features, target, batch_size=32, num_epochs=None, shuffle=False),
              steps=STEPS, hooks=[rec])
    np.testing.assert_allclose(rec.losses, ref[f"{kind}/losses"], rtol=1e-5)
    ours = {n for n in est.get_variable_names() if _is_model_variable(n)}
    assert ours == {n for n in ref[f"{kind}/names"] if _is_model_variable(n)}
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn(features, target, batch_size=64, shuffle=False))
    assert sorted(metrics) == list(ref[f"{kind}/metric_names"])
    for k, v in metrics.items():
        np.testing.assert_allclose(v, ref[f"{kind}/metric/{k}"], rtol=3e-5, atol=3e-6, err_msg=k)
    head = {k: v[:10] for k, v in features.items()}
    preds = list(est.predict(tf.estimator.inputs.numpy_input_fn(head, shuffle=False)))
    assert sorted(preds[0]) == list(ref[f"{kind}/prediction_keys"])
    key = "predictions" if kind.endswith("regressor") else "probabilities"
    np.testing.assert_allclose(np.stack([p[key] for p in preds]), ref[f"{kind}/probabilities"], rtol=3e-5, atol=1e-6)
    # every name, the optimizers' slots too (the linear and the DNN estimators alone have TF's names
    # of the slots of partitioned variables made in their model's variable scope: part_0/Ftrl, t_0/Adagrad)
    assert est.get_variable_names() == list(ref[f"{kind}/names"])


@pytest.mark.parametrize("kind", ["linear", "dnn", "combined", "baseline", "linear_regressor", "dnn_regressor"])
def test_canned_checkpoints_cross_both_ways(reference, tmp_path, kind):
    ref = reference
    features, label = census_like()
    target = features["income"] / 10.0 if kind.endswith("regressor") else label
    train_fn = tf.estimator.inputs.numpy_input_fn(features, target, batch_size=32, num_epochs=None, shuffle=False)
    config = tf.estimator.RunConfig(save_checkpoints_steps=STEPS, log_step_count_steps=None)
    make = canned_estimators(tf, None, config)[kind]
    est = make(str(tmp_path / "ours"))
    est._warm_start_settings = tf.estimator.WarmStartSettings(
        _initial_checkpoint(ref, kind, str(tmp_path / "init" / "model")), vars_to_warm_start=".*")
    est.train(train_fn, steps=STEPS)
    final = {k[len(f"{kind}/final/"):]: ref[k] for k in ref.files if k.startswith(f"{kind}/final/")}
    ours = tf.train.load_checkpoint(str(tmp_path / "ours"))
    assert sorted(ours.get_variable_to_shape_map()) == sorted(final)
    for name, value in final.items():  # what TF 2.15 would restore from pygrad's checkpoint
        np.testing.assert_allclose(ours.get_tensor(name), value, rtol=1e-5, atol=1e-7, err_msg=name)
    resumed_dir = tmp_path / "resumed"  # TF's checkpoint after the 100 steps, continued in pygrad
    checkpoint_bundle.write_bundle(str(resumed_dir / f"model.ckpt-{STEPS}"), final)
    tf.train.update_checkpoint_state(str(resumed_dir), str(resumed_dir / f"model.ckpt-{STEPS}"))
    rec = loss_recorder(tf)()
    make(str(resumed_dir)).train(train_fn, steps=len(ref[f"{kind}/resumed_losses"]), hooks=[rec])
    np.testing.assert_allclose(rec.losses, ref[f"{kind}/resumed_losses"], rtol=1e-5)
