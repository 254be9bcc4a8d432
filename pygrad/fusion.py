"""Fusion of lowered steps (a pass of compile_run between lower and assign_buffers).

TF1's softmax-regression tutorial spells its cost out op by op,

    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(tf.nn.softmax(z)), reduction_indices=1))

and tf.gradients adds one op per rule for its gradient: 13 steps over [N, C] or [N] arrays, each
a pass over memory and a kernel call. When a run needs none of the intermediates (log(p), the
products, the row sums, the gradients before dz), they become one step, the softmax_nll kernel
(csrc/kernels/softmax.cc), which computes every value as the unfused kernels do, in the same
order, so the results are bitwise the same. The softmax p stays an output (other steps may read
it); the cost and dz are the outputs of the steps they replace.

The steps matched, by the ops they lower (buffers are compared by identity; each intermediate
must be read by the next step alone, and not fetched):

    forward    p = Softmax(z, axis 1); l = Log(p); m = Mul(y, l) (either order);
               r = Sum(m, axes [1]); n = Neg(r); cost = Mean(n, axes [0])
    gradient   a = BroadcastLike(g, [N], scale) (Mean's gradient); b = Neg(a) (Neg's);
               c = BroadcastLike(b as [N, 1], [N, C]) (Sum's); dl = Mul(c, y) (either order; Mul's);
               q = Reciprocal(p); dp = Mul(dl, q) (either order; Log's); dz = SoftmaxGrad(p, dp, axis 1)

with z and y matrices of one shape, g a constant or a feed of one element (the gradient of the
cost, ones from tf.gradients), z and y not variables (no step in between writes them). A program
with jumps (control flow) is left as it is.

A second pass, fuse_epilogues: a convolution (or depthwise convolution) followed by a bias add, an
inference batch norm's multiply and add, a residual network's shortcut add and a relu or relu6
becomes one step that does them on its output (csrc/kernels/conv.h's ConvEpilogue: oneDNN's bias
argument and post-ops, or a pass over the output for the other kernels), so the intermediates are
never written or read again. Each part is optional, in this order:
  conv(x, w) -> a;  add(a, bias) -> b;  mul(b, scale) -> c;  add(c, shift) -> d;
  add(d, residual) -> e;  relu(e) or relu6(e)
(either operand order; an add, mul or relu step of any op: bias_add's, a layer's, batch_normalization's
x * inv + shift). bias, scale and shift are vectors of the convolution's output channels (or arrays of
that many elements, ones elsewhere), residual an array of the output's shape; an add of a vector
with no multiply before it is the bias. A step joins only when the buffer it reads is a temporary
that no other step reads and the run does not fetch: relu's gradient reads its output
(ReluGrad(y, dy)), not its input, so a training step fuses as well as inference does.
The fused step runs where the group's last step ran, after all its operands (a batch norm of
variables computes its scale and shift at each run; a frozen one's are folded constants, and
fold_batch_norms then folds the scale into a constant filter: fold_constants.py). Jump targets and loop
bounds are renumbered for the steps removed.

Before it, fuse_input_pads: a zero Pad of a convolution's input along height and width (ResNet's
explicit padding before its strided convolutions), read by the convolution alone, becomes the
convolution's own pad_top and pad_left (the bottom and right follow from the output size), when the
sum is less than the filter and every window still overlaps the input; the padded copy is never made.

A third pass, elide_loop_copies: at the end of each iteration a while loop copies each new value
of a loop variable, computed into a temporary o, into the variable's buffer v (Program.carries,
the `copy` steps the While lowering records). The copy is dropped, and the step that computes o
writes v itself, when that is the same: o is written by that step alone and read by the copy
alone, not fetched; no step between the two reads or writes v; and where the step reads v itself
(an accumulator, acc + g), it is an elementwise kernel that may write an input in place and reads
v with the output's dims. A recurrent network's gradient loop then adds each step's weight
gradient into its sum in place instead of into a temporary copied back.

A fourth pass, accumulate_read_gradients: the gradient of a TensorArray read is an array of zeros
with the read row set (fill, then ta_write), which the gradient then adds to the array's gradient
so far; where that add is its only reader, the add becomes a copy of the other operand (none when
it is the add's output, as elide_loop_copies leaves an accumulator) and a ta_write that adds the
row in place: O(row) work per read instead of O(array). dynamic_rnn's input gradient is such a sum,
one row per time step.
"""
from pygrad.kernels import BINARY_FWD, BROADCAST_TO, CONST_BUFFER, CONV2D_FWD, COPY, DEPTHWISE_CONV2D_FWD, \
    FEED_BUFFER, FILL, PAD_FWD, SOFTMAX_NLL, TA_WRITE, TEMP_BUFFER, UNARY_BWD, UNARY_FWD, VAR_BUFFER
