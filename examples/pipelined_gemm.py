"""The pipelined, warp-specialised Blackwell GEMM: ``D = A @ B.T`` (A is (M, K), B is (N, K), D is (M, N) float32)
with three roles that hand work to each other through mbarriers, so loads, MMAs and the epilogue overlap.

* A ring of ``stages`` shared stages, each one A tile (tile_m, tile_k) and one B tile (tile_n, tile_k) in the
  128B-swizzled K-major MMA layout. ``full[s]`` completes when stage ``s`` is filled, ``empty[s]`` when the MMA
  that read it is done.
* The producer walks the K tiles of every output tile the CTA owns: it waits for ``empty[s]`` (the MMA of
  ``stages`` K tiles ago) and fills stage ``s``. With ``loads="tma"`` it is one warp (warp 4) whose elected lane
  issues two ``T.tile_copy_async`` (the tensor-memory accelerator; each arrives on ``full[s]`` expecting its box's
  bytes, the copy completes them, rows past M or N are filled with zeros); with ``loads="threads"`` it is warpgroup 1
  copying with ``T.tile_copy`` and arriving on ``full[s]`` (128 arrivals).
* The MMA thread (lane 0 of warp 8) waits for ``full[s]`` and issues ``T.tile_mma(..., barrier=empty[s],
  scope="thread")`` into one of two TMEM accumulator stages, so the epilogue of one output tile overlaps the MMAs
  of the next. After a tile's last K tile it waits for that MMA (MMAs into one accumulator complete in order) and
  arrives on ``acc_full[a]``; before reusing accumulator stage ``a`` it waits for ``acc_empty[a]``.
* The epilogue (warpgroup 0, whose warps own TMEM lanes 0-127) waits for ``acc_full[a]``, drains the accumulator
  32 columns at a time with ``tcgen05.ld`` into registers, stores them to ``D`` (rows and columns past M, N are
  guarded off) and arrives on ``acc_empty[a]``.

The kernel is persistent: CTA ``c`` of ``ctas`` takes output tiles ``c, c + ctas, ...`` (row-major over the tile
grid). Every phase is counted from the CTA's own iteration numbers: K step ``it`` (over all its tiles) uses stage
``it % stages`` at phase ``it // stages % 2``; its ``i``-th tile uses accumulator stage ``i % 2`` at phase
``i // 2 % 2``.

The simulator runs both producers, one CTA per output tile and persistent (``ctas=1``: every ring stage refilled,
both accumulator stages turned over). A refill is ordered after the stage's previous TMA load through the MMA: the
load completes ``full[s]``, the MMA thread waits for it before its MMA, the MMA's commit completes ``empty[s]``,
and the producer waits for that before loading again (mbarrier phases carry what their arrivals, complete-tx and
commits release; decisions, "Issue 21: TMA refills in the simulator").

Build-time budget checks (``check_budget``): the ring must fit the CTA's shared memory and the two accumulator
stages the 512 TMEM columns; each is a ``ValueError`` naming the numbers.
"""

from __future__ import annotations

from pathlib import Path

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, T.mbarrier_*, T.alloc_tmem, layout=..., the pipeline)
from tirx_layout import mma_accumulator_layout, mma_shared_layout
from tirx_layout.tools.kernel_report import KernelTable, load_example_module

#: The ring, its budget, the shape checks and the schedule, shared with the Hopper kernel.
RING = load_example_module(Path(__file__).with_name("gemm_ring.py"))
SHARED_MEMORY_BYTES = RING.SHARED_MEMORY_BYTES
OPERAND_BYTES = RING.OPERAND_BYTES
unrolled, gemm_reference = RING.unrolled, RING.gemm_reference
#: Tensor memory columns of one SM (PTX ISA, "Tensor Memory": 128 lanes x 512 columns of 32 bits).
TMEM_COLUMNS = 512
EPILOGUE_COLUMNS = 32  # accumulator columns one tcgen05.ld drains (32 registers per thread)
#: Warpgroup 0: epilogue, warp 4 (TMA) or warpgroup 1 (thread copies): producer, thread 256: MMA issue. Whole
#: warpgroups, as the epilogue's TMEM copies require; the other threads idle.
THREADS = 384


