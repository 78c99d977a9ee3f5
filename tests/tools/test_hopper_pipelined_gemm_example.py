"""The pipelined, warp-specialised Hopper GEMM (``examples/hopper_pipelined_gemm.py``): the issue's 4096 x 4096 x 4096
kernels (bf16 128 x 256 x 64 and fp8 e4m3 128 x 256 x 128, four stages) build for sm_90a, hold the instructions the
tile and the ISA fix, and assemble without spilling; small grids simulate equal to numpy on random inputs (two CTAs;
one persistent CTA refilling every stage, with M and N tails; fp8); dropping any of the four waits (full, empty,
``T.tile_mma_wait(1)``, ``T.tile_mma_wait(0)``) is a DataRace; budgets and shapes that cannot run are refused at
build time naming the numbers. (The example table's entries are also simulated on the sample inputs by
``test_examples.py``.)"""

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.ops import find
from tirx_layout.ops.mbarrier import MBARRIER_WAIT
from tirx_layout.ops.mma import TILE_MMA_WAIT
from tirx_layout.sim import DataRace
from tirx_layout.tools.kernel_report import find_nvcc, kernel_source, load_full_size
from tirx_layout.tools.measurement import launch_values, lower, measure_cuda
from tirx_layout.transform import build

from kernels import EXAMPLES, example_module

EXAMPLE = example_module("hopper_pipelined_gemm")
ARCH = "sm_90a"

# (dtype, tile, the wgmma helper: m64 n256, K = 32 bytes of the dtype, f32 accumulator, both operands K-major)
BIG = {
    "bfloat16": ((128, 256, 64), "tirx_layout_wgmma_mma_m64n256k16_f32_bf16_bf16_ss_t00"),
    "float8_e4m3fn": ((128, 256, 128), "tirx_layout_wgmma_mma_m64n256k32_f32_e4m3_e4m3_ss_t00"),
}


@pytest.fixture(scope="module", params=sorted(BIG))
def big(request):
    """The main job's production sizes (``FULL_SIZE``, built for the module's ``ARCH``)."""
    dtype = request.param
    tile, helper = BIG[dtype]
    make, arch = load_full_size(EXAMPLES)[f"hopper_pipelined_gemm_4096_{'bf16' if dtype == 'bfloat16' else 'fp8'}"]
    assert arch == ARCH
    kernel = make()
    return dtype, tile, helper, kernel, build(kernel, ARCH).imports[0].inspect_source()


def test_the_4096_cube_kernels_hold_what_the_tile_and_the_isa_fix(big):
    dtype, (tile_m, tile_n, tile_k), helper, kernel, source = big
    body = kernel_source(source)
    (threads,) = set(re.findall(r"__global__ void __launch_bounds__\((\d+)\) gemm_kernel", source))
    assert threads == "384"  # two consumer warpgroups (64 rows each) and the producer's
    # A and B tensor maps; per K tile three TMA loads (each consumer's 64 rows of A, then B) in the producer's loop
    assert re.findall(r"const __grid_constant__ CUtensorMap (\w+)_tensormap", source)[:2] == ["A", "B"]
    assert len(re.findall(r"tirx_layout_tma_load_2d\(", body)) == 3
    # the ring in dynamic shared memory: 4 stages of 128 rows of A and tile_n rows of B, 128 bytes each, then full
    # (4 mbarriers, padded to the next 64 bytes: TVM's default alignment of a buffer) and empty
    element = 2 if dtype == "bfloat16" else 1
    assert tile_k * element == 128
    pool = launch_values(lower(kernel, "tirx_layout", ARCH))["tirx.use_dyn_shared_memory"]
    assert pool == 4 * (tile_m + tile_n) * 128 + 64 + 4 * 8 == 196704
    # one consumer K step: fence, tile_k * element / 32 wgmmas (K = 32 bytes each), commit, wait for all but one;
    # the consumers' K loop is unrolled over the four-stage ring (64 K tiles, a multiple of the stages): four steps
    ring = 4
    assert len(re.findall(rf"{helper}\(", body)) == ring * tile_k * element // 32 == 16
    assert body.count("tirx_layout_wgmma_fence(") == ring
    assert body.count("tirx_layout_wgmma_commit_group(") == ring
    assert len(re.findall(r"tirx_layout_wgmma_wait_group_1\(", body)) == ring
    assert len(re.findall(r"tirx_layout_wgmma_wait_group_0\(", body)) == 1
    # nothing tcgen05 on Hopper: no instruction, no helper name (the TMA, mbarrier and sync helpers are their own)
    assert "tcgen05" not in source


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_the_4096_cube_kernels_assemble_for_sm_90a_without_spilling(big):
    code = measure_cuda(big[4], ARCH)
    assert code.spill_bytes == 0
    # 65536 registers for 384 threads: at most 168 each (ptxas rounds to a multiple of 8); the accumulator is 128
    assert 128 < code.registers <= 168
    assert code.static_shared_bytes == 0  # the ring is dynamic shared memory (measured above)


