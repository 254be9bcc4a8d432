"""Every public callable of pygrad's TF namespaces is named in some test file: a textual check
(the name as a word anywhere in tests/*.py but this file), so a name nobody calls in a test shows
up here. A name bound to the same object as a tested name (an alias: tf.layers.Convolution2D is
tf.layers.Conv2D) counts as tested.

The namespaces: TF 1.x's tf.* modules that pygrad has, their TF sub-namespaces, and tf.contrib's
every module (found by walking, so a contrib module added later is checked with its tests)."""
import pathlib
import re
import types

import pygrad as tf

TESTS = pathlib.Path(__file__).resolve().parent

# tf.<name> modules of TF 1.15 that pygrad provides (contrib is walked below).
NAMESPACES = ["", "app", "app.flags", "data", "data.experimental", "dtypes", "errors", "estimator", "estimator.export",
              "estimator.inputs", "feature_column", "flags", "gfile", "graph_util", "image", "initializers", "io",
              "io.gfile", "layers", "linalg", "logging", "lookup", "losses", "math", "metrics", "mixed_precision",
              "mixed_precision.experimental", "nest", "nn", "nn.rnn_cell", "python_io", "random", "saved_model",
              "sparse", "strings", "summary", "train", "train.experimental"]
# Sub-namespaces of contrib modules that TF 1.x programs reach for (contrib's modules themselves are walked).
CONTRIB_NAMESPACES = ["slim.learning", "slim.evaluation", "learn.datasets.mnist"]

# Public names not named in any test, by reason.
_HELPERS = """tf.dtypes.as_bytes_array tf.dtypes.is_string_value tf.dtypes.scalar_fits tf.errors.from_os_error
    tf.errors.op_message tf.errors.user_site tf.losses.build_error tf.contrib.slim.learning.gradients_summaries"""
_REACHED_THROUGH_OTHERS = """tf.AggregationMethod tf.GraphOptions
    tf.OptimizerOptions
    tf.QueueBase tf.ReaderBase tf.VariableScope tf.image.ResizeMethod tf.contrib.crf.CrfDecodeBackwardRnnCell
    tf.contrib.crf.CrfDecodeForwardRnnCell tf.contrib.crf.CrfForwardRnnCell tf.contrib.distributions.Distribution
    tf.contrib.distributions.ReparameterizationType tf.train.SessionRunContext tf.train.SessionRunValues
    tf.estimator.SessionRunContext tf.estimator.SessionRunValues tf.train.ChiefSessionCreator
    tf.contrib.slim.evaluation.ChiefSessionCreator tf.contrib.slim.learning.ChiefSessionCreator
    tf.train.CheckpointState"""
_NO_TEST_YET = """"""
UNTESTED = {
    **dict.fromkeys(_HELPERS.split(), "a pygrad helper, visible because its module is also the namespace: no TF name"),
    **dict.fromkeys(_REACHED_THROUGH_OTHERS.split(), "a base class, constants or an object the tested API builds and "
                    "returns (tf.float32 is a DType, hooks get SessionRunContext, crf_decode runs the Crf cells)"),
    **dict.fromkeys(_NO_TEST_YET.split(), "no test of its own yet: listed here so that it gets one"),
}


def _resolve(path):
    obj = tf
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    return obj


def namespaces():
    """{"tf.<path>": module} of every namespace checked."""
    out = {("tf." + p).rstrip("."): _resolve(p) for p in NAMESPACES}
    for name in dir(tf.contrib):
        m = getattr(tf.contrib, name)
        if not name.startswith("_") and isinstance(m, types.ModuleType) and m.__name__.startswith("pygrad."):
            out[f"tf.contrib.{name}"] = m
    out.update({f"tf.contrib.{p}": _resolve("contrib." + p) for p in CONTRIB_NAMESPACES})
    return out


def public_callables():
    """{"tf.<path>.<name>": object} of every public callable pygrad defines in the namespaces.
    Helpers a namespace imports for itself end in "_" (range_, slice_: pygrad's spelling of a
    name that would shadow a builtin; no TF name ends so) or come from outside pygrad."""
    out = {}
    for where, m in namespaces().items():
        for name in dir(m):
            obj = getattr(m, name)
            if name.startswith("_") or name.endswith("_") or isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if not (getattr(obj, "__module__", None) or "").startswith("pygrad"):
                continue
            out[f"{where}.{name}"] = obj
    return out


def _words():
    words = set()
    for path in TESTS.glob("*.py"):
        if path.name != pathlib.Path(__file__).name:
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text()))
    return words


def untested():
    words = _words()
    names = public_callables()
    tested_objects = {id(obj) for full, obj in names.items() if full.rsplit(".", 1)[1] in words}
    return sorted(full for full, obj in names.items()
                  if full.rsplit(".", 1)[1] not in words and id(obj) not in tested_objects)


def test_the_walk_sees_the_namespaces():
    names = public_callables()
    assert len(names) > 1000
    for full in ("tf.train.AdamOptimizer", "tf.layers.dense", "tf.contrib.slim.conv2d", "tf.nn.rnn_cell.LSTMCell",
                 "tf.contrib.crf.crf_decode", "tf.estimator.inputs.numpy_input_fn", "tf.matmul"):
        assert full in names, full


def test_every_public_name_is_named_in_a_test():
    missing = [n for n in untested() if n not in UNTESTED]
    assert not missing, f"{len(missing)} public names appear in no test file:\n  " + "\n  ".join(missing)
    assert all(UNTESTED.values()), "every name left untested needs its reason"
    stale = sorted(set(UNTESTED) - set(untested()))
    assert not stale, f"now tested, drop from UNTESTED: {stale}"
