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
* The MMA warp (warp 8) waits for ``full[s]`` and issues ``T.tile_mma(..., barrier=empty[s], scope="warp")``
  into one of two TMEM accumulator stages, so the epilogue of one output tile overlaps the MMAs of the next: the
  lane ``elect.sync`` elects issues the K tile's MMAs and commit, which ptxas then knows to be alone in a converged
  warp (a single thread, ``tx == 256``, cost a per-MMA election loop: ``ELECT``, ``BRA.U.ANY``, ``PLOP3``, ``R2UR``;
  issue 34). After a tile's last K tile every lane waits for that MMA (MMAs into one accumulator complete in order)
  and arrives on ``acc_full[a]`` (32 arrivals); before reusing accumulator stage ``a`` it waits for
  ``acc_empty[a]``.
* The epilogue (warpgroup 0, whose warps own TMEM lanes 0-127) waits for ``acc_full[a]``, drains the accumulator
  32 columns at a time with ``tcgen05.ld`` into registers, stores them to ``D`` (rows and columns past M, N are
  guarded off) and arrives on ``acc_empty[a]``.
* ``output_dtype="bfloat16"`` stores ``D = bf16(A @ B.T)`` by TMA: each 32-column chunk cast in registers (the
  casting ``T.tile_copy``), staged through one of two 64B-swizzled shared tiles (chunk ``c`` in tile ``c % 2``, so
  one chunk's store overlaps the next chunk's drain) and stored by ``T.tile_copy_async``, one 32-row box per warp;
  the warp waits for its stores (``T.tma_store_wait``) after every second chunk, before a staging tile is reused.
* ``epilogue="relu"`` (or ``"silu"``, ``"gelu"``) fuses the epilogue: ``D = bf16(act(A @ B.T + bias))``, each
  32-column chunk biased, activated and cast in registers by a ``T.tile_parallel`` loop (``examples/epilogues.py``),
  then staged and stored as with ``output_dtype="bfloat16"``. The producer and MMA roles are the same macros in
  every kernel, so the main loops are the same code.

The kernel is persistent: CTA ``c`` of ``ctas`` takes output tiles ``c, c + ctas, ...`` in the raster order of
``gemm_ring.TileSchedule.coordinates``: groups of ``group`` rows of tiles, each walked column by column, so the CTAs
working at once share few A and B tiles in L2 (``group``: default ``gemm_ring.best_group``, the group whose waves
read the fewest operand rows per K step, 18 at 4096^3 on 148 SMs; 1 is row-major). Every phase is counted from the
CTA's own iteration numbers: K step ``it`` (over all its tiles) uses stage ``it % stages`` at phase
``it // stages % 2``; its ``i``-th tile uses accumulator stage ``i % 2`` at phase ``i // 2 % 2``. When the K tiles
are a multiple of the stages the K loops are unrolled over the ring, so each step's stage is a constant (its
descriptors and mbarrier addresses are computed once, outside the loop).

``cta_group=2`` makes the CTA-pair kernel (:func:`pair_kernel`): clusters of 2 x 1, 256 x N tiles computed by
``tcgen05.mma.cta_group::2`` issued by the even CTA's MMA warp, each CTA loading half of A's and half of B's rows
of the tile (per SM, 32 KB per K tile for the FLOPs the 1-CTA 128 x 256 tile loads 48 KB for).

``scaled=True`` makes the block-scaled fp8 kernel (:func:`block_scaled_kernel`): scale factors ride in the ring
and are copied shared -> TMEM with ``tcgen05.cp`` by the MMA thread (thread 256) before each MMA.

The simulator runs both producers, one CTA per output tile and persistent (``ctas=1``: every ring stage refilled,
both accumulator stages turned over). A refill is ordered after the stage's previous TMA load through the MMA: the
load completes ``full[s]``, the MMA warp waits for it before its MMA, the MMA's commit completes ``empty[s]``,
and the producer waits for that before loading again (mbarrier phases carry what their arrivals, complete-tx and
commits release; decisions, "Issue 21: TMA refills in the simulator").

Build-time budget checks (``check_budget``): the ring must fit the CTA's shared memory and the two accumulator
stages (and, block-scaled, every stage's scale factors) the 512 TMEM columns; each is a ``ValueError`` naming the
numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, T.mbarrier_*, T.alloc_tmem, layout=..., the pipeline)
from tirx_layout import (
    Iter,
    TileLayout,
    mma_accumulator_layout,
    mma_scale_factor_layout,
    mma_scale_factor_shared_layout,
    mma_shared_layout,
)
from tirx_layout.tools.kernel_report import Expected, KernelTable, load_example_module

#: The ring, its budget, the shape checks and the schedule, shared with the Hopper kernel.
RING = load_example_module(Path(__file__).with_name("gemm_ring.py"))
#: The activations of the fused epilogue (``epilogue=``), written with ``T.tile_parallel``.
EPILOGUES = load_example_module(Path(__file__).with_name("epilogues.py"))
SHARED_MEMORY_BYTES = RING.SHARED_MEMORY_BYTES
OPERAND_BYTES = RING.OPERAND_BYTES
unrolled, gemm_reference = RING.unrolled, RING.gemm_reference
#: Tensor memory columns of one SM (PTX ISA, "Tensor Memory": 128 lanes x 512 columns of 32 bits).
TMEM_COLUMNS = 512
EPILOGUE_COLUMNS = 32  # accumulator columns one tcgen05.ld drains (32 registers per thread)
#: Staging tiles of the TMA-store epilogue (bfloat16 128 x 32 each): chunk c is staged in tile c % 2 while the store
#: of chunk c - 1 reads the other.
STAGING_TILES = 2
#: Block scaling (``kind::mxf8f6f4.block_scale.scale_vec::1X``): one ue8m0 scale per row per 32 K elements.
SCALE_BLOCK = 32
SCALE_DTYPE = "float8_e8m0fnu"
#: Warpgroup 0: epilogue, warp 4 (TMA) or warpgroup 1 (thread copies): producer, warp 8 (block-scaled: thread 256):
#: MMA issue. Whole warpgroups, as the epilogue's TMEM copies require; the other threads idle.
THREADS = 384


#: The loop over ring turns stays a loop in the CUDA source (``gemm_ring.ONE_RING_TURN``).
ONE_RING_TURN = RING.ONE_RING_TURN


