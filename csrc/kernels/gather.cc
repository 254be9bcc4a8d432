// Data movement chosen by values: gather and its scatter-add gradient, one_hot and select.
#include <algorithm>
#include <string>
#include <vector>

#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {

namespace {
constexpr int64_t kGrain = 32768;  // elements per parallel chunk

int64_t dims_product(const Shape& s, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= s[i];
  return n;
}

// "1,2" for the flat position k of a tensor of shape s: TF's spelling in "indices[1,2] = 7".
std::string index_str(const Shape& s, int64_t k) {
  std::string out;
  for (int d = s.ndim - 1; d >= 0; --d) {
    const int64_t n = s[d] ? s[d] : 1;
    out = std::to_string(k % n) + (out.empty() ? "" : "," + out);
    k /= n;
  }
  return out;
}

// Throws ShapeError naming the first index outside [0, n). Called before anything is written, so
// a bad index leaves every buffer as it was.
template <class I> void check_indices(const char* op, ConstView<I> idx, int64_t n) {
  const int64_t m = idx.size();
  for (int64_t k = 0; k < m; ++k)
    if (idx.data[k] < 0 || int64_t(idx.data[k]) >= n)
      throw ShapeError(format_error(op, "indices[%s] = %lld is not in [0, %lld)", index_str(idx.shape, k).c_str(),
                                    (long long)idx.data[k], (long long)n));
}

// Calls fn(I{}) with I the C++ type of an index dtype (int32 or int64).
template <class F> auto dispatch_index(DType dt, const char* op, F&& fn) {
  switch (dt) {
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    default: throw DTypeError(format_error(op, "indices must be int32 or int64, got %s", dtype_name(dt)));
  }
}

// Where the gathered tensor's dims come from: params [outer, n, inner] around `axis`, and the
// result params.shape[:axis] + indices.shape + params.shape[axis + 1:].
struct GatherDims {
  int64_t outer, n, inner;
};

GatherDims gather_dims(const char* op, const Shape& params, const Shape& indices, const Shape& out, int64_t axis) {
  PG_CHECK(axis >= 0 && axis < params.ndim, op, "axis %lld is out of range for params of shape %s", (long long)axis,
           params.str().c_str());
  bool ok = out.ndim == params.ndim - 1 + indices.ndim;
  for (int d = 0; ok && d < out.ndim; ++d) {
    const int64_t want = d < axis ? params[d] : d < axis + indices.ndim ? indices[d - int(axis)]
                                                                        : params[d - indices.ndim + 1];
    ok = out[d] == want;
  }
  PG_CHECK(ok, op, "params %s gathered along axis %lld by indices %s cannot give %s", params.str().c_str(),
           (long long)axis, indices.str().c_str(), out.str().c_str());
  return {dims_product(params, 0, int(axis)), params[int(axis)], dims_product(params, int(axis) + 1, params.ndim)};
}
}  // namespace

// ---- gather ----

// y[o, j, i] = params[o, indices[j], i], with params viewed as [outer, n, inner] around the axis,
// indices flattened to [m] and y viewed as [outer, m, inner]. Every index must be in [0, n): the
// first one that is not is named in the error, before anything is written. y must not alias params.
template <class T, class I> void gather_fwd(ConstView<T> params, ConstView<I> indices, GatherDims g, View<T> y) {
  check_indices("gather_fwd", indices, g.n);
  const int64_t m = indices.size(), rows = g.outer * m;
  if (rows == 0) return;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.inner)), [&](int64_t lo, int64_t hi) {
    int64_t o = lo / m, j = lo % m;  // row r = o * m + j, advanced without dividing
    for (int64_t r = lo; r < hi; ++r) {
      const T* src = params.data + (o * g.n + int64_t(indices.data[j])) * g.inner;
      if (g.inner == 1) y.data[r] = *src;
      else std::copy_n(src, g.inner, y.data + r * g.inner);
      if (++j == m) {
        j = 0;
        ++o;
      }
    }
  });
}

// dparams = zeros, then dparams[o, indices[j], i] += dy[o, j, i] for j in order: the gradient of
// gather_fwd, a scatter-add (repeated indices add up). Same views and index check as gather_fwd.
// dparams must not alias dy.
template <class T, class I> void gather_bwd(ConstView<T> dy, ConstView<I> indices, GatherDims g, View<T> dparams) {
  check_indices("gather_bwd", indices, g.n);
  std::fill_n(dparams.data, dparams.size(), T(0));
  const int64_t m = indices.size();
  parallel_for(g.outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, m * g.inner)), [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o)
      for (int64_t j = 0; j < m; ++j) {
        const T* src = dy.data + (o * m + j) * g.inner;
        T* dst = dparams.data + (o * g.n + int64_t(indices.data[j])) * g.inner;
        for (int64_t i = 0; i < g.inner; ++i) dst[i] += src[i];
      }
  });
}

Step build_gather_fwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const char* op = "gather_fwd";
  const Operand params = c.in[0], indices = c.in[1], y = c.out[0];
  PG_CHECK_DTYPE(y.dtype == params.dtype, op, "y must have the dtype of params (%s), got %s",
                 dtype_name(params.dtype), dtype_name(y.dtype));
  const GatherDims g = gather_dims(op, params.shape, indices.shape, y.shape, c.attrs.i("axis", op));
  return dispatch_index(indices.dtype, op, [&](auto itag) -> Step {
    using I = decltype(itag);
    return dispatch_storage(params.dtype, op, [&](auto tag) -> Step {
      using T = decltype(tag);
      return [=](Frame& f) { gather_fwd<T, I>(cview<T>(f, params), cview<I>(f, indices), g, view<T>(f, y)); };
    });
  });
}

