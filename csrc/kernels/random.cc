// Random numbers from Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
// a counter-based generator: element i of a draw depends only on (key, counter + i), so a draw
// is the same for any thread count, and the generator's whole state is one int64 counter that
// the session keeps like a variable.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>

#include "pg/parallel.h"
#include "pg/scratch.h"
#include "runtime/kernel.h"

namespace pg {

namespace {

struct Philox {
  uint32_t k0, k1;
  // Four 32-bit random words for counter (c0, c1, c2, c3).
  void operator()(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t out[4]) const {
    uint32_t key0 = k0, key1 = k1;
    for (int r = 0; r < 10; ++r) {
      const uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
      const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ key0, n2 = uint32_t(p0 >> 32) ^ c3 ^ key1;
      c1 = uint32_t(p1);
      c3 = uint32_t(p0);
      c0 = n0;
      c2 = n2;
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
  }
};

// Uniform in [0, 1) as TF's Uint32ToFloat / Uint64ToDouble make it: the 23 (52) low bits of one word
// (two words) as the mantissa of a number in [1, 2), minus 1. With one bit fewer than the type holds,
// keep_prob + u stays below keep_prob + 1 in the type's arithmetic (dropout's floor(1.0 + u) is 1).
template <class T> T uniform01(const uint32_t* w);
template <> float uniform01<float>(const uint32_t* w) { return float(w[0] & 0x7fffffu) * (1.0f / 8388608.0f); }
template <> double uniform01<double>(const uint32_t* w) {
  const uint64_t bits = (uint64_t(w[0]) << 32 | w[1]) & ((uint64_t(1) << 52) - 1);
  return double(bits) * (1.0 / 4503599627370496.0);
}

// A standard normal from four words (Box-Muller on two uniforms in (0, 1]).
template <class T> T normal(const uint32_t* w) {
  const double u1 = 1.0 - uniform01<double>(w), u2 = uniform01<double>(w + 2);
  return T(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace

enum class Distribution { uniform, normal, truncated_normal };

// y[i] = a draw of `dist` for element i: uniform in [0, 1), standard normal, or standard normal
// redrawn until |x| <= 2 (TF's truncated_normal). A uniform float takes one of the four words of a
// Philox block (a double two), so element i is word i % per of block (base + i / per, 0); a normal
// takes a whole block: element i uses blocks (base + i, attempt). The caller advances the counter
// by y.size() after the draw, so later draws never reuse a block.
template <class T> void random_fwd(Distribution dist, uint32_t seed0, uint32_t seed1, int64_t base, View<T> y) {
  const Philox philox{seed0, seed1};
  if (dist == Distribution::uniform) {
    constexpr int64_t per = 4 / (sizeof(T) / sizeof(float));  // draws per block
    parallel_for(y.size(), 1 << 14, [&](int64_t b, int64_t e) {
      uint32_t w[4];
      for (int64_t i = b; i < e; ++i) {
        const int64_t word = i % per;
        if (word == 0 || i == b) {
          const uint64_t c = uint64_t(base + i / per);
          philox(uint32_t(c), uint32_t(c >> 32), 0, 0x5eedu, w);
        }
        y.data[i] = uniform01<T>(w + word * (4 / per));
      }
    });
    return;
  }
  parallel_for(y.size(), 1 << 14, [&](int64_t b, int64_t e) {
    uint32_t w[4];
    for (int64_t i = b; i < e; ++i) {
      const uint64_t c = uint64_t(base + i);
      for (uint32_t attempt = 0;; ++attempt) {
        philox(uint32_t(c), uint32_t(c >> 32), attempt, 0x5eedu, w);
        const T x = normal<T>(w);
        if (dist == Distribution::normal || std::fabs(x) <= T(2)) {
          y.data[i] = x;
          break;
        }
      }
    }
  });
}

Step build_random_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const char* op = "random_fwd";
  const Operand counter = c.in[0], y = c.out[0];
  expect_dtype(c, counter, DType::i64, "the counter");
  PG_CHECK(counter.shape.numel() == 1, op, "the counter must hold one value, got shape %s", counter.shape.str().c_str());
  const std::string& name = c.attrs.s("distribution", op);
  Distribution dist;
  if (name == "uniform")
    dist = Distribution::uniform;
  else if (name == "normal")
    dist = Distribution::normal;
  else if (name == "truncated_normal")
    dist = Distribution::truncated_normal;
  else
    throw ShapeError(format_error(op, "unknown distribution '%s'", name.c_str()));
  const uint32_t s0 = uint32_t(c.attrs.i("seed", op)), s1 = uint32_t(c.attrs.i("seed2", op));
  return dispatch_float(y.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      int64_t* ctr = view<int64_t>(f, counter).data;
      random_fwd<T>(dist, s0, s1, *ctr, view<T>(f, y));
      *ctr += y.shape.numel();
    };
  });
}

// ---- candidate sampling (TF's range_sampler.cc: LogUniformSampler, UniformSampler) ----
// sampled[k] for k < num_sampled, drawn from [0, range_max): log-uniform (Zipfian) with
// P(c) = log((c + 2) / (c + 1)) / log(range_max + 1), sampled as floor(exp(u * log(range_max + 1))) - 1,
// or uniform with P(c) = 1 / range_max. unique: draws repeat until num_sampled distinct classes
// are found (rejection), counting the tries. Expected counts, TF's formula: P(c) * num_sampled
// when every draw was kept (always without unique); else 1 - (1 - P(c))^tries, computed as
// -expm1(tries * log1p(-P(c))).
// Draw t uses Philox counter base + t; the counter advances by the number of tries.
namespace {
double sampler_probability(bool log_uniform, int64_t range_max, double log_range, int64_t c) {
  return log_uniform ? std::log((double(c) + 2.0) / (double(c) + 1.0)) / log_range : 1.0 / double(range_max);
}
}  // namespace

Step build_candidate_sampler(const KernelCall& c) {
  // in: counter, true_classes [batch, num_true] int64; out: sampled [n] int64,
  // true_expected [batch, num_true] float32, sampled_expected [n] float32
  expect_arity(c, 2, 3);
  const char* op = "candidate_sampler";
  const Operand counter = c.in[0], true_classes = c.in[1], sampled = c.out[0], true_exp = c.out[1],
                sampled_exp = c.out[2];
  expect_dtype(c, counter, DType::i64, "the counter");
  expect_dtype(c, true_classes, DType::i64, "true_classes");
  expect_dtype(c, sampled, DType::i64, "sampled_candidates");
  expect_dtype(c, true_exp, DType::f32, "true_expected_count");
  expect_dtype(c, sampled_exp, DType::f32, "sampled_expected_count");
  const std::string& kind = c.attrs.s("sampler", op);
  PG_CHECK(kind == "log_uniform" || kind == "uniform", op, "unknown sampler '%s'", kind.c_str());
  const bool log_uniform = kind == "log_uniform", unique = c.attrs.i("unique", op) != 0;
  const int64_t range_max = c.attrs.i("range_max", op), n = sampled.shape.numel();
  PG_CHECK(range_max > 0, op, "range_max must be positive, got %lld", (long long)range_max);
  PG_CHECK(!unique || n <= range_max, op, "num_sampled %lld must not exceed range_max %lld when unique",
           (long long)n, (long long)range_max);
  PG_CHECK(true_exp.shape == true_classes.shape && sampled_exp.shape == sampled.shape, op,
           "the expected counts must have the shapes of true_classes %s and the samples %s",
           true_classes.shape.str().c_str(), sampled.shape.str().c_str());
  const uint32_t s0 = uint32_t(c.attrs.i("seed", op)), s1 = uint32_t(c.attrs.i("seed2", op));
  return [=](Frame& f) {
    const Philox philox{s0, s1};
    int64_t* ctr = view<int64_t>(f, counter).data;
    int64_t* out = view<int64_t>(f, sampled).data;
    const double log_range = std::log(double(range_max) + 1.0);
    std::vector<char> seen(unique ? size_t(range_max) : 0, 0);
    int64_t tries = 0, found = 0;
    uint32_t w[4];
    while (found < n) {
      const uint64_t ctr_t = uint64_t(*ctr + tries++);
      philox(uint32_t(ctr_t), uint32_t(ctr_t >> 32), 0, 0xca5du, w);
      const double u = uniform01<double>(w);
      int64_t v = log_uniform ? int64_t(std::exp(u * log_range)) - 1 : int64_t(u * double(range_max));
      v = std::min(std::max<int64_t>(v, 0), range_max - 1);
      if (unique) {
        if (seen[size_t(v)]) continue;
        seen[size_t(v)] = 1;
      }
      out[found++] = v;
    }
    *ctr += tries;
    auto expected = [&](int64_t cls) {  // TF's ExpectedCountHelper, in float as TF computes it
      const float p = float(sampler_probability(log_uniform, range_max, log_range, cls));
      return tries == n ? p * float(n) : -std::expm1(float(tries) * std::log1p(-p));
    };
    const int64_t* tc = cview<int64_t>(f, true_classes).data;
    float* te = view<float>(f, true_exp).data;
    for (int64_t i = 0; i < true_classes.shape.numel(); ++i) te[i] = expected(tc[i]);
    float* se = view<float>(f, sampled_exp).data;
    for (int64_t k = 0; k < n; ++k) se[k] = expected(out[k]);
  };
}

// ---- tf.random_shuffle and tf.multinomial, on the same generator and counter ----

// y = x with its rows (slices along dimension 0, `inner` elements each) in a random order: a
// Fisher-Yates shuffle whose step i swaps row i with a row in [i, n) drawn from counter base + i.
// The caller advances the counter by n. y must not alias x.
template <class T> void random_shuffle(ConstView<T> x, int64_t n, int64_t inner, uint32_t s0, uint32_t s1,
                                       int64_t base, View<T> y) {
  std::memcpy(y.data, x.data, sizeof(T) * size_t(n * inner));
  const Philox philox{s0, s1};
  uint32_t w[4];
  for (int64_t i = 0; i + 1 < n; ++i) {
    const uint64_t c = uint64_t(base + i);
    philox(uint32_t(c), uint32_t(c >> 32), 0, 0x5bfu, w);
    const uint64_t bits = (uint64_t(w[0]) << 32) | w[1];
    const int64_t j = i + int64_t(bits % uint64_t(n - i));
    if (j != i)
      for (int64_t k = 0; k < inner; ++k) std::swap(y.data[i * inner + k], y.data[j * inner + k]);
  }
}

Step build_random_shuffle(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const char* op = "random_shuffle";
  const Operand counter = c.in[0], x = c.in[1], y = c.out[0];
  expect_dtype(c, counter, DType::i64, "the counter");
  PG_CHECK(counter.shape.numel() == 1, op, "the counter must hold one value, got shape %s", counter.shape.str().c_str());
  PG_CHECK_DTYPE(x.dtype == y.dtype, op, "y must have the dtype of x (%s), got %s", dtype_name(x.dtype),
                 dtype_name(y.dtype));
  PG_CHECK(x.shape == y.shape, op, "y %s must have the shape of x %s", y.shape.str().c_str(), x.shape.str().c_str());
  const int64_t n = x.shape.ndim ? x.shape[0] : 1, inner = n ? x.shape.numel() / n : 0;
  const uint32_t s0 = uint32_t(c.attrs.i("seed", op)), s1 = uint32_t(c.attrs.i("seed2", op));
  return dispatch_storage(x.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) {
      int64_t* ctr = view<int64_t>(f, counter).data;
      random_shuffle<T>(cview<T>(f, x), n, inner, s0, s1, *ctr, view<T>(f, y));
      *ctr += n;
    };
  });
}

