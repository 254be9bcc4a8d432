#include "runtime/plan.h"

#include <cstdlib>
#include <cstring>

namespace pg {

namespace {
int64_t round_up(int64_t n) { return (n + 63) / 64 * 64; }
}  // namespace

Block::Block(int64_t bytes) : bytes_(bytes) {
  const int64_t size = round_up(bytes > 0 ? bytes : 1);
  void* p = std::aligned_alloc(64, size_t(size));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, size_t(size));
  ptr_.reset(p);
}

void Block::Free::operator()(void* p) const { std::free(p); }

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
  const int64_t bytes = shape.numel() * dtype_size(dtype);
  consts_.emplace_back(bytes);
  std::memcpy(consts_.back().data(), data, size_t(bytes));
  fixed_ptr_.push_back(consts_.back().data());
  return int(fixed_ptr_.size()) - 1;
}

int Plan::add_var(int var_id) {
  fixed_ptr_.push_back(store_->data(var_id));
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
  steps_.push_back({build_step(call), initializes_var});
  finalized_ = false;
}

void Plan::finalize() {
  int64_t total = 0;
  for (const auto& t : temps_) total += round_up(t.second);
  arena_ = Block(total);
  int64_t offset = 0;
  for (const auto& [buffer, bytes] : temps_) {
    fixed_ptr_[size_t(buffer)] = static_cast<char*>(arena_.data()) + offset;
    offset += round_up(bytes);
  }
  frame_.ptr = fixed_ptr_;
  finalized_ = true;
}

void Plan::execute(const std::vector<const void*>& feeds, const std::vector<void*>& outs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!finalized_) finalize();
  if (feeds.size() != feeds_.size() || outs.size() != fetches_.size())
    throw std::invalid_argument("Plan::execute: wrong number of feeds or outputs");
  for (int id : required_vars_)
    if (!store_->initialized(id)) throw PreconditionError(store_->name(id));
  for (size_t i = 0; i < feeds.size(); ++i) frame_.ptr[size_t(feed_buffers_[i])] = const_cast<void*>(feeds[i]);
  // A failing step names its index, so Python can name the op that built it.
  for (size_t i = 0; i < steps_.size(); ++i) {
    const StepEntry& s = steps_[i];
    try {
      s.fn(frame_);
    } catch (const std::invalid_argument& e) {
      throw StepError(int(i), e.what());
    }
    if (s.initializes_var >= 0) store_->set_initialized(s.initializes_var, true);
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    const Operand& o = fetches_[j];
    std::memcpy(outs[j], frame_.ptr[size_t(o.buffer)], size_t(o.shape.numel() * dtype_size(o.dtype)));
  }
}

}  // namespace pg
