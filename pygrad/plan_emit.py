"""The last two passes of compile_run (lowering.py): the logical buffers of lowered steps assigned
to the plan's buffers, temporaries sharing memory where their lifetimes do not overlap, and the
native Plan emitted; and run_once, which runs steps once as a plan of their own (constant folding).
"""
import bisect

import numpy as np

from pygrad import _C
from pygrad.kernels import CONST_BUFFER, FEED_BUFFER, TEMP_BUFFER, VAR_BUFFER


# ---------------------------------------------------------------- assign_buffers


def assign_buffers(feeds, steps, fetches, loops=()):
    """(the plan's buffers in the order the plan numbers them, as (kind, payload), {logical buffer:
    its plan buffer}). Feeds come first, in feed order; the others follow as steps first use them.
    A temporary lives from the first step that uses it to the last; a fetched one to the end, and
    one a loop's step uses to the loop's last step, for the next iteration may read it again
    (loops: (first, last) step indices). Temporaries whose lives do not overlap share a plan
    buffer as large as the largest of them: the largest first, each joins the first shared buffer
    (the largest first) none of whose temporaries it overlaps, else makes a new one (greedy by
    size; taking, as steps first use them, the smallest buffer freed that fits left the convnet
    benchmark's step a fifth more)."""
    end = list(range(len(steps)))
    for first, last in loops:
        for i in range(first, last + 1):
            end[i] = max(end[i], last)
    first_use, last_use = {}, {}
    for i, st in enumerate(steps):
        for o in st.ins + st.outs:
            first_use.setdefault(o.buffer, i)
            last_use[o.buffer] = max(last_use.get(o.buffer, 0), end[i])
    for o in fetches:
        first_use.setdefault(o.buffer, len(steps))
        last_use[o.buffer] = len(steps)  # never freed
    shared, slot = [], {}  # shared: [its bytes, the (first, last) lives in it, sorted]
    for b in sorted((b for b in first_use if b.kind == TEMP_BUFFER), key=lambda b: -b.nbytes):
        life = (first_use[b], last_use[b])
        k = next((k for k, (_, lives) in enumerate(shared) if _apart(lives, life)), len(shared))
        if k == len(shared):
            shared.append((b.nbytes, []))
        bisect.insort(shared[k][1], life)
        slot[b] = k
    plan_buffers, where, number = [], {}, {}
    for b in [*feeds, *first_use]:
        if b in where:
            continue
        if b.kind == TEMP_BUFFER and slot[b] in number:
            where[b] = number[slot[b]]
            continue
        where[b] = len(plan_buffers)
        if b.kind == TEMP_BUFFER:
            number[slot[b]] = where[b]
        plan_buffers.append((b.kind, shared[slot[b]][0] if b.kind == TEMP_BUFFER else b.payload))
    return plan_buffers, where


def _apart(lives, life):
    """Whether life (first, last step) overlaps none of lives (sorted, disjoint)."""
    i = bisect.bisect_left(lives, life)
    return (i == len(lives) or life[1] < lives[i][0]) and (i == 0 or lives[i - 1][1] < life[0])


# ---------------------------------------------------------------- emit


def emit(plan_buffers, where, steps, fetches, store):
    """(the native Plan, the constant arrays it reads, which must outlive it). The plan checks,
    before its first step, that the variables it reads before writing them are initialized. A
    graph's constant is read in place, so every plan of every session shares it."""
    plan = _C.Plan(store.native, store.arenas)
    consts = []

    def add_const(value):
        consts.append(np.require(value, requirements=["C_CONTIGUOUS", "ALIGNED"]))
        plan.add_const(consts[-1])

    add = {FEED_BUFFER: lambda spec: plan.add_feed(spec.dtype.code, list(spec.shape.dims)),
           CONST_BUFFER: add_const, VAR_BUFFER: plan.add_var, TEMP_BUFFER: plan.add_temp}
    for kind, payload in plan_buffers:
        add[kind](payload)

    def native(o):
        return (where[o.buffer], o.dtype, list(o.dims))

    initialized = set()
    for st in steps:
        if st.kernel is None:
            plan.add_jump(st.attrs["target"].index, where[st.ins[0].buffer] if st.ins else -1)
            continue
        for var in st.reads_vars:
            if var not in initialized:
                plan.require_initialized(var)
                initialized.add(var)
        try:
            plan.add_step(st.kernel, [native(o) for o in st.ins], [native(o) for o in st.outs], st.attrs, st.init_var)
        except (TypeError, ValueError) as e:  # a kernel that refuses its operands: name the op
            raise type(e)(st.op.error(str(e))) from None
        if st.init_var >= 0:
            initialized.add(st.init_var)
    for o in fetches:
        if o.buffer.kind == VAR_BUFFER and o.buffer.payload not in initialized:
            plan.require_initialized(o.buffer.payload)
    plan.set_fetches([native(o) for o in fetches])
    return plan, consts


def run_once(steps, store):
    """The output arrays of steps (their inputs constants, or outputs of steps before them) run once
    as a plan of their own, in the order of the steps' outputs."""
    fetches = [o for st in steps for o in st.outs]
    plan_buffers, where = assign_buffers([], steps, fetches)
    plan, _ = emit(plan_buffers, where, steps, fetches, store)
    return plan.run([], 0)
