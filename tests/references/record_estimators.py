"""Records TensorFlow's estimators (TensorFlow 2.15 with tensorflow-estimator 2.15, the last
release with tf.estimator) on the models of tests/estimator_models.py, for tests/test_estimator.py:
the variables' names, shapes and initial values, every training step's loss, the evaluation's
metrics and the predictions. Run it in an environment with those two packages:

    pip install "tensorflow-cpu==2.15.*" "tensorflow-estimator==2.15.*"
    PYGRAD_MNIST_DIR=<the MNIST files> python tests/references/record_estimators.py

It rewrites tests/references/estimator_mnist.npz, estimator_mnist64.npz (the same model in
float64, where rounding cannot hide a difference of semantics over many steps) and
estimator_canned.npz (the canned classifiers on feature columns); with arguments, only those
named (`mnist`, `canned`)."""
import os
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow.compat.v1 as tf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from estimator_models import (canned_estimators, census_like, convnet_model_fn, loss_recorder,  # noqa: E402
                              mnist_subset)

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, BATCH, LR = 60, 50, 1e-3


def record_mnist(mnist_dir, dtype, out):
    # TF 2's tf.compat.v1.layers compute in the Keras float type (TF 1's took the inputs' dtype).
    tf.keras.backend.set_floatx(np.dtype(dtype).name)
    x, y, ex, ey = (a.astype(dtype) if a.dtype.kind == "f" else a for a in mnist_subset(mnist_dir))
    model_dir = tempfile.mkdtemp()
    config = tf.estimator.RunConfig(tf_random_seed=1, save_checkpoints_steps=STEPS, log_step_count_steps=None)
    est = tf.estimator.Estimator(convnet_model_fn(tf), model_dir=model_dir, config=config,
                                 params={"learning_rate": LR})
    train_fn = tf.estimator.inputs.numpy_input_fn({"image": x}, y, batch_size=BATCH, num_epochs=None, shuffle=False)
    rec = loss_recorder(tf)()
    # The initial values: one step's checkpoint is written at step 0 (before any update).
    est.train(train_fn, steps=STEPS, hooks=[rec])
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-0"))
    names = sorted(reader.get_variable_to_shape_map())
    initial = {f"init/{n}": reader.get_tensor(n) for n in names}
    eval_fn = tf.estimator.inputs.numpy_input_fn({"image": ex}, ey, batch_size=100, shuffle=False)
    metrics = est.evaluate(eval_fn)
    pred_fn = tf.estimator.inputs.numpy_input_fn({"image": ex[:20]}, batch_size=10, shuffle=False)
    preds = list(est.predict(pred_fn))
    np.savez_compressed(
        os.path.join(HERE, out), names=np.array(names),
        shapes=np.array([str(reader.get_variable_to_shape_map()[n]) for n in names]),
        losses=np.array(rec.losses, np.float64), eval_accuracy=metrics["accuracy"], eval_loss=metrics["loss"],
        eval_global_step=metrics["global_step"], probabilities=np.stack([p["probabilities"] for p in preds]),
        classes=np.array([p["classes"] for p in preds]), **initial)


CANNED_STEPS, RESUMED_STEPS = 100, 20


def record_canned():
    """The canned estimators on census_like: names, shapes and initial values of their variables,
    each step's loss, the evaluation and the predicted probabilities; every checkpoint value after
    the training (the optimizers' slots too) and the losses of training resumed from it."""
    tf.keras.backend.set_floatx("float32")
    features, label = census_like()
    out = {}
    for name, make in canned_estimators(tf, None, tf.estimator.RunConfig(
            tf_random_seed=1, save_checkpoints_steps=CANNED_STEPS, log_step_count_steps=None)).items():
        model_dir = tempfile.mkdtemp()
        est = make(model_dir)
        rec = loss_recorder(tf)()
        target = features["income"] / 10.0 if name.endswith("regressor") else label
        fn = tf.estimator.inputs.numpy_input_fn(features, target, batch_size=32, num_epochs=None, shuffle=False)
        est.train(fn, steps=CANNED_STEPS, hooks=[rec])
        reader = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-0"))
        shapes = reader.get_variable_to_shape_map()
        names = sorted(shapes)
        out.update({f"{name}/init/{n}": reader.get_tensor(n) for n in names})
        out[f"{name}/names"] = np.array(names)
        out[f"{name}/shapes"] = np.array([str(shapes[n]) for n in names])
        out[f"{name}/losses"] = np.array(rec.losses)
        metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn(features, target, batch_size=64, shuffle=False))
        out[f"{name}/metric_names"] = np.array(sorted(metrics))
        for k, v in metrics.items():
            out[f"{name}/metric/{k}"] = np.asarray(v)
        head = {k: v[:10] for k, v in features.items()}
        preds = list(est.predict(tf.estimator.inputs.numpy_input_fn(head, shuffle=False)))
        key = "predictions" if name.endswith("regressor") else "probabilities"
        out[f"{name}/probabilities"] = np.stack([p[key] for p in preds])
        out[f"{name}/prediction_keys"] = np.array(sorted(preds[0]))
        final = tf.train.load_checkpoint(os.path.join(model_dir, f"model.ckpt-{CANNED_STEPS}"))
        out.update({f"{name}/final/{n}": final.get_tensor(n) for n in final.get_variable_to_shape_map()})
        rec = loss_recorder(tf)()
        est.train(fn, steps=RESUMED_STEPS, hooks=[rec])
        out[f"{name}/resumed_losses"] = np.array(rec.losses)
    np.savez_compressed(os.path.join(HERE, "estimator_canned.npz"), **out)


if __name__ == "__main__":
    print("tensorflow", tf.__version__)
    tf.disable_eager_execution()
    which = sys.argv[1:] or ["mnist", "canned"]
    if "mnist" in which:
        record_mnist(os.environ["PYGRAD_MNIST_DIR"], np.float32, "estimator_mnist.npz")
        record_mnist(os.environ["PYGRAD_MNIST_DIR"], np.float64, "estimator_mnist64.npz")
    if "canned" in which:
        record_canned()
