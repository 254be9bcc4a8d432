// Float32 2-D convolutions by oneDNN: the forward, input-gradient and filter-gradient kernels of
// conv.cc's builders, on the same layouts (x and y NHWC, w HWIO, taken as they are) and padding;
// and of depthwise.cc's, as grouped convolutions (ConvGeom's groups and dilations): a depthwise
// filter [KH, KW, C, M] is oneDNN's weights {G = C, M, 1, KH, KW} in that memory order, and output
// channel c * M + m, TensorFlow's, is oneDNN's grouped order (group c, its output m).
//
// Threads: each primitive runs on the thread that calls it (kernels/onednn.h), and pygrad's pool splits
// the batch: with t threads, into min(t, n) runs of whole images, image boundaries n * k / chunks,
// so the runs have at most two sizes. A primitive is created per run size, when the plan is built
// for the thread count then set, and later (once, under a lock) for a thread count set after that.
// One thread's result depends on the shapes alone, so for a given thread count the results repeat
// bitwise; the filter gradient's runs write partial sums that are added in run order.
//
// Filter layout: each primitive takes the filter in the layout oneDNN picks for it (format_tag::any),
// a blocked one where its fast kernels need that. The filter (forward, input gradient) is reordered
// from HWIO into it at every run, and the filter gradient out of it, by reorder primitives; for the
// Deep MNIST layers that is 51,200 floats, microseconds beside the convolution's milliseconds.
// With the plain HWIO layout oneDNN serves both gradients by a gemm-based kernel that runs at about
// 60 % of the blocked kernels' rate (bench_kernels). A depthwise filter is reordered likewise (its
// kernels take the channels in blocks of 16); it is small (KH * KW * C * M floats).
//
// Scratch: each primitive's scratchpad, and the blocked filter, are the calling thread's scratch
// (pg/scratch.h).
//
// Served: every float32 convolution with nonempty operands for which oneDNN has an implementation
// other than its reference one (which is slower than im2col); conv.cc (depthwise.cc) keeps the others.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/conv.h"
#include "kernels/onednn.h"
#include "pg/parallel.h"

namespace pg {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

// One primitive for a run of `batch` images, and the scratchpad bytes it needs; with the reorder
// of the filter into (forward, input gradient) or out of (filter gradient) the layout it takes,
// when that is not HWIO.
struct Primitive {
  dnnl::primitive prim;
  memory::desc scratch;
  int64_t batch;
  memory::desc blocked;        // the primitive's filter layout
  dnnl::primitive reorder;     // HWIO <-> blocked; empty when blocked is HWIO
  bool reordered() const { return bool(reorder); }
};

// The primitives of one convolution, by run size.
class ConvPrimitives {
 public:
  ConvPrimitives(ConvPass pass, const ConvGeom& g, ConvEpilogue epilogue) : pass_(pass), g_(g), epilogue_(epilogue) {}

  // The primitive for `batch` images; nullptr when only the reference implementation serves it.
  const Primitive* get(int64_t batch) {
    return cache_.get(batch, [this](int64_t b) { return create(b); });
  }

  // The primitives of every run size of the current thread count's split (false if one is not served).
  bool prepare() {
    return cache_.prepare(g_.n, [this](int64_t b) { return create(b); });
  }

