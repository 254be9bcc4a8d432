// 2-D max and average pooling, NHWC, with their gradients, by direct loops.
//
// Layouts, all contiguous row-major: x [N, H, W, C], y [N, OH, OW, C]. Output position (oh, ow)
// pools the window of ksize [kh, kw] whose top-left input position is (oh * sh - pad_top,
// ow * sw - pad_left). Positions outside the input are padding: they never win a max (they act as
// -inf) and are not counted by the average (TensorFlow's AvgPool divides by the number of valid
// positions in each window). Python computes pad_top/pad_left (TensorFlow's SAME or VALID rule);
// the builders check that every window holds at least one input position.
//
// Work is split over output rows (forward, average backward) or over images (max backward), and
// each output element is computed in a fixed order, so results do not depend on the thread count.
// Aliasing: no output may share memory with an input.
//
// The builders' attribute "impl" picks these kernels ("direct") or oneDNN's (pool_onednn.cc,
// float32 only; "auto" uses them for float32 where they serve the call); these stay the reference,
// and oneDNN's results keep their max rule.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/impl.h"
#include "kernels/pool.h"
#include "pg/parallel.h"
#include "pg/scratch.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 16384;  // elements read per parallel chunk

// Grain in output rows for loops that read a window per output element.
int64_t line_grain(const PoolGeom& g) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.ow * g.kh * g.kw * g.c)); }

// The max rule shared by forward and backward: v replaces the best m when it is larger, or when it
// is the first NaN; so the FIRST maximum in scan order wins, and a NaN, once met, stays.
// Written with & and | rather than && and || so that the loops over channels vectorize.
template <class T> bool beats(T v, T m) { return (v > m) | ((v != v) & (m == m)); }

// One output row of max_pool_fwd: y's line (n, oh) of g.ow windows.
template <class T>
__attribute__((always_inline)) inline void max_pool_line(const T* x, T* y, const PoolGeom& g, int64_t line) {
  const int64_t n = line / g.oh, oh = line % g.oh, C = g.c;
  const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh);
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    T* out = y + (line * g.ow + ow) * C;
    const int64_t w0 = g.col_lo(ow), w1 = g.col_hi(ow);
    const T* first = x + ((n * g.h + h0) * g.w + w0) * C;
    std::copy(first, first + C, out);
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = ih == h0 ? w0 + 1 : w0; iw < w1; ++iw) {
        const T* in = x + ((n * g.h + ih) * g.w + iw) * C;
        for (int64_t c = 0; c < C; ++c) out[c] = beats(in[c], out[c]) ? in[c] : out[c];
      }
  }
}

// The float32 lines, compiled also for AVX2 and AVX-512 (picked at load time): the channel loop's
// compare-and-select is then 8 or 16 lanes wide, where the baseline's is 4.
__attribute__((target_clones("avx512f", "avx2", "default"))) void max_pool_lines(const float* x, float* y,
                                                                                 const PoolGeom& g, int64_t lo,
                                                                                 int64_t hi) {
  for (int64_t line = lo; line < hi; ++line) max_pool_line(x, y, g, line);
}
void max_pool_lines(const double* x, double* y, const PoolGeom& g, int64_t lo, int64_t hi) {
  for (int64_t line = lo; line < hi; ++line) max_pool_line(x, y, g, line);
}

}  // namespace

// y[n, oh, ow, c] = max of x[n, ih, iw, c] over the valid positions (ih, iw) of the window.
// A NaN in the window gives NaN. One image's rows split over the OpenMP threads, as the convolutions
// around it run: right after one, those threads still spin (GOMP_SPINCOUNT), where pygrad's pool
// helper has to be woken (Inception v3's 147x147x64 pool at batch 1 in a plan: one thread's time
// on two). Each row is computed alike either way.
template <class T> void max_pool_fwd(ConstView<T> x, View<T> y, const PoolGeom& g) {
  const int64_t lines = g.n * g.oh, grain = line_grain(g);
  const int threads = get_num_threads();
  if (g.n == 1 && threads > 1 && !in_parallel_loop() && lines >= 2 * grain) {
    const int64_t chunks = std::min<int64_t>(threads, lines / grain);
#pragma omp parallel for num_threads(int(chunks)) schedule(static, 1)
    for (int64_t k = 0; k < chunks; ++k)
      max_pool_lines(x.data, y.data, g, lines * k / chunks, lines * (k + 1) / chunks);
    return;
  }
  parallel_for(lines, grain, [&](int64_t lo, int64_t hi) { max_pool_lines(x.data, y.data, g, lo, hi); });
}

