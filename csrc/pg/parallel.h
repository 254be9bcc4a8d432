// Parallel loops on pygrad's own thread pool, with one thread count for the loops and the BLAS.
//
// A loop is split into chunks that depend on its size, its grain and the thread count only, so
// results repeat bitwise for a given thread count whichever thread runs which chunk. The calling
// thread takes part: it claims chunks like the helpers do and, once none is left unclaimed, waits
// only for the chunks a helper is still running. A helper that the scheduler has not run yet (the
// cores are busy with other processes) claims nothing, so it delays nobody: under load a loop
// degrades to the caller running every chunk itself, about the speed of one thread. The BLAS runs
// on one thread inside each chunk (pg/gemm.h splits a product into chunks).
#pragma once
#include <cstdint>

namespace pg {

// Threads for parallel loops and the BLAS together (the caller and n - 1 helpers).
void set_num_threads(int n);
int get_num_threads();

// Whether this thread is running a chunk of a loop (a loop started there runs inline).
bool in_parallel_loop();

// Runs body(ctx, chunk) for chunk in [0, chunks), on the pool when it can (one loop at a time;
// a loop started inside a chunk, or while another thread's loop runs, runs inline).
void run_chunks(int64_t chunks, void (*body)(void*, int64_t), void* ctx);

// Calls fn(begin, end) over [0, n) in chunks of at least `grain` elements, at most one chunk per
// thread; runs inline when n < 2 * grain or one thread is set. fn must not throw (check everything
// in the builder, before the step runs).
template <class F> void parallel_for(int64_t n, int64_t grain, F fn) {
  const int threads = get_num_threads();
  if (n < 2 * grain || threads <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  int64_t chunks = n / grain;
  if (chunks > threads) chunks = threads;
  struct Loop {
    F* fn;
    int64_t n, chunks;
  } loop{&fn, n, chunks};
  run_chunks(chunks, [](void* ctx, int64_t c) {
    const Loop& l = *static_cast<Loop*>(ctx);
    (*l.fn)(l.n * c / l.chunks, l.n * (c + 1) / l.chunks);
  }, &loop);
}

}  // namespace pg
