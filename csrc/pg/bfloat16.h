// bfloat16: a float32's sign, exponent and upper 7 mantissa bits (pg/view.h's BFloat16). The
// products pygrad/bfloat16.py routes to bfloat16 read such copies of their float32 operands.
#pragma once
#include <cstdint>
#include <cstring>

#include "pg/view.h"

namespace pg {

// x rounded to bfloat16 as AVX512-BF16's VCVTNEPS2BF16 rounds it: to nearest, ties to even;
// overflow to infinity; a NaN stays a NaN (made quiet); float32 subnormals become zero of their
// sign (the instruction and oneDNN's bfloat16 products take subnormals as zero).
inline BFloat16 to_bfloat16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0) return {uint16_t((u & 0x80000000u) >> 16)};
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {uint16_t(u >> 16)};
}

inline float from_bfloat16(BFloat16 h) {
  const uint32_t u = uint32_t(h.bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Whether oneDNN runs bfloat16 products on this CPU's own instructions (AVX512-BF16, or AMX), as
// oneDNN detects the CPU (ONEDNN_MAX_CPU_ISA can lower it); kernels/matmul_onednn.cc.
bool cpu_has_bfloat16();

// to_bfloat16 over n values, split over pygrad's threads (kernels/bfloat16.cc).
void to_bfloat16(const float* x, BFloat16* y, int64_t n);
// from_bfloat16 over n values, split over pygrad's threads.
void from_bfloat16(const BFloat16* x, float* y, int64_t n);

}  // namespace pg
