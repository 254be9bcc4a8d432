// The executor. Python lowers the pruned graph of one (fetches, feeds, feed shapes) signature to a
// Plan once; every Session.run then calls Plan::execute, which runs the steps in order without
// touching Python. Buffers are feeds (bound per call), constants (not copied: the caller keeps
// them alive, so every plan of a session shares the graph's constants), variables (owned by the
// session's VarStore) and temporaries (one arena per call, at offsets shared by buffers whose
// lifetimes do not overlap: Python assigns them). Arenas come from the session's Arenas, so the
// scratch of a session is that of its largest plan times the runs in flight, not the sum over
// its plans; runs of one plan on several threads each have their own.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace pg {

// 64-byte aligned, zero-initialized, owning byte buffer; or (borrowed) memory that `owner` keeps
// alive, such as an array in shared memory.
class Block {
 public:
  Block() = default;
  explicit Block(int64_t bytes);
  Block(Block&&) = default;  // moved, never copied: one Block per allocation
  Block& operator=(Block&&) = default;
  static Block borrowed(void* data, int64_t bytes, std::shared_ptr<void> owner);
  void* data() const { return ptr_.get(); }
  int64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<void> ptr_;  // frees what it allocated; a borrowed block's shares its owner
  int64_t bytes_ = 0;
};

// A session's scratch arenas: a run takes one that fits and gives it back when it ends.
class Arenas {
 public:
  // A block of at least `bytes` (its contents are whatever an earlier run left).
  Block take(int64_t bytes);
  void give(Block block);
  int64_t free_bytes() const;

 private:
  static constexpr size_t kMaxFree = 4;  // blocks kept for later runs; the largest are kept
  mutable std::mutex mu_;
  std::vector<Block> free_;
};

// A session's variables: fixed dtype and shape, stable addresses, alive across runs.
class VarStore {
 public:
  int add(const std::string& name, DType dtype, const Shape& shape);
  int size() const { return int(vars_.size()); }
  void* data(int id) const { return at(id).block.data(); }
  DType dtype(int id) const { return at(id).dtype; }
  const Shape& shape(int id) const { return at(id).shape; }
  const std::string& name(int id) const { return at(id).name; }
  bool initialized(int id) const { return at(id).initialized; }
  void set_initialized(int id, bool v) { at(id).initialized = v; }
  // Moves variable id into `bytes` at data (64-byte aligned, the variable's size), kept alive by
  // owner: its value, if any, is copied there and every later run reads and updates it there.
  // Throws std::logic_error once a plan has taken the variable's address.
  void place(int id, void* data, int64_t bytes, std::shared_ptr<void> owner);
  // Where plans find the variable; after this call, place refuses.
  void* data_for_plan(int id) const;

 private:
  struct Var {
    std::string name;
    DType dtype;
    Shape shape;
    Block block;
    bool initialized = false;
    bool in_plan = false;
  };
  Var& at(int id) const;
  std::vector<std::unique_ptr<Var>> vars_;
};

// One step a traced run ran: its index in the plan, the thread that ran it (the OS thread id) and
// when it started and ended (monotonic_ns()). A step of a loop appears once per iteration.
struct StepTrace {
  int32_t step;
  uint32_t thread;
  int64_t start_ns;
  int64_t end_ns;
};

class Plan {
 public:
  Plan(std::shared_ptr<VarStore> store, std::shared_ptr<Arenas> arenas)
      : store_(std::move(store)), arenas_(std::move(arenas)) {}

  // Buffers, numbered in the order they are added.
  int add_feed(DType dtype, const Shape& shape);
  // A constant at data, which the caller keeps alive and unchanged while the plan exists.
  int add_const(DType dtype, const Shape& shape, const void* data);
  int add_var(int var_id);
  int add_temp(int64_t bytes);

  // Appends a step; `initializes_var` >= 0 marks that variable initialized once the step ran.
  void add_step(const KernelCall& call, int initializes_var = -1);
  // Control flow (tf.cond, tf.while_loop): a step that continues at step `target` (num_steps():
  // the end), always (cond_buffer < 0) or when the bool scalar in cond_buffer is false. Returns
  // its index; set_target changes the target of a jump added before its target was known.
  int add_jump(int target, int cond_buffer = -1);
  void set_target(int step, int target);
  // Variables that must be initialized before the first step runs.
  void require_initialized(int var_id) { required_vars_.push_back(var_id); }
  void set_fetches(std::vector<Operand> fetches) { fetches_ = std::move(fetches); }

  int num_feeds() const { return int(feeds_.size()); }
  const Operand& feed(int i) const { return feeds_.at(i); }
  const std::vector<Operand>& fetches() const { return fetches_; }
  int num_steps() const { return int(steps_.size()); }
  // The scratch a run of this plan takes.
  int64_t arena_bytes() const;

  // Runs every step. feeds[i] points at feed i's data (checked by the caller), outs[j] receives
  // a copy of fetch j. Throws PreconditionError for an uninitialized variable before any step.
  // Runs may overlap (each has its own frame and arena). Before each step (a loop's jump back is
  // one) a run stops with Interrupted when a SIGINT arrived since it began on a thread whose runs
  // stop so (pg/signals.h), and with DeadlineExceeded once monotonic_ns() passes deadline_ns (0:
  // none); what the steps before wrote stays written. With a trace, each step that ran (not the
  // jumps) is appended to it, in the order they ran; without one the run reads no clock for it.
  void execute(const void* const* feeds, size_t num_feeds, void* const* outs, size_t num_outs,
               int64_t deadline_ns = 0, std::vector<StepTrace>* trace = nullptr);

 private:
  void finalize();

  struct StepEntry {
    Step fn;  // empty for a jump
    int initializes_var;
    int target = -1;       // a jump's next step
    int cond_buffer = -1;  // a conditional jump's bool scalar
  };
  std::shared_ptr<VarStore> store_;
  std::shared_ptr<Arenas> arenas_;
  std::vector<Operand> feeds_;
  std::vector<int> feed_buffers_;
  std::vector<std::pair<int, int64_t>> temps_;    // (buffer, bytes)
  std::vector<std::pair<int, int64_t>> offsets_;  // (buffer, offset in the arena), when finalized
  std::vector<void*> fixed_ptr_;                // per buffer, null for feeds and temporaries
  std::vector<const void*> constants_;          // per buffer up to the last constant: its data, else null
  std::vector<StepEntry> steps_;
  std::vector<int> required_vars_;
  std::vector<Operand> fetches_;
  int64_t arena_bytes_ = 0;
  bool finalized_ = false;
  mutable std::mutex mu_;  // guards finalizing and spare_stacks_
  // The stacks of an earlier run (emptied, their capacity kept), for the next run: a loop's
  // gradient pushes its values there, and growing them afresh in every run cost page faults and
  // copies (an LSTM of 28 steps pushes 12 MB per run).
  std::vector<std::vector<char>> spare_stacks_;
};

}  // namespace pg
