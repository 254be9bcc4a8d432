"""Float32 products on every route of pg/gemm.h: oneDNN serves products with at least 32 rows and
columns and 2^18 multiply-adds (its jit gemm the largest, 2^27 multiply-adds with a transposed and
2^30 with neither transposed, its matmul primitive the others), the AVX-512 thin kernel the
transposed-a products of 2 to 15 columns (weight gradients), the BLAS the rest (its gemv a product of
one row or one column); all must agree with a float64 NumPy product, for every transpose, on one and
two threads, and repeat bitwise."""
import numpy as np
import pytest

import pygrad as tf
from gradcheck import assert_close
from pygrad import _C

SHAPES = [  # (m, n, k): oneDNN's, then thin and the BLAS's (thin, small), then pool-split ones
    (64, 64, 64), (50, 1024, 3136), (128, 256, 784), (512, 512, 600), (1024, 1024, 1024),
    (100, 10, 784), (784, 10, 100), (1, 256, 784), (33, 15, 3), (17, 2, 1000), (50, 13, 40), (1000, 14, 7),
    (16, 7, 1), (31, 300, 300), (300, 33, 700), (1000, 64, 9), (1, 4096, 300), (700, 1, 300), (1, 1, 64),
    (1, 7, 1),
]


def product(a, b, ta, tb):
    c = np.empty((a.shape[1] if ta else a.shape[0], b.shape[0] if tb else b.shape[1]), a.dtype)
    _C.call("matmul_fwd", [a, b], [c], {"transpose_a": int(ta), "transpose_b": int(tb)})
    return c


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_float32_products_match_float64(threads, m, n, k, ta, tb):
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = (a64.T if ta else a64) @ (b64.T if tb else b64)
    got = product(a, b, ta, tb)
    # float32 sums of k products: the error is relative to the sum of the terms' magnitudes
    assert_close(got, want, np.float32, scale=np.abs(a64.T if ta else a64) @ np.abs(b64.T if tb else b64))
    np.testing.assert_array_equal(product(a, b, ta, tb), got)


def test_graph_matmul_and_gradients_through_onednn():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((96, 200)).astype(np.float32)
    w = rng.standard_normal((200, 64)).astype(np.float32)
    xt, wt = tf.constant(x), tf.Variable(w)
    y = tf.matmul(xt, wt)
    gx, gw = tf.gradients(tf.reduce_sum(y * y), [xt, wt])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        yv, gxv, gwv = sess.run([y, gx, gw])
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    y64 = x64 @ w64
    # Sums of products: errors relative to the sums of the terms' magnitudes (gradcheck's scale).
    ay = np.abs(x64) @ np.abs(w64)
    assert_close(yv, y64, np.float32, scale=ay)
    assert_close(gxv, 2 * y64 @ w64.T, np.float32, kind="grad", scale=2 * ay @ np.abs(w64).T)
    assert_close(gwv, 2 * x64.T @ y64, np.float32, kind="grad", scale=2 * np.abs(x64).T @ ay)


def test_onednn_serves_the_large_products_only(tmp_path):
    """oneDNN's verbose log (read once, when the library loads) lists the primitives that ran. The
    child runs outside the source tree, so that it imports the installed pygrad."""
    import os
    import subprocess
    import sys
    code = ("import numpy as np; from pygrad import _C\n"
            "for m, n, k in [(50, 1024, 3136), (100, 10, 784)]:\n"
            "    _C.call('matmul_fwd', [np.ones((m, k), np.float32), np.ones((k, n), np.float32)],\n"
            "            [np.empty((m, n), np.float32)], {})\n")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "ONEDNN_VERBOSE": "1"}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    executed = [line for line in out.splitlines() if line.startswith("onednn_verbose") and ",exec," in line
                and ",matmul," in line]
    assert any("50x3136:3136x" in line for line in executed), out
    assert not any("100x784" in line for line in executed), out


@pytest.mark.parametrize("m,n,k", [(1, 300, 200), (300, 1, 200), (1, 1, 5)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_float64_matrix_vector_products(threads, m, n, k, ta, tb):
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((k, m) if ta else (m, k))
    b = rng.standard_normal((n, k) if tb else (k, n))
    np.testing.assert_allclose(product(a, b, ta, tb), (a.T if ta else a) @ (b.T if tb else b), rtol=1e-12, atol=1e-12)
