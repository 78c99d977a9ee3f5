"""``T.tile_mma(..., cta_group=2)``: the CTA pair's ``tcgen05.mma.cta_group::2`` (issue 34, point 3). Each CTA names
its own halves (D ``(M/2, N)``, A ``(M/2, K)``, B ``(N/2, K)``); the even CTA of the pair issues, the commit arrives
on the mbarrier of both CTAs, TMEM is allocated with ``cta_group::2``; every kernel assembles for sm_100a; what
the ISA (or this lowering) does not allow is refused naming the value."""

from __future__ import annotations

import re

import pytest

from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import LayoutVerificationError, build, lower_tile_ops

from kernels import parse

PTX_COMMIT = "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;"


def pair_kernel(
    n=256, k=64, dtype="bfloat16", acc="float32", *, a_rows=128, scope="cta", form="sync", mode="128B", layout_b=False
):
    """One pair MMA: this CTA's A (a_rows, K), B (N/2, K) and D (a_rows, N)."""
    b_rows = n // 2
    barrier = ", barrier=bars[0]" if form == "async" else ""
    call = f'T.tile_mma(acc, A, B, accumulate=True{barrier}, scope="{scope}", cta_group=2)'
    issue = {"cta": call, "warp": f"if tx // 32 == 1:\n        {call}", "thread": f"if tx == 5:\n        {call}"}
    wait = "\n    T.mbarrier_wait(bars[0], 0)" if form == "async" else ""
    d_layout = f'T.layout("S[({a_rows}, {n}):(1@TLane, 1@TCol)]")'
    if layout_b:  # the pair's M = 128: each CTA's 64 rows, the column halves on lanes 0-63 and 64-127
        d_layout = f'tmem_datapath_layout("B", {a_rows}, {n})'
    return parse(f"""
@T.prim_func
def pair():
    T.device_entry()
    bx = T.cta_id([2])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    A = T.alloc_shared(({a_rows}, {k}), "{dtype}", layout=mma_shared_layout("{dtype}", "{mode}", ({a_rows}, {k})),
                       align=1024)
    B = T.alloc_shared(({b_rows}, {k}), "{dtype}", layout=mma_shared_layout("{dtype}", "{mode}", ({b_rows}, {k})),
                       align=1024)
    acc = T.alloc_tmem(({a_rows}, {n}), "{acc}", layout={d_layout})
    {issue[scope]}{wait}
""")


def helpers_called(func) -> list[str]:
    return re.findall(r'func_call\("tirx_layout_(\w+)"', lower_tile_ops(func).script())


def test_the_synchronous_pair_mma_lowers_to_the_pairs_instructions_in_order():
    calls = helpers_called(pair_kernel(form="sync"))
    # both CTAs allocate with cta_group::2; every thread meets the peer at a cluster barrier before the issue; the
    # even CTA's elected lane issues 4 K steps and commits to both CTAs' mbarriers; a cluster barrier before dealloc
    assert calls == [
        "mbarrier_init",
        "mbarrier_init",
        "tcgen05_alloc_cg2",
        "tcgen05_relinquish_alloc_permit_cg2",
        "sync_fence_proxy_async",
        "tcgen05_fence_before",
        "cluster_arrive",
        "cluster_wait",
        "tcgen05_fence_after",
        "cluster_rank",
        "sync_elect",
        "tcgen05_smem_descriptor",
        "tcgen05_smem_descriptor",
        *["tcgen05_mma_f16_ss_cg2"] * 4,
        "tcgen05_commit_cg2_multicast",
        "mbarrier_wait",
        "tcgen05_fence_after",
        "cluster_arrive",
        "cluster_wait",
        "tcgen05_dealloc_cg2",
    ]


def test_the_issue_is_guarded_by_the_even_rank_and_the_commit_names_the_pair():
    script = lower_tile_ops(pair_kernel(form="async", scope="warp")).script()
    assert "if cta_rank & T.uint32(1) == T.uint32(0):" in script
    # the ctaMask: both CTAs of the pair, 0b11 << the even rank (hw.tcgen05_mma.pair_cta_mask)
    assert re.search(
        r"tirx_layout_tcgen05_commit_cg2_multicast\", T.address_of\(bars\[0\]\), T.uint32\(3\) << "
        r"\(cta_rank & T.uint32\(4294967294\)\)",
        script,
    )
    # the pair's M = 256, N = 256 instruction descriptor (CuTe's make_instr_desc for the 2x1SM atom)
    assert "T.uint32(272630928)" in script and 272630928 == 0x10400490


def _assembles(func) -> str:
    cuda = build(func).imports[0].inspect_source()
    assembled = nvcc_assembles(cuda)
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]
    return cuda


@pytest.mark.parametrize(
    ("dtype", "acc", "n", "k", "kind"),
    [
        ("bfloat16", "float32", 256, 64, "f16"),
        ("float8_e4m3fn", "float32", 64, 128, "f8f6f4"),
        ("int8", "int32", 32, 128, "i8"),
        ("float32", "float32", 16, 32, "tf32"),
    ],
)
def test_pair_kernels_of_every_dense_kind_build_and_assemble_for_sm_100a(dtype, acc, n, k, kind):
    cuda = _assembles(pair_kernel(n, k, dtype, acc))
    assert f"tcgen05.mma.cta_group::2.kind::{kind} [%0], %1, %2, %3, p;" in cuda
    assert PTX_COMMIT in cuda
    assert "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32" in cuda
    assert "tcgen05.dealloc.cta_group::2.sync.aligned.b32" in cuda
    assert "tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" in cuda
    assert "barrier.cluster.arrive.release.aligned" in cuda and "%%cluster_ctarank" in cuda
    assert "cta_group::1" not in cuda  # one cta_group per kernel (PTX ISA)


