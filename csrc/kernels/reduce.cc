// Reductions over a set of axes (sum, mean, max, min, prod, any, all), argmax/argmin over one
// axis, and the exact gradient of a product (prod_bwd, which excludes one factor at a time). x is
// contiguous and row-major; y holds x's kept dims in order, contiguous. Work is split over outputs,
// and over chunks of the reduced rows whose size the shape alone sets; each output is accumulated
// in a fixed order, so results do not depend on the thread count.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "pg/lanes.h"
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 32768;  // input elements per parallel chunk
constexpr int64_t kBlock = 256;    // output columns accumulated together when the inner dim is kept
constexpr int64_t kFewBlocks = 16;  // below this many blocks, a reduction over kept columns splits its rows

template <class T> bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}
// min(acc, x) where a NaN wins, like numpy (and max_nan from pg/lanes.h); two selects, so gcc vectorizes it.
template <class T> T min_nan(T acc, T x) {
  const T m = x < acc ? x : acc;
  return is_nan(x) ? x : m;
}

// ---- reducers: init, step (acc, x), merge (acc, acc), finish (acc, count), empty ----
// Sums and products accumulate in double for both float types (float32 sums over long axes stay
// accurate to ~1e-7), and in uint64 for ints: wrapping mod 2^64 and truncating gives exactly the
// wrapped int32/int64 result, with no undefined overflow.

template <class T> using WideAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <class T> struct SumOf {
  using A = WideAcc<T>;
  static A init() { return A(0); }
  static A step(A acc, T x) { return acc + A(x); }
  static A merge(A a, A b) { return a + b; }
  static T finish(A acc, int64_t) { return T(acc); }
  static T empty() { return T(0); }
};
template <class T> struct MeanOf : SumOf<T> {  // ints: the sum divided by the count, truncated (TF)
  using A = WideAcc<T>;
  static T finish(A acc, int64_t count) {
    if constexpr (std::is_floating_point_v<T>) return T(acc / double(count));
    else return T(int64_t(acc) / count);
  }
  static T empty() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
    else return T(0);
  }
};
template <class T> struct ProdOf {
  using A = WideAcc<T>;
  static A init() { return A(1); }
  static A step(A acc, T x) { return acc * A(x); }
  static A merge(A a, A b) { return a * b; }
  static T finish(A acc, int64_t) { return T(acc); }
  static T empty() { return T(1); }
};
template <class T> struct MaxOf {  // -inf (floats) or the lowest int for an empty reduction
  using A = T;
  static A init() {
    using L = std::numeric_limits<T>;
    return L::has_infinity ? -L::infinity() : L::lowest();
  }
  static A step(A acc, T x) { return max_nan(acc, x); }
  static A merge(A a, A b) { return max_nan(a, b); }
  static T finish(A acc, int64_t) { return acc; }
  static T empty() { return init(); }
};
template <class T> struct MinOf {
  using A = T;
  static A init() {
    using L = std::numeric_limits<T>;
    return L::has_infinity ? L::infinity() : L::max();
  }
  static A step(A acc, T x) { return min_nan(acc, x); }
  static A merge(A a, A b) { return min_nan(a, b); }
  static T finish(A acc, int64_t) { return acc; }
  static T empty() { return init(); }
};
// The bool reducers accumulate bytes (a bool is 0 or 1), so that their loops vectorize.
template <class T> struct AnyOf {
  using A = uint8_t;
  static A init() { return 0; }
  static A step(A acc, T x) { return A(acc | A(x)); }
  static A merge(A a, A b) { return A(a | b); }
  static T finish(A acc, int64_t) { return acc != 0; }
  static T empty() { return false; }
};
template <class T> struct AllOf {
  using A = uint8_t;
  static A init() { return 1; }
  static A step(A acc, T x) { return A(acc & A(x)); }
  static A merge(A a, A b) { return A(a & b); }
  static T finish(A acc, int64_t) { return acc != 0; }
  static T empty() { return true; }
};

// Some dims of x, outermost first, with their strides in elements of x.
struct Dims {
  int n = 0;
  int64_t size[kMaxDims] = {}, stride[kMaxDims] = {};
  int64_t numel() const {
    int64_t m = 1;
    for (int k = 0; k < n; ++k) m *= size[k];
    return m;
  }
};

