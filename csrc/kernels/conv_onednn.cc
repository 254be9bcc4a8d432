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
// A single image (batch-1 inference) cannot be split so: its forward and input gradient run as one
// primitive on t OpenMP threads (oneDNN splits the output among them, each value computed by one
// thread in an order fixed by the shapes and t, so the results repeat bitwise for a given t). The
// filter gradient, whose threads would sum partial results, stays on one thread.
//
// Filter layout: each primitive takes the filter in the layout oneDNN picks for it (format_tag::any),
// a blocked one where its fast kernels need that. The filter (forward, input gradient) is reordered
// from HWIO into it at every run, and the filter gradient out of it, by reorder primitives; for the
// Deep MNIST layers that is 51,200 floats, microseconds beside the convolution's milliseconds.
// With the plain HWIO layout oneDNN serves both gradients by a gemm-based kernel that runs at about
// 60 % of the blocked kernels' rate (bench_kernels). A depthwise filter is reordered likewise (its
// kernels take the channels in blocks of 16); it is small (KH * KW * C * M floats).
//
// Epilogue (kernels/conv.h): the bias is oneDNN's bias argument; scale and shift are binary post-ops
// over the output channels (multiply, then add), the residual a binary add of an array of the
// output's layout (or, when the plan wrote the output over it, the sum post-op, which adds what y
// held), and the activation an eltwise post-op (relu, or clip_v2 to [0, 6] for relu6), applied to
// each output value while it is in registers.
//
// Scratch: each primitive's scratchpad, and the blocked filter (but a constant's, kept), are the
// calling thread's scratch (pg/scratch.h).
//
// bfloat16: a convolution whose two operands the plan made bfloat16 (pygrad/bfloat16.py) runs
// oneDNN's bfloat16 kernels (AVX512-BF16 or AMX), which accumulate in float32 and write the float32
// output; the epilogue's vectors and residual stay float32. The filter is then bfloat16 in HWIO (but
// the filter gradient, float32), reordered into the blocked layout as above.
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
  int threads;                 // the OpenMP threads it runs on
  memory::desc blocked;        // the primitive's filter layout
  dnnl::primitive reorder;     // HWIO <-> blocked; empty when blocked is HWIO
  bool reordered() const { return bool(reorder); }
  // A constant filter in the blocked layout, made at the first run (under packed_once).
  mutable std::once_flag packed_once;
  mutable memory packed;
};

// The primitives of one convolution, by run size.
class ConvPrimitives {
 public:
  // constant_filter: the filter (forward and input gradient) is a graph constant, reordered once.
  // in_type: the data type of the pass's two operands (f32, or bf16 with a float32 output).
  ConvPrimitives(ConvPass pass, const ConvGeom& g, ConvEpilogue epilogue, bool constant_filter,
                 memory::data_type in_type)
      : pass_(pass), g_(g), epilogue_(epilogue), constant_filter_(constant_filter && pass != ConvPass::backward_filter),
        in_(in_type) {}

  // The primitive for `batch` images; nullptr when only the reference implementation serves it.
  const Primitive* get(int64_t batch) {
    return cache_.get(batch, [this](int64_t b) { return create(b, 1); });
  }

  // The primitive of the whole batch, one image, on the current thread count's OpenMP threads, if
  // that is how this pass runs now (nullptr: it runs as get's runs).
  const Primitive* whole() {
    const int threads = get_num_threads();
    if (threads < 2 || g_.n != 1 || pass_ == ConvPass::backward_filter) return nullptr;
    return whole_.get(threads, [this](int64_t t) { return create(g_.n, int(t)); });
  }

  // The primitives of every run size of the current thread count's split (false if one is not served).
  bool prepare() {
    whole();
    return cache_.prepare(g_.n, [this](int64_t b) { return create(b, 1); });
  }

