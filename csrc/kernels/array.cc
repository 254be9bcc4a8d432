// Data movement: transpose.
#include <algorithm>
#include <vector>

#include "runtime/kernel.h"

namespace pg {

// y = x with its dimensions permuted: y.shape[i] = x.shape[perm[i]]. y must not alias x.
// 2-D goes through 32x32 tiles; higher ranks walk y in order with x's permuted strides.
template <class T> void transpose(ConstView<T> x, const std::vector<int64_t>& perm, View<T> y) {
  const int n = x.shape.ndim;
  if (n == 2 && perm[0] == 1) {
    const int64_t rows = x.shape[0], cols = x.shape[1];
    constexpr int64_t B = 32;
    for (int64_t i0 = 0; i0 < rows; i0 += B)
      for (int64_t j0 = 0; j0 < cols; j0 += B)
        for (int64_t i = i0; i < std::min(i0 + B, rows); ++i)
          for (int64_t j = j0; j < std::min(j0 + B, cols); ++j) y.data[j * rows + i] = x.data[i * cols + j];
    return;
  }
  int64_t xstride[kMaxDims], stride[kMaxDims], idx[kMaxDims] = {};
  int64_t s = 1;
  for (int i = n - 1; i >= 0; --i) {
    xstride[i] = s;
    s *= x.shape[i];
  }
  for (int i = 0; i < n; ++i) stride[i] = xstride[perm[size_t(i)]];
  const int64_t total = y.size();
  int64_t off = 0;
  for (int64_t k = 0; k < total; ++k) {
    y.data[k] = x.data[off];
    for (int d = n - 1; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < y.shape[d]) break;
      off -= stride[d] * y.shape[d];
      idx[d] = 0;
    }
  }
}

Step build_transpose(const KernelCall& c) {
  expect_arity(c, 1, 1);
  expect_same_dtype(c);
  const char* op = "transpose";
  const Operand x = c.in[0], y = c.out[0];
  const std::vector<int64_t> perm = c.attrs.ints("perm", op);
  PG_CHECK(int(perm.size()) == x.shape.ndim, op, "perm has %zu entries for a tensor of rank %d", perm.size(),
           x.shape.ndim);
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    PG_CHECK(perm[i] >= 0 && perm[i] < x.shape.ndim && !seen[size_t(perm[i])], op, "perm is not a permutation");
    seen[size_t(perm[i])] = true;
    PG_CHECK(y.shape.ndim == x.shape.ndim && y.shape[int(i)] == x.shape[int(perm[i])], op,
             "output shape %s does not match the permuted input %s", y.shape.str().c_str(), x.shape.str().c_str());
  }
  return dispatch_any(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { transpose<T>(cview<T>(f, x), perm, view<T>(f, y)); };
  });
}

}  // namespace pg
