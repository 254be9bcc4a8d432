// Data movement: transpose, concat/split, strided slices and tile (with their backward kernels).
#include <algorithm>
#include <vector>

#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {

namespace {
constexpr int64_t kCopyGrain = 32768;  // elements per parallel chunk of a copy
}  // namespace

// y = x with its dimensions permuted: y.shape[i] = x.shape[perm[i]]. y must not alias x.
// Axes that stay next to each other in the same order are merged first (and axes of size 1
// dropped), so [28, 128, 128] with perm (1, 0, 2) is two axes swapped above rows of 128 kept
// whole. Then: when the last axis stays last, y is a sequence of rows of x, copied whole; a 2-D
// transpose goes through 32x32 tiles (a batch of them when a third axis stays first); any other walks
// y in order with x's permuted strides. Split over threads by y's rows.
template <class T> void transpose(ConstView<T> x, const std::vector<int64_t>& perm, View<T> y) {
  // The merged axes: dims[i] (x's order) and p, the permutation on them.
  std::vector<int> keep;
  for (int i = 0; i < int(perm.size()); ++i)
    if (x.shape[int(perm[size_t(i)])] != 1) keep.push_back(int(perm[size_t(i)]));
  std::vector<int64_t> dims;  // merged axes in x's order
  std::vector<int> group(size_t(x.shape.ndim), -1);
  {
    std::vector<int> sorted = keep;
    std::sort(sorted.begin(), sorted.end());
    // x axes a and the next kept axis b merge when b follows a directly in y too
    std::vector<int> pos(size_t(x.shape.ndim), -1);
    for (size_t i = 0; i < keep.size(); ++i) pos[size_t(keep[i])] = int(i);
    for (size_t i = 0; i < sorted.size(); ++i) {
      const int a = sorted[i];
      if (i > 0 && pos[size_t(a)] == pos[size_t(sorted[i - 1])] + 1) {
        group[size_t(a)] = group[size_t(sorted[i - 1])];
        dims.back() *= x.shape[a];
      } else {
        group[size_t(a)] = int(dims.size());
        dims.push_back(x.shape[a]);
      }
    }
  }
  std::vector<int> p;  // y's merged axes, as indices into dims
  for (int a : keep)
    if (p.empty() || p.back() != group[size_t(a)]) p.push_back(group[size_t(a)]);
  const int n = int(dims.size());
  const int64_t total = y.size();
  if (total == 0) return;
  if (n <= 1) {  // nothing moves
    std::copy(x.data, x.data + total, y.data);
    return;
  }
  std::vector<int64_t> xstride(n), ydims(n), stride(n);
  for (int64_t i = n - 1, s = 1; i >= 0; --i) {
    xstride[size_t(i)] = s;
    s *= dims[size_t(i)];
  }
  for (int i = 0; i < n; ++i) {
    ydims[size_t(i)] = dims[size_t(p[size_t(i)])];
    stride[size_t(i)] = xstride[size_t(p[size_t(i)])];
  }
  if (p[size_t(n - 1)] == n - 1) {  // whole rows of x
    const int64_t row = ydims[size_t(n - 1)], rows = total / row;
    parallel_for(rows, std::max<int64_t>(1, kCopyGrain / row), [&](int64_t lo, int64_t hi) {
      int64_t idx[kMaxDims] = {}, off = 0, k = lo;
      for (int d = n - 2; d >= 0; --d) {
        idx[d] = k % ydims[size_t(d)];
        k /= ydims[size_t(d)];
        off += idx[d] * stride[size_t(d)];
      }
      for (int64_t r = lo; r < hi; ++r) {
        std::copy(x.data + off, x.data + off + row, y.data + r * row);
        for (int d = n - 2; d >= 0; --d) {
          off += stride[size_t(d)];
          if (++idx[d] < ydims[size_t(d)]) break;
          off -= stride[size_t(d)] * ydims[size_t(d)];
          idx[d] = 0;
        }
      }
    });
    return;
  }
  if (n == 2 || (n == 3 && p[0] == 0)) {  // [batch,] rows x cols -> [batch,] cols x rows, in tiles
    const int64_t batch = n == 3 ? dims[0] : 1, rows = dims[size_t(n - 2)], cols = dims[size_t(n - 1)];
    const T* px = x.data;
    T* py = y.data;
    parallel_for(batch * rows, std::max<int64_t>(1, kCopyGrain / cols), [=](int64_t lo, int64_t hi) {
      constexpr int64_t B = 32;
      for (int64_t b = lo / rows; b <= (hi - 1) / rows; ++b) {
        const T* xb = px + b * rows * cols;
        T* yb = py + b * rows * cols;
        const int64_t r0 = std::max(lo - b * rows, int64_t{0}), r1 = std::min(hi - b * rows, rows);
        for (int64_t i0 = r0; i0 < r1; i0 += B) {
          const int64_t i1 = std::min(i0 + B, r1);
          for (int64_t j0 = 0; j0 < cols; j0 += B) {
            const int64_t j1 = std::min(j0 + B, cols);
            for (int64_t i = i0; i < i1; ++i)
              for (int64_t j = j0; j < j1; ++j) yb[j * rows + i] = xb[i * cols + j];
          }
        }
      }
    });
    return;
  }
  int64_t idx[kMaxDims] = {}, off = 0, ys[kMaxDims], st[kMaxDims];
  for (int d = 0; d < n; ++d) {
    ys[d] = ydims[size_t(d)];
    st[d] = stride[size_t(d)];
  }
  const T* px = x.data;
  T* py = y.data;
  for (int64_t k = 0; k < total; ++k) {
    py[k] = px[off];
    for (int d = n - 1; d >= 0; --d) {
      off += st[d];
      if (++idx[d] < ys[d]) break;
      off -= st[d] * ys[d];
      idx[d] = 0;
    }
  }
}

