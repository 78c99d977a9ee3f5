"""The pipelined, warp-specialised GEMM (``examples/pipelined_gemm.py``): the issue's 4096 x 4096 x 4096 bfloat16
kernel (TMA loads) builds and assembles; small grids simulate equal to numpy on random inputs, with TMA loads and
with thread-copy loads (a tail grid and several tiles per persistent CTA, so every ring stage is refilled and both
accumulator stages and every ring phase turn over); dropping any wait between the roles, or waiting for the wrong
phase, is caught by the simulator; budgets that do not fit are refused at build time naming the numbers. (The example table's entries are also simulated on the
sample inputs by ``test_examples.py``.)"""

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.ops import find
from tirx_layout.ops.mbarrier import MBARRIER_WAIT
from tirx_layout.sim import DataRace, SimulationError
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles
from tirx_layout.transform import build

from kernels import example_module

EXAMPLE = example_module("pipelined_gemm")


@pytest.fixture(scope="module")
def big_source():
    return (
        build(EXAMPLE.pipelined_gemm(4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, ctas=148))
        .imports[0]
        .inspect_source()
    )


def test_the_4096_cube_bf16_kernel_with_tma_loads_builds_and_assembles(big_source):
    body = kernel_source(big_source)
    # two tensor maps (A, B) passed as kernel parameters; the K loops are unrolled over the 4 stages (64 K tiles
    # are a multiple of 4): two TMA loads per stage in the producer's loop body
    (signature,) = set(re.findall(r"__global__ void __launch_bounds__\(384, 1\) gemm_kernel\(([^)]*)\)", big_source))
    assert re.findall(r"const __grid_constant__ CUtensorMap (\w+)_tensormap", signature) == ["A", "B"]
    assert len(re.findall(r"tirx_layout_tma_load_2d\(", body)) == 2 * 4
    # 4 stages of 128 x 64 and 256 x 64 bf16 tiles (196608 bytes, so in the dynamic shared pool: a_tile at element
    # 0, b_tile at 4 x 128 x 64 = 32768 bf16 elements); each unrolled stage's descriptors start at a constant
    # address (stage s: s x 128 x 64 or s x 256 x 64 elements on), so nvcc computes them once, outside the loop
    assert "extern __shared__ __align__(1024) uchar shared_pool_ptr[];" in body
    descriptors = re.findall(r"tcgen05_smem_descriptor\(\(&\(\(\(nv_bfloat16\*\)shared_pool_ptr\)\[(\d+)\]\)\)", body)
    assert descriptors == [str(base + s * rows * 64) for s in range(4) for base, rows in ((0, 128), (32768, 256))]
    # two 256-column fp32 accumulator stages = all 512 columns
    assert re.findall(r"tcgen05_alloc\(\(&\(\(\(uint\*\)shared_pool_ptr\)\[\d+\]\)\), \(uint\)(\d+)\)", body) == ["512"]
    # the producer's and the MMA thread's loops over ring turns stay loops (nvcc would unroll all 16 turns)
    assert len(re.findall(r"#pragma unroll 1\s+for \(int k0\w* = 0; k0\w* < 16; \+\+k0\w*\)", body)) == 2
    # one tcgen05.mma per K step of 16 in the MMA thread's loop body: 64 / 16 = 4 per stage
    assert len(re.findall(r"tirx_layout_tcgen05_mma_f16_ss\(", body)) == 4 * 4
    # the epilogue drains 256 columns as 8 tcgen05.ld of 32 columns
    assert len(re.findall(r"tirx_layout_tcgen05_ld_32x32b_x32\(", body)) == 8
    assembled = nvcc_assembles(big_source)
    if assembled is not None:
        assert assembled[0], assembled[1]


def _inputs(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    cast = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}[dtype]
    a = rng.integers(-8, 9, (m, k)).astype(cast)
    b = rng.integers(-8, 9, (n, k)).astype(cast)
    return a, b


@pytest.mark.parametrize("loads", ["threads", "tma"])
@pytest.mark.parametrize(
    "m, n, k, dtype, tile, stages, ctas",
    [
        (256, 256, 256, "bfloat16", (128, 256, 64), 4, None),  # the CI grid: two CTAs, four K tiles each
        (200, 300, 192, "bfloat16", (128, 256, 64), 2, 1),  # tails in M and N; one CTA takes all four tiles
        (130, 96, 256, "float8_e4m3fn", (128, 64, 128), 3, 1),  # fp8, a 2-row M tail, three stages
    ],
)
def test_simulates_equal_to_numpy_on_random_inputs(m, n, k, dtype, tile, stages, ctas, loads):
    """Persistent CTAs refilling every stage (the last two grids), with either producer."""
    kernel = EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages, ctas=ctas, loads=loads)
    a, b = _inputs(m, n, k, dtype, seed=m + n + k)
    result = sim.run(kernel, {"A": a, "B": b})
    # written here: integers below 9 in magnitude, K <= 256, so every float32 partial sum is exact
    np.testing.assert_array_equal(result["D"], a.astype(np.float64) @ b.astype(np.float64).T)
    assert (result.writes["D"] == 1).all()


