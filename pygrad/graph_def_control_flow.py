"""pygrad's cond and while_loop (the If and While ops of ops/control_flow_ops.py, with their
regions) written as TF 1.x writes tf.cond and tf.while_loop in a GraphDef: dataflow control flow,
which TensorFlow runs from the GraphDef alone (and pygrad's importer lifts back into If and While).

A cond (TF's CondContext): Switch(pred, pred) and its two sides as Identity nodes switch_t and
switch_f, pred_id = Identity(pred); every value a branch reads from outside goes through
Switch(value, pred_id), output 1 in the true branch, 0 in the false one; the branch's ops; one
Merge(false, true) per output. A loop (TF's WhileContext._BuildLoop) is a frame: per loop variable
Enter, Merge(Enter, NextIteration), the condition's ops on the Merges, LoopCond, Switch(Merge,
LoopCond), Identity of its true side as the body's input, the body's ops, NextIteration, and Exit
of the false side; a value the loop reads from outside enters once (Enter with is_constant). A
node that reads nothing of its region (a Const, or an op of loop invariants only) gets a control
input from a node of it (switch_t or switch_f, the first Merge for the condition, the first
Identity for the body), as TF adds, so it runs in its branch, once per iteration.

The gradient of a loop (pygrad/control_flow_grad.py) reads values of the forward body (a
region's `pops`, and the tensors whose shapes it reads): they are written as TF1's gradients
write them, a StackV2 per value, a
StackPushV2 in the forward region (a control input of the iteration counter's NextIteration, or
of its cond's first Merge, so that it runs) and a StackPopV2 in the gradient region. Loops that
push or pop run one iteration at a time (parallel_iterations 1), which keeps the stacks in
iteration order; others run TF1's default of 10 in parallel.

The op's outputs are then the Merges or Exits, to which graph_def.py gives the op's name
(IdentityN). Its control inputs go on the nodes that enter the cond or the loop. An op inside a
loop with a control input made outside it waits for that input's output 0 entered into the frame
(as TF1's WhileContext does); a gradient's wait for its forward op in another frame is dropped
(the popped values order them); other control inputs across frames raise NotExportableError.
"""
import numpy as np

from pygrad.dtypes import bool_, int32

DT_RESOURCE = 20  # types.proto: a stack's handle


def own_name(t):
    """A pygrad tensor's TF name: "op" for output 0, "op:k" for others."""
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


class Context:
    """A region as it is written: name(t) is the TF name of pygrad tensor t there; a value from
    outside is brought in once by bring(outer name, dtype) (a Switch or an Enter); alias holds the
    region's own names for its loop variables and popped values."""

    def __init__(self, w, region, parent, bring, anchor):
        self.w, self.region, self.parent, self.bring, self.anchor = w, region, parent, bring, anchor
        self.alias = {}
        self.frames = {_frame(r) for r in region.chain()} | {None}

    def name(self, t):
        home = t.op._control_flow_context
        if _frame(home) not in self.frames and not any(t in c.alias for c in self.chain()):
            raise self.w.unexportable(self.w.op.error(
                f"it reads {t.name} of another loop frame, which TF's frames do not allow (pygrad writes a loop "
                f"gradient's reads of its forward loop's values, and of their shapes, through stacks)"))
        return self.value(t, t.dtype, lambda: own_name(t), home)

    def chain(self):
        c = self
        while c is not None:
            yield c
            c = c.parent

    def value(self, key, dtype, outer, home=None):
        """The name of value key (a tensor, or a stack) in this region; outer() its name in region
        home, where it is made (None: the top)."""
        if key in self.alias:
            return self.alias[key]
        if home is self.region:
            return outer()
        name = self.parent.value(key, dtype, outer, home) if self.parent is not None else outer()
        self.alias[key] = self.bring(name, dtype)
        return self.alias[key]


def _frame(region):
    """The While op whose frame region is in (None: the top frame)."""
    return next((r.op for r in region.chain() if r.kind == "loop"), None) if region is not None else None


def _node(w, type, name, inputs, attrs, types=None, exact=False):
    """A node of the control-flow structure (no anchor, no control inputs but those in inputs);
    types: {attribute: DataType number} for the resource types pygrad has no DType for."""
    saved = w.anchor, w.controls
    w.anchor, w.controls = None, []
    try:
        name = w.node(type, name, inputs, attrs, exact=exact)
    finally:
        w.anchor, w.controls = saved
    for key, value in (types or {}).items():
        w.graph_def.node[-1].attr[key].type = value
    return name


