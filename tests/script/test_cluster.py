"""The cluster ops and the multicast copy in TVMScript: ``T.cluster_sync`` and its halves, ``T.mbarrier_arrive_peer``,
``T.dsmem_store``/``T.dsmem_load`` and ``T.tile_copy_async(..., multicast=, issuer=)`` print and parse back."""

import tvm

from kernels import parse


def test_a_kernel_with_every_cluster_op_prints_and_parses_back():
    func = parse("""
@T.prim_func
def k(A: T.Buffer((64, 64), "float32"), B: T.Buffer((128,), "float32")):
    T.device_entry()
    bx = T.cta_id([4])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([128])
    xs = T.alloc_shared((128,), "float32")
    ys = T.alloc_shared((128,), "float32")
    tile = T.alloc_shared((32, 64), "float32", align=128)
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.cluster_sync()
    T.tile_copy_async(tile, A[0:32, 0:64], bars[0], multicast=3, issuer=1)
    T.cluster_arrive()
    T.dsmem_store(xs[tx], 1 - cx, T.float32(2))
    T.cluster_wait()
    T.dsmem_load(ys[tx], xs[tx], 1 - cx)
    T.mbarrier_arrive_peer(bars[1], 1 - cx)
    B[tx] = ys[tx]
""")
    text = func.script()
    for call in (
        "T.cluster_sync()",
        "T.cluster_arrive()",
        "T.cluster_wait()",
        "T.dsmem_store(xs[tx]",
        "T.dsmem_load(ys[tx], xs[tx]",
        "T.mbarrier_arrive_peer(bars[1]",
        "multicast",
        "issuer",
    ):
        assert call in text
    tvm.ir.assert_structural_equal(func, tvm.script.from_source(text))