Step build_gather_bwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const char* op = "gather_bwd";
  const Operand dy = c.in[0], indices = c.in[1], dparams = c.out[0];
  PG_CHECK_DTYPE(dy.dtype == dparams.dtype, op, "dparams must have the dtype of dy (%s), got %s",
                 dtype_name(dy.dtype), dtype_name(dparams.dtype));
  const GatherDims g = gather_dims(op, dparams.shape, indices.shape, dy.shape, c.attrs.i("axis", op));
  return dispatch_index(indices.dtype, op, [&](auto itag) -> Step {
    using I = decltype(itag);
    return dispatch_number(dy.dtype, op, [&](auto tag) -> Step {
      using T = decltype(tag);
      return [=](Frame& f) { gather_bwd<T, I>(cview<T>(f, dy), cview<I>(f, indices), g, view<T>(f, dparams)); };
    });
  });
}

// ---- one_hot ----

// y[o, j, i] = on if indices[o, i] == j else off, with indices viewed as [outer, inner] around
// the new axis and y as [outer, depth, inner]. An index outside [0, depth) gives a row of `off`
// (TF's rule). Not differentiable.
template <class T, class I>
void one_hot(ConstView<I> indices, int64_t outer, int64_t depth, int64_t inner, T on, T off, View<T> y) {
  std::fill_n(y.data, y.size(), off);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t j = int64_t(indices.data[o * inner + i]);
      if (j >= 0 && j < depth) y.data[(o * depth + j) * inner + i] = on;
    }
}

Step build_one_hot(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const char* op = "one_hot";
  const Operand indices = c.in[0], y = c.out[0];
  const int64_t axis = c.attrs.i("axis", op), depth = c.attrs.i("depth", op);
  const double on = c.attrs.f("on_value", op), off = c.attrs.f("off_value", op);
  PG_CHECK(axis >= 0 && axis <= indices.shape.ndim && depth >= 0, op,
           "axis %lld must be in [0, %d] and depth %lld at least 0", (long long)axis, indices.shape.ndim,
           (long long)depth);
  bool ok = y.shape.ndim == indices.shape.ndim + 1;
  for (int d = 0; ok && d < y.shape.ndim; ++d)
    ok = y.shape[d] == (d < axis ? indices.shape[d] : d == axis ? depth : indices.shape[d - 1]);
  PG_CHECK(ok, op, "indices %s with depth %lld on axis %lld cannot give %s", indices.shape.str().c_str(),
           (long long)depth, (long long)axis, y.shape.str().c_str());
  const int64_t outer = dims_product(indices.shape, 0, int(axis));
  const int64_t inner = dims_product(indices.shape, int(axis), indices.shape.ndim);
  return dispatch_index(indices.dtype, op, [&](auto itag) -> Step {
    using I = decltype(itag);
    return dispatch_storage(y.dtype, op, [&](auto tag) -> Step {
      using T = decltype(tag);
      const T on_t = T(on), off_t = T(off);
      return [=](Frame& f) { one_hot<T, I>(cview<I>(f, indices), outer, depth, inner, on_t, off_t, view<T>(f, y)); };
    });
  });
}

// ---- select ----

// out = cond ? x : y. cond has out's shape, or is a vector of out.shape[0] entries, each choosing
// a whole row (TF1's Select). out may alias x or y.
template <class T> void select(ConstView<bool> cond, ConstView<T> x, ConstView<T> y, View<T> out) {
  const int64_t n = out.size(), rows = cond.size(), inner = rows ? n / rows : 0;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* src = cond.data[r] ? x.data : y.data;
      std::copy_n(src + r * inner, inner, out.data + r * inner);
    }
  });
}

Step build_select(const KernelCall& c) {
  expect_arity(c, 3, 1);
  const char* op = "select";
  const Operand cond = c.in[0], x = c.in[1], y = c.in[2], out = c.out[0];
  expect_dtype(c, cond, DType::b8, "condition");
  PG_CHECK_DTYPE(x.dtype == y.dtype && y.dtype == out.dtype, op, "x, y and the output must share one dtype, got %s, "
                 "%s and %s", dtype_name(x.dtype), dtype_name(y.dtype), dtype_name(out.dtype));
  PG_CHECK(x.shape == out.shape && y.shape == out.shape, op, "x %s, y %s and the output %s must have one shape",
           x.shape.str().c_str(), y.shape.str().c_str(), out.shape.str().c_str());
  const bool rows = cond.shape.ndim == 1 && out.shape.ndim >= 1 && cond.shape[0] == out.shape[0];
  PG_CHECK(cond.shape == out.shape || rows, op, "condition %s must have the shape of x %s or be a vector of its "
           "first dimension", cond.shape.str().c_str(), x.shape.str().c_str());
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { select<T>(cview<bool>(f, cond), cview<T>(f, x), cview<T>(f, y), view<T>(f, out)); };
  });
}

}  // namespace pg
