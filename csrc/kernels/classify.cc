// Which floats are NaN, infinite or finite (tf.is_nan, tf.is_inf, tf.is_finite).
#include <cmath>
#include <limits>
#include <type_traits>

#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {

enum class FloatClass { nan, inf, finite };

// y[i] = whether x[i] is NaN, +-inf, or neither. Not differentiable. Written as comparisons (a NaN
// compares false), so that the loops vectorize.
template <class T, FloatClass kWhat>
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void classify(const T* x, bool* y, int64_t n) {
  constexpr T kMax = std::numeric_limits<T>::max(), kInf = std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const T a = std::abs(x[i]);
    y[i] = kWhat == FloatClass::nan ? a != a : kWhat == FloatClass::inf ? a == kInf : a <= kMax;
  }
}

template <class T, FloatClass kWhat> void float_class(ConstView<T> x, View<bool> y) {
  parallel_for(x.size(), 1 << 15, [&](int64_t lo, int64_t hi) { classify<T, kWhat>(x.data + lo, y.data + lo, hi - lo); });
}

Step build_float_class(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const char* op = "float_class";
  const Operand x = c.in[0], y = c.out[0];
  expect_dtype(c, y, DType::b8, "the output");
  PG_CHECK(x.shape == y.shape, op, "x %s and y %s must have one shape", x.shape.str().c_str(), y.shape.str().c_str());
  const std::string& name = c.attrs.s("test", op);
  PG_CHECK(name == "nan" || name == "inf" || name == "finite", op, "test must be nan, inf or finite, got '%s'",
           name.c_str());
  const FloatClass what = name == "nan" ? FloatClass::nan : name == "inf" ? FloatClass::inf : FloatClass::finite;
  return dispatch_float(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    auto step = [=](auto which) -> Step {
      return [=](Frame& f) { float_class<T, decltype(which)::value>(cview<T>(f, x), view<bool>(f, y)); };
    };
    if (what == FloatClass::nan) return step(std::integral_constant<FloatClass, FloatClass::nan>{});
    if (what == FloatClass::inf) return step(std::integral_constant<FloatClass, FloatClass::inf>{});
    return step(std::integral_constant<FloatClass, FloatClass::finite>{});
  });
}

}  // namespace pg
