"""Register fragments seen from the threads that hold them: how many threads a fragment needs, which runs of its
slots are vectors, which logical element each (thread, slot) holds, and whether two fragment layouts place every
element on the same thread and slot."""

from __future__ import annotations

import math

import numpy as np

from ..hw.memory import VECTOR_BYTES
from ..hw.threads import (
    MAX_CTA_THREADS,
    WARP_THREADS,
    axis_within,
    level_threads,
    thread_axis_place,
    thread_unit,
)
from ..layout.axis import Axis
from ..layout.indexing import unflatten
from ..layout.inverse import PlaceInverse
from ..layout.placement import layout_threads, slot_count


def fragment_threads(layout) -> int:
    """The smallest CTA (a multiple of 32 threads) whose thread axes reach every place the fragment uses.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid, warpid
        >>> fragment_threads(TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)]))
        64
    """
    inverse = PlaceInverse(layout)
    count = WARP_THREADS
    while any(axis != "m" and inverse.reach(axis) > thread_axis_place(axis, 0, count)[1] for axis in inverse.axes):
        count *= 2
        if count > MAX_CTA_THREADS:
            raise ValueError(f"fragment {layout} needs more than {MAX_CTA_THREADS} threads")
    return count


def fragment_vector_ok(layout, shape, v: int) -> bool:
    """Whether each aligned run of ``v`` logical elements along the last dimension sits in ``v`` consecutive,
    aligned register slots of one thread.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> fragment_vector_ok(TileLayout(S[(32, 8):(1 @ laneid, 1)]), (32, 8), 8)
        True
    """
    shape = tuple(int(e) for e in shape)
    if shape[-1] % v:
        return False
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    places = layout.apply(*grids, shape=shape)
    for axis, table in places.items():
        runs = np.asarray(table).reshape((*shape[:-1], shape[-1] // v, v))
        step = np.arange(v) if axis == "m" else 0
        if (runs - runs[..., :1] != step).any() or (axis == "m" and (runs[..., 0] % v).any()):
            return False
    return True


def fragment_vector_width(layout, shape, element_bytes: int) -> int:
    """Elements per register-slot vector: the widest of 16/8/4 bytes the fragment's slots allow, else 1.

    Example:
        >>> from tirx_layout import wg_local_layout
        >>> fragment_vector_width(wg_local_layout(64), (128, 64), 2)
        8
    """
    for nbytes in VECTOR_BYTES:
        v = nbytes // element_bytes
        if v > 1 and nbytes % element_bytes == 0 and fragment_vector_ok(layout, shape, v):
            return v
    return 1


def slot_holders(layout, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """For each CTA thread and register slot of a fragment layout (``threads`` threads): the logical (flat,
    row-major) element it holds, -1 for none, and which replica of it (0 for the base copy). Found by enumerating the
    layout's forward map, so any layout works, invertible or not.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> flat, replica = slot_holders(TileLayout(S[(32, 2):(1 @ laneid, 1)]), 32)
        >>> flat[3].tolist(), replica[3].tolist()
        ([6, 7], [0, 0])
    """
    size = int(layout.size())
    places = layout.apply_all(np.arange(size), shape=[size])
    some = np.asarray(next(iter(places.values())))
    places.setdefault("m", np.zeros_like(some))  # one slot per thread: no m iter at all
    slots = slot_count(layout)
    holder = np.full((threads, slots), -1, np.int64)
    replica = np.zeros((threads, slots), np.int64)
    tids = np.arange(threads)
    match = np.ones((threads, *np.asarray(places["m"]).shape), bool)
    for axis, table in places.items():
        if axis == "m":
            continue
        place, _ = thread_axis_place(axis, tids, threads)
        match &= np.asarray(place)[:, None, None] == np.asarray(table)[None]
    t, rep, flat = np.nonzero(match)
    m = np.asarray(places["m"])[rep, flat]
    inside = (m >= 0) & (m < slots)
    # Replica 0 last, so it wins a slot that several replicas share (the lowering stores replica 0 only).
    order = np.argsort(-rep[inside], kind="stable")
    holder[t[inside][order], m[inside][order]] = flat[inside][order]
    replica[t[inside][order], m[inside][order]] = rep[inside][order]
    return holder, replica


def element_holders(layout, shape, every_replica: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """For every element of a ``shape`` fragment: the thread holding it, counted in the frame of the fragment's own
    thread axes (``laneid + 32 * wid_in_wg``; axes of a warpgroup or finer only), and its slot. With
    ``every_replica`` the arrays get a leading axis over the replicas. The forward view of :func:`slot_holders`.

    Example:
        >>> from tirx_layout import tcgen05_atom_layout
        >>> thread, slot = element_holders(tcgen05_atom_layout("16x64b", (64, 8), "float32"), (64, 8))
        >>> int(thread[9, 3]), int(slot[9, 3])
        (7, 1)
    """
    shape = tuple(int(e) for e in shape)
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    places = layout.apply_all(*grids, shape=list(shape)) if every_replica else layout.apply(*grids, shape=list(shape))
    places = {axis: np.asarray(value, np.int64) for axis, value in places.items()}
    extent = next(iter(places.values())).shape if places else shape
    thread = np.zeros(extent, np.int64)
    for axis, value in places.items():
        if axis == "m":
            continue
        unit = thread_unit(axis) if Axis.get(axis).is_thread() else None
        if unit is None or unit > WARP_THREADS:
            raise ValueError(
                f"axis {axis} cannot place a fragment held by one warpgroup (use its thread, lane and warp axes)"
            )
        thread = thread + value * unit
    return thread, places.get("m", np.zeros(extent, np.int64))


def warp_slot_elements(layout, shape, warp: int, first_slot: int, count: int) -> list[list[tuple]]:
    """For each lane of ``warp``, the logical coordinates of its slots ``first_slot .. first_slot + count - 1``
    (empty for a lane that holds nothing there).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> warp_slot_elements(TileLayout(S[(32, 8):(1 @ laneid, 1)]), (32, 8), 0, 2, 2)[3]
        [(3, 2), (3, 3)]
    """
    holder, _ = slot_holders(layout, fragment_threads(layout))
    lanes = holder[warp * WARP_THREADS : (warp + 1) * WARP_THREADS, first_slot : first_slot + count]
    return [[tuple(int(c) for c in unflatten(int(flat), shape)) for flat in lane if flat >= 0] for lane in lanes]


def _whereabouts(layout, shape, threads: int) -> dict:
    """Logical flat index -> where it lives: ``thread t slot s`` for a fragment (its base replica), else the places
    the layout gives it."""
    size = math.prod(int(e) for e in shape)
    if layout_threads(layout) and threads:
        holder, replica = slot_holders(layout, threads)
        out = {}
        for t, s in zip(*np.nonzero((holder >= 0) & (replica == 0)), strict=True):
            out.setdefault(int(holder[t, s]), f"thread {t} slot {s}")
        return out
    places = layout.apply(np.arange(size), shape=[size])
    return {i: str({k: int(np.asarray(v)[i]) for k, v in places.items()}) for i in range(size)}


def scope_gap(layout, shape, level: str, cta_threads: int) -> tuple[int, tuple, dict] | None:
    """Where a fragment run at scope ``level`` (each unit of it -- warp, warpgroup -- copying the whole tile with its
    own threads) falls short: ``(unit, coordinate, place)``, the first unit of ``level`` none of whose threads holds
    a copy of the element at ``coordinate`` (row-major first), and that element's place; ``None`` when every unit
    holds every element. A fragment on axes within ``level`` (``laneid`` for a warp; ``wid_in_wg``, ``tid_in_wg``
    too for a warpgroup) never falls short; one on a wider axis (``warpid``, ``tx``, ``wgid``) puts elements on
    other units' threads.

    Example (a 64-row fragment over two warps, copied at scope "warp": warp 0 holds rows 0-31 only):
        >>> from tirx_layout import TileLayout, S, laneid, warpid
        >>> scope_gap(TileLayout(S[(2, 32):(1 @ warpid, 1 @ laneid)]), (64,), "warp", 64)
        (0, (32,), {'warpid': 1, 'laneid': 0})
        >>> scope_gap(TileLayout(S[(2, 32):(1, 1 @ laneid)]), (64,), "warp", 64) is None
        True
    """
    axes = layout_threads(layout)
    if all(axis_within(axis, level) for axis in axes):
        return None
    shape = tuple(int(e) for e in shape)
    count = math.prod(shape)
    size = level_threads(level, cta_threads)
    holder, _ = slot_holders(layout, cta_threads)
    for unit in range(cta_threads // size):
        flats = holder[unit * size : (unit + 1) * size].ravel()
        held = np.zeros(count, bool)
        held[flats[(flats >= 0) & (flats < count)]] = True
        if not held.all():
            coordinate = tuple(int(c) for c in unflatten(int(np.argmin(held)), shape))
            return unit, coordinate, layout.apply(*coordinate, shape=list(shape))
    return None


def same_placement(first, second, shape, threads: int) -> bool:
    """Whether two layouts put every element of a ``shape`` buffer in the same place (fragments: the same CTA
    thread and slot, whatever thread axes they are spelled with).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid, warpid, wg_local_layout
        >>> same_placement(wg_local_layout(8), TileLayout(S[(4, 32, 8):(1@warpid, 1@laneid, 1)]), (128, 8), 128)
        True
    """
    return str(first) == str(second) or _whereabouts(first, shape, threads) == _whereabouts(second, shape, threads)


def placement_difference(first, second, shape, threads: int) -> str:
    """The first logical coordinate whose places differ under two layouts, with both places.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> rows, columns = TileLayout(S[(32, 2):(1@laneid, 1)]), TileLayout(S[(2, 32):(1, 1@laneid)])
        >>> placement_difference(rows, columns, (32, 2), 32)
        'coordinate (0, 1): thread 0 slot 1 vs thread 1 slot 0'
    """
    a, b = _whereabouts(first, shape, threads), _whereabouts(second, shape, threads)
    for flat in range(math.prod(int(e) for e in shape)):
        if a.get(flat) != b.get(flat):
            where = tuple(int(c) for c in unflatten(flat, [int(e) for e in shape]))
            return f"coordinate {where}: {a.get(flat, 'nowhere')} vs {b.get(flat, 'nowhere')}"
    return "(no coordinate: same places)"
