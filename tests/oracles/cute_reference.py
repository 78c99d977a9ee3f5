"""The dumb twins of the CuTe tests: an enumerating evaluator written from the definition, random layouts as plain
(shape, stride) trees, and the bridges to pycute (the oracle)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import strategies as st

from tirx_layout.cute import Layout

from oracles.optional import pycute


def leaves(shape, stride):
    if isinstance(shape, tuple):
        return [leaf for s, d in zip(shape, stride, strict=False) for leaf in leaves(s, d)]
    return [(shape, stride)]


def evaluate(shape, stride, index):
    """``L(index)`` by the definition: split the index column-major over the flat modes, the last one unbounded.
    ``index`` is an int or an integer numpy array (evaluated elementwise)."""
    flat = leaves(shape, stride)
    total = 0 * index
    for k, (s, d) in enumerate(flat):
        if k == len(flat) - 1:
            total = total + index * d
        else:
            total = total + (index % s) * d
            index = index // s
    return total


def size_of(shape) -> int:
    return int(np.prod([s for s, _ in leaves(shape, shape)], dtype=object))


def table(layout, n=None) -> list[int]:
    """Every value of a plain layout (ours or pycute's) on ``[0, n)`` (default: its size), by the definition."""
    n = size_of(layout.shape) if n is None else n
    return evaluate(layout.shape, layout.stride, np.arange(n, dtype=np.int64)).tolist()


def ours(p: pycute.Layout) -> Layout:
    return Layout(p.shape, p.stride)


def theirs(layout: Layout) -> pycute.Layout:
    return pycute.Layout(layout.shape, layout.stride)


def same(a: Layout, b: pycute.Layout) -> bool:
    return a.shape == b.shape and a.stride == b.stride


def nest(rng: random.Random, modes: list):
    """Group a flat list of (shape, stride) into a random nesting; returns (shape, stride) trees."""
    if len(modes) == 1 and rng.random() < 0.6:
        return modes[0]
    groups, k = [], 0
    while k < len(modes):
        take = rng.randint(1, len(modes) - k)
        groups.append(modes[k : k + take])
        k += take
    if len(groups) == 1:
        return tuple(s for s, _ in modes), tuple(d for _, d in modes)
    parts = [nest(rng, g) for g in groups]
    return tuple(p[0] for p in parts), tuple(p[1] for p in parts)


EXTENTS = [1, 2, 2, 3, 4, 4, 6, 8]
STRIDES = [0, 1, 1, 2, 2, 3, 4, 4, 6, 8, 12, 16, 24, 32]


def random_layout(rng: random.Random, max_modes: int = 4, extents=EXTENTS, strides=STRIDES) -> Layout:
    modes = [(rng.choice(extents), rng.choice(strides)) for _ in range(rng.randint(1, max_modes))]
    return Layout(*nest(rng, modes))


def random_injective(rng: random.Random, max_modes: int = 4, extents=EXTENTS) -> Layout:
    """A layout with a complement: a compact layout of the shuffled modes, with random gaps between them."""
    shapes = [rng.choice([e for e in extents if e > 1] or [2]) for _ in range(rng.randint(1, max_modes))]
    order = list(range(len(shapes)))
    rng.shuffle(order)
    strides, current = [0] * len(shapes), 1
    for k in order:
        current *= rng.choice([1, 1, 2, 3])  # a gap of this factor before the mode
        strides[k] = current
        current *= shapes[k]
    return Layout(*nest(rng, list(zip(shapes, strides, strict=False))))


def random_pow2_layout(rng: random.Random, max_modes: int = 4, allow_zero: bool = True) -> Layout:
    """Power-of-two extents and strides: every composition of two of them is defined."""
    modes = [
        (rng.choice([1, 2, 4, 8]), rng.choice([0, 1, 2, 4, 8, 16, 32] if allow_zero else [1, 2, 4, 8, 16, 32]))
        for _ in range(rng.randint(1, max_modes))
    ]
    return Layout(*nest(rng, modes))


def seeds(n: int):
    """``n`` independent random generators (deterministic per position)."""
    return (random.Random(1_000_003 * k + 7) for k in range(n))


#: hypothesis: a random seed, turned into a layout by one of the generators above.
rng_seeds = st.integers(0, 2**32 - 1).map(random.Random)
