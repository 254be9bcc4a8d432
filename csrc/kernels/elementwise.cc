// Elementwise kernels: unary ops and their gradients, broadcasting binary ops, cast, fill,
// broadcast_to and check_numerics. All buffers are contiguous and row-major. Every output element depends only on the
// matching input elements, so parallel_for may split the loops anywhere and results do not depend
// on the thread count. An op is a functor type chosen once, in the builder, so each inner loop is
// a plain loop over one op that gcc -O3 can vectorize.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "pg/parallel.h"
#include "pg/vmath.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 32768;  // elements per parallel chunk

// ---- scalar helpers ----

// Integer arithmetic wraps around (two's complement) instead of overflowing, which C++ leaves
// undefined for signed types. Floats use the plain operators.
template <class T> using Unsigned = std::make_unsigned_t<T>;
template <class T> T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(a) + Unsigned<T>(b));
  else return a + b;
}
template <class T> T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(a) - Unsigned<T>(b));
  else return a - b;
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(a) * Unsigned<T>(b));
  else return a * b;
}
template <class T> T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(0) - Unsigned<T>(a));
  else return -a;
}
template <class T> bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// Python/TF floor division for integers: the quotient rounded toward -inf. A run refuses integer
// division by zero before it starts (refusal below); here it gives 0 and MIN / -1 wraps to MIN, so
// no input can trap.
template <class T> T floor_div(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  T q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// The remainder of floor division, with the divisor's sign (Python's and TF's FloorMod).
template <class T> T floor_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
  } else {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
  }
}

// base**exp for integers by repeated squaring, wrapping on overflow. A run refuses negative
// exponents before it starts (refusal below); here they give 0, except for the bases 1 and -1.
template <class T> T int_pow(T base, T exp) {
  if (exp < 0) return base == 1 ? T(1) : base == -1 ? T(exp % 2 == 0 ? 1 : -1) : T(0);
  Unsigned<T> result = 1, b = Unsigned<T>(base);
  for (; exp != 0; exp /= 2) {
    if (exp % 2 != 0) result *= b;
    b *= b;
  }
  return T(result);
}

// static_cast with every input defined: to bool is x != 0; float to int truncates toward zero,
// saturates at the integer's range and maps NaN to 0 (static_cast leaves those undefined);
// float16 converts through float.
template <class To, class From> To convert(From x) {
  if constexpr (std::is_same_v<From, _Float16> && !std::is_same_v<To, _Float16>) {
    return convert<To>(float(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    constexpr From lo = From(std::numeric_limits<To>::min()), hi = From(std::numeric_limits<To>::max());
    return x != x ? To(0) : x >= hi ? std::numeric_limits<To>::max() : x <= lo ? std::numeric_limits<To>::min() : To(x);
  } else {
    return static_cast<To>(x);
  }
}

// Which dtypes an op accepts.
enum class Domain { floating, number, boolean, any };

template <Domain D, class F> Step dispatch_domain(DType dt, const char* name, F&& fn) {
  if constexpr (D == Domain::floating) {
    return dispatch_float(dt, name, fn);
  } else if constexpr (D == Domain::number) {
    return dispatch_number(dt, name, fn);
  } else if constexpr (D == Domain::any) {
    return dispatch_any(dt, name, fn);
  } else {
    PG_CHECK_DTYPE(dt == DType::b8, name, "expected bool, got %s", dtype_name(dt));
    return fn(bool{});
  }
}

// ---- unary ops: y = op(x) ----

struct Neg {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T x) const { return wrap_neg(x); }
};
struct Abs {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::abs(x);
    else return x < 0 ? wrap_neg(x) : x;
  }
};
struct Square {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T x) const { return wrap_mul(x, x); }
};
struct Sign {  // -1, 0 or 1; floats keep the sign of zero and NaN stays NaN
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T x) const { return x > T(0) ? T(1) : x < T(0) ? T(-1) : x; }
};
// An op with a static array(x, y, n) has unary_fwd call it for float32 (pg/vmath.h's vectorized loops).
struct Exp {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::exp(x); }
  static void array(const float* x, float* y, int64_t n) { exp_f32(x, y, n); }
};
struct Log {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::log(x); }
};
struct Log1p {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::log1p(x); }
};
struct Sqrt {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::sqrt(x); }
};
struct Rsqrt {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return T(1) / std::sqrt(x); }
};
struct Reciprocal {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return T(1) / x; }
};
struct Relu {  // NaN stays NaN
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct Sigmoid {  // 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below: exp never overflows
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const {
    const T e = std::exp(-std::abs(x));
    // The numerator is exactly 1 (x >= +0) or e (x <= -0), picked without a branch: the loop calls
    // exp so it is not vectorized, and a branch on the sign of random inputs mispredicts.
    const T s = std::copysign(T(1), x);
    const T num = (T(1) + s) * T(0.5) + (T(1) - s) * T(0.5) * e;
    return num / (T(1) + e);
  }
  static void array(const float* x, float* y, int64_t n) { sigmoid_f32(x, y, n); }
};
struct Tanh {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) {
      // (1 - e) / (1 + e) with e = exp(-2|x|), in double: within 1 ulp, about twice as fast as tanhf.
      const double ax = std::abs(double(x)), e = std::exp(-2.0 * ax);
      const double t = ax < 1e-4 ? ax * (1.0 - ax * ax / 3.0) : (1.0 - e) / (1.0 + e);
      return std::copysign(float(t), x);
    } else {
      return std::tanh(x);
    }
  }
  static void array(const float* x, float* y, int64_t n) { tanh_f32(x, y, n); }
};
struct Sin {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::sin(x); }
};
struct Cos {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::cos(x); }
};
struct Floor {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::floor(x); }
};
struct Ceil {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::ceil(x); }
};
struct Round {  // half to even, like numpy.rint and tf.round (default rounding mode)
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::nearbyint(x); }
};
struct LogicalNot {
  static constexpr Domain domain = Domain::boolean;
  bool operator()(bool x) const { return !x; }
};

