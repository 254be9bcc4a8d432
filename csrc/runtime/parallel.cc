// pygrad's thread pool (see pg/parallel.h for what it guarantees).
//
// One loop runs at a time. Its state is one 64-bit word, the loop's generation in the high half
// and the next unclaimed chunk in the low half; a thread claims a chunk with a compare-and-swap
// on it, so a helper that wakes up late, after its loop has ended, can never claim a chunk of it.
// The caller claims chunks too and, when none is left, waits only for the chunks helpers are
// running. Idle helpers spin briefly for the next loop, then sleep.
//
// A helper descheduled in the middle of a chunk (the cores are busy with other processes) still
// makes the caller wait, up to a scheduler tick. So when a caller has waited that long, the pool
// runs loops inline, on the caller alone, for a while (20 ms, doubling up to a second while it
// recurs), then tries its helpers again: under load a step costs about one thread's time, alone it
// has every thread. Inline loops run the same chunks, so results do not change.
//
// It also looks at the machine: every kSampleEvery the caller reads how many threads are runnable
// (/proc/stat's procs_running) and, leaving out its own, keeps a running average. While other
// processes' threads leave fewer free cores than the pool has threads, loops run inline: a helper
// would only queue behind them, and the caller wait for it.
#include "pg/parallel.h"
#include "pg/signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

extern "C" void scipy_openblas_set_num_threads(int num_threads);

namespace pg {
namespace {

using Clock = std::chrono::steady_clock;
// How long an idle helper spins for the next loop before it sleeps, and how long a caller spins
// for the helpers' last chunks before it yields its core. Short: a spinning thread holds a core
// that a busy process beside us, or our own caller, could use.
constexpr auto kHelperSpin = std::chrono::microseconds(20);
constexpr auto kCallerSpin = std::chrono::microseconds(50);
// A wait for helpers this long (and longer than twice the caller's own share of the loop) means
// one was descheduled; then loops run inline for kSoloFirst, doubling up to kSoloMost while such
// waits recur (each within a second of the end of the last solo period).
constexpr auto kLongWait = std::chrono::microseconds(500);
constexpr auto kSoloFirst = std::chrono::milliseconds(20);
constexpr auto kSoloMost = std::chrono::milliseconds(1000);
constexpr auto kSampleEvery = std::chrono::milliseconds(5);

// The number of runnable threads on the machine (/proc/stat's procs_running), or -1 when unknown.
int runnable_threads() {
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[16384];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* p = std::strstr(buf, "procs_running ");
  return p ? std::atoi(p + 14) : -1;
}
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

thread_local bool t_in_loop = false;  // this thread is running a chunk or a loop

class Pool {
 public:
  void set_helpers(int n) {
    std::lock_guard<std::mutex> lock(loop_mu_);
    wanted_ = n;
  }

  void run(int64_t chunks, void (*body)(void*, int64_t), void* ctx) {
    std::unique_lock<std::mutex> lock(loop_mu_, std::try_to_lock);
    if (lock.owns_lock() && !t_in_loop && wanted_ > 0) sample_machine();
    if (!lock.owns_lock() || t_in_loop || wanted_ == 0 || crowded_ || Clock::now() < solo_until_) {
      // Inline, the same chunks in order, and each as on the pool: a loop inside one runs inline,
      // and a product inside one is one BLAS call (pg/gemm.h), so the bits do not change.
      const bool outer = t_in_loop;
      t_in_loop = true;
      for (int64_t c = 0; c < chunks; ++c) body(ctx, c);
      t_in_loop = outer;
      return;
    }
    start_helpers();
    body_.store(body, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    chunks_.store(chunks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = (state_.load(std::memory_order_relaxed) >> 32) + 1;
    state_.store(gen << 32, std::memory_order_release);  // publishes the loop
    {
      std::lock_guard<std::mutex> g(sleep_mu_);
      if (sleepers_ > 0) wake_.notify_all();
    }
    const auto start = Clock::now();
    t_in_loop = true;
    claim_and_run(gen);
    t_in_loop = false;
    const auto waiting = Clock::now(), until = waiting + kCallerSpin;
    for (int i = 0; done_.load(std::memory_order_acquire) < chunks; ++i) {
      if (i % 16 != 15 || Clock::now() < until) relax();
      else std::this_thread::yield();
    }
    // Chunks of unequal cost make a caller wait too, but about as long as its own share took.
    const auto now = Clock::now();
    if (now - waiting >= std::max<Clock::duration>(kLongWait, 2 * (waiting - start))) {
      // A helper was descheduled: go solo for a while, twice as long as last time if that was
      // recent (the load goes on), else for kSoloFirst.
      const bool recent = now - last_long_wait_ < 2 * solo_for_ + kSoloMost;
      solo_for_ = recent ? std::min<Clock::duration>(2 * solo_for_, kSoloMost) : Clock::duration(kSoloFirst);
      solo_until_ = now + solo_for_;
      last_long_wait_ = now;
    }
  }

 private:
  // Called with loop_mu_ held: every kSampleEvery, updates the average number of other processes'
  // runnable threads and whether they crowd the pool out (fewer free cores than its threads).
  void sample_machine() {
    const auto now = Clock::now();
    if (now < next_sample_) return;
    next_sample_ = now + kSampleEvery;
    const int running = runnable_threads();
    if (running < 0) return;
    // Not the caller, and not its helpers: a helper may be runnable while it still counts as a
    // sleeper (woken, not yet out of its wait), so all of them are left out.
    const double others = std::max(0, running - 1 - int(helpers_.size()));
    others_ += (others - others_) * 0.25;
    crowded_ = others_ > double(cores_ - (wanted_ + 1)) + 0.5;
  }

  // Runs chunks of loop `gen` while it has unclaimed ones.
  void claim_and_run(uint64_t gen) {
    uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
      if (s >> 32 != gen) return;
      const int64_t next = int64_t(s & 0xffffffffu);
      if (next >= chunks_.load(std::memory_order_relaxed)) return;
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      // The loop cannot end before this chunk is done, so body_ and ctx_ are still its own.
      body_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), next);
      done_.fetch_add(1, std::memory_order_release);
      s = state_.load(std::memory_order_acquire);
    }
  }

