#include "runtime/kernel.h"

#include <unordered_map>

namespace pg {

#define PG_KERNEL(family, name) Step build_##name(const KernelCall&);
#include "pg/kernels.def"
#undef PG_KERNEL

namespace {
const std::vector<std::pair<std::string, KernelBuilder>>& table() {
  static const std::vector<std::pair<std::string, KernelBuilder>> t = {
#define PG_KERNEL(family, name) {#name, &build_##name},
#include "pg/kernels.def"
#undef PG_KERNEL
  };
  return t;
}
}  // namespace

KernelBuilder find_kernel(const std::string& name) {
  for (const auto& [n, b] : table())
    if (n == name) return b;
  return nullptr;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& entry : table()) names.push_back(entry.first);
  return names;
}

Step build_step(const KernelCall& call) {
  KernelBuilder b = find_kernel(call.kernel);
  if (!b) throw std::invalid_argument("unknown kernel '" + call.kernel + "'");
  return b(call);
}

// ---- dtypes and shapes ----

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::b8: return "bool";
    case DType::u8: return "uint8";
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::u16: return "uint16";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

int64_t dtype_size(DType dt) {
  switch (dt) {
    case DType::f32: case DType::i32: return 4;
    case DType::f64: case DType::i64: return 8;
    case DType::b8: case DType::u8: case DType::i8: return 1;
    case DType::i16: case DType::u16: case DType::f16: case DType::bf16: return 2;
  }
  return 0;
}

Shape::Shape(std::initializer_list<int64_t> dims) {
  if (dims.size() > kMaxDims) throw ShapeError("Shape: more than 8 dimensions");
  for (int64_t d : dims) dim[ndim++] = d;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dim[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (ndim != o.ndim) return false;
  for (int i = 0; i < ndim; ++i)
    if (dim[i] != o.dim[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(dim[i]);
  }
  return s + (ndim == 1 ? ",)" : ")");
}

// ---- attributes ----

namespace {
template <class V> const V& get_attr(const Attrs& a, const std::string& k, const char* op, const char* kind) {
  auto it = a.values.find(k);
  if (it == a.values.end()) throw ShapeError(format_error(op, "missing attribute '%s'", k.c_str()));
  if (!std::holds_alternative<V>(it->second))
    throw ShapeError(format_error(op, "attribute '%s' must be %s", k.c_str(), kind));
  return std::get<V>(it->second);
}
}  // namespace

int64_t Attrs::i(const std::string& k, const char* op) const { return get_attr<int64_t>(*this, k, op, "an int"); }
int64_t Attrs::i(const std::string& k, int64_t dflt) const { return has(k) ? i(k, "attrs") : dflt; }
double Attrs::f(const std::string& k, const char* op) const {
  auto it = values.find(k);
  if (it != values.end() && std::holds_alternative<int64_t>(it->second)) return double(std::get<int64_t>(it->second));
  return get_attr<double>(*this, k, op, "a float");
}
double Attrs::f(const std::string& k, double dflt) const { return has(k) ? f(k, "attrs") : dflt; }
const std::string& Attrs::s(const std::string& k, const char* op) const {
  return get_attr<std::string>(*this, k, op, "a string");
}
const std::vector<int64_t>& Attrs::ints(const std::string& k, const char* op) const {
  return get_attr<std::vector<int64_t>>(*this, k, op, "a list of ints");
}

// ---- builder checks ----

void expect_arity(const KernelCall& c, size_t n_in, size_t n_out) {
  if (c.in.size() != n_in || c.out.size() != n_out)
    throw ShapeError(format_error(c.kernel.c_str(), "expected %zu inputs and %zu outputs, got %zu and %zu", n_in,
                                  n_out, c.in.size(), c.out.size()));
}

void expect_dtype(const KernelCall& c, const Operand& o, DType dt, const char* what) {
  if (o.dtype != dt)
    throw DTypeError(format_error(c.kernel.c_str(), "%s must be %s, got %s", what, dtype_name(dt), dtype_name(o.dtype)));
}

void expect_same_dtype(const KernelCall& c) {
  const Operand& first = c.in.empty() ? c.out.at(0) : c.in[0];
  for (const auto* list : {&c.in, &c.out})
    for (const Operand& o : *list)
      if (o.dtype != first.dtype)
        throw DTypeError(format_error(c.kernel.c_str(), "operands must share one dtype, got %s and %s",
                                      dtype_name(first.dtype), dtype_name(o.dtype)));
}

const char* expect_uniform(const KernelCall& c, size_t n_in, size_t n_out) {
  expect_arity(c, n_in, n_out);
  expect_same_dtype(c);
  return c.kernel.c_str();
}

}  // namespace pg