def _typed(dtype, key="T"):
    """(attrs, types) of a value's type attribute: DType, or None for a stack handle."""
    return ({key: dtype}, None) if dtype is not None else ({}, {key: DT_RESOURCE})


def _controls(w, op):
    """The "^name" inputs of the nodes of op, a region's op being written in w.ctx: its control
    inputs (one made outside its loop through the Enter of its output 0, as TF1 brings it in) and
    the readers it waits for in its frame."""
    frame, enclosing = _frame(op._control_flow_context), set(op._control_flow_context.chain())
    forward = {r.forward.op for r in op.attrs.get("regions", ()) if r.forward is not None}
    out = []
    for c in op.control_inputs:
        if _frame(c._control_flow_context) is frame:
            out.append(f"^{c.name}")
        elif (c._control_flow_context is None or c._control_flow_context in enclosing) and c.outputs:
            out.append(f"^{w.ctx.name(c.outputs[0])}")
        elif c not in forward:  # a gradient's wait for its forward op: the popped values order them
            raise w.unexportable(op.error(f"its control input {c.name} is in another loop frame and has no output "
                                          f"to enter this one"))
    out += [f"^{c.name}" for c in w.before.get(op, ()) if _frame(c._control_flow_context) is frame]
    return out


def outer_controls(op):
    """The control inputs of the ops of op's regions (nested ones too) made outside op: what op,
    an If or While, waits for besides its inputs."""
    regions, inside, out = list(op.attrs["regions"]), set(), []
    for r in regions:
        for m in r.members:
            inside.add(m)
            if m.type in CONTROL_FLOW:
                regions += [n for n in m.attrs["regions"] if n not in regions]
    for r in regions:
        out += [c for m in r.members for c in m.control_inputs if c not in inside and c is not op and c not in out]
    return out


def _write_members(w, ctx):
    """Writes ctx.region's ops (its loop variables excepted) in ctx, then the pushes of the values
    its gradient regions pop; returns the pushes' names."""
    saved = w.ctx, w.anchor
    w.ctx = ctx
    try:
        for m in sorted(ctx.region.members, key=lambda o: o._id):
            if m.type == "LoopVar":
                continue
            w.anchor = ctx.anchor
            w.write(m, False, controls=_controls(w, m))
        w.anchor = None
        pushes = []
        for b in ctx.region.backwards:
            for t in _popped(b):
                handle = _stack(w, ctx, b, t)
                pushes.append(_node(w, "StackPushV2", f"{ctx.region.op.name}/StackPush", [handle, ctx.name(t)],
                                    {"T": t.dtype, "swap_memory": False}))
        return pushes
    finally:
        w.ctx, w.anchor = saved


def _stack(w, ctx, backward, t):
    """The handle, in ctx, of the stack of t's values that region backward pops (made at the top)."""
    def make():
        size = _node(w, "Const", f"{backward.op.name}/stack/max_size", [], {"value": np.asarray(-1, np.int32), "dtype": int32})
        return _node(w, "StackV2", f"{backward.op.name}/stack", [size], {"elem_type": t.dtype, "stack_name": ""})
    key = ("stack", backward, t)
    if key not in w.stacks:
        w.stacks[key] = make()
    return ctx.value(key, None, lambda: w.stacks[key])


def _pops(w, ctx):
    """Pops the values ctx.region takes from its forward region's stacks; they are its names for them."""
    for t in _popped(ctx.region):
        handle = _stack(w, ctx, ctx.region, t)
        ctx.alias[t] = _node(w, "StackPopV2", f"{ctx.region.op.name}/StackPop", [handle, f"^{ctx.anchor}"],
                             {"elem_type": t.dtype})


def _popped(region):
    """The values of region.forward that region takes from stacks: its pops, and the tensors of a
    forward loop's region whose shapes its ops read (which pygrad reads from the forward plan)."""
    forward = region.forward
    if forward is None or not forward.in_loop():
        return region.pops
    shapes = [t for m in sorted(region.members, key=lambda o: o._id) for i, t in enumerate(m.inputs)
              if i in m.opdef.shape_only_inputs and t.op._control_flow_context is forward]
    return region.pops + [t for k, t in enumerate(shapes) if t not in region.pops and t not in shapes[:k]]


def _stacked(region):
    """Whether region, or a region inside it, pushes or pops."""
    return bool(_popped(region) or any(_popped(b) for b in region.backwards)) or any(
        _stacked(r) for m in region.members if m.type in ("If", "While") for r in m.attrs["regions"])