  void helper_loop() {
    uint64_t seen = state_.load(std::memory_order_acquire) >> 32;
    for (;;) {
      uint64_t gen = state_.load(std::memory_order_acquire) >> 32;
      const auto until = Clock::now() + kHelperSpin;
      for (int i = 0; gen == seen && (i % 16 != 15 || Clock::now() < until); ++i) {
        relax();
        gen = state_.load(std::memory_order_acquire) >> 32;
      }
      if (gen == seen) {
        std::unique_lock<std::mutex> lock(sleep_mu_);
        ++sleepers_;
        wake_.wait(lock, [&] { return stop_ || state_.load(std::memory_order_acquire) >> 32 != seen; });
        --sleepers_;
        if (stop_) return;
        gen = state_.load(std::memory_order_acquire) >> 32;
      }
      seen = gen;
      t_in_loop = true;
      claim_and_run(gen);
      t_in_loop = false;
    }
  }

  // Called with loop_mu_ held: makes the running helpers the wanted number.
  void start_helpers() {
    if (int(helpers_.size()) == wanted_) return;
    {
      std::lock_guard<std::mutex> g(sleep_mu_);
      stop_ = true;
      wake_.notify_all();
    }
    for (auto& t : helpers_) t.join();
    helpers_.clear();
    stop_ = false;
    for (int i = 0; i < wanted_; ++i)
      helpers_.emplace_back([this] {
        block_async_signals();  // (pg/signals.h)
        helper_loop();
      });
  }

  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> chunks_{0};
  std::atomic<void (*)(void*, int64_t)> body_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int64_t> done_{0};
  std::mutex loop_mu_;  // held by the thread running a loop; guards wanted_, helpers_ and solo_for_
  int wanted_ = 0;
  const int cores_ = std::max(1, int(std::thread::hardware_concurrency()));
  Clock::time_point next_sample_{};
  double others_ = 0;  // the running average of other processes' runnable threads
  bool crowded_ = false;  // they leave fewer free cores than the pool has threads
  Clock::duration solo_for_{kSoloFirst};
  Clock::time_point solo_until_{}, last_long_wait_{};  // loops start inline until solo_until_
  std::vector<std::thread> helpers_;
  std::mutex sleep_mu_;  // guards sleepers_ and stop_
  std::condition_variable wake_;
  int sleepers_ = 0;
  bool stop_ = false;
};

// Never destroyed: helpers may still sleep on it at exit. A child process of fork() has none of
// the parent's threads, so it gets a pool of its own, which starts its helpers when first used.
Pool* g_pool = nullptr;
int g_num_threads = 1;

Pool& pool() {
  static const bool init = [] {
    g_pool = new Pool;
    pthread_atfork(nullptr, nullptr, [] {
      g_pool = new Pool;  // the parent's pool (and its locks, threads) is left as it was
      g_pool->set_helpers(g_num_threads - 1);
    });
    return true;
  }();
  (void)init;
  return *g_pool;
}

}  // namespace

void set_num_threads(int n) {
  g_num_threads = n < 1 ? 1 : n;
  pool().set_helpers(g_num_threads - 1);
  scipy_openblas_set_num_threads(1);  // the BLAS runs inside chunks (pg/gemm.h)
}

int get_num_threads() { return g_num_threads; }

bool in_parallel_loop() { return t_in_loop; }

void run_chunks(int64_t chunks, void (*body)(void*, int64_t), void* ctx) { pool().run(chunks, body, ctx); }

}  // namespace pg
