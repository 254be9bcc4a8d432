// Fused optimizer updates: each reads the gradient once and updates the variable and its slots
// in place, in one pass. Formulas are TensorFlow's training ops (core/kernels/training_ops.cc).
// Hyperparameters are scalar tensors (a learning rate may be a decayed tensor); the builders
// read them into a named struct each run. Each update's element loop is a function of its own over
// one chunk, with __restrict pointers and the scalars by value, so that it vectorizes: inside the
// parallel_for lambda, loads through captured references would need more run-time alias checks
// than the compiler makes.
#include <algorithm>
#include <cmath>

#include "pg/lanes.h"
#include "pg/parallel.h"
#include "pg/scratch.h"
#include "runtime/kernel.h"

namespace pg {

namespace {
constexpr int64_t kGrain = 1 << 15;

template <class T> T scalar(Frame& f, const Operand& o) { return *cview<T>(f, o).data; }

void check_scalars(const KernelCall& c, const char* op, size_t first, size_t last) {
  for (size_t i = first; i < last; ++i)
    PG_CHECK(c.in[i].shape.numel() == 1, op, "input %zu must be a scalar, got shape %s", i,
             c.in[i].shape.str().c_str());
}

void check_like_var(const KernelCall& c, const char* op, std::initializer_list<size_t> indices) {
  for (size_t i : indices)
    PG_CHECK(c.in[i].shape == c.in[0].shape, op, "input %zu has shape %s, the variable %s", i,
             c.in[i].shape.str().c_str(), c.in[0].shape.str().c_str());
  PG_CHECK(c.out[0].buffer == c.in[0].buffer, op, "the output must be the variable itself");
}
}  // namespace

// ---- gradient descent: var -= lr * grad ----
template <class T> void gradient_descent_chunk(int64_t n, T* __restrict v, const T* __restrict g, T lr) {
  for (int64_t i = 0; i < n; ++i) v[i] -= lr * g[i];
}

template <class T> void apply_gradient_descent(View<T> var, T lr, ConstView<T> grad) {
  parallel_for(var.size(), kGrain, [&](int64_t b, int64_t e) {
    gradient_descent_chunk(e - b, var.data + b, grad.data + b, lr);
  });
}

Step build_apply_gradient_descent(const KernelCall& c) {  // in: var, lr, grad
  const char* op = expect_uniform(c, 3, 1);
  check_scalars(c, op, 1, 2);
  check_like_var(c, op, {2});
  const Operand var = c.in[0], lr = c.in[1], grad = c.in[2];
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { apply_gradient_descent<T>(view<T>(f, var), scalar<T>(f, lr), cview<T>(f, grad)); };
  });
}

// ---- momentum: accum = momentum * accum + grad; var -= lr * accum, or with Nesterov
// var -= lr * grad + lr * momentum * accum ----
template <class T> struct MomentumParams {
  T lr, momentum;
  bool nesterov;
};

template <class T>
void momentum_chunk(int64_t n, T* __restrict v, T* __restrict a, const T* __restrict g, MomentumParams<T> p) {
  for (int64_t i = 0; i < n; ++i) {
    a[i] = a[i] * p.momentum + g[i];
    v[i] -= p.nesterov ? g[i] * p.lr + a[i] * p.momentum * p.lr : a[i] * p.lr;
  }
}

template <class T> void apply_momentum(View<T> var, View<T> accum, ConstView<T> grad, MomentumParams<T> p) {
  parallel_for(var.size(), kGrain, [&](int64_t b, int64_t e) {
    momentum_chunk(e - b, var.data + b, accum.data + b, grad.data + b, p);
  });
}

Step build_apply_momentum(const KernelCall& c) {  // in: var, accum, lr, grad, momentum
  const char* op = expect_uniform(c, 5, 1);
  check_scalars(c, op, 2, 3);
  check_scalars(c, op, 4, 5);
  check_like_var(c, op, {1, 3});
  const bool nesterov = c.attrs.i("use_nesterov", int64_t{0}) != 0;
  const Operand var = c.in[0], accum = c.in[1], lr = c.in[2], grad = c.in[3], mom = c.in[4];
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      apply_momentum<T>(view<T>(f, var), view<T>(f, accum), cview<T>(f, grad),
                        {scalar<T>(f, lr), scalar<T>(f, mom), nesterov});
    };
  });
}

