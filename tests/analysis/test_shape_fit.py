"""Whether a layout was written for its buffer's shape: against an enumerating twin on every pair of shapes of a
few element counts, and the documented cases."""

from __future__ import annotations

import itertools
import math

import pytest

from tirx_layout import ComposeLayout, S, SwizzleLayout, TCol, TileLayout, TLane
from tirx_layout.analysis.shape_fit import layout_dims, reinterprets


def shapes_of(count: int, rank: int) -> list[tuple[int, ...]]:
    """Every shape of ``rank`` extents > 1 multiplying to ``count``."""
    divisors = [d for d in range(2, count + 1) if count % d == 0]
    return [s for s in itertools.product(divisors, repeat=rank) if math.prod(s) == count]


def twin(dims, shape) -> bool:
    """By enumeration: each buffer dimension (the others at 0) reaches a set of flat offsets; it fits the layout
    when that set is the set a run of whole layout dimensions reaches (a merge), or lies among the offsets of one
    layout dimension (a split). The buffer reinterprets the layout when some dimension does neither."""
    lstrides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]
    runs = []
    for k in range(len(dims)):
        for stop in range(k + 1, len(dims) + 1):
            grids = itertools.product(*[range(e) for e in dims[k:stop]])
            runs.append({sum(c * s for c, s in zip(g, lstrides[k:stop], strict=True)) for g in grids})
    singles = [{c * s for c in range(e)} for e, s in zip(dims, lstrides, strict=True)]
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    for extent, stride in zip(shape, strides, strict=True):
        reached = {i * stride for i in range(extent)}
        if reached not in runs and not any(reached <= single for single in singles):
            return True
    return False


@pytest.mark.parametrize("count", [16, 24, 36, 64])
def test_reinterprets_agrees_with_the_enumerating_twin(count):
    pairs = 0
    for layout_rank, buffer_rank in itertools.product((1, 2, 3), repeat=2):
        for dims in shapes_of(count, layout_rank):
            strides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]
            layout = TileLayout(S[tuple(dims) : tuple(strides)])
            for shape in shapes_of(count, buffer_rank):
                assert reinterprets(layout, shape) == twin(dims, shape), (dims, shape)
                pairs += 1
    assert pairs > 20


def test_documented_cases():
    assert reinterprets(TileLayout(S[(32, 128) : (128, 1)]), (64, 64))
    assert not reinterprets(TileLayout(S[64:1]), (4, 16))
    accumulator = TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)])
    assert not reinterprets(accumulator, (256, 112)) and not reinterprets(accumulator, (2, 128, 112))
    assert reinterprets(accumulator, (128, 224))
    swizzled = ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64) : (64, 1)]))
    assert layout_dims(swizzled) == (8, 64) and reinterprets(swizzled, (16, 32))
    assert not reinterprets(TileLayout(S[(8, 8) : (8, 1)]), (4, 8))  # another count: not this check's business
