"""tf.variable_scope and tf.get_variable: named, shareable variables (TF1 semantics)."""
import contextlib
import functools

from pygrad import dtypes
from pygrad.graph import GraphKeys, TensorLike, get_default_graph
from pygrad.ops import init_ops
from pygrad.ops import partitioned_variables as pv
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.slice_ops import slice as slice_
from pygrad.ops.state_ops import Variable
from pygrad.shapes import as_shape


class _ReuseMode:
    def __repr__(self):
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode()


class VariableScope:
    """A variable scope: its name, reuse mode and defaults for get_variable."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None, dtype=dtypes.float32, name_scope="",
                 custom_getter=None, partitioner=None):
        self.name = name
        self.partitioner = partitioner
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

    def set_partitioner(self, partitioner):
        self.partitioner = partitioner

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
                          dtype or base.dtype, custom_getter=_wrap_custom_getter(custom_getter, base.custom_getter),
                          partitioner=partitioner if partitioner is not None else base.partitioner)
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
    else glorot_uniform for floats and zeros otherwise), returned again when the scope reuses. With
    a partitioner (the argument's, else the scope's) a variable of rank 1 or more is a
    PartitionedVariable of parts '<name>/part_<i>'.
    A custom getter (the argument's, wrapped by the scope's) is called as TF calls it:
    getter(getter=<the real getter>, name=<full name>, shape=..., dtype=..., ...)."""
    scope = get_variable_scope()
    full = scope.name + "/" + name if scope.name else name
    getter = scope.custom_getter if custom_getter is None else _wrap_custom_getter(custom_getter,
                                                                                   scope.custom_getter)
    kwargs = {"shape": shape, "dtype": dtype, "initializer": initializer, "regularizer": regularizer,
              "reuse": scope.reuse, "trainable": trainable, "collections": collections,
              "caching_device": caching_device,
              "partitioner": partitioner if partitioner is not None else scope.partitioner,
              "validate_shape": validate_shape,
              "use_resource": use_resource, "constraint": constraint, "synchronization": synchronization,
              "aggregation": aggregation}
    if getter is None:
        return _true_getter(full, **kwargs)
    return getter(getter=_true_getter, name=full, **kwargs)


def _true_getter(name, shape=None, dtype=None, initializer=None, regularizer=None, reuse=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                 constraint=None, synchronization=None, aggregation=None):
    """get_variable on a full name, with reuse the scope's mode (True, False/None, or AUTO_REUSE)."""
    store = _state(get_default_graph())[1]
    args = (shape, dtype, initializer, regularizer, reuse, trainable, collections)
    if partitioner is not None and not (shape is not None and as_shape(shape).ndims == 0):
        if not callable(partitioner):
            raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
        return _partitioned_variable(name, partitioner, *args)
    if reuse is True and isinstance(store.get(name), pv.PartitionedVariable):
        return _partitioned_variable(name, None, *args)
    if f"{name}/part_0" in store:
        raise ValueError(f"No partitioner was provided, but a partitioned version of the variable was found: "
                         f"{name}/part_0. Perhaps a variable of the same name was already created with partitioning?")
    return _single_variable(name, *args)


def _single_variable(full, shape, dtype, initializer, regularizer, reuse, trainable, collections,
                     partition_info=None):
    graph = get_default_graph()
    _, store, _ = _state(graph)
    scope = get_variable_scope()
    shape = as_shape(shape) if shape is not None else None
    if full in store:
        if not reuse:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
                             f"reuse=tf.AUTO_REUSE in VarScope?")
        var = store[full]
        if isinstance(var, pv.PartitionedVariable):
            raise ValueError(f"A partitioned variable {full} exists: get it again with reuse=True or its "
                             f"partitioner")
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
        if partition_info is None:
            init_fn = lambda: initializer(shape.as_list(), dtype=dt)  # noqa: E731
        else:
            init_fn = lambda: initializer(shape.as_list(), dtype=dt, partition_info=partition_info)  # noqa: E731
    with graph.name_scope(None), graph.control_dependencies(None):  # TF's init_scope
        graph.unique_name(full)  # mark the full name used, so later ops and scopes named like it get a suffix
        var = Variable(init_fn, trainable=True if trainable is None else trainable, collections=collections,
                       name=full + "/", dtype=dtype)
    store[full] = var
    if regularizer is not None or scope.regularizer is not None:
        with graph.name_scope(full + "/Regularizer/"):  # as TF: '<variable>/Regularizer/<regularizer's op>'
            loss = (regularizer or scope.regularizer)(var)
        if loss is not None:
            graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return var


