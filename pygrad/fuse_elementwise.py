"""Fused elementwise loops: a pass of compile_run (pygrad/passes.py) that merges float32 elementwise
steps of one shape into one fused_elementwise step (csrc/kernels/fused_elementwise.cc).

A recurrent cell is a dozen elementwise ops on [batch, units] arrays (TF's BasicLSTMCell: the gates'
bias add and split, an add of the forget bias, three sigmoids, two tanhs, three products and a sum),
and its gradient as many again, ending in a concat of the gates' gradients; unfused, each is a
kernel call that reads its operands from memory and writes its result back. Fused, the steps run as
a small program over tiles of 1,024 elements: the values no step outside the group reads (and the
run does not fetch) stay in a tile in cache and are never written.

The steps that join (their kernel's op from pg/elementwise.def):
  - unary_fwd, unary_bwd and float32 binary_fwd steps whose output has the group's dims and whose
    operands each have those dims, one element, or the last dimension's length (a bias vector);
  - a split of a matrix along its columns into parts of the group's dims: each part is read where it
    lies, as a block of the matrix's columns;
  - a binary op of a matrix and a vector of its columns whose one reader is such a split (the gates'
    bias add): each part is the op on its block of the matrix and its slice of the vector, and the
    whole is never written;
  - last, a concat along the columns of values the group made and nothing else reads: the group
    writes them as blocks of its output.
A group is made in straight-line code (no jump, no jump target) from such steps in the plan's order,
unrelated ones included; it ends before a step outside it that reads one of its results or writes a
buffer it reads or writes, and before a member that would write a buffer the group made or reads as
a block. A member may write in place a buffer the group reads whole (a loop variable's new value,
which the loop passes write into its buffer): in each tile the reads of it come first. The fused step
runs where the group's last step ran, reading every input there: the guards make that the same as
reading each where its step ran. Its outputs are the members' results that anything else reads: a
later step (or, in a loop, an earlier one), a fetch, or a variable. A group needs two steps or more
and one value it keeps from memory. Each op is computed by the functor its unfused kernel calls, so
results are bitwise the same.
"""
from pygrad import _C
from pygrad.dtypes import float32
from pygrad.fusion import _jump_targets, _ops_of, _readers, _rewrite, _written
from pygrad.kernels import BINARY_FWD, CONCAT, FUSED_ELEMENTWISE, SPLIT, TEMP_BUFFER, UNARY_BWD, UNARY_FWD

_FAMILY = {UNARY_FWD: 0, UNARY_BWD: 1, BINARY_FWD: 2}  # fused_elementwise's instruction families
_OPS = {kernel: {name: k for k, name in enumerate(names)} for kernel, names in _C.elementwise_ops().items()
        if kernel in _FAMILY}


def _joins(st):
    """The dims of the group st can join as an elementwise op, or None when it cannot."""
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


def _split_dims(st):
    """The dims of each part of st, a split of a float32 matrix along its columns into equal parts
    (an RNN cell's gates), or None."""
    if st.kernel != SPLIT or st.attrs.get("axis") not in (1, -1) or len(st.ins) != 1 or len(st.ins[0].dims) != 2 \
            or st.ins[0].dtype != float32.code or st.init_var >= 0:
        return None
    dims = tuple(st.outs[0].dims)
    return dims if all(tuple(o.dims) == dims for o in st.outs) and _numel(dims) >= 2 else None