# The softmax pattern is matched by the ops its steps lower (graph-level op types), and its gradient
# half is what the gradient rules of these modules write: Log's (dy * reciprocal(x)), Mul's, Neg's
# (-dy), Sum's and Mean's (BroadcastLike, scaled for the mean) and Softmax's (SoftmaxGrad).
from pygrad.ops import activation_ops, math_ops, nn_ops, reduction_ops


def fuse(steps, fetches):
    """steps with each matched pattern replaced by one softmax_nll step (at the softmax's place);
    fetches are the operands the plan returns."""
    if any(st.kernel is None for st in steps):
        return steps
    reads = {}
    for st in steps:
        for o in st.ins:
            reads[o.buffer] = reads.get(o.buffer, 0) + 1
    for o in fetches:
        reads[o.buffer] = reads.get(o.buffer, 0) + 1
    made_at = {o.buffer: i for i, st in enumerate(steps) for o in st.outs}
    readers = {}
    for i, st in enumerate(steps):
        for o in st.ins:
            readers.setdefault(o.buffer, []).append(i)

    def only_reader(buffer):
        """The index of the one step that reads buffer, if it is read once and not fetched."""
        r = readers.get(buffer, ())
        return r[0] if len(r) == 1 and reads.get(buffer) == 1 else None

    removed, replaced = set(), {}
    for i, st in enumerate(steps):
        if _is(st, nn_ops.Softmax) and i not in removed:
            match = _match(steps, i, only_reader, readers, made_at)
            if match is not None and not (set(match[1]) & removed):
                fused, gone = match
                replaced[i] = fused
                removed |= set(gone)
    if not replaced:
        return steps
    return [replaced.get(i, st) for i, st in enumerate(steps) if i not in removed]


def _is(st, opdef, kernel=None, **attrs):
    """Whether st is a step of an op of opdef calling opdef's kernel (or kernel, for an op that
    lowers itself) with these attributes (a broadcast_to's scale defaults to 1)."""
    if st.kernel is None or st.op.opdef is not opdef or st.kernel != (kernel or opdef.kernel):
        return False
    for k, v in attrs.items():
        have = st.attrs.get(k, 1.0 if k == "scale" else None)
        if (list(have) if isinstance(have, (list, tuple)) else have) != v:
            return False
    return True


def _computes(st, opdef):
    """Whether st runs the kernel and elementwise op an op of opdef runs, whichever op it lowers (an
    add of AddN's, of the gradient driver's sums, of bias_add's)."""
    return st.kernel == opdef.kernel and st.attrs.get("op") == opdef.kernel_op


def _other(st, buffer):
    """The operand of a two-input step that is not buffer's (None if neither or both are)."""
    a, b = st.ins
    if (a.buffer is buffer) == (b.buffer is buffer):
        return None
    return b if a.buffer is buffer else a


def _match(steps, i, only_reader, readers, made_at):
    """(the fused step, the indices of the steps it replaces) for the softmax at steps[i], or None."""
    sm = steps[i]
    z, p = sm.ins[0], sm.outs[0]
    if len(z.dims) != 2 or sm.attrs.get("axis") != 1 or z.buffer.kind == VAR_BUFFER:
        return None
    chain = []

    def next_step(buffer, opdef, **attrs):
        j = only_reader(buffer)
        if j is None or not _is(steps[j], opdef, **attrs):
            return None
        chain.append(j)
        return steps[j]

    log = next((steps[j] for j in readers.get(p.buffer, ()) if _is(steps[j], math_ops.Log)), None)
    if log is None:
        return None
    chain.append(steps.index(log, i))
    mul = next_step(log.outs[0].buffer, math_ops.Mul)
    y = mul and _other(mul, log.outs[0].buffer)
    if y is None or y.dims != z.dims or y.buffer.kind == VAR_BUFFER or made_at.get(y.buffer, -1) >= i:
        return None
    row_sum = next_step(mul.outs[0].buffer, reduction_ops.Sum, axes=[1])
    neg = row_sum and next_step(row_sum.outs[0].buffer, math_ops.Neg)
    mean = neg and next_step(neg.outs[0].buffer, reduction_ops.Mean, axes=[0])
    if mean is None or mean.outs[0].dims != ():
        return None
    forward = list(chain)
    ins, outs, attrs = [z, y], [p, mean.outs[0]], {}
    grad = _match_gradient(steps, p, y, only_reader, readers, chain)
    if grad is not None:
        g, dz, scale = grad
        ins.append(g)
        outs.append(dz)
        attrs["scale"] = scale
    else:
        chain[:] = forward
    fused = type(sm)(sm.op, SOFTMAX_NLL, ins, outs, attrs, [], -1, _ops_of([steps[j] for j in sorted(chain)], sm.op))
    return fused, chain


