// The geometry of a 2-D pooling, shared by its direct kernels (pool.cc) and its oneDNN kernels
// (pool_onednn.cc); the layouts and the padding rule are described at the top of pool.cc.
#pragma once
#include <algorithm>
#include <cstdint>

#include "runtime/kernel.h"

namespace pg {

struct PoolGeom {
  int64_t n, h, w, c;  // input (and the output's batch and channels)
  int64_t oh, ow;      // output
  int64_t kh, kw, sh, sw, pt, pl;
  // The valid input rows [lo, hi) of output row oh; never empty (checked by the builders).
  int64_t row_lo(int64_t oh_) const { return std::max<int64_t>(oh_ * sh - pt, 0); }
  int64_t row_hi(int64_t oh_) const { return std::min(oh_ * sh - pt + kh, h); }
  int64_t col_lo(int64_t ow_) const { return std::max<int64_t>(ow_ * sw - pl, 0); }
  int64_t col_hi(int64_t ow_) const { return std::min(ow_ * sw - pl + kw, w); }
  // Padding after the input (bottom, right) that the output size implies; negative when the last
  // rows (columns) of the input are read by no window.
  int64_t pad_bottom() const { return (oh - 1) * sh + kh - h - pt; }
  int64_t pad_right() const { return (ow - 1) * sw + kw - w - pl; }
  // Whether the windows tile the input: no padding, no overlap, every input position in one window.
  bool tiles() const { return pt == 0 && pl == 0 && kh == sh && kw == sw && oh * sh == h && ow * sw == w; }
  int64_t image() const { return h * w * c; }     // elements of one input image
  int64_t out_image() const { return oh * ow * c; }  // of one output image
};

// The four kernels of a pooling, by the operands they take: max_forward (x) -> y,
// max_backward (x, y, dy) -> dx, avg_forward (x) -> y, avg_backward (dy) -> dx.
enum class PoolPass { max_forward, max_backward, avg_forward, avg_backward };

// The direct float32 max kernels (pool.cc) on g.n images from the given pointers: what the oneDNN
// path runs for a run of images where oneDNN's max rule differs from pygrad's (a NaN, or a window
// of -inf only).
void direct_max_pool_fwd(const float* x, float* y, const PoolGeom& g);
void direct_max_pool_bwd(const float* x, const float* dy, float* dx, const PoolGeom& g);

// The step that runs `pass` of the float32 pooling g with oneDNN, or an empty Step when oneDNN
// does not serve it (an empty operand, or only oneDNN's reference implementation would run it).
// `in` are the pass's inputs as listed above. Built when the plan is: the primitives for the batch
// split of the current thread count are created here (see pool_onednn.cc). `fallback` runs instead
// when a thread count set later splits the batch into runs that oneDNN does not serve.
Step onednn_pool_step(PoolPass pass, const PoolGeom& g, const std::vector<Operand>& in, const Operand& out,
                      Step fallback);

}  // namespace pg
