// 2-D convolution, NHWC, as im2col plus BLAS gemm (pg/gemm.h).
//
// Layouts, all contiguous row-major: input x [N, H, W, C], filter w [KH, KW, C, O] (HWIO), output
// y [N, OH, OW, O]. Output position (oh, ow) reads the window whose top-left input position is
// (oh * sh - pad_top, ow * sw - pad_left); positions outside the input read as zero. Python computes
// pad_top/pad_left (TensorFlow's SAME or VALID rule); the bottom/right padding is whatever the
// output size implies, and the builders check that every window overlaps the input.
//
// The patch matrix of a set of images has one row per output position, m = (n, oh, ow), and one
// column per filter tap, k = (kh, kw, c): cols[m, k] = x[n, oh*sh - pt + kh, ow*sw - pl + kw, c].
// Its columns are ordered like the rows of w viewed as a [K, O] matrix (K = KH*KW*C), so
//   y = cols @ w,   dcols = dy @ w^T (then dx sums dcols back over the taps),   dw = cols^T @ dy.
// The batch is processed in chunks of whole images whose patch matrix fits 1 MB (or one image, if
// larger), held in a thread-local, grow-only scratch buffer. With one thread, or few chunks, the
// chunks run in order, im2col in parallel over image rows, the sum back (col2im) in parallel over
// images, and the gemm split over the threads (pg/gemm.h); with several threads and enough chunks, the
// threads share the chunks instead (see Chunking). The split depends on the shapes and the thread
// count alone, so for a given thread count results are deterministic; across thread counts they
// agree to rounding. When the patch matrix is the input itself (1x1 filter, stride 1, no padding;
// or a filter covering the whole input with one output position), there is no im2col and no
// scratch: one gemm over the whole batch.
//
// Aliasing: no output may share memory with an input, but the forward's residual (kernels/conv.h).

#include <algorithm>
#include <string>
#include <tuple>

#include "kernels/conv.h"
#include "kernels/impl.h"
#include "pg/bfloat16.h"
#include "pg/gemm.h"
#include "pg/parallel.h"
#include "pg/scratch.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kScratchBytes = int64_t{1} << 20;  // patch matrix budget per chunk (at least one image)
constexpr int64_t kGrain = 16384;                    // elements per parallel chunk of im2col / col2im

// Images per chunk: as many as fit kScratchBytes, at least one.
int64_t chunk_images(const ConvGeom& g, int64_t elem_size) {
  const int64_t per_image = std::max<int64_t>(1, g.positions() * g.taps() * elem_size);
  return std::clamp<int64_t>(kScratchBytes / per_image, 1, std::max<int64_t>(g.n, 1));
}

// Patch rows of image rows (n, oh) in [lo, hi), written from row (first_n * oh) of cols on.
template <class T> void im2col(const T* x, const ConvGeom& g, int64_t first_n, int64_t lo, int64_t hi, T* cols) {
  const int64_t K = g.taps(), span = g.kw * g.c;
  for (int64_t line = lo; line < hi; ++line) {
    const int64_t n = line / g.oh, oh = line % g.oh;
    T* row = cols + (line - first_n * g.oh) * g.ow * K;
    for (int64_t ow = 0; ow < g.ow; ++ow, row += K) {
      const int64_t iw0 = ow * g.sw - g.pl;
      const int64_t kw_lo = std::clamp<int64_t>(-iw0, 0, g.kw), kw_hi = std::clamp<int64_t>(g.w - iw0, kw_lo, g.kw);
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        T* dst = row + kh * span;
        const int64_t ih = oh * g.sh - g.pt + kh;
        if (ih < 0 || ih >= g.h) {
          std::fill(dst, dst + span, T(0));
          continue;
        }
        std::fill(dst, dst + kw_lo * g.c, T(0));
        const T* src = x + ((n * g.h + ih) * g.w + iw0 + kw_lo) * g.c;
        std::copy(src, src + (kw_hi - kw_lo) * g.c, dst + kw_lo * g.c);
        std::fill(dst + kw_hi * g.c, dst + span, T(0));
      }
    }
  }
}

