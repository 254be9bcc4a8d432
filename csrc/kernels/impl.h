// The choice a oneDNN-backed kernel (conv2d, depthwise conv2d, pooling) makes between oneDNN and its
// own loops, by its "impl" attribute (default "auto"):
//  - direct_name ("im2col" for conv2d, "direct" for the others) runs direct_step;
//  - "onednn" runs the step make_onednn() returns; an error for a dtype other than float32 (the plan's
//    bfloat16 operands of a convolution, pygrad/bfloat16.py, count as float32 here), and
//    where oneDNN serves the call only by its reference kernel (make_onednn() returns an empty Step);
//  - "auto" takes oneDNN's step for float32 where it serves the call, unless auto_direct (a call the
//    kernel's own loops measured faster on), and direct_step elsewhere.
#pragma once
#include <string>

#include "runtime/kernel.h"

namespace pg {

template <class Make>
Step choose_impl(const KernelCall& c, const char* direct_name, Step direct_step, Make make_onednn,
                 bool auto_direct = false) {
  const char* op = c.kernel.c_str();
  const std::string impl = c.attrs.has("impl") ? c.attrs.s("impl", op) : "auto";
  PG_CHECK(impl == "auto" || impl == direct_name || impl == "onednn", op,
           "impl must be 'auto', '%s' or 'onednn', got '%s'", direct_name, impl.c_str());
  if (impl == direct_name || (impl == "auto" && auto_direct)) return direct_step;
  if (c.in[0].dtype != DType::f32 && c.in[0].dtype != DType::bf16) {
    if (impl == "onednn")
      throw DTypeError(format_error(op, "the oneDNN kernels are float32 only, got %s", dtype_name(c.in[0].dtype)));
    return direct_step;
  }
  Step step = make_onednn();
  PG_CHECK(step || impl == "auto", op, "oneDNN has no kernel other than its reference one for these shapes");
  return step ? step : direct_step;
}

}  // namespace pg
