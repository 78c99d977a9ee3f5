"""``examples/gemm_ring.py``, the part both pipelined GEMMs share: its docstring examples run (the example modules
are not in the package the docstring test walks), and the schedule agrees with an enumeration of the tile grid."""

import doctest

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