def check_budget(tile: tuple[int, int, int], stages: int, dtype: str) -> int:
    """The shared-memory bytes of the ring (operand tiles plus two mbarriers per stage and two per accumulator
    stage); ``ValueError`` when they exceed ``SHARED_MEMORY_BYTES`` or the two float32 accumulator stages exceed
    ``TMEM_COLUMNS``.

    Example:
        >>> check_budget((128, 256, 64), 4, "bfloat16")
        196704
        >>> check_budget((128, 256, 64), 5, "bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: 5 stages of 128x64 + 256x64 bfloat16 tiles need at least 245872 bytes of shared memory; a CTA
        has 232448 (at most 4 stages fit)
    """
    tile_m, tile_n, _ = tile
    if dtype not in OPERAND_BYTES:
        raise ValueError(f"pipelined_gemm: operand dtype {dtype!r} is not one of {sorted(OPERAND_BYTES)}")
    need = RING.ring_bytes(tile, stages, dtype, other_barriers=4)  # + acc_full, acc_empty of two stages
    if 2 * tile_n > TMEM_COLUMNS:
        raise ValueError(
            f"two float32 accumulator stages of {tile_m}x{tile_n} need {2 * tile_n} TMEM columns; an SM has "
            f"{TMEM_COLUMNS} (tile_n at most {TMEM_COLUMNS // 2})"
        )
    return need


