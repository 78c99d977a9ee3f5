"""``T.tile_copy_async`` without a barrier (``cp.async``, ops/cp_async) and ``T.tile_copy_async_wait``: built,
assembled for sm_80 and sm_120, simulated equal to numpy on the simulator's own model of ``cp.async`` groups
(sim/cp_async.py), with the tail past the tensor zero-filled; reading a stage before its wait, or another thread's
part without the barrier, is a DataRace; what cp.async cannot do is refused by name."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build

from kernels import parse

KERNEL = """
@T.prim_func
def k(A: T.Buffer((M, 64), "float16"), B: T.Buffer((64, 64), "float16")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((2, 64, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 64, 64)), align=1024)
    T.tile_copy_async(As[0], A[0:64, 0:64])
    T.tile_copy_async(As[1], A[64:128, 0:64])
    T.tile_copy_async_wait(WAIT)
    T.tile_copy(B, As[STAGE])
"""


def kernel(m=128, wait=1, stage=0, **edits):
    text = KERNEL.replace("WAIT", str(wait)).replace("STAGE", str(stage)).replace("(M, 64)", f"({m}, 64)")
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    return parse(text)


A = np.arange(128 * 64).reshape(128, 64).astype(np.float16)


# sm_90a and sm_100a also have the TMA, whose run lowering (one election per run of loads) sees these barrier-less
# loads too: it once took their cp.async record for a TMA's and failed (found by the kernel fuzzer).
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a", "sm_120"])
def test_two_stages_copied_and_the_older_one_read_after_waiting_for_it(arch):
    func = kernel(wait=1, stage=0)
    np.testing.assert_array_equal(sim.run(func, {"A": A}, arch)["B"], A[:64])
    np.testing.assert_array_equal(sim.run(kernel(wait=0, stage=1), {"A": A}, arch)["B"], A[64:])
    cuda = build(func, arch).imports[0].inspect_source()
    body = cuda.split("__global__")[-1]
    # 64 x 64 halves = 512 vectors of 16 bytes per tile: four rounds of 128 threads, one commit per copy
    assert len(re.findall(r"tirx_layout_cpasync_copy_16\(", body)) == 2
    assert len(re.findall(r"tirx_layout_cpasync_commit_group\(\)", body)) == 2
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in cuda and "cp.async.wait_group 1;" in cuda
    assembled = nvcc_assembles(cuda, arch)
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]


def test_the_tail_past_the_tensor_is_zero_filled():
    out = sim.run(kernel(m=100, wait=0, stage=1), {"A": A[:100]}, "sm_80")
    expected = np.zeros((64, 64), np.float16)
    expected[:36] = A[64:100]
    np.testing.assert_array_equal(out["B"], expected)
    cuda = build(kernel(m=100, wait=0, stage=1), "sm_80").imports[0].inspect_source()
    assert re.search(r"\? \(uint\)16 : \(uint\)0\)", cuda)  # src-size 16 inside the tensor, 0 past it


def test_reading_a_stage_before_its_wait_group_is_a_race():
    # wait_group 1 leaves the newest group (stage 1) in flight
    with pytest.raises(sim.DataRace, match=r"As\[\d+\]: a load by thread \d+ while the cp\.async issued by thread"):
        sim.run(kernel(wait=1, stage=1), {"A": A}, "sm_80")


def test_reading_other_threads_copies_without_the_barrier_is_a_race():
    # a warp-scope wait orders each warp's own copies only; thread t then reads row t of the stage, which other
    # threads' cp.async wrote (the tile copy itself would read exactly what each thread copied: the same plan)
    func = kernel(
        wait=0,
        **{
            "T.tile_copy_async_wait(0)": 'T.tile_copy_async_wait(0, scope="warp")',
            "T.tile_copy(B, As[0])": "if tx < 64:\n        for i in T.serial(64):\n            B[tx, i] = As[0, tx, i]",
        },
    )
    with pytest.raises(sim.DataRace, match=r"As\[\d+\]: a load after a store by thread \d+ and thread \d+"):
        sim.run(func, {"A": A}, "sm_80")
    barrier = kernel(
        wait=0,
        **{"T.tile_copy(B, As[0])": "if tx < 64:\n        for i in T.serial(64):\n            B[tx, i] = As[0, tx, i]"},
    )
    np.testing.assert_array_equal(sim.run(barrier, {"A": A}, "sm_80")["B"], A[:64])


def test_overwriting_a_stage_in_flight_is_a_race():
    func = kernel(wait=0, **{"T.tile_copy_async(As[1], A[64:128, 0:64])": "T.tile_copy_async(As[0], A[64:128, 0:64])"})
    with pytest.raises(sim.DataRace, match=r"a cp\.async by thread \d+ while the cp\.async issued by thread"):
        sim.run(func, {"A": A}, "sm_80")


@pytest.mark.parametrize(
    ("edits", "arch", "message"),
    [
        (  # column-major shared tile of a row-major global one: 2-byte runs
            {
                'layout=mma_shared_layout("float16", "128B", (2, 64, 64)), align=1024': (
                    "layout=TileLayout(S[(2, 64, 64):(4096, 1, 64)])"
                )
            },
            "sm_80",
            r"moves whole 4-, 8- or 16-byte vectors.* allows only 2-byte ones",
        ),
        (
            {"T.tile_copy(B, As[0])": "T.tile_copy(B, As[0])\n    T.tile_copy_async(B[0:64, 0:64], As[0])"},
            "sm_80",
            r"no TMA\) is a cp\.async load: global -> shared without a barrier",
        ),
    ],
)
def test_refusals_name_the_problem(edits, arch, message):
    with pytest.raises(ValueError, match=message):
        build(kernel(wait=0, **edits), arch)
