"""Linear algebra: matrix_inverse and matrix_determinant (LU kernels in csrc/kernels/linalg.cc),
and tensordot, einsum and norm, built as TF builds them from transpose, reshape, matmul and reductions."""
import numpy as np

from pygrad.graph import build_error, get_default_graph
from pygrad.ops.array_ops import constant, convert_to_tensor, expand_dims, reshape, squeeze, static_ints, transpose
from pygrad.ops.math_ops import FLOATS, abs as math_abs, check_dtype, matmul, multiply, pow as pow_, sqrt
from pygrad.ops.reduction_ops import reduce_max, reduce_sum
from pygrad.registry import OpDef, Spec, fail
from pygrad.shapes import TensorShape

# ---------------------------------------------------------------- batched products


def _swap_last(x):
    n = x.shape.ndims
    return transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def batch_matmul(a, b, adjoint_a=False, adjoint_b=False):
    """a @ b over the last two dimensions, the leading ones broadcast: matmul for matrices, else a
    broadcast product summed over the inner dimension. Ranks must be known."""
    if a.shape.ndims == 2 and b.shape.ndims == 2:
        return matmul(a, b, transpose_a=adjoint_a, transpose_b=adjoint_b)
    a = _swap_last(a) if adjoint_a else a
    b = _swap_last(b) if adjoint_b else b
    return reduce_sum(multiply(expand_dims(a, -1), expand_dims(b, -3)), axis=-2)


# ---------------------------------------------------------------- matrix_inverse and matrix_determinant


def _square_batch(a):
    check_dtype(a, FLOATS, "input")
    dims = a.shape.dims
    if dims is None:
        return None
    if len(dims) < 2:
        fail(f"input must have rank at least 2, got {a.shape}")
    if dims[-1] is not None and dims[-2] is not None and dims[-1] != dims[-2]:
        fail(f"input must be a batch of square matrices, got {a.shape}")
    return dims


MatrixInverse = OpDef("MatrixInverse", kernel="matrix_inverse")


@MatrixInverse.shape
def _(a, *, adjoint):
    _square_batch(a)
    return Spec(a.dtype, a.shape)


MatrixInverse.native_attrs(lambda attrs, ins, outs: {"adjoint": int(attrs["adjoint"])})


@MatrixInverse.grad
def _(op, dy):
    # TF's rule: d(A^-1) = -A^-T dy A^-T (adjoint: -A^-1 dy^... with the transposes swapped).
    ainv, adj = op.outputs[0], op.attrs["adjoint"]
    return [-batch_matmul(ainv, batch_matmul(dy, ainv, adjoint_a=adj, adjoint_b=not adj), adjoint_a=not adj)]


def matrix_inverse(input, adjoint=False, name=None):
    """The inverse of each square matrix in input [..., M, M] (of its transpose when adjoint), by
    LU with partial pivoting. A matrix with a zero pivot fails the run: "Input is not invertible."
    (InvalidArgumentError)."""
    return MatrixInverse(convert_to_tensor(input), adjoint=bool(adjoint), name=name or "MatrixInverse")


MatrixDeterminant = OpDef("MatrixDeterminant", kernel="matrix_determinant")


@MatrixDeterminant.shape
def _(a):
    dims = _square_batch(a)
    return Spec(a.dtype, TensorShape(None) if dims is None else TensorShape(dims[:-2]))


@MatrixDeterminant.grad
def _(op, dy):
    # TF's rule: dA = dy * det(A) * A^-T, each matrix scaled by its own dy * det.
    a, det = op.inputs[0], op.outputs[0]
    scale = expand_dims(expand_dims(dy * det, -1), -1)
    return [scale * matrix_inverse(a, adjoint=True)]


def matrix_determinant(input, name=None):
    """The determinant of each square matrix in input [..., M, M], of shape [...]."""
    return MatrixDeterminant(convert_to_tensor(input), name=name or "MatrixDeterminant")


# ---------------------------------------------------------------- tensordot


def _tensordot_axes(a, b, axes, name):
    """(a's contracted axes, b's), as lists of non-negative ints."""
    na, nb = a.shape.ndims, b.shape.ndims
    if na is None or nb is None:
        raise build_error("Tensordot", name, f"a {a.shape} and b {b.shape} must have known ranks")
    arr = static_ints(axes, "axes", _TENSORDOT, name) if not isinstance(axes, (list, tuple)) else None
    if arr is not None and arr.ndim == 0:
        n = int(arr)
        if n < 0 or n > min(na, nb):
            raise build_error("Tensordot", name, f"'axes' must be at most the rank of a {a.shape} and b {b.shape} "
                                                 f"and at least 0, got {n}")
        return list(range(na - n, na)), list(range(n))
    pair = list(axes) if arr is None else arr.tolist()
    if len(pair) != 2:
        raise build_error("Tensordot", name, f"'axes' must be an integer or have length 2, got {axes!r}")
    a_axes, b_axes = ([int(v) for v in np.asarray(p).reshape(-1)] for p in pair)
    if len(a_axes) != len(b_axes):
        raise build_error("Tensordot", name, f"different number of contraction axes 'a' and 'b', {len(a_axes)} != "
                                             f"{len(b_axes)}")
    for ax, n, what in ((a_axes, na, "a"), (b_axes, nb, "b")):
        if any(not -n <= v < n for v in ax):
            raise build_error("Tensordot", name, f"axes {ax} are out of range for {what} of rank {n}")
    return [v % na for v in a_axes], [v % nb for v in b_axes]