// Calls fn(Op{}) for the unary op named `op`.
template <class F> Step visit_unary_op(const std::string& op, const char* name, F&& fn) {
  if (op == "neg") return fn(Neg{});
  if (op == "abs") return fn(Abs{});
  if (op == "square") return fn(Square{});
  if (op == "sign") return fn(Sign{});
  if (op == "exp") return fn(Exp{});
  if (op == "log") return fn(Log{});
  if (op == "log1p") return fn(Log1p{});
  if (op == "sqrt") return fn(Sqrt{});
  if (op == "rsqrt") return fn(Rsqrt{});
  if (op == "reciprocal") return fn(Reciprocal{});
  if (op == "relu") return fn(Relu{});
  if (op == "sigmoid") return fn(Sigmoid{});
  if (op == "tanh") return fn(Tanh{});
  if (op == "sin") return fn(Sin{});
  if (op == "cos") return fn(Cos{});
  if (op == "floor") return fn(Floor{});
  if (op == "ceil") return fn(Ceil{});
  if (op == "round") return fn(Round{});
  if (op == "logical_not") return fn(LogicalNot{});
  throw ShapeError(format_error(name, "unknown op '%s'", op.c_str()));
}

// ---- unary gradients: dx = op(y, dy), y the forward output ----

struct ReluGrad {
  template <class T> T operator()(T y, T dy) const { return y > T(0) ? dy : T(0); }
};
struct SigmoidGrad {
  template <class T> T operator()(T y, T dy) const { return dy * y * (T(1) - y); }
};
struct TanhGrad {
  template <class T> T operator()(T y, T dy) const { return dy * (T(1) - y * y); }
};

// ---- binary ops: c = op(a, b) ----

struct Add {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const { return wrap_add(a, b); }
};
struct Sub {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const { return wrap_sub(a, b); }
};
struct Mul {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const { return wrap_mul(a, b); }
};
struct Maximum {  // NaN wins, like numpy.maximum
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const { return a > b || is_nan(a) ? a : b; }
};
struct Minimum {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const { return a < b || is_nan(a) ? a : b; }
};
struct Div {  // true division for floats, floor division for ints
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return a / b;
    else return floor_div(a, b);
  }
};
struct FloorDiv {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::floor(a / b);
    else return floor_div(a, b);
  }
};
struct FloorMod {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const { return floor_mod(a, b); }
};
struct Pow {
  static constexpr Domain domain = Domain::number;
  template <class T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::pow(a, b);
    else return int_pow(a, b);
  }
};
struct SquaredDifference {
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T a, T b) const { return (a - b) * (a - b); }
};
struct Equal {
  static constexpr Domain domain = Domain::any;
  template <class T> bool operator()(T a, T b) const { return a == b; }
};
struct NotEqual {
  static constexpr Domain domain = Domain::any;
  template <class T> bool operator()(T a, T b) const { return a != b; }
};
struct Less {
  static constexpr Domain domain = Domain::number;
  template <class T> bool operator()(T a, T b) const { return a < b; }
};
struct LessEqual {
  static constexpr Domain domain = Domain::number;
  template <class T> bool operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  static constexpr Domain domain = Domain::number;
  template <class T> bool operator()(T a, T b) const { return a > b; }
};
struct GreaterEqual {
  static constexpr Domain domain = Domain::number;
  template <class T> bool operator()(T a, T b) const { return a >= b; }
};
struct LogicalAnd {
  static constexpr Domain domain = Domain::boolean;
  bool operator()(bool a, bool b) const { return a & b; }
};
struct LogicalOr {
  static constexpr Domain domain = Domain::boolean;
  bool operator()(bool a, bool b) const { return a | b; }
};
struct LogicalXor {
  static constexpr Domain domain = Domain::boolean;
  bool operator()(bool a, bool b) const { return a != b; }
};
struct First {  // broadcast_to without scaling
  template <class T> T operator()(T a, T) const { return a; }
};

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