// y[b, s] = a class drawn with probabilities softmax(logits[b, :]): the inverse of the running
// sum of exp(logits - max) at a uniform draw, from counter base + b * samples + s. As TF's
// multinomial, a NaN or infinite logit has probability 0; a row with no finite logit is refused
// when the step runs (TF would return an index past the last class). The caller advances the
// counter by batch * samples.
template <class T, class O>
void multinomial(ConstView<T> logits, int64_t batch, int64_t classes, int64_t samples, uint32_t s0, uint32_t s1,
                 int64_t base, View<O> y) {
  for (int64_t b = 0; b < batch && samples; ++b) {
    const T* row = logits.data + b * classes;
    if (std::none_of(row, row + classes, [](T v) { return std::isfinite(double(v)); }))
      throw ShapeError(format_error("multinomial", "logits[%lld] has no finite value to draw from", (long long)b));
  }
  const Philox philox{s0, s1};
  parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
    double* cdf = thread_scratch<double>(std::max<int64_t>(1, classes));
    uint32_t w[4];
    for (int64_t b = lo; b < hi; ++b) {
      const T* row = logits.data + b * classes;
      double mx = -INFINITY, total = 0;
      for (int64_t k = 0; k < classes; ++k)
        if (std::isfinite(double(row[k]))) mx = std::max(mx, double(row[k]));
      for (int64_t k = 0; k < classes; ++k)
        cdf[k] = total += std::isfinite(double(row[k])) ? std::exp(double(row[k]) - mx) : 0.0;
      for (int64_t s = 0; s < samples; ++s) {
        const uint64_t c = uint64_t(base + b * samples + s);
        philox(uint32_t(c), uint32_t(c >> 32), 0, 0x3a3bu, w);
        const double u = uniform01<double>(w) * total;
        const int64_t k = std::upper_bound(cdf, cdf + classes, u) - cdf;
        y.data[b * samples + s] = O(std::min(k, classes - 1));
      }
    }
  });
}