def _call_partitioner(partitioner, shape, dtype):
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    partitions = partitioner(shape=shape, dtype=dtype)
    pv.slice_dim_and_count(partitions, shape)
    return list(partitions)


def _partitioned_variable(name, partitioner, shape, dtype, initializer, regularizer, reuse, trainable, collections):
    """The PartitionedVariable 'name' (TF's _VariableStore._get_partitioned_variable): its parts
    '<name>/part_<i>' made with the partitioner's split, or the one made before, on reuse."""
    graph = get_default_graph()
    _, store, _ = _state(graph)
    existing = store.get(name)
    if existing is not None and not isinstance(existing, pv.PartitionedVariable):
        raise ValueError(f"A partitioner was provided, but an unpartitioned version of the variable was found: {name}."
                         f"  Perhaps a variable of the same name was already created without partitioning?")
    shape = as_shape(shape)
    if isinstance(initializer, TensorLike):
        shape = shape.merge_with(initializer.shape)
    dt = dtypes.as_dtype(dtype) if dtype is not None else (
        initializer.dtype if isinstance(initializer, TensorLike) else get_variable_scope().dtype)
    partitions = _call_partitioner(partitioner, shape, dt) if not reuse or partitioner else None
    if existing is not None:
        if not reuse:
            raise ValueError(f"Partitioned variable with name {name} already exists. Did you mean to set reuse=True "
                             f"or reuse=tf.AUTO_REUSE in VarScope?")
        if not shape.is_compatible_with(existing.get_shape()):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape {shape} and found "
                             f"shape {existing.get_shape()}.")
        if dt != existing.dtype:
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype {dt.name} and found "
                             f"dtype {existing.dtype.name}.")
        if partitions is not None and existing._get_partitions() != partitions:
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified partitions {partitions} "
                             f"and found partitions {existing._get_partitions()}.")
        return existing
    if reuse is True:
        raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with tf.get_variable(). Did "
                         f"you mean to set reuse=False or reuse=tf.AUTO_REUSE in VarScope?")
    axis, count = pv.slice_dim_and_count(partitions, shape)
    full = shape.as_list()
    parts = []
    for i, (offset, part_shape) in enumerate(pv.iter_slices(full, count, axis)):
        part = f"{name}/part_{i}"
        init, init_shape = initializer, part_shape
        if initializer is not None and not callable(initializer):  # a value: this part's slice of it
            with graph.name_scope(None), graph.name_scope(part + "/PartitionedInitializer/"):
                init, init_shape = slice_(convert_to_tensor(initializer, dtype=dt), offset, part_shape), None
        var = _single_variable(part, init_shape, dt, init, regularizer, reuse, trainable, collections,
                               partition_info=pv.PartitionInfo(full, offset))
        var._save_slice_info = pv.SaveSliceInfo(name, full, offset, part_shape)
        parts.append(var)
    store[name] = pv.PartitionedVariable(name, shape, dt, parts, partitions)
    return store[name]


def create_partitioned_variables(shape, slicing, initializer, dtype=dtypes.float32, trainable=True, collections=None,
                                 name=None, reuse=None):
    """The parts of a new partitioned variable split as slicing says (TF1's deprecated form of
    get_variable with a partitioner): '<name>/part_<i>', name defaulting to 'PartitionedVariable'."""
    if len(shape) != len(slicing):
        raise ValueError(f"The 'shape' and 'slicing' of a partitioned Variable must have the length: shape: "
                         f"{shape}, slicing: {slicing}")
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    with variable_scope(name, "PartitionedVariable", reuse=reuse) as scope:
        return list(_partitioned_variable(scope.name, lambda **unused: list(slicing), shape, dtype, initializer, None,
                                          scope.reuse, trainable, collections))


def variable_store(graph=None):
    """{full name: variable} of the variables get_variable made in graph (TF's variable store)."""
    return _state(graph or get_default_graph())[1]
