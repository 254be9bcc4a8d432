// Depthwise 2-D convolution, NHWC, with dilations, and its two gradients, by direct loops.
//
// Layouts, all contiguous row-major: input x [N, H, W, C], filter w [KH, KW, C, M] (M, the channel
// multiplier), output y [N, OH, OW, C * M]. Output channel c * M + m of position (oh, ow) reads
// input channel c at the taps (ih, iw) = (oh * sh - pt + kh * dh, ow * sw - pl + kw * dw); taps
// outside the input read as zero. Python computes pad_top/pad_left (TensorFlow's SAME or VALID rule
// on the dilated filter (K - 1) * d + 1); the builders check that every window overlaps the input.
//
// Each output element (of y, dx or dw) is written by one thread and summed in a fixed order, so
// results repeat bitwise for any thread count. y and dx are split over image rows; dw over the
// filter taps (kh, kw), each tap summing over the batch and the output positions.
//
// Aliasing: no output may share memory with an input, but the forward's residual (kernels/conv.h).
//
// These loops are the reference, and run float64. Float32 runs on oneDNN by default, as a grouped
// convolution (conv_onednn.cc, whose notes on threads and layouts hold here too: results repeat
// bitwise for a given thread count only); see choose_impl below.

#include <algorithm>
#include <string>

#include "kernels/conv.h"
#include "kernels/impl.h"
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {

constexpr int64_t kGrain = 16384;  // multiply-adds per parallel chunk

struct DepthwiseGeom {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, m;   // filter (its in_channels is c)
  int64_t oh, ow;      // output (its channels are c * m)
  int64_t sh, sw, dh, dw, pt, pl;
  int64_t oc() const { return c * m; }
};

// Rows [lo, hi) of a loop over `rows`, each worth `work` multiply-adds.
template <class F> void for_rows(int64_t rows, int64_t work, F fn) {
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)), fn);
}

}  // namespace

// y[n, oh, ow, c*M + m] = sum_{kh, kw} x[n, ih, iw, c] * w[kh, kw, c, m], (ih, iw) the tap above.
template <class T> void depthwise_conv2d_fwd(ConstView<T> x, ConstView<T> w, View<T> y, const DepthwiseGeom& g) {
  const int64_t oc = g.oc();
  for_rows(g.n * g.oh, g.ow * g.kh * g.kw * oc, [&](int64_t lo, int64_t hi) {
    for (int64_t line = lo; line < hi; ++line) {
      const int64_t n = line / g.oh, oh = line % g.oh;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        T* out = y.data + (line * g.ow + ow) * oc;
        std::fill(out, out + oc, T(0));
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = oh * g.sh - g.pt + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const int64_t iw = ow * g.sw - g.pl + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const T* in = x.data + ((n * g.h + ih) * g.w + iw) * g.c;
            const T* f = w.data + (kh * g.kw + kw) * oc;
            for (int64_t c = 0; c < g.c; ++c)
              for (int64_t m = 0; m < g.m; ++m) out[c * g.m + m] += in[c] * f[c * g.m + m];
          }
        }
      }
    }
  });
}

// dx[n, ih, iw, c] = sum over the (oh, ow, kh, kw) whose tap is (ih, iw) of
// sum_m dy[n, oh, ow, c*M + m] * w[kh, kw, c, m]. Every element of dx is written.
template <class T> void depthwise_conv2d_bwd_input(ConstView<T> w, ConstView<T> dy, View<T> dx, const DepthwiseGeom& g) {
  const int64_t oc = g.oc();
  for_rows(g.n * g.h, g.w * g.kh * g.kw * oc, [&](int64_t lo, int64_t hi) {
    for (int64_t line = lo; line < hi; ++line) {
      const int64_t n = line / g.h, ih = line % g.h;
      for (int64_t iw = 0; iw < g.w; ++iw) {
        T* out = dx.data + (line * g.w + iw) * g.c;
        std::fill(out, out + g.c, T(0));
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t th = ih + g.pt - kh * g.dh;  // = oh * sh
          if (th < 0 || th % g.sh != 0 || th / g.sh >= g.oh) continue;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const int64_t tw = iw + g.pl - kw * g.dw;  // = ow * sw
            if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.ow) continue;
            const T* d = dy.data + ((n * g.oh + th / g.sh) * g.ow + tw / g.sw) * oc;
            const T* f = w.data + (kh * g.kw + kw) * oc;
            for (int64_t c = 0; c < g.c; ++c) {
              T s = out[c];
              for (int64_t m = 0; m < g.m; ++m) s += d[c * g.m + m] * f[c * g.m + m];
              out[c] = s;
            }
          }
        }
      }
    }
  });
}

