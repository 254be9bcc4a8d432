// Vectorized float32 exp, sigmoid and tanh over arrays (pg/vmath.h).
//
// exp is computed in double, eight lanes at a time, and rounded to float once: exp(x) = 2^n e^r
// with n = round(x / ln 2), r = x - n ln 2 (|r| <= ln 2 / 2, ln 2 in two parts), e^r by its Taylor
// polynomial of degree 11 (truncation error below 7e-15 relative) and 2^n put into the exponent
// bits. The double result is within about 1e-14 of the true value, so rounded to float it is the
// correctly rounded result except where the true value lies within that distance of a rounding
// boundary: the same float as glibc's expf (also correctly rounded there) for all but about one
// input in 10^7.
//
// sigmoid and tanh, the recurrent cells' activations, are computed in float, sixteen lanes at a
// time, on e = exp(-|x|) (or exp(-2|x|)) by the same reduction in float and Cephes' expf
// polynomial (degree 5 in r, relative error about 1e-7). sigmoid is 1 / (1 + e) for x >= 0 and
// e / (1 + e) below; tanh is (1 - e) / (1 + e) for |x| >= 0.625 (e <= 0.29: no cancellation) and
// Cephes' tanhf polynomial x + x^3 P(x^2) below. sigmoid is within 2 ulp of the correctly rounded
// value and tanh within 1 ulp (tests/test_vmath.py, 4 million inputs). In double, as exp, they took
// three times as long on AMD Zen 4, whose 512-bit units (two 256-bit halves) made the degree-11
// polynomial the bottleneck (docs/benchmarks.md, the LSTM).
//
// The loops are written on GCC's vector types and compiled three times (target_clones): for
// AVX-512 (one register per eight doubles or sixteen floats), AVX2 with FMA (two) and baseline
// x86-64 (four); the loader picks the one the CPU runs.
#include "pg/vmath.h"

#include <cstring>

namespace pg {
namespace {

typedef double D8 __attribute__((vector_size(64)));
typedef uint64_t U8 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));

#define PG_INLINE inline __attribute__((always_inline))

PG_INLINE D8 splat(double v) { return D8{v, v, v, v, v, v, v, v}; }

// e^x for x in [-110, 90] (no NaN): below, the float result is 0; above, inf.
PG_INLINE D8 exp_d8(D8 x) {
  const D8 shifter = splat(0x1.8p52);  // adding it rounds to an integer, kept in the low bits
  const D8 k = x * splat(0x1.71547652b82fep0) + shifter;  // x / ln 2 + shifter
  const D8 n = k - shifter;
  D8 r = x - n * splat(0x1.62e42fefa3800p-1);  // ln 2, high part (exact product for |n| < 2^10)
  r = r - n * splat(0x1.ef35793c76730p-45);    // ln 2, low part
  // e^r = sum r^i / i!, i <= 11, by Horner
  D8 p = splat(1.0 / 39916800);
  p = p * r + splat(1.0 / 3628800);
  p = p * r + splat(1.0 / 362880);
  p = p * r + splat(1.0 / 40320);
  p = p * r + splat(1.0 / 5040);
  p = p * r + splat(1.0 / 720);
  p = p * r + splat(1.0 / 120);
  p = p * r + splat(1.0 / 24);
  p = p * r + splat(1.0 / 6);
  p = p * r + splat(0.5);
  p = p * r + splat(1.0);
  p = p * r + splat(1.0);
  U8 bits;
  std::memcpy(&bits, &k, sizeof bits);
  bits = (bits + 1023) << 52;  // 2^n: n's low bits, biased, into the exponent field (mod 2^64)
  D8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

PG_INLINE D8 clamp(D8 x, double lo, double hi) {
  x = x < splat(lo) ? splat(lo) : x;
  return x > splat(hi) ? splat(hi) : x;
}

// Calls one(in, out) on each run of Lanes elements of x and y, the last 1 to Lanes - 1 elements
// through padded copies.
template <int Lanes, class One> PG_INLINE void by_lanes(const float* x, float* y, int64_t n, One one) {
  int64_t i = 0;
  for (; i + Lanes <= n; i += Lanes) one(x + i, y + i);
  if (i < n) {
    float in[Lanes] = {}, out[Lanes];
    std::memcpy(in, x + i, size_t(n - i) * sizeof(float));
    one(in, out);
    std::memcpy(y + i, out, size_t(n - i) * sizeof(float));
  }
}

// Applies f (D8 -> D8, on x widened to double) to x[0..n), rounding each result to float; a NaN
// input gives that NaN.
template <class F> PG_INLINE void map(const float* x, float* y, int64_t n, F f) {
  by_lanes<8>(x, y, n, [&](const float* in, float* out) {
    F8 v;
    std::memcpy(&v, in, sizeof v);
    const D8 d = __builtin_convertvector(v, D8);
    D8 r = f(d);
    r = d != d ? d : r;
    const F8 o = __builtin_convertvector(r, F8);
    std::memcpy(out, &o, sizeof o);
  });
}

typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));

