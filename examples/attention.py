"""Attention forward on Blackwell (sm_100a), FlashAttention-4 style: ``O = softmax(scale * Q @ K.T + mask) @ V`` and
the log-sum-exp, with S and P in tensor memory. The problem, the inputs, the float32 reference and its tolerance are
``examples/attention_common.py``'s (:class:`AttentionProblem`).

A CTA takes ``q_tiles`` (two by default) Q tiles of 128 rows of one (batch, query head) and walks the K/V tiles
of its K/V head (``h // group``: grouped-query attention) with five roles that hand work to each other through
mbarriers:

* **producer** (warp ``4 q_tiles + 4``): its elected lane loads each Q tile once (``q_full[t]``), then K tile ``j``
  and V tile ``j`` into ring stage ``j % stages`` (``k_full[s]``, ``v_full[s]``) once ``kv_empty[s]`` says the
  MMAs of K/V tile ``j - stages`` are done. K is K-major (``mma_shared_layout(..., (stages, block_n, d))``); V is
  loaded transposed into the MN-major image of the ``(d, block_n)`` B operand of ``O += P V``. The TMA fills rows
  past ``seq_q`` / ``seq_kv`` with zeros.
* **MMA** (warp ``4 q_tiles + 5``, its elected lane issues): per K/V tile ``j`` and Q tile ``t``: ``O[t] += P[t]
  V[j-1]`` (P, the A operand, read straight from tensor memory) then ``S[t] = Q[t] K[j].T`` into the same TMEM
  columns, each committed to an mbarrier (``o_done[t]``, ``s_full[t]``). Tensor-core instructions issued by one
  thread run in order, so S[t] of tile ``j`` overwrites P[t] of tile ``j - 1`` only after the MMA reading it.
* **softmax** (warpgroup ``t`` for Q tile ``t``; thread ``r`` owns row ``r``, TMEM lane ``r``): loads S with
  ``tcgen05.ld 32x32b`` (``T.tile_copy`` TMEM -> fragment), masks (tails, causal) from logical indices, takes the
  row maximum, posts the rescale factor of O for the correction role (shared memory, ``scale_full[t]``), computes
  ``P = exp2(S * c - m * c)`` with ``c = scale * log2(e)`` (one FFMA and one ``MUFU.EX2`` per score), adds the row
  sum, and stores P as 16-bit values over S's first columns (``T.tile_copy`` fragment -> TMEM with a cast),
  announcing it on ``p_full[t]``.
* **correction** (warpgroup ``q_tiles``): once the softmax has posted tile ``j``'s factors (``scale_full[t]``; the
  softmax posted them after ``S[t]`` of tile ``j`` landed, and that MMA's commit covers ``O[t] += P V`` of tile ``j -
  1``, so O[t] is complete with no wait of its own) it multiplies O[t] in TMEM by them, row by row, 32 columns at a
  time (``tcgen05.ld``, multiply, ``tcgen05.st``) -- in the warps one of whose rows moved its maximum (see lazy
  rescaling) -- and arrives on ``o_ready[t]``, which the MMA waits for before
  the next ``O[t] += P V``. For the last Q tile that same wait says every MMA reading K/V tile ``j - 1`` is done:
  it arrives on ``kv_empty[s]`` for the producer.
* **epilogue** (the correction warpgroup, after its loop, per Q tile: the final row sums and maxima
  (``stats_full[t]``) and the last ``O += P V`` (``o_done[t]``)): ``O / rowsum`` cast to the output dtype, staged 32
  columns at a time through a 64B-swizzled shared tile and stored by TMA, one 32-row box per warp (rows past
  ``seq_q`` are clipped by the TMA); ``LSE = (m * c + log2(rowsum)) * ln 2`` (natural log, float32), rows past
  ``seq_q`` not written.

Threads: 448 (14 warps). ptxas gives every role the same registers (no ``setmaxnreg``), at most 128 (four warps on
one of the SM's four register files of 16 K): so K/V tiles are ``block_n = 64`` keys (S is 64 registers per softmax
thread; a 128-key S needs 128 before anything else, and ptxas refuses the ``tcgen05.ld .32x32b.x128``). TMEM: S of
each Q tile (64 columns), O of each (``head_dim`` columns), P over S's first 32 columns: 384 columns for d = 128.

**Lazy rescaling.** The softmax keeps the running maximum ``m`` it subtracts unless a row's new maximum exceeds it
by more than ``RESCALE_THRESHOLD`` = 8 in the scaled log2 domain. How the threshold is chosen: it bounds a probability
before normalisation by ``2^8 = 256`` (FlashAttention-4's choice, log2(256)), exact enough in the 16-bit P (bfloat16
and float16 keep their relative precision up to 65504 and beyond) and in the float32 row sum and O (a row of 8192
keys sums to at most 2^21, far from float32's range); a larger one would let P and the sums grow towards float16's
limit, a smaller one would move the maximum, and rescale, more often. O and the row sum always use the same ``m``, so
the result is the same softmax; the numpy check holds within ``attention_common``'s tolerance. A row whose maximum
did not move gets factor exactly 1 (no rounding). What is skipped: each softmax warp also posts its vote, the
smallest factor of its 32 rows (``T.tile_reduce`` over the lanes of the warp: shuffles, lane 0 stores it next to
the factors), and a correction warp whose vote is 1 -- none of its rows moved -- skips its whole O round trip
(``tcgen05.ld`` of O, the multiply, ``tcgen05.st``) for that K/V tile; the other warps of the warpgroup rescale their
rows (``tcgen05.ld/st`` move each warp's own TMEM lanes, so VerifyLayouts accepts the copies under a branch on the
warp's vote). Once the maxima settle, after the first K/V tiles, the correction does no more than wait, read the
votes and arrive.

Causal masking (bottom-right aligned): Q tile ``t`` of rows ``q0..q0+127`` sees K/V tiles ``0 .. ceil((q0 + 128 +
seq_kv - seq_q) / block_n) - 1``; later tiles are fully masked and neither loaded nor computed (the last Q tile of
the CTA sees the most, so it sets the producer's count). Scores of keys past ``seq_kv`` or past a row's diagonal
become ``-inf`` before the maximum, in the tiles where any can be.

Every descriptor, tensor map, TMEM address and fragment placement is derived from the declared layouts
(``mma_shared_layout`` for Q, K, V and the staging tile, :func:`tmem_tiles` for S, O and P); the roles are written
with tile ops.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, T.tile_reduce, T.alloc_tmem, layout=..., the pipeline)
from tirx_layout import Iter, TCol, TileLayout, TLane, mma_shared_layout
from tirx_layout.ops.helpers.math import ex2_approx
from tirx_layout.tools.kernel_report import KernelTable, load_example_module

COMMON = load_example_module(Path(__file__).with_name("attention_common.py"))
AttentionProblem = COMMON.AttentionProblem
attention_expected = COMMON.attention_expected

#: Rows of a Q tile: the 128 TMEM lanes of an M = 128 MMA's accumulator, one per softmax thread.
BLOCK_M = 128
#: FlashAttention-4's lazy-rescaling threshold: a row's maximum is moved only when it grows by more than this, in
#: the scaled log2 domain, so unnormalised probabilities stay below 2^8.
RESCALE_THRESHOLD = 8.0
#: O columns one ``tcgen05.ld``/``st`` of the correction and the epilogue moves (32 registers per thread).
CHUNK = 32
#: Warps of a warpgroup: warp ``w`` holds rows ``32 w .. 32 w + 31`` (TMEM lanes, ``tcgen05.ld 32x32b``).
WARPS = 4
#: A row vector of a warpgroup, row ``r`` on thread ``r`` (what ``tcgen05.ld 32x32b`` leaves), and the same registers
#: seen per warp, ``(warp, lane)``: the vote reduces over the lanes of each warp (shuffles only, no shared scratch).
ROW_PER_THREAD = TileLayout.from_iters([Iter(BLOCK_M, 1, "tid_in_wg")], [], None)
ROWS_BY_WARP = TileLayout.from_iters([Iter(WARPS, 32, "tid_in_wg"), Iter(32, 1, "tid_in_wg")], [], None)
#: Shared memory of a CTA (sm_100a: 227 KB).
SHARED_MEMORY_BYTES = 232448
#: Tensor memory columns of an SM.
TMEM_COLUMNS = 512
LN2 = math.log(2.0)


class Barriers(NamedTuple):
    """The kernel's mbarriers (shared ``uint64`` buffers), per Q tile or per K/V stage, as the roles pass them."""

    q_full: object
    s_full: object
    p_full: object
    scale_full: object
    stats_full: object
    o_done: object
    o_ready: object
    k_full: object
    v_full: object
    kv_empty: object