@pytest.mark.parametrize(
    "m, n, k, dtype, tile",
    [
        (256, 256, 256, "bfloat16", (128, 256, 64)),  # the CI grid: two CTAs, four K tiles in four stages
        (200, 300, 128, "bfloat16", (128, 256, 64)),  # tails: the TMA fills rows past M and N with zeros
        (130, 96, 256, "float8_e4m3fn", (128, 64, 128)),
    ],
)
def test_the_tma_kernel_simulates_equal_to_numpy_without_stage_refills(m, n, k, dtype, tile):
    kernel = EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages=4)
    a, b = _inputs(m, n, k, dtype, seed=m + n + k)
    result = sim.run(kernel, {"A": a, "B": b})
    np.testing.assert_array_equal(result["D"], a.astype(np.float64) @ b.astype(np.float64).T)
    assert (result.writes["D"] == 1).all()


def _without_wait(kernel, name: str, occurrence: int = 0):
    """``kernel`` with its ``occurrence``-th (in program order) ``T.mbarrier_wait`` on buffer ``name`` dropped."""
    seen = []

    def drop(stmt):
        op = find(stmt)
        if op is not None and op.spec is MBARRIER_WAIT and op.bar.source.name == name:
            seen.append(stmt)
            if len(seen) - 1 == occurrence:
                return tvm.tirx.Evaluate(0)
        return stmt

    body = tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, drop)], order="pre")
    assert len(seen) > occurrence, f"no wait {occurrence} on {name}"
    return kernel.with_body(body)


@pytest.fixture(scope="module")
def small():
    """Two stages, four K tiles per output tile and four output tiles on one CTA: every barrier turns over."""
    return EXAMPLE.pipelined_gemm(256, 128, 256, "bfloat16", (128, 64, 64), 2, ctas=1, loads="threads")


def test_the_small_kernel_runs_with_every_wait(small):
    a, b = _inputs(256, 128, 256, "bfloat16", seed=3)
    result = sim.run(small, {"A": a, "B": b})
    np.testing.assert_array_equal(result["D"], a.astype(np.float64) @ b.astype(np.float64).T)


@pytest.mark.parametrize(
    "name, occurrence, error, message",
    [
        # the producer refills stage 0 without waiting, completing two phases of full[0]: the MMA's wait for parity
        # 0 of full[0] sees them go by and never returns, so nothing frees stage 1 for the producer's next wait
        # (the simulator runs the producer first, until it blocks, and names the first wait that cannot return)
        ("empty", 0, SimulationError, r"mbarrier wait by thread 128 on empty\[1\] .* never returns"),
        # the MMA thread announces the accumulator before its last MMA completes: the epilogue's tcgen05.ld races it
        # (waits 0 and 1 on empty are the producer's, its K loop unrolled over the two stages)
        ("empty", 2, DataRace, r"tcgen05.ld by warp 0 of a cell a tcgen05.mma issued by warp 8 writes"),
        # the MMA reads a stage the producer is filling
        ("full", 0, DataRace, r"tcgen05.mma.kind::f16 \(SS\) issued by thread 256 \(A\) reads what thread 128 wrote"),
        # the epilogue reads an accumulator still being written
        ("acc_full", 0, DataRace, r"tcgen05.ld by warp 0 of a cell a tcgen05.mma issued by warp 8 writes"),
        # the MMA overwrites an accumulator the epilogue is still reading
        ("acc_empty", 0, DataRace, r"access by warp 8 an MMA's write after a load by warp 0, not ordered"),
    ],
)
def test_dropping_a_wait_is_caught_by_the_simulator(small, name, occurrence, error, message):
    a, b = _inputs(256, 128, 256, "bfloat16", seed=3)
    with pytest.raises(error, match=message):
        sim.run(_without_wait(small, name, occurrence), {"A": a, "B": b})


def _waiting_for_the_other_phase(kernel, name: str):
    """``kernel`` with every ``T.mbarrier_wait`` on buffer ``name`` waiting for the other parity."""

    def flip(stmt):
        op = find(stmt)
        if op is not None and op.spec is MBARRIER_WAIT and op.bar.source.name == name:
            return tvm.tirx.Evaluate(MBARRIER_WAIT(op.bar, 1 - op.parity))
        return stmt

    return kernel.with_body(tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, flip)], order="pre"))


