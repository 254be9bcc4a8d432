"""`import tensorflow` as pygrad: the import hook behind ``python -m pygrad program.py`` and
``pygrad.alias_tensorflow()``, so that a TF1 program runs as written.

A finder on ``sys.meta_path`` answers every ``tensorflow`` module with a view: a module of TF's
name whose attributes come from pygrad's modules. ``tensorflow`` and ``tensorflow.compat.v1`` are
views of the pygrad package, ``tensorflow.contrib.slim`` of pygrad.contrib.slim, and so on along
pygrad's own attributes (``tensorflow.examples.tutorials.mnist`` is pygrad.examples'). TF's
internal modules, ``tensorflow.python.*``, are views of the pygrad modules that hold their names,
from the table below; a path the table does not know still imports, as a view with nothing in it.
A name pygrad lacks raises an AttributeError (an ImportError in ``from ... import``) naming the TF
API and saying that pygrad does not support it yet. Values are pygrad's own, never copies, so
``tf.Tensor`` is pygrad.Tensor and checkpoints, collections and graphs are the ones pygrad makes.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

import pygrad

NOTICE = "pygrad: `import tensorflow` gives pygrad {version} in this process (an import hook on sys.meta_path)"
# What `tensorflow.__version__` says under the hook: the TensorFlow API pygrad follows, so that a
# program choosing its code by version takes its TF 1.x branch (pygrad's own is pygrad.__version__).
TF_API_VERSION = "1.15.5"


def unsupported(api):
    """The message for a TF name pygrad does not have."""
    return (f"{api}: pygrad does not support this TensorFlow API yet (docs/coverage.md, 'What is supported', "
            f"lists what it covers)")


# tensorflow.python.<path>: the pygrad modules its names are looked up in, first match first. pygrad's
# top level and its public namespaces hold TF1's public functions under their TF names; a pygrad
# module that mirrors TF's (pygrad.graph for framework/ops.py, pygrad.shapes for tensor_shape.py)
# adds the internal names programs import from there.
PYTHON_MODULES = {
    "": "pygrad",
    "pywrap_tensorflow": "pygrad.train",  # NewCheckpointReader
    "client.session": "pygrad pygrad.session",
    "client.timeline": "pygrad.client.timeline",
    "profiler.model_analyzer": "pygrad.profiler",
    "profiler.option_builder": "pygrad.profiler",
    "framework.constant_op": "pygrad",
    "framework.dtypes": "pygrad pygrad.dtypes",
    "framework.errors": "pygrad.errors",
    "framework.errors_impl": "pygrad.errors",
    "framework.graph_io": "pygrad.train",  # write_graph
    "framework.graph_util": "pygrad.graph_util",
    "framework.graph_util_impl": "pygrad.graph_util",
    "framework.importer": "pygrad",
    "framework.indexed_slices": "pygrad",
    "framework.meta_graph": "pygrad.meta_graph",
    "framework.ops": "pygrad pygrad.graph",
    "framework.random_seed": "pygrad",
    "framework.sparse_tensor": "pygrad pygrad.ops.sparse_tensor",
    "framework.tensor_shape": "pygrad pygrad.shapes",
    "ops.array_ops": "pygrad",
    "ops.check_ops": "pygrad",
    "ops.clip_ops": "pygrad",
    "ops.confusion_matrix": "pygrad",
    "ops.control_flow_ops": "pygrad pygrad.ops.control_flow_ops",
    "ops.data_flow_ops": "pygrad",
    "ops.embedding_ops": "pygrad.nn",
    "ops.functional_ops": "pygrad",
    "ops.gradients": "pygrad pygrad.gradients",
    "ops.gradients_impl": "pygrad pygrad.gradients",
    "ops.image_ops": "pygrad.image",
    "ops.image_ops_impl": "pygrad.image",
    "ops.init_ops": "pygrad pygrad.ops.init_ops",
    "ops.io_ops": "pygrad",
    "ops.linalg_ops": "pygrad.linalg pygrad",
    "ops.logging_ops": "pygrad",
    "ops.lookup_ops": "pygrad.lookup pygrad",
    "ops.losses.losses": "pygrad.losses",
    "ops.losses.losses_impl": "pygrad.losses",
    "ops.losses.util": "pygrad.losses",
    "ops.map_fn": "pygrad",
    "ops.math_ops": "pygrad pygrad.math",
    "ops.metrics": "pygrad.metrics",
    "ops.metrics_impl": "pygrad.metrics",
    "ops.nn": "pygrad.nn",
    "ops.nn_impl": "pygrad.nn",
    "ops.nn_ops": "pygrad.nn",
    "ops.parsing_ops": "pygrad",
    "ops.partitioned_variables": "pygrad",
    "ops.random_ops": "pygrad pygrad.random",
    "ops.rnn": "pygrad.rnn",
    "ops.rnn_cell": "pygrad.rnn.rnn_cell",
    "ops.rnn_cell_impl": "pygrad.rnn.rnn_cell",
    "ops.script_ops": "pygrad",
    "ops.sort_ops": "pygrad",
    "ops.sparse_ops": "pygrad pygrad.sparse",
    "ops.special_math_ops": "pygrad",
    "ops.standard_ops": "pygrad",
    "ops.state_ops": "pygrad",
    "ops.string_ops": "pygrad pygrad.strings",
    "ops.summary_ops": "pygrad.summary",
    "ops.tensor_array_ops": "pygrad",
    "ops.variable_scope": "pygrad pygrad.ops.variable_scope",
    "ops.variables": "pygrad",
    "lib.io.tf_record": "pygrad.python_io",
    "platform.app": "pygrad.platform.app",
    "platform.flags": "pygrad.platform.flags",
    "platform.gfile": "pygrad.platform.gfile",
    "platform.googletest": "pygrad.test",
    "platform.test": "pygrad.test",
    "platform.tf_logging": "pygrad.platform.tf_logging",
    "util.nest": "pygrad.nest",
}

# tensorflow.python.<package>.<rest>, for the packages that are one pygrad namespace each: that
# namespace, then pygrad's module of the same rest or last name when there is one
# (training.saver: pygrad.train, then pygrad.train.saver).
PYTHON_NAMESPACES = {"training": "pygrad.train", "layers": "pygrad.layers", "summary": "pygrad.summary",
                     "saved_model": "pygrad.saved_model", "estimator": "pygrad.estimator", "data": "pygrad.data",
                     "feature_column": "pygrad.feature_column"}

# TF 1's packages under tensorflow.python. Every other path there is a module, whose further names
# are its attributes, not modules; so is a capitalised name in a package (keras.layers.Dense is a class).
PYTHON_PACKAGES = frozenset((
    "", "autograph", "client", "compat", "compiler", "compiler.xla", "data", "data.experimental",
    "data.experimental.ops", "data.ops", "data.util", "debug", "debug.lib", "debug.wrappers", "distribute",
    "eager", "estimator", "estimator.canned", "estimator.export", "estimator.inputs", "estimator.inputs.queues",
    "feature_column", "framework", "grappler", "keras", "keras.engine", "keras.layers", "keras.optimizer_v2",
    "keras.utils", "layers", "lib", "lib.io", "module", "ops", "ops.distributions", "ops.linalg", "ops.losses",
    "ops.parallel_for", "ops.ragged", "ops.signal", "platform", "profiler", "saved_model", "summary",
    "summary.writer", "tools", "tpu", "training", "training.experimental", "training.tracking", "user_ops",
    "util"))
_KNOWN_PYTHON_PATHS = frozenset(PYTHON_MODULES) | PYTHON_PACKAGES
_MISSING = object()


def _is_pygrad_module(value):
    return isinstance(value, types.ModuleType) and (value.__name__ == "pygrad" or value.__name__.startswith("pygrad."))


class View(types.ModuleType):
    """A TensorFlow module answered by pygrad: names come from the source modules, first match
    first, and stay once found. In a view of a ``tensorflow.python`` path a module-valued name of a
    source is not one of TF's (its submodules are the table's paths); elsewhere it is answered by
    the view of that module under the TF name (``tf.contrib.slim`` is ``tensorflow.contrib.slim``)."""

    def __init__(self, name, sources, internal):
        super().__init__(name, sources[0].__doc__ if sources else f"{name}: pygrad has nothing here yet.")
        self.__pygrad_sources__ = tuple(sources)
        self.__pygrad_internal__ = internal

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            if attr == "__all__":
                return [n for n in self.__dir__() if not n.startswith("_")]
            if attr == "__version__":
                return TF_API_VERSION
            raise AttributeError(attr)
        if not attr.startswith("_"):  # a private name of pygrad's is never TF's private name
            for source in self.__pygrad_sources__:
                value = getattr(source, attr, _MISSING)
                if isinstance(value, types.ModuleType) and self.__pygrad_internal__:
                    continue
                if _is_pygrad_module(value):
                    return importlib.import_module(f"{self.__name__}.{attr}")
                if value is not _MISSING:
                    setattr(self, attr, value)
                    return value
            if self.__pygrad_internal__ and _python_path(f"{self.__name__}.{attr}") in _KNOWN_PYTHON_PATHS:
                return importlib.import_module(f"{self.__name__}.{attr}")
        raise AttributeError(unsupported(f"{self.__name__}.{attr}"), name=attr, obj=self)

    def __dir__(self):
        names = set(self.__dict__)
        for source in self.__pygrad_sources__:
            names.update(n for n in dir(source) if not n.startswith("_") and not (
                self.__pygrad_internal__ and isinstance(getattr(source, n, None), types.ModuleType)))
        return sorted(names)

    def __repr__(self):
        return f"<module {self.__name__!r}: pygrad's {', '.join(s.__name__ for s in self.__pygrad_sources__) or '-'}>"


def _python_path(fullname):
    """'tensorflow.python.ops.math_ops' -> 'ops.math_ops'; 'tensorflow.python' -> ''."""
    return fullname[len("tensorflow.python."):] if fullname != "tensorflow.python" else ""


def _optional_module(name):
    """pygrad's module of that name, or None when there is none."""
    try:
        return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            return None
        raise


