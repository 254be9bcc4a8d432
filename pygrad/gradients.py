"""Symbolic gradients with TensorFlow's semantics (tf.gradients).

The driver does, once, what no gradient rule should: summing the gradients that reach a tensor
from several consumers, reducing broadcast gradients back to the input's shape, skipping
non-differentiable ops and integer tensors, honouring stop_gradients, and giving None (or
zeros) for unconnected xs.
"""
import enum

import numpy as np

from pygrad import dtypes
from pygrad.graph import Tensor, get_default_graph, reachable, unwrap
from pygrad.ops import array_ops, manip_ops, math_ops, reduction_ops
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.registry import NOT_DIFFERENTIABLE


class UnconnectedGradients(enum.Enum):
    NONE = "none"
    ZERO = "zero"


class AggregationMethod:
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


def _as_tensors(values, what):
    values = values if isinstance(values, (list, tuple)) else [values]
    out = []
    for v in values:
        v = unwrap(v)
        if not isinstance(v, Tensor):
            raise TypeError(f"gradients: {what} must be Tensors or Variables, got {type(v).__name__}")
        out.append(v)
    return out


def _backprops(t):
    return t.dtype.is_floating


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
    """The symbolic partial derivatives of sum(ys) with respect to each of xs.

    A non-scalar y is summed (its grad_y defaults to ones). Returns one tensor per x, or None where
    x does not reach ys (zeros with unconnected_gradients='zero'). Gradients do not flow through
    the ops of stop_gradients, nor through tf.stop_gradient.
    """
    ys = _as_tensors(ys, "ys")
    xs = _as_tensors(xs, "xs")
    stops = {t.op for t in _as_tensors(stop_gradients, "stop_gradients")} if stop_gradients is not None else set()
    unconnected = UnconnectedGradients(unconnected_gradients if not isinstance(unconnected_gradients, str)
                                       else unconnected_gradients.lower())
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    grad_ys = grad_ys if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"gradients: passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    graph = ys[0].graph if ys else get_default_graph()

    # Built in the graph of ys even when another graph is the default, as TF's name_scope(values=...).
    with graph.as_default(), graph.name_scope(name or "gradients"):
        between = _ops_between(graph, xs, ys)
        grads = {}
        for y, gy in zip(ys, grad_ys):
            if gy is None:
                if not _backprops(y):
                    raise TypeError(y.op.error(f"gradients: ys must be floating point, {y.name} has dtype "
                                               f"{y.dtype.name}"))
                gy = (array_ops.constant(np.ones(y.shape.as_list(), y.dtype.np), name="grad_ys")
                      if y.shape.is_fully_defined() else array_ops.ones_like(y, name="grad_ys"))
            else:
                gy = array_ops.convert_to_tensor(gy, dtype=y.dtype)
                if not gy.shape.is_compatible_with(y.shape):
                    raise ValueError(f"gradients: grad_ys for {y.name} has shape {gy.shape}, expected {y.shape}")
            grads.setdefault(y, []).append(gy)

        between_tensors = {t for op in between for t in op.outputs}
        for op in sorted(between, key=lambda o: o._id, reverse=True):
            out_grads = [_dense(_sum(grads.get(t))) for t in op.outputs]
            if all(g is None for g in out_grads):
                continue
            if op in stops or op.opdef.grad_fn is NOT_DIFFERENTIABLE:
                continue
            if not any(t in between_tensors for t in op.inputs):
                continue  # an x's own op: nothing to propagate to
            with graph.name_scope(op.name + "_grad"):
                in_grads = op.opdef.grad_fn(op, *out_grads)
                if len(in_grads) != len(op.inputs):
                    raise RuntimeError(f"gradient of {op.type} returned {len(in_grads)} values for "
                                       f"{len(op.inputs)} inputs")
                for t, g in zip(op.inputs, in_grads):
                    if g is None or not _backprops(t) or t not in between_tensors:
                        continue
                    if op.opdef.broadcasting:
                        g = reduction_ops.sum_to_shape(g, t)
                    grads.setdefault(t, []).append(g)

        result = []
        for x in xs:
            g = _sum(grads.get(x))
            if g is None and unconnected is UnconnectedGradients.ZERO:
                g = array_ops.zeros_like(x)
            result.append(g)
    return result


def _sum(gs):
    """The sum of a tensor's gradients. IndexedSlices stay sparse when all are (their rows
    concatenated, as TF's _AggregateIndexedSlicesGradients); with dense ones, the sum is dense."""
    if not gs:
        return None
    if len(gs) == 1:
        return gs[0]
    if all(isinstance(g, IndexedSlices) for g in gs):
        indices = [g.indices for g in gs]
        if len({i.dtype for i in indices}) > 1:  # int32 and int64 rows: all int64, as TF's _as_indexed_slices_list
            indices = [array_ops.cast(i, dtypes.int64) for i in indices]
        return IndexedSlices(manip_ops.concat([g.values for g in gs], 0), manip_ops.concat(indices, 0),
                             gs[0].dense_shape, gs[0]._densify)
    return math_ops.add_n([unwrap(g) for g in gs])


def _dense(g):
    """What a gradient rule receives: IndexedSlices become their dense tensor."""
    return unwrap(g) if isinstance(g, IndexedSlices) else g


def _ops_between(graph, xs, ys):
    """Ops on a path from an x to a y: reachable forward from xs and backward from ys."""
    to_y = reachable((y.op for y in ys), lambda op: (t.op for t in op.inputs))
    consumers = {}
    for op in to_y:
        for t in op.inputs:
            consumers.setdefault(t, []).append(op)
    return reachable((x.op for x in xs if x.op in to_y),
                     lambda op: (c for t in op.outputs for c in consumers.get(t, ())))



def decomposed_grad(compose):
    """A gradient rule for a fused op: the gradient of compose(*inputs, **attrs), the same math
    written with primitive ops, so the fused forward needs no hand-written backward."""

    def grad(op, *dys):
        outs = compose(*op.inputs, **op.attrs)
        pairs = [(o, g) for o, g in zip(outs, dys) if g is not None]
        return gradients([o for o, _ in pairs], list(op.inputs), grad_ys=[g for _, g in pairs])

    return grad
