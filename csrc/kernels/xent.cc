// Fused softmax cross-entropy, dense and sparse labels (TF's SoftmaxCrossEntropyWithLogits and
// SparseSoftmaxCrossEntropyWithLogits). logits: [N, C] contiguous, row-major. Each row is computed
// with log-sum-exp around the row max, so no exp overflows, and sums in double. Rows are split over
// threads and each row is computed in a fixed order, so results do not depend on the thread count.
// The kernels return the loss and its gradient with respect to the logits ("backprop").
#include <algorithm>
#include <cmath>
#include <string>

#include "pg/lanes.h"
#include "pg/parallel.h"
#include "runtime/kernel.h"

namespace pg {
namespace {
constexpr int64_t kGrain = 8192;  // elements per parallel chunk (these loops call exp)
}  // namespace

// loss[r] = -sum_c labels[r, c] * log_softmax(logits[r, :])[c]
//         = lse * sum_c labels[r, c] - sum_c labels[r, c] * (logits[r, c] - max),
// backprop[r, c] = softmax(logits[r, :])[c] - labels[r, c],
// with max = max_c logits[r, c] and lse = log(sum_c exp(logits[r, c] - max)). labels need not be
// one-hot. logits, labels, backprop: [N, C]; loss: [N]. backprop may alias logits but not labels.
// C == 0 gives loss 0.
template <class T>
void softmax_xent_fwd(ConstView<T> logits, ConstView<T> labels, View<T> loss, View<T> backprop) {
  const int64_t rows = logits.shape[0], n = logits.shape[1];
  const T* pl = logits.data;
  const T* py = labels.data;
  T* ploss = loss.data;
  T* pb = backprop.data;
  if (n == 0) {
    std::fill(ploss, ploss + rows, T(0));
    return;
  }
  parallel_for(rows, std::max<int64_t>(1, kGrain / n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* l = pl + r * n;
      const T* y = py + r * n;
      T* b = pb + r * n;
      const T m = lane_max(l, n);
      double sum = 0, label_sum = 0, label_dot = 0;
      for (int64_t j = 0; j < n; ++j) {  // b holds exp(l - m) until the last pass
        const T shifted = l[j] - m;
        const T e = std::exp(shifted);
        sum += e;
        label_sum += y[j];
        label_dot += double(y[j]) * shifted;
        b[j] = e;
      }
      ploss[r] = T(std::log(sum) * label_sum - label_dot);
      const T d = T(sum);
      for (int64_t j = 0; j < n; ++j) b[j] = b[j] / d - y[j];
    }
  });
}

// loss[r] = lse - (logits[r, labels[r]] - max), backprop[r, :] = softmax(logits[r, :]) -
// onehot(labels[r]), as in softmax_xent_fwd with one-hot labels. labels: [N] int32 or int64, each
// in [0, C): otherwise throws ShapeError naming the row, before writing any output. logits,
// backprop: [N, C]; loss: [N]. backprop may alias logits.
template <class T, class I>
void sparse_softmax_xent_fwd(ConstView<T> logits, ConstView<I> labels, View<T> loss, View<T> backprop) {
  const int64_t rows = logits.shape[0], n = logits.shape[1];
  const T* pl = logits.data;
  const I* plabel = labels.data;
  T* ploss = loss.data;
  T* pb = backprop.data;
  for (int64_t r = 0; r < rows; ++r)
    PG_CHECK(plabel[r] >= 0 && int64_t(plabel[r]) < n, "sparse_softmax_xent_fwd",
             "label %lld at row %lld is outside the valid range [0, %lld)", (long long)plabel[r], (long long)r,
             (long long)n);
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* l = pl + r * n;
      T* b = pb + r * n;
      const int64_t label = plabel[r];
      const T m = lane_max(l, n);
      const T target = l[label] - m;  // read before b (which may be l) is written
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const T e = std::exp(l[j] - m);
        sum += e;
        b[j] = e;
      }
      ploss[r] = T(std::log(sum) - double(target));
      const T d = T(sum);
      for (int64_t j = 0; j < n; ++j) b[j] /= d;
      b[label] -= T(1);
    }
  });
}

// ---- builders ----

namespace {

// Checks logits [N, C] (float), loss [N] and backprop [N, C] of logits' dtype.
void check_xent_call(const KernelCall& c) {
  expect_arity(c, 2, 2);
  const char* nm = c.kernel.c_str();
  const Operand &logits = c.in[0], &loss = c.out[0], &backprop = c.out[1];
  PG_CHECK_DTYPE(logits.dtype == DType::f32 || logits.dtype == DType::f64, nm,
                 "logits must be float32 or float64, got %s", dtype_name(logits.dtype));
  expect_dtype(c, loss, logits.dtype, "loss");
  expect_dtype(c, backprop, logits.dtype, "backprop");
  PG_CHECK(logits.shape.ndim == 2, nm, "logits must be 2-D [batch, classes], got shape %s",
           logits.shape.str().c_str());
  const Shape rows{logits.shape[0]};
  PG_CHECK(loss.shape == rows, nm, "loss must have shape %s, got %s", rows.str().c_str(), loss.shape.str().c_str());
  PG_CHECK(backprop.shape == logits.shape, nm, "backprop must have the shape of logits %s, got %s",
           logits.shape.str().c_str(), backprop.shape.str().c_str());
}

}  // namespace

Step build_softmax_xent_fwd(const KernelCall& c) {
  check_xent_call(c);
  const Operand logits = c.in[0], labels = c.in[1], loss = c.out[0], backprop = c.out[1];
  expect_dtype(c, labels, logits.dtype, "labels");
  PG_CHECK(labels.shape == logits.shape, c.kernel.c_str(), "labels must have the shape of logits %s, got %s",
           logits.shape.str().c_str(), labels.shape.str().c_str());
  return dispatch_float(logits.dtype, c.kernel.c_str(), [&](auto t) -> Step {
    using T = decltype(t);
    return [logits, labels, loss, backprop](Frame& f) {
      softmax_xent_fwd(cview<T>(f, logits), cview<T>(f, labels), view<T>(f, loss), view<T>(f, backprop));
    };
  });
}

Step build_sparse_softmax_xent_fwd(const KernelCall& c) {
  check_xent_call(c);
  const char* nm = c.kernel.c_str();
  const Operand logits = c.in[0], labels = c.in[1], loss = c.out[0], backprop = c.out[1];
  PG_CHECK_DTYPE(labels.dtype == DType::i32 || labels.dtype == DType::i64, nm, "labels must be int32 or int64, got %s",
                 dtype_name(labels.dtype));
  const Shape rows{logits.shape[0]};
  PG_CHECK(labels.shape == rows, nm, "labels must have shape %s (one class index per row of logits %s), got %s",
           rows.str().c_str(), logits.shape.str().c_str(), labels.shape.str().c_str());
  return dispatch_float(logits.dtype, nm, [&](auto t) -> Step {
    using T = decltype(t);
    auto make = [&](auto index) -> Step {
      using I = decltype(index);
      return [logits, labels, loss, backprop](Frame& f) {
        sparse_softmax_xent_fwd(cview<T>(f, logits), cview<I>(f, labels), view<T>(f, loss), view<T>(f, backprop));
      };
    };
    return labels.dtype == DType::i64 ? make(int64_t{}) : make(int32_t{});
  });
}

}  // namespace pg
