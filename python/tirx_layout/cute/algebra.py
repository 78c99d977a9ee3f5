"""CuTe's layout algebra as free functions, one per operation; the work happens in the C++ core.

A *tiler* (the right operand of composition, the divides and the products) is a Layout, an int ``n`` (``n:1``),
``None`` (leave that mode alone), or a tuple of tilers applied mode by mode. Every operation checks its
preconditions exactly and raises ``ValueError`` rather than return a layout that computes another function.
"""

from __future__ import annotations

from ..core import ffi
from ..core.values import static_int
from .layout import Layout, make_layout, shape_size
from .swizzle import ComposedLayout


def _layout(value, what: str) -> Layout:
    if isinstance(value, Layout):
        return value
    if isinstance(value, int | tuple) and not isinstance(value, bool):
        return Layout(value)
    raise TypeError(f"{what} must be a CuTe Layout (or a shape), got {value!r}")


def _tiler_leaf(value) -> Layout:
    if isinstance(value, Layout):
        return value
    return Layout(static_int(value, "a tiler extent"))


def _by_mode(op, layout: Layout, tiler: tuple) -> Layout:
    """``op`` applied to mode ``i`` of ``layout`` and entry ``i`` of ``tiler``; the remaining modes stay."""
    if len(tiler) > layout.rank():
        raise ValueError(f"a tiler of rank {len(tiler)} is longer than the layout {layout} of rank {layout.rank()}")
    modes = [layout[i] if t is None else op(layout[i], t) for i, t in enumerate(tiler)]
    return make_layout(*modes, *(layout[i] for i in range(len(tiler), layout.rank())))


def _with_tiler(op, core, a, tiler, name: str) -> Layout:
    """``core(a, tiler)`` in C++ for a Layout or int tiler, ``op`` mode by mode for a tuple, ``a`` for ``None``."""
    a = _layout(a, f"{name}'s left operand")
    if tiler is None:
        return a
    if isinstance(tiler, tuple):
        return _by_mode(op, a, tiler)
    return core(a, _tiler_leaf(tiler))


def size(layout) -> int:
    """Number of points of the domain of a layout (or of a shape).

    Example:
        >>> size(Layout.parse("((2,4),3):((1,2),8)")), size((2, (3, 4)))
        (24, 24)
    """
    if isinstance(layout, Layout | ComposedLayout):
        return layout.size()
    return shape_size(_layout(layout, "size's argument").shape)


def cosize(layout: Layout, axis=None) -> int:
    """``L(size(L)-1) + 1``: the extent of the codomain on ``axis`` (plain ints by default).

    Example:
        >>> cosize(Layout.parse("(4,3):(3,1)"))
        12
    """
    return _layout(layout, "cosize's argument").cosize(axis)


def rank(layout: Layout) -> int:
    """Number of top-level modes.

    Example:
        >>> rank(Layout.parse("(2,(3,4)):(1,(2,6))"))
        2
    """
    return _layout(layout, "rank's argument").rank()


def depth(layout: Layout) -> int:
    """Nesting depth (0 for a single mode).

    Example:
        >>> depth(Layout.parse("(2,(3,4)):(1,(2,6))"))
        2
    """
    return _layout(layout, "depth's argument").depth()


def coalesce(layout: Layout, profile=None) -> Layout:
    """The same function with as few modes as possible: flatten, drop extent-1 modes, merge neighbours with
    ``s0 * d0 == d1``. A tuple ``profile`` coalesces mode by mode (its entries' values do not matter).

    Example:
        >>> print(coalesce(Layout.parse("(2,(1,6)):(1,(6,2))")))
        12:1
        >>> print(coalesce(Layout.parse("((2,2),(3,2)):((1,2),(4,12))"), (1, 1)))
        (4,6):(1,4)
    """
    layout = _layout(layout, "coalesce's argument")
    if isinstance(profile, tuple):
        return _by_mode(lambda mode, sub: coalesce(mode, sub), layout, profile)
    return ffi.CuteCoalesce(layout)


def filter(layout: Layout, profile=None) -> Layout:
    """The layout without its broadcast (stride-0) and extent-1 modes, coalesced; ``1:0`` when none is left. A
    tuple ``profile`` filters mode by mode.

    Example:
        >>> print(filter(Layout.parse("(2,3,4):(1,0,2)")))
        8:1
    """
    layout = _layout(layout, "filter's argument")
    if isinstance(profile, tuple):
        return _by_mode(lambda mode, sub: filter(mode, sub), layout, profile)
    return ffi.CuteFilter(layout)


def composition(a, b):
    """``A o B``: the layout ``i -> A(B(i))`` on B's domain (by mode when ``B`` is a tuple tiler). B's strides
    index A's domain; past its size, A runs on through the last mode of its coalesced form, as in CuTe.
    ``ValueError`` when B does not split A's modes into whole runs (where a weak divisibility check would return
    some other function).

    Example:
        >>> print(composition(Layout.parse("(6,2):(8,2)"), Layout.parse("(4,3):(3,1)")))
        ((2,2),3):((24,2),8)
        >>> print(composition(Layout.parse("(12,(4,8)):(59,(13,1))"), (3, 8)))
        (3,(4,2)):(59,(13,1))
    """
    if isinstance(a, ComposedLayout):
        return a.compose(b)
    return _with_tiler(composition, ffi.CuteComposition, a, b, "composition")


