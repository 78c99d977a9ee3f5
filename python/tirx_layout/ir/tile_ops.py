"""Our tile operations as TIR: ``T.tile_copy(dst, src, scope)`` is an ``Evaluate`` of the op
``tirx_layout.tile_copy`` with two buffer regions and the scope that runs it (registered here, printed as
``T.tile_copy``). ``LowerTileOps`` turns it into per-thread code."""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

from ..hw.threads import CTA_LEVELS

COPY_OP_NAME = "tirx_layout.tile_copy"
#: The scopes a tile copy may run at: the threads of the whole CTA, of each warpgroup, of each warp, or (only for
#: a ``tcgen05.cp`` from shared memory into TMEM, which one thread issues) the one thread reaching it.
COPY_SCOPES = CTA_LEVELS


def register_op(name: str, description: str, printed: str) -> tvm.ir.Op:
    """Register our TIR op ``name`` once (opaque to TVM's passes, printed as ``T.<printed>``) and return it; every
    op of this layer is registered here.

    Example:
        >>> register_op(COPY_OP_NAME, "copy a tile between two buffer regions", "tile_copy").name
        'tirx_layout.tile_copy'
    """
    if name not in tvm_ffi.get_global_func("ir.ListOpNames")():
        tvm_ffi.get_global_func("ir.RegisterOp")(name, description)
        tvm.ir.register_op_attr(name, "TCallEffectKind", int(tvm.tirx.CallEffectKind.Opaque.value))
        tvm.ir.register_op_attr(name, "TScriptPrinterName", printed)
    return tvm.ir.Op.get(name)


COPY_OP = register_op(COPY_OP_NAME, "copy a tile between two buffer regions", "tile_copy")


def full_region(buffer):
    """``buffer[0:e0, 0:e1, ...]`` as a region.

    Example:
        >>> import tvm
        >>> full_region(tvm.tirx.decl_buffer((4, 8), "float32", "A"))
        A[0:4, 0:8]
    """
    return buffer[tuple(slice(0, extent) for extent in buffer.shape)]


def copy_call(dst, src, scope: str = "cta"):
    """The ``tirx_layout.tile_copy`` call copying ``src`` into ``dst`` (buffers or regions) at ``scope``.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4, 8), "float32", "A")
        >>> B = tvm.tirx.decl_buffer((4, 8), "float32", "B", scope="shared")
        >>> copy_call(B, A)
        T.tile_copy(B[0:4, 0:8], A[0:4, 0:8], "cta")
    """
    if scope not in COPY_SCOPES:
        raise ValueError(f"tile_copy scope must be one of {sorted(COPY_SCOPES)}, got {scope!r}")
    regions = [side if isinstance(side, tvm.ir.TensorRegion) else full_region(side) for side in (dst, src)]
    return tvm.ir.Call(COPY_OP, [*regions, tvm.ir.StringImm(scope)], ret_ty="void")


@dataclass(frozen=True)
class TileCopy:
    """The operands of one ``T.tile_copy``: destination and source regions and the scope."""

    dst: object
    src: object
    scope: str


def as_copy(stmt) -> TileCopy | None:
    """The tile copy ``stmt`` performs (an ``Evaluate`` of ``T.tile_copy``, or the call itself), else ``None``.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4,), "float32", "A")
        >>> as_copy(tvm.tirx.Evaluate(copy_call(A, A))).scope, as_copy(tvm.tirx.Evaluate(0))
        ('cta', None)
    """
    value = stmt.value if isinstance(stmt, tirx.Evaluate) else stmt
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "") == COPY_OP_NAME):
        return None
    dst, src, scope = value.args
    return TileCopy(dst, src, str(scope.value))
