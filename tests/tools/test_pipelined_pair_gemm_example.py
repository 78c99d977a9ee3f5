"""The CTA-pair form of the pipelined Blackwell GEMM (``examples/pipelined_gemm.py``, ``cta_group=2``: 256-row tiles
across a 2 x 1 cluster, the even CTA's MMA warp issuing ``tcgen05.mma.cta_group::2``, the odd CTA's MMA warp relaying
its full stages and drained accumulators): the 4096^3 kernel builds and assembles with nothing in local memory;
grids the example table does not hold (two clusters on a grouped raster, K tiles not a multiple of the stages; an fp8
tail) simulate equal to numpy with the cluster's CTAs running together; dropping the peer's wait, the waits on the
stages the pair's commit releases in both CTAs, the relay of the odd CTA's drained accumulator, or the cluster
barrier, is reported by the simulator; what the pair cannot run is refused by name. (The example table's pair
kernels are simulated on the sample inputs by ``test_examples.py``.)"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.ops import find
from tirx_layout.ops.cluster import CLUSTER_SYNC, MBARRIER_ARRIVE_PEER
from tirx_layout.ops.mbarrier import MBARRIER_WAIT
from tirx_layout.sim import DataRace, SimulationError
from tirx_layout.tools.kernel_report import kernel_source, local_memory, nvcc_assembles
from tirx_layout.transform import build

from kernels import example_module

EXAMPLE = example_module("pipelined_gemm")
NUMPY = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}


def _inputs(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(NUMPY[dtype])
    b = rng.integers(-3, 4, (n, k)).astype(NUMPY[dtype])
    return {"A": a, "B": b}, a.astype(np.float64) @ b.astype(np.float64).T


def test_the_4096_cube_pair_kernel_builds_and_assembles_in_registers():
    kernel = EXAMPLE.FULL_SIZE["pipelined_gemm_4096_bf16_pair"]()
    source = build(kernel).imports[0].inspect_source()
    body = kernel_source(source)
    # 74 pairs of CTAs (148 SMs), launched in clusters of two
    assert re.search(r"__launch_bounds__\(384, 1\)", source)
    # the K loops unrolled over the 4 stages: per stage two TMA loads (the CTA's 128 rows of A, 128 of B's 256) and
    # four pair MMAs of K = 16, each committing to both CTAs' empty[s]
    assert len(re.findall(r"tirx_layout_tma_load_2d\(", body)) == 2 * 4
    assert len(re.findall(r"tirx_layout_tcgen05_mma_f16_ss_cg2\(", body)) == 4 * 4
    assert len(re.findall(r"tirx_layout_tcgen05_commit_cg2_multicast\(", body)) == 4
    # both CTAs allocate the two 256-column accumulator stages with cta_group::2
    assert re.findall(r"tirx_layout_tcgen05_alloc_cg2\([^;]*\(uint\)(\d+)\)", body) == ["512"]
    assembled = nvcc_assembles(source)
    if assembled is not None:
        assert assembled[0], assembled[1]
        assert not any(local_memory(assembled[1]).values()), assembled[1]


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "tile", "stages", "ctas", "group"),
    [
        # two clusters, two tiles each in a grouped raster (groups of 2 rows of tiles); 3 K tiles through 2 stages
        # (not a multiple: the K loop is not unrolled over the ring, each step's stage computed)
        (512, 256, 192, "bfloat16", (256, 128, 64), 2, 2, 2),
        # fp8 at a tail: 2 x 2 tiles of 256 x 160 on four pairs; the odd CTAs' rows of A past M and the second
        # column's rows of B past N zero-filled by the TMA
        (200, 296, 256, "float8_e4m3fn", (256, 160, 128), 2, None, None),
    ],
)
def test_the_pair_kernel_simulates_equal_to_numpy(m, n, k, dtype, tile, stages, ctas, group):
    kernel = EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages, ctas, group=group, cta_group=2)
    inputs, want = _inputs(m, n, k, dtype, seed=m + n + k)
    result = sim.run(kernel, inputs)
    np.testing.assert_array_equal(result["D"], want)
    assert (result.writes["D"] == 1).all()


def _without(kernel, spec, name: str | None, occurrence: int):
    """``kernel`` with its ``occurrence``-th (in program order) call of op ``spec`` on mbarrier buffer ``name``
    (``None``: any call of the op) dropped."""
    seen = []

    def drop(stmt):
        op = find(stmt)
        if op is not None and op.spec is spec and (name is None or op.bar.source.name == name):
            seen.append(stmt)
            if len(seen) - 1 == occurrence:
                return tvm.tirx.Evaluate(0)
        return stmt

    body = tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, drop)], order="pre")
    assert len(seen) > occurrence, f"no call {occurrence} of {spec.name} on {name}"
    return kernel.with_body(body)


@pytest.fixture(scope="module")
def small_pair():
    """One pair, persistent over 2 x 2 tiles of 256 x 160 (both accumulator stages turned over), two K tiles
    through two stages. In program order the waits on ``full`` are the even CTA's MMA warp's (0, 1: its K loop
    unrolled over the ring) then the odd CTA's relay's (2, 3); on ``empty`` the producer's (0, 1), the MMA warp's
    (2) and the relay's (3) after a tile's last K tile; on ``acc_empty`` the MMA warp's (0) and the relay's (1)."""
    return EXAMPLE.pipelined_gemm(300, 296, 128, tile=(256, 160, 64), stages=2, ctas=1, cta_group=2)


_UNSEEN_LOAD = r"before it has seen the TMA load into a_tile issued by thread 128 complete"
_MMA_AFTER_LOAD = r"an access by warp 8 an MMA's write after a load by warp 0, not ordered"


def test_the_small_pair_kernel_runs_with_every_wait(small_pair):
    inputs, want = _inputs(300, 296, 128, "bfloat16", seed=2)
    np.testing.assert_array_equal(sim.run(small_pair, inputs)["D"], want)


@pytest.mark.parametrize(
    ("spec", "name", "occurrence", "error", "message"),
    [
        # the peer wait: the odd CTA's relay tells the even CTA's MMA warp its stage is full before its TMA landed;
        # the pair's MMA reads the odd CTA's half of A unseen
        (MBARRIER_WAIT, "full", 2, DataRace, r"a_tile\[0\]: the tcgen05.mma.cta_group::2.kind::f16 .*" + _UNSEEN_LOAD),
        # the even CTA's own wait: its MMA reads its stage before its TMA landed
        (MBARRIER_WAIT, "full", 0, DataRace, r"a_tile\[0\]: the tcgen05.mma.cta_group::2.kind::f16 .*" + _UNSEEN_LOAD),
        # the producers' second wait on empty (stage 1, released in both CTAs by the pair's multicast commit): the
        # refill overwrites a stage the pair's MMA still reads
        (
            MBARRIER_WAIT,
            "empty",
            1,
            DataRace,
            r"a_tile\[8192\]: a store by thread 128 while the tcgen05.mma.cta_group::2.kind::f16 issued by thread "
            r"256 of CTA 0 still reads it",
        ),
        # the even CTA's MMA warp announces the accumulator before the tile's last MMA (its commit) completed
        (
            MBARRIER_WAIT,
            "empty",
            2,
            DataRace,
            r"tcgen05.ld by warp 0 of a cell a tcgen05.mma issued by warp 8 writes, before its completion",
        ),
        # the relay announces the odd CTA's accumulator without the multicast commit's arrival in its CTA
        (MBARRIER_WAIT, "empty", 3, DataRace, _MMA_AFTER_LOAD),
        # the relay tells the MMA warp the odd CTA's accumulator stage is drained before its epilogue drained it
        (MBARRIER_WAIT, "acc_empty", 1, DataRace, _MMA_AFTER_LOAD),
        # without the relay's arrival the even CTA's full[0] never completes: the hang is named in both CTAs
        (
            MBARRIER_ARRIVE_PEER,
            "full",
            0,
            SimulationError,
            r"CTA 0 of the cluster: mbarrier wait .* never returns.*CTA 1 of the cluster: mbarrier wait",
        ),
        # the cluster barrier after the mbarriers' initialisation: the relay signals the even CTA's full[0] before
        # its initialisation is ordered before it
        (
            CLUSTER_SYNC,
            None,
            0,
            DataRace,
            r"full\[0\] of CTA 0: mbarrier.arrive.shared::cluster by thread 256 of CTA 1 uses the mbarrier before its "
            r"initialisation",
        ),
    ],
)
def test_dropping_a_peer_wait_a_release_or_the_cluster_barrier_is_reported(
    small_pair, spec, name, occurrence, error, message
):
    inputs, _ = _inputs(300, 296, 128, "bfloat16", seed=2)
    with pytest.raises(error, match=message):
        sim.run(_without(small_pair, spec, name, occurrence), inputs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tile": (128, 256, 64)}, r"cta_group=2 takes tile_m = 256 \(128 rows in each CTA of the pair\), not 128"),
        ({"tile": (256, 48, 64)}, r"cta_group=2 tile_n = 48 must be a multiple of 32 in 32..256"),
        ({"tile": (256, 256, 64), "loads": "threads"}, r"cta_group=2 is the TMA-fed dense kernel .*'threads'"),
        ({"tile": (256, 256, 64), "output_dtype": "bfloat16"}, r"output_dtype = 'bfloat16'"),
        ({"tile": (256, 256, 64), "epilogue": "relu"}, r"cta_group=2 is the TMA-fed dense kernel .*'relu'"),
        ({"tile": (256, 256, 64), "cta_group": 4}, r"cta_group = 4; tcgen05.mma runs on one CTA \(1\) or a pair"),
        # each CTA's ring: 8 stages of (128 + 128) x 64 bf16 do not fit its 227 KB (7 do)
        ({"tile": (256, 256, 64), "stages": 8}, r"8 stages of 128x64 \+ 128x64 bfloat16 tiles need at least"),
    ],
)
def test_what_the_pair_cannot_run_is_refused(kwargs, message):
    kwargs = {"cta_group": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        EXAMPLE.pipelined_gemm(512, 512, 256, **kwargs)
