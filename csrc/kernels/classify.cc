// Which floats are NaN, infinite or finite (tf.is_nan, tf.is_inf, tf.is_finite), and whether all are
// finite (a loss scale's check of the gradients).
#include <atomic>
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

// Whether x[0, n) is all finite; with kScaled, y = x * s (s * x when kScaleFirst: the product as
// binary_fwd's multiply computes it, operands in its order) is written, and y checked.
template <class T, bool kScaled, bool kScaleFirst>
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) bool finite_run(const T* x, T s, T* y,
                                                                                          int64_t n) {
  constexpr T kMax = std::numeric_limits<T>::max();
  int bad = 0;  // an int, or-ed: the loop vectorizes (a bool and-ed does not)
  for (int64_t i = 0; i < n; ++i) {
    const T v = kScaled ? (kScaleFirst ? s * x[i] : x[i] * s) : x[i];
    if constexpr (kScaled) y[i] = v;
    bad |= !(std::abs(v) <= kMax);
  }
  return bad == 0;
}

// all_finite (x[, scale]) -> ([y,] ok): ok (a bool scalar) = whether every element of x is finite;
// with a scale (one element), y = x * scale (attr scale_first: scale * x) is written in the same pass
// and checked instead. One pass for reduce_all(is_finite(x)) and for the multiply before it
// (pygrad/fuse_checks.py).
Step build_all_finite(const KernelCall& c) {
  const char* op = "all_finite";
  PG_CHECK((c.in.size() == 1 && c.out.size() == 1) || (c.in.size() == 2 && c.out.size() == 2), op,
           "takes (x) -> (ok) or (x, scale) -> (y, ok), got %zu inputs and %zu outputs", c.in.size(), c.out.size());
  const Operand x = c.in[0], ok = c.out.back();
  const bool scaled = c.in.size() == 2;
  expect_dtype(c, ok, DType::b8, "ok");
  PG_CHECK(ok.shape.numel() == 1, op, "ok must have one element, got shape %s", ok.shape.str().c_str());
  if (scaled) {
    expect_dtype(c, c.in[1], x.dtype, "the scale");
    expect_dtype(c, c.out[0], x.dtype, "y");
    PG_CHECK(c.in[1].shape.numel() == 1, op, "the scale must have one element, got shape %s",
             c.in[1].shape.str().c_str());
    PG_CHECK(c.out[0].shape == x.shape, op, "x %s and y %s must have one shape", x.shape.str().c_str(),
             c.out[0].shape.str().c_str());
  }
  const bool scale_first = c.attrs.i("scale_first", int64_t{0}) != 0;
  return dispatch_float(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    auto step = [=](auto scaled_tag, auto first_tag) -> Step {
      constexpr bool kScaled = decltype(scaled_tag)::value, kFirst = decltype(first_tag)::value;
      const Operand scale = kScaled ? c.in[1] : x, y = kScaled ? c.out[0] : x;
      return [=](Frame& f) {
        const ConstView<T> xs = cview<T>(f, x);
        const T s = kScaled ? cview<T>(f, scale).data[0] : T(1);
        T* ys = kScaled ? view<T>(f, y).data : nullptr;
        std::atomic<bool> all(true);
        parallel_for(xs.size(), 1 << 15, [&](int64_t lo, int64_t hi) {
          if (!finite_run<T, kScaled, kFirst>(xs.data + lo, s, kScaled ? ys + lo : nullptr, hi - lo))
            all.store(false, std::memory_order_relaxed);
        });
        view<bool>(f, ok).data[0] = all.load();
      };
    };
    using Yes = std::true_type;
    using No = std::false_type;
    if (!scaled) return step(No{}, No{});
    return scale_first ? step(Yes{}, Yes{}) : step(Yes{}, No{});
  });
}

}  // namespace pg