def complement(layout: Layout, cotarget: int = 1) -> Layout:
    """The layout of what ``layout`` leaves out below ``cotarget``, as CuTe defines it: walking the modes by stride
    with ``current`` (1, then each walked mode's ``extent * stride``), a mode of stride ``d`` adds the gap
    ``floor(d / current) : current``; last, ``ceil(cotarget / current) : current`` repeats the whole. A stride that is
    no multiple of ``current`` leaves positions uncovered, as in CuTe (``complement((4,6):(1,6))`` is ``1:0``).

    Defined (else ``ValueError``) exactly when CuTe's answer is a complement, that is ordered, disjoint from the
    layout and, together with it, reaching ``cotarget``: (1) no mode's stride is below the ``current`` of the smaller
    ones (the layout does not overlap itself), and (2) the cosize of ``(layout, complement)`` is at least
    ``cotarget``. (2) holds whenever every stride is a multiple of its ``current``; ``(2,2):(1,3)`` in 24 fails it
    (CuTe answers ``4:6``, and the two together reach only 23).

    Example:
        >>> print(complement(Layout.parse("4:2"), 24))
        (2,3):(1,8)
        >>> print(complement(Layout.parse("(2,2):(1,6)"), 24))
        (3,2):(2,12)
        >>> print(complement(Layout.parse("(4,2):(1,10)"), 14))
        2:4
    """
    return ffi.CuteComplement(_layout(layout, "complement's argument"), static_int(cotarget, "the cotarget size"))


def right_inverse(layout: Layout, exact: bool = False) -> Layout:
    """The longest ``R`` with ``layout(R(i)) == i`` for ``i < size(R)``. It is partial (shorter than the layout)
    when the strides do not chain from 1; ``exact=True`` raises ``ValueError`` then. Broadcast modes are skipped.

    Example:
        >>> print(right_inverse(Layout.parse("(4,8):(8,1)")))
        (8,4):(4,1)
        >>> right_inverse(Layout.parse("(4,2):(1,8)")).size()
        4
    """
    layout = _layout(layout, "right_inverse's argument")
    result = ffi.CuteRightInverse(layout)
    if exact and result.size() != layout.size():
        raise ValueError(
            f"right_inverse({layout}) is partial: {result} inverts only the first {result.size()} of "
            f"{layout.size()} positions (the strides do not chain contiguously from 1)"
        )
    return result


def is_partial_right_inverse(layout: Layout) -> bool:
    """True when :func:`right_inverse` of ``layout`` covers fewer positions than the layout has.

    Example:
        >>> is_partial_right_inverse(Layout.parse("(4,2):(1,8)")), is_partial_right_inverse(Layout.parse("(4,2):(2,1)"))
        (True, False)
    """
    layout = _layout(layout, "the argument")
    return ffi.CuteRightInverse(layout).size() != layout.size()


def left_inverse(layout: Layout) -> Layout:
    """``R`` with ``R(layout(i)) == i`` for every ``i`` of the domain, as CuTe defines it: the right inverse of
    ``(layout, complement(layout))``. Positions outside the image map where that completed layout's inverse sends
    them (into the complement's part of its domain, at ``size(layout)`` and beyond). ``ValueError`` when the layout
    broadcasts, or when the completed layout is no bijection onto an interval (a stride that is no multiple of what
    the smaller strides cover): CuTe's answer then misses some ``layout(i)``.

    Example:
        >>> print(left_inverse(Layout.parse("4:2")))
        (2,4):(4,1)
        >>> print(left_inverse(Layout.parse("(4,2):(1,16)")))
        (4,4,2):(1,8,4)
    """
    return ffi.CuteLeftInverse(_layout(layout, "left_inverse's argument"))


def logical_divide(a: Layout, tiler) -> Layout:
    """``A o (B, complement(B, size(A)))``: mode 0 walks one tile ``B`` of A, mode 1 the tiles. By mode when
    the tiler is a tuple.

    Example:
        >>> print(logical_divide(Layout.parse("(4,2,3):(2,1,8)"), Layout.parse("4:2")))
        ((2,2),(2,3)):((4,1),(2,8))
    """
    return _with_tiler(logical_divide, ffi.CuteLogicalDivide, a, tiler, "logical_divide")


def _unzip(op, a: Layout, tiler) -> Layout:
    """``((tile modes...), (rest modes...))`` of a by-mode divide or product."""
    a = _layout(a, "the left operand")
    if not isinstance(tiler, tuple):
        return op(a, tiler)
    if len(tiler) > a.rank():
        raise ValueError(f"a tiler of rank {len(tiler)} is longer than the layout {a} of rank {a.rank()}")
    split = [op(a[i], t) if t is not None else make_layout(Layout(1, 0), a[i]) for i, t in enumerate(tiler)]
    tiles = make_layout(*(s[0] for s in split))
    rest = make_layout(*(s[1] for s in split), *(a[i] for i in range(len(tiler), a.rank())))
    return make_layout(tiles, rest)