  // Runs the pass on image run [n0, n0 + batch): a and b are the step's inputs, out its output
  // (already offset by the caller for the filter gradient's partial sums).
  void run(const Primitive& p, int64_t n0, const float* a, const float* b, float* out, const float* bias) const {
    const ConvGeom& g = g_;
    const int64_t x_off = n0 * g.h * g.w * g.c, y_off = n0 * g.oh * g.ow * g.o;
    auto src = [](const float* p) { return const_cast<float*>(p); };
    OneOpenMPThread one;
    dnnl::engine& eng = onednn_engine();
    dnnl::stream stream(eng);
    std::unordered_map<int, memory> args;
    struct BlockedFilter;  // the filter in the primitive's layout
    const memory hwio(w_desc(), eng, pass_ == ConvPass::backward_filter ? out : src(pass_ == ConvPass::forward ? b : a));
    const memory filter = p.reordered() ? memory(p.blocked, eng, aligned_scratch<BlockedFilter>(p.blocked.get_size()))
                                        : hwio;
    if (p.reordered() && pass_ != ConvPass::backward_filter)
      p.reorder.execute(stream, {{DNNL_ARG_FROM, hwio}, {DNNL_ARG_TO, filter}});
    switch (pass_) {
      case ConvPass::forward:
        args = {{DNNL_ARG_SRC, memory(x_desc(p.batch), eng, src(a + x_off))},
                {DNNL_ARG_WEIGHTS, filter},
                {DNNL_ARG_DST, memory(y_desc(p.batch), eng, out + y_off)}};
        break;
      case ConvPass::backward_input:
        args = {{DNNL_ARG_WEIGHTS, filter},
                {DNNL_ARG_DIFF_DST, memory(y_desc(p.batch), eng, src(b + y_off))},
                {DNNL_ARG_DIFF_SRC, memory(x_desc(p.batch), eng, out + x_off)}};
        break;
      case ConvPass::backward_filter:
        args = {{DNNL_ARG_SRC, memory(x_desc(p.batch), eng, src(a + x_off))},
                {DNNL_ARG_DIFF_DST, memory(y_desc(p.batch), eng, src(b + y_off))},
                {DNNL_ARG_DIFF_WEIGHTS, filter}};
        break;
    }
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_desc(), eng, src(bias)));
    const size_t bytes = p.scratch.get_size();
    if (bytes > 0) {
      struct DnnlScratch;  // a buffer apart from the other kernels' float scratch
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratch, eng, aligned_scratch<DnnlScratch>(bytes)));
    }
    p.prim.execute(stream, args);
    if (p.reordered() && pass_ == ConvPass::backward_filter)
      p.reorder.execute(stream, {{DNNL_ARG_FROM, filter}, {DNNL_ARG_TO, hwio}});
    stream.wait();
  }

 private:
  memory::desc x_desc(int64_t batch) const { return {{batch, g_.c, g_.h, g_.w}, memory::data_type::f32, tag::nhwc}; }
  // The filter in the step's layout (HWIO; [KH, KW, G, C / G, O / G] grouped), or any layout.
  memory::desc w_desc() const {
    if (g_.groups == 1) return {{g_.o, g_.c, g_.kh, g_.kw}, memory::data_type::f32, tag::hwio};
    const int64_t ci = g_.c / g_.groups, co = g_.o / g_.groups, tap = g_.groups * ci * co;
    return {{g_.groups, co, ci, g_.kh, g_.kw}, memory::data_type::f32, {ci * co, 1, co, g_.kw * tap, tap}};
  }
  memory::desc w_any() const {
    if (g_.groups == 1) return {{g_.o, g_.c, g_.kh, g_.kw}, memory::data_type::f32, tag::any};
    return {{g_.groups, g_.o / g_.groups, g_.c / g_.groups, g_.kh, g_.kw}, memory::data_type::f32, tag::any};
  }
  memory::desc bias_desc() const { return {{g_.o}, memory::data_type::f32, tag::a}; }
  memory::desc y_desc(int64_t batch) const { return {{batch, g_.o, g_.oh, g_.ow}, memory::data_type::f32, tag::nhwc}; }
  static bool is_reference(const std::string& impl) { return impl.find("ref") != std::string::npos; }

  std::unique_ptr<Primitive> create(int64_t batch) const {
    const ConvGeom& g = g_;
    OneOpenMPThread one;  // implementations are chosen for the thread count they will run on
    dnnl::engine& eng = onednn_engine();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (epilogue_.relu) {
      dnnl::post_ops relu;
      relu.append_eltwise(dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(relu);
    }
    const memory::dims strides{g.sh, g.sw}, dilates{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl},
        pad_r{g.pad_bottom(), g.pad_right()};
    const auto alg = dnnl::algorithm::convolution_direct;
    try {
      dnnl::convolution_forward::primitive_desc fwd =
          epilogue_.bias_buffer >= 0
              ? dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training, alg, x_desc(batch),
                                                          w_any(), bias_desc(), y_desc(batch), strides, dilates, pad_l,
                                                          pad_r, attr)
              : dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training, alg, x_desc(batch),
                                                          w_any(), y_desc(batch), strides, dilates, pad_l, pad_r,
                                                          attr);
      switch (pass_) {
        case ConvPass::forward:
          return made(dnnl::convolution_forward(fwd), fwd.impl_info_str(), fwd.scratchpad_desc(), batch,
                      fwd.weights_desc());
        case ConvPass::backward_input: {
          dnnl::convolution_backward_data::primitive_desc pd(eng, alg, x_desc(batch), w_any(), y_desc(batch), strides,
                                                             dilates, pad_l, pad_r, fwd, attr);
          return made(dnnl::convolution_backward_data(pd), pd.impl_info_str(), pd.scratchpad_desc(), batch,
                      pd.weights_desc());
        }
        case ConvPass::backward_filter: {
          dnnl::convolution_backward_weights::primitive_desc pd(eng, alg, x_desc(batch), w_any(), y_desc(batch),
                                                                strides, dilates, pad_l, pad_r, fwd, attr);
          return made(dnnl::convolution_backward_weights(pd), pd.impl_info_str(), pd.scratchpad_desc(), batch,
                      pd.diff_weights_desc());
        }
      }
    } catch (const dnnl::error&) {  // no implementation for these shapes
    }
    return nullptr;
  }

  // The Primitive of prim, with the reorder its filter layout needs; nullptr for oneDNN's reference
  // implementation.
  std::unique_ptr<Primitive> made(dnnl::primitive prim, const std::string& impl, const memory::desc& scratch,
                                  int64_t batch, const memory::desc& blocked) const {
    if (is_reference(impl)) return nullptr;
    auto p = std::make_unique<Primitive>(Primitive{std::move(prim), scratch, batch, blocked, {}});
    if (blocked != w_desc()) {
      dnnl::engine& eng = onednn_engine();
      const bool out_of = pass_ == ConvPass::backward_filter;
      p->reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, out_of ? blocked : w_desc(), eng,
                                                               out_of ? w_desc() : blocked));
    }
    return p;
  }

  ConvPass pass_;
  ConvGeom g_;
  ConvEpilogue epilogue_;  // the forward's
  RunSizeCache<Primitive> cache_;
};

}  // namespace

