"""tf.cond, tf.case and tf.while_loop: ops whose regions lower into the plan as steps that jump.

A cond's branch functions and a loop's condition and body build their ops inside a Region (the
graph's control-flow context while they run). The If and While ops take the region's inputs: the
loop variables, and the tensors made outside that the region reads ("captures", computed before
the op, as TF1 does). Their lowering lowers each region's ops where they run: a branch reads the
predicate and jumps over the other branch; a loop evaluates its condition, jumps out when it is
false, runs its body, copies the body's results into the loop variables and jumps back. A hidden
int32 loop variable counts the iterations (the trip count is output 0 of While).

Gradients follow TF1's design (their rules are in pygrad/control_flow_grad.py, which builds them
with tf.gradients). The gradient of a cond is a cond on the same predicate whose branches hold each
branch's gradient. The gradient of a loop is a loop that runs the trip count,
each iteration computing the gradient of one forward iteration: the values it needs from the
forward body (Region.pops) are pushed onto per-run stacks by the forward loop and popped, in
reverse, by the backward one; the gradients of the captured tensors are summed over iterations.
"""
import contextlib

from pygrad import dtypes, errors, nest
from pygrad.graph import Tensor, get_default_graph, unwrap
from pygrad.kernels import STACK_POP, STACK_PUSH
from pygrad.ops import array_ops, math_ops
from pygrad.registry import BETWEEN, CUSTOM, NOOP, OpDef, Spec
from pygrad.shapes import TensorShape, as_shape

class Region:
    """Where ops of a cond's branch ("branch") or a loop's condition or body ("loop") are built.
    members: its ops; placeholders: the tensors it is given (loop variables); outputs: what it
    delivers; captures: tensors made outside it that it reads; pops: tensors of the forward
    region of which it is the gradient (`forward`) that it takes from the stacks; backwards: the
    gradient regions of this one; op: the If or While op it belongs to."""

    def __init__(self, kind, parent, forward=None):
        self.kind, self.parent, self.forward = kind, parent, forward
        self.members, self.placeholders, self.outputs = set(), [], []
        self.captures, self.pops, self.backwards = [], [], []
        self.controls = []  # ops made outside it that its ops wait for: the If or While op waits for them
        self.op = None
        if forward is not None:
            forward.backwards.append(self)

    def chain(self):
        r = self
        while r is not None:
            yield r
            r = r.parent

    def in_loop(self):
        return any(r.kind == "loop" for r in self.chain())


@contextlib.contextmanager
def _entered(region):
    graph = get_default_graph()
    old, start = graph._control_flow_context, len(graph._ops)
    graph._control_flow_context = region
    try:
        yield
    finally:
        graph._control_flow_context = old
        region.members |= {op for op in graph._ops[start:] if op._control_flow_context is region}


def _close(region):
    """Sorts the tensors region reads from outside into captures (made in an enclosing region, or
    by a forward region whose gradient an enclosing region is) and pops (made by region.forward
    inside a loop; a forward branch outside loops is read where it left its values)."""
    outer = set(region.parent.chain()) if region.parent is not None else set()

    def sort(t, shape_only):
        src = t.op._control_flow_context
        if t.op in region.members:
            return
        if src is None or src in outer:
            lst = region.captures
        elif shape_only:
            return  # its shape is known once its own region is lowered
        elif src is region.forward:
            if not src.in_loop():
                return
            lst = region.pops
        else:
            lst = region.captures
        if t not in lst:
            lst.append(t)

    for op in sorted(region.members, key=lambda o: o._id):
        for i, t in enumerate(op.inputs):
            sort(t, i in op.opdef.shape_only_inputs)
        for c in op.control_inputs:
            src = c._control_flow_context
            if c not in region.members and (src is None or src in outer) and c not in region.controls:
                region.controls.append(c)
    for t in region.outputs:
        sort(t, False)


def _wait_for_controls(op, regions):
    """op (an If or While) waits for what the ops of its regions wait for outside them (TF1 brings
    such a control input into the cond or loop; here the whole op waits)."""
    for r in regions:
        for c in r.controls:
            if c not in op.control_inputs:
                op._add_control_input(c)


# ---------------------------------------------------------------- lowering helpers


