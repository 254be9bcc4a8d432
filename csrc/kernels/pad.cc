// Padding (tf.pad: CONSTANT, REFLECT, SYMMETRIC) and its gradient, and slices whose start is read
// from an int tensor when the step runs (x[a] and tf.slice(x, begin, size) with begin computed by
// the graph), with their gradient.
#include <algorithm>
#include <vector>

#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {

namespace {
constexpr int64_t kGrain = 32768;

enum class PadMode { constant = 0, reflect = 1, symmetric = 2 };

// The index of x that position i (in [-before, n + after)) of a padded dimension of size n reads,
// or -1 for a constant pad. REFLECT mirrors without the edge (i = -1 reads 1), SYMMETRIC with it
// (i = -1 reads 0); the builder checks the pads are small enough for one reflection.
int64_t pad_source(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  if (mode == PadMode::constant) return -1;
  if (mode == PadMode::reflect) return i < 0 ? -i : 2 * (n - 1) - i;
  return i < 0 ? -i - 1 : 2 * n - 1 - i;
}

// Calls fn(out_flat, src_flat) for every element of the padded shape, src_flat = -1 for a
// constant pad. Rows of the last dimension are split among threads when `parallel`.
template <class F>
void for_each_padded(const Shape& xs, const Shape& ys, const std::vector<int64_t>& before, PadMode mode, bool parallel,
                     F fn) {
  const int n = ys.ndim;
  if (n == 0) {
    fn(int64_t{0}, int64_t{0});
    return;
  }
  int64_t xstride[kMaxDims];
  int64_t s = 1;
  for (int d = n - 1; d >= 0; --d) {
    xstride[d] = s;
    s *= xs[d];
  }
  const int64_t cols = ys[n - 1], rows = cols ? ys.numel() / cols : 0;
  auto body = [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t rem = r, base = 0;
      bool outside = false;
      for (int d = n - 2; d >= 0; --d) {
        const int64_t i = rem % ys[d];
        rem /= ys[d];
        const int64_t src = pad_source(i - before[size_t(d)], xs[d], mode);
        if (src < 0) outside = true;
        else base += src * xstride[d];
      }
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t src = outside ? -1 : pad_source(j - before[size_t(n - 1)], xs[n - 1], mode);
        fn(r * cols + j, src < 0 ? -1 : base + src);
      }
    }
  };
  if (parallel) parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cols)), body);
  else body(0, rows);
}

struct PadSpec {
  std::vector<int64_t> before;
  PadMode mode;
};

// Checks that y (pad_fwd) or dy (pad_bwd) is x padded by `paddings` ([before, after] per
// dimension, flattened) in `mode`.
PadSpec pad_spec(const KernelCall& c, const char* op, const Shape& x, const Shape& y) {
  const std::vector<int64_t>& p = c.attrs.ints("paddings", op);
  const int64_t mode = c.attrs.i("mode", op);
  PG_CHECK(mode >= 0 && mode <= 2, op, "mode %lld must be 0 (CONSTANT), 1 (REFLECT) or 2 (SYMMETRIC)", (long long)mode);
  PG_CHECK(int(p.size()) == 2 * x.ndim && y.ndim == x.ndim, op, "paddings of %zu values for x %s and y %s",
           p.size(), x.str().c_str(), y.str().c_str());
  PadSpec s{{}, PadMode(mode)};
  for (int d = 0; d < x.ndim; ++d) {
    const int64_t b = p[size_t(2 * d)], a = p[size_t(2 * d + 1)];
    const int64_t limit = mode == 1 ? x[d] - 1 : mode == 2 ? x[d] : INT64_MAX;
    PG_CHECK(b >= 0 && a >= 0 && (b == 0 || b <= limit) && (a == 0 || a <= limit), op, "paddings [%lld, %lld] of dimension %d do not fit "
             "size %lld in this mode", (long long)b, (long long)a, d, (long long)x[d]);
    PG_CHECK(y[d] == x[d] + b + a, op, "y %s is not x %s padded by the paddings", y.str().c_str(), x.str().c_str());
    s.before.push_back(b);
  }
  return s;
}
}  // namespace

