"""The canned estimators against TensorFlow 2.15's (recorded by
tests/references/record_estimators.py): LinearClassifier, DNNClassifier,
DNNLinearCombinedClassifier, BaselineClassifier, LinearRegressor and DNNRegressor on numeric, bucketized, vocabulary, hashed, crossed and embedding
columns, from TF's initial weights: TF's model variables (names and shapes), loss at every step,
evaluation metrics and predicted probabilities, for 100 steps; then the checkpoints both ways: every
value of pygrad's checkpoint (the optimizers' slots too) equals TF's after those steps, and
training resumed from TF's checkpoint continues with TF's losses. BaselineRegressor and
DNNLinearCombinedRegressor, made of the same parts, against NumPy's gradient descent."""
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


def _numpy_sgd_combined(w, x, y, lr):
    """One gradient-descent step of linear(x) + dnn(x) (one relu layer) on the summed squared
    error: (loss, predictions, new weights)."""
    h_in = x @ w["dnn/hiddenlayer_0/kernel"] + w["dnn/hiddenlayer_0/bias"]
    h = np.maximum(h_in, 0.0)
    pred = x @ w["linear/linear_model/x/weights"] + w["linear/linear_model/bias_weights"] + \
        h @ w["dnn/logits/kernel"] + w["dnn/logits/bias"]
    e = 2.0 * (pred - y)
    dh = (e @ w["dnn/logits/kernel"].T) * (h_in > 0)
    grads = {"linear/linear_model/x/weights": x.T @ e, "linear/linear_model/bias_weights": e.sum(0),
             "dnn/logits/kernel": h.T @ e, "dnn/logits/bias": e.sum(0), "dnn/hiddenlayer_0/kernel": x.T @ dh,
             "dnn/hiddenlayer_0/bias": dh.sum(0)}
    return float(((pred - y) ** 2).sum()), pred, {k: w[k] - lr * grads[k] for k in w}


def test_baseline_and_combined_regressors_against_numpy(tmp_path):
    """BaselineRegressor and DNNLinearCombinedRegressor (their parts: the regression head, the
    baseline and combined model functions, are those of the recorded estimators) against NumPy:
    with gradient descent, each step's loss (TF1's canned default reduction, the sum of squared
    errors over the batch), the weights after it, TF's variable names, the predictions and the
    evaluation's average_loss, label/mean and prediction/mean."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 2)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0]]) + 0.5 + 0.1 * rng.standard_normal((8, 1))).astype(np.float32)
    lr, config = 0.01, tf.estimator.RunConfig(log_step_count_steps=None)
    train_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=8, num_epochs=None, shuffle=False)
    eval_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=8, shuffle=False)
    predict_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, shuffle=False)

    baseline = tf.estimator.BaselineRegressor(str(tmp_path / "baseline"), config=config,
                                              optimizer=tf.train.GradientDescentOptimizer(lr))
    rec = loss_recorder(tf)()
    baseline.train(train_fn, steps=3, hooks=[rec])
    bias, want = np.zeros(1), []  # TF's baseline bias starts at zero
    for _ in range(3):
        want.append(float(((bias - y) ** 2).sum()))
        bias = bias - lr * 2.0 * (bias - y).sum(0)
    np.testing.assert_allclose(rec.losses, want, rtol=1e-5)
    assert baseline.get_variable_names() == ["baseline/bias", "global_step"]
    np.testing.assert_allclose(baseline.get_variable_value("baseline/bias"), bias, rtol=1e-5)
    metrics = baseline.evaluate(eval_fn)
    np.testing.assert_allclose([metrics["average_loss"], metrics["label/mean"], metrics["prediction/mean"],
                                metrics["loss"]], [((bias - y) ** 2).mean(), y.mean(), bias[0],
                                                   ((bias - y) ** 2).sum()], rtol=1e-5)
    np.testing.assert_allclose(np.stack([p["predictions"] for p in baseline.predict(predict_fn)]),
                               np.tile(bias, (8, 1)), rtol=1e-5)

    w = {"linear/linear_model/x/weights": rng.standard_normal((2, 1)), "linear/linear_model/bias_weights": [0.1],
         "dnn/hiddenlayer_0/kernel": rng.standard_normal((2, 3)), "dnn/hiddenlayer_0/bias": [0.2, -0.1, 0.0],
         "dnn/logits/kernel": rng.standard_normal((3, 1)), "dnn/logits/bias": [-0.3]}
    w = {k: np.asarray(v, np.float32) for k, v in w.items()}
    with tf.Graph().as_default():
        variables = [tf.Variable(v, name=k) for k, v in w.items()]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            start = tf.train.Saver(variables).save(s, str(tmp_path / "start" / "model"))
    column = tf.feature_column.numeric_column("x", shape=[2])
    sgd = tf.train.GradientDescentOptimizer
    combined = tf.estimator.DNNLinearCombinedRegressor(
        str(tmp_path / "combined"), linear_feature_columns=[column], linear_optimizer=sgd(lr),
        dnn_feature_columns=[column], dnn_hidden_units=[3], dnn_optimizer=sgd(lr), config=config, warm_start_from=start)
    rec = loss_recorder(tf)()
    combined.train(train_fn, steps=2, hooks=[rec])
    want, weights = [], {k: v.astype(np.float64) for k, v in w.items()}
    for _ in range(2):
        loss, _, weights = _numpy_sgd_combined(weights, x.astype(np.float64), y.astype(np.float64), lr)
        want.append(loss)
    np.testing.assert_allclose(rec.losses, want, rtol=1e-5)
    assert combined.get_variable_names() == sorted(list(w) + ["global_step"])
    for k, v in weights.items():
        np.testing.assert_allclose(combined.get_variable_value(k), v, rtol=1e-5, atol=1e-6, err_msg=k)
    _, pred, _ = _numpy_sgd_combined(weights, x.astype(np.float64), y.astype(np.float64), lr)
    np.testing.assert_allclose(np.stack([p["predictions"] for p in combined.predict(predict_fn)]), pred, rtol=1e-5,
                               atol=1e-6)
    metrics = combined.evaluate(eval_fn)
    np.testing.assert_allclose([metrics["average_loss"], metrics["prediction/mean"]],
                               [((pred - y) ** 2).mean(), pred.mean()], rtol=1e-5)
