"""An obviously-correct twin of the forward map, written from SPEC §2 alone, for checking the library against.

Layouts here are plain data: ``shard`` and ``replica`` are lists of ``(extent, stride, axis name)``, ``offset`` a
dict ``{axis name: int}``.
"""

from __future__ import annotations

import itertools
import math


def flatten(coords, shape) -> int:
    flat = 0
    for c, s in zip(coords, shape, strict=True):
        flat = flat * s + c
    return flat


def split(flat: int, extents) -> list[int]:
    """Mixed radix, last extent fastest, first component unreduced (Python's // and % are floor ops)."""
    parts = []
    for e in reversed(extents[1:]):
        parts.append(flat % e)
        flat //= e
    if extents:
        parts.append(flat)
    return parts[::-1]


def base_place(shard, offset, shard_coords) -> dict[str, int]:
    place: dict[str, int] = {}
    for c, (_, stride, axis) in zip(shard_coords, shard, strict=True):
        place[axis] = place.get(axis, 0) + c * stride
    for axis, value in offset.items():
        place[axis] = place.get(axis, 0) + value
    return place


def all_places(shard, replica, offset, shard_coords) -> list[dict[str, int]]:
    """Every place, one per replica combination, replica iters row-major (first slowest)."""
    base = base_place(shard, offset, shard_coords)
    out = []
    for combo in itertools.product(*(range(e) for e, _, _ in replica)):
        place = dict(base)
        for r, (_, stride, axis) in zip(combo, replica, strict=True):
            place[axis] = place.get(axis, 0) + r * stride
        out.append(place)
    return out


def size(shard, axis=None) -> int:
    return math.prod(e for e, _, a in shard if axis is None or a == axis)


def span(shard, replica, offset, memory_axes, axis=None) -> int:
    def counts(a):
        return a == axis if axis is not None else a in memory_axes

    total = 1 + sum((e - 1) * s for e, s, a in [*shard, *replica] if counts(a))
    return total + sum(v for a, v in offset.items() if counts(a))


_BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b,
    "FloorMod": lambda a, b: a % b,
    "Min": min,
    "Max": max,
    "BitwiseXor": lambda a, b: a ^ b,
    "BitwiseAnd": lambda a, b: a & b,
    "BitwiseOr": lambda a, b: a | b,
    "ShiftLeft": lambda a, b: a << b,
    "ShiftRight": lambda a, b: a >> b,
    "LShift": lambda a, b: a << b,
    "RShift": lambda a, b: a >> b,
}


def evaluate(expr, env) -> int:
    """The value of an integer TVM expression with ``env`` mapping variable names to ints (TVM's simplifier does
    not fold every bitwise operation after binding, so the tests evaluate on their own)."""
    name = type(expr).__name__
    if isinstance(expr, int):
        return expr
    if name == "IntImm":
        return int(expr.value)
    if name == "Var":
        return env[expr.name]
    if name == "Cast":
        return evaluate(expr.value, env)
    return _BINARY[name](evaluate(expr.a, env), evaluate(expr.b, env))


def forward(shard, replica, offset, coords, shape=None, with_replicas=False) -> list[dict[str, int]]:
    """SPEC §2's forward map in its three forms: ``coords`` is one flat index, one coordinate per shard iter, or
    (with ``shape``) a logical coordinate flattened row-major first. Places keep the axes of the shard and the
    offset (and of the replica iters for ``with_replicas``); without replicas the one base place is returned."""
    extents = [e for e, _, _ in shard]
    if shape is not None:
        shard_coords = split(flatten(coords, shape), extents)
    elif len(coords) == 1 and len(shard) != 1:
        shard_coords = split(coords[0], extents)
    else:
        shard_coords = list(coords)
    places = all_places(shard, replica if with_replicas else [], offset, shard_coords)
    axes = [a for _, _, a in shard] + list(offset) + ([a for _, _, a in replica] if with_replicas else [])
    return [{a: place.get(a, 0) for a in axes} for place in places]