// dw[kh, kw, c, m] = sum_{n, oh, ow} x[n, ih, iw, c] * dy[n, oh, ow, c*M + m], (ih, iw) the tap.
template <class T> void depthwise_conv2d_bwd_filter(ConstView<T> x, ConstView<T> dy, View<T> dw, const DepthwiseGeom& g) {
  const int64_t oc = g.oc();
  for_rows(g.kh * g.kw, g.n * g.oh * g.ow * oc, [&](int64_t lo, int64_t hi) {
    for (int64_t tap = lo; tap < hi; ++tap) {
      const int64_t kh = tap / g.kw, kw = tap % g.kw;
      T* out = dw.data + tap * oc;
      std::fill(out, out + oc, T(0));
      for (int64_t n = 0; n < g.n; ++n)
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const int64_t ih = oh * g.sh - g.pt + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const int64_t iw = ow * g.sw - g.pl + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const T* in = x.data + ((n * g.h + ih) * g.w + iw) * g.c;
            const T* d = dy.data + ((n * g.oh + oh) * g.ow + ow) * oc;
            for (int64_t c = 0; c < g.c; ++c)
              for (int64_t m = 0; m < g.m; ++m) out[c * g.m + m] += in[c] * d[c * g.m + m];
          }
        }
    }
  });
}

// ---- builders ----

namespace {

// Checks the operands and the attributes strides [sh, sw], dilations [dh, dw], pad_top, pad_left;
// x, w, y are the shapes of the forward input, filter and output, whichever operands hold them.
DepthwiseGeom check_depthwise_call(const KernelCall& c, const Shape& x, const Shape& w, const Shape& y) {
  const char* op = c.kernel.c_str();
  expect_same_dtype(c);
  PG_CHECK(x.ndim == 4 && w.ndim == 4 && y.ndim == 4, op,
           "input, filter and output must be 4-D (NHWC, [KH, KW, C, M], NHWC), got input: %s, filter: %s and output: "
           "%s", x.str().c_str(), w.str().c_str(), y.str().c_str());
  PG_CHECK(x[3] == w[2], op, "input depth must equal filter in_channels, got input: %s and filter: %s (%lld != %lld)",
           x.str().c_str(), w.str().c_str(), (long long)x[3], (long long)w[2]);
  PG_CHECK(y[0] == x[0] && y[3] == w[2] * w[3], op,
           "output must be [batch, out_h, out_w, in_channels * multiplier] = [%lld, ?, ?, %lld], got %s",
           (long long)x[0], (long long)(w[2] * w[3]), y.str().c_str());
  const std::vector<int64_t>& s = c.attrs.ints("strides", op);
  const std::vector<int64_t>& d = c.attrs.ints("dilations", op);
  PG_CHECK(s.size() == 2 && s[0] >= 1 && s[1] >= 1, op, "strides must be two positive ints [sh, sw]");
  PG_CHECK(d.size() == 2 && d[0] >= 1 && d[1] >= 1, op, "dilations must be two positive ints [dh, dw]");
  DepthwiseGeom g{x[0], x[1], x[2], x[3], w[0], w[1], w[3], y[1], y[2], s[0], s[1], d[0], d[1],
                  c.attrs.i("pad_top", op), c.attrs.i("pad_left", op)};
  PG_CHECK(g.kh >= 1 && g.kw >= 1, op, "filter height and width must be positive, got filter: %s", w.str().c_str());
  const int64_t eh = (g.kh - 1) * g.dh + 1, ew = (g.kw - 1) * g.dw + 1;  // the dilated filter
  PG_CHECK(g.pt >= 0 && g.pt < eh && (g.oh == 0 || (g.h > 0 && (g.oh - 1) * g.sh - g.pt < g.h)), op,
           "pad_top %lld and %lld output rows do not fit input height %lld with dilated filter height %lld, stride %lld",
           (long long)g.pt, (long long)g.oh, (long long)g.h, (long long)eh, (long long)g.sh);
  PG_CHECK(g.pl >= 0 && g.pl < ew && (g.ow == 0 || (g.w > 0 && (g.ow - 1) * g.sw - g.pl < g.w)), op,
           "pad_left %lld and %lld output columns do not fit input width %lld with dilated filter width %lld, stride "
           "%lld", (long long)g.pl, (long long)g.ow, (long long)g.w, (long long)ew, (long long)g.sw);
  return g;
}

// The implementation (kernels/impl.h): "direct" runs the loops above, "onednn" oneDNN's grouped
// convolution (conv_onednn.cc), "auto" oneDNN for float32 where it serves the call with an
// implementation other than its reference one, and the loops above elsewhere (float64, empty operands).
Step pick_impl(const KernelCall& c, ConvPass pass, const DepthwiseGeom& d, Step direct_step,
               ConvEpilogue epilogue = {}) {
  return choose_impl(c, "direct", direct_step, [&] {
    ConvGeom g{d.n, d.h, d.w, d.c, d.kh, d.kw, d.oc(), d.oh, d.ow, d.sh, d.sw, d.pt, d.pl};
    g.dh = d.dh;
    g.dw = d.dw;
    g.groups = d.c;
    return onednn_conv2d_step(pass, g, c.in[0], c.in[1], c.out[0], direct_step, epilogue);
  });
}

}  // namespace

