"""The cluster ops (``ops/cluster``) and ``T.tile_copy_async(..., multicast=)``: their rules refuse what the PTX ISA
does not allow, naming the value; their lowerings emit the helpers the ISA's instructions need; a multicast load's
transaction bytes are each receiving CTA's own (the box's bytes, computed here from its shape), and only the issuer
issues it. The cluster shape a kernel declares is checked before anything is lowered."""

import re

import pytest
import tvm

from tirx_layout.transform import build, lower_tile_ops

from kernels import parse

KERNEL = """
@T.prim_func
def k(A: T.Buffer((64, 64), "bfloat16"), B: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "ARCH"})})
    T.device_entry()
    bx = T.cta_id([GRID])
    CLUSTER
    tx = T.thread_id([128])
    xs = T.alloc_shared((128,), "float32")
    ys = T.alloc_shared((128,), "float32")
    tile = T.alloc_shared((32, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (32, 64)), align=1024)
    bars = T.alloc_shared((2,), "uint64")
    BODY
"""


def kernel(body, arch="sm_90a", grid=2, cluster="cx = T.cta_id_in_cluster([2])"):
    return parse(
        KERNEL.replace("ARCH", arch).replace("GRID", str(grid)).replace("CLUSTER", cluster).replace("BODY", body)
    )


def helpers(func) -> list[str]:
    return re.findall(r'func_call\("tirx_layout_(\w+)"', lower_tile_ops(func).script())


def test_each_cluster_op_lowers_to_its_instructions():
    body = (
        "T.cluster_sync()\n    T.cluster_arrive()\n    T.cluster_wait()\n    T.mbarrier_arrive_peer(bars[0], 1 - cx)\n"
        "    T.dsmem_store(xs[tx], 1 - cx, T.float32(2))\n    T.dsmem_load(ys[tx], xs[tx], 0)"
    )
    assert helpers(kernel(body)) == [
        "cluster_arrive",
        "cluster_wait",
        "cluster_arrive",
        "cluster_wait",
        "sync_fence_proxy_async",  # the peer arrive releases the thread's shared writes to the async proxy
        "cluster_arrive_peer",
        "cluster_store_float32",
        "cluster_load_float32",
    ]


def test_the_peer_arrive_on_sm_100a_also_releases_tensor_memory_accesses():
    assert helpers(kernel("T.mbarrier_arrive_peer(bars[0], 1 - cx)", arch="sm_100a")) == [
        "sync_fence_proxy_async",
        "tcgen05_fence_before",
        "cluster_arrive_peer",
    ]


def test_the_cuda_of_the_cluster_helpers_names_the_ptx_instructions():
    body = "T.cluster_sync()\n    T.mbarrier_arrive_peer(bars[0], 1 - cx)\n    T.dsmem_load(ys[tx], xs[tx], 1 - cx)"
    cuda = build(kernel(body), "sm_90a").imports[0].inspect_source()
    for instruction in (
        "barrier.cluster.arrive.release.aligned;",
        "barrier.cluster.wait.acquire.aligned;",
        "mapa.shared::cluster.u32",
        "mbarrier.arrive.release.cluster.shared::cluster.b64",
        "ld.shared::cluster.f32",
    ):
        assert instruction in cuda


@pytest.mark.parametrize(
    "body, message",
    [
        ("T.dsmem_store(xs[tx], 8, T.float32(1))", r"the peer CTA's rank must be in 0\.\.7 \(PTX ISA\), got 8"),
        ("T.dsmem_store(B[tx], 0, T.float32(1))", r"dst B\[tx\] must be an element of a buffer in shared"),
        ("T.dsmem_load(ys[tx], A[0, 0], 0)", r"src A\[0, 0\] must be an element of a buffer in shared"),
        ("T.dsmem_load(ys[tx], tile[0, 0], 0)", r"tile holds bfloat16; distributed shared memory moves"),
        ("T.dsmem_store(xs, 0, T.float32(1))", r"dst is one element of a buffer \(x\[i\]\)"),
        ("T.mbarrier_arrive_peer(xs[0], 0)", r"bar is an mbarrier, an element of a shared uint64 buffer"),
    ],
)
def test_the_cluster_ops_refuse_what_the_isa_does_not_take(body, message):
    with pytest.raises(tvm.error.DiagnosticError, match=message):  # in TVMScript, at the line of the call
        kernel(body)


def test_a_cluster_op_on_a_target_without_clusters_is_refused():
    with pytest.raises(ValueError, match=r"T\.cluster_sync lowers to instructions target sm_80 does not have"):
        lower_tile_ops(kernel("T.cluster_sync()", arch="sm_80", cluster=""))


@pytest.mark.parametrize(
    "grid, cluster, arch, message",
    [
        (16, 16, "sm_90a", r"a cluster of shape \(16, 1, 1\) has 16 CTAs; at most 8 is the portable cluster size"),
        (2, 2, "sm_80", r"target sm_80 has no thread-block clusters \(cluster of shape \(2, 1, 1\)\)"),
    ],
)
def test_a_cluster_the_hardware_does_not_allow_is_refused_before_lowering(grid, cluster, arch, message):
    func = kernel("xs[tx] = T.float32(0)", arch=arch, grid=grid, cluster=f"cx = T.cta_id_in_cluster([{cluster}])")
    with pytest.raises(ValueError, match=message):
        build(func, arch)


