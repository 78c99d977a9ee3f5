"""Quantised GEMMs whose epilogues are ``T.tile_parallel`` loops over the accumulator's logical coordinates.

* ``int8_requantized_gemm``: ``tcgen05.mma.kind::i8`` of int8 ``A`` (128, K) and ``B`` (128, K) into an int32 TMEM
  accumulator, requantised in registers to int8 with a scale and a zero point: ``Q = clamp(rint(acc * scale) + zero,
  -128, 127)`` -- the float32 product rounded to nearest even (``rint``, as numpy's), clamped before the cast (a
  float -> int8 conversion out of range is not defined in C), stored with 16-byte vectors.
* ``fp8_scaled_gemm``: e4m3 operands into a float32 accumulator, ``D = bf16(acc * scale_a * scale_b)`` with one
  scale per tensor (the dequantisation scales of an fp8 GEMM), read from global memory.

The scalars ride in small global arrays (``requant = [scale, zero]``, ``scales = [scale_a, scale_b]``): a kernel
parameter of shape ``(1,)`` prints back as a bare name that does not parse (TVMScript's scalar-buffer sugar), so two
values share one. They are given inputs (powers of two and an integer, so the arithmetic is exact before the final
rounding); the reference rounds exactly as the kernel does.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_parallel, T.tile_mma, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, tmem_datapath_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: The int8 example's requantisation scale and zero point (2^-9: the int32 sums of 128 products of [-30, 30] land
#: in int8).
INT8_REQUANT = np.array([2.0**-9, 3.0], np.float32)
#: The per-tensor dequantisation scales of the fp8 example's A and B.
FP8_SCALES = np.array([0.5, 0.125], np.float32)


def int8_requantized_gemm(k: int = 128):
    """``Q (128, 128) int8 = clamp(rint((A @ B.T) * scale) + zero, -128, 127)`` for int8 ``A``, ``B`` of ``k``
    columns, ``requant = [scale, zero]``.

    Example:
        >>> [p.name for p in int8_requantized_gemm().params]
        ['A', 'B', 'requant', 'Q']
    """
    operand = mma_shared_layout("int8", "128B", (128, k))

    @T.prim_func
    def gemm(
        A: T.Buffer((128, k), "int8"),
        B: T.Buffer((128, k), "int8"),
        requant: T.Buffer((2,), "float32"),
        Q: T.Buffer((128, 128), "int8"),
    ):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((128, k), "int8", layout=operand, align=1024)
        b_tile = T.alloc_shared((128, k), "int8", layout=operand, align=1024)
        acc = T.alloc_tmem((128, 128), "int32", layout=tmem_datapath_layout("D", 128, 128))
        sums = T.alloc_local((128, 128), "int32")  # as tcgen05.ld leaves them: inferred
        quantized = T.alloc_local((128, 128), "int8")  # the same placement: inferred
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tile, b_tile)
        T.tile_copy(sums, acc, "warpgroup")
        for i in T.tile_parallel(128, scope="warpgroup"):
            for j in T.tile_parallel(128):
                scaled = T.meta_var(T.nearbyint(T.Cast("float32", sums[i, j]) * requant[0]) + requant[1])
                quantized[i, j] = T.Cast("int8", T.max(T.min(scaled, T.float32(127)), T.float32(-128)))
        T.tile_copy(Q, quantized, "warpgroup")

    return gemm


def int8_reference() -> Expected:
    def reference(a, b, requant):
        acc = a.astype(np.int64) @ b.astype(np.int64).T
        scaled = np.rint((acc.astype(np.float32) * requant[0]).astype(np.float32)) + requant[1]
        return np.clip(scaled, -128, 127).astype(np.int8)

    return Expected(reference, inputs=3, given={"requant": INT8_REQUANT})


def fp8_scaled_gemm(k: int = 128):
    """``D (128, 128) bf16 = (A @ B.T) * scale_a * scale_b`` for e4m3 ``A``, ``B`` of ``k`` columns.

    Example:
        >>> [p.name for p in fp8_scaled_gemm().params]
        ['A', 'B', 'scales', 'D']
    """
    dtype = "float8_e4m3fn"
    operand = mma_shared_layout(dtype, "128B", (128, k))

    @T.prim_func
    def gemm(
        A: T.Buffer((128, k), dtype),
        B: T.Buffer((128, k), dtype),
        scales: T.Buffer((2,), "float32"),
        D: T.Buffer((128, 128), "bfloat16"),
    ):
        T.device_entry()
        tx = T.thread_id([128])
        a_tile = T.alloc_shared((128, k), dtype, layout=operand, align=1024)
        b_tile = T.alloc_shared((128, k), dtype, layout=operand, align=1024)
        acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
        sums = T.alloc_local((128, 128), "float32")
        out = T.alloc_local((128, 128), "bfloat16")
        T.tile_copy(a_tile, A)
        T.tile_copy(b_tile, B)
        T.tile_mma(acc, a_tile, b_tile)
        T.tile_copy(sums, acc, "warpgroup")
        for i in T.tile_parallel(128, scope="warpgroup"):
            for j in T.tile_parallel(128):
                out[i, j] = T.Cast("bfloat16", sums[i, j] * (scales[0] * scales[1]))
        T.tile_copy(D, out, "warpgroup")

    return gemm


def fp8_reference() -> Expected:
    def reference(a, b, scales):
        acc = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32)
        return (acc * (scales[0] * scales[1])).astype(ml_dtypes.bfloat16)

    return Expected(reference, inputs=3, given={"scales": FP8_SCALES})


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("int8_requantized_gemm", int8_reference(), int8_requantized_gemm)
KERNELS.add("fp8_scaled_gemm", fp8_reference(), fp8_scaled_gemm)