// An index counter over Dims that tracks the element offset.
struct Walk {
  const Dims& d;
  int64_t idx[kMaxDims] = {};
  int64_t offset = 0;
  Walk(const Dims& dims, int64_t start) : d(dims) {
    for (int k = d.n - 1; k >= 0; --k) {
      idx[k] = start % d.size[k];
      start /= d.size[k];
      offset += idx[k] * d.stride[k];
    }
  }
  void next() {
    for (int k = d.n - 1; k >= 0; --k) {
      offset += d.stride[k];
      if (++idx[k] < d.size[k]) return;
      offset -= d.stride[k] * d.size[k];
      idx[k] = 0;
    }
  }
};

// How reduce_fwd walks x: its dims with size-1 dims dropped and adjacent dims of the same kind
// (kept or reduced) merged, so x alternates kept and reduced runs.
//   rows: the innermost run is reduced. Each output reduces `inner` contiguous elements for every
//         index of the other reduced runs (`reduced`); outputs follow `kept` (all kept runs).
//   cols: the innermost run is kept. Outputs come in rows of `inner` contiguous columns, one row per
//         index of `kept` (the other kept runs), each summing over all runs in `reduced`.
struct ReducePlan {
  enum Kind { nothing, fill, copy, rows, cols } kind = nothing;
  Dims kept, reduced;
  int64_t inner = 0;  // length of the innermost run
  int64_t n_out = 0;  // y.numel()
  int64_t count = 0;  // input elements per output
};

// axes: sorted, distinct, in range.
ReducePlan plan_reduce(const Shape& x, const std::vector<int64_t>& axes) {
  ReducePlan p;
  bool reduced_axis[kMaxDims] = {};
  for (int64_t a : axes) reduced_axis[a] = true;
  p.n_out = 1;
  for (int i = 0; i < x.ndim; ++i)
    if (!reduced_axis[i]) p.n_out *= x.dim[i];
  if (p.n_out == 0) return p;  // nothing
  if (x.numel() == 0) {
    p.kind = ReducePlan::fill;
    return p;
  }
  p.count = x.numel() / p.n_out;
  int n = 0;
  int64_t size[kMaxDims];
  bool red[kMaxDims];
  for (int i = 0; i < x.ndim; ++i) {
    if (x.dim[i] == 1) continue;
    if (n > 0 && red[n - 1] == reduced_axis[i]) {
      size[n - 1] *= x.dim[i];
    } else {
      size[n] = x.dim[i];
      red[n++] = reduced_axis[i];
    }
  }
  if (p.count == 1 || n == 0) {
    p.kind = ReducePlan::copy;
    return p;
  }
  int64_t stride = size[n - 1];
  p.inner = size[n - 1];
  // Runs other than the innermost, outermost first: strides are the products of later sizes.
  int64_t strides[kMaxDims];
  for (int k = n - 2; k >= 0; --k) {
    strides[k] = stride;
    stride *= size[k];
  }
  for (int k = 0; k < n - 1; ++k) {
    Dims& d = red[k] ? p.reduced : p.kept;
    d.size[d.n] = size[k];
    d.stride[d.n++] = strides[k];
  }
  p.kind = red[n - 1] ? ReducePlan::rows : ReducePlan::cols;
  return p;
}

}  // namespace

