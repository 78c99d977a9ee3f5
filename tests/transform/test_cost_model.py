"""The cost model's counts against an independent enumeration: each random case is lowered and run in the
simulator (``analysis.kernel_accesses`` plus an observer counting bytes), and the measured bytes, instructions and
wavefronts must equal what ``transform.cost_model`` computes statically from the layouts."""

from __future__ import annotations

import random

import pytest

from tirx_layout.transform import copy_cost
from tirx_layout.transform.infer_layouts.cost_model import Cost
from tirx_layout.transform.infer_layouts.infer import fragment_candidates, scan, shared_candidates

from kernels import staged as infer_kernels

CASES = 60


def _case(seed: int):
    rng = random.Random(seed)
    dtype = rng.choice(["float16", "float32"])
    threads = rng.choice([32, 64, 128])
    # Mostly 2-D tiles (every swizzle candidate); one case in five a 1-D tile of any width (tail layouts).
    shape = (rng.randrange(20, 300),) if rng.random() < 0.2 else (rng.choice([8, 16, 32]), rng.choice([8, 16, 32, 40]))
    shared = rng.choice(shared_candidates(shape, dtype))
    frag = rng.choice(fragment_candidates(shape, dtype, threads))
    return infer_kernels.staged(shape, dtype, threads, shared, frag), threads


def modelled(kernel, threads: int) -> Cost:
    found = scan(kernel)
    total = Cost()
    for copy in found.copies:
        total = total + copy_cost(copy.dst, copy.src, copy.scope, found.known, threads)
    return total


@pytest.mark.parametrize("seed", range(CASES))
def test_cost_model_matches_simulation(seed):
    kernel, threads = _case(seed)
    expected = infer_kernels.measured(kernel)
    assert expected.instructions > 0
    assert modelled(kernel, threads) == expected
