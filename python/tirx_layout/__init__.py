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


# The package facade: the public names of every layer, in layer order, and the layers as attributes
# (``tirx_layout.sim.run``). Importing ``script`` registers the TVMScript names and printer rules, ``transform`` the
# passes and the "tirx_layout" pipeline, ``viz`` the notebook display; ``tools`` is imported by those who use it.
from .core import ffi as _ffi  # noqa: E402,F401  (loads the C++ core before any object class is used)
from .layout import (  # noqa: E402
    BUILTIN_AXES,
    EXEC_LEVELS,
    Axis,
    ComposeLayout,
    Iter,
    LayoutSpec,
    Offset,
    OnAxis,
    R,
    S,
    SwizzleLayout,
    TileLayout,
    parse_layout,
)
from .layout.axis import (  # noqa: E402
    F,
    P,
    TCol,
    TLane,
    Bank,
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
from .hw import (  # noqa: E402
    mma_shared_layout,
    swizzle_mode,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
)
from . import analysis, cute, ir, script, sim, transform, viz  # noqa: E402,F401
from .ir.annotations import layout_of  # noqa: E402
from .script import local_view  # noqa: E402

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
    "layout_of",
    "local_view",
    "mma_shared_layout",
    "parse_layout",
    "script",
    "swizzle_mode",
    "tcgen05_atom_layout",
    "tmem_datapath_layout",
    "transform",
    "wg_local_layout",
    *BUILTIN_AXES,
]
