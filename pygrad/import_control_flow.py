"""TF1's dataflow control flow in an imported GraphDef, lifted into pygrad's cond and while_loop.

TF 1.x (and compat.v1) writes tf.cond as Switch and Merge nodes, and tf.while_loop as a frame of
Enter, Merge, Switch, LoopCond, NextIteration and Exit nodes. pygrad's cond and while_loop take
functions; importing rebuilds them:
- Each output of each node gets a region: its loop frame (the frame_name of the Enter it is
  inside, None at the top) and its branch tags, {(predicate, side)} of the Switches it depends on
  that no Merge has closed yet. analyze() computes them in one pass over the graph.
- A Scope builds the nodes of one region: the top level, one side of a cond, or a loop's condition
  or body. A value from an enclosing region comes from the enclosing scope (a capture). A Merge
  that closes a predicate P becomes pygrad's cond(P, true side, false side), whose sides are
  Scopes one tag deeper; the Merges of one tf.cond (one name scope) are one cond. The Exits of a
  frame become one while_loop whose loop variables are the frame's Merge(Enter, NextIteration)
  nodes, its condition the LoopCond's input and its body the NextIterations' inputs; an Enter with
  is_constant is a capture of the outer value.
- TensorArrays (TensorArrayV3 and its Read/Write/Scatter/Gather/Size) are pygrad TensorArray
  objects, which a loop carries as a loop variable; a TF handle and flow are both that object.
A predicate is named by the tensor it reads through Identity nodes, so two tf.conds on one
predicate have the same tags; their Merges stay separate conds by their name scopes.
"""
from pygrad import errors
from pygrad.ops import array_ops, control_flow_ops, math_ops, tensor_array_ops


def split(name):
    """(node, output index, control) of an input or tensor name."""
    control = name.startswith("^")
    node, _, index = name.lstrip("^").partition(":")
    return node, int(index or 0), control


def order(nodes):
    """The nodes in topological order, a Merge's NextIteration input (a loop's back edge) left out."""
    by_name = {n.name: n for n in nodes}
    done, out = set(), []

    def inputs(n):
        names = [a for a in (split(i)[0] for i in n.input) if a in by_name]  # others: left out of the import
        if n.op == "Merge":
            names = [a for a in names if by_name[a].op not in ("NextIteration", "RefNextIteration")]
        return names

    for root in nodes:
        stack = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            if n.name in done:
                continue
            if expanded:
                done.add(n.name)
                out.append(n)
                continue
            stack.append((n, True))
            stack.extend((by_name[a], False) for a in inputs(n) if a not in done)
    return out