// ---- Adagrad: accum += grad^2; var -= lr * grad / sqrt(accum) ----
template <class T> void adagrad_chunk(int64_t n, T* __restrict v, T* __restrict a, const T* __restrict g, T lr) {
  for (int64_t i = 0; i < n; ++i) {
    a[i] += g[i] * g[i];
    v[i] -= g[i] * lr / std::sqrt(a[i]);
  }
}

template <class T> void apply_adagrad(View<T> var, View<T> accum, ConstView<T> grad, T lr) {
  parallel_for(var.size(), kGrain, [&](int64_t b, int64_t e) {
    adagrad_chunk(e - b, var.data + b, accum.data + b, grad.data + b, lr);
  });
}

Step build_apply_adagrad(const KernelCall& c) {  // in: var, accum, lr, grad
  const char* op = expect_uniform(c, 4, 1);
  check_scalars(c, op, 2, 3);
  check_like_var(c, op, {1, 3});
  const Operand var = c.in[0], accum = c.in[1], lr = c.in[2], grad = c.in[3];
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { apply_adagrad<T>(view<T>(f, var), view<T>(f, accum), cview<T>(f, grad), scalar<T>(f, lr)); };
  });
}

// ---- RMSProp: ms += (grad^2 - ms) * (1 - rho); [centered: mg += (grad - mg) * (1 - rho)]
// mom = momentum * mom + lr * grad / sqrt(ms [- mg^2] + epsilon); var -= mom ----
template <class T> struct RMSPropParams {
  T lr, rho, momentum, epsilon;
};

// One chunk; kCentered says whether mg (the mean gradient) is kept.
template <bool kCentered, class T>
void rms_prop_chunk(int64_t n, T* __restrict v, T* __restrict s, T* __restrict m, T* __restrict mg,
                    const T* __restrict g, RMSPropParams<T> p) {
  const T one_minus_rho = T(1) - p.rho;
  for (int64_t i = 0; i < n; ++i) {
    s[i] += (g[i] * g[i] - s[i]) * one_minus_rho;
    T denom = s[i];
    if constexpr (kCentered) {
      mg[i] += (g[i] - mg[i]) * one_minus_rho;
      denom -= mg[i] * mg[i];
    }
    denom += p.epsilon;  // TF's order, (ms - mg^2) + epsilon, for the same rounding
    m[i] = m[i] * p.momentum + g[i] * p.lr / std::sqrt(denom);
    v[i] -= m[i];
  }
}

template <class T>
void apply_rms_prop(View<T> var, View<T> ms, View<T> mom, T* mg, ConstView<T> grad, RMSPropParams<T> p) {
  parallel_for(var.size(), kGrain, [&](int64_t b, int64_t e) {
    if (mg)
      rms_prop_chunk<true>(e - b, var.data + b, ms.data + b, mom.data + b, mg + b, grad.data + b, p);
    else
      rms_prop_chunk<false>(e - b, var.data + b, ms.data + b, mom.data + b, static_cast<T*>(nullptr), grad.data + b, p);
  });
}

Step build_apply_rms_prop(const KernelCall& c) {  // in: var, ms, mom, lr, rho, momentum, epsilon, grad [, mg]
  const bool centered = c.in.size() == 9;
  const char* op = expect_uniform(c, centered ? 9 : 8, 1);
  check_scalars(c, op, 3, 7);
  check_like_var(c, op, {1, 2, 7});
  if (centered) check_like_var(c, op, {8});
  const Operand var = c.in[0], ms = c.in[1], mom = c.in[2], lr = c.in[3], rho = c.in[4], momentum = c.in[5],
                eps = c.in[6], grad = c.in[7];
  const Operand mg = centered ? c.in[8] : Operand{};
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      apply_rms_prop<T>(view<T>(f, var), view<T>(f, ms), view<T>(f, mom), centered ? view<T>(f, mg).data : nullptr,
                        cview<T>(f, grad),
                        {scalar<T>(f, lr), scalar<T>(f, rho), scalar<T>(f, momentum), scalar<T>(f, eps)});
    };
  });
}

// ---- Adam: alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (grad - m) * (1 - beta1);
// v += (grad^2 - v) * (1 - beta2); var -= alpha * m / (sqrt(v) + epsilon) ----
template <class T> struct AdamParams {
  T beta1_power, beta2_power, lr, beta1, beta2, epsilon;
};