// The adjoint of im2col: images [lo, hi) of dx (zeroed first) get every patch entry of dcols (rows
// from first_n * oh * ow on) added back where im2col read it. Per image the patches are visited in
// row order and each tap row adds one contiguous run of KW * C values, so the order is fixed.
template <class T> void col2im(const T* dcols, const ConvGeom& g, int64_t first_n, int64_t lo, int64_t hi, T* dx) {
  const int64_t K = g.taps(), span = g.kw * g.c, image = g.h * g.w * g.c;
  for (int64_t n = lo; n < hi; ++n) {
    T* img = dx + n * image;
    std::fill(img, img + image, T(0));
    const T* row = dcols + (n - first_n) * g.positions() * K;
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow, row += K) {
        const int64_t iw0 = ow * g.sw - g.pl;
        const int64_t kw_lo = std::clamp<int64_t>(-iw0, 0, g.kw), kw_hi = std::clamp<int64_t>(g.w - iw0, kw_lo, g.kw);
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = oh * g.sh - g.pt + kh;
          if (ih < 0 || ih >= g.h) continue;
          const T* src = row + kh * span + kw_lo * g.c;
          T* dst = img + (ih * g.w + iw0 + kw_lo) * g.c;
          for (int64_t i = 0, len = (kw_hi - kw_lo) * g.c; i < len; ++i) dst[i] += src[i];
        }
      }
  }
}

// How the batch is split: chunks of `per` images. With several threads and at least two chunks per
// thread, the threads share the chunks (worker w takes a contiguous run of them), each worker
// calling a one-thread BLAS and running its loops serially; otherwise (workers == 1) the chunks
// run one after another, each parallel inside (im2col, col2im, and the gemm's blocks). Small
// per-chunk gemms scale poorly when split, so sharing chunks is the better split when there
// are enough of them. Either way the split depends on the shapes and the thread count only.
struct Chunking {
  int64_t per, count, workers;
};

Chunking chunking(const ConvGeom& g, int64_t elem_size) {
  const int64_t per = chunk_images(g, elem_size), count = (g.n + per - 1) / per, threads = get_num_threads();
  return {per, count, threads > 1 && count >= 2 * threads ? threads : 1};
}

// Calls body(worker, first image, image count, first chunk of this worker) for every chunk, the
// chunks of one worker in order.
template <class F> void for_each_chunk(const Chunking& ch, int64_t n, F body) {
  auto run = [&](int64_t w) {
    const int64_t k0 = ch.count * w / ch.workers, k1 = ch.count * (w + 1) / ch.workers;
    for (int64_t k = k0; k < k1; ++k) body(w, k * ch.per, std::min(ch.per, n - k * ch.per), k == k0);
  };
  if (ch.workers == 1) {
    run(0);
    return;
  }
  // Each worker's gemms run on the thread that runs the worker, as one BLAS call each.
  parallel_for(ch.workers, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; ++w) run(w);
  });
}

// The patch matrix of images [n0, n0 + nc) into cols; in parallel over image rows when `parallel`.
template <class T> void patches(const T* x, const ConvGeom& g, int64_t n0, int64_t nc, T* cols, bool parallel) {
  if (!parallel) return im2col(x, g, n0, n0 * g.oh, (n0 + nc) * g.oh, cols);
  const int64_t line_work = std::max<int64_t>(1, g.ow * g.taps());
  parallel_for(nc * g.oh, std::max<int64_t>(1, kGrain / line_work), [&](int64_t lo, int64_t hi) {
    im2col(x, g, n0, n0 * g.oh + lo, n0 * g.oh + hi, cols);
  });
}

}  // namespace

// y = conv(x, w): y[n, oh, ow, o] = sum_{kh, kw, c} x[n, oh*sh - pt + kh, ow*sw - pl + kw, c] * w[kh, kw, c, o].
template <class T> void conv2d_fwd(ConstView<T> x, ConstView<T> w, View<T> y, const ConvGeom& g) {
  if (y.size() == 0) return;
  const int64_t K = g.taps(), rows = g.positions();
  if (K == 0) {
    std::fill(y.data, y.data + y.size(), T(0));
    return;
  }
  if (g.patches_are_input()) {
    gemm(false, false, g.n * rows, g.o, K, x.data, K, w.data, g.o, T(0), y.data);
    return;
  }
  const Chunking ch = chunking(g, sizeof(T));
  for_each_chunk(ch, g.n, [&](int64_t, int64_t n0, int64_t nc, bool) {
    T* cols = thread_scratch<T>(ch.per * rows * K);
    patches(x.data, g, n0, nc, cols, ch.workers == 1);
    gemm(false, false, nc * rows, g.o, K, cols, K, w.data, g.o, T(0), y.data + n0 * rows * g.o);
  });
}

