// Reductions along a lane of values in several independent accumulators ("lanes"), so that the loops
// vectorize and the summation order depends on the length alone:
//  - lane_max: the NaN-propagating maximum of a row or strided column, which softmax, log_softmax
//    and the cross-entropies subtract before exp;
//  - accumulate_lanes / merge_lanes: any reducer R (reduce_sum/mean/prod/max/min, the global norm's
//    sum of squares) over contiguous runs.
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

constexpr int kLanes = 8;  // independent accumulators along a contiguous run

// Adds x[0:n] into the lane accumulators with R::step (A R::step(A, T)), element i into lane
// i % kLanes; a short run (n < 2 * kLanes) goes into lane 0 alone, so a caller that only ever
// passes short runs may use and merge one lane.
template <class R, class T> inline void accumulate_lanes(const T* x, int64_t n, typename R::A* lane) {
  if (n < 2 * kLanes) {
    for (int64_t i = 0; i < n; ++i) lane[0] = R::step(lane[0], x[i]);
    return;
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1  // keep the lane loop a loop: the loop vectorizer handles selects (max, min), SLP does not
    for (int l = 0; l < kLanes; ++l) lane[l] = R::step(lane[l], x[i + l]);
  }
  for (int l = 0; i < n; ++i, ++l) lane[l] = R::step(lane[l], x[i]);
}

// The first `lanes` accumulators (a power of two, at most kLanes) merged pairwise with R::merge.
template <class R> inline typename R::A merge_lanes(typename R::A* lane, int lanes) {
  for (int w = lanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lane[l] = R::merge(lane[l], lane[l + w]);
  return lane[0];
}

}  // namespace pg
