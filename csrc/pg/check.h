// Errors raised by kernels and the runtime. Nothing here aborts: bind.cc maps ShapeError to
// ValueError, DTypeError to TypeError, PreconditionError to _C.UninitializedError and StepError to
// _C.StepError (with the step's index, from which Python names the op).
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace pg {

struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
struct DTypeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
struct PreconditionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A step of a plan refused its operands (a ShapeError or DTypeError of its kernel).
struct StepError : std::runtime_error {
  StepError(int step, const std::string& what) : std::runtime_error(what), step(step) {}
  int step;
};
// A run stopped before step `step` (pg/signals.h): a SIGINT arrived, or its deadline passed.
struct Interrupted : std::runtime_error {
  explicit Interrupted(int step) : std::runtime_error("interrupted by SIGINT"), step(step) {}
  int step;
};
struct DeadlineExceeded : std::runtime_error {
  explicit DeadlineExceeded(int step) : std::runtime_error("the run's deadline passed"), step(step) {}
  int step;
};

// "<op>: <message>", printf-style.
template <class... Args>
std::string format_error(const char* op, const char* fmt, Args... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return std::string(op) + ": " + buf;
}

}  // namespace pg

// PG_CHECK(cond, op, fmt, ...): throw pg::ShapeError("op: message") when cond is false.
#define PG_CHECK(cond, op, ...) \
  do { \
    if (!(cond)) throw ::pg::ShapeError(::pg::format_error(op, __VA_ARGS__)); \
  } while (0)

#define PG_CHECK_DTYPE(cond, op, ...) \
  do { \
    if (!(cond)) throw ::pg::DTypeError(::pg::format_error(op, __VA_ARGS__)); \
  } while (0)