// out[c] = d[c] where the window's maximum of channel c is at offset at + c (where[c]), else 0: a
// mask of d's bits (no branch to mispredict, and an Inf or NaN in d stays where it belongs). Relu:
// also 0 where x[c] (the input there, a relu's output) is not above 0, as ReluGrad(x, dx) zeroes it.
template <bool Relu, class T>
void write_if_max(int64_t n, T* __restrict out, const T* __restrict d, const int32_t* __restrict where, int32_t at,
                  const T* __restrict x) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  for (int64_t c = 0; c < n; ++c) {
    U bits;
    std::memcpy(&bits, d + c, sizeof bits);
    bits &= U(0) - U((where[c] - at == int32_t(c)) & (!Relu || x[c] > T(0)));
    std::memcpy(out + c, &bits, sizeof bits);
  }
}

// dx[n, ih, iw, c] = sum of dy[n, oh, ow, c] over the windows whose FIRST maximum (in row-major scan
// order of the window, as TensorFlow's MaxPoolGrad) is at (ih, iw); zero elsewhere. The maxima are
// recomputed from x with the forward's rule, for all channels of a window at once (the per-channel
// best value and its offset in the image, an int32 so that the loop vectorizes, sit in thread
// scratch); y is only checked for its shape by the builder, which also bounds the image size.
// Windows that tile the input (2x2, stride 2, say) write each dx element once: dy where it is the
// window's maximum, else zero; otherwise dx is zeroed, then each window adds to its maximum.
// Relu (windows that tile only): x is a relu's output and dx goes on to its gradient, ReluGrad(x,
// dx), which this applies as it writes dx (the fusion pass's max_pool_bwd with relu=1).
template <bool Relu, class T> void max_pool_bwd(ConstView<T> x, ConstView<T> dy, View<T> dx, const PoolGeom& g) {
  const int64_t image = g.h * g.w * g.c, work = std::max<int64_t>(1, g.oh * g.ow * g.kh * g.kw * g.c);
  const bool tiles = g.tiles();
  parallel_for(g.n, std::max<int64_t>(1, kGrain / work), [&](int64_t lo, int64_t hi) {
    const int64_t C = g.c;  // a local: the stores to `where` could alias g.c
    T* best = thread_scratch<T>(C);
    int32_t* where = thread_scratch<int32_t>(C);
    for (int64_t n = lo; n < hi; ++n) {
      const T* xn = x.data + n * image;
      T* dxn = dx.data + n * image;
      if (!tiles) std::fill(dxn, dxn + image, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t w0 = g.col_lo(ow), w1 = g.col_hi(ow);
          const int32_t first = int32_t((h0 * g.w + w0) * C);
          for (int64_t c = 0; c < C; ++c) {
            best[c] = xn[first + c];
            where[c] = first + int32_t(c);
          }
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = ih == h0 ? w0 + 1 : w0; iw < w1; ++iw) {
              const int32_t at = int32_t((ih * g.w + iw) * C);
              const T* in = xn + at;
              for (int64_t c = 0; c < C; ++c) {
                const bool wins = beats(in[c], best[c]);
                best[c] = wins ? in[c] : best[c];
                where[c] = wins ? at + int32_t(c) : where[c];
              }
            }
          const T* d = dy.data + ((n * g.oh + oh) * g.ow + ow) * g.c;
          if (tiles) {
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) {
                const int32_t at = int32_t((ih * g.w + iw) * C);
                write_if_max<Relu>(C, dxn + at, d, where, at, xn + at);
              }
          } else {
            for (int64_t c = 0; c < C; ++c) dxn[where[c]] += d[c];
          }
        }
      }
    }
  });
}

// y[n, oh, ow, c] = the sum of x[n, ih, iw, c] over the valid positions of the window, divided by
// their count.
template <class T> void avg_pool_fwd(ConstView<T> x, View<T> y, const PoolGeom& g) {
  parallel_for(g.n * g.oh, line_grain(g), [&](int64_t lo, int64_t hi) {
    for (int64_t line = lo; line < hi; ++line) {
      const int64_t n = line / g.oh, oh = line % g.oh;
      const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        T* out = y.data + (line * g.ow + ow) * g.c;
        const int64_t w0 = g.col_lo(ow), w1 = g.col_hi(ow);
        std::fill(out, out + g.c, T(0));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) {
            const T* in = x.data + ((n * g.h + ih) * g.w + iw) * g.c;
            for (int64_t c = 0; c < g.c; ++c) out[c] += in[c];
          }
        const T count = T((h1 - h0) * (w1 - w0));
        for (int64_t c = 0; c < g.c; ++c) out[c] /= count;
      }
    }
  });
}

