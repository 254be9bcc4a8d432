"""TF-Slim's variable helpers (tf.contrib.framework's variables.py): model and local variables,
lookups by scope, suffix and name, and assignment from values or a checkpoint."""
import contextlib
import functools
import re

import numpy as np

from pygrad import dtypes
from pygrad.contrib.framework.arg_scope import add_arg_scope
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import state_ops
from pygrad.ops.array_ops import placeholder
from pygrad.ops.variable_scope import VariableScope, get_variable, get_variable_scope
from pygrad.train.checkpoint_utils import NewCheckpointReader
from pygrad.train.saver import Saver
from pygrad.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)

__all__ = ["add_model_variable", "assert_or_get_global_step", "assign_from_checkpoint", "assign_from_checkpoint_fn",
           "assign_from_values", "assign_from_values_fn", "create_global_step", "filter_variables",
           "get_global_step", "get_local_variables", "get_model_variables", "get_or_create_global_step",
           "get_trainable_variables", "get_unique_variable", "get_variable_full_name", "get_variables",
           "get_variables_by_name", "get_variables_by_suffix", "get_variables_to_restore", "global_variable",
           "local_variable", "model_variable", "variable"]


def assert_or_get_global_step(graph=None, global_step_tensor=None):
    """global_step_tensor if given (TypeError unless it is a scalar integer Variable or Tensor),
    else the graph's global step (None when it has none)."""
    if global_step_tensor is None:
        return get_global_step(graph)
    assert_global_step(global_step_tensor)
    return global_step_tensor


def local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A variable in tf.GraphKeys.LOCAL_VARIABLES only, not trainable."""
    return state_ops.Variable(initial_value, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                              validate_shape=validate_shape, name=name)


def global_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A variable in tf.GraphKeys.GLOBAL_VARIABLES, not trainable."""
    return state_ops.Variable(initial_value, trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES],
                              validate_shape=validate_shape, name=name)


@add_arg_scope
def variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True, collections=None,
             caching_device=None, device=None, partitioner=None, custom_getter=None, use_resource=None,
             synchronization=None, aggregation=None):
    """tf.get_variable with collections (default: GLOBAL_VARIABLES) and an optional device; a
    custom_getter is called with the scope's reuse, as TF-Slim calls it."""
    collections = list(dict.fromkeys(collections if collections is not None else [GraphKeys.GLOBAL_VARIABLES]))
    getter = get_variable
    if custom_getter is not None:
        getter = functools.partial(custom_getter, reuse=get_variable_scope().reuse)
    with get_default_graph().device(device) if device else contextlib.nullcontext():
        return getter(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                      trainable=trainable, collections=collections, caching_device=caching_device,
                      partitioner=partitioner, use_resource=use_resource, synchronization=synchronization,
                      aggregation=aggregation)


@add_arg_scope
def model_variable(name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None, trainable=True,
                   collections=None, caching_device=None, device=None, partitioner=None, custom_getter=None,
                   use_resource=None, synchronization=None, aggregation=None):
    """variable() in GLOBAL_VARIABLES and MODEL_VARIABLES as well as collections."""
    collections = list(collections or []) + [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                    trainable=trainable, collections=collections, caching_device=caching_device, device=device,
                    partitioner=partitioner, custom_getter=custom_getter, use_resource=use_resource,
                    synchronization=synchronization, aggregation=aggregation)


def add_model_variable(var):
    """Adds var to tf.GraphKeys.MODEL_VARIABLES (once)."""
    graph = get_default_graph()
    if var not in graph.get_collection(GraphKeys.MODEL_VARIABLES):
        graph.add_to_collection(GraphKeys.MODEL_VARIABLES, var)


def get_variables(scope=None, suffix=None, collection=GraphKeys.GLOBAL_VARIABLES):
    """The variables of collection whose names match scope (a regex from the start, or a
    VariableScope) and end with suffix (followed by the ':0')."""
    if isinstance(scope, VariableScope):
        scope = scope.name
    if suffix is not None:
        if ":" not in suffix:
            suffix += ":"
        scope = (scope or "") + ".*" + suffix
    return get_default_graph().get_collection(collection, scope)


def get_model_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_local_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_trainable_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def get_variables_to_restore(include=None, exclude=None):
    """The global variables under the scopes of include (default: all), less those under exclude."""
    if include is None:
        included = get_variables()
    else:
        if not isinstance(include, (list, tuple)):
            raise TypeError("include is provided but is not a list or a tuple.")
        included = [v for scope in include for v in get_variables(scope)]
    excluded = set()
    if exclude is not None:
        if not isinstance(exclude, (list, tuple)):
            raise TypeError("exclude is provided but is not a list or a tuple.")
        for scope in exclude:
            excluded |= set(get_variables(scope))
    return [v for v in included if v not in excluded]


