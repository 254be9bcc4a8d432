// pygrad_bench: times single native kernels, each called the way pygrad's executor calls it: a
// KernelCall (operands with dtype, shape and buffer; attributes) goes through pg::build_step once,
// and the returned Step runs on a Frame over buffers owned here. No dependency beyond the kernel
// library (and the OpenMP runtime and BLAS it links).
//
// Build. The CMake option PYGRAD_BUILD_BENCH is OFF by default, so the Python package build never
// compiles this file. The project always finds Python, pybind11 (for the _C module target) and the
// BLAS and oneDNN, which it locates with `python -c "import scipy_openblas32"` and the
// onednn-devel-cpu-gomp package's record: use a Python environment with pybind11,
// scipy-openblas32 and onednn-devel-cpu-gomp installed (FindPython prefers an active virtualenv; otherwise pass
// -DPython_EXECUTABLE=...). From the repository root, into a build directory of its own (build/ is
// ignored by git; any directory will do):
//
//   cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DPYGRAD_BUILD_BENCH=ON
//         -Dpybind11_DIR="$(python -m pybind11 --cmakedir)"      (one command)
//   cmake --build build/bench --target pygrad_bench
//   build/bench/pygrad_bench
//
// Building only the pygrad_bench target skips the Python extension. Add -DPYGRAD_NATIVE_ARCH=ON to
// time kernels compiled with -march=native. SKBUILD_PROJECT_VERSION, which scikit-build-core passes,
// is not needed. The executable's build RPATH holds the scipy_openblas32 and oneDNN lib dirs found
// at configure time, so it runs from the build tree and finds libscipy_openblas.so and libdnnl.so there.
//
// Run:
//   pygrad_bench [--filter SUBSTRING] [--threads N] [--min-time SECONDS] [--csv]
//     --filter SUBSTRING  only the cases whose name contains SUBSTRING. Names start with the kernel
//                         name from pg/kernels.def: "conv2d", "matmul_fwd/512", "_bwd", "apply_".
//     --threads N         threads for pygrad's parallel loops and gemms (pg::set_num_threads);
//                         default 1, for repeatable numbers.
//     --min-time SECONDS  timed seconds per case (default 0.2).
//     --csv               one CSV row per case on stdout; the run's settings go to stderr.
//
// Method. Each case's inputs are filled once with seeded pseudo-random values (the seed is a hash of
// the case name, so the data do not depend on --filter). Warm-up: calls for a tenth of min-time, at
// least two. Then batches of back-to-back calls, each batch sized to take about min-time / 20, until
// min-time has passed and at least 5 batches ran; a batch gives one time per call (batch time /
// calls). Reported: the median, p10 and p90 of those over the batches, in microseconds. On a loaded
// machine the median is the number to read; p90 shows the noise. The buffers stay the same between
// calls, so these are warm-cache times (most working sets here fit the L2 or L3 cache).
//
// Rates. GFLOP/s for the BLAS-backed kernels: matmul 2*m*n*k; conv2d and both its gradients
// 2 * N*OH*OW*O * KH*KW*C (the taps over padding included, as the im2col gemm computes them); the
// depthwise convolution and its gradients 2 * N*OH*OW*C*M * KH*KW (likewise). GB/s for
// the rest, from the compulsory traffic: every input read once, every output and every slot updated
// in place written once. A kernel that makes two passes over its data shows a GB/s below the
// memory's.
#include <cblas.h>  // scipy-openblas32: scipy_openblas_get_corename, scipy_openblas_get_config

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>  // execv

#include "pg/parallel.h"
#include "runtime/kernel.h"
#include "runtime/plan.h"  // pg::Block