def pipelined_gemm(
    M: int,
    N: int,
    K: int,
    dtype: str = "bfloat16",
    tile: tuple[int, int, int] = (128, 256, 64),
    stages: int = 4,
    ctas: int | None = None,
    loads: str = "tma",
):
    """The kernel computing ``D (M, N) float32 = A (M, K) @ B (N, K).T`` in ``dtype`` (bfloat16, float16 or fp8)
    with ``tile = (tile_m, tile_n, tile_k)`` output tiles, a ring of ``stages`` shared stages, and ``ctas``
    persistent CTAs (default: one per output tile). M and N need not be multiples of the tile (the tails are
    guarded); K must be a multiple of tile_k, tile_m is 128 (the epilogue warpgroup's 128 TMEM lanes) and tile_k
    spans one 128-byte swizzle row (64 16-bit or 128 8-bit elements). ``loads``: ``"tma"`` (one producer warp
    issuing ``T.tile_copy_async``) or ``"threads"`` (a producer warpgroup of ``T.tile_copy``).

    Example:
        >>> kernel = pipelined_gemm(256, 256, 256)
        >>> [p.name for p in kernel.params]
        ['A', 'B', 'D']
        >>> pipelined_gemm(256, 256, 200)
        Traceback (most recent call last):
        ...
        ValueError: pipelined_gemm: K = 200 is not a multiple of tile_k = 64
    """
    tile_m, tile_n, tile_k = tile
    if loads not in ("tma", "threads"):
        raise ValueError(f"pipelined_gemm: loads = {loads!r}; expected 'tma' or 'threads'")
    tma = loads == "tma"
    check_budget(tile, stages, dtype)
    if tile_m != 128:
        raise ValueError(f"pipelined_gemm: tile_m = {tile_m}; the epilogue warpgroup drains 128 TMEM lanes")
    if tile_n % EPILOGUE_COLUMNS or tile_n % 16 or not 16 <= tile_n <= 256:
        raise ValueError(f"pipelined_gemm: tile_n = {tile_n} must be a multiple of 32 in 32..256 (MMA N, epilogue)")
    plan = RING.schedule("pipelined_gemm", M, N, K, dtype, tile, stages, ctas)
    tiles_n, tiles, ctas, k_tiles, per_cta = plan.tiles_n, plan.tiles, plan.ctas, plan.k_tiles, plan.per_cta
    chunks = tile_n // EPILOGUE_COLUMNS
    a_layout = mma_shared_layout(dtype, "128B", (stages, tile_m, tile_k))
    b_layout = mma_shared_layout(dtype, "128B", (stages, tile_n, tile_k))
    acc_layout = mma_accumulator_layout(tile_m, tile_n, stages=2)
    tm, tn, tk, S, KT, C, E = tile_m, tile_n, tile_k, stages, k_tiles, ctas, EPILOGUE_COLUMNS  # short names

    @T.prim_func
    def gemm(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), dtype), D: T.Buffer((M, N), "float32")):
        T.device_entry()
        cta = T.cta_id([ctas])
        tx = T.thread_id([THREADS])
        a_tile = T.alloc_shared((S, tm, tk), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((S, tn, tk), dtype, layout=b_layout, align=1024)
        full = T.alloc_shared((S,), "uint64")
        empty = T.alloc_shared((S,), "uint64")
        acc_full = T.alloc_shared((2,), "uint64")
        acc_empty = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((2, tm, tn), "float32", layout=acc_layout)
        out = T.alloc_local((tm, E), "float32")
        for s in T.unroll(S):
            T.mbarrier_init(full[s], 2 if tma else 128)  # the two TMA copies, or the producer warpgroup's threads
            T.mbarrier_init(empty[s], 1)  # the MMA's commit
        for a in T.unroll(2):
            T.mbarrier_init(acc_full[a], 1)  # the MMA-issuing thread
            T.mbarrier_init(acc_empty[a], 128)  # the epilogue warpgroup's threads
        if tma and tx // 32 == 4:  # producer: one warp, its elected lane issues the TMA copies
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)  # this CTA's i-th output tile
                row0 = T.meta_var(tile_id // tiles_n * tm)  # its first row and column
                col0 = T.meta_var(tile_id % tiles_n * tn)
                if tile_id < tiles:
                    for kt in T.serial(KT):
                        it = T.meta_var(i * KT + kt)  # the CTA's K step: ring stage it % S, phase it // S % 2
                        if it >= S:  # stage it % S was read by the MMA of K step it - S
                            T.mbarrier_wait(empty[it % S], (it // S - 1) % 2)
                        # each copy arrives on full[s] expecting its box's bytes; the TMA completes them
                        # (rows and columns past M, N or K are filled with zeros)
                        T.tile_copy_async(
                            a_tile[it % S], A[row0 : row0 + tm, kt * tk : kt * tk + tk], full[it % S], scope="warp"
                        )
                        T.tile_copy_async(
                            b_tile[it % S], B[col0 : col0 + tn, kt * tk : kt * tk + tk], full[it % S], scope="warp"
                        )
        elif not tma and tx // 128 == 1:  # producer: a warpgroup of thread copies
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)  # this CTA's i-th output tile
                row0 = T.meta_var(tile_id // tiles_n * tm)  # its first row and column
                col0 = T.meta_var(tile_id % tiles_n * tn)
                if tile_id < tiles:
                    for kt in T.serial(KT):
                        it = T.meta_var(i * KT + kt)  # the CTA's K step: ring stage it % S, phase it // S % 2
                        if it >= S:  # stage it % S was read by the MMA of K step it - S
                            T.mbarrier_wait(empty[it % S], (it // S - 1) % 2)
                        T.tile_copy(a_tile[it % S], A[row0 : row0 + tm, kt * tk : kt * tk + tk], "warpgroup")
                        T.tile_copy(b_tile[it % S], B[col0 : col0 + tn, kt * tk : kt * tk + tk], "warpgroup")
                        T.mbarrier_arrive(full[it % S])
        elif tx == 256:  # MMA issue: one thread (lane 0 of warp 8)
            for i in T.serial(per_cta):
                if cta + i * C < tiles:
                    if i >= 2:  # accumulator stage i % 2 held tile i - 2 until the epilogue drained it
                        T.mbarrier_wait(acc_empty[i % 2], (i // 2 - 1) % 2)
                    for kt in T.serial(KT):
                        it = T.meta_var(i * KT + kt)
                        T.mbarrier_wait(full[it % S], it // S % 2)
                        T.tile_mma(
                            acc[i % 2], a_tile[it % S], b_tile[it % S], kt > 0, barrier=empty[it % S], scope="thread"
                        )
                    last = T.meta_var(i * KT + KT - 1)  # MMAs into one accumulator complete in order
                    T.mbarrier_wait(empty[last % S], last // S % 2)
                    T.mbarrier_arrive(acc_full[i % 2])
        elif tx // 128 == 0:  # epilogue
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)
                row0 = T.meta_var(tile_id // tiles_n * tm)  # its first row and column
                col0 = T.meta_var(tile_id % tiles_n * tn)
                if tile_id < tiles:
                    T.mbarrier_wait(acc_full[i % 2], i // 2 % 2)
                    for c in T.unroll(chunks):  # a TMEM region starts at a constant column
                        T.tile_copy(out, acc[i % 2, 0:tm, c * E : c * E + E], "warpgroup")
                        T.tile_copy(D[row0 : row0 + tm, col0 + c * E : col0 + c * E + E], out, "warpgroup")
                    T.mbarrier_arrive(acc_empty[i % 2])

    return unrolled(gemm)


#: Simulated by ``tests/tools/test_examples.py``: one CTA per output tile, and persistent (``ctas=1``: every ring stage
#: refilled, both accumulator stages turned over) with either producer.
KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("pipelined_gemm_256_tma", gemm_reference(), pipelined_gemm, 256, 256, 256)
KERNELS.add("pipelined_gemm_tail_tma", gemm_reference(), pipelined_gemm, 200, 300, 128)
KERNELS.add("pipelined_gemm_256_tma_persistent", gemm_reference(), pipelined_gemm, 256, 256, 256, ctas=1)
KERNELS.add("pipelined_gemm_tail_tma_persistent", gemm_reference(), pipelined_gemm, 200, 300, 128, ctas=1)
KERNELS.add("pipelined_gemm_256", gemm_reference(), pipelined_gemm, 256, 256, 256, ctas=1, loads="threads")
KERNELS.add("pipelined_gemm_tail", gemm_reference(), pipelined_gemm, 200, 300, 128, ctas=1, loads="threads")
KERNELS.add(
    "pipelined_gemm_fp8",
    gemm_reference(),
    pipelined_gemm,
    128,
    256,
    256,
    "float8_e4m3fn",
    (128, 256, 128),
    loads="threads",
)
