"""Estimator models written once against a module `tf` (pygrad, or TensorFlow's compat.v1), the
input data they train on, and the hook that records each step's loss: used by the tests and by the
reference scripts that record TensorFlow's estimators (tests/references/)."""
import gzip
import os

import numpy as np


def mnist_subset(mnist_dir, n_train=1000, n_eval=300):
    """The first n images (float32 in [0, 1], [n, 28, 28, 1]) and labels (int32) of MNIST's train
    and test files."""
    def images(name, n):
        with gzip.open(os.path.join(mnist_dir, name)) as f:
            data = np.frombuffer(f.read(), np.uint8, offset=16)
        return (data[:n * 784].reshape(n, 28, 28, 1) / 255.0).astype(np.float32)

    def labels(name, n):
        with gzip.open(os.path.join(mnist_dir, name)) as f:
            return np.frombuffer(f.read(), np.uint8, offset=8)[:n].astype(np.int32)
    return (images("train-images-idx3-ubyte.gz", n_train), labels("train-labels-idx1-ubyte.gz", n_train),
            images("t10k-images-idx3-ubyte.gz", n_eval), labels("t10k-labels-idx1-ubyte.gz", n_eval))


def convnet_model_fn(tf):
    """A small convnet (conv 8 and 16 filters, dense 32, 10 classes) trained by Adam, with
    tf.metrics.accuracy in evaluation and class/probability predictions."""
    def model_fn(features, labels, mode, params):
        x = features["image"]
        h = tf.layers.conv2d(x, 8, 5, padding="same", activation=tf.nn.relu)
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.conv2d(h, 16, 5, padding="same", activation=tf.nn.relu)
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.dense(tf.reshape(h, [-1, 7 * 7 * 16]), 32, activation=tf.nn.relu)
        logits = tf.layers.dense(h, 10)
        predictions = {"classes": tf.argmax(logits, axis=1), "probabilities": tf.nn.softmax(logits)}
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=predictions)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == tf.estimator.ModeKeys.TRAIN:
            train_op = tf.train.AdamOptimizer(params["learning_rate"]).minimize(
                loss, global_step=tf.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
        metrics = {"accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])}
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    return model_fn


def loss_recorder(tf):
    """A SessionRunHook class whose instances keep every step's loss (the graph's LOSSES)."""
    class LossRecorder(tf.estimator.SessionRunHook):
        def __init__(self):
            self.losses = []

        def before_run(self, run_context):
            return tf.estimator.SessionRunArgs(tf.get_collection(tf.GraphKeys.LOSSES)[-1])  # the spec's, added last

        def after_run(self, run_context, run_values):
            self.losses.append(float(run_values.results))
    return LossRecorder


def census_like(n=256, seed=0):
    """A small table of mixed features and a binary label (a rule of them, with noise)."""
    rng = np.random.RandomState(seed)
    age = rng.uniform(18, 80, n).astype(np.float32)
    income = rng.lognormal(3, 0.5, n).astype(np.float32)
    city = np.array([b"paris", b"rome", b"oslo", b"lima", b"cairo"], object)[rng.randint(0, 5, n)]
    job = np.array([b"job%d" % j for j in rng.randint(0, 12, n)], object)
    label = ((age > 40) ^ (city == b"rome") ^ (rng.rand(n) < 0.1)).astype(np.int32)
    return {"age": age, "income": income, "city": city, "job": job}, label


def census_columns(fc):
    """(linear columns, dnn columns) of census_like's features: numeric, bucketized, vocabulary,
    hashed, crossed and embedding columns."""
    age = fc.numeric_column("age")
    income = fc.numeric_column("income")
    age_buckets = fc.bucketized_column(age, [25, 35, 50, 65])
    city = fc.categorical_column_with_vocabulary_list("city", ["paris", "rome", "oslo", "lima"], num_oov_buckets=1)
    job = fc.categorical_column_with_hash_bucket("job", 10)
    cross = fc.crossed_column([age_buckets, "city"], 20)
    linear = [age, income, age_buckets, city, job, cross]
    dnn = [age, income, fc.indicator_column(city), fc.embedding_column(job, 3)]
    return linear, dnn


def canned_estimators(tf, model_dir, config):
    """{name: estimator maker} of the canned estimators on census_columns (the regressors' label:
    the income)."""
    linear, dnn = census_columns(tf.feature_column)
    linear_r = [c for c in linear if c.name != "income"]
    dnn_r = [c for c in dnn if c.name != "income"]
    return {
        "baseline": lambda d: tf.estimator.BaselineClassifier(model_dir=d, config=config),
        "linear_regressor": lambda d: tf.estimator.LinearRegressor(linear_r, model_dir=d, config=config),
        "dnn_regressor": lambda d: tf.estimator.DNNRegressor([8, 4], dnn_r, model_dir=d, config=config),
        "linear": lambda d: tf.estimator.LinearClassifier(linear, model_dir=d, config=config),
        "dnn": lambda d: tf.estimator.DNNClassifier([8, 4], dnn, model_dir=d, config=config),
        "combined": lambda d: tf.estimator.DNNLinearCombinedClassifier(
            model_dir=d, linear_feature_columns=linear, dnn_feature_columns=dnn, dnn_hidden_units=[8, 4],
            config=config),
    }
