// Square matrices, batched over leading dimensions: the inverse (tf.matrix_inverse) and the
// determinant (tf.matrix_determinant), both from an LU factorization with partial pivoting.
#include <algorithm>
#include <cmath>

#include "pg/parallel.h"
#include "pg/scratch.h"
#include "runtime/kernel.h"

namespace pg {

namespace {
// Factors the n x n row-major matrix lu in place into P A = L U (L unit lower, U upper, both in
// lu); piv[k] is the row swapped into row k. Returns the permutation's sign (+1 or -1) and sets
// min_pivot to the smallest |U[k, k]|, 0 for an exactly singular matrix.
template <class T> int lu_factor(T* lu, int64_t n, int64_t* piv, T& min_pivot) {
  int sign = 1;
  min_pivot = n ? T(INFINITY) : T(1);
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::fabs(lu[i * n + k]) > std::fabs(lu[p * n + k])) p = i;
    piv[k] = p;
    if (p != k) {
      std::swap_ranges(lu + k * n, lu + (k + 1) * n, lu + p * n);
      sign = -sign;
    }
    const T pivot = lu[k * n + k];
    min_pivot = std::min(min_pivot, T(std::fabs(pivot)));
    if (pivot == T(0)) continue;
    for (int64_t i = k + 1; i < n; ++i) {
      const T l = lu[i * n + k] /= pivot;
      if (l != T(0))
        for (int64_t j = k + 1; j < n; ++j) lu[i * n + j] -= l * lu[k * n + j];
    }
  }
  return sign;
}

struct Tag;  // the inverse's scratch, apart from other kernels'
}  // namespace

// y[b] = inverse of a[b] (of its transpose when adjoint), for each n x n matrix of a [batch, n, n].
// A matrix with a zero pivot is refused, as TF does: "Input is not invertible." (InvalidArgumentError
// in Python), before anything is written. y must not alias a.
template <class T> void matrix_inverse(ConstView<T> a, int64_t batch, int64_t n, bool adjoint, View<T> y) {
  const int64_t nn = n * n;
  T* lu_all = thread_scratch<T, Tag>(std::max<int64_t>(1, batch * nn));
  int64_t* piv_all = thread_scratch<int64_t, Tag>(std::max<int64_t>(1, batch * n));
  for (int64_t b = 0; b < batch; ++b) {
    T* lu = lu_all + b * nn;
    const T* src = a.data + b * nn;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) lu[i * n + j] = adjoint ? src[j * n + i] : src[i * n + j];
    T min_pivot;
    lu_factor(lu, n, piv_all + b * n, min_pivot);
    if (!(min_pivot > T(0))) throw ShapeError("matrix_inverse: Input is not invertible.");
  }
  for (int64_t b = 0; b < batch; ++b) {
    const T* lu = lu_all + b * nn;
    const int64_t* piv = piv_all + b * n;
    T* inv = y.data + b * nn;
    // Column j of the inverse solves A x = e_j: permute, forward-substitute L, back-substitute U.
    std::fill_n(inv, nn, T(0));
    for (int64_t i = 0; i < n; ++i) inv[i * n + i] = T(1);
    for (int64_t k = 0; k < n; ++k)
      if (piv[k] != k) std::swap_ranges(inv + k * n, inv + (k + 1) * n, inv + piv[k] * n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < i; ++k) {
        const T l = lu[i * n + k];
        if (l != T(0))
          for (int64_t j = 0; j < n; ++j) inv[i * n + j] -= l * inv[k * n + j];
      }
    for (int64_t i = n - 1; i >= 0; --i) {
      for (int64_t k = i + 1; k < n; ++k) {
        const T u = lu[i * n + k];
        if (u != T(0))
          for (int64_t j = 0; j < n; ++j) inv[i * n + j] -= u * inv[k * n + j];
      }
      const T d = lu[i * n + i];
      for (int64_t j = 0; j < n; ++j) inv[i * n + j] /= d;
    }
  }
}

// det[b] = the determinant of the n x n matrix a[b]: the sign of the pivoting times the product of
// U's diagonal (0 for a singular matrix; 1 for n = 0).
template <class T> void matrix_determinant(ConstView<T> a, int64_t batch, int64_t n, View<T> det) {
  const int64_t nn = n * n;
  T* lu = thread_scratch<T, Tag>(std::max<int64_t>(1, nn));
  int64_t* piv = thread_scratch<int64_t, Tag>(std::max<int64_t>(1, n));
  for (int64_t b = 0; b < batch; ++b) {
    std::copy_n(a.data + b * nn, nn, lu);
    T min_pivot;
    T d = T(lu_factor(lu, n, piv, min_pivot));
    for (int64_t i = 0; i < n; ++i) d *= lu[i * n + i];
    det.data[b] = d;
  }
}

namespace {
// (batch, n) of a [..., n, n].
std::pair<int64_t, int64_t> square_batch(const char* op, const Shape& a) {
  PG_CHECK(a.ndim >= 2 && a[a.ndim - 1] == a[a.ndim - 2], op, "input must be a batch of square matrices "
           "[..., M, M], got %s", a.str().c_str());
  int64_t batch = 1;
  for (int d = 0; d < a.ndim - 2; ++d) batch *= a[d];
  return {batch, a[a.ndim - 1]};
}
}  // namespace

Step build_matrix_inverse(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand a = c.in[0], y = c.out[0];
  const auto bn = square_batch(op, a.shape);
  const int64_t batch = bn.first, n = bn.second;
  PG_CHECK(y.shape == a.shape, op, "y %s must have the shape of the input %s", y.shape.str().c_str(),
           a.shape.str().c_str());
  const bool adjoint = c.attrs.i("adjoint", int64_t{0});
  return dispatch_float(a.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { matrix_inverse<T>(cview<T>(f, a), batch, n, adjoint, view<T>(f, y)); };
  });
}

Step build_matrix_determinant(const KernelCall& c) {
  const char* op = expect_uniform(c, 1, 1);
  const Operand a = c.in[0], det = c.out[0];
  const auto bn = square_batch(op, a.shape);
  const int64_t batch = bn.first, n = bn.second;
  PG_CHECK(det.shape.numel() == batch, op, "det %s must hold one value per matrix of %s", det.shape.str().c_str(),
           a.shape.str().c_str());
  return dispatch_float(a.dtype, op, [&](auto tag) -> Step {
    using T = decltype(tag);
    return [=](Frame& f) { matrix_determinant<T>(cview<T>(f, a), batch, n, view<T>(f, det)); };
  });
}

}  // namespace pg
