"""The lowering passes, each alone: prune, infer_shapes, schedule, lower, assign_buffers, emit; and
a plan compiled from a graph and a SessionStore, with no session."""
import numpy as np
import pytest

import pygrad as tf
from pygrad import _C, errors
from pygrad.lowering import compile_run, infer_shapes, lower, prune, schedule
from pygrad.plan_emit import assign_buffers
from pygrad.plan_cache import PlanCache
from pygrad.registry import Spec
from pygrad.shapes import TensorShape
from pygrad.session_store import SessionStore


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _fed(*pairs):
    return {t: Spec(t.dtype, TensorShape(shape)) for t, shape in pairs}


def test_prune_keeps_what_the_fetches_need_and_cuts_at_feeds():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    h = tf.exp(x, name="h")
    y = tf.square(h, name="y")
    tf.log(x, name="unused")
    value_ops, shape_ops = prune([y], [], _fed((x, (2, 3))))
    assert {op.name for op in value_ops} == {"y", "h"}  # x is fed: its op is not needed
    assert shape_ops == set()
    value_ops, _ = prune([y], [], _fed((x, (2, 3)), (h, (2, 3))))
    assert {op.name for op in value_ops} == {"y"}


def test_prune_needs_only_the_shape_of_a_shape_only_input():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    h = tf.exp(x, name="h")
    z = tf.zeros_like(h, name="z")  # reads h's shape, not its value
    value_ops, shape_ops = prune([z], [], _fed((x, (4, 3))))
    assert {op.name for op in value_ops} == {"z"}
    assert {op.name for op in shape_ops} == {"h"}
    specs, _ = infer_shapes(value_ops | shape_ops, _fed((x, (4, 3))))
    assert specs[z].shape.as_list() == [4, 3]


def test_prune_follows_control_inputs_and_targets():
    a = tf.Variable(1.0, name="a")
    with tf.control_dependencies([a.initializer]):
        b = tf.identity(a, name="b")
    value_ops, _ = prune([b], [], {})
    assert {"a/Assign", "b", "a"} <= {op.name for op in value_ops}


def test_infer_shapes_names_the_missing_feed():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.exp(x)
    value_ops, shape_ops = prune([y], [], {})
    with pytest.raises(errors.InvalidArgumentError, match="You must feed a value for placeholder tensor 'x'"):
        infer_shapes(value_ops | shape_ops, {})


def test_schedule_runs_a_variables_reader_before_its_writer():
    v = tf.Variable(2.0, name="v")
    update = tf.assign(v, 5.0, name="update")  # created before the reader
    read = tf.multiply(v, 3.0, name="read")
    order = [op.name for op in schedule(prune([read], [update.op], {})[0], {})]
    assert order.index("read") < order.index("update")


def test_schedule_keeps_a_reader_that_depends_on_the_write_after_it():
    v = tf.Variable(2.0, name="v")
    update = tf.assign(v, 5.0, name="update")
    with tf.control_dependencies([update]):
        read = tf.multiply(v, 3.0, name="read")
    order = [op.name for op in schedule(prune([read], [], {})[0], {})]
    assert order.index("update") < order.index("read")


def _program(fetches, fed, graph=None):
    value_ops, shape_ops = prune(fetches, [], fed)
    specs, values = infer_shapes(value_ops | shape_ops, fed)
    store = SessionStore(graph or tf.get_default_graph())
    return lower(schedule(value_ops, fed), specs, values, fed, store)


def test_lower_records_each_step_as_its_op():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.add_n([x, x, x], name="sum3")  # AddN lowers to two steps
    program = _program([y], _fed((x, (2,))))
    assert [st.op.name for st in program.steps] == ["sum3", "sum3"]
    assert [st.kernel for st in program.steps] == ["binary_fwd", "binary_fwd"]


def test_assign_buffers_reuses_temporaries_whose_last_use_has_passed():
    x = tf.placeholder(tf.float32, [1000], name="x")
    t = x
    for i in range(6):
        t = tf.exp(t, name=f"e{i}")
    fed = _fed((x, (1000,)))
    program = _program([t], fed)
    fetches = [program.operand(t)]
    plan_buffers, where = assign_buffers([program.buffer_of[x]], program.steps, fetches)
    temps = [b for b in plan_buffers if b[0] == "temp"]
    assert len(program.steps) == 6
    assert len(temps) == 2  # each exp reads one temporary and writes the other
    assert plan_buffers[0] == ("feed", fed[x])
    outputs = [where[st.outs[0].buffer] for st in program.steps]
    assert all(a != b for a, b in zip(outputs, outputs[1:]))