PG_INLINE F16 fsplat(float v) { return F16{v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v}; }
PG_INLINE F16 abs16(F16 v) { return v < fsplat(0.0f) ? -v : v; }
PG_INLINE F16 exponent_as_float(I16 biased) {
  const I16 bits = biased << 23;
  F16 f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// e^t for t <= 0 in float (no NaN; below -104 the result is 0): e^r = 1 + r + r^2 P(r) with
// Cephes' expf coefficients, times 2^n as two normal powers of two (n >= -150 reaches the
// subnormal results).
PG_INLINE F16 exp_nonpositive(F16 t) {
  t = t < fsplat(-104.0f) ? fsplat(-104.0f) : t;
  const F16 shifter = fsplat(0x1.8p23f);
  const F16 k = t * fsplat(0x1.715476p0f) + shifter;  // t / ln 2 + shifter
  const F16 n = k - shifter;
  F16 r = t - n * fsplat(0.693359375f);  // ln 2, high part (exact product for |n| < 2^8)
  r = r - n * fsplat(-2.12194440e-4f);   // ln 2, low part
  F16 p = fsplat(1.9875691500e-4f);
  p = p * r + fsplat(1.3981999507e-3f);
  p = p * r + fsplat(8.3334519073e-3f);
  p = p * r + fsplat(4.1665795894e-2f);
  p = p * r + fsplat(1.6666665459e-1f);
  p = p * r + fsplat(5.0000001201e-1f);
  p = p * (r * r) + r + fsplat(1.0f);
  const I16 ni = __builtin_convertvector(n, I16);
  const I16 half = ni >> 1;
  return p * exponent_as_float(half + 127) * exponent_as_float(ni - half + 127);
}

// map's float version, sixteen lanes at a time: y[i] = f(x[i]), a NaN input giving that NaN.
template <class F> PG_INLINE void map16(const float* x, float* y, int64_t n, F f) {
  by_lanes<16>(x, y, n, [&](const float* in, float* out) {
    F16 v;
    std::memcpy(&v, in, sizeof v);
    F16 r = f(v);
    r = v != v ? v : r;
    std::memcpy(out, &r, sizeof r);
  });
}

}  // namespace

#define PG_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))

PG_CLONES void exp_f32(const float* x, float* y, int64_t n) {
  map(x, y, n, [](D8 d) { return exp_d8(clamp(d, -110.0, 90.0)); });
}

PG_CLONES void sigmoid_f32(const float* x, float* y, int64_t n) {
  map16(x, y, n, [](F16 v) {
    const F16 e = exp_nonpositive(-abs16(v));
    const F16 num = v < fsplat(0.0f) ? e : fsplat(1.0f);
    return num / (fsplat(1.0f) + e);
  });
}

PG_CLONES void tanh_f32(const float* x, float* y, int64_t n) {
  map16(x, y, n, [](F16 v) {
    const F16 ax = abs16(v);
    const F16 e = exp_nonpositive(fsplat(-2.0f) * ax);
    const F16 large = (fsplat(1.0f) - e) / (fsplat(1.0f) + e);
    const F16 z = ax * ax;  // Cephes' tanhf below 0.625
    F16 p = fsplat(-5.70498872745e-3f);
    p = p * z + fsplat(2.06390887954e-2f);
    p = p * z + fsplat(-5.37397155531e-2f);
    p = p * z + fsplat(1.33314422036e-1f);
    p = p * z + fsplat(-3.33332819422e-1f);
    const F16 t = ax < fsplat(0.625f) ? p * z * ax + ax : large;
    return v < fsplat(0.0f) ? -t : (v == fsplat(0.0f) ? v : t);  // tanh(-0) = -0
  });
}

}  // namespace pg
