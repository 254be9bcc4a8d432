// fused_elementwise: a chain or tree of float32 elementwise steps as one step
// (pygrad/fuse_elementwise.py). The steps' ops run as a small program over tiles of kTile elements: each
// instruction computes its tile of values from earlier ones, so the values nothing outside reads
// stay in a thread's scratch (in L1) and only the outputs are written to memory.
//
// in: the program's inputs; out: its outputs. The program computes values of one shape, attrs
//     "dims" ([rows, ..., n]: n is the last dimension). An input has that shape, one element (a
//     scalar), or n elements (a bias vector: [n] or [1, ..., n]); with a column offset c
//     (attrs in_columns, -1 for none) it is a matrix [rows, w] read at columns c .. c + n (a block
//     of a split), or a vector [w] read at c .. c + n (the block's slice of a bias). An output has
//     the shape, or with a column offset (out_columns) is a matrix [rows, w] written at columns
//     c .. c + n (a block of a concat), the other columns left as they are.
// attrs: program (ints, four per instruction: family, op, a, b), outputs (ints: the register each
//     output holds). Registers 0 .. inputs-1 are the inputs; instruction k writes register
//     inputs + k. Family 0 is a unary op (op: its index among pg/elementwise.def's PG_UNARY rows;
//     b unused), 1 a unary op's gradient (PG_UNARY_GRAD; a is y, b is dy), 2 a binary op
//     (PG_BINARY).
//
// Each op is the unfused kernels' inner loop over its functor (kernels/elementwise_ops.h) on the
// same elements, so the results are bitwise those of the unfused steps, for any thread count.
#include <algorithm>
#include <cstdlib>
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
    return [](const float* x, float* y, int64_t n) { unary_inner(x, y, n, Op{}); };
  }
}

template <class Grad> GradTile grad_tile() {
  return [](const float* y, const float* dy, float* dx, int64_t n) { grad_inner(y, dy, dx, n, Grad{}); };
}

