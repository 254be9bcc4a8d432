"""Shared fixtures: a fresh default graph for every test, the MNIST directory, TensorFlow as an
optional peer, and one and two threads."""
import os
import tempfile
import warnings

import pytest

import faults
import pygrad as tf


def pytest_configure(config):
    """A file the fault-injection tests record their counts in (tests/faults.py)."""
    os.environ.setdefault("PYGRAD_FAULT_REPORT", os.path.join(tempfile.mkdtemp(), "faults.jsonl"))


# Under CI (PYGRAD_REFERENCES_REQUIRED=1, set by .ci/run, which installs them), a test skipped for
# a missing reference package (TensorFlow, tf_slim, Dask, ...) fails instead: a cross-check must
# not stop running quietly.
_MISSING_REFERENCE = ("could not import", "is not importable")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("PYGRAD_REFERENCES_REQUIRED") == "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if any(words in reason for words in _MISSING_REFERENCE):
            report.outcome = "failed"
            report.longrepr = f"a reference package is missing, and CI requires every cross-check: {reason}"


def pytest_terminal_summary(terminalreporter):
    lines = faults.report(os.environ["PYGRAD_FAULT_REPORT"])
    if lines:
        terminalreporter.write_sep("-", "fault injection")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test builds in a new default graph (test files may override this fixture)."""
    tf.reset_default_graph()


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Runs the test with pygrad's thread count set to 1, then 2 (restored afterwards)."""
    old = tf.get_num_threads()
    tf.set_num_threads(request.param)
    yield request.param
    tf.set_num_threads(old)


MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
               "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(scope="session")
def mnist_dir():
    """The directory named by PYGRAD_MNIST_DIR, holding the four canonical MNIST .gz files."""
    path = os.environ.get("PYGRAD_MNIST_DIR")
    if not path:
        pytest.fail("set PYGRAD_MNIST_DIR to the directory holding the four MNIST .gz files")
    missing = [f for f in MNIST_FILES if not os.path.isfile(os.path.join(path, f))]
    if missing:
        pytest.fail(f"PYGRAD_MNIST_DIR={path!r} lacks {', '.join(missing)}")
    return path


@pytest.fixture(scope="session")
def tf_peer():
    """tensorflow.compat.v1 in graph mode, for optional cross-checks; the test is skipped without it.
    Never the reference of record: the NumPy references in reference.py are."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import tensorflow.compat.v1 as peer
        except Exception as e:  # ImportError, or a broken install
            pytest.skip(f"tensorflow is not importable: {e}")
        peer.disable_eager_execution()
    return peer


@pytest.fixture(scope="session")
def tf_slim(tf_peer):
    """The tf_slim package (TF-Slim and contrib.layers for TF 2) on tensorflow.compat.v1, for the
    contrib and slim cross-checks; the test is skipped without it. tf_slim 1.1 names things TF
    2.21 moved: tf_keras's legacy layers (now under tf_keras.src), ops.Tensor, ops.IndexedSlices,
    control_flow_ops.cond and variable_scope.variable; the missing names are aliased to where they
    live now."""
    import importlib
    import sys

    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for sub in ("", ".base", ".convolutional", ".core", ".normalization", ".pooling"):
                if "tf_keras.legacy_tf_layers" + sub not in sys.modules:
                    sys.modules["tf_keras.legacy_tf_layers" + sub] = importlib.import_module(
                        "tf_keras.src.legacy_tf_layers" + sub)
            from tensorflow.python.framework import ops
            from tensorflow.python.ops import control_flow_ops, variable_scope
            if not hasattr(ops, "Tensor"):
                ops.Tensor = tf_peer.Tensor
            if not hasattr(ops, "IndexedSlices"):
                ops.IndexedSlices = tf_peer.IndexedSlices
            if not hasattr(control_flow_ops, "cond"):
                control_flow_ops.cond = tf_peer.cond
            if not hasattr(variable_scope, "variable"):
                variable_scope.variable = tf_peer.Variable
            import tf_slim as slim
        except Exception as e:  # noqa: BLE001  (ImportError, or an install this shim does not fit)
            pytest.skip(f"tf_slim is not importable: {e}")
    return slim