def test_the_pairs_m128_with_d_in_layout_b_builds_and_assembles():
    cuda = _assembles(pair_kernel(64, 64, a_rows=64, layout_b=True))
    # the instruction descriptor holds the pair's M = 128 (M >> 4 = 8 at bits 24-28) and N = 64
    assert "tcgen05.mma.cta_group::2.kind::f16" in cuda
    script = lower_tile_ops(pair_kernel(64, 64, a_rows=64, layout_b=True)).script()
    assert f"T.uint32({0x08100490})" in script


@pytest.mark.parametrize(("scope", "mode"), [("warp", "64B"), ("thread", "none")])
def test_the_warp_specialised_pair_issuer_builds_and_assembles(scope, mode):
    cuda = _assembles(pair_kernel(scope=scope, form="async", mode=mode))
    body = cuda[cuda.index('extern "C" __global__') :]
    assert len(re.findall(r"tirx_layout_tcgen05_mma_f16_ss_cg2\(", body)) == 4
    # a cluster barrier only before the dealloc: the issuer meets no one
    assert body.count("tirx_layout_cluster_arrive();") == body.count("tirx_layout_cluster_wait();") == 1


REFUSALS = {
    "the pair's M = 128 with D not in Layout B": (
        {"a_rows": 64, "n": 64},
        r"D's layout .* is not a pair's accumulator layout: element \(0, 32\) sits at lane 0 TCol 32, Layout B puts "
        r"it at lane 64 TCol 0",
    ),
    "an i8 N off the pair's grid": (
        {"n": 48, "k": 128, "dtype": "int8", "acc": "int32"},
        r"kind i8 with M=256 and cta_group::2 takes N in 32..256 step 32, got N=48",
    ),
    "a synchronous warp-scope pair": (
        {"scope": "warp"},
        r'cta_group=2\) with scope "warp" needs barrier=bars\[i\]',
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_pair_mmas_the_isa_or_the_lowering_does_not_allow_are_refused(case):
    kwargs, message = REFUSALS[case]
    with pytest.raises(LayoutVerificationError, match=message):
        build(pair_kernel(**kwargs))


def test_a_pair_whose_halves_do_not_match_is_refused():
    func = parse("""
@T.prim_func
def pair():
    T.device_entry()
    bx = T.cta_id([2])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    A = T.alloc_shared((128, 64), "float16")
    B = T.alloc_shared((128, 64), "float16")
    acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("A", 128, 128))
    T.tile_mma(acc, A, B, cta_group=2)
""")
    with pytest.raises(
        LayoutVerificationError, match=r"D is \(M/2, N\), A \(M/2, K\), B \(N/2, K\); got D \(128, 128\)"
    ):
        build(func)


@pytest.mark.parametrize(
    ("cluster", "said"),
    [("", "it declares no cluster"), ("cx = T.cta_id_in_cluster([3])", r"it declares clusters of shape \(3,\)")],
)
def test_a_kernel_not_launched_in_pairs_is_refused(cluster, said):
    source = PAIR_SOURCE.replace("bx = T.cta_id([2])", "bx = T.cta_id([6])").replace(
        "cx = T.cta_id_in_cluster([2])", cluster
    )
    with pytest.raises(LayoutVerificationError, match=rf"runs on a CTA pair, .* clusters of an even number .*{said}"):
        build(parse(source))


PAIR_SOURCE = """
@T.prim_func
def pair():
    T.device_entry()
    bx = T.cta_id([2])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    A = T.alloc_shared((128, 64), "float16")
    B = T.alloc_shared((128, 64), "float16")
    acc = T.alloc_tmem((128, 256), "float32", layout=tmem_datapath_layout("A", 128, 256))
    T.tile_mma(acc, A, B, cta_group=2)
"""


def test_an_n_off_the_pairs_grid_is_refused():
    func = parse("""
@T.prim_func
def pair():
    T.device_entry()
    bx = T.cta_id([2])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    A = T.alloc_shared((128, 64), "float16")
    B = T.alloc_shared((4, 64), "float16")
    acc = T.alloc_tmem((128, 8), "float32", layout=tmem_datapath_layout("A", 128, 8))
    T.tile_mma(acc, A, B, cta_group=2)
""")
    with pytest.raises(
        LayoutVerificationError, match=r"kind f16 with M=256 and cta_group::2 takes N in 16..256 step 16, got N=8"
    ):
        build(func)


def test_cta_group_is_one_or_two():
    with pytest.raises(Exception, match=r"cta_group must be in 1..2, got 4"):
        build(
            parse("""
@T.prim_func
def pair():
    T.device_entry()
    bx = T.cta_id([2])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    A = T.alloc_shared((128, 64), "float16")
    B = T.alloc_shared((128, 64), "float16")
    acc = T.alloc_tmem((128, 256), "float32", layout=tmem_datapath_layout("A", 128, 256))
    T.tile_mma(acc, A, B, cta_group=4)
""")
        )


def test_a_target_without_tcgen05_is_refused_naming_the_pair():
    func = parse("""
@T.prim_func
def pair():
    T.device_entry()
    bx = T.cta_id([2])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    A = T.alloc_shared((64, 64), "float16")
    B = T.alloc_shared((64, 64), "float16")
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    T.tile_mma(acc, A, B, cta_group=2)
""")
    with pytest.raises(
        LayoutVerificationError,
        match=r"cta_group=2\) is tcgen05.mma.cta_group::2, the CTA pair's MMA; "
        r"target sm_90a lowers T.tile_mma to wgmma",
    ):
        build(func, arch="sm_90a")
