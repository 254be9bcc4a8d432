"""Lowers the pruned graph of one run signature (fetches, targets, feeds and their shapes) to a
native Plan: concrete shapes, a schedule, buffers (reused when lifetimes do not overlap) and steps.
"""
import heapq

import numpy as np

from pygrad import _C, errors
from pygrad.registry import (ALIAS, CONST, CUSTOM, FEED, KERNEL, NOOP, VALUE, VARIABLE, DTypeRuleError, RuleError,
                             Spec)
from pygrad.shapes import TensorShape


class Buffer:
    """A logical buffer: a feed, a constant, a variable, or a temporary of nbytes."""

    __slots__ = ("kind", "payload", "nbytes", "physical")

    def __init__(self, kind, payload=None, nbytes=0):
        self.kind, self.payload, self.nbytes, self.physical = kind, payload, nbytes, None


class Operand:
    __slots__ = ("buffer", "dtype", "dims")

    def __init__(self, buffer, dtype, dims):
        self.buffer, self.dtype, self.dims = buffer, dtype, tuple(dims)


class Step:
    __slots__ = ("op", "kernel", "ins", "outs", "attrs", "reads_vars", "init_var")

    def __init__(self, op, kernel, ins, outs, attrs, reads_vars, init_var):
        self.op, self.kernel, self.ins, self.outs, self.attrs = op, kernel, ins, outs, attrs
        self.reads_vars, self.init_var = reads_vars, init_var


class CompiledRun:
    """A built plan and what Session.run needs to call it."""

    __slots__ = ("plan", "steps", "fetch_index")

    def __init__(self, plan, steps, fetch_index):
        self.plan, self.steps, self.fetch_index = plan, steps, fetch_index


def compile_run(session, fetch_tensors, target_ops, feed_tensors, feed_shapes):
    return Lowering(session, feed_tensors, feed_shapes).build(fetch_tensors, target_ops)


