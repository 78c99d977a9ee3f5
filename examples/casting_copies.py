"""Copies that convert and copies that move data between threads (issue 29): ``T.tile_copy`` between buffers of
different dtypes converts each element once (float32 -> bfloat16 rounds to nearest even, -> e4m3 saturates, int32
-> int8 keeps the low bits; docs/decisions.md has every pair), and between fragments of different placements it
exchanges the elements (warp shuffles inside a warp, a shared scratch across warps).

* ``tmem_accumulator_to_bfloat16``: a float32 TMEM accumulator read in four 32-column chunks by a ``T.serial`` loop
  (the TMEM address computed from the loop variable), each chunk ``tcgen05.ld`` into float32 registers and converted
  to a bfloat16 fragment whose layout is inferred, then stored;
* ``float32_to_e4m3_staged``: float32 registers -> an e4m3 shared tile (four lanes a conversion) -> global;
* ``accumulator_to_e4m3_operand``: the Hopper wgmma accumulator converted into the e4m3 A operand of the next wgmma
  (FlashAttention-3's P): two shuffles an element inside each quad; as bfloat16 it would be a register copy;
* ``rows_across_warps_to_bfloat16``: rows over (warp, lane) into rows over (lane, warp), converted to bfloat16
  through a shared scratch between CTA barriers;
* ``requantize_int32_to_int8``: int32 -> int8 in 8-byte stores (the low 8 bits).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (T.tile_copy, layout=..., the pipeline)
from tirx_layout import (
    S,
    TileLayout,
    laneid,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    warpid,
    wgmma_accumulator_layout,
    wgmma_operand_a_layout,
)
from tirx_layout.tools.kernel_report import KernelTable

WARP_ROWS = TileLayout(S[(2, 32, 8) : (1 @ warpid, 1 @ laneid, 1)])
LANE_ROWS = TileLayout(S[(32, 2, 8) : (1 @ laneid, 1 @ warpid, 1)])
ROW_PER_THREAD = TileLayout(S[(2, 32, 64) : (1 @ warpid, 1 @ laneid, 1)])


def tmem_accumulator_to_bfloat16():
    """``B = bfloat16(A)`` for a (128, 128) float32 tile, through a TMEM accumulator read chunk by chunk."""
    tmem = tmem_datapath_layout("D", 128, 128)
    whole = tcgen05_atom_layout("32x32b", (128, 128), "float32")

    @T.prim_func
    def tmem_accumulator_to_bfloat16(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "bfloat16")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 128), "float32", layout=tmem)
        rows = T.alloc_local((128, 128), "float32", layout=whole)
        T.tile_copy(rows, A)
        T.tile_copy(acc, rows)
        for c in T.serial(4):
            chunk = T.alloc_local((128, 32), "bfloat16")  # inferred: the 32x32b image of a float32 chunk
            T.tile_copy(chunk, acc[0:128, c * 32 : c * 32 + 32])
            T.tile_copy(B[0:128, c * 32 : c * 32 + 32], chunk)

    return tmem_accumulator_to_bfloat16


def float32_to_e4m3_staged():
    """``B = e4m3(A)`` for a (64, 64) tile: registers -> shared e4m3 -> global."""

    @T.prim_func
    def float32_to_e4m3_staged(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float8_e4m3fn")):
        T.device_entry()
        tx = T.thread_id([64])
        rows = T.alloc_local((64, 64), "float32", layout=ROW_PER_THREAD)
        tile = T.alloc_shared((64, 64), "float8_e4m3fn")
        T.tile_copy(rows, A)
        T.tile_copy(tile, rows)
        T.cuda.cta_sync()
        T.tile_copy(B, tile)

    return float32_to_e4m3_staged


def fragment_conversion(shape: tuple, threads: int, held, wanted, dtype: str):
    """``B = dtype(A)``: ``A`` loaded into a float32 fragment placed by ``held``, converted into a ``dtype``
    fragment placed by ``wanted`` (the elements move between threads where the two differ), then stored."""

    @T.prim_func
    def fragment_conversion(A: T.Buffer(shape, "float32"), B: T.Buffer(shape, dtype)):
        T.device_entry()
        tx = T.thread_id([threads])
        f = T.alloc_local(shape, "float32", layout=held)
        g = T.alloc_local(shape, dtype, layout=wanted)
        T.tile_copy(f, A)
        T.tile_copy(g, f)
        T.tile_copy(B, g)

    return fragment_conversion


def requantize_int32_to_int8():
    """``B = int8(A)`` (the low 8 bits) for a (128, 64) tile, global to global."""

    @T.prim_func
    def requantize_int32_to_int8(A: T.Buffer((128, 64), "int32"), B: T.Buffer((128, 64), "int8")):
        T.device_entry()
        tx = T.thread_id([128])
        T.tile_copy(B, A)

    return requantize_int32_to_int8


def converted(dtype):
    """The expected output: the input converted as numpy / ml_dtypes convert (round to nearest even, wrap-around)."""
    return lambda a: a.astype(np.dtype(getattr(ml_dtypes, dtype, dtype)))


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("tmem_accumulator_to_bfloat16", converted("bfloat16"), tmem_accumulator_to_bfloat16)
KERNELS.add("float32_to_e4m3_staged", converted("float8_e4m3fn"), float32_to_e4m3_staged)
KERNELS.add(
    "accumulator_to_e4m3_operand",  # the wgmma accumulator into wgmma's e4m3 A operand: shuffles inside each quad
    converted("float8_e4m3fn"),
    fragment_conversion,
    (64, 64),
    128,
    wgmma_accumulator_layout(64),
    wgmma_operand_a_layout(64, "float8_e4m3fn"),
    "float8_e4m3fn",
)
KERNELS.add(  # rows over (warp, lane) into rows over (lane, warp): through a shared scratch
    "rows_across_warps_to_bfloat16",
    converted("bfloat16"),
    fragment_conversion,
    (64, 8),
    64,
    WARP_ROWS,
    LANE_ROWS,
    "bfloat16",
)
KERNELS.add("requantize_int32_to_int8", converted("int8"), requantize_int32_to_int8)

SHOWCASE = ["tmem_accumulator_to_bfloat16", "accumulator_to_e4m3_operand"]
