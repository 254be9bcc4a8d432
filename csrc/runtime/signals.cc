#include "pg/signals.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
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

struct sigaction g_next_handler;  // the handler watch_sigint's calls after counting
std::atomic<bool> g_watching{false};
pthread_t g_watcher;

void count_sigint(int sig, siginfo_t* info, void* context) {
  g_sigints.fetch_add(1, std::memory_order_relaxed);
  if (g_next_handler.sa_flags & SA_SIGINFO) g_next_handler.sa_sigaction(sig, info, context);
  else g_next_handler.sa_handler(sig);
}

}  // namespace

std::atomic<uint64_t> g_sigints{0};

void watch_sigint() {
  struct sigaction now {};
  if (sigaction(SIGINT, nullptr, &now) != 0) return;
  const bool ours = (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == count_sigint;
  if (!ours) {
    if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN)) return;
    g_next_handler = now;
    struct sigaction mine = now;
    mine.sa_sigaction = count_sigint;
    mine.sa_flags = now.sa_flags | SA_SIGINFO;
    if (sigaction(SIGINT, &mine, nullptr) != 0) return;
  }
  g_watcher = pthread_self();
  g_watching.store(true, std::memory_order_release);
}

bool sigint_stops_runs_here() {
  return g_watching.load(std::memory_order_acquire) && pthread_equal(pthread_self(), g_watcher);
}

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

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
