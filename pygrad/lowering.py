"""Lowers the pruned graph of one run signature (fetches, targets, feeds and their shapes) to a
native Plan, in passes that each read and return plain data:

    prune           the ops the fetches need, and those needed for their output shapes only
    infer_shapes    concrete shapes (and the values of shape ops) from the fed shapes
    schedule        the order the steps run in
    lower           each op to steps over logical buffers, through its OpContext
    optimize        the passes over the steps (passes.py): values of constants folded, runs of
                    steps that one kernel computes alike fused as that kernel, and in loops: new
                    values written into their variables, TensorArray read gradients added in place
    assign_buffers  logical buffers to the plan's buffers; temporaries share memory when their
                    lifetimes do not overlap (plan_emit.py)
    emit            the native Plan (plan_emit.py)

compile_run chains them. Lowering sees the graph and a SessionStore, never the session.
"""
import heapq

import numpy as np

from pygrad import errors
from pygrad.dtypes import ALL_DTYPES, MEMORY_BYTES
from pygrad.graph import Operation, reachable
from pygrad.host import HostValues, ran_before
from pygrad.kernels import CONST_BUFFER, COPY, FEED_BUFFER, TEMP_BUFFER, VAR_BUFFER
from pygrad.passes import optimize
from pygrad.plan_emit import assign_buffers, emit
from pygrad.registry import (AFTER, ALIAS, CONST, CUSTOM, FEED, HOST, KERNEL, MAX_RANK, NOOP, VALUE, VARIABLE,
                             DTypeRuleError, RuleError, Spec)
from pygrad.shapes import TensorShape


class CompiledRun:
    """A built plan, the constants it reads (it does not copy them), and what Session.run needs to
    call it: for each element of the run, the index of its fetched value (None for an op); the
    native plan's address, feed count, and each fetch's NumPy dtype and shape (what a caller of
    _C.run_api binds and allocates; num_scalars of the fetches are 0-d); the op behind each step
    and the largest temporary buffer (to name them in errors); for a traced run, the ops each step
    also computes (step_fused: Step.fused) and the concrete Spec of every tensor (specs). `fast`
    is what compile_run's `fast` factory made of it when it was built (the compiled Session.run
    path's record), None for a run with values held in Python (`host`) or without a factory.

    The plan's memory: temp_bytes is the sum of its temporary buffers after assign_buffers shared
    them (what a run's arena holds, before the native plan rounds each buffer up to its alignment:
    plan.arena_bytes), temp_bytes_before_reuse the sum over every logical temporary the steps use,
    as if none shared memory. Neither counts feeds, constants, variables, a loop's stacks (the
    values a while_loop's gradient saves, pushed per iteration) or a kernel's own scratch."""

    __slots__ = ("plan", "consts", "owned_bytes", "fetch_index", "address", "num_feeds", "fetch_dtypes",
                 "fetch_shapes", "num_scalars", "step_ops", "step_fused", "specs", "largest_temp", "host", "fast",
                 "temp_bytes", "temp_bytes_before_reuse")

    def __init__(self, plan, consts, fetch_index, steps, tensor_specs, largest_temp, host, fast=None,
                 temp_bytes=0, temp_bytes_before_reuse=0):
        self.plan, self.consts, self.fetch_index = plan, consts, fetch_index
        self.address, self.num_feeds = plan.address, plan.num_feeds
        specs = plan.fetch_specs
        self.fetch_dtypes = tuple(_NUMPY_DTYPES[code] for code, _ in specs)
        self.fetch_shapes = tuple(shape for _, shape in specs)
        self.num_scalars = sum(len(shape) == 0 for shape in self.fetch_shapes)
        self.step_ops, self.step_fused = [st.op for st in steps], [st.fused for st in steps]
        self.specs, self.largest_temp = tensor_specs, largest_temp
        self.host = host if host.needed else None  # None: all native
        # The graph's constants are read-only arrays the plans share; the others are its own.
        self.owned_bytes = sum(c.nbytes for c in consts if c.flags.writeable)
        self.temp_bytes, self.temp_bytes_before_reuse = temp_bytes, temp_bytes_before_reuse
        self.fast = fast(self) if fast is not None and self.host is None else None


