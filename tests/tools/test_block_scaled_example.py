"""Example (f) of issue 20 (``examples/block_scaled_gemm.py``): what its CUDA holds (one TMEM allocation, the
block-scaled MMAs and their scale-factor addresses, the two stages), that it simulates equal to numpy on inputs
other than the sample ones, and that dropping a wait between the roles is caught by the simulator."""

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.ops import find
from tirx_layout.ops.mbarrier import MBARRIER_WAIT
from tirx_layout.sim import DataRace
from tirx_layout.tools.kernel_report import kernel_source
from tirx_layout.transform import build

from kernels import example_module

EXAMPLE = example_module("block_scaled_gemm")


@pytest.fixture(scope="module")
def kernel():
    return EXAMPLE.KERNELS["block_scaled_gemm_two_stages"][0]


@pytest.fixture(scope="module")
def body(kernel):
    return kernel_source(build(kernel).imports[0].inspect_source())


def test_one_tmem_allocation_holds_both_stages_and_the_scale_factors(body):
    # 224 accumulator columns + 2 x 4 (scale_a stages) + 4 (scale_b) = 236 -> one allocation of 256 columns.
    assert re.findall(r"tcgen05_alloc\(\(&\((\w+)_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == [("acc", "256")]
    assert body.count("tcgen05_dealloc(") == 1


def test_every_mma_reads_its_stage_and_its_scale_factors(body):
    # One loop body, stage s = t % 2 chosen at run time: four K steps with SF ids 0..3 in the idesc, D at column
    # 112 s, A's stage 16384 bytes on, scale_a at column 224 + 4 s, scale_b at 232.
    # A's descriptor is made once, from stage 0's first element plus the stage's 16384 bytes >> 4 (1024 units, so
    # the part without the stage does not depend on t); K step s adds its 32 s bytes >> 4 to it.
    assert "a_desc = (tirx_layout_tcgen05_smem_descriptor((&(As_ptr[0])), " in body
    assert f"ULL) + ((uint64_t)((t & 1) * {16384 >> 4})));" in body
    calls = re.findall(r"mma_mxf8f6f4_ss\(([^;]*)\);", body)
    assert len(calls) == 4
    for step, call in enumerate(calls):
        # ISA block-scaled descriptor: SF B id 4-5, E4M3 A/B = 0, N >> 3 = 14 at 17-22, UE8M0 at 23, M >> 7 = 1 at
        # 27-28, SF A id 29-30
        idesc = step << 4 | 14 << 17 | 1 << 23 | 1 << 27 | step << 29
        a_desc = "a_desc" if step == 0 else f"(a_desc + (uint64_t){2 * step}ULL)"
        assert call.startswith(f"(acc_taddr + ((uint)((t & 1) * 112))), {a_desc}, "), call
        assert call.endswith(
            f"(uint){idesc}, (acc_taddr + ((uint)(((t & 1) * 4) + 224))), (acc_taddr + (uint)232), (uint){min(step, 1)}"
        ), call


def test_the_scale_factors_are_copied_each_k_block(body):
    # tcgen05.cp .32x128b.warpx4 of one 512-byte chunk (K = 128: one K block of four 32-wide scale blocks): scale_b
    # once at column 232, then in the loop scale_a of stage t % 2 (column 224 + 4 s, its staging tile 512 s bytes
    # on). Canonical no-swizzle K-major image: LBO 0, SBO 128 bytes (8 rows of 16).
    copies = re.findall(r"cp_32x128b_warpx4\(([^;]*)\);", body)
    assert copies == [
        "(acc_taddr + (uint)232), (&(sbs_ptr[0])), (uint)0, (uint)128, (uint)0",
        "((acc_taddr + (uint)224) + ((uint)((t & 1) * 4))), (&(sas_ptr[((t & 1) * 512)])), (uint)0, (uint)128, (uint)0",
    ]


def test_simulates_equal_to_numpy_on_random_inputs(kernel):
    rng = np.random.default_rng(7)
    a = rng.integers(-12, 13, (4, 128, 128)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.integers(-12, 13, (112, 128)).astype(ml_dtypes.float8_e4m3fn)
    sfa = rng.integers(122, 133, (4, 128, 4)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    sfb = rng.integers(122, 133, (128, 4)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    result = sim.run(kernel, {"A": a, "B": b, "SFA": sfa, "SFB": sfb})
    # written here, not taken from the example: scale each 32-wide K block, then D[t] = A'[t] @ B'.T
    scale_a = np.exp2(np.repeat(sfa.view(np.uint8).astype(np.float64) - 127, 32, axis=-1))
    scale_b = np.exp2(np.repeat(sfb.view(np.uint8)[:112].astype(np.float64) - 127, 32, axis=-1))
    want = np.einsum("tmk,nk->tmn", a.astype(np.float64) * scale_a, b.astype(np.float64) * scale_b)
    np.testing.assert_allclose(result["D"], want, rtol=2e-6, atol=1e-6 * np.abs(want).max())
    assert (result.writes["D"] == 1).all()


def _without_waits_on(kernel, name: str):
    def drop(stmt):
        op = find(stmt)
        if op is not None and op.spec is MBARRIER_WAIT and op.bar.source.name == name:
            return tvm.tirx.Evaluate(0)
        return stmt

    return kernel.with_body(tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, drop)], order="post"))


def test_without_the_empty_wait_the_next_tile_overwrites_a_stage_still_in_use(kernel):
    with pytest.raises(DataRace):
        sim.run(_without_waits_on(kernel, "empty"))


def test_without_the_full_wait_the_epilogue_reads_an_accumulator_being_written(kernel):
    with pytest.raises(DataRace, match=r"tcgen05.ld by warp 0 .* tcgen05.mma issued by warp 4"):
        sim.run(_without_waits_on(kernel, "full"))
