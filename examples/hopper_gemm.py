"""GEMMs on Hopper's tensor cores (sm_90a): the same ``T.tile_mma(D, A, B, accumulate)`` as on Blackwell
(``D[m, n] (+)= sum_k A[m, k] * B[n, k]``, numpy ``D = A @ B.T``) lowers to ``wgmma.mma_async`` when the kernel is
built for sm_90a; nothing in the kernel names the architecture but its accumulator, a register fragment in
``wgmma_accumulator_layout(N)`` (there is no tensor memory on Hopper).

* ``wgmma_bf16_64x128x64`` (the README's Hopper example): A (64, 64) and B (128, 64) bfloat16 copied into
  128B-swizzled shared tiles, one ``T.tile_mma`` of four ``m64n128k16`` steps into a float32 fragment, which the
  warpgroup stores straight to ``D``.
* ``wgmma_<dtype>``: float16 (f32 and f16 D), tf32 (float32 storage), float8 e4m3, int8 (int32 D).
* ``wgmma_A_<mode>_<major>``, ``wgmma_B_<mode>_<major>``: every swizzle mode (none, 32B, 64B, 128B) K-major and
  MN-major (the ISA's imm-trans) for A and for B of a 16-bit GEMM, the other operand 128B K-major.
* ``wgmma_rs``: A from registers (``wgmma_operand_a_layout``, loaded by the warpgroup from global memory).
* ``wgmma_m128_two_warpgroups``: M = 128 over a CTA of two warpgroups, each issuing its own 64 rows.
* ``wgmma_n256``, ``wgmma_n200``: the widest N, and one that is not a power of two.
* ``wgmma_k_loop_async`` (bf16; ``_float16_float32``, ``_float16_float16``, ``_float32_float32`` (tf32),
  ``_float8_e4m3fn_float32``, ``_int8`` for the other kinds): a K loop over global K tiles in two shared stages, the
  asynchronous form:
  ``T.tile_mma(..., wait=False)`` then ``T.tile_mma_wait(1)`` (the group of the other stage has retired, so that
  stage may be refilled), ``T.tile_mma_wait(0)`` before the epilogue.
* ``wgmma_warp_specialized``: a TMA producer warp and a consumer warpgroup (``scope="warpgroup"``, accumulator on
  warpgroup 1) handing ring stages to each other through ``full``/``empty`` mbarriers.

Each kernel is built for sm_90a (the module's ``ARCH``), assembled with ``nvcc -arch=sm_90a -cubin`` and simulated
(the simulator's wgmma model) in the main job and the tests. The inputs are small integers (``sample_input``), so
every float32 and int32 partial sum is exact and the results must equal numpy exactly (a float16 accumulator within
rtol 2^-9).
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_mma, T.tile_mma_wait, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, wgmma_accumulator_layout, wgmma_operand_a_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: The architecture these kernels are built for.
ARCH = "sm_90a"
#: (rtol, atol) of the comparison with numpy per accumulator dtype (see the module docstring).
TOLERANCES = {"float32": (0.0, 0.0), "int32": (0.0, 0.0), "float16": (2.0**-9, 1.0)}


def gemm_reference(acc_dtype: str):
    """``D = A @ B.T`` in float64 (exact for the sample inputs), within ``TOLERANCES[acc_dtype]``."""
    rtol, atol = TOLERANCES[acc_dtype]
    return Expected(lambda a, b: a.astype(np.float64) @ b.astype(np.float64).T, inputs=2, rtol=rtol, atol=atol)


def wgmma_gemm(
    m: int = 64,
    n: int = 128,
    k: int = 64,
    dtype: str = "bfloat16",
    acc_dtype: str = "float32",
    a_layout=None,
    b_layout=None,
):
    """One CTA of ``m // 64`` warpgroups: A (m, k) and B (n, k) into shared tiles (128B-swizzled K-major unless
    given), one synchronous ``T.tile_mma`` into a register fragment, stored by each warpgroup to ``D``."""
    a_layout = a_layout if a_layout is not None else mma_shared_layout(dtype, "128B", (m, k))
    b_layout = b_layout if b_layout is not None else mma_shared_layout(dtype, "128B", (n, k))
    accumulator = wgmma_accumulator_layout(n, acc_dtype, m // 64)

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), acc_dtype)):
        T.device_entry()
        tx = T.thread_id([m * 2])
        a_tile = T.alloc_shared((m, k), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((n, k), dtype, layout=b_layout, align=1024)
        acc = T.alloc_local((m, n), acc_dtype, layout=accumulator)
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tile, b_tile)  # K / (32 bytes) wgmma.mma_async per warpgroup
        T.tile_copy(D, acc)

    return gemm


def wgmma_bf16_64x128x64():
    """The README's Hopper GEMM."""
    return wgmma_gemm(64, 128, 64, "bfloat16")