def _inputs(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    cast = {
        "bfloat16": ml_dtypes.bfloat16,
        "float16": np.float16,
        "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
        "float8_e5m2": ml_dtypes.float8_e5m2,
    }[dtype]
    return rng.integers(-8, 9, (m, k)).astype(cast), rng.integers(-8, 9, (n, k)).astype(cast)


def _product(a, b):
    # integers below 9 in magnitude, K <= 256: every float32 partial sum is exact
    return a.astype(np.float64) @ b.astype(np.float64).T


@pytest.mark.parametrize(
    "m, n, k, dtype, tile, stages, ctas",
    [
        (256, 256, 256, "bfloat16", (128, 256, 64), 4, None),  # the grid: two CTAs, four K tiles each
        (200, 300, 192, "bfloat16", (128, 256, 64), 2, 1),  # tails in M and N; one CTA refills both stages
        (130, 96, 256, "float8_e4m3fn", (128, 64, 128), 3, 1),  # fp8 (K = 32 per wgmma), a 2-row M tail
        (130, 70, 256, "float16", (64, 64, 64), 2, 2),  # one consumer warpgroup (256 threads), three tiles per CTA
        (130, 70, 256, "float8_e5m2", (64, 64, 128), 2, 2),
    ],
)
def test_simulates_equal_to_numpy_on_random_inputs(m, n, k, dtype, tile, stages, ctas):
    kernel = EXAMPLE.hopper_pipelined_gemm(m, n, k, dtype, tile, stages, ctas=ctas)
    a, b = _inputs(m, n, k, dtype, seed=m + n + k)
    result = sim.run(kernel, {"A": a, "B": b}, ARCH)
    np.testing.assert_array_equal(result["D"], _product(a, b))
    assert (result.writes["D"] == 1).all()


@pytest.fixture(scope="module")
def small():
    """Two stages, four K tiles per output tile and four output tiles on one CTA: every stage is refilled seven
    times and every barrier phase turns over."""
    return EXAMPLE.hopper_pipelined_gemm(256, 128, 256, "bfloat16", (128, 64, 64), 2, ctas=1)


def _without(kernel, is_dropped):
    """``kernel`` with its first statement (in program order) for which ``is_dropped`` holds left out."""
    seen = []

    def drop(stmt):
        if is_dropped(stmt):
            seen.append(stmt)
            if len(seen) == 1:
                return tvm.tirx.Evaluate(0)
        return stmt

    body = tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, drop)], order="pre")
    assert seen, "nothing to drop"
    return kernel.with_body(body)


def _pending_of_wait(stmt):
    """The ``pending`` count of a ``T.tile_mma_wait`` statement, else ``None``."""
    op = find(stmt)
    return op.pending if op is not None and op.spec is TILE_MMA_WAIT else None


def _mbarrier_wait_on(name):
    def found(stmt):
        op = find(stmt)
        return op is not None and op.spec is MBARRIER_WAIT and op.bar.source.name == name

    return found


def test_the_small_kernel_runs_with_every_wait(small):
    a, b = _inputs(256, 128, 256, "bfloat16", seed=3)
    np.testing.assert_array_equal(sim.run(small, {"A": a, "B": b}, ARCH)["D"], _product(a, b))