Step build_transpose(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
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
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { transpose<T>(cview<T>(f, x), perm, view<T>(f, y)); };
  });
}

// ---- concat and split ----

namespace {

int64_t dims_product(const Shape& s, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= s[i];
  return n;
}

// Checks that `parts` joined along `axis` make up `whole`: one rank, the same dims off the axis, and
// axis sizes that add up. Returns each part's row width (its dims from the axis on, multiplied).
std::vector<int64_t> check_join(const char* op, const std::vector<Operand>& parts, const Operand& whole, int64_t axis,
                                const char* what) {
  const int n = whole.shape.ndim;
  PG_CHECK(axis >= 0 && axis < n, op, "axis %lld is out of range for rank %d", (long long)axis, n);
  int64_t total = 0;
  std::vector<int64_t> widths;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Shape& s = parts[k].shape;
    bool same = s.ndim == n;
    for (int d = 0; same && d < n; ++d) same = d == int(axis) || s[d] == whole.shape[d];
    PG_CHECK(same, op, "%s %zu has shape %s, which does not match %s off axis %lld", what, k, s.str().c_str(),
             whole.shape.str().c_str(), (long long)axis);
    total += s[int(axis)];
    widths.push_back(dims_product(s, int(axis), n));
  }
  PG_CHECK(total == whole.shape[int(axis)], op, "the %s add up to %lld along axis %lld, expected %lld", what,
           (long long)total, (long long)axis, (long long)whole.shape[int(axis)]);
  return widths;
}
}  // namespace

// y = the xs joined along an axis. With outer = the product of the dims before the axis, x_k is
// viewed as [outer, widths[k]] and y as [outer, sum(widths)]: row r of y is row r of x_0, then of
// x_1, ... y must not alias any x_k.
template <class T>
void concat(const std::vector<ConstView<T>>& xs, const std::vector<int64_t>& widths, int64_t outer, View<T> y) {
  const int64_t width = outer ? y.size() / outer : 0;
  if (width == 0) return;
  parallel_for(outer, std::max<int64_t>(1, kCopyGrain / width), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      T* dst = y.data + r * width;
      for (size_t k = 0; k < xs.size(); ++k) dst = std::copy_n(xs[k].data + r * widths[k], widths[k], dst);
    }
  });
}