namespace {

using pg::Attrs;
using pg::AttrValue;
using pg::DType;
using pg::Shape;

// ---- the native libraries' environment defaults ----
//
// The same defaults pygrad/__init__.py sets (_ENV_DEFAULTS, _AMD_AVX512_ENV_DEFAULTS; why each: its
// _native_library_defaults), each only when unset; tests/test_native.py checks that the two lists
// agree: OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=5000, OPENBLAS_THREAD_TIMEOUT=16, and OPENBLAS_CORETYPE=SkylakeX on
// AMD CPUs with AVX-512.
// libgomp and OpenBLAS read these variables in their load-time constructors, which run before main():
// a setenv in main is not seen by them in this process. Python sets them before it loads the
// extension; here main sets them and then re-executes the program once, so the fresh process image
// loads both libraries with them (see main).

// Whether /proc/cpuinfo shows an AMD CPU with the AVX-512 subsets OpenBLAS's SkylakeX kernels use.
bool amd_with_avx512() {
  std::ifstream f("/proc/cpuinfo");
  if (!f) return false;
  std::string info(size_t{1} << 16, '\0');
  f.read(&info[0], std::streamsize(info.size()));
  info.resize(size_t(f.gcount()));
  if (info.find("AuthenticAMD") == std::string::npos) return false;
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    for (const char* need : {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"})
      if (!flags.count(need)) return false;
    return true;
  }
  return false;
}

// Sets the defaults that are unset; true when it set any.
bool set_native_library_defaults() {
  bool changed = false;
  auto set_default = [&](const char* name, const char* value) {
    if (!std::getenv(name) && setenv(name, value, 0) == 0) changed = true;
  };
  set_default("OMP_WAIT_POLICY", "PASSIVE");
  set_default("GOMP_SPINCOUNT", "5000");
  set_default("OPENBLAS_THREAD_TIMEOUT", "16");
  if (amd_with_avx512()) set_default("OPENBLAS_CORETYPE", "SkylakeX");
  return changed;
}

// ---- cases ----

enum class Fill {
  uniform,   // uniform in [-1, 1)
  positive,  // uniform in [0, 1): slots that must not be negative (Adam's v, Adagrad's accum, ...)
  value,     // every element `value`: scalar hyperparameters
  one_hot,   // [rows, classes] rows with a single 1 at a random class: dense labels
  labels,    // class indices in [0, value): sparse labels
};

struct Arg {
  DType dtype = DType::f32;
  Shape shape;
  Fill fill = Fill::uniform;
  double value = 0;
  int same_as = -1;  // an output >= 0: that input's buffer itself (an in-place update)
};

Arg f32(Shape s, Fill fill = Fill::uniform) { return {DType::f32, s, fill, 0, -1}; }
Arg scalar(double v) { return {DType::f32, Shape(), Fill::value, v, -1}; }
Arg int32_labels(int64_t rows, int64_t classes) { return {DType::i32, Shape{rows}, Fill::labels, double(classes), -1}; }
Arg input_itself(const std::vector<Arg>& in, int i) {
  Arg a = in[size_t(i)];
  a.same_as = i;
  return a;
}

struct Case {
  std::string name;    // "<kernel>/<variant>"; --filter matches a substring of it
  std::string kernel;  // the name in pg/kernels.def
  std::string shapes;  // for the table
  std::vector<Arg> in, out;
  Attrs attrs;
  double flops = 0;  // per call, for the compute-bound kernels (GFLOP/s) ...
  double bytes = 0;  // ... or the compulsory memory traffic per call (GB/s)
};

int64_t nbytes(const Arg& a) { return a.shape.numel() * pg::dtype_size(a.dtype); }
double sum_bytes(const std::vector<Arg>& args) {
  double b = 0;
  for (const Arg& a : args) b += double(nbytes(a));
  return b;
}

std::string dims(const Shape& s) {
  std::string r = "[";
  for (int i = 0; i < s.ndim; ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

AttrValue I(int64_t v) { return v; }
AttrValue Ints(std::vector<int64_t> v) { return v; }
Attrs make_attrs(std::initializer_list<std::pair<const std::string, AttrValue>> kv) {
  Attrs a;
  a.values = kv;
  return a;
}

// TensorFlow's SAME padding before (top/left) one spatial dim, as pygrad/ops/conv_ops.py computes it.
int64_t same_pad_before(int64_t size, int64_t k, int64_t stride) {
  const int64_t out = (size + stride - 1) / stride;
  return std::max<int64_t>((out - 1) * stride + k - size, 0) / 2;
}

// ---- matmul: c[m, n] = a[m, k] @ b[k, n], and the two gradient forms ----
enum class MatmulForm { forward, grad_a, grad_b };

Case matmul(int64_t m, int64_t k, int64_t n, MatmulForm form) {
  const std::string mkn = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  Case c;
  c.kernel = "matmul_fwd";
  c.flops = 2.0 * double(m) * double(n) * double(k);
  switch (form) {
    case MatmulForm::forward:  // c = a @ b
      c.name = c.kernel + "/" + mkn;
      c.in = {f32({m, k}), f32({k, n})};
      c.out = {f32({m, n})};
      c.shapes = dims({m, k}) + "@" + dims({k, n});
      break;
    case MatmulForm::grad_a:  // da = dc @ b^T
      c.name = c.kernel + "/" + mkn + "/grad_a";
      c.in = {f32({m, n}), f32({k, n})};
      c.out = {f32({m, k})};
      c.attrs = make_attrs({{"transpose_b", I(1)}});
      c.shapes = dims({m, n}) + "@" + dims({k, n}) + "^T";
      break;
    case MatmulForm::grad_b:  // db = a^T @ dc
      c.name = c.kernel + "/" + mkn + "/grad_b";
      c.in = {f32({m, k}), f32({m, n})};
      c.out = {f32({k, n})};
      c.attrs = make_attrs({{"transpose_a", I(1)}});
      c.shapes = dims({m, k}) + "^T@" + dims({m, n});
      break;
  }
  return c;
}

// ---- softmax and log_softmax over the last axis: forward x -> y, backward (y, dy) -> dx ----
Case softmax_family(const std::string& kernel, int64_t rows, int64_t cols) {
  const bool backward = kernel.find("_bwd") != std::string::npos;
  const Shape s{rows, cols};
  Case c;
  c.kernel = kernel;
  c.name = kernel + "/" + std::to_string(rows) + "x" + std::to_string(cols);
  c.shapes = dims(s) + " axis 1";
  // softmax_bwd reads y as probabilities; the others take any values.
  const Fill y_fill = kernel == "softmax_bwd" ? Fill::positive : Fill::uniform;
  c.in = backward ? std::vector<Arg>{f32(s, y_fill), f32(s)} : std::vector<Arg>{f32(s)};
  c.out = {f32(s)};
  c.attrs = make_attrs({{"axis", I(1)}});
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

// ---- fused softmax cross-entropy: (logits, labels) -> (loss [N], backprop [N, C]) ----
Case xent(bool sparse, int64_t rows, int64_t classes) {
  const Shape s{rows, classes};
  Case c;
  c.kernel = sparse ? "sparse_softmax_xent_fwd" : "softmax_xent_fwd";
  c.name = c.kernel + "/" + std::to_string(rows) + "x" + std::to_string(classes);
  c.in = {f32(s), sparse ? int32_labels(rows, classes) : f32(s, Fill::one_hot)};
  c.out = {f32({rows}), f32(s)};
  c.shapes = dims(s) + (sparse ? " int32 labels" : " one-hot labels");
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

// ---- reductions of x [rows, cols] over axis 0, axis 1 or both ----
Case reduction(const std::string& op, int64_t rows, int64_t cols, const std::vector<int64_t>& axes) {
  Case c;
  c.kernel = "reduce_fwd";
  const bool all = axes.size() == 2;
  const std::string where = all ? "all" : "axis" + std::to_string(axes[0]);
  c.name = c.kernel + "/" + op + "/" + where;
  c.in = {f32({rows, cols})};
  c.out = {f32(all ? Shape() : Shape{axes[0] == 0 ? cols : rows})};
  c.attrs = make_attrs({{"op", std::string(op)}, {"axes", Ints(axes)}});
  c.shapes = dims({rows, cols}) + " -> " + dims(c.out[0].shape);
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

// ---- elementwise ----
Case binary(const std::string& op, const std::string& variant, Shape a, Shape b, Shape out) {
  Case c;
  c.kernel = "binary_fwd";
  c.name = c.kernel + "/" + op + "/" + variant;
  c.in = {f32(a), f32(b)};
  c.out = {f32(out)};
  c.attrs = make_attrs({{"op", std::string(op)}});
  c.shapes = dims(a) + "+" + dims(b);
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

Case unary(const std::string& kernel, const std::string& op, Shape s) {
  Case c;
  c.kernel = kernel;
  c.name = kernel + "/" + op;
  c.in = kernel == "unary_bwd" ? std::vector<Arg>{f32(s), f32(s)} : std::vector<Arg>{f32(s)};  // (y, dy) or x
  c.out = {f32(s)};
  c.attrs = make_attrs({{"op", std::string(op)}});
  c.shapes = dims(s);
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

// ---- conv2d, NHWC * HWIO, SAME, stride 1: forward (x, w) -> y, input gradient (w, dy) -> dx,
// filter gradient (x, dy) -> dw; impl "im2col" or "onednn" (kernels/conv.cc's attribute) ----
Case conv2d(const std::string& kernel, const std::string& layer, Shape x, Shape w, const std::string& impl) {
  const int64_t stride = 1;
  const Shape y{x[0], (x[1] + stride - 1) / stride, (x[2] + stride - 1) / stride, w[3]};
  Case c;
  c.kernel = kernel;
  c.name = kernel + "/" + layer + "/" + impl;
  if (kernel == "conv2d_fwd") {
    c.in = {f32(x), f32(w)};
    c.out = {f32(y)};
  } else if (kernel == "conv2d_bwd_input") {
    c.in = {f32(w), f32(y)};
    c.out = {f32(x)};
  } else {
    c.in = {f32(x), f32(y)};
    c.out = {f32(w)};
  }
  c.attrs = make_attrs({{"strides", Ints({stride, stride})},
                        {"pad_top", I(same_pad_before(x[1], w[0], stride))},
                        {"pad_left", I(same_pad_before(x[2], w[1], stride))},
                        {"impl", impl}});
  c.shapes = dims(x) + "*" + dims(w) + " SAME";
  c.flops = 2.0 * double(y.numel()) * double(w[0] * w[1] * w[2]);
  return c;
}

// ---- depthwise conv2d, NHWC * [KH, KW, C, M], SAME, stride 1: forward (x, w) -> y, input gradient
// (w, dy) -> dx, filter gradient (x, dy) -> dw; impl "direct" or "onednn" (kernels/depthwise.cc) ----
Case depthwise_conv2d(const std::string& kernel, const std::string& layer, Shape x, Shape w, const std::string& impl) {
  const Shape y{x[0], x[1], x[2], w[2] * w[3]};
  Case c;
  c.kernel = kernel;
  c.name = kernel + "/" + layer + "/" + impl;
  if (kernel == "depthwise_conv2d_fwd") {
    c.in = {f32(x), f32(w)};
    c.out = {f32(y)};
  } else if (kernel == "depthwise_conv2d_bwd_input") {
    c.in = {f32(w), f32(y)};
    c.out = {f32(x)};
  } else {
    c.in = {f32(x), f32(y)};
    c.out = {f32(w)};
  }
  c.attrs = make_attrs({{"strides", Ints({1, 1})},
                        {"dilations", Ints({1, 1})},
                        {"pad_top", I(same_pad_before(x[1], w[0], 1))},
                        {"pad_left", I(same_pad_before(x[2], w[1], 1))},
                        {"impl", impl}});
  c.shapes = dims(x) + "*" + dims(w) + " SAME";
  c.flops = 2.0 * double(y.numel()) * double(w[0] * w[1]);
  return c;
}

// ---- pooling, NHWC, SAME: forward x -> y; max_pool_bwd (x, y, dy) -> dx; avg_pool_bwd dy -> dx;
// impl "direct" or "onednn" (kernels/pool.cc's attribute) ----
Case pool(const std::string& kernel, const std::string& layer, Shape x, int64_t k, int64_t stride,
          const std::string& impl) {
  const Shape y{x[0], (x[1] + stride - 1) / stride, (x[2] + stride - 1) / stride, x[3]};
  Case c;
  c.kernel = kernel;
  c.name = kernel + "/" + layer + "/" + std::to_string(k) + "x" + std::to_string(k) + "s" + std::to_string(stride) +
           "/" + impl;
  if (kernel == "max_pool_fwd" || kernel == "avg_pool_fwd") {
    c.in = {f32(x)};
    c.out = {f32(y)};
    c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  } else if (kernel == "max_pool_bwd") {
    c.in = {f32(x), f32(y), f32(y)};  // the maxima are recomputed from x; y is only checked for its shape
    c.out = {f32(x)};
    c.bytes = double(nbytes(c.in[0]) + nbytes(c.in[2]) + nbytes(c.out[0]));
  } else {
    c.in = {f32(y)};
    c.out = {f32(x)};
    c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  }
  c.attrs = make_attrs({{"ksize", Ints({k, k})},
                        {"strides", Ints({stride, stride})},
                        {"pad_top", I(same_pad_before(x[1], k, stride))},
                        {"pad_left", I(same_pad_before(x[2], k, stride))},
                        {"impl", impl}});
  c.shapes = dims(x) + " SAME";
  return c;
}

// ---- fused optimizer updates on an n-element variable, in place. `reads` and `writes` count the
// n-element arrays the update reads and writes (variable and slots; gradient read) ----
Case optimizer(const std::string& kernel, int64_t n, std::vector<Arg> in, int reads, int writes) {
  Case c;
  c.kernel = kernel;
  c.name = kernel + "/" + (n % (1 << 20) == 0 ? std::to_string(n >> 20) + "Mi" : std::to_string(n));
  c.in = std::move(in);
  c.out = {input_itself(c.in, 0)};
  c.shapes = dims({n}) + " float32";
  c.bytes = double(reads + writes) * double(n) * 4.0;
  return c;
}

std::vector<Case> optimizers(int64_t n) {
  const Shape s{n};
  std::vector<Case> cases;
  // apply_gradient_descent(var, lr, grad)
  cases.push_back(optimizer("apply_gradient_descent", n, {f32(s), scalar(0.01), f32(s)}, 2, 1));
  // apply_momentum(var, accum, lr, grad, momentum)
  cases.push_back(optimizer("apply_momentum", n, {f32(s), f32(s), scalar(0.01), f32(s), scalar(0.9)}, 3, 2));
  // apply_adagrad(var, accum, lr, grad)
  cases.push_back(optimizer("apply_adagrad", n, {f32(s), f32(s, Fill::positive), scalar(0.01), f32(s)}, 3, 2));
  // apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad)
  cases.push_back(optimizer("apply_rms_prop", n,
                            {f32(s), f32(s, Fill::positive), f32(s), scalar(0.001), scalar(0.9), scalar(0.0),
                             scalar(1e-10), f32(s)},
                            4, 3));
  // apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad)
  cases.push_back(optimizer("apply_adam", n,
                            {f32(s), f32(s), f32(s, Fill::positive), scalar(0.9), scalar(0.999), scalar(0.001),
                             scalar(0.9), scalar(0.999), scalar(1e-8), f32(s)},
                            4, 3));
  return cases;
}

// ---- clip_by_global_norm(t_1..t_n, clip_norm) -> (c_1..c_n, norm) ----
Case clip_by_global_norm(const std::string& variant, const std::vector<Shape>& shapes, double clip_norm) {
  Case c;
  c.kernel = "clip_by_global_norm";
  c.name = c.kernel + "/" + variant;
  int64_t total = 0;
  for (const Shape& s : shapes) {
    c.in.push_back(f32(s));
    c.out.push_back(f32(s));
    total += s.numel();
  }
  c.in.push_back(scalar(clip_norm));
  c.out.push_back(f32(Shape()));
  c.shapes = std::to_string(shapes.size()) + " tensors, " + std::to_string(total) + " floats";
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

// ---- the tutorial's spelled-out cost and its gradient, fused: (z, y, g) -> (p, cost, dz) ----
Case softmax_nll(int64_t rows, int64_t classes) {
  const Shape s{rows, classes};
  Case c;
  c.kernel = "softmax_nll";
  c.name = c.kernel + "/" + std::to_string(rows) + "x" + std::to_string(classes);
  c.shapes = dims(s) + " with gradient";
  c.in = {f32(s), f32(s, Fill::one_hot), f32({1}, Fill::positive)};
  c.out = {f32(s), f32({}), f32(s)};
  c.attrs = make_attrs({{"scale", AttrValue(1.0 / double(rows))}});
  c.bytes = sum_bytes(c.in) + sum_bytes(c.out);
  return c;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };

  // The MNIST softmax-regression layer, and a square product.
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{100, 784, 10}, {512, 512, 512}})
    for (MatmulForm form : {MatmulForm::forward, MatmulForm::grad_a, MatmulForm::grad_b}) add(matmul(m, k, n, form));

  for (const char* kernel : {"softmax_fwd", "softmax_bwd", "log_softmax_fwd", "log_softmax_bwd"})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{100, 10}, {512, 1000}}) add(softmax_family(kernel, rows, cols));

  for (bool sparse : {false, true})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{100, 10}, {512, 1000}}) add(xent(sparse, rows, cols));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{100, 10}, {512, 1000}}) add(softmax_nll(rows, cols));

  for (const char* op : {"sum", "mean", "max"})
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{0}, {1}, {0, 1}}) add(reduction(op, 1000, 1000, axes));

  add(binary("add", "row_broadcast", {1000, 1000}, {1000}, {1000, 1000}));
  add(binary("add", "same_shape", {1000, 1000}, {1000, 1000}, {1000, 1000}));
  add(unary("unary_fwd", "relu", {1000, 1000}));
  add(unary("unary_fwd", "exp", {1000, 1000}));
  add(unary("unary_bwd", "relu", {1000, 1000}));

  // The Deep MNIST convolutions (batch 50): conv1 5x5x1x32 on 28x28, conv2 5x5x32x64 on 14x14.
  // Each by the im2col kernels and by oneDNN's.
  for (const char* kernel : {"conv2d_fwd", "conv2d_bwd_input", "conv2d_bwd_filter"})
    for (const char* impl : {"im2col", "onednn"}) {
      add(conv2d(kernel, "conv1", {50, 28, 28, 1}, {5, 5, 1, 32}, impl));
      add(conv2d(kernel, "conv2", {50, 14, 14, 32}, {5, 5, 32, 64}, impl));
    }
  // A classifier's 1x1 convolution over a pooled image (TF-Slim ResNet-50's logits), batch 32 and 1.
  for (const char* impl : {"im2col", "onednn"}) {
    add(conv2d("conv2d_fwd", "logits_b32", {32, 1, 1, 2048}, {1, 1, 2048, 1000}, impl));
    add(conv2d("conv2d_fwd", "logits_b1", {1, 1, 1, 2048}, {1, 1, 2048, 1000}, impl));
  }
  // A MobileNet depthwise layer (batch 32, 56x56x64, 3x3, multiplier 1), and one with multiplier 2;
  // each by the direct loops and by oneDNN's.
  for (const char* kernel : {"depthwise_conv2d_fwd", "depthwise_conv2d_bwd_input", "depthwise_conv2d_bwd_filter"})
    for (const char* impl : {"direct", "onednn"}) {
      add(depthwise_conv2d(kernel, "mobilenet", {32, 56, 56, 64}, {3, 3, 64, 1}, impl));
      add(depthwise_conv2d(kernel, "multiplier2", {32, 28, 28, 32}, {3, 3, 32, 2}, impl));
    }
  // The Deep MNIST convnet's pooling layers (2x2, stride 2), each by the direct kernels and by oneDNN's.
  for (const char* kernel : {"max_pool_fwd", "max_pool_bwd", "avg_pool_fwd", "avg_pool_bwd"})
    for (const char* impl : {"direct", "onednn"}) {
      add(pool(kernel, "pool1", {50, 28, 28, 32}, 2, 2, impl));
      add(pool(kernel, "pool2", {50, 14, 14, 64}, 2, 2, impl));
    }
  // Imported models' forward pools at batch 1 (bench_inference.py): ResNet-50's first max pool and a
  // shortcut's 1x1 subsample, Inception v3's 3x3 average pool of a 17x17 block and its four strided
  // 3x3 max pools (VALID there, SAME here: one row and column more).
  for (const char* impl : {"direct", "onednn"}) {
    add(pool("max_pool_fwd", "resnet_pool1", {1, 112, 112, 64}, 3, 2, impl));
    add(pool("max_pool_fwd", "resnet_subsample", {1, 56, 56, 256}, 1, 2, impl));
    add(pool("avg_pool_fwd", "inception_17x17", {1, 17, 17, 768}, 3, 1, impl));
    add(pool("max_pool_fwd", "inception_147", {1, 147, 147, 64}, 3, 2, impl));
    add(pool("max_pool_fwd", "inception_71", {1, 71, 71, 192}, 3, 2, impl));
    add(pool("max_pool_fwd", "inception_35", {1, 35, 35, 288}, 3, 2, impl));
    add(pool("max_pool_fwd", "inception_17", {1, 17, 17, 768}, 3, 2, impl));
  }

  for (Case& c : optimizers(int64_t{1} << 20)) add(std::move(c));

  // The Deep MNIST variables: conv1, conv2, fc1, fc2 weights and biases (3,274,634 floats).
  add(clip_by_global_norm("deep_mnist",
                          {{5, 5, 1, 32}, {32}, {5, 5, 32, 64}, {64}, {3136, 1024}, {1024}, {1024, 10}, {10}}, 5.0));
  return cases;
}