_WGMMA = r"the wgmma.mma_async.m64n64k16.f32.bf16.bf16 \(SS\) of warpgroup 0"


@pytest.mark.parametrize(
    "dropped, message",
    [
        # the consumers' wgmma reads stage 0 before the TMA filled it; the fill then lands under the pending group
        (_mbarrier_wait_on("full"), rf"a_tile\[0\]: a store by thread 256 while {_WGMMA} still reads it"),
        # the producer refills stage 0 before the consumers released it (nor has it seen its first fill complete)
        (_mbarrier_wait_on("empty"), r"a_tile\[0\]: a store \(thread 256\) before it has seen the TMA load"),
        # without wait_group 1 the arrival on empty releases a stage whose wgmma group is still pending: the first
        # wait in program order is the first step of the ring turn (the loop is unrolled over the ring), whose
        # arrive releases the last stage, stage 1 (a_tile slots 2-3, from element 2 * 64 * 64)
        (
            lambda stmt: _pending_of_wait(stmt) == 1,
            rf"a_tile\[8192\]: a store by thread 256 while {_WGMMA} still reads it",
        ),
        # without wait_group 0 the epilogue reads accumulator registers the last group still writes
        (
            lambda stmt: _pending_of_wait(stmt) == 0,
            r"registers acc_flat\[0\] of thread 0: ordinary code reads them while",
        ),
    ],
    ids=["full", "empty", "tile_mma_wait_1", "tile_mma_wait_0"],
)
def test_dropping_a_wait_is_a_data_race(small, dropped, message):
    a, b = _inputs(256, 128, 256, "bfloat16", seed=3)
    with pytest.raises(DataRace, match=message):
        sim.run(_without(small, dropped), {"A": a, "B": b}, ARCH)


def test_a_ring_that_does_not_fit_shared_memory_is_refused_naming_the_bytes():
    # 5 x (128 + 256) x 64 x 2 bytes of tiles + 8 bytes for each of the 2 x 5 mbarriers; 227 KB per CTA
    need = 5 * (128 + 256) * 64 * 2 + 8 * 2 * 5
    with pytest.raises(ValueError, match=rf"5 stages .* need at least {need} bytes of shared memory; a CTA has 232448"):
        EXAMPLE.hopper_pipelined_gemm(4096, 4096, 4096, stages=5)


def test_an_accumulator_that_leaves_too_few_registers_is_refused_naming_them():
    # three consumer warpgroups and the producer: 512 threads, 65536 / 512 = 128 registers each, the 64 x 256
    # accumulator alone 128
    with pytest.raises(
        ValueError, match=r"is 128 registers per consumer thread; with 512 threads a thread may have 128"
    ):
        EXAMPLE.hopper_pipelined_gemm(384, 256, 128, tile=(192, 256, 64), stages=3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"K": 200}, r"K = 200 is not a multiple of tile_k = 64"),
        ({"tile": (96, 256, 64)}, r"tile_m = 96 is not a multiple of 64"),
        ({"tile": (128, 252, 64)}, r"shape \(4, 252, 64\) must be whole atoms of 8 rows"),
        ({"tile": (128, 256, 32)}, r"tile_k = 32 bfloat16 elements is 64 bytes"),
        ({"stages": 1}, r"stages = 1"),
        ({"ctas": 3}, r"ctas = 3 must be in 1..2"),
        ({"dtype": "float32"}, r"operand dtype 'float32'"),
        ({"cluster": 3}, r"cluster = 3; the kernel pairs CTAs \(cluster=2\) or not"),
        ({"cluster": 2}, r"even number of CTAs and of tile columns \(ctas = 2, tile columns = 1\)"),
        ({"cluster": 2, "N": 512, "ctas": 3}, r"\(ctas = 3, tile columns = 2\)"),
    ],
)
def test_shapes_the_kernel_cannot_run_are_refused(kwargs, message):
    args = {"M": 256, "N": 256, "K": 256} | kwargs
    with pytest.raises(ValueError, match=message):
        EXAMPLE.hopper_pipelined_gemm(**args)
