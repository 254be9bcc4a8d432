"""tf.contrib.metrics / slim.metrics against tf_slim's: the streaming_* functions (predictions
first, arguments by position and keyword) give tf_slim's values batch by batch, with its variables;
aggregate_metric_map gathers the pairs as tf_slim's."""
import numpy as np
import pytest

import pygrad as tf

rng = np.random.RandomState(0)
BATCHES = [{"p": rng.rand(8).astype(np.float32), "l": (rng.rand(8) > 0.5).astype(np.float32),
            "w": rng.rand(8).astype(np.float32), "c": rng.randint(0, 3, 8).astype(np.int64),
            "d": rng.randint(0, 3, 8).astype(np.int64), "s": rng.rand(8, 4).astype(np.float32),
            "k": rng.randint(0, 4, 8).astype(np.int64)} for _ in range(3)]

CASES = {
    "accuracy": lambda M, f: M.streaming_accuracy(f["c"], f["d"], f["w"]),
    "auc": lambda M, f: M.streaming_auc(f["p"], f["l"], f["w"], 50),
    "precision": lambda M, f: M.streaming_precision(f["p"] > 0.5, f["l"] > 0.5),
    "recall": lambda M, f: M.streaming_recall(f["p"] > 0.5, f["l"] > 0.5, weights=f["w"]),
    "mean": lambda M, f: M.streaming_mean(f["p"], f["w"]),
    "mse": lambda M, f: M.streaming_mean_squared_error(f["p"], f["l"], f["w"]),
    "rmse": lambda M, f: M.streaming_root_mean_squared_error(f["p"], f["l"]),
    "mae": lambda M, f: M.streaming_mean_absolute_error(f["p"], f["l"]),
    "mean_iou": lambda M, f: M.streaming_mean_iou(f["c"], f["d"], 3),
    "true_positives": lambda M, f: M.streaming_true_positives(f["p"] > 0.5, f["l"] > 0.5),
    "percentage_less": lambda M, f: M.streaming_percentage_less(f["p"], 0.3),
    "recall_at_k": lambda M, f: M.streaming_recall_at_k(f["s"], f["k"], 2),
    "sparse_precision_at_k": lambda M, f: M.streaming_sparse_precision_at_k(f["s"], f["k"], 2),
    "precision_at_thresholds": lambda M, f: M.streaming_precision_at_thresholds(f["p"], f["l"], [0.3, 0.6]),
    "recall_at_thresholds": lambda M, f: M.streaming_recall_at_thresholds(f["p"], f["l"], [0.3, 0.6], f["w"]),
    "false_negatives": lambda M, f: M.streaming_false_negatives(f["p"] > 0.5, f["l"] > 0.5, f["w"]),
    "false_positives": lambda M, f: M.streaming_false_positives(f["p"] > 0.5, f["l"] > 0.5),
    "true_negatives": lambda M, f: M.streaming_true_negatives(f["p"] > 0.5, f["l"] > 0.5, weights=f["w"]),
    "mean_tensor": lambda M, f: M.streaming_mean_tensor(f["s"], f["s"] * 0 + f["w"][:, None]),
    "mean_relative_error": lambda M, f: M.streaming_mean_relative_error(f["p"], f["l"], f["l"] + 0.5, f["w"]),
    "mean_cosine_distance": lambda M, f: M.streaming_mean_cosine_distance(f["s"], f["s"] * 0.5 + 0.1, 1),
    "sensitivity_at_specificity": lambda M, f: M.streaming_sensitivity_at_specificity(f["p"], f["l"] > 0.5, 0.4),
    "specificity_at_sensitivity": lambda M, f: M.streaming_specificity_at_sensitivity(f["p"], f["l"] > 0.5, 0.6,
                                                                                      weights=f["w"]),
    "sparse_recall_at_k": lambda M, f: M.streaming_sparse_recall_at_k(f["s"], f["k"][:, None], 2),
    "sparse_average_precision_at_k": lambda M, f: M.streaming_sparse_average_precision_at_k(f["s"], f["k"][:, None], 3),
}


def _run(m, metrics_module, case):
    with m.Graph().as_default() as g:
        feeds = {k: m.placeholder(m.as_dtype(v.dtype), v.shape) for k, v in BATCHES[0].items()}
        value, update = CASES[case](metrics_module, feeds)
        names = sorted(v.op.name for v in m.local_variables())
        with m.Session(graph=g) as s:
            s.run(m.local_variables_initializer())
            out = []
            for batch in BATCHES:
                s.run(update, {feeds[k]: v for k, v in batch.items()})
                out.append(s.run(value))
    return out, names


@pytest.mark.parametrize("case", sorted(CASES))
def test_streaming_metrics_equal_tf_slims(tf_slim, tf_peer, case):
    ours, our_names = _run(tf, tf.contrib.metrics, case)
    theirs, their_names = _run(tf_peer, tf_slim.metrics, case)
    assert our_names == their_names
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert tf.contrib.slim.metrics.streaming_accuracy is tf.contrib.metrics.streaming_accuracy


def test_aggregate_metric_map_and_metrics():
    labels, preds = tf.constant([1, 0, 1]), tf.constant([1, 1, 1])
    values, updates = tf.contrib.metrics.aggregate_metric_map({
        "acc": tf.metrics.accuracy(labels, preds), "tp": tf.metrics.true_positives(labels, preds)})
    assert sorted(values) == sorted(updates) == ["acc", "tp"]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        s.run(list(updates.values()))
        assert s.run(values) == {"acc": pytest.approx(2 / 3), "tp": 2.0}
    vs, us = tf.contrib.slim.metrics.aggregate_metrics(tf.metrics.mean(tf.constant([1.0, 3.0])))
    assert len(vs) == len(us) == 1
    with pytest.raises(ValueError, match="Expected at least one"):
        tf.contrib.metrics.aggregate_metrics()
    with pytest.raises(TypeError, match="multiple values for argument 'weights'"):
        tf.contrib.metrics.streaming_accuracy(preds, labels, None, weights=None)