def test_waiting_for_the_wrong_phase_is_caught_by_the_simulator(small):
    # the MMA thread waits on full[s] for the other parity: once the producer has filled a stage its phase is done,
    # so a wait for the next parity blocks while the producer blocks on empty[s]: the run cannot finish
    wrong = _waiting_for_the_other_phase(small, "full")
    a, b = _inputs(256, 128, 256, "bfloat16", seed=3)
    with pytest.raises(SimulationError, match=r"mbarrier wait by thread \d+ on \w+\[0\] .* never returns"):
        sim.run(wrong, {"A": a, "B": b})


@pytest.fixture(scope="module")
def small_tma():
    """The small kernel with the TMA producer warp: four output tiles of four K tiles, sixteen K steps through two
    stages (each refilled seven times), each accumulator stage used twice."""
    return EXAMPLE.pipelined_gemm(256, 128, 256, "bfloat16", (128, 64, 64), 2, ctas=1, loads="tma")


def test_the_small_tma_kernel_refills_every_stage_with_every_wait(small_tma):
    a, b = _inputs(256, 128, 256, "bfloat16", seed=4)
    result = sim.run(small_tma, {"A": a, "B": b})
    np.testing.assert_array_equal(result["D"], a.astype(np.float64) @ b.astype(np.float64).T)


_UNSEEN_LOAD = r"before it has seen the TMA load into a_tile issued by thread 128 complete"


@pytest.mark.parametrize(
    "name, occurrence, message",
    [
        # the producer refills stage 0 without waiting for the MMA that reads it: the refill is not ordered after
        # the stage's previous load (nor after the MMA's read)
        ("empty", 0, r"a_tile\[0\]: a store \(thread 128\) " + _UNSEEN_LOAD),
        # (waits 0 and 1 on empty are the producer's, its K loop unrolled over the two stages)
        ("empty", 2, r"tcgen05.ld by warp 0 of a cell a tcgen05.mma issued by warp 8 writes"),
        # the MMA reads a stage before the TMA load into it is seen complete
        ("full", 0, r"a_tile\[0\]: the tcgen05.mma.kind::f16 \(SS\) issued by thread 256 \(A\) .*" + _UNSEEN_LOAD),
        ("acc_full", 0, r"tcgen05.ld by warp 0 of a cell a tcgen05.mma issued by warp 8 writes"),
        ("acc_empty", 0, r"access by warp 8 an MMA's write after a load by warp 0, not ordered"),
    ],
)
def test_dropping_a_wait_in_the_tma_kernel_is_caught_by_the_simulator(small_tma, name, occurrence, message):
    a, b = _inputs(256, 128, 256, "bfloat16", seed=4)
    with pytest.raises(DataRace, match=message):
        sim.run(_without_wait(small_tma, name, occurrence), {"A": a, "B": b})


def test_waiting_for_the_wrong_empty_phase_hangs_the_tma_producer_and_the_wait_is_named(small_tma):
    # the producer's first-turn waits pass at once only because they ask for parity 1, the phase before a fresh
    # mbarrier's first; flipped, they wait for phase 0, which only the MMA's commit on a stage the producer has not
    # filled yet would complete: nothing runs on, and the simulator names the wait
    wrong = _waiting_for_the_other_phase(small_tma, "empty")
    a, b = _inputs(256, 128, 256, "bfloat16", seed=4)
    with pytest.raises(SimulationError, match=r"mbarrier wait by thread 128 on empty\[0\] .* never returns"):
        sim.run(wrong, {"A": a, "B": b})


def test_a_ring_that_does_not_fit_shared_memory_is_refused_naming_the_bytes():
    # 5 x (128 + 256) x 64 x 2 bytes of tiles + 8 bytes for each of the 2 x 5 + 4 mbarriers; 227 KB per CTA
    need = 5 * (128 + 256) * 64 * 2 + 8 * (2 * 5 + 4)
    with pytest.raises(ValueError, match=rf"5 stages .* need at least {need} bytes of shared memory; a CTA has 232448"):
        EXAMPLE.pipelined_gemm(4096, 4096, 4096, stages=5)


