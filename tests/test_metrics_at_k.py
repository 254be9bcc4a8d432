"""tf.metrics' top-k metrics against TensorFlow's, on random batches: precision_at_k, recall_at_k
(with and without class_id, one label or several per example, dense or SparseTensor labels,
weights), their _at_top_k forms, TF1's sparse_ names and average_precision_at_k."""
import numpy as np
import pytest

import pygrad as tf
from metrics_peer import compare

N, C = 6, 5  # examples per batch, classes


def f32(m):
    return m.float32


def i64(m):
    return m.int64


def _logits(rng):
    return rng.standard_normal((N, C)).astype(np.float32)


def _one_label(rng):
    return {"labels": rng.integers(0, C, N).astype(np.int64), "predictions": _logits(rng),
            "weights": rng.uniform(0, 2, N).astype(np.float32)}


def _many_labels(rng):
    """Three labels per example, some repeated, some -1 (no label) or out of range."""
    labels = rng.integers(-1, C + 1, (N, 3)).astype(np.int64)
    labels[:, 1] = np.where(rng.uniform(size=N) < 0.3, labels[:, 0], labels[:, 1])
    return {"labels": labels, "predictions": _logits(rng), "weights": rng.uniform(0, 2, N).astype(np.float32)}


def _in_range_labels(rng):
    labels = rng.integers(0, C, (N, 3)).astype(np.int64)
    labels[:, 2] = np.where(rng.uniform(size=N) < 0.4, -1, labels[:, 2])
    return {"labels": labels, "predictions": _logits(rng), "weights": rng.uniform(0, 2, N).astype(np.float32)}


ONE = {"labels": (i64, [N]), "predictions": (f32, [N, C]), "weights": (f32, [N])}
MANY = {"labels": (i64, [N, 3]), "predictions": (f32, [N, C]), "weights": (f32, [N])}
IN_RANGE = {"labels": (i64, [N, 3]), "predictions": (f32, [N, C]), "weights": (f32, [N])}


def _m(name, weighted=True, **kw):
    def case(m, p):
        return getattr(m.metrics, name)(p["labels"], p["predictions"], weights=p["weights"] if weighted else None,
                                        **kw)
    return case


def _top_k(name, k, **kw):
    """The _at_top_k form, given the top-k indices (int32, as tf.nn.top_k gives them)."""
    def case(m, p):
        _, idx = m.nn.top_k(p["predictions"], k)
        return getattr(m.metrics, name)(p["labels"], idx, k=k, weights=p["weights"], **kw)
    return case


CASES = [
    *[(f"{name}-k{k}-one-label", _m(name, k=k), ONE, _one_label) for name in ("precision_at_k", "recall_at_k")
      for k in (1, 3)],
    *[(f"{name}-k2-many-labels", _m(name, k=2), MANY, _many_labels) for name in ("precision_at_k", "recall_at_k")],
    *[(f"{name}-k2-class{c}", _m(name, k=2, class_id=c), MANY, _many_labels)
      for name in ("precision_at_k", "recall_at_k") for c in (0, 3)],
    *[(f"{name}-unweighted", _m(name, weighted=False, k=3), MANY, _many_labels)
      for name in ("sparse_precision_at_k", "recall_at_k")],
    *[(f"{name}-k2", _top_k(name, 2), MANY, _many_labels) for name in ("precision_at_top_k", "recall_at_top_k")],
    ("recall_at_top_k-class1", _top_k("recall_at_top_k", 3, class_id=1), ONE, _one_label),
    ("average_precision_at_k-k3", _m("average_precision_at_k", k=3), IN_RANGE, _in_range_labels),
    ("average_precision_at_k-k1-one-label", _m("average_precision_at_k", k=1), ONE, _one_label),
    ("average_precision_at_k-out-of-range", _m("average_precision_at_k", weighted=False, k=2),
     {"labels": (i64, [N, 3]), "predictions": (f32, [N, C])},
     lambda r: {"labels": r.integers(0, C + 2, (N, 3)).astype(np.int64), "predictions": _logits(r)}),
]


@pytest.mark.parametrize("case, specs, make", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_top_k_metric_matches_tensorflow(tf_peer, case, specs, make):
    rng = np.random.default_rng(3)
    compare(tf_peer, case, specs, [make(rng) for _ in range(4)])


def _sparse_labels(rng):
    """A SparseTensor of up to 4 labels per example (some rows empty, some ids repeated or out of
    range), in row-major order."""
    indices, values = [], []
    for row in range(N):
        ids = rng.integers(0, C + 1, rng.integers(0, 5))
        indices += [[row, j] for j in range(len(ids))]
        values += list(ids)
    width = max([i[1] for i in indices], default=0) + 1
    return {"labels": (np.array(indices, np.int64).reshape(-1, 2), np.array(values, np.int64),
                       np.array([N, width], np.int64)),
            "predictions": _logits(rng), "weights": rng.uniform(0, 2, N).astype(np.float32)}


SPARSE = {"labels": (i64, "sparse"), "predictions": (f32, [N, C]), "weights": (f32, [N])}
SPARSE_CASES = [
    ("precision_at_k", _m("precision_at_k", k=2)),
    ("recall_at_k", _m("recall_at_k", k=3)),
    ("recall_at_k-class2", _m("recall_at_k", k=2, class_id=2)),
    ("precision_at_top_k", _top_k("precision_at_top_k", 2)),
    ("average_precision_at_k", _m("average_precision_at_k", k=3)),
    ("sparse_average_precision_at_k-unweighted", _m("sparse_average_precision_at_k", weighted=False, k=2)),
]


@pytest.mark.parametrize("case", [c[1] for c in SPARSE_CASES], ids=[c[0] for c in SPARSE_CASES])
def test_sparse_labels_match_tensorflow(tf_peer, case):
    """SparseTensor labels (fed to sparse placeholders) whose width changes from batch to batch."""
    rng = np.random.default_rng(5)
    compare(tf_peer, case, SPARSE, [_sparse_labels(rng) for _ in range(4)])


def test_invalid_k():
    with pytest.raises(ValueError, match="Invalid k=0"):
        tf.metrics.average_precision_at_k(tf.zeros([2], tf.int64), tf.zeros([2, 4]), 0)
