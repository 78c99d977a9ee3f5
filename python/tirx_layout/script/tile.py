"""``T.tile_copy(dst, src, scope)`` in TVMScript: builds the ``tirx_layout.tile_copy`` op of
``tirx_layout.ir.tile_ops``, which ``tirx_layout.transform.LowerTileOps`` turns into per-thread code."""

from __future__ import annotations

from ..ir.tile_ops import copy_call


def tile_copy(dst, src, scope: str = "cta"):
    """``T.tile_copy(dst, src, scope="cta")``: copy the tile ``src`` into ``dst``. Each side is a buffer or a
    region of one (``A[0:64, 32:64]``) in global, shared, register (``local``) or tensor memory; a register fragment
    is always the whole buffer. ``scope`` says which threads run the copy together: the whole CTA, each warpgroup,
    or each warp (the regions may then depend on the warp or warpgroup index).

    Example (inside a ``@T.prim_func``): ``T.tile_copy(tile, A[0:64, 0:64])`` then ``T.tile_copy(frag, tile)``.

        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4, 8), "float32", "A")
        >>> B = tvm.tirx.decl_buffer((4, 8), "float32", "B", scope="shared")
        >>> tile_copy(B, A)
        T.tile_copy(B[0:4, 0:8], A[0:4, 0:8], "cta")
    """
    return copy_call(dst, src, scope)
