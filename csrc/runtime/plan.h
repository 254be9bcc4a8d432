// The executor. Python lowers the pruned graph of one (fetches, feeds, feed shapes) signature to a
// Plan once; every Session.run then calls Plan::execute, which runs the steps in order without
// touching Python. Buffers are feeds (bound per call), constants (owned by the plan), variables
// (owned by the session's VarStore) and temporaries (one arena, shared by buffers whose lifetimes
// do not overlap: Python assigns them).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace pg {

// 64-byte aligned, zero-initialized, owning byte buffer.
class Block {
 public:
  Block() = default;
  explicit Block(int64_t bytes);
  void* data() const { return ptr_.get(); }
  int64_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> ptr_;
  int64_t bytes_ = 0;
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

 private:
  struct Var {
    std::string name;
    DType dtype;
    Shape shape;
    Block block;
    bool initialized = false;
  };
  Var& at(int id) const;
  std::vector<std::unique_ptr<Var>> vars_;
};

class Plan {
 public:
  explicit Plan(std::shared_ptr<VarStore> store) : store_(std::move(store)) {}

  // Buffers, numbered in the order they are added.
  int add_feed(DType dtype, const Shape& shape);
  int add_const(DType dtype, const Shape& shape, const void* data);
  int add_var(int var_id);
  int add_temp(int64_t bytes);

  // Appends a step; `initializes_var` >= 0 marks that variable initialized once the step ran.
  void add_step(const KernelCall& call, int initializes_var = -1);
  // Variables that must be initialized before the first step runs.
  void require_initialized(int var_id) { required_vars_.push_back(var_id); }
  void set_fetches(std::vector<Operand> fetches) { fetches_ = std::move(fetches); }

  int num_feeds() const { return int(feeds_.size()); }
  const Operand& feed(int i) const { return feeds_.at(i); }
  const std::vector<Operand>& fetches() const { return fetches_; }
  int num_steps() const { return int(steps_.size()); }
  int64_t arena_bytes() const { return arena_.bytes(); }

  // Runs every step. feeds[i] points at feed i's data (checked by the caller), outs[j] receives
  // a copy of fetch j. Throws PreconditionError for an uninitialized variable before any step.
  void execute(const std::vector<const void*>& feeds, const std::vector<void*>& outs);

 private:
  void finalize();

  struct StepEntry {
    Step fn;
    int initializes_var;
  };
  std::shared_ptr<VarStore> store_;
  std::vector<Operand> feeds_;
  std::vector<int> feed_buffers_;
  std::vector<Block> consts_;
  std::vector<std::pair<int, int64_t>> temps_;  // (buffer, bytes)
  std::vector<void*> fixed_ptr_;                // per buffer, null for feeds until bound
  std::vector<StepEntry> steps_;
  std::vector<int> required_vars_;
  std::vector<Operand> fetches_;
  Block arena_;
  Frame frame_;
  bool finalized_ = false;
  std::mutex mu_;
};

}  // namespace pg
