"""GEMMs on the tensor cores: ``T.tile_mma(D, A, B, accumulate)`` computes ``D[m, n] (+)= sum_k A[m, k] * B[n, k]``
(numpy: ``D = A @ B.T``) with ``tcgen05.mma``; every descriptor comes from the operands' layouts.

* ``gemm_fp16_128x128x64`` (the README's example): ``A`` (128, 64) and ``B`` (128, 64) float16 are copied into
  128B-swizzled shared tiles, one ``T.tile_mma`` runs the four K steps of 16 into a float32 TMEM accumulator, and
  the epilogue reads it with ``tcgen05.ld`` into registers and writes ``D``.
* ``gemm_A_<mode>_<major>``, ``gemm_B_<mode>_<major>``: every swizzle mode (none, 32B, 64B, 128B) in K-major and
  MN-major (``mma_shared_layout(..., major=)``) for A and for B, the other operand 128B K-major.
* ``gemm_<dtype>``: bfloat16, tfloat32 (float32 storage), float8 e4m3 and e5m2, int8 (int32 accumulator);
  ``gemm_float32_MN_128B_base32B``: tf32 with both operands MN-major in the 128B swizzle of 32-byte atoms.
* ``gemm_tma_MN_float32_128B_base32B``, ``gemm_tma_MN_bfloat16_128B``: both operands stored transposed in global
  memory (``At`` (K, M), ``Bt`` (K, N), M and N contiguous) and loaded by TMA into MN-major shared tiles
  (``T.tile_copy_async(..., transposed=True)``: one box of (K, one swizzle atom of rows) per atom column, all
  completing on the copy's mbarrier), ``D = At.T @ Bt``.
* ``gemm_m64_n112`` (datapath F: 64 rows over the four warps' 16-lane slabs), ``gemm_m128_n112``,
  ``gemm_m64_n200``: N need not be a power of two.
* ``gemm_tmem_a_st``, ``gemm_tmem_a_cp``: A in tensor memory, filled from registers with ``tcgen05.st`` or from
  shared memory with ``tcgen05.cp``, K packed two float16 per 32-bit column; B in shared memory.
* ``gemm_k_loop_async``: a K loop over global K tiles in two stages, the asynchronous form: the MMA of stage ``s``
  commits to ``bars[s]`` (``T.tile_mma(..., barrier=bars[s])``) while the next K tile is copied into the other
  stage; ``T.mbarrier_wait(bars[s], phase)`` before a stage is refilled and before the accumulator is read.
* ``gemm_grid_512``: a 4 x 4 grid of CTAs over 512 x 512 x 256; ``blockIdx`` picks the 128 x 128 tile, the K loop
  runs over four global K tiles of 64 (the same two-stage asynchronous loop).
* ``gemm_inferred``: the shared tiles have no layout (and no ``align=``); InferLayouts gives each the MMA layout
  whose fill copy is conflict-free, aligned to its swizzle repeat (``explain_layouts`` says which and why).
* ``gemm_f16_accumulate``, ``gemm_f16_accumulate_m64_n112``: a float16 accumulator (one element per 32-bit TMEM
  column), read back with ``tcgen05.ld ... .pack::16b``.
* Block-scaled ``mxf8f6f4`` (example (f) of issue 20) has its own module, ``block_scaled_gemm.py``.

Tolerances (``TOLERANCES``): the inputs are small integers (``sample_input``: -30..30, rounded once into the
dtype: e4m3 keeps 4 significant bits, e5m2 3, so some round), products are at most 900 and sums of up to 256 of them
stay below 2^24, so every float32 (and int32) partial sum is exact in any order: these examples must equal numpy
exactly (tf32's dropped mantissa bits are zero for such integers). A float16 accumulator would round each partial
sum (11 significant bits): its tolerance is rtol 2^-9 (``gemm_f16_accumulate``, read back with ``.pack::16b``).
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, T.mbarrier_*, T.alloc_tmem, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, tmem_datapath_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: (rtol, atol) of the comparison with numpy per accumulator dtype: exact for 32-bit accumulators (the inputs are
#: small integers, every partial sum exact); a float16 accumulator keeps 11 significant bits.
TOLERANCES = {"float32": (0.0, 0.0), "int32": (0.0, 0.0), "float16": (2.0**-9, 1.0)}


def gemm_reference(acc_dtype: str):
    """What every GEMM here computes from inputs ``A`` (M, K) and ``B`` (N, K): ``D = A @ B.T`` in float64
    (exact for the sample inputs), within ``TOLERANCES[acc_dtype]``."""
    rtol, atol = TOLERANCES[acc_dtype]
    return Expected(lambda a, b: a.astype(np.float64) @ b.astype(np.float64).T, inputs=2, rtol=rtol, atol=atol)


def gemm_fp16_128x128x64():
    """Example (a): the README's GEMM."""
    sw128 = mma_shared_layout("float16", "128B", (128, 64))

    @T.prim_func
    def gemm(A: T.Buffer((128, 64), "float16"), B: T.Buffer((128, 64), "float16"), D: T.Buffer((128, 128), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((128, 64), "float16", layout=sw128, align=1024)
        b_tile = T.alloc_shared((128, 64), "float16", layout=sw128, align=1024)
        acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
        out = T.alloc_local((128, 128), "float32")  # layout inferred: the tcgen05.ld image of acc
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tile, b_tile, accumulate=False)  # K = 64: four tcgen05.mma of K = 16
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D, out, "warpgroup")

    return gemm


