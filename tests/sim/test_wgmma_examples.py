"""End to end on the simulator's wgmma model: the asynchronous K loop of examples/hopper_gemm.py (whose kernels
tests/tools/test_examples.py simulates equal to numpy) needs each of its waits (without one, the simulator reports the race it leaves)."""

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.tools.kernel_report import load_example_module, report

from kernels import EXAMPLES, example_module, parse

HOPPER = example_module("hopper_gemm")


# (Every kernel of examples/hopper_gemm.py is simulated equal to numpy, each output written once, by
# tests/tools/test_examples.py: its table is built for sm_90a.)


@pytest.mark.parametrize(
    ("wait", "race"),
    [
        # without the wait for all but the newest group, the next iteration refills the stage a group still reads
        ("T.tile_mma_wait(1)", r"store by thread \d+ while the wgmma\.mma_async.*still reads it"),
        # without the final wait, the epilogue reads the accumulator while the last group is pending
        ("T.tile_mma_wait(0)", r"ordinary code reads them while the wgmma\.mma_async.*holds them as its accumulator"),
    ],
)
def test_each_wait_of_the_async_k_loop_is_needed(tmp_path, wait, race):
    source = (EXAMPLES / "hopper_gemm.py").read_text()
    loop = re.search(r"^def wgmma_k_loop_async\(.*?^    return gemm$", source, re.MULTILINE | re.DOTALL)
    statement = re.compile(r"^(\s+)" + re.escape(wait), re.MULTILINE)  # the statement, not the docstring's mention
    assert len(statement.findall(loop.group())) == 1
    without = tmp_path / "hopper_gemm.py"
    edited = statement.sub(r"\1T.evaluate(0)", loop.group())
    without.write_text(source[: loop.start()] + edited + source[loop.end() :])
    kernel, expected = load_example_module(without).KERNELS["wgmma_k_loop_async"]
    with pytest.raises(sim.DataRace, match=race):
        report("without one", kernel, expected, arch=HOPPER.ARCH)


TMA_STAGES = """
@T.prim_func
def gemm(A: T.Buffer((64, 128), "float16"), B: T.Buffer((64, 128), "float16"), C: T.Buffer((64, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    A_s = T.alloc_shared((2, 64, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 64, 64)),
                         align=1024)
    B_s = T.alloc_shared((2, 64, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 64, 64)),
                         align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    T.mbarrier_init(bars[0], 2)
    T.mbarrier_init(bars[1], 2)
    for kt in range(2):
        T.tile_copy_async(A_s[STAGE, 0:64, 0:64], A[0:64, kt * 64 : kt * 64 + 64], bars[kt])
        T.tile_copy_async(B_s[STAGE, 0:64, 0:64], B[0:64, kt * 64 : kt * 64 + 64], bars[kt])
        T.mbarrier_wait(bars[kt], 0)
        T.tile_mma(acc, A_s[STAGE, 0:64, 0:64], B_s[STAGE, 0:64, 0:64], accumulate=kt > 0, wait=False)
    T.tile_mma_wait(0)
    T.tile_copy(C, acc)
"""


def test_a_tma_load_into_a_stage_a_pending_group_reads_is_a_race():
    # the TMA load stores through its issuing thread (thread 0): the same check as a thread's store
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-4, 5, (64, 128)).astype(np.float16) for _ in range(2))
    expected = a.astype(np.float64) @ b.astype(np.float64).T
    two_stages = sim.run(parse(TMA_STAGES.replace("STAGE", "kt % 2")), {"A": a, "B": b}, HOPPER.ARCH)
    np.testing.assert_array_equal(two_stages["C"], expected)
    with pytest.raises(sim.DataRace, match=r"A_s\[0\]: a store by thread 0 while the wgmma\.mma_async.*still reads it"):
        sim.run(parse(TMA_STAGES.replace("STAGE", "0")), {"A": a, "B": b}, HOPPER.ARCH)


THREAD_WRITTEN_OPERANDS = """
@T.prim_func
def gemm(A: T.Buffer((64, 64), "float16"), B: T.Buffer((64, 64), "float16"), C: T.Buffer((64, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    ready = T.alloc_shared((1,), "uint64")
    A_s = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)
    B_s = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    T.mbarrier_init(ready[0], 128)
    T.tile_copy(A_s, A)
    T.tile_copy(B_s, B)
    PUBLISH
    T.tile_mma(acc, A_s, B_s, scope="warpgroup")
    T.tile_copy(C, acc)
"""


@pytest.mark.parametrize(
    ("publish", "race"),
    [
        # the writers' arrive fences the async proxy, the wait orders their stores before the wgmma
        ("T.mbarrier_arrive(ready[0])\n    T.mbarrier_wait(ready[0], 0)", None),
        # a CTA barrier orders the stores, but no writer made them visible to the async proxy wgmma reads through:
        # a warpgroup-scope tile_mma emits no proxy fence of its own
        ("T.cuda.cta_sync()", r"no fence\.proxy\.async after the store"),
    ],
)
def test_a_warpgroup_scope_wgmma_reads_thread_written_operands_only_after_the_writers_fence(publish, race):
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-4, 5, (64, 64)).astype(np.float16) for _ in range(2))
    kernel = parse(THREAD_WRITTEN_OPERANDS.replace("PUBLISH", publish))
    if race is None:
        result = sim.run(kernel, {"A": a, "B": b}, HOPPER.ARCH)
        np.testing.assert_array_equal(result["C"], a.astype(np.float64) @ b.astype(np.float64).T)
    else:
        with pytest.raises(sim.DataRace, match=race):
            sim.run(kernel, {"A": a, "B": b}, HOPPER.ARCH)
