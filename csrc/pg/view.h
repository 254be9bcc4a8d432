// Non-owning views over contiguous row-major buffers, and the dtype tag shared with Python.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

namespace pg {

constexpr int kMaxDims = 8;

// The dtypes the kernels know. The numbering is exported to Python by bind.cc. Every kernel that
// only moves or converts data takes the first ten (dispatch_storage); arithmetic takes the first
// five. bf16 is the plan's own: the bfloat16 copies of the operands of products that
// pygrad/bfloat16.py makes (pg/bfloat16.h), which only to_bfloat16 writes and the products read.
enum class DType : int { f32 = 0, f64 = 1, i32 = 2, i64 = 3, b8 = 4, u8 = 5, i8 = 6, i16 = 7, u16 = 8, f16 = 9, bf16 = 10 };
constexpr int kNumDTypes = 11;
const char* dtype_name(DType dt);
int64_t dtype_size(DType dt);

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::b8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<_Float16> { static constexpr DType value = DType::f16; };
struct BFloat16 {  // a bfloat16's bits: a float32's upper half
  uint16_t bits;
};
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::bf16; };

struct Shape {
  int ndim = 0;
  int64_t dim[kMaxDims] = {};

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  int64_t operator[](int i) const { return dim[i]; }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "(32, 784)"
};

// A contiguous row-major buffer of T with a shape. The caller owns the memory.
template <class T> struct View {
  T* data = nullptr;
  Shape shape;
  int64_t size() const { return shape.numel(); }
};

template <class T> struct ConstView {
  const T* data = nullptr;
  Shape shape;
  ConstView() = default;
  ConstView(const T* d, Shape s) : data(d), shape(s) {}
  ConstView(View<T> v) : data(v.data), shape(v.shape) {}  // NOLINT: views convert to const views
  int64_t size() const { return shape.numel(); }
};

}  // namespace pg
