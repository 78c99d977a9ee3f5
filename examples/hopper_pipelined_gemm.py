"""The pipelined, warp-specialised Hopper GEMM (sm_90a): ``D = A @ B.T`` (A is (M, K), B is (N, K), D is (M, N)
float32) with ``wgmma``, a TMA ring and register accumulators. The structure of the Blackwell kernel
(``pipelined_gemm.py``, whose ring, budget, checks and schedule it shares through ``gemm_ring.py``), with what
Hopper changes: no tensor memory, so each consumer warpgroup keeps its 64 rows of the output tile in registers and
is its own MMA issuer and epilogue.

* A ring of ``stages`` shared stages in the 128B-swizzled K-major MMA layout. Stage ``s`` holds the A tile as
  ``consumers`` slots of 64 rows (``a_tile[s * consumers + w]``: warpgroup ``w``'s rows, so its ``T.tile_mma``
  reads a region that starts at a slot index) and the B tile (tile_n, tile_k). ``full[s]`` completes when stage
  ``s`` is filled, ``empty[s]`` when every consumer thread has seen its MMAs on the stage retire.
* The producer (warpgroup ``consumers``; its first warp's elected lane issues) walks the K tiles of every output
  tile the CTA owns: it waits for ``empty[s]`` (the consumers are done with the stage's previous fill) and issues
  ``consumers + 1`` ``T.tile_copy_async`` (the tensor-memory accelerator; each arrives on ``full[s]`` expecting its
  box's bytes, the copy completes them; rows past M or N are filled with zeros).
* The consumers (warpgroups ``0 .. consumers - 1``) wait for ``full[s]`` and issue ``T.tile_mma(acc, a_tile[...],
  b_tile[s], kt > 0, scope="warpgroup", wait=False)``: a ``wgmma.fence``, the ``tile_k / 16`` (bf16; fp8:
  ``tile_k / 32``) ``wgmma.mma_async`` instructions of the stage, ``wgmma.commit_group``, no wait. Then
  ``T.tile_mma_wait(1)`` retires every group but the newest: the previous K step's MMAs are done, so that step's
  stage is released with ``T.mbarrier_arrive(empty[...])`` while the newest group runs on. After a tile's last K
  step ``T.tile_mma_wait(0)`` retires it, its stage is released, and the warpgroup stores its 64 rows from the
  accumulator registers to ``D`` (8-byte stores of column pairs; rows and columns past M, N are guarded off).

The kernel is persistent: CTA ``c`` of ``ctas`` takes output tiles ``c, c + ctas, ...`` (row-major over the tile
grid). K step ``it`` of the CTA (over all its tiles) uses stage ``it % stages`` at phase ``it // stages % 2``.

Registers: each consumer thread holds ``tile_n / 2`` float32 accumulator registers (128 for tile_n = 256); with
``(consumers + 1) * 128`` threads per CTA a thread may have at most 65536 / threads registers (168 for 384 threads,
as ptxas allocates them). ``benchmarks/bench_gemm.py`` measures 154 and no spills at 128 x 256 (bf16 and fp8), so
the producer warpgroup need not hand registers to the consumers (``setmaxnreg``).

Build-time budget checks: the ring must fit the CTA's shared memory (``gemm_ring.ring_bytes``), the accumulator the
registers a thread may have; each is a ``ValueError`` naming the numbers.
"""

from __future__ import annotations

from pathlib import Path

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, T.tile_mma_wait, T.mbarrier_*, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, wgmma_accumulator_layout
from tirx_layout.hw.threads import WARPGROUP_THREADS
from tirx_layout.hw.wgmma import WGMMA_M
from tirx_layout.tools.kernel_report import KernelTable, load_example_module

#: The ring, its budget, the shape checks and the schedule, shared with the Blackwell kernel.
RING = load_example_module(Path(__file__).with_name("gemm_ring.py"))
#: The architecture this kernel is built for.
ARCH = "sm_90a"
#: Rows of one wgmma (``m64nNkK``): one consumer warpgroup's share of the output tile.
WGMMA_ROWS = WGMMA_M
#: 32-bit registers of one SM (CUDA C++ Programming Guide, compute capability 9.0: 64K per SM and per CTA).
REGISTERS_PER_CTA = 64 * 1024
#: The most registers one thread may have (CUDA C++ Programming Guide, compute capability 9.0: 255).
MAX_REGISTERS_PER_THREAD = 255