def scale_factor_rows(rows: int) -> int:
    """Rows of a scale-factor stage: ``rows`` rounded up to the 128 rows one ``tcgen05.cp .32x128b.warpx4`` moves.

    Example:
        >>> scale_factor_rows(128), scale_factor_rows(224)
        (128, 256)
    """
    return -(-rows // 128) * 128


def scale_factor_columns(tile: tuple[int, int, int]) -> int:
    """TMEM columns (32 bits) of one stage of A's and B's scale factors: ``rows / 32`` per group of four K
    blocks (``hw.constructors.mma_scale_factor_layout``), rows rounded up by :func:`scale_factor_rows`.

    Example:
        >>> scale_factor_columns((128, 224, 128))  # 4 for A's 128 rows, 8 for B's 256
        12
    """
    tile_m, tile_n, tile_k = tile
    groups = -(-tile_k // (4 * SCALE_BLOCK))
    return groups * (scale_factor_rows(tile_m) + scale_factor_rows(tile_n)) // 32


def check_budget(
    tile: tuple[int, int, int], stages: int, dtype: str, scaled: bool = False, staging: bool = False
) -> int:
    """The shared-memory bytes of the ring (operand tiles, with ``scaled`` each stage's scale factors, with
    ``staging`` the TMA-store epilogue's two bfloat16 staging tiles of 128 x 32, plus two mbarriers per stage and two
    per accumulator stage); ``ValueError`` when they exceed ``SHARED_MEMORY_BYTES`` or
    the two float32 accumulator stages (and with ``scaled`` every stage's scale-factor columns) exceed
    ``TMEM_COLUMNS``.

    Example:
        >>> check_budget((128, 256, 64), 4, "bfloat16")
        196704
        >>> check_budget((128, 256, 64), 5, "bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: 5 stages of 128x64 + 256x64 bfloat16 tiles need at least 245872 bytes of shared memory; a CTA
        has 232448 (at most 4 stages fit)
        >>> check_budget((128, 256, 128), 4, "float8_e4m3fn", scaled=True)
        Traceback (most recent call last):
        ...
        ValueError: two float32 accumulator stages of 128x256 (512 columns) and 4 stages of scale factors (12
        columns each) need 560 TMEM columns; an SM has 512 (tile_n at most 224)
    """
    tile_m, tile_n, tile_k = tile
    if dtype not in OPERAND_BYTES:
        raise ValueError(f"pipelined_gemm: operand dtype {dtype!r} is not one of {sorted(OPERAND_BYTES)}")
    # with scaled, each stage also holds one byte per row per K block of 32 of both scale-factor matrices
    scales = (scale_factor_rows(tile_m) + scale_factor_rows(tile_n)) * (tile_k // SCALE_BLOCK) if scaled else 0
    fixed = STAGING_TILES * tile_m * EPILOGUE_COLUMNS * 2 if staging else 0  # the TMA epilogue's bfloat16 staging
    what = " and their scale factors" if scaled else (" and the epilogue's staging tile" if staging else "")
    # + acc_full, acc_empty of two accumulator stages
    need = RING.ring_bytes(tile, stages, dtype, 4, scales, what, fixed)
    if not scaled and 2 * tile_n > TMEM_COLUMNS:
        raise ValueError(
            f"two float32 accumulator stages of {tile_m}x{tile_n} need {2 * tile_n} TMEM columns; an SM has "
            f"{TMEM_COLUMNS} (tile_n at most {TMEM_COLUMNS // 2})"
        )
    if scaled:
        per_stage = scale_factor_columns(tile)
        columns = 2 * tile_n + stages * per_stage
        if columns > TMEM_COLUMNS:
            widest = max(
                (n for n in range(32, 257, 32) if 2 * n + stages * scale_factor_columns((tile_m, n, tile_k)) <= 512),
                default=0,
            )
            raise ValueError(
                f"two float32 accumulator stages of {tile_m}x{tile_n} ({2 * tile_n} columns) and {stages} stages of "
                f"scale factors ({per_stage} columns each) need {columns} TMEM columns; an SM has {TMEM_COLUMNS} "
                f"(tile_n at most {widest})"
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
    scaled: bool = False,
    epilogue: str | None = None,
    group: int | None = None,
    output_dtype: str | None = None,
    cta_group: int = 1,
):
    """The kernel computing ``D (M, N) float32 = A (M, K) @ B (N, K).T`` in ``dtype`` (bfloat16, float16 or fp8)
    with ``tile = (tile_m, tile_n, tile_k)`` output tiles, a ring of ``stages`` shared stages, and ``ctas``
    persistent CTAs (default: one per output tile). M and N need not be multiples of the tile (the tails are
    guarded); K must be a multiple of tile_k, tile_m is 128 (the epilogue warpgroup's 128 TMEM lanes) and tile_k
    spans one 128-byte swizzle row (64 16-bit or 128 8-bit elements). ``loads``: ``"tma"`` (one producer warp
    issuing ``T.tile_copy_async``) or ``"threads"`` (a producer warpgroup of ``T.tile_copy``). ``scaled=True``
    (fp8 only) makes the block-scaled kernel of :func:`block_scaled_kernel`, with scale-factor inputs ``SFA``
    (M, K/32) and ``SFB`` (N, K/32). ``group``: the raster's rows of tiles per group (``gemm_ring.schedule``).
    ``cta_group=2`` makes the CTA-pair kernel of :func:`pair_kernel` (clusters of 2 x 1, tile_m = 256 across the
    pair, ``ctas`` counting pairs).

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
    if epilogue is not None and (scaled or epilogue not in EPILOGUES.ACTIVATIONS):
        raise ValueError(
            f"pipelined_gemm: epilogue = {epilogue!r}; the fused epilogue is one of {EPILOGUES.ACTIVATIONS} "
            "(after a bias, into bfloat16), on the dense kernel"
        )
    if scaled and not dtype.startswith("float8"):
        raise ValueError(f"pipelined_gemm: scaled=True takes fp8 operands (kind mxf8f6f4), not {dtype}")
    if output_dtype not in (None, "float32", "bfloat16") or (epilogue is not None and output_dtype == "float32"):
        raise ValueError(
            f"pipelined_gemm: output_dtype = {output_dtype!r}; D is float32 (stored from registers) or bfloat16 "
            "(cast, staged in shared memory and stored by TMA), and bfloat16 with a fused epilogue"
        )
    output_dtype = output_dtype or ("float32" if epilogue is None else "bfloat16")
    if scaled and output_dtype != "float32":
        raise ValueError("pipelined_gemm: the block-scaled kernel stores float32 D (output_dtype='float32')")
    if cta_group not in (1, 2):
        raise ValueError(f"pipelined_gemm: cta_group = {cta_group!r}; tcgen05.mma runs on one CTA (1) or a pair (2)")
    if cta_group == 2:
        if not tma or scaled or output_dtype != "float32":
            raise ValueError(
                f"pipelined_gemm: cta_group=2 is the TMA-fed dense kernel with float32 D; got loads = {loads!r}, "
                f"scaled = {scaled}, output_dtype = {output_dtype!r}, epilogue = {epilogue!r}"
            )
        return pair_kernel(M, N, K, dtype, tile, stages, ctas, group)
    check_budget(tile, stages, dtype, scaled, staging=output_dtype == "bfloat16")
    if tile_m != 128:
        raise ValueError(f"pipelined_gemm: tile_m = {tile_m}; the epilogue warpgroup drains 128 TMEM lanes")
    if tile_n % EPILOGUE_COLUMNS or tile_n % 16 or not 16 <= tile_n <= 256:
        raise ValueError(f"pipelined_gemm: tile_n = {tile_n} must be a multiple of 32 in 32..256 (MMA N, epilogue)")
    plan = RING.schedule("pipelined_gemm", M, N, K, dtype, tile, stages, ctas, group)
    tiles, ctas, k_tiles, per_cta = plan.tiles, plan.ctas, plan.k_tiles, plan.per_cta
    chunks = tile_n // EPILOGUE_COLUMNS
    a_layout = mma_shared_layout(dtype, "128B", (stages, tile_m, tile_k))
    b_layout = mma_shared_layout(dtype, "128B", (stages, tile_n, tile_k))
    acc_layout = mma_accumulator_layout(tile_m, tile_n, stages=2)
    tm, tn, tk, S, KT, C, E = tile_m, tile_n, tile_k, stages, k_tiles, ctas, EPILOGUE_COLUMNS  # short names
    # The K loops are unrolled over the ring (K tile kt = k0 * U + u) when every output tile starts at stage 0
    # (K tiles a multiple of the stages): then each unrolled step's stage and mbarriers are constants, so the
    # stage's descriptors and barrier addresses are computed once, outside the loop over ring turns (k0).
    U = stages if k_tiles % stages == 0 else 1
    if scaled:
        return block_scaled_kernel(M, N, K, dtype, tile, stages, ctas, tma, plan)

    @T.macro
    def prologue(full, empty, acc_full, acc_empty):
        for s in T.unroll(S):
            T.mbarrier_init(full[s], 2 if tma else 128)  # the two TMA copies, or the producer warpgroup's threads
            T.mbarrier_init(empty[s], 1)  # the MMA's commit
        for a in T.unroll(2):
            T.mbarrier_init(acc_full[a], 32)  # the MMA warp
            T.mbarrier_init(acc_empty[a], 128)  # the epilogue warpgroup's threads

    @T.macro
    def roles(cta, tx, A, B, a_tile, b_tile, full, empty, acc, acc_full, acc_empty, drain, outputs):
        """The producer and the MMA issuer, then ``drain(cta, tx, acc, acc_full, acc_empty, *outputs)`` for the
        epilogue warpgroup: one chain of branches on the thread index, whichever epilogue the kernel has."""
        if tma and tx // 32 == 4:  # producer: one warp; the lane elect.sync elects runs it and issues the copies
            # (once, around the whole loop: ptxas then knows the lane alone in a converged warp and issues each copy
            # with no election of its own, as CUTLASS's producer does; 34 -> 24 SASS per K tile)
            if T.elect_one():
                for i in T.serial(per_cta):
                    tile_id = T.meta_var(cta + i * C)  # this CTA's i-th output tile
                    # its first row and column, computed once per tile into scalars: written as expressions, ptxas
                    # recomputed the grouped raster's arithmetic in the K loop (5 more SASS per K tile at group 18)
                    row0: T.int32 = plan.coordinates(tile_id)[0] * tm
                    col0: T.int32 = plan.coordinates(tile_id)[1] * tn
                    if tile_id < tiles:
                        for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                            for u in T.unroll(U):
                                kt = T.meta_var(k0 * U + u)
                                it = T.meta_var(i * KT + kt)  # the CTA's K step: ring stage it % S, phase it // S % 2
                                # stage it % S was read by the MMA of K step it - S: wait for phase it // S - 1 of
                                # empty[s] (its parity written + 1). In the first ring turn (it < S) that is the phase
                                # before a fresh mbarrier's first, which a parity wait finds complete at once (PTX ISA,
                                # mbarrier.try_wait.parity: the current or the immediately preceding phase), so no
                                # guard: the loop holds no branch on it, and nvcc need not peel the first turn
                                T.mbarrier_wait(empty[it % S], (it // S + 1) % 2)
                                # each copy arrives on full[s] expecting its box's bytes; the TMA completes them
                                # (rows and columns past M, N or K are filled with zeros)
                                T.tile_copy_async(
                                    a_tile[it % S],
                                    A[row0 : row0 + tm, kt * tk : kt * tk + tk],
                                    full[it % S],
                                    scope="thread",
                                )
                                T.tile_copy_async(
                                    b_tile[it % S],
                                    B[col0 : col0 + tn, kt * tk : kt * tk + tk],
                                    full[it % S],
                                    scope="thread",
                                )
        elif not tma and tx // 128 == 1:  # producer: a warpgroup of thread copies
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)  # this CTA's i-th output tile
                row0: T.int32 = plan.coordinates(tile_id)[0] * tm  # its first row and column
                col0: T.int32 = plan.coordinates(tile_id)[1] * tn
                if tile_id < tiles:
                    for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                        for u in T.unroll(U):
                            kt = T.meta_var(k0 * U + u)
                            it = T.meta_var(i * KT + kt)  # the CTA's K step: ring stage it % S, phase it // S % 2
                            # stage it % S was read by the MMA of K step it - S (at once in the first turn, as above)
                            T.mbarrier_wait(empty[it % S], (it // S + 1) % 2)
                            T.tile_copy(a_tile[it % S], A[row0 : row0 + tm, kt * tk : kt * tk + tk], "warpgroup")
                            T.tile_copy(b_tile[it % S], B[col0 : col0 + tn, kt * tk : kt * tk + tk], "warpgroup")
                            T.mbarrier_arrive(full[it % S])
        elif tx // 32 == 8:  # MMA issue: warp 8, its elected lane issues (no per-MMA election loop)
            for i in T.serial(per_cta):
                if cta + i * C < tiles:
                    if i >= 2:  # accumulator stage i % 2 held tile i - 2 until the epilogue drained it
                        T.mbarrier_wait(acc_empty[i % 2], (i // 2 + 1) % 2)
                    for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                        for u in T.unroll(U):
                            kt = T.meta_var(k0 * U + u)
                            it = T.meta_var(i * KT + kt)
                            T.mbarrier_wait(full[it % S], it // S % 2)
                            T.tile_mma(
                                acc[i % 2],
                                a_tile[it % S],
                                b_tile[it % S],
                                kt > 0,
                                barrier=empty[it % S],
                                scope="warp",
                            )
                    last = T.meta_var(i * KT + KT - 1)  # MMAs into one accumulator complete in order
                    T.mbarrier_wait(empty[last % S], last // S % 2)
                    T.mbarrier_arrive(acc_full[i % 2])
        elif tx // 128 == 0:  # epilogue
            drain(cta, tx, acc, acc_full, acc_empty, *outputs)

    if epilogue is None and output_dtype == "float32":

        @T.macro
        def store(cta, tx, acc, acc_full, acc_empty, D, out):
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)
                row0: T.int32 = plan.coordinates(tile_id)[0] * tm  # its first row and column
                col0: T.int32 = plan.coordinates(tile_id)[1] * tn
                if tile_id < tiles:
                    T.mbarrier_wait(acc_full[i % 2], i // 2 % 2)
                    for c in T.unroll(chunks):  # a TMEM region starts at a constant column
                        T.tile_copy(out, acc[i % 2, 0:tm, c * E : c * E + E], "warpgroup")
                        T.tile_copy(D[row0 : row0 + tm, col0 + c * E : col0 + c * E + E], out, "warpgroup")
                    T.mbarrier_arrive(acc_empty[i % 2])

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
            prologue(full, empty, acc_full, acc_empty)
            roles(cta, tx, A, B, a_tile, b_tile, full, empty, acc, acc_full, acc_empty, store, (D, out))

        return unrolled(gemm)

    # The TMA-store epilogue (bfloat16 D; with ``epilogue=`` biased and activated first): each 32-column chunk drained
    # from TMEM and cast to bfloat16 in registers, staged through one of two 64B-swizzled shared tiles and stored by
    # TMA, one 32-row box per warp (the warp that wrote those rows; the TMA clips the box at M and N). Chunk c uses
    # staging tile c % 2, so the store of one chunk runs while the next is drained, cast and staged; the warp waits
    # for its stores (T.tma_store_wait: every earlier store has read its staging tile) after every second chunk,
    # before a tile is written again, and after the last.
    out_dtype = "bfloat16"
    staging_layout = mma_shared_layout(out_dtype, "64B", (STAGING_TILES, tm, E))
    box_layout = mma_shared_layout(out_dtype, "64B", (STAGING_TILES, tm // 32, 32, E))

    @T.macro
    def store_tma(cta, tx, acc, acc_full, acc_empty, D, bias, out, result, staging, boxes):
        warp = T.meta_var(tx // 32)
        for i in T.serial(per_cta):
            tile_id = T.meta_var(cta + i * C)
            row0: T.int32 = plan.coordinates(tile_id)[0] * tm  # its first row and column
            col0: T.int32 = plan.coordinates(tile_id)[1] * tn
            if tile_id < tiles:
                T.mbarrier_wait(acc_full[i % 2], i // 2 % 2)
                for c in T.unroll(chunks):  # a TMEM region starts at a constant column
                    T.tile_copy(out, acc[i % 2, 0:tm, c * E : c * E + E], "warpgroup")
                    column = T.meta_var(col0 + c * E)
                    if epilogue is None:
                        T.tile_copy(result, out, "warpgroup")  # the casting copy: float32 -> bfloat16
                    else:
                        for r in T.tile_parallel(tm, scope="warpgroup"):
                            for j in T.tile_parallel(E):
                                biased = T.meta_var(
                                    out[r, j] + T.if_then_else(column + j < N, bias[column + j], T.float32(0))
                                )
                                result[r, j] = T.Cast(out_dtype, EPILOGUES.activate(biased, epilogue))
                    T.tile_copy(staging[c % STAGING_TILES], result, "warpgroup")
                    rows = T.meta_var(slice(row0 + warp * 32, row0 + warp * 32 + 32))
                    box = T.meta_var(boxes[c % STAGING_TILES, warp, 0:32, 0:E])
                    T.tile_copy_async(D[rows, column : column + E], box, scope="warp")
                    if c % STAGING_TILES == STAGING_TILES - 1 or c == chunks - 1:
                        T.tma_store_wait("warp")  # the staging tiles are written again by the next chunks
                T.mbarrier_arrive(acc_empty[i % 2])

    if epilogue is not None:

        @T.prim_func
        def fused(
            A: T.Buffer((M, K), dtype),
            B: T.Buffer((N, K), dtype),
            bias: T.Buffer((N,), "float32"),
            D: T.Buffer((M, N), out_dtype),
        ):
            T.device_entry()
            cta = T.cta_id([ctas])
            tx = T.thread_id([THREADS])
            a_tile = T.alloc_shared((S, tm, tk), dtype, layout=a_layout, align=1024)
            b_tile = T.alloc_shared((S, tn, tk), dtype, layout=b_layout, align=1024)
            staging = T.alloc_shared((STAGING_TILES, tm, E), out_dtype, layout=staging_layout, align=512)
            boxes = T.decl_buffer(
                (STAGING_TILES, tm // 32, 32, E), out_dtype, data=staging.data, layout=box_layout, align=512
            )
            full = T.alloc_shared((S,), "uint64")
            empty = T.alloc_shared((S,), "uint64")
            acc_full = T.alloc_shared((2,), "uint64")
            acc_empty = T.alloc_shared((2,), "uint64")
            acc = T.alloc_tmem((2, tm, tn), "float32", layout=acc_layout)
            out = T.alloc_local((tm, E), "float32")  # a chunk as tcgen05.ld leaves it (inferred)
            result = T.alloc_local((tm, E), out_dtype)  # its placement (inferred)
            prologue(full, empty, acc_full, acc_empty)
            outputs = T.meta_var((D, bias, out, result, staging, boxes))
            roles(cta, tx, A, B, a_tile, b_tile, full, empty, acc, acc_full, acc_empty, store_tma, outputs)

        return unrolled(fused)

    @T.prim_func
    def cast(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), dtype), D: T.Buffer((M, N), out_dtype)):
        T.device_entry()
        cta = T.cta_id([ctas])
        tx = T.thread_id([THREADS])
        a_tile = T.alloc_shared((S, tm, tk), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((S, tn, tk), dtype, layout=b_layout, align=1024)
        staging = T.alloc_shared((STAGING_TILES, tm, E), out_dtype, layout=staging_layout, align=512)
        boxes = T.decl_buffer(
            (STAGING_TILES, tm // 32, 32, E), out_dtype, data=staging.data, layout=box_layout, align=512
        )
        full = T.alloc_shared((S,), "uint64")
        empty = T.alloc_shared((S,), "uint64")
        acc_full = T.alloc_shared((2,), "uint64")
        acc_empty = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((2, tm, tn), "float32", layout=acc_layout)
        out = T.alloc_local((tm, E), "float32")  # a chunk as tcgen05.ld leaves it (inferred)
        result = T.alloc_local((tm, E), out_dtype)  # its placement (inferred)
        prologue(full, empty, acc_full, acc_empty)
        outputs = T.meta_var((D, None, out, result, staging, boxes))
        roles(cta, tx, A, B, a_tile, b_tile, full, empty, acc, acc_full, acc_empty, store_tma, outputs)

    return unrolled(cast)


#: Rows of the pair's tile (``tcgen05.mma.cta_group::2`` with M = 256) and of each CTA's half of it.
PAIR_M, HALF_M = 256, 128


def pair_kernel(M: int, N: int, K: int, dtype: str, tile, stages: int, ctas: int | None, group: int | None):
    """The CTA-pair form of :func:`pipelined_gemm` (``cta_group=2``; its other arguments checked there): the kernel
    is launched in clusters of 2 x 1, and pair ``p`` (CTAs ``2p``, ``2p + 1``, cluster ranks 0 and 1) computes
    ``tile = (256, tile_n, tile_k)`` output tiles with ``tcgen05.mma.cta_group::2`` issued by the even CTA's MMA
    warp. ``ctas`` counts pairs (persistent, default one per output tile; the grid has ``2 * ctas`` CTAs), and pair
    ``p`` takes tiles ``p, p + ctas, ...`` in the raster of ``gemm_ring.TileSchedule``.

    The halves (``examples/pair_gemm.py``, ``hw.tcgen05_mma.PairMma``): CTA ``r`` of the pair holds rows
    ``128 r ..`` of the tile's A and rows ``tile_n / 2 * r ..`` of its B in its ring (each stage's tiles at the same
    offsets in both CTAs), and its 128 rows of D in its TMEM (two accumulator stages of ``tile_n`` columns). The
    roles, per CTA:

    * producer (warp 4, one elected lane): as in the 1-CTA kernel, it waits for its ``empty[s]`` and loads its own
      halves by TMA, both copies completing on its own ``full[s]``. ``empty[s]`` is completed by the pair's MMA:
      the even CTA's commit arrives on ``empty[s]`` in both CTAs (``.multicast::cluster``, mask ``0b11``), so
      neither CTA refills a stage the pair's MMA may still read.
    * MMA warp (warp 8), even CTA: waits for its ``full[s]`` and issues the pair's MMA, committing to ``empty[s]``
      (both CTAs). Its ``full[s]`` expects three arrivals: its own two TMA copies and one from the odd CTA saying
      that the odd CTA's stage is full too. The odd CTA's TMA completes on the odd CTA's own ``full[s]``:
      CUTLASS instead hands the odd CTA's TMA the leader's mbarrier (``.cta_group::2`` on the bulk tensor copy,
      the mbarrier address with the peer bit cleared), but the project's ``T.tile_copy_async`` signals the
      mbarrier of the CTA it writes (or, multicast, the same offset in each written CTA) and no other. So
    * MMA warp, odd CTA (the relay): its elected lane waits for its own ``full[s]`` (its TMA bytes landed) and
      arrives on the even CTA's ``full[s]`` (``T.mbarrier_arrive_peer``: release at cluster scope, after the proxy
      fence, so the even CTA's MMA, which acquired that phase, reads the odd CTA's stage after the TMA wrote it).
      The cost is one wait and one remote arrive per K tile in a warp that is otherwise idle, and a little
      latency on the stage's hand-over; the producer loops of both CTAs are the 1-CTA loop unchanged. After a
      tile's last K tile it waits for that K tile's commit on its own ``empty[s]`` and arrives on its own
      ``acc_full[a]``, as the even CTA's MMA warp does on its own.
    * epilogue (warpgroup 0): waits for its ``acc_full[a]``, drains its 128 rows of D from its TMEM and arrives on
      its own ``acc_empty[a]``. The pair's MMA overwrites accumulator stage ``a`` only after both CTAs read it: the
      even CTA's ``acc_empty[a]`` expects its epilogue's 128 arrivals and one from the odd CTA's relay, which
      waits for its own ``acc_empty[a]`` before its next tile and arrives on the even CTA's (a release chain:
      ``tcgen05.wait::ld``, ``fence::before_thread_sync``, arrive; wait, peer arrive at cluster scope; the MMA
      warp's wait and ``fence::after_thread_sync``). One remote arrive per tile instead of the odd epilogue's 128;
      and the simulator's tcgen05 ordering model, kept per CTA (it counts the pair's MMAs in the odd CTA under the
      issuing warp's number, ``sim/tcgen05_pair.py``), sees the odd CTA's loads ordered before them only through a
      wait in the odd CTA's warp 8 (a direct peer arrive by the epilogue publishes memory clocks, not the tcgen05
      order, and is reported as a TMEM race).

    A cluster barrier after the mbarriers' initialisation orders it before any peer signal; the one the pair's
    TMEM deallocation begins with (``cta_group::2``) keeps either CTA from exiting while the other may still
    signal it. Refused: tile_m other than 256, tile_n not a multiple of 32 in 32..256, and what
    :func:`pipelined_gemm` refuses for the pair.

    Example:
        >>> kernel = pipelined_gemm(256, 256, 256, tile=(256, 256, 64), cta_group=2)
        >>> [p.name for p in kernel.params]
        ['A', 'B', 'D']
        >>> pipelined_gemm(256, 256, 256, tile=(128, 256, 64), cta_group=2)
        Traceback (most recent call last):
        ...
        ValueError: pipelined_gemm: cta_group=2 takes tile_m = 256 (128 rows in each CTA of the pair), not 128
    """
    tile_m, tile_n, tile_k = tile
    if tile_m != PAIR_M:
        raise ValueError(
            f"pipelined_gemm: cta_group=2 takes tile_m = {PAIR_M} ({HALF_M} rows in each CTA of the pair), not {tile_m}"
        )
    if tile_n % EPILOGUE_COLUMNS or not EPILOGUE_COLUMNS <= tile_n <= 256:
        raise ValueError(
            f"pipelined_gemm: cta_group=2 tile_n = {tile_n} must be a multiple of 32 in 32..256 (MMA N, epilogue)"
        )
    half_n = tile_n // 2
    # each CTA's ring holds its halves (128 x tile_k of A, tile_n / 2 x tile_k of B per stage); its TMEM the two
    # accumulator stages of tile_n columns (2 * 256 at most: they fit the 512)
    check_budget((HALF_M, half_n, tile_k), stages, dtype)
    plan = RING.schedule("pipelined_gemm", M, N, K, dtype, tile, stages, ctas, group)
    tiles, per_cta = plan.tiles, plan.per_cta
    a_layout = mma_shared_layout(dtype, "128B", (stages, HALF_M, tile_k))
    b_layout = mma_shared_layout(dtype, "128B", (stages, half_n, tile_k))
    acc_layout = mma_accumulator_layout(HALF_M, tile_n, stages=2)
    hm, hn, tn, tk, S, KT, C, E = HALF_M, half_n, tile_n, tile_k, stages, plan.k_tiles, plan.ctas, EPILOGUE_COLUMNS
    U = stages if KT % stages == 0 else 1  # unrolled over the ring, as in pipelined_gemm
    chunks = tile_n // E

    @T.prim_func
    def gemm(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), dtype), D: T.Buffer((M, N), "float32")):
        T.device_entry()
        cta = T.cta_id([2 * C])
        cx = T.cta_id_in_cluster([2])
        tx = T.thread_id([THREADS])
        a_tile = T.alloc_shared((S, hm, tk), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((S, hn, tk), dtype, layout=b_layout, align=1024)
        full = T.alloc_shared((S,), "uint64")
        empty = T.alloc_shared((S,), "uint64")
        acc_full = T.alloc_shared((2,), "uint64")
        acc_empty = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((2, hm, tn), "float32", layout=acc_layout)
        out = T.alloc_local((hm, E), "float32")
        pair = T.meta_var(cta // 2)
        for s in T.unroll(S):
            # the CTA's two TMA copies; the even CTA's also the odd CTA's relay (its stage is full too)
            T.mbarrier_init(full[s], 3 - cx)
            T.mbarrier_init(empty[s], 1)  # the pair MMA's commit, multicast to both CTAs
        for a in T.unroll(2):
            T.mbarrier_init(acc_full[a], 32 - 31 * cx)  # the even CTA's MMA warp; the odd CTA's relay lane
            T.mbarrier_init(acc_empty[a], 128 + 1 - cx)  # the CTA's epilogue warpgroup; the even's also the relay
        T.cluster_sync()  # both CTAs' mbarriers initialised before the peer signals them
        if tx // 32 == 4:  # producer: the elected lane of warp 4 loads this CTA's halves
            if T.elect_one():
                for i in T.serial(per_cta):
                    tile_id = T.meta_var(pair + i * C)
                    row0: T.int32 = plan.coordinates(tile_id)[0] * PAIR_M + cx * hm  # this CTA's rows of A
                    col0: T.int32 = plan.coordinates(tile_id)[1] * tn + cx * hn  # and of B
                    if tile_id < tiles:
                        for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                            for u in T.unroll(U):
                                kt = T.meta_var(k0 * U + u)
                                it = T.meta_var(i * KT + kt)
                                # stage it % S was read by the pair's MMA of K step it - S (at once in the first turn)
                                T.mbarrier_wait(empty[it % S], (it // S + 1) % 2)
                                T.tile_copy_async(
                                    a_tile[it % S],
                                    A[row0 : row0 + hm, kt * tk : kt * tk + tk],
                                    full[it % S],
                                    scope="thread",
                                )
                                T.tile_copy_async(
                                    b_tile[it % S],
                                    B[col0 : col0 + hn, kt * tk : kt * tk + tk],
                                    full[it % S],
                                    scope="thread",
                                )
        elif tx // 32 == 8:
            if cx == 0:  # the pair's MMA issue: warp 8 of the even CTA
                for i in T.serial(per_cta):
                    if pair + i * C < tiles:
                        if i >= 2:  # accumulator stage i % 2 held tile i - 2 until both epilogues drained it
                            T.mbarrier_wait(acc_empty[i % 2], (i // 2 + 1) % 2)
                        for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                            for u in T.unroll(U):
                                kt = T.meta_var(k0 * U + u)
                                it = T.meta_var(i * KT + kt)
                                T.mbarrier_wait(full[it % S], it // S % 2)  # both CTAs' stage it % S is full
                                T.tile_mma(
                                    acc[i % 2],
                                    a_tile[it % S],
                                    b_tile[it % S],
                                    kt > 0,
                                    barrier=empty[it % S],
                                    scope="warp",
                                    cta_group=2,
                                )
                        last = T.meta_var(i * KT + KT - 1)  # MMAs into one accumulator complete in order
                        T.mbarrier_wait(empty[last % S], last // S % 2)
                        T.mbarrier_arrive(acc_full[i % 2])
            elif T.elect_one():  # the odd CTA's relay: its full stages, told to the even CTA's MMA warp
                for i in T.serial(per_cta):
                    if pair + i * C < tiles:
                        if i >= 2:  # this CTA's epilogue drained accumulator stage i % 2: tell the MMA warp
                            T.mbarrier_wait(acc_empty[i % 2], (i // 2 + 1) % 2)
                            T.mbarrier_arrive_peer(acc_empty[i % 2], 0)
                        for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                            for u in T.unroll(U):
                                kt = T.meta_var(k0 * U + u)
                                it = T.meta_var(i * KT + kt)
                                T.mbarrier_wait(full[it % S], it // S % 2)
                                T.mbarrier_arrive_peer(full[it % S], 0)
                        last = T.meta_var(i * KT + KT - 1)  # the commit of the tile's last MMA, here too
                        T.mbarrier_wait(empty[last % S], last // S % 2)
                        T.mbarrier_arrive(acc_full[i % 2])
        elif tx // 128 == 0:  # epilogue: this CTA's 128 rows of the pair's tile, from its TMEM
            for i in T.serial(per_cta):
                tile_id = T.meta_var(pair + i * C)
                row0: T.int32 = plan.coordinates(tile_id)[0] * PAIR_M + cx * hm
                col0: T.int32 = plan.coordinates(tile_id)[1] * tn
                if tile_id < tiles:
                    T.mbarrier_wait(acc_full[i % 2], i // 2 % 2)
                    for c in T.unroll(chunks):
                        T.tile_copy(out, acc[i % 2, 0:hm, c * E : c * E + E], "warpgroup")
                        T.tile_copy(D[row0 : row0 + hm, col0 + c * E : col0 + c * E + E], out, "warpgroup")
                    T.mbarrier_arrive(acc_empty[i % 2])  # (the odd CTA's relay tells the even CTA's MMA warp)

    return unrolled(gemm)


def block_scaled_kernel(M: int, N: int, K: int, dtype: str, tile, stages: int, ctas: int, tma: bool, plan=None):
    """The block-scaled variant of :func:`pipelined_gemm` (its arguments checked there): ``D = (A * 2^(SFA-127))
    @ (B * 2^(SFB-127)).T`` with one ue8m0 scale per row of A (of B) per 32 K elements, ``tcgen05.mma
    .kind::mxf8f6f4.block_scale``. The roles and the ring are :func:`pipelined_gemm`'s, plus:

    * each ring stage also holds the K tile's scale factors of A's 128 rows and of B's ``tile_n`` rows (rounded up
      to 128) in shared memory, in the image ``tcgen05.cp .32x128b.warpx4`` copies
      (``mma_scale_factor_shared_layout``); the producer copies them with thread copies (its warp, or its
      warpgroup) and arrives on ``full[s]`` (so ``full[s]`` counts the two TMA copies and 32 arrivals);
    * TMEM holds ``stages`` stages of scale factors after the two accumulator stages (``mma_scale_factor_layout``,
      ``within=acc``): the MMA thread copies stage ``s`` shared -> TMEM with ``tcgen05.cp`` after ``full[s]``, then
      issues the MMA, which reads them (cp -> mma from one thread is a pipelined pair). The MMA of ``stages`` K
      steps ago read those columns, and mma -> cp is not a pipelined pair; but it completed before the copy is
      issued: its commit completed ``empty[s]``, which the producer waited for before arriving on ``full[s]``,
      which the MMA thread waited for (then ``tcgen05.fence::after_thread_sync``) before the copy.

    Example:
        >>> kernel = pipelined_gemm(256, 224, 256, "float8_e4m3fn", (128, 224, 128), 4, scaled=True)
        >>> [p.name for p in kernel.params]
        ['A', 'B', 'SFA', 'SFB', 'D']
    """
    tile_m, tile_n, tile_k = tile
    plan = plan or RING.schedule("pipelined_gemm", M, N, K, dtype, tile, stages, ctas)  # its raster order
    tiles, per_cta = plan.tiles, plan.per_cta
    k_tiles, k_blocks = K // tile_k, tile_k // SCALE_BLOCK
    sf_a_rows, sf_b_rows = scale_factor_rows(tile_m), scale_factor_rows(tile_n)
    a_layout = mma_shared_layout(dtype, "128B", (stages, tile_m, tile_k))
    b_layout = mma_shared_layout(dtype, "128B", (stages, tile_n, tile_k))
    acc_layout = mma_accumulator_layout(tile_m, tile_n, stages=2)
    # scale factors in TMEM after the accumulators' 2 * tile_n columns: A's stages, then B's
    sfa_column, sfb_column = 2 * tile_n, 2 * tile_n + stages * sf_a_rows // 32 * -(-k_blocks // 4)
    sfa_layout = mma_scale_factor_layout(sf_a_rows, k_blocks, column=sfa_column, stages=stages)
    sfb_layout = mma_scale_factor_layout(sf_b_rows, k_blocks, column=sfb_column, stages=stages)

    def staged_image(rows):  # ``stages`` copies of the tcgen05.cp image, one after the other
        image = mma_scale_factor_shared_layout(rows, k_blocks)
        return TileLayout.from_iters([Iter(stages, rows * k_blocks), *image.shard])

    tm, tn, tk, S, KT, C, E, KB = tile_m, tile_n, tile_k, stages, k_tiles, ctas, EPILOGUE_COLUMNS, k_blocks
    SA, SB = sf_a_rows, sf_b_rows
    U = stages if k_tiles % stages == 0 else 1  # unrolled over the ring, as in pipelined_gemm
    chunks = tile_n // EPILOGUE_COLUMNS
    UE8M0 = SCALE_DTYPE

    @T.prim_func
    def gemm(
        A: T.Buffer((M, K), dtype),
        B: T.Buffer((N, K), dtype),
        SFA: T.Buffer((M, K // SCALE_BLOCK), UE8M0),
        SFB: T.Buffer((N, K // SCALE_BLOCK), UE8M0),
        D: T.Buffer((M, N), "float32"),
    ):
        T.device_entry()
        cta = T.cta_id([ctas])
        tx = T.thread_id([THREADS])
        a_tile = T.alloc_shared((S, tm, tk), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((S, tn, tk), dtype, layout=b_layout, align=1024)
        sfa_tile = T.alloc_shared((S, SA, KB), UE8M0, layout=staged_image(SA))
        sfb_tile = T.alloc_shared((S, SB, KB), UE8M0, layout=staged_image(SB))
        full = T.alloc_shared((S,), "uint64")
        empty = T.alloc_shared((S,), "uint64")
        acc_full = T.alloc_shared((2,), "uint64")
        acc_empty = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((2, tm, tn), "float32", layout=acc_layout)
        sfa = T.alloc_tmem((S, SA, KB), UE8M0, layout=sfa_layout, within=acc)
        sfb = T.alloc_tmem((S, SB, KB), UE8M0, layout=sfb_layout, within=acc)
        out = T.alloc_local((tm, E), "float32")
        for s in T.unroll(S):
            # the two TMA copies and the producer warp's 32 arrivals, or the producer warpgroup's 128
            T.mbarrier_init(full[s], 2 + 32 if tma else 128)
            T.mbarrier_init(empty[s], 1)  # the MMA's commit
        for a in T.unroll(2):
            T.mbarrier_init(acc_full[a], 1)  # the MMA-issuing thread
            T.mbarrier_init(acc_empty[a], 128)  # the epilogue warpgroup's threads
        if tma and tx // 32 == 4:  # producer: one warp; its elected lane issues the TMA copies
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)
                row0 = T.meta_var(plan.coordinates(tile_id)[0] * tm)
                col0 = T.meta_var(plan.coordinates(tile_id)[1] * tn)
                if tile_id < tiles:
                    for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                        for u in T.unroll(U):
                            kt = T.meta_var(k0 * U + u)
                            it = T.meta_var(i * KT + kt)
                            T.mbarrier_wait(empty[it % S], (it // S + 1) % 2)  # at once in the first turn
                            T.tile_copy_async(
                                a_tile[it % S], A[row0 : row0 + tm, kt * tk : kt * tk + tk], full[it % S], scope="warp"
                            )
                            T.tile_copy_async(
                                b_tile[it % S], B[col0 : col0 + tn, kt * tk : kt * tk + tk], full[it % S], scope="warp"
                            )
                            # the scale factors: thread copies of the warp (rows past M or N are left out)
                            T.tile_copy(sfa_tile[it % S], SFA[row0 : row0 + SA, kt * KB : kt * KB + KB], "warp")
                            T.tile_copy(
                                sfb_tile[it % S, 0:tn, 0:KB], SFB[col0 : col0 + tn, kt * KB : kt * KB + KB], "warp"
                            )
                            T.mbarrier_arrive(full[it % S])
        elif not tma and tx // 128 == 1:  # producer: a warpgroup of thread copies
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)
                row0 = T.meta_var(plan.coordinates(tile_id)[0] * tm)
                col0 = T.meta_var(plan.coordinates(tile_id)[1] * tn)
                if tile_id < tiles:
                    for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                        for u in T.unroll(U):
                            kt = T.meta_var(k0 * U + u)
                            it = T.meta_var(i * KT + kt)
                            T.mbarrier_wait(empty[it % S], (it // S + 1) % 2)  # at once in the first turn
                            T.tile_copy(a_tile[it % S], A[row0 : row0 + tm, kt * tk : kt * tk + tk], "warpgroup")
                            T.tile_copy(b_tile[it % S], B[col0 : col0 + tn, kt * tk : kt * tk + tk], "warpgroup")
                            T.tile_copy(sfa_tile[it % S], SFA[row0 : row0 + SA, kt * KB : kt * KB + KB], "warpgroup")
                            T.tile_copy(
                                sfb_tile[it % S, 0:tn, 0:KB], SFB[col0 : col0 + tn, kt * KB : kt * KB + KB], "warpgroup"
                            )
                            T.mbarrier_arrive(full[it % S])
        elif tx == 256:  # MMA issue: one thread (lane 0 of warp 8)
            for i in T.serial(per_cta):
                if cta + i * C < tiles:
                    if i >= 2:
                        T.mbarrier_wait(acc_empty[i % 2], (i // 2 + 1) % 2)
                    for k0 in T.serial(KT // U, annotations=ONE_RING_TURN):
                        for u in T.unroll(U):
                            kt = T.meta_var(k0 * U + u)
                            it = T.meta_var(i * KT + kt)
                            # full[s] also orders the copies below after the MMA of K step it - S, which read
                            # these scale-factor columns: the producer waited for its commit before arriving
                            T.mbarrier_wait(full[it % S], it // S % 2)
                            T.tile_copy(sfa[it % S], sfa_tile[it % S], "thread")  # tcgen05.cp, asynchronous
                            T.tile_copy(sfb[it % S], sfb_tile[it % S], "thread")
                            T.tile_mma(
                                acc[i % 2],
                                a_tile[it % S],
                                b_tile[it % S],
                                kt > 0,
                                barrier=empty[it % S],
                                scale_a=sfa[it % S, 0:tm, 0:KB],
                                scale_b=sfb[it % S, 0:tn, 0:KB],
                                scope="thread",
                            )
                    last = T.meta_var(i * KT + KT - 1)
                    T.mbarrier_wait(empty[last % S], last // S % 2)
                    T.mbarrier_arrive(acc_full[i % 2])
        elif tx // 128 == 0:  # epilogue
            for i in T.serial(per_cta):
                tile_id = T.meta_var(cta + i * C)
                row0 = T.meta_var(plan.coordinates(tile_id)[0] * tm)
                col0 = T.meta_var(plan.coordinates(tile_id)[1] * tn)
                if tile_id < tiles:
                    T.mbarrier_wait(acc_full[i % 2], i // 2 % 2)
                    for c in T.unroll(chunks):
                        T.tile_copy(out, acc[i % 2, 0:tm, c * E : c * E + E], "warpgroup")
                        T.tile_copy(D[row0 : row0 + tm, col0 + c * E : col0 + c * E + E], out, "warpgroup")
                    T.mbarrier_arrive(acc_empty[i % 2])

    return unrolled(gemm)


def block_scaled_reference():
    """``D = (A * SFA) @ (B * SFB).T`` in float64, each ue8m0 scale applied to its 32 K elements; the float32
    accumulation of differently scaled products is compared within float32 tolerance."""

    def reference(a, b, sfa, sfb):
        scale_a = np.repeat(sfa.astype(np.float64), SCALE_BLOCK, axis=-1)
        scale_b = np.repeat(sfb.astype(np.float64), SCALE_BLOCK, axis=-1)
        return (a.astype(np.float64) * scale_a) @ (b.astype(np.float64) * scale_b).T

    return Expected(reference, inputs=4, rtol=2.0**-16, atol=1.0)


def cast_reference() -> Expected:
    """``bf16(A @ B.T)``: the float64 product (exact: integer sums below 2^24, as the float32 accumulator holds them)
    rounded to bfloat16 as the kernel's ``cvt.rn.bf16`` rounds, to nearest even; compared exactly."""

    def reference(a, b):
        product = a.astype(np.float64) @ b.astype(np.float64).T
        return product.astype(np.float32).astype(EPILOGUES.ml_dtypes.bfloat16)

    return Expected(reference, inputs=2, rtol=0.0, atol=0.0)


