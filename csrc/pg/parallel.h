// Row partitioning over OpenMP threads, with one knob for OpenMP and the BLAS together.
#pragma once
#include <cstdint>
#include <omp.h>

namespace pg {

// Set the threads used by OpenMP loops and by the BLAS.
void set_num_threads(int n);
int get_num_threads();

// Calls fn(begin, end) over [0, n) in chunks; runs inline when n < grain or one thread is set.
// fn runs inside an OpenMP region, where an exception would terminate the process: fn must not
// throw (check everything in the builder, before the step runs).
template <class F> void parallel_for(int64_t n, int64_t grain, F fn) {
  if (n < 2 * grain || get_num_threads() <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  int64_t chunks = n / grain;
  int threads = get_num_threads();
  if (chunks > threads) chunks = threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    fn(begin, end);
  }
}

}  // namespace pg
