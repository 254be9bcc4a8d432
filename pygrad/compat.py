"""The one table of names pygrad answers to besides its own: TF 0.x and early TF1 names still found
in tutorials, and the ``tf.math`` / ``tf.random`` / ``tf.initializers`` namespaces of late TF1. Each
alias names the pygrad function it is; ``pygrad/__init__.py`` binds them all, so an alias is never
a second implementation. This module is also ``tf.compat``: TF's text and number helpers below.
"""
import numbers
import os

import numpy as np

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """bytes of a str (encoded) or of bytes / bytearray (tf.compat.as_bytes)."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """str of bytes (decoded) or of a str (tf.compat.as_text, as_str)."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value, encoding="utf-8"):
    return as_str(value, encoding) if isinstance(value, bytes) else str(value)


def path_to_str(path):
    return os.fspath(path) if isinstance(path, os.PathLike) else path

# tf.<old name> -> tf.<name>
OLD_NAMES = {
    "arg_max": "argmax",
    "arg_min": "argmin",
    "mul": "multiply",
    "sub": "subtract",
    "neg": "negative",
    "select": "where",
    "pack": "stack",
    "unpack": "unstack",
    "float": "float32",
    "initialize_all_variables": "global_variables_initializer",
    "initialize_local_variables": "local_variables_initializer",
    "initialize_variables": "variables_initializer",
    "all_variables": "global_variables",
    "initialize_all_tables": "tables_initializer",
}

# tf.<namespace>.<name> -> tf.<name>; a list entry "nn.top_k" makes tf.<namespace>.top_k tf.nn.top_k
NAMESPACES = {
    "math": ["abs", "add", "add_n", "ceil", "cos", "divide", "equal", "exp", "floor", "floordiv", "floormod",
             "greater", "greater_equal", "less", "less_equal", "log", "log1p", "logical_and", "logical_not",
             "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "not_equal", "pow",
             "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "square", "squared_difference", "subtract",
             "tanh", "truediv", "argmax", "argmin", "reduce_all", "reduce_any", "reduce_max", "reduce_mean",
             "reduce_min", "reduce_prod", "reduce_sum", "mod",
             "nn.in_top_k", "nn.top_k"],
    "random": {"normal": "random_normal", "uniform": "random_uniform", "truncated_normal": "truncated_normal",
               "set_random_seed": "set_random_seed", "get_seed": "get_seed"},
    "initializers": {"zeros": "zeros_initializer", "ones": "ones_initializer", "constant": "constant_initializer",
                     "random_normal": "random_normal_initializer", "random_uniform": "random_uniform_initializer",
                     "truncated_normal": "truncated_normal_initializer",
                     "variance_scaling": "variance_scaling_initializer", "glorot_uniform": "glorot_uniform_initializer",
                     "glorot_normal": "glorot_normal_initializer",
                     "global_variables": "global_variables_initializer",
                     "local_variables": "local_variables_initializer", "variables": "variables_initializer",
                     "tables_initializer": "tables_initializer"},
    "io": {"write_graph": "train.write_graph"},
    "sparse": {"SparseTensor": "SparseTensor", "placeholder": "sparse_placeholder", "to_dense": "sparse_tensor_to_dense",
               "reorder": "sparse_reorder", "reshape": "sparse_reshape", "concat": "sparse_concat", "add": "sparse_add",
               "reduce_sum": "sparse_reduce_sum", "retain": "sparse_retain", "fill_empty_rows": "sparse_fill_empty_rows",
               "to_indicator": "sparse_to_indicator", "merge": "sparse_merge", "from_dense": "sparse_from_dense",
               "matmul": "sparse_tensor_dense_matmul", "sparse_dense_matmul": "sparse_tensor_dense_matmul",
               "segment_sum": "sparse_segment_sum", "segment_mean": "sparse_segment_mean",
               "segment_sqrt_n": "sparse_segment_sqrt_n", "cross": "sparse_cross",
               "cross_hashed": "sparse_cross_hashed"},
}


_MISSING = object()


def _lookup(namespace, target):
    """namespace's value for a name, or for a dotted name ("nn.top_k") its module's attribute;
    _MISSING if there is none."""
    head, _, rest = target.partition(".")
    value = namespace.get(head, _MISSING)
    return getattr(value, rest, _MISSING) if rest and value is not _MISSING else value


def bind(namespace, module_type):
    """Adds the aliases of the tables to namespace (the pygrad package's globals); returns the
    sub-namespaces it made, by name. A name missing from namespace is an error: a table entry
    that names nothing is a bug."""
    for old, new in OLD_NAMES.items():
        namespace[old] = namespace[new]
    made = {}
    for ns, names in NAMESPACES.items():
        module = namespace.get(ns) or module_type(f"pygrad.{ns}")
        for entry in names:
            target = names[entry] if isinstance(names, dict) else entry
            name = entry.rsplit(".", 1)[-1]
            value = _lookup(namespace, target)
            if value is not _MISSING:
                setattr(module, name, value)
            elif not hasattr(module, name):
                raise AttributeError(f"pygrad.compat: tf.{ns}.{name} names tf.{target}, which does not exist")
        made[ns] = module
    return made
