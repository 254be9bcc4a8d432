// Float32 2-D max and average pooling by oneDNN: the four kernels of pool.cc's builders, on the same
// layout (x and y NHWC, taken as they are) and padding. Average pooling is oneDNN's
// pooling_avg_exclude_padding: each window is divided by the number of its positions inside the
// input, TensorFlow's rule for SAME padding.
//
// Threads: as conv_onednn.cc. Each primitive runs on the thread that calls it (kernels/onednn.h) and
// pygrad's pool splits the batch: with t threads, into min(t, n) runs of whole images, image
// boundaries n * k / chunks. A primitive is created per run size when the plan is built for the
// thread count then set, and later (once, under a lock) for a thread count set after that. Each
// output element is computed by one thread from the shapes alone, so for a given thread count the
// results repeat bitwise. A single image's forward (batch-1 inference) runs as one primitive on t
// OpenMP threads instead, as the convolutions' does: Inception v3's 3x3 average pools at batch 1
// took as long on two threads as on one.
//
// The max rule. pygrad's (pool.cc) is "the first maximum in the window's row-major scan order wins,
// and a NaN, once met, wins and stays". oneDNN's starts from the lowest float and takes a value
// only when it is strictly larger: on ties the first maximum wins too, and its workspace (the
// argmax the backward routes the gradient by) is that first maximum; but a NaN never wins, and a
// window of -inf only gives the lowest float. So after oneDNN's forward each run of images is
// checked: if its input holds a NaN, or its output the lowest float, the run is computed again by
// the direct kernels (pool.cc), whose results then stand. Inputs without NaN get oneDNN's bits,
// which are the direct kernels' (a max is exact).
//
// Max backward: the kernel gets (x, y, dy), as TensorFlow's MaxPoolGrad, and no workspace, so each
// run first runs a training forward that writes the maxima and the workspace to the thread's
// scratch (y is only checked for its shape, as by the direct kernel), checks them as above, then
// runs oneDNN's backward. Where windows overlap, an input position that is the maximum of several
// windows gets their gradients summed in oneDNN's order, which may differ from the direct kernel's
// by rounding; the average backward likewise.
//
// Scratch: the scratchpads, the workspace and the backward's maxima are the calling thread's
// scratch (pg/scratch.h).
//
// Served: every float32 pooling with nonempty operands for which oneDNN has an implementation other
// than its reference one; pool.cc keeps the others.

#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/onednn.h"
#include "kernels/pool.h"
#include "pg/parallel.h"

namespace pg {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

bool is_max(PoolPass pass) { return pass == PoolPass::max_forward || pass == PoolPass::max_backward; }

// Whether p[0, n) holds a NaN. Counted in blocks (the compare-and-add loop vectorizes), stopping at
// the first block that holds one; compiled also for AVX2 and AVX-512, picked at load time, since it
// reads as much as the pooling does.
__attribute__((target_clones("avx512f", "avx2", "default"))) bool has_nan(const float* p, int64_t n) {
  constexpr int64_t kBlock = 4096;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int32_t len = int32_t(std::min(kBlock, n - i));
    const float* q = p + i;
    int32_t count = 0;
    for (int32_t j = 0; j < len; ++j) count += q[j] != q[j];
    if (count) return true;
  }
  return false;
}

// Whether p[0, n) holds the lowest float, what oneDNN's max gives a window without a number above it.
__attribute__((target_clones("avx512f", "avx2", "default"))) bool has_lowest(const float* p, int64_t n) {
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  int32_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i] == kLowest;
  return count != 0;
}

// The primitives for a run of `batch` images: the pass's own, and for the max backward the training
// forward that makes its workspace.
struct Primitive {
  dnnl::primitive prim;
  memory::desc scratch;
  int64_t batch;
  int threads;              // the OpenMP threads it runs on
  dnnl::primitive forward;  // max backward only
  memory::desc forward_scratch, workspace;
};

// The primitives of one pooling, by run size.
class PoolPrimitives {
 public:
  PoolPrimitives(PoolPass pass, const PoolGeom& g) : pass_(pass), g_(g) {}

  // The primitives for `batch` images; nullptr when only the reference implementation serves them.
  const Primitive* get(int64_t batch) {
    return cache_.get(batch, [this](int64_t b) { return create(b, 1); });
  }

