// Float32 weight gradients with fewer than 16 columns, c [m, n] = a^T op(b), n < 16: the gradient of
// a 10-class layer's weights (x^T dlogits, x [batch, m]). The general kernels (OpenBLAS's, oneDNN's)
// hold 16 columns of c in each AVX-512 register, so with 10 columns 6 of its 16 lanes idle; they run
// these at 35-50 GFLOP/s on one core of a 115 GFLOP/s peak. Here the lanes run along c's rows
// (a's columns) instead: c[i0..i0+32, j] is a sum over k of a's row segment times one element of b,
// an outer product with every lane busy, for 32 rows of c and all n columns at once (2n registers),
// and the block is then transposed into c. The next block's columns are prefetched, as a's rows are
// far apart. 784x10x100 (the softmax tutorial's weight gradient): 17 us with x in cache and 35 us
// from memory, against 19 and 45 us by OpenBLAS and 31 us by oneDNN (with x in cache; one thread).
// The summation order (p ascending) depends on the shape alone.
//
// The logits x W (n < 16, a not transposed) stay with the BLAS: a kernel taking dot products along
// k with every lane busy ran them no faster from memory, where a new batch comes from (33 us against
// OpenBLAS's 31 for 100x10x784).
//
// AVX-512 only: the kernels are compiled for it (function attributes) and run where the CPU has it;
// thin_sgemm returns false elsewhere, and for the shapes it does not serve, and gemm.h takes the BLAS.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "pg/gemm.h"

namespace pg {
namespace {

#define PG_AVX512 __attribute__((target("avx512f")))

// The mask of the first `count` of 16 lanes (none for count <= 0).
PG_AVX512 inline __mmask16 first_lanes(int64_t count) {
  return count <= 0 ? __mmask16(0) : count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1);
}

// c[i, j] for the `width` (<= 16 V) rows i0.. of c: sum over p < k of a[p, i] * b(p, j), a's rows at
// stride lda, b(p, j) = b[p * bp + j * bj].
template <int V, int N>
PG_AVX512 void outer_columns(const float* a, int64_t lda, const float* b, int64_t bp, int64_t bj, int64_t k,
                             int64_t width, float* c, int64_t ldc) {
  __m512 acc[V][N];
  __mmask16 mask[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    mask[v] = first_lanes(width - 16 * v);
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) acc[v][j] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p) {
    __m512 av[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      av[v] = _mm512_maskz_loadu_ps(mask[v], a + p * lda + 16 * v);
      _mm_prefetch(reinterpret_cast<const char*>(a + p * lda + 16 * (V + v)), _MM_HINT_T0);  // the next block
    }
    const float* bs = b + p * bp;
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) {
      const __m512 bb = _mm512_set1_ps(bs[j * bj]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[v][j] = _mm512_fmadd_ps(av[v], bb, acc[v][j]);
    }
  }
  alignas(64) float block[N][16 * V];
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm512_store_ps(&block[j][16 * v], acc[v][j]);
  for (int64_t l = 0; l < width; ++l)
    for (int j = 0; j < N; ++j) c[l * ldc + j] = block[j][l];
}

// c = a^T op(b) for N columns, 32 rows of c at a time (16 where 2N registers would not fit).
template <int N>
PG_AVX512 void thin(bool tb, int64_t m, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                    int64_t ldc) {
  constexpr int V = N <= 13 ? 2 : 1;
  const int64_t bp = tb ? 1 : ldb, bj = tb ? ldb : 1;
  for (int64_t i = 0; i < m; i += 16 * V)
    outer_columns<V, N>(a + i, lda, b, bp, bj, k, std::min<int64_t>(16 * V, m - i), c + i * ldc, ldc);
}

using ThinFn = void (*)(bool, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t);

template <size_t... N> constexpr auto thin_table(std::index_sequence<N...>) {
  return std::array<ThinFn, sizeof...(N)>{{(N == 0 ? nullptr : &thin<int(N)>)...}};
}

}  // namespace

bool thin_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                int64_t ldb, float* c, int64_t ldc) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  constexpr int64_t kMinRows = 16;
  if (!avx512 || !ta || n < 2 || n >= 16 || m < kMinRows || k < 1) return false;
  static constexpr auto table = thin_table(std::make_index_sequence<16>{});
  table[size_t(n)](tb, m, k, a, lda, b, ldb, c, ldc);
  return true;
}

}  // namespace pg
