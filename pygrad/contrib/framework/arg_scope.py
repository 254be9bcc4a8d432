"""arg_scope: default keyword arguments for the functions listed, for the calls made inside the
`with` block (TF-Slim's arg_scope.py).

A function takes part once decorated with @add_arg_scope. Inside `with arg_scope([f, g], k=v)`,
a call f(...) gets k=v unless the call passes k itself. Nested scopes add to the defaults of the
scopes around them (an inner value wins); `with arg_scope(sc)` re-enters a scope `sc` saved by
`with arg_scope(...) as sc`. The stack is the process's, not a graph's, as TF-Slim's.
"""
import contextlib
import functools

__all__ = ["add_arg_scope", "arg_scope", "arg_scope_func_key", "arg_scoped_arguments", "current_arg_scope",
           "has_arg_scope"]

_ARGSTACK = [{}]
_DECORATED_OPS = {}  # key -> the names of the function's arguments that have defaults


def current_arg_scope():
    """The innermost scope: {function key: {argument: default}}."""
    if not _ARGSTACK:
        _ARGSTACK.append({})
    return _ARGSTACK[-1]


def arg_scope_func_key(op):
    return getattr(op, "_key_op", str(op))


def _name_op(op):
    return f"{getattr(op, '__module__', None)}.{getattr(op, '__name__', op)}"


def _kwarg_names(func):
    """The positional-or-keyword parameters with defaults, in order. (TF-Slim slices co_varnames
    from its end, which also counts a function's local variables; this takes the slice it means.)"""
    n = len(func.__defaults__) if func.__defaults__ else 0
    argcount = func.__code__.co_argcount
    return func.__code__.co_varnames[argcount - n:argcount]


def has_arg_scope(func):
    """True when func was decorated with @add_arg_scope."""
    return arg_scope_func_key(func) in _DECORATED_OPS


def arg_scoped_arguments(func):
    """The names of the arguments an arg_scope can set for func (its arguments with defaults)."""
    if not has_arg_scope(func):
        # TF-Slim asserts here: the same exception type, raised so that it survives python -O.
        raise AssertionError(f"{_name_op(func)} is not decorated with @add_arg_scope")
    return _DECORATED_OPS[arg_scope_func_key(func)]


@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """Sets kwargs as defaults of every function of list_ops_or_scope (a list or tuple of decorated
    functions) inside the block, or re-enters a scope dict yielded by an earlier arg_scope."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by suppling a dictionary, kwargs must be empty.")
        current_scope = list_ops_or_scope.copy()
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)")
        current_scope = current_arg_scope().copy()
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{_name_op(op)} is not decorated with @add_arg_scope")
            key = arg_scope_func_key(op)
            merged = dict(current_scope.get(key, {}))
            merged.update(kwargs)
            current_scope[key] = merged
    _ARGSTACK.append(current_scope)
    try:
        yield current_scope
    finally:
        _ARGSTACK.pop()


def add_arg_scope(func):
    """func, made to take its defaults from the arg_scopes around each call."""
    key = arg_scope_func_key(func)

    @functools.wraps(func)
    def func_with_args(*args, **kwargs):
        scoped = current_arg_scope().get(key)
        if scoped is not None:
            kwargs = {**scoped, **kwargs}
        return func(*args, **kwargs)

    _DECORATED_OPS[key] = _kwarg_names(func)
    func_with_args._key_op = key
    return func_with_args
