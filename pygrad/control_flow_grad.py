"""The gradients of tf.cond and tf.while_loop (the If and While ops of ops/control_flow_ops.py),
which are built with tf.gradients: a cond's is a cond on the same predicate whose branches hold the
gradient of each branch's outputs; a loop's is a loop that runs the forward trip count, its body
the gradient of one forward iteration (TF1's control_flow_grad.py)."""
from pygrad import dtypes
from pygrad.gradients import gradients
from pygrad.ops import array_ops, math_ops
from pygrad.ops.control_flow_ops import If, While, _build_cond, _build_while


@If.grad
def _(op, *dys):
    captures = [(k, t) for k, t in enumerate(op.inputs) if k > 0 and t.dtype.is_floating]
    pairs = [(i, dy) for i, dy in enumerate(dys) if dy is not None and op.outputs[i].dtype.is_floating]
    result = [None] * len(op.inputs)
    if not captures or not pairs:
        return result

    def branch(region):
        def fn():
            xs = [t for _, t in captures]
            gs = gradients([region.outputs[i] for i, _ in pairs], xs, grad_ys=[dy for _, dy in pairs],
                           stop_gradients=xs)
            return [g if g is not None else array_ops.zeros_like(x) for g, x in zip(gs, xs)]
        return fn

    true_region, false_region = op.attrs["regions"]
    grads, _ = _build_cond(op.inputs[0], branch(true_region), branch(false_region), "cond_grad",
                        forward=(true_region, false_region), after=op)
    for (k, _), g in zip(captures, grads):
        result[k] = g
    return result


@While.grad
def _(op, *dys):
    n = op.attrs["n_vars"]
    result = [None] * len(op.inputs)
    if not op.attrs["back_prop"]:
        return result
    body = op.attrs["regions"][1]
    flt = [i for i in range(1, n) if op.outputs[i].dtype.is_floating]
    captures = [(k, t) for k, t in enumerate(op.inputs) if k >= n and t.dtype.is_floating]
    if not flt and not captures:
        return result
    g0 = [dys[i] if dys[i] is not None else array_ops.zeros_like(op.outputs[i]) for i in flt]
    acc0 = [array_ops.zeros_like(t) for _, t in captures]
    trips = op.outputs[0]
    xs = [body.placeholders[i] for i in flt] + [t for _, t in captures]

    def grad_body(j, gs, accs):
        grads = gradients([body.outputs[i] for i in flt], xs, grad_ys=list(gs),
                          stop_gradients=[t for _, t in captures])
        new_gs = [g if g is not None else array_ops.zeros_like(x) for g, x in zip(grads[:len(flt)], gs)]
        new_accs = [acc if g is None else math_ops.add(acc, g) for g, acc in zip(grads[len(flt):], accs)]
        return j + 1, new_gs, new_accs

    outs, _ = _build_while(lambda j, gs, accs: math_ops.less(j, trips), grad_body,
                        [array_ops.constant(0, dtypes.int32), g0, acc0], None, None, "while_grad", True,
                        forward=body, after=op)
    flat = outs[2:]  # (trip count, j, the gradients, the sums)
    for i, g in zip(flt, flat[:len(flt)]):
        result[i] = g
    for (k, _), g in zip(captures, flat[len(flt):]):
        result[k] = g
    return result
