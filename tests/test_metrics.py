"""tf.metrics against TensorFlow's (tf.compat.v1.metrics): for each metric, several batches of random
data (and weights) fed to both; the update op's value and the metric's value after each batch, the
local variables' names and shapes, the METRIC_VARIABLES collection and the value after
local_variables_initializer agree (1e-6 relative)."""
import numpy as np
import pytest

import pygrad as tf
from metrics_peer import compare

N = 8  # examples per batch
BATCHES = 4


def f32(m):
    return m.float32


def i64(m):
    return m.int64


def bool_(m):
    return m.bool


def _batches(make, seed=0, n=BATCHES):
    rng = np.random.default_rng(seed)
    return [make(rng) for _ in range(n)]


def _weights(rng, shape=(N,)):
    w = rng.uniform(0, 2, shape).astype(np.float32)
    w[rng.uniform(size=shape) < 0.2] = 0.0
    return w


def _regression(rng, shape=(N,)):
    return {"labels": rng.standard_normal(shape).astype(np.float32),
            "predictions": rng.standard_normal(shape).astype(np.float32), "weights": _weights(rng, shape)}


def _classes(rng, shape=(N,), k=3):
    return {"labels": rng.integers(0, k, shape).astype(np.int64), "predictions": rng.integers(0, k, shape).astype(
        np.int64), "weights": _weights(rng, shape)}


def _binary(rng, shape=(N,)):
    return {"labels": rng.integers(0, 2, shape).astype(np.int64),
            "predictions": rng.uniform(0, 1, shape).astype(np.float32), "weights": _weights(rng, shape)}


def _bools(rng):
    return {"labels": rng.integers(0, 2, N).astype(bool), "predictions": rng.integers(0, 2, N).astype(bool),
            "weights": _weights(rng)}


REG = {"labels": (f32, [N]), "predictions": (f32, [N]), "weights": (f32, [N])}
CLS = {"labels": (i64, [N]), "predictions": (i64, [N]), "weights": (f32, [N])}
BIN = {"labels": (i64, [N]), "predictions": (f32, [N]), "weights": (f32, [N])}
BOOL = {"labels": (bool_, [N]), "predictions": (bool_, [N]), "weights": (f32, [N])}
THRESHOLDS = [0.1, 0.35, 0.5, 0.8]


def _m(name, **kw):
    """A case calling tf.metrics.<name>(labels=, predictions=, weights=, **kw)."""
    def case(m, p):
        args = {k: v for k, v in p.items() if k in ("labels", "predictions", "weights")}
        return getattr(m.metrics, name)(**args, **kw)
    return case


def _no_weights(name, **kw):
    def case(m, p):
        return getattr(m.metrics, name)(labels=p["labels"], predictions=p["predictions"], **kw)
    return case