def _python_sources(path):
    """The pygrad modules behind tensorflow.python.<path> (none for a path pygrad has nothing for)."""
    if path in PYTHON_MODULES:
        sources = [_pygrad_module(m) for m in PYTHON_MODULES[path].split()]
        if None in sources:  # a table entry naming nothing is a bug
            raise LookupError(f"tensorflow.python.{path}: the table names {PYTHON_MODULES[path]}, not all in pygrad")
        return sources
    package, _, rest = path.partition(".")
    if package not in PYTHON_NAMESPACES:
        return []
    base = PYTHON_NAMESPACES[package]
    sources = [_pygrad_module(base)]
    for name in dict.fromkeys((rest, rest.rpartition(".")[2])) if rest else ():
        extra = _pygrad_module(f"{base}.{name}")
        if extra is not None:
            return sources + [extra]
    return sources


def _pygrad_module(name):
    """pygrad's module of a dotted name (pygrad.contrib.slim, pygrad.logging, pygrad.sparse),
    along the package's attributes (pygrad.logging is pygrad.platform.tf_logging, pygrad.sparse a
    namespace of aliases) or else its package tree (pygrad.examples.tutorials); None when there is none."""
    value = pygrad
    path = name.partition(".")[2]
    for part in path.split(".") if path else ():
        value = getattr(value, part, None)
        if not _is_pygrad_module(value):
            return _optional_module(f"pygrad.{path}")
    return value


