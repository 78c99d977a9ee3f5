"""Tensor memory and the ``tcgen05`` data-movement instructions as data (PTX ISA 9.2, tcgen05 chapter; section
numbers shift between releases, so titles are given too): one record per ``tcgen05.ld/st`` shape and per
``tcgen05.cp`` shape, and the TMEM geometry. The shared-memory descriptor ``tcgen05.cp`` reads (the same as
``tcgen05.mma``'s) is :data:`tirx_layout.hw.smem_descriptor.TCGEN05_DESCRIPTOR`.

The lowering and the constructors read these records; the simulator (``tirx_layout.sim``) deliberately does not:
its model of the same instructions is written separately from the ISA text, so that the two can disagree.

Example: the TMEM lanes one warp reaches with ``tcgen05.ld.sync.aligned.16x256b.x4.b32`` and the columns and
registers it moves per thread; and the lanes a source row lands on in a ``tcgen05.cp`` whose multicast gives each
32-row half of the source to its own pair of warps (rows 0-31 to warps 0 and 1, rows 32-63 to warps 2 and 3).

    >>> shape = LD_ST_SHAPES["16x256b"]
    >>> shape.lanes, 4 * shape.columns_per_num, 4 * shape.registers_per_num
    (16, 32, 16)
    >>> cp = CP_SHAPES["64x128b.warpx2::01_23"]
    >>> [cp.lane_of(40) + copy for copy in cp.replica_lanes]  # row 40, in the first copy and the second
    [72, 104]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: The TVM storage scope of tensor-memory buffers.
TMEM_SCOPE = "tmem"
#: One CTA's tensor memory: 128 lanes x 512 columns of 32 bits ("Tensor Memory").
TMEM_LANES, TMEM_COLUMNS = 128, 512
#: Warp ``w`` of a warpgroup reaches lanes ``32*(w%4) .. 32*(w%4)+31`` only (9.7.16.8.1, access restrictions).
LANES_PER_WARP = 32
#: One-byte ``ue8m0`` scale factors per 32-bit TMEM cell: the SF id (0..3) of a block-scaled MMA picks the byte
#: ("Block scaling", scale factor A/B ID).
SCALE_FACTORS_PER_COLUMN = 4
#: ``tcgen05.alloc`` takes a power of two of at least this many columns.
MIN_ALLOC_COLUMNS = 32


@dataclass(frozen=True)
class LdStShape:
    """A ``tcgen05.ld/st.sync.aligned.<name>.x<N>.b32`` data-movement shape (9.7.16.2.3, "Data Movement Shape").

    ``lanes``: consecutive TMEM lanes one warp moves per instruction; ``rows``: rows a warpgroup's fragment may
    have (the 16-lane shapes cover half of each warp's 32-lane slab, or both halves when issued twice);
    ``columns_per_num``/``registers_per_num``: 32-bit TMEM columns and registers one repetition (``.x1``) covers
    per thread; ``max_num``: the largest ``.num`` the shape allows.
    """

    name: str
    lanes: int
    rows: tuple[int, ...]
    columns_per_num: int
    registers_per_num: int
    max_num: int


#: In the order the lowering tries them; a fragment matches at most one of them for a given tile.
LD_ST_SHAPES = {
    s.name: s
    for s in (
        LdStShape("32x32b", lanes=32, rows=(128,), columns_per_num=1, registers_per_num=1, max_num=128),
        LdStShape("16x64b", lanes=16, rows=(64, 128), columns_per_num=2, registers_per_num=1, max_num=128),
        LdStShape("16x128b", lanes=16, rows=(64, 128), columns_per_num=4, registers_per_num=2, max_num=64),
        LdStShape("16x256b", lanes=16, rows=(64, 128), columns_per_num=8, registers_per_num=4, max_num=32),
    )
}


@dataclass(frozen=True)
class CpShape:
    """A ``tcgen05.cp.cta_group::1.<name>`` shape with its multicast ("tcgen05.cp" shapes and multicast).

    ``rows`` rows of ``bits`` bits each are copied; ``replica_lanes`` are the lane offsets of the copies the
    multicast makes; ``lane_of(r)`` is the lane of row ``r`` in the first copy, relative to the address's lane.
    """

    name: str
    rows: int
    bits: int
    replica_lanes: tuple[int, ...]
    lane_of: Callable[[int], int]


CP_SHAPES = {
    s.name: s
    for s in (
        CpShape("128x256b", 128, 256, (0,), lambda r: r),
        CpShape("128x128b", 128, 128, (0,), lambda r: r),
        CpShape("64x128b.warpx2::02_13", 64, 128, (0, 64), lambda r: r),
        CpShape("64x128b.warpx2::01_23", 64, 128, (0, 32), lambda r: 64 * (r // 32) + r % 32),
        CpShape("32x128b.warpx4", 32, 128, (0, 32, 64, 96), lambda r: r),
        CpShape("4x256b", 4, 256, (0,), lambda r: 32 * r),
    )
}