def single_cta_gemm(
    m: int, n: int, k: int, dtype: str = "float16", acc_dtype: str = "float32", a_layout=None, b_layout=None
):
    """One CTA of 128 threads: ``A`` (m, k) and ``B`` (n, k) into shared tiles in ``a_layout``/``b_layout``
    (``None``: inferred), one ``T.tile_mma`` into a TMEM accumulator (datapath D for m = 128, F for m = 64), the
    epilogue through registers. TMEM columns: ``n`` for a 32-bit accumulator."""
    datapath = "D" if m == 128 else "F"
    # A given swizzled layout needs align=1024 (the MMA swizzles absolute addresses); an inferred one gets it.
    shared_a = {} if a_layout is None else {"layout": a_layout, "align": 1024}
    shared_b = {} if b_layout is None else {"layout": b_layout, "align": 1024}
    accumulator = tmem_datapath_layout(datapath, m, n)

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), acc_dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((m, k), dtype, **shared_a)
        b_tile = T.alloc_shared((n, k), dtype, **shared_b)
        acc = T.alloc_tmem((m, n), acc_dtype, layout=accumulator)
        out = T.alloc_local((m, n), acc_dtype)
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tile, b_tile)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D, out, "warpgroup")

    return gemm


def tmem_a_gemm(m: int = 128, n: int = 128, k: int = 64):
    """Example (e): A goes global -> registers -> tensor memory (``tcgen05.st``), K packed two float16 per 32-bit
    column (``tmem_datapath_layout`` of a 16-bit buffer counts 16-bit halves); B through a shared tile."""
    b_layout = mma_shared_layout("float16", "128B", (n, k))

    @T.prim_func
    def gemm(A: T.Buffer((m, k), "float16"), B: T.Buffer((n, k), "float16"), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        a_tmem = T.alloc_tmem((m, k), "float16", layout=tmem_datapath_layout("D", m, k))
        a_regs = T.alloc_local((m, k), "float16")  # inferred: the tcgen05.st image of a_tmem
        b_tile = T.alloc_shared((n, k), "float16", layout=b_layout, align=1024)
        acc = T.alloc_tmem((m, n), "float32", layout=tmem_datapath_layout("D", m, n))
        out = T.alloc_local((m, n), "float32")
        T.tile_copy(a_regs, A, "warpgroup")
        T.tile_copy(a_tmem, a_regs, "warpgroup")
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tmem, b_tile)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D, out, "warpgroup")

    return gemm


def tmem_a_cp_gemm(m: int = 128, n: int = 128, k: int = 64):
    """Example (e) with ``tcgen05.cp``: A goes global -> shared (its layout inferred for the copy into TMEM) ->
    tensor memory; the MMA after the ``tcgen05.cp`` (a pipelined pair, same issuing thread) reads it."""
    b_layout = mma_shared_layout("float16", "128B", (n, k))

    @T.prim_func
    def gemm(A: T.Buffer((m, k), "float16"), B: T.Buffer((n, k), "float16"), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        a_tmem = T.alloc_tmem((m, k), "float16", layout=tmem_datapath_layout("D", m, k))
        a_tile = T.alloc_shared((m, k), "float16", align=1024)
        b_tile = T.alloc_shared((n, k), "float16", layout=b_layout, align=1024)
        acc = T.alloc_tmem((m, n), "float32", layout=tmem_datapath_layout("D", m, n))
        out = T.alloc_local((m, n), "float32")
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_copy(a_tmem, a_tile)
        T.tile_mma(acc, a_tmem, b_tile)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D, out, "warpgroup")

    return gemm