template <class Op> BinaryTile binary_tile() {
  if constexpr (Op::domain == Domain::boolean || !std::is_same_v<decltype(Op{}(0.0f, 0.0f)), float>) {
    return nullptr;
  } else {
    return [](const float* a, bool va, const float* b, bool vb, float* c, int64_t n) {
      binary_inner(a, va, b, vb, c, n, Op{});
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
enum Kind { kFull, kScalar, kRow, kBlock };  // how an input covers the values' shape

struct Instruction {
  int family, a, b;
  UnaryTile unary;
  GradTile grad;
  BinaryTile binary;
};

struct Program {
  std::vector<Operand> in, out;
  std::vector<Kind> kinds;
  std::vector<int64_t> in_col, out_col;  // column offsets, -1 for none
  std::vector<Instruction> code;
  std::vector<int> output_of;  // per register: the output it is, or -1
  std::vector<int> slot;       // per register: its tile in the thread's scratch, or -1 (in memory)
  int slots = 0;
  int64_t numel = 0, row = 1;  // the values' elements and last dimension
};

// Gives each register held in scratch (a gathered block input, a value not written straight to an
// output) a tile, reusing the tile of a register no later instruction reads: a cell's dozen values
// then take four or five tiles, which stay in L1. An instruction may write the tile of an operand
// it reads last (the functors and vmath's loops allow y to alias x).
void assign_slots(Program& p) {
  const int ni = int(p.in.size()), nr = ni + int(p.code.size());
  std::vector<int> last(size_t(nr), -1);  // the last instruction reading each register
  for (size_t k = 0; k < p.code.size(); ++k) {
    last[size_t(p.code[k].a)] = int(k);
    if (p.code[k].family != kUnaryFamily) last[size_t(p.code[k].b)] = int(k);
  }
  p.slot.assign(size_t(nr), -1);
  std::vector<int> free_slots;
  auto take = [&](int r) {
    if (free_slots.empty()) free_slots.push_back(p.slots++);
    p.slot[size_t(r)] = free_slots.back();
    free_slots.pop_back();
  };
  for (int i = 0; i < ni; ++i)
    if (p.kinds[size_t(i)] == kBlock) take(i);
  for (size_t k = 0; k < p.code.size(); ++k) {
    for (int x : {p.code[k].a, p.code[k].family != kUnaryFamily ? p.code[k].b : -1})
      if (x >= 0 && last[size_t(x)] == int(k) && p.slot[size_t(x)] >= 0) {
        free_slots.push_back(p.slot[size_t(x)]);
        last[size_t(x)] = -2;  // freed once
      }
    const int r = ni + int(k), o = p.output_of[size_t(r)];
    if (o < 0 || p.out_col[size_t(o)] >= 0) take(r);
    if (last[size_t(r)] == -1 && p.slot[size_t(r)] >= 0) free_slots.push_back(p.slot[size_t(r)]);  // not read again
  }
}

struct FusedTag {};
struct RowTag {};

// The width of the matrix a block input or output is read from or written to.
int64_t width(const Operand& o) { return o.shape[o.shape.ndim - 1]; }

void run(const Program& p, Frame& f) {
  const int ni = int(p.in.size()), nr = ni + int(p.code.size());
  const int64_t rows = p.numel / p.row;
  // A tile is whole rows (rows_per_tile of them) when a row fits, else a block of one row.
  const bool whole_rows = p.row <= kTile;
  const int64_t rows_per_tile = std::max<int64_t>(1, kTile / p.row);
  const int64_t blocks = whole_rows ? 1 : (p.row + kTile - 1) / kTile;
  const int64_t tiles = whole_rows ? (rows + rows_per_tile - 1) / rows_per_tile : rows * blocks;
  const int64_t tile_len = whole_rows ? rows_per_tile * p.row : kTile;
  // A vector input repeated over a tile's rows, in the calling thread's scratch (the helpers read it).
  const float** rows_of = thread_scratch<const float*, RowTag>(ni);
  float* repeated = thread_scratch<float, RowTag>(int64_t(ni) * tile_len);
  for (int i = 0; i < ni; ++i) {
    const int64_t offset = p.kinds[i] == kRow ? std::max<int64_t>(0, p.in_col[i]) : 0;  // a bias's block
    const float* x = static_cast<const float*>(f.ptr[p.in[i].buffer]) + offset;
    rows_of[i] = x;
    if (p.kinds[i] == kRow && whole_rows) {
      float* rows = repeated + int64_t(i) * tile_len;
      for (int64_t r = 0; r < rows_per_tile; ++r) std::copy(x, x + p.row, rows + r * p.row);
      rows_of[i] = rows;
    }
  }
  const int64_t grain = std::max<int64_t>(1, kGrainOps / (tile_len * int64_t(p.code.size())));
  parallel_for(tiles, grain, [&](int64_t lo, int64_t hi) {
    float* scratch = thread_scratch<float, FusedTag>(int64_t(std::max(1, p.slots)) * kTile);
    const float** reg = thread_scratch<const float*, FusedTag>(nr);
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t row0 = whole_rows ? t * rows_per_tile : t / blocks, col = whole_rows ? 0 : (t % blocks) * kTile;
      const int64_t nrows = whole_rows ? std::min(rows_per_tile, rows - row0) : 1;
      const int64_t n = whole_rows ? nrows * p.row : std::min(kTile, p.row - col), start = row0 * p.row + col;
      for (int i = 0; i < ni; ++i) {
        const float* x = static_cast<const float*>(f.ptr[p.in[i].buffer]);
        if (p.kinds[i] == kBlock) {  // rows of a wider matrix: gathered, unless the tile is one row
          const int64_t w = width(p.in[i]);
          const float* first = x + row0 * w + p.in_col[i] + col;
          float* g = scratch + int64_t(p.slot[size_t(i)]) * kTile;
          for (int64_t r = 0; whole_rows && r < nrows; ++r)
            std::copy(first + r * w, first + r * w + p.row, g + r * p.row);
          reg[i] = whole_rows ? g : first;
        } else {
          reg[i] = p.kinds[i] == kFull ? x + start : p.kinds[i] == kRow ? rows_of[i] + col : rows_of[i];
        }
      }
      for (size_t k = 0; k < p.code.size(); ++k) {
        const int r = ni + int(k);
        const int o = p.output_of[r];
        float* dst = o >= 0 && p.out_col[o] < 0 ? static_cast<float*>(f.ptr[p.out[o].buffer]) + start
                                                 : scratch + int64_t(p.slot[size_t(r)]) * kTile;
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
        if (o >= 0 && p.out_col[o] >= 0) {  // a block of a wider matrix: scattered
          const int64_t w = width(p.out[o]);
          float* first = static_cast<float*>(f.ptr[p.out[o].buffer]) + row0 * w + p.out_col[o] + col;
          const int64_t len = whole_rows ? p.row : n;
          for (int64_t q = 0; q < nrows; ++q) std::copy(dst + q * p.row, dst + q * p.row + len, first + q * w);
        }
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
  const std::vector<int64_t>& dims = c.attrs.ints("dims", nm);
  PG_CHECK(!dims.empty() && int(dims.size()) <= kMaxDims, nm, "dims must name 1 to %d dimensions, got %zu", kMaxDims,
           dims.size());
  Shape shape;
  shape.ndim = int(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) shape.dim[d] = dims[d];
  p.numel = shape.numel();
  p.row = std::max<int64_t>(1, dims.back());
  const int64_t rows = p.numel / p.row;
  auto columns = [&](const char* key, size_t n) {
    std::vector<int64_t> v = c.attrs.has(key) ? c.attrs.ints(key, nm) : std::vector<int64_t>(n, -1);
    PG_CHECK(v.size() == n, nm, "%s needs one column offset (or -1) per operand, got %zu for %zu", key, v.size(), n);
    return v;
  };
  p.in_col = columns("in_columns", c.in.size());
  p.out_col = columns("out_columns", c.out.size());
  // a block of columns c .. c + n of a [rows, w] matrix (or of a [w] vector: matrix false)
  auto block = [&](const Operand& o, int64_t col, bool matrix) {
    return col >= 0 && (matrix ? o.shape.ndim == 2 && o.shape[0] == rows : o.shape.ndim == 1) &&
           col + p.row <= o.shape[o.shape.ndim - 1];
  };
  for (size_t i = 0; i < c.out.size(); ++i) {
    const Operand& o = c.out[i];
    PG_CHECK_DTYPE(o.dtype == DType::f32, nm, "outputs must be float32, got %s", dtype_name(o.dtype));
    PG_CHECK(p.out_col[i] < 0 ? o.shape == shape : block(o, p.out_col[i], true), nm,
             "output %zu must have the shape %s, or with column offset %lld be a [%lld, w] matrix holding columns "
             "up to %lld; got %s", i, shape.str().c_str(), (long long)p.out_col[i], (long long)rows,
             (long long)(p.out_col[i] + p.row), o.shape.str().c_str());
  }
  for (size_t i = 0; i < c.in.size(); ++i) {
    const Operand& o = c.in[i];
    PG_CHECK_DTYPE(o.dtype == DType::f32, nm, "inputs must be float32, got %s", dtype_name(o.dtype));
    const int64_t k = o.shape.numel(), col = p.in_col[i];
    const bool row = k == p.row && o.shape.ndim >= 1 && o.shape[o.shape.ndim - 1] == p.row;
    if (col >= 0) {
      const bool matrix = o.shape.ndim == 2;
      PG_CHECK(block(o, col, matrix), nm, "input %zu with column offset %lld must be a [%lld, w] matrix or a [w] "
               "vector holding columns up to %lld, got %s", i, (long long)col, (long long)rows,
               (long long)(col + p.row), o.shape.str().c_str());
      p.kinds.push_back(matrix ? kBlock : kRow);
      continue;
    }
    PG_CHECK(o.shape == shape || k == 1 || row, nm,
             "an input must have the shape %s, one element or the last dimension's %lld, got %s",
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
  for (size_t o = 0; o < c.out.size(); ++o) {
    // An output may be an input's buffer (a loop's value updated in place) when the input is read
    // whole and by no instruction after the one that writes the output: a tile's reads of it come
    // first.
    const int writer = int(outputs[o]) - ni;
    for (int i = 0; i < ni; ++i) {
      if (c.in[size_t(i)].buffer != c.out[o].buffer) continue;
      bool read_after = false;
      for (size_t k = size_t(writer) + 1; k < p.code.size(); ++k)
        read_after |= p.code[k].a == i || (p.code[k].family != kUnaryFamily && p.code[k].b == i);
      PG_CHECK(p.kinds[size_t(i)] == kFull && p.out_col[o] < 0 && !read_after, nm,
               "output %zu is input %d's buffer, which an instruction after its own reads", o, i);
    }
    for (size_t q = 0; q < o; ++q)  // outputs in one buffer: blocks of columns apart
      PG_CHECK(c.out[q].buffer != c.out[o].buffer ||
                   (p.out_col[q] >= 0 && p.out_col[o] >= 0 && std::abs(p.out_col[q] - p.out_col[o]) >= p.row), nm,
               "outputs %zu and %zu overlap in buffer %d", q, o, c.out[o].buffer);
  }
  assign_slots(p);
  return [p](Frame& f) { run(p, f); };
}

}  // namespace pg