// ---- buffers ----

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

void fill(const Arg& a, void* data, std::mt19937_64& rng) {
  const int64_t n = a.shape.numel();
  if (a.dtype == DType::i32) {  // Fill::labels
    std::uniform_int_distribution<int32_t> cls(0, int32_t(a.value) - 1);
    auto* p = static_cast<int32_t*>(data);
    for (int64_t i = 0; i < n; ++i) p[i] = cls(rng);
    return;
  }
  auto* p = static_cast<float*>(data);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  switch (a.fill) {
    case Fill::uniform:
      for (int64_t i = 0; i < n; ++i) p[i] = float(2.0 * unit(rng) - 1.0);
      break;
    case Fill::positive:
      for (int64_t i = 0; i < n; ++i) p[i] = float(unit(rng));
      break;
    case Fill::value:
      std::fill(p, p + n, float(a.value));
      break;
    case Fill::one_hot: {  // Block memory starts zeroed
      const int64_t classes = a.shape[1];
      std::uniform_int_distribution<int64_t> cls(0, classes - 1);
      for (int64_t r = 0; r < a.shape[0]; ++r) p[r * classes + cls(rng)] = 1.0f;
      break;
    }
    case Fill::labels:
      break;
  }
}

// A kernel call over buffers owned here: inputs first, then the outputs that are not inputs.
struct Prepared {
  std::vector<pg::Block> blocks;
  pg::Frame frame;
  pg::KernelCall call;
};