class SharedRows(NamedTuple):
    """Per Q tile and row, in shared memory: the O rescale factor, the final row sum and the final maximum; per Q
    tile and warp of the softmax warpgroup, the smallest factor of the warp's 32 rows (below 1: a row moved)."""

    scale_s: object
    sum_s: object
    max_s: object
    vote_s: object


def roles(q_tiles: int) -> dict[str, range]:
    """The threads of each role for ``q_tiles`` Q tiles in flight: a softmax warpgroup per Q tile, the correction
    (and epilogue) warpgroup, the producer warp and the MMA warp.

    Example:
        >>> {name: (r.start, r.stop) for name, r in roles(2).items()}
        {'softmax': (0, 256), 'correction': (256, 384), 'producer': (384, 416), 'mma': (416, 448)}
    """
    wg = 128 * q_tiles
    return {
        "softmax": range(0, wg),
        "correction": range(wg, wg + 128),
        "producer": range(wg + 128, wg + 160),
        "mma": range(wg + 160, wg + 192),
    }


def budget(problem: AttentionProblem, block_n: int, stages: int, q_tiles: int) -> tuple[int, int]:
    """``(shared bytes, TMEM columns)`` of the kernel: Q tiles, the K/V ring, the epilogue's staging tile and the
    mbarriers; S (P over it) and O per Q tile. ``ValueError`` when either exceeds the SM's.

    Example:
        >>> budget(AttentionProblem(1, 2, 1, 8192, 8192, 128), 64, 3, 2)
        (175304, 384)
        >>> budget(AttentionProblem(1, 2, 1, 8192, 8192, 128), 64, 5, 2)
        Traceback (most recent call last):
        ...
        ValueError: attention: 2 Q tiles and 5 K/V stages of 64 x 128 bfloat16 need 240888 bytes of shared memory;
        a CTA has 232448
    """
    d = problem.head_dim
    element = 2
    barriers = 8 * (3 * stages + 6 * q_tiles)
    shared = (q_tiles * BLOCK_M * d + stages * 2 * block_n * d + BLOCK_M * CHUNK) * element + 3 * 4 * BLOCK_M * q_tiles
    shared += barriers + 4 * WARPS * q_tiles  # the warps' votes
    if shared > SHARED_MEMORY_BYTES:
        raise ValueError(
            f"attention: {q_tiles} Q tiles and {stages} K/V stages of {block_n} x {d} {problem.dtype} need {shared} "
            f"bytes of shared memory; a CTA has {SHARED_MEMORY_BYTES}"
        )
    columns = q_tiles * (block_n + d)
    if columns > TMEM_COLUMNS:
        raise ValueError(
            f"attention: {q_tiles} Q tiles of S (128 x {block_n} float32) and O (128 x {d} float32) need {columns} "
            f"TMEM columns; an SM has {TMEM_COLUMNS}"
        )
    return shared, columns