template <class T>
void adam_chunk(int64_t n, T* __restrict w, T* __restrict m, T* __restrict v, const T* __restrict g, T alpha,
                T one_minus_b1, T one_minus_b2, T epsilon) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= m[i] * alpha / (std::sqrt(v[i]) + epsilon);
  }
}

template <class T> void apply_adam(View<T> var, View<T> m, View<T> v, ConstView<T> grad, AdamParams<T> p) {
  const T alpha = p.lr * std::sqrt(T(1) - p.beta2_power) / (T(1) - p.beta1_power);
  parallel_for(var.size(), kGrain, [&](int64_t b, int64_t e) {
    adam_chunk(e - b, var.data + b, m.data + b, v.data + b, grad.data + b, alpha, T(1) - p.beta1, T(1) - p.beta2,
               p.epsilon);
  });
}

Step build_apply_adam(const KernelCall& c) {  // in: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad
  const char* op = expect_uniform(c, 10, 1);
  check_scalars(c, op, 3, 9);
  check_like_var(c, op, {1, 2, 9});
  const Operand var = c.in[0], m = c.in[1], v = c.in[2], b1p = c.in[3], b2p = c.in[4], lr = c.in[5], b1 = c.in[6],
                b2 = c.in[7], eps = c.in[8], grad = c.in[9];
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      apply_adam<T>(view<T>(f, var), view<T>(f, m), view<T>(f, v), cview<T>(f, grad),
                    {scalar<T>(f, b1p), scalar<T>(f, b2p), scalar<T>(f, lr), scalar<T>(f, b1), scalar<T>(f, b2),
                     scalar<T>(f, eps)});
    };
  });
}

// ---- Adadelta: accum = rho * accum + (1 - rho) * grad^2;
// update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad; var -= lr * update;
// accum_update = rho * accum_update + (1 - rho) * update^2 ----
template <class T> struct AdadeltaParams {
  T lr, rho, epsilon;
};

template <class T>
void adadelta_chunk(int64_t n, T* __restrict v, T* __restrict a, T* __restrict u, const T* __restrict g,
                    AdadeltaParams<T> p) {
  const T one_minus_rho = T(1) - p.rho;
  for (int64_t i = 0; i < n; ++i) {
    a[i] = a[i] * p.rho + g[i] * g[i] * one_minus_rho;
    const T update = std::sqrt(u[i] + p.epsilon) * (T(1) / std::sqrt(a[i] + p.epsilon)) * g[i];
    v[i] -= update * p.lr;
    u[i] = u[i] * p.rho + update * update * one_minus_rho;
  }
}

Step build_apply_adadelta(const KernelCall& c) {  // in: var, accum, accum_update, lr, rho, epsilon, grad
  const char* op = expect_uniform(c, 7, 1);
  check_scalars(c, op, 3, 6);
  check_like_var(c, op, {1, 2, 6});
  const Operand var = c.in[0], accum = c.in[1], update = c.in[2], lr = c.in[3], rho = c.in[4], eps = c.in[5],
                grad = c.in[6];
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      View<T> v = view<T>(f, var), a = view<T>(f, accum), u = view<T>(f, update);
      ConstView<T> g = cview<T>(f, grad);
      const AdadeltaParams<T> p{scalar<T>(f, lr), scalar<T>(f, rho), scalar<T>(f, eps)};
      parallel_for(v.size(), kGrain, [&](int64_t b, int64_t e) {
        adadelta_chunk(e - b, v.data + b, a.data + b, u.data + b, g.data + b, p);
      });
    };
  });
}

// ---- proximal updates (FOBOS): prox = var - rate * grad;
// var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2), or prox / (1 + rate * l2) when
// l1 <= 0. Proximal gradient descent's rate is lr; proximal Adagrad's is lr / sqrt(accum) after
// accum += grad^2. ----
template <class T> struct ProximalParams {
  T lr, l1, l2;
};

template <class T> inline T sign_of(T x) { return x == T(0) ? T(0) : (x < T(0) ? T(-1) : T(1)); }