def test_assign_buffers_never_reuses_a_fetched_temporary():
    x = tf.placeholder(tf.float32, [100], name="x")
    a = tf.exp(x, name="a")
    b = tf.exp(a, name="b")
    c = tf.exp(b, name="c")
    fed = _fed((x, (100,)))
    program = _program([a, c], fed)
    fetches = [program.operand(a), program.operand(c)]
    _, where = assign_buffers([program.buffer_of[x]], program.steps, fetches)
    used_after_a = {where[o.buffer] for st in program.steps[1:] for o in st.outs}
    assert where[fetches[0].buffer] not in used_after_a


def test_compile_run_needs_a_store_not_a_session():
    v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    y = v * x
    store = SessionStore(tf.get_default_graph())
    init = compile_run([v.initializer], (), [], store)
    init.plan.run([])
    run = compile_run([y, v.initializer, y], (x,), [(2,)], store)
    assert run.fetch_index == [0, None, 0]
    (out,) = run.plan.run([np.array([3.0, 4.0], np.float32)])
    np.testing.assert_array_equal(out, [3.0, 8.0])
    assert [op.type for op in run.step_ops] == ["Mul", "Assign"]  # the read runs before the write


def test_a_failing_step_raises_a_step_error_with_its_index():
    idx, x = tf.placeholder(tf.int32, [1], name="idx"), tf.placeholder(tf.float32, [2], name="x")
    first = tf.exp(x, name="first")  # of a feed: a step of the plan (of a constant, it would be folded)
    picked = tf.gather(first, idx, name="picked")
    run = compile_run([picked], (idx, x), [(1,), (2,)], SessionStore(tf.get_default_graph()))
    with pytest.raises(_C.StepError, match=r"indices\[0\] = 7 is not in \[0, 2\)") as e:
        run.plan.run([np.array([7], np.int32), np.array([1.0, 2.0], np.float32)])
    assert run.step_ops[e.value.step].name == "picked"
    assert e.value.step == 1


def test_a_plans_temporaries_before_and_after_reuse():
    """CompiledRun.temp_bytes (the plan's temporaries after sharing) and temp_bytes_before_reuse
    (every logical temporary), against a hand count on a chain of products of a fed [2, 4] batch
    with constants: outputs of 64, 32, 128, 16 and 64 bytes (float32 [2, 8], [2, 4], [2, 16],
    [2, 2], [2, 8]). Output hi lives from step i - 1 to step i (the next product reads it), h5 to
    the end (it is fetched). Largest first: h3 (steps 2-3) makes a buffer of 128; h1 (0-1) and h5
    (4-end) join it; h2 (1-2) overlaps h1 and h3 there: a new buffer of 32; h4 (3-4) joins h2's.
    (As steps first use them, each in the smallest free buffer that holds it, they took 64 + 32 +
    128: h3 found none.)"""
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [2, 4], name="x")
    widths = [4, 8, 4, 16, 2, 8]
    weights = [rng.standard_normal((a, b)).astype(np.float32) for a, b in zip(widths, widths[1:])]
    h = x
    for i, w in enumerate(weights):
        h = tf.matmul(h, tf.constant(w), name=f"h{i + 1}")
    xs = rng.standard_normal((2, 4)).astype(np.float32)
    with tf.Session() as sess:
        out = sess.run([h], {x: xs})[0]
        run = sess.plans.get(PlanCache.key((h,), (x,), ((2, 4),)))
    expected = xs
    for w in weights:
        expected = expected @ w
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    assert [op.name for op in run.step_ops] == ["h1", "h2", "h3", "h4", "h5"]
    assert run.temp_bytes_before_reuse == 64 + 32 + 128 + 16 + 64
    assert run.temp_bytes == 128 + 32
    assert run.plan.arena_bytes == 128 + 64  # the native plan aligns each buffer to 64 bytes


def test_a_plan_without_temporaries_reports_none():
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        run = sess.plans.get(PlanCache.key((v.initializer,), (), ()))
    assert run.temp_bytes == run.temp_bytes_before_reuse == run.plan.arena_bytes == 0