_NUMPY_DTYPES = {d.code: d.np for d in ALL_DTYPES}  # a native dtype code -> its NumPy dtype


def compile_run(elements, feed_tensors, feed_shapes, store, fast=None, bfloat16=False):
    """The CompiledRun of elements (Tensors to fetch and Operations to run) with feed_tensors fed
    arrays of feed_shapes; store is the session's SessionStore; fast (if given) makes the
    CompiledRun's `fast` from it, or None for a run it does not take; bfloat16: products in
    bfloat16 (passes.optimize)."""
    fetch_tensors, targets, fetch_index = [], [], []
    for e in elements:
        if isinstance(e, Operation):
            targets.append(e)
            fetch_index.append(None)
        else:
            if e not in fetch_tensors:
                fetch_tensors.append(e)
            fetch_index.append(fetch_tensors.index(e))
    fed = {t: Spec(t.dtype, TensorShape(shape)) for t, shape in zip(feed_tensors, feed_shapes)}
    value_ops, shape_ops = prune(fetch_tensors, targets, fed)
    specs, values = infer_shapes(value_ops | shape_ops, fed)
    program = lower(schedule(value_ops, fed), specs, values, fed, store, plan_ops(value_ops))
    host = HostValues(fetch_tensors, feed_tensors, program)
    fetches = host.plan_fetches
    optimize(program, fetches, bfloat16)
    plan_buffers, where = assign_buffers([program.buffer_of[t] for t in host.native_feeds], program.steps, fetches,
                                         program.loops)
    largest = max((b for b in where if b.kind == TEMP_BUFFER), key=lambda b: b.nbytes, default=None)
    total = sum(nbytes for kind, nbytes in plan_buffers if kind == TEMP_BUFFER)
    if total > MEMORY_BYTES:
        raise MemoryError(out_of_memory(total, largest))
    plan, consts = emit(plan_buffers, where, program.steps, fetches, store)
    logical = sum(b.nbytes for b in where if b.kind == TEMP_BUFFER)
    return CompiledRun(plan, consts, fetch_index, program.steps, program.specs, largest, host, fast, total, logical)


def out_of_memory(total, largest):
    """The message of a run whose buffers of total bytes cannot be had, naming the largest one's op."""
    what = f"the run's intermediate buffers need {total} bytes (this machine has {MEMORY_BYTES})"
    if largest is None:
        return what
    return largest.payload.error(f"{what}; the largest, {largest.nbytes} bytes, is this op's output")


# ---------------------------------------------------------------- prune


def prune(fetch_tensors, target_ops, fed):
    """(ops whose values the run needs, ops needed only for their output shapes); fed tensors
    cut the graph."""
    value_ops = reachable([t.op for t in fetch_tensors if t not in fed] + list(target_ops), lambda op: [
        t.op for i, t in enumerate(op.inputs) if t not in fed and i not in op.opdef.shape_only_inputs
    ] + [c for c in op.control_inputs if not ran_before(c, fed)])
    shape_roots = [t.op for op in value_ops for i, t in enumerate(op.inputs)
                   if t not in fed and i in op.opdef.shape_only_inputs and t.op not in value_ops]
    shape_ops = reachable(shape_roots, lambda op: [t.op for t in op.inputs if t not in fed and t.op not in value_ops])
    return value_ops, shape_ops


class _Cut:
    """The tensors a region's pruning stops at: those not made by one of its members, and its
    placeholders."""

    def __init__(self, members, placeholders):
        self.members, self.placeholders = members, set(placeholders)

    def __contains__(self, t):
        return t.op not in self.members or t in self.placeholders


