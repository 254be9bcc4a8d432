// Scratch memory for kernels: a buffer per thread and element type that grows and never shrinks.
#pragma once
#include <cstdint>
#include <memory>

namespace pg {

// n elements of T owned by the calling thread, uninitialized; valid until the thread's next call
// for the same T and Tag with a larger n. A distinct Tag gives a buffer apart from the others.
template <class T, class Tag = void> T* thread_scratch(int64_t n) {
  thread_local std::unique_ptr<T[]> buf;
  thread_local int64_t capacity = 0;
  if (capacity < n) {
    buf.reset(new T[size_t(n)]);
    capacity = n;
  }
  return buf.get();
}

}  // namespace pg