  // Runs the pass on image run [n0, n0 + batch): a and b are the step's inputs, out its output
  // (already offset by the caller for the filter gradient's partial sums).
  struct Vectors {  // the epilogue's [O] vectors in this run (null: absent)
    const float *bias, *scale, *shift, *residual;
  };
  void run(const Primitive& p, int64_t n0, const void* a, const void* b, void* out, Vectors vectors) const {
    const ConvGeom& g = g_;
    const int64_t x_off = n0 * g.h * g.w * g.c * int64_t(memory::data_type_size(x_type())),
                  y_off = n0 * g.oh * g.ow * g.o * int64_t(memory::data_type_size(y_type()));
    auto src = [](const void* p) { return static_cast<char*>(const_cast<void*>(p)); };
    auto dst = [](void* p) { return static_cast<char*>(p); };
    OpenMPThreads omp(p.threads);
    dnnl::engine& eng = onednn_engine();
    dnnl::stream stream(eng);
    std::unordered_map<int, memory> args;
    const memory hwio(w_desc(), eng, pass_ == ConvPass::backward_filter ? out : src(pass_ == ConvPass::forward ? b : a));
    // The residual (forward), unless it is y itself (in place).
    const float* residual =
        vectors.residual && !epilogue_.residual_in_place ? vectors.residual + n0 * g.oh * g.ow * g.o : nullptr;
    memory filter = hwio;
    if (p.reordered() && constant_filter_) {  // reordered once, at the first run
      std::call_once(p.packed_once, [&] {
        p.packed = memory(p.blocked, eng);
        p.reorder.execute(stream, {{DNNL_ARG_FROM, hwio}, {DNNL_ARG_TO, p.packed}});
        stream.wait();
      });
      filter = p.packed;
    } else if (p.reordered()) {
      struct BlockedFilter;  // the filter in the primitive's layout
      filter = memory(p.blocked, eng, aligned_scratch<BlockedFilter>(p.blocked.get_size()));
      if (pass_ != ConvPass::backward_filter) p.reorder.execute(stream, {{DNNL_ARG_FROM, hwio}, {DNNL_ARG_TO, filter}});
    }
    switch (pass_) {
      case ConvPass::forward:
        args = {{DNNL_ARG_SRC, memory(x_desc(p.batch), eng, src(a) + x_off)},
                {DNNL_ARG_WEIGHTS, filter},
                {DNNL_ARG_DST, memory(y_desc(p.batch), eng, dst(out) + y_off)}};
        break;
      case ConvPass::backward_input:
        args = {{DNNL_ARG_WEIGHTS, filter},
                {DNNL_ARG_DIFF_DST, memory(y_desc(p.batch), eng, src(b) + y_off)},
                {DNNL_ARG_DIFF_SRC, memory(x_desc(p.batch), eng, dst(out) + x_off)}};
        break;
      case ConvPass::backward_filter:
        args = {{DNNL_ARG_SRC, memory(x_desc(p.batch), eng, src(a) + x_off)},
                {DNNL_ARG_DIFF_DST, memory(y_desc(p.batch), eng, src(b) + y_off)},
                {DNNL_ARG_DIFF_WEIGHTS, filter}};
        break;
    }
    if (epilogue_.bias_buffer >= 0) args.emplace(DNNL_ARG_BIAS, memory(bias_desc(), eng, src(vectors.bias)));
    int post = 0;  // the binary post-ops' inputs, by their index among the post-ops
    for (const float* v : {vectors.scale, vectors.shift})
      if (v) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1, memory(channels_desc(), eng, src(v)));
    if (residual)
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1, memory(y_desc(p.batch), eng, src(residual)));
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
  // The data types of x, w and y in this pass: in_ for the operands, float32 for the output.
  memory::data_type x_type() const { return pass_ == ConvPass::backward_input ? memory::data_type::f32 : in_; }
  memory::data_type w_type() const { return pass_ == ConvPass::backward_filter ? memory::data_type::f32 : in_; }
  memory::data_type y_type() const { return pass_ == ConvPass::forward ? memory::data_type::f32 : in_; }
  memory::desc x_desc(int64_t batch, memory::data_type dt) const { return {{batch, g_.c, g_.h, g_.w}, dt, tag::nhwc}; }
  memory::desc x_desc(int64_t batch) const { return x_desc(batch, x_type()); }
  // The filter in the step's layout (HWIO; [KH, KW, G, C / G, O / G] grouped), or any layout.
  memory::desc w_desc() const {
    if (g_.groups == 1) return {{g_.o, g_.c, g_.kh, g_.kw}, w_type(), tag::hwio};
    const int64_t ci = g_.c / g_.groups, co = g_.o / g_.groups, tap = g_.groups * ci * co;
    return {{g_.groups, co, ci, g_.kh, g_.kw}, w_type(), {ci * co, 1, co, g_.kw * tap, tap}};
  }
  memory::desc w_any(memory::data_type dt) const {
    if (g_.groups == 1) return {{g_.o, g_.c, g_.kh, g_.kw}, dt, tag::any};
    return {{g_.groups, g_.o / g_.groups, g_.c / g_.groups, g_.kh, g_.kw}, dt, tag::any};
  }
  memory::desc w_any() const { return w_any(w_type()); }
  memory::desc bias_desc() const { return {{g_.o}, memory::data_type::f32, tag::a}; }
  memory::desc channels_desc() const { return {{1, g_.o, 1, 1}, memory::data_type::f32, tag::nhwc}; }
  memory::desc y_desc(int64_t batch, memory::data_type dt) const { return {{batch, g_.o, g_.oh, g_.ow}, dt, tag::nhwc}; }
  memory::desc y_desc(int64_t batch) const { return y_desc(batch, y_type()); }
  static bool is_reference(const std::string& impl) { return impl.find("ref") != std::string::npos; }

  std::unique_ptr<Primitive> create(int64_t batch, int threads) const {
    const ConvGeom& g = g_;
    OpenMPThreads omp(threads);  // implementations are chosen for the thread count they will run on
    dnnl::engine& eng = onednn_engine();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops post;
    if (epilogue_.scale_buffer >= 0) post.append_binary(dnnl::algorithm::binary_mul, channels_desc());
    if (epilogue_.shift_buffer >= 0) post.append_binary(dnnl::algorithm::binary_add, channels_desc());
    if (epilogue_.residual_in_place)
      post.append_sum(1.0f);
    else if (epilogue_.residual_buffer >= 0)
      post.append_binary(dnnl::algorithm::binary_add, y_desc(batch, memory::data_type::f32));
    if (epilogue_.activation == ConvActivation::relu) post.append_eltwise(dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    if (epilogue_.activation == ConvActivation::relu6) post.append_eltwise(dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f);
    if (post.len() > 0) attr.set_post_ops(post);
    const memory::dims strides{g.sh, g.sw}, dilates{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl},
        pad_r{g.pad_bottom(), g.pad_right()};
    const auto alg = dnnl::algorithm::convolution_direct;
    try {
      // The forward (the backward passes' hint): operands of in_'s type, a float32 output.
      const memory::desc fx = x_desc(batch, in_), fw = w_any(in_), fy = y_desc(batch, memory::data_type::f32);
      dnnl::convolution_forward::primitive_desc fwd =
          epilogue_.bias_buffer >= 0
              ? dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training, alg, fx, fw,
                                                          bias_desc(), fy, strides, dilates, pad_l, pad_r, attr)
              : dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training, alg, fx, fw, fy,
                                                          strides, dilates, pad_l, pad_r, attr);
      switch (pass_) {
        case ConvPass::forward:
          return made(dnnl::convolution_forward(fwd), fwd.impl_info_str(), fwd.scratchpad_desc(), batch, threads,
                      fwd.weights_desc());
        case ConvPass::backward_input: {
          dnnl::convolution_backward_data::primitive_desc pd(eng, alg, x_desc(batch), w_any(), y_desc(batch), strides,
                                                             dilates, pad_l, pad_r, fwd, attr);
          return made(dnnl::convolution_backward_data(pd), pd.impl_info_str(), pd.scratchpad_desc(), batch, threads,
                      pd.weights_desc());
        }
        case ConvPass::backward_filter: {
          dnnl::convolution_backward_weights::primitive_desc pd(eng, alg, x_desc(batch), w_any(), y_desc(batch),
                                                                strides, dilates, pad_l, pad_r, fwd, attr);
          return made(dnnl::convolution_backward_weights(pd), pd.impl_info_str(), pd.scratchpad_desc(), batch,
                      threads, pd.diff_weights_desc());
        }
      }
    } catch (const dnnl::error&) {  // no implementation for these shapes
    }
    return nullptr;
  }

  // The Primitive of prim, with the reorder its filter layout needs; nullptr for oneDNN's reference
  // implementation.
  std::unique_ptr<Primitive> made(dnnl::primitive prim, const std::string& impl, const memory::desc& scratch,
                                  int64_t batch, int threads, const memory::desc& blocked) const {
    if (is_reference(impl)) return nullptr;
    auto p = std::make_unique<Primitive>();
    p->prim = std::move(prim);
    p->scratch = scratch;
    p->batch = batch;
    p->threads = threads;
    p->blocked = blocked;
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
  bool constant_filter_;
  memory::data_type in_;
  RunSizeCache<Primitive> cache_;
  RunSizeCache<Primitive> whole_;  // by thread count
};

}  // namespace