class Analysis:
    """Regions of a GraphDef's nodes: frame[name], tags[(name, k)], parent_frame[frame], the
    predicate each cond Switch tests (predicate[name]) and each loop frame's parts (loops[frame])."""

    def __init__(self, nodes):
        self.by_name = {n.name: n for n in nodes}
        self.order = order(nodes)
        self.frame, self.tags, self.parent_frame, self.predicate = {}, {}, {}, {}
        self.loops = {}
        for n in self.order:
            self._visit(n)

    def base(self, name):
        """The tensor a predicate input reads, through Identity nodes."""
        node, k, _ = split(name)
        while self.by_name[node].op == "Identity":
            node, k, _ = split(self.by_name[node].input[0])
        return f"{node}:{k}"

    def tags_of(self, name):
        node, k, control = split(name)
        return self.tag(node, 0 if control else k)

    def tag(self, node, k):
        """The branch tags of output k of node (one set for all outputs but a Switch's and a Merge's)."""
        return self.tags[(node, k)] if (node, k) in self.tags else self.tags[(node, 0)]

    def _visit(self, n):
        ins = [i for i in n.input if not (n.op == "Merge" and self.by_name[split(i)[0]].op.endswith("NextIteration"))]
        frames = {self.frame.get(split(i)[0]) for i in ins}  # an input left out of the import: the top
        tags = frozenset().union(*(self.tags_of(i) for i in ins if split(i)[0] in self.by_name)) if ins else frozenset()
        frame = next((f for f in frames if f is not None), None)
        if n.op in ("Enter", "RefEnter"):
            frame = n.attr["frame_name"].s.decode()
            self.parent_frame[frame] = self.frame[split(n.input[0])[0]]
        elif n.op in ("Exit", "RefExit"):
            frame = self.parent_frame[self.frame[split(n.input[0])[0]]]
        self.frame[n.name] = frame
        outs = [tags]
        if n.op in ("Switch", "RefSwitch"):
            pred = self.by_name[split(n.input[1])[0]]
            if pred.op == "LoopCond":
                self.loops.setdefault(frame, _Loop()).switches[split(n.input[0])[0]] = n.name
                self.loops[frame].loop_cond = pred.name
                outs = [tags, tags]
            else:
                p = self.base(n.input[1])
                self.predicate[n.name] = p
                outs = [tags | {(p, 0)}, tags | {(p, 1)}]
        elif n.op == "Merge":
            if any(self.by_name[split(i)[0]].op in ("Enter", "RefEnter") for i in n.input):
                self.loops.setdefault(frame, _Loop()).merges.append(n.name)
            else:
                closed = self._closes(n)
                self.predicate[n.name] = closed
                outs = [tags - {(closed, 0), (closed, 1)}, frozenset()]
        elif n.op in ("Exit", "RefExit"):
            loop = self.loops.setdefault(self.frame[split(n.input[0])[0]], _Loop())
            loop.exits[split(n.input[0])[0]] = n.name
        for k, t in enumerate(outs):
            self.tags[(n.name, k)] = t

    def _closes(self, n):
        """The predicate a cond's Merge closes: the one whose two sides its two inputs are on."""
        a, b = (self.tags_of(i) for i in n.input[:2]) if len(n.input) >= 2 else (frozenset(), frozenset())
        for p, side in a:
            if (p, 1 - side) in b:
                return p
        raise errors.UnimplementedError(None, None, f"import_graph_def: Merge '{n.name}' does not join the two sides "
                                        f"of one Switch predicate (pygrad lifts TF1's cond and while_loop only)")


class _Loop:
    """One loop frame's nodes: its Merges (loop variables, in graph order), the Switch and Exit of
    each (by the Merge's and the Switch's names) and its LoopCond."""

    def __init__(self):
        self.merges, self.switches, self.exits, self.loop_cond = [], {}, {}, None


def _scope_of(name):
    return name.rpartition("/")[0]


def lift_cond(scope, merge_name):
    """The Merges of one tf.cond (merge_name's, with the same predicate and name scope in this
    region) built as one pygrad cond; sets their outputs in scope."""
    a = scope.analysis
    p = a.predicate[merge_name]
    group = [m for m in scope.owned_merges(p) if _scope_of(m) == _scope_of(merge_name)]
    pred = scope.tensor(p)
    scope.prefetch([i for m in group for i in a.by_name[m].input])

    def side(k):
        def build():
            sub = scope.child(scope.tags | {(p, k)}, scope.frame)
            out = []
            for m in group:
                node = a.by_name[m]
                inp = next(i for i in node.input if (p, k) in a.tags_of(i))
                out.append(sub.tensor(inp))
            return out
        return build

    outs = control_flow_ops.cond(pred, side(1), side(0), name=scope.prefix + _scope_of(merge_name) + "/cond")
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    for m, out in zip(group, outs):
        node = a.by_name[m]
        true_first = (p, 1) in a.tags_of(node.input[0])
        index = math_ops.cast(math_ops.logical_not(pred) if true_first else pred, "int32")
        scope.set(m, [_named(out, scope.prefix + m), index])


