"""tf.variable_scope and tf.get_variable: named, shareable variables (TF1 semantics)."""
import contextlib
import functools

from pygrad import dtypes
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import init_ops
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.state_ops import Variable
from pygrad.shapes import as_shape


class _ReuseMode:
    def __repr__(self):
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode()


class VariableScope:
    """A variable scope: its name, reuse mode and defaults for get_variable."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None, dtype=dtypes.float32, name_scope="",
                 custom_getter=None):
        self.name = name
        self.custom_getter = custom_getter
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtypes.as_dtype(dtype)
        self.original_name_scope = name_scope

    def reuse_variables(self):
        self.reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer

    def set_custom_getter(self, custom_getter):
        self.custom_getter = custom_getter

    def get_variable(self, name, *args, **kwargs):
        return get_variable(name, *args, **kwargs)


def _state(graph):
    """(scope stack, variable store, open counts) of a graph, created on first use. The open
    counts are TF's variable_scopes_count: how often each full scope name has been entered, which
    makes default names unique."""
    if not hasattr(graph, "_var_scope_state"):
        graph._var_scope_state = ([VariableScope(False)], {}, {})
    return graph._var_scope_state


def get_variable_scope():
    return _state(get_default_graph())[0][-1]


def _wrap_custom_getter(custom_getter, old_getter):
    """custom_getter over old_getter, as TF nests them: the inner scope's getter receives, as its
    getter, the outer scope's getter bound to the real one."""
    if custom_getter is not None and not callable(custom_getter):
        raise ValueError(f"custom_getter must be callable, got {custom_getter!r}")
    if old_getter is None or custom_getter is None:
        return custom_getter or old_getter

    def wrapped(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)

    return wrapped


def _unique_scope_name(parent_name, default_name, counts):
    """default_name, or default_name_1, _2, ...: the first whose full name was never entered."""
    prefix = parent_name + "/" if parent_name else ""
    short, i = default_name, 0
    while counts.get(prefix + short, 0) > 0:
        i += 1
        short = f"{default_name}_{i}"
    return short


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None, regularizer=None,
                   caching_device=None, partitioner=None, custom_getter=None, reuse=None, dtype=None,
                   use_resource=None, constraint=None, auxiliary_name_scope=True):
    """Opens a variable scope and, unless auxiliary_name_scope=False, a new name scope, as TF1:

    * a string extends the current scope ("foo" in "outer" is "outer/foo") and inherits its
      reuse, initializer, regularizer and dtype; entering it again re-opens the same variable
      scope, while the op name scope gets a suffix ("foo_1/");
    * a captured VariableScope jumps to that scope: its own name, reuse and defaults (not the
      current scope's), and a fresh name scope named after its last component;
    * None with default_name makes a scope never entered before (default_name, default_name_1, ...).

    reuse=True or AUTO_REUSE lets get_variable return existing variables and is inherited by
    nested scopes; reuse=False (like None) inherits. A custom_getter(getter, name, **kwargs) sees
    every get_variable of the scope and the scopes inside it (nested getters wrap the outer ones)."""
    graph = get_default_graph()
    stack, _, counts = _state(graph)
    parent = stack[-1]
    if name_or_scope is None and default_name is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    captured = isinstance(name_or_scope, VariableScope)
    if captured:
        full, base = name_or_scope.name, name_or_scope
        reuse = reuse or name_or_scope.reuse
        ns_name = full.split("/")[-1]
    else:
        if name_or_scope is None:
            if reuse:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            short, ns_name = _unique_scope_name(parent.name, default_name, counts), default_name
        else:
            short = ns_name = name_or_scope
        full, base = (parent.name + "/" + short if parent.name else short), parent
        reuse = reuse or parent.reuse
    scope = VariableScope(reuse, full, initializer or base.initializer, regularizer or base.regularizer,
                          dtype or base.dtype, custom_getter=_wrap_custom_getter(custom_getter, base.custom_getter))
    if not auxiliary_name_scope:  # stay in the current name scope
        current = graph.get_name_scope()
        ns_name = current + "/" if current else None
    counts[full] = counts.get(full, 0) + 1
    saved_counts = dict(counts)
    with graph.name_scope(ns_name) as ns:
        scope.original_name_scope = name_or_scope.original_name_scope if captured else ns
        stack.append(scope)
        try:
            yield scope
        finally:
            stack.pop()
            # As TF: leaving a scope forgets the default names used inside it (a captured scope
            # restores the counts it found).
            if captured:
                counts.clear()
                counts.update(saved_counts)
            else:
                for key in [k for k in counts if k.startswith(full + "/")]:
                    counts[key] = 0


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None, collections=None,
                 caching_device=None, partitioner=None, validate_shape=True, use_resource=None, custom_getter=None,
                 constraint=None, synchronization=None, aggregation=None):
    """The variable '<scope>/name': created on first call (the initializer defaults to the scope's,
    else glorot_uniform for floats and zeros otherwise), returned again when the scope reuses.
    A custom getter (the argument's, wrapped by the scope's) is called as TF calls it:
    getter(getter=<the real getter>, name=<full name>, shape=..., dtype=..., ...)."""
    scope = get_variable_scope()
    full = scope.name + "/" + name if scope.name else name
    getter = scope.custom_getter if custom_getter is None else _wrap_custom_getter(custom_getter,
                                                                                   scope.custom_getter)
    kwargs = {"shape": shape, "dtype": dtype, "initializer": initializer, "regularizer": regularizer,
              "reuse": scope.reuse, "trainable": trainable, "collections": collections,
              "caching_device": caching_device, "partitioner": partitioner, "validate_shape": validate_shape,
              "use_resource": use_resource, "constraint": constraint, "synchronization": synchronization,
              "aggregation": aggregation}
    if getter is None:
        return _true_getter(full, **kwargs)
    return getter(getter=_true_getter, name=full, **kwargs)