// The inverse of concat, and its gradient: ys[k] = the k-th block of x along the axis (same views).
// No y may alias x.
template <class T>
void split(ConstView<T> x, const std::vector<int64_t>& widths, int64_t outer, const std::vector<View<T>>& ys) {
  const int64_t width = outer ? x.size() / outer : 0;
  if (width == 0) return;
  parallel_for(outer, std::max<int64_t>(1, kCopyGrain / width), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* src = x.data + r * width;
      for (size_t k = 0; k < ys.size(); ++k) {
        std::copy_n(src, widths[k], ys[k].data + r * widths[k]);
        src += widths[k];
      }
    }
  });
}

Step build_concat(const KernelCall& c) {
  const char* op = "concat";
  PG_CHECK(!c.in.empty() && c.out.size() == 1, op, "expected at least 1 input and 1 output, got %zu and %zu",
           c.in.size(), c.out.size());
  expect_same_dtype(c);
  const int64_t axis = c.attrs.i("axis", op);
  const std::vector<Operand> xs = c.in;
  const Operand y = c.out[0];
  const std::vector<int64_t> widths = check_join(op, xs, y, axis, "input");
  const int64_t outer = dims_product(y.shape, 0, int(axis));
  return dispatch_storage(y.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      std::vector<ConstView<T>> views;
      for (const Operand& x : xs) views.push_back(cview<T>(f, x));
      concat<T>(views, widths, outer, view<T>(f, y));
    };
  });
}

Step build_split(const KernelCall& c) {
  const char* op = "split";
  PG_CHECK(c.in.size() == 1 && !c.out.empty(), op, "expected 1 input and at least 1 output, got %zu and %zu",
           c.in.size(), c.out.size());
  expect_same_dtype(c);
  const int64_t axis = c.attrs.i("axis", op);
  const Operand x = c.in[0];
  const std::vector<Operand> ys = c.out;
  const std::vector<int64_t> widths = check_join(op, ys, x, axis, "output");
  const int64_t outer = dims_product(x.shape, 0, int(axis));
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      std::vector<View<T>> views;
      for (const Operand& y : ys) views.push_back(view<T>(f, y));
      split<T>(cview<T>(f, x), widths, outer, views);
    };
  });
}

// ---- strided slices ----

// A strided slice of a tensor of rank n: along dim d, size[d] elements x[begin[d] + i * stride[d]]
// (stride may be negative). Every element it names is inside the tensor (the builder checks).
struct SliceSpec {
  int n = 0;
  int64_t begin[kMaxDims] = {}, stride[kMaxDims] = {}, size[kMaxDims] = {};
};

