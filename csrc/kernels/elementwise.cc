// Elementwise kernels: unary ops and their gradients, broadcasting binary ops, cast, copy, fill,
// broadcast_to and check_numerics. All buffers are contiguous and row-major. Every output element
// depends only on the matching input elements, so parallel_for may split the loops anywhere and
// results do not depend on the thread count. An op is a functor type (elementwise_ops.h) chosen
// once, in the builder, by its row of pg/elementwise.def, so each inner loop is a plain loop over
// one op that gcc -O3 can vectorize.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/elementwise_ops.h"
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {
using namespace elementwise;

constexpr int64_t kGrain = 32768;  // elements per parallel chunk

// TF refuses some integer operands with InvalidArgumentError: a zero divisor, a negative exponent.
// The message for the first such element of b, or null; checked before anything is written.
template <class Op, class T> const char* integer_refusal(ConstView<T> b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    constexpr bool divides = std::is_same_v<Op, Div> || std::is_same_v<Op, FloorDiv> || std::is_same_v<Op, FloorMod>;
    const int64_t n = b.size();
    if constexpr (divides) {
      for (int64_t i = 0; i < n; ++i)
        if (b.data[i] == 0) return "Integer division by zero";
    } else if constexpr (std::is_same_v<Op, Pow>) {
      for (int64_t i = 0; i < n; ++i)
        if (b.data[i] < 0) return "Integers to negative integer powers are not allowed";
    }
  }
  return nullptr;
}

// Calls fn(Op{}) for the op named `op` of one family of pg/elementwise.def; `name` names the
// kernel call in the error for an unknown op.
template <class F> Step visit_unary_op(const std::string& op, const char* name, F&& fn) {
#define PG_UNARY(n, Op) \
  if (op == #n) return fn(Op{});
#include "pg/elementwise.def"
  throw ShapeError(format_error(name, "unknown op '%s'", op.c_str()));
}

template <class F> Step visit_unary_grad(const std::string& op, const char* name, F&& fn) {
#define PG_UNARY_GRAD(n, Grad) \
  if (op == #n) return fn(Grad{});
#include "pg/elementwise.def"
  throw ShapeError(format_error(name, "unknown op '%s'", op.c_str()));
}

template <class F> Step visit_binary_op(const std::string& op, const char* name, F&& fn) {
#define PG_BINARY(n, Op) \
  if (op == #n) return fn(Op{});
#include "pg/elementwise.def"
  throw ShapeError(format_error(name, "unknown op '%s'", op.c_str()));
}

// ---- broadcasting ----

// The NumPy broadcast of two shapes (right-aligned; each dim pair equal or one of them 1), or
// false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  const int n = std::max(a.ndim, b.ndim);
  *out = Shape();
  out->ndim = n;
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.ndim), ib = i - (n - b.ndim);
    const int64_t da = ia >= 0 ? a.dim[ia] : 1, db = ib >= 0 ? b.dim[ib] : 1;
    if (da == db || db == 1) out->dim[i] = da;
    else if (da == 1) out->dim[i] = db;
    else return false;
  }
  return true;
}

// How c = op(a, b) walks its operands: c's dims with the size-1 dims dropped and adjacent dims
// merged where a and b broadcast the same way, outermost first, with each operand's element stride
// in that dim (0 where it is broadcast). The last dim is the contiguous inner loop, where an operand
// is either contiguous or one repeated scalar. Equal shapes collapse to one dim.
struct Broadcast {
  int ndim = 0;
  int64_t size[kMaxDims] = {}, stride_a[kMaxDims] = {}, stride_b[kMaxDims] = {};
  int64_t numel = 0;
};

// c must be the broadcast shape of a and b.
Broadcast plan_broadcast(const Shape& a, const Shape& b, const Shape& c) {
  Broadcast p;
  p.numel = c.numel();
  bool has_a[kMaxDims], has_b[kMaxDims];
  for (int i = 0; i < c.ndim; ++i) {
    const int64_t d = c.dim[i];
    if (d == 1) continue;
    const int ia = i - (c.ndim - a.ndim), ib = i - (c.ndim - b.ndim);
    const bool ha = ia >= 0 && a.dim[ia] == d, hb = ib >= 0 && b.dim[ib] == d;
    if (p.ndim > 0 && has_a[p.ndim - 1] == ha && has_b[p.ndim - 1] == hb) {
      p.size[p.ndim - 1] *= d;
    } else {
      has_a[p.ndim] = ha;
      has_b[p.ndim] = hb;
      p.size[p.ndim++] = d;
    }
  }
  int64_t sa = 1, sb = 1;
  for (int k = p.ndim - 1; k >= 0; --k) {
    p.stride_a[k] = has_a[k] ? sa : 0;
    p.stride_b[k] = has_b[k] ? sb : 0;
    if (has_a[k]) sa *= p.size[k];
    if (has_b[k]) sb *= p.size[k];
  }
  return p;
}

}  // namespace

