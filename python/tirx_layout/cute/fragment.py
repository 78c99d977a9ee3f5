"""TileLang-style ``Fragment``: a logical tile distributed over threads, each element in one register slot of
``replicate_size`` threads.

A fragment *is* its canonical (thread, slot, rep) packing: one CuTe layout whose domain is the logical modes
followed by a trailing ``rep`` mode, and whose strides are on a thread axis (the thread) and on ``m`` (the slot).
The thread map stays normalised to ``[0, thread_extent)``; ``bind_thread_range`` records where those threads sit.
"""

from __future__ import annotations

import numpy as np
import tvm

from ..core.values import static_int
from ..layout.axis import Axis, Iter
from ..layout.tile import TileLayout
from .algebra import coalesce, composition, right_inverse
from .convert import to_cute, to_tile_layout
from .layout import PLAIN_AXIS, Layout, flat_leaves, make_layout


def _modes(layout: Layout) -> list[Layout]:
    return list(layout) if layout.depth() > 0 else [layout]


def _map_leaves(shape, stride, fn):
    if isinstance(shape, tuple):
        return tuple(_map_leaves(s, d, fn) for s, d in zip(shape, stride, strict=True))
    return fn(stride)


class Fragment:
    """Logical coordinates to (thread, slot), each element held by ``replicate_size`` threads.

    ``forward`` maps the logical modes onto ``value @ thread_axis`` (the thread) and plain ints (the slot);
    ``replicate`` is the number of copies (copy ``r`` sits ``r * thread_extent`` threads further) or a layout of the
    rep mode onto the thread axis.

    Example:
        >>> from tirx_layout import tx
        >>> f = Fragment(Layout((4, 8), (1 @ tx, 1)))  # row i in thread i, its 8 columns in slots
        >>> f(2, 5), f.thread_extent(), f.num_slots()
        ((2, 5), 4, 8)
        >>> g = f.replicate(2)
        >>> g(2, 5, rep=1), g.thread_extent(), g.replicate_size
        ((6, 5), 8, 2)
    """

    __slots__ = ("packed", "rank", "thread_axis", "thread_range")

    def __init__(self, forward: Layout, replicate: int | Layout = 1, thread_axis="tx", thread_range=None) -> None:
        if not isinstance(forward, Layout):
            raise TypeError(f"a Fragment's forward map is a CuTe Layout, got {forward!r}")
        axis = Axis.get(thread_axis).name
        extra = set(forward.axes()) - {axis, PLAIN_AXIS}
        if extra:
            raise ValueError(
                f"a Fragment maps onto {axis!r} (thread) and m (slot) only; {forward} uses {sorted(extra)}"
            )
        if not isinstance(replicate, Layout):
            copies = static_int(replicate, "the replicate count")
            if copies < 1:
                raise ValueError(f"the replicate count must be >= 1, got {copies}")
            replicate = Layout(copies, forward.cosize(axis) @ Axis.get(axis) if copies > 1 else 0)
        if set(replicate.axes()) - {axis}:
            raise ValueError(f"the rep layout {replicate} must move along the thread axis {axis!r} only")
        self.thread_axis, self.rank = axis, len(_modes(forward))
        self.packed = make_layout(*_modes(forward), replicate)
        for name in (axis, PLAIN_AXIS):
            self.packed.cosize(name)  # negative strides have no extent: ValueError here
        self.thread_range = self._range(thread_range)

    def _range(self, thread_range) -> tuple[int, int]:
        if thread_range is None:
            return (0, self.thread_extent())
        begin, extent = (static_int(v, "a thread range bound") for v in thread_range)
        if begin < 0 or extent < self.thread_extent():
            raise ValueError(
                f"thread range ({begin}, {extent}) cannot hold the fragment's {self.thread_extent()} threads"
            )
        return (begin, extent)

    @property
    def forward(self) -> Layout:
        """The logical modes' layout (replica 0).

        Example:
            >>> print(Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1)), 2).forward)
            (4,8):(1@tx,1)
        """
        modes = [self.packed[i] for i in range(self.rank)]
        return modes[0] if self.rank == 1 else make_layout(*modes)

    @property
    def rep(self) -> Layout:
        """The rep mode's layout onto the thread axis.

        Example:
            >>> print(Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1)), 2).rep)
            2:4@tx
        """
        return self.packed[self.rank]

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape, one entry per logical mode.

        Example:
            >>> Fragment(Layout((4, (2, 4)), (1 @ Axis.get("tx"), (1, 2)))).shape
            (4, 8)
        """
        return tuple(self.packed[i].size() for i in range(self.rank))

    @property
    def replicate_size(self) -> int:
        """How many threads hold each element.

        Example:
            >>> Fragment(Layout(4, 1 @ Axis.get("tx")), 3).replicate_size
            3
        """
        return self.rep.size()

    def thread_extent(self) -> int:
        """Number of threads the (normalised) thread map reaches, replicas included.

        Example:
            >>> Fragment(Layout(4, 1 @ Axis.get("tx")), 3).thread_extent()
            12
        """
        return self.packed.cosize(self.thread_axis)

    def num_slots(self) -> int:
        """Number of register slots per thread.

        Example:
            >>> Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1))).num_slots()
            8
        """
        return self.packed.cosize(PLAIN_AXIS)

    def __call__(self, *coord, rep: int = 0) -> tuple[int, int]:
        """(thread, slot) of a logical coordinate (one entry per logical mode) in replica ``rep``.

        Example:
            >>> Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1)), 2)(3, 5, rep=1)
            (7, 5)
        """
        if len(coord) != self.rank:
            raise ValueError(f"the fragment has {self.rank} logical modes, got coordinate {coord!r}")
        if not 0 <= static_int(rep, "a replica index") < self.replicate_size:
            raise ValueError(f"replica {rep} is out of range [0, {self.replicate_size})")
        place = self.packed((*coord, rep))
        place = place if isinstance(place, dict) else {PLAIN_AXIS: place}
        return place.get(self.thread_axis, 0), place.get(PLAIN_AXIS, 0)

    def _with(self, rep: Layout, thread_range=None) -> Fragment:
        return Fragment(self.forward, rep, self.thread_axis, thread_range)

    def replicate(self, n: int) -> Fragment:
        """``n`` times as many copies: copy ``r`` of the result is the current fragment ``r * thread_extent``
        threads further. The thread range is reset.

        Example:
            >>> Fragment(Layout(4, 1 @ Axis.get("tx"))).replicate(2).replicate(2).rep
            Layout.parse('(2,2):(4@tx,8@tx)')
        """
        n = static_int(n, "the replicate count")
        if n < 1:
            raise ValueError(f"the replicate count must be >= 1, got {n}")
        extra = Layout(n, self.thread_extent() @ Axis.get(self.thread_axis) if n > 1 else 0)
        return self._with(extra if self.replicate_size == 1 else make_layout(self.rep, extra))

    def dereplicate(self) -> Fragment:
        """Only replica 0: every element in exactly one thread.

        Example:
            >>> Fragment(Layout(4, 1 @ Axis.get("tx")), 2).dereplicate().thread_extent()
            4
        """
        return self._with(Layout(1, 0))

    def condense_rep(self) -> Fragment:
        """The rep mode coalesced: chained replications become one mode, unit pieces disappear.

        Example:
            >>> Fragment(Layout(4, 1 @ Axis.get("tx"))).replicate(2).replicate(2).condense_rep().rep
            Layout.parse('4:4@tx')
        """
        return self._with(coalesce(self.rep), self.thread_range)

    def bind_thread_range(self, begin: int, extent: int | None = None) -> Fragment:
        """The same fragment run by threads ``[begin, begin + extent)`` (default: its own thread extent), as in
        warp specialisation; the thread map itself stays normalised.

        Example:
            >>> Fragment(Layout(4, 1 @ Axis.get("tx"))).bind_thread_range(128).thread_range
            (128, 4)
        """
        extent = self.thread_extent() if extent is None else extent
        return self._with(self.rep, (begin, extent))

    def packed_flat(self) -> Layout:
        """The packing serialised to one integer: ``thread * num_slots + slot`` on the domain (logical..., rep).

        Example:
            >>> print(Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1))).packed_flat())
            (4,8,1):(8,1,0)
        """
        slots = self.num_slots()

        def flat(stride):
            if isinstance(stride, int):
                return stride
            return stride.value * slots

        return Layout(self.packed.shape, _map_leaves(self.packed.shape, self.packed.stride, flat))

    def inverse(self) -> Layout:
        """The layout from (slot, thread) (slot fastest) to the column-major index of (logical..., rep);
        ``ValueError`` unless the packing is a bijection onto ``num_slots * thread_extent`` places.

        Example:
            >>> inv = Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1))).inverse()
            >>> print(inv), inv((5, 2))
            (8,4):(4,1)
            (None, 22)
        """
        flat = self.packed_flat()
        places = self.num_slots() * self.thread_extent()
        if flat.size() != places:
            raise ValueError(
                f"the fragment is no bijection: {flat.size()} (element, replica) pairs onto {places} "
                "(thread, slot) places"
            )
        inverse = right_inverse(flat, exact=True)
        return composition(inverse, Layout((self.num_slots(), self.thread_extent())))

    def inverse_apply(self, thread: int, slot: int) -> tuple[tuple[int, ...], int]:
        """(logical coordinate, replica) held in ``slot`` of ``thread`` (normalised thread index).

        Example:
            >>> Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1)), 2).inverse_apply(6, 5)
            ((2, 5), 1)
        """
        index = self.inverse()((static_int(slot, "a slot"), static_int(thread, "a thread")))
        sizes = (*self.shape, self.replicate_size)
        coords = np.unravel_index(index, sizes, order="F")
        return tuple(int(c) for c in coords[:-1]), int(coords[-1])

    def to_tile_layout(self) -> TileLayout:
        """The TileLayout with the same places: ``S[...]`` from the logical modes (applied with ``shape``), the
        copies as ``R[...]`` on the thread axis. The thread range is not part of it.

        Example:
            >>> print(Fragment(Layout((4, 8), (1 @ Axis.get("tx"), 1)), 2).to_tile_layout())
            S[(4, 8):(1@tx, 1)] + R[2:4@tx]
        """
        shard = to_tile_layout(self.forward, by_mode=True)
        rep = [m for m in flat_leaves(self.rep.shape, self.rep.stride) if m[0] > 1]
        replica = [Iter(e, s.value, s.axis) for e, s in reversed(rep)]
        return TileLayout.from_iters(list(shard.shard), replica)

    @staticmethod
    def from_tile_layout(tile: TileLayout, shape) -> Fragment | None:
        """The fragment of a thread-distributed TileLayout applied with logical ``shape``: thread axes are merged
        to one (as under a CUDA target), replicas become the rep mode. ``None`` when the layout has no fragment
        form (several thread axes left, an offset, replicas off the thread axis).

        Example:
            >>> from tirx_layout import wg_local_layout
            >>> f = Fragment.from_tile_layout(wg_local_layout(8), (128, 8))
            >>> f(5, 3), f.thread_axis
            ((5, 3), 'tid_in_wg')
        """
        if not isinstance(tile, TileLayout):
            raise TypeError(f"Fragment.from_tile_layout takes a TileLayout, got {tile!r}")
        original = tile
        with tvm.target.Target("cuda"):
            tile = tile.canonicalize()
        threads = _thread_axes(tile) or _thread_axes(original)  # a one-thread layout loses its unit iter
        if len(threads) != 1 or any(not it.axis.is_thread() for it in tile.replica):
            return None
        (axis,) = threads
        forward = to_cute(TileLayout.from_iters(list(tile.shard), [], dict(tile.offset)), shape)
        if not isinstance(forward, Layout) or set(forward.axes()) - {axis, PLAIN_AXIS}:
            return None
        if tile.replica:
            iters = list(reversed(tile.replica))
            shape_r = tuple(it.extent for it in iters)
            stride_r = tuple(it.stride @ it.axis for it in iters)
            rep = Layout(shape_r, stride_r) if len(iters) > 1 else Layout(shape_r[0], stride_r[0])
        else:
            rep = Layout(1, 0)
        try:
            return Fragment(forward, rep, axis)
        except ValueError:
            return None

    def _key(self):
        return (str(self.packed), self.rank, self.thread_axis, self.thread_range)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fragment) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"Fragment({self.shape} -> (thread, slot), replicate: {self.replicate_size}, thread: {self.thread_axis}, "
            f"layout: {self.packed}, thread_range: {self.thread_range})"
        )


def _thread_axes(tile: TileLayout) -> set[str]:
    return {it.axis.name for it in (*tile.shard, *tile.replica) if it.axis.is_thread()}
