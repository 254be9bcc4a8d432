// What the oneDNN-backed kernels (conv_onednn.cc, pool_onednn.cc, matmul_onednn.cc) share: the CPU
// engine, the scope that keeps oneDNN's OpenMP regions on the calling thread, the batch split, and
// aligned thread scratch.
//
// Threads: oneDNN (its GNU OpenMP build) would start an OpenMP team of its own inside pygrad's
// loops. Instead each primitive runs on the thread that calls it, with that thread's OpenMP thread
// count held at one (a per-thread setting, restored afterwards); pygrad's pool does the splitting.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "pg/parallel.h"
#include "pg/scratch.h"

namespace pg {

dnnl::engine& onednn_engine();

// While in scope, OpenMP regions started by the calling thread (oneDNN's) run on n threads.
class OpenMPThreads {
 public:
  explicit OpenMPThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OpenMPThreads() { omp_set_num_threads(saved_); }
  OpenMPThreads(const OpenMPThreads&) = delete;
  OpenMPThreads& operator=(const OpenMPThreads&) = delete;

 private:
  int saved_;
};

// While in scope, OpenMP regions started by the calling thread run on that thread alone.
class OneOpenMPThread : public OpenMPThreads {
 public:
  OneOpenMPThread() : OpenMPThreads(1) {}
};

// The batch split of the convolution and pooling kernels for the current thread count: `chunks` runs
// of whole images, run k holding images [n * k / chunks, n * (k + 1) / chunks).
inline int64_t batch_chunks(int64_t n) {
  const int64_t threads = get_num_threads();
  return threads <= 1 || n < 2 ? 1 : std::min<int64_t>(threads, n);
}
inline int64_t chunk_begin(int64_t n, int64_t chunks, int64_t k) { return n * k / chunks; }

// The primitives of one convolution or pooling by run size (images per run of the batch split), each
// made once, under a lock, by make(batch); nullptr where oneDNN serves a run size only by its
// reference kernel.
template <class P> class RunSizeCache {
 public:
  template <class Make> const P* get(int64_t batch, Make make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(batch);
    if (it == cache_.end()) it = cache_.emplace(batch, make(batch)).first;
    return it->second.get();
  }

  // Makes the primitives of every run size of n images' split for the current thread count; false
  // if one is not served.
  template <class Make> bool prepare(int64_t n, Make make) {
    const int64_t chunks = batch_chunks(n);
    for (int64_t k = 0; k < chunks; ++k)
      if (!get(chunk_begin(n, chunks, k + 1) - chunk_begin(n, chunks, k), make)) return false;
    return true;
  }

 private:
  std::mutex mu_;
  std::map<int64_t, std::unique_ptr<P>> cache_;
};

// `bytes` of the calling thread's scratch, 64-byte aligned, apart from other Tags' buffers.
template <class Tag> void* aligned_scratch(size_t bytes) {
  constexpr size_t kAlign = 64;
  auto* raw = thread_scratch<unsigned char, Tag>(int64_t(bytes + kAlign));
  return raw + (kAlign - reinterpret_cast<uintptr_t>(raw) % kAlign) % kAlign;
}

}  // namespace pg