// depthwise_conv2d_fwd (x, w[, bias][, scale][, shift][, residual]) -> y, with the epilogue the plan fuses into it
// (kernels/conv.h's ConvEpilogue).
Step build_depthwise_conv2d_fwd(const KernelCall& c) {
  PG_CHECK(c.in.size() >= 2 && c.out.size() == 1, c.kernel.c_str(),
           "expects at least 2 inputs and 1 output, got %zu and %zu", c.in.size(), c.out.size());
  const Operand x = c.in[0], w = c.in[1], y = c.out[0];
  const DepthwiseGeom g = check_depthwise_call(c, x.shape, w.shape, y.shape);
  const ConvEpilogue epilogue = conv_epilogue_of(c, g.oc());
  return pick_impl(c, ConvPass::forward, g, dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) {
      const void* saved = save_residual(f, y, epilogue);
      depthwise_conv2d_fwd<T>(cview<T>(f, x), cview<T>(f, w), view<T>(f, y), g);
      apply_conv_epilogue(f, y, epilogue, saved);
    };
  }), epilogue);
}

Step build_depthwise_conv2d_bwd_input(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const Operand w = c.in[0], dy = c.in[1], dx = c.out[0];
  const DepthwiseGeom g = check_depthwise_call(c, dx.shape, w.shape, dy.shape);
  return pick_impl(c, ConvPass::backward_input, g, dispatch_float(w.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { depthwise_conv2d_bwd_input<T>(cview<T>(f, w), cview<T>(f, dy), view<T>(f, dx), g); };
  }));
}

Step build_depthwise_conv2d_bwd_filter(const KernelCall& c) {
  expect_arity(c, 2, 1);
  const Operand x = c.in[0], dy = c.in[1], dw = c.out[0];
  const DepthwiseGeom g = check_depthwise_call(c, x.shape, dw.shape, dy.shape);
  return pick_impl(c, ConvPass::backward_filter, g, dispatch_float(x.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [=](Frame& f) { depthwise_conv2d_bwd_filter<T>(cview<T>(f, x), cview<T>(f, dy), view<T>(f, dw), g); };
  }));
}

}  // namespace pg