// y = x padded: y[i] = x[source(i)] per dimension, or `value` where a CONSTANT pad has no source.
// y must not alias x.
template <class T> void pad_fwd(ConstView<T> x, const PadSpec& s, T value, View<T> y) {
  for_each_padded(x.shape, y.shape, s.before, s.mode, true,
                  [&](int64_t o, int64_t src) { y.data[o] = src < 0 ? value : x.data[src]; });
}

// dx = the sum of dy over the positions that read each element of x (for CONSTANT, the slice of
// dy; for REFLECT and SYMMETRIC, TF's MirrorPadGrad). dx must not alias dy.
template <class T> void pad_bwd(ConstView<T> dy, const PadSpec& s, View<T> dx) {
  std::fill_n(dx.data, dx.size(), T(0));
  for_each_padded(dx.shape, dy.shape, s.before, s.mode, false, [&](int64_t o, int64_t src) {
    if (src >= 0) dx.data[src] += dy.data[o];
  });
}

Step build_pad_fwd(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  const PadSpec s = pad_spec(c, op, x.shape, y.shape);
  const double value = c.attrs.f("constant_value", 0.0);
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    const T v = T(value);
    return [=](Frame& f) { pad_fwd<T>(cview<T>(f, x), s, v, view<T>(f, y)); };
  });
}

Step build_pad_bwd(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand dy = c.in[0], dx = c.out[0];
  const PadSpec s = pad_spec(c, op, dx.shape, dy.shape);
  return dispatch_number(dy.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { pad_bwd<T>(cview<T>(f, dy), s, view<T>(f, dx)); };
  });
}

// ---- slices that start where a tensor says ----

