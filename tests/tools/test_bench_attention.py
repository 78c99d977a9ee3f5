"""benchmarks/bench_attention.py: its roofline arithmetic follows from the published figures it names, and its SASS
loop finder returns one innermost loop per role (each consumer warpgroup's own copy of the K/V loop)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_attention


def test_the_roofline_follows_from_the_published_figures():
    h100 = bench_attention.HOPPER_DEVICES[0]
    (entry,) = bench_attention.KERNELS["sm_90a"][1]
    found = {"tile_kv": 64, "consumer 0: SASS per K/V tile": 400, "consumer 1: SASS per K/V tile": 400}
    est = bench_attention.roofline(h100, entry, found, causal=False)
    # 989.4 TFLOP/s over 132 SMs at 4096 dense bf16 FLOP per clock: 1.83 GHz
    assert h100.clock_hz == pytest.approx(989.4e12 / 132 / 4096)
    # two GEMMs of 128 x 64 x 128 per K/V tile; 128 x 64 exps plus 2 row rescales per consumer thread, 16 per clock
    assert est["tensor clk"] == 2 * 2 * 128 * 64 * 128 / 4096 == 1024
    assert est["exp clk"] == (128 * 64 + 2 * 256) / 16 == 544
    # eight consumer warps of 400 instructions on four schedulers
    assert est["issue clk"] == 800
    assert est["TMA bytes"] == 2 * 64 * 128 * 2 and est["bound"] == "tensor"


def test_each_copy_of_a_loop_is_its_own_innermost_loop_and_a_retry_path_is_none():
    listing = "\n".join(
        [
            ".L_x_1:",
            " /*0000*/ HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ ;",
            " /*0010*/ @P0 BRA `(.L_x_1) ;",
            ".L_x_2:",
            " /*0020*/ HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], RZ ;",
            " /*0030*/ MUFU.EX2 R1, R2 ;",
            " /*0040*/ @P1 BRA `(.L_x_2) ;",
            " /*0050*/ EXIT ;",
            # a wait's retry path: after the EXIT, branching back into the second loop
            " /*0060*/ SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3 ;",
            " /*0070*/ @!P0 BRA `(.L_x_2) ;",
        ]
    )
    loops = bench_attention.innermost_loops(listing, r"HGMMA|MUFU")
    assert [len(loop) for loop in loops] == [2, 3]
    assert bench_attention.innermost_loops(listing, r"SYNCS") == []