void prepare(const Case& c, Prepared& p) {
  std::mt19937_64 rng(fnv1a(c.name));
  p.call.kernel = c.kernel;
  p.call.attrs = c.attrs;
  auto add_buffer = [&](const Arg& a) {
    p.blocks.emplace_back(nbytes(a));
    p.frame.ptr.push_back(p.blocks.back().data());
    fill(a, p.blocks.back().data(), rng);
    return int(p.frame.ptr.size()) - 1;
  };
  for (const Arg& a : c.in) p.call.in.push_back({add_buffer(a), a.dtype, a.shape});
  for (const Arg& a : c.out)
    p.call.out.push_back({a.same_as >= 0 ? p.call.in[size_t(a.same_as)].buffer : add_buffer(a), a.dtype, a.shape});
}

// ---- timing ----

struct Timing {
  double median_us = 0, p10_us = 0, p90_us = 0;
  int64_t calls_per_batch = 0, batches = 0;
};

constexpr int kBatchesPerMinTime = 20;  // a batch takes about min_time / 20
constexpr int kMinBatches = 5;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The q-quantile of sorted values, interpolating linearly between ranks.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = size_t(pos), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

Timing time_step(const pg::Step& step, pg::Frame& frame, double min_time) {
  using clock = std::chrono::steady_clock;
  // Warm-up: first-call costs (scratch buffers, thread pools, caches), and an estimate of one call.
  int64_t warm = 0;
  const auto w0 = clock::now();
  do {
    step(frame);
    ++warm;
  } while (warm < 2 || seconds_since(w0) < min_time / 10);
  const double per_call = seconds_since(w0) / double(warm);

  Timing t;
  t.calls_per_batch = std::max<int64_t>(1, std::llround(min_time / kBatchesPerMinTime / per_call));
  std::vector<double> per_call_us;
  const auto t0 = clock::now();
  while (int64_t(per_call_us.size()) < kMinBatches || seconds_since(t0) < min_time) {
    const auto b0 = clock::now();
    for (int64_t i = 0; i < t.calls_per_batch; ++i) step(frame);
    per_call_us.push_back(seconds_since(b0) * 1e6 / double(t.calls_per_batch));
  }
  std::sort(per_call_us.begin(), per_call_us.end());
  t.batches = int64_t(per_call_us.size());
  t.median_us = quantile(per_call_us, 0.5);
  t.p10_us = quantile(per_call_us, 0.1);
  t.p90_us = quantile(per_call_us, 0.9);
  return t;
}

