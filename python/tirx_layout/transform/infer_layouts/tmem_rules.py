"""The strict inference rules of tensor memory, registered with InferLayouts when the pass is imported: a register
fragment copied to or from a TMEM buffer takes the register image of the ``tcgen05.ld/st`` shape that moves that
TMEM tile (``tmem.fragment_for``), and an open shared tile copied into TMEM takes a layout the ``tcgen05.cp``
descriptor can express (``tmem.shared_operand_for``): no other layouts can be moved by the hardware.
"""

from __future__ import annotations

from ...hw.tcgen05 import TMEM_SCOPE
from ..copy_plan import operand
from ..tmem import fragment_for, shared_operand_for
from .infer import CopyOp, register_strict_rule


def tcgen05_fragment_rule(copy: CopyOp, known: dict, threads: int) -> dict:
    """``{fragment buffer: layout}`` for a copy between a TMEM region with a known layout and an open 2-D register
    fragment; empty for any other copy.

    Example: ``T.tile_copy(frag, acc)`` with ``acc`` in ``tmem_datapath_layout("D", 128, 64)`` (float32) and
    ``frag`` declared without a layout gives ``frag`` the layout ``tcgen05_atom_layout("32x32b", (128, 64),
    "float32")``.
    """
    forced = {}
    for tmem_region, fragment_region in ((copy.src, copy.dst), (copy.dst, copy.src)):
        tmem, fragment = tmem_region.source, fragment_region.source
        if tmem.scope() != TMEM_SCOPE or fragment.scope() != "local" or tmem not in known or fragment in known:
            continue
        shape = tuple(int(e) for e in fragment.shape)
        if len(shape) != 2:
            raise ValueError(
                f"the fragment {fragment.name} of {copy} is copied to or from tensor memory, so it is a "
                f"(rows, cols) tile; it has shape {shape}"
            )
        forced[fragment] = fragment_for(operand(tmem_region, known, "TMEM side"), *shape, str(fragment.dtype))
    return forced


def tcgen05_cp_operand_rule(copy: CopyOp, known: dict, threads: int) -> dict:
    """``{shared buffer: layout}`` for ``T.tile_copy(tmem, shared)`` with a known TMEM layout and a whole, open 2-D
    shared tile; empty for any other copy.

    Example: ``T.tile_copy(sf, sf_shared)`` with ``sf`` in ``S[(32, 16):(1@TLane, 1@TCol)] + R[4:32@TLane]`` (uint8)
    keeps ``sf_shared`` row-major: one 16-byte piece per row is already the descriptor's canonical image.
    """
    tmem, shared = copy.dst.source, copy.src.source
    if tmem.scope() != TMEM_SCOPE or shared.scope() != "shared" or tmem not in known or shared in known:
        return {}
    region = copy.src
    if len(shared.shape) != 2 or any(
        int(r.min) != 0 or int(r.extent) != int(e) for r, e in zip(region.region, shared.shape, strict=True)
    ):
        return {}
    return {shared: shared_operand_for(operand(copy.dst, known, "TMEM side"), region, known)}


register_strict_rule(tcgen05_fragment_rule)
register_strict_rule(tcgen05_cp_operand_rule)