// y = R-reduction of x over the reduced axes of p = plan_reduce(x.shape, axes). y: x's kept dims in
// order (any rank with that numel), contiguous. y must not overlap x (unless nothing is reduced).
// R is SumOf<T>, MeanOf<T>, ProdOf<T>, MaxOf<T>, MinOf<T>, AnyOf<bool> or AllOf<bool>.
template <class R, class T> void reduce_fwd(ConstView<T> x, View<T> y, const ReducePlan& p) {
  using A = typename R::A;
  const T* px = x.data;
  T* py = y.data;
  switch (p.kind) {
    case ReducePlan::nothing: return;
    case ReducePlan::fill: std::fill(py, py + p.n_out, R::empty()); return;
    case ReducePlan::copy:
      if (px != py) std::memcpy(py, px, sizeof(T) * p.n_out);
      return;
    case ReducePlan::rows: {
      // Each output: kLanes accumulators over its contiguous runs, merged pairwise at the end.
      const int64_t combos = p.reduced.numel();
      const int lanes = p.inner < 2 * kLanes ? 1 : kLanes;
      parallel_for(p.n_out, std::max<int64_t>(1, kGrain / p.count), [&](int64_t lo, int64_t hi) {
        Walk out(p.kept, lo);
        for (int64_t o = lo; o < hi; ++o, out.next()) {
          A lane[kLanes];
          for (A& l : lane) l = R::init();
          Walk r(p.reduced, 0);
          for (int64_t k = 0; k < combos; ++k, r.next())
            accumulate_lanes<R>(px + out.offset + r.offset, p.inner, lane);
          py[o] = R::finish(merge_lanes<R>(lane, lanes), p.count);
        }
      });
      return;
    }
    case ReducePlan::cols: {
      // Blocks of up to kBlock output columns: accumulate the reduced rows into acc[], one
      // contiguous row at a time, then finish into y. With few blocks over many reduced rows (a
      // bias gradient: [N, H, W, C] summed to [C]) the rows are cut into chunks whose size the
      // shape alone sets; the chunks' sums, taken in parallel, are merged in chunk order.
      const int64_t m = p.inner, blocks = (m + kBlock - 1) / kBlock, combos = p.reduced.numel();
      const int64_t rows_out = p.kept.numel();
      const int64_t chunk_rows = (std::max<int64_t>(64, kGrain / std::min(m, kBlock)) + 3) / 4 * 4;
      const int64_t chunks =
          rows_out * blocks < kFewBlocks && combos >= 2 * chunk_rows ? (combos + chunk_rows - 1) / chunk_rows : 1;
      const int64_t piece_rows = chunks > 1 ? chunk_rows : combos;
      std::vector<A> partial(chunks > 1 ? size_t(rows_out * chunks * m) : 0);  // [row, chunk, column]
      const int64_t work = piece_rows * std::min(m, kBlock);  // input elements per task
      parallel_for(rows_out * blocks * chunks, std::max<int64_t>(1, kGrain / work), [&](int64_t lo, int64_t hi) {
        A acc[kBlock];
        for (int64_t task = lo; task < hi; ++task) {
          const int64_t piece = task % chunks, block = task / chunks;
          const int64_t row = block / blocks, c0 = (block % blocks) * kBlock, w = std::min(kBlock, m - c0);
          const int64_t k_end = std::min(combos, (piece + 1) * piece_rows);
          const T* base = px + Walk(p.kept, row).offset + c0;
          for (int64_t j = 0; j < w; ++j) acc[j] = R::init();
          int64_t k = piece * piece_rows;
          Walk r(p.reduced, k);
          for (; k + 4 <= k_end; k += 4) {  // four rows per pass over acc[], still in row order
            const T* s0 = base + r.offset;
            r.next();
            const T* s1 = base + r.offset;
            r.next();
            const T* s2 = base + r.offset;
            r.next();
            const T* s3 = base + r.offset;
            r.next();
            for (int64_t j = 0; j < w; ++j)
              acc[j] = R::step(R::step(R::step(R::step(acc[j], s0[j]), s1[j]), s2[j]), s3[j]);
          }
          for (; k < k_end; ++k, r.next()) {
            const T* src = base + r.offset;
            for (int64_t j = 0; j < w; ++j) acc[j] = R::step(acc[j], src[j]);
          }
          if (chunks > 1) {
            std::copy(acc, acc + w, partial.data() + (row * chunks + piece) * m + c0);
          } else {
            T* dst = py + row * m + c0;
            for (int64_t j = 0; j < w; ++j) dst[j] = R::finish(acc[j], p.count);
          }
        }
      });
      for (int64_t row = 0; chunks > 1 && row < rows_out; ++row) {
        const A* part = partial.data() + row * chunks * m;
        for (int64_t j = 0; j < m; ++j) {
          A a = part[j];
          for (int64_t c = 1; c < chunks; ++c) a = R::merge(a, part[c * m + j]);
          py[row * m + j] = R::finish(a, p.count);
        }
      }
      return;
    }
  }
}

namespace {
// Whether v replaces the best value so far. A NaN beats every number; nothing beats a NaN.
struct ArgMax {
  template <class T> bool operator()(T v, T best) const { return v > best || (is_nan(v) && !is_nan(best)); }
};
struct ArgMin {
  template <class T> bool operator()(T v, T best) const { return v < best || (is_nan(v) && !is_nan(best)); }
};
}  // namespace

