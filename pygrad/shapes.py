"""Static shapes with unknown (None) dimensions, and the broadcasting rule."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union


class Dimension:
    """One dimension of a TensorShape: an int or None (unknown), as in TF1 (``shape[0].value``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = None if value is None else int(value)

    def __int__(self):
        if self.value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self.value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return self.value == other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"Dimension({self.value})"

    def __str__(self):
        return "?" if self.value is None else str(self.value)


class TensorShape:
    """A static shape: ``dims`` is a tuple of ints/None, or None when even the rank is unknown."""

    __slots__ = ("dims",)

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        if dims is None:
            self.dims = None
        else:
            if isinstance(dims, (int, Dimension)):
                dims = [dims]
            out = []
            for d in dims:
                d = d.value if isinstance(d, Dimension) else d
                if d is not None:
                    d = int(d)
                    if d < 0:
                        d = None  # -1 means unknown, as TF accepts
                out.append(d)
            self.dims = tuple(out)

    @property
    def ndims(self):
        return None if self.dims is None else len(self.dims)

    rank = ndims

    def as_list(self):
        if self.dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self.dims)

    def is_fully_defined(self):
        return self.dims is not None and all(d is not None for d in self.dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self.dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge_with(self, other):
        other = as_shape(other)
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self.dims, other.dims)])

    def concatenate(self, other):
        """This shape's dims followed by other's (unknown if either rank is)."""
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return TensorShape(None)
        return TensorShape(self.dims + other.dims)

    def most_specific_compatible_shape(self, other):
        """The most specific shape both this one and other are compatible with."""
        other = as_shape(other)
        if self.dims is None or other.dims is None or len(self.dims) != len(other.dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self.dims, other.dims)])

    def __len__(self):
        if self.dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self.dims)

    def __iter__(self):
        if self.dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self.dims)

    def __getitem__(self, key):
        if self.dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self.dims[key])
        return Dimension(self.dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self.dims == other.dims

    def __hash__(self):
        return hash(self.dims)

    def __repr__(self):
        return f"TensorShape({list(self.dims) if self.dims is not None else None})"

    def __str__(self):
        if self.dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self.dims)
        return f"({inner},)" if len(self.dims) == 1 else f"({inner})"


# What as_shape takes (type hints of the public entry points): a TensorShape, a list of ints, Nones
# and Dimensions, or None (unknown rank).
ShapeLike = Union["TensorShape", Sequence[Any], None]


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None):
    """A shape of unknown rank, or of rank unknown dimensions (TF's tensor_shape.unknown_shape)."""
    return TensorShape(None if rank is None else [None] * rank)


def as_dimension(value):
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension):
    """A dimension's int or None, of a Dimension or of a plain value (TF's tensor_shape.dimension_value)."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape, index):
    """The Dimension at index; Dimension(None) when the rank is unknown (TF's tensor_shape.dimension_at_index)."""
    return as_shape(shape)[index]


def broadcast_shape(a, b):
    """NumPy broadcasting of two static shapes (None dims allowed); ValueError when they cannot."""
    a, b = as_shape(a), as_shape(b)
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    n = max(len(a.dims), len(b.dims))
    da = (1,) * (n - len(a.dims)) + a.dims
    db = (1,) * (n - len(b.dims)) + b.dims
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            raise ValueError(f"shapes {a} and {b} cannot be broadcast ({x} != {y})")
    return TensorShape(out)
