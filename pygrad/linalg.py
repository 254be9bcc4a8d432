"""tf.linalg: the matrix ops under their TF 1 names in this namespace."""
from pygrad.ops.linalg_ops import einsum, matrix_determinant as det, matrix_inverse as inv, norm, tensordot  # noqa: F401
from pygrad.ops.math_ops import matmul  # noqa: F401
from pygrad.ops.array_ops import transpose  # noqa: F401