// y[o, i] = the index j of the largest (Better = ArgMax) or smallest (ArgMin) x[o, j, i], with x
// viewed as [outer, n, inner] around the axis; n >= 1. Ties: the first index wins; the first NaN
// wins over numbers (numpy's rule). y (int32 or int64) must not overlap x.
template <class Better, class T, class I>
void arg_reduce_fwd(ConstView<T> x, View<I> y, int64_t outer, int64_t n, int64_t inner, Better better) {
  const T* px = x.data;
  I* py = y.data;
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, kGrain / n), [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        const T* row = px + o * n;
        T best = row[0];
        int64_t at = 0;
        for (int64_t j = 1; j < n; ++j)
          if (better(row[j], best)) best = row[j], at = j;
        py[o] = I(at);
      }
    });
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kGrain / (n * std::min(inner, kBlock)));
  parallel_for(outer * blocks, grain, [&](int64_t lo, int64_t hi) {
    T best[kBlock];
    I at[kBlock];
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t o = task / blocks, c0 = (task % blocks) * kBlock, w = std::min(kBlock, inner - c0);
      const T* base = px + o * n * inner + c0;
      for (int64_t c = 0; c < w; ++c) best[c] = base[c], at[c] = 0;
      for (int64_t j = 1; j < n; ++j) {
        const T* src = base + j * inner;
        for (int64_t c = 0; c < w; ++c) {
          const bool b = better(src[c], best[c]);
          best[c] = b ? src[c] : best[c];
          at[c] = b ? I(j) : at[c];
        }
      }
      std::copy(at, at + w, py + o * inner + c0);
    }
  });
}

// ---- builders ----

