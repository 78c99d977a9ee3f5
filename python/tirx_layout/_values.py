"""Checks that turn user-supplied numbers into the values the core stores: static ints and symbolic offsets."""

from __future__ import annotations

import numbers

import numpy as np
import tvm

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


def expr_dtype(expr) -> str:
    """The dtype name of a TVM ``PrimExpr`` (``"int32"`` for ``tvm.tirx.Var("x", "int32")``)."""
    return str(expr.ty.dtype)


#: The dtype the core reads coordinate and address arrays in.
INT64_DTYPE = np.dtype(np.int64)


def int64_array(value) -> np.ndarray:
    """``value`` as an int64 array: integer arrays convert, anything else is a ``TypeError``."""
    if type(value) is np.ndarray and value.dtype == np.int64:
        return value  # the common case: no conversion, no copy
    array = np.asarray(value)
    if array.dtype == np.bool_ or array.dtype.kind not in "iu":
        raise TypeError(f"coordinate arrays must hold integers, got dtype {array.dtype}")
    if array.dtype == np.uint64 and array.size and array.max() > INT64_MAX:
        raise ValueError(f"coordinate {int(array.max())} does not fit in int64")
    return array.astype(np.int64)