def _match_gradient(steps, p, y, only_reader, readers, chain):
    """(g, dz, scale) of the gradient steps of the pattern (appending their indices to chain), or None."""
    bwd = next((j for j in readers.get(p.buffer, ()) if _is(steps[j], nn_ops.SoftmaxGrad, axis=1)), None)
    if bwd is None:
        return None
    sb = steps[bwd]
    if sb.ins[0].buffer is not p.buffer:
        return None
    dp = sb.ins[1].buffer
    k = next((j for j, st in enumerate(steps) if any(o.buffer is dp for o in st.outs)), None)
    if k is None or only_reader(dp) != bwd or not _is(steps[k], math_ops.Mul):
        return None
    mul_q = steps[k]
    found = []
    for a, b in (mul_q.ins, reversed(mul_q.ins)):
        rec = _maker(steps, a.buffer)
        if rec is not None and _is(steps[rec], math_ops.Reciprocal) and \
                steps[rec].ins[0].buffer is p.buffer and only_reader(a.buffer) == k:
            found = [rec, b]
            break
    if not found:
        return None
    rec, dl = found
    m = _maker(steps, dl.buffer)
    if m is None or only_reader(dl.buffer) != k or not _is(steps[m], math_ops.Mul):
        return None
    c = _other(steps[m], y.buffer)
    bc = c is not None and _maker(steps, c.buffer)
    if not bc or only_reader(c.buffer) != m or not _is(steps[bc], reduction_ops.BroadcastLike, BROADCAST_TO, scale=1.0):
        return None
    b = steps[bc].ins[0]
    ng = _maker(steps, b.buffer)
    if ng is None or only_reader(b.buffer) != bc or not _is(steps[ng], math_ops.Neg):
        return None
    a = steps[ng].ins[0]
    ab = _maker(steps, a.buffer)
    if ab is None or only_reader(a.buffer) != ng or not _is(steps[ab], reduction_ops.BroadcastLike, BROADCAST_TO):
        return None
    g = steps[ab].ins[0]
    n = p.dims[0]
    if g.buffer.kind not in (CONST_BUFFER, FEED_BUFFER) or _numel(g.dims) != 1 or steps[ab].outs[0].dims != (n,) or \
            steps[ng].outs[0].dims != (n,) or b.dims not in ((n,), (n, 1)) or c.dims != p.dims or \
            "scale" not in steps[ab].attrs:
        return None
    chain += [ab, ng, bc, m, rec, k, bwd]
    return g, sb.outs[0], steps[ab].attrs["scale"]


def _ops_of(steps, op):
    """The ops of steps other than op, each once, in order (a fused step's Step.fused)."""
    return tuple(o for o in dict.fromkeys(o for st in steps for o in (st.op, *st.fused)) if o is not op)


def _maker(steps, buffer):
    """The index of the one step that writes buffer, or None."""
    made = [j for j, st in enumerate(steps) if any(o.buffer is buffer for o in st.outs)]
    return made[0] if len(made) == 1 else None


def _numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


_CONVOLUTIONS = (CONV2D_FWD, DEPTHWISE_CONV2D_FWD)
EPILOGUE_PARTS = ("bias", "scale", "shift", "residual")  # a fused convolution's inputs after x and w, in order
_ACTIVATIONS = ((math_ops.Relu, 1), (activation_ops.Relu6, 2))  # ConvActivation's codes


