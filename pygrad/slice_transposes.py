"""A slice of a transposed array taken from the array itself, and a slice's gradient written
transposed (a pass of compile_run, pygrad/passes.py).

tf.nn.dynamic_rnn with batch-major inputs (TF's default, time_major=False) stacks its outputs
[T, B, H] and transposes them to [B, T, H]; a classifier then takes the last time step,
outputs[:, -1, :]. Its gradient is the mirror image: StridedSliceGrad writes dy into zeros shaped
[B, T, H], and a transpose turns those back into [T, B, H] for the loop's gradient. At the LSTM
benchmark's size each transpose moves 1.8 MB to keep one [B, H] row of it.

A strided slice and a transpose commute when the slice keeps its elements' order: the slice's
dimensions of more than one element, listed in the order of the sliced array, lie in the same
order in the other array. Then

    forward    y = Transpose(x, perm); z = StridedSlice(y)   ->  z = StridedSlice(x), the slice's
               begin, stride and size of y's dimension i given to x's dimension perm[i]
    gradient   g = StridedSliceGrad(dz) (shaped like y); t = Transpose(g, perm2)  ->
               t = StridedSliceGrad(dz) shaped like t, t's dimension k taking g's dimension perm2[k]

Only data moves, so the values are bitwise the same. The steps matched (buffers compared by
identity): the first step's output is a temporary that it alone writes and the second step alone
reads, with the first step's dims (not through a reshape), and the run does not fetch; no jump
or jump target lies between them, and no step between them writes the first step's input. The
new step runs where the second ran.
"""
from pygrad.fusion import _can_move, _jump_targets, _ops_of, _readers, _rewrite, _sole_reader, _writers
from pygrad.kernels import TRANSPOSE
from pygrad.ops import slice_ops

_SLICE, _SLICE_GRAD = slice_ops.StridedSlice.kernel, slice_ops.StridedSliceGrad.kernel


def slice_through_transposes(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    if not any(s.kernel == TRANSPOSE for s in steps):
        return
    readers, writers, kept_out = _readers(steps), _writers(steps), {id(o.buffer) for o in fetched}
    targets = _jump_targets(program)
    replaced, removed = {}, set()
    for i, first in enumerate(steps):
        if first.kernel not in (TRANSPOSE, _SLICE_GRAD) or i in removed or i in replaced:
            continue
        j = _sole_reader(readers, kept_out, first.outs[0].buffer)
        if j is None or j in replaced or j in removed or writers.get(id(first.outs[0].buffer)) != [i]:
            continue
        second = steps[j]
        if tuple(second.ins[0].dims) != tuple(first.outs[0].dims):  # read as another shape (a reshape)
            continue
        if first.kernel == TRANSPOSE and second.kernel == _SLICE:
            # y's dimension i is x's dimension perm[i]: x's dimension d takes y's dimension inverse[d].
            perm = first.attrs["perm"]
            attrs = _moved(second.attrs, sorted(range(len(perm)), key=lambda d: perm[d]))
        elif first.kernel == _SLICE_GRAD and second.kernel == TRANSPOSE:
            # t's dimension k is g's dimension perm2[k]: the slice of g moves to t's dimensions.
            attrs = _moved(first.attrs, second.attrs["perm"])
        else:
            continue
        if attrs is None or not _can_move(steps, targets, i, j):
            continue
        kept = second if first.kernel == TRANSPOSE else first  # the slice step, moved
        reads = list(dict.fromkeys([*first.reads_vars, *second.reads_vars]))
        replaced[j] = [type(kept)(kept.op, kept.kernel, first.ins, second.outs, {**kept.attrs, **attrs}, reads,
                                  kept.init_var, _ops_of([first, second], kept.op))]
        removed.add(i)
    _rewrite(program, replaced, removed)


def _moved(attrs, taken):
    """The slice attrs (begin, strides, sizes per dimension of the sliced array) for the array on
    the transpose's other side, whose dimension d is the sliced array's dimension taken[d]; None
    when the slice would not keep its elements' order there (its dimensions of more than one
    element, taken in the other array's order, not in their own order)."""
    taken = [int(t) for t in taken]
    order = [t for t in taken if attrs["sizes"][t] != 1]
    if order != sorted(order):
        return None
    return {k: [attrs[k][t] for t in taken] for k in ("begin", "strides", "sizes")}