  // The forward's primitive of one image on the current thread count's OpenMP threads, if that is
  // how this pass runs now (nullptr: it runs as get's runs).
  const Primitive* whole() {
    const int threads = get_num_threads();
    if (threads < 2 || g_.n != 1 || (pass_ != PoolPass::max_forward && pass_ != PoolPass::avg_forward)) return nullptr;
    return whole_.get(threads, [this](int64_t t) { return create(g_.n, int(t)); });
  }

  // The primitives of every run size of the current thread count's split (false if one is not served).
  bool prepare() {
    whole();
    return cache_.prepare(g_.n, [this](int64_t b) { return create(b, 1); });
  }

  // Runs the pass on image run [n0, n0 + p.batch). in: the pass's inputs (x; x, y, dy; x; dy).
  void run(const Primitive& p, int64_t n0, const float* const* in, float* out) const {
    const PoolGeom& g = g_;
    const int64_t x_off = n0 * g.image(), y_off = n0 * g.out_image();
    auto src = [](const float* q) { return const_cast<float*>(q); };
    PoolGeom run_geom = g;  // the run's images alone, for the direct kernels
    run_geom.n = p.batch;
    OpenMPThreads omp(p.threads);
    dnnl::engine& eng = onednn_engine();
    dnnl::stream stream(eng);
    switch (pass_) {
      case PoolPass::max_forward:
      case PoolPass::avg_forward: {
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(x_desc(p.batch), eng, src(in[0] + x_off))},
                                             {DNNL_ARG_DST, memory(y_desc(p.batch), eng, out + y_off)}};
        add_scratch(args, p.scratch, eng);
        p.prim.execute(stream, args);
        stream.wait();
        if (pass_ == PoolPass::max_forward && (has_nan(in[0] + x_off, p.batch * g.image()) ||
                                               has_lowest(out + y_off, p.batch * g.out_image())))
          direct_max_pool_fwd(in[0] + x_off, out + y_off, run_geom);
        break;
      }
      case PoolPass::max_backward: {
        struct Maxima;
        struct Workspace;
        float* maxima = thread_scratch<float, Maxima>(p.batch * g.out_image());
        const memory ws(p.workspace, eng, aligned_scratch<Workspace>(p.workspace.get_size()));
        std::unordered_map<int, memory> fwd{{DNNL_ARG_SRC, memory(x_desc(p.batch), eng, src(in[0] + x_off))},
                                            {DNNL_ARG_DST, memory(y_desc(p.batch), eng, maxima)},
                                            {DNNL_ARG_WORKSPACE, ws}};
        add_scratch(fwd, p.forward_scratch, eng);
        p.forward.execute(stream, fwd);
        stream.wait();
        if (has_nan(in[0] + x_off, p.batch * g.image()) || has_lowest(maxima, p.batch * g.out_image())) {
          direct_max_pool_bwd(in[0] + x_off, in[2] + y_off, out + x_off, run_geom);
          break;
        }
        std::unordered_map<int, memory> bwd{{DNNL_ARG_DIFF_DST, memory(y_desc(p.batch), eng, src(in[2] + y_off))},
                                            {DNNL_ARG_DIFF_SRC, memory(x_desc(p.batch), eng, out + x_off)},
                                            {DNNL_ARG_WORKSPACE, ws}};
        add_scratch(bwd, p.scratch, eng);
        p.prim.execute(stream, bwd);
        stream.wait();
        break;
      }
      case PoolPass::avg_backward: {
        std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, memory(y_desc(p.batch), eng, src(in[0] + y_off))},
                                             {DNNL_ARG_DIFF_SRC, memory(x_desc(p.batch), eng, out + x_off)}};
        add_scratch(args, p.scratch, eng);
        p.prim.execute(stream, args);
        stream.wait();
        break;
      }
    }
  }

 private:
  memory::desc x_desc(int64_t batch) const { return {{batch, g_.c, g_.h, g_.w}, memory::data_type::f32, tag::nhwc}; }
  memory::desc y_desc(int64_t batch) const { return {{batch, g_.c, g_.oh, g_.ow}, memory::data_type::f32, tag::nhwc}; }
  static bool is_reference(const std::string& impl) { return impl.find("ref") != std::string::npos; }

  static void add_scratch(std::unordered_map<int, memory>& args, const memory::desc& desc, dnnl::engine& eng) {
    const size_t bytes = desc.get_size();
    if (bytes == 0) return;
    struct DnnlScratch;  // a buffer apart from the other kernels' scratch
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(desc, eng, aligned_scratch<DnnlScratch>(bytes)));
  }

  std::unique_ptr<Primitive> create(int64_t batch, int threads) const {
    const PoolGeom& g = g_;
    OpenMPThreads omp(threads);  // implementations are chosen for the thread count they will run on
    dnnl::engine& eng = onednn_engine();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::dims strides{g.sh, g.sw}, kernel{g.kh, g.kw}, dilation{0, 0}, pad_l{g.pt, g.pl},
        pad_r{g.pad_bottom(), g.pad_right()};
    const auto alg = is_max(pass_) ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
    const bool backward = pass_ == PoolPass::max_backward || pass_ == PoolPass::avg_backward;
    try {
      dnnl::pooling_forward::primitive_desc fwd(
          eng, backward ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, alg,
          x_desc(batch), y_desc(batch), strides, kernel, dilation, pad_l, pad_r, attr);
      if (!backward) {
        if (is_reference(fwd.impl_info_str())) return nullptr;
        return std::make_unique<Primitive>(
            Primitive{dnnl::pooling_forward(fwd), fwd.scratchpad_desc(), batch, threads, {}, {}, {}});
      }
      dnnl::pooling_backward::primitive_desc bwd(eng, alg, x_desc(batch), y_desc(batch), strides, kernel, dilation,
                                                 pad_l, pad_r, fwd, attr);
      if (is_reference(bwd.impl_info_str()) || (pass_ == PoolPass::max_backward && is_reference(fwd.impl_info_str())))
        return nullptr;
      auto p = std::make_unique<Primitive>(
          Primitive{dnnl::pooling_backward(bwd), bwd.scratchpad_desc(), batch, threads, {}, {}, {}});
      if (pass_ == PoolPass::max_backward) {
        p->forward = dnnl::pooling_forward(fwd);
        p->forward_scratch = fwd.scratchpad_desc();
        p->workspace = fwd.workspace_desc();
      }
      return p;
    } catch (const dnnl::error&) {  // no implementation for these shapes
    }
    return nullptr;
  }

  PoolPass pass_;
  PoolGeom g_;
  RunSizeCache<Primitive> cache_;
  RunSizeCache<Primitive> whole_;  // by thread count
};

}  // namespace