def lift_while(scope, frame):
    """The loop frame's Exits: one pygrad while_loop over its Merge(Enter, NextIteration) nodes."""
    a = scope.analysis
    loop = a.loops[frame]
    merges = [a.by_name[m] for m in loop.merges]
    enters = [next(i for i in m.input if a.by_name[split(i)[0]].op.endswith("Enter")) for m in merges]
    nexts = [next(a.by_name[split(i)[0]].input[0] for i in m.input if a.by_name[split(i)[0]].op.endswith(
        "NextIteration")) for m in merges]
    init = [scope.tensor(a.by_name[split(e)[0]].input[0]) for e in enters]
    scope.prefetch([a.by_name[loop.loop_cond].input[0]] + nexts)
    _size_arrays(init)

    def region(args):
        subst = {}
        for m, v in zip(merges, args):
            subst[(m.name, 0)] = v
            switch = loop.switches.get(m.name)
            if switch is not None:
                subst[(switch, 1)] = v
        return scope.child(scope.tags, frame, subst)

    def cond(*args):
        return region(args).tensor(a.by_name[loop.loop_cond].input[0])

    def body(*args):
        sub = region(args)
        return [sub.tensor(n) for n in nexts]

    outs = control_flow_ops.while_loop(cond, body, init, name=scope.prefix + frame.rpartition("/")[0],
                                       return_same_structure=True)
    for m, out in zip(merges, outs):
        switch = loop.switches.get(m.name)
        if switch in loop.exits:
            scope.set(loop.exits[switch], [out if isinstance(out, tensor_array_ops.TensorArray)
                                           else _named(out, scope.prefix + loop.exits[switch])])


def _size_arrays(init):
    """Gives each TensorArray that enters a loop with an element shape the graph does not fully
    know an element_like: another loop variable whose static shape is that element shape (the
    zero state of tf.nn.dynamic_rnn, for its output array), whose size a plan knows."""
    for ta in init:
        if not isinstance(ta, tensor_array_ops.TensorArray) or ta._element_like is not None:
            continue
        element = ta.element_shape
        if element.is_fully_defined():
            continue
        like = [t for t in init if not isinstance(t, tensor_array_ops.TensorArray) and t.shape.ndims is not None
                and t.shape.as_list() == element.as_list() and t.dtype == ta.dtype]
        if like:
            ta._element_like = like[0]


def _named(t, name):
    return t if t.op.name == name else array_ops.identity(t, name=name)


# ---------------------------------------------------------------- TensorArrays

def tensor_array(b):
    """TensorArrayV3: a pygrad TensorArray, its handle and its flow both; a size read from a
    tensor's first dimension (tf.shape(x)[0]) sizes it when the plan is built."""
    dims = b.shape_arg_dims(0)
    kw = dict(element_shape=b.attr("element_shape"), name=b.name)
    if dims is not None and isinstance(dims[0], tuple) and dims[0][1] == 0:
        ta = tensor_array_ops.TensorArray._sized_like(b.attr("dtype"), dims[0][0], **kw)
    else:
        ta = tensor_array_ops.TensorArray(b.attr("dtype"), size=int(b.value(0)), **kw)
    return [ta, ta]


def _array(b, k):
    ta = b.x[k]
    if not isinstance(ta, tensor_array_ops.TensorArray):
        raise b.unimplemented(f"input {k} ('{b.node.input[k]}') is not a TensorArray pygrad knows")
    return ta


def _full_range(b, k, ta):
    """Checks that input k holds the indices 0, ..., n - 1 (a tf.range(0, n) or constants)."""
    r = b.x[k].op
    if r.type == "Range" and int(r.attrs["start"]) == 0 and int(r.attrs["delta"]) == 1:
        return
    idx = b.ints(k).reshape(-1).tolist()
    if idx != list(range(len(idx))):
        raise b.unimplemented(f"indices {idx} (pygrad scatters and gathers rows 0, ..., n - 1)")


def ta_scatter(b):
    ta = _array(b, 3)
    _full_range(b, 1, ta)
    return ta.unstack(b.x[2], name=b.name)


def ta_gather(b):
    ta = _array(b, 2)
    _full_range(b, 1, ta)
    return ta.stack(name=b.name)


BUILDERS = {
    "TensorArrayV3": tensor_array,
    "TensorArrayScatterV3": ta_scatter,
    "TensorArrayGatherV3": ta_gather,
    "TensorArrayReadV3": lambda b: _array(b, 2).read(b.x[1], name=b.name),
    "TensorArrayWriteV3": lambda b: _array(b, 3).write(b.x[1], b.x[2], name=b.name),
    "TensorArraySizeV3": lambda b: _array(b, 1).size(name=b.name),
    "LoopCond": lambda b: array_ops.identity(b.x[0], name=b.name),
    "NextIteration": lambda b: b.x[0],
}
CONTROL_FLOW_TYPES = ("Switch", "Merge", "Enter", "Exit") + tuple(BUILDERS)


