// Scans along one axis: cumsum and cumprod (tf.cumsum, tf.cumprod), inclusive or exclusive,
// forward or reversed. Their gradients are scans too (pygrad/ops/sequence_ops.py).
#include <algorithm>

#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {

namespace {
constexpr int64_t kGrain = 32768;
}

// y = the running sum (prod = false) or product (prod = true) of x along the middle dimension of
// [outer, n, inner]. exclusive: y[k] combines the elements before k (the first is 0, or 1 for a
// product); reverse: the scan runs from the end. y may alias x.
template <class T>
void cumulative(ConstView<T> x, int64_t outer, int64_t n, int64_t inner, bool prod, bool exclusive, bool reverse,
                View<T> y) {
  parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const T* src = x.data + o * n * inner + i;
      T* dst = y.data + o * n * inner + i;
      T acc = prod ? T(1) : T(0);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t k = (reverse ? n - 1 - s : s) * inner;
        const T v = src[k];
        if (exclusive) dst[k] = acc;
        acc = prod ? T(acc * v) : T(acc + v);
        if (!exclusive) dst[k] = acc;
      }
    }
  });
}

Step build_cumulative(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  const int64_t axis = c.attrs.i("axis", op);
  const std::string& kind = c.attrs.s("op", op);
  PG_CHECK(kind == "sum" || kind == "prod", op, "op must be sum or prod, got '%s'", kind.c_str());
  PG_CHECK(x.shape == y.shape, op, "x %s and y %s must have one shape", x.shape.str().c_str(), y.shape.str().c_str());
  PG_CHECK(axis >= 0 && axis < std::max(1, x.shape.ndim), op, "axis %lld is out of range for x %s", (long long)axis,
           x.shape.str().c_str());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < int(axis); ++d) outer *= x.shape[d];
  for (int d = int(axis) + 1; d < x.shape.ndim; ++d) inner *= x.shape[d];
  const int64_t n = x.shape.ndim ? x.shape[int(axis)] : 1;
  const bool prod = kind == "prod", exclusive = c.attrs.i("exclusive", op), reverse = c.attrs.i("reverse", op);
  return dispatch_number(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { cumulative<T>(cview<T>(f, x), outer, n, inner, prod, exclusive, reverse, view<T>(f, y)); };
  });
}

}  // namespace pg
