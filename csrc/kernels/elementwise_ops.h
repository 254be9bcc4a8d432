// The elementwise ops' functors, one per row of pg/elementwise.def (unary, unary_grad and binary),
// and the scalar helpers they share: wrapping integer arithmetic, floor division, integer powers and
// the defined conversions of cast. Each functor declares the dtypes it takes (Domain); the kernels
// in elementwise.cc call it in a plain loop that gcc -O3 can vectorize.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "pg/vmath.h"
#include "runtime/kernel.h"

namespace pg::elementwise {

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
// An op with a static array(x, y, n) has unary_inner call it for float32 (pg/vmath.h's vectorized loops).
template <class Op, class = void> struct has_array : std::false_type {};
template <class Op> struct has_array<Op, std::void_t<decltype(&Op::array)>> : std::true_type {};
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
struct Tanh {  // float32 arrays go to tanh_f32 (array), so the scalar form serves float64
  static constexpr Domain domain = Domain::floating;
  template <class T> T operator()(T x) const { return std::tanh(x); }
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

// ---- the inner loops, shared by the elementwise kernels and fused_elementwise's tiles ----

// y[0:n] = op(x): float32 through the op's vectorized array loop when it has one. y may alias x.
template <class Op, class T> inline void unary_inner(const T* x, T* y, int64_t n, Op op) {
  if constexpr (std::is_same_v<T, float> && has_array<Op>::value) {
    Op::array(x, y, n);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
  }
}

// dx[0:n] = grad(y, dy). Any of them may alias.
template <class Grad, class T> inline void grad_inner(const T* y, const T* dy, T* dx, int64_t n, Grad grad) {
  for (int64_t i = 0; i < n; ++i) dx[i] = grad(y[i], dy[i]);
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

}  // namespace pg::elementwise
