"""The cost model's counts against an independent enumeration: each random case is lowered and run in the
simulator (``analysis.kernel_accesses`` plus an observer counting bytes), and the measured bytes, instructions and
wavefronts must equal what ``transform.cost_model`` computes statically from the layouts."""

from __future__ import annotations

import random

import numpy as np
import pytest

import infer_kernels
from tirx_layout import sim
from tirx_layout.analysis import kernel_accesses
from tirx_layout.transform import copy_cost
from tirx_layout.transform.cost_model import Cost
from tirx_layout.transform.infer_layouts import CopyOp, _scan, fragment_candidates, shared_candidates

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


def measured(kernel) -> Cost:
    """Bytes, instructions and wavefronts of ``kernel``'s shared/global instructions, as the simulator runs it."""
    moved = [0]

    def observe(node, kind, memory, addresses, active):
        lanes = addresses.shape[1] if addresses.ndim == 2 else 1
        moved[0] += int(np.sum(active)) * lanes * memory.data.dtype.itemsize

    sim.run(kernel, observer=observe)
    reports = kernel_accesses(kernel)
    return Cost(bytes=moved[0], instructions=sum(r.warp_executions for r in reports),
                global_instructions=sum(r.warp_executions for r in reports if r.scope == "global"),
                wavefronts=sum(r.wavefronts for r in reports), minimum_wavefronts=sum(r.minimum_wavefronts for r in reports))  # fmt: skip


def modelled(kernel, threads: int) -> Cost:
    scan = _scan(kernel)
    total = Cost()
    for copy in scan.copies:
        total = total + copy_cost(copy.dst, copy.src, copy.scope, scan.known, threads)
    return total


@pytest.mark.parametrize("seed", range(CASES))
def test_cost_model_matches_simulation(seed):
    kernel, threads = _case(seed)
    expected = measured(kernel)
    assert expected.instructions > 0
    assert modelled(kernel, threads) == expected
