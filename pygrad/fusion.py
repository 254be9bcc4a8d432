"""Epilogue fusion on a lowered program: a convolution followed by a bias add and/or a relu becomes
one conv2d_fwd step that does them on its output (csrc/kernels/conv.cc's ConvEpilogue: oneDNN's bias
argument and relu post-op, or a pass over the output for the im2col kernels), so the intermediates
are never written or read again.

The steps fused are consecutive in the plan:
  conv2d_fwd(x, w) -> a;  binary_fwd add(a, bias) or add(bias, a) -> b;  unary_fwd relu(b) -> c
(or the convolution with only one of the two). bias is a vector of the convolution's output
channels (or an array of that many elements, ones elsewhere). A step joins only when the buffer it
reads is a temporary that no other step reads and the run does not fetch: relu's gradient reads its
output (ReluGrad(y, dy)), not its input, so a training step fuses as well as inference does.
Jump targets and loop bounds are renumbered for the steps removed.
"""


def fuse_epilogues(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    if not any(s.kernel == "conv2d_fwd" for s in steps):
        return
    readers = {}
    for s in steps:
        for o in s.ins:
            if o is not None:
                readers[id(o.buffer)] = readers.get(id(o.buffer), 0) + 1
    kept_out = {id(o.buffer) for o in fetched}
    targets = {s.attrs["target"].index for s in steps if s.kernel is None}
    targets.update(i for loop in program.loops for i in loop)

    def private(buffer):  # a temporary read once, by the next step, and not fetched
        return buffer.kind == "temp" and readers.get(id(buffer)) == 1 and id(buffer) not in kept_out

    new, old_to_new, i = [], {}, 0
    while i < len(steps):
        s = steps[i]
        old_to_new[i] = len(new)
        group = _epilogue(steps, i, private, targets) if s.kernel == "conv2d_fwd" and len(s.ins) == 2 else None
        if group is None:
            new.append(s)
            i += 1
            continue
        bias, relu, last = group
        ins = s.ins + ([bias] if bias is not None else [])
        reads = list(dict.fromkeys(v for k in range(i, last + 1) for v in steps[k].reads_vars))
        attrs = {**s.attrs, "relu": int(relu)}
        new.append(type(s)(s.op, s.kernel, ins, steps[last].outs, attrs, reads, s.init_var))
        for k in range(i + 1, last + 1):
            old_to_new[k] = len(new) - 1
        i = last + 1
    if len(new) == len(steps):
        return
    old_to_new[len(steps)] = len(new)
    labels = {id(s.attrs["target"]): s.attrs["target"] for s in steps if s.kernel is None}
    for label in labels.values():
        label.index = old_to_new[label.index]
    program.loops[:] = [(old_to_new[a], old_to_new[b]) for a, b in program.loops]
    steps[:] = new


def _epilogue(steps, i, private, targets):
    """(bias operand or None, relu, index of the group's last step) for the convolution at i, or None."""
    conv = steps[i]
    out = conv.outs[0]
    channels = conv.ins[1].dims[-1]
    bias, relu, last, current = None, False, i, out
    j = i + 1
    if j < len(steps) and j not in targets and _is(steps[j], "binary_fwd", "add") and private(current.buffer):
        a, b = steps[j].ins
        other = b if a.buffer is current.buffer else a if b.buffer is current.buffer else None
        if other is not None and other.buffer is not current.buffer and other.dtype == out.dtype \
                and _is_channel_vector(other.dims, channels) and tuple(steps[j].outs[0].dims) == tuple(out.dims):
            bias, last, current = other.with_dims((channels,)), j, steps[j].outs[0]
            j += 1
    if j < len(steps) and j not in targets and _is(steps[j], "unary_fwd", "relu") and private(current.buffer) \
            and steps[j].ins[0].buffer is current.buffer and tuple(steps[j].outs[0].dims) == tuple(out.dims):
        relu, last = True, j
    return (bias, relu, last) if last > i else None


def _is(step, kernel, fn):
    return step.kernel == kernel and step.attrs.get("op") == fn


def _is_channel_vector(dims, channels):
    return len(dims) >= 1 and dims[-1] == channels and all(d == 1 for d in dims[:-1])