// y = op(x), elementwise. x, y: the same shape. y may alias x.
// The vectorized transcendentals (exp, sigmoid, tanh: about 0.5 ns an element) split into chunks an
// eighth as long: a recurrent cell's [128, 128] gate runs on two threads.
template <class Op, class T> void unary_fwd(ConstView<T> x, View<T> y, Op op) {
  const T* px = x.data;
  T* py = y.data;
  constexpr bool vectorized = std::is_same_v<T, float> && has_array<Op>::value;
  parallel_for(x.size(), vectorized ? kGrain / 8 : kGrain,
               [&](int64_t lo, int64_t hi) { unary_inner(px + lo, py + lo, hi - lo, op); });
}

// dx = op(y, dy), elementwise, with y the forward output: relu dy*(y > 0), sigmoid dy*y*(1-y),
// tanh dy*(1-y^2). y, dy, dx: the same shape. Any of them may alias.
template <class Op, class T> void unary_bwd(ConstView<T> y, ConstView<T> dy, View<T> dx, Op op) {
  const T* py = y.data;
  const T* pdy = dy.data;
  T* pdx = dx.data;
  parallel_for(y.size(), kGrain, [&](int64_t lo, int64_t hi) { grad_inner(py + lo, pdy + lo, pdx + lo, hi - lo, op); });
}

// c = op(a, b) with NumPy broadcasting; p = plan_broadcast(a.shape, b.shape, c.shape). c may alias
// a or b when that operand has c's shape; no other overlap.
// Work items are (outer row, segment of the inner dim): one flat loop split into segments when the
// shapes are equal, rows when the inner dim is short. Each row starts from an index counter over
// the outer dims.
template <class Op, class T, class R>
void binary_fwd(ConstView<T> a, ConstView<T> b, View<R> c, const Broadcast& p, Op op) {
  if (p.numel == 0) return;
  const T* pa = a.data;
  const T* pb = b.data;
  R* pc = c.data;
  if (p.ndim == 0) {
    pc[0] = op(pa[0], pb[0]);
    return;
  }
  const int last = p.ndim - 1;
  const int64_t n = p.size[last];
  const bool va = p.stride_a[last] != 0, vb = p.stride_b[last] != 0;
  const int64_t rows = p.numel / n;
  const int64_t segs = std::max<int64_t>(1, n / kGrain);  // segments per row
  parallel_for(rows * segs, std::max<int64_t>(1, kGrain * segs / n), [&](int64_t lo, int64_t hi) {
    int64_t idx[kMaxDims] = {};
    int64_t row = lo / segs, oa = 0, ob = 0;
    for (int64_t k = last - 1, rem = row; k >= 0; --k) {  // seek the counter to `row`
      idx[k] = rem % p.size[k];
      rem /= p.size[k];
      oa += idx[k] * p.stride_a[k];
      ob += idx[k] * p.stride_b[k];
    }
    for (int64_t item = lo; item < hi; ++item) {
      if (item / segs != row) {  // next row: advance the counter
        ++row;
        for (int k = last - 1; k >= 0; --k) {
          oa += p.stride_a[k];
          ob += p.stride_b[k];
          if (++idx[k] < p.size[k]) break;
          oa -= p.stride_a[k] * p.size[k];
          ob -= p.stride_b[k] * p.size[k];
          idx[k] = 0;
        }
      }
      const int64_t seg = item % segs, i0 = n * seg / segs, i1 = n * (seg + 1) / segs;
      binary_inner(pa + oa + (va ? i0 : 0), va, pb + ob + (vb ? i0 : 0), vb, pc + row * n + i0, i1 - i0, op);
    }
  });
}

// y = static_cast<To>(x) with every input defined: to bool is x != 0, from bool 0/1, float to
// int truncates toward zero, saturating, NaN -> 0. Same shape; y may alias x only if To == From.
template <class From, class To> void cast(ConstView<From> x, View<To> y) {
  const From* px = x.data;
  To* py = y.data;
  if constexpr (std::is_same_v<From, To>) {
    if (px != py && x.size() > 0) std::memcpy(py, px, sizeof(To) * x.size());
  } else {
    parallel_for(x.size(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) py[i] = convert<To>(px[i]);
    });
  }
}

// y = x, byte for byte, in chunks over the threads. y may be x (nothing to do); no other overlap.
void copy(const void* x, void* y, int64_t nbytes) {
  constexpr int64_t kCopyGrain = int64_t(1) << 18;  // bytes per parallel chunk
  if (x == y) return;
  const char* px = static_cast<const char*>(x);
  char* py = static_cast<char*>(y);
  parallel_for(nbytes, kCopyGrain, [&](int64_t lo, int64_t hi) { std::memcpy(py + lo, px + lo, hi - lo); });
}