namespace {
// The start of the slice along each dimension, from begin (one int per dimension of x) read when
// the step runs. Along an index dimension (wrap[d], from x[a]) a negative start counts from the
// end and the start must be in [-size, size); along the others (tf.slice) in [0, size - length].
// Throws ShapeError (InvalidArgumentError in Python) naming the first bad one.
template <class I>
void dynamic_starts(const char* op, ConstView<I> begin, const Shape& x, const Shape& y, const std::vector<int64_t>& wrap,
                    int64_t* start) {
  for (int d = 0; d < x.ndim; ++d) {
    int64_t b = int64_t(begin.data[d]);
    if (wrap[size_t(d)]) {
      if (b < -x[d] || b >= x[d])
        throw ShapeError(format_error(op, "slice index %lld of dimension %d out of bounds (size %lld).",
                                      (long long)b, d, (long long)x[d]));
      if (b < 0) b += x[d];
    } else if (b < 0 || b + y[d] > x[d]) {
      throw ShapeError(format_error(op, "Expected begin[%d] in [0, %lld], but got %lld (size %lld of dimension %d, "
                                    "slice length %lld)", d, (long long)(x[d] - y[d]), (long long)b, (long long)x[d],
                                    d, (long long)y[d]));
    }
    start[d] = b;
  }
}

// Calls fn(x_flat, y_flat, len) for each row of y's last dimension: the block of x at start.
template <class F> void for_each_block(const Shape& x, const Shape& y, const int64_t* start, F fn) {
  const int n = x.ndim;
  if (n == 0) {
    fn(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  int64_t xstride[kMaxDims];
  int64_t s = 1;
  for (int d = n - 1; d >= 0; --d) {
    xstride[d] = s;
    s *= x[d];
  }
  const int64_t cols = y[n - 1], rows = cols ? y.numel() / cols : 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = start[n - 1];
    for (int d = n - 2; d >= 0; --d) {
      off += (rem % y[d] + start[d]) * xstride[d];
      rem /= y[d];
    }
    fn(off, r * cols, cols);
  }
}

struct DynamicSlice {
  Shape x, y;  // y: the slice, with x's rank (a dropped index dimension has length 1)
  std::vector<int64_t> wrap;
};

DynamicSlice dynamic_slice_spec(const KernelCall& c, const char* op, const Operand& x, const Operand& begin,
                                const Operand& y) {
  DynamicSlice s{x.shape, y.shape, c.attrs.ints("wrap", op)};
  PG_CHECK(begin.shape.ndim == 1 && begin.shape[0] == x.shape.ndim && int(s.wrap.size()) == x.shape.ndim, op,
           "begin %s must hold one start per dimension of x %s", begin.shape.str().c_str(), x.shape.str().c_str());
  PG_CHECK(y.shape.ndim == x.shape.ndim, op, "the slice %s must have the rank of x %s", y.shape.str().c_str(),
           x.shape.str().c_str());
  for (int d = 0; d < x.shape.ndim; ++d)
    PG_CHECK(y.shape[d] <= x.shape[d] && (!s.wrap[size_t(d)] || y.shape[d] == 1), op,
             "a slice %s does not fit in x %s", y.shape.str().c_str(), x.shape.str().c_str());
  return s;
}
}  // namespace

// y = the block of x of y's shape starting at begin (see dynamic_starts). y must not alias x.
template <class T, class I> void dynamic_slice_fwd(ConstView<T> x, ConstView<I> begin, const DynamicSlice& s, View<T> y) {
  int64_t start[kMaxDims] = {};
  dynamic_starts("dynamic_slice_fwd", begin, s.x, s.y, s.wrap, start);
  for_each_block(s.x, s.y, start, [&](int64_t xo, int64_t yo, int64_t n) { std::copy_n(x.data + xo, n, y.data + yo); });
}

// dx = zeros of x's shape with dy written at the block dynamic_slice_fwd read. dx must not alias dy.
template <class T, class I>
void dynamic_slice_bwd(ConstView<T> dy, ConstView<I> begin, const DynamicSlice& s, View<T> dx) {
  int64_t start[kMaxDims] = {};
  dynamic_starts("dynamic_slice_bwd", begin, s.x, s.y, s.wrap, start);
  std::fill_n(dx.data, dx.size(), T(0));
  for_each_block(s.x, s.y, start, [&](int64_t xo, int64_t yo, int64_t n) { std::copy_n(dy.data + yo, n, dx.data + xo); });
}

template <class F> auto dispatch_begin(DType dt, const char* op, F&& fn) {
  switch (dt) {
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    default: throw DTypeError(format_error(op, "begin must be int32 or int64, got %s", dtype_name(dt)));
  }
}

Step build_dynamic_slice_fwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const char* op = "dynamic_slice_fwd";
  const Operand x = c.in[0], begin = c.in[1], y = c.out[0];
  PG_CHECK_DTYPE(x.dtype == y.dtype, op, "y must have the dtype of x (%s), got %s", dtype_name(x.dtype),
                 dtype_name(y.dtype));
  const DynamicSlice s = dynamic_slice_spec(c, op, x, begin, y);
  return dispatch_begin(begin.dtype, op, [&](auto itag) -> Step {
    using I = decltype(itag);
    return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
      using T = decltype(tag);
      return [=](Frame& f) { dynamic_slice_fwd<T, I>(cview<T>(f, x), cview<I>(f, begin), s, view<T>(f, y)); };
    });
  });
}

Step build_dynamic_slice_bwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const char* op = "dynamic_slice_bwd";
  const Operand dy = c.in[0], begin = c.in[1], dx = c.out[0];
  PG_CHECK_DTYPE(dx.dtype == dy.dtype, op, "dx must have the dtype of dy (%s), got %s", dtype_name(dy.dtype),
                 dtype_name(dx.dtype));
  const DynamicSlice s = dynamic_slice_spec(c, op, dx, begin, dy);
  return dispatch_begin(begin.dtype, op, [&](auto itag) -> Step {
    using I = decltype(itag);
    return dispatch_number(dy.dtype, op, [&](auto tag) -> Step {
      using T = decltype(tag);
      return [=](Frame& f) { dynamic_slice_bwd<T, I>(cview<T>(f, dy), cview<I>(f, begin), s, view<T>(f, dx)); };
    });
  });
}

}  // namespace pg
