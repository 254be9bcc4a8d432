// Signals while native code runs. A signal handled on a thread puts its frame (the registers, with
// the AVX-512 state, about 3 KB) below that thread's stack pointer. Handled while oneDNN's jit sgemm
// ran on that thread, it corrupted the heap: a loop of float32 products on two threads with a timer
// signal every 0.5 ms (a Python handler) aborted in glibc's free() ("corrupted size vs. prev_size")
// in every run, and Ctrl-C in 6 of 15 training loops. With the frame on an alternate signal
// stack none did. So a thread that runs kernels has an alternate stack (Python installs its handlers,
// KeyboardInterrupt's among them, with SA_ONSTACK, so their frames go there), and the pool's helper
// threads, which never handle a signal, block the asynchronous ones: the kernel then delivers a
// signal sent to the process to a thread that takes it, Python's main thread or another.
//
// Ctrl-C stops a run between two steps (a loop's jump back is a step): watch_sigint() puts a handler
// in front of the one SIGINT has (Python's) that counts the signals and calls it; a plan running on
// the thread that called watch_sigint throws Interrupted before its next step once the count moved,
// and the binding then has Python run its handler (KeyboardInterrupt). A deadline stops a run the
// same way (DeadlineExceeded).
#pragma once
#include <atomic>
#include <cstdint>

namespace pg {

// Gives the calling thread an alternate signal stack, once (a thread that has one keeps its own);
// freed when the thread ends. Cheap after the first call.
void use_signal_stack();

// Counts SIGINTs from now on, for runs on the calling thread, chaining to SIGINT's handler (no-op
// when SIGINT has none, or already this one). Replacing the handler later (Python's signal.signal)
// ends the counting.
void watch_sigint();
// Whether runs on the calling thread stop at a SIGINT, and the count so far.
bool sigint_stops_runs_here();
extern std::atomic<uint64_t> g_sigints;  // (read before every step of a watched run: inline)
inline uint64_t sigint_count() { return g_sigints.load(std::memory_order_relaxed); }
// The clock deadlines are read against: CLOCK_MONOTONIC, Python's time.monotonic_ns().
int64_t monotonic_ns();

// Blocks the asynchronous signals in the calling thread (not those a fault raises).
void block_async_signals();

}  // namespace pg
