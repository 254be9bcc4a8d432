#include "runtime/plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

#include "pg/signals.h"

namespace pg {

namespace {
int64_t round_up(int64_t n) { return (n + 63) / 64 * 64; }
}  // namespace

Block::Block(int64_t bytes) : bytes_(bytes) {
  const int64_t size = round_up(bytes > 0 ? bytes : 1);
  void* p = std::aligned_alloc(64, size_t(size));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, size_t(size));
  ptr_.reset(p, std::free);
}

Block Block::borrowed(void* data, int64_t bytes, std::shared_ptr<void> owner) {
  Block b;
  b.ptr_ = std::shared_ptr<void>(std::move(owner), data);  // owner's count, data's address
  b.bytes_ = bytes;
  return b;
}

// ---- variables ----

int VarStore::add(const std::string& name, DType dtype, const Shape& shape) {
  auto v = std::make_unique<Var>();
  v->name = name;
  v->dtype = dtype;
  v->shape = shape;
  v->block = Block(shape.numel() * dtype_size(dtype));
  vars_.push_back(std::move(v));
  return int(vars_.size()) - 1;
}

void VarStore::place(int id, void* data, int64_t bytes, std::shared_ptr<void> owner) {
  Var& v = at(id);
  if (v.in_plan)
    throw std::logic_error("VarStore.place: variable '" + v.name + "' is already used by a plan of this session; "
                            "place it before the first run that reads or writes it");
  if (bytes != v.shape.numel() * dtype_size(v.dtype) || reinterpret_cast<uintptr_t>(data) % 64 != 0)
    throw ShapeError("VarStore.place: variable '" + v.name + "' needs " +
                     std::to_string(v.shape.numel() * dtype_size(v.dtype)) + " bytes at a 64-byte aligned address");
  if (v.initialized) std::memcpy(data, v.block.data(), size_t(bytes));
  v.block = Block::borrowed(data, bytes, std::move(owner));
}

void* VarStore::data_for_plan(int id) const {
  Var& v = at(id);
  v.in_plan = true;
  return v.block.data();
}

VarStore::Var& VarStore::at(int id) const {
  if (id < 0 || id >= int(vars_.size())) throw std::out_of_range("VarStore: no variable " + std::to_string(id));
  return *vars_[size_t(id)];
}

// ---- plan ----

int Plan::add_feed(DType dtype, const Shape& shape) {
  const int id = int(fixed_ptr_.size());
  fixed_ptr_.push_back(nullptr);
  feeds_.push_back({id, dtype, shape});
  feed_buffers_.push_back(id);
  return id;
}

int Plan::add_const(DType dtype, const Shape& shape, const void* data) {
  fixed_ptr_.push_back(const_cast<void*>(data));  // kernels read inputs through const views
  constants_.resize(fixed_ptr_.size());
  constants_.back() = data;
  return int(fixed_ptr_.size()) - 1;
}

int Plan::add_var(int var_id) {
  fixed_ptr_.push_back(store_->data_for_plan(var_id));
  return int(fixed_ptr_.size()) - 1;
}

int Plan::add_temp(int64_t bytes) {
  temps_.emplace_back(int(fixed_ptr_.size()), bytes);
  fixed_ptr_.push_back(nullptr);
  return int(fixed_ptr_.size()) - 1;
}

void Plan::add_step(const KernelCall& call, int initializes_var) {
  for (const auto* list : {&call.in, &call.out})
    for (const Operand& o : *list)
      if (o.buffer < 0 || o.buffer >= int(fixed_ptr_.size()))
        throw std::out_of_range(call.kernel + ": operand refers to buffer " + std::to_string(o.buffer) +
                                " of a plan with " + std::to_string(fixed_ptr_.size()));
  KernelCall marked = call;
  for (Operand& o : marked.in) o.constant = size_t(o.buffer) < constants_.size() ? constants_[size_t(o.buffer)] : nullptr;
  steps_.push_back({build_step(marked), initializes_var});
  finalized_ = false;
}

int Plan::add_jump(int target, int cond_buffer) {
  if (cond_buffer >= int(fixed_ptr_.size()))
    throw std::out_of_range("jump: condition refers to buffer " + std::to_string(cond_buffer) + " of a plan with " +
                            std::to_string(fixed_ptr_.size()));
  steps_.push_back({Step(), -1, target, cond_buffer});
  finalized_ = false;
  return int(steps_.size()) - 1;
}

void Plan::set_target(int step, int target) {
  StepEntry& s = steps_.at(size_t(step));
  if (s.fn) throw std::invalid_argument("set_target: step " + std::to_string(step) + " is not a jump");
  s.target = target;
}

