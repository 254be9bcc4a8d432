// Signals while native code runs. A signal handled on a thread puts its frame (the registers, with
// the AVX-512 state, about 3 KB) below that thread's stack pointer. Handled while oneDNN's jit sgemm
// ran on that thread, it corrupted the heap: a loop of float32 products on two threads with a timer
// signal every 0.5 ms (a Python handler) aborted in glibc's free() ("corrupted size vs. prev_size")
// in every run, and Ctrl-C in a training loop in about half. With the frame on an alternate signal
// stack none did. So a thread that runs kernels has an alternate stack (Python installs its handlers,
// KeyboardInterrupt's among them, with SA_ONSTACK, so their frames go there), and the pool's helper
// threads, which never handle a signal, block the asynchronous ones: the kernel then delivers a
// signal sent to the process to a thread that takes it, Python's main thread or another.
#pragma once

namespace pg {

// Gives the calling thread an alternate signal stack, once (a thread that has one keeps its own);
// freed when the thread ends. Cheap after the first call.
void use_signal_stack();

// Blocks the asynchronous signals in the calling thread (not those a fault raises).
void block_async_signals();

}  // namespace pg