// dx[n, ih, iw, c] = sum over the windows (oh, ow) holding (ih, iw) of dy[n, oh, ow, c] / count(oh, ow),
// gathered per input element in increasing (oh, ow). dx's shape is the forward input's.
template <class T> void avg_pool_bwd(ConstView<T> dy, View<T> dx, const PoolGeom& g) {
  // Output rows whose window holds input row i: oh * sh - pt <= i < oh * sh - pt + kh.
  auto first_out = [](int64_t i, int64_t pad, int64_t k, int64_t s) {
    const int64_t t = i + pad - k + 1;
    return t <= 0 ? int64_t{0} : (t + s - 1) / s;
  };
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.w * g.c * g.kh * g.kw / (g.sh * g.sw)));
  parallel_for(g.n * g.h, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t line = lo; line < hi; ++line) {
      const int64_t n = line / g.h, ih = line % g.h;
      const int64_t oh0 = first_out(ih, g.pt, g.kh, g.sh), oh1 = std::min(g.oh, (ih + g.pt) / g.sh + 1);
      for (int64_t iw = 0; iw < g.w; ++iw) {
        T* out = dx.data + (line * g.w + iw) * g.c;
        std::fill(out, out + g.c, T(0));
        const int64_t ow0 = first_out(iw, g.pl, g.kw, g.sw), ow1 = std::min(g.ow, (iw + g.pl) / g.sw + 1);
        for (int64_t oh = oh0; oh < oh1; ++oh)
          for (int64_t ow = ow0; ow < ow1; ++ow) {
            const T scale = T(1) / T((g.row_hi(oh) - g.row_lo(oh)) * (g.col_hi(ow) - g.col_lo(ow)));
            const T* d = dy.data + ((n * g.oh + oh) * g.ow + ow) * g.c;
            for (int64_t c = 0; c < g.c; ++c) out[c] += d[c] * scale;
          }
      }
    }
  });
}

// ---- builders ----

namespace {

// Checks x and y (the forward input and output shapes, whichever operands hold them), the dtypes
// and the attributes ksize [kh, kw], strides [sh, sw], pad_top and pad_left.
PoolGeom check_pool_call(const KernelCall& c, const Shape& x, const Shape& y) {
  const char* op = c.kernel.c_str();
  expect_same_dtype(c);
  PG_CHECK(x.ndim == 4 && y.ndim == 4, op, "input and output must be 4-D (NHWC), got input: %s and output: %s",
           x.str().c_str(), y.str().c_str());
  PG_CHECK(y[0] == x[0] && y[3] == x[3], op, "output must be [%lld, ?, ?, %lld] like input %s, got %s",
           (long long)x[0], (long long)x[3], x.str().c_str(), y.str().c_str());
  const std::vector<int64_t>& k = c.attrs.ints("ksize", op);
  const std::vector<int64_t>& s = c.attrs.ints("strides", op);
  PG_CHECK(k.size() == 2 && k[0] >= 1 && k[1] >= 1, op, "ksize must be two positive ints [kh, kw]");
  PG_CHECK(s.size() == 2 && s[0] >= 1 && s[1] >= 1, op, "strides must be two positive ints [sh, sw]");
  PoolGeom g{x[0], x[1], x[2], x[3], y[1], y[2], k[0], k[1], s[0], s[1], c.attrs.i("pad_top", op),
             c.attrs.i("pad_left", op)};
  // Every window holds an input position: it starts before the input ends and ends after it starts.
  PG_CHECK(g.pt >= 0 && g.pt < g.kh && (g.oh == 0 || (g.h > 0 && (g.oh - 1) * g.sh - g.pt < g.h)), op,
           "pad_top %lld and %lld output rows do not fit input height %lld with window height %lld, stride %lld",
           (long long)g.pt, (long long)g.oh, (long long)g.h, (long long)g.kh, (long long)g.sh);
  PG_CHECK(g.pl >= 0 && g.pl < g.kw && (g.ow == 0 || (g.w > 0 && (g.ow - 1) * g.sw - g.pl < g.w)), op,
           "pad_left %lld and %lld output columns do not fit input width %lld with window width %lld, stride %lld",
           (long long)g.pl, (long long)g.ow, (long long)g.w, (long long)g.kw, (long long)g.sw);
  return g;
}

void expect_same_shape(const char* op, const char* what, const Shape& got, const char* like, const Shape& want) {
  PG_CHECK(got == want, op, "%s must have the shape of %s %s, got %s", what, like, want.str().c_str(),
           got.str().c_str());
}

// The implementation (kernels/impl.h): "direct" runs the kernels above, "onednn" oneDNN's
// (pool_onednn.cc), "auto" oneDNN for float32 where it serves the call, but the direct kernel for a
// strided max forward: it needs no check for NaN after it, and splits even one image over the
// threads by rows, so it is the faster there (bench_kernels' max_pool_fwd cases: ResNet-50's first
// pool and its shortcuts' 1x1 subsample, Deep MNIST's pools). The direct max backward is too where
// the windows tile the input, writing dx once (max_pool_bwd/pool1 and pool2: one pass over x
// against oneDNN's forward, its NaN check and its backward). oneDNN's stays the faster for
// overlapping windows with stride 1, and for the average (avg_pool_fwd/inception_17x17).
Step pick_impl(const KernelCall& c, PoolPass pass, const PoolGeom& g, Step direct_step) {
  const bool direct_faster = (pass == PoolPass::max_forward && (g.sh > 1 || g.sw > 1)) ||
                             (pass == PoolPass::max_backward && g.tiles());
  return choose_impl(
      c, "direct", direct_step, [&] { return onednn_pool_step(pass, g, c.in, c.out[0], direct_step); },
      direct_faster);
}

}  // namespace