class _Named:
    def __init__(self, type_name):
        self.type = type_name

    def error(self, rule, name=None, cls=ValueError):
        return build_error(self.type, name, rule, cls)


_TENSORDOT = _Named("Tensordot")


def _known_product(dims):
    return None if any(d is None for d in dims) else int(np.prod(dims, dtype=np.int64))


def tensordot(a, b, axes, name=None):
    """The sum over a's axes[0] and b's axes[1] of a * b (tf.tensordot): axes an int N (a's last
    N with b's first N) or a pair of axis lists. The result has a's free dimensions, then b's."""
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    a_axes, b_axes = _tensordot_axes(a, b, axes, name)
    for i, j in zip(a_axes, b_axes):
        da, db = a.shape.dims[i], b.shape.dims[j]
        if da is not None and db is not None and da != db:
            raise build_error("Tensordot", name, f"dimension {i} of a {a.shape} ({da}) does not match dimension "
                                                 f"{j} of b {b.shape} ({db})")
    a_free = [i for i in range(a.shape.ndims) if i not in a_axes]
    b_free = [j for j in range(b.shape.ndims) if j not in b_axes]
    free_dims = [a.shape.dims[i] for i in a_free] + [b.shape.dims[j] for j in b_free]
    if sum(d is None for d in free_dims) > 1 or any(a.shape.dims[i] is None for i in a_axes):
        raise build_error("Tensordot", name, f"a {a.shape} and b {b.shape}: pygrad needs the contracted dimensions "
                                             f"and all but one free dimension when the graph is built")
    k = _known_product([a.shape.dims[i] for i in a_axes])
    a_m = reshape(transpose(a, a_free + a_axes), [-1, k])
    b_m = reshape(transpose(b, b_axes + b_free), [k, -1])
    product = matmul(a_m, b_m)
    return reshape(product, [-1 if d is None else d for d in free_dims], name=name or "Tensordot")


# ---------------------------------------------------------------- einsum


