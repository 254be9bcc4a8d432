"""The layers of the pygrad package: every import, at module level or inside a function, points to
the same layer or a lower one, and no modules import each other in a loop. docs/design.md shows
the same layers."""
import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "pygrad"

# Lowest first. A module may import modules of its own layer or of the layers before it.
LAYERS = [
    ("core", ["pygrad._C", "pygrad.dtypes", "pygrad.shapes", "pygrad.errors", "pygrad.proto", "pygrad.nest",
              "pygrad.messages", "pygrad.kernels", "pygrad.tf_protos"]),
    ("graph", ["pygrad.device", "pygrad.graph", "pygrad.graph_def", "pygrad.graph_def_compose",
               "pygrad.graph_def_control_flow"]),
    ("registry", ["pygrad.registry", "pygrad.op_identity"]),
    ("ops", ["pygrad.ops", "pygrad.ops.*"]),
    ("gradients", ["pygrad.gradients", "pygrad.control_flow_grad"]),
    ("lowering", ["pygrad.lowering", "pygrad.host", "pygrad.session_store", "pygrad.passes", "pygrad.fusion",
                  "pygrad.fuse_elementwise", "pygrad.dead_steps", "pygrad.bfloat16", "pygrad.fold_constants",
                  "pygrad.plan_emit", "pygrad.fuse_checks", "pygrad.fuse_pool_grads",
                  "pygrad.slice_transposes"]),
    ("session", ["pygrad.session", "pygrad.plan_cache", "pygrad._run", "pygrad.step_stats"]),
    ("api", ["pygrad.train", "pygrad.train.*", "pygrad.mixed_precision", "pygrad.mixed_precision.*",
             "pygrad.nn", "pygrad.platform", "pygrad.platform.*", "pygrad.layers", "pygrad.layers.*",
             "pygrad.losses", "pygrad.metrics", "pygrad.metrics.*", "pygrad.estimator", "pygrad.estimator.*",
             "pygrad.summary", "pygrad.summary.*", "pygrad.data", "pygrad.data.*", "pygrad.compat",
             "pygrad.contrib", "pygrad.contrib.*", "pygrad.rnn", "pygrad.rnn.*", "pygrad.linalg", "pygrad.math",
             "pygrad.strings", "pygrad.lookup", "pygrad.image",
             "pygrad.random", "pygrad.test", "pygrad.importer", "pygrad.import_ops", "pygrad.import_control_flow",
             "pygrad.examples",
             "pygrad.examples.*", "pygrad.meta_graph", "pygrad.graph_util", "pygrad.saved_model",
             "pygrad.saved_model.*", "pygrad.feature_column", "pygrad.feature_column.*", "pygrad.client",
             "pygrad.client.*", "pygrad.profiler", "pygrad.profiler.*"]),
    ("surface", ["pygrad"]),
    # Above the surface: `import tensorflow` as pygrad (the import hook maps onto the package as a whole) and
    # the parameter server, which runs user code written on `import pygrad as tf`.
    ("alias", ["pygrad.tf_alias", "pygrad.__main__"]),
    ("distributed", ["pygrad.distributed", "pygrad.distributed.*"]),
]


def _modules():
    """{dotted module name: path} of every .py and Cython .pyx file of the package."""
    out = {}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyx")]:
        parts = ("pygrad",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def layer_of(module):
    for i, (_, patterns) in enumerate(LAYERS):
        for p in patterns:
            if module == p or p.endswith(".*") and module.startswith(p[:-1]):
                return i
    return None


def _imported(module, path, node):
    """The package modules an import statement of module names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = base[:len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES or a.name == "_C" else prefix
                 for a in node.names]
    return {n for n in names if n == "pygrad" or n.startswith("pygrad.")}


def _python_imports(path):
    """The import statements of a module: of a .pyx file, its Python import lines (a cimport
    brings in C declarations only), each parsed alone at its line number."""
    text = path.read_text()
    if path.suffix == ".py":
        return ast.walk(ast.parse(text, str(path)))
    statement = re.compile(r"\s*(import\s+[\w.]+(\s+as\s+\w+)?|from\s+[\w.]+\s+import\s+[\w., ]+)\s*(#.*)?$")
    nodes = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if statement.fullmatch(line):
            node = ast.parse(line.strip()).body[0]
            node.lineno = lineno
            nodes.append(node)
    return nodes


def imports():
    """[(importing module, imported module, line)] over the whole package."""
    edges = []
    for module, path in MODULES.items():
        for node in _python_imports(path):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges += [(module, target, node.lineno) for target in _imported(module, path, node)
                          if target != module]
    return edges


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_imports_point_down():
    upward = [f"{a} (layer {LAYERS[layer_of(a)][0]}) imports {b} (layer {LAYERS[layer_of(b)][0]}) at line {line}"
              for a, b, line in imports() if layer_of(b) is not None and layer_of(b) > layer_of(a)]
    assert upward == []


def test_no_import_loop():
    graph = {}
    for a, b, _ in imports():
        if a != "pygrad":  # the package face re-exports; its parts never import it
            graph.setdefault(a, set()).add(b)

    def reaches(start, goal):
        seen, stack = set(), [start]
        while stack:
            m = stack.pop()
            for n in graph.get(m, ()):
                if n == goal:
                    return True
                if n not in seen:
                    seen.add(n)
                    stack.append(n)
        return False

    assert sorted(m for m in graph if reaches(m, m)) == []


@pytest.mark.parametrize("source, expected", [
    ("from pygrad.session import Session\n", "pygrad.session"),
    ("def f():\n    from pygrad import lowering\n", "pygrad.lowering"),
    ("from ..session import Session\n", "pygrad.session"),
])
def test_an_upward_import_is_found(tmp_path, source, expected):
    """The walk sees module-level, function-local and relative imports (checked on a made-up
    module of the ops layer)."""
    path = PACKAGE / "ops" / "made_up.py"
    tree = ast.parse(source)
    found = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
             for t in _imported("pygrad.ops.made_up", path, node)}
    assert expected in found
    assert layer_of(expected) > layer_of("pygrad.ops.made_up")


def test_a_cython_modules_python_imports_are_found(tmp_path):
    """In a .pyx file the walk reads the Python import lines; cimports bring in C declarations only."""
    path = tmp_path / "made_up.pyx"
    path.write_text("# cython: language_level=3\ncimport numpy as cnp\nfrom libc.math cimport fabs\n"
                    "import pygrad.session as s  # a comment\nfrom pygrad.lowering import compile_run\n"
                    "cdef int f(int x):\n    return x\n")
    found = {(t, node.lineno) for node in _python_imports(path) for t in _imported("pygrad.made_up", path, node)}
    assert found == {("pygrad.session", 4), ("pygrad.lowering", 5)}