def atom_views(dtype: str, d: int, block_n: int, q_tiles: int, stages: int):
    """The layouts of the Q, K and V tiles seen as stacks of 64-column (128-byte) swizzle atom columns, one TMA box
    each: ``(q_tiles * atoms, 128, 64)``, ``(stages * atoms, block_n, 64)`` and, V MN-major, ``(stages * atoms, 64,
    block_n)``. A canonical operand stores its atom columns one after the other, so these are the same bytes.

    Example:
        >>> atom_views("bfloat16", 128, 128, 2, 2)[0]
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(4, 128, 64):(8192, 64, 1)]))
    """
    atoms, width = d // 64, 64
    return (
        mma_shared_layout(dtype, "128B", (q_tiles * atoms, BLOCK_M, width)),
        mma_shared_layout(dtype, "128B", (stages * atoms, block_n, width)),
        mma_shared_layout(dtype, "128B", (stages * atoms, width, block_n), major="MN"),
    )


def tmem_tiles(tiles: int, cols: int, column: int, per_column: int = 1, stage_columns: int | None = None):
    """The TMEM layout of ``tiles`` MMA accumulators (or A operands) of 128 rows by ``cols``, ``(tiles, 128,
    cols)``: row i on lane i (datapath D), ``per_column`` elements per 32-bit column, tile ``t`` starting ``column
    + t * stage_columns`` 32-bit columns in (``stage_columns`` defaults to ``cols / per_column``).

    Example:
        >>> tmem_tiles(2, 128, 0, per_column=2, stage_columns=128)
        TileLayout(S[(2, 128, 128):(256@TCol, 1@TLane, 1@TCol)])
        >>> tmem_tiles(2, 64, 256).apply(1, 3, 5, shape=[2, 128, 64])
        {'TCol': 325, 'TLane': 3}
    """
    stage_columns = cols // per_column if stage_columns is None else stage_columns
    iters = [Iter(tiles, stage_columns * per_column, TCol), Iter(BLOCK_M, 1, TLane), Iter(cols, 1, TCol)]
    return TileLayout.from_iters(iters, [], {TCol: column * per_column} if column else None)