def _parse_einsum(equation, ranks, name):
    """(input labels, output labels), with each '...' replaced by one digit per dimension it
    stands for; those dimensions are right-aligned across inputs and broadcast, as in TF."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        ins, out = eq.split("->")
    else:  # implicit output: '...', then the letters that appear once, in alphabetical order
        ins = eq
        letters = ins.replace(",", "").replace(".", "")
        out = ("..." if "..." in ins else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = ins.split(",")
    if len(ins) != len(ranks):
        raise build_error("Einsum", name, f"'{equation}' names {len(ins)} inputs, got {len(ranks)}")
    plain = [s.replace("...", "", 1) for s in ins + [out]]
    if not all(p.isalpha() for p in plain if p) or len(set(plain[-1])) != len(plain[-1]):
        raise build_error("Einsum", name, f"'{equation}' must be letters and at most one '...' per term, with no "
                                          f"letter twice in the output")
    if any(c not in "".join(plain[:-1]) for c in plain[-1]):
        raise build_error("Einsum", name, f"'{equation}': output letters must appear in the inputs")
    counts = []
    for labels, p, rank in zip(ins, plain, ranks):
        k = (rank - len(p)) if "..." in labels and rank is not None else 0
        if k < 0 or rank is None and "..." in labels:
            raise build_error("Einsum", name, f"'{equation}': '...' in {labels!r} needs the input's rank, at least "
                                              f"{len(p)}, got {rank}")
        counts.append(k)
    widest = max(counts, default=0)
    if widest and "..." not in out:
        raise build_error("Einsum", name, f"'{equation}': an input has '...', so the output must too")
    digits = "0123456789"[:widest]
    ins = [labels.replace("...", digits[widest - k:]) for labels, k in zip(ins, counts)]
    return ins, out.replace("...", digits)


def _diagonal(x, labels, sizes):
    """x with each repeated label of labels reduced to its diagonal (x * eye, summed over one of
    the two dimensions)."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        n = sizes[c]
        eye_shape = [1] * len(labels)
        eye_shape[i] = eye_shape[j] = n
        x = reduce_sum(x * constant(np.eye(n, dtype=x.dtype.np).reshape(eye_shape)), axis=j)
        labels = labels[:j] + labels[j + 1:]
    return x, labels


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (tf.einsum) over letters: products, transposes, reductions, traces and
    diagonals ("ii->i"), batch products ("bij,bjk->bik", "...ij,...jk->...ik" with the '...'
    dimensions broadcast), outer products ("i,j->ij"). Two inputs
    with no batch letter contract with one matmul (as tensordot); otherwise the inputs are
    transposed to one letter order, multiplied with broadcasting and summed."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise build_error("Einsum", name, f"unknown arguments {sorted(kwargs)}", TypeError)
    if not inputs:
        raise build_error("Einsum", name, "needs at least one input")
    xs = [convert_to_tensor(x) for x in inputs]
    ins, out = _parse_einsum(equation, [x.shape.ndims for x in xs], name)
    sizes = {}
    for x, labels in zip(xs, ins):
        if x.shape.ndims != len(labels):
            raise build_error("Einsum", name, f"'{equation}': input {labels!r} has shape {x.shape}, of another rank")
        for c, d in zip(labels, x.shape.dims):
            if c.isdigit() and d == 1:  # a broadcast dimension of '...'
                continue
            if d is not None and sizes.get(c) not in (None, d):
                raise build_error("Einsum", name, f"'{equation}': letter {c!r} has sizes {sizes[c]} and {d}")
            if d is not None:
                sizes[c] = d
    for i, labels in enumerate(ins):
        if len(set(labels)) != len(labels):
            if any(sizes.get(c) is None for c in labels if labels.count(c) > 1):
                raise build_error("Einsum", name, f"'{equation}': a repeated letter needs a known size")
            xs[i], ins[i] = _diagonal(xs[i], ins[i], sizes)
    if len(xs) == 2:
        (a, b), (la, lb) = xs, ins
        contracted = [c for c in la if c in lb and c not in out]
        batch = [c for c in la if c in lb and c in out]
        if not batch and contracted and all(c in la + lb for c in out):
            a = _sum_alone(a, la, lb + out)
            b = _sum_alone(b, lb, la + out)
            la2 = "".join(c for c in la if c in lb + out)
            lb2 = "".join(c for c in lb if c in la + out)
            y = tensordot(a, b, [[la2.index(c) for c in contracted], [lb2.index(c) for c in contracted]])
            labels = "".join(c for c in la2 if c not in contracted) + "".join(c for c in lb2 if c not in contracted)
            return _to_output(y, labels, out, name)
    order = "".join(dict.fromkeys("".join(ins)))
    terms = []
    for i, (x, labels) in enumerate(zip(xs, ins)):
        others = "".join(l for j, l in enumerate(ins) if j != i) + out
        x = _sum_alone(x, labels, others)
        labels = "".join(c for c in labels if c in others)
        mine = [c for c in order if c in labels]
        if list(labels) != mine:
            x = transpose(x, [labels.index(c) for c in mine])
        for pos, c in enumerate(order):
            if c not in labels:
                x = expand_dims(x, pos)
        terms.append(x)
    y = terms[0]
    for t in terms[1:]:
        y = y * t
    summed = [i for i, c in enumerate(order) if c not in out]
    if summed:
        y = reduce_sum(y, axis=summed)
    return _to_output(y, "".join(c for c in order if c in out), out, name)


def _sum_alone(x, labels, others):
    """x summed over the letters no other input and not the output has."""
    alone = [i for i, c in enumerate(labels) if c not in others]
    return reduce_sum(x, axis=alone) if alone else x


def _to_output(y, labels, out, name):
    perm = [labels.index(c) for c in out]
    if perm != list(range(len(perm))):
        return transpose(y, perm, name=name or "Einsum")
    return y


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):  # noqa: A002
    """The vector norm of tensor over axis (None: all of it), or its matrix norm over a pair of
    axes, as tf.norm composes it: 'euclidean'/2 (or 'fro' for matrices) the root of the sum of
    squares, 1 and inf the sum / max of magnitudes (for matrices the largest column / row sum), and
    any other p > 0 (vectors) the p-th root of the sum of p-th powers. The matrix 2-norm (the
    largest singular value) needs an SVD, which pygrad lacks: refused."""
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if matrix:
        axis = tuple(axis)
        if not all(isinstance(a, int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in ("euclidean", "fro", 1, 2, np.inf):
            raise ValueError(f"'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, 2, inf], got {ord}")
        if ord == 2:
            raise NotImplementedError("tf.norm(ord=2) over a pair of axes is the largest singular value, and pygrad "
                                      "has no SVD; use ord='fro', 1 or inf")
    else:
        if not (isinstance(axis, int) or axis is None):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in ("euclidean", 1, 2, np.inf) and (isinstance(ord, str) or not np.isreal(ord) or ord <= 0):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        axis = None if axis is None else (axis,)
    with get_default_graph().name_scope(name or "norm"):
        x = convert_to_tensor(tensor)
        if ord in ("fro", "euclidean", 2, 2.0):
            result = sqrt(reduce_sum(x * x, axis, keepdims=True))
        else:
            result = math_abs(x)
            if ord == 1:
                result = reduce_sum(result, None if axis is None else axis[0], keepdims=True)
                if matrix:
                    result = reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if matrix:
                    result = reduce_sum(result, axis[1], keepdims=True)
                result = reduce_max(result, None if axis is None else axis[0], keepdims=True)
            else:
                result = pow_(reduce_sum(pow_(result, ord), axis, keepdims=True), 1.0 / ord)
        return result if keepdims else squeeze(result, axis)
