// fused_elementwise: a chain or tree of float32 elementwise steps as one step (pygrad/fusion.py's
// fuse_elementwise). The steps' ops run as a small program over tiles of kTile elements: each
// instruction computes its tile of values from earlier ones, so the values nothing outside reads
// stay in a thread's scratch (in L1) and only the outputs are written to memory.
//
// in: the program's inputs, each of the outputs' shape, one element (a scalar), or a vector of the
//     last dimension (a bias: [n] or [1, ..., n]); out: its outputs, all of one shape.
// attrs: program (ints, four per instruction: family, op, a, b), outputs (ints: the register each
//     output holds). Registers 0 .. inputs-1 are the inputs; instruction k writes register
//     inputs + k. Family 0 is a unary op (op: its index among pg/elementwise.def's PG_UNARY rows;
//     b unused), 1 a unary op's gradient (PG_UNARY_GRAD; a is y, b is dy), 2 a binary op
//     (PG_BINARY).
//
// Each op is the functor the unfused kernels call (kernels/elementwise_ops.h) on the same elements,
// so the results are bitwise those of the unfused steps, for any thread count.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/elementwise_ops.h"
#include "pg/parallel.h"
#include "pg/scratch.h"
#include "runtime/kernel.h"

namespace pg {
namespace {
using namespace elementwise;

constexpr int64_t kTile = 1024;      // elements of one register's tile (4 KiB)
constexpr int64_t kGrainOps = 16384;  // element-operations per parallel chunk, at least

using UnaryTile = void (*)(const float* x, float* y, int64_t n);
using GradTile = void (*)(const float* y, const float* dy, float* dx, int64_t n);
// c = op(a, b); a vector operand (va, vb) has n elements, the other one.
using BinaryTile = void (*)(const float* a, bool va, const float* b, bool vb, float* c, int64_t n);

template <class Op> UnaryTile unary_tile() {
  if constexpr (Op::domain == Domain::boolean) {
    return nullptr;
  } else {
    return [](const float* x, float* y, int64_t n) {
      if constexpr (has_array<Op>::value) {
        Op::array(x, y, n);
      } else {
        const Op op;
        for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
      }
    };
  }
}

template <class Grad> GradTile grad_tile() {
  return [](const float* y, const float* dy, float* dx, int64_t n) {
    const Grad op;
    for (int64_t i = 0; i < n; ++i) dx[i] = op(y[i], dy[i]);
  };
}

template <class Op> BinaryTile binary_tile() {
  if constexpr (Op::domain == Domain::boolean || !std::is_same_v<decltype(Op{}(0.0f, 0.0f)), float>) {
    return nullptr;
  } else {
    return [](const float* a, bool va, const float* b, bool vb, float* c, int64_t n) {
      const Op op;
      if (va && vb) {
        for (int64_t i = 0; i < n; ++i) c[i] = op(a[i], b[i]);
      } else if (va) {
        const float s = *b;
        for (int64_t i = 0; i < n; ++i) c[i] = op(a[i], s);
      } else {
        const float s = *a;
        for (int64_t i = 0; i < n; ++i) c[i] = op(s, b[i]);
      }
    };
  }
}

const std::vector<UnaryTile> kUnary = {
#define PG_UNARY(n, Op) unary_tile<Op>(),
#include "pg/elementwise.def"
};
const std::vector<GradTile> kGrad = {
#define PG_UNARY_GRAD(n, Grad) grad_tile<Grad>(),
#include "pg/elementwise.def"
};
const std::vector<BinaryTile> kBinary = {
#define PG_BINARY(n, Op) binary_tile<Op>(),
#include "pg/elementwise.def"
};

enum Family { kUnaryFamily = 0, kGradFamily = 1, kBinaryFamily = 2 };
enum Kind { kFull, kScalar, kRow };  // how an input covers the outputs' shape

struct Instruction {
  int family, a, b;
  UnaryTile unary;
  GradTile grad;
  BinaryTile binary;
};

struct Program {
  std::vector<Operand> in, out;
  std::vector<Kind> kinds;
  std::vector<Instruction> code;
  std::vector<int> output_of;  // per register: the output it is, or -1
  int64_t numel = 0, row = 1;  // the outputs' elements and last dimension
};

struct FusedTag {};
struct RowTag {};

void run(const Program& p, Frame& f) {
  const int ni = int(p.in.size()), nr = ni + int(p.code.size());
  const int64_t rows = p.numel / p.row;
  // A tile is whole rows (rows_per_tile of them) when a row fits, else a block of one row.
  const int64_t rows_per_tile = std::max<int64_t>(1, kTile / p.row);
  const int64_t blocks = p.row <= kTile ? 1 : (p.row + kTile - 1) / kTile;
  const int64_t tiles = p.row <= kTile ? (rows + rows_per_tile - 1) / rows_per_tile : rows * blocks;
  const int64_t tile_len = p.row <= kTile ? rows_per_tile * p.row : kTile;
  std::vector<const float*> rows_of(ni, nullptr);  // a vector input repeated over a tile's rows
  std::vector<std::vector<float>> repeated;
  for (int i = 0; i < ni; ++i) {
    const float* x = static_cast<const float*>(f.ptr[p.in[i].buffer]);
    if (p.kinds[i] == kRow && p.row <= kTile) {
      repeated.emplace_back(size_t(tile_len));
      for (int64_t r = 0; r < rows_per_tile; ++r) std::copy(x, x + p.row, repeated.back().data() + r * p.row);
      rows_of[i] = repeated.back().data();
    } else {
      rows_of[i] = x;
    }
  }
  const int64_t grain = std::max<int64_t>(1, kGrainOps / (tile_len * int64_t(p.code.size())));
  parallel_for(tiles, grain, [&](int64_t lo, int64_t hi) {
    float* scratch = thread_scratch<float, FusedTag>(int64_t(p.code.size()) * kTile);
    const float** reg = thread_scratch<const float*, FusedTag>(nr);
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t start = p.row <= kTile ? t * tile_len : (t / blocks) * p.row + (t % blocks) * kTile;
      const int64_t col = p.row <= kTile ? 0 : (t % blocks) * kTile;
      const int64_t n = p.row <= kTile ? std::min(tile_len, p.numel - start) : std::min(kTile, p.row - col);
      for (int i = 0; i < ni; ++i)
        reg[i] = p.kinds[i] == kFull ? static_cast<const float*>(f.ptr[p.in[i].buffer]) + start
                 : p.kinds[i] == kRow ? rows_of[i] + col : rows_of[i];
      for (size_t k = 0; k < p.code.size(); ++k) {
        const int r = ni + int(k);
        const int o = p.output_of[r];
        float* dst = o >= 0 ? static_cast<float*>(f.ptr[p.out[o].buffer]) + start : scratch + int64_t(k) * kTile;
        const Instruction& in = p.code[k];
        if (in.family == kUnaryFamily) {
          in.unary(reg[in.a], dst, n);
        } else if (in.family == kGradFamily) {
          in.grad(reg[in.a], reg[in.b], dst, n);
        } else {
          const bool va = in.a >= ni || p.kinds[in.a] != kScalar, vb = in.b >= ni || p.kinds[in.b] != kScalar;
          in.binary(reg[in.a], va, reg[in.b], vb, dst, n);
        }
        reg[r] = dst;
      }
    }
  });
}

}  // namespace