// dx = d(sum(dy * y)) / dx: dcols = dy @ w^T, then dx[n, ih, iw, c] sums dcols over the taps that
// read (ih, iw) (col2im). Computed chunk by chunk; every element of dx is written (zero where no tap
// reads it).
template <class T> void conv2d_bwd_input(ConstView<T> w, ConstView<T> dy, View<T> dx, const ConvGeom& g) {
  if (dx.size() == 0) return;
  const int64_t K = g.taps(), rows = g.positions();
  if (g.o == 0 || rows == 0) {
    std::fill(dx.data, dx.data + dx.size(), T(0));
    return;
  }
  if (g.patches_are_input()) {  // dcols is dx itself
    gemm(false, true, g.n * rows, K, g.o, dy.data, g.o, w.data, g.o, T(0), dx.data);
    return;
  }
  const Chunking ch = chunking(g, sizeof(T));
  for_each_chunk(ch, g.n, [&](int64_t, int64_t n0, int64_t nc, bool) {
    T* dcols = thread_scratch<T>(ch.per * rows * K);
    gemm(false, true, nc * rows, K, g.o, dy.data + n0 * rows * g.o, g.o, w.data, g.o, T(0), dcols);
    if (ch.workers > 1) return col2im(static_cast<const T*>(dcols), g, n0, n0, n0 + nc, dx.data);
    parallel_for(nc, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, rows * K)), [&](int64_t lo, int64_t hi) {
      col2im(static_cast<const T*>(dcols), g, n0, n0 + lo, n0 + hi, dx.data);
    });
  });
}

// dw = d(sum(dy * y)) / dw = sum over chunks of cols^T @ dy. Each worker accumulates its chunks in
// order in the gemm (beta = 1 after its first chunk), worker 0 into dw and the others into partial
// sums, which are then added to dw in worker order: for a given thread count the summation order
// is fixed.
template <class T> void conv2d_bwd_filter(ConstView<T> x, ConstView<T> dy, View<T> dw, const ConvGeom& g) {
  if (dw.size() == 0) return;
  const int64_t K = g.taps(), rows = g.positions(), size = dw.size();
  if (g.n * rows == 0) {
    std::fill(dw.data, dw.data + size, T(0));
    return;
  }
  if (g.patches_are_input()) {
    gemm(true, false, K, g.o, g.n * rows, x.data, K, dy.data, g.o, T(0), dw.data);
    return;
  }
  const Chunking ch = chunking(g, sizeof(T));
  struct Partials;  // a scratch buffer apart from the patch matrices'
  T* partial = ch.workers > 1 ? thread_scratch<T, Partials>((ch.workers - 1) * size) : nullptr;
  for_each_chunk(ch, g.n, [&](int64_t worker, int64_t n0, int64_t nc, bool first) {
    T* cols = thread_scratch<T>(ch.per * rows * K);
    patches(x.data, g, n0, nc, cols, ch.workers == 1);
    T* out = worker == 0 ? dw.data : partial + (worker - 1) * size;
    gemm(true, false, K, g.o, nc * rows, cols, K, dy.data + n0 * rows * g.o, g.o, T(first ? 0 : 1), out);
  });
  for (int64_t w = 1; w < ch.workers; ++w) {
    const T* p = partial + (w - 1) * size;
    for (int64_t i = 0; i < size; ++i) dw.data[i] += p[i];
  }
}

// ---- builders ----