namespace {
// The step for reducer R over number dtypes, or over bool when kBool.
template <template <class> class R, bool kBool>
Step reduce_step(const char* name, const Operand& x, const Operand& y, const ReducePlan& plan) {
  auto make = [&](auto t) -> Step {
    using T = decltype(t);
    return [x, y, plan](Frame& f) { reduce_fwd<R<T>>(cview<T>(f, x), view<T>(f, y), plan); };
  };
  if constexpr (kBool) {
    PG_CHECK_DTYPE(x.dtype == DType::b8, name, "expected bool, got %s", dtype_name(x.dtype));
    return make(bool{});
  } else {
    return dispatch_number(x.dtype, name, make);
  }
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

Step build_reduce_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const std::string& op = c.attrs.s("op", c.kernel.c_str());
  const std::string name = c.kernel + "(" + op + ")";
  const char* nm = name.c_str();
  const Operand x = c.in[0], y = c.out[0];
  const std::vector<int64_t>& axes = c.attrs.ints("axes", nm);
  const bool known = op == "sum" || op == "mean" || op == "prod" || op == "max" || op == "min" || op == "any" ||
                     op == "all";
  PG_CHECK(known, nm, "unknown op '%s'", op.c_str());
  PG_CHECK_DTYPE(y.dtype == x.dtype, nm, "y must have the dtype of x (%s), got %s", dtype_name(x.dtype),
                 dtype_name(y.dtype));
  for (size_t k = 0; k < axes.size(); ++k) {
    PG_CHECK(axes[k] >= 0 && axes[k] < x.shape.ndim, nm, "axis %lld is out of range for x of shape %s",
             (long long)axes[k], x.shape.str().c_str());
    PG_CHECK(k == 0 || axes[k] > axes[k - 1], nm, "axes must be sorted and distinct, got %s", ints_str(axes).c_str());
  }
  const ReducePlan plan = plan_reduce(x.shape, axes);
  PG_CHECK(y.shape.numel() == plan.n_out, nm, "y must hold %lld elements (x %s reduced over axes %s), got shape %s",
           (long long)plan.n_out, x.shape.str().c_str(), ints_str(axes).c_str(), y.shape.str().c_str());
  if (op == "sum") return reduce_step<SumOf, false>(nm, x, y, plan);
  if (op == "mean") return reduce_step<MeanOf, false>(nm, x, y, plan);
  if (op == "prod") return reduce_step<ProdOf, false>(nm, x, y, plan);
  if (op == "max") return reduce_step<MaxOf, false>(nm, x, y, plan);
  if (op == "min") return reduce_step<MinOf, false>(nm, x, y, plan);
  if (op == "any") return reduce_step<AnyOf, true>(nm, x, y, plan);
  return reduce_step<AllOf, true>(nm, x, y, plan);
}

Step build_arg_reduce_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const std::string& op = c.attrs.s("op", c.kernel.c_str());
  const std::string name = c.kernel + "(" + op + ")";
  const char* nm = name.c_str();
  const Operand x = c.in[0], y = c.out[0];
  PG_CHECK(op == "argmax" || op == "argmin", nm, "unknown op '%s' (expected argmax or argmin)", op.c_str());
  const int64_t axis = c.attrs.i("axis", nm);
  PG_CHECK(axis >= 0 && axis < x.shape.ndim, nm, "axis %lld is out of range for x of shape %s", (long long)axis,
           x.shape.str().c_str());
  PG_CHECK_DTYPE(y.dtype == DType::i64 || y.dtype == DType::i32, nm, "y must be int64 or int32, got %s",
                 dtype_name(y.dtype));
  Shape expected;
  int64_t outer = 1, inner = 1;
  const int64_t n = x.shape[int(axis)];
  for (int i = 0; i < x.shape.ndim; ++i) {
    if (i == axis) continue;
    expected.dim[expected.ndim++] = x.shape[i];
    (i < axis ? outer : inner) *= x.shape[i];
  }
  PG_CHECK(y.shape == expected, nm, "y must have shape %s (x %s without axis %lld), got %s", expected.str().c_str(),
           x.shape.str().c_str(), (long long)axis, y.shape.str().c_str());
  const int64_t n_out = outer * inner;
  PG_CHECK(n > 0 || n_out == 0, nm, "cannot take %s over the empty axis %lld of shape %s", op.c_str(),
           (long long)axis, x.shape.str().c_str());
  PG_CHECK(y.dtype == DType::i64 || n <= std::numeric_limits<int32_t>::max(), nm,
           "axis %lld of length %lld does not fit an int32 index", (long long)axis, (long long)n);
  return dispatch_number(x.dtype, nm, [&](auto t) -> Step {
    using T = decltype(t);
    if (n_out == 0) return [](Frame&) {};
    auto make = [&](auto better, auto index) -> Step {
      using Better = decltype(better);
      using I = decltype(index);
      return [x, y, outer, n, inner](Frame& f) {
        arg_reduce_fwd(cview<T>(f, x), view<I>(f, y), outer, n, inner, Better{});
      };
    };
    if (y.dtype == DType::i64) return op == "argmax" ? make(ArgMax{}, int64_t{}) : make(ArgMin{}, int64_t{});
    return op == "argmax" ? make(ArgMax{}, int32_t{}) : make(ArgMin{}, int32_t{});
  });
}

// ---- prod_bwd ----

namespace {
// One group of prod_bwd: offs[0..n) are its elements' offsets in x; pa, pb: scratch of n doubles.
template <class T>
void prod_bwd_group(const T* x, const T* t, const int64_t* offs, int64_t n, double scale, double* pa, double* pb,
                    T* dx) {
  double a = 1.0, b = 0.0;  // the running prefix product a + eps b
  for (int64_t r = 0; r < n; ++r) {
    const double xv = double(x[offs[r]]);
    pa[r] = a;
    pb[r] = b;
    if (t) b = a * double(t[offs[r]]) + b * xv;
    a *= xv;
  }
  double sa = 1.0, sb = 0.0;  // the running suffix product
  for (int64_t r = n - 1; r >= 0; --r) {
    const int64_t o = offs[r];
    const double xv = double(x[o]);
    dx[o] = T(scale * (t ? pa[r] * sb + pb[r] * sa : pa[r] * sa));
    if (t) sb = sa * double(t[o]) + sb * xv;
    sa *= xv;
  }
}
}  // namespace