# (id, case, placeholder specs, batch maker)
CASES = [
    ("mean", lambda m, p: m.metrics.mean(p["values"], p["weights"]), {"values": (f32, [N]), "weights": (f32, [N])},
     lambda r: {"values": r.standard_normal(N).astype(np.float32), "weights": _weights(r)}),
    ("mean-unweighted", lambda m, p: m.metrics.mean(p["values"]), {"values": (f32, [4, 3])},
     lambda r: {"values": r.standard_normal((4, 3)).astype(np.float32)}),
    ("mean-broadcast-weights", lambda m, p: m.metrics.mean(p["values"], p["weights"]),
     {"values": (f32, [4, 3]), "weights": (f32, [4, 1])},
     lambda r: {"values": r.standard_normal((4, 3)).astype(np.float32), "weights": _weights(r, (4, 1))}),
    ("mean-scalar-weight", lambda m, p: m.metrics.mean(p["values"], 0.5), {"values": (f32, [N])},
     lambda r: {"values": r.standard_normal(N).astype(np.float32)}),
    ("mean_tensor", lambda m, p: m.metrics.mean_tensor(p["values"], p["weights"]),
     {"values": (f32, [4, 3]), "weights": (f32, [4, 3])},
     lambda r: {"values": r.standard_normal((4, 3)).astype(np.float32), "weights": _weights(r, (4, 3))}),
    ("mean_tensor-unweighted", lambda m, p: m.metrics.mean_tensor(p["values"]), {"values": (f32, [2, 3])},
     lambda r: {"values": r.standard_normal((2, 3)).astype(np.float32)}),
    ("accuracy", _m("accuracy"), CLS, _classes),
    ("accuracy-unweighted", _no_weights("accuracy"), CLS, _classes),
    ("accuracy-squeezed-predictions", _no_weights("accuracy"), {"labels": (i64, [N]), "predictions": (i64, [N, 1])},
     lambda r: {"labels": r.integers(0, 3, N), "predictions": r.integers(0, 3, (N, 1))}),
    ("accuracy-weights-expanded", lambda m, p: m.metrics.accuracy(p["labels"], p["predictions"], p["weights"]),
     {"labels": (i64, [N]), "predictions": (i64, [N]), "weights": (f32, [N, 1])},
     lambda r: {"labels": r.integers(0, 3, N), "predictions": r.integers(0, 3, N), "weights": _weights(r, (N, 1))}),
    ("mean_absolute_error", _m("mean_absolute_error"), REG, _regression),
    ("mean_squared_error", _m("mean_squared_error"), REG, _regression),
    ("root_mean_squared_error", _m("root_mean_squared_error"), REG, _regression),
    ("root_mean_squared_error-unweighted", _no_weights("root_mean_squared_error"), REG, _regression),
    ("mean_relative_error", lambda m, p: m.metrics.mean_relative_error(p["labels"], p["predictions"], p["normalizer"],
                                                                       p["weights"]),
     {**REG, "normalizer": (f32, [N])},
     lambda r: {**_regression(r), "normalizer": np.where(r.uniform(size=N) < 0.3, 0, r.uniform(0.5, 2, N)).astype(
         np.float32)}),
    ("mean_cosine_distance", lambda m, p: m.metrics.mean_cosine_distance(p["labels"], p["predictions"], 1,
                                                                         p["weights"]),
     {"labels": (f32, [N, 3]), "predictions": (f32, [N, 3]), "weights": (f32, [N, 1])},
     lambda r: {"labels": _unit(r), "predictions": _unit(r), "weights": _weights(r, (N, 1))}),
    ("percentage_below", lambda m, p: m.metrics.percentage_below(p["values"], 0.3, p["weights"]),
     {"values": (f32, [N]), "weights": (f32, [N])},
     lambda r: {"values": r.standard_normal(N).astype(np.float32), "weights": _weights(r)}),
    ("mean_per_class_accuracy", _m("mean_per_class_accuracy", num_classes=3), CLS, _classes),
    ("mean_per_class_accuracy-2d", _no_weights("mean_per_class_accuracy", num_classes=4),
     {"labels": (i64, [2, 4]), "predictions": (i64, [2, 4])}, lambda r: _classes(r, (2, 4), 4)),
    ("mean_iou", _m("mean_iou", num_classes=3), CLS, _classes),
    ("mean_iou-unweighted-2d", _no_weights("mean_iou", num_classes=4),
     {"labels": (i64, [2, 4]), "predictions": (i64, [2, 4])}, lambda r: _classes(r, (2, 4), 4)),
    *[(f"{name}", _m(name), BOOL, _bools) for name in
      ("true_positives", "false_positives", "true_negatives", "false_negatives", "precision", "recall")],
    *[(f"{name}-int-labels-unweighted", _no_weights(name), {"labels": (i64, [N]), "predictions": (bool_, [N])},
       lambda r: {"labels": r.integers(0, 2, N), "predictions": r.integers(0, 2, N).astype(bool)}) for name in
      ("true_positives", "false_negatives", "precision", "recall")],
    *[(name, _m(name, thresholds=THRESHOLDS), BIN, _binary) for name in
      ("true_positives_at_thresholds", "false_positives_at_thresholds", "true_negatives_at_thresholds",
       "false_negatives_at_thresholds", "precision_at_thresholds", "recall_at_thresholds")],
    ("precision_at_thresholds-unweighted", _no_weights("precision_at_thresholds", thresholds=THRESHOLDS), BIN,
     _binary),
    *[(f"auc-{curve}-{method}", _m("auc", curve=curve, summation_method=method, num_thresholds=50), BIN, _binary)
      for curve in ("ROC", "PR") for method in ("trapezoidal", "careful_interpolation", "minoring", "majoring")],
    ("auc-default-unweighted", _no_weights("auc"), BIN, _binary),
    ("auc-thresholds", _m("auc", thresholds=[0.7, 0.2, 0.5]), BIN, _binary),
    ("auc-2d-predictions", _m("auc", curve="PR", summation_method="careful_interpolation"),
     {"labels": (i64, [4, 2]), "predictions": (f32, [4, 2]), "weights": (f32, [4, 1])},
     lambda r: {"labels": r.integers(0, 2, (4, 2)), "predictions": r.uniform(size=(4, 2)).astype(np.float32),
                "weights": _weights(r, (4, 1))}),
    ("specificity_at_sensitivity", _m("specificity_at_sensitivity", sensitivity=0.7, num_thresholds=20), BIN,
     _binary),
    ("sensitivity_at_specificity", _m("sensitivity_at_specificity", specificity=0.4), BIN, _binary),
    ("sensitivity_at_specificity-unweighted", _no_weights("sensitivity_at_specificity", specificity=0.9), BIN,
     _binary),
]


