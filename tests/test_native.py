"""The native library: every kernels.def entry is bound, and bad arguments raise instead of crashing."""
import os
import re
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import pygrad as tf
from pygrad import _C

KERNELS_DEF = Path(__file__).resolve().parents[1] / "csrc" / "pg" / "kernels.def"


def test_every_kernels_def_entry_is_bound():
    listed = re.findall(r"^PG_KERNEL\(\w+, (\w+)\)", KERNELS_DEF.read_text(), re.M)
    assert listed and listed == _C.kernel_names()


def test_dtype_codes_come_from_the_extension():
    for d in (tf.float32, tf.float64, tf.int32, tf.int64, tf.bool):
        assert _C.dtypes[d.name] == d.code


def test_kernel_runs_on_numpy_arrays():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    c = np.empty((2, 2), np.float32)
    _C.call("matmul_fwd", [a, b], [c], {})
    np.testing.assert_array_equal(c, a @ b)
    _C.call("matmul_fwd", [a, a], [np.empty((3, 3), np.float32)], {"transpose_a": 1})


@pytest.mark.parametrize("call, error, match", [
    (lambda: _C.call("matmul_fwd", [np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)],
                     [np.empty((2, 2), np.float32)]), ValueError, r"inner dimensions must agree.*\(3 != 4\)"),
    (lambda: _C.call("matmul_fwd", [np.ones((2, 3), np.float32), np.ones((3, 2), np.float64)],
                     [np.empty((2, 2), np.float32)]), TypeError, "one dtype"),
    (lambda: _C.call("no_such_kernel", [], []), ValueError, "unknown kernel"),
    (lambda: _C.call("matmul_fwd", [np.ones((3, 2), np.float32).T, np.ones((3, 2), np.float32)],
                     [np.empty((2, 2), np.float32)]), ValueError, "C-contiguous"),
    (lambda: _C.call("matmul_fwd", [np.ones((2, 2), np.float32)], [np.empty((2, 2), np.float32)]),
     ValueError, "expected 2 inputs"),
    (lambda: _C.call("unary_fwd", [np.ones(3, np.float32)], [np.empty(3, np.float32)], {"op": "nope"}),
     ValueError, "nope"),
    (lambda: _C.call("softmax_fwd", [np.ones((2, 3), np.int32)], [np.empty((2, 3), np.int32)], {"axis": 1}),
     TypeError, "int32"),
], ids=["shape", "dtype", "unknown", "contiguity", "arity", "attr", "int-softmax"])
def test_bad_arguments_raise_python_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_uninitialized_variable_is_reported_before_any_step():
    store = _C.VarStore()
    v = store.add("v", tf.float32.code, [2])
    plan = _C.Plan(store, _C.Arenas())
    buf = plan.add_var(v)
    plan.require_initialized(v)
    plan.set_fetches([(buf, tf.float32.code, [2])])
    with pytest.raises(_C.UninitializedError, match="v"):
        plan.run([])
    store.write(v, np.array([1, 2], np.float32))
    np.testing.assert_array_equal(plan.run([])[0], [1, 2])


def test_set_num_threads_sets_one_knob():
    old = tf.get_num_threads()
    try:
        tf.set_num_threads(2)
        assert tf.get_num_threads() == 2
    finally:
        tf.set_num_threads(old)


def test_native_benchmark_runner_sets_pygrads_environment_defaults():
    """The OpenMP/OpenBLAS defaults are written twice, in Python (read before the libraries load)
    and in the C++ runner (which re-executes itself with them): the two lists must agree."""
    runner = (KERNELS_DEF.parents[2] / "benches" / "native" / "bench_kernels.cc").read_text()
    in_runner = dict(re.findall(r'set_default\("(\w+)", "(\w+)"\)', runner))
    assert in_runner == {**tf._ENV_DEFAULTS, **tf._AMD_AVX512_ENV_DEFAULTS}