// The gradient of y = prod(x over axes), exactly, zeros included: dx[j] = dy * prod(x[k], k != j in
// j's group), from prefix and suffix products (no division). With a tangent t (x's shape), it is
// the next derivative instead: dx[j] = dy * sum over i != j of t[i] * prod(x[k], k != i, j), the
// epsilon part of the same products taken over the dual numbers x + eps t. Products accumulate in
// double. dy holds one value per group, in the order of x's kept dims (any shape). dx must not
// alias x, dy or t.
template <class T>
void prod_bwd(ConstView<T> x, ConstView<T> dy, const T* t, const std::vector<int64_t>& axes, View<T> dx) {
  const int n = x.shape.ndim;
  int64_t xstride[kMaxDims], acc = 1;
  for (int d = n - 1; d >= 0; --d) {
    xstride[d] = acc;
    acc *= x.shape[d];
  }
  int rdims[kMaxDims], kdims[kMaxDims], nr = 0, nk = 0;
  for (int d = 0; d < n; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) rdims[nr++] = d;
    else kdims[nk++] = d;
  }
  int64_t group = 1;
  for (int k = 0; k < nr; ++k) group *= x.shape[rdims[k]];
  const int64_t groups = dy.size();
  if (group == 0 || groups == 0) return;
  // Scratch per chunk of groups, grown here, outside the parallel region (which must not throw):
  // a group's offsets in x (row-major) and its prefix products (value and epsilon parts).
  const int64_t chunks = x.size() < 2 * kGrain ? 1 : std::min<int64_t>(groups, get_num_threads());
  thread_local std::vector<int64_t> offs_buf;
  thread_local std::vector<double> prefix_buf;
  if (offs_buf.size() < size_t(chunks * group)) offs_buf.resize(size_t(chunks * group));
  if (prefix_buf.size() < size_t(2 * chunks * group)) prefix_buf.resize(size_t(2 * chunks * group));
  int64_t* const offs_all = offs_buf.data();
  double* const prefix_all = prefix_buf.data();
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t* offs = offs_all + c * group;
      double* pa = prefix_all + 2 * c * group;
      for (int64_t g = groups * c / chunks; g < groups * (c + 1) / chunks; ++g) {
        int64_t off = 0, rest = g;  // the group's first element: g spelled in x's kept dims
        for (int k = nk - 1; k >= 0; --k) {
          off += rest % x.shape[kdims[k]] * xstride[kdims[k]];
          rest /= x.shape[kdims[k]];
        }
        int64_t idx[kMaxDims] = {};
        for (int64_t r = 0; r < group; ++r) {
          offs[r] = off;
          for (int k = nr - 1; k >= 0; --k) {
            off += xstride[rdims[k]];
            if (++idx[k] < x.shape[rdims[k]]) break;
            off -= xstride[rdims[k]] * x.shape[rdims[k]];
            idx[k] = 0;
          }
        }
        prod_bwd_group(x.data, t, offs, group, double(dy.data[g]), pa, pa + group, dx.data);
      }
    }
  });
}

Step build_prod_bwd(const KernelCall& c) {
  const char* op = "prod_bwd";
  PG_CHECK((c.in.size() == 2 || c.in.size() == 3) && c.out.size() == 1, op,
           "expected 2 or 3 inputs (x, dy[, tangent]) and 1 output, got %zu and %zu", c.in.size(), c.out.size());
  expect_same_dtype(c);
  const Operand x = c.in[0], dy = c.in[1], dx = c.out[0];
  const bool tangent = c.in.size() == 3;
  const Operand t = tangent ? c.in[2] : x;
  const std::vector<int64_t> axes = c.attrs.ints("axes", op);
  int64_t groups = 1;  // the product of x's kept dims
  for (size_t k = 0; k < axes.size(); ++k)
    PG_CHECK(axes[k] >= 0 && axes[k] < x.shape.ndim && (k == 0 || axes[k] > axes[k - 1]), op,
             "axes must be sorted, distinct and in range for x of shape %s", x.shape.str().c_str());
  for (int d = 0; d < x.shape.ndim; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) groups *= x.shape[d];
  PG_CHECK(dx.shape == x.shape && t.shape == x.shape, op, "dx %s and the tangent %s must have the shape of x %s",
           dx.shape.str().c_str(), t.shape.str().c_str(), x.shape.str().c_str());
  PG_CHECK(dy.shape.numel() == groups, op, "dy must hold %lld elements (x %s reduced over its axes), got shape %s",
           (long long)groups, x.shape.str().c_str(), dy.shape.str().c_str());
  return dispatch_float(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      prod_bwd<T>(cview<T>(f, x), cview<T>(f, dy), tangent ? cview<T>(f, t).data : nullptr, axes, view<T>(f, dx));
    };
  });
}

}  // namespace pg