def check_budget(tile: tuple[int, int, int], stages: int, dtype: str) -> int:
    """The shared-memory bytes of the ring (operand tiles plus two mbarriers per stage); ``ValueError`` when they
    exceed the CTA's shared memory, or when a consumer thread's float32 accumulator (``tile_n / 2`` registers) does
    not leave a quarter of the registers each of the CTA's threads may have for addresses and loop state.

    Example:
        >>> check_budget((128, 256, 64), 4, "bfloat16")
        196672
        >>> check_budget((128, 256, 64), 5, "bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: 5 stages of 128x64 + 256x64 bfloat16 tiles need at least 245840 bytes of shared memory; a CTA
        has 232448 (at most 4 stages fit)
        >>> check_budget((192, 256, 64), 3, "bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: hopper_pipelined_gemm: a 64x256 float32 accumulator is 128 registers per consumer thread; with
        512 threads a thread may have 128 registers (65536 / 512), and 32 of them are kept for addresses and loop
        state: tile_n at most 192 for tile_m = 192
    """
    tile_m, tile_n, _ = tile
    need = RING.ring_bytes(tile, stages, dtype)
    threads = (tile_m // WGMMA_ROWS + 1) * WARPGROUP_THREADS
    per_thread = min(MAX_REGISTERS_PER_THREAD, REGISTERS_PER_CTA // threads)
    spare = per_thread // 4
    accumulator = tile_n // 2
    if accumulator > per_thread - spare:
        widest = (per_thread - spare) * 2 // 8 * 8
        raise ValueError(
            f"hopper_pipelined_gemm: a {WGMMA_ROWS}x{tile_n} float32 accumulator is {accumulator} registers per "
            f"consumer thread; with {threads} threads a thread may have {per_thread} registers ({REGISTERS_PER_CTA} "
            f"/ {threads}), and {spare} of them are kept for addresses and loop state: tile_n at most {widest} for "
            f"tile_m = {tile_m}"
        )
    return need


def hopper_pipelined_gemm(
    M: int,
    N: int,
    K: int,
    dtype: str = "bfloat16",
    tile: tuple[int, int, int] = (128, 256, 64),
    stages: int = 4,
    ctas: int | None = None,
    cluster: int = 1,
):
    """The sm_90a kernel computing ``D (M, N) float32 = A (M, K) @ B (N, K).T`` in ``dtype`` (bfloat16, float16 or
    fp8 e4m3/e5m2) with ``tile = (tile_m, tile_n, tile_k)`` output tiles, a ring of ``stages`` shared stages and
    ``ctas`` persistent CTAs (default: one per output tile). tile_m is 64 per consumer warpgroup (64 or 128), tile_n
    a wgmma N (a multiple of 8 up to 256; the stage and accumulator layouts refuse others), tile_k one 128-byte swizzle
    row (64 16-bit or 128 8-bit elements); M and N need not be multiples of the tile (tails are zero-filled by the
    TMA and guarded in the epilogue); K must be a multiple of tile_k. ``cluster=2``: CTAs ``2p`` and ``2p + 1`` are
    a cluster; their output tiles (``c, c + ctas, ...``) are row neighbours, so they share each A tile, which the
    pair loads once by TMA multicast (slot ``w`` issued by rank ``w % 2``); a stage is refilled only once the
    consumers of both CTAs released it (each consumer thread also arrives on its peer's ``empty[s]``).

    Example:
        >>> kernel = hopper_pipelined_gemm(256, 256, 256)
        >>> [p.name for p in kernel.params]
        ['A', 'B', 'D']
        >>> hopper_pipelined_gemm(256, 256, 256, tile=(96, 256, 64))
        Traceback (most recent call last):
        ...
        ValueError: hopper_pipelined_gemm: tile_m = 96 is not a multiple of 64 (one consumer warpgroup's wgmma rows)
    """
    who = "hopper_pipelined_gemm"
    tile_m, tile_n, tile_k = tile
    if tile_m % WGMMA_ROWS or tile_m < WGMMA_ROWS:
        raise ValueError(f"{who}: tile_m = {tile_m} is not a multiple of 64 (one consumer warpgroup's wgmma rows)")
    plan = RING.schedule(who, M, N, K, dtype, tile, stages, ctas)
    check_budget(tile, stages, dtype)
    check_cluster_pairs(who, cluster, plan)
    multicast = 0b11 if cluster == 2 else None  # the A slots: to both CTAs of the pair
    consumers = tile_m // WGMMA_ROWS
    threads = (consumers + 1) * WARPGROUP_THREADS
    # A as 64-row slots, one per consumer warpgroup: slot s * consumers + w is warpgroup w's rows of stage s
    a_layout = mma_shared_layout(dtype, "128B", (stages * consumers, WGMMA_ROWS, tile_k))
    b_layout = mma_shared_layout(dtype, "128B", (stages, tile_n, tile_k))
    acc_layout = wgmma_accumulator_layout(tile_n)
    tn, tk, S, KT, W = tile_n, tile_k, stages, plan.k_tiles, consumers  # short names
    tiles, tiles_n, per_cta, C, R = plan.tiles, plan.tiles_n, plan.per_cta, plan.ctas, WGMMA_ROWS
    # The consumers' K loop is unrolled over the ring (K tile kt = k0 * U + u) when every output tile starts at stage
    # 0 (K tiles a multiple of the stages): each unrolled step's stage, mbarriers and descriptors are constants, so
    # nvcc computes the descriptors once, outside the loop over ring turns (issue 34: the consumer loop per K tile).
    U = stages if plan.k_tiles % stages == 0 else 1

    @T.prim_func
    def gemm(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), dtype), D: T.Buffer((M, N), "float32")):
        T.device_entry()
        cta = T.cta_id([C])
        if cluster == 2:
            cx = T.cta_id_in_cluster([2])
        tx = T.thread_id([threads])
        a_tile = T.alloc_shared((S * W, R, tk), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((S, tn, tk), dtype, layout=b_layout, align=1024)
        full = T.alloc_shared((S,), "uint64")
        empty = T.alloc_shared((S,), "uint64")
        acc = T.alloc_local((R, tn), "float32", layout=acc_layout)  # each consumer thread's accumulator registers
        for s in T.unroll(S):
            T.mbarrier_init(full[s], W + 1)  # the TMA copies of the stage (W slots of A, one B)
            T.mbarrier_init(empty[s], W * 128 * cluster)  # every consumer thread (of the pair), its MMAs retired
        if cluster == 2:
            T.cluster_sync()  # both CTAs' mbarriers initialised before the peer signals them
        if tx // 128 < W:  # consumer warpgroup w: MMAs on its 64 rows, then their epilogue
            w = T.meta_var(tx // 128)
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)
                row0 = T.meta_var(tile_id // tiles_n * (R * W) + w * R)  # this warpgroup's first row and column
                col0 = T.meta_var(tile_id % tiles_n * tn)
                if tile_id < tiles:
                    for k0 in T.serial(KT // U, annotations=RING.ONE_RING_TURN):
                        for u in T.unroll(U):  # one ring turn: each step's stage, so its descriptors, constant
                            kt = T.meta_var(k0 * U + u)
                            it = T.meta_var(i * KT + kt)
                            T.mbarrier_wait(full[it % S], it // S % 2)
                            T.tile_mma(
                                acc, a_tile[it % S * W + w], b_tile[it % S], kt > 0, scope="warpgroup", wait=False
                            )
                            T.tile_mma_wait(1)  # K step it - 1's group retired: its stage may be refilled
                            if kt > 0:
                                T.mbarrier_arrive(empty[(it - 1) % S])
                                if cluster == 2:  # the peer writes this CTA's A slots: release the stage there too
                                    T.mbarrier_arrive_peer(empty[(it - 1) % S], 1 - cx)
                    T.tile_mma_wait(0)  # the tile's last group retired: acc is final, its stage free
                    T.mbarrier_arrive(empty[(i * KT + KT - 1) % S])
                    if cluster == 2:
                        T.mbarrier_arrive_peer(empty[(i * KT + KT - 1) % S], 1 - cx)
                    T.tile_copy(D[row0 : row0 + R, col0 : col0 + tn], acc, "warpgroup")
        elif tx // 32 == 4 * W:  # producer: the first warp of the last warpgroup; its elected lane issues
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)  # this CTA's i-th output tile
                row0 = T.meta_var(tile_id // tiles_n * (R * W))  # its first row and column
                col0 = T.meta_var(tile_id % tiles_n * tn)
                if tile_id < tiles:
                    for kt in T.serial(KT):
                        it = T.meta_var(i * KT + kt)  # the CTA's K step: ring stage it % S, phase it // S % 2
                        if it >= S:  # stage it % S was read by the MMAs of K step it - S
                            T.mbarrier_wait(empty[it % S], (it // S - 1) % 2)
                        for w in T.unroll(W):  # each consumer's 64 rows of A into its slot
                            T.tile_copy_async(
                                a_tile[it % S * W + w],
                                A[row0 + w * R : row0 + w * R + R, kt * tk : kt * tk + tk],
                                full[it % S],
                                scope="warp",
                                multicast=multicast,
                                issuer=None if multicast is None else w % 2,
                            )
                        T.tile_copy_async(
                            b_tile[it % S], B[col0 : col0 + tn, kt * tk : kt * tk + tk], full[it % S], scope="warp"
                        )
        if cluster == 2:
            T.cluster_sync()  # neither CTA exits while its peer may still signal it or land A in it

    return RING.unrolled(gemm)


def check_cluster_pairs(who: str, cluster: int, plan) -> None:
    """``ValueError`` unless ``cluster`` is 1, or 2 with pairs of CTAs whose output tiles are always row neighbours:
    an even number of CTAs and of tile columns (then CTAs ``2p`` and ``2p + 1`` take tiles ``t`` and ``t + 1`` of
    one row, or both none).

    Example:
        >>> from types import SimpleNamespace
        >>> check_cluster_pairs("gemm", 2, SimpleNamespace(ctas=2, tiles_n=1))
        Traceback (most recent call last):
        ...
        ValueError: gemm: cluster=2 pairs CTAs 2p, 2p + 1 on neighbouring tiles of one row; it needs an even number
        of CTAs and of tile columns (ctas = 2, tile columns = 1)
    """
    if cluster == 1:
        return
    if cluster != 2:
        raise ValueError(f"{who}: cluster = {cluster}; the kernel pairs CTAs (cluster=2) or not (cluster=1)")
    if plan.ctas % 2 or plan.tiles_n % 2:
        raise ValueError(
            f"{who}: cluster=2 pairs CTAs 2p, 2p + 1 on neighbouring tiles of one row; it needs an even number of "
            f"CTAs and of tile columns (ctas = {plan.ctas}, tile columns = {plan.tiles_n})"
        )


#: Built for sm_90a, assembled and simulated by ``tests/tools/test_examples.py`` (and the main job): two CTAs of
#: 128 x 256 tiles with four K tiles in four stages; a tail grid (M, N not multiples of the tile) on one persistent
#: CTA, whose two stages are refilled five times; fp8 e4m3 with a 2-row M tail and three stages, refilled.
KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("hopper_pipelined_gemm_256", RING.gemm_reference(), hopper_pipelined_gemm, 256, 256, 256)
KERNELS.add("hopper_pipelined_gemm_tail", RING.gemm_reference(), hopper_pipelined_gemm, 200, 300, 192, stages=2, ctas=1)
KERNELS.add(
    "hopper_pipelined_gemm_fp8",
    RING.gemm_reference(),
    hopper_pipelined_gemm,
    130,
    96,
    256,
    "float8_e4m3fn",
    (128, 64, 128),
    stages=3,
    ctas=1,
)
KERNELS.add(
    "hopper_pipelined_gemm_cluster",
    RING.gemm_reference(),
    hopper_pipelined_gemm,
    64,
    256,
    256,
    tile=(64, 128, 64),
    stages=2,
    cluster=2,
)
SHOWCASE = ["hopper_pipelined_gemm_256"]

#: The issue's production sizes, built for sm_90a and assembled by the main job (``tools.kernel_report
#: .load_full_size``) but not simulated: 4096^3 bf16 (128 x 256 x 64 tiles) and fp8 e4m3 (128 x 256 x 128), four
#: stages, persistent over the 132 SMs of an H100/H200.
FULL_SIZE = {
    "hopper_pipelined_gemm_4096_bf16": lambda: hopper_pipelined_gemm(4096, 4096, 4096, ctas=132),
    "hopper_pipelined_gemm_4096_fp8": lambda: hopper_pipelined_gemm(
        4096, 4096, 4096, "float8_e4m3fn", (128, 256, 128), ctas=132
    ),
    "hopper_pipelined_gemm_4096_bf16_cluster": lambda: hopper_pipelined_gemm(4096, 4096, 4096, ctas=132, cluster=2),
}
