// to_bfloat16: a float32 array's bfloat16 copy (pg/bfloat16.h), the operand of a product the plan
// runs in bfloat16 (pygrad/bfloat16.py). Memory-bound: one read, a half-size write, the loops
// compiled for AVX-512 and AVX2 as well (GCC vectorizes the integer rounding).
#include <immintrin.h>

#include "pg/bfloat16.h"
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 32768;  // values per parallel chunk

#define PG_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))

PG_CLONES void narrow_loop(const float* x, BFloat16* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_bfloat16(x[i]);
}

// VCVTNEPS2BF16, which rounds as to_bfloat16 does, 16 values at a time.
__attribute__((target("avx512f,avx512bf16"))) void narrow_bf16(const float* x, BFloat16* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), reinterpret_cast<const __m256i&>(h));
  }
  narrow_loop(x + i, y + i, n - i);
}

void narrow(const float* x, BFloat16* y, int64_t n) {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  if (has)
    narrow_bf16(x, y, n);
  else
    narrow_loop(x, y, n);
}

PG_CLONES void widen(const BFloat16* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = from_bfloat16(x[i]);
}

}  // namespace

void to_bfloat16(const float* x, BFloat16* y, int64_t n) {
  parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) { narrow(x + lo, y + lo, hi - lo); });
}

void from_bfloat16(const BFloat16* x, float* y, int64_t n) {
  parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) { widen(x + lo, y + lo, hi - lo); });
}

// in: x float32; out: y bfloat16 of x's shape. Attribute offset: x starts that many elements into its
// buffer (the rows of a product's operand that pygrad/dead_steps.py narrowed it to, matmul_fwd's
// b_offset); the plan makes sure the buffer holds them.
Step build_to_bfloat16(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const char* op = c.kernel.c_str();
  const Operand x = c.in[0], y = c.out[0];
  expect_dtype(c, x, DType::f32, "x");
  expect_dtype(c, y, DType::bf16, "y");
  PG_CHECK(y.shape == x.shape, op, "y must have the shape of x %s, got %s", x.shape.str().c_str(),
           y.shape.str().c_str());
  const int64_t offset = c.attrs.i("offset", int64_t{0});
  PG_CHECK(offset >= 0, op, "offset must be a nonnegative element count, got %lld", (long long)offset);
  return [x, y, offset](Frame& f) {
    to_bfloat16(static_cast<const float*>(f.ptr[x.buffer]) + offset, static_cast<BFloat16*>(f.ptr[y.buffer]),
                x.shape.numel());
  };
}

}  // namespace pg