def region_ops(region, roots):
    """(value ops, shape ops) of a region (a loop's body or condition, a cond's branch: an object
    with `members`, its ops, and `placeholders`, the tensors it is given) that roots need."""
    cut = _Cut(region.members, region.placeholders)
    value_ops, shape_ops = prune(roots, [], cut)
    return value_ops & region.members, shape_ops & region.members


def plan_ops(ops):
    """ops and the ops of the regions of their control-flow ops (op.attrs["regions"]), nested
    ones too, that the regions' outputs need: the ops a plan will run."""
    out, todo = set(ops), list(ops)
    while todo:
        for region in todo.pop().attrs.get("regions", ()):
            inner, _ = region_ops(region, region.outputs)
            todo.extend(inner - out)
            out |= inner
    return out


# ---------------------------------------------------------------- infer_shapes


def infer_shapes(ops, fed):
    """({tensor: Spec} with concrete shapes, {tensor: value} of the ops computed from shapes)."""
    specs, values = dict(fed), {}
    for op in sorted(ops, key=lambda o: o._id):
        d = op.opdef
        if op.outputs and all(t in fed for t in op.outputs):
            continue
        if d.lowering == FEED or d.lowering == HOST and d.host_stage != AFTER:
            raise errors.InvalidArgumentError(None, op, op.error(
                f"You must feed a value for placeholder tensor '{op.name}' with dtype {op.outputs[0].dtype.name} "
                f"and shape {op.outputs[0].shape}"))
        if d.lowering == VARIABLE:
            out = [Spec(op.outputs[0].dtype, op.outputs[0].shape)]
        else:
            ins = [specs[t] for t in op.inputs]
            try:
                out = d.shape_fn(*ins, **op.attrs)
                if d.lowering == VALUE:
                    values[op.outputs[0]] = d.value_fn(op.attrs, *ins)
            except (RuleError, DTypeRuleError) as e:
                shapes = ", ".join(f"{t.name}: {s.shape}" for t, s in fed.items())
                raise errors.InvalidArgumentError(None, op, op.error(f"{e} (fed shapes: {shapes or 'none'})")) from None
            out = [out] if isinstance(out, Spec) else list(out)
            if "shape_region" in op.attrs and not all(TensorShape(s.shape).is_fully_defined() for s in out):
                out = _region_shapes(op, out, specs)
        for t, s in zip(op.outputs, out):
            shape = s.shape if isinstance(s.shape, TensorShape) else TensorShape(s.shape)
            if not shape.is_fully_defined():
                raise errors.InvalidArgumentError(None, op, op.error(f"output shape {shape} is not known at run time"))
            if shape.ndims > MAX_RANK:
                raise errors.InvalidArgumentError(None, op, op.error(
                    f"output shape {shape} has rank {shape.ndims}, above {MAX_RANK}, the most pygrad supports"))
            if t not in fed:
                specs[t] = Spec(s.dtype, shape)
    return specs, values


def _region_shapes(op, out, specs):
    """The output specs of a control-flow op whose outputs are those of op.attrs["shape_region"]
    (a cond's branch): that region's, inferred from the specs known so far."""
    region = op.attrs["shape_region"]
    value_ops, shape_ops = region_ops(region, region.outputs)
    inner, _ = infer_shapes(value_ops | shape_ops, specs)
    return [Spec(s.dtype, inner[t].shape) for s, t in zip(out, region.outputs)]


# ---------------------------------------------------------------- schedule


def schedule(ops, fed):
    """A topological order of ops (creation order among ready ops). A variable's readers run
    before its writers unless they depend on the write, so sess.run([train, loss]) sees the old
    value."""
    succ = {op: set() for op in ops}
    for op in ops:
        for t in op.inputs:
            if t.op in succ and t not in fed:
                succ[t.op].add(op)
        for c in op.control_inputs:
            if c in succ:
                succ[c].add(op)
    readers, writers = {}, []
    for op in ops:
        ref = op.opdef.ref_input
        if ref is not None:
            writers.append((op, op.inputs[ref].op))
        for i, t in enumerate(op.inputs):
            if t.op.opdef.lowering == VARIABLE and t not in fed and (i != ref or op.opdef.reads_ref):
                readers.setdefault(t.op, []).append(op)
    extra = {op: set() for op in ops}
    for w, var in writers:
        after = reachable(succ[w], succ.__getitem__)
        for r in readers.get(var, ()):
            if r is not w and r not in after:
                extra[r].add(w)
    order = _topo(ops, succ, extra)
    return order if order is not None else _topo(ops, succ, {})


