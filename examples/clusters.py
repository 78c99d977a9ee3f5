"""Thread-block clusters (sm_90a): CTAs that reach each other's shared memory and mbarriers, and TMA loads that one
CTA issues for every CTA of its cluster.

A kernel declares its cluster next to its grid: ``bx = T.cta_id([CTAS])`` counts CTAs, ``cx =
T.cta_id_in_cluster([2])`` makes pairs (the launch carries the shape; ``cx`` is the CTA's place in its pair, and
``bx // 2`` its pair). The simulator runs the CTAs of a cluster together, so a CTA that reads its peer's shared
memory reads what the peer wrote only if a cluster barrier or a peer's mbarrier orders the two:

* ``dsmem_exchange``: each CTA writes its block of ``A`` into its own shared memory; ``T.cluster_sync()``; each
  reads its peer's block, reversed, through distributed shared memory (``T.dsmem_load``: ``mapa`` +
  ``ld.shared::cluster``); a second ``T.cluster_sync()`` keeps every CTA's shared memory alive until its peer has
  read it. Without the first barrier the read comes before the peer has written (or even started); without the
  second, a CTA exits while its peer still reads it -- both reported.
* ``dsmem_push``: each CTA writes its block into its *peer's* shared memory (``T.dsmem_store``) and arrives on the
  peer's mbarrier (``T.mbarrier_arrive_peer``: release at cluster scope); each waits on its own mbarrier, then reads
  its own shared memory. Without the wait the read races with the peer's writes.
* ``multicast_tile``: clusters of 2 or 4 CTAs; ``T.tile_copy_async(As, A[...], bars[0], multicast=mask)``: the CTA
  of rank 0 issues one ``cp.async.bulk.tensor ... .multicast::cluster``; the box lands in every CTA of the mask, and
  each CTA's own barrier expects the box's bytes (the lowering derives it: one ``arrive.expect_tx`` per receiving
  CTA). The mbarriers are initialised, then a cluster barrier, before any CTA signals a peer's.
* ``multicast_gemm``: ``D = A @ B.T``, a pair of CTAs per 128 x 64 block of ``D``, each computing 64 rows with
  ``wgmma``; both need the same 64 x 64 tile of ``B`` per K tile, so rank 0 loads it once for both (multicast) while
  each loads its own ``A`` rows. Before loading the next K tile into the shared stage, rank 0 waits until both CTAs
  have finished reading it: every thread of both arrives on rank 0's ``empty`` mbarrier
  (``T.mbarrier_arrive_peer(bars[1], 0)``). Without that peer wait, rank 0 overwrites its peer's ``B`` tile before
  the peer has read it -- reported.

Every kernel is assembled by ptxas for sm_90a and simulated equal to numpy (the GEMM's small-integer inputs make
float32 accumulation exact).
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers the cluster ops, T.tile_mma, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, wgmma_accumulator_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: The architecture these kernels are built for.
ARCH = "sm_90a"
#: Threads per CTA, and elements per CTA of the exchanges.
THREADS = 128
#: Each kernel allocates its mbarriers two at a time, even where it uses one: TVMScript prints a one-element shared
#: buffer as a scalar declaration that parses back as a register (the examples must print and parse back).
BARRIERS = 2
#: Rows of the multicast tile.
TILE_ROWS = 32


def dsmem_exchange(pairs: int = 2, first_barrier: bool = True, last_barrier: bool = True):
    """``pairs`` clusters of two CTAs: ``B``'s block of CTA ``r`` is its peer's block of ``A``, reversed.

    Example:
        >>> [p.name for p in dsmem_exchange().params]
        ['A', 'B']
    """
    ctas, n = 2 * pairs, THREADS

    @T.prim_func
    def exchange(A: T.Buffer((ctas * n,), "float32"), B: T.Buffer((ctas * n,), "float32")):
        T.device_entry()
        bx = T.cta_id([ctas])
        cx = T.cta_id_in_cluster([2])
        tx = T.thread_id([n])
        mine = T.alloc_shared((n,), "float32")
        theirs = T.alloc_shared((n,), "float32")
        mine[tx] = A[bx * n + tx]
        if first_barrier:
            T.cluster_sync()  # both blocks written (and both CTAs started) before either is read
        T.dsmem_load(theirs[tx], mine[n - 1 - tx], 1 - cx)
        if last_barrier:
            T.cluster_sync()  # neither CTA exits while its peer may still read its shared memory
        B[bx * n + tx] = theirs[tx]

    return exchange


def exchange_reference(a: np.ndarray) -> np.ndarray:
    """Each CTA's block is its peer's, reversed."""
    return a.reshape(-1, 2, THREADS)[:, ::-1, ::-1].reshape(-1)


def dsmem_push(pairs: int = 2, peer_wait: bool = True):
    """``pairs`` clusters of two CTAs: each pushes its block of ``A`` into its peer's shared memory and signals the
    peer's mbarrier; ``B``'s block of CTA ``r`` is its peer's block of ``A``.

    Example:
        >>> [p.name for p in dsmem_push().params]
        ['A', 'B']
    """
    ctas, n = 2 * pairs, THREADS

    @T.prim_func
    def push(A: T.Buffer((ctas * n,), "float32"), B: T.Buffer((ctas * n,), "float32")):
        T.device_entry()
        bx = T.cta_id([ctas])
        cx = T.cta_id_in_cluster([2])
        tx = T.thread_id([n])
        inbox = T.alloc_shared((n,), "float32")
        arrived = T.alloc_shared((BARRIERS,), "uint64")  # one used (see BARRIERS)
        T.mbarrier_init(arrived[0], n)  # the peer's threads, one arrival each
        T.cluster_sync()  # both mbarriers initialised (and both CTAs started) before a peer uses them
        T.dsmem_store(inbox[tx], 1 - cx, A[bx * n + tx])
        T.mbarrier_arrive_peer(arrived[0], 1 - cx)  # release: the store above, to whoever waits on the phase
        if peer_wait:
            T.mbarrier_wait(arrived[0], 0)
        B[bx * n + tx] = inbox[tx]

    return push


def push_reference(a: np.ndarray) -> np.ndarray:
    """Each CTA's block is its peer's."""
    return a.reshape(-1, 2, THREADS)[:, ::-1, :].reshape(-1)


def multicast_tile(
    cluster: int = 2, clusters: int = 2, rows: int = TILE_ROWS, cols: int = 32, cluster_barrier: bool = True
):
    """``clusters`` clusters of ``cluster`` CTAs; cluster ``c`` loads the ``(rows, cols)`` tile ``c`` of ``A`` once,
    multicast to all its CTAs, each of which stores it as its block of ``B``.

    Example:
        >>> [p.name for p in multicast_tile(4).params]
        ['A', 'B']
    """
    ctas, mask = cluster * clusters, (1 << cluster) - 1

    @T.prim_func
    def multicast(A: T.Buffer((clusters * rows, cols), "float32"), B: T.Buffer((ctas * rows, cols), "float32")):
        T.device_entry()
        bx = T.cta_id([ctas])
        cx = T.cta_id_in_cluster([cluster])
        tx = T.thread_id([THREADS])
        tile = T.alloc_shared((rows, cols), "float32", align=128)
        bars = T.alloc_shared((BARRIERS,), "uint64")  # one used (see BARRIERS)
        T.mbarrier_init(bars[0], 1)  # one arrival: this CTA's expect-tx of the multicast box
        if cluster_barrier:
            T.cluster_sync()  # every CTA's mbarrier initialised before rank 0's copy signals it
        T.tile_copy_async(tile, A[bx // cluster * rows : bx // cluster * rows + rows, 0:cols], bars[0], multicast=mask)
        T.mbarrier_wait(bars[0], 0)
        T.tile_copy(B[bx * rows : bx * rows + rows, 0:cols], tile)

    return multicast


def multicast_reference(cluster: int):
    """Every CTA of cluster ``c`` holds tile ``c`` of ``A``."""

    def reference(a: np.ndarray) -> np.ndarray:
        return np.repeat(a.reshape(-1, TILE_ROWS, a.shape[1]), cluster, axis=0).reshape(-1, a.shape[1])

    return reference


def multicast_gemm(m: int = 128, n: int = 128, k: int = 128, k_tile: int = 64, peer_wait: bool = True):
    """``D = A @ B.T`` (bf16 in, float32 out) by a grid of ``(m // 64, n // 64)`` CTAs in clusters of ``(2, 1)``: CTA
    ``(bx, by)`` computes the 64 x 64 block ``(bx, by)`` of ``D``; the two CTAs of a cluster share ``by``, so rank 0
    multicasts the ``B`` tile of each K tile to both, and each CTA loads its own ``A`` rows.

    Example:
        >>> [p.name for p in multicast_gemm().params]
        ['A', 'B', 'D']
    """
    row_pairs, col_blocks, tiles, kw = m // 128, n // 64, k // k_tile, k_tile
    a_layout = mma_shared_layout("bfloat16", "128B", (64, k_tile))
    b_layout = mma_shared_layout("bfloat16", "128B", (64, k_tile))
    accumulator = wgmma_accumulator_layout(64)

    @T.prim_func
    def gemm(A: T.Buffer((m, k), "bfloat16"), B: T.Buffer((n, k), "bfloat16"), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        bx, by = T.cta_id([2 * row_pairs, col_blocks])
        cx, _cy = T.cta_id_in_cluster([2, 1])
        tx = T.thread_id([THREADS])
        a_tile = T.alloc_shared((64, k_tile), "bfloat16", layout=a_layout, align=1024)
        b_tile = T.alloc_shared((64, k_tile), "bfloat16", layout=b_layout, align=1024)
        bars = T.alloc_shared((BARRIERS,), "uint64")  # full (the K tile landed), empty (the stage was read)
        acc = T.alloc_local((64, 64), "float32", layout=accumulator)
        T.mbarrier_init(bars[0], 2)  # this CTA's A copy and its expect-tx of the multicast B
        T.mbarrier_init(bars[1], 2 * THREADS)  # (rank 0's) every thread of both CTAs has read the stage
        T.cluster_sync()  # both CTAs' mbarriers initialised before a peer signals them
        for kt in T.serial(tiles):
            if peer_wait:  # noqa: SIM102  (a Python choice around a TIR condition)
                if cx == 0 and kt > 0:  # both CTAs have read K tile kt - 1's B (and rank 0 its A): refill the stage
                    T.mbarrier_wait(bars[1], (kt - 1) % 2)
            T.tile_copy_async(a_tile, A[bx * 64 : bx * 64 + 64, kt * kw : kt * kw + kw], bars[0])
            T.tile_copy_async(b_tile, B[by * 64 : by * 64 + 64, kt * kw : kt * kw + kw], bars[0], multicast=3)
            T.mbarrier_wait(bars[0], kt % 2)
            T.tile_mma(acc, a_tile, b_tile, kt > 0)  # synchronous: the wgmmas have read both tiles
            T.mbarrier_arrive_peer(bars[1], 0)  # this thread is done with the stage: tell rank 0
        T.tile_copy(D[bx * 64 : bx * 64 + 64, by * 64 : by * 64 + 64], acc)
        T.cluster_sync()  # rank 0 exits only after its peer's last arrivals on its mbarrier

    return gemm


def gemm_reference():
    """``D = A @ B.T`` in float64 (exact for the sample inputs)."""
    return Expected(lambda a, b: a.astype(np.float64) @ b.astype(np.float64).T, inputs=2)


KERNELS = KernelTable()  # each kernel built (for ARCH: load_examples reads it) when first looked up
KERNELS.add("cluster_dsmem_exchange", exchange_reference, dsmem_exchange)
KERNELS.add("cluster_dsmem_push", push_reference, dsmem_push)
KERNELS.add("cluster_multicast_tile_2", multicast_reference(2), multicast_tile, 2)
KERNELS.add("cluster_multicast_tile_4", multicast_reference(4), multicast_tile, 4)
KERNELS.add("cluster_multicast_gemm", gemm_reference(), multicast_gemm)