Step onednn_pool_step(PoolPass pass, const PoolGeom& g, const std::vector<Operand>& in, const Operand& out,
                      Step fallback) {
  if (g.n == 0 || g.h == 0 || g.w == 0 || g.c == 0 || g.oh == 0 || g.ow == 0) return {};
  auto prims = std::make_shared<PoolPrimitives>(pass, g);
  if (!prims->prepare()) return {};
  std::vector<int> buffers;
  for (const Operand& o : in) buffers.push_back(o.buffer);
  return [prims, g, buffers, out, fallback](Frame& f) {
    const float* ins[3] = {};
    for (size_t i = 0; i < buffers.size(); ++i) ins[i] = static_cast<const float*>(f.ptr[buffers[i]]);
    float* po = static_cast<float*>(f.ptr[out.buffer]);
    if (const Primitive* whole = prims->whole()) return prims->run(*whole, 0, ins, po);
    const int64_t chunks = batch_chunks(g.n);
    // The run sizes' primitives, looked up (or created, for a thread count set since the build) here.
    const Primitive* small = prims->get(g.n / chunks);
    const Primitive* large = g.n % chunks ? prims->get(g.n / chunks + 1) : small;
    if (!small || !large) return fallback(f);
    parallel_for(chunks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) {
        const int64_t n0 = chunk_begin(g.n, chunks, k), batch = chunk_begin(g.n, chunks, k + 1) - n0;
        prims->run(batch == g.n / chunks ? *small : *large, n0, ins, po);
      }
    });
  };
}

}  // namespace pg