// ---- output ----

std::string fmt_us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 10 ? "%.3f" : us < 100 ? "%.2f" : us < 10000 ? "%.1f" : "%.0f", us);
  return buf;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string r = "\"";
  for (char ch : s) r += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return r + "\"";
}

void print_header(bool csv) {
  if (csv) {
    std::printf("name,kernel,shapes,median_us,p10_us,p90_us,calls_per_batch,batches,flops,bytes,gflop_per_s,gb_per_s\n");
  } else {
    std::printf("%-38s %-32s %11s %11s %11s %9s %-7s %s\n", "case", "shapes", "median_us", "p10_us", "p90_us", "rate",
                "unit", "calls x batches");
  }
  std::fflush(stdout);
}

void print_row(const Case& c, const Timing& t, bool csv) {
  const double s = t.median_us * 1e-6;
  const double gflops = c.flops > 0 ? c.flops / s * 1e-9 : 0, gbps = c.bytes > 0 ? c.bytes / s * 1e-9 : 0;
  if (csv) {
    std::printf("%s,%s,%s,%.4f,%.4f,%.4f,%lld,%lld,%.0f,%.0f,%.3f,%.3f\n", csv_quote(c.name).c_str(),
                c.kernel.c_str(), csv_quote(c.shapes).c_str(), t.median_us, t.p10_us, t.p90_us,
                (long long)t.calls_per_batch, (long long)t.batches, c.flops, c.bytes, gflops, gbps);
  } else {
    const std::string runs = std::to_string(t.calls_per_batch) + " x " + std::to_string(t.batches);
    std::printf("%-38s %-32s %11s %11s %11s %9.2f %-7s %s\n", c.name.c_str(), c.shapes.c_str(),
                fmt_us(t.median_us).c_str(), fmt_us(t.p10_us).c_str(), fmt_us(t.p90_us).c_str(),
                c.flops > 0 ? gflops : gbps, c.flops > 0 ? "GFLOP/s" : "GB/s", runs.c_str());
  }
  std::fflush(stdout);
}

