"""Steps whose results nothing reads, taken out of a plan (a pass of compile_run, pygrad/passes.py).

Pruning keeps the ops a run's fetches need; inside a loop, an op can still compute a loop
variable that nothing reads after the loop. dynamic_rnn reads its input through a TensorArray, and
the gradient loop adds each step's input gradient into that array's gradient, a row per step: the
input half of the product dgates @ W^T, split off from the state's half. Trained on a fed input,
nothing reads that sum; TensorFlow computes it anyway. Two rewrites, repeated while they find work:

  dead step   A step goes when its kernel is pure (DEAD_WHEN_UNREAD: it writes its outputs and
              nothing else, and cannot fail on its values) and no step reads, and no fetch takes,
              any of its outputs, all temporaries. Then what fed only it goes too: the row's
              accumulation, the array's zeros and their copy into the loop.
  one block   A product c = a @ b^T of matrices whose only reader splits c along its columns, one
              part of which is still read, computes that part alone: b's rows c0 .. c1
              (matmul_fwd's b_offset) into the part's buffer, and the split goes. The LSTM's
              gradient product then has 128 columns instead of 156 (a training step of the LSTM
              benchmark: about 1 ms less of 23). A product of another width may sum in another
              order: the part's values can differ from the wide product's in the last bit.
"""
from pygrad import dtypes
from pygrad.fusion import _ops_of, _readers, _rewrite
from pygrad.kernels import BINARY_FWD, BROADCAST_TO, CAST, CONCAT, COPY, FILL, FUSED_ELEMENTWISE, MATMUL_FWD, \
    REDUCE_FWD, SPLIT, TA_READ, TA_WRITE, TEMP_BUFFER, TRANSPOSE, UNARY_BWD, UNARY_FWD

DEAD_WHEN_UNREAD = {BROADCAST_TO, CAST, CONCAT, COPY, FILL, FUSED_ELEMENTWISE, MATMUL_FWD, REDUCE_FWD, SPLIT,
                    TA_READ, TA_WRITE, TRANSPOSE, UNARY_BWD, UNARY_FWD}
_FLOATS = {d.code for d in (dtypes.float16, dtypes.float32, dtypes.float64)}


def drop_dead_steps(program, fetched):
    """Rewrites program.steps in place; fetched: the operands the plan returns."""
    kept_out = {id(o.buffer) for o in fetched}
    while _drop_once(program, kept_out):
        pass


def _pure(st):
    # a binary op of integers refuses a zero divisor: it stays
    return st.kernel in DEAD_WHEN_UNREAD or (st.kernel == BINARY_FWD and st.ins[0].dtype in _FLOATS)


def _drop_once(program, kept_out):
    steps = program.steps
    readers = _readers(steps)

    def unread(o):
        return o.buffer.kind == TEMP_BUFFER and id(o.buffer) not in kept_out and not readers.get(id(o.buffer))

    dead = {i for i, st in enumerate(steps) if st.kernel is not None and st.outs and _pure(st)
            and all(unread(o) for o in st.outs)}
    replaced = {}
    for i, st in enumerate(steps):
        if st.kernel != MATMUL_FWD or i in dead or st.attrs.get("transpose_a") or not st.attrs.get("transpose_b") \
                or st.attrs.get("b_offset") or len(st.ins[0].dims) != 2 or len(st.ins[1].dims) != 2:
            continue
        c = st.outs[0]
        r = readers.get(id(c.buffer), [])
        if c.buffer.kind != TEMP_BUFFER or id(c.buffer) in kept_out or len(r) != 1 or r[0] in dead:
            continue
        split = steps[r[0]]
        if split.kernel != SPLIT or split.attrs.get("axis") not in (1, -1) or split.ins[0].buffer is not c.buffer:
            continue
        live = [k for k, o in enumerate(split.outs) if not unread(o)]
        if len(live) != 1:
            continue
        part = split.outs[live[0]]
        start = sum(o.dims[1] for o in split.outs[:live[0]])
        b = st.ins[1]
        narrowed = type(b)(b.buffer, b.dtype, (part.dims[1], b.dims[1]))
        replaced[i] = [type(st)(st.op, MATMUL_FWD, [st.ins[0], narrowed], [part],
                                {**st.attrs, "b_offset": start * b.dims[1]}, st.reads_vars, st.init_var,
                                _ops_of([st, split], st.op))]
        dead.add(r[0])
    _rewrite(program, replaced, dead)
    return bool(dead)
