"""Where a buffer's tirx_layout layout lives in TIR.

TVM's buffer type can only hold TVM's own layouts, so ours travels beside the buffer:

* an allocation keeps it in the ``AllocBuffer`` statement's annotations under :data:`LAYOUT_KEY`;
* a declaration (``DeclBuffer``, which has no annotation slot) is followed by ``AttrStmt(node=layout,
  attr_key=LAYOUT_KEY, value=buffer)`` around the rest of its scope.
"""

from __future__ import annotations

import tvm
import tvm_ffi

from ..layout import LAYOUT_TYPES

#: Annotation / attribute key under which a buffer's layout is stored.
LAYOUT_KEY = "tirx_layout.layout"


def is_layout(value) -> bool:
    """Whether ``value`` is a tirx_layout layout (as opposed to a TVM layout, a string or ``None``).

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> is_layout(TileLayout(S[8, 8])), is_layout("default")
        (True, False)
    """
    return isinstance(value, LAYOUT_TYPES)


def buffer_layouts(func_or_stmt) -> dict:
    """Every buffer of a function (or statement) that carries a tirx_layout layout, mapped to that layout.

    Example:
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((8, 8), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([64])
        ...     Sm = T.alloc_shared((8, 8), "float32", layout=T.layout("S[(8, 8):(1, 8)]"))
        ...     Sm[tx // 8, tx % 8] = A[tx // 8, tx % 8]
        ... ''')
        >>> [(buffer.name, str(layout)) for buffer, layout in buffer_layouts(func).items()]
        [('Sm', 'S[(8, 8):(1, 8)]')]
    """
    allocated, declared = _collect(func_or_stmt)
    return {**allocated, **declared}


def allocation_layouts(func_or_stmt) -> dict:
    """The allocations (``AllocBuffer``) that carry a layout: buffer -> layout.

    Example: ``allocation_layouts(func)`` is ``buffer_layouts(func)`` without the ``T.decl_buffer`` windows.
    """
    return _collect(func_or_stmt)[0]


def declaration_layouts(func_or_stmt) -> dict:
    """The declarations (``T.decl_buffer(..., layout=L)``, stored as an ``AttrStmt``) that carry a layout:
    buffer -> layout.

    Example: ``declaration_layouts(func)`` is ``buffer_layouts(func)`` without the allocations.
    """
    return _collect(func_or_stmt)[1]


def _collect(func_or_stmt) -> tuple[dict, dict]:
    root = func_or_stmt.body if isinstance(func_or_stmt, tvm.tirx.PrimFunc) else func_or_stmt
    allocated, declared = {}, {}

    def on_alloc(stmt):
        if LAYOUT_KEY in stmt.annotations:
            allocated[stmt.buffer] = stmt.annotations[LAYOUT_KEY]

    def on_attr(stmt):
        if stmt.attr_key == LAYOUT_KEY:
            declared[stmt.value] = stmt.node

    tvm_ffi.structural_walk(root, [(tvm.tirx.AllocBuffer, on_alloc), (tvm.tirx.AttrStmt, on_attr)])
    return allocated, declared


def layout_of(buffer, func=None):
    """The tirx_layout layout a buffer carries in ``func`` (a ``PrimFunc``), or ``None``. ``buffer`` is a buffer
    object or its name.

    Example: for the kernel of :func:`buffer_layouts`'s example, ``layout_of("Sm", func)`` is
    ``TileLayout(S[(8, 8):(1, 8)])`` and ``layout_of("A", func)`` is ``None``.
    """
    if func is None:
        raise TypeError("layout_of(buffer, func): pass the PrimFunc that declares the buffer")
    for buf, layout in buffer_layouts(func).items():
        if (isinstance(buffer, str) and buf.name == buffer) or (not isinstance(buffer, str) and buf.same_as(buffer)):
            return layout
    return None
