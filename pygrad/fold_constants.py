"""Values of a plan computed once, when the plan is made, instead of at every run (two passes of
compile_run, pygrad/passes.py).

fold_constants: a step whose inputs are all constants (the graph's, or values folded before it)
computes the same output at every run. A frozen model is full of them: each inference batch norm of
a frozen GraphDef computes its scale, gamma * rsqrt(variance + epsilon), and its shift, beta -
mean * scale, from constants (5 steps; 53 batch norms in ResNet-50). Such steps run once, as a plan
of their own, and their outputs become constants of the plan. A step is folded when:
  - its kernel is in PURE: it writes its outputs and nothing else, and its values depend on its
    inputs alone (no variable, random state, stack or array of the run);
  - every input is a constant, and each output a temporary that it alone writes and no fetch takes;
  - its outputs are no larger than its inputs, or 4 kB: a broadcast or a fill of a large shape
    stays a step, rather than a large array held for the plan's life.
Folding uses the same kernels as a run, so the values are bitwise those the steps would compute. A
step that fails (an integer division by zero, an index out of range) is left to fail at run time,
where the error names its op; folding never raises.

fold_batch_norms (after fuse_epilogues): a fused convolution whose filter is a constant and whose
epilogue multiplies by a constant scale, per output channel, convolves with the filter scaled
instead:
    (conv(x, w) + bias) * scale + shift = conv(x, w * scale) + (bias * scale + shift)
as TensorFlow's optimize_for_inference (fold_batch_norms) and ONNX Runtime do with a frozen batch
norm. The kernel then adds one vector instead of multiplying by one and adding another (oneDNN:
one bias argument instead of two binary post-ops). The products are rounded differently: values
agree with the unfolded convolution to float rounding, not bitwise. Only where every scale is finite:
an infinite scale (a variance of -epsilon) gives infinities and NaN either way, but not in the same
elements. A session keeps one folded filter per filter and scale, shared by its plans
(SessionStore.folded).
"""
import numpy as np

from pygrad.fusion import EPILOGUE_PARTS, _rewrite, _writers
from pygrad.kernels import ACTIVATION_FWD, ARG_REDUCE_FWD, BINARY_FWD, BROADCAST_TO, CAST, CONCAT, CONST_BUFFER, \
    CONV2D_FWD, COPY, DEPTHWISE_CONV2D_FWD, FILL, GATHER_FWD, MATMUL_FWD, ONE_HOT, PAD_FWD, REDUCE_FWD, SELECT, SPLIT, \
    STRIDED_SLICE_FWD, TEMP_BUFFER, TILE_FWD, TRANSPOSE, UNARY_BWD, UNARY_FWD
from pygrad.plan_emit import run_once

PURE = {ACTIVATION_FWD, ARG_REDUCE_FWD, BINARY_FWD, BROADCAST_TO, CAST, CONCAT, COPY, FILL, GATHER_FWD, MATMUL_FWD,
        ONE_HOT, PAD_FWD, REDUCE_FWD, SELECT, SPLIT, STRIDED_SLICE_FWD, TILE_FWD, TRANSPOSE, UNARY_BWD, UNARY_FWD}
_SMALL = 4096  # bytes: an output this small folds whatever its inputs' size


