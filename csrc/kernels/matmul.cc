// Matrix products (pg/gemm.h: the BLAS, split over pygrad's threads).
#include "pg/gemm.h"
#include "runtime/kernel.h"

namespace pg {

// c = op(a) @ op(b), op = transpose when the flag is set. a: [m, k] (or [k, m] transposed),
// b: [k, n] (or [n, k]), c: [m, n], all row-major. c must not alias a or b.
// The gradients are matmuls too: for c = a @ b, da = dc @ b^T and db = a^T @ dc.
template <class T> void matmul_fwd(ConstView<T> a, ConstView<T> b, bool ta, bool tb, View<T> c) {
  const int m = int(c.shape[0]), n = int(c.shape[1]);
  const int k = int(ta ? a.shape[0] : a.shape[1]);
  if (k == 0) {
    for (int64_t i = 0; i < c.size(); ++i) c.data[i] = T(0);
    return;
  }
  if (m == 0 || n == 0) return;
  gemm(ta, tb, m, n, k, a.data, a.shape[1], b.data, b.shape[1], T(0), c.data);
}

Step build_matmul_fwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  expect_same_dtype(c);
  const char* op = "matmul_fwd";
  const Operand a = c.in[0], b = c.in[1], out = c.out[0];
  const bool ta = c.attrs.i("transpose_a", int64_t{0}) != 0, tb = c.attrs.i("transpose_b", int64_t{0}) != 0;
  PG_CHECK(a.shape.ndim == 2 && b.shape.ndim == 2 && out.shape.ndim == 2, op, "operands must be 2-D, got a: %s, b: %s",
           a.shape.str().c_str(), b.shape.str().c_str());
  const int64_t m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  PG_CHECK(ka == kb, op, "inner dimensions must agree, got a: %s and b: %s (%lld != %lld)", a.shape.str().c_str(),
           b.shape.str().c_str(), (long long)ka, (long long)kb);
  PG_CHECK(out.shape == Shape({m, n}), op, "output must be (%lld, %lld), got %s", (long long)m, (long long)n,
           out.shape.str().c_str());
  PG_CHECK(m < (int64_t{1} << 31) && n < (int64_t{1} << 31) && ka < (int64_t{1} << 31), op,
           "dimensions beyond 2^31 are not supported by the BLAS");
  return dispatch_float(a.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { matmul_fwd<T>(cview<T>(f, a), cview<T>(f, b), ta, tb, view<T>(f, out)); };
  });
}

}  // namespace pg
