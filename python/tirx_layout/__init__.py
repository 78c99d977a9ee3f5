"""tirx_layout: tile layouts over named thread and memory axes for TVM TIRx kernels.

Example:
    >>> from tirx_layout import TileLayout, S, R, laneid, warpid
    >>> TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2:4 @ warpid] + 5 @ warpid)
    TileLayout(S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid)
"""

from . import _ffi  # noqa: F401  (loads the C++ core before any object class is used)
from .axis import (
    BUILTIN_AXES,
    EXEC_LEVELS,
    F,
    P,
    TCol,
    TLane,
    Axis,
    Bank,
    Iter,
    bx,
    by,
    bz,
    cbx,
    cby,
    cbz,
    laneid,
    m,
    tid_in_wg,
    tx,
    warpid,
    wgid,
    wid_in_wg,
)
from .constructors import (
    mma_shared_layout,
    swizzle_mode,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
)
from .layout import TileLayout
from .spec import LayoutSpec, Offset, OnAxis, R, S
from .swizzle import ComposeLayout, SwizzleLayout
from . import cute  # noqa: E402,F401  (the CuTe algebra: tirx_layout.cute)

__all__ = [
    "BUILTIN_AXES",
    "EXEC_LEVELS",
    "Axis",
    "ComposeLayout",
    "Iter",
    "LayoutSpec",
    "Offset",
    "OnAxis",
    "R",
    "S",
    "SwizzleLayout",
    "TileLayout",
    "mma_shared_layout",
    "swizzle_mode",
    "tcgen05_atom_layout",
    "tmem_datapath_layout",
    "wg_local_layout",
    *BUILTIN_AXES,
]
