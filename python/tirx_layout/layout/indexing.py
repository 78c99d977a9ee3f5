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
