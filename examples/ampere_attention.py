"""FlashAttention-2's forward on the GPUs most people have (sm_80/86 A100 and A10, sm_89, sm_120): ``mma.sync``
fed by ``ldmatrix`` from a ``cp.async`` ring, the online softmax on the accumulator fragment, with tile ops only.
The problem, its inputs, the float32 reference and the tolerance are ``examples/attention_common.py``'s.

* A CTA of 4 warps takes 64 query rows of one head of one batch entry (``BLOCK_M``), each warp 16 of them -- one
  ``mma.sync`` row block, so a row's scores never leave its warp: the row maximum and sum are butterflies over the
  lane quad that holds the row (``T.tile_reduce``, masks read off the accumulator's layout).
* Q comes once (``cp.async`` into a 128B-swizzled shared tile, ``ldmatrix`` into the A fragment) and stays in
  registers; K and V come ``BLOCK_N`` = 64 rows at a time through a 2-stage ``cp.async`` ring (one group per tile:
  K and V of tile ``t`` land separately, so ``S = Q K^T`` starts while V is in flight). Query head ``h`` reads K/V
  head ``h // group`` (grouped-query attention).
* ``S = Q K^T``: per 16 columns of the head dimension, a K chunk through ``ldmatrix.x4`` into a B fragment and
  ``mma.sync.m16n8k16`` with that chunk of Q's fragment (a region of it: its own registers, no copy). The chunks
  keep few registers live (a 64 x 16 chunk is 8 per thread; 32-column chunks make ptxas spill two scalars of the
  head-dim-64 kernels with a tail). The ``ldmatrix`` copies are warp-scoped: the ``cp.async`` wait before them
  already synchronised the CTA, so each needs only its warp's ``__syncwarp`` (a CTA-scoped one would add a
  ``__syncthreads`` per chunk, 12 per K/V tile at head dim 128).
* Masking from logical indices (``T.tile_parallel``, ``T.Select``): columns past ``seq_kv`` (the ring's
  zero-filled tail) and, causal, keys after the query's diagonal (aligned at the bottom right) become ``-inf``
  before the row maximum, on the tiles that have any; tiles wholly above the diagonal are never loaded.
* The online softmax: ``m' = max(m, rowmax(S))``, ``P = exp2(S * c - m' * c)`` with ``c = scale * log2(e)``,
  ``l' = l * exp2((m - m') c) + rowsum(P)``, ``O *= exp2((m - m') c)``.
* ``P`` goes from the float32 C fragment to the 16-bit A fragment by a casting register copy: the C fragments of
  two ``n8`` blocks are, element for element, the A fragment of one ``k16`` step (the ISA's tables), so the copy is
  per-thread conversions, no shuffle. ``O += P V`` per 16 keys: V's rows come through ``ldmatrix.x4.trans`` into a
  fragment laid out as the B operand (``(head_dim, 16)``) seen transposed (``(16, head_dim)``, V's own shape).
* Epilogue: ``O / l`` cast to the 16-bit dtype in registers, through shared memory (Q's tile) to global in 16-byte
  vectors; ``LSE = m * scale + ln(l)`` (float32) per row, written by one lane of each quad.

Kernels (sm_80, each entry naming its architecture; one on sm_120, whose ``mma.sync`` is the same):
``fa2_<dtype>_d<head_dim>_s<seq>[_causal]`` (``_q<seq_q>_kv<seq_kv>`` for the tails), 2 query heads over 1 K/V
head, built, assembled and simulated equal to the reference within its tolerance (``PROBLEMS``; the whole matrix of
``FULL_MATRIX`` in a slow test).
"""

from __future__ import annotations

from pathlib import Path

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers the tile ops, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, mma_sync_a_layout, mma_sync_b_layout, mma_sync_c_layout
from tirx_layout.tools.kernel_report import KernelTable, load_example_module

COMMON = load_example_module(Path(__file__).with_name("attention_common.py"))
AttentionProblem = COMMON.AttentionProblem

#: The architecture of the kernels (each entry names its own, as examples/ampere_gemm.py does: a module-level ``ARCH``
#: would make it every entry's).
SM80 = "sm_80"
#: Query rows per CTA, keys per K/V tile, the warp grid (4 warps along the rows), the K/V ring's stages.
BLOCK_M, BLOCK_N, WARPS, STAGES = 64, 64, (4, 1), 2
#: Head-dimension columns per ``S = Q K^T`` step (a K chunk of 64 x 16 in registers), keys per ``O += P V`` step.
QK_CHUNK, PV_CHUNK = 16, 16


def transposed(layout, shape):
    """``layout`` of a 2-D tile of ``shape`` read as the layout of the transposed tile (same places)."""
    grouped, seps = layout.group(list(shape))
    return grouped.permute_by_groups(seps, [1, 0])