def _true_getter(name, shape=None, dtype=None, initializer=None, regularizer=None, reuse=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                 constraint=None, synchronization=None, aggregation=None):
    """get_variable on a full name, with reuse the scope's mode (True, False/None, or AUTO_REUSE)."""
    graph = get_default_graph()
    _, store, _ = _state(graph)
    scope = get_variable_scope()
    full = name
    shape = as_shape(shape) if shape is not None else None
    if full in store:
        if not reuse:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
                             f"reuse=tf.AUTO_REUSE in VarScope?")
        var = store[full]
        if shape is not None and not shape.is_compatible_with(var.shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape {shape} and found shape "
                             f"{var.shape}.")
        if dtype is not None and dtypes.as_dtype(dtype) != var.dtype:
            raise ValueError(f"Trying to share variable {full}, but specified dtype {dtypes.as_dtype(dtype).name} "
                             f"and found dtype {var.dtype.name}.")
        return var
    if reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with tf.get_variable(). Did you mean "
                         f"to set reuse=tf.AUTO_REUSE in VarScope?")
    initializer = initializer if initializer is not None else scope.initializer
    if initializer is not None and not callable(initializer):
        initial = convert_to_tensor(initializer, dtype=dtype)  # a tensor or a value gives its own shape
        if shape is not None and not shape.is_compatible_with(initial.shape):
            raise ValueError(f"get_variable {full}: initializer shape {initial.shape} does not match shape {shape}")
        init_fn = lambda: initial  # noqa: E731
    else:
        if shape is None or not shape.is_fully_defined():
            raise ValueError(f"Shape of a new variable ({full}) must be fully defined, but instead was {shape}.")
        dt = dtypes.as_dtype(dtype) if dtype is not None else scope.dtype
        if initializer is None:
            initializer = init_ops.glorot_uniform_initializer() if dt.is_floating else init_ops.zeros_initializer()
        init_fn = lambda: initializer(shape.as_list(), dtype=dt)  # noqa: E731
    graph.unique_name(full)  # mark the name used, so later ops named like it get a suffix
    with graph.name_scope(None), graph.control_dependencies(None):  # TF's init_scope
        var = Variable(init_fn, trainable=True if trainable is None else trainable, collections=collections,
                       name=full + "/", dtype=dtype)
    store[full] = var
    if regularizer is not None or scope.regularizer is not None:
        with graph.name_scope(full + "/Regularizer/"):  # as TF: '<variable>/Regularizer/<regularizer's op>'
            loss = (regularizer or scope.regularizer)(var)
        if loss is not None:
            graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return var


def variable_store(graph=None):
    """{full name: variable} of the variables get_variable made in graph (TF's variable store)."""
    return _state(graph or get_default_graph())[1]