Step build_multinomial(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const char* op = "multinomial";
  const Operand counter = c.in[0], logits = c.in[1], y = c.out[0];
  expect_dtype(c, counter, DType::i64, "the counter");
  PG_CHECK(counter.shape.numel() == 1, op, "the counter must hold one value, got shape %s", counter.shape.str().c_str());
  PG_CHECK(logits.shape.ndim == 2 && y.shape.ndim == 2 && y.shape[0] == logits.shape[0], op,
           "logits must be [batch, classes] and the output [batch, samples], got %s and %s",
           logits.shape.str().c_str(), y.shape.str().c_str());
  const int64_t batch = logits.shape[0], classes = logits.shape[1], samples = y.shape[1];
  PG_CHECK(classes > 0 || batch * samples == 0, op, "logits %s have no class to draw", logits.shape.str().c_str());
  const uint32_t s0 = uint32_t(c.attrs.i("seed", op)), s1 = uint32_t(c.attrs.i("seed2", op));
  return dispatch_float(logits.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    auto make = [&](auto otag) -> Step {
      using O = decltype(otag);
      return [=](Frame& f) {
        int64_t* ctr = view<int64_t>(f, counter).data;
        multinomial<T, O>(cview<T>(f, logits), batch, classes, samples, s0, s1, *ctr, view<O>(f, y));
        *ctr += batch * samples;
      };
    };
    if (y.dtype == DType::i32) return make(int32_t{});
    expect_dtype(c, y, DType::i64, "the output");
    return make(int64_t{});
  });
}

}  // namespace pg
