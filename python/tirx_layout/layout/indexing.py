"""Row-major index arithmetic and conditions, for Python ints, integer numpy arrays and TVM ``PrimExpr`` alike.

TVM's ``//`` and ``%`` on expressions are ``floordiv`` and ``floormod``, and numpy's on integer arrays are floor
division too, so one formula serves all three kinds; a division by 1 is skipped, so expressions stay as written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import tvm


def row_major_strides(extents: Iterable[int]) -> list[int]:
    """Strides of a row-major (last dimension fastest) layout of ``extents``.

    Example:
        >>> row_major_strides([8, 4, 2])
        [8, 2, 1]
    """
    strides, step = [], 1
    for e in reversed(list(extents)):
        strides.append(step)
        step *= e
    return strides[::-1]


def flatten(coords: Sequence, shape: Sequence[int]):
    """The row-major flat index of ``coords`` in ``shape``: ``((c0 * s1 + c1) * s2 + c2) ...``.

    Example:
        >>> flatten([3, 3], (4, 8))
        27
    """
    if len(coords) != len(shape):
        raise ValueError(
            f"coordinate {list(coords)!r} has {len(coords)} values but shape {list(shape)} has {len(shape)}"
        )
    if not coords:
        return 0
    flat = coords[0]
    for c, e in zip(coords[1:], shape[1:], strict=True):
        flat = flat * e + c
    return flat


def floordiv(value, divisor: int):
    """``value // divisor`` (floor division), ``value`` itself when ``divisor`` is 1.

    Example:
        >>> floordiv(-7, 2), floordiv(5, 1)
        (-4, 5)
    """
    return value if divisor == 1 else value // divisor


def unflatten(flat, shape: Sequence[int]) -> list:
    """Row-major coordinates of flat index ``flat`` in ``shape``; the first coordinate takes no modulo, so an
    index past the end spills into it (as the layouts' forward map does).

    Example:
        >>> unflatten(27, (4, 8))
        [3, 3]
    """
    coords = []
    below = math.prod(int(e) for e in shape)
    for extent in shape:
        below //= int(extent)
        coords.append(floordiv(flat, below) % int(extent) if coords else floordiv(flat, below))
    return coords


def all_of(conditions: Iterable):
    """The conjunction of ``conditions``: bools, boolean numpy arrays (elementwise) or boolean ``PrimExpr`` (an
    ``And`` chain). ``True`` when there are none; a ``False`` constant decides at once.

    Example:
        >>> all_of([True, 3 > 2]), all_of([]), all_of([np.array([True, False]), True]).tolist()
        (True, True, [True, False])
    """
    result = True
    for c in conditions:
        if hasattr(c, "asobject"):  # TVM's == and != on expressions give lazy EqualOp/NotEqualOp objects
            c = c.asobject()
        if isinstance(c, bool | np.bool_):
            if not c:
                return False
            continue
        if result is True:
            result = c
        elif isinstance(c, np.ndarray) or isinstance(result, np.ndarray):
            result = np.logical_and(result, c)
        else:
            result = tvm.tirx.And(result, c)
    return result


def bit_fields(values, index):
    """``values[t]`` for every ``t`` in ``range(len(values))`` as an expression of ``index`` (an integer
    ``PrimExpr`` ranging over the same ``t``), when it is a constant plus a multiple of each bit of ``t``: a sum of
    bit fields ``(index // 2^b % 2^n) * c``, adjacent bits whose multiples double merged into one field. What a
    person writes for the row of a thread (``lane % 8 + warp * 16``) however the table was derived; ``None`` when the
    table is not of that form.

    Example:
        >>> t = tvm.tirx.Var("t", "int32")
        >>> str(bit_fields([(i % 8) * 64 + (i // 8) * 8 for i in range(16)], t))
        't % 8 * 64 + t // 8 * 8'
        >>> bit_fields([0, 1, 1, 0], t) is None
        True
    """
    table = np.asarray(values, dtype=np.int64)
    count = len(table)
    if count == 0:
        return None
    bits = max(count - 1, 0).bit_length()
    weights = [int(table[1 << b] - table[0]) if 1 << b < count else 0 for b in range(bits)]
    t = np.arange(count)
    fitted = int(table[0]) + sum(((t >> b) & 1) * w for b, w in enumerate(weights))
    if not np.array_equal(fitted, table):
        return None
    terms, b = [], 0
    while b < bits:
        if weights[b] == 0:
            b += 1
            continue
        n = 1
        while b + n < bits and weights[b + n] == weights[b] << n:
            n += 1
        field = index if b == 0 else tvm.tirx.floordiv(index, 1 << b)
        if b + n < bits or (1 << bits) != count:  # (the top field of a power-of-two range needs no modulo)
            field = tvm.tirx.floormod(field, 1 << n)
        terms.append(field if weights[b] == 1 else field * weights[b])
        b += n
    if table[0] or not terms:
        terms.append(tvm.tirx.const(int(table[0]), index.ty.dtype))
    expr = terms[0]
    for term in terms[1:]:
        expr = expr + term
    return expr