def attention(problem: AttentionProblem, block_n: int = 64, stages: int = 3, q_tiles: int = 2):
    """The sm_100a attention forward of ``problem`` (checked by ``AttentionProblem.check``): K/V tiles of
    ``block_n`` keys through a ring of ``stages``, ``q_tiles`` Q tiles of 128 rows per CTA. Parameters ``Q, K, V,
    O, LSE``.

    Example:
        >>> kernel = attention(AttentionProblem(1, 2, 1, 256, 256, 64, causal=True))
        >>> [p.name for p in kernel.params]
        ['Q', 'K', 'V', 'O', 'LSE']
        >>> attention(AttentionProblem(1, 2, 1, 256, 256, 64), block_n=96)
        Traceback (most recent call last):
        ...
        ValueError: attention: block_n = 96; give 64 or 128 (a multiple of the 32-column softmax chunks, N of an MMA)
    """
    problem.check()
    if block_n not in (64, 128):
        raise ValueError(
            f"attention: block_n = {block_n}; give 64 or 128 (a multiple of the 32-column softmax chunks, N of an MMA)"
        )
    if q_tiles not in (1, 2) or stages < 2:
        raise ValueError(f"attention: q_tiles = {q_tiles} (1 or 2), stages = {stages} (at least 2)")
    budget(problem, block_n, stages, q_tiles)
    B, H, KVH, SQ, SKV, D = (
        problem.batch,
        problem.heads,
        problem.kv_heads,
        problem.seq_q,
        problem.seq_kv,
        problem.head_dim,
    )
    dtype, group, causal = problem.dtype, problem.group, problem.causal
    BM, BN, ST, QT, E = BLOCK_M, block_n, stages, q_tiles, CHUNK
    c = problem.softmax_scale * COMMON.LOG2E  # scores to the log2 domain, the softmax scale folded in
    pairs = -(-SQ // (BM * QT))  # CTAs per (batch, query head)
    n_kv = -(-SKV // BN)  # K/V tiles of a row that sees every key
    offset = SKV - SQ  # causal: query i sees keys j <= i + offset
    masked_tail = SKV % BN != 0
    W = 128 // 2  # elements of a 128-byte swizzle atom row: a TMA box is at most that wide
    ATOMS = D // W
    threads = roles(QT)
    PRODUCER, MMA, THREADS = threads["producer"].start // 32, threads["mma"].start // 32, threads["mma"].stop

    q_layout = mma_shared_layout(dtype, "128B", (QT, BM, D))
    k_layout = mma_shared_layout(dtype, "128B", (ST, BN, D))
    v_layout = mma_shared_layout(dtype, "128B", (ST, D, BN), major="MN")  # B of O += P V: (N, K) = (d, keys)
    q_atom_layout, k_atom_layout, v_atom_layout = atom_views(dtype, D, BN, QT, ST)
    # TMEM, per Q tile t: S in 32-bit columns t * BN .., O after every S in QT * BN + t * D .., and P (16-bit, two
    # per 32-bit column: TCol counts 16-bit halves) over the first BN / 2 columns of S[t]
    s_layout = tmem_tiles(QT, BN, 0)
    o_layout = tmem_tiles(QT, D, QT * BN)
    p_layout = tmem_tiles(QT, BN, 0, per_column=2, stage_columns=BN)
    staging_layout = mma_shared_layout(dtype, "64B", (BM, E))
    box_layout = mma_shared_layout(dtype, "64B", (BM // 32, 32, E))

    def kv_tiles(t, pair):
        """K/V tiles Q tile ``t`` of the CTA's ``pair`` sees: all, or (causal) up to the last row's diagonal."""
        if not causal:
            return n_kv
        return T.min(n_kv, ((pair * QT + t) * BM + BM + offset + BN - 1) // BN)

    def first_active(t, pair, j):
        """Whether Q tile ``t`` is the first of the CTA's to use K/V tile ``j`` (it uses it): tile 0, or (causal)
        a later tile once the earlier ones have passed their diagonal. One wait per phase: a second would be
        redundant, and its removal would go unnoticed."""
        if t == 0:
            return True
        if not causal:
            return False
        return j >= kv_tiles(t - 1, pair)

    def needs_mask(t, pair, j):
        """Whether K/V tile ``j`` has a masked score in Q tile ``t``: past seq_kv, or (causal) past a diagonal
        (``False`` when neither can happen: the masking is then not written at all)."""
        if not (causal or masked_tail):
            return False
        diagonal = j * BN + BN - 1 > (pair * QT + t) * BM + offset
        if not masked_tail:
            return diagonal
        tail = j * BN + BN > SKV
        return T.Or(tail, diagonal) if causal else tail

    @T.macro
    def softmax(t, pair, s_acc, p_tmem, bars, shared_rows, frag):
        scores, m_neg, tmax, tsum, m_run, l_run, scale, scale_by_warp = frag
        q0 = T.meta_var((pair * QT + t) * BM)
        nt = T.meta_var(kv_tiles(t, pair))
        T.tile_fill(m_run, T.float32(-math.inf), "warpgroup")
        T.tile_fill(l_run, T.float32(0), "warpgroup")
        for j in T.serial(nt):
            T.mbarrier_wait(bars.s_full[t], j % 2)
            T.tile_copy(scores, s_acc[t, 0:BM, 0:BN], "warpgroup")  # tcgen05.ld 32x32b: row i on thread i
            if needs_mask(t, pair, j):  # -inf where the key is past seq_kv or past the row's diagonal
                for i in T.tile_parallel(BM, scope="warpgroup"):
                    for k in T.tile_parallel(BN):
                        key = T.meta_var(j * BN + k)
                        hidden = T.meta_var(T.Or(key >= SKV, key > q0 + i + offset) if causal else key >= SKV)
                        scores[i, k] = T.if_then_else(hidden, T.float32(-math.inf), scores[i, k])
            T.tile_reduce(tmax, scores, "max", axis=1, scope="warpgroup")
            for i in T.tile_parallel(BM, scope="warpgroup"):
                # lazy: the subtracted maximum moves only when the row's grows by more than the threshold
                grown = T.meta_var(tmax[i] * T.float32(c))
                moved = T.meta_var(grown - m_run[i] > T.float32(RESCALE_THRESHOLD))
                scale[i] = T.if_then_else(moved, ex2_approx(m_run[i] - grown), T.float32(1))
                m_run[i] = T.if_then_else(moved, grown, m_run[i])
                m_neg[i] = T.float32(0) - m_run[i]
            if j >= 1:  # the correction rescales O[t] by it before the next O += P V
                T.tile_copy(shared_rows.scale_s[t, 0:BM], scale, "warpgroup")
                # each warp's vote: the smallest factor of its 32 rows, 1 when none moved (lane shuffles, lane 0 stores)
                T.tile_reduce(shared_rows.vote_s[t, 0:WARPS], scale_by_warp, "min", axis=1, scope="warpgroup")
                T.mbarrier_arrive(bars.scale_full[t])
            for i in T.tile_parallel(BM, scope="warpgroup"):
                for k in T.tile_parallel(BN):
                    scores[i, k] = ex2_approx(scores[i, k] * T.float32(c) + m_neg[i])  # one FFMA, one MUFU.EX2
            T.tile_reduce(tsum, scores, "sum", axis=1, scope="warpgroup")
            for i in T.tile_parallel(BM, scope="warpgroup"):
                l_run[i] = l_run[i] * scale[i] + tsum[i]
            # P over S's first columns as 16-bit values: a casting copy (cvt, then tcgen05.st 32x32b)
            T.tile_copy(p_tmem[t, 0:BM, 0:BN], scores, "warpgroup")
            T.mbarrier_arrive(bars.p_full[t])
        T.tile_copy(shared_rows.sum_s[t, 0:BM], l_run, "warpgroup")
        T.tile_copy(shared_rows.max_s[t, 0:BM], m_run, "warpgroup")
        T.mbarrier_arrive(bars.stats_full[t])

    @T.macro
    def mma_step(t, j, pair, q_tile, k_tile, v_tile, s_acc, o_acc, p_tmem, bars):
        """Step ``j`` of the MMA warp for Q tile ``t``: O[t] += P[t] V[j - 1], then S[t] = Q[t] K[j].T."""
        nt = T.meta_var(kv_tiles(t, pair))
        if j >= 1 and j <= nt:
            # the tensor-memory waits last: the fence after the last wait orders the MMA after all of them
            if first_active(t, pair, j - 1):  # the first of the Q tiles reading V tile j - 1 waits for it
                T.mbarrier_wait(bars.v_full[(j - 1) % ST], (j - 1) // ST % 2)
            T.mbarrier_wait(bars.p_full[t], (j - 1) % 2)
            if j >= 2:  # the correction has rescaled O[t] for K/V tile j - 1
                T.mbarrier_wait(bars.o_ready[t], j % 2)
            T.tile_mma(o_acc[t], p_tmem[t], v_tile[(j - 1) % ST], j >= 2, barrier=bars.o_done[t], scope="warp")
        if j < nt:
            if j == 0:
                T.mbarrier_wait(bars.q_full[t], 0)
            if first_active(t, pair, j):
                T.mbarrier_wait(bars.k_full[j % ST], j // ST % 2)
            T.tile_mma(s_acc[t], q_tile[t], k_tile[j % ST], False, barrier=bars.s_full[t], scope="warp")

    @T.macro
    def correction_step(t, j, pair, o_acc, bars, shared_rows, frag, warp_of_thread):
        """The correction warpgroup before O[t] += P V of K/V tile ``j``: free the stage of tile ``j - 1`` (after
        the last Q tile's MMA), rescale O[t] by the softmax's factors in the warps (``warp``: of the warpgroup) one
        of whose rows moved."""
        o_chunk, row_scale = frag[0], frag[2]
        warp = T.meta_var(warp_of_thread[0])
        nt = T.meta_var(kv_tiles(t, pair))
        if j < nt:  # rescale O[t] before the MMA adds P V of tile j (the epilogue: after the loop)
            # the softmax posted the factor after S[t] of tile j landed; that MMA's commit covers every earlier MMA
            # of the thread, O[t] += P V of tile j - 1 included, so this wait (and its fence) orders the O accesses
            T.mbarrier_wait(bars.scale_full[t], (j - 1) % 2)
            if t == QT - 1:  # every MMA reading K/V tile j - 1 is done: its stage is free
                T.mbarrier_arrive(bars.kv_empty[(j - 1) % ST])
            T.tile_copy(row_scale, shared_rows.scale_s[t, 0:BM], "warpgroup")
            # the same for the warp's 32 lanes: a warp none of whose rows moved (factors all exactly 1) skips its O
            # round trip; tcgen05.ld/st move each warp's own TMEM lanes, so the others' parts go on alone
            if shared_rows.vote_s[t, warp] < T.float32(1):
                for ck in T.unroll(D // E):
                    T.tile_copy(o_chunk, o_acc[t, 0:BM, ck * E : ck * E + E], "warpgroup")
                    for i in T.tile_parallel(BM, scope="warpgroup"):
                        for k in T.tile_parallel(E):
                            o_chunk[i, k] = o_chunk[i, k] * row_scale[i]
                    T.tile_copy(o_acc[t, 0:BM, ck * E : ck * E + E], o_chunk, "warpgroup")
            T.mbarrier_arrive(bars.o_ready[t])

    @T.macro
    def epilogue(t, b, h, pair, o_acc, bars, shared_rows, outputs, frag):
        """The correction warpgroup after Q tile ``t``'s last O += P V: O / rowsum in the output dtype through
        shared memory by TMA, and LSE."""
        O, LSE, staging, boxes = outputs[0], outputs[1], outputs[2], outputs[3]
        warp = T.meta_var(outputs[4])  # an expression, not a scalar local (TVMScript 0.27 cannot read one back)
        o_chunk, result, _, row_sum, row_max = frag
        nt = T.meta_var(kv_tiles(t, pair))
        q0 = T.meta_var((pair * QT + t) * BM)
        T.mbarrier_wait(bars.stats_full[t], 0)
        T.mbarrier_wait(bars.o_done[t], (nt - 1) % 2)
        T.tile_copy(row_sum, shared_rows.sum_s[t, 0:BM], "warpgroup")
        T.tile_copy(row_max, shared_rows.max_s[t, 0:BM], "warpgroup")
        for ck in T.unroll(D // E):
            T.tile_copy(o_chunk, o_acc[t, 0:BM, ck * E : ck * E + E], "warpgroup")
            for i in T.tile_parallel(BM, scope="warpgroup"):
                for k in T.tile_parallel(E):
                    result[i, k] = T.Cast(dtype, o_chunk[i, k] / row_sum[i])
            T.tile_copy(staging, result, "warpgroup")
            rows = T.meta_var(slice(q0 + warp * 32, q0 + warp * 32 + 32))  # clipped at seq_q by the TMA
            T.tile_copy_async(O[b, h, rows, ck * E : ck * E + E], boxes[warp, 0:32, 0:E], scope="warp")
            T.tma_store_wait("warp")  # the staging tile is rewritten by the next chunk
        for i in T.tile_parallel(BM, scope="warpgroup"):  # rows past seq_q are not written
            if q0 + i < SQ:
                LSE[b, h, q0 + i] = (row_max[i] + T.log2(row_sum[i])) * T.float32(LN2)

    @T.prim_func
    def attention_fwd(
        Q: T.Buffer((B, H, SQ, D), dtype),
        K: T.Buffer((B, KVH, SKV, D), dtype),
        V: T.Buffer((B, KVH, SKV, D), dtype),
        O: T.Buffer((B, H, SQ, D), dtype),
        LSE: T.Buffer((B, H, SQ), "float32"),
    ):
        T.device_entry()
        cta = T.cta_id([B * H * pairs])
        tx = T.thread_id([THREADS])
        q_tile = T.alloc_shared((QT, BM, D), dtype, layout=q_layout, align=1024)
        k_tile = T.alloc_shared((ST, BN, D), dtype, layout=k_layout, align=1024)
        v_tile = T.alloc_shared((ST, D, BN), dtype, layout=v_layout, align=1024)
        # the same tiles as 64-column atom columns, one TMA box each (test_attention checks the views agree)
        q_atoms = T.decl_buffer((QT * ATOMS, BM, W), dtype, data=q_tile.data, layout=q_atom_layout, align=1024)
        k_atoms = T.decl_buffer((ST * ATOMS, BN, W), dtype, data=k_tile.data, layout=k_atom_layout, align=1024)
        v_atoms = T.decl_buffer((ST * ATOMS, W, BN), dtype, data=v_tile.data, layout=v_atom_layout, align=1024)
        staging = T.alloc_shared((BM, E), dtype, layout=staging_layout, align=512)
        boxes = T.decl_buffer((BM // 32, 32, E), dtype, data=staging.data, layout=box_layout, align=512)
        scale_s = T.alloc_shared((QT, BM), "float32")  # the softmax's O rescale factor of each row
        sum_s = T.alloc_shared((QT, BM), "float32")  # the final row sums
        max_s = T.alloc_shared((QT, BM), "float32")  # the final subtracted maxima (scaled, log2)
        vote_s = T.alloc_shared((QT, WARPS), "float32")  # per softmax warp: its rows' smallest factor
        q_full = T.alloc_shared((QT,), "uint64")
        s_full = T.alloc_shared((QT,), "uint64")
        p_full = T.alloc_shared((QT,), "uint64")
        scale_full = T.alloc_shared((QT,), "uint64")
        stats_full = T.alloc_shared((QT,), "uint64")
        o_done = T.alloc_shared((QT,), "uint64")
        o_ready = T.alloc_shared((QT,), "uint64")
        k_full = T.alloc_shared((ST,), "uint64")
        v_full = T.alloc_shared((ST,), "uint64")
        kv_empty = T.alloc_shared((ST,), "uint64")
        bars = T.meta_var(
            Barriers(q_full, s_full, p_full, scale_full, stats_full, o_done, o_ready, k_full, v_full, kv_empty)
        )
        shared_rows = T.meta_var(SharedRows(scale_s, sum_s, max_s, vote_s))
        s_acc = T.alloc_tmem((QT, BM, BN), "float32", layout=s_layout)
        o_acc = T.alloc_tmem((QT, BM, D), "float32", layout=o_layout, within=s_acc)
        p_tmem = T.alloc_tmem((QT, BM, BN), dtype, layout=p_layout, within=s_acc, overlap=True)
        scores = T.alloc_local((BM, BN), "float32")  # S as tcgen05.ld leaves it: row i on thread i (inferred)
        m_neg = T.alloc_local((BM,), "float32")
        tmax = T.alloc_local((BM,), "float32")  # derived: one value per thread
        tsum = T.alloc_local((BM,), "float32")
        m_run = T.alloc_local((BM,), "float32")
        l_run = T.alloc_local((BM,), "float32")
        scale = T.alloc_local((BM,), "float32", layout=ROW_PER_THREAD)
        scale_by_warp = T.decl_buffer((WARPS, 32), "float32", data=scale.data, scope="local", layout=ROWS_BY_WARP)
        o_chunk = T.alloc_local((BM, E), "float32")
        result = T.alloc_local((BM, E), dtype)
        row_scale = T.alloc_local((BM,), "float32")
        row_sum = T.alloc_local((BM,), "float32")
        row_max = T.alloc_local((BM,), "float32")
        for t in T.unroll(QT):
            T.mbarrier_init(q_full[t], ATOMS)  # the TMA loads, one per atom column (and their bytes)
            T.mbarrier_init(s_full[t], 1)  # the MMA's commit
            T.mbarrier_init(o_done[t], 1)
            T.mbarrier_init(p_full[t], 128)  # the softmax warpgroup
            T.mbarrier_init(scale_full[t], 128)
            T.mbarrier_init(stats_full[t], 128)
            T.mbarrier_init(o_ready[t], 128)  # the correction warpgroup
        for s in T.unroll(ST):
            T.mbarrier_init(k_full[s], ATOMS)
            T.mbarrier_init(v_full[s], ATOMS)
            T.mbarrier_init(kv_empty[s], 128)  # the correction warpgroup, after the last Q tile's o_done
        b = T.meta_var(cta // (H * pairs))
        h = T.meta_var(cta // pairs % H)
        pair = T.meta_var(pairs - 1 - cta % pairs if causal else cta % pairs)  # causal: the heaviest pair first
        kvh = T.meta_var(h // group)  # grouped-query attention
        n = T.meta_var(kv_tiles(QT - 1, pair))  # the last Q tile sees the most K/V tiles
        if tx // 32 == PRODUCER:
            for t in T.unroll(QT):
                q0 = T.meta_var((pair * QT + t) * BM)
                for a in T.unroll(ATOMS):  # one box per 128-byte swizzle atom column
                    T.tile_copy_async(
                        q_atoms[t * ATOMS + a],
                        Q[b, h, q0 : q0 + BM, a * W : a * W + W],
                        q_full[t],
                        scope="warp",
                    )
            for j in T.serial(n):
                if j >= ST:  # stage j % ST held K/V tile j - ST until every MMA reading it was done
                    T.mbarrier_wait(kv_empty[j % ST], (j // ST + 1) % 2)
                keys = T.meta_var(slice(j * BN, j * BN + BN))
                for a in T.unroll(ATOMS):
                    T.tile_copy_async(
                        k_atoms[j % ST * ATOMS + a],
                        K[b, kvh, keys, a * W : a * W + W],
                        k_full[j % ST],
                        scope="warp",
                    )
                for a in T.unroll(ATOMS):  # V transposed: the MN-major (d, keys) B operand of O += P V
                    T.tile_copy_async(
                        v_atoms[j % ST * ATOMS + a],
                        V[b, kvh, keys, a * W : a * W + W],
                        v_full[j % ST],
                        scope="warp",
                        transposed=True,
                    )
        elif tx // 32 == MMA:
            for j in T.serial(n + 1):  # step j: O[t] += P[t] V[j - 1], then S[t] = Q[t] K[j].T
                mma_step(0, j, pair, q_tile, k_tile, v_tile, s_acc, o_acc, p_tmem, bars)
                if QT == 2:
                    mma_step(1, j, pair, q_tile, k_tile, v_tile, s_acc, o_acc, p_tmem, bars)
        elif tx // 128 == 0:
            softmax(
                0,
                pair,
                s_acc,
                p_tmem,
                bars,
                shared_rows,
                (scores, m_neg, tmax, tsum, m_run, l_run, scale, scale_by_warp),
            )
        elif QT == 2 and tx // 128 == 1:
            softmax(
                1,
                pair,
                s_acc,
                p_tmem,
                bars,
                shared_rows,
                (scores, m_neg, tmax, tsum, m_run, l_run, scale, scale_by_warp),
            )
        elif tx // 128 == QT:
            outputs = T.meta_var((O, LSE, staging, boxes, tx // 32 % 4))
            warp_of_thread = T.meta_var((tx // 32 % 4,))  # a tuple: a macro binds an expression to a scalar local
            fragments = T.meta_var((o_chunk, result, row_scale, row_sum, row_max))
            for j1 in T.serial(n - 1):  # before O[t] += P V of K/V tile j1 + 1
                correction_step(0, j1 + 1, pair, o_acc, bars, shared_rows, fragments, warp_of_thread)
                if QT == 2:
                    correction_step(1, j1 + 1, pair, o_acc, bars, shared_rows, fragments, warp_of_thread)
            epilogue(0, b, h, pair, o_acc, bars, shared_rows, outputs, fragments)
            if QT == 2:
                epilogue(1, b, h, pair, o_acc, bars, shared_rows, outputs, fragments)

    return attention_fwd


def _entry(seq: int, head_dim: int, causal: bool, dtype: str = "bfloat16"):
    """A ``KERNELS`` entry: batch 1, two query heads on one K/V head (GQA, group 2), ``seq`` queries and keys."""
    problem = AttentionProblem(1, 2, 1, seq, seq, head_dim, dtype, causal)
    return lambda: (attention(problem), attention_expected(problem), None, "sm_100a")


def simulated_problems() -> list[tuple[int, int, bool]]:
    """The issue's matrix ``(seq, head_dim, causal)``: seq 256 and 384 (a tail), head dim 64 and 128, causal and
    not. ``KERNELS`` holds :data:`REGISTERED` of them (the suite simulates each); ``tests/kernels/test_attention.py``
    simulates all eight (marked slow; run with TIRX_LAYOUT_ATTENTION_MATRIX=1).

    Example:
        >>> len(simulated_problems())
        8
    """
    return [(seq, d, causal) for seq in (256, 384) for d in (64, 128) for causal in (False, True)]


#: The entries the example suite simulates (about 40 s together on one core): every head dim, causal and not, and the
#: tail of seq 384 in both; the rest of the matrix is ``test_attention.py``'s slow test.
REGISTERED = [(256, 64, False), (256, 128, True), (384, 64, True), (384, 128, False)]
KERNELS = KernelTable()  # each kernel built when first looked up
for _seq, _d, _causal in REGISTERED:
    KERNELS.add_entry(f"attention_{_seq}_d{_d}{'_causal' if _causal else ''}", _entry(_seq, _d, _causal))

#: The issue's production size, built and assembled (not simulated): seq 8192, head dim 128, bfloat16, 16 query heads
#: on 16 K/V heads, batch 4 (256 CTAs of two Q tiles), causal and not.
FULL_SIZE = {
    "attention_8192_d128": lambda: attention(AttentionProblem(4, 16, 16, 8192, 8192, 128)),
    "attention_8192_d128_causal": lambda: attention(AttentionProblem(4, 16, 16, 8192, 8192, 128, causal=True)),
}
