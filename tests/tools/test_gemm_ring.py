"""``examples/gemm_ring.py``, the part both pipelined GEMMs share: its docstring examples run (the example modules
are not in the package the docstring test walks), and the schedule agrees with an enumeration of the tile grid."""

import doctest
import itertools

import pytest

from kernels import example_module

RING = example_module("gemm_ring")


@pytest.mark.parametrize("stem", ["gemm_ring", "hopper_pipelined_gemm", "pipelined_gemm"])
def test_docstring_examples(stem):
    result = doctest.testmod(example_module(stem), optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("m, n, ctas", [(200, 300, 1), (200, 300, 3), (1000, 130, 5), (128, 256, None)])
def test_the_schedule_covers_every_output_tile_once(m, n, ctas):
    plan = RING.schedule("gemm", m, n, 128, "bfloat16", (128, 256, 64), 2, ctas)
    # every CTA c takes tiles c, c + ctas, ... below the tile count, at most per_cta of them
    taken = [c + i * plan.ctas for c in range(plan.ctas) for i in range(plan.per_cta) if c + i * plan.ctas < plan.tiles]
    rows, cols = -(-m // 128), -(-n // 256)
    assert sorted(taken) == list(range(rows * cols)) and plan.tiles_n == cols and plan.k_tiles == 2


@pytest.mark.parametrize(
    "m, n, group",
    [(200, 300, 1), (1000, 1100, 3), (1000, 1100, 4), (4096, 4096, 18), (4096, 1000, 7), (640, 2560, 5), (300, 300, 9)],
)
def test_the_grouped_raster_visits_every_tile_once_walking_columns_of_its_group(m, n, group):
    plan = RING.schedule("gemm", m, n, 128, "bfloat16", (128, 256, 64), 2, None, group)
    rows, cols = -(-m // 128), -(-n // 256)
    places = [plan.coordinates(t) for t in range(plan.tiles)]
    assert sorted(places) == [(r, c) for r in range(rows) for c in range(cols)]
    height = min(group, rows)
    for t, ((m0, n0), (m1, n1)) in enumerate(itertools.pairwise(places)):
        first = m0 - m0 % height  # the group's first row of tiles
        tall = min(height, rows - first)  # its rows (the last group may hold fewer)
        if (t + 1) % (height * cols) == 0:  # the last tile of a group: the next group starts at its column 0
            assert (m1, n1) == (first + tall, 0)
        elif m0 - first < tall - 1:  # down the column: the next tile shares B's tile (column n0)
            assert (m1, n1) == (m0 + 1, n0)
        else:  # the column's last row: the next column at the group's first row
            assert (m1, n1) == (first, n0 + 1)


@pytest.mark.parametrize("ctas, group", [(148, 18), (132, 16), (64, 8)])
def test_a_wave_of_the_grouped_raster_reads_group_rows_of_a_and_its_share_of_columns_of_b(ctas, group):
    # 4096^3 in 128 x 256 tiles: 32 x 16 tiles. A wave inside one group spans `group` rows of tiles (A tiles) and
    # ceil(ctas / group) columns (B tiles) -- one more where it starts mid-column; row-major waves span every column
    plan = RING.schedule("gemm", 4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, ctas, group)
    first = [plan.coordinates(t) for t in range(ctas)]
    assert len({r for r, _ in first}) == group and len({c for _, c in first}) == -(-ctas // group)
    row_major = plan._replace(group=1)
    assert len({c for _, c in (row_major.coordinates(t) for t in range(ctas))}) == 16
    assert RING.wave_rows(plan, (128, 256, 64)) < RING.wave_rows(row_major, (128, 256, 64))


def test_a_raster_group_below_one_is_refused_naming_it():
    with pytest.raises(ValueError, match="gemm: group = 0; the raster's group is a count of rows of tiles"):
        RING.schedule("gemm", 256, 256, 128, "bfloat16", (128, 256, 64), 2, None, 0)