Step onednn_conv2d_step(ConvPass pass, const ConvGeom& g, const Operand& a, const Operand& b, const Operand& out,
                        Step fallback, ConvEpilogue epilogue) {
  if (g.n == 0 || g.h == 0 || g.w == 0 || g.c == 0 || g.o == 0 || g.oh == 0 || g.ow == 0) return {};
  auto prims = std::make_shared<ConvPrimitives>(pass, g, epilogue);
  if (!prims->prepare()) return {};
  return [prims, pass, g, a, b, out, fallback, epilogue](Frame& f) {
    const float* pa = static_cast<const float*>(f.ptr[a.buffer]);
    const float* pb = static_cast<const float*>(f.ptr[b.buffer]);
    const float* bias = epilogue.bias_buffer >= 0 ? static_cast<const float*>(f.ptr[epilogue.bias_buffer]) : nullptr;
    float* po = static_cast<float*>(f.ptr[out.buffer]);
    const int64_t chunks = batch_chunks(g.n);
    // The run sizes' primitives, looked up (or created, for a thread count set since the build) here.
    const Primitive* small = prims->get(g.n / chunks);
    const Primitive* large = g.n % chunks ? prims->get(g.n / chunks + 1) : small;
    if (!small || !large) return fallback(f);
    const int64_t size = g.filter_size();
    struct Partials;  // the filter gradient's per-run sums after the first
    float* partial = pass == ConvPass::backward_filter && chunks > 1 ? thread_scratch<float, Partials>((chunks - 1) * size)
                                                                    : nullptr;
    parallel_for(chunks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) {
        const int64_t n0 = chunk_begin(g.n, chunks, k), batch = chunk_begin(g.n, chunks, k + 1) - n0;
        float* dst = pass == ConvPass::backward_filter && k > 0 ? partial + (k - 1) * size : po;
        prims->run(batch == g.n / chunks ? *small : *large, n0, pa, pb, dst, bias);
      }
    });
    for (int64_t k = 1; k < chunks && partial; ++k) {
      const float* p = partial + (k - 1) * size;
      for (int64_t i = 0; i < size; ++i) po[i] += p[i];
    }
  };
}

}  // namespace pg
