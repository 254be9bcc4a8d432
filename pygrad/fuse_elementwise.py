"""Fused elementwise loops: a pass of compile_run (after the other fusion passes) that merges float32
elementwise steps of one shape into one fused_elementwise step (csrc/kernels/fused_elementwise.cc).

A recurrent cell is a dozen elementwise ops on [batch, units] arrays (TF's BasicLSTMCell: an add of
the forget bias, three sigmoids, two tanhs, three products and a sum), and its gradient as many
again; unfused, each is a kernel call that reads its operands from memory and writes its result
back. Fused, the steps run as a small program over tiles of 1,024 elements: the values no step
outside the group reads (and the run does not fetch) stay in a tile in cache and are never written.

The steps that join (their kernel's op from pg/elementwise.def): unary_fwd, unary_bwd and float32
binary_fwd steps whose output has the group's dims and whose operands each have those dims, one
element, or the last dimension's length (a bias vector). A group is made in straight-line code (no
jump, no jump target) from such steps in the plan's order, unrelated ones included; it ends before
a step outside it that reads one of its results or writes a buffer it reads or writes, and before a
member that would write a buffer the group reads. The fused step runs where the group's last step
ran, reading every input there: the guards make that the same as reading each where its step ran.
Its outputs are the members' results that anything else reads: a later step (or, in a loop, an
earlier one), a fetch, or a variable. A group needs two steps or more and one value it keeps from
memory. Each op is computed by the functor its unfused kernel calls, so results are bitwise the same.
"""
from pygrad import _C
from pygrad.dtypes import float32
from pygrad.fusion import _jump_targets, _ops_of, _readers, _rewrite
from pygrad.kernels import BINARY_FWD, FUSED_ELEMENTWISE, TEMP_BUFFER, UNARY_BWD, UNARY_FWD

_FAMILY = {UNARY_FWD: 0, UNARY_BWD: 1, BINARY_FWD: 2}  # fused_elementwise's instruction families
_OPS = {kernel: {name: k for k, name in enumerate(names)} for kernel, names in _C.elementwise_ops().items()
        if kernel in _FAMILY}


def _joins(st):
    """The dims of the group st can join, or None when it cannot."""
    if st.kernel not in _FAMILY or st.init_var >= 0 or len(st.outs) != 1 or st.attrs.get("op") not in _OPS[st.kernel]:
        return None
    out = st.outs[0]
    dims = tuple(out.dims)
    if out.dtype != float32.code or len(dims) == 0 or _numel(dims) < 2:
        return None
    if any(o is None or o.dtype != float32.code or o.buffer is out.buffer for o in st.ins):
        return None
    kinds = [_kind(o, dims) for o in st.ins]
    if None in kinds or (st.kernel != BINARY_FWD and kinds != ["full"] * len(kinds)) or "full" not in kinds:
        return None
    return dims


def _kind(operand, dims):
    """How operand covers dims: "full", "scalar", "row" (the last dimension's vector) or None."""
    d = tuple(operand.dims)
    if d == dims:
        return "full"
    if _numel(d) == 1:
        return "scalar"
    if d and d[-1] == dims[-1] and _numel(d) == dims[-1]:
        return "row"
    return None


def _numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def fuse_elementwise(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    readers, kept_out, targets = _readers(steps), {id(o.buffer) for o in fetched}, _jump_targets(program)
    groups, members, dims, made, touched = [], [], None, set(), set()

    def close():
        nonlocal members, dims
        if len(members) >= 2:
            groups.append(members)
        members, dims = [], None
        made.clear()
        touched.clear()

    for i, st in enumerate(steps):
        if i in targets or st.kernel is None:
            close()
            if st.kernel is None:
                continue
        d = _joins(st)
        writes = {id(o.buffer) for o in st.outs}
        if members and (d != dims or writes & touched):
            reads = {id(o.buffer) for o in st.ins if o is not None}
            if d is None and not (reads & made or writes & touched):
                continue  # a step outside the group that leaves it alone
            close()
        if d is None:
            continue
        members.append(i)
        dims = d
        made.update(writes)
        touched.update(writes, (id(o.buffer) for o in st.ins))
    close()
    replaced, removed = {}, set()
    for group in groups:
        fused = _fused_step(steps, group, readers, kept_out)
        if fused is not None:
            replaced[group[-1]] = fused
            removed.update(group[:-1])
    _rewrite(program, replaced, removed)


def _fused_step(steps, group, readers, kept_out):
    """The fused_elementwise step of the steps of group (indices), or None when it keeps nothing
    from memory."""
    inside = set(group)
    register, ins, made = {}, [], set()
    for k in group:  # the inputs: what the members read that no earlier member made
        for o in steps[k].ins:
            if id(o.buffer) not in register and id(o.buffer) not in made:
                register[id(o.buffer)] = len(ins)
                ins.append(o)
        made.add(id(steps[k].outs[0].buffer))
    code, outs, out_registers, internal = [], [], [], 0
    for n, k in enumerate(group):
        st = steps[k]
        a = register[id(st.ins[0].buffer)]
        b = register[id(st.ins[1].buffer)] if len(st.ins) > 1 else -1
        code += [_FAMILY[st.kernel], _OPS[st.kernel][st.attrs["op"]], a, b]
        out = st.outs[0]
        register[id(out.buffer)] = len(ins) + n
        if out.buffer.kind == TEMP_BUFFER and id(out.buffer) not in kept_out \
                and set(readers.get(id(out.buffer), ())) <= inside:
            internal += 1
        else:
            outs.append(out)
            out_registers.append(len(ins) + n)
    if not internal or not outs:
        return None
    first = steps[group[0]]
    reads = list(dict.fromkeys(v for k in group for v in steps[k].reads_vars))
    return type(first)(first.op, FUSED_ELEMENTWISE, ins, outs, {"program": code, "outputs": out_registers}, reads, -1,
                       _ops_of([steps[k] for k in group], first.op))
