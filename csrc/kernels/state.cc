// Writes into variables: assign, assign_add, assign_sub. The variable's buffer is both the first
// input (the reference) and the output; the plan marks the variable initialized after `assign`.
#include <cstring>

#include "runtime/kernel.h"

namespace pg {

// ref = value (op "assign"), ref += value ("add"), ref -= value ("sub"). Same shape; value may
// alias ref.
template <class T> void assign(View<T> ref, ConstView<T> value, int mode) {
  const int64_t n = ref.size();
  T* __restrict r = ref.data;
  const T* v = value.data;
  if (mode == 0) {
    if (r != v) std::memmove(r, v, sizeof(T) * n);
  } else if (mode == 1) {
    for (int64_t i = 0; i < n; ++i) r[i] += v[i];
  } else {
    for (int64_t i = 0; i < n; ++i) r[i] -= v[i];
  }
}

Step build_assign(const KernelCall& c) {
  const char* op = expect_uniform(c, 2, 1);
  const Operand ref = c.in[0], value = c.in[1], out = c.out[0];
  const std::string& mode_name = c.attrs.s("op", op);
  const int mode = mode_name == "assign" ? 0 : mode_name == "add" ? 1 : mode_name == "sub" ? 2 : -1;
  PG_CHECK(mode >= 0, op, "unknown op '%s' (expected assign, add or sub)", mode_name.c_str());
  PG_CHECK(ref.shape == value.shape, op, "value shape %s does not match the variable's shape %s",
           value.shape.str().c_str(), ref.shape.str().c_str());
  PG_CHECK(out.buffer == ref.buffer, op, "the output must be the variable itself");
  if (mode == 0)
    return dispatch_storage(ref.dtype, op, [&](auto tag) -> Step {
      using T = decltype(tag);
      return [=](Frame& f) { assign<T>(view<T>(f, ref), cview<T>(f, value), 0); };
    });
  return dispatch_number(ref.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { assign<T>(view<T>(f, ref), cview<T>(f, value), mode); };
  });
}

}  // namespace pg
