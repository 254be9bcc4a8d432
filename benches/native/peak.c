/* The single-core float32 FMA peak, measured: independent chains of fused multiply-adds on vector
 * registers of a given width, timed on the calling thread. benches/common.py (fma_peak) compiles
 * this file when a benchmark starts, with the system's C compiler:
 *
 *   cc -O2 -march=native -shared -fPIC -o peak.so peak.c
 *
 * and calls peak_fma_seconds through ctypes for each width the compiler's target has (AVX-512:
 * 16 lanes, AVX2 + FMA: 8, FMA on SSE registers: 4, scalar fmaf: 1). FLOPs per call:
 * iterations * PEAK_CHAINS * lanes * 2 (an FMA is a multiply and an add).
 *
 * Why PEAK_CHAINS independent accumulators: an FMA's result is ready about 4 cycles after it
 * issues and a core issues up to 2 per cycle, so at least 8 chains must be in flight to keep both
 * units busy; 12 leave a margin and still fit the 16 registers of AVX2 next to the 2 constants.
 * Each chain computes acc = acc * a + b with a just below 1, which converges to b / (1 - a) = 0.1:
 * no overflow, no denormals, and the compiler cannot fold the loop away (the sums are returned).
 */
#include <math.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define PEAK_CHAINS 12

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Declares the PEAK_CHAINS accumulators c0..c11 of type T, each set to INIT(k). */
#define PEAK_DECLARE(T, INIT)                                                                     \
  T c0 = INIT(0), c1 = INIT(1), c2 = INIT(2), c3 = INIT(3), c4 = INIT(4), c5 = INIT(5),           \
    c6 = INIT(6), c7 = INIT(7), c8 = INIT(8), c9 = INIT(9), c10 = INIT(10), c11 = INIT(11)
/* One iteration: every chain takes one FMA(acc, a, b). */
#define PEAK_STEP(FMA)                                                                            \
  c0 = FMA(c0, a, b); c1 = FMA(c1, a, b); c2 = FMA(c2, a, b); c3 = FMA(c3, a, b);                 \
  c4 = FMA(c4, a, b); c5 = FMA(c5, a, b); c6 = FMA(c6, a, b); c7 = FMA(c7, a, b);                 \
  c8 = FMA(c8, a, b); c9 = FMA(c9, a, b); c10 = FMA(c10, a, b); c11 = FMA(c11, a, b)
/* Runs `iterations` steps; returns the elapsed seconds and stores the chains' sum in *sink. */
#define PEAK_RUN(FMA, ADD, REDUCE)                                                                \
  const double t0 = now_seconds();                                                                \
  for (long i = 0; i < iterations; ++i) {                                                         \
    PEAK_STEP(FMA);                                                                               \
  }                                                                                               \
  const double t1 = now_seconds();                                                                \
  c0 = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));                         \
  c0 = ADD(c0, ADD(ADD(c8, c9), ADD(c10, c11)));                                                  \
  *sink = REDUCE(c0);                                                                             \
  return t1 - t0

#define SCALAR_INIT(k) (1e-3f * (float)(k))
#define SCALAR_ADD(x, y) ((x) + (y))
#define SCALAR_REDUCE(x) (x)
static double run_scalar(long iterations, float* sink) {
  const float a = 0.999999f, b = 1e-7f;
  PEAK_DECLARE(float, SCALAR_INIT);
  PEAK_RUN(fmaf, SCALAR_ADD, SCALAR_REDUCE);
}

#if defined(__FMA__)
#define SSE_INIT(k) _mm_set1_ps(1e-3f * (float)(k))
static float sse_reduce(__m128 v) {
  float lanes[4];
  _mm_storeu_ps(lanes, v);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
static double run_sse(long iterations, float* sink) {
  const __m128 a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
  PEAK_DECLARE(__m128, SSE_INIT);
  PEAK_RUN(_mm_fmadd_ps, _mm_add_ps, sse_reduce);
}

#define AVX_INIT(k) _mm256_set1_ps(1e-3f * (float)(k))
static float avx_reduce(__m256 v) {
  float lanes[8], s = 0;
  _mm256_storeu_ps(lanes, v);
  for (int k = 0; k < 8; ++k) s += lanes[k];
  return s;
}
static double run_avx2(long iterations, float* sink) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  PEAK_DECLARE(__m256, AVX_INIT);
  PEAK_RUN(_mm256_fmadd_ps, _mm256_add_ps, avx_reduce);
}
#endif

#if defined(__AVX512F__)
#define AVX512_INIT(k) _mm512_set1_ps(1e-3f * (float)(k))
static double run_avx512(long iterations, float* sink) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  PEAK_DECLARE(__m512, AVX512_INIT);
  PEAK_RUN(_mm512_fmadd_ps, _mm512_add_ps, _mm512_reduce_add_ps);
}
#endif

/* The number of independent chains: FLOPs per call = iterations * peak_fma_chains() * lanes * 2. */
int peak_fma_chains(void) { return PEAK_CHAINS; }

/* Seconds taken by `iterations` steps of PEAK_CHAINS FMA chains on `lanes`-wide float32 vectors
 * (16, 8, 4 or 1); -1 when this build has no such width (the target lacks the instructions).
 * *sink receives the chains' sum, which callers may ignore. */
double peak_fma_seconds(int lanes, long iterations, float* sink) {
  switch (lanes) {
#if defined(__AVX512F__)
    case 16:
      return run_avx512(iterations, sink);
#endif
#if defined(__FMA__)
    case 8:
      return run_avx2(iterations, sink);
    case 4:
      return run_sse(iterations, sink);
#endif
    case 1:
      return run_scalar(iterations, sink);
    default:
      return -1.0;
  }
}
