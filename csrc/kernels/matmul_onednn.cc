// Float32 matrix products by oneDNN, for pg/gemm.h's one-thread products: onednn_sgemm. Two
// routes, each measured on one thread against the others and scipy-openblas32 (bench_kernels, and
// the products of the benchmarks' models):
//  - the matmul primitive (its brgemm kernels): 1.1-1.4x OpenBLAS from about 32 rows and columns up
//    (the Deep MNIST fc1 layer and its gradients, the 784-256-256-10 MLP, 1024^3);
//  - dnnl_sgemm (its jit gemm) for the largest products whose b is not transposed, where it runs at
//    105-112 GFLOP/s against the primitive's 93-100 (op(a) transposed: from 2^27 multiply-adds, e.g.
//    the 4096-wide MLP's weight gradients, 1.13-1.19x; neither transposed: from 2^30, 1.04-1.08x);
//    below those sizes the two are within a few percent and the primitive is the more often ahead.
//
// A primitive is created for each (transposes, m, n, k, leading dimensions) the first time it is
// asked for and kept in a process-wide cache (at most kMaxPrimitives; the cache is emptied when full).
// The scratchpad is the calling thread's scratch, so runs of one primitive may overlap.
//
// onednn_gemm_bf16: the same primitive with bfloat16 operands and a float32 result (the plan's
// bfloat16 products, pygrad/bfloat16.py): oneDNN's brgemm kernels for AVX512-BF16 (or AMX), which
// accumulate in float32. A large one runs whole on the OpenMP threads, split by oneDNN: its AMX
// kernels take only dense operands, which pg/gemm.h's blocks of rows or columns are not (they ran
// on AVX512-BF16's jit gemm instead).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "kernels/onednn.h"
#include "pg/gemm.h"

namespace pg {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool cpu_has_bfloat16() {
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bf16) == bf16;
}

namespace {

using dnnl::memory;
// (transposes, m, n, k, leading dimensions, operand type, OpenMP threads it runs on)
using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, memory::data_type, int>;

struct Matmul {
  dnnl::matmul prim;
  memory::desc a, b, c, scratch;
};

constexpr size_t kMaxPrimitives = 1024;

// The primitive for key, or nullptr when oneDNN has only its reference implementation for it.
std::shared_ptr<const Matmul> matmul_for(const Key& key) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Matmul>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxPrimitives) cache.clear();
  const auto [ta, tb, m, n, k, lda, ldb, ldc, in_type, threads] = key;
  memory::desc a({m, k}, in_type, ta ? memory::dims{1, lda} : memory::dims{lda, 1});
  memory::desc b({k, n}, in_type, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
  memory::desc c({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
  std::shared_ptr<const Matmul> made;
  try {
    OpenMPThreads omp(threads);  // the implementation is chosen for the threads it runs on
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(onednn_engine(), a, b, c, attr);
    if (std::string(pd.impl_info_str()).find("ref") == std::string::npos)
      made = std::make_shared<const Matmul>(Matmul{dnnl::matmul(pd), a, b, c, pd.scratchpad_desc()});
  } catch (const dnnl::error&) {  // no implementation for these strides
  }
  cache.emplace(key, made);
  return made;
}

// c = op(a) @ op(b) by the matmul primitive on `threads` OpenMP threads, a and b of in_type (T);
// false when oneDNN has only its reference implementation.
template <class T>
bool primitive_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                    int64_t ldb, float* c, int64_t ldc, memory::data_type in_type, int threads = 1) {
  const std::shared_ptr<const Matmul> mm = matmul_for(Key{ta, tb, m, n, k, lda, ldb, ldc, in_type, threads});
  if (!mm) return false;
  OpenMPThreads omp(threads);
  dnnl::engine& eng = onednn_engine();
  dnnl::stream stream(eng);
  auto in = [](const T* p) { return const_cast<T*>(p); };
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(mm->a, eng, in(a))},
                                       {DNNL_ARG_WEIGHTS, memory(mm->b, eng, in(b))},
                                       {DNNL_ARG_DST, memory(mm->c, eng, c)}};
  if (const size_t bytes = mm->scratch.get_size()) {
    struct MatmulScratch;
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(mm->scratch, eng, aligned_scratch<MatmulScratch>(bytes)));
  }
  mm->prim.execute(stream, args);
  stream.wait();
  return true;
}

}  // namespace

bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc) {
  OneOpenMPThread one;
  if (!tb && m * n * k >= (int64_t{1} << (ta ? 27 : 30))) {
    return dnnl_sgemm(ta ? 'T' : 'N', 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) == dnnl_success;
  }
  return primitive_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, memory::data_type::f32);
}

bool onednn_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
                      const BFloat16* b, int64_t ldb, float* c, int64_t ldc, int threads) {
  return primitive_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, memory::data_type::bf16, threads);
}

}  // namespace pg