# ---------------------------------------------------------------- the gradients of TF1's loops

# What TF1's gradient of a while loop is written with: stacks of the forward loop's values, pushed
# in the forward loop and popped in the backward one, and a trigger between them.
GRADIENT_LOOP_TYPES = ("StackV2", "StackPushV2", "StackPopV2", "ControlTrigger", "TensorArrayGradV3")
_APPLY_GRAD_INPUT = {"ApplyGradientDescent": 2, "ApplyMomentum": 3, "ApplyAdagrad": 3, "ApplyRMSProp": 7,
                     "ApplyCenteredRMSProp": 8, "ApplyAdam": 9, "ApplyAdadelta": 6, "ApplyProximalGradientDescent": 4,
                     "ApplyProximalAdagrad": 5, "ApplyFtrl": 3, "ApplyFtrlV2": 3}


class Regradient:
    """A tf.gradients subgraph (its name scope, `gradients/` by default) that holds TF1's gradient
    of a while loop, which pygrad rebuilds instead of importing: the gradients that the rest of
    the graph reads (the `grad` inputs of the optimizer's Apply ops, directly or through ops such
    as clipping) become pygrad's tf.gradients of the same loss with respect to the same variables,
    through the lifted loop. The nodes of that scope are left out of the import."""

    def __init__(self, nodes):
        by_name = {n.name: n for n in nodes}
        seeds = [n.name for n in nodes if n.op == "Fill" and n.name.partition("/")[0].startswith("gradients")
                 and n.name.partition("/")[2].startswith("grad_ys_")]
        self.scopes = {s.partition("/")[0] + "/" for s in seeds
                       if any(m.op in GRADIENT_LOOP_TYPES and m.name.startswith(s.partition("/")[0] + "/")
                              for m in nodes)}
        self.inside = {n.name for n in nodes if any(n.name.startswith(s) for s in self.scopes)}
        self.loss, self.var_of = {}, {}
        consumers = {}
        for n in nodes:
            for i in n.input:
                consumers.setdefault(split(i)[0], []).append(n)
        for scope in self.scopes:
            readers = [c for seed in seeds if seed.startswith(scope) for c in consumers.get(seed, [])]
            ops = {c.name[len(scope):].partition("_grad/")[0] for c in readers if "_grad/" in c.name}
            if len(ops) != 1 or next(iter(ops)) not in by_name:
                raise errors.UnimplementedError(None, None, f"import_graph_def: the gradients in '{scope}' hold "
                                                f"TF1's gradient of a while loop, and their loss is not found")
            self.loss[scope] = next(iter(ops)) + ":0"
        for n in nodes:
            if n.name in self.inside:
                continue
            for i in n.input:
                node, k, control = split(i)
                if node in self.inside and not control:
                    self.var_of[f"{node}:{k}"] = self._variable(i, consumers)

    def _variable(self, tensor, consumers):
        """The variable whose gradient tensor is: the var input of the Apply op it reaches."""
        stack, seen = [split(tensor)[0]], set()
        while stack:
            name = stack.pop()
            for c in consumers.get(name, []):
                k = _APPLY_GRAD_INPUT.get(c.op)
                if k is not None and split(c.input[k])[0] == name:
                    return split(c.input[0])[0] + ":0"
                if c.name not in seen and c.name not in self.inside:
                    seen.add(c.name)
                    stack.append(c.name)
        raise errors.UnimplementedError(None, None, f"import_graph_def: gradient '{tensor}' reaches no optimizer "
                                        f"update (TF1's gradient of a while loop is rebuilt only for the variables "
                                        f"an Apply op updates)")

    def tensor(self, scope, name):
        """pygrad's gradient standing for TF's gradient tensor name, built in scope (the top)."""
        from pygrad.gradients import gradients

        cache = scope.imp.regradients
        if name not in cache:
            root = next(s for s in self.scopes if name.startswith(s))
            names = [t for t in self.var_of if t.startswith(root)]
            grads = gradients(scope.tensor(self.loss[root]), [scope.tensor(self.var_of[t]) for t in names],
                              name=scope.prefix + root.rstrip("/"))
            cache.update(zip(names, grads))
        return cache[name]
