"""The Hopper (sm_90a) attention forward, FlashAttention-3 style: ``O = softmax(scale * Q @ K.T + mask) @ V`` and the
log-sum-exp, per batch and query head (grouped-query attention: query head ``h`` reads K/V head ``h // group``).
The problem, its inputs, the float32 reference and the tolerance are ``attention_common.py``'s.

One CTA per (batch, query head, 128-row Q tile): 384 threads, three warpgroups.

* Shared memory: the Q tile as two 64-row slots (``q_tile[w]``: consumer ``w``'s rows, 128B-swizzled K-major, the A
  operand of ``S = Q K^T``), a ring of ``stages`` K tiles (``k_tile[s]``: ``(tile_kv, head_dim)`` K-major, the B
  operand of ``S``) and V tiles (``v_tile[s]``: ``(head_dim, tile_kv)`` MN-major, the B operand of ``O += P V``:
  the TMA writes the ``(tile_kv, head_dim)`` box transposed, ``transposed=True``). mbarriers: ``full_q[w]``;
  ``full_k[s]`` / ``full_v[s]`` (the stage's TMA load landed); ``empty_k[s]`` / ``empty_v[s]`` (all 256 consumer
  threads have seen their wgmma on the stage retire). K and V have barriers of their own so that ``S`` of a tile
  can start before its V has landed, and a K stage is refilled while V of the same stage is still being read.
* The producer (warp 0 of warpgroup 2; its elected lane issues): both Q slots once, then for each K/V tile ``j``
  of the CTA (stage ``j % stages``, phase ``j // stages % 2``): wait ``empty_k``, load K; wait ``empty_v``, load V
  (rows past ``seq_kv`` are zero-filled by the TMA).
* Consumer warpgroup ``w`` (0 or 1) owns Q rows ``64 w .. 64 w + 63`` of the tile: ``S`` (64 x tile_kv) and ``O``
  (64 x head_dim) are float32 register fragments in ``wgmma_accumulator_layout``; P is the bf16/fp16 fragment in
  ``wgmma_operand_a_layout`` (the RS operand), made from ``S`` by ``T.tile_copy`` (a cast; the two placements
  coincide, so it is register-local); the row max ``m``, row sum ``l`` and the rescale factor are row vectors
  replicated over each row's quad of lanes (``T.tile_reduce`` with ``scope="warpgroup"``).

  Per K/V tile ``j >= 1`` (tile 0 is peeled: ``S_0``, its softmax, no ``P V`` yet)::

      wait full_k[j];  bar.sync 3 + w, 256               -- my turn at the tensor cores
      S = Q K_j^T (issue);  wait full_v[j - 1];  O += P_{j-1} V_{j-1} (issue, RS)
      bar.arrive 3 + (1 - w), 256                         -- the other warpgroup's turn
      wgmma wait 1 (S done) -> arrive empty_k[j];  mask;  m_new = max(m, rowmax S);  c = exp2((m - m_new) k)
      S = exp2(S k - m_new k);  l = l c + rowsum S      (k = scale * log2 e: one FFMA and one MUFU.EX2 each:
                                                         ex2.approx.ftz, the math helper ex2_approx; CUDA's exp2f
                                                         would add a subnormal range fix-up, FSETP and two FMULs)
      wgmma wait 0 (P V done) -> arrive empty_v[j - 1];  P = cast(S);  O = O c

  and after the last tile ``O += P V_{n-1}`` in a last turn, then the epilogue: ``O / l`` cast to the dtype into
  the warpgroup's Q slot (free: its last ``S`` retired), stored by TMA (``T.tile_copy_async``, rows past
  ``seq_q`` clipped by the TMA), and ``LSE = m scale + ln l`` (float32, rows past ``seq_q`` guarded off).

* The ping-pong: named barriers 3 and 4 (1 and 2 are the warpgroups' own ``bar.sync 1 + w, 128`` of the tile ops)
  each count 256 threads: a warpgroup's ``bar.sync 3 + w, 256`` (128 threads) completes when the other warpgroup's
  ``bar.arrive 3 + w, 256`` (its 128) has come, and warpgroup 1 arrives on barrier 3 once before its first turn.
  So the turns alternate 0, 1, 0, 1, ...: warpgroup 0 issues its two GEMMs of tile ``j`` and goes on to its
  softmax while warpgroup 1's GEMMs of tile ``j`` run on the tensor cores, and the other way round -- one
  warpgroup's exp2 and reductions (MUFU, FMA, shuffles) overlap the other's wgmma, as FlashAttention-3 (Shah et
  al. 2024, section 3.1) does. Within a warpgroup, ``O += P_{j-1} V_{j-1}`` is issued with ``S_j``, so the softmax
  of tile ``j`` also overlaps its own ``P V``. The schedule orders issue only; the data are ordered by the
  mbarriers and the wgmma waits, which is what the simulator checks (a wait or fence left out is a ``DataRace``).
  The two consumer roles are written once (``consumer``, a ``T.macro``) and instantiated per warpgroup, so that
  each warpgroup's ``bar.sync`` can wait while the other runs on (the simulator runs one branch of an ``if`` while
  the other waits).

* Masking, from logical indices: column ``c`` of row ``r`` is kept when ``c < seq_kv`` and, causal, ``c <= r +
  seq_kv - seq_q`` (bottom-right aligned); others get -inf before the row max. A tile that needs no mask skips the
  ``T.tile_parallel`` (a run-time test per tile); the K/V loop stops at the last tile any row of the CTA sees
  (causal: ``ceil(min(seq_kv, q0 + 128 + seq_kv - seq_q) / tile_kv)``), so fully masked tiles are never loaded.
  (Warpgroup 0's rows may see none of the CTA's last tile: their tile max is -inf, the running max stays, every
  exp2 is 0.) A row always sees its first key (``seq_q <= seq_kv`` when causal), so the running max of tile 0 is
  finite and no exp2 meets ``-inf - -inf``.

Registers: 384 threads may have 168 registers each (65536 / 384, rounded down to 8); a consumer thread holds ``S``
(tile_kv / 2 float32 registers), P (tile_kv / 4: 16-bit pairs) and ``O`` (head_dim / 2): with tile_kv = 64, 80
registers of fragments for head_dim 64 and 112 for 128. ptxas gives 114-131 (head_dim 64) and 145-164 (128) with
no spills (``benchmarks/bench_attention.py``; no ``setmaxnreg``: the tile ops do not emit it, so the producer
warpgroup keeps as many as the consumers). tile_kv = 128 would halve the per-tile overhead but needs the consumers
to take the producer's registers (``setmaxnreg``), as FlashAttention-3 does.

What the simulator checks: every mbarrier and wgmma wait and every fence (the wgmma fences ``T.tile_mma`` issues, the
proxy fence of the TMA store) is needed, except that consumer 1's waits on ``full_k`` / ``full_v`` are implied by
the schedule: its ``bar.sync`` completes only after consumer 0 waited on the same phase and ``bar.arrive``'d (the
PTX ISA orders the arrivers' earlier accesses before the waiters' later ones). The kernel keeps them, as
FlashAttention-3 does, so that no data rest on the schedule (``tests/kernels/test_hopper_attention.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers the tile ops, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, wgmma_accumulator_layout, wgmma_operand_a_layout
from tirx_layout.hw.threads import WARPGROUP_THREADS
from tirx_layout.hw.wgmma import WGMMA_M
from tirx_layout.ops.helpers.math import ex2_approx
from tirx_layout.ops.helpers.sync import named_barrier_arrive, named_barrier_sync
from tirx_layout.tools.kernel_report import KernelTable, load_example_module

#: The problem, inputs, reference and tolerance every attention example shares.
COMMON = load_example_module(Path(__file__).with_name("attention_common.py"))
#: The architecture this kernel is built for.
ARCH = "sm_90a"
#: Consumer warpgroups, each 64 rows (one wgmma M) of the CTA's Q tile.
CONSUMERS = 2
#: Q rows per CTA.
TILE_Q = CONSUMERS * WGMMA_M
#: The named barrier of consumer ``w``'s turn is ``SCHEDULE_BARRIER + w`` (1 + w is the warpgroup-scope tile ops').
SCHEDULE_BARRIER = 3
#: Shared memory a CTA may have on sm_90 (CUDA C++ Programming Guide, compute capability 9.0: 227 KB).
SHARED_PER_CTA = 227 * 1024


def default_tile_kv(head_dim: int) -> int:
    """K/V rows per tile: 64 for both head dims (S, P and O fragments of 80 registers per thread for head_dim 64, 112
    for 128). 128 for head_dim 64 (128 registers of fragments) reaches ptxas's 168 and spills 908 bytes at seq 384,
    non-causal, where it unrolls the two-iteration K/V loop.

    Example:
        >>> default_tile_kv(64), default_tile_kv(128)
        (64, 64)
    """
    return 64


def shared_bytes(head_dim: int, tile_kv: int, stages: int, dtype: str = "bfloat16") -> int:
    """Shared bytes of the Q slots and the K/V ring (the mbarriers aside).

    Example (128 x 128 Q and two stages of 64 x 128 K and V, bf16; the launch adds the mbarriers, 98576 in all):
        >>> shared_bytes(128, 64, 2)
        98304
    """
    size = 2 if dtype in ("bfloat16", "float16") else 4
    return (TILE_Q * head_dim + 2 * stages * tile_kv * head_dim) * size


def hopper_attention(problem, tile_kv: int | None = None, stages: int = 2):
    """The sm_90a forward of ``problem`` (an ``attention_common.AttentionProblem``) with ``tile_kv`` K/V rows per
    tile (default :func:`default_tile_kv`) and a ring of ``stages`` K and V tiles. Parameters Q, K, V (inputs) and
    O, LSE (outputs), shaped as ``attention_common`` says.

    Example:
        >>> p = COMMON.AttentionProblem(1, 2, 1, 256, 256, 64, causal=True)
        >>> [param.name for param in hopper_attention(p).params]
        ['Q', 'K', 'V', 'O', 'LSE']
        >>> hopper_attention(p, tile_kv=96)
        Traceback (most recent call last):
        ...
        ValueError: hopper_attention: tile_kv = 96 is not one of (64, 128)
    """
    who = "hopper_attention"
    problem = problem.check()
    d = problem.head_dim
    tkv = default_tile_kv(d) if tile_kv is None else tile_kv
    if tkv not in (64, 128):
        raise ValueError(f"{who}: tile_kv = {tkv} is not one of (64, 128)")
    if stages < 2:
        raise ValueError(f"{who}: stages = {stages}; the ring needs at least 2")
    need = shared_bytes(d, tkv, stages, problem.dtype)
    if need > SHARED_PER_CTA:
        raise ValueError(
            f"{who}: {stages} stages of K and V need {need} bytes of shared memory; a CTA has {SHARED_PER_CTA}"
        )
    dtype = problem.dtype
    B, H, HK, SQ, SKV, G = problem.batch, problem.heads, problem.kv_heads, problem.seq_q, problem.seq_kv, problem.group
    S, R, W = stages, WGMMA_M, CONSUMERS
    q_tiles = (SQ + TILE_Q - 1) // TILE_Q
    ctas = B * H * q_tiles
    threads = (W + 1) * WARPGROUP_THREADS
    causal = problem.causal
    offset = SKV - SQ  # bottom-right alignment: row r sees columns c <= r + offset
    scale = problem.softmax_scale
    k2 = scale * COMMON.LOG2E  # the softmax scale folded into exp2's factor
    neg_inf = -math.inf

    q_layout = mma_shared_layout(dtype, "128B", (W, R, d))
    k_layout = mma_shared_layout(dtype, "128B", (S, tkv, d))
    v_layout = mma_shared_layout(dtype, "128B", (S, d, tkv), major="MN")
    s_layout = wgmma_accumulator_layout(tkv)
    p_layout = wgmma_operand_a_layout(tkv, dtype)
    o_layout = wgmma_accumulator_layout(d)

    # each macro's names resolve where it is expanded (the kernel's buffers), its defaults are the plan's constants
    @T.macro(hygienic=False)
    def mask(w, j, causal=causal, offset=offset, neg_inf=neg_inf):
        row0 = T.meta_var(q0 + w * R)
        # the first column some row of this warpgroup does not see
        limit = T.meta_var(T.min(SKV, row0 + offset + 1) if causal else SKV)
        if j * tkv + tkv > limit:
            for i in T.tile_parallel(R, scope="warpgroup"):
                for c in T.tile_parallel(tkv):
                    col = T.meta_var(j * tkv + c)
                    seen = T.meta_var(T.And(col < SKV, col <= row0 + i + offset) if causal else col < SKV)
                    acc_s[i, c] = T.if_then_else(seen, acc_s[i, c], T.float32(neg_inf))

    @T.macro(hygienic=False)
    def softmax(first, k2=k2, ex2=ex2_approx):
        T.tile_reduce(tile_max, acc_s, "max", axis=1, scope="warpgroup")
        for i in T.tile_parallel(R, scope="warpgroup"):
            if first:
                rescale[i] = T.float32(0)
                row_max[i] = tile_max[i]
            else:
                rescale[i] = ex2((row_max[i] - T.max(row_max[i], tile_max[i])) * T.float32(k2))
                row_max[i] = T.max(row_max[i], tile_max[i])
            max_scaled[i] = row_max[i] * T.float32(k2)
        for i in T.tile_parallel(R, scope="warpgroup"):
            for c in T.tile_parallel(tkv):
                acc_s[i, c] = ex2(acc_s[i, c] * T.float32(k2) - max_scaled[i])
        T.tile_reduce(tile_sum, acc_s, "sum", axis=1, scope="warpgroup")
        for i in T.tile_parallel(R, scope="warpgroup"):
            if first:
                row_sum[i] = tile_sum[i]
            else:
                row_sum[i] = row_sum[i] * rescale[i] + tile_sum[i]

    @T.macro(hygienic=False)
    def consumer(
        w,
        mask=mask,
        softmax=softmax,
        scale=scale,
        sync=named_barrier_sync,
        arrive=named_barrier_arrive,
        first_turn=SCHEDULE_BARRIER,
    ):
        other = T.meta_var(1 - w)
        row0 = T.meta_var(q0 + w * R)
        if w == 1:  # warpgroup 0 takes the first turn
            T.evaluate(arrive(first_turn, 256))
        T.mbarrier_wait(full_q[w], 0)
        # tile 0: S_0 and its softmax, no P V yet
        T.mbarrier_wait(full_k[0], 0)
        T.evaluate(sync(first_turn + w, 256))
        T.tile_mma(acc_s, q_tile[w], k_tile[0], False, scope="warpgroup", wait=False)
        T.evaluate(arrive(first_turn + other, 256))
        T.tile_mma_wait(0)
        T.mbarrier_arrive(empty_k[0])
        mask(w, 0)
        softmax(True)
        T.tile_copy(p, acc_s, "warpgroup")
        for j in T.serial(1, n_tiles):
            T.mbarrier_wait(full_k[j % S], j // S % 2)
            T.evaluate(sync(first_turn + w, 256))
            T.tile_mma(acc_s, q_tile[w], k_tile[j % S], False, scope="warpgroup", wait=False)
            T.mbarrier_wait(full_v[(j - 1) % S], (j - 1) // S % 2)
            T.tile_mma(acc_o, p, v_tile[(j - 1) % S], j > 1, scope="warpgroup", wait=False)
            T.evaluate(arrive(first_turn + other, 256))
            T.tile_mma_wait(1)  # S_j retired: its K stage may be refilled
            T.mbarrier_arrive(empty_k[j % S])
            mask(w, j)
            softmax(False)
            T.tile_mma_wait(0)  # P_{j-1} V_{j-1} retired: P may be rewritten, O rescaled, V refilled
            T.mbarrier_arrive(empty_v[(j - 1) % S])
            T.tile_copy(p, acc_s, "warpgroup")
            for i in T.tile_parallel(R, scope="warpgroup"):
                for c in T.tile_parallel(d):
                    acc_o[i, c] = acc_o[i, c] * rescale[i]
        last = T.meta_var(n_tiles - 1)
        T.mbarrier_wait(full_v[last % S], last // S % 2)
        T.evaluate(sync(first_turn + w, 256))
        T.tile_mma(acc_o, p, v_tile[last % S], n_tiles > 1, scope="warpgroup", wait=False)
        if w == 0:  # warpgroup 1's last turn; it hands none back
            T.evaluate(arrive(first_turn + other, 256))
        T.tile_mma_wait(0)
        T.mbarrier_arrive(empty_v[last % S])
        # epilogue: O / l in the dtype, through the warpgroup's Q slot, by TMA; LSE = m scale + ln l
        for i in T.tile_parallel(R, scope="warpgroup"):
            for c in T.tile_parallel(d):
                out[i, c] = T.Cast(dtype, acc_o[i, c] / row_sum[i])
        T.tile_copy(q_tile[w], out, "warpgroup")
        T.tile_copy_async(O[b, h, row0 : row0 + R, 0:d], q_tile[w], scope="warpgroup")
        for i in T.tile_parallel(R, scope="warpgroup"):
            lse[i] = row_max[i] * T.float32(scale) + T.log(row_sum[i])
        T.tile_copy(LSE[b, h, row0 : row0 + R], lse, "warpgroup")
        T.tma_store_wait("warpgroup")

    @T.prim_func
    def attention(
        Q: T.Buffer((B, H, SQ, d), dtype),
        K: T.Buffer((B, HK, SKV, d), dtype),
        V: T.Buffer((B, HK, SKV, d), dtype),
        O: T.Buffer((B, H, SQ, d), dtype),
        LSE: T.Buffer((B, H, SQ), "float32"),
    ):
        T.device_entry()
        cta = T.cta_id([ctas])
        tx = T.thread_id([threads])
        q_tile = T.alloc_shared((W, R, d), dtype, layout=q_layout, align=1024)
        k_tile = T.alloc_shared((S, tkv, d), dtype, layout=k_layout, align=1024)
        v_tile = T.alloc_shared((S, d, tkv), dtype, layout=v_layout, align=1024)
        full_q = T.alloc_shared((W,), "uint64")
        full_k = T.alloc_shared((S,), "uint64")
        full_v = T.alloc_shared((S,), "uint64")
        empty_k = T.alloc_shared((S,), "uint64")
        empty_v = T.alloc_shared((S,), "uint64")
        acc_s = T.alloc_local((R, tkv), "float32", layout=s_layout)  # S, then exp2 of it
        p = T.alloc_local((R, tkv), dtype, layout=p_layout)  # P, the RS operand
        acc_o = T.alloc_local((R, d), "float32", layout=o_layout)
        out = T.alloc_local((R, d), dtype)  # inferred: O's placement
        row_max = T.alloc_local((R,), "float32")  # derived: replicated over a row's quad
        row_sum = T.alloc_local((R,), "float32")
        tile_max = T.alloc_local((R,), "float32")
        tile_sum = T.alloc_local((R,), "float32")
        max_scaled = T.alloc_local((R,), "float32")
        rescale = T.alloc_local((R,), "float32")
        lse = T.alloc_local((R,), "float32")
        for w in T.unroll(W):
            T.mbarrier_init(full_q[w], 1)
        for s in T.unroll(S):
            T.mbarrier_init(full_k[s], 1)
            T.mbarrier_init(full_v[s], 1)
            T.mbarrier_init(empty_k[s], W * 128)
            T.mbarrier_init(empty_v[s], W * 128)
        b = T.meta_var(cta // (H * q_tiles))
        h = T.meta_var(cta // q_tiles % H)
        hk = T.meta_var(cta // q_tiles % H // G)  # GQA: query head h reads K/V head h // group
        q0 = T.meta_var(cta % q_tiles * TILE_Q)
        # the K/V tiles any row of the CTA sees: causal stops at row q0 + 127's last visible column
        n_tiles = T.meta_var((T.min(SKV, q0 + TILE_Q + offset) + tkv - 1) // tkv if causal else (SKV + tkv - 1) // tkv)

        if tx // 128 == 0:
            consumer(0)
        elif tx // 128 == 1:
            consumer(1)
        elif tx // 32 == 4 * W:  # producer: the first warp of the last warpgroup; its elected lane issues
            for w in T.unroll(W):
                T.tile_copy_async(q_tile[w], Q[b, h, q0 + w * R : q0 + w * R + R, 0:d], full_q[w], scope="warp")
            for j in T.serial(n_tiles):
                kv0 = T.meta_var(j * tkv)
                if j >= S:  # stage j % S was read by tile j - S
                    T.mbarrier_wait(empty_k[j % S], (j // S - 1) % 2)
                T.tile_copy_async(k_tile[j % S], K[b, hk, kv0 : kv0 + tkv, 0:d], full_k[j % S], scope="warp")
                if j >= S:
                    T.mbarrier_wait(empty_v[j % S], (j // S - 1) % 2)
                T.tile_copy_async(
                    v_tile[j % S], V[b, hk, kv0 : kv0 + tkv, 0:d], full_v[j % S], scope="warp", transposed=True
                )

    return attention


def _entry(batch, heads, kv_heads, seq, head_dim, causal, dtype="bfloat16"):
    problem = COMMON.AttentionProblem(batch, heads, kv_heads, seq, seq, head_dim, dtype, causal)
    return lambda: (hopper_attention(problem), COMMON.attention_expected(problem))


#: Built for sm_90a, assembled and simulated against numpy by ``tests/tools/test_examples.py`` (and the demo): one
#: batch, two query heads over one K/V head (GQA), a representative half of {seq 256, 384} x {head_dim 64, 128} x
#: {causal, not} -- each pair of two of the three appears -- simulated in 5-36 s each; the whole matrix is
#: ``tests/kernels/test_hopper_attention.py``'s (marked slow; 70-110 s with builds and ptxas). Seq 384 is three 128-row
#: Q tiles and six 64-row K/V tiles here, so the tails (seq_q 200, seq_kv 330) are that file's own case.
MATRIX = [(seq, d, causal) for seq in (256, 384) for d in (64, 128) for causal in (False, True)]
KERNELS = KernelTable()  # each kernel built when first looked up
for _seq, _d, _causal in [(256, 64, False), (256, 128, True), (384, 64, True), (384, 128, False)]:
    KERNELS.add_entry(
        f"hopper_attention_{_seq}_d{_d}{'_causal' if _causal else ''}", _entry(1, 2, 1, _seq, _d, _causal)
    )
SHOWCASE = ["hopper_attention_384_d64_causal"]

#: The production size, built for sm_90a and assembled by the main job but not simulated: seq 8192, head_dim 128,
#: bf16, 16 heads (GQA over 8 K/V heads), causal and not.
FULL_SIZE = {
    f"hopper_attention_8192_d128{'_causal' if causal else ''}": (
        lambda causal=causal: hopper_attention(COMMON.AttentionProblem(1, 16, 8, 8192, 8192, 128, "bfloat16", causal))
    )
    for causal in (False, True)
}