namespace {
// Calls fn(x_offset, y_offset, count, x_step) for each innermost row of the slice, in row-major
// slice order: y[y_offset + i] is x[x_offset + i * x_step] for i < count.
template <class F> void walk_slice(const Shape& xs, const SliceSpec& s, F fn) {
  if (s.n == 0) {
    fn(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{1});
    return;
  }
  int64_t step[kMaxDims], base = 0, acc = 1;
  for (int d = s.n - 1; d >= 0; --d) {
    base += s.begin[d] * acc;
    step[d] = s.stride[d] * acc;
    acc *= xs[d];
  }
  int64_t rows = 1;
  for (int d = 0; d < s.n - 1; ++d) rows *= s.size[d];
  const int64_t len = s.size[s.n - 1];
  if (rows == 0 || len == 0) return;
  int64_t idx[kMaxDims] = {}, off = base;
  for (int64_t r = 0; r < rows; ++r) {
    fn(off, r * len, len, step[s.n - 1]);
    for (int d = s.n - 2; d >= 0; --d) {
      off += step[d];
      if (++idx[d] < s.size[d]) break;
      off -= step[d] * s.size[d];
      idx[d] = 0;
    }
  }
}

// The slice of a tensor of shape xs described by attrs begin/strides/sizes (one entry per dim),
// checked to stay inside it and to have `n_slice` elements.
SliceSpec slice_spec(const KernelCall& c, const Shape& xs, int64_t n_slice, const char* op) {
  const std::vector<int64_t>& begin = c.attrs.ints("begin", op);
  const std::vector<int64_t>& strides = c.attrs.ints("strides", op);
  const std::vector<int64_t>& sizes = c.attrs.ints("sizes", op);
  const size_t n = size_t(xs.ndim);
  PG_CHECK(begin.size() == n && strides.size() == n && sizes.size() == n, op,
           "begin, strides and sizes need %zu entries for a tensor of shape %s, got %zu, %zu and %zu", n,
           xs.str().c_str(), begin.size(), strides.size(), sizes.size());
  SliceSpec s;
  s.n = int(n);
  int64_t total = 1;
  for (int d = 0; d < s.n; ++d) {
    s.begin[d] = begin[size_t(d)], s.stride[d] = strides[size_t(d)], s.size[d] = sizes[size_t(d)];
    PG_CHECK(s.stride[d] != 0 && s.size[d] >= 0, op, "dim %d: stride %lld and size %lld (stride must be non-zero, "
             "size at least 0)", d, (long long)s.stride[d], (long long)s.size[d]);
    if (s.size[d] > 0) {
      const int64_t last = s.begin[d] + (s.size[d] - 1) * s.stride[d];
      PG_CHECK(s.begin[d] >= 0 && s.begin[d] < xs[d] && last >= 0 && last < xs[d], op,
               "dim %d: elements %lld to %lld (stride %lld) are outside [0, %lld) of shape %s", d,
               (long long)s.begin[d], (long long)last, (long long)s.stride[d], (long long)xs[d], xs.str().c_str());
    }
    total *= s.size[d];
  }
  PG_CHECK(total == n_slice, op, "the slice has %lld elements, the sliced operand %lld", (long long)total,
           (long long)n_slice);
  return s;
}
}  // namespace

// y = the slice s of x. y may have any shape holding the slice's elements (in row-major slice
// order), so dims of size 1 can be dropped or added by the caller. y must not alias x.
template <class T> void strided_slice_fwd(ConstView<T> x, const SliceSpec& s, View<T> y) {
  walk_slice(x.shape, s, [&](int64_t xo, int64_t yo, int64_t n, int64_t step) {
    const T* src = x.data + xo;
    T* dst = y.data + yo;
    if (step == 1) {
      std::copy_n(src, n, dst);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i * step];
    }
  });
}

// dx = zeros with dy written at the slice s: the gradient of strided_slice_fwd. A slice names each
// element of dx at most once, so nothing is summed. dx must not alias dy.
template <class T> void strided_slice_bwd(ConstView<T> dy, const SliceSpec& s, View<T> dx) {
  std::fill_n(dx.data, dx.size(), T(0));
  walk_slice(dx.shape, s, [&](int64_t xo, int64_t yo, int64_t n, int64_t step) {
    const T* src = dy.data + yo;
    T* dst = dx.data + xo;
    for (int64_t i = 0; i < n; ++i) dst[i * step] = src[i];
  });
}

Step build_strided_slice_fwd(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  const SliceSpec s = slice_spec(c, x.shape, y.shape.numel(), op);
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { strided_slice_fwd<T>(cview<T>(f, x), s, view<T>(f, y)); };
  });
}

Step build_strided_slice_bwd(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand dy = c.in[0], dx = c.out[0];
  const SliceSpec s = slice_spec(c, dx.shape, dy.shape.numel(), op);
  return dispatch_storage(dy.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { strided_slice_bwd<T>(cview<T>(f, dy), s, view<T>(f, dx)); };
  });
}

// ---- tile ----