// y[...] = value.
template <class T> void fill(View<T> y, T value) {
  T* py = y.data;
  parallel_for(y.size(), kGrain, [&](int64_t lo, int64_t hi) { std::fill(py + lo, py + hi, value); });
}

// y = broadcast(x) * scale, with p = plan_broadcast(x.shape, (), y.shape). Op is Mul, or First to
// copy (scale 1; the only choice for bool). y must not overlap x unless they have the same shape.
template <class Op, class T> void broadcast_to(ConstView<T> x, View<T> y, const Broadcast& p, T scale, Op op) {
  binary_fwd(x, ConstView<T>(&scale, Shape()), y, p, op);
}

// ---- builders ----

namespace {
std::string op_name(const KernelCall& c, const std::string& op) { return c.kernel + "(" + op + ")"; }

void expect_same(const char* name, const Operand& o, const Operand& like, const char* what, const char* like_what) {
  PG_CHECK_DTYPE(o.dtype == like.dtype, name, "%s must have the dtype of %s (%s), got %s", what, like_what,
                 dtype_name(like.dtype), dtype_name(o.dtype));
  PG_CHECK(o.shape == like.shape, name, "%s must have the shape of %s %s, got %s", what, like_what,
           like.shape.str().c_str(), o.shape.str().c_str());
}
}  // namespace

Step build_unary_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const std::string& op_attr = c.attrs.s("op", c.kernel.c_str());
  const std::string name = op_name(c, op_attr);
  const Operand x = c.in[0], y = c.out[0];
  return visit_unary_op(op_attr, name.c_str(), [&](auto op) {
    using Op = decltype(op);
    return dispatch_domain<Op::domain>(x.dtype, name.c_str(), [&](auto t) -> Step {
      using T = decltype(t);
      expect_same(name.c_str(), y, x, "y", "x");
      return [x, y](Frame& f) { unary_fwd(cview<T>(f, x), view<T>(f, y), Op{}); };
    });
  });
}

Step build_unary_bwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const std::string& op = c.attrs.s("op", c.kernel.c_str());
  const std::string name = op_name(c, op);
  const Operand y = c.in[0], dy = c.in[1], dx = c.out[0];
  return visit_unary_grad(op, name.c_str(), [&](auto grad) {
    using Op = decltype(grad);
    return dispatch_float(y.dtype, name.c_str(), [&](auto t) -> Step {
      using T = decltype(t);
      expect_same(name.c_str(), dy, y, "dy", "y");
      expect_same(name.c_str(), dx, y, "dx", "y");
      return [y, dy, dx](Frame& f) { unary_bwd(cview<T>(f, y), cview<T>(f, dy), view<T>(f, dx), Op{}); };
    });
  });
}

Step build_binary_fwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const std::string& op_attr = c.attrs.s("op", c.kernel.c_str());
  const std::string name = op_name(c, op_attr);
  const char* nm = name.c_str();
  const Operand a = c.in[0], b = c.in[1], out = c.out[0];
  return visit_binary_op(op_attr, nm, [&](auto op) {
    using Op = decltype(op);
    PG_CHECK_DTYPE(a.dtype == b.dtype, nm, "operands must share one dtype, got %s and %s", dtype_name(a.dtype),
                   dtype_name(b.dtype));
    return dispatch_domain<Op::domain>(a.dtype, nm, [&](auto t) -> Step {
      using T = decltype(t);
      using R = decltype(Op{}(T{}, T{}));
      PG_CHECK_DTYPE(out.dtype == dtype_of<R>::value, nm, "output must be %s, got %s", dtype_name(dtype_of<R>::value),
                     dtype_name(out.dtype));
      Shape expected;
      PG_CHECK(broadcast_shapes(a.shape, b.shape, &expected), nm, "cannot broadcast shapes %s and %s",
               a.shape.str().c_str(), b.shape.str().c_str());
      PG_CHECK(out.shape == expected, nm, "output shape must be the broadcast shape %s of %s and %s, got %s",
               expected.str().c_str(), a.shape.str().c_str(), b.shape.str().c_str(), out.shape.str().c_str());
      const Broadcast plan = plan_broadcast(a.shape, b.shape, out.shape);
      return [a, b, out, plan, name](Frame& f) {
        const char* refused = integer_refusal<Op>(cview<T>(f, b));
        if (refused) throw ShapeError(format_error(name.c_str(), "%s", refused));
        binary_fwd(cview<T>(f, a), cview<T>(f, b), view<R>(f, out), plan, Op{});
      };
    });
  });
}

