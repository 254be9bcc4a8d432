// Matrix products (pg/gemm.h: the BLAS, split over pygrad's threads).
#include <algorithm>

#include "pg/gemm.h"
#include "runtime/kernel.h"

namespace pg {

// c = op(a) @ op(b), op = transpose when the flag is set, for each of `batch` matrices (the
// leading dimensions of c): a: [..., m, k] (or [..., k, m] transposed), b: [..., k, n] (or
// [..., n, k]), c: [..., m, n], all row-major. An operand of rank 2 is the same matrix for every
// batch (TF's broadcasting of a matrix against a batch). c must not alias a or b. Several
// matrices run one per chunk of pygrad's threads, a single one is split by gemm.
// The gradients are matmuls too: for c = a @ b, da = dc @ b^T and db = a^T @ dc.
// C is T, or float32 for bfloat16 a and b (the plan's bfloat16 products, pygrad/bfloat16.py).
template <class T, class C> void matmul_fwd(ConstView<T> a, ConstView<T> b, bool ta, bool tb, View<C> c) {
  const int r = c.shape.ndim;
  const int64_t m = c.shape[r - 2], n = c.shape[r - 1];
  const int64_t k = ta ? a.shape[a.shape.ndim - 2] : a.shape[a.shape.ndim - 1];
  const int64_t lda = a.shape[a.shape.ndim - 1], ldb = b.shape[b.shape.ndim - 1];
  const int64_t batch = m * n == 0 ? 0 : c.size() / (m * n);
  const int64_t a_step = a.shape.ndim > 2 ? a.shape[a.shape.ndim - 2] * lda : 0;
  const int64_t b_step = b.shape.ndim > 2 ? b.shape[b.shape.ndim - 2] * ldb : 0;
  if (k == 0) {
    for (int64_t i = 0; i < c.size(); ++i) c.data[i] = C(0);
    return;
  }
  if (batch == 0) return;
  if (batch == 1) {
    gemm(ta, tb, m, n, k, a.data, lda, b.data, ldb, C(0), c.data);
    return;
  }
  parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      gemm(ta, tb, m, n, k, a.data + i * a_step, lda, b.data + i * b_step, ldb, C(0), c.data + i * m * n);
  });
}

Step build_matmul_fwd(const KernelCall& c) {
  const bool bf16 = c.in.size() == 2 && c.in[0].dtype == DType::bf16;
  const char* op = bf16 ? c.kernel.c_str() : expect_uniform(c, 2, 1);
  const Operand a = c.in[0], b = c.in[1], out = c.out[0];
  if (bf16) {
    expect_arity(c, 2, 1);
    expect_dtype(c, b, DType::bf16, "b");
    expect_dtype(c, out, DType::f32, "the product of bfloat16 operands");
  }
  const bool ta = c.attrs.i("transpose_a", int64_t{0}) != 0, tb = c.attrs.i("transpose_b", int64_t{0}) != 0;
  const int ra = a.shape.ndim, rb = b.shape.ndim, r = out.shape.ndim;
  PG_CHECK(ra >= 2 && rb >= 2 && r == std::max(ra, rb) && (ra == rb || ra == 2 || rb == 2), op,
           "operands must be matrices, or batches of them with the same batch dimensions (or one a matrix), "
           "got a: %s, b: %s", a.shape.str().c_str(), b.shape.str().c_str());
  const int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2], ka = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  const int64_t kb = tb ? b.shape[rb - 1] : b.shape[rb - 2], n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  PG_CHECK(ka == kb, op, "inner dimensions must agree, got a: %s and b: %s (%lld != %lld)", a.shape.str().c_str(),
           b.shape.str().c_str(), (long long)ka, (long long)kb);
  Shape want = ra >= rb ? a.shape : b.shape;
  want.dim[r - 2] = m;
  want.dim[r - 1] = n;
  for (int i = 0; i < r - 2; ++i)
    PG_CHECK(ra == 2 || rb == 2 || a.shape[i] == b.shape[i], op, "batch dimensions must agree, got a: %s and b: %s",
             a.shape.str().c_str(), b.shape.str().c_str());
  PG_CHECK(out.shape == want, op, "output must be %s, got %s", want.str().c_str(), out.shape.str().c_str());
  PG_CHECK(m < (int64_t{1} << 31) && n < (int64_t{1} << 31) && ka < (int64_t{1} << 31), op,
           "dimensions beyond 2^31 are not supported by the BLAS");
  // b_offset: b starts that many elements into its buffer (pygrad/dead_steps.py: the rows of b one
  // block of the product needs, with transpose_b); the plan makes sure the buffer holds them.
  const int64_t b_offset = c.attrs.i("b_offset", int64_t{0});
  PG_CHECK(b_offset >= 0 && (b_offset == 0 || (ra == 2 && rb == 2)), op,
           "b_offset must be a nonnegative element count, for matrices only; got %lld with b: %s",
           (long long)b_offset, b.shape.str().c_str());
  if (bf16)
    return [=](Frame& f) {
      ConstView<BFloat16> bv = cview<BFloat16>(f, b);
      bv.data += b_offset;
      matmul_fwd<BFloat16, float>(cview<BFloat16>(f, a), bv, ta, tb, view<float>(f, out));
    };
  return dispatch_float(a.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      ConstView<T> bv = cview<T>(f, b);
      bv.data += b_offset;
      matmul_fwd<T, T>(cview<T>(f, a), bv, ta, tb, view<T>(f, out));
    };
  });
}

}  // namespace pg