def get_variables_by_suffix(suffix, scope=None):
    return get_variables(scope=scope, suffix=suffix)


def get_variables_by_name(given_name, scope=None):
    """The variables whose last name component is given_name."""
    return get_variables(scope=scope, suffix="/" + given_name + ":|^" + given_name + ":")


def get_unique_variable(var_op_name):
    """The variable whose op name is var_op_name; ValueError if there is none."""
    candidates = get_variables(scope=var_op_name)
    if not candidates:
        raise ValueError(f"Couldn't find variable {var_op_name}")
    for candidate in candidates:
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError(f"Variable {var_op_name} does not uniquely identify a variable")


def get_variable_full_name(var):
    """The name a checkpoint knows var by (its op name; pygrad has no partitioned variables)."""
    return var.op.name


def _find_variable(var_name):
    found = get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, var_name)
    if not found:
        raise ValueError(f"Variable {var_name} wasn't found")
    if len(found) == 1:
        return found[0]
    for v in found:  # get_collection matches a prefix: take the exact name
        if v.op.name == var_name:
            return v
    raise ValueError(f"Variable {var_name} doesn't uniquely identify a variable")


def _assign_from_placeholder(var):
    value = placeholder(var.dtype.base_dtype, var.shape, name="placeholder/" + var.op.name)
    return value, var.assign(value)


def assign_from_values(var_names_to_values):
    """(op, feed_dict) assigning {variable name: value}: the values are fed, not stored in the graph."""
    feed_dict, assign_ops = {}, []
    for var_name, value in var_names_to_values.items():
        var = _find_variable(var_name)
        ph, op = _assign_from_placeholder(var)
        assign_ops.append(op)
        feed_dict[ph] = np.asarray(value).reshape(var.shape.as_list())
    return state_ops.group(*assign_ops), feed_dict


def assign_from_values_fn(var_names_to_values):
    """A function of a session that runs assign_from_values' op."""
    assign_op, feed_dict = assign_from_values(var_names_to_values)
    return lambda session: session.run(assign_op, feed_dict)


def _grouped(var_list):
    """{checkpoint name: [variables]} of a list of variables or a {name: variable(s)} dict."""
    if isinstance(var_list, (list, tuple)):
        grouped = {}
        for var in var_list:
            grouped.setdefault(get_variable_full_name(var), []).append(var)
        return grouped
    return {name: list(v) if isinstance(v, (list, tuple)) else [v] for name, v in var_list.items()}


def assign_from_checkpoint(model_path, var_list, ignore_missing_vars=False):
    """(op, feed_dict) restoring var_list (variables, or {checkpoint name: variable}) from the
    checkpoint at model_path; a name missing from it is a ValueError unless ignore_missing_vars."""
    reader = NewCheckpointReader(model_path)
    feed_dict, assign_ops = {}, []
    for ckpt_name, variables in _grouped(var_list).items():
        if not reader.has_tensor(ckpt_name):
            if ignore_missing_vars:
                continue
            raise ValueError(f"Checkpoint is missing variable [{ckpt_name}]")
        value = reader.get_tensor(ckpt_name)
        for var in variables:
            ph, op = _assign_from_placeholder(var)
            assign_ops.append(op)
            if tuple(var.shape.as_list()) != value.shape:
                raise ValueError(f"Total size of new array must be unchanged for {ckpt_name} lh_shape: "
                                 f"[{value.shape}], rh_shape: [{var.shape}]")
            feed_dict[ph] = value
    return state_ops.group(*assign_ops), feed_dict


def assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False, reshape_variables=False):
    """A function of a session restoring var_list from model_path with a Saver; None (after
    leaving out the missing names) when ignore_missing_vars leaves nothing to restore."""
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        reader = NewCheckpointReader(model_path)
        var_dict = var_list if isinstance(var_list, dict) else {v.op.name: v for v in var_list}
        var_list = {name: v for name, v in var_dict.items() if reader.has_tensor(name)}
        if not var_list:
            return None
    saver = Saver(var_list, reshape=reshape_variables)
    return lambda session: saver.restore(session, model_path)


def filter_variables(var_list, include_patterns=None, exclude_patterns=None, reg_search=True):
    """The variables whose names match any of include_patterns (all if None) and none of
    exclude_patterns; re.search, or re.match when reg_search is False."""
    find = re.search if reg_search else re.match
    kept = list(var_list) if include_patterns is None else \
        [v for v in var_list if any(find(p, v.name) for p in include_patterns)]
    if exclude_patterns is None:
        return kept
    return [v for v in kept if not any(find(p, v.name) for p in exclude_patterns)]