def fold_constants(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    steps = program.steps
    kept_out, writers = {id(o.buffer) for o in fetched}, _writers(steps)
    const = set()  # ids of the temporaries folding makes constants

    def is_const(o):
        return o is None or o.buffer.kind == CONST_BUFFER or id(o.buffer) in const

    def foldable(k, st):
        if st.kernel not in PURE or st.reads_vars or st.init_var >= 0 or not st.outs or \
                not all(is_const(o) for o in st.ins):
            return False
        if any(o.buffer.kind != TEMP_BUFFER or id(o.buffer) in kept_out or writers.get(id(o.buffer)) != [k]
               for o in st.outs):
            return False
        ins = sum(o.buffer.nbytes if o.buffer.kind == TEMP_BUFFER else np.asarray(o.buffer.payload).nbytes
                  for o in st.ins if o is not None)
        return sum(o.buffer.nbytes for o in st.outs) <= max(_SMALL, ins)

    chosen = []
    for k, st in enumerate(steps):
        if st.kernel is not None and foldable(k, st):
            chosen.append(k)
            const.update(id(o.buffer) for o in st.outs)
    if not chosen:
        return
    values = _run_once([steps[k] for k in chosen], program.store)
    if values is not None:
        for k, outs in zip(chosen, values):
            _make_const(steps[k], outs)
    else:  # a step fails: one at a time, leaving it, and the steps that read it, to the run
        chosen = [k for k in chosen if _fold_alone(steps[k], program.store)]
    _rewrite(program, {}, set(chosen))


def _make_const(st, values):
    for o, value in zip(st.outs, values):
        o.buffer.kind, o.buffer.payload = CONST_BUFFER, value  # every operand of the buffer now reads the value


def _fold_alone(st, store):
    """Whether st, run alone, gave its outputs (made constants); not when an input is not a constant."""
    if not all(o is None or o.buffer.kind == CONST_BUFFER for o in st.ins):
        return False
    values = _run_once([st], store)
    if values is not None:
        _make_const(st, values[0])
    return values is not None


def _run_once(steps, store):
    """[the output arrays of each step] of steps run once, or None if a step fails."""
    try:
        values = iter(run_once(steps, store))
    except Exception:  # noqa: BLE001 -- left to fail at run time, where the error names its op
        return None
    return [[next(values) for _ in st.outs] for st in steps]


def fold_batch_norms(program):
    """Rewrites program.steps' fused convolutions in place."""
    for st in program.steps:
        if st.kernel in (CONV2D_FWD, DEPTHWISE_CONV2D_FWD) and st.attrs.get("scale"):
            _fold_scale(st, program.store.folded)


def _fold_scale(st, folded):
    x, w, *rest = st.ins
    parts = {name: rest.pop(0) if st.attrs.get(name) else None for name in EPILOGUE_PARTS}
    vectors = [parts[name] for name in ("bias", "scale", "shift")]
    if any(o is not None and o.buffer.kind != CONST_BUFFER for o in [w, *vectors]):
        return
    channels = st.outs[0].dims[-1]
    bias, scale, shift = (None if o is None else np.asarray(o.buffer.payload).reshape(-1) for o in vectors)
    filt = np.asarray(w.buffer.payload)
    if filt.dtype not in (np.float32, np.float64) or filt.size != np.prod(w.dims) or filt.size % channels or \
            not np.isfinite(scale).all():
        return
    key = (id(filt), *(None if v is None else v.tobytes() for v in (bias, scale, shift)))
    if key not in folded:
        wide = np.float64
        scaled = (filt.reshape(-1, channels).astype(wide) * scale.astype(wide)).astype(filt.dtype)
        add = (np.zeros(channels) if bias is None else bias.astype(wide) * scale) + (0 if shift is None else shift)
        scaled, add = scaled.reshape(filt.shape), add.astype(filt.dtype)
        for a in (scaled, add):
            a.setflags(write=False)  # the session's plans share them, as they share the graph's constants
        folded[key] = (filt, scaled, add)  # with filt: its id stays its own
    _, scaled, add = folded[key]
    Buffer, Operand = type(w.buffer), type(w)
    st.ins = [x, Operand(Buffer(CONST_BUFFER, scaled, scaled.nbytes), w.dtype, w.dims),
              Operand(Buffer(CONST_BUFFER, add, add.nbytes), w.dtype, (channels,))] + \
        ([parts["residual"]] if parts["residual"] is not None else [])
    st.attrs = {**st.attrs, "bias": 1, "scale": 0, "shift": 0}
