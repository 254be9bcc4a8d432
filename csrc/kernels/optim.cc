// Fused optimizer updates: each reads the gradient once and updates the variable (and its slots)
// in place, in one pass. Formulas follow TensorFlow's training ops (training_ops.cc).
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {

// var -= lr * grad. lr is a scalar; grad has var's shape and may not alias var.
template <class T> void apply_gradient_descent(View<T> var, T lr, ConstView<T> grad) {
  T* __restrict v = var.data;
  const T* __restrict g = grad.data;
  parallel_for(var.size(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) v[i] -= lr * g[i];
  });
}

Step build_apply_gradient_descent(const KernelCall& c) {
  expect_arity(c, 3, 1);
  expect_same_dtype(c);
  const char* op = "apply_gradient_descent";
  const Operand var = c.in[0], lr = c.in[1], grad = c.in[2];
  PG_CHECK(lr.shape.numel() == 1, op, "learning rate must be a scalar, got shape %s", lr.shape.str().c_str());
  PG_CHECK(grad.shape == var.shape, op, "gradient shape %s does not match the variable's shape %s",
           grad.shape.str().c_str(), var.shape.str().c_str());
  PG_CHECK(c.out[0].buffer == var.buffer, op, "the output must be the variable itself");
  return dispatch_float(var.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { apply_gradient_descent<T>(view<T>(f, var), *cview<T>(f, lr).data, cview<T>(f, grad)); };
  });
}

}  // namespace pg
