"""Tile operations in TVMScript: ``T.tile_copy(dst, src)`` moves a whole tile between two buffer regions.

The call is an ``Evaluate`` of our own TVM op ``tirx_layout.tile_copy`` (registered here, printed as
``T.tile_copy(dst, src, scope)``), which ``tirx_layout.transform.LowerTileOps`` turns into per-thread code.
"""

from __future__ import annotations

import tvm
import tvm_ffi

COPY_OP_NAME = "tirx_layout.tile_copy"
EXEC_SCOPES = {"cta": None, "warpgroup": 128, "warp": 32}


def _register_op() -> tvm.ir.Op:
    if COPY_OP_NAME not in tvm_ffi.get_global_func("ir.ListOpNames")():
        tvm_ffi.get_global_func("ir.RegisterOp")(COPY_OP_NAME, "copy a tile between two buffer regions")
        tvm.ir.register_op_attr(COPY_OP_NAME, "TCallEffectKind", int(tvm.tirx.CallEffectKind.Opaque.value))
        tvm.ir.register_op_attr(COPY_OP_NAME, "TScriptPrinterName", "tile_copy")
    return tvm.ir.Op.get(COPY_OP_NAME)


COPY_OP = _register_op()


def full_region(buffer):
    """``buffer[0:e0, 0:e1, ...]`` as a region.

    Example:
        >>> import tvm
        >>> full_region(tvm.tirx.decl_buffer((4, 8), "float32", "A"))
        A[0:4, 0:8]
    """
    return buffer[tuple(slice(0, extent) for extent in buffer.shape)]


def tile_copy(dst, src, scope: str = "cta"):
    """``T.tile_copy(dst, src, scope="cta")``: copy the tile ``src`` into ``dst``. Each side is a buffer or a
    region of one (``A[0:64, 32:64]``) in global, shared or register (``local``) memory; a register fragment is
    always the whole buffer. ``scope`` says which threads run the copy together: the whole CTA, each warpgroup, or
    each warp (the regions may then depend on the warp or warpgroup index).

    Example (inside a ``@T.prim_func``): ``T.tile_copy(tile, A[0:64, 0:64])`` then ``T.tile_copy(frag, tile)``.

        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4, 8), "float32", "A")
        >>> B = tvm.tirx.decl_buffer((4, 8), "float32", "B", scope="shared")
        >>> tile_copy(B, A)
        T.tile_copy(B[0:4, 0:8], A[0:4, 0:8], "cta")
    """
    if scope not in EXEC_SCOPES:
        raise ValueError(f"tile_copy scope must be one of {sorted(EXEC_SCOPES)}, got {scope!r}")
    regions = [side if isinstance(side, tvm.ir.TensorRegion) else full_region(side) for side in (dst, src)]
    return tvm.ir.Call(COPY_OP, [*regions, tvm.ir.StringImm(scope)], ret_ty="void")
