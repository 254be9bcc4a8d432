// The activations of tf.nn beyond relu, sigmoid and tanh, and their gradients, with TensorFlow's
// formulas (core/kernels/relu_op_functor.h, softplus_op.h, softsign_op.h): leaky_relu, elu, selu,
// softplus, softsign and relu6. Each is a pair of functors, a row of pg/elementwise.def, chosen once,
// in the builder, so the inner loop is a plain loop over one op. All buffers are contiguous and of
// one shape; any of them may alias.
#include <cmath>
#include <limits>
#include <string>

#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 32768;  // elements per parallel chunk

// SELU's constants (Klambauer et al. 2017), as in TF's selu kernel.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

// ---- forward: y = op(x) ----

struct LeakyRelu {  // x > 0 ? x : alpha * x
  template <class T> T operator()(T x, T alpha) const { return x > T(0) ? x : x * alpha; }
};
struct Elu {  // x < 0 ? e^x - 1 : x
  template <class T> T operator()(T x, T) const { return x < T(0) ? std::expm1(x) : x; }
};
struct Selu {  // scale * (x < 0 ? alpha * (e^x - 1) : x)
  template <class T> T operator()(T x, T) const {
    return x < T(0) ? T(kSeluScale * kSeluAlpha) * std::expm1(x) : T(kSeluScale) * x;
  }
};
struct Softplus {  // log(1 + e^x), with TF's thresholds: x itself above -log(eps) - 2, e^x below log(eps) + 2
  template <class T> T operator()(T x, T) const {
    const T threshold = std::log(std::numeric_limits<T>::epsilon()) + T(2);
    if (x > -threshold) return x;
    const T e = std::exp(x);
    return x < threshold ? e : std::log1p(e);
  }
};
struct Softsign {  // x / (1 + |x|)
  template <class T> T operator()(T x, T) const { return x / (T(1) + std::abs(x)); }
};
struct Relu6 {  // min(max(x, 0), 6); NaN stays NaN
  template <class T> T operator()(T x, T) const { return x < T(0) ? T(0) : x > T(6) ? T(6) : x; }
};

// ---- gradients: dx = op(dy, t), t the forward input (features) or output as TF's *Grad op takes ----

struct LeakyReluGrad {  // t = x
  template <class T> T operator()(T dy, T x, T alpha) const { return x > T(0) ? dy : dy * alpha; }
};
struct EluGrad {  // t = y: y < 0 ? dy * (y + 1) : dy
  template <class T> T operator()(T dy, T y, T) const { return y < T(0) ? dy * (y + T(1)) : dy; }
};
struct SeluGrad {  // t = y: y < 0 ? dy * (y + scale * alpha) : dy * scale
  template <class T> T operator()(T dy, T y, T) const {
    return y < T(0) ? dy * (y + T(kSeluScale * kSeluAlpha)) : dy * T(kSeluScale);
  }
};
struct SoftplusGrad {  // t = x: dy / (1 + e^-x)
  template <class T> T operator()(T dy, T x, T) const { return dy / (T(1) + std::exp(-x)); }
};
struct SoftsignGrad {  // t = x: dy / (1 + |x|)^2
  template <class T> T operator()(T dy, T x, T) const {
    const T d = T(1) + std::abs(x);
    return dy / (d * d);
  }
};
struct Relu6Grad {  // t = y (or x): dy where 0 < t < 6
  template <class T> T operator()(T dy, T t, T) const { return t > T(0) && t < T(6) ? dy : T(0); }
};

// Calls fn(Op{}) (forward) or fn(Grad{}) (backward) for the activation named `op`, by its row of
// pg/elementwise.def.
template <class F> Step visit_forward(const std::string& op, const char* name, F&& fn) {
#define PG_ACTIVATION(n, Op, Grad) \
  if (op == #n) return fn(Op{});
#include "pg/elementwise.def"
  throw ShapeError(format_error(name, "unknown op '%s'", op.c_str()));
}

template <class F> Step visit_backward(const std::string& op, const char* name, F&& fn) {
#define PG_ACTIVATION(n, Op, Grad) \
  if (op == #n) return fn(Grad{});
#include "pg/elementwise.def"
  throw ShapeError(format_error(name, "unknown op '%s'", op.c_str()));
}

void expect_like(const char* name, const Operand& o, const Operand& like, const char* what) {
  PG_CHECK_DTYPE(o.dtype == like.dtype, name, "%s must have dtype %s, got %s", what, dtype_name(like.dtype),
                 dtype_name(o.dtype));
  PG_CHECK(o.shape == like.shape, name, "%s must have shape %s, got %s", what, like.shape.str().c_str(),
           o.shape.str().c_str());
}

}  // namespace

// y = op(x, alpha), elementwise; alpha is read by leaky_relu only.
template <class Op, class T> void activation_fwd(ConstView<T> x, View<T> y, T alpha, Op op) {
  const T* px = x.data;
  T* py = y.data;
  parallel_for(x.size(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) py[i] = op(px[i], alpha);
  });
}

// dx = op(dy, t, alpha), elementwise.
template <class Op, class T> void activation_bwd(ConstView<T> dy, ConstView<T> t, View<T> dx, T alpha, Op op) {
  const T* pdy = dy.data;
  const T* pt = t.data;
  T* pdx = dx.data;
  parallel_for(dy.size(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pdx[i] = op(pdy[i], pt[i], alpha);
  });
}

// in: x; out: y; attrs: op, alpha (float, leaky_relu).
Step build_activation_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const std::string op_attr = c.attrs.s("op", c.kernel.c_str());
  const std::string name = c.kernel + "(" + op_attr + ")";
  const double alpha = c.attrs.f("alpha", 0.0);
  const Operand x = c.in[0], y = c.out[0];
  return visit_forward(op_attr, name.c_str(), [&](auto fn) {
    using Op = decltype(fn);
    return dispatch_float(x.dtype, name.c_str(), [&](auto tag) -> Step {
      using T = decltype(tag);
      expect_like(name.c_str(), y, x, "y");
      return [x, y, alpha](Frame& f) { activation_fwd(cview<T>(f, x), view<T>(f, y), T(alpha), Op{}); };
    });
  });
}

// in: dy, t (the forward's x or y, as the op's TF gradient takes it); out: dx; attrs: op, alpha.
Step build_activation_bwd(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const std::string op_attr = c.attrs.s("op", c.kernel.c_str());
  const std::string name = c.kernel + "(" + op_attr + ")";
  const double alpha = c.attrs.f("alpha", 0.0);
  const Operand dy = c.in[0], t = c.in[1], dx = c.out[0];
  return visit_backward(op_attr, name.c_str(), [&](auto fn) {
    using Op = decltype(fn);
    return dispatch_float(dy.dtype, name.c_str(), [&](auto tag) -> Step {
      using T = decltype(tag);
      expect_like(name.c_str(), t, dy, "the forward tensor");
      expect_like(name.c_str(), dx, dy, "dx");
      return [dy, t, dx, alpha](Frame& f) {
        activation_bwd(cview<T>(f, dy), cview<T>(f, t), view<T>(f, dx), T(alpha), Op{});
      };
    });
  });
}

}  // namespace pg