def _role(st, steps, readers):
    """(dims, role) for a step that can join a group of dims: role "op" (an elementwise step), "split"
    (its parts read as blocks of its input), "bias" (a binary op of a matrix and a vector of its
    columns whose one reader is such a split: each part's op on its block); (None, None) otherwise."""
    if st.kernel == BINARY_FWD and len(st.outs) == 1 and st.init_var < 0 and st.attrs.get("op") in _OPS[BINARY_FWD]:
        r = readers.get(id(st.outs[0].buffer), [])
        d = _split_dims(steps[r[0]]) if len(r) == 1 else None
        whole = tuple(st.outs[0].dims)
        kinds = [_kind(o, whole) for o in st.ins]
        if d is not None and len(whole) == 2 and sorted(k or "" for k in kinds) == ["full", "row"] \
                and all(o.dtype == float32.code and o.buffer is not st.outs[0].buffer for o in st.ins) \
                and all(len(o.dims) == 1 for o, k in zip(st.ins, kinds) if k == "row"):
            return d, "bias"
    d = _joins(st)
    if d is not None:
        return d, "op"
    d = _split_dims(st)
    return (d, "split") if d is not None else (None, None)


def _concat_of(steps, c, dims, made, readers, members, kept_out):
    """Whether steps[c] concatenates, along the columns of matrices, distinct values the group made
    (of its dims) that nothing but the group and it reads: the group then writes them as blocks of its
    output, and it goes."""
    st = steps[c]
    if st.kernel != CONCAT or st.attrs.get("axis") not in (1, -1) or len(dims) != 2 or st.init_var >= 0 \
            or len({id(o.buffer) for o in st.ins}) != len(st.ins):
        return False
    allowed = {*members, c}
    return all(tuple(o.dims) == dims and id(o.buffer) in made and id(o.buffer) not in kept_out
               and o.buffer.kind == TEMP_BUFFER and set(readers.get(id(o.buffer), ())) <= allowed for o in st.ins)


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
    groups, members, dims, made, touched, roles = [], [], None, set(), set(), {}
    partial = set()  # what members read other than whole (a split's or bias's input)

    def close():
        nonlocal members, dims
        if len(members) >= 2:
            groups.append((members, dims))
        members, dims = [], None
        made.clear()
        touched.clear()
        partial.clear()

    for i, st in enumerate(steps):
        if i in targets or st.kernel is None:
            close()
            if st.kernel is None:
                continue
        d, role = _role(st, steps, readers)
        writes, reads = _written(st), {id(o.buffer) for o in st.ins if o is not None}
        if members and d is None and _concat_of(steps, i, dims, made, readers, members, kept_out) \
                and not writes & touched:
            members.append(i)  # the group's last step: it writes its blocks
            roles[i] = "concat"
            close()
            continue
        # a member may write what the group only read (a loop's value updated in place: the tile's
        # reads of it come first); not what it made, nor what a block or vector input reads
        in_place = role == "op" and not writes & made and not writes & partial
        if members and (d != dims or (writes & touched and not in_place)):
            if d is None and not (reads & made or writes & touched):
                continue  # a step outside the group that leaves it alone
            close()
        if d is None:
            continue
        members.append(i)
        roles[i] = role
        dims = d
        made.update(writes)
        touched.update(writes, reads)
        if role != "op":
            partial.update(reads)
        else:
            partial.update(id(o.buffer) for o in st.ins if tuple(o.dims) != dims)
    close()
    replaced, removed = {}, set()
    for group, group_dims in groups:
        fused = _fused_step(steps, group, group_dims, roles, readers, kept_out)
        if fused is not None:
            replaced[group[-1]] = [fused]
            removed.update(group[:-1])
    _rewrite(program, replaced, removed)


class _Program:
    """A fused_elementwise step's inputs (each once, with its column offset) and instructions; a
    value is ("in", k) or ("op", k)."""

    def __init__(self):
        self.ins, self.columns, self.code, self.value = [], [], [], {}

    def read(self, operand, column=-1):
        """The value of operand: one the group computes, else an input (with a column offset: a block)."""
        key = (id(operand.buffer), column)
        if key not in self.value:
            self.value[key] = ("in", len(self.ins))
            self.ins.append(operand)
            self.columns.append(column)
        return self.value[key]

    def emit(self, kernel, op, a, b, out_buffer):
        self.code.append((_FAMILY[kernel], _OPS[kernel][op], a, b))
        self.value[(id(out_buffer), -1)] = ("op", len(self.code) - 1)

    def register(self, value):
        return value[1] if value[0] == "in" else len(self.ins) + value[1]


