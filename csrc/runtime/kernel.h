// How a kernel family plugs into the executor. Each PG_KERNEL(family, name) in pg/kernels.def has a
// builder `Step build_<name>(const KernelCall&)` in kernels/<family>.cc: it checks dtypes, shapes and
// attributes once, when a plan is built, and returns the closure that runs the kernel on a Frame.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "pg/check.h"
#include "pg/view.h"

namespace pg {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

// Named scalar attributes of one kernel call ("transpose_a", "axis", "op", ...).
struct Attrs {
  std::map<std::string, AttrValue> values;
  bool has(const std::string& k) const { return values.count(k) != 0; }
  int64_t i(const std::string& k, const char* op) const;
  int64_t i(const std::string& k, int64_t dflt) const;
  double f(const std::string& k, const char* op) const;
  double f(const std::string& k, double dflt) const;
  const std::string& s(const std::string& k, const char* op) const;
  const std::vector<int64_t>& ints(const std::string& k, const char* op) const;
};

// One operand of a kernel call: which buffer of the frame, and what it holds.
struct Operand {
  int buffer = -1;
  DType dtype = DType::f32;
  Shape shape;
  // A graph constant's data, fixed and unchanged for the plan's life (Plan::add_step sets it for an
  // input that is one): a kernel may prepare something from it once, when it first runs. nullptr
  // for every other buffer.
  const void* constant = nullptr;
};

class VarStore;

// The buffers of one execution: ptr[buffer] is that buffer's data. stacks[id] holds the values a
// loop pushed for its gradient (kernels/control.cc); they grow with the trip count, belong to the
// run and are freed when it ends.
struct Frame {
  std::vector<void*> ptr;
  std::vector<std::vector<char>> stacks;
};

template <class T> View<T> view(Frame& f, const Operand& o) {
  return {static_cast<T*>(f.ptr[o.buffer]), o.shape};
}
template <class T> ConstView<T> cview(Frame& f, const Operand& o) {
  return {static_cast<const T*>(f.ptr[o.buffer]), o.shape};
}

struct KernelCall {
  std::string kernel;
  std::vector<Operand> in, out;
  Attrs attrs;
};

using Step = std::function<void(Frame&)>;
using KernelBuilder = Step (*)(const KernelCall&);

// The builder named in kernels.def, or nullptr.
KernelBuilder find_kernel(const std::string& name);
// Every name in kernels.def, in order.
std::vector<std::string> kernel_names();
// The ops of each elementwise kernel ("unary_fwd": ["neg", "abs", ...]), as pg/elementwise.def lists them.
std::map<std::string, std::vector<std::string>> elementwise_ops();
// Builds the step for `call`, with a clear error for an unknown kernel or wrong operand count.
Step build_step(const KernelCall& call);

// Shared checks for builders.
void expect_arity(const KernelCall& c, size_t n_in, size_t n_out);
void expect_dtype(const KernelCall& c, const Operand& o, DType dt, const char* what);
void expect_same_dtype(const KernelCall& c);  // all inputs and outputs share one dtype
// The opening of a builder whose operands all share one dtype: expect_arity and expect_same_dtype.
// Returns the kernel's name, for the builder's own checks and its dispatch_float (or _number, ...).
const char* expect_uniform(const KernelCall& c, size_t n_in, size_t n_out);

// Calls fn(T{}) with T the C++ type of dt, for float32 and float64.
template <class F> auto dispatch_float(DType dt, const char* op, F&& fn) {
  switch (dt) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    default: throw DTypeError(format_error(op, "expected float32 or float64, got %s", dtype_name(dt)));
  }
}
// As dispatch_float, plus int32 and int64.
template <class F> auto dispatch_number(DType dt, const char* op, F&& fn) {
  switch (dt) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    default: throw DTypeError(format_error(op, "expected a number type, got %s", dtype_name(dt)));
  }
}
// Every dtype with arithmetic, bool included.
template <class F> auto dispatch_any(DType dt, const char* op, F&& fn) {
  if (dt == DType::b8) return fn(bool{});
  return dispatch_number(dt, op, fn);
}
// Every dtype: for kernels that only move, compare for equality or convert values.
template <class F> auto dispatch_storage(DType dt, const char* op, F&& fn) {
  switch (dt) {
    case DType::u8: return fn(uint8_t{});
    case DType::i8: return fn(int8_t{});
    case DType::i16: return fn(int16_t{});
    case DType::u16: return fn(uint16_t{});
    case DType::f16: return fn(_Float16{});
    default: return dispatch_any(dt, op, fn);
  }
}

}  // namespace pg
