"""benchmarks/bench_gemm.py's Hopper rows, measured on a small case (256 x 256 x 1024 bf16, 128 x 256 x 64, four
stages: a K loop of 16 tiles, which nvcc keeps as a loop): the counts that follow from the tile and the PTX ISA hold,
and the roofline arithmetic matches the published figures. The CTA-pair rows: the pair's roofline per SM, the pair
kernel's numbers on a small case, and (``TIRX_LAYOUT_CUTLASS_2SM=1``) CUTLASS's 2-SM kernel measured by the same
loop rule."""

import os
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


def test_the_pair_roofline_is_per_sm_of_the_pair():
    one = bench_gemm.roofline(4096, 4096, 4096, "bfloat16", (128, 256, 64))
    pair = bench_gemm.roofline(4096, 4096, 4096, "bfloat16", (256, 256, 64), ctas_per_tile=2)
    # each SM of the pair: 128 of the tile's 256 rows of A and 128 of its 256 rows of B, 2 * 128 * 256 * 64 FLOP
    assert pair["stage bytes"] == (128 + 128) * 64 * 2 and one["stage bytes"] == (128 + 256) * 64 * 2
    assert pair["stage MMA ns"] == pytest.approx(2 * 128 * 256 * 64 / (2.25e15 / 148) * 1e9)
    assert pair["L2->SMs TB/s needed"] == pytest.approx(one["L2->SMs TB/s needed"] * 2 / 3)


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_the_pair_numbers_hold_what_the_tile_fixes():
    # one pair over 2 x 1 tiles of 256 x 128, 16 K tiles through 4 stages (the K loops stay loops over ring turns)
    found = bench_gemm.pair_numbers(512, 128, 1024, "bfloat16", (256, 128, 64), 4, ctas=1)
    assert found["spilled bytes"] == 0 and 0 < found["registers"] <= 168  # 384 threads
    # each CTA's ring: 4 stages of its 128 rows of A and 64 of B, 128 bytes each, then the mbarriers
    assert 4 * (128 + 64) * 128 < found["shared bytes"] < 4 * (128 + 64) * 128 + 1024
    if "SASS instructions" in found:
        # each loop found around its instruction: at least the 4 MMAs (2 TMA loads, 1 remote arrive) of a K tile
        assert found["SASS MMA loop per K tile"] > 4 and found["SASS producer loop per K tile"] > 2
        assert found["SASS relay loop per K tile"] > 1


@pytest.mark.skipif(
    not os.environ.get("TIRX_LAYOUT_CUTLASS_2SM"),
    reason="builds CUTLASS's 2-SM kernel (half a minute of a core, then cached): set TIRX_LAYOUT_CUTLASS_2SM=1",
)
def test_cutlasss_sm100_2sm_gemm_is_measured_by_our_loop_rule():
    _cutlass_or_skip()
    found = bench_gemm.cutlass_numbers("sm_100a 2sm")
    # each CTA's 4 stages of (128 + 128) rows x 128 bytes, within the 227 KB a CTA may have
    assert 4 * 256 * 128 <= found["shared bytes"] <= 227 * 1024
    assert found["spilled bytes"] == 0 and 0 < found["registers"] <= 168
    assert found["SASS MMA loop per K tile"] > 4 and found["SASS producer loop per K tile"] > 2
