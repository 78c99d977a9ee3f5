"""benchmarks/bench_attention.py: its roofline arithmetic follows from the published figures it names (for the
Hopper, Blackwell and sm_80 kernels), the Blackwell rows come from ``_attention_blackwell``'s one measuring path, and
its SASS loop finder returns one innermost loop per role (each consumer warpgroup's own copy of the K/V loop)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_attention


def test_the_roofline_follows_from_the_published_figures():
    h100 = bench_attention.HOPPER_DEVICES[0]
    (entry,) = bench_attention.KERNELS["sm_90a"][1]
    found = {"tile_kv": 64, "consumer 0: SASS per K/V tile": 400, "consumer 1: SASS per K/V tile": 400}
    # 989.4 TFLOP/s over 132 SMs at 4096 dense bf16 FLOP per clock: 1.83 GHz
    assert h100.clock_hz == pytest.approx(989.4e12 / 132 / 4096)
    # the producer not measured: no issue figure (a partial sum would understate it)
    assert bench_attention.roofline(h100, entry, found, causal=False)["issue clk"] is None
    est = bench_attention.roofline(h100, entry, found | {"producer: SASS per K/V tile": 100}, causal=False)
    # two GEMMs of 128 x 64 x 128 per K/V tile; 128 x 64 exps plus 2 row rescales per consumer thread, 16 per clock
    assert est["tensor clk"] == 2 * 2 * 128 * 64 * 128 / 4096 == 1024
    assert est["exp clk"] == (128 * 64 + 2 * 256) / 16 == 544
    # eight consumer warps of 400 instructions and the producer warp's 100 on four schedulers
    assert est["issue clk"] == (8 * 400 + 100) / 4 == 825
    assert est["TMA bytes"] == 2 * 64 * 128 * 2 and est["bound"] == "tensor"
    assert est["verdict"] == "bound by the tensor cores (1024 clk per K/V tile; exp 53%, issue 81% of it)"


def test_the_blackwell_roofline_is_twice_the_tensor_rate_against_the_same_exp_rate():
    b200 = bench_attention.BLACKWELL_DEVICES[0]
    (entry,) = bench_attention.KERNELS["sm_100a"][1]
    # 2.25 dense PFLOP/s over 148 SMs at 8192 FLOP per clock: 1.86 GHz (the B200's published tensor clock)
    assert b200.clock_hz == pytest.approx(1.856e9, rel=1e-3)
    roles = {"softmax": 312, "correction": 212, "MMA": 263, "producer": 129}
    est = bench_attention.roofline(
        b200, entry, {"tile_kv": 64} | {f"{r}: SASS per K/V tile": n for r, n in roles.items()}, False
    )
    # per K/V tile both Q tiles (256 rows): 2 GEMMs x 2 x 256 x 64 x 128 at 8192 per clock; 256 x 64 scores and one
    # rescale per row through MUFU at 16 per clock -- the exp unit, not the tensor cores, bounds
    assert est["tensor clk"] == 2 * 2 * 256 * 64 * 128 / 8192 == 1024
    assert est["exp clk"] == (256 * 64 + 256) / 16 == 1040
    assert est["issue clk"] == (8 * 312 + 4 * 212 + 263 + 129) / 4 == 934
    assert est["bound"] == "exp"


def test_the_sm80_entry_counts_mma_sync_per_warp():
    (entry,) = bench_attention.KERNELS["sm_80"][1]
    # head_dim 128, 64 keys: S is 8 n-blocks x 8 k-steps, P V 16 n-blocks x 4 k-steps of m16n8k16 per warp
    assert entry.mma_per_tile(128, 64) == 8 * 8 + 16 * 4 == 128
    a100 = bench_attention.AMPERE_DEVICES[0]
    assert a100.clock_hz == pytest.approx(1.41e9, rel=1e-3)  # 312 TFLOP/s over 108 SMs at 2048 per clock


def test_the_blackwell_rows_come_from_its_measuring_path(monkeypatch):
    import _attention_blackwell

    rows = {
        "registers": 95,
        "spill bytes": 0,
        "shared bytes": 175748,
        "TMEM columns used": 384,
        "TMEM columns allocated": 512,
        "SASS instructions": 3000,
        "SASS softmax per K/V tile": 312,
        "SASS correction per K/V tile": 212,
        "SASS MMA warp per K/V tile": 263,
        "SASS producer per K/V tile": 129,
        "tcgen05.mma per K/V tile": 24,
        "MUFU.EX2 per score element": 65 / 64,
        "MUFU.EX2 unpredicated per score element": 60 / 64,
    }
    seen = []
    monkeypatch.setattr(_attention_blackwell, "measure_case", lambda problem, block_n: seen.append(block_n) or rows)
    (entry,) = bench_attention.KERNELS["sm_100a"][1]
    found = bench_attention.measure(entry, "sm_100a", causal=True)
    assert seen == [64]
    assert found["softmax: SASS per K/V tile"] == 312 and found["MMA: tcgen05.mma per tile"] == 24
    assert found["TMEM columns used / allocated"] == "384 / 512"
    # 4 of a thread's 64 scores per tile without an unpredicated MUFU.EX2: computed some other way (software)
    assert found["softmax: software exp2 per score"] == 0.0625


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