def wgmma_rs(n: int = 128, k: int = 64, dtype: str = "bfloat16"):
    """A in registers: the warpgroup loads A (64, k) from global memory straight into the ISA's A fragment; B in a
    128B-swizzled shared tile."""
    b_layout = mma_shared_layout(dtype, "128B", (n, k))
    a_fragment = wgmma_operand_a_layout(k, dtype)
    accumulator = wgmma_accumulator_layout(n)

    @T.prim_func
    def gemm(A: T.Buffer((64, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((64, n), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        a_regs = T.alloc_local((64, k), dtype, layout=a_fragment)
        b_tile = T.alloc_shared((n, k), dtype, layout=b_layout, align=1024)
        acc = T.alloc_local((64, n), "float32", layout=accumulator)
        T.tile_copy(a_regs, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_regs, b_tile)
        T.tile_copy(D, acc)

    return gemm


def wgmma_k_loop_async(n: int = 128, tiles: int = 4, dtype: str = "bfloat16", acc_dtype: str = "float32"):
    """Two shared stages over ``tiles`` global K tiles of one 128-byte swizzle row each (64 16-bit, 32 tf32 or 128
    8-bit elements), the asynchronous form. K tile ``kt`` goes into stage ``kt % 2`` and its group is committed
    without waiting; ``T.tile_mma_wait(1)`` then leaves only that newest group in flight, so the group of K tile
    ``kt - 1`` (the other stage) has retired and the next iteration may refill its stage. The groups accumulate into
    one fragment (wgmmas of one shape into the same accumulator are ordered)."""
    k_tile = 128 // {"bfloat16": 2, "float16": 2, "float32": 4}.get(dtype, 1)
    kw, k = k_tile, tiles * k_tile
    a_layout = mma_shared_layout(dtype, "128B", (2, 64, k_tile))
    b_layout = mma_shared_layout(dtype, "128B", (2, n, k_tile))
    accumulator = wgmma_accumulator_layout(n, acc_dtype)

    @T.prim_func
    def gemm(A: T.Buffer((64, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((64, n), acc_dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((2, 64, k_tile), dtype, layout=a_layout, align=1024)
        b_tile = T.alloc_shared((2, n, k_tile), dtype, layout=b_layout, align=1024)
        acc = T.alloc_local((64, n), acc_dtype, layout=accumulator)
        for kt in T.serial(tiles):
            T.tile_copy(a_tile[kt % 2], A[0:64, kt * kw : kt * kw + kw])
            T.tile_copy(b_tile[kt % 2], B[0:n, kt * kw : kt * kw + kw])
            T.tile_mma(acc, a_tile[kt % 2], b_tile[kt % 2], accumulate=kt > 0, wait=False)
            T.tile_mma_wait(1)  # K tile kt - 1's group retired: its stage may be refilled
        T.tile_mma_wait(0)
        T.tile_copy(D, acc)

    return gemm


def wgmma_warp_specialized(n: int = 128, k: int = 256, k_tile: int = 64, stages: int = 2):
    """Two warpgroups with two roles: warp 0 (of warpgroup 0) loads each K tile with TMA into ring stage ``kt %
    stages``, arriving on ``full[s]``; warpgroup 1 waits for ``full[s]``, issues its wgmmas without waiting
    (``scope="warpgroup"``, its accumulator on warpgroup 1: ``first_warpgroup=1``), waits until only that group is
    in flight and then hands the previous stage back (``empty``, 128 arrivals), which the producer waits for
    before refilling it."""
    tiles, kw, s_ = k // k_tile, k_tile, stages
    a_layout = mma_shared_layout("bfloat16", "128B", (stages, 64, k_tile))
    b_layout = mma_shared_layout("bfloat16", "128B", (stages, n, k_tile))
    accumulator = wgmma_accumulator_layout(n, first_warpgroup=1)

    @T.prim_func
    def gemm(A: T.Buffer((64, k), "bfloat16"), B: T.Buffer((n, k), "bfloat16"), D: T.Buffer((64, n), "float32")):
        T.device_entry()
        tx = T.thread_id([256])
        a_tile = T.alloc_shared((s_, 64, k_tile), "bfloat16", layout=a_layout, align=1024)
        b_tile = T.alloc_shared((s_, n, k_tile), "bfloat16", layout=b_layout, align=1024)
        full = T.alloc_shared((s_,), "uint64")
        empty = T.alloc_shared((s_,), "uint64")
        acc = T.alloc_local((64, n), "float32", layout=accumulator)
        for s in T.unroll(s_):
            T.mbarrier_init(full[s], 2)  # the two TMA copies
            T.mbarrier_init(empty[s], 128)  # the consumer warpgroup's threads
        if tx // 32 == 0:  # producer: one warp, its elected lane issues the TMA copies
            for kt in T.serial(tiles):
                if kt >= s_:  # stage kt % s_ was read by the group of K tile kt - s_
                    T.mbarrier_wait(empty[kt % s_], (kt // s_ - 1) % 2)
                T.tile_copy_async(a_tile[kt % s_], A[0:64, kt * kw : kt * kw + kw], full[kt % s_], scope="warp")
                T.tile_copy_async(b_tile[kt % s_], B[0:n, kt * kw : kt * kw + kw], full[kt % s_], scope="warp")
        elif tx // 128 == 1:  # consumer warpgroup
            for kt in T.serial(tiles):
                T.mbarrier_wait(full[kt % s_], kt // s_ % 2)
                T.tile_mma(acc, a_tile[kt % s_], b_tile[kt % s_], kt > 0, scope="warpgroup", wait=False)
                T.tile_mma_wait(1)  # the group of K tile kt - 1 has retired: release its stage
                if kt > 0:
                    T.mbarrier_arrive(empty[(kt - 1) % s_])
            T.tile_mma_wait(0)
            T.tile_copy(D, acc, "warpgroup")

    return gemm


#: Operand dtype -> (accumulator dtype, K: two instruction steps or more).
DTYPES = {
    "float16": ("float32", 64),
    "float32": ("float32", 32),
    "float8_e4m3fn": ("float32", 128),
    "int8": ("int32", 128),
}

KERNELS = KernelTable()  # each kernel built (for ARCH: load_examples reads it) when first looked up
KERNELS.add("wgmma_bf16_64x128x64", gemm_reference("float32"), wgmma_bf16_64x128x64)
for _dtype, (_acc, _k) in DTYPES.items():
    KERNELS.add(f"wgmma_{_dtype}", gemm_reference(_acc), wgmma_gemm, 64, 128, _k, _dtype, _acc)
KERNELS.add("wgmma_float16_f16_accumulate", gemm_reference("float16"), wgmma_gemm, 64, 64, 64, "float16", "float16")
for _side in ("A", "B"):
    for _mode in ("none", "32B", "64B", "128B"):
        for _major in ("K", "MN"):
            _rows = 64 if _side == "A" else 128
            _layout = mma_shared_layout("float16", _mode, (_rows, 64), major=_major)
            _given = {"a_layout": _layout} if _side == "A" else {"b_layout": _layout}
            KERNELS.add(
                f"wgmma_{_side}_{_mode}_{_major}",
                gemm_reference("float32"),
                wgmma_gemm,
                64,
                128,
                64,
                "float16",
                **_given,
            )
KERNELS.add("wgmma_rs", gemm_reference("float32"), wgmma_rs)
KERNELS.add("wgmma_m128_two_warpgroups", gemm_reference("float32"), wgmma_gemm, 128, 128, 64)
KERNELS.add("wgmma_n256", gemm_reference("float32"), wgmma_gemm, 64, 256, 64)
KERNELS.add("wgmma_n200", gemm_reference("float32"), wgmma_gemm, 64, 200, 64)
KERNELS.add("wgmma_k_loop_async", gemm_reference("float32"), wgmma_k_loop_async)
for _dtype in ("float16", "float32", "float8_e4m3fn"):
    KERNELS.add(f"wgmma_k_loop_async_{_dtype}_float32", gemm_reference("float32"), wgmma_k_loop_async, 128, 4, _dtype)
# a float16 accumulator: K = 128 keeps the sums of the sample inputs inside float16's range
KERNELS.add(
    "wgmma_k_loop_async_float16_float16", gemm_reference("float16"), wgmma_k_loop_async, 64, 2, "float16", "float16"
)
KERNELS.add("wgmma_k_loop_async_int8", gemm_reference("int32"), wgmma_k_loop_async, 128, 2, "int8", "int32")
KERNELS.add("wgmma_warp_specialized", gemm_reference("float32"), wgmma_warp_specialized)