def _fused_step(steps, group, dims, roles, readers, kept_out):
    """The fused_elementwise step of the steps of group (indices, each with its _role) computing
    values of dims, or None when it keeps nothing from memory."""
    inside = set(group)
    prog, biased = _Program(), {}
    blocks = {}  # a concat's inputs: id(buffer) -> (the concat's output, column)
    for k in group:
        st, role = steps[k], roles[k]
        if role == "bias":  # each part of its split: the op on the part's block of each operand
            if _read_outside(st.outs[0], inside, readers, kept_out):
                return None
            biased[id(st.outs[0].buffer)] = st
        elif role == "split":
            source = st.ins[0]
            op = biased.pop(id(source.buffer), None)
            for part, o in enumerate(st.outs):
                column = part * dims[-1]
                if op is None:  # the part is read where it lies
                    prog.value[(id(o.buffer), -1)] = prog.read(source, column)
                    continue
                a, b = (prog.read(x, column if _kind(x, tuple(source.dims)) is not None else -1) for x in op.ins)
                prog.emit(BINARY_FWD, op.attrs["op"], a, b, o.buffer)
        elif role == "concat":
            for part, o in enumerate(st.ins):
                blocks[id(o.buffer)] = (st.outs[0], part * dims[-1])
        else:
            a = prog.read(st.ins[0])
            b = prog.read(st.ins[1]) if len(st.ins) > 1 else None
            prog.emit(st.kernel, st.attrs["op"], a, b, st.outs[0].buffer)
    code, outs, out_registers, out_columns, internal = [], [], [], [], 0
    inputs = {id(o.buffer) for o in prog.ins}
    for family, op, a, b in prog.code:
        code += [family, op, prog.register(a), prog.register(b) if b is not None else -1]
    for k in group:
        st = steps[k]
        if roles[k] in ("bias", "concat"):
            internal += roles[k] == "bias"  # its whole output, never written
            continue
        for o in st.outs:
            value = prog.value.get((id(o.buffer), -1))
            if value is None or value[0] == "in":  # a split's part read where it lies
                internal += value is not None and not _read_outside(o, inside, readers, kept_out)
                continue
            if id(o.buffer) in blocks:
                target, column = blocks[id(o.buffer)]
                outs.append(target)
                out_columns.append(column)
                out_registers.append(prog.register(value))
            elif _read_outside(o, inside, readers, kept_out) or id(o.buffer) in inputs:  # (in place: a loop's)
                outs.append(o)
                out_columns.append(-1)
                out_registers.append(prog.register(value))
            else:
                internal += 1
    parts_outside = [o for k in group if roles[k] == "split" for o in steps[k].outs
                     if _read_outside(o, inside, readers, kept_out)]
    if not internal or not outs or parts_outside or biased:  # (a bias op whose split is not in the group)
        return None
    first = steps[group[0]]
    reads = list(dict.fromkeys(v for k in group for v in steps[k].reads_vars))
    attrs = {"program": code, "outputs": out_registers, "dims": list(dims)}
    if any(c >= 0 for c in prog.columns) or any(c >= 0 for c in out_columns):
        attrs.update(in_columns=prog.columns, out_columns=out_columns)
    return type(first)(first.op, FUSED_ELEMENTWISE, prog.ins, outs, attrs, reads, -1,
                       _ops_of([steps[k] for k in group], first.op))


def _read_outside(operand, inside, readers, kept_out):
    """Whether a step outside the group (a set of indices) or the run reads operand's buffer."""
    b = operand.buffer
    return b.kind != TEMP_BUFFER or id(b) in kept_out or not set(readers.get(id(b), ())) <= inside
