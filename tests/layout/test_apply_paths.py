"""Single int coordinates are placed in Python (one FFI round trip costs more than the walk); arrays by the core.
The two paths agree everywhere, out-of-range and negative coordinates included, and int64 overflow stays an error."""

import math
import random

import numpy as np
import pytest

from tirx_layout import S, TileLayout, cute

from oracles.strategies import build, random_layout


def test_int_and_array_paths_agree_in_every_form():
    rng = random.Random(3)
    for _ in range(500):
        layout = build(random_layout(rng))
        extents = [it.extent for it in layout.shard]
        size = layout.size()
        for flat in (0, size - 1, rng.randrange(-3 * size, 3 * size)):
            got = layout.apply(np.array([flat]))
            assert layout.apply(flat) == {axis: int(v[0]) for axis, v in got.items()}, (layout, flat)
        coords = [rng.randrange(-2, e + 2) for e in extents]
        got = layout.apply(*[np.array([c]) for c in coords]) if coords else None
        if got is not None and len(coords) > 1:
            assert layout.apply(*coords) == {axis: int(v[0]) for axis, v in got.items()}, (layout, coords)
        shape = [size]
        assert layout.apply(size // 2, shape=shape) == {
            axis: int(v[0]) for axis, v in layout.apply(np.array([size // 2]), shape=shape).items()
        }


def test_int64_overflow_is_still_the_cores_error():
    huge = TileLayout(S[(4, 4) : (2**60, 1)])  # in range, every place fits in int64
    assert huge.apply(3, 3) == {"m": 3 * 2**60 + 3}
    with pytest.raises(ValueError, match="overflow"):
        huge.apply(2**62)  # out of range, the first iter's coordinate spills to 2**60
    with pytest.raises(ValueError, match="coordinate has 1 values but shape has 2 dimensions"):
        huge.apply(1, shape=[4, 4])


def test_cute_call_agrees_with_the_cores_array_evaluation():
    rng = random.Random(4)
    for _ in range(300):
        rank = rng.randint(1, 3)
        shape = tuple(rng.randint(1, 6) for _ in range(rank))
        stride = tuple(rng.randint(-4, 12) for _ in range(rank))
        layout = cute.Layout(shape, stride)
        indices = list(range(layout.size() + 3))  # past the size, the last mode runs on
        assert [layout(i) for i in indices] == layout.apply_array(np.array(indices)).tolist(), str(layout)
    with pytest.raises(ValueError, match="index must be >= 0"):
        cute.Layout((4, 8))(-1)


def test_cute_coordinates_agree_with_their_column_major_index():
    rng = random.Random(6)
    for _ in range(200):
        shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 3)))
        layout = cute.Layout(shape, tuple(rng.randint(-3, 9) for _ in shape))
        nested = cute.Layout((shape, 2), (tuple(rng.randint(0, 9) for _ in shape), 50))
        for _ in range(10):
            coord = (*(rng.randrange(s) for s in shape[:-1]), rng.randrange(shape[-1] + 3))  # the last mode runs on
            index = sum(c * math.prod(shape[:k]) for k, c in enumerate(coord))
            assert layout(*coord) == layout(coord) == layout(index), (str(layout), coord)
            inside = tuple(rng.randrange(s) for s in shape)  # only the last top-level mode runs on
            inner = sum(c * math.prod(shape[:k]) for k, c in enumerate(inside))
            assert nested(inside, 1) == nested(inner + math.prod(shape)), (str(nested), inside)
