"""tirx_layout: tile layouts over named thread and memory axes for TVM TIRx kernels.

Example:
    >>> from tirx_layout import TileLayout, S, R, laneid, warpid
    >>> TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2:4 @ warpid] + 5 @ warpid)
    TileLayout(S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid)
"""

#: The package version, in one place: the wheel's metadata reads it from this line (pyproject.toml), and
#: ``tirx-layout --version`` reports it.
__version__ = "0.2.0"


def _tvm_autoload() -> None:
    """The ``tvm.backends`` entry point: ``import tvm`` imports this package, which registers the ``"tirx_layout"``
    pipeline, the TVMScript names and the printer rules. Defined before anything imports TVM, because when this
    package is what imports TVM, TVM's autoload finds it half-initialised and calls this, which then has nothing to
    do: the rest of this module does the registering."""


# The package facade: the public names of every layer, and the layers as attributes (``tirx_layout.sim.run``).
# Importing ``script`` registers the TVMScript names and printer rules, ``transform`` the passes and the
# "tirx_layout" pipeline, ``viz`` the notebook display; ``tools`` is imported by those who use it.
from . import analysis, cute, ir, script, sim, transform, viz
from .hw import (
    mma_accumulator_layout,
    mma_scale_factor_layout,
    mma_scale_factor_shared_layout,
    mma_shared_layout,
    mma_sync_a_layout,
    mma_sync_b_layout,
    mma_sync_c_layout,
    mma_sync_scale_layout,
    swizzle_mode,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
    wgmma_accumulator_layout,
    wgmma_operand_a_layout,
)
from .ir.annotations import layout_of
from .layout import (
    BUILTIN_AXES,
    EXEC_LEVELS,
    Axis,
    ComposeLayout,
    ExecScope,
    Iter,
    LayoutSpec,
    Offset,
    OnAxis,
    R,
    S,
    SwizzleLayout,
    TileLayout,
    from_upstream,
    parse_layout,
    to_upstream,
)
from .layout.axis import (
    Bank,
    F,
    P,
    TCol,
    TLane,
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
from .script import local_view

__all__ = [
    "BUILTIN_AXES",
    "EXEC_LEVELS",
    "Axis",
    "Bank",
    "ComposeLayout",
    "ExecScope",
    "F",
    "Iter",
    "LayoutSpec",
    "Offset",
    "OnAxis",
    "P",
    "R",
    "S",
    "SwizzleLayout",
    "TCol",
    "TLane",
    "TileLayout",
    "analysis",
    "bx",
    "by",
    "bz",
    "cbx",
    "cby",
    "cbz",
    "cute",
    "from_upstream",
    "ir",
    "laneid",
    "layout_of",
    "local_view",
    "m",
    "mma_accumulator_layout",
    "mma_scale_factor_layout",
    "mma_scale_factor_shared_layout",
    "mma_shared_layout",
    "mma_sync_a_layout",
    "mma_sync_b_layout",
    "mma_sync_c_layout",
    "mma_sync_scale_layout",
    "parse_layout",
    "script",
    "sim",
    "swizzle_mode",
    "tcgen05_atom_layout",
    "tid_in_wg",
    "tmem_datapath_layout",
    "to_upstream",
    "transform",
    "tx",
    "viz",
    "warpid",
    "wg_local_layout",
    "wgid",
    "wgmma_accumulator_layout",
    "wgmma_operand_a_layout",
    "wid_in_wg",
]
