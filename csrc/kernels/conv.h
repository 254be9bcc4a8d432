// The geometry of a 2-D convolution, shared by its im2col kernels (conv.cc), its oneDNN kernels
// (conv_onednn.cc) and the depthwise convolution's oneDNN path (depthwise.cc); the layouts and the
// padding rule are described at the top of conv.cc.
#pragma once
#include <algorithm>
#include <cstdint>

#include "runtime/kernel.h"

namespace pg {

struct ConvGeom {
  int64_t n, h, w, c;    // input
  int64_t kh, kw, o;     // filter (its in_channels is c)
  int64_t oh, ow;        // output
  int64_t sh, sw, pt, pl;
  // For the oneDNN kernels only (conv.cc's builders leave them 1): the filter's taps dh (dw) rows
  // (columns) apart, and the channels in `groups` groups, input channels [i * c / groups, (i + 1) *
  // c / groups) feeding output channels [i * o / groups, (i + 1) * o / groups). The filter is then
  // [KH, KW, groups, C / groups, O / groups] (a depthwise filter [KH, KW, C, M] with groups = C).
  int64_t dh = 1, dw = 1, groups = 1;
  int64_t taps() const { return kh * kw * c; }  // K, the patch length
  int64_t positions() const { return oh * ow; }  // patch rows per image
  // Padding after the input (bottom, right) that the output size implies; negative when the last
  // rows (columns) of the input are read by no window.
  int64_t pad_bottom() const { return (oh - 1) * sh + (kh - 1) * dh + 1 - h - pt; }
  int64_t pad_right() const { return (ow - 1) * sw + (kw - 1) * dw + 1 - w - pl; }
  int64_t filter_size() const { return kh * kw * (c / groups) * o; }
  // True when cols == x viewed as [n * oh * ow, K]: no im2col needed.
  bool patches_are_input() const {
    const bool pointwise = kh == 1 && kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0;
    const bool whole = kh == h && kw == w && oh == 1 && ow == 1 && pt == 0 && pl == 0;
    return pointwise || whole;
  }
};

// The three kernels of a convolution, by the operands they take:
// forward (x, w) -> y, backward_input (w, dy) -> dx, backward_filter (x, dy) -> dw.
enum class ConvPass { forward, backward_input, backward_filter };

// What a forward convolution may do to its output before writing it: the plan fuses the elementwise
// steps that follow it when nothing else reads the intermediates (pygrad/fusion.py),
//   y = act((conv + bias) * scale + shift + residual),
// each part optional; bias, scale and shift are [O] vectors of the convolution's dtype, the middle
// two an inference batch norm's (scale = gamma / sqrt(variance + epsilon), shift = beta - mean *
// scale), and residual an array of y's shape (a residual network's shortcut).
// The kernel call's inputs after (x, w) are those present, in that order; its attributes "bias",
// "scale", "shift", "residual" (0 or 1) say which, and "activation" which act (ConvActivation).
enum class ConvActivation : int64_t { none = 0, relu = 1, relu6 = 2 };
struct ConvEpilogue {
  int bias_buffer = -1;  // -1: none
  int scale_buffer = -1;
  int shift_buffer = -1;
  int residual_buffer = -1;
  // The plan writes y over the residual (pygrad/fusion.py, where nothing else reads it): y holds
  // the residual when the step starts, and oneDNN adds it in place (its sum post-op).
  bool residual_in_place = false;
  ConvActivation activation = ConvActivation::none;
  bool any() const {
    return bias_buffer >= 0 || scale_buffer >= 0 || shift_buffer >= 0 || residual_buffer >= 0 ||
           activation != ConvActivation::none;
  }
};

// The epilogue of a forward convolution's call (output c.out[0], `channels` channels), checked.
ConvEpilogue conv_epilogue_of(const KernelCall& c, int64_t channels);

// The epilogue done by a pass over y (the kernels other than oneDNN's), in place. Each part is the
// unfused kernel's arithmetic in the unfused order, so the values are bitwise those of the steps
// the plan fused. A residual in place is first copied aside by save_residual (before the
// convolution writes y), and then added from that copy (`saved`; nullptr when not in place).
const void* save_residual(Frame& f, const Operand& y, const ConvEpilogue& e);
void apply_conv_epilogue(Frame& f, const Operand& y, const ConvEpilogue& e, const void* saved);

// The step that runs `pass` of the float32 convolution g (grouped and dilated ones included) with
// oneDNN, or an empty Step when oneDNN does not serve it (an empty operand, or only oneDNN's
// reference implementation would run it). Built when the plan is: the primitives for the batch
// split of the current thread count are created here (see conv_onednn.cc). `fallback` runs
// instead when a thread count set later splits the batch into runs that oneDNN does not serve.
// The forward's epilogue, if any, is done by oneDNN (a bias argument and post-ops); `fallback` must
// then do it too.
Step onednn_conv2d_step(ConvPass pass, const ConvGeom& g, const Operand& a, const Operand& b, const Operand& out,
                        Step fallback, ConvEpilogue epilogue = {});

}  // namespace pg