template <bool kAdagrad, class T>
void proximal_chunk(int64_t n, T* __restrict v, T* __restrict a, const T* __restrict g, ProximalParams<T> p) {
  for (int64_t i = 0; i < n; ++i) {
    T rate = p.lr;
    if constexpr (kAdagrad) {
      a[i] += g[i] * g[i];
      rate = p.lr * (T(1) / std::sqrt(a[i]));
    }
    const T prox = v[i] - g[i] * rate;
    v[i] = p.l1 > T(0) ? sign_of(prox) * std::max(std::abs(prox) - rate * p.l1, T(0)) / (T(1) + p.l2 * rate)
                       : prox / (T(1) + p.l2 * rate);
  }
}

// in: var, lr, l1, l2, grad (gradient descent) or var, accum, lr, l1, l2, grad (Adagrad)
Step build_apply_proximal(const KernelCall& c, bool adagrad) {
  const size_t first = adagrad ? 2 : 1;
  const char* op = expect_uniform(c, first + 4, 1);
  check_scalars(c, op, first, first + 3);
  if (adagrad) check_like_var(c, op, {1, first + 3});
  else check_like_var(c, op, {first + 3});
  const Operand var = c.in[0], accum = adagrad ? c.in[1] : Operand{}, lr = c.in[first], l1 = c.in[first + 1],
                l2 = c.in[first + 2], grad = c.in[first + 3];
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      View<T> v = view<T>(f, var);
      T* a = adagrad ? view<T>(f, accum).data : nullptr;
      ConstView<T> g = cview<T>(f, grad);
      const ProximalParams<T> p{scalar<T>(f, lr), scalar<T>(f, l1), scalar<T>(f, l2)};
      parallel_for(v.size(), kGrain, [&](int64_t b, int64_t e) {
        if (adagrad) proximal_chunk<true>(e - b, v.data + b, a + b, g.data + b, p);
        else proximal_chunk<false>(e - b, v.data + b, static_cast<T*>(nullptr), g.data + b, p);
      });
    };
  });
}

Step build_apply_proximal_gradient_descent(const KernelCall& c) { return build_apply_proximal(c, false); }
Step build_apply_proximal_adagrad(const KernelCall& c) { return build_apply_proximal(c, true); }

// ---- FTRL-proximal (TF's ApplyFtrl / ApplyFtrlV2): with g' = grad + 2 * l2_shrinkage * var,
// new_accum = accum + grad^2; linear += g' - (new_accum^-p - accum^-p) / lr * var (p the
// learning-rate power; square roots when p = -0.5); quadratic = new_accum^-p / lr + 2 * l2;
// var = |linear| > l1 ? (sign(linear) * l1 - linear) / quadratic : 0; accum = new_accum ----
template <class T> struct FtrlParams {
  T lr, l1, l2, l2_shrinkage, lr_power;
};

template <class T>
void ftrl_chunk(int64_t n, T* __restrict v, T* __restrict a, T* __restrict lin, const T* __restrict g,
                FtrlParams<T> p) {
  const bool half = p.lr_power == T(-0.5);
  for (int64_t i = 0; i < n; ++i) {
    const T gs = g[i] + T(2) * p.l2_shrinkage * v[i];
    const T new_a = a[i] + g[i] * g[i];
    const T pow_new = half ? std::sqrt(new_a) : std::pow(new_a, -p.lr_power);
    const T pow_old = half ? std::sqrt(a[i]) : std::pow(a[i], -p.lr_power);
    lin[i] += gs - (pow_new - pow_old) / p.lr * v[i];
    const T quadratic = pow_new / p.lr + T(2) * p.l2;
    v[i] = std::abs(lin[i]) > p.l1 ? (p.l1 * sign_of(lin[i]) - lin[i]) / quadratic : T(0);
    a[i] = new_a;
  }
}

// in: var, accum, linear, grad, lr, l1, l2, lr_power [, l2_shrinkage (ApplyFtrlV2)]
Step build_apply_ftrl(const KernelCall& c) {
  const bool v2 = c.in.size() == 9;
  const char* op = expect_uniform(c, v2 ? 9 : 8, 1);
  check_scalars(c, op, 4, c.in.size());
  check_like_var(c, op, {1, 2, 3});
  const Operand var = c.in[0], accum = c.in[1], linear = c.in[2], grad = c.in[3], lr = c.in[4], l1 = c.in[5],
                l2 = c.in[6], power = c.in[7], shrink = v2 ? c.in[8] : Operand{};
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      View<T> v = view<T>(f, var), a = view<T>(f, accum), lin = view<T>(f, linear);
      ConstView<T> g = cview<T>(f, grad);
      const FtrlParams<T> p{scalar<T>(f, lr), scalar<T>(f, l1), scalar<T>(f, l2), v2 ? scalar<T>(f, shrink) : T(0),
                            scalar<T>(f, power)};
      parallel_for(v.size(), kGrain, [&](int64_t b, int64_t e) {
        ftrl_chunk(e - b, v.data + b, a.data + b, lin.data + b, g.data + b, p);
      });
    };
  });
}