// ---- command line ----

struct Options {
  std::string filter;
  int threads = 1;
  double min_time = 0.2;
  bool csv = false;
};

const char kUsage[] =
    "usage: pygrad_bench [--filter SUBSTRING] [--threads N] [--min-time SECONDS] [--csv]\n"
    "  --filter SUBSTRING  run only the cases whose name contains SUBSTRING\n"
    "  --threads N         threads for OpenMP loops and the BLAS (default 1)\n"
    "  --min-time SECONDS  timed seconds per case (default 0.2)\n"
    "  --csv               CSV rows on stdout; settings on stderr\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "pygrad_bench: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    const bool inline_value = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next_value = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::printf("%s", kUsage);
      std::exit(0);
    } else if (arg == "--csv") {
      o.csv = true;
    } else if (arg == "--filter") {
      o.filter = next_value();
    } else if (arg == "--threads") {
      const std::string v = next_value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 1024) usage_error("--threads must be a positive integer");
      o.threads = int(n);
    } else if (arg == "--min-time") {
      const std::string v = next_value();
      char* end = nullptr;
      o.min_time = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.min_time > 0) || !std::isfinite(o.min_time))
        usage_error("--min-time must be a positive number of seconds");
    } else {
      usage_error("unknown argument '" + arg + "'");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any OpenMP or BLAS work, and before anything is printed: see set_native_library_defaults.
  if (set_native_library_defaults()) {
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "pygrad_bench: could not re-execute to apply the OpenMP/OpenBLAS environment defaults (%s); "
                         "set them in the environment\n", std::strerror(errno));
  }
  const Options opt = parse_args(argc, argv);
  pg::set_num_threads(opt.threads);

  std::vector<Case> cases;
  for (Case& c : all_cases())
    if (c.name.find(opt.filter) != std::string::npos) cases.push_back(std::move(c));
  if (cases.empty()) {
    std::fprintf(stderr, "pygrad_bench: no case name contains '%s'\n", opt.filter.c_str());
    return 1;
  }

  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  FILE* info = opt.csv ? stderr : stdout;
  std::fprintf(info, "pygrad_bench: %zu cases, threads %d, min-time %g s, OMP_WAIT_POLICY=%s\nBLAS: %s (core %s)\n\n",
               cases.size(), pg::get_num_threads(), opt.min_time, wait_policy ? wait_policy : "(unset)",
               scipy_openblas_get_config(), scipy_openblas_get_corename());
  std::fflush(info);
  print_header(opt.csv);

  int failures = 0;
  for (const Case& c : cases) {
    try {
      Prepared p;
      prepare(c, p);
      const pg::Step step = pg::build_step(p.call);
      print_row(c, time_step(step, p.frame, opt.min_time), opt.csv);
    } catch (const std::exception& e) {
      ++failures;
      std::fprintf(stderr, "pygrad_bench: %s: %s\n", c.name.c_str(), e.what());
    }
  }
  return failures ? 1 : 0;
}
