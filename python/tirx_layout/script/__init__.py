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

from tvm.tirx.script.builder.ir import register_script_namespace

from ..ir.annotations import LAYOUT_KEY, buffer_layouts, layout_of
from ..layout.text import parse_layout
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


_SCRIPT_NAMES = {
    "alloc_buffer": buffers.alloc_buffer,
    "alloc_shared": buffers.alloc_shared,
    "smem": buffers.alloc_shared,
    "alloc_local": buffers.alloc_local,
    "alloc_tmem": buffers.alloc_tmem,
    "decl_buffer": buffers.decl_buffer,
    "local_view": local_view,
    "layout": script_layout,
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