def zipped_divide(a: Layout, tiler) -> Layout:
    """The logical divide with the tile modes gathered into mode 0 and the rest into mode 1.

    Example:
        >>> print(zipped_divide(Layout((8, 6)), (2, 3)))
        ((2,3),(4,2)):((1,8),(2,24))
    """
    return _unzip(logical_divide, a, tiler)


def tiled_divide(a: Layout, tiler) -> Layout:
    """The zipped divide with the rest modes unpacked: ``((tile), rest0, rest1, ...)``.

    Example:
        >>> print(tiled_divide(Layout((8, 6)), (2, 3)))
        ((2,3),4,2):((1,8),2,24)
    """
    zipped = zipped_divide(a, tiler)
    if tiler is None:  # nothing divided: the zipped divide is the layout itself, with no rest modes to unpack
        return zipped
    return make_layout(zipped[0], *zipped[1])


def logical_product(a: Layout, tiler) -> Layout:
    """``(A, complement(A, size(A) * cosize(B)) o B)``: A, then one copy of A at each place of B. By mode when
    the tiler is a tuple.

    Example:
        >>> print(logical_product(Layout.parse("(2,2):(4,1)"), Layout.parse("6:1")))
        ((2,2),(2,3)):((4,1),(2,8))
    """
    return _with_tiler(logical_product, ffi.CuteLogicalProduct, a, tiler, "logical_product")


def zipped_product(a: Layout, tiler) -> Layout:
    """The by-mode logical product with A's modes gathered into mode 0 and the copies into mode 1.

    Example:
        >>> print(zipped_product(Layout((2, 2)), (3, 2)))  # each mode's copies within that mode's codomain
        ((2,2),(3,2)):((1,2),(2,1))
    """
    return _unzip(logical_product, a, tiler)


def tiled_product(a: Layout, tiler) -> Layout:
    """The zipped product with the copy modes unpacked: ``((A), copy0, copy1, ...)``.

    Example:
        >>> print(tiled_product(Layout((2, 2)), (3, 2)))
        ((2,2),3,2):((1,2),2,1)
    """
    zipped = zipped_product(a, tiler)
    if tiler is None:  # nothing multiplied: the zipped product is the layout itself, with no copy modes
        return zipped
    return make_layout(zipped[0], *zipped[1])


def blocked_product(a: Layout, b: Layout) -> Layout:
    """The logical product zipped mode by mode with A's mode first: each mode of the result walks a block of A,
    then the blocks (``((A0, B0'), (A1, B1'), ...)``).

    Example:
        >>> print(blocked_product(Layout.parse("(2,5):(5,1)"), Layout.parse("(3,4):(1,3)")))
        ((2,3),(5,4)):((5,10),(1,30))
    """
    return ffi.CuteBlockedProduct(_layout(a, "the block"), _layout(b, "the tiler"))


def raked_product(a: Layout, b: Layout) -> Layout:
    """As :func:`blocked_product` with the copies' mode first in each mode: A's elements are raked across the
    copies.

    Example:
        >>> print(raked_product(Layout.parse("(2,5):(5,1)"), Layout.parse("(3,4):(1,3)")))
        ((3,2),(4,5)):((10,5),(30,1))
    """
    return ffi.CuteRakedProduct(_layout(a, "the block"), _layout(b, "the tiler"))


def with_shape(layout: Layout, shape) -> Layout:
    """The layout re-read through a new column-major ``shape``: ``layout o Layout(shape)``. ``ValueError`` when
    the new shape does not split the layout's modes into whole runs.

    Example:
        >>> print(with_shape(Layout.parse("(4,6):(1,4)"), (8, 3)))
        (8,3):(1,8)
    """
    return composition(_layout(layout, "with_shape's argument"), Layout(shape))


def restrict(layout: Layout, mode: int, extent: int) -> Layout:
    """``layout`` with top-level mode ``mode`` cut to its first ``extent`` coordinates (``mode o extent:1``), the
    other modes unchanged. ``ValueError`` when the first ``extent`` coordinates of the mode are no layout.

    Example:
        >>> print(restrict(Layout.parse("((2,4),3):((1,2),8)"), 0, 4))
        (4,3):(1,8)
    """
    layout = _layout(layout, "restrict's argument")
    mode, extent = static_int(mode, "a mode index"), static_int(extent, "an extent")
    if not 0 <= mode < layout.rank():
        raise ValueError(f"restrict: mode {mode} is out of range for {layout} of rank {layout.rank()}")
    if not 1 <= extent <= layout[mode].size():
        raise ValueError(f"restrict: extent {extent} is not in [1, {layout[mode].size()}] for mode {mode} of {layout}")
    cut = ffi.CuteComposition(layout[mode], Layout(extent))
    if layout.rank() == 1 and layout.depth() == 0:
        return cut
    return make_layout(*(cut if i == mode else layout[i] for i in range(layout.rank())))