def _pop(ctx, region):
    """Steps that pop region's stacked values into buffers of their own; returns what to restore."""
    saved = {}
    for t in region.pops:
        o = ctx.temp(ctx.program.specs[t])
        ctx.step(STACK_POP, [], [o], {"stack": ctx.program.stack_id((region, t))})
        saved[t] = ctx.program.buffer_of.get(t)
        ctx.program.buffer_of[t] = o.buffer
    return saved


def _restore(ctx, saved):
    for t, b in saved.items():
        if b is None:
            del ctx.program.buffer_of[t]
        else:
            ctx.program.buffer_of[t] = b


def _pushes(ctx, region):
    """(tensor, stack) of region the gradient regions in this plan pop."""
    return [(t, ctx.program.stack_id((b, t))) for b in region.backwards if ctx.in_plan(b.op) for t in b.pops]


def _lower_part(ctx, region, inner):
    """Lowers a branch or a loop body with its pops and pushes; returns its outputs' operands."""
    saved = _pop(ctx, region)
    pushed = _pushes(ctx, region)
    ctx.lower_region(region, region.outputs + [t for t, _ in pushed], inner)
    for t, stack in pushed:
        ctx.step(STACK_PUSH, [ctx.operand(t)], [], {"stack": stack})
    outs = [ctx.operand(t) for t in region.outputs]
    _restore(ctx, saved)
    return outs


def _check_same(op, what, t, before, after):
    if tuple(before) != tuple(after):
        raise ValueError(op.error(
            f"{what} {t.name} has shape {TensorShape(before)} on entry and {TensorShape(after)} after one iteration: a "
            f"plan gives every buffer a size fixed when the plan is built, so a loop variable's shape may differ "
            f"between runs (shape_invariants) but not between iterations"))


# ---------------------------------------------------------------- cond

LoopVar = OpDef("LoopVar", lowering=NOOP, differentiable=False)


@LoopVar.shape
def _(*, dtype, shape):
    return Spec(dtype, shape)


If = OpDef("If", lowering=CUSTOM)


@If.shape
def _(pred, *captures, out, **_):
    return [Spec(dt, shape) for dt, shape in out]


@If.lower
def _(ctx, op):
    true_region, false_region = op.attrs["regions"]
    outs = [ctx.output(i) for i in range(len(op.outputs))]
    other, end = ctx.label(), ctx.label()
    ctx.jump(other, ctx.operand(op.inputs[0]))
    for region in (true_region, false_region):
        for t, src, dst in zip(region.outputs, _lower_part(ctx, region, {}), outs):
            if tuple(src.dims) != tuple(dst.dims):
                raise ValueError(op.error(f"the branches give {t.name} shapes {TensorShape(dst.dims)} and "
                                          f"{TensorShape(src.dims)}: a plan's buffers have one size"))
            ctx.copy(src, dst)
        if region is true_region:
            ctx.jump(end)
            ctx.place(other)
    ctx.place(end)


