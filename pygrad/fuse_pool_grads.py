"""A max pool's gradient and the gradient of the relu before it, in one pass (a pass of
compile_run, pygrad/passes.py).

A convnet's conv, relu, max pool (TF's Deep MNIST tutorial, VGG, AlexNet) has this gradient:

    dh = MaxPoolGrad(h, y, dy)      dy at each window's first maximum of h, 0 elsewhere
    dz = ReluGrad(h, dh)            dh where h > 0, else 0

Unfused, dh is written and read again, and h read twice: at batch 256 of Deep MNIST's first layer
([256, 28, 28, 32]) each is 25.7 MB, and the ReluGrad step is a pass over three of them. Where the
pool's windows tile its input (no padding, ksize == strides, the image a multiple of the window:
2x2 stride 2 on an even image) the kernel writes each dx element once, so both fit one step:
max_pool_bwd with relu=1 writes dy where the window's maximum is and h > 0, and 0 elsewhere
(csrc/kernels/pool.cc), bitwise as the two steps (dy's Inf and NaN where they belong, 0 where h
is NaN).

The steps matched (buffers compared by identity): a max_pool_bwd step whose output is a temporary
that only a relu unary_bwd step reads and the run does not fetch, that step's y being the pool's
input h. The fused step runs where the ReluGrad ran; no jump or jump target lies between the two,
and no step between them writes the pool's inputs.
"""
from pygrad.fusion import _can_move, _computes, _jump_targets, _ops_of, _readers, _rewrite, _sole_reader
from pygrad.ops import conv_ops, math_ops


def fuse_pool_relu_grads(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    if not any(s.kernel == conv_ops.MaxPoolGrad.kernel for s in steps):
        return
    readers, kept_out, targets = _readers(steps), {id(o.buffer) for o in fetched}, _jump_targets(program)
    replaced, removed = {}, set()
    for i, pool in enumerate(steps):
        if pool.kernel != conv_ops.MaxPoolGrad.kernel or pool.attrs.get("relu") or not _tiles(pool):
            continue
        h, dh = pool.ins[0], pool.outs[0]
        j = _sole_reader(readers, kept_out, dh.buffer)
        if j is None or j in replaced or not _computes(steps[j], math_ops.ReluGrad):
            continue
        relu = steps[j]
        y, d = relu.ins
        if d.buffer is not dh.buffer or y.buffer is not h.buffer or tuple(y.dims) != tuple(h.dims) or \
                tuple(relu.outs[0].dims) != tuple(dh.dims) or relu.outs[0].dtype != dh.dtype:
            continue
        if not _can_move(steps, targets, i, j):
            continue
        reads = list(dict.fromkeys([*pool.reads_vars, *relu.reads_vars]))
        replaced[j] = [type(pool)(pool.op, pool.kernel, pool.ins, relu.outs, {**pool.attrs, "relu": 1}, reads,
                                  pool.init_var, _ops_of([pool, relu], pool.op))]
        removed.add(i)
    _rewrite(program, replaced, removed)


def _tiles(pool):
    """Whether the windows of a max_pool_bwd step tile its input [N, H, W, C] (its output [N, OH, OW, C])."""
    (_, h, w, _), (_, oh, ow, _) = pool.ins[0].dims, pool.ins[1].dims
    (kh, kw), (sh, sw) = pool.attrs["ksize"], pool.attrs["strides"]
    return pool.attrs["pad_top"] == 0 and pool.attrs["pad_left"] == 0 and kh == sh and kw == sw and \
        oh * sh == h and ow * sw == w