class Lowering:
    def __init__(self, session, feed_tensors, feed_shapes):
        self.session = session
        self.specs = {}
        self.values = {}
        self.buffer_of = {}
        self.steps = []
        self.feeds = {}
        self.feed_buffers = []
        self._current_op = None
        for i, (t, shape) in enumerate(zip(feed_tensors, feed_shapes)):
            b = Buffer("feed", i)
            self.feeds[t] = b
            self.feed_buffers.append(b)
            self.buffer_of[t] = b
            self.specs[t] = Spec(t.dtype, TensorShape(shape))

    # ---------------------------------------------------------------- the passes
    def build(self, fetch_tensors, target_ops):
        value_ops, shape_ops = self._prune(fetch_tensors, target_ops)
        for op in sorted(value_ops | shape_ops, key=lambda o: o._id):
            self._infer(op)
        for op in self._schedule(value_ops):
            self._current_op = op
            self._lower(op)
        fetches = [self.operand(t) for t in fetch_tensors]
        plan = self._emit(fetches)
        return CompiledRun(plan, self.steps, None)

    def _prune(self, fetch_tensors, target_ops):
        """Ops whose values the run needs, and ops needed only for their output shapes."""
        value_ops, shape_ops = set(), set()
        stack = [t.op for t in fetch_tensors if t not in self.feeds] + list(target_ops)
        while stack:
            op = stack.pop()
            if op in value_ops:
                continue
            value_ops.add(op)
            shape_ops.discard(op)
            for i, t in enumerate(op.inputs):
                if t in self.feeds:
                    continue
                if i in op.opdef.ignores_input_values:
                    self._add_shape_only(t.op, value_ops, shape_ops)
                else:
                    stack.append(t.op)
            stack.extend(op.control_inputs)
        return value_ops, shape_ops

    def _add_shape_only(self, op, value_ops, shape_ops):
        stack = [op]
        while stack:
            op = stack.pop()
            if op in value_ops or op in shape_ops:
                continue
            shape_ops.add(op)
            stack.extend(t.op for t in op.inputs if t not in self.feeds)

    def _schedule(self, ops):
        """Topological order (creation order among ready ops). A variable's readers run before its
        writers unless they depend on the write, so sess.run([train, loss]) sees the old value."""
        succ = {op: set() for op in ops}
        for op in ops:
            for t in op.inputs:
                if t.op in succ and t not in self.feeds:
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
                if t.op.opdef.lowering == VARIABLE and t not in self.feeds and (i != ref or op.opdef.reads_ref):
                    readers.setdefault(t.op, []).append(op)
        extra = {op: set() for op in ops}
        for w, var in writers:
            after = _descendants(w, succ)
            for r in readers.get(var, ()):
                if r is not w and r not in after:
                    extra[r].add(w)
        order = _topo(ops, succ, extra)
        return order if order is not None else _topo(ops, succ, {op: () for op in ops})

    def _infer(self, op):
        d = op.opdef
        if all(t in self.feeds for t in op.outputs) and op.outputs:
            return
        if d.lowering == FEED:
            shape = op.outputs[0].shape
            raise errors.InvalidArgumentError(
                None, op, f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                          f"{op.outputs[0].dtype.name} and shape {shape}\n  placeholder defined at {op.site}")
        if d.lowering == VARIABLE:
            specs = [Spec(op.outputs[0].dtype, op.outputs[0].shape)]
        else:
            ins = [self.specs[t] for t in op.inputs]
            try:
                specs = d.shape_fn(*ins, **op.attrs)
            except (RuleError, DTypeRuleError) as e:
                fed = ", ".join(f"{t.name}: {s.shape}" for t, s in self.specs.items() if t in self.feeds)
                raise errors.InvalidArgumentError(None, op, op.error(f"{e} (fed shapes: {fed or 'none'})")) from None
            specs = [specs] if isinstance(specs, Spec) else list(specs)
            if d.lowering == VALUE:
                self.values[op.outputs[0]] = d.value_fn(op.attrs, *ins)
        for t, s in zip(op.outputs, specs):
            shape = s.shape if isinstance(s.shape, TensorShape) else TensorShape(s.shape)
            if not shape.is_fully_defined():
                raise errors.InvalidArgumentError(None, op, op.error(f"output shape {shape} is not known at run time"))
            if t not in self.feeds:
                self.specs[t] = Spec(s.dtype, shape)

    def _lower(self, op):
        d = op.opdef
        kind = d.lowering
        if kind in (FEED, NOOP) or all(t in self.feeds for t in op.outputs) and op.outputs:
            return
        out = op.outputs[0] if op.outputs else None
        if kind == CONST:
            self.buffer_of[out] = Buffer("const", op.attrs["value"])
        elif kind == VALUE:
            self.buffer_of[out] = Buffer("const", self.values[out])
        elif kind == VARIABLE:
            self.buffer_of[out] = Buffer("var", self.session._variable_id(op))
        elif kind == ALIAS:
            src = self.buffer_of[op.inputs[0]]
            if src.kind == "var":  # a read of a variable is a snapshot: copy it
                self.step("cast", [self.operand(op.inputs[0])], [self.output(op, 0)], {})
            else:
                self.buffer_of[out] = src
        elif kind == KERNEL:
            ins = [self.operand(t) for i, t in enumerate(op.inputs) if i not in d.ignores_input_values]
            if d.ref_input is not None and self.buffer_of[op.inputs[d.ref_input]].kind != "var":
                raise errors.InvalidArgumentError(None, op, op.error("the variable it writes cannot be fed"))
            if d.ref_input is not None and d.output_is_ref:
                self.buffer_of[out] = self.buffer_of[op.inputs[d.ref_input]]
                outs = [self.operand(out)]
            else:
                outs = [self.output(op, i) for i in range(len(op.outputs))]
            attrs = d.attrs_fn(op.attrs, [self.specs[t] for t in op.inputs],
                               [self.specs[t] for t in op.outputs]) if d.attrs_fn else {}
            self.step(d.kernel, ins, outs, attrs)
        elif kind == CUSTOM:
            d.lower_fn(self, op)
        else:
            raise RuntimeError(f"{op.type}: unknown lowering {kind!r}")

    # ---------------------------------------------------------------- helpers for lower functions
    def in_specs(self, op):
        return [self.specs[t] for t in op.inputs]

    def operand(self, tensor, shape=None):
        s = self.specs[tensor]
        return Operand(self.buffer_of[tensor], s.dtype.code, s.shape.dims if shape is None else shape)

    def output(self, op, i):
        t = op.outputs[i]
        s = self.specs[t]
        b = Buffer("temp", nbytes=s.shape.num_elements() * s.dtype.size)
        self.buffer_of[t] = b
        return Operand(b, s.dtype.code, s.shape.dims)

    def alias(self, out_tensor, in_tensor):
        src = self.buffer_of[in_tensor]
        if src.kind == "var":
            self.step("cast", [self.operand(in_tensor)], [self.output(out_tensor.op, out_tensor.value_index)], {})
        else:
            self.buffer_of[out_tensor] = src

    def zero_like(self, tensor):
        s = self.specs[tensor]
        return Operand(Buffer("const", np.zeros(s.shape.dims, s.dtype.np)), s.dtype.code, s.shape.dims)

    def step(self, kernel, ins, outs, attrs):
        op = self._current_op
        d = op.opdef
        ref_buffer = self.buffer_of[op.inputs[d.ref_input]] if d.ref_input is not None else None
        reads = [o.buffer.payload for o in ins if o.buffer.kind == "var"
                 and (o.buffer is not ref_buffer or d.reads_ref)]
        init_var = ref_buffer.payload if ref_buffer is not None and d.initializes else -1
        self.steps.append(Step(op, kernel, ins, outs, attrs, reads, init_var))

    # ---------------------------------------------------------------- the native plan
    def _emit(self, fetches):
        plan = _C.Plan(self.session._store)
        for b in self.feed_buffers:
            s = self.specs[next(t for t, fb in self.feeds.items() if fb is b)]
            b.physical = plan.add_feed(s.dtype.code, list(s.shape.dims))
        fetched = {id(o.buffer) for o in fetches}
        last_use = {}
        for i, st in enumerate(self.steps):
            for o in st.ins + st.outs:
                last_use[id(o.buffer)] = i
        free = []  # (capacity, physical id) of temporaries no step still needs
        capacity = {}
        initialized = set()
        for i, st in enumerate(self.steps):
            for o in st.ins + st.outs:
                b = o.buffer
                if b.physical is not None:
                    continue
                if b.kind == "const":
                    b.physical = plan.add_const(np.asarray(b.payload, order="C"))
                elif b.kind == "var":
                    b.physical = plan.add_var(b.payload)
                else:
                    fit = min((f for f in free if f[0] >= b.nbytes), default=None)
                    if fit is not None:
                        free.remove(fit)
                        b.physical = fit[1]
                    else:
                        b.physical = plan.add_temp(b.nbytes)
                        capacity[b.physical] = b.nbytes
            for var in st.reads_vars:
                if var not in initialized:
                    plan.require_initialized(var)
                    initialized.add(var)
            plan.add_step(st.kernel, [_native(o) for o in st.ins], [_native(o) for o in st.outs], st.attrs,
                          st.init_var)
            if st.init_var >= 0:
                initialized.add(st.init_var)
            for o in st.ins + st.outs:
                b = o.buffer
                if b.kind == "temp" and last_use.get(id(b)) == i and id(b) not in fetched and b.physical is not None:
                    last_use[id(b)] = -1
                    free.append((capacity[b.physical], b.physical))
        for o in fetches:
            b = o.buffer
            if b.physical is None:
                if b.kind == "const":
                    b.physical = plan.add_const(np.asarray(b.payload, order="C"))
                elif b.kind == "var":
                    b.physical = plan.add_var(b.payload)
            if b.kind == "var" and b.payload not in initialized:
                plan.require_initialized(b.payload)
        plan.set_fetches([_native(o) for o in fetches])
        return plan


def _native(o):
    return (o.buffer.physical, o.dtype, list(o.dims))


def _descendants(op, succ):
    seen, stack = set(), [op]
    while stack:
        for s in succ[stack.pop()]:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen


def _topo(ops, succ, extra):
    """Kahn's algorithm over succ plus extra edges, earliest-created first; None on a cycle."""
    indeg = {op: 0 for op in ops}
    edges = {op: set(succ[op]) for op in ops}
    for a, bs in extra.items():
        edges[a] |= set(bs)
    for a in ops:
        for b in edges[a]:
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
