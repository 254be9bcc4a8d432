// Softmax and log-softmax along one axis, with their gradients. x is contiguous and row-major and is
// viewed as [outer, n, inner] around the axis; a "lane" is the n values x[o, :, i], at stride inner.
// The last axis (inner == 1, contiguous lanes) is the fast path. Sums along a lane are taken in
// double. Work is split over lanes and each lane is computed in a fixed order, so results do not
// depend on the thread count. Once a kernel writes an output element it never reads the matching
// input elements again, so the output may alias an input exactly (but not overlap it partially).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>  // integral_constant

#include "pg/lanes.h"
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 8192;  // elements per parallel chunk (these loops call exp)

struct Lanes {
  int64_t outer = 0, n = 0, inner = 0;
};

Lanes lanes_around(const Shape& s, int axis) {
  Lanes l{1, s[axis], 1};
  for (int i = 0; i < s.ndim; ++i) {
    if (i < axis) l.outer *= s[i];
    if (i > axis) l.inner *= s[i];
  }
  return l;
}

using Unit = std::integral_constant<int64_t, 1>;

// Calls lane(first, stride) for every lane, in parallel over lanes. On the last-axis path the
// stride is the compile-time constant 1, so the lane loops are contiguous and vectorize.
template <class F> void for_each_lane(const Lanes& l, F lane) {
  if (l.n == 0) return;
  const int64_t count = l.outer * l.inner, grain = std::max<int64_t>(1, kGrain / l.n);
  if (l.inner == 1) {
    parallel_for(count, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) lane(r * l.n, Unit{});
    });
  } else {
    parallel_for(count, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) lane(k / l.inner * l.n * l.inner + k % l.inner, l.inner);
    });
  }
}

