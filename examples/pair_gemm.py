"""A 256-row GEMM tile computed by a CTA pair (sm_100a, clusters of 2 x 1): ``tcgen05.mma.cta_group::2``.

``D = A @ B.T`` with ``D`` of ``256 * pairs`` rows and ``N`` columns: pair ``p`` (cluster ``p``, CTAs ``2p`` and
``2p + 1``) computes rows ``256 p ..``. Each CTA of the pair holds its halves (``hw.tcgen05_mma.PairMma``): 128 rows
of ``A`` and ``N / 2`` rows of ``B`` in its shared memory, at the same offsets in both, and its 128 rows of ``D`` in
its TMEM (datapath Layout A, ``tmem_datapath_layout("A", 128, N)``). One thread of the even CTA issues each K
step's MMA for both (``T.tile_mma(..., cta_group=2)``); its commit arrives on the mbarrier at the same offset in both
CTAs (``.multicast::cluster``, ctaMask ``0b11``); TMEM is allocated with ``cta_group::2`` in both.

* ``pair_gemm`` (the warp-specialised issuer): per K tile, every thread of both CTAs copies its share of the tile
  into its own shared memory and arrives on the even CTA's ``full`` mbarrier (``bars[0]``, through
  ``T.mbarrier_arrive_peer(bars[0], 0)``: the arrive fences the writes to the async proxy and releases them at
  cluster scope); warp 0 of the even CTA waits on ``full`` and issues the pair's MMA, committing to ``done``
  (``bars[1]``); every thread of both CTAs waits on its own ``done`` before overwriting its share or reading its
  TMEM. Without the peer's arrivals (``peer_arrive=False``) the even CTA's MMA reads the odd CTA's half before it
  is written; without the odd CTA's wait on its ``done`` (``peer_wait=False``) it reads its TMEM (and overwrites
  its share) while the MMA may still write (read) it -- both reported by the simulator.
* ``pair_gemm_sync``: the synchronous form (scope ``"cta"``): each K tile's ``T.tile_mma`` meets the peer at a
  cluster barrier, the even CTA issues, both wait; with the pair's M = 128 each CTA's 64 rows of D are in datapath
  Layout B.

Every kernel is assembled by ptxas for sm_100a and simulated (the cluster's CTAs run together) equal to numpy: the
inputs are small integers, exact in bf16/fp8 and in float32 sums.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, the cluster ops, layout=..., the pipeline)
from tirx_layout import S, TileLayout, mma_shared_layout, tid_in_wg, tmem_datapath_layout, wg_local_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: The architecture these kernels are built for.
ARCH = "sm_100a"
#: Threads per CTA: one warpgroup reads the CTA's 128 rows of D from TMEM.
THREADS = 128
#: Rows of the pair's tile, and of each CTA's half.
PAIR_M, HALF_M = 256, 128
#: Columns of D one thread holds in registers at a time on the way out of TMEM (a row of 64 float32).
EPILOGUE_COLUMNS = 64


def pair_gemm(
    n: int = 128,
    k: int = 128,
    dtype: str = "bfloat16",
    pairs: int = 2,
    peer_arrive: bool = True,
    peer_wait: bool = True,
):
    """``D = A @ B.T`` by ``pairs`` CTA pairs, each a ``256 x n`` tile over ``k`` (K tiles of 128 bytes), the
    warp-specialised issuer of the even CTA fed through mbarriers.

    Example:
        >>> [p.name for p in pair_gemm().params]
        ['A', 'B', 'D']
    """
    m, half_n, kw = PAIR_M * pairs, n // 2, 128 // np.dtype(_numpy(dtype)).itemsize
    tiles, ctas = k // kw, 2 * pairs
    a_layout = mma_shared_layout(dtype, "128B", (HALF_M, kw))
    b_layout = mma_shared_layout(dtype, "128B", (half_n, kw))
    d_layout = tmem_datapath_layout("A", HALF_M, n)
    expected_arrivals = 2 * THREADS if peer_arrive else THREADS
    chunk = min(n, EPILOGUE_COLUMNS)

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        bx = T.cta_id([ctas])
        cx = T.cta_id_in_cluster([2])
        tx = T.thread_id([THREADS])
        A_s = T.alloc_shared((HALF_M, kw), dtype, layout=a_layout, align=1024)
        B_s = T.alloc_shared((half_n, kw), dtype, layout=b_layout, align=1024)
        bars = T.alloc_shared((2,), "uint64")  # full, done
        acc = T.alloc_tmem((HALF_M, n), "float32", layout=d_layout)
        frag = T.alloc_local((HALF_M, chunk), "float32", layout=wg_local_layout(chunk))
        T.mbarrier_init(bars[0], expected_arrivals)  # (the even CTA's) every thread of the pair wrote its share
        T.mbarrier_init(bars[1], 1)  # the pair's commit, multicast to both CTAs
        T.cluster_sync()  # both CTAs' mbarriers initialised before a peer signals them
        for kt in T.serial(tiles):
            # this CTA's rows of A and D: pair bx // 2's 256 from row 256 (bx // 2), its half cx = bx % 2 of them
            T.tile_copy(A_s, A[bx * HALF_M : bx * HALF_M + HALF_M, kt * kw : kt * kw + kw])
            T.tile_copy(B_s, B[cx * half_n : cx * half_n + half_n, kt * kw : kt * kw + kw])
            if peer_arrive:
                T.mbarrier_arrive_peer(bars[0], 0)
            else:
                if cx == 0:
                    T.mbarrier_arrive_peer(bars[0], 0)
            if cx == 0 and tx // 32 == 0:  # the even CTA's warp 0 issues for the pair
                T.mbarrier_wait(bars[0], kt % 2)
                T.tile_mma(acc, A_s, B_s, kt > 0, barrier=bars[1], scope="warp", cta_group=2)
            if peer_wait:
                T.mbarrier_wait(bars[1], kt % 2)
            else:
                if cx == 0:
                    T.mbarrier_wait(bars[1], kt % 2)
        for c in T.unroll(n // chunk):  # the CTA's rows of D out of its TMEM, `chunk` columns at a time
            T.tile_copy(frag, acc[0:HALF_M, c * chunk : c * chunk + chunk], "warpgroup")
            T.tile_copy(D[bx * HALF_M : bx * HALF_M + HALF_M, c * chunk : c * chunk + chunk], frag, "warpgroup")

    return gemm


def pair_gemm_sync(n: int = 64, k: int = 128, dtype: str = "bfloat16", m: int = PAIR_M):
    """``D = A @ B.T`` (``m x n``, the pair's M = 256 or 128) by one CTA pair with the synchronous pair MMA (scope
    ``"cta"``). With M = 128 each CTA's 64 rows of D sit in datapath Layout B (the first ``n / 2`` columns on lanes
    0-63, the others on lanes 64-127), which one ``tcgen05.ld.32x32b`` per warp reads back: thread ``t`` of the
    warpgroup holds row ``t % 64``, columns ``(t // 64) * n / 2 ..``.

    Example:
        >>> [p.name for p in pair_gemm_sync(m=128).params]
        ['A', 'B', 'D']
    """
    half_m, half_n, kw = m // 2, n // 2, 128 // np.dtype(_numpy(dtype)).itemsize
    tiles = k // kw
    a_layout = mma_shared_layout(dtype, "128B", (half_m, kw))
    b_layout = mma_shared_layout(dtype, "128B", (half_n, kw))
    if m == PAIR_M:
        d_layout, frag_layout = tmem_datapath_layout("A", HALF_M, n), wg_local_layout(n)
    else:
        d_layout = tmem_datapath_layout("B", half_m, n)
        frag_layout = TileLayout(S[(half_m, 2, half_n) : (1 @ tid_in_wg, half_m @ tid_in_wg, 1)])

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        bx = T.cta_id([2])
        cx = T.cta_id_in_cluster([2])
        tx = T.thread_id([THREADS])
        A_s = T.alloc_shared((half_m, kw), dtype, layout=a_layout, align=1024)
        B_s = T.alloc_shared((half_n, kw), dtype, layout=b_layout, align=1024)
        acc = T.alloc_tmem((half_m, n), "float32", layout=d_layout)
        frag = T.alloc_local((half_m, n), "float32", layout=frag_layout)
        for kt in T.serial(tiles):
            T.tile_copy(A_s, A[cx * half_m : cx * half_m + half_m, kt * kw : kt * kw + kw])
            T.tile_copy(B_s, B[cx * half_n : cx * half_n + half_n, kt * kw : kt * kw + kw])
            T.tile_mma(acc, A_s, B_s, kt > 0, cta_group=2)
        T.tile_copy(frag, acc, "warpgroup")
        T.tile_copy(D[cx * half_m : cx * half_m + half_m, 0:n], frag, "warpgroup")

    return gemm


def _numpy(dtype: str):
    import ml_dtypes

    return {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}[dtype]


def gemm_reference():
    """``D = A @ B.T`` in float64 (exact for the sample inputs)."""
    return Expected(lambda a, b: a.astype(np.float64) @ b.astype(np.float64).T, inputs=2)


KERNELS = KernelTable()  # each kernel built (for ARCH: load_examples reads it) when first looked up
KERNELS.add("pair_gemm_bf16", gemm_reference(), pair_gemm)
KERNELS.add("pair_gemm_fp8", gemm_reference(), pair_gemm, n=64, k=256, dtype="float8_e4m3fn", pairs=1)
KERNELS.add("pair_gemm_sync", gemm_reference(), pair_gemm_sync)
KERNELS.add("pair_gemm_sync_m128", gemm_reference(), pair_gemm_sync, m=128)