def fuse_epilogues(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    if not any(s.kernel in _CONVOLUTIONS for s in steps):
        return
    readers, kept_out, targets = _readers(steps), {id(o.buffer) for o in fetched}, _jump_targets(program)

    def only_reader(buffer):
        return _sole_reader(readers, kept_out, buffer)

    fused_at, taken, groups, residuals = {}, set(), [], []
    for i, s in enumerate(steps):
        group = _epilogue(steps, i, only_reader, targets, taken) if s.kernel in _CONVOLUTIONS and len(s.ins) == 2 \
            else None
        if group is None:
            continue
        taken.update(group[0])
        members, parts, activation = group
        groups.append(members)
        ins = s.ins + [v for v in parts.values() if v is not None]
        reads = list(dict.fromkeys(v for k in members for v in steps[k].reads_vars))
        attrs = {**s.attrs, **{k: int(v is not None) for k, v in parts.items()}, "activation": activation}
        outs = steps[members[-1]].outs
        fused_at[members[-1]] = [type(s)(s.op, s.kernel, ins, outs, attrs, reads, s.init_var,
                                         _ops_of([steps[k] for k in members], s.op))]
        if s.kernel == CONV2D_FWD and parts["residual"] is not None and not targets and not program.loops:
            residuals.append((members, ins, outs[0], parts["residual"]))
    runs_at = {k: members[-1] for members in groups for k in members}
    for members, ins, out, residual in residuals:
        _write_over_residual(steps, readers, kept_out, runs_at, members[-1], ins, out, residual)
    _rewrite(program, fused_at, taken - set(fused_at))


def _write_over_residual(steps, readers, kept_out, runs_at, at, ins, out, residual):
    """Makes the fused convolution write its output over its residual (the kernel then adds the
    residual in place, by oneDNN's sum post-op, which is faster than its binary add of an array:
    ResNet-50 in bench_inference.py), where nothing needs the residual after it: a
    temporary of the output's size and dtype, read by no step that runs after the fused step (at
    `at`; a step of a fused group runs where its group's last step ran: runs_at), neither fetched
    nor another input of the step, and the output a temporary not fetched. Every operand of the
    output's buffer is then an operand of the residual's. Only for plans without jumps, where each
    temporary has one lifetime from its write to its last read."""
    r, o = residual.buffer, out.buffer
    if r is o:
        return
    if r.kind != TEMP_BUFFER or o.kind != TEMP_BUFFER or id(r) in kept_out or id(o) in kept_out or \
            r.nbytes != o.nbytes or residual.dtype != out.dtype or \
            any(runs_at.get(k, k) > at for k in readers.get(id(r), ())) or \
            sum(v is not None and v.buffer is r for v in ins) != 1:
        return
    for step in steps:
        for v in list(step.ins) + list(step.outs):
            if v is not None and v.buffer is o:
                v.buffer = r
    readers[id(r)] = readers.get(id(r), []) + readers.pop(id(o), [])  # o's readers now read r


def _rewrite(program, replaced, removed):
    """program.steps with steps[k] replaced by the steps of the list replaced[k] (none, one or more)
    and the steps in removed left out; jump targets and loop bounds renumbered (a jump to a step
    replaced lands on the first step in its place, or the next step kept)."""
    steps = program.steps
    if not replaced and not removed:
        return
    new, old_to_new = [], {}
    for k, s in enumerate(steps):
        old_to_new[k] = len(new)
        if k not in removed:
            new.extend(replaced.get(k, [s]))
    old_to_new[len(steps)] = len(new)
    labels = {id(s.attrs["target"]): s.attrs["target"] for s in steps if s.kernel is None}
    for label in labels.values():
        label.index = old_to_new[label.index]
    program.loops[:] = [(old_to_new[a], old_to_new[b]) for a, b in program.loops]
    steps[:] = new


def _sole_reader(readers, kept_out, buffer):
    """The index of the one step that reads buffer, a temporary the run does not fetch; else None."""
    r = readers.get(id(buffer), ())
    return r[0] if buffer.kind == TEMP_BUFFER and len(r) == 1 and id(buffer) not in kept_out else None


def _readers(steps):
    """{id(buffer): the indices of the steps that read it}."""
    readers = {}
    for k, s in enumerate(steps):
        for o in s.ins:
            if o is not None:
                readers.setdefault(id(o.buffer), []).append(k)
    return readers


def _writers(steps):
    """{id(buffer): the indices of the steps that write it}."""
    writers = {}
    for k, s in enumerate(steps):
        for b in _written(s):
            writers.setdefault(b, []).append(k)
    return writers


def _written(st):
    """The ids of the buffers step st writes (a variable's writer has it as its output)."""
    return {id(o.buffer) for o in st.outs}


def _straight_line(steps, targets, lo, hi):
    """Whether steps lo .. hi - 1 are straight-line code: none is a jump or a jump target."""
    return not any(k in targets or steps[k].kernel is None for k in range(lo, hi))


def _can_move(steps, targets, i, j):
    """Whether step i's work can run at step j instead (i < j): the steps after i up to j are
    straight-line code, and none of those before j writes an input of step i."""
    if not _straight_line(steps, targets, i + 1, j + 1):
        return False
    written = {b for k in range(i + 1, j) for b in _written(steps[k])}
    return not any(o is not None and id(o.buffer) in written for o in steps[i].ins)


def _jump_targets(program):
    """The steps a jump lands on, and the first and last steps of each loop."""
    targets = {s.attrs["target"].index for s in program.steps if s.kernel is None}
    targets.update(i for loop in program.loops for i in loop)
    return targets


def fuse_input_pads(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    if not any(s.kernel in _CONVOLUTIONS for s in steps):
        return
    readers, kept_out, targets = _readers(steps), {id(o.buffer) for o in fetched}, _jump_targets(program)
    replaced, removed = {}, set()
    for i, s in enumerate(steps):
        if s.kernel not in _CONVOLUTIONS or len(s.ins) != 2:
            continue
        padded = s.ins[0]  # a temporary the convolution alone reads, made by a pad step before it
        if _sole_reader(readers, kept_out, padded.buffer) != i:
            continue
        k = _maker(steps, padded.buffer)
        if k is None or k > i or steps[k].kernel != PAD_FWD or \
                any(j in targets or steps[j].kernel is None for j in range(k + 1, i + 1)):
            continue
        pad = steps[k]
        attrs = _padded_attrs(pad, s)
        x = pad.ins[0]
        if attrs is None or any(id(x.buffer) in _written(steps[j]) for j in range(k + 1, i)):
            continue
        replaced[i] = [type(s)(s.op, s.kernel, [x, s.ins[1]], s.outs, {**s.attrs, **attrs},
                               list(dict.fromkeys(pad.reads_vars + s.reads_vars)), s.init_var, _ops_of([pad, s], s.op))]
        removed.add(k)
    _rewrite(program, replaced, removed)


def _padded_attrs(pad, conv):
    """The convolution's pad_top and pad_left taking in a zero pad of its input's height and width
    (a pad_fwd step), or None when the pad is another or the sum does not fit the kernel's rules:
    less than the (dilated) filter and every window overlapping the unpadded input."""
    paddings, x = list(pad.attrs.get("paddings", ())), pad.ins[0]
    if pad.attrs.get("mode") != 0 or pad.attrs.get("constant_value", 0.0) != 0 or len(paddings) != 8 or \
            any(paddings[k] for k in (0, 1, 6, 7)):
        return None
    kh, kw = conv.ins[1].dims[:2]
    dh, dw = conv.attrs.get("dilations", (1, 1))
    sh, sw = conv.attrs["strides"]
    oh, ow = conv.outs[0].dims[1:3]
    top, left = conv.attrs["pad_top"] + paddings[2], conv.attrs["pad_left"] + paddings[4]
    if top >= (kh - 1) * dh + 1 or left >= (kw - 1) * dw + 1 or (oh - 1) * sh - top >= x.dims[1] or \
            (ow - 1) * sw - left >= x.dims[2]:
        return None
    return {"pad_top": top, "pad_left": left}


def _epilogue(steps, i, only_reader, targets, taken):
    """(the indices of the group's steps, the convolution's first, {"bias": operand or None, "scale",
    "shift", "residual": ...}, the activation's code) for the convolution at i, or None. The fused
    step takes the place of the group's last step, where every operand has been computed: the steps
    in between are straight-line code (no jumps, no jump targets) that reads none of the group's
    values and writes none of its inputs after the group's step that read it. A step of an earlier
    group (taken) ends the group: the add of two convolutions' values joins the first of them, and
    the second's group stops before it (ResNet's projection shortcut and its last convolution)."""
    out = steps[i].outs[0]
    channels = out.dims[-1]
    parts = dict.fromkeys(EPILOGUE_PARTS)
    members, read_at, activation, current = [i], [], 0, out

    def next_member(opdef):  # the step that reads the group's value so far, alone, if it computes opdef
        j = only_reader(current.buffer)
        if j is None or j <= members[-1] or j in taken or not _computes(steps[j], opdef) or \
                tuple(steps[j].outs[0].dims) != tuple(out.dims):
            return None
        return j

    def other_operand(st, part):  # a binary step's other operand, if it fits the part
        a, b = st.ins
        other = b if a.buffer is current.buffer else a
        if other.buffer is current.buffer or other.dtype != out.dtype:
            return None
        if part == "residual":
            return other if tuple(other.dims) == tuple(out.dims) else None
        return other.with_dims((channels,)) if _is_channel_vector(other.dims, channels) else None

    for part, opdef in (("bias", math_ops.Add), ("scale", math_ops.Mul), ("shift", math_ops.Add),
                        ("residual", math_ops.Add)):
        j = next_member(opdef)
        v = j is not None and other_operand(steps[j], part)
        if v and (part != "shift" or parts["scale"] is not None):
            parts[part], current = v, steps[j].outs[0]
            members.append(j)
            read_at.append((j, v))
    for opdef, code in _ACTIVATIONS:
        j = next_member(opdef)
        if j is not None and steps[j].ins[0].buffer is current.buffer:
            activation = code
            members.append(j)
            break
    if len(members) == 1:
        return None
    last = members[-1]
    if not _straight_line(steps, targets, i + 1, last + 1):
        return None

    def written_after(k):  # the buffers written after step k, up to last, by steps not of the group
        return {b for j in range(k + 1, last + 1) if j not in members for b in _written(steps[j])}

    if any(id(o.buffer) in written_after(k) for k, o in [(i, o) for o in steps[i].ins] + read_at):
        return None
    return members, parts, activation


def _is_channel_vector(dims, channels):
    return len(dims) >= 1 and dims[-1] == channels and all(d == 1 for d in dims[:-1])


_IN_PLACE = {BINARY_FWD, UNARY_FWD, UNARY_BWD}  # may write an input of the output's dims


def elide_loop_copies(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    carries = {id(s) for s in program.carries}
    steps = program.steps
    if not carries:
        return
    writers, readers, kept_out = _writers(steps), _readers(steps), {id(o.buffer) for o in fetched}
    drop = set()
    for c, copy in enumerate(steps):
        if id(copy) not in carries:
            continue
        src, dst = copy.ins[0], copy.outs[0]
        b = src.buffer
        made = writers.get(id(b), [])
        if (b.kind != TEMP_BUFFER or id(b) in kept_out or src.dtype != dst.dtype or tuple(src.dims) != tuple(dst.dims)
                or len(made) != 1 or made[0] >= c or readers.get(id(b)) != [c]):
            continue
        maker = steps[made[0]]
        if maker.kernel is None or sum(o.buffer is b for o in maker.outs) != 1:
            continue
        if any(o is not None and o.buffer is dst.buffer for s in steps[made[0] + 1:c] for o in (*s.ins, *s.outs)):
            continue
        reads_dst = [o for o in maker.ins if o is not None and o.buffer is dst.buffer]
        if reads_dst and (maker.kernel not in _IN_PLACE or any(tuple(o.dims) != tuple(src.dims) for o in reads_dst)):
            continue
        maker.outs = [type(o)(dst.buffer, o.dtype, o.dims) if o.buffer is b else o for o in maker.outs]
        drop.add(c)
    _rewrite(program, {}, drop)


def accumulate_read_gradients(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    readers, writers, kept_out = _readers(steps), _writers(steps), {id(o.buffer) for o in fetched}
    drop, replace = set(), {}
    for f, fill in enumerate(steps[:-1]):
        write = steps[f + 1]
        if fill.kernel != FILL or fill.attrs.get("value") != 0.0 or write.kernel != TA_WRITE \
                or write.attrs.get("accumulate") or write.outs[0].buffer is not fill.outs[0].buffer:
            continue
        r = fill.outs[0].buffer
        users = readers.get(id(r), [])
        if r.kind != TEMP_BUFFER or id(r) in kept_out or len(users) != 1 or writers.get(id(r)) != [f, f + 1]:
            continue
        a = users[0]
        add = steps[a]
        if not _computes(add, math_ops.Add) or len(add.ins) != 2:
            continue
        other = add.ins[1] if add.ins[0].buffer is r else add.ins[0]
        out = add.outs[0]
        if other.buffer is r or not (tuple(other.dims) == tuple(out.dims) == tuple(fill.outs[0].dims)) \
                or other.dtype != out.dtype:
            continue
        index, row = write.ins
        if any(writers.get(id(o.buffer)) and any(f + 1 < j < a for j in writers[id(o.buffer)]) for o in (index, row)):
            continue  # the row or its index changes before the add
        new = [] if other.buffer is out.buffer else [type(add)(add.op, COPY, [other], [out], {}, add.reads_vars, -1)]
        new.append(type(write)(write.op, TA_WRITE, [index, row], [out], {"accumulate": 1}, write.reads_vars, -1))
        drop.update((f, f + 1))
        replace[a] = new
    _rewrite(program, replace, drop)