def test_accumulators_over_512_tmem_columns_are_refused_naming_the_columns():
    with pytest.raises(ValueError, match=r"need 640 TMEM columns; an SM has 512"):
        EXAMPLE.pipelined_gemm(256, 640, 128, tile=(128, 320, 64), stages=2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"K": 200}, r"K = 200 is not a multiple of tile_k = 64"),
        ({"tile": (64, 256, 64)}, r"tile_m = 64"),
        ({"tile": (128, 256, 32)}, r"tile_k = 32 bfloat16 elements is 64 bytes"),
        ({"stages": 1}, r"stages = 1"),
        ({"ctas": 3}, r"ctas = 3 must be in 1..2"),
        ({"dtype": "float32"}, r"operand dtype 'float32'"),
        ({"loads": "cp.async"}, r"loads = 'cp.async'; expected 'tma' or 'threads'"),
    ],
)
def test_shapes_the_kernel_cannot_run_are_refused(kwargs, message):
    args = {"M": 256, "N": 256, "K": 256} | kwargs
    with pytest.raises(ValueError, match=message):
        EXAMPLE.pipelined_gemm(**args)


# ---- the block-scaled fp8 variant (scaled=True) ----------------------------------------------------------------


def test_the_4096_cube_block_scaled_fp8_kernel_builds_and_assembles():
    kernel = EXAMPLE.pipelined_gemm(4096, 4096, 4096, "float8_e4m3fn", (128, 224, 128), 4, ctas=148, scaled=True)
    assert [p.name for p in kernel.params] == ["A", "B", "SFA", "SFB", "D"]
    source = build(kernel).imports[0].inspect_source()
    body = kernel_source(source)
    # per unrolled stage: one block-scaled MMA per K step of 32 (128 / 32 = 4), and two tcgen05.cp of the scale
    # factors (A's 128 rows; B's 224 rows rounded up to 256, two 128-row chunks)
    assert len(re.findall(r"tirx_layout_tcgen05_mma_mxf8f6f4_ss\(", body)) == 4 * 4
    assert len(re.findall(r"tirx_layout_tcgen05_cp_32x128b_warpx4\(", body)) == 4 * (1 + 2)
    # TMEM: 2 x 224 accumulator columns + 4 stages x (4 + 8) scale-factor columns = 496, one allocation of 512 (its
    # address slot in the dynamic shared pool: the ring is above 48 KB)
    assert re.findall(r"tcgen05_alloc\(\(&\(\(\(uint\*\)shared_pool_ptr\)\[\d+\]\)\), \(uint\)(\d+)\)", body) == ["512"]
    assembled = nvcc_assembles(source)
    if assembled is not None:
        assert assembled[0], assembled[1]


