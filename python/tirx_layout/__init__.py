"""tirx_layout: tile layouts over named thread and memory axes for TVM TIRx kernels.

Example:
    >>> from tirx_layout import TileLayout, S, R, laneid, warpid
    >>> TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2:4 @ warpid] + 5 @ warpid)
    TileLayout(S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid)
"""


def _tvm_autoload() -> None:
    """The ``tvm.backends`` entry point: ``import tvm`` imports this package, which registers the ``"tirx_layout"``
    pipeline, the TVMScript names and the printer rules. Defined before anything imports TVM, because when this
    package is what imports TVM, TVM's autoload finds it half-initialised and calls this, which then has nothing to
    do: the rest of this module does the registering."""


from . import _ffi  # noqa: F401,E402  (loads the C++ core before any object class is used)
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

# The TVMScript surface, printing rules and the "tirx_layout" pipeline register themselves on import.
from . import script, transform  # noqa: E402
from .notation import parse_layout  # noqa: E402
from .script import layout_of, local_view  # noqa: E402

__all__ += ["layout_of", "local_view", "parse_layout", "script", "transform"]