def _topo(ops, succ, extra):
    """Kahn's algorithm over succ plus extra edges, earliest-created first; None on a cycle."""
    edges = {op: succ[op] | extra.get(op, set()) for op in ops}
    indeg = {op: 0 for op in ops}
    for bs in edges.values():
        for b in bs:
            indeg[b] += 1
    ready = [(op._id, op) for op in ops if indeg[op] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for b in edges[op]:
            indeg[b] -= 1
            if indeg[b] == 0:
                heapq.heappush(ready, (b._id, b))
    return order if len(order) == len(ops) else None


# ---------------------------------------------------------------- lower


class Buffer:
    """A logical buffer, by its kind (pygrad.kernels' *_BUFFER): a feed (payload: its Spec), a
    constant (payload: the array), a variable (payload: its store id) or a temporary of nbytes
    (payload: the op whose output it is)."""

    __slots__ = ("kind", "payload", "nbytes")

    def __init__(self, kind, payload=None, nbytes=0):
        self.kind, self.payload, self.nbytes = kind, payload, nbytes


class Operand:
    """A step's view of a buffer: dtype code and dims (one buffer may be read with several)."""

    __slots__ = ("buffer", "dtype", "dims")

    def __init__(self, buffer, dtype, dims):
        self.buffer, self.dtype, self.dims = buffer, dtype, tuple(dims)

    def with_dims(self, dims):
        """The same elements in the same order, read with other dims."""
        return Operand(self.buffer, self.dtype, dims)


class Step:
    """One kernel call of the plan: the op it lowers, the variables it reads (their store ids) and
    the one it initializes (-1: none); a step fusion made of the steps of several ops also computes
    the ops in `fused` (the others, in the order their steps had)."""

    __slots__ = ("op", "kernel", "ins", "outs", "attrs", "reads_vars", "init_var", "fused")

    def __init__(self, op, kernel, ins, outs, attrs, reads_vars, init_var, fused=()):
        self.op, self.kernel, self.ins, self.outs, self.attrs = op, kernel, ins, outs, attrs
        self.reads_vars, self.init_var, self.fused = reads_vars, init_var, fused


class Label:
    """A place in the steps a jump goes to; its index is set when it is placed."""

    __slots__ = ("index",)

    def __init__(self):
        self.index = None


class Program:
    """What lower builds: the buffer behind each tensor, and the steps in order. A jump step has
    kernel None and attrs {"target": Label}; loops are the (first, last) steps of each loop, whose
    buffers stay live from one iteration to the next; stacks numbers the per-run stacks. host_ops
    are the pure host values (AFTER ops with outputs: summaries) in order with, for each input, the
    operand the plan fetches for it (None: a string input)."""

    def __init__(self, specs, values, store, in_plan=frozenset()):
        self.specs, self.values, self.store, self.in_plan = specs, values, store, in_plan
        self.buffer_of = {}
        self.steps = []
        self.host_ops = []
        self.loops = []
        self.carries = []  # the copies of a loop variable's new value into its buffer (elide_loop_copies)
        self.stacks = {}

    def stack_id(self, key):
        return self.stacks.setdefault(key, len(self.stacks))

    def operand(self, tensor, shape=None):
        s = self.specs[tensor]
        return Operand(self.buffer_of[tensor], s.dtype.code, s.shape.dims if shape is None else shape)


def _native_dtype(op, tensor):
    if tensor.dtype.code is None:
        raise errors.InvalidArgumentError(None, op, op.error(
            f"{tensor.name} is a {tensor.dtype.name} tensor: pygrad holds strings as constants and feeds only, "
            f"and has no kernel for them"))


class OpContext:
    """What one op's lowering works with: its inputs' concrete specs, its inputs' and outputs'
    buffers, and the steps it appends, each recorded as this op's."""

    def __init__(self, program, op):
        self.program, self.op = program, op

    def in_specs(self):
        return [self.program.specs[t] for t in self.op.inputs]

    def operand(self, tensor, shape=None):
        """tensor's buffer, read with its own dims or with shape."""
        _native_dtype(self.op, tensor)
        return self.program.operand(tensor, shape)

    def output(self, i):
        """A new temporary for output i of the op."""
        t = self.op.outputs[i]
        _native_dtype(self.op, t)
        s = self.program.specs[t]
        nbytes = s.shape.num_elements() * s.dtype.size
        if nbytes > MEMORY_BYTES:
            raise MemoryError(self.op.error(f"output {i} of shape {s.shape} ({s.dtype.name}) needs {nbytes} bytes, "
                                            f"more than the {MEMORY_BYTES} bytes of this machine's memory"))
        b = Buffer(TEMP_BUFFER, self.op, nbytes)
        self.program.buffer_of[t] = b
        return Operand(b, s.dtype.code, s.shape.dims)

    def alias(self, out_tensor, in_tensor):
        """out_tensor shares in_tensor's buffer; a variable's is copied (a read is a snapshot)."""
        src = self.program.buffer_of.get(in_tensor)
        if src is None:  # a host op's output: held in Python (HostValues), not in the plan
            return
        if src.kind == VAR_BUFFER:  # the variable read with the output's dims (a reshape's)
            out, var = self.output(out_tensor.value_index), self.operand(in_tensor)
            self.step(COPY, [Operand(var.buffer, var.dtype, out.dims)], [out], {})
        else:
            self.program.buffer_of[out_tensor] = src

    def host_input(self, tensor):
        """The operand a host op reads tensor from (a plan fetch), or None for a string; a
        variable is copied where the op runs in the plan's order (a read is a snapshot)."""
        if tensor.dtype.code is None:
            return None
        o = self.operand(tensor)
        if o.buffer.kind != VAR_BUFFER:
            return o
        s = self.program.specs[tensor]
        copy = Operand(Buffer(TEMP_BUFFER, self.op, s.shape.num_elements() * s.dtype.size), o.dtype, o.dims)
        self.step(COPY, [o], [copy], {})
        return copy

    def zero_like(self, tensor):
        s = self.program.specs[tensor]
        return Operand(Buffer(CONST_BUFFER, np.zeros(s.shape.dims, s.dtype.np)), s.dtype.code, s.shape.dims)

    def temp(self, spec):
        """A new temporary of spec (a loop variable's buffer)."""
        b = Buffer(TEMP_BUFFER, self.op, spec.shape.num_elements() * spec.dtype.size)
        return Operand(b, spec.dtype.code, spec.shape.dims)

    def copy(self, src, dst):
        if src.buffer is not dst.buffer:
            self.step(COPY, [src], [dst], {})

    def carry(self, src, dst):
        """Copies a loop variable's new value src into its buffer dst at the end of an iteration."""
        self.copy(src, dst)
        if src.buffer is not dst.buffer:
            self.program.carries.append(self.program.steps[-1])

    # ---- control flow: jumps, loops and the regions of control-flow ops ----
    def label(self):
        return Label()

    def place(self, label):
        label.index = len(self.program.steps)

    def jump(self, label, cond=None):
        """Continues at label: always, or (cond: a bool scalar Operand) when cond is false."""
        ins = [cond] if cond is not None else []
        self.program.steps.append(Step(self.op, None, ins, [], {"target": label}, [], -1))

    def loop(self, first):
        """Marks the steps from index first to the last one as a loop."""
        self.program.loops.append((first, len(self.program.steps) - 1))

    def in_plan(self, op):
        return op in self.program.in_plan

    def lower_region(self, region, roots, inner):
        """Lowers the ops of region that roots need; inner ({placeholder: Operand}) binds its
        placeholders. Returns {tensor: Spec} of the region's tensors."""
        program = self.program
        value_ops, shape_ops = region_ops(region, roots)
        fed = {t: Spec(program.specs[t].dtype, TensorShape(o.dims)) if t in program.specs else
               Spec(t.dtype, TensorShape(o.dims)) for t, o in inner.items()}
        specs, values = infer_shapes(value_ops | shape_ops, {**program.specs, **fed})
        program.specs.update(specs)
        program.values.update(values)
        for t, o in inner.items():
            program.buffer_of[t] = o.buffer
        for op in schedule(value_ops, fed):
            if not (op.outputs and all(t in fed for t in op.outputs)):
                _lower_op(OpContext(program, op), op)
        return specs

    def step(self, kernel, ins, outs, attrs):
        d = self.op.opdef
        ref = self.program.buffer_of[self.op.inputs[d.ref_input]] if d.ref_input is not None else None
        reads = [o.buffer.payload for o in ins
                 if o.buffer.kind == VAR_BUFFER and (o.buffer is not ref or d.reads_ref)]
        init_var = ref.payload if ref is not None and d.initializes else -1
        self.program.steps.append(Step(self.op, kernel, ins, outs, attrs, reads, init_var))


def lower(order, specs, values, fed, store, in_plan=frozenset()):
    """The Program of the ops in order; fed ({tensor: Spec}) are the plan's feeds; in_plan are
    the ops the plan runs, those of control-flow regions included (see plan_ops)."""
    program = Program(specs, values, store, in_plan)
    for t, spec in fed.items():
        program.buffer_of[t] = Buffer(FEED_BUFFER, spec)
    for op in order:
        if op.outputs and all(t in fed for t in op.outputs):
            continue
        _lower_op(OpContext(program, op), op)
    return program


def _lower_op(ctx, op):
    d, program = op.opdef, ctx.program
    kind = d.lowering
    out = op.outputs[0] if op.outputs else None
    if kind in (FEED, NOOP) or kind == HOST and not op.outputs:
        return
    if kind == CONST:
        program.buffer_of[out] = Buffer(CONST_BUFFER, op.attrs["value"])
    elif kind == VALUE:
        program.buffer_of[out] = Buffer(CONST_BUFFER, program.values[out])
    elif kind == VARIABLE:
        program.buffer_of[out] = Buffer(VAR_BUFFER, program.store.id_of(op))
    elif kind == ALIAS:
        ctx.alias(out, op.inputs[0])
    elif kind == KERNEL:
        ins = [ctx.operand(t) for i, t in enumerate(op.inputs) if i not in d.shape_only_inputs]
        if d.ref_input is not None and program.buffer_of[op.inputs[d.ref_input]].kind != VAR_BUFFER:
            raise errors.InvalidArgumentError(None, op, op.error("the variable it writes cannot be fed"))
        if d.ref_input is not None and d.output_is_ref:
            program.buffer_of[out] = program.buffer_of[op.inputs[d.ref_input]]
            outs = [ctx.operand(out)]
        else:
            outs = [ctx.output(i) for i in range(len(op.outputs))]
        attrs = d.attrs_fn(op.attrs, ctx.in_specs(), [program.specs[t] for t in op.outputs]) if d.attrs_fn else {}
        ctx.step(d.kernel, ins, outs, attrs)
    elif kind == CUSTOM:
        d.lower_fn(ctx, op)
    elif kind == HOST:  # a pure value after the plan (the outputs of earlier stages are fed)
        program.host_ops.append((op, [ctx.host_input(t) for t in op.inputs]))
    else:
        raise RuntimeError(f"{op.type}: unknown lowering {kind!r}")
