"""What the pipelined GEMMs of both architectures share (``pipelined_gemm.py`` for Blackwell,
``hopper_pipelined_gemm.py`` for Hopper): the ring of shared stages and its budget, the checks on the problem and the
tile, the persistent tile schedule, the unrolling and the reference. Each kernel loads this module
(``load_example_module``) rather than keeping a copy; it holds no kernels itself.

The ring: ``stages`` shared stages, each one A tile (tile_m, tile_k) and one B tile (tile_n, tile_k) in the
128B-swizzled K-major MMA layout, so tile_k spans exactly one 128-byte swizzle row; two mbarriers per stage
(``full``, ``empty``) and whatever mbarriers the kernel adds (Blackwell: two per accumulator stage).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import tvm

from tirx_layout.tools.kernel_report import Expected

#: Shared memory one CTA may use (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
#: 227 KB for compute capability 9.0 and 10.0 alike).
SHARED_MEMORY_BYTES = 227 * 1024
#: Bytes of one operand element per supported dtype.
OPERAND_BYTES = {"bfloat16": 2, "float16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
#: Bytes of one mbarrier (PTX ISA, "Size and alignment of mbarrier object": 8 bytes, 8-byte aligned).
MBARRIER_BYTES = 8
#: The width of one 128B swizzle row: one stage's K extent.
SWIZZLE_ROW_BYTES = 128
#: A K loop unrolled over the ring is a loop over ring turns (its body: one K step per stage) that stays a loop in
#: the CUDA source (``#pragma unroll 1``): nvcc would otherwise unroll its 16 iterations at 4096^3 too, a
#: 3,500-instruction Blackwell MMA loop instead of a 240-instruction one (SASS measured by bench_gemm: 54 instead of
#: 60 per K tile, for a whole kernel of 4,664 instructions instead of 2,160).
ONE_RING_TURN = {"pragma_unroll": 1}


def ring_bytes(
    tile: tuple[int, int, int],
    stages: int,
    dtype: str,
    other_barriers: int = 0,
    extra_stage_bytes: int = 0,
    extra_what: str = "",
    fixed_bytes: int = 0,
) -> int:
    """The shared-memory bytes of a ring of ``stages`` stages of ``tile = (tile_m, tile_n, tile_k)`` operand tiles
    of ``dtype`` (plus ``extra_stage_bytes`` per stage of what ``extra_what`` names, e.g. scale factors), with a
    ``full`` and an ``empty`` mbarrier per stage and ``other_barriers`` more, and ``fixed_bytes`` outside the ring (an
    epilogue's staging tile); ``ValueError`` when they exceed
    :data:`SHARED_MEMORY_BYTES`, naming both numbers and how many stages would fit.

    Example:
        >>> ring_bytes((128, 256, 64), 4, "bfloat16")  # 4 x (128 + 256) x 64 x 2 + 8 x 8
        196672
        >>> ring_bytes((128, 256, 64), 5, "bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: 5 stages of 128x64 + 256x64 bfloat16 tiles need at least 245840 bytes of shared memory; a CTA
        has 232448 (at most 4 stages fit)
        >>> ring_bytes((128, 256, 128), 5, "float8_e4m3fn", 4, 2048, " and their scale factors")
        Traceback (most recent call last):
        ...
        ValueError: 5 stages of 128x128 + 256x128 float8_e4m3fn tiles and their scale factors need at least 256112
        bytes of shared memory; a CTA has 232448 (at most 4 stages fit)
    """
    tile_m, tile_n, tile_k = tile
    if dtype not in OPERAND_BYTES:
        raise ValueError(f"operand dtype {dtype!r} is not one of {sorted(OPERAND_BYTES)}")
    stage_bytes = (tile_m + tile_n) * tile_k * OPERAND_BYTES[dtype] + extra_stage_bytes
    need = stages * stage_bytes + MBARRIER_BYTES * (2 * stages + other_barriers) + fixed_bytes
    if need > SHARED_MEMORY_BYTES:
        left = SHARED_MEMORY_BYTES - MBARRIER_BYTES * other_barriers - fixed_bytes
        fit = left // (stage_bytes + 2 * MBARRIER_BYTES)
        raise ValueError(
            f"{stages} stages of {tile_m}x{tile_k} + {tile_n}x{tile_k} {dtype} tiles{extra_what} need at least "
            f"{need} bytes of shared memory; a CTA has {SHARED_MEMORY_BYTES} (at most {fit} stages fit)"
        )
    return need


class TileSchedule(NamedTuple):
    """The persistent schedule of a GEMM of ``M x N`` over ``tile_m x tile_n`` output tiles: ``tiles_n`` tiles per
    row of the grid, ``tiles`` in all, ``ctas`` CTAs (CTA ``c`` takes tiles ``c, c + ctas, ...`` in the raster order
    of :meth:`coordinates`), ``per_cta`` the most tiles one CTA takes, ``k_tiles`` K steps of ``tile_k`` per tile,
    ``tiles_m`` rows of tiles, and the raster's ``group``: tiles are walked in groups of ``group`` rows of tiles,
    each group column by column (``group = 1``: row-major)."""

    tiles_n: int
    tiles: int
    ctas: int
    per_cta: int
    k_tiles: int
    tiles_m: int = 1
    group: int = 1

    def coordinates(self, tile_id):
        """``(row, column)`` in the tile grid of output tile ``tile_id`` (an int, or a TIR expression in a kernel):
        ids run down the ``group`` rows of a group, then to its next column; after its last column, to the next
        group (the last one holds the ``tiles_m % group`` rows left, if any). CUTLASS's persistent scheduler has the
        same raster (``RasterOrder::AlongM`` with a swizzle of ``group``); ``group = 1`` is plain row-major order, in
        the very expressions the kernels had before (``tile_id // tiles_n``, ``tile_id % tiles_n``).

        Example (3 x 4 tiles in groups of 2 rows: ids 0..7 walk rows 0-1 column by column, 8..11 row 2):
            >>> plan = TileSchedule(tiles_n=4, tiles=12, ctas=12, per_cta=1, k_tiles=1, tiles_m=3, group=2)
            >>> [plan.coordinates(t) for t in range(12)]  # doctest: +NORMALIZE_WHITESPACE
            [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)]
        """
        group, tiles_n = self.group, self.tiles_n
        if group == 1:
            return tile_id // tiles_n, tile_id % tiles_n
        first, within = tile_id // (group * tiles_n) * group, tile_id % (group * tiles_n)
        left = self.tiles_m % group  # the rows of the last group when it is not full
        if not left:
            height = group
        elif isinstance(tile_id, int):
            height = group if first + group <= self.tiles_m else left
        else:
            height = tvm.tirx.Select(first + group <= self.tiles_m, group, left)
        return first + within % height, within // height


def wave_rows(plan: TileSchedule, tile: tuple[int, int, int]) -> float:
    """The operand rows one wave of the persistent grid reads per K step, averaged over the waves: a wave is ``ctas``
    consecutive tile ids (the tiles the CTAs work on at once), and it reads ``tile_m`` rows of A for every distinct
    row of tiles among them and ``tile_n`` rows of B for every distinct column. Times ``tile_k`` elements, that is
    the operand footprint the wave keeps in L2 at one K step; each distinct tile comes from DRAM once if it stays
    there while the wave's CTAs that share it read it, so fewer rows per wave is less DRAM traffic.

    Example (4096^3, 128 x 256 tiles: 32 x 16 tiles, 512, on 148 CTAs: four waves, the last of 68 tiles): a
    row-major wave of 148 tiles spans 10 or 11 rows of tiles (1,280-1,408 rows of A) and all 16 columns (4,096 rows
    of B); in groups of 18 rows it spans 18 rows (2,304 rows of A) and 9 columns (2,304 rows of B), 13 % fewer:
        >>> plan = schedule("gemm", 4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, 148, group=1)
        >>> round(wave_rows(plan, (128, 256, 64))), round(wave_rows(plan._replace(group=18), (128, 256, 64)))
        (5216, 4544)
    """
    tile_m, tile_n, _ = tile
    waves = [range(start, min(start + plan.ctas, plan.tiles)) for start in range(0, plan.tiles, plan.ctas)]
    rows = 0
    for wave in waves:
        places = [plan.coordinates(t) for t in wave]
        rows += tile_m * len({m for m, _ in places}) + tile_n * len({n for _, n in places})
    return rows / len(waves)


def best_group(plan: TileSchedule, tile: tuple[int, int, int]) -> int:
    """The raster group with the fewest :func:`wave_rows` (the smallest such group on a tie, so row-major when
    grouping gains nothing, as with one wave or one row of tiles).

    Example: 4096^3 on 148 CTAs (a B200) in 128 x 256 tiles: groups of 18 rows of tiles (4,544 operand rows per
    wave and K step against row-major's 5,216); on 132 (an H100), 16; 256^3 in one wave: row-major. (The optimum
    balances the two operands, ``group * tile_m`` rows of A against ``ctas / group * tile_n`` of B: about
    ``sqrt(ctas * tile_n / tile_m)`` = 17 and 16, moved by the waves' edges.)
        >>> best_group(schedule("gemm", 4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, 148, group=1), (128, 256, 64))
        18
        >>> best_group(schedule("gemm", 4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, 132, group=1), (128, 256, 64))
        16
        >>> best_group(schedule("gemm", 256, 256, 256, "bfloat16", (128, 256, 64), 4, None, group=1), (128, 256, 64))
        1
    """
    return min(range(1, plan.tiles_m + 1), key=lambda g: (wave_rows(plan._replace(group=g), tile), g))


def schedule(
    who: str,
    M: int,
    N: int,
    K: int,
    dtype: str,
    tile: tuple[int, int, int],
    stages: int,
    ctas: int | None,
    group: int | None = None,
) -> TileSchedule:
    """The :class:`TileSchedule` of a ring GEMM, after the checks both kernels make (each a ``ValueError`` starting
    with ``who``): tile_k spans one 128-byte swizzle row, K is a multiple of it, the ring has two stages or more,
    ``ctas`` (default: one per output tile) is within the tile count, ``group`` (the raster's rows of tiles per
    group; default :func:`best_group`, the one whose waves read the fewest operand rows) is at least 1 (more than
    the rows of tiles is the whole grid column by column, and is taken as that).

    Example:
        >>> schedule("gemm", 200, 300, 128, "bfloat16", (128, 256, 64), 4, 3)
        TileSchedule(tiles_n=2, tiles=4, ctas=3, per_cta=2, k_tiles=2, tiles_m=2, group=1)
        >>> schedule("gemm", 4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, 148).group
        18
        >>> schedule("gemm", 256, 256, 200, "bfloat16", (128, 256, 64), 4, None)
        Traceback (most recent call last):
        ...
        ValueError: gemm: K = 200 is not a multiple of tile_k = 64
    """
    tile_m, tile_n, tile_k = tile
    if dtype not in OPERAND_BYTES:
        raise ValueError(f"{who}: operand dtype {dtype!r} is not one of {sorted(OPERAND_BYTES)}")
    if tile_k * OPERAND_BYTES[dtype] != SWIZZLE_ROW_BYTES:
        raise ValueError(
            f"{who}: tile_k = {tile_k} {dtype} elements is {tile_k * OPERAND_BYTES[dtype]} bytes; one "
            f"128B swizzle row ({SWIZZLE_ROW_BYTES} bytes) is what the stage layout holds"
        )
    if K % tile_k:
        raise ValueError(f"{who}: K = {K} is not a multiple of tile_k = {tile_k}")
    if stages < 2:
        raise ValueError(f"{who}: stages = {stages}; a ring needs at least 2")
    tiles_m, tiles_n = -(-M // tile_m), -(-N // tile_n)
    tiles = tiles_m * tiles_n
    ctas = tiles if ctas is None else ctas
    if not 1 <= ctas <= tiles:
        raise ValueError(f"{who}: ctas = {ctas} must be in 1..{tiles} (the output tiles)")
    if group is not None and (not isinstance(group, int) or group < 1):
        raise ValueError(f"{who}: group = {group!r}; the raster's group is a count of rows of tiles, 1 or more")
    plan = TileSchedule(tiles_n, tiles, ctas, -(-tiles // ctas), K // tile_k, tiles_m, 1)
    return plan._replace(group=best_group(plan, tile) if group is None else min(group, tiles_m))


def unrolled(func):
    """``func`` with its ``T.unroll`` loops written out (TVM's UnrollLoop pass), so that register and TMEM regions
    start at constant indices, as their lowerings require."""
    with tvm.transform.PassContext(config={"tirx.UnrollLoop": {"explicit_unroll": True}}):
        module = tvm.tirx.transform.UnrollLoop()(tvm.IRModule({"main": func}))
    return tvm.tirx.transform.StmtSimplify()(module)["main"]


def gemm_reference():
    """``D = A @ B.T`` in float64, exact for the sample inputs (integers in -30..30: every float32 partial sum of
    up to 256 products stays below 2^24)."""
    return Expected(lambda a, b: a.astype(np.float64) @ b.astype(np.float64).T, inputs=2, rtol=0.0, atol=0.0)
