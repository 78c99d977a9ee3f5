"""The ``tma`` helpers: tiled tensor copies of the tensor memory accelerator between global and shared memory, named
``tirx_layout_tma_<what>`` through ``tirx_layout.ir.device_calls``; the simulator (``sim/tma_exec.py``) executes a
call from its name and arguments alone. (What the copies move, and the host side, are ``ops/tma/lower.py``'s.)

* ``load_<rank>d(&map, &dst, &bar, c0, ..., global)``: ``cp.async.bulk.tensor.<rank>d.shared::cluster.global.tile
  .mbarrier::complete_tx::bytes`` -- the box at coordinates ``c0..`` (innermost first, ``.s32``) of the tensor map
  into shared memory at ``dst``; complete-tx of its bytes on the mbarrier at ``bar``;
* ``load_<rank>d_multicast(&map, &dst, &bar, c0, ..., mask, global)``: the same load with ``.multicast::cluster``
  and a 16-bit ``ctaMask``: the box lands at ``dst``'s offset in the shared memory of every CTA of the cluster whose
  rank is a set bit of the mask, with complete-tx on the mbarrier at ``bar``'s offset in each;
* ``store_<rank>d(&map, &src, c0, ..., global)``: ``cp.async.bulk.tensor.<rank>d.global.shared::cta.tile
  .bulk_group``, then ``cp.async.bulk.commit_group``;
* ``store_wait()``: ``cp.async.bulk.wait_group.read 0`` -- the thread's committed stores have finished reading
  shared memory (so the tile may be rewritten, or the CTA exit; their global writes complete on their own, and
  without ``.read`` ptxas also invalidates L1, ``CCTL.IVALL``, for nothing).

After the PTX operands, the load and store take the global tensor's address: the compiled helper ignores it (the
hardware reads it from the map); the simulator copies from that buffer.
"""

from __future__ import annotations

import tvm

from ...ir.device_calls import helper_call, helper_name
from .emit import asm_source

FAMILY = "tma"
#: The ranks of a tiled tensor copy (PTX ISA, cp.async.bulk.tensor: ``.dim`` is ``.1d`` .. ``.5d``).
RANKS = (1, 2, 3, 4, 5)
#: After the PTX operands, every load and store helper takes the global tensor's address (for the simulator).
_GLOBAL_PARAM = "const void* global_address"


def _check_rank(rank: int) -> None:
    if rank not in RANKS:
        raise ValueError(f"a TMA tensor copy has rank 1 to 5, got {rank!r}")


def _coords(rank: int, first_operand: int) -> tuple[str, str, str]:
    """A rank-``rank`` helper's coordinate parameters, their asm operand numbers from ``first_operand``, and their
    asm input constraints."""
    return (
        ", ".join(f"int c{i}" for i in range(rank)),
        ", ".join(f"%{i + first_operand}" for i in range(rank)),
        ", ".join(f'"r"(c{i})' for i in range(rank)),
    )


def source(direction: str, rank: int) -> str:
    """The CUDA helper of a rank-``rank`` tiled TMA ``direction``: ``"load"`` (global to shared, complete-tx on an
    mbarrier) or ``"store"`` (shared to global, committed to the thread's bulk async-group).

    Example:
        >>> "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in source("load", 2)
        True
        >>> "cp.async.bulk.commit_group" in source("store", 2)
        True
    """
    _check_rank(rank)
    if direction == "load_multicast":  # PTX operands: dst, the map, bar, the CTA mask, then the coordinates
        pointers, (params, operands, coords) = ("dst", "bar"), _coords(rank, 4)
        params += ", unsigned short cta_mask"
        asm = (
            f'  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes'
            '.multicast::cluster"\n'
            f'               " [%0], [%1, {{{operands}}}], [%2], %3;"\n'
            f'               :: "r"(dst_addr), "l"(map), "r"(bar_addr), "h"(cta_mask), {coords} : "memory");\n'
        )
    elif direction == "load":  # PTX operands: dst, the map, bar, then the coordinates
        pointers, (params, operands, coords) = ("dst", "bar"), _coords(rank, 3)
        asm = (
            f'  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"\n'
            f'               " [%0], [%1, {{{operands}}}], [%2];"\n'
            f'               :: "r"(dst_addr), "l"(map), "r"(bar_addr), {coords} : "memory");\n'
        )
    elif direction == "store":  # PTX operands: src, the map, then the coordinates
        pointers, (params, operands, coords) = ("src",), _coords(rank, 2)
        tensor = f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group"
        asm = (
            f'  asm volatile("{tensor} [%1, {{{operands}}}], [%0];"\n'
            f'               :: "r"(src_addr), "l"(map), {coords} : "memory");\n'
            '  asm volatile("cp.async.bulk.commit_group;" ::: "memory");\n'
        )
    else:
        raise ValueError(f"a TMA tensor copy is a 'load' or a 'store', got {direction!r}")
    # each shared pointer is converted to its shared-window address, <pointer>_addr, before the asm
    shared = ", ".join(f"void* {p}" for p in pointers)
    addresses = "".join(f"  unsigned int {p}_addr = (unsigned int)__cvta_generic_to_shared({p});\n" for p in pointers)
    what = f"load_{rank}d_multicast" if direction == "load_multicast" else f"{direction}_{rank}d"
    name = helper_name(FAMILY, what)
    signature = f"{name}(unsigned long long map, {shared},\n    {params}, {_GLOBAL_PARAM})"
    return f"\n__device__ __forceinline__ void {signature} {{\n{addresses}{asm}}}\n"


