// Matrix products through the BLAS (scipy-openblas32's cblas, symbols prefixed scipy_), split over
// pygrad's threads: the BLAS runs on one thread (set_num_threads), once per chunk.
#pragma once
#include <cblas.h>

#include <cstdint>
#include <type_traits>

#include "pg/bfloat16.h"
#include "pg/parallel.h"
#include "pg/scratch.h"

namespace pg {

// c [m, n] = op(a) @ op(b) by oneDNN on the calling thread (kernels/matmul_onednn.cc); false when
// oneDNN has no implementation but its reference one for these strides.
bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc);
// The same with bfloat16 a and b, accumulated in float32, on `threads` OpenMP threads.
bool onednn_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
                      const BFloat16* b, int64_t ldb, float* c, int64_t ldc, int threads = 1);
// c [m, n] = a^T op(b) for 2 to 15 columns and 16 rows or more, by AVX-512 kernels
// (kernels/thin_gemm.cc); false for other shapes (ta false among them) or where the CPU lacks AVX-512.
bool thin_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                int64_t ldb, float* c, int64_t ldc);

// A product with one row or one column is a matrix-vector product, bound by reading the matrix:
// the BLAS's gemv reads it at the memory's rate, its gemm at about half that (a [1, 4096] row
// times a [4096, 4096] matrix: 9.2 ms by sgemm, 3.0 ms by sgemv, one thread). Returns false for
// the other shapes. gemv is sgemv or dgemv.
template <class T, class Gemv>
bool blas_gemv(Gemv gemv, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
               int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 1) {  // c[0, :] = op(b)^T x, x = op(a)'s row (a column of a when ta)
    const int incx = ta ? int(lda) : 1;
    if (tb)
      gemv(CblasRowMajor, CblasNoTrans, int(n), int(k), T(1), b, int(ldb), a, incx, beta, c, 1);
    else
      gemv(CblasRowMajor, CblasTrans, int(k), int(n), T(1), b, int(ldb), a, incx, beta, c, 1);
    return true;
  }
  if (n == 1) {  // c[:, 0] = op(a) x, x = op(b)'s column (a row of b when tb)
    const int incx = tb ? 1 : int(ldb);
    gemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, int(ta ? k : m), int(ta ? m : k), T(1), a, int(lda), b, incx,
         beta, c, int(ldc));
    return true;
  }
  return false;
}

// Float32 weight gradients with fewer than 16 columns go to thin_sgemm, products with at least kOneDnnMinSide
// rows and columns and kOneDnnMinMacs multiply-adds to oneDNN, each faster there than the BLAS; the
// rest, and beta != 0, to the BLAS.
inline void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float beta, float* c, int64_t ldc) {
  constexpr int64_t kOneDnnMinSide = 32, kOneDnnMinMacs = int64_t{1} << 18;
  if (beta == 0.0f && ta && n < 16 && thin_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)) return;
  if (beta == 0.0f && m >= kOneDnnMinSide && n >= kOneDnnMinSide && m * n * k >= kOneDnnMinMacs &&
      onednn_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc))
    return;
  if (k > 0 && blas_gemv(scipy_cblas_sgemv, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
  scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                    int(k), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
inline void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                      const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (k > 0 && blas_gemv(scipy_cblas_dgemv, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
  scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                    int(k), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// A bfloat16 product (beta 0) by oneDNN; where oneDNN has only its reference kernel for it, a and b
// widened to float32 (exactly) in the calling thread's scratch and multiplied by the float32 route.
inline void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
                      const BFloat16* b, int64_t ldb, float /*beta*/, float* c, int64_t ldc) {
  if (onednn_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)) return;
  struct WideA;
  struct WideB;
  const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  float* wa = thread_scratch<float, WideA>(a_rows * a_cols);
  float* wb = thread_scratch<float, WideB>(b_rows * b_cols);
  for (int64_t i = 0; i < a_rows; ++i) from_bfloat16(a + i * lda, wa + i * a_cols, a_cols);
  for (int64_t i = 0; i < b_rows; ++i) from_bfloat16(b + i * ldb, wb + i * b_cols, b_cols);
  blas_gemm(ta, tb, m, n, k, wa, a_cols, wb, b_cols, 0.0f, c, ldc);
}

// c [m, n] = op(a) @ op(b) + beta * c, row-major; op(a) is [m, k] (a is [k, m] when ta), op(b) is
// [k, n]. A product of at least kParallelFlops is split into one block of c's rows per thread (of
// its columns when c is wider than tall), each a one-thread BLAS call; inside a parallel loop it
// is one call. The split depends on the shape and the thread count only. A bfloat16 product runs
// whole on oneDNN's OpenMP threads instead (where oneDNN serves it), which oneDNN splits by the
// thread count.
// a and b are T, c and beta C: the same type, or bfloat16 operands of a float32 product (beta 0).
template <class T, class C>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, C beta,
          C* c) {
  constexpr int64_t kParallelFlops = int64_t{1} << 19, kMinBlock = 8;
  const int threads = get_num_threads();
  if (threads <= 1 || in_parallel_loop() || m * n * k < kParallelFlops) {
    blas_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, n);
    return;
  }
  if constexpr (std::is_same_v<T, BFloat16>) {
    if (onednn_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, c, n, threads)) return;
  }
  if (m >= n) {
    parallel_for(m, kMinBlock, [&](int64_t lo, int64_t hi) {
      blas_gemm(ta, tb, hi - lo, n, k, a + (ta ? lo : lo * lda), lda, b, ldb, beta, c + lo * n, n);
    });
  } else {
    parallel_for(n, kMinBlock, [&](int64_t lo, int64_t hi) {
      blas_gemm(ta, tb, m, hi - lo, k, a, lda, b + (tb ? lo * ldb : lo), ldb, beta, c + lo, n);
    });
  }
}

}  // namespace pg