def flash_attention(problem: AttentionProblem):
    """The FlashAttention-2 forward kernel of ``problem`` (see the module docstring)."""
    p = problem.check()
    batch, heads, seq_q, seq_kv, d, dtype = p.batch, p.heads, p.seq_q, p.seq_kv, p.head_dim, p.dtype
    group, causal, bm, bn = p.group, p.causal, BLOCK_M, BLOCK_N
    m_tiles, n_tiles = -(-seq_q // bm), -(-seq_kv // bn)
    shift = seq_kv - seq_q  # query i sees keys j <= i + shift (causal)
    c = p.softmax_scale * COMMON.LOG2E
    scale = p.softmax_scale
    q_shared = mma_shared_layout(dtype, "128B", (bm, d))
    kv_shared = mma_shared_layout(dtype, "128B", (STAGES, bn, d))
    q_frag = mma_sync_a_layout((bm, d), dtype, WARPS)
    k_frag = mma_sync_b_layout((bn, QK_CHUNK), dtype, WARPS)
    s_frag = mma_sync_c_layout((bm, bn), "float32", WARPS)
    p_frag = mma_sync_a_layout((bm, bn), dtype, WARPS)
    v_frag = mma_sync_b_layout((d, PV_CHUNK), dtype, WARPS)
    v_rows = transposed(v_frag, (d, PV_CHUNK))
    o_frag = mma_sync_c_layout((bm, d), "float32", WARPS)
    neg_inf = float("-inf")

    @T.prim_func
    def attention(
        Q: T.Buffer((batch, heads, seq_q, d), dtype),
        K: T.Buffer((batch, p.kv_heads, seq_kv, d), dtype),
        V: T.Buffer((batch, p.kv_heads, seq_kv, d), dtype),
        O: T.Buffer((batch, heads, seq_q, d), dtype),
        LSE: T.Buffer((batch, heads, seq_q), "float32"),
    ):
        T.device_entry()
        cta = T.cta_id([m_tiles * heads * batch])
        tx = T.thread_id([128])
        Qs = T.alloc_shared((bm, d), dtype, layout=q_shared, align=1024)
        Ks = T.alloc_shared((STAGES, bn, d), dtype, layout=kv_shared, align=1024)
        Vs = T.alloc_shared((STAGES, bn, d), dtype, layout=kv_shared, align=1024)
        q = T.alloc_local((bm, d), dtype, layout=q_frag)
        k = T.alloc_local((bn, QK_CHUNK), dtype, layout=k_frag)
        s = T.alloc_local((bm, bn), "float32", layout=s_frag)
        pr = T.alloc_local((bm, bn), dtype, layout=p_frag)
        v = T.alloc_local((PV_CHUNK, d), dtype, layout=v_rows)
        vt = T.decl_buffer((d, PV_CHUNK), dtype, data=v.data, scope="local", layout=v_frag)
        o = T.alloc_local((bm, d), "float32", layout=o_frag)
        out = T.alloc_local((bm, d), dtype)  # inferred: o's placement
        row_max = T.alloc_local((bm,), "float32")  # derived: replicated over the row's lane quad
        row_sum = T.alloc_local((bm,), "float32")
        prev_max = T.alloc_local((bm,), "float32")
        lse = T.alloc_local((bm,), "float32")
        m0 = T.meta_var(cta % m_tiles * bm)
        h = T.meta_var(cta // m_tiles % heads)
        b = T.meta_var(cta // (m_tiles * heads))
        kvh = T.meta_var(h // group)
        # causal: the tiles up to the one holding the last row's diagonal
        tiles = T.meta_var(T.min(n_tiles, (m0 + bm + shift + bn - 1) // bn) if causal else n_tiles)
        T.tile_copy_async(Qs, Q[b, h, m0 : m0 + bm, 0:d])
        T.tile_copy_async(Ks[0], K[b, kvh, 0:bn, 0:d])
        T.tile_copy_async(Vs[0], V[b, kvh, 0:bn, 0:d])
        T.tile_fill(o, 0)
        T.tile_fill(row_max, neg_inf)
        T.tile_fill(row_sum, 0)
        T.tile_copy_async_wait(2)  # Q has landed
        T.tile_copy(q, Qs)
        for t in T.serial(tiles):
            T.tile_copy_async_wait(1)  # K of tile t has landed (its V may be in flight)
            if t + 1 < tiles:  # into the stage tile t - 1 used, which every thread is done with
                T.tile_copy_async(Ks[(t + 1) % STAGES], K[b, kvh, (t + 1) * bn : (t + 1) * bn + bn, 0:d])
                T.tile_copy_async(Vs[(t + 1) % STAGES], V[b, kvh, (t + 1) * bn : (t + 1) * bn + bn, 0:d])
            for kk in T.unroll(d // QK_CHUNK):
                T.tile_copy(k, Ks[t % STAGES, 0:bn, kk * QK_CHUNK : kk * QK_CHUNK + QK_CHUNK], scope="warp")
                T.tile_mma(s, q[0:bm, kk * QK_CHUNK : kk * QK_CHUNK + QK_CHUNK], k, accumulate=kk > 0)
            n0 = T.meta_var(t * bn)
            if n0 + bn > seq_kv or (causal and n0 + bn - 1 > m0 + shift):
                for i in T.tile_parallel(bm):
                    for j in T.tile_parallel(bn):
                        s[i, j] = T.Select(
                            n0 + j >= seq_kv or (causal and n0 + j > m0 + i + shift), T.float32(neg_inf), s[i, j]
                        )
            for i in T.tile_parallel(bm):
                prev_max[i] = row_max[i]
            T.tile_reduce(row_max, s, "max", axis=1, accumulate=True)
            for i in T.tile_parallel(bm):
                for j in T.tile_parallel(bn):
                    s[i, j] = T.exp2(s[i, j] * T.float32(c) - row_max[i] * T.float32(c))
            for i in T.tile_parallel(bm):
                prev_max[i] = T.exp2((prev_max[i] - row_max[i]) * T.float32(c))  # the correction
                row_sum[i] = row_sum[i] * prev_max[i]
            T.tile_reduce(row_sum, s, "sum", axis=1, accumulate=True)
            for i in T.tile_parallel(bm):
                for j in T.tile_parallel(d):
                    o[i, j] = o[i, j] * prev_max[i]
            T.tile_copy(pr, s)  # float32 C fragment -> 16-bit A fragment, per thread
            if t + 1 < tiles:  # V of tile t has landed (tile t + 1's K and V may be in flight)
                T.tile_copy_async_wait(2)
            else:
                T.tile_copy_async_wait(0)
            for kv in T.unroll(bn // PV_CHUNK):
                T.tile_copy(v, Vs[t % STAGES, kv * PV_CHUNK : kv * PV_CHUNK + PV_CHUNK, 0:d], scope="warp")
                T.tile_mma(o, pr[0:bm, kv * PV_CHUNK : kv * PV_CHUNK + PV_CHUNK], vt, accumulate=True)
        for i in T.tile_parallel(bm):
            for j in T.tile_parallel(d):
                out[i, j] = T.Cast(dtype, o[i, j] / row_sum[i])
        for i in T.tile_parallel(bm):
            lse[i] = row_max[i] * T.float32(scale) + T.log(row_sum[i])
        T.tile_copy(Qs, out)  # (Q's tile: every warp read it before the loop)
        T.cuda.cta_sync()  # the tile's rows were written by other threads than the ones storing them
        T.tile_copy(O[b, h, m0 : m0 + bm, 0:d], Qs)
        T.tile_copy(LSE[b, h, m0 : m0 + bm], lse)

    return attention


#: The problems of the main job's kernels (2 query heads over 1 K/V head: the GQA read, and a simulation of a few
#: seconds per 64-row tile of a head): name -> (problem, architecture). ``FULL_MATRIX`` (seq 256 and 384, head dim 64
#: and 128, causal or not, bfloat16 and float16) is simulated by tests/kernels/test_ampere_attention.py, marked slow.
PROBLEMS = {
    "fa2_bfloat16_d64_s256": (AttentionProblem(1, 2, 1, 256, 256, 64, "bfloat16"), SM80),
    "fa2_float16_d128_s384_causal": (AttentionProblem(1, 2, 1, 384, 384, 128, "float16", causal=True), SM80),
    # tails: 200 query rows (the last tile 8 rows) over 300 keys (the last tile 44): zero-filled, masked, not stored
    "fa2_bfloat16_d128_q200_kv300_causal": (AttentionProblem(1, 2, 1, 200, 300, 128, "bfloat16", causal=True), SM80),
    "fa2_float16_d64_q200_kv300": (AttentionProblem(1, 2, 1, 200, 300, 64, "float16"), SM80),
    "sm120_fa2_bfloat16_d128_s256_causal": (
        AttentionProblem(1, 2, 1, 256, 256, 128, "bfloat16", causal=True),
        "sm_120",
    ),
}
FULL_MATRIX = {
    f"fa2_{dtype}_d{d}_s{seq}{'_causal' if causal else ''}": AttentionProblem(1, 2, 1, seq, seq, d, dtype, causal)
    for dtype in ("bfloat16", "float16")
    for d in (64, 128)
    for seq in (256, 384)
    for causal in (False, True)
}

KERNELS = KernelTable()  # each kernel built when first looked up; entries (kernel, expected, sizes, arch)


def _add(name: str, problem: AttentionProblem, arch: str) -> None:
    KERNELS.add_entry(name, lambda: (flash_attention(problem), COMMON.attention_expected(problem), None, arch))


for _name, (_problem, _arch) in PROBLEMS.items():
    _add(_name, _problem, _arch)