def load(rank: int, map_address, shared_address, bar_address, coords, global_data):
    """A rank-``rank`` TMA load of the box at ``coords`` (innermost first, ``int32``) of the tensor map at
    ``map_address`` into ``shared_address``, completing on the mbarrier at ``bar_address``; ``global_data`` is the
    global tensor's address (read by the simulator only).

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0)
        >>> "tirx_layout_tma_load_2d" in str(load(2, z, z, z, [z, z], z))
        True
    """
    if len(coords) != rank:
        raise ValueError(f"a rank-{rank} TMA load takes {rank} coordinates, got {len(coords)}")
    args = (map_address, shared_address, bar_address, *coords, global_data)
    return helper_call(FAMILY, f"load_{rank}d", source("load", rank), *args)


def load_multicast(rank: int, map_address, shared_address, bar_address, coords, cta_mask, global_data):
    """A rank-``rank`` TMA load multicast to the CTAs of the cluster whose ranks are the set bits of ``cta_mask`` (a
    16-bit ``ctaMask``): the box lands at ``shared_address``'s offset in each one's shared memory and performs
    complete-tx of its bytes on the mbarrier at ``bar_address``'s offset in each one.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0)
        >>> "tirx_layout_tma_load_2d_multicast" in str(load_multicast(2, z, z, z, [z, z], 3, z))
        True
        >>> ".multicast::cluster" in source("load_multicast", 2)
        True
    """
    if len(coords) != rank:
        raise ValueError(f"a rank-{rank} TMA load takes {rank} coordinates, got {len(coords)}")
    mask = tvm.tirx.const(cta_mask, "uint16") if isinstance(cta_mask, int) else tvm.tirx.Cast("uint16", cta_mask)
    args = (map_address, shared_address, bar_address, *coords, mask, global_data)
    return helper_call(FAMILY, f"load_{rank}d_multicast", source("load_multicast", rank), *args)


def store(rank: int, map_address, shared_address, coords, global_data):
    """A rank-``rank`` TMA store of the shared box at ``shared_address`` to ``coords`` (innermost first) of the
    tensor map at ``map_address``; ``global_data`` as for :func:`load`.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0)
        >>> "tirx_layout_tma_store_1d" in str(store(1, z, z, [z], z))
        True
    """
    if len(coords) != rank:
        raise ValueError(f"a rank-{rank} TMA store takes {rank} coordinates, got {len(coords)}")
    return helper_call(
        FAMILY, f"store_{rank}d", source("store", rank), map_address, shared_address, *coords, global_data
    )


def store_wait():
    """``cp.async.bulk.wait_group.read 0``: the issuing thread's committed TMA stores have read their shared tiles.

    Example:
        >>> "tirx_layout_tma_store_wait" in str(store_wait())
        True
    """
    return helper_call(FAMILY, "store_wait", asm_source(FAMILY, "store_wait", "cp.async.bulk.wait_group.read 0;"))


__all__ = ["FAMILY", "RANKS", "load", "load_multicast", "source", "store", "store_wait"]
