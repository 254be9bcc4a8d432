// The maximum of a lane of values (a row, or a strided column), NaN-propagating and vectorizable:
// shared by softmax, log_softmax and the cross-entropies, which all subtract it before exp.
#pragma once

#include <cstdint>
#include <type_traits>

namespace pg {

// max(m, v) where a NaN wins, written as two selects so that loops over it vectorize.
template <class T> T max_nan(T m, T v) {
  const T r = v > m ? v : m;
  return v != v ? v : r;
}

// The largest of x[0], x[s], ..., x[(n-1)s], n >= 1; NaN if any is NaN. s may be
// std::integral_constant<int64_t, 1> for a contiguous lane. Long lanes keep eight running maxima,
// so the contiguous case vectorizes.
template <class T, class S = std::integral_constant<int64_t, 1>> T lane_max(const T* x, int64_t n, S s = S{}) {
  if (n < 32) {  // short rows (10 classes): one running maximum is faster
    T m = x[0];
    for (int64_t j = 1; j < n; ++j) m = max_nan(m, x[j * s]);
    return m;
  }
  T lane[8];
  for (T& l : lane) l = x[0];
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
#pragma GCC unroll 1  // keep it a loop: the loop vectorizer handles the selects, SLP does not
    for (int l = 0; l < 8; ++l) lane[l] = max_nan(lane[l], x[(j + l) * s]);
  }
  for (; j < n; ++j) lane[0] = max_nan(lane[0], x[j * s]);
  for (int w = 4; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lane[l] = max_nan(lane[l], lane[l + w]);
  return lane[0];
}

}  // namespace pg