def _as_output(value, what):
    value = unwrap(value)
    if isinstance(value, Tensor):
        return value
    try:
        return array_ops.convert_to_tensor(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must return Tensors, got {type(value).__name__}") from None


def _build_cond(pred, true_fn, false_fn, name, forward=(None, None), after=None):
    """The flat outputs of an If op on pred of the two functions' results, and their structure."""
    graph = get_default_graph()
    parent = graph._control_flow_context
    regions, results = [], []
    for fn, fwd, what in ((true_fn, forward[0], "true_fn"), (false_fn, forward[1], "false_fn")):
        region = Region("branch", parent, fwd)
        with _entered(region):
            res = fn()
            if isinstance(res, (list, tuple)) and len(res) == 1 and not hasattr(res, "_fields"):
                res = res[0]  # strict=False: a singleton list is its element
            flat = [_as_output(v, what) for v in nest.flatten(res)] if res is not None else []
        region.outputs = flat
        regions.append(region)
        results.append(res)
    t_out, f_out = regions[0].outputs, regions[1].outputs
    site = errors.user_site()
    if len(t_out) != len(f_out):
        raise ValueError(errors.op_message("If", name, f"true_fn and false_fn must return the same structure, got "
                                           f"{len(t_out)} and {len(f_out)} tensors", site))
    out = []
    for a, b in zip(t_out, f_out):
        if a.dtype != b.dtype:
            raise TypeError(errors.op_message("If", name, f"true_fn gives {a.name} of dtype {a.dtype.name}, false_fn "
                                              f"gives {b.name} of dtype {b.dtype.name}", site))
        out.append((a.dtype, _most_specific_common(a.shape, b.shape)))
    for r in regions:
        _close(r)
    captures = []
    for r in regions:
        captures += [t for t in r.captures if t not in captures]
    kind = IfInPython if _runs_python(regions) else If
    op_out = kind(pred, *captures, regions=tuple(regions), shape_region=regions[0], out=out, name=name)
    op = op_out.op if isinstance(op_out, Tensor) else op_out[0].op if isinstance(op_out, (list, tuple)) else op_out
    for r in regions:
        r.op = op
    _wait_for_controls(op, regions)
    if after is not None:
        op._add_control_input(after)
    return list(op.outputs), results[0]


def _most_specific_common(a, b):
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """TF1's tf.cond: true_fn() if pred else false_fn(); only the taken branch's ops run."""
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError(If.error("true_fn and false_fn must be callable", name, TypeError).args[0])
    if isinstance(pred, bool):
        raise TypeError(If.error("pred must not be a Python bool", name, TypeError).args[0])
    pred = array_ops.convert_to_tensor(pred)
    if pred.dtype != dtypes.bool_:
        raise If.error(f"pred must be a bool tensor, got {pred.name} of dtype {pred.dtype.name}", name, TypeError)
    if pred.shape.ndims not in (None, 0):
        raise If.error(f"pred must be a scalar, got {pred.name} of shape {pred.shape}", name)
    graph = get_default_graph()
    with graph.name_scope(name or "cond"):
        flat, structure = _build_cond(pred, true_fn, false_fn, "If")
    if structure is None:
        return None
    return nest.pack_sequence_as(structure, flat)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """TF1's tf.case: the fn of the first pred that is true, else default(); built from conds.
    Without default the last pair's fn is the default, as in TF1. exclusive=True is accepted
    and its check (at most one pred true) is not made."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    for p in pairs:
        if not isinstance(p, tuple) or len(p) != 2 or not callable(p[1]):
            raise TypeError(If.error("pred_fn_pairs must be (pred, callable) pairs", name, TypeError).args[0])
    if default is None:
        if not pairs:
            raise ValueError(If.error("pred_fn_pairs must not be empty without a default", name).args[0])
        default = pairs.pop()[1]

    def chain(i):
        if i == len(pairs):
            return default()
        pred, fn = pairs[i]
        return cond(pred, fn, lambda: chain(i + 1))

    with get_default_graph().name_scope(name):
        return chain(0)


# ---------------------------------------------------------------- while_loop

While = OpDef("While", lowering=CUSTOM)


@While.shape
def _(*ins, n_vars, shapes, **_):
    return [Spec(s.dtype, s.shape if isinstance(s, Spec) else shape) for s, shape in zip(ins[:n_vars], shapes)]


@While.lower
def _(ctx, op):
    a = op.attrs
    cond_region, body = a["regions"]
    n = a["n_vars"]
    vars_ = [ctx.output(i) for i in range(n)]
    for t, v in zip(op.inputs[:n], vars_):
        ctx.copy(ctx.operand(t), v)
    top, done = ctx.label(), ctx.label()
    ctx.place(top)
    first = len(ctx.program.steps)
    ctx.lower_region(cond_region, cond_region.outputs, dict(zip(cond_region.placeholders, vars_)))
    ctx.jump(done, ctx.operand(cond_region.outputs[0]))
    outs = _lower_part(ctx, body, dict(zip(body.placeholders, vars_)))
    for k, (t, o, v) in enumerate(zip(body.outputs, outs, vars_)):
        _check_same(op, f"loop variable {k - 1}" if k else "the iteration counter", op.inputs[k], v.dims, o.dims)
    staged, var_buffers = [], {v.buffer for v in vars_}
    for o, v in zip(outs, vars_):  # a body may return loop variables in another order
        if o.buffer is not v.buffer and o.buffer in var_buffers:
            staged.append((ctx.temp(ctx.program.specs[op.outputs[vars_.index(v)]]), v))
            ctx.copy(o, staged[-1][0])
    for o, v in zip(outs, vars_):
        if o.buffer not in var_buffers:
            ctx.carry(o, v)
    for s, v in staged:
        ctx.copy(s, v)
    ctx.jump(top)
    ctx.loop(first)
    ctx.place(done)


# ---------------------------------------------------------------- regions that run Python
# A cond or loop whose regions hold ops that run in Python (tf.py_func, tf.Print, an iterator's
# get_next; host.py) cannot jump inside a native plan: it is itself such an op (stage BETWEEN),
# which runs the region the predicate picks, or the condition and body in turn, each as a run of
# the session with the region's inputs fed (each such run a plan with host stages of its own).


def _runs_python(regions):
    return any(m.opdef.host_stage is not None for r in regions for m in r.members)


def _no_gradient(op, *grads):
    raise LookupError(op.error("gradients through a cond or while_loop whose branches or body run Python ops "
                               "(py_func, Print, an iterator, a TensorArray that grows in the run) are not supported"))


IfInPython = OpDef("IfInPython", host=BETWEEN)
IfInPython.shape(If.shape_fn)
IfInPython.grad(_no_gradient)


@IfInPython.host
def _(ctx, op, values):
    region = op.attrs["regions"][0 if values[0] else 1]
    return ctx.run(list(region.outputs), dict(zip(op.inputs[1:], values[1:])))


WhileInPython = OpDef("WhileInPython", host=BETWEEN)
WhileInPython.shape(While.shape_fn)
WhileInPython.grad(_no_gradient)


@WhileInPython.host
def _(ctx, op, values):
    n = op.attrs["n_vars"]
    cond_region, body = op.attrs["regions"]
    captured = dict(zip(op.inputs[n:], values[n:]))
    current = list(values[:n])
    while ctx.run(cond_region.outputs[0], {**captured, **dict(zip(cond_region.placeholders, current))}):
        current = ctx.run(list(body.outputs), {**captured, **dict(zip(body.placeholders, current))})
    return current


def _is_tensor_array(v):
    return hasattr(v, "_as_loop_var")


def _loop_leaf(v):
    if _is_tensor_array(v):
        return v._as_loop_var()
    v = unwrap(v)
    return v if isinstance(v, Tensor) else array_ops.convert_to_tensor(v)


def _pack(structure, flat, templates):
    leaves = [t if not _is_tensor_array(tmpl) else tmpl._with_flow(t, None) if tmpl._grows_in_run() else
              tmpl._with_flow(t) for tmpl, t in zip(templates, flat)]
    return nest.pack_sequence_as(structure, leaves)


def _more_specific(shape, invariant):
    """shape is as specific as invariant or more (TF's _ShapeLessThanOrEqual)."""
    if invariant.ndims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(d is None or s == d for s, d in zip(shape.as_list(), invariant.as_list()))


def _build_while(cond_fn, body_fn, loop_vars, shape_invariants, maximum_iterations, name, back_prop,
                 forward=None, after=None):
    """The flat outputs of a While op (trip count first) of the loop, and nothing else."""
    graph = get_default_graph()
    parent = graph._control_flow_context
    site = errors.user_site()
    templates = nest.flatten(loop_vars)
    flat = [_loop_leaf(v) for v in templates]
    if shape_invariants is not None:
        invariants = [as_shape(s) if not _is_tensor_array(v) else t.shape
                      for s, v, t in zip(nest.flatten(shape_invariants), templates, flat)]
        if len(invariants) != len(flat):
            raise ValueError(errors.op_message("While", name, f"shape_invariants has {len(invariants)} shapes for "
                                               f"{len(flat)} loop variables", site))
        for t, s in zip(flat, invariants):
            if not t.shape.is_compatible_with(s) or not _more_specific(t.shape, s):
                raise ValueError(errors.op_message("While", name, f"the shape invariant specified for {t.name} is "
                                                   f"not compatible with the initial shape of the loop variable. It "
                                                   f"enters the loop with shape {t.shape}, but the specified shape "
                                                   f"invariant is {s}.", site))
    else:
        invariants = [t.shape for t in flat]
    # an array that grows in the run may have another size after each iteration
    invariants = [TensorShape([None]).concatenate(s[1:]) if _is_tensor_array(v) and v._grows_in_run() and s.ndims
                  else s for v, s in zip(templates, invariants)]
    counter = array_ops.constant(0, dtypes.int32, name="iteration_counter")
    flat, invariants = [counter] + flat, [TensorShape([])] + invariants
    if maximum_iterations is not None:
        maximum_iterations = array_ops.convert_to_tensor(maximum_iterations, name="maximum_iterations")
        if maximum_iterations.dtype not in (dtypes.int32, dtypes.int64) or maximum_iterations.shape.ndims not in (None, 0):
            raise ValueError(errors.op_message("While", name, f"maximum_iterations must be an int32 or int64 scalar, "
                                               f"got {maximum_iterations.dtype.name} of shape "
                                               f"{maximum_iterations.shape}", site))
        maximum_iterations = array_ops.cast(maximum_iterations, dtypes.int32)

    def region(kind_fn, fwd):
        r = Region("loop", parent, fwd)
        with _entered(r):
            r.placeholders = [LoopVar(dtype=t.dtype, shape=s, name="LoopVar") for t, s in zip(flat, invariants)]
            args = _pack(loop_vars, r.placeholders[1:], templates)
            args = args if isinstance(loop_vars, (list, tuple)) else [args]
            r.outputs = kind_fn(r.placeholders[0], args)
        return r

    def cond_part(i, args):
        c = _as_output(cond_fn(*args), "cond")
        if c.dtype != dtypes.bool_ or c.shape.ndims not in (None, 0):
            raise TypeError(errors.op_message("While", name, f"cond must return a bool scalar, got {c.name} of dtype "
                                              f"{c.dtype.name} and shape {c.shape}", site))
        if maximum_iterations is not None:
            c = math_ops.logical_and(math_ops.less(i, maximum_iterations), c)
        return [c]

    def body_part(i, args):
        res = body_fn(*args)
        if not nest.is_sequence(res):
            res = [res]
        out = [_loop_leaf(v) for v in nest.flatten(res)]
        if len(out) != len(flat) - 1:
            raise ValueError(errors.op_message("While", name, f"body must return the structure of loop_vars: "
                                               f"{len(flat) - 1} tensors, got {len(out)}", site))
        return [math_ops.add(i, 1)] + out

    with graph.name_scope(name):
        cond_region = region(cond_part, None)
        body = region(body_part, forward)
        for k, (t, o, s) in enumerate(zip(flat, body.outputs, invariants)):
            if k == 0:
                continue
            if o.dtype != t.dtype:
                raise TypeError(errors.op_message("While", name, f"loop variable {t.name} enters the loop as "
                                                  f"{t.dtype.name} and leaves the body as {o.dtype.name}", site))
            if not _more_specific(o.shape, s):
                raise ValueError(errors.op_message("While", name, (
                    f"Input tensor '{t.name}' enters the loop with shape {s}, but has shape {o.shape} after one "
                    f"iteration. To allow the shape to vary across iterations, use the `shape_invariants` argument "
                    f"of tf.while_loop to specify a less-specific shape."), site))
        _close(cond_region)
        _close(body)
        captures = []
        for r in (cond_region, body):
            captures += [t for t in r.captures if t not in captures]
        shapes = [s if k else TensorShape([]) for k, s in enumerate(invariants)]
        # a TensorArray's element shape may be known only once the body wrote to it
        shapes = [o.shape if k and _is_tensor_array(templates[k - 1]) else s
                  for k, (s, o) in enumerate(zip(shapes, body.outputs))]
        kind = WhileInPython if _runs_python((cond_region, body)) else While
        outs = kind(*flat, *captures, n_vars=len(flat), shapes=shapes, regions=(cond_region, body),
                    back_prop=back_prop, name="While")
    op = outs[0].op
    cond_region.op = body.op = op
    _wait_for_controls(op, (cond_region, body))
    if after is not None:
        op._add_control_input(after)
    return list(outs), templates


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None, return_same_structure=False):
    """TF1's tf.while_loop: repeats body while cond is true, in one native run; returns the loop
    variables' final values (a single one unpacked unless return_same_structure)."""
    if not callable(cond) or not callable(body):
        raise TypeError(While.error("cond and body must be callable", name, TypeError).args[0])
    if nest.is_sequence(loop_vars) and not nest.flatten(loop_vars):
        raise ValueError(While.error("No loop variables provided", name).args[0])
    outs, templates = _build_while(cond, body, loop_vars, shape_invariants, maximum_iterations, name or "while",
                                   back_prop)
    packed = _pack(loop_vars, outs[1:], templates)
    if not return_same_structure and nest.is_sequence(packed) and len(outs) == 2 and not isinstance(packed, dict):
        return nest.flatten(packed)[0] if not _is_tensor_array(templates[0]) else \
            _pack([templates[0]], outs[1:], templates)[0]
    return packed
