"""benchmarks/bench_gemm.py's Hopper rows, measured on a small case (256 x 256 x 1024 bf16, 128 x 256 x 64, four
stages: a K loop of 16 tiles, which nvcc keeps as a loop): the counts that follow from the tile and the PTX ISA hold,
and the roofline arithmetic matches the published figures."""

import sys
from pathlib import Path

import pytest

from tirx_layout.tools.kernel_report import find_nvcc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_gemm


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_the_hopper_numbers_hold_what_the_tile_fixes():
    found = bench_gemm.hopper_numbers(256, 256, 1024, "bfloat16", (128, 256, 64), 4, ctas=2)
    assert found["spilled bytes"] == 0 and 128 < found["registers"] <= 168  # 128 accumulator registers per thread
    # 4 stages of (128 + 256) rows x 128 bytes, 4 full mbarriers padded to 64 bytes, 4 empty ones
    assert found["shared bytes"] == 4 * 384 * 128 + 64 + 32
    assert found["consumer loop per K tile"] > 0 and found["producer loop per K tile"] > 0
    if "SASS instructions" in found:
        # one K tile's wgmmas (128 bytes / 32) per stage of the ring the consumers' K loop is unrolled over
        assert found["SASS wgmma (HGMMA/QGMMA)"] == 4 * (64 * 2 // 32)
        assert found["SASS consumer loop per K tile"] > 0 and found["SASS producer loop per K tile"] > 0


def test_the_hopper_roofline_follows_from_the_published_figures():
    peak, sms, dram = bench_gemm.HOPPER_DEVICES["H200 SXM"]
    est = bench_gemm.roofline(4096, 4096, 4096, "bfloat16", (128, 256, 64), peak, sms, dram)
    # 2 * 128 * 256 * 64 FLOP of one stage at 989.4 TFLOP/s over 132 SMs; 2 * 4096^3 FLOP over all of them
    assert est["stage MMA ns"] == pytest.approx(2 * 128 * 256 * 64 / (989.4e12 / 132) * 1e9)
    assert est["compute us"] == pytest.approx(2 * 4096**3 / 989.4e12 * 1e6)
    # A and B in bf16 and D in float32 once from HBM3e at 4.8 TB/s
    assert est["DRAM us"] == pytest.approx((2 * 4096 * 4096 * 2 + 4 * 4096 * 4096) / 4.8e12 * 1e6)


def _cutlass_or_skip():
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    try:
        bench_gemm.cutlass_include()
    except RuntimeError as err:
        pytest.skip(str(err))
    if bench_gemm.find_nvdisasm() is None:
        pytest.skip("nvdisasm is not installed: CUTLASS's loops are counted in SASS")


@pytest.mark.slow  # builds CUTLASS's kernel once (about a minute on a loaded machine), then reads the cache
def test_cutlasss_sm100_gemm_is_measured_by_our_loop_rule():
    _cutlass_or_skip()
    found = bench_gemm.cutlass_numbers("sm_100a")
    # its launch asks for at least the 4 stages of (128 + 256) rows x 128 bytes, within the 227 KB a CTA may have
    assert 4 * 384 * 128 <= found["shared bytes"] <= 227 * 1024
    assert found["spilled bytes"] == 0 and 0 < found["registers"] <= 168  # 384 threads
    # each loop found around its instruction: at least the 4 MMAs (2 TMA loads) and the wait of one K tile
    assert found["SASS MMA loop per K tile"] > 4 and found["SASS producer loop per K tile"] > 2
    assert bench_gemm.cutlass_build("sm_100a") == bench_gemm.cutlass_build("sm_100a")  # cached: one directory
