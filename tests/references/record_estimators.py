"""Records TensorFlow's estimators (TensorFlow 2.15 with tensorflow-estimator 2.15, the last
release with tf.estimator) on the models of tests/estimator_models.py, for tests/test_estimator.py:
the variables' names, shapes and initial values, every training step's loss, the evaluation's
metrics and the predictions. Run it in an environment with those two packages:

    pip install "tensorflow-cpu==2.15.*" "tensorflow-estimator==2.15.*"
    PYGRAD_MNIST_DIR=<the MNIST files> python tests/references/record_estimators.py

It rewrites tests/references/estimator_mnist.npz and estimator_mnist64.npz (the same model in
float64, where rounding cannot hide a difference of semantics over many steps)."""
import os
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow.compat.v1 as tf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from estimator_models import convnet_model_fn, loss_recorder, mnist_subset  # noqa: E402

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


if __name__ == "__main__":
    print("tensorflow", tf.__version__)
    tf.disable_eager_execution()
    record_mnist(os.environ["PYGRAD_MNIST_DIR"], np.float32, "estimator_mnist.npz")
    record_mnist(os.environ["PYGRAD_MNIST_DIR"], np.float64, "estimator_mnist64.npz")
