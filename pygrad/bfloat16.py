"""bfloat16 products (a pass of compile_run, for a session with mixed precision on): the float32
convolutions (forward, input and filter gradients) and matrix products of a plan run on bfloat16
copies of their two operands, accumulated and written in float32, by oneDNN's kernels for
AVX512-BF16 or AMX. Everything else stays float32: variables (the master weights), optimizer
state, the products' outputs, the epilogue a convolution fuses, every other step.

Each operand gets a to_bfloat16 step (csrc/kernels/bfloat16.cc) placed before the product. Later
products that read the same buffer share that copy while nothing writes the buffer in between and no
jump leaves or enters the stretch: the forward product and the input gradient share a weight's copy,
the input gradient and the filter gradient the copy of the output's gradient. An operand that a
loop's products read and no step of the loop writes (a recurrent network's weights) is copied
once, before the loop, and the loop's products share that copy. A graph constant's
copy is made here once (`to_bfloat16`, the kernel's rounding), so a frozen model's filters are
bfloat16 constants that the convolutions reorder once.

Rounding (pg/bfloat16.h): to nearest, ties to even, subnormals to zero of their sign, NaN kept; as
AVX512-BF16's conversion instruction rounds. The products' values are those of float32 products of
the rounded operands, up to the order of the float32 sums.

When the switch is on: ``Session(config=...)`` with RewriterConfig's ``auto_mixed_precision``,
``auto_mixed_precision_onednn_bfloat16`` or ``auto_mixed_precision_mkl`` ON, or a Session created
after ``tf.train.experimental.enable_mixed_precision_graph_rewrite``. On a CPU without AVX512-BF16
the session warns and runs float32 (``cpu_has_bfloat16``).
"""
import warnings

import numpy as np

from pygrad import _C
from pygrad.dtypes import float32
from pygrad.fusion import _jump_targets, _rewrite, _writers
from pygrad.kernels import CONST_BUFFER, CONV2D_BWD_FILTER, CONV2D_BWD_INPUT, CONV2D_FWD, MATMUL_FWD, \
    TEMP_BUFFER, TO_BFLOAT16

BFLOAT16 = _C.dtypes["bfloat16"]

# The products; their two operands are their first two inputs.
_PRODUCTS = (CONV2D_FWD, CONV2D_BWD_INPUT, CONV2D_BWD_FILTER, MATMUL_FWD)


def cpu_has_bfloat16():
    """Whether this CPU has the bfloat16 dot products oneDNN's bfloat16 kernels need (AVX512-BF16 or
    AMX), as oneDNN itself detects them."""
    return bool(_C.cpu_has_bfloat16())


# The mixed-precision switches: TF's RewriterConfig fields that turn the rewrite on, and its Toggle
# values; and the process-wide switch, enable_mixed_precision_graph_rewrite's (TF's
# mixed_precision_global_state), which pygrad/train/mixed_precision.py sets.
SWITCHES = ("auto_mixed_precision", "auto_mixed_precision_onednn_bfloat16", "auto_mixed_precision_mkl")
ON, OFF = 1, 2
_state = {"rewrite": False, "float32_session_created": False}


def set_graph_rewrite(enabled):
    """Turns the process-wide switch on or off, for the Sessions created after."""
    _state["rewrite"] = bool(enabled)


def graph_rewrite_enabled():
    """Whether the process-wide switch is on."""
    return _state["rewrite"]


def float32_session_created():
    """Whether a Session that does not use mixed precision was created (enable's warning)."""
    return _state["float32_session_created"]


def note_session_created(uses_mixed_precision):
    """Records a new Session: one that does not use mixed precision makes a later
    enable_mixed_precision_graph_rewrite warn (TF's set_non_mixed_precision_session_created)."""
    if not uses_mixed_precision:
        _state["float32_session_created"] = True


def session_uses_bfloat16(config):
    """Whether a Session created now with config (a ConfigProto, pygrad's or TF's, or None) runs its
    products in bfloat16: a switch of SWITCHES ON, or the process-wide switch on and
    auto_mixed_precision not OFF (TF's Session's rule). On a CPU without bfloat16 instructions it
    warns and answers False."""
    options = getattr(getattr(config, "graph_options", None), "rewrite_options", None)
    toggles = {name: getattr(options, name, 0) for name in SWITCHES}
    uses = ON in toggles.values() or (graph_rewrite_enabled() and toggles["auto_mixed_precision"] != OFF)
    note_session_created(uses)
    if not uses:
        return False
    if not cpu_has_bfloat16():
        warnings.warn("Mixed precision: this CPU has no bfloat16 instructions (AVX512-BF16 or AMX), so the "
                      "session runs its convolutions and matrix products in float32.", RuntimeWarning, stacklevel=3)
        return False
    return True


