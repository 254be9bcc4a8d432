#include "pg/signals.h"

#include <pthread.h>
#include <signal.h>

#include <cstddef>
#include <cstdlib>
#include <initializer_list>

namespace pg {
namespace {

constexpr size_t kStackBytes = size_t{64} << 10;  // frames of nested handlers, with room to spare

// The calling thread's alternate signal stack, unless it had one already.
class SignalStack {
 public:
  SignalStack() {
    stack_t old{};
    if (sigaltstack(nullptr, &old) != 0 || !(old.ss_flags & SS_DISABLE)) return;
    mem_ = std::malloc(kStackBytes);
    if (!mem_) return;
    stack_t ss{};
    ss.ss_sp = mem_;
    ss.ss_size = kStackBytes;
    if (sigaltstack(&ss, nullptr) != 0) {
      std::free(mem_);
      mem_ = nullptr;
    }
  }
  ~SignalStack() {
    if (!mem_) return;
    stack_t now{};
    if (sigaltstack(nullptr, &now) != 0 || now.ss_sp != mem_ || (now.ss_flags & SS_ONSTACK)) return;  // not ours now
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(&off, nullptr) == 0) std::free(mem_);
  }
  SignalStack(const SignalStack&) = delete;
  SignalStack& operator=(const SignalStack&) = delete;

 private:
  void* mem_ = nullptr;
};

}  // namespace

void use_signal_stack() {
  thread_local SignalStack stack;
  (void)stack;
}

void block_async_signals() {
  sigset_t set;
  sigfillset(&set);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) sigdelset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace pg
