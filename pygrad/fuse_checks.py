"""A check that every value is finite, in one pass (a pass of compile_run, pygrad/passes.py).

TF1's dynamic loss scaling (tf.train.experimental.enable_mixed_precision_graph_rewrite, or
MixedPrecisionLossScaleOptimizer) unscales each gradient, g * (1 / loss_scale), and skips the step
unless reduce_all(is_finite(...)) holds for every gradient. Unfused, that is three passes over each
gradient: the multiply writes it, is_finite reads it and writes a bool per value, and the All
reads those (the Deep MNIST convnet's fc1 gradient has 3.2 M values).

The steps matched (buffers compared by identity):

    b = IsFinite(x)        a float_class step (test "finite"), b a temporary that only the All
                           reads and the run does not fetch
    ok = All(b)            a reduce_fwd "all" to one element
    [x = Mul(g, s)]        optional: the step that alone writes x, a multiply of an array of x's
                           dims by a one-element scale (either order)

become one all_finite step (csrc/kernels/classify.cc) at the place of the first: x's check alone, or
the multiply and the check of its product in the same pass. x keeps its readers (the optimizer's
update reads the unscaled gradient). No jump or jump target may lie between the first step and the
All. The values are bitwise the same: the product is the multiply's, and ok the All's.
"""
from pygrad import dtypes
from pygrad.fusion import _computes, _jump_targets, _numel, _ops_of, _readers, _rewrite, _straight_line, _writers
from pygrad.kernels import ALL_FINITE, FLOAT_CLASS, REDUCE_FWD, TEMP_BUFFER
from pygrad.ops import math_ops

_FLOATS = {dtypes.float32.code, dtypes.float64.code}


def fuse_finite_checks(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    if not any(s.kernel == FLOAT_CLASS for s in steps):
        return
    readers, writers, kept_out = _readers(steps), _writers(steps), {id(o.buffer) for o in fetched}
    targets = _jump_targets(program)
    replaced, removed = {}, set()
    for i, check in enumerate(steps):
        if check.kernel != FLOAT_CLASS or check.attrs.get("test") != "finite" or check.ins[0].dtype not in _FLOATS:
            continue
        b = check.outs[0].buffer
        users = readers.get(id(b), [])
        if b.kind != TEMP_BUFFER or id(b) in kept_out or len(users) != 1 or users[0] <= i:
            continue
        a = users[0]
        every = steps[a]
        if every.kernel != REDUCE_FWD or every.attrs.get("op") != "all" or _numel(every.outs[0].dims) != 1 or \
                writers.get(id(b)) != [i]:
            continue
        x = check.ins[0]
        m = _scaling(steps, writers, x, i)
        first = i if m is None else m
        if not _straight_line(steps, targets, first, a + 1) or first in replaced or first in removed:
            continue
        ok = every.outs[0]
        if m is None:
            new = type(check)(check.op, ALL_FINITE, [x], [ok], {}, check.reads_vars, -1,
                              _ops_of([check, every], check.op))
        else:
            mul = steps[m]
            scale_first = _numel(mul.ins[0].dims) == 1 and tuple(mul.ins[1].dims) == tuple(x.dims)
            g, s = (mul.ins[1], mul.ins[0]) if scale_first else mul.ins
            new = type(mul)(mul.op, ALL_FINITE, [g, s], [x, ok], {"scale_first": int(scale_first)},
                            mul.reads_vars, -1, _ops_of([mul, check, every], mul.op))
            removed.add(i)
        replaced[first] = [new]
        removed.add(a)
    _rewrite(program, replaced, removed)


def _scaling(steps, writers, x, i):
    """The index of the multiply of an array of x's dims by one element that alone writes x, before
    step i; else None."""
    made = writers.get(id(x.buffer), [])
    if x.buffer.kind != TEMP_BUFFER or len(made) != 1 or made[0] >= i:
        return None
    mul = steps[made[0]]
    if not _computes(mul, math_ops.Mul) or len(mul.ins) != 2 or len(mul.outs) != 1 or \
            tuple(mul.outs[0].dims) != tuple(x.dims) or mul.outs[0].dtype != x.dtype:
        return None
    a, b = mul.ins
    if a.dtype != x.dtype or b.dtype != x.dtype:
        return None
    shaped = [tuple(o.dims) == tuple(x.dims) for o in (a, b)]
    single = [_numel(o.dims) == 1 for o in (a, b)]
    if not (shaped[0] and single[1] or shaped[1] and single[0]) or a.buffer is x.buffer or b.buffer is x.buffer:
        return None
    return made[0]
