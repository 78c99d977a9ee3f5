"""Checks that turn user-supplied numbers into the values the core stores: static ints and symbolic offsets; and
the allowed ints of a hardware table as the table writes them (:class:`IntChoices`)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tvm
import tvm_ffi

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def static_int(value, what: str) -> int:
    """``value`` as a Python int that fits the core's int64: ints, numpy integers and TVM ``IntImm`` pass;
    anything else is a ``TypeError``, an int outside int64 a ``ValueError``.

    Example:
        >>> static_int(4, "extent")
        4
    """
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got the bool {value!r}")
    if isinstance(value, numbers.Integral):
        value = int(value)
    elif isinstance(value, tvm.tirx.IntImm):
        value = int(value.value)
    else:
        raise TypeError(f"{what} must be a static int, got {value!r} ({type(value).__name__})")
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{what} {value} does not fit in int64")
    return value


def offset_value(value, what: str):
    """An offset term: a static int, or a symbolic integer ``PrimExpr`` kept as it is.

    Example:
        >>> offset_value(3, "offset")
        3
    """
    if tvm.ir.is_prim_expr(value) and not isinstance(value, tvm.tirx.IntImm):
        if not expr_dtype(value).startswith(("int", "uint")):
            raise TypeError(f"{what} must be an integer expression, got {value!r} of dtype {expr_dtype(value)}")
        return value
    return static_int(value, what)


def offset_sum(a, b, what: str):
    """``a + b`` for two offset terms: two ints must sum within int64 (``ValueError`` naming both otherwise, never a
    value the core would take for something else); a symbolic term gives the symbolic sum.

    Example:
        >>> offset_sum(2**62, 2**62 - 1, "the offset on m")
        9223372036854775807
    """
    total = a + b
    if isinstance(a, int) and isinstance(b, int) and not INT64_MIN <= total <= INT64_MAX:
        raise ValueError(f"{what}: {a} + {b} = {total} does not fit in int64")
    return total


def expr_dtype(expr) -> str:
    """The dtype name of a TVM ``PrimExpr``.

    Example:
        >>> expr_dtype(tvm.tirx.Var("x", "int32"))
        'int32'
    """
    return str(expr.ty.dtype)


#: The dtype the core reads coordinate and address arrays in.
INT64_DTYPE = np.dtype(np.int64)


def int64_array(value) -> np.ndarray:
    """``value`` as an int64 array: integer arrays convert, anything else is a ``TypeError``.

    Example:
        >>> int64_array(np.arange(3, dtype=np.int8)).dtype
        dtype('int64')
    """
    if type(value) is np.ndarray and value.dtype == np.int64:
        return value  # the common case: no conversion, no copy
    array = np.asarray(value)
    if array.dtype == np.bool_ or array.dtype.kind not in "iu":
        raise TypeError(f"coordinate arrays must hold integers, got dtype {array.dtype}")
    if array.dtype == np.uint64 and array.size and array.max() > INT64_MAX:
        raise ValueError(f"coordinate {int(array.max())} does not fit in int64")
    return array.astype(np.int64)


def int_list(values, what: str) -> list[int]:
    """``values`` as a list of static ints (``TypeError`` for a non-sequence, see ``static_int`` per entry).

    Example:
        >>> int_list((8, 16), "a shape extent")
        [8, 16]
    """
    if type(values) in (list, tuple) and all(type(v) is int and INT64_MIN <= v <= INT64_MAX for v in values):
        return list(values)  # the common case, checked as static_int below checks every other
    if isinstance(values, int | str) or not isinstance(values, Sequence | np.ndarray | tvm_ffi.Array):
        raise TypeError(f"expected a sequence of ints for {what}s, got {values!r}")
    return [static_int(v, what) for v in values]


def per_dimension_shape(sum_shape, addend_shape) -> list[int]:
    """A direct sum's shape per dimension (left x right) from either that or the interleaved ``(A0, B0, A1, ...)``.

    Example:
        >>> per_dimension_shape([2, 4, 8, 8], [4, 8])
        [8, 64]
    """
    sum_shape = int_list(sum_shape, "a shape extent")
    if len(sum_shape) == 2 * len(addend_shape) and addend_shape:
        return [sum_shape[2 * d] * sum_shape[2 * d + 1] for d in range(len(addend_shape))]
    return sum_shape


def range_bounds(bounds) -> tuple[object, int]:
    """``(begin, extent)`` of a ``(begin, end)`` pair or a ``tvm.ir.Range``; the extent must be static.

    Example:
        >>> range_bounds((5, 8)), range_bounds(tvm.ir.Range(2, 6))
        ((5, 3), (2, 4))
    """
    if type(bounds) is tuple and len(bounds) == 2 and type(bounds[0]) is int and type(bounds[1]) is int:
        return static_int(bounds[0], "a slice begin"), static_int(bounds[1] - bounds[0], "a slice extent (end - begin)")
    if isinstance(bounds, tvm.ir.Range):
        begin, extent = bounds.min, bounds.extent
    elif isinstance(bounds, Sequence) and not isinstance(bounds, str) and len(bounds) == 2:
        begin, end = (offset_value(b, f"a slice bound of {bounds!r}") for b in bounds)
        extent = end - begin
    else:
        raise TypeError(f"a slice region entry is (begin, end) or a tvm.ir.Range, got {bounds!r}")
    if tvm.ir.is_prim_expr(extent):
        extent = tvm.sym.Analyzer().simplify(extent)
    extent = static_int(extent, "a slice extent (end - begin)")
    if tvm.ir.is_prim_expr(begin) and not isinstance(begin, tvm.tirx.IntImm):
        return begin, extent
    return static_int(begin, "a slice begin"), extent


@dataclass(frozen=True, init=False, repr=False)
class IntChoices:
    """A list of allowed ints as a table writes it: single ints and ``range``s, in order (``parts``). ``in`` tests
    membership, :attr:`values` lists them all, ``str`` names them in a message.

    Example:
        >>> n = IntChoices(8, 16, 24, 32, range(48, 257, 16))
        >>> 40 in n, 208 in n, n.values[:6], str(n)
        (False, True, (8, 16, 24, 32, 48, 64), '8, 16, 24, 32, 48..256 step 16')
    """

    parts: tuple[int | range, ...]

    def __init__(self, *parts: int | range) -> None:
        for part in parts:
            if isinstance(part, bool) or not isinstance(part, int | range) or (isinstance(part, range) and not part):
                raise TypeError(f"IntChoices takes ints and non-empty ranges, got {part!r}")
        object.__setattr__(self, "parts", parts)

    @property
    def values(self) -> tuple[int, ...]:
        """Every allowed int, in the order of the parts.

        Example:
            >>> IntChoices(8, range(16, 41, 8)).values
            (8, 16, 24, 32, 40)
        """
        return tuple(v for part in self.parts for v in (part if isinstance(part, range) else (part,)))

    def __contains__(self, value) -> bool:
        return any(value in part if isinstance(part, range) else value == part for part in self.parts)

    def __str__(self) -> str:
        return ", ".join(
            f"{part.start}..{part[-1]} step {part.step}" if isinstance(part, range) else str(part)
            for part in self.parts
        )

    def __repr__(self) -> str:
        return f"IntChoices({', '.join(map(repr, self.parts))})"