void Plan::finalize() {
  std::lock_guard<std::mutex> lock(mu_);  // (uncontended but for the first runs)
  if (finalized_) return;
  int64_t offset = 0;
  offsets_.clear();
  for (const auto& [buffer, bytes] : temps_) {
    offsets_.emplace_back(buffer, offset);
    offset += round_up(bytes);
  }
  arena_bytes_ = offset;
  for (size_t i = 0; i < steps_.size(); ++i)
    if (!steps_[i].fn && (steps_[i].target < 0 || steps_[i].target > int(steps_.size())))
      throw std::out_of_range("jump at step " + std::to_string(i) + " has no target in the plan");
  finalized_ = true;
}

int64_t Plan::arena_bytes() const {
  const_cast<Plan*>(this)->finalize();
  return arena_bytes_;
}

void Plan::execute(const void* const* feeds, size_t num_feeds, void* const* outs, size_t num_outs,
                   int64_t deadline_ns, std::vector<StepTrace>* trace) {
  use_signal_stack();  // a signal handled while a kernel runs must not land on its stack (pg/signals.h)
  finalize();
  if (num_feeds != feeds_.size() || num_outs != fetches_.size())
    throw std::invalid_argument("Plan::execute: wrong number of feeds or outputs");
  for (int id : required_vars_)
    if (!store_->initialized(id)) throw PreconditionError(store_->name(id));
  struct Lease {  // the run's arena, given back however the run ends
    Arenas& arenas;
    Block block;
    ~Lease() { arenas.give(std::move(block)); }
  } arena{*arenas_, arenas_->take(arena_bytes_)};
  Frame frame{fixed_ptr_, {}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    frame.stacks.swap(spare_stacks_);
  }
  struct StackLease {  // the stacks, emptied, kept for the next run however this one ends
    Plan& plan;
    Frame& frame;
    ~StackLease() {
      constexpr size_t kMaxKeptBytes = size_t{256} << 20;
      size_t kept = 0;
      for (auto& s : frame.stacks) {
        s.clear();
        kept += s.capacity();
      }
      if (kept > kMaxKeptBytes) return;
      std::lock_guard<std::mutex> lock(plan.mu_);
      if (plan.spare_stacks_.empty()) plan.spare_stacks_.swap(frame.stacks);
    }
  } stacks{*this, frame};
  char* base = static_cast<char*>(arena.block.data());
  for (const auto& [buffer, offset] : offsets_) frame.ptr[size_t(buffer)] = base + offset;
  for (size_t i = 0; i < num_feeds; ++i) frame.ptr[size_t(feed_buffers_[i])] = const_cast<void*>(feeds[i]);
  auto run = [&frame](const StepEntry& s, size_t i) {
    try {
      s.fn(frame);
    } catch (const std::invalid_argument& e) {
      throw StepError(int(i), e.what());
    }
  };
  const uint32_t thread = trace ? uint32_t(syscall(SYS_gettid)) : 0;  // every step runs on this thread
  const bool watch = sigint_stops_runs_here();
  const uint64_t sigints = watch ? sigint_count() : 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (watch && sigint_count() != sigints) throw Interrupted(int(i));
    if (deadline_ns && monotonic_ns() >= deadline_ns) throw DeadlineExceeded(int(i));
    const StepEntry& s = steps_[i];
    if (!s.fn) {  // a jump; the loop's ++i follows, hence the - 1
      if (s.cond_buffer < 0 || !*static_cast<const bool*>(frame.ptr[size_t(s.cond_buffer)])) i = size_t(s.target) - 1;
      continue;
    }
    if (!trace) {
      run(s, i);
    } else {
      const int64_t start = monotonic_ns();
      run(s, i);
      trace->push_back({int32_t(i), thread, start, monotonic_ns()});
    }
    if (s.initializes_var >= 0) store_->set_initialized(s.initializes_var, true);
  }
  for (size_t j = 0; j < num_outs; ++j) {
    const Operand& o = fetches_[j];
    std::memcpy(outs[j], frame.ptr[size_t(o.buffer)], size_t(o.shape.numel() * dtype_size(o.dtype)));
  }
}

// ---- arenas ----

Block Arenas::take(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i].bytes() >= bytes) {
        Block b = std::move(free_[i]);
        free_.erase(free_.begin() + long(i));
        return b;
      }
  }
  return Block(bytes);
}

void Arenas::give(Block block) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(block));
  std::sort(free_.begin(), free_.end(), [](const Block& a, const Block& b) { return a.bytes() < b.bytes(); });
  if (free_.size() > kMaxFree) free_.erase(free_.begin());  // the smallest goes
}

int64_t Arenas::free_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t total = 0;
  for (const Block& b : free_) total += b.bytes();
  return total;
}

}  // namespace pg