def write_if(w, op):
    """A cond: its Switches, its branches' ops, a Merge per output; returns the Merges' names."""
    true_region, false_region = op.attrs["regions"]
    if not op.outputs:
        raise w.unexportable(op.error("a cond without outputs: TF1's Merge joins a cond's outputs, and only what "
                                      "an output needs runs"))
    entry, parent, base = w.controls, w.ctx, op.name
    pred = w.tensor(op.inputs[0])
    switch = _node(w, "Switch", f"{base}/Switch", [pred, pred, *entry], {"T": bool_})
    pivots = [_node(w, "Identity", f"{base}/switch_f", [switch], {"T": bool_}),
              _node(w, "Identity", f"{base}/switch_t", [f"{switch}:1"], {"T": bool_})]
    pred_id = _node(w, "Identity", f"{base}/pred_id", [pred, *entry], {"T": bool_})
    switches = {}

    def bring(side):
        def switched(name, dtype):
            if name not in switches:
                attrs, types = _typed(dtype)
                switches[name] = _node(w, "Switch", f"{base}/Switch_1", [name, pred_id], attrs, types)
            return f"{switches[name]}:{side}"
        return switched

    sides, pushes = [], []
    for side, region in ((0, false_region), (1, true_region)):
        ctx = Context(w, region, parent, bring(side), pivots[side])
        _pops(w, ctx)
        pushes += _write_members(w, ctx)
        sides.append([ctx.name(t) for t in region.outputs])
    merges = [_node(w, "Merge", f"{base}/Merge", [f, t] + ([f"^{p}" for p in pushes] if k == 0 else []),
                    {"T": out.dtype, "N": 2})
              for k, (f, t, out) in enumerate(zip(*sides, op.outputs))]
    return merges


def write_while(w, op):
    """A loop's frame: returns the names of its Exits (the loop variables' final values)."""
    cond_region, body = op.attrs["regions"]
    n = op.attrs["n_vars"]
    entry, parent, base = w.controls, w.ctx, op.name
    frame = f"{base}/frame/while_context"  # a scope of its own: an importer's loop named by it is not op.name
    parallel = 1 if _stacked(cond_region) or _stacked(body) else 10
    dtypes = [t.dtype for t in op.inputs[:n]]
    enters = [_node(w, "Enter", f"{base}/Enter", [w.tensor(t), *entry],
                    {"T": t.dtype, "frame_name": frame, "is_constant": False, "parallel_iterations": parallel})
              for t in op.inputs[:n]]
    nexts = [w.unique(f"{base}/NextIteration") for _ in range(n)]
    merges = [_node(w, "Merge", f"{base}/Merge", [e, x], {"T": d, "N": 2}) for e, x, d in zip(enters, nexts, dtypes)]
    constants = {}

    def bring(name, dtype):
        if name not in constants:
            attrs, types = _typed(dtype)
            attrs.update(frame_name=frame, is_constant=True, parallel_iterations=parallel)
            constants[name] = _node(w, "Enter", f"{base}/Enter", [name, *entry], attrs, types)
            w.invariants.add(constants[name])
        return constants[name]

    ctx = Context(w, cond_region, parent, bring, merges[0])
    ctx.alias.update(zip(cond_region.placeholders, merges))
    _write_members(w, ctx)
    loop_cond = _node(w, "LoopCond", f"{base}/LoopCond", [ctx.name(cond_region.outputs[0])], {})
    switches = [_node(w, "Switch", f"{base}/Switch", [m, loop_cond], {"T": d}) for m, d in zip(merges, dtypes)]
    identities = [_node(w, "Identity", f"{base}/Identity", [f"{s}:1"], {"T": d}) for s, d in zip(switches, dtypes)]
    ctx = Context(w, body, parent, bring, identities[0])
    ctx.alias.update(zip(body.placeholders, identities))
    _pops(w, ctx)
    pushes = _write_members(w, ctx)
    for k, (x, t, d) in enumerate(zip(nexts, body.outputs, dtypes)):
        _node(w, "NextIteration", x, [ctx.name(t)] + ([f"^{p}" for p in pushes] if k == 0 else []), {"T": d},
              exact=True)
    return [_node(w, "Exit", f"{base}/Exit", [s], {"T": d}) for s, d in zip(switches, dtypes)]


CONTROL_FLOW = {"If": write_if, "While": write_while}
