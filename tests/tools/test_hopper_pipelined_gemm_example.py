"""The pipelined, warp-specialised Hopper GEMM (``examples/hopper_pipelined_gemm.py``): the issue's 4096 x 4096 x 4096
kernels (bf16 128 x 256 x 64 and fp8 e4m3 128 x 256 x 128, four stages) build for sm_90a, hold the instructions the
tile and the ISA fix, and assemble without spilling; budgets and shapes that cannot run are refused at build time
naming the numbers."""

import re

import pytest

from tirx_layout.tools.kernel_report import find_nvcc, kernel_source
from tirx_layout.tools.measurement import launch_values, lower, measure_cuda
from tirx_layout.transform import build

from kernels import example_module

EXAMPLE = example_module("hopper_pipelined_gemm")
ARCH = "sm_90a"

# (dtype, tile, the wgmma helper: m64 n256, K = 32 bytes of the dtype, f32 accumulator, both operands K-major)
BIG = {
    "bfloat16": ((128, 256, 64), "tirx_layout_wgmma_mma_m64n256k16_f32_bf16_bf16_ss_t00"),
    "float8_e4m3fn": ((128, 256, 128), "tirx_layout_wgmma_mma_m64n256k32_f32_e4m3_e4m3_ss_t00"),
}


@pytest.fixture(scope="module", params=sorted(BIG))
def big(request):
    dtype = request.param
    tile, helper = BIG[dtype]
    kernel = EXAMPLE.hopper_pipelined_gemm(4096, 4096, 4096, dtype, tile, 4, ctas=132)
    return dtype, tile, helper, kernel, build(kernel, ARCH).imports[0].inspect_source()


def test_the_4096_cube_kernels_hold_what_the_tile_and_the_isa_fix(big):
    dtype, (tile_m, tile_n, tile_k), helper, kernel, source = big
    body = kernel_source(source)
    (threads,) = set(re.findall(r"__global__ void __launch_bounds__\((\d+)\) gemm_kernel", source))
    assert threads == "384"  # two consumer warpgroups (64 rows each) and the producer's
    # A and B tensor maps; per K tile three TMA loads (each consumer's 64 rows of A, then B) in the producer's loop
    assert re.findall(r"const __grid_constant__ CUtensorMap (\w+)_tensormap", source)[:2] == ["A", "B"]
    assert len(re.findall(r"tirx_layout_tcgen05_tma_load_2d\(", body)) == 3
    # the ring in dynamic shared memory: 4 stages of 128 rows of A and tile_n rows of B, 128 bytes each, then full
    # (4 mbarriers, padded to the next 64 bytes: TVM's default alignment of a buffer) and empty
    element = 2 if dtype == "bfloat16" else 1
    assert tile_k * element == 128
    pool = launch_values(lower(kernel, "tirx_layout", ARCH))["tirx.use_dyn_shared_memory"]
    assert pool == 4 * (tile_m + tile_n) * 128 + 64 + 4 * 8 == 196704
    # one consumer K step: fence, tile_k * element / 32 wgmmas (K = 32 bytes each), commit, wait for all but one
    assert len(re.findall(rf"{helper}\(", body)) == tile_k * element // 32 == 4
    assert body.count("tirx_layout_wgmma_fence(") == 1
    assert body.count("tirx_layout_wgmma_commit_group(") == 1
    assert len(re.findall(r"tirx_layout_wgmma_wait_group_1\(", body)) == 1
    assert len(re.findall(r"tirx_layout_wgmma_wait_group_0\(", body)) == 1
    # no tcgen05 instruction on Hopper (the TMA and mbarrier helpers carry the prefix in their names only)
    assert "tcgen05" not in re.sub(r"tirx_layout_tcgen05_\w+", "", body)


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_the_4096_cube_kernels_assemble_for_sm_90a_without_spilling(big):
    code = measure_cuda(big[4], ARCH)
    assert code.spill_bytes == 0
    # 65536 registers for 384 threads: at most 168 each (ptxas rounds to a multiple of 8); the accumulator is 128
    assert 128 < code.registers <= 168
    assert code.static_shared_bytes == 0  # the ring is dynamic shared memory (measured above)


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
    ],
)
def test_shapes_the_kernel_cannot_run_are_refused(kwargs, message):
    args = {"M": 256, "N": 256, "K": 256} | kwargs
    with pytest.raises(ValueError, match=message):
        EXAMPLE.hopper_pipelined_gemm(**args)