Step build_fused_elementwise(const KernelCall& c) {
  const char* nm = c.kernel.c_str();
  PG_CHECK(!c.out.empty(), nm, "needs at least one output, got none");
  Program p;
  p.in = c.in;
  p.out = c.out;
  const Shape& shape = c.out[0].shape;
  p.numel = shape.numel();
  p.row = shape.ndim == 0 ? 1 : std::max<int64_t>(1, shape[shape.ndim - 1]);
  for (const Operand& o : c.out) {
    PG_CHECK_DTYPE(o.dtype == DType::f32, nm, "outputs must be float32, got %s", dtype_name(o.dtype));
    PG_CHECK(o.shape == shape, nm, "outputs must share one shape, got %s and %s", shape.str().c_str(),
             o.shape.str().c_str());
  }
  for (const Operand& o : c.in) {
    PG_CHECK_DTYPE(o.dtype == DType::f32, nm, "inputs must be float32, got %s", dtype_name(o.dtype));
    const int64_t k = o.shape.numel();
    const bool row = k == p.row && o.shape.ndim >= 1 && o.shape[o.shape.ndim - 1] == p.row;
    PG_CHECK(o.shape == shape || k == 1 || row, nm,
             "an input must have the outputs' shape %s, one element or the last dimension's %lld, got %s",
             shape.str().c_str(), (long long)p.row, o.shape.str().c_str());
    p.kinds.push_back(o.shape == shape ? kFull : k == 1 ? kScalar : kRow);
  }
  const std::vector<int64_t>& code = c.attrs.ints("program", nm);
  PG_CHECK(!code.empty() && code.size() % 4 == 0, nm, "program needs four ints per instruction, got %zu ints",
           code.size());
  const int ni = int(c.in.size());
  for (size_t k = 0; k < code.size(); k += 4) {
    const int r = ni + int(k / 4);
    Instruction in{int(code[k]), int(code[k + 2]), int(code[k + 3]), nullptr, nullptr, nullptr};
    const int64_t op = code[k + 1];
    auto operand_ok = [&](int x) { return x >= 0 && x < r; };
    PG_CHECK(operand_ok(in.a) && (in.family == kUnaryFamily || operand_ok(in.b)), nm,
             "instruction %d reads a register it has not got (%d, %d)", r - ni, in.a, in.b);
    if (in.family == kUnaryFamily && op >= 0 && op < int64_t(kUnary.size())) in.unary = kUnary[size_t(op)];
    if (in.family == kGradFamily && op >= 0 && op < int64_t(kGrad.size())) in.grad = kGrad[size_t(op)];
    if (in.family == kBinaryFamily && op >= 0 && op < int64_t(kBinary.size())) in.binary = kBinary[size_t(op)];
    PG_CHECK(in.unary || in.grad || in.binary, nm, "instruction %d: no float32 op %lld of family %d", r - ni,
             (long long)op, in.family);
    auto scalar = [&](int x) { return x >= 0 && x < ni && p.kinds[size_t(x)] == kScalar; };
    const bool refused = in.family == kBinaryFamily ? scalar(in.a) && scalar(in.b)
                         : in.family == kGradFamily ? scalar(in.a) || scalar(in.b)
                                                    : scalar(in.a);
    PG_CHECK(!refused, nm, "instruction %d reads a one-element input where it needs the shape", r - ni);
    p.code.push_back(in);
  }
  const int nr = ni + int(p.code.size());
  p.output_of.assign(size_t(nr), -1);
  const std::vector<int64_t>& outputs = c.attrs.ints("outputs", nm);
  PG_CHECK(outputs.size() == c.out.size(), nm, "outputs names %zu registers for %zu outputs", outputs.size(),
           c.out.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    PG_CHECK(outputs[o] >= ni && outputs[o] < nr && p.output_of[size_t(outputs[o])] < 0, nm,
             "output %zu must be a distinct instruction's register, got %lld", o, (long long)outputs[o]);
    p.output_of[size_t(outputs[o])] = int(o);
  }
  for (const Operand& o : c.out)
    for (const Operand& i : c.in)
      PG_CHECK(o.buffer != i.buffer, nm, "an output must not be an input's buffer (buffer %d)", o.buffer);
  return [p](Frame& f) { run(p, f); };
}

}  // namespace pg