namespace {

// Checks the operands' ranks and agreement and the attributes strides [sh, sw], pad_top, pad_left;
// x, w, y are the shapes of the forward input, filter and output, whichever operands hold them.
ConvGeom check_conv_call(const KernelCall& c, const Shape& x, const Shape& w, const Shape& y) {
  const char* op = c.kernel.c_str();
  if (c.in.size() >= 2 && c.in[0].dtype == DType::bf16) {  // a product the plan runs in bfloat16
    PG_CHECK_DTYPE(c.in[1].dtype == DType::bf16 && c.out.size() == 1 && c.out[0].dtype == DType::f32, op,
                   "bfloat16 operands must both be bfloat16, with a float32 output; got %s, %s -> %s",
                   dtype_name(c.in[0].dtype), dtype_name(c.in[1].dtype), dtype_name(c.out.at(0).dtype));
  } else {
    expect_same_dtype(c);
  }
  PG_CHECK(x.ndim == 4 && w.ndim == 4 && y.ndim == 4, op,
           "input, filter and output must be 4-D (NHWC, HWIO, NHWC), got input: %s, filter: %s and output: %s",
           x.str().c_str(), w.str().c_str(), y.str().c_str());
  PG_CHECK(x[3] == w[2], op, "input depth must equal filter in_channels, got input: %s and filter: %s (%lld != %lld)",
           x.str().c_str(), w.str().c_str(), (long long)x[3], (long long)w[2]);
  PG_CHECK(y[0] == x[0] && y[3] == w[3], op,
           "output must be [batch, out_h, out_w, out_channels] = [%lld, ?, ?, %lld], got %s", (long long)x[0],
           (long long)w[3], y.str().c_str());
  const std::vector<int64_t>& s = c.attrs.ints("strides", op);
  PG_CHECK(s.size() == 2 && s[0] >= 1 && s[1] >= 1, op, "strides must be two positive ints [sh, sw]");
  ConvGeom g{x[0], x[1], x[2], x[3], w[0], w[1], w[3], y[1], y[2], s[0], s[1], c.attrs.i("pad_top", op),
             c.attrs.i("pad_left", op)};
  PG_CHECK(g.kh >= 1 && g.kw >= 1, op, "filter height and width must be positive, got filter: %s", w.str().c_str());
  // Every window starts before the input ends and ends after it starts.
  PG_CHECK(g.pt >= 0 && g.pt < g.kh && (g.oh == 0 || (g.h > 0 && (g.oh - 1) * g.sh - g.pt < g.h)), op,
           "pad_top %lld and %lld output rows do not fit input height %lld with filter height %lld, stride %lld",
           (long long)g.pt, (long long)g.oh, (long long)g.h, (long long)g.kh, (long long)g.sh);
  PG_CHECK(g.pl >= 0 && g.pl < g.kw && (g.ow == 0 || (g.w > 0 && (g.ow - 1) * g.sw - g.pl < g.w)), op,
           "pad_left %lld and %lld output columns do not fit input width %lld with filter width %lld, stride %lld",
           (long long)g.pl, (long long)g.ow, (long long)g.w, (long long)g.kw, (long long)g.sw);
  const int64_t limit = int64_t{1} << 31, rows = g.patches_are_input() ? g.n * g.positions() : g.positions();
  PG_CHECK(g.taps() < limit && g.o < limit && rows < limit, op, "dimensions beyond 2^31 are not supported by the BLAS");
  return g;
}

// The step for bfloat16 operands a and b where oneDNN does not take them: both widened to float32
// (exactly) in the calling thread's scratch, then run(frame, a, b) by the float32 kernels.
template <class Run> Step widened(const Operand& a, const Operand& b, Run run) {
  return [a, b, run](Frame& f) {
    struct WideA;
    struct WideB;
    float* wa = thread_scratch<float, WideA>(a.shape.numel());
    float* wb = thread_scratch<float, WideB>(b.shape.numel());
    from_bfloat16(static_cast<const BFloat16*>(f.ptr[a.buffer]), wa, a.shape.numel());
    from_bfloat16(static_cast<const BFloat16*>(f.ptr[b.buffer]), wb, b.shape.numel());
    run(f, ConstView<float>{wa, a.shape}, ConstView<float>{wb, b.shape});
  };
}

// The implementation (kernels/impl.h): "im2col" runs the kernels above, "onednn" oneDNN's
// (conv_onednn.cc), "auto" oneDNN for float32 where it serves the call, except the input gradient of
// a convolution with fewer than kOneDnnMinInputChannels input channels, where oneDNN's kernel (a
// forward convolution over the transposed filter) is slower than im2col; and a float32 forward pass
// with one output position per image whose patch matrix is the input (a classifier's 1x1
// convolution over a pooled image, as in TF-Slim's ResNet, Inception and MobileNet), which im2col
// runs as one matrix product: oneDNN's convolution kernel for it is several times slower
// (bench_kernels' conv2d_fwd/logits cases).
Step pick_impl(const KernelCall& c, ConvPass pass, const ConvGeom& g, Step im2col_step, ConvEpilogue epilogue = {}) {
  constexpr int64_t kOneDnnMinInputChannels = 8;
  const bool one_product = pass == ConvPass::forward && c.in[0].dtype == DType::f32 && g.patches_are_input() &&
                           g.positions() == 1;
  return choose_impl(
      c, "im2col", im2col_step,
      [&] { return onednn_conv2d_step(pass, g, c.in[0], c.in[1], c.out[0], im2col_step, epilogue); },
      (pass == ConvPass::backward_input && g.c < kOneDnnMinInputChannels) || one_product);
}

}  // namespace