def test_a_forked_child_runs_parallel_loops():
    """The thread pool's helpers do not survive fork(); a child gets a pool of its own."""
    x = tf.placeholder(tf.float32, [None])
    y = tf.reduce_sum(tf.exp(x * 0.001))
    big = np.ones(1 << 20, np.float32)
    old = tf.get_num_threads()
    tf.set_num_threads(2)
    try:
        with tf.Session() as sess:
            want = sess.run(y, {x: big})  # the parent's helpers are running
            with warnings.catch_warnings():  # Python 3.12 warns that forking a threaded process is risky
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:  # the child: exit code 0 only if the same value comes out
                os._exit(0 if sess.run(y, {x: big}) == want else 1)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.05)
            else:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung in a parallel loop")
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        tf.set_num_threads(old)


ELEMENTWISE_DEF = KERNELS_DEF.parent / "elementwise.def"


def test_elementwise_ops_are_the_rows_of_elementwise_def():
    rows = re.findall(r"^PG_(\w+)\((\w+),", ELEMENTWISE_DEF.read_text(), re.M)
    kernels = {"UNARY": ["unary_fwd"], "UNARY_GRAD": ["unary_bwd"], "BINARY": ["binary_fwd"],
               "ACTIVATION": ["activation_fwd", "activation_bwd"]}
    listed = {}
    for family, name in rows:
        for kernel in kernels[family]:
            listed.setdefault(kernel, []).append(name)
    assert listed and listed == _C.elementwise_ops()


def test_elementwise_op_table_is_checked_both_ways():
    """Every op name pygrad's ops give an elementwise kernel is a row of elementwise.def, and every
    row is used: a misspelt name (or a missing one) is reported by name when pygrad is imported."""
    from pygrad import registry

    native = _C.elementwise_ops()
    table = registry.elementwise_table(native)
    assert registry.check_elementwise(table, native) == []
    assert table["unary_fwd"]["exp"] == ["Exp"] and table["activation_bwd"]["elu"] == ["EluGrad"]

    misspelt = {k: dict(v) for k, v in table.items()}
    misspelt["binary_fwd"]["squared_diference"] = misspelt["binary_fwd"].pop("squared_difference")
    problems = registry.check_elementwise(misspelt, native)
    assert len(problems) == 2
    assert "binary_fwd has no op 'squared_diference'" in problems[0] and "SquaredDifference" in problems[0]
    assert "'squared_difference' is used by no op" in problems[1]

    unnamed = {**table, "unary_fwd": {**table["unary_fwd"], None: ["Mystery"]}}
    assert registry.check_elementwise(unnamed, native) == ["unary_fwd needs an op name, none given by Mystery "
                                                           "(OpDef.kernel_op)"]
    wrong_kernel = {**table, "softmax_fwd": {"exp": ["Softmax"]}}
    assert "kernel 'softmax_fwd' takes no op" in registry.check_elementwise(wrong_kernel, native)[0]


def test_kernel_names_python_steps_to_are_in_kernels_def():
    from pygrad import kernels

    assert kernels.COPY in kernels.KERNELS and kernels.TEMP_BUFFER not in kernels.KERNELS
    assert kernels.check_kernel_names(kernels.KERNELS, _C.kernel_names()) == []
    assert kernels.check_kernel_names(["copy", "cpoy"], _C.kernel_names()) == [
        "pygrad.kernels names kernel 'cpoy', which is not in csrc/pg/kernels.def"]


@pytest.mark.parametrize("dtype, n", [(np.float32, 7), (np.int64, 1 << 17), (np.uint8, 3 << 20), (np.bool_, 0)])
def test_copy_kernel_copies_bytes_over_threads(dtype, n, threads):
    x = (np.arange(n) % 251).astype(dtype)
    y = np.empty_like(x)
    _C.call("copy", [x], [y])
    np.testing.assert_array_equal(y, x)
    _C.call("copy", [x], [x])  # onto itself: nothing to do


@pytest.mark.parametrize("out, match", [(np.empty(3, np.float64), "dtype"), (np.empty(4, np.float32), "shape")])
def test_copy_kernel_refuses_another_dtype_or_shape(out, match):
    with pytest.raises((TypeError, ValueError), match=match):
        _C.call("copy", [np.ones(3, np.float32)], [out])
