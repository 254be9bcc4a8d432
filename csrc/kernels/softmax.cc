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
#include "pg/scratch.h"
#include "pg/vmath.h"
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

// y[r, j] = exp(x[r, j] - max_j x[r, :]) for `rows` contiguous rows of n; float32 by one call of the
// vectorized loop over them all (pg/vmath.h), as it is slow on rows as short as 10. y may be x.
template <class T> void exp_shifted_rows(const T* x, T* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const T m = lane_max(x + r * n, n, Unit{});
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = x[r * n + j] - m;
  }
  if constexpr (std::is_same_v<T, float>) {
    exp_f32(y, y, rows * n);
  } else {
    for (int64_t i = 0; i < rows * n; ++i) y[i] = std::exp(y[i]);
  }
}

}  // namespace

// y = exp(x - max) / sum(exp(x - max)) along the lanes of l. x, y: the same shape; y may alias x.
template <class T> void softmax_fwd(ConstView<T> x, View<T> y, const Lanes& l) {
  const T* px = x.data;
  T* py = y.data;
  if (l.inner == 1 && l.n > 0) {  // rows: their exps in one pass, then each row's sum
    parallel_for(l.outer, std::max<int64_t>(1, kGrain / l.n), [&](int64_t lo, int64_t hi) {
      exp_shifted_rows(px + lo * l.n, py + lo * l.n, hi - lo, l.n);
      for (int64_t r = lo; r < hi; ++r) {
        T* ys = py + r * l.n;
        const T d = T(lane_sum(l.n, [&](int64_t j) { return ys[j]; }));
        for (int64_t j = 0; j < l.n; ++j) ys[j] /= d;
      }
    });
    return;
  }
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

// The cost of TF1's softmax-regression tutorial and its gradient, in one pass over the rows, where
// the graph spells them out op by op and the plan needs none of the intermediates:
//   p = softmax(z), cost = mean_i(-sum_j(y * log(p))[i])                     (forward)
//   dz = softmax_bwd(p, (-(g * scale) * y) * (1 / p))                          (the gradient)
// for z, y, p, dz: [N, C] and g the cost's incoming gradient (scale: its BroadcastLike's 1/N).
// Every value is computed as the unfused kernels compute it (softmax_fwd, log, mul, a last-axis
// sum_reduce, neg, mean_reduce; broadcast_to, neg, mul, reciprocal, mul, softmax_bwd), in the
// same order and precision, so results are bitwise those of the unfused steps, NaN and inf (p
// underflowing to 0) included. dz may be null (no gradient). nll: N values of scratch.
template <class T>
void softmax_nll(const T* z, const T* y, const T* g, double scale, int64_t rows, int64_t cols, T* p, T* cost, T* dz,
                 T* nll) {
  struct Sum {  // the reduction kernels' sum (reduce.cc's SumOf): in double
    using A = double;
    static A step(A a, T x) { return a + A(x); }
    static A merge(A a, A b) { return a + b; }
  };
  const T up = dz ? -(g[0] * T(scale)) : T(0);  // the gradient reaching -sum(...)[i], every row alike
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)), [&](int64_t lo, int64_t hi) {
    if (cols > 0) exp_shifted_rows(z + lo * cols, p + lo * cols, hi - lo, cols);
    for (int64_t i = lo; i < hi; ++i) {
      const T* ys = y + i * cols;
      T* ps = p + i * cols;
      const T d = T(lane_sum(cols, [&](int64_t j) { return ps[j]; }));
      for (int64_t j = 0; j < cols; ++j) ps[j] /= d;
      // The last-axis sum as reduce_fwd takes it (accumulate_lanes, merged pairwise).
      T* prod = thread_scratch<T, struct SoftmaxNllRow>(cols);  // y * log(p), then summed
      for (int64_t j = 0; j < cols; ++j) prod[j] = std::log(ps[j]);
      for (int64_t j = 0; j < cols; ++j) prod[j] *= ys[j];
      double lane[kLanes];
      for (double& l : lane) l = 0;
      const int lanes = cols < 2 * kLanes ? 1 : kLanes;
      accumulate_lanes<Sum>(prod, cols, lane);
      nll[i] = -T(merge_lanes<Sum>(lane, lanes));
      if (!dz) continue;
      T* dzs = dz + i * cols;
      for (int64_t j = 0; j < cols; ++j) dzs[j] = (up * ys[j]) * (T(1) / ps[j]);
      const T dot = T(lane_sum(cols, [&](int64_t j) { return double(dzs[j]) * double(ps[j]); }));
      for (int64_t j = 0; j < cols; ++j) dzs[j] = ps[j] * (dzs[j] - dot);
    }
  });
  double lane[kLanes];
  for (double& l : lane) l = 0;
  accumulate_lanes<Sum>(nll, rows, lane);
  cost[0] = T(merge_lanes<Sum>(lane, rows < 2 * kLanes ? 1 : kLanes) / double(rows));
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

// Inputs z, y [N, C] (and g, the cost's gradient, one element, when the gradient is wanted);
// outputs p [N, C], cost [] (and dz [N, C]); attribute scale (g's BroadcastLike scale, 1/N).
Step build_softmax_nll(const KernelCall& c) {
  const char* nm = c.kernel.c_str();
  const bool grad = c.in.size() == 3;
  expect_arity(c, grad ? 3 : 2, grad ? 3 : 2);
  expect_same_dtype(c);
  const Operand z = c.in[0], y = c.in[1], p = c.out[0], cost = c.out[1];
  PG_CHECK_DTYPE(z.dtype == DType::f32 || z.dtype == DType::f64, nm, "expected float32 or float64, got %s",
                 dtype_name(z.dtype));
  PG_CHECK(z.shape.ndim == 2 && y.shape == z.shape && p.shape == z.shape, nm,
           "z, y and p must be matrices of one shape, got %s, %s and %s", z.shape.str().c_str(), y.shape.str().c_str(),
           p.shape.str().c_str());
  PG_CHECK(cost.shape.numel() == 1 && cost.shape.ndim == 0, nm, "cost must be a scalar, got %s",
           cost.shape.str().c_str());
  const Operand g = grad ? c.in[2] : Operand{}, dz = grad ? c.out[2] : Operand{};
  PG_CHECK(!grad || (g.shape.numel() == 1 && dz.shape == z.shape), nm,
           "g must hold one value and dz have z's shape %s, got %s and %s", z.shape.str().c_str(),
           g.shape.str().c_str(), dz.shape.str().c_str());
  const double scale = c.attrs.f("scale", 1.0);
  const int64_t rows = z.shape[0], cols = z.shape[1];
  return dispatch_float(z.dtype, nm, [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) {
      softmax_nll<T>(cview<T>(f, z).data, cview<T>(f, y).data, grad ? cview<T>(f, g).data : nullptr, scale, rows,
                     cols, view<T>(f, p).data, view<T>(f, cost).data, grad ? view<T>(f, dz).data : nullptr,
                     thread_scratch<T, struct SoftmaxNll>(rows));
    };
  });
}

}  // namespace pg
