// Vectorized float32 exp, sigmoid and tanh over contiguous arrays (kernels/vmath.cc): y[i] = f(x[i])
// for i < n; NaN stays NaN; y may alias x exactly. exp is the correctly rounded float but in about
// one case in 10^7 (then one ulp off); sigmoid is within 2 ulp of it and tanh within 1 ulp.
#pragma once
#include <cstdint>

namespace pg {

void exp_f32(const float* x, float* y, int64_t n);
void sigmoid_f32(const float* x, float* y, int64_t n);
void tanh_f32(const float* x, float* y, int64_t n);

}  // namespace pg
