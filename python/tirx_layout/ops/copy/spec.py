"""``T.tile_copy(dst, src, scope="cta")``: copy a tile between two buffer regions.

Each side is a region of a global, shared, register (``local``) or tensor-memory buffer; a register fragment is
always the whole buffer. ``scope`` says which threads run the copy together: the whole CTA, each warpgroup or each
warp (the regions may then depend on the warp or warpgroup index), or one thread (a ``tcgen05.cp`` from shared
memory into TMEM, which one thread issues). It lowers per thread on every target (``ops/copy/lower.py``, by the plan
of ``ops/copy/plan.py``), to ``tcgen05.ld``/``tcgen05.st`` between TMEM and a fragment and to ``tcgen05.cp`` from
shared memory into TMEM (``ops/tmem/``).

Casting: the two sides may have different dtypes; each element is converted once (``cast.py``):

* float -> a float that holds all its values (16/8-bit floats -> float32, 8-bit floats -> float16/bfloat16):
  exact;
* float32 -> bfloat16/float16, float16 <-> bfloat16: round to nearest even, overflow to infinity (``cvt.rn``);
* any float -> float8_e4m3fn/e5m2: round to nearest even, saturating (``cvt.rn.satfinite``): beyond the largest
  finite value (448 / 57344), infinities too, that value; NaN stays NaN;
* integer -> narrower integer: the low bits (two's complement wrap-around); -> wider: sign- or zero-extended by
  the source's signedness; integer -> float: round to nearest even;
* float -> integer is refused (round and clamp explicitly), as are a ``tcgen05.cp`` (shared -> TMEM) and a TMA copy
  between dtypes: they copy bits. A TMEM side converts in registers of TMEM's dtype (``tcgen05.ld`` then convert,
  convert then ``tcgen05.st``).

Fragments of different placements: the copy moves the data between threads (``exchange.py``): warp shuffles when
every element stays in its warp, else a shared scratch between CTA barriers (at scope "cta").

Inference: the two sides hold equal tiles (:class:`Equal`); a fragment copied to or from TMEM takes the register
image of the ``tcgen05.ld/st`` shape that moves the TMEM tile, and an open shared tile copied into TMEM the image a
``tcgen05.cp`` descriptor reads (:class:`Derived`).
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm

from ...analysis.shape_fit import layout_dims, reinterprets
from ...analysis.thread_placement import same_placement
from ...hw.tcgen05 import TMEM_SCOPE
from ...hw.threads import CTA_LEVELS
from ..operands import FragmentOperand, operand
from ..spec import Derived, Equal, OpCall, OpSpec, Reach, Record, RegionField, ScopeField
from ..tmem import fragment_for, plan_tmem_copy, shared_operand_for, tmem_allocations
from .cast import conversion
from .exchange import plan_exchange

#: The scopes a tile copy may run at: the threads of the whole CTA, of each warpgroup, of each warp, or (only for
#: a ``tcgen05.cp`` from shared memory into TMEM, which one thread issues) the one thread reaching it.
COPY_SCOPES = CTA_LEVELS
SHARED_SCOPES = ("shared", "shared.dyn")


@dataclass(frozen=True)
class CopyRecord(Record):
    """A ``T.tile_copy`` checked: its two sides as operands (``ops/operands.py``) once their layouts are decided
    (``None`` before), for a copy with a TMEM side the plan of its ``tcgen05`` instructions, and for one between
    fragments of different placements the plan of its exchange between threads (``exchange.py``)."""

    dst: object = None
    src: object = None
    tmem_plan: object = None
    exchange: object = None

    @property
    def scope(self) -> str:
        return self.call.scope


def _extents(region, role: str, name: str) -> tuple:
    extents = []
    for r in region.region:
        if not hasattr(r.extent, "value"):
            raise ValueError(f"T.tile_copy's {role} region of {name} has a symbolic extent: {region}")
        extents.append(int(r.extent.value))
    return tuple(extents)


class TileCopy(OpSpec):
    """``T.tile_copy(dst, src, scope="cta")``: copy the tile ``src`` into ``dst`` (see the module docstring).

    Example (inside a ``@T.prim_func``): ``T.tile_copy(tile, A[0:64, 0:64])`` then ``T.tile_copy(frag, tile)``.

        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4, 8), "float32", "A")
        >>> B = tvm.tirx.decl_buffer((4, 8), "float32", "B", scope="shared")
        >>> TILE_COPY(B, A), TILE_COPY(B, A, "warp")
        (T.tile_copy(B[0:4, 0:8], A[0:4, 0:8]), T.tile_copy(B[0:4, 0:8], A[0:4, 0:8], "scope", "warp"))
    """

    name = "tile_copy"
    description = "copy a tile between two buffer regions"
    fields = (RegionField("dst", writes=True), RegionField("src"), ScopeField(COPY_SCOPES))

    def relations(self, call: OpCall) -> tuple:
        found = [Equal(call.dst, call.src, call.scope, call.where)]
        why = f"T.tile_copy({call.dst}, {call.src}){call.where}"
        for tmem, other in ((call.src, call.dst), (call.dst, call.src)):
            if tmem.source.scope() != TMEM_SCOPE:
                continue
            if other.source.scope() == "local":
                found.append(Derived(other.source, (tmem.source,), _tmem_fragment(tmem, other, why), why))
            elif other is call.src and other.source.scope() == "shared" and _stage_of_2d(other):
                found.append(Derived(other.source, (tmem.source,), _cp_image(tmem, other), why))
        return tuple(found)

    def rules(self, call: OpCall, ctx) -> CopyRecord:
        family = self.family(ctx)
        dst, src = call.dst.source, call.src.source
        threads = ctx.threads.count
        try:
            conversion(str(src.dtype), str(dst.dtype))
        except ValueError as err:
            raise ValueError(f"T.tile_copy from {src.name} to {dst.name}: {err}") from None
        src_extents, dst_extents = _extents(call.src, "source", src.name), _extents(call.dst, "destination", dst.name)
        if tuple(e for e in src_extents if e != 1) != tuple(e for e in dst_extents if e != 1):
            raise ValueError(
                f"T.tile_copy from {src.name} to {dst.name}: region shapes {list(src_extents)} and "
                f"{list(dst_extents)} differ"
            )
        tmem = [b for b in (dst, src) if b.scope() == TMEM_SCOPE]
        if len(tmem) == 2:
            raise ValueError(f"T.tile_copy from {src.name} to {dst.name}: TMEM to TMEM has no tcgen05 instruction")
        allocated = ctx.cached("tmem allocations", lambda: tmem_allocations(ctx.func))
        for buffer in tmem:
            if not any(stmt.buffer.same_as(buffer) for stmt in allocated):
                raise ValueError(
                    f"T.tile_copy with TMEM buffer {buffer.name}: a TMEM buffer is allocated with "
                    "T.alloc_tmem(shape, dtype, layout=...) in this kernel"
                )
        cp = dst.scope() == TMEM_SCOPE and src.scope() in SHARED_SCOPES
        if call.scope == "thread" and not cp:
            raise ValueError(
                f"T.tile_copy from {src.name} to {dst.name} at scope 'thread': that scope is for tcgen05.cp (shared "
                "memory -> TMEM), which one thread issues; copy at scope 'cta', 'warpgroup' or 'warp'"
            )
        if cp and str(dst.dtype) != str(src.dtype):
            raise ValueError(
                f"T.tile_copy from {src.name} ({src.dtype}, shared) to {dst.name} ({dst.dtype}, TMEM) is a tcgen05.cp, "
                f"which copies bits without converting; convert on the way through registers (T.tile_copy into a "
                f"{dst.dtype} fragment, then tcgen05.st it with T.tile_copy), or stage the tile as {dst.dtype}"
            )
        if cp:
            for buffer in (dst, src):
                layout = ctx.layouts.get(buffer)
                if layout is not None and reinterprets(layout, buffer.shape):
                    raise ValueError(
                        f"tcgen05.cp reads the image of {buffer.name}, but the layout's shape differs from the "
                        f"buffer's: {layout} is written for {layout_dims(layout)}, {buffer.name} has shape "
                        f"{tuple(int(e) for e in buffer.shape)}; give {buffer.name} a layout of its own shape"
                    )
        # tcgen05.ld/st: each warp moves its own lane window with whole-warp instructions (PTX ISA 9.7.16.8.1)
        reach = Reach.shared_work("T.tile_copy", call.scope, per_warp=bool(tmem) and not cp)
        if not (ctx.decided(dst) and ctx.decided(src)):
            return CopyRecord(call, family, reach=reach)
        d = operand(call.dst, ctx.layouts, "destination", ctx.tables, ctx.analyzer)
        s = operand(call.src, ctx.layouts, "source", ctx.tables, ctx.analyzer)
        both_fragments = isinstance(d, FragmentOperand) and isinstance(s, FragmentOperand)
        if both_fragments and d.layout != s.layout and not same_placement(d.layout, s.layout, d.shape, threads):
            # the data moves between threads: warp shuffles, or a shared scratch across warps (ops/copy/exchange.py)
            return CopyRecord(call, family, d, s, exchange=plan_exchange(d, s, call.scope, threads), reach=reach)
        plan = plan_tmem_copy(d, s, call.scope, threads) if tmem else None
        return CopyRecord(call, family, d, s, plan, reach=reach)


def _stage_of_2d(region) -> bool:
    """Whether ``region`` is its buffer's last two dimensions whole, after leading (stage) indices of extent 1."""
    buffer = region.source
    *stages, rows, cols = region.region
    whole = all(
        isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0 and int(r.extent) == int(e)
        for r, e in zip((rows, cols), buffer.shape[-2:], strict=True)
    )
    return len(buffer.shape) >= 2 and whole and all(int(r.extent) == 1 for r in stages)


def _tmem_fragment(tmem_region, fragment_region, why: str):
    """The register image of the ``tcgen05.ld/st`` shape that moves ``tmem_region``, for the open fragment."""

    def derive(layouts: dict):
        fragment = fragment_region.source
        shape = tuple(int(e) for e in fragment.shape)
        if len(shape) != 2:
            raise ValueError(
                f"the fragment {fragment.name} of {why} is copied to or from tensor memory, so it is a (rows, cols) "
                f"tile; it has shape {shape}"
            )
        # the image of TMEM's dtype: a casting copy moves registers of it, placed as the fragment (then converts)
        return fragment_for(operand(tmem_region, layouts, "TMEM side"), *shape, str(tmem_region.source.dtype))

    return derive


def _cp_image(tmem_region, shared_region):
    """A layout of the whole shared tile that a ``tcgen05.cp`` descriptor reads into ``tmem_region``."""

    def derive(layouts: dict):
        return shared_operand_for(operand(tmem_region, layouts, "TMEM side"), shared_region, layouts)

    return derive


TILE_COPY = TileCopy()

__all__ = ["COPY_SCOPES", "TILE_COPY", "CopyRecord", "TileCopy"]
