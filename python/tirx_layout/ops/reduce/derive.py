"""What a reduction of a register fragment along logical axes is, read off the fragment's layout alone: the layout of
its result (:func:`reduced_layout`) and who combines with whom (:func:`reduction_plan`).

A fragment's layout places the logical tile with shard iters; grouped by the tile's shape (``TileLayout.group``),
the iters of each logical dimension are known. Reducing dimensions ``axes`` drops their iters: those on ``m`` (the
register slots) are the thread's own values, combined in the thread; those on thread axes are the threads that hold
different elements of one output element. The threads a reduced iter spans within a warp are lanes ``l ^ mask`` for
the mask bits its tx step makes (a butterfly of ``__shfl_xor_sync``); the warps it spans meet in shared memory. After
the reduction every one of those threads holds the output element, so in the result's layout the reduced thread iters
become replicas (``R[...]``), and the kept slots are renumbered densely in their order.

Example (the Hopper accumulator's row maximum: columns are the quad's lanes ``1 @ laneid`` (4) and the slots):
    >>> from tirx_layout import wgmma_accumulator_layout
    >>> reduced_layout(wgmma_accumulator_layout(64), (64, 64), (1,))
    TileLayout(S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)] + R[4:1@laneid])
    >>> reduction_plan(wgmma_accumulator_layout(64), (64, 64), (1,)).lane_masks
    (1, 2)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ...analysis.thread_placement import slot_holders
from ...hw.threads import WARP_THREADS, thread_unit
from ...layout import Iter, TileLayout
from ...layout.indexing import unflatten


def normalized_axes(axes, rank: int, who: str = "T.tile_reduce") -> tuple[int, ...]:
    """``axes`` (an int or a sequence of ints, negative from the end) as sorted distinct axes of a rank-``rank``
    tile; ``ValueError`` naming an axis out of range or given twice.

    Example:
        >>> normalized_axes(-1, 2), normalized_axes((1, 0), 3)
        ((1,), (0, 1))
    """
    given = (axes,) if isinstance(axes, int) else tuple(axes)
    found = []
    for axis in given:
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"{who}: an axis is an int, got {axis!r}")
        if not -rank <= axis < rank:
            raise ValueError(f"{who}: axis {axis} is out of range for a tile of rank {rank} (axes 0..{rank - 1})")
        if axis % rank in found:
            raise ValueError(f"{who}: axis {axis % rank} is reduced twice (axes {given})")
        found.append(axis % rank)
    if not found:
        raise ValueError(f"{who}: reduce along at least one axis")
    return tuple(sorted(found))


def reduced_shape(shape, axes: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without the ``axes`` (normalized); ``(1,)`` when nothing is left.

    Example:
        >>> reduced_shape((64, 32), (1,)), reduced_shape((8, 4), (0, 1))
        ((64,), (1,))
    """
    kept = tuple(int(e) for d, e in enumerate(shape) if d not in axes)
    return kept or (1,)