Step build_cast(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const char* nm = c.kernel.c_str();
  const Operand x = c.in[0], y = c.out[0];
  PG_CHECK(y.shape == x.shape, nm, "y must have the shape of x %s, got %s", x.shape.str().c_str(),
           y.shape.str().c_str());
  return dispatch_storage(x.dtype, nm, [&](auto from) {
    return dispatch_storage(y.dtype, nm, [&](auto to) -> Step {
      using From = decltype(from);
      using To = decltype(to);
      return [x, y](Frame& f) { cast(cview<From>(f, x), view<To>(f, y)); };
    });
  });
}

// in: x; out: y of x's dtype and shape. A copy: a variable read as a snapshot, a loop variable's new
// value into its buffer.
Step build_copy(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  expect_same(c.kernel.c_str(), y, x, "y", "x");
  const int64_t nbytes = x.shape.numel() * dtype_size(x.dtype);
  return [x, y, nbytes](Frame& f) { copy(f.ptr[x.buffer], f.ptr[y.buffer], nbytes); };
}

Step build_fill(const KernelCall& c) {
  expect_arity(c, 0, 1);
  const Operand y = c.out[0];
  const double value = c.attrs.f("value", c.kernel.c_str());
  return dispatch_storage(y.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    const T v = convert<T>(value);
    return [y, v](Frame& f) { fill(view<T>(f, y), v); };
  });
}

Step build_broadcast_to(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const char* nm = c.kernel.c_str();
  const Operand x = c.in[0], y = c.out[0];
  const double scale = c.attrs.f("scale", 1.0);
  PG_CHECK_DTYPE(y.dtype == x.dtype, nm, "y must have the dtype of x (%s), got %s", dtype_name(x.dtype),
                 dtype_name(y.dtype));
  PG_CHECK_DTYPE(x.dtype != DType::b8 || scale == 1.0, nm, "a bool input takes no scale, got scale %g", scale);
  Shape expected;
  PG_CHECK(broadcast_shapes(x.shape, y.shape, &expected) && expected == y.shape, nm, "cannot broadcast shape %s to %s",
           x.shape.str().c_str(), y.shape.str().c_str());
  const Broadcast plan = plan_broadcast(x.shape, Shape(), y.shape);
  return dispatch_any(x.dtype, nm, [&](auto t) -> Step {
    using T = decltype(t);
    const T s = convert<T>(scale);
    if constexpr (!std::is_same_v<T, bool>) {
      if (s != T(1)) return [x, y, plan, s](Frame& f) { broadcast_to(cview<T>(f, x), view<T>(f, y), plan, s, Mul{}); };
    }
    return [x, y, plan, s](Frame& f) { broadcast_to(cview<T>(f, x), view<T>(f, y), plan, s, First{}); };
  });
}

// TF's CheckNumerics: throws "<message> : Tensor had NaN values" (or Inf values; NaN wins) if x
// holds any; otherwise does nothing (the op's output is x itself). The flags are gathered over
// the parallel chunks and the throw happens after them (an exception must not leave a chunk:
// pg/parallel.h).
template <class T> void check_numerics(ConstView<T> x, const std::string& message) {
  std::atomic<int> found{0};  // bit 0: an Inf, bit 1: a NaN
  parallel_for(x.size(), kGrain, [&](int64_t b, int64_t e) {
    bool nan = false, inf = false;
    for (int64_t i = b; i < e; ++i) {
      nan |= x.data[i] != x.data[i];
      inf |= std::isinf(x.data[i]);
    }
    if (nan || inf) found.fetch_or((nan ? 2 : 0) | (inf ? 1 : 0));
  });
  if (found.load()) throw std::invalid_argument(message + (found.load() & 2 ? " : Tensor had NaN values"
                                                                               : " : Tensor had Inf values"));
}

Step build_check_numerics(const KernelCall& c) {
  expect_arity(c, 1, 0);
  const char* nm = c.kernel.c_str();
  const Operand x = c.in[0];
  const std::string message = c.attrs.s("message", nm);
  return dispatch_float(x.dtype, nm, [&](auto t) -> Step {
    using T = decltype(t);
    return [x, message](Frame& f) { check_numerics(cview<T>(f, x), message); };
  });
}

std::map<std::string, std::vector<std::string>> elementwise_ops() {
  std::map<std::string, std::vector<std::string>> ops;
#define PG_UNARY(name, Op) ops["unary_fwd"].push_back(#name);
#define PG_UNARY_GRAD(name, Grad) ops["unary_bwd"].push_back(#name);
#define PG_BINARY(name, Op) ops["binary_fwd"].push_back(#name);
#define PG_ACTIVATION(name, Op, Grad) \
  ops["activation_fwd"].push_back(#name); \
  ops["activation_bwd"].push_back(#name);
#include "pg/elementwise.def"
  return ops;
}

}  // namespace pg