// ---- global-norm clipping: norm = sqrt(sum_i ||t_i||^2); c_i = t_i * clip / max(norm, clip).
// in: t_1..t_n, clip_norm [, use_norm when attr has_use_norm]; out: c_1..c_n, norm. The norm is
// accumulated in double, over fixed blocks of each tensor (in parallel), each block in lanes
// (pg/lanes.h); the block sums are then added in order, so the result does not depend on the
// thread count. c_i may alias t_i. A NaN or inf norm gives NaN outputs, as in TF. ----
constexpr int64_t kSumBlock = 1 << 14;

template <class T> struct SquaresInDouble {  // a lane reducer: sum of x^2 in double
  using A = double;
  static A step(A acc, T x) { return acc + double(x) * double(x); }
  static A merge(A a, A b) { return a + b; }
};

template <class T> double sum_squares_block(const T* x, int64_t n) {
  double lane[kLanes] = {};
  accumulate_lanes<SquaresInDouble<T>>(x, n, lane);
  return merge_lanes<SquaresInDouble<T>>(lane, kLanes);
}

template <class T> double sum_squares(ConstView<T> t) {
  const int64_t n = t.size(), blocks = (n + kSumBlock - 1) / kSumBlock;
  if (blocks <= 1) return sum_squares_block(t.data, n);
  double* partial = thread_scratch<double>(blocks);
  parallel_for(blocks, 4, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k)
      partial[k] = sum_squares_block(t.data + k * kSumBlock, std::min(kSumBlock, n - k * kSumBlock));
  });
  double s = 0;
  for (int64_t k = 0; k < blocks; ++k) s += partial[k];
  return s;
}

// out = t * factor; out may be t itself, so the pointers are not __restrict.
template <class T> void scale_chunk(int64_t n, const T* t, T factor, T* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = t[i] * factor;
}

template <class T> void scale(ConstView<T> t, T factor, View<T> out) {
  parallel_for(t.size(), kGrain, [&](int64_t b, int64_t e) { scale_chunk(e - b, t.data + b, factor, out.data + b); });
}

Step build_clip_by_global_norm(const KernelCall& c) {
  const char* op = "clip_by_global_norm";
  const bool has_use_norm = c.attrs.i("has_use_norm", int64_t{0}) != 0;
  const size_t n = c.out.size() - 1;
  PG_CHECK(c.out.size() >= 1 && c.in.size() == n + 1 + (has_use_norm ? 1 : 0), op,
           "expected n tensors, clip_norm%s in and n tensors plus the norm out", has_use_norm ? ", use_norm" : "");
  expect_same_dtype(c);
  for (size_t i = 0; i < n; ++i)
    PG_CHECK(c.in[i].shape == c.out[i].shape, op, "output %zu has shape %s for an input of shape %s", i,
             c.out[i].shape.str().c_str(), c.in[i].shape.str().c_str());
  check_scalars(c, op, n, c.in.size());
  PG_CHECK(c.out[n].shape.numel() == 1, op, "the norm output must be a scalar");
  const std::vector<Operand> in = c.in, out = c.out;
  return dispatch_float(c.out[0].dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      double norm;
      if (has_use_norm) {
        norm = double(scalar<T>(f, in[n + 1]));
      } else {
        double total = 0;
        for (size_t i = 0; i < n; ++i) total += sum_squares<T>(cview<T>(f, in[i]));
        norm = std::sqrt(total);
      }
      const double clip = double(scalar<T>(f, in[n]));
      const T factor = std::isfinite(norm) ? T(clip / std::max(norm, clip)) : T(NAN);
      for (size_t i = 0; i < n; ++i) scale<T>(cview<T>(f, in[i]), factor, view<T>(f, out[i]));
      *view<T>(f, out[n]).data = T(norm);
    };
  });
}

}  // namespace pg
