"""Block-scaled (MX / NV) GEMMs on consumer Blackwell (sm_120a), which has no tensor memory and no tcgen05: the same
``T.tile_mma(D, A, B, accumulate, scale_a=SFA, scale_b=SFB)`` the datacenter parts lower to
``tcgen05.mma.kind::mxf8f6f4.block_scale`` (examples/block_scaled_gemm.py) lowers here to the warp-level block-scaled
``mma.sync`` when D, A, B and the scale factors are register fragments:

* ``sm120_block_scaled_gemm_mxf8``: ``D = (A * 2^(SFA - 127)) @ (B * 2^(SFB - 127)).T``, A and B ``(64, K)`` e4m3,
  one ue8m0 scale per row and per 32 K elements: ``mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale
  .scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0``;
* ``sm120_block_scaled_gemm_nvf4``: A and B e2m1 (NVFP4) packed two a byte in ``uint8`` ``(64, K/2)`` (the lower K
  element in the low nibble), one ue4m3 scale (held in ``float8_e4m3fn``, sign clear) per 16 K elements:
  ``mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3``.

Both:

* a CTA of 4 warps (2 x 2) computes the ``64 x 64`` tile; A and B go K tile by K tile (128 bytes: 128 e4m3 or 256
  e2m1) through a 3-stage ``cp.async`` ring of 128B-swizzled shared tiles, exactly as ``ampere_gemm``'s
  ``sm120_gemm_fp8``: ``T.tile_copy_async`` issues, ``T.tile_copy_async_wait`` retires, ``T.tile_copy`` reads a stage
  into the ``mma_sync_a_layout`` / ``mma_sync_b_layout`` fragments of 8-bit elements (4-byte loads: ldmatrix moves
  16-bit rows, and an 8-bit fragment's four bytes of a row per lane are one 32-bit load already);
* the scales of a K tile go from global memory straight into their fragments (``mma_sync_scale_layout``): the two
  16-row blocks of a warp's A sit in the two lane pairs of a quad (``thread-id-a``) and the four 8-column blocks of
  its B in the four lanes of a quad (``thread-id-b``), the K chunks in the bytes of a lane's registers
  (``byte-id``), so one 4-byte (mxf8: 4 chunks) or 16-byte (nvf4: 16 chunks) load per lane and operand feeds all 32
  instructions of the warp's K tile; the layouts give every instruction its register and selectors;
* inputs are exact (``exact_inputs``): small values and power-of-two scales, so every float32 sum is exact and the
  result is compared with numpy's exactly.

Built for ``ARCH`` (the block-scaled forms need the architecture-specific target), assembled by ptxas with no local
memory (SASS: 32 ``QMMA.SF.16832`` / ``OMMA.SF.16864 ... 4X`` per K tile), simulated (the simulator's own model of
the block-scaled ``mma.sync``, from the ISA) equal to numpy.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # (also registers T.tile_mma, T.tile_copy_async, layout=..., the pipeline)
from tirx_layout import (
    mma_shared_layout,
    mma_sync_a_layout,
    mma_sync_b_layout,
    mma_sync_c_layout,
    mma_sync_scale_layout,
)
from tirx_layout.tools.kernel_report import Expected, KernelTable

ARCH = "sm_120a"
FP8, UE8M0, UE4M3, PACKED_FP4 = "float8_e4m3fn", "float8_e8m0fnu", "float8_e4m3fn", "uint8"
#: The CTA's tile of D, its warp grid, the shared stages, bytes of A and B per K tile.
TILE_M, TILE_N, WARPS, STAGES, BK = 64, 64, (2, 2), 3, 128
TILES = 4
#: Per format: (operand storage, scale storage, K elements per byte, K elements per scale).
FORMATS = {"mxf8": (FP8, UE8M0, 1, 32), "nvf4": (PACKED_FP4, UE4M3, 2, 16)}
#: The e2m1 values by code (sign bit 3, then 2 exponent bits, 1 mantissa bit).
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def exact_inputs(fmt: str = "mxf8", tiles: int = TILES) -> dict:
    """Deterministic A, B, SFA, SFB whose every float32 sum is exact: mxf8, e4m3 values in -3..3 and ue8m0 scales
    2^-1..2^1 (bytes 126..128); nvf4, e2m1 values of magnitude at most 3 packed two a byte (low nibble first) and
    ue4m3 scales 0.5, 1, 2. Every product is then a multiple of 2^-4 below 2^6, so a sum of ``K`` of them is exact."""
    _, scale, per_byte, per_scale = FORMATS[fmt]
    k = tiles * BK * per_byte
    rng = np.random.default_rng(120)
    to = tirx_layout.sim.numpy_dtype
    if fmt == "mxf8":
        a, b = (rng.integers(-3, 4, (rows, k)).astype(np.float32).astype(to(FP8)) for rows in (TILE_M, TILE_N))
        sfa, sfb = (rng.integers(126, 129, (rows, k // per_scale)).astype(np.uint8) for rows in (TILE_M, TILE_N))
        return {"A": a, "B": b, "SFA": sfa.view(to(scale)), "SFB": sfb.view(to(scale))}
    small = np.array([0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13], np.uint8)  # codes of 0..3 and -0..-3
    a, b = (rng.choice(small, (rows, k)) for rows in (TILE_M, TILE_N))
    pack = lambda codes: (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)  # noqa: E731
    sfa, sfb = (np.float32(2.0) ** rng.integers(-1, 2, (rows, k // per_scale)) for rows in (TILE_M, TILE_N))
    return {"A": pack(a), "B": pack(b), "SFA": sfa.astype(to(scale)), "SFB": sfb.astype(to(scale))}


def unpack_fp4(packed: np.ndarray) -> np.ndarray:
    """e2m1 values (float64) of bytes holding two each, the lower K element in the low nibble."""
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(packed.shape[0], -1)
    return E2M1[codes]


def block_scaled_reference(fmt: str = "mxf8"):
    """``(A * SFA) @ (B * SFB).T`` in float64, each scale over its K elements."""
    _, _, _, per_scale = FORMATS[fmt]

    def reference(a, b, sfa, sfb):
        a, b = (unpack_fp4(x) if fmt == "nvf4" else x.astype(np.float64) for x in (a, b))
        scale_a = np.repeat(sfa.astype(np.float64), per_scale, axis=-1)
        scale_b = np.repeat(sfb.astype(np.float64), per_scale, axis=-1)
        return (a * scale_a) @ (b * scale_b).T

    return reference


def block_scaled_gemm(fmt: str = "mxf8", tiles: int = TILES):
    """The 3-stage cp.async + mma.sync block-scaled GEMM of ``64 x 64`` of D over ``tiles`` K tiles of 128 bytes
    of A and B (128 e4m3 or 256 e2m1 elements)."""
    operand, scale, per_byte, per_scale = FORMATS[fmt]
    m, n, bk, s_, k = TILE_M, TILE_N, BK, STAGES, tiles * BK
    chunks = bk * per_byte // per_scale  # scale chunks per K tile
    a_shared = mma_shared_layout(operand, "128B", (s_, m, bk))
    b_shared = mma_shared_layout(operand, "128B", (s_, n, bk))
    a_frag = mma_sync_a_layout((m, bk), operand, WARPS)
    b_frag = mma_sync_b_layout((n, bk), operand, WARPS)
    sfa_frag = mma_sync_scale_layout("A", (m, chunks), WARPS)
    sfb_frag = mma_sync_scale_layout("B", (n, chunks), WARPS)
    accumulator = mma_sync_c_layout((m, n), "float32", WARPS)

    @T.prim_func
    def gemm(
        A: T.Buffer((m, k), operand),
        B: T.Buffer((n, k), operand),
        SFA: T.Buffer((m, tiles * chunks), scale),
        SFB: T.Buffer((n, tiles * chunks), scale),
        D: T.Buffer((m, n), "float32"),
    ):
        T.device_entry()
        tx = T.thread_id([128])
        As = T.alloc_shared((s_, m, bk), operand, layout=a_shared, align=1024)
        Bs = T.alloc_shared((s_, n, bk), operand, layout=b_shared, align=1024)
        a = T.alloc_local((m, bk), operand, layout=a_frag)
        b = T.alloc_local((n, bk), operand, layout=b_frag)
        sfa = T.alloc_local((m, chunks), scale, layout=sfa_frag)
        sfb = T.alloc_local((n, chunks), scale, layout=sfb_frag)
        acc = T.alloc_local((m, n), "float32", layout=accumulator)
        T.tile_fill(acc, 0)
        for s in T.unroll(s_ - 1):  # the prologue: the first two K tiles in flight
            T.tile_copy_async(As[s], A[0:m, s * bk : s * bk + bk])
            T.tile_copy_async(Bs[s], B[0:n, s * bk : s * bk + bk])
        for kt in T.serial(tiles):
            if kt + 1 < tiles:  # tile kt + 1 (two groups) may stay in flight
                T.tile_copy_async_wait(2)
            else:
                T.tile_copy_async_wait(0)
            if kt + s_ - 1 < tiles:  # into the stage tile kt - 1 used, which every thread is done with
                T.tile_copy_async(As[(kt + s_ - 1) % s_], A[0:m, (kt + s_ - 1) * bk : (kt + s_ - 1) * bk + bk])
                T.tile_copy_async(Bs[(kt + s_ - 1) % s_], B[0:n, (kt + s_ - 1) * bk : (kt + s_ - 1) * bk + bk])
            T.tile_copy(sfa, SFA[0:m, kt * chunks : kt * chunks + chunks])
            T.tile_copy(sfb, SFB[0:n, kt * chunks : kt * chunks + chunks])
            T.tile_copy(a, As[kt % s_])
            T.tile_copy(b, Bs[kt % s_])
            T.tile_mma(acc, a, b, accumulate=True, scale_a=sfa, scale_b=sfb)
        T.tile_copy(D, acc)

    return gemm


KERNELS = KernelTable()  # each kernel built when first looked up, for ARCH
for _fmt in FORMATS:
    KERNELS.add(
        f"sm120_block_scaled_gemm_{_fmt}",
        Expected(block_scaled_reference(_fmt), inputs=4, given=exact_inputs(_fmt)),
        block_scaled_gemm,
        _fmt,
    )
#: What the demo shows of this module.
SHOWCASE = ["sm120_block_scaled_gemm_mxf8", "sm120_block_scaled_gemm_nvf4"]