def padded_shape(layout, shape) -> tuple[int, ...]:
    """The tile ``layout`` places whole: ``shape`` itself, or, for a tail-padded fragment (more places than
    elements, see ``layout.placement.tail_padded``), ``shape`` with its first dimension grown to cover the places --
    the padding is then whole rows past the last, so a reduction can read a place's row to tell padding from data.
    ``ValueError`` for a layout of fewer places, or padding that is not whole rows.

    Example (16 elements dealt as 4-element vectors over 128 threads: 512 places, 128 rows of 4):
        >>> from tirx_layout import TileLayout, S, laneid, warpid
        >>> padded_shape(TileLayout(S[(4, 32, 4):(1@warpid, 1@laneid, 1)]), (4, 4))
        (128, 4)
    """
    shape = tuple(int(e) for e in shape)
    size, places = math.prod(shape), int(layout.size())
    rest = math.prod(shape[1:])
    if places < size or places % rest:
        raise ValueError(
            f"the layout {layout} places {places} elements but the tile {shape} has {size}"
            + (f" (its padding is not whole rows of {rest})" if places > size else "")
        )
    return (places // rest, *shape[1:])


def _grouped(layout, shape, who: str) -> tuple[TileLayout, list[list[Iter]]]:
    """The layout grouped by ``shape`` (grown to :func:`padded_shape`) and each dimension's shard iters
    (``ValueError`` when it does not place such a tile exactly: a layout of another size, a non-fragment)."""
    if not isinstance(layout, TileLayout) or not layout.is_thread_distributed():
        raise ValueError(f"{who}: {layout} is not a register fragment layout (a TileLayout on thread axes)")
    try:
        whole = padded_shape(layout, shape)
    except ValueError as err:
        raise ValueError(f"{who}: {err}") from None
    grouped, seps = layout.group(list(whole))
    shard = list(grouped.shard)
    return grouped, [shard[seps[d] : seps[d + 1]] for d in range(len(shape))]


def reduced_layout(layout, shape, axes) -> TileLayout:
    """The layout of a reduction's result: ``layout`` (a register fragment of a ``shape`` tile) with the iters of
    dimensions ``axes`` removed -- those on thread axes kept as replicas (every thread that held part of an output
    element holds the whole of it), those on ``m`` dropped -- and the kept slots renumbered densely in their order.
    The result's shape is :func:`reduced_shape`. ``ValueError`` for a layout that is no fragment of ``shape``. A
    tail-padded source (:func:`padded_shape`) gives a result padded the same way when its rows are kept.

    Example (one row per thread: a row sum is each thread's own, no replicas):
        >>> from tirx_layout import wg_local_layout
        >>> reduced_layout(wg_local_layout(32), (128, 32), 1)
        TileLayout(S[128:1@tid_in_wg])
        >>> reduced_layout(wg_local_layout(32), (128, 32), 0)
        TileLayout(S[32:1] + R[128:1@tid_in_wg])
    """
    who = "reduced_layout"
    axes = normalized_axes(axes, len(shape), who)
    grouped, dims = _grouped(layout, shape, who)
    kept = [it for d, iters in enumerate(dims) if d not in axes for it in iters]
    dropped = [it for d, iters in enumerate(dims) if d in axes for it in iters]
    for it in (*kept, *dropped):
        if it.axis.name != "m" and not it.axis.is_thread():
            raise ValueError(f"{who}: {layout} places the tile on {it.axis.name}, not on registers and threads")
    slots = sorted((it for it in kept if it.axis.name == "m" and it.extent > 1), key=lambda it: int(it.stride))
    dense, step = {}, 1
    for it in slots:
        dense[id(it)] = step
        step *= int(it.extent)
    shard = [Iter(it.extent, dense.get(id(it), it.stride), it.axis.name) for it in kept]
    shard = [it for it in shard if it.extent > 1] or [Iter(1, 1, "m")]
    replicas = [*grouped.replica, *(it for it in dropped if it.axis.is_thread() and it.extent > 1)]
    offset = {axis.name: value for axis, value in grouped.offset.items() if axis.name != "m"}
    return TileLayout.from_iters(shard, replicas, offset)


@dataclass(frozen=True)
class ReducedIter:
    """A reduced thread iter of the source (``index`` in the grouped shard), split at the warp boundary: its lane
    part (``lane_extent`` digits, tx step ``lane_step``) and its warp part (``warp_extent`` digits)."""

    index: int
    lane_step: int
    lane_extent: int
    warp_extent: int


@dataclass(frozen=True)
class ReductionPlan:
    """How a reduction of a fragment runs (see the module docstring): the grouped source ``layout`` (its inverse
    reads a thread's digits), the result's ``dst_layout``; ``slots``: for each result slot, the source slots the
    thread combines (in order); ``lane_masks``: the butterfly's xor masks, in order; ``warps``: the reduced thread
    iters with their lane/warp parts; ``warp_count``: how many warps hold parts of one output element (1: no
    shared-memory stage); ``warp_span``: the CTA threads those warps reach from the first (0 without);
    ``dst_shape``: the result's shape; ``elements``: the source's elements, below the ``layout.size()`` places of
    a tail-padded source (:func:`padded_shape`), whose places at flat indices from ``elements`` on hold no data."""

    layout: TileLayout
    dst_layout: TileLayout
    dst_shape: tuple[int, ...]
    slots: tuple[tuple[int, ...], ...]
    lane_masks: tuple[int, ...]
    warps: tuple[ReducedIter, ...]
    warp_count: int
    warp_span: int
    elements: int

    @property
    def padded(self) -> bool:
        """Whether the source has places past its elements (each thread must skip those it holds)."""
        return int(self.layout.size()) > self.elements

    def lane_replica_digits(self, digits: list) -> list:
        """Of a thread's shard ``digits`` (``PlaceInverse.shard_digits``), the lane parts of the reduced iters: all
        0 for the one lane of each butterfly group that writes the shared scratch."""
        return [digits[r.index] % r.lane_extent for r in self.warps if r.lane_extent > 1]

    def warp_digit(self, digits: list):
        """Which of the ``warp_count`` warps of its group a thread's warp is, from its shard ``digits`` (mixed
        radix over the warp parts, first reduced iter slowest)."""
        index = 0
        for r in self.warps:
            if r.warp_extent > 1:
                index = index * r.warp_extent + digits[r.index] // r.lane_extent
        return index


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def reduction_plan(layout, shape, axes) -> ReductionPlan:
    """The :class:`ReductionPlan` of reducing the ``shape`` fragment in ``layout`` along ``axes``. Each reduced iter
    on a thread axis steps ``stride * thread_unit(axis)`` CTA threads; its steps inside a warp must be powers of two
    (the lanes that meet then differ in the bits of the xor masks), else ``ValueError`` naming the iter.

    Example (one row per thread of a warpgroup, reduced down the rows: lanes 1..16, then the 4 warps):
        >>> from tirx_layout import wg_local_layout
        >>> plan = reduction_plan(wg_local_layout(8), (128, 8), 0)
        >>> plan.lane_masks, plan.warp_count, plan.slots[:2]
        ((1, 2, 4, 8, 16), 4, ((0,), (1,)))
    """
    who = "T.tile_reduce"
    axes = normalized_axes(axes, len(shape), who)
    dst_layout = reduced_layout(layout, shape, axes)
    grouped, dims = _grouped(layout, shape, who)
    index = {}
    position = 0
    for d, iters in enumerate(dims):
        for it in iters:
            index[id(it)] = (position, d)
            position += 1
    kept_m = [it for d, iters in enumerate(dims) if d not in axes for it in iters if it.axis.name == "m"]
    red_m = [it for d, iters in enumerate(dims) if d in axes for it in iters if it.axis.name == "m"]
    base = int({axis.name: value for axis, value in grouped.offset.items()}.get("m", 0))
    order = sorted(range(len(kept_m)), key=lambda k: int(kept_m[k].stride))
    dense = [0] * len(kept_m)
    step = 1
    for k in order:
        dense[k] = step
        step *= int(kept_m[k].extent)
    slots = [()] * step
    for digits in itertools.product(*(range(int(it.extent)) for it in kept_m)):
        start = base + sum(c * int(it.stride) for c, it in zip(digits, kept_m, strict=True))
        dst = sum(c * s for c, s in zip(digits, dense, strict=True))
        slots[dst] = tuple(
            start + sum(c * int(it.stride) for c, it in zip(rest, red_m, strict=True))
            for rest in itertools.product(*(range(int(it.extent)) for it in red_m))
        )
    masks, warps, warp_count, span = [], [], 1, 0
    for d, iters in enumerate(dims):
        if d not in axes:
            continue
        for it in iters:
            if it.axis.name == "m" or it.extent == 1:
                continue
            extent, tx_step = int(it.extent), int(it.stride) * thread_unit(it.axis.name)
            where = f"{extent}:{int(it.stride)}@{it.axis.name} (CTA threads {tx_step} apart)"
            if tx_step >= WARP_THREADS:
                if tx_step % WARP_THREADS:
                    raise ValueError(f"{who}: the reduced iter {where} of {layout} does not step by whole warps")
                lanes = 1
            else:
                lanes = min(extent, WARP_THREADS // tx_step)
                if not (_power_of_two(tx_step) and _power_of_two(lanes)) or extent % lanes:
                    raise ValueError(
                        f"{who}: the reduced iter {where} of {layout} spans lanes that no xor butterfly pairs "
                        "(its step and lane count must be powers of two)"
                    )
                masks += [tx_step << j for j in range(lanes.bit_length() - 1)]
            warp_extent = extent // lanes
            if warp_extent > 1:
                warp_count *= warp_extent
                span = max(span, tx_step * extent)
            warps.append(ReducedIter(index[id(it)][0], tx_step, lanes, warp_extent))
    return ReductionPlan(
        grouped,
        dst_layout,
        reduced_shape(shape, axes),
        tuple(slots),
        tuple(sorted(masks)),
        tuple(warps),
        warp_count,
        span,
        math.prod(int(e) for e in shape),
    )


def placement_mismatch(given, derived, shape, threads: int) -> str | None:
    """``None`` when two fragment layouts of a ``shape`` tile put every element -- every replica -- on the same
    threads and slots of a ``threads``-thread CTA; else the first element where they differ, with its places under
    each.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> placement_mismatch(TileLayout(S[4:1] + R[32:1@laneid]), TileLayout(S[4:1] + R[32:1@laneid]), (4,), 32)
        >>> lanes_0_1, every_lane = TileLayout(S[4:1] + R[2:1@laneid]), TileLayout(S[4:1] + R[32:1@laneid])
        >>> placement_mismatch(lanes_0_1, every_lane, (4,), 32).split(";")[0]
        'element (0,): thread 0 slot 0, thread 1 slot 0 under the given layout'
    """
    size = math.prod(int(e) for e in shape)
    places = []
    for layout in (given, derived):
        holder, _ = slot_holders(layout, threads)
        found = [[] for _ in range(size)]
        for t, s in zip(*((holder >= 0) & (holder < size)).nonzero(), strict=True):
            found[int(holder[t, s])].append((int(t), int(s)))
        places.append(found)
    for flat in range(size):
        if places[0][flat] != places[1][flat]:
            where = tuple(int(c) for c in unflatten(flat, [int(e) for e in shape]))
            return (
                f"element {where}: {_where(places[0][flat])} under the given layout; "
                f"{_where(places[1][flat])} as the reduction leaves it"
            )
    return None


def _where(places: list) -> str:
    if not places:
        return "on no thread"
    shown = ", ".join(f"thread {t} slot {s}" for t, s in places[:4])
    return shown + (f" (and {len(places) - 4} more)" if len(places) > 4 else "")