def test_a_grid_of_partial_clusters_is_refused():
    text = KERNEL.replace("ARCH", "sm_90a").replace("GRID", "3").replace("BODY", "xs[tx] = T.float32(0)")
    text = text.replace("CLUSTER", "cx = T.cta_id_in_cluster([2])")
    names = {"T": tvm.script.tirx, "mma_shared_layout": __import__("tirx_layout").mma_shared_layout}
    func = tvm.script.from_source(text, extra_vars=names, check_well_formed=False)  # TVM's parser refuses it too
    with pytest.raises(ValueError, match=r"dimension x has 3 CTAs, not a multiple of the cluster's 2"):
        build(func, "sm_90a")


MULTICAST = "T.tile_copy_async(tile, A[0:32, 0:64], bars[0], multicast=MASK)"


def test_a_multicast_load_expects_the_box_bytes_in_each_receiving_cta_and_is_issued_by_one():
    text = lower_tile_ops(kernel(MULTICAST.replace("MASK", "3"))).script()
    box_bytes = 32 * 64 * 2  # a 32 x 64 bfloat16 box lands whole in every CTA of the mask
    assert re.search(rf"mbarrier_arrive_expect_tx\", .*, T\.uint32\({box_bytes}\)", text)
    assert len(re.findall(r'func_call\("tirx_layout_tma_load_2d_multicast"', text)) == 1
    assert re.search(r"cluster_rank\"[^\n]*\) == T\.uint32\(0\)", text)  # the issuer: the mask's lowest rank
    assert 'tirx_layout_tma_load_2d"' not in text


@pytest.mark.parametrize(
    "copy, cluster, message",
    [
        (MULTICAST.replace("MASK", "3"), "", r"multicast=.* needs a cluster: declare it with T\.cta_id_in_cluster"),
        (MULTICAST.replace("MASK", "4"), None, r"mask 0x4 names CTA ranks beyond the cluster's 2 \(ranks 0\.\.1\)"),
        (MULTICAST.replace("MASK", "1, issuer=1"), None, r"the issuing CTA \(rank 1\) must be one of the CTAs"),
        (MULTICAST.replace("MASK", "T.uint32(1) << cx"), None, r"say which CTA issues the copy \(issuer=\)"),
        ("T.tile_copy_async(A[0:32, 0:64], tile, multicast=3)", None, r"issuer= goes with multicast="),
    ],
)
def test_a_multicast_the_cluster_cannot_take_is_refused(copy, cluster, message):
    cluster = "cx = T.cta_id_in_cluster([2])" if cluster is None else cluster
    with pytest.raises(ValueError, match=message):
        lower_tile_ops(kernel(copy, cluster=cluster))


def test_every_dsmem_element_type_assembles():
    from tirx_layout.ops.helpers.cluster import DSMEM_TYPES
    from tirx_layout.tools.kernel_report import nvcc_assembles

    lines = []
    for i, dtype in enumerate(DSMEM_TYPES):
        lines += [
            f'x{i} = T.alloc_shared((128,), "{dtype}")',
            f'y{i} = T.alloc_shared((128,), "{dtype}")',
            f'T.dsmem_store(x{i}[tx], 1 - cx, T.Cast("{dtype}", tx))',
            f"T.dsmem_load(y{i}[tx], x{i}[127 - tx], 1 - cx)",
            f'B[tx] = B[tx] + T.Cast("float32", y{i}[tx])',
        ]
    cuda = build(kernel("\n    ".join(lines)), "sm_90a").imports[0].inspect_source()
    for ptx in ("f32", "s32", "u32", "f64", "s64", "u64"):
        assert f"st.shared::cluster.{ptx}" in cuda and f"ld.shared::cluster.{ptx}" in cuda
    assembled = nvcc_assembles(cuda, "sm_90a")
    if assembled is None:
        pytest.skip("nvcc is not installed: the CUDA is checked, not assembled")
    assert assembled[0], assembled[1][-2000:]


def test_a_partial_mask_tests_the_rank_before_expecting_and_a_run_of_loads_shares_one_election():
    partial = lower_tile_ops(kernel(MULTICAST.replace("MASK", "1"), grid=4, cluster="cx = T.cta_id_in_cluster([4])"))
    assert re.search(r'if T\.uint32\(1\) >> T\.cuda\.func_call\("tirx_layout_cluster_rank"', partial.script())
    run = "T.tile_copy_async(tile, A[0:32, 0:64], bars[0], multicast=3)\n    " + MULTICAST.replace("MASK", "3")
    names = helpers(kernel(run.replace("bars[0], multicast=3)\n", "bars[1], multicast=3)\n", 1)))
    assert names.count("sync_elect") == 1 and names.count("tma_load_2d_multicast") == 2


def test_a_peer_arrive_right_after_an_arrive_shares_its_release_fences():
    body = "T.mbarrier_arrive(bars[0])\n    T.mbarrier_arrive_peer(bars[0], 1 - cx)\n    xs[tx] = T.float32(1)"
    body += "\n    T.mbarrier_arrive_peer(bars[1], 1 - cx)"
    assert helpers(kernel(body)) == [
        "sync_fence_proxy_async",
        "mbarrier_arrive",
        "cluster_arrive_peer",  # right after the arrive: its fence is this one's
        "sync_fence_proxy_async",  # after a store: a fence of its own
        "cluster_arrive_peer",
    ]