def fused_reference(activation: str) -> Expected:
    """``bf16(act(A @ B.T + bias))`` in float64 then rounded as the kernel rounds: exact for ReLU (integer sums
    below 2^24), within a bfloat16 rounding plus float32's ``exp``/``tanh`` error otherwise."""

    def reference(a, b, bias):
        acc = a.astype(np.float64) @ b.astype(np.float64).T + bias.astype(np.float64)
        return EPILOGUES.activate_reference(acc, activation).astype(np.float32).astype(EPILOGUES.ml_dtypes.bfloat16)

    exact = activation == "relu"
    return Expected(reference, inputs=3, rtol=0.0 if exact else 2.0**-7, atol=0.0 if exact else 2.0**-7)


#: Simulated by ``tests/tools/test_examples.py``: one CTA per output tile, and persistent (``ctas=1``: every ring stage
#: refilled, both accumulator stages turned over) with either producer.
KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("pipelined_gemm_256_tma", gemm_reference(), pipelined_gemm, 256, 256, 256)
KERNELS.add("pipelined_gemm_tail_tma", gemm_reference(), pipelined_gemm, 200, 300, 128)
KERNELS.add("pipelined_gemm_256_tma_persistent", gemm_reference(), pipelined_gemm, 256, 256, 256, ctas=1)
KERNELS.add("pipelined_gemm_tail_tma_persistent", gemm_reference(), pipelined_gemm, 200, 300, 128, ctas=1)
KERNELS.add("pipelined_gemm_256", gemm_reference(), pipelined_gemm, 256, 256, 256, ctas=1, loads="threads")
KERNELS.add("pipelined_gemm_tail", gemm_reference(), pipelined_gemm, 200, 300, 128, ctas=1, loads="threads")
# a grouped raster with a short last group: 3 x 2 tiles in groups of 2 rows on 2 persistent CTAs (CTA 0 takes tiles
# (0, 0), (0, 1), (2, 0); CTA 1 takes (1, 0), (1, 1), (2, 1))
KERNELS.add("pipelined_gemm_grouped_tail", gemm_reference(), pipelined_gemm, 300, 300, 128, ctas=2, group=2)
# bfloat16 D through the TMA-store epilogue: at a tail shape (N = 296, as TMA needs rows of a multiple of 16 bytes),
# and persistent at 256^3 (both accumulator stages, eight chunks through the two staging tiles per output tile)
KERNELS.add("pipelined_gemm_bf16_out_tail", cast_reference(), pipelined_gemm, 200, 296, 128, output_dtype="bfloat16")
KERNELS.add(
    "pipelined_gemm_bf16_out_256_persistent",
    cast_reference(),
    pipelined_gemm,
    256,
    256,
    256,
    ctas=1,
    output_dtype="bfloat16",
)
# the fused epilogue at a tail shape (N = 296: the bf16 rows of D are 592 bytes, a multiple of 16 as TMA needs)
KERNELS.add("pipelined_gemm_fused_relu_tail", fused_reference("relu"), pipelined_gemm, 200, 296, 128, epilogue="relu")
KERNELS.add("pipelined_gemm_fused_gelu", fused_reference("gelu"), pipelined_gemm, 256, 256, 128, epilogue="gelu")
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
# block-scaled fp8: two CTAs with tile_n = 224 (the widest whose two accumulator stages and four stages of scale
# factors fit 512 TMEM columns), and a persistent tail grid refilling both stages of its ring
KERNELS.add(
    "pipelined_block_scaled_gemm_tma",
    block_scaled_reference(),
    pipelined_gemm,
    256,
    224,
    256,
    "float8_e4m3fn",
    (128, 224, 128),
    scaled=True,
)
KERNELS.add(
    "pipelined_block_scaled_gemm_tail",
    block_scaled_reference(),
    pipelined_gemm,
    200,
    300,
    256,
    "float8_e4m3fn",
    (128, 96, 128),
    2,
    1,
    scaled=True,
)
# the CTA pair (cta_group=2, clusters of 2 x 1, 256-row tiles): bf16 with two stages (every stage refilled), fp8,
# and a persistent tail on one pair (2 x 2 tiles of 256 x 160: both accumulator stages turned over, the third tile
# after both CTAs' epilogues released the first; the odd CTA's rows of A past M and the second column's rows of B
# past N zero-filled by the TMA -- the odd CTA's B box of that column lies wholly past N -- and D guarded off)
KERNELS.add(
    "pipelined_gemm_pair_256",
    gemm_reference(),
    pipelined_gemm,
    256,
    256,
    256,
    tile=(256, 256, 64),
    stages=2,
    cta_group=2,
)
KERNELS.add(
    "pipelined_gemm_pair_fp8",
    gemm_reference(),
    pipelined_gemm,
    256,
    256,
    512,
    "float8_e4m3fn",
    (256, 256, 128),
    cta_group=2,
)
KERNELS.add(
    "pipelined_gemm_pair_tail_persistent",
    gemm_reference(),
    pipelined_gemm,
    300,
    296,
    128,
    tile=(256, 160, 64),
    ctas=1,
    cta_group=2,
)

#: The issue's production sizes, built and assembled by the main job (``tools.kernel_report.load_full_size``) but
#: not simulated: 4096^3 bf16 (128 x 256 x 64 tiles, 4 stages; plain, bfloat16 D by TMA stores, and with the fused
#: GELU epilogue) and
#: block-scaled fp8 (128 x 224 x 128), persistent over the 148 SMs of a B200.
FULL_SIZE = {
    "pipelined_gemm_4096_bf16": lambda: pipelined_gemm(4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, ctas=148),
    "pipelined_gemm_4096_bf16_out": lambda: pipelined_gemm(
        4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, ctas=148, output_dtype="bfloat16"
    ),
    "pipelined_gemm_4096_bf16_fused_gelu": lambda: pipelined_gemm(
        4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, ctas=148, epilogue="gelu"
    ),
    "pipelined_gemm_4096_bf16_pair": lambda: pipelined_gemm(
        4096, 4096, 4096, "bfloat16", (256, 256, 64), 4, ctas=74, cta_group=2
    ),
    "pipelined_block_scaled_gemm_4096_fp8": lambda: pipelined_gemm(
        4096, 4096, 4096, "float8_e4m3fn", (128, 224, 128), 4, ctas=148, scaled=True
    ),
}