ConvEpilogue conv_epilogue_of(const KernelCall& c, int64_t channels) {
  const char* op = c.kernel.c_str();
  ConvEpilogue e;
  const int64_t act = c.attrs.i("activation", int64_t{0});
  PG_CHECK(act >= 0 && act <= 2, op, "activation must be 0 (none), 1 (relu) or 2 (relu6), got %lld", (long long)act);
  e.activation = ConvActivation(act);
  size_t next = 2;
  const Shape vector = Shape{channels}, whole = c.out.at(0).shape;
  const std::tuple<const char*, int*, const Shape*> parts[] = {
      {"bias", &e.bias_buffer, &vector}, {"scale", &e.scale_buffer, &vector},
      {"shift", &e.shift_buffer, &vector}, {"residual", &e.residual_buffer, &whole}};
  for (auto [name, buffer, shape] : parts) {
    if (c.attrs.i(name, int64_t{0}) == 0) continue;
    PG_CHECK(next < c.in.size(), op, "the %s input is missing: %zu inputs", name, c.in.size());
    const Operand& v = c.in[next++];
    const DType dt = c.out.at(0).dtype;
    PG_CHECK(v.dtype == dt && v.shape == *shape, op, "the %s must be a %s array of shape %s, got %s %s", name,
             dtype_name(dt), shape->str().c_str(), dtype_name(v.dtype), v.shape.str().c_str());
    *buffer = v.buffer;
  }
  PG_CHECK(next == c.in.size(), op, "expects %zu inputs for its epilogue, got %zu", next, c.in.size());
  e.residual_in_place = e.residual_buffer >= 0 && e.residual_buffer == c.out[0].buffer;
  return e;
}

namespace {

// One row of y (its o channels), in place: the unfused kernels' operations, one pass each.
template <class T>
void epilogue_row(T* row, int64_t o, const T* bias, const T* scale, const T* shift, const T* residual,
                  ConvActivation act) {
  if (bias)
    for (int64_t j = 0; j < o; ++j) row[j] += bias[j];
  if (scale)
    for (int64_t j = 0; j < o; ++j) row[j] *= scale[j];
  if (shift)
    for (int64_t j = 0; j < o; ++j) row[j] += shift[j];
  if (residual)
    for (int64_t j = 0; j < o; ++j) row[j] += residual[j];
  if (act == ConvActivation::relu)  // NaN stays NaN, as in the relu kernel
    for (int64_t j = 0; j < o; ++j) row[j] = row[j] < T(0) ? T(0) : row[j];
  else if (act == ConvActivation::relu6)  // as the relu6 kernel
    for (int64_t j = 0; j < o; ++j) row[j] = row[j] < T(0) ? T(0) : row[j] > T(6) ? T(6) : row[j];
}

}  // namespace

const void* save_residual(Frame& f, const Operand& y, const ConvEpilogue& e) {
  if (!e.residual_in_place) return nullptr;
  struct SavedResidual;  // apart from the convolution's own scratch
  const int64_t bytes = y.shape.numel() * int64_t(dtype_size(y.dtype));
  auto* copy = thread_scratch<unsigned char, SavedResidual>(bytes);
  std::copy_n(static_cast<const unsigned char*>(f.ptr[y.buffer]), bytes, copy);
  return copy;
}