def to_bfloat16(x):
    """The bits (uint16) of float32 array x rounded to bfloat16, as the native kernel rounds."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    subnormal = (u & 0x7F800000) == 0
    out = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)
    return np.where(subnormal, ((u & 0x80000000) >> 16).astype(np.uint16), out).astype(np.uint16)


def from_bfloat16(bits):
    """The float32 values of bfloat16 bits (uint16)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def bfloat16_products(program, fetches):
    """Rewrites program.steps in place (fetches: the operands the plan returns, untouched here)."""
    steps = program.steps
    writers = _writers(steps)
    targets = _jump_targets(program)
    jumps = [k for k, s in enumerate(steps) if s.kernel is None]
    hoistable = _hoistable_loops(program, jumps)
    copies = {}  # (id(buffer), offset, dims) -> (the step index the copy is made before, its Operand)
    hoisted = {}  # ((id(buffer), offset, dims), loop) -> the Operand of the copy made before loop
    consts = {}  # (id(buffer), offset, dims) -> the bfloat16 constant's Buffer
    replaced, after = {}, {}  # after[i]: the copies made after step i (before a loop that starts at i + 1)
    for k, st in enumerate(steps):
        if not _takes_bfloat16(st):
            continue
        made, ins = [], list(st.ins)
        offset = st.attrs.get("b_offset", 0)
        for pos in (0, 1):
            o = ins[pos]
            at = offset if pos == 1 else 0
            key = (id(o.buffer), at, o.dims)
            if o.buffer.kind == CONST_BUFFER:
                ins[pos] = _constant_copy(consts, key, o, at)
                continue
            loop = next((lp for lp in hoistable if lp[0] <= k <= lp[1] and
                         not any(lp[0] <= w <= lp[1] for w in writers.get(id(o.buffer), ()))), None)
            if loop is not None and (key, loop) in hoisted:
                ins[pos] = hoisted[key, loop]
                continue
            prior = copies.get(key)
            if loop is None and prior is not None and _unchanged(o.buffer, prior[0], k, writers, targets, jumps):
                ins[pos] = prior[1]
                continue
            copy = type(o)(type(o.buffer)(TEMP_BUFFER, st.op, 2 * int(np.prod(o.dims, dtype=np.int64))), BFLOAT16,
                           o.dims)
            cast = type(st)(st.op, TO_BFLOAT16, [o], [copy], {"offset": at} if at else {}, st.reads_vars, -1)
            if loop is not None:  # the operand does not change in the loop: made once, before it
                after.setdefault(loop[0] - 1, []).append(cast)
                hoisted[key, loop] = copy
            else:
                made.append(cast)
                copies[key] = (k, copy)
            ins[pos] = copy
        attrs = {a: v for a, v in st.attrs.items() if a != "b_offset"}
        replaced[k] = made + [type(st)(st.op, st.kernel, ins, st.outs, attrs, st.reads_vars, st.init_var, st.fused)]
    for i, casts in after.items():
        replaced[i] = replaced.get(i, [steps[i]]) + casts
    _rewrite(program, replaced, ())


def _hoistable_loops(program, jumps):
    """The loops, outermost first, before whose first step a copy can be made once: a step that is
    not a jump precedes the loop, and no jump from outside the loop lands inside it."""
    steps = program.steps
    loops = []
    for first, last in sorted(set(program.loops), key=lambda lp: lp[0] - lp[1]):
        if first == 0 or steps[first - 1].kernel is None:
            continue
        if any(not first <= j <= last and first <= steps[j].attrs["target"].index <= last for j in jumps):
            continue
        loops.append((first, last))
    return loops


def _takes_bfloat16(st):
    """Whether step st is a float32 product whose operands may be bfloat16."""
    if st.kernel not in _PRODUCTS or len(st.outs) != 1 or st.outs[0].dtype != float32.code:
        return False
    return st.ins[0].dtype == st.ins[1].dtype == float32.code


def _unchanged(buffer, first, k, writers, targets, jumps):
    """Whether buffer holds at step k what it held before step `first`: no step in between writes
    it, and no jump leaves the stretch or lands inside it."""
    if any(first <= w < k for w in writers.get(id(buffer), ())):
        return False
    return not any(first <= j < k for j in jumps) and not any(first < t <= k for t in targets)


def _constant_copy(consts, key, o, offset):
    """The operand of constant o's bfloat16 copy (its elements from offset on, o's dims)."""
    if key not in consts:
        size = int(np.prod(o.dims, dtype=np.int64))
        values = np.asarray(o.buffer.payload, np.float32).reshape(-1)[offset:offset + size]
        bits = to_bfloat16(values).reshape(o.dims)
        consts[key] = type(o.buffer)(CONST_BUFFER, bits, bits.nbytes)
    return type(o)(consts[key], BFLOAT16, o.dims)