template <class F> Step visit_binary_op(const std::string& op, const char* name, F&& fn) {
  if (op == "add") return fn(Add{});
  if (op == "sub") return fn(Sub{});
  if (op == "mul") return fn(Mul{});
  if (op == "maximum") return fn(Maximum{});
  if (op == "minimum") return fn(Minimum{});
  if (op == "div") return fn(Div{});
  if (op == "floordiv") return fn(FloorDiv{});
  if (op == "floormod") return fn(FloorMod{});
  if (op == "pow") return fn(Pow{});
  if (op == "squared_difference") return fn(SquaredDifference{});
  if (op == "equal") return fn(Equal{});
  if (op == "not_equal") return fn(NotEqual{});
  if (op == "less") return fn(Less{});
  if (op == "less_equal") return fn(LessEqual{});
  if (op == "greater") return fn(Greater{});
  if (op == "greater_equal") return fn(GreaterEqual{});
  if (op == "logical_and") return fn(LogicalAnd{});
  if (op == "logical_or") return fn(LogicalOr{});
  if (op == "logical_xor") return fn(LogicalXor{});
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

// c[0:n] = op(a, b) where each operand is contiguous (va/vb) or a scalar repeated n times.
template <class Op, class T, class R>
inline void binary_inner(const T* a, bool va, const T* b, bool vb, R* c, int64_t n, Op op) {
  if (va && vb) {
    for (int64_t i = 0; i < n; ++i) c[i] = op(a[i], b[i]);
  } else if (va) {
    const T s = *b;
    for (int64_t i = 0; i < n; ++i) c[i] = op(a[i], s);
  } else if (vb) {
    const T s = *a;
    for (int64_t i = 0; i < n; ++i) c[i] = op(s, b[i]);
  } else {
    const R v = op(*a, *b);
    for (int64_t i = 0; i < n; ++i) c[i] = v;
  }
}

}  // namespace

template <class Op, class = void> struct has_array : std::false_type {};
template <class Op> struct has_array<Op, std::void_t<decltype(&Op::array)>> : std::true_type {};

// y = op(x), elementwise. x, y: the same shape. y may alias x.
template <class Op, class T> void unary_fwd(ConstView<T> x, View<T> y, Op op) {
  const T* px = x.data;
  T* py = y.data;
  parallel_for(x.size(), kGrain, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, float> && has_array<Op>::value) {
      Op::array(px + lo, py + lo, hi - lo);
    } else {
      for (int64_t i = lo; i < hi; ++i) py[i] = op(px[i]);
    }
  });
}

// dx = op(y, dy), elementwise, with y the forward output: relu dy*(y > 0), sigmoid dy*y*(1-y),
// tanh dy*(1-y^2). y, dy, dx: the same shape. Any of them may alias.
template <class Op, class T> void unary_bwd(ConstView<T> y, ConstView<T> dy, View<T> dx, Op op) {
  const T* py = y.data;
  const T* pdy = dy.data;
  T* pdx = dx.data;
  parallel_for(y.size(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pdx[i] = op(py[i], pdy[i]);
  });
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
  auto make = [&](auto grad) {
    using Op = decltype(grad);
    return dispatch_float(y.dtype, name.c_str(), [&](auto t) -> Step {
      using T = decltype(t);
      expect_same(name.c_str(), dy, y, "dy", "y");
      expect_same(name.c_str(), dx, y, "dx", "y");
      return [y, dy, dx](Frame& f) { unary_bwd(cview<T>(f, y), cview<T>(f, dy), view<T>(f, dx), Op{}); };
    });
  };
  if (op == "relu") return make(ReluGrad{});
  if (op == "sigmoid") return make(SigmoidGrad{});
  if (op == "tanh") return make(TanhGrad{});
  throw ShapeError(format_error(name.c_str(), "unknown op '%s' (expected relu, sigmoid or tanh)", op.c_str()));
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

}  // namespace pg