void apply_conv_epilogue(Frame& f, const Operand& y, const ConvEpilogue& e, const void* saved) {
  if (!e.any()) return;
  dispatch_float(y.dtype, "conv epilogue", [&](auto t) {
    using T = decltype(t);
    const View<T> v = view<T>(f, y);
    auto vec = [&](int buffer) { return buffer >= 0 ? static_cast<const T*>(f.ptr[buffer]) : nullptr; };
    const T *bias = vec(e.bias_buffer), *scale = vec(e.scale_buffer), *shift = vec(e.shift_buffer),
            *residual = saved ? static_cast<const T*>(saved) : vec(e.residual_buffer);
    const int64_t o = v.shape[v.shape.ndim - 1], rows = v.size() / std::max<int64_t>(o, 1);
    parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(o, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        epilogue_row(v.data + r * o, o, bias, scale, shift, residual ? residual + r * o : nullptr, e.activation);
    });
  });
}

// conv2d_fwd (x, w[, bias][, scale][, shift][, residual]) -> y, with the epilogue the plan fuses into
// the convolution (see ConvEpilogue): y = act((conv(x, w) + bias) * scale + shift + residual).
Step build_conv2d_fwd(const KernelCall& c) {
  const char* op = c.kernel.c_str();
  PG_CHECK(c.in.size() >= 2 && c.out.size() == 1, op, "expects at least 2 inputs and 1 output, got %zu and %zu",
           c.in.size(), c.out.size());
  const Operand x = c.in[0], w = c.in[1], y = c.out[0];
  const ConvGeom g = check_conv_call(c, x.shape, w.shape, y.shape);
  const ConvEpilogue epilogue = conv_epilogue_of(c, g.o);
  if (x.dtype == DType::bf16)
    return pick_impl(c, ConvPass::forward, g, widened(x, w, [=](Frame& f, ConstView<float> xv, ConstView<float> wv) {
      const void* saved = save_residual(f, y, epilogue);
      conv2d_fwd<float>(xv, wv, view<float>(f, y), g);
      apply_conv_epilogue(f, y, epilogue, saved);
    }), epilogue);
  return pick_impl(c, ConvPass::forward, g, dispatch_float(x.dtype, op, [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) {
      const void* saved = save_residual(f, y, epilogue);
      conv2d_fwd<T>(cview<T>(f, x), cview<T>(f, w), view<T>(f, y), g);
      apply_conv_epilogue(f, y, epilogue, saved);
    };
  }), epilogue);
}

Step build_conv2d_bwd_input(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const Operand w = c.in[0], dy = c.in[1], dx = c.out[0];
  const ConvGeom g = check_conv_call(c, dx.shape, w.shape, dy.shape);
  if (w.dtype == DType::bf16)
    return pick_impl(c, ConvPass::backward_input, g,
                     widened(w, dy, [=](Frame& f, ConstView<float> wv, ConstView<float> dyv) {
                       conv2d_bwd_input<float>(wv, dyv, view<float>(f, dx), g);
                     }));
  return pick_impl(c, ConvPass::backward_input, g, dispatch_float(w.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { conv2d_bwd_input<T>(cview<T>(f, w), cview<T>(f, dy), view<T>(f, dx), g); };
  }));
}

Step build_conv2d_bwd_filter(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const Operand x = c.in[0], dy = c.in[1], dw = c.out[0];
  const ConvGeom g = check_conv_call(c, x.shape, dw.shape, dy.shape);
  if (x.dtype == DType::bf16)
    return pick_impl(c, ConvPass::backward_filter, g,
                     widened(x, dy, [=](Frame& f, ConstView<float> xv, ConstView<float> dyv) {
                       conv2d_bwd_filter<float>(xv, dyv, view<float>(f, dw), g);
                     }));
  return pick_impl(c, ConvPass::backward_filter, g, dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { conv2d_bwd_filter<T>(cview<T>(f, x), cview<T>(f, dy), view<T>(f, dw), g); };
  }));
}

}  // namespace pg