def k_loop_gemm(m: int, n: int, k: int, grid: tuple[int, int] = (1, 1), k_tile: int = 64):
    """Examples (g): a ``grid`` of CTAs, CTA ``bx`` computing the (m, n) tile at row ``bx // grid[1]``, column
    ``bx % grid[1]`` of ``D`` (grid[0] * m, grid[1] * n) = ``A @ B.T``, two stages deep. K tile ``kt`` goes into
    stage ``s = kt % 2`` of the shared tiles and its MMA commits to ``bars[s]`` (the asynchronous form), so the copy
    of the next K tile runs while this MMA does. Before a stage is refilled, every thread waits for the MMA that read
    it two K tiles ago: phase ``(kt // 2 - 1) % 2`` of ``bars[s]``; after the loop, for the last MMA (MMAs into one
    accumulator complete in order, so its phase covers the others)."""
    rows, cols = grid[0] * m, grid[1] * n
    tiles = k // k_tile
    g, kw = grid[1], k_tile  # (short names for the regions below)
    last = tiles - 1
    a_layout = mma_shared_layout("float16", "128B", (2, m, k_tile))
    b_layout = mma_shared_layout("float16", "128B", (2, n, k_tile))

    @T.prim_func
    def gemm(
        A: T.Buffer((rows, k), "float16"), B: T.Buffer((cols, k), "float16"), D: T.Buffer((rows, cols), "float32")
    ):
        T.device_entry()
        bx = T.cta_id([grid[0] * grid[1]])
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((2, m, k_tile), "float16", layout=a_layout, align=1024)
        b_tile = T.alloc_shared((2, n, k_tile), "float16", layout=b_layout, align=1024)
        bars = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((m, n), "float32", layout=tmem_datapath_layout("D", m, n))
        out = T.alloc_local((m, n), "float32")
        T.mbarrier_init(bars[0], 1)
        T.mbarrier_init(bars[1], 1)
        for kt in T.serial(tiles):
            if kt >= 2:  # stage kt % 2 was read by the MMA of K tile kt - 2
                T.mbarrier_wait(bars[kt % 2], (kt // 2 - 1) % 2)
            T.tile_copy(a_tile[kt % 2], A[bx // g * m : bx // g * m + m, kt * kw : kt * kw + kw])
            T.tile_copy(b_tile[kt % 2], B[bx % g * n : bx % g * n + n, kt * kw : kt * kw + kw])
            T.tile_mma(acc, a_tile[kt % 2], b_tile[kt % 2], accumulate=kt > 0, barrier=bars[kt % 2])
        T.mbarrier_wait(bars[last % 2], last // 2 % 2)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D[bx // g * m : bx // g * m + m, bx % g * n : bx % g * n + n], out, "warpgroup")

    return gemm


def gemm_transposed_reference():
    """What the TMA MN-major GEMMs compute from ``At`` (K, M) and ``Bt`` (K, N): ``D = At.T @ Bt``, exactly."""
    return Expected(lambda at, bt: at.astype(np.float64).T @ bt.astype(np.float64), inputs=2)


def tma_mn_major_gemm(dtype: str, mode: str, m: int = 128, n: int = 128, k: int = 32):
    """Both operands MN-major, loaded by TMA from global tensors stored transposed: ``At`` (k, m) and ``Bt``
    (k, n). Each ``T.tile_copy_async(..., transposed=True)`` copies one (k, atom) box per swizzle atom column of
    the (rows, k) tile; the two copies complete on ``bars[0]`` (two arrivals: one per copy)."""
    a_layout, b_layout = mn_major(dtype, mode, m, k), mn_major(dtype, mode, n, k)
    accumulator = tmem_datapath_layout("D", m, n)

    @T.prim_func
    def gemm(At: T.Buffer((k, m), dtype), Bt: T.Buffer((k, n), dtype), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((m, k), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((n, k), dtype, layout=b_layout, align=1024)
        bars = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((m, n), "float32", layout=accumulator)
        out = T.alloc_local((m, n), "float32")
        T.mbarrier_init(bars[0], 1)
        T.mbarrier_init(bars[1], 1)
        T.tile_copy_async(a_tile, At[0:k, 0:m], bars[0], transposed=True)
        T.tile_copy_async(b_tile, Bt[0:k, 0:n], bars[1], transposed=True)
        T.mbarrier_wait(bars[0], 0)
        T.mbarrier_wait(bars[1], 0)
        T.tile_mma(acc, a_tile, b_tile)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D, out, "warpgroup")

    return gemm


def k_major(dtype: str, mode: str, rows: int, k: int):
    return mma_shared_layout(dtype, mode, (rows, k))


def mn_major(dtype: str, mode: str, rows: int, k: int):
    return mma_shared_layout(dtype, mode, (rows, k), major="MN")


#: Example (c): operand dtype -> (accumulator dtype, K of the example: two instruction K steps or more).
DTYPES = {
    "bfloat16": ("float32", 64),
    "float32": ("float32", 32),
    "float8_e4m3fn": ("float32", 128),
    "float8_e5m2": ("float32", 128),
    "int8": ("int32", 128),
}

KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("gemm_fp16_128x128x64", gemm_reference("float32"), gemm_fp16_128x128x64)
for _dtype, (_acc, _k) in DTYPES.items():
    KERNELS.add(
        f"gemm_{_dtype}",
        gemm_reference(_acc),
        single_cta_gemm,
        128,
        128,
        _k,
        _dtype,
        _acc,
        k_major(_dtype, "128B", 128, _k),
        k_major(_dtype, "128B", 128, _k),
    )
for _m, _n in ((64, 112), (128, 112), (64, 200)):
    KERNELS.add(
        f"gemm_m{_m}_n{_n}",
        gemm_reference("float32"),
        single_cta_gemm,
        _m,
        _n,
        64,
        "float16",
        "float32",
        k_major("float16", "128B", _m, 64),
        k_major("float16", "128B", _n, 64),
    )
#: Example (b): every swizzle mode in both majornesses for A (B 128B K-major) and for B (A 128B K-major).
for _mode in ("none", "32B", "64B", "128B"):
    for _major, _layout in (("K", k_major), ("MN", mn_major)):
        KERNELS.add(
            f"gemm_A_{_mode}_{_major}",
            gemm_reference("float32"),
            single_cta_gemm,
            128,
            128,
            64,
            a_layout=_layout("float16", _mode, 128, 64),
            b_layout=k_major("float16", "128B", 128, 64),
        )
        if (_mode, _major) != ("128B", "K"):  # (that one is gemm_A_128B_K)
            KERNELS.add(
                f"gemm_B_{_mode}_{_major}",
                gemm_reference("float32"),
                single_cta_gemm,
                128,
                128,
                64,
                a_layout=k_major("float16", "128B", 128, 64),
                b_layout=_layout("float16", _mode, 128, 64),
            )
#: tf32 reads MN-major 32-bit operands only with the 128B swizzle of 32-byte atoms ("128B_base32B").
KERNELS.add(
    "gemm_float32_MN_128B_base32B",
    gemm_reference("float32"),
    single_cta_gemm,
    128,
    128,
    32,
    "float32",
    "float32",
    mn_major("float32", "128B_base32B", 128, 32),
    mn_major("float32", "128B_base32B", 128, 32),
)
for _dtype, _mode, _k in (("float32", "128B_base32B", 32), ("bfloat16", "128B", 64)):
    KERNELS.add(f"gemm_tma_MN_{_dtype}_{_mode}", gemm_transposed_reference(), tma_mn_major_gemm, _dtype, _mode, k=_k)
KERNELS.add("gemm_tmem_a_st", gemm_reference("float32"), tmem_a_gemm)
KERNELS.add("gemm_tmem_a_cp", gemm_reference("float32"), tmem_a_cp_gemm)
KERNELS.add("gemm_k_loop_async", gemm_reference("float32"), k_loop_gemm, 128, 128, 256)
KERNELS.add("gemm_grid_512", gemm_reference("float32"), k_loop_gemm, 128, 128, 256, (4, 4))
KERNELS.add("gemm_inferred", gemm_reference("float32"), single_cta_gemm, 128, 128, 64)

#: The kernels the main job shows in full; the rest get a verdict line.
SHOWCASE = ["gemm_fp16_128x128x64", "gemm_grid_512"]


def gemm_f16_accumulate(m: int = 128, n: int = 128, k: int = 64):
    """A float16 accumulator: ``tcgen05.mma`` writes each float16 element of D into the low half of its own
    32-bit TMEM column (ISA "Packing formats": D is never packed), which ``mma_accumulator_layout(m, n,
    "float16")`` says (TCol, counted in 16-bit halves, steps by 2). The epilogue's ``tcgen05.ld`` reads it with
    ``.pack::16b``: the low halves of two adjacent columns into one 32-bit register, two float16 per register as
    the fragment holds them."""
    from tirx_layout import mma_accumulator_layout

    a_layout, b_layout = k_major("float16", "128B", m, k), k_major("float16", "128B", n, k)
    accumulator = mma_accumulator_layout(m, n, "float16")

    @T.prim_func
    def gemm(A: T.Buffer((m, k), "float16"), B: T.Buffer((n, k), "float16"), D: T.Buffer((m, n), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((m, k), "float16", layout=a_layout, align=1024)
        b_tile = T.alloc_shared((n, k), "float16", layout=b_layout, align=1024)
        acc = T.alloc_tmem((m, n), "float16", layout=accumulator)
        out = T.alloc_local((m, n), "float16")  # layout inferred: the tcgen05.ld .pack::16b image of acc
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tile, b_tile)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(D, out, "warpgroup")

    return gemm


#: float16 accumulate, read back with tcgen05.ld .pack::16b (M = 128: 32x32b; M = 64: datapath F, 16x64b).
KERNELS.add("gemm_f16_accumulate", gemm_reference("float16"), gemm_f16_accumulate)
KERNELS.add("gemm_f16_accumulate_m64_n112", gemm_reference("float16"), gemm_f16_accumulate, 64, 112)
