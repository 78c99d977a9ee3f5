"""The TVMScript surface: ``T.alloc_shared(..., layout=L)`` and friends, ``T.decl_buffer(..., layout=L)``,
``T.local_view(fragment)``, ``T.layout("...")``, and ``T.<op>`` for every tile op of the registry (``ops.py``:
``T.tile_copy``, ``T.tile_mma``, ``T.mbarrier_wait``, ...), registered on ``from tvm.script import tirx as T`` when
``tirx_layout`` is imported; and printing that shows layouts as ``T.layout("...")`` and the ops' named arguments as
keywords.

Example:
    >>> import tirx_layout
    >>> from tvm.script import tirx as T
    >>> T.layout("S[(8, 16):(1, 8)]")
    TileLayout(S[(8, 16):(1, 8)])
"""

from __future__ import annotations

from tvm import tirx
from tvm.tirx.script.builder.ir import register_script_namespace

from ..ir.annotations import LAYOUT_KEY, buffer_layouts, layout_of
from ..layout.text import parse_layout
from ..ops.helpers import sync
from . import buffers, ops
from .buffers import local_view
from .printing import layout_source, print_layouts_lazily


def script_layout(text: str):
    """``T.layout("...")``: the layout a printed kernel spells, read by :func:`tirx_layout.parse_layout`
    (a bare swizzle included, since a buffer may carry one).

    Example:
        >>> script_layout("SwizzleLayout(3, 3, 3)")
        SwizzleLayout(3, 3, 3)
    """
    return parse_layout(text, swizzle_alone=True)


def elect_one():
    """``T.elect_one()``: true in the one lane of the executing warp that ``elect.sync`` elects (its lowest active
    lane), false in the others; every lane of the warp must reach it together. A role one thread plays (a TMA
    producer) runs under ``if T.elect_one():`` with its copies at ``scope="thread"``: ptxas knows the elected lane is
    alone in a converged warp, so it issues the role's TMA copies with no election per copy (the pipelined GEMM's
    producer loop: 34 -> 24 SASS instructions per K tile against one election per K tile's copies).

    Example:
        >>> "tirx_layout_sync_elect" in str(elect_one()), str(elect_one().ty)
        (True, 'bool')
    """
    return tirx.NE(sync.elect(), tirx.const(0, "uint32"))


_SCRIPT_NAMES = {
    "alloc_buffer": buffers.alloc_buffer,
    "alloc_shared": buffers.alloc_shared,
    "smem": buffers.alloc_shared,
    "alloc_local": buffers.alloc_local,
    "alloc_tmem": buffers.alloc_tmem,
    "decl_buffer": buffers.decl_buffer,
    "local_view": local_view,
    "layout": script_layout,
    "elect_one": elect_one,
}


def install() -> None:
    """Register the ``T.`` names above and the ops', and the printer rules for the first print (idempotent; done on
    import).

    Example:
        >>> install()
        >>> from tvm.script import tirx as T
        >>> T.local_view is local_view, T.tile_copy.__name__
        (True, 'tile_copy')
    """
    for name, fn in _SCRIPT_NAMES.items():
        register_script_namespace(name, fn)
    ops.install()
    print_layouts_lazily()


install()

__all__ = ["LAYOUT_KEY", "buffer_layouts", "install", "layout_of", "layout_source", "local_view", "parse_layout"]