def _scaled_inputs(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-12, 13, (m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.integers(-12, 13, (n, k)).astype(ml_dtypes.float8_e4m3fn)
    sfa = rng.integers(122, 133, (m, k // 32)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    sfb = rng.integers(122, 133, (n, k // 32)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    return {"A": a, "B": b, "SFA": sfa, "SFB": sfb}


@pytest.mark.parametrize(
    "m, n, k, tile, stages, ctas, loads",
    [
        (256, 224, 256, (128, 224, 128), 4, None, "tma"),  # two CTAs, tile_n 224, four stages
        (200, 300, 256, (128, 224, 128), 4, None, "tma"),  # tails in M and N (zero-filled by the TMA)
        (200, 300, 256, (128, 96, 128), 2, 1, "tma"),  # persistent: six tiles through two refilled stages
        (200, 300, 256, (128, 96, 128), 2, 1, "threads"),
    ],
)
def test_the_block_scaled_kernel_simulates_equal_to_numpy(m, n, k, tile, stages, ctas, loads):
    inputs = _scaled_inputs(m, n, k, seed=m + n + k + stages)
    kernel = EXAMPLE.pipelined_gemm(m, n, k, "float8_e4m3fn", tile, stages, ctas=ctas, loads=loads, scaled=True)
    result = sim.run(kernel, inputs)
    # written here: 2^(e - 127) per 32-wide K block of each row of A and of B, then A' @ B'.T
    scale_a = np.exp2(np.repeat(inputs["SFA"].view(np.uint8).astype(np.float64) - 127, 32, axis=-1))
    scale_b = np.exp2(np.repeat(inputs["SFB"].view(np.uint8).astype(np.float64) - 127, 32, axis=-1))
    want = (inputs["A"].astype(np.float64) * scale_a) @ (inputs["B"].astype(np.float64) * scale_b).T
    np.testing.assert_allclose(result["D"], want, rtol=2e-6, atol=1e-6 * np.abs(want).max())
    assert (result.writes["D"] == 1).all()


def test_the_block_scaled_kernel_refuses_accumulators_and_scale_factors_over_512_tmem_columns():
    # 2 x 256 accumulator columns leave none for the scale factors: 4 stages x (128 + 256) / 32 columns = 48 more
    with pytest.raises(ValueError, match=r"need 560 TMEM columns; an SM has 512 \(tile_n at most 224\)"):
        EXAMPLE.pipelined_gemm(4096, 4096, 4096, "float8_e4m3fn", (128, 256, 128), 4, scaled=True)
    with pytest.raises(ValueError, match=r"scaled=True takes fp8 operands \(kind mxf8f6f4\), not bfloat16"):
        EXAMPLE.pipelined_gemm(256, 256, 256, "bfloat16", scaled=True)


def test_dropping_the_producers_wait_in_the_block_scaled_kernel_is_a_data_race():
    # the producer refills a stage whose operands and scale factors the MMA (and its tcgen05.cp) may still read
    kernel = EXAMPLE.pipelined_gemm(200, 300, 256, "float8_e4m3fn", (128, 96, 128), 2, ctas=1, scaled=True)
    with pytest.raises(DataRace):
        sim.run(_without_wait(kernel, "empty", 0), _scaled_inputs(200, 300, 256, seed=1))


def test_the_main_job_builds_and_assembles_the_production_sizes():
    # ./dev.sh demo reads FULL_SIZE through load_full_size and assembles each (too large to simulate)
    from tirx_layout.tools.kernel_report import load_full_size

    found = load_full_size(Path(EXAMPLE.__file__).parent)
    assert set(found) >= {"pipelined_gemm_4096_bf16", "pipelined_block_scaled_gemm_4096_fp8"}
    assert found["pipelined_gemm_4096_bf16"][1] == "sm_100a"  # (make, the module's architecture)
    bf16 = found["pipelined_gemm_4096_bf16"][0]()
    assert [tuple(int(e) for e in p.shape) for p in bf16.params] == [(4096, 4096)] * 3
    scaled = found["pipelined_block_scaled_gemm_4096_fp8"][0]()
    assert [str(p.dtype) for p in scaled.params] == [
        "float8_e4m3fn",
        "float8_e4m3fn",
        "float8_e8m0fnu",
        "float8_e8m0fnu",
        "float32",
    ]


# ---- bfloat16 D through the TMA-store epilogue (output_dtype="bfloat16") --------------------------------------


def test_the_4096_cube_with_bfloat16_output_stores_by_tma_through_two_staging_tiles():
    kernel = EXAMPLE.pipelined_gemm(4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, ctas=148, output_dtype="bfloat16")
    assert [str(p.dtype) for p in kernel.params] == ["bfloat16", "bfloat16", "bfloat16"]
    source = build(kernel).imports[0].inspect_source()
    body = kernel_source(source)
    # D's map joins A's and B's; 8 chunks of 32 columns per tile, each one TMA store of its warp's 32-row box
    assert re.findall(r"const __grid_constant__ CUtensorMap (\w+)_tensormap", source)[:3] == ["A", "B", "D"]
    assert len(re.findall(r"tirx_layout_tma_store_2d\(", body)) == 8
    # a wait after every second chunk (the two staging tiles), the last chunk's included: 4 per tile
    assert len(re.findall(r"tirx_layout_tma_store_wait\(", body)) == 4
    assembled = nvcc_assembles(source)
    if assembled is not None:
        assert assembled[0], assembled[1]


def test_bfloat16_output_simulates_equal_to_numpy_rounded_to_nearest_even():
    # products of integers in -8..8 over K = 192 reach 12288: above 256 a bfloat16 keeps 8 significant bits, so
    # most outputs are rounded, as numpy's float32 -> bfloat16 rounds (to nearest even)
    a, b = _inputs(200, 296, 192, "bfloat16", seed=5)
    kernel = EXAMPLE.pipelined_gemm(200, 296, 192, "bfloat16", (128, 256, 64), 2, ctas=1, output_dtype="bfloat16")
    result = sim.run(kernel, {"A": a, "B": b})
    want = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32).astype(ml_dtypes.bfloat16)
    assert (want.astype(np.float64) != (a.astype(np.float64) @ b.astype(np.float64).T)).any()  # rounding happened
    np.testing.assert_array_equal(result["D"].astype(np.float64), want.astype(np.float64))
    assert (result.writes["D"] == 1).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"output_dtype": "float16"}, r"output_dtype = 'float16'; D is float32 .* or bfloat16"),
        ({"output_dtype": "float32", "epilogue": "relu"}, r"output_dtype = 'float32'; .* bfloat16 with a fused"),
    ],
)
def test_an_output_type_the_epilogues_do_not_store_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EXAMPLE.pipelined_gemm(256, 256, 256, **kwargs)