# TF's option messages (tensorflow/core/protobuf), which pygrad keeps in pygrad.platform.config: TF1
# programs import RewriterConfig from rewriter_config_pb2 to switch its rewrites.
CORE_PROTOBUF = ("tensorflow.core", "tensorflow.core.protobuf", "tensorflow.core.protobuf.config_pb2",
                 "tensorflow.core.protobuf.rewriter_config_pb2")


def view_for(fullname):
    """A new view for the TensorFlow module fullname; ImportError when it names nothing pygrad has."""
    if fullname == "tensorflow":
        return View(fullname, [pygrad], internal=False)
    if fullname in CORE_PROTOBUF:
        return View(fullname, [importlib.import_module("pygrad.platform.config")], internal=False)
    if fullname == "tensorflow.python" or fullname.startswith("tensorflow.python."):
        path = _python_path(fullname)
        parent, _, last = path.rpartition(".")
        if parent not in PYTHON_PACKAGES or last != last.lower():
            raise ImportError(unsupported(fullname), name=fullname)
        return View(fullname, _python_sources(path), internal=True)
    module = _pygrad_module("pygrad." + fullname[len("tensorflow."):])
    if module is None:
        raise ImportError(unsupported(fullname), name=fullname)
    return View(fullname, [module], internal=False)


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers `import tensorflow...` with views (all packages, so that `from m import name` of a
    name m lacks comes here and gets the message)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tensorflow" and not fullname.startswith("tensorflow."):
            return None
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        spec.loader_state = view_for(fullname)
        return spec

    def create_module(self, spec):
        return spec.loader_state

    def exec_module(self, module):
        pass


def installed():
    return any(isinstance(f, Finder) for f in sys.meta_path)


def alias_tensorflow():
    """From now on in this process `import tensorflow` (and tensorflow.compat.v1, tensorflow.contrib.*,
    tensorflow.python.*, tensorflow.examples.tutorials.mnist) gives pygrad; says so in one line on
    stderr. Calling it again does nothing. TensorFlow itself must not be imported yet."""
    if installed():
        return
    loaded = sorted(n for n in sys.modules if n == "tensorflow" or n.startswith("tensorflow."))
    if loaded:
        where = getattr(sys.modules.get(loaded[0]), "__file__", None) or loaded[0]
        raise RuntimeError(f"pygrad.alias_tensorflow(): TensorFlow itself is already imported in this process "
                           f"({where}); alias it before the first `import tensorflow` (in a notebook, restart "
                           f"the kernel and call pygrad.alias_tensorflow() first)")
    sys.meta_path.insert(0, Finder())
    print(NOTICE.format(version=pygrad.__version__), file=sys.stderr)