namespace {
// Calls fn(x_offset, y_offset) for each innermost row of y = tile(x): y's row at y_offset (length
// y.shape[-1]) repeats x's row at x_offset (length x.shape[-1]). Both shapes have rank >= 1.
template <class F> void walk_tile(const Shape& xs, const Shape& ys, F fn) {
  const int n = ys.ndim;
  int64_t xstride[kMaxDims], acc = 1;
  for (int d = n - 1; d >= 0; --d) {
    xstride[d] = acc;
    acc *= xs[d];
  }
  int64_t rows = 1;
  for (int d = 0; d < n - 1; ++d) rows *= ys[d];
  const int64_t len = ys[n - 1];
  if (rows == 0 || len == 0) return;
  int64_t idx[kMaxDims] = {}, xi[kMaxDims] = {}, off = 0;
  for (int64_t r = 0; r < rows; ++r) {
    fn(off, r * len);
    for (int d = n - 2; d >= 0; --d) {
      off += xstride[d];
      if (++xi[d] == xs[d]) {
        xi[d] = 0;
        off -= xs[d] * xstride[d];
      }
      if (++idx[d] < ys[d]) break;
      idx[d] = 0;  // ys[d] is a multiple of xs[d], so xi[d] wrapped to 0 as well
    }
  }
}
}  // namespace

// y = x repeated along each dim: y.shape[d] = x.shape[d] * multiples[d], y[i] = x[i mod x.shape].
// y must not alias x.
template <class T> void tile_fwd(ConstView<T> x, View<T> y) {
  if (y.shape.ndim == 0) {
    y.data[0] = x.data[0];
    return;
  }
  const int64_t w = x.shape[x.shape.ndim - 1], reps = w ? y.shape[y.shape.ndim - 1] / w : 0;
  walk_tile(x.shape, y.shape, [&](int64_t xo, int64_t yo) {
    for (int64_t j = 0; j < reps; ++j) std::copy_n(x.data + xo, w, y.data + yo + j * w);
  });
}

// dx = the sum of dy's tiles: dx[i] = sum of dy[j] over the j with j mod x.shape = i, added in
// row-major order of dy. The gradient of tile_fwd. dx must not alias dy.
template <class T> void tile_bwd(ConstView<T> dy, View<T> dx) {
  if (dy.shape.ndim == 0) {
    dx.data[0] = dy.data[0];
    return;
  }
  std::fill_n(dx.data, dx.size(), T(0));
  const int64_t w = dx.shape[dx.shape.ndim - 1], reps = w ? dy.shape[dy.shape.ndim - 1] / w : 0;
  walk_tile(dx.shape, dy.shape, [&](int64_t xo, int64_t yo) {
    for (int64_t j = 0; j < reps; ++j)
      for (int64_t i = 0; i < w; ++i) dx.data[xo + i] += dy.data[yo + j * w + i];
  });
}

namespace {
// Checks big = small tiled by the attr `multiples`.
void check_tile(const KernelCall& c, const Shape& small, const Shape& big, const char* op) {
  const std::vector<int64_t>& m = c.attrs.ints("multiples", op);
  bool ok = int(m.size()) == small.ndim && big.ndim == small.ndim;
  for (int d = 0; ok && d < small.ndim; ++d) ok = m[size_t(d)] >= 0 && big[d] == small[d] * m[size_t(d)];
  PG_CHECK(ok, op, "%s tiled %zu times along its dims does not give %s", small.str().c_str(), m.size(),
           big.str().c_str());
}
}  // namespace

Step build_tile_fwd(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  check_tile(c, x.shape, y.shape, op);
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { tile_fwd<T>(cview<T>(f, x), view<T>(f, y)); };
  });
}

Step build_tile_bwd(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand dy = c.in[0], dx = c.out[0];
  check_tile(c, dx.shape, dy.shape, op);
  return dispatch_number(dy.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { tile_bwd<T>(cview<T>(f, dy), view<T>(f, dx)); };
  });
}

}  // namespace pg