def _unit(rng):
    x = rng.standard_normal((N, 3)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("case, specs, make", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_metric_matches_tensorflow(tf_peer, case, specs, make):
    compare(tf_peer, case, specs, _batches(make))


def test_names_collections_and_a_second_metric(tf_peer):
    """Two metrics of one kind get TF's scope names (accuracy, accuracy_1); a name= is used as
    given; the value and update op land in the collections named; the variables are local only."""
    def case(m, p):
        a = m.metrics.accuracy(p["labels"], p["predictions"], metrics_collections=["metric_values"],
                               updates_collections=["metric_updates"])
        b = m.metrics.accuracy(p["labels"], p["predictions"], name="acc")
        c = m.metrics.accuracy(p["labels"], p["predictions"], metrics_collections=["metric_values"])
        d = m.metrics.auc(p["labels"], m.cast(p["predictions"], m.float32) / 3.0, num_thresholds=5,
                          metrics_collections=["metric_values"], updates_collections=["metric_updates"])
        return m.stack([a[0], b[0], c[0], d[0]]), m.stack([a[1], b[1], c[1], d[1]])

    compare(tf_peer, case, CLS, _batches(_classes))
    assert tf.trainable_variables() == [] and tf.global_variables() == []


def test_an_evaluation_loop(tf_peer):
    """TF1 evaluation code: a dataset of batches, the update ops run per batch until the iterator
    ends, then the values; twice, with the metrics reset between the passes."""
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((20, 4)).astype(np.float32)
    labels = rng.integers(0, 4, 20).astype(np.int64)

    def evaluate(m):
        graph = m.Graph()
        with graph.as_default():
            it = m.data.Dataset.from_tensor_slices((logits, labels)).batch(6).make_initializable_iterator()
            x, y = it.get_next()
            predictions = m.argmax(x, 1)
            probs = m.nn.softmax(x)
            metrics = {"accuracy": m.metrics.accuracy(y, predictions),
                       "per_class": m.metrics.mean_per_class_accuracy(y, predictions, 4),
                       "iou": m.metrics.mean_iou(y, predictions, 4),
                       "auc": m.metrics.auc(m.equal(y, 0), probs[:, 0]),
                       "recall_at_2": m.metrics.recall_at_k(y, x, 2)}
            values = {k: v[0] for k, v in metrics.items()}
            update = m.group(*[v[1] for v in metrics.values()])
            results = []
            with m.Session(graph=graph) as s:
                for _ in range(2):
                    s.run([m.local_variables_initializer(), it.initializer])
                    while True:
                        try:
                            s.run(update)
                        except m.errors.OutOfRangeError:
                            break
                    results.append(s.run(values))
            return results

    ours, theirs = evaluate(tf), evaluate(tf_peer)
    for a, b in zip(ours, theirs):
        for k in b:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6, err_msg=k)
    assert ours[0] == ours[1]


def test_auc_predictions_out_of_range_fail_the_run():
    """As TF's assert ops: predictions outside [0, 1] fail the update, naming the check, and leave
    the counts as they were."""
    labels = tf.placeholder(tf.int64, [3])
    predictions = tf.placeholder(tf.float32, [3])
    _, update = tf.metrics.auc(labels, predictions, num_thresholds=3)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        s.run(update, {labels: [0, 1, 1], predictions: [0.1, 0.9, 0.6]})
        before = s.run(tf.local_variables())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Assert 'auc/assert_less_equal/Assert': assertion "
                                                                 r"failed: \[predictions must be in \[0, 1\]\]"):
            s.run(update, {labels: [0, 1, 1], predictions: [0.1, 1.5, 0.6]})
        assert all(np.array_equal(a, b) for a, b in zip(before, s.run(tf.local_variables())))
        s.run(update, {labels: [0, 1, 1], predictions: [0.1, 0.9, 0.6]})


@pytest.mark.parametrize("call, match", [
    (lambda: tf.metrics.auc([1, 0], [0.5, 0.2], curve="XY"), "Curve must be either ROC or PR"),
    (lambda: tf.metrics.auc([1, 0], [0.5, 0.2], summation_method="simpson"), "Invalid summation_method: simpson"),
    (lambda: tf.metrics.specificity_at_sensitivity([1, 0], [0.5, 0.2], 1.5), "must be in the range"),
    (lambda: tf.metrics.accuracy(tf.zeros([3], tf.int64), tf.zeros([4], tf.int64)),
     "accuracy: predictions and labels must have compatible"),
    (lambda: tf.metrics.mean(tf.zeros([3, 2]), tf.ones([4, 2])), "weights can not be broadcast to values"),
    (lambda: tf.metrics.precision_at_thresholds([1, 0], [0.5, 0.2], [0.5], weights=tf.ones([3])),
     "weights can not be broadcast"),
])
def test_bad_arguments_raise_when_built(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_constant_predictions_out_of_range_raise_when_built(tf_peer):
    for m, graph in ((tf, tf.Graph()), (tf_peer, tf_peer.Graph())):
        with graph.as_default(), pytest.raises(m.errors.InvalidArgumentError, match="predictions must be in"):
            m.metrics.auc(m.constant([0, 1]), m.constant([0.5, 1.5]))