// sum_j term(j) over j < n, in double, with four accumulators (term may have side effects; it is
// called once per j, in order).
template <class F> double lane_sum(int64_t n, F term) {
  double acc[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int k = 0; k < 4; ++k) acc[k] += double(term(j + k));
  for (; j < n; ++j) acc[0] += double(term(j));
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace

// y = exp(x - max) / sum(exp(x - max)) along the lanes of l. x, y: the same shape; y may alias x.
template <class T> void softmax_fwd(ConstView<T> x, View<T> y, const Lanes& l) {
  const T* px = x.data;
  T* py = y.data;
  for_each_lane(l, [&](int64_t first, auto s) {
    const T* xs = px + first;
    T* ys = py + first;
    const T m = lane_max(xs, l.n, s);
    const T d = T(lane_sum(l.n, [&](int64_t j) {
      const T e = std::exp(xs[j * s] - m);
      ys[j * s] = e;
      return e;
    }));
    for (int64_t j = 0; j < l.n; ++j) ys[j * s] /= d;
  });
}

// dx = y * (dy - sum(dy * y)) along the lanes of l, y the forward output. y, dy, dx: the same shape;
// any of them may alias.
template <class T> void softmax_bwd(ConstView<T> y, ConstView<T> dy, View<T> dx, const Lanes& l) {
  const T* py = y.data;
  const T* pdy = dy.data;
  T* pdx = dx.data;
  for_each_lane(l, [&](int64_t first, auto s) {
    const T* ys = py + first;
    const T* dys = pdy + first;
    T* dxs = pdx + first;
    const T dot = T(lane_sum(l.n, [&](int64_t j) { return double(dys[j * s]) * double(ys[j * s]); }));
    for (int64_t j = 0; j < l.n; ++j) dxs[j * s] = ys[j * s] * (dys[j * s] - dot);
  });
}

// y = (x - max) - log(sum(exp(x - max))) along the lanes of l. x, y: the same shape; y may alias x.
template <class T> void log_softmax_fwd(ConstView<T> x, View<T> y, const Lanes& l) {
  const T* px = x.data;
  T* py = y.data;
  for_each_lane(l, [&](int64_t first, auto s) {
    const T* xs = px + first;
    T* ys = py + first;
    const T m = lane_max(xs, l.n, s);
    const T lse = T(std::log(lane_sum(l.n, [&](int64_t j) { return std::exp(xs[j * s] - m); })));
    for (int64_t j = 0; j < l.n; ++j) ys[j * s] = (xs[j * s] - m) - lse;
  });
}

// dx = dy - exp(y) * sum(dy) along the lanes of l, y the forward output. y, dy, dx: the same shape;
// any of them may alias.
template <class T> void log_softmax_bwd(ConstView<T> y, ConstView<T> dy, View<T> dx, const Lanes& l) {
  const T* py = y.data;
  const T* pdy = dy.data;
  T* pdx = dx.data;
  for_each_lane(l, [&](int64_t first, auto s) {
    const T* ys = py + first;
    const T* dys = pdy + first;
    T* dxs = pdx + first;
    const T sum = T(lane_sum(l.n, [&](int64_t j) { return dys[j * s]; }));
    for (int64_t j = 0; j < l.n; ++j) dxs[j * s] = dys[j * s] - std::exp(ys[j * s]) * sum;
  });
}

// ---- builders ----

namespace {

// Checks a softmax-family call: one or two float inputs and one output, all of one dtype and shape,
// and an `axis` attribute in [0, ndim). Returns the lanes around that axis.
Lanes check_softmax_call(const KernelCall& c, size_t n_in) {
  expect_arity(c, n_in, 1);
  const char* nm = c.kernel.c_str();
  const Operand& x = c.in[0];
  PG_CHECK_DTYPE(x.dtype == DType::f32 || x.dtype == DType::f64, nm, "expected float32 or float64, got %s",
                 dtype_name(x.dtype));
  expect_same_dtype(c);
  const char* names[] = {n_in == 1 ? "x" : "y", "dy"};
  for (size_t k = 1; k < n_in; ++k)
    PG_CHECK(c.in[k].shape == x.shape, nm, "%s must have the shape of %s %s, got %s", names[k], names[0],
             x.shape.str().c_str(), c.in[k].shape.str().c_str());
  PG_CHECK(c.out[0].shape == x.shape, nm, "the output must have the shape of %s %s, got %s", names[0],
           x.shape.str().c_str(), c.out[0].shape.str().c_str());
  const int64_t axis = c.attrs.i("axis", nm);
  PG_CHECK(axis >= 0 && axis < x.shape.ndim, nm, "axis %lld is out of range for %s of shape %s", (long long)axis,
           names[0], x.shape.str().c_str());
  return lanes_around(x.shape, int(axis));
}

}  // namespace

Step build_softmax_fwd(const KernelCall& c) {
  const Lanes l = check_softmax_call(c, 1);
  const Operand x = c.in[0], y = c.out[0];
  return dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [x, y, l](Frame& f) { softmax_fwd(cview<T>(f, x), view<T>(f, y), l); };
  });
}

Step build_softmax_bwd(const KernelCall& c) {
  const Lanes l = check_softmax_call(c, 2);
  const Operand y = c.in[0], dy = c.in[1], dx = c.out[0];
  return dispatch_float(y.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [y, dy, dx, l](Frame& f) { softmax_bwd(cview<T>(f, y), cview<T>(f, dy), view<T>(f, dx), l); };
  });
}

Step build_log_softmax_fwd(const KernelCall& c) {
  const Lanes l = check_softmax_call(c, 1);
  const Operand x = c.in[0], y = c.out[0];
  return dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [x, y, l](Frame& f) { log_softmax_fwd(cview<T>(f, x), view<T>(f, y), l); };
  });
}

Step build_log_softmax_bwd(const KernelCall& c) {
  const Lanes l = check_softmax_call(c, 2);
  const Operand y = c.in[0], dy = c.in[1], dx = c.out[0];
  return dispatch_float(y.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [y, dy, dx, l](Frame& f) { log_softmax_bwd(cview<T>(f, y), cview<T>(f, dy), view<T>(f, dx), l); };
  });
}

}  // namespace pg