void direct_max_pool_fwd(const float* x, float* y, const PoolGeom& g) {
  max_pool_fwd<float>(ConstView<float>(x, Shape{g.n, g.h, g.w, g.c}), View<float>{y, Shape{g.n, g.oh, g.ow, g.c}}, g);
}

void direct_max_pool_bwd(const float* x, const float* dy, float* dx, const PoolGeom& g) {
  max_pool_bwd<false, float>(ConstView<float>(x, Shape{g.n, g.h, g.w, g.c}),
                             ConstView<float>(dy, Shape{g.n, g.oh, g.ow, g.c}), View<float>{dx, Shape{g.n, g.h, g.w, g.c}},
                             g);
}

Step build_max_pool_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  const PoolGeom g = check_pool_call(c, x.shape, y.shape);
  return pick_impl(c, PoolPass::max_forward, g, dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { max_pool_fwd<T>(cview<T>(f, x), view<T>(f, y), g); };
  }));
}

Step build_max_pool_bwd(const KernelCall& c) {
  expect_arity(c, 3, 1);
  const Operand x = c.in[0], y = c.in[1], dy = c.in[2], dx = c.out[0];
  const PoolGeom g = check_pool_call(c, x.shape, y.shape);
  expect_same_shape(c.kernel.c_str(), "dy", dy.shape, "y", y.shape);
  expect_same_shape(c.kernel.c_str(), "dx", dx.shape, "x", x.shape);
  PG_CHECK(g.h * g.w * g.c < (int64_t{1} << 31), c.kernel.c_str(),
           "images of 2^31 elements or more are not supported, got input %s", x.shape.str().c_str());
  if (c.attrs.i("relu", int64_t{0}) != 0) {  // the direct kernel alone, where it writes dx once
    PG_CHECK(g.tiles(), c.kernel.c_str(), "relu=1 needs windows that tile the input (no padding, ksize == strides)");
    return dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
      using T = decltype(t);
      return [=](Frame& f) { max_pool_bwd<true, T>(cview<T>(f, x), cview<T>(f, dy), view<T>(f, dx), g); };
    });
  }
  return pick_impl(c, PoolPass::max_backward, g, dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { max_pool_bwd<false, T>(cview<T>(f, x), cview<T>(f, dy), view<T>(f, dx), g); };
  }));
}

Step build_avg_pool_fwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const Operand x = c.in[0], y = c.out[0];
  const PoolGeom g = check_pool_call(c, x.shape, y.shape);
  return pick_impl(c, PoolPass::avg_forward, g, dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { avg_pool_fwd<T>(cview<T>(f, x), view<T>(f, y), g); };
  }));
}

Step build_avg_pool_bwd(const KernelCall& c) {
  expect_arity(c, 1, 1);
  const Operand dy = c.in[0], dx = c.out[0];
  const PoolGeom g = check_pool_call(c, dx.shape, dy.shape);
  return pick_impl(c, PoolPass::avg_backward, g, dispatch_float(dy.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { avg_pool_bwd<T>(cview<T>(f, dy), view<T>(f, dx), g); };
  }));
}

}  // namespace pg