Step onednn_conv2d_step(ConvPass pass, const ConvGeom& g, const Operand& a, const Operand& b, const Operand& out,
                        Step fallback, ConvEpilogue epilogue) {
  if (g.n == 0 || g.h == 0 || g.w == 0 || g.c == 0 || g.o == 0 || g.oh == 0 || g.ow == 0) return {};
  const Operand& filter = pass == ConvPass::forward ? b : a;
  const auto in_type = a.dtype == DType::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  auto prims = std::make_shared<ConvPrimitives>(pass, g, epilogue, filter.constant != nullptr, in_type);
  if (!prims->prepare()) return {};
  return [prims, pass, g, a, b, out, fallback, epilogue](Frame& f) {
    const void* pa = f.ptr[a.buffer];
    const void* pb = f.ptr[b.buffer];
    auto vec = [&](int buffer) { return buffer >= 0 ? static_cast<const float*>(f.ptr[buffer]) : nullptr; };
    const ConvPrimitives::Vectors vectors{vec(epilogue.bias_buffer), vec(epilogue.scale_buffer),
                                          vec(epilogue.shift_buffer), vec(epilogue.residual_buffer)};
    float* po = static_cast<float*>(f.ptr[out.buffer]);
    if (const Primitive* whole = prims->whole()) return prims->run(*whole, 0, pa, pb, po, vectors);
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
        prims->run(batch == g.n / chunks ? *small : *large, n0, pa, pb, dst, vectors);
      }
    });
    for (int64_t k = 1; k < chunks && partial; ++k) {
      const float* p = partial + (k - 1) * size;
      for (int64_t i = 0; i < size; ++i) po[i] += p[i];
    }
  };
}

}  // namespace pg
