"""tf.py_func / tf.numpy_function: a Python function of NumPy arrays as an op of the graph.

The op's outputs are computed in Python between two plans of the run (host stage BETWEEN; see
host.py): the run computes the inputs, calls the function (the op's ``func`` attribute), and feeds
what it returns to the rest. Its outputs' shapes are unknown until it runs, as in TF (set_shape
states them). TF's rules: each returned value must have its declared dtype exactly, and an
exception in the function becomes the tf.errors class TF maps it to.
"""
import numpy as np

from pygrad import dtypes, errors
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.registry import BETWEEN, OpDef, Spec
from pygrad.shapes import TensorShape

PyFunc = OpDef("PyFunc", host=BETWEEN, differentiable=False)


@PyFunc.shape
def _(*inputs, func, Tout):
    return [Spec(d, TensorShape(None)) for d in Tout]


# TF's mapping of a Python exception raised by the function to an error class (py_func.cc).
_EXCEPTIONS = [((ValueError, TypeError), errors.InvalidArgumentError), (StopIteration, errors.OutOfRangeError),
               (MemoryError, errors.ResourceExhaustedError), (NotImplementedError, errors.UnimplementedError)]


def error_class(exception):
    """The tf.errors class TF raises for an exception of a Python function it called (UnknownError if none)."""
    return next((c for kinds, c in _EXCEPTIONS if isinstance(exception, kinds)), errors.UnknownError)


@PyFunc.host
def _(ctx, op, values):
    func, tout = op.attrs["func"], op.attrs["Tout"]
    try:
        result = func(*[np.asarray(v) if not isinstance(v, np.ndarray) else v for v in values])
    except Exception as e:  # noqa: BLE001 (every exception becomes a tf.errors class, as in TF)
        raise error_class(e)(None, op, op.error(f"{type(e).__name__}: {e}")) from e
    if not isinstance(result, (list, tuple)):
        result = [] if result is None and not tout else [result]
    if len(result) != len(tout):
        raise errors.InvalidArgumentError(None, op, op.error(
            f"the function returned {len(result)} values, Tout lists {len(tout)}"))
    out = []
    for i, (v, d) in enumerate(zip(result, tout)):
        arr = dtypes.as_bytes_array(v) if d == dtypes.string else np.asarray(v)
        if d != dtypes.string and arr.dtype != d.np:
            raise errors.InvalidArgumentError(None, op, op.error(
                f"{i}-th value returned by the function is {arr.dtype}, but expects {d.name}"))
        out.append(arr if arr.flags.c_contiguous and arr.flags.aligned else arr.copy())
    return out


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 (TF's argument name)
    """Wraps func(*arrays) -> array or list of arrays as an op; Tout is a dtype or a list of them."""
    single = not isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in (inp or [])]
    outs = PyFunc(*inputs, func=func, Tout=tout, name=name or "PyFunc")
    if not tout or single:
        return outs
    return [outs] if len(tout) == 1 else list(outs)


numpy_function = py_func
