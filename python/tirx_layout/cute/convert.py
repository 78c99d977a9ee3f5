"""Converters between TileLayout / ComposeLayout and CuTe layouts, all "probe, then prove".

*Probe*: read a candidate's strides off the source at the origin and at one-hot points of a chosen domain
factorisation. *Prove*: check that the candidate equals the source on its whole domain — exhaustively up to
:data:`PROOF_LIMIT` points, beyond that by the exact argument that both are sums of digit * stride over the same
mixed radix (the candidate's modes are the source's iters one to one, so agreeing on one-hot points is agreeing
everywhere). A converter returns ``None`` when no exact answer exists; a wrong recovery cannot slip through.

Coordinates correspond as follows. A TileLayout flattens a logical coordinate row-major and splits it over its
shard, last iter fastest; a CuTe layout is column-major, first mode fastest. Without a logical shape the
candidate's modes are the shard iters reversed, so the two agree on every 1-D index. With a logical ``shape`` the
candidate has one top-level mode per dimension (its iters reversed inside the mode), so
``tile.apply(*x, shape=shape) == cute(x)`` for every coordinate ``x``.
"""

from __future__ import annotations

import numpy as np

from ..core.values import int_list
from ..layout.axis import Axis, Iter
from ..layout.swizzle import ComposeLayout, SwizzleLayout
from ..layout.tile import TileLayout
from .algebra import coalesce
from .layout import PLAIN_AXIS, Layout, flat_leaves
from .swizzle import ComposedLayout, Swizzle

#: Domains up to this many points are proved by evaluating both sides everywhere.
PROOF_LIMIT = 1 << 22


def _places(result, n: int) -> dict[str, np.ndarray]:
    """An apply result (an array, an int or ``{axis: values}``) as ``{axis: int64 array of length n}``."""
    if not isinstance(result, dict):
        result = {PLAIN_AXIS: result}
    return {axis: np.broadcast_to(np.asarray(v, dtype=np.int64), (n,)) for axis, v in result.items()}


def _same_places(a: dict, b: dict, n: int) -> bool:
    zero = np.zeros(n, dtype=np.int64)
    return all(np.array_equal(a.get(axis, zero), b.get(axis, zero)) for axis in set(a) | set(b))


def _cute_indices(flat: np.ndarray, shape) -> np.ndarray:
    """The column-major index of the coordinate whose row-major index over ``shape`` is ``flat``."""
    if shape is None or len(shape) == 1:
        return flat
    return np.ravel_multi_index(np.unravel_index(flat, shape), shape, order="F")


def _prove(source, candidate, size: int, shape) -> bool | None:
    """True/False when the domain is small enough to compare everywhere, else None (the caller argues)."""
    if size > PROOF_LIMIT:
        return None
    flat = np.arange(size, dtype=np.int64)
    expected = _places(source(flat), size)
    actual = _places(candidate.apply_array(_cute_indices(flat, shape)), size)
    return _same_places(expected, actual, size)


def _probe_strides(tile: TileLayout) -> list[tuple[int, str]] | None:
    """The (stride, axis) of every shard iter, read off the layout at the origin and the one-hot points."""
    n = len(tile.shard)
    eye = np.eye(n + 1, n, k=-1, dtype=np.int64)  # row 0 is the origin, row k+1 is one-hot at iter k
    places = _places(tile.apply(*eye.T) if n > 1 else tile.apply(eye[:, 0]), n + 1)
    strides = []
    for k in range(n):
        moved = [(int(v[k + 1] - v[0]), axis) for axis, v in places.items() if v[k + 1] != v[0]]
        if len(moved) > 1:
            return None  # one step on two axes: no single scaled basis
        strides.append(moved[0] if moved else (0, PLAIN_AXIS))
    return strides


def _mode(iters) -> tuple:
    """Shape and stride of one CuTe mode from iters slowest first (CuTe lists them fastest first)."""
    shape = tuple(e for e, _ in reversed(iters))
    stride = tuple(s for _, s in reversed(iters))
    return (shape[0], stride[0]) if len(shape) == 1 else (shape, stride)


def _static_offset(tile: TileLayout) -> dict[str, int] | None:
    terms = {}
    for axis, value in tile.offset.items():
        if not isinstance(value, int):
            return None  # symbolic: no CuTe layout holds it
        if value:
            terms[axis.name] = value
    return terms


def to_cute(tile: TileLayout, shape=None) -> Layout | ComposedLayout | None:
    """The CuTe layout on named-axis bases equal to ``tile`` (see the module note for how coordinates
    correspond); a ``ComposedLayout(None, offset, layout)`` when the tile has an offset, a swizzled one for a
    ``ComposeLayout``. ``None`` when no exact answer exists (replicas, a symbolic offset, a shape the shard
    cannot be grouped by).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> print(to_cute(TileLayout(S[(8, 4, 2):(4 @ laneid, 1 @ laneid, 1)]), shape=(8, 8)))
        (8,(2,4)):(4@laneid,(1,1@laneid))
    """
    if isinstance(tile, ComposeLayout):
        return to_cute_composed(tile, shape)
    if not isinstance(tile, TileLayout):
        raise TypeError(f"to_cute converts a TileLayout or ComposeLayout, got {tile!r}")
    offset = _static_offset(tile)
    if tile.replica or offset is None:
        return None
    if not tile.shard:  # one element, at the offset: the unit iter says so in a form every step below reads
        tile = TileLayout.from_iters([Iter(1, 0)], [], {a.name: v for a, v in tile.offset.items()})
    if shape is not None:
        shape = int_list(shape, "a shape extent")
        if int(np.prod(shape, dtype=object)) != tile.size():
            raise ValueError(f"shape {shape} has {int(np.prod(shape))} elements, the layout {tile.size()}")
        try:
            tile, seps = tile.group(shape)
        except ValueError:
            return None
    else:
        seps = [0, len(tile.shard)]
    strides = _probe_strides(tile)
    if strides is None:
        return None
    stride_terms = [v if a == PLAIN_AXIS or v == 0 else v @ Axis.get(a) for v, a in strides]
    pairs = [(it.extent, s) for it, s in zip(tile.shard, stride_terms, strict=True)]
    modes = [_mode(pairs[seps[d] : seps[d + 1]]) for d in range(len(seps) - 1)]
    candidate = Layout(*modes[0]) if len(modes) == 1 else Layout(tuple(m[0] for m in modes), tuple(m[1] for m in modes))
    if offset:
        candidate = ComposedLayout(None, offset, candidate)
    # Exact argument beyond the limit: the candidate's modes are the shard iters one to one.
    if _prove(tile.apply, candidate, tile.size(), shape) is False:
        return None
    return candidate


def to_cute_flat(tile: TileLayout) -> Layout | None:
    """``tile`` as one flat, coalesced CuTe layout with integer strides over its 1-D index. Several output axes
    are serialised row-major in order of first appearance, each with its span as radix (outputs ``[thread,
    slot]`` give ``thread * slots + slot``). ``None`` with replicas, an offset or a negative stride.

    Example:
        >>> from tirx_layout import wg_local_layout
        >>> print(to_cute_flat(wg_local_layout(8, rows=4)))  # thread * 8 + slot
        32:1
    """
    if not isinstance(tile, TileLayout):
        raise TypeError(f"to_cute_flat converts a TileLayout, got {tile!r}")
    if tile.replica or _static_offset(tile) != {}:
        return None
    strides = _probe_strides(tile)
    if strides is None or any(v < 0 for v, _ in strides):
        return None
    axes = list(dict.fromkeys(a for v, a in strides if v))
    order = [a for a in axes if Axis.get(a).is_thread()] + [a for a in axes if not Axis.get(a).is_thread()]
    radix = {a: tile.span(a) for a in order}
    scale = {}
    for k, axis in enumerate(order):
        scale[axis] = int(np.prod([radix[b] for b in order[k + 1 :]], dtype=object))
    extents = [it.extent for it in tile.shard]
    flat = [v * scale[a] if v else 0 for v, a in strides]
    candidate = coalesce(Layout(tuple(reversed(extents)), tuple(reversed(flat))))

    def serialised(flat_index):
        places = _places(tile.apply(flat_index), flat_index.size)
        return sum(places.get(a, 0) * scale[a] for a in order) if order else np.zeros_like(flat_index)

    if _prove(serialised, candidate, tile.size(), None) is False:
        return None
    return candidate


def to_cute_composed(layout: ComposeLayout, shape=None) -> ComposedLayout | None:
    """Swizzle recovery: ``ComposeLayout(SwizzleLayout(pe, sl, al, inner), tile)`` as the CuTe
    ``Swizzle<sl, pe, ±al> o offset o layout`` (negative shift for an outer swizzle), proved on the whole domain.

    Example:
        >>> from tirx_layout import mma_shared_layout
        >>> print(to_cute_composed(mma_shared_layout("float16", "128B", (16, 64)), shape=(16, 64)))
        Sw<3,3,3> o 0 o (16,64):(64,1)
    """
    if not isinstance(layout, ComposeLayout):
        raise TypeError(f"to_cute_composed converts a ComposeLayout, got {layout!r}")
    inner = to_cute(layout.tile_layout, shape)
    if inner is None:
        return None
    sw = layout.swizzle
    swizzle = Swizzle(sw.swizzle_len, sw.per_element, sw.atom_len if sw.swizzle_inner else -sw.atom_len)
    offset = inner.offset if isinstance(inner, ComposedLayout) else 0
    candidate = ComposedLayout(swizzle, offset, inner.inner if isinstance(inner, ComposedLayout) else inner)
    tile = layout.tile_layout
    if _prove(layout.apply, candidate, tile.size(), shape) is False:
        return None
    return candidate


def logical_shape(layout: Layout | ComposedLayout) -> list[int]:
    """The row-major logical shape a ``by_mode`` conversion is applied with: one entry per top-level mode.

    Example:
        >>> logical_shape(Layout.parse("((2,4),3):((1,2),8)"))
        [8, 3]
    """
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    return [inner.size()] if inner.depth() == 0 else [mode.size() for mode in inner]


def to_tile_layout(layout: Layout | ComposedLayout, by_mode: bool = False) -> TileLayout | ComposeLayout | None:
    """The TileLayout (or ComposeLayout, for a swizzle) equal to a CuTe layout. By default the two agree on every
    1-D index (the shard is the flat modes reversed; the inverse of ``to_cute(tile)``); with ``by_mode`` they agree
    on coordinates, ``result.apply(*x, shape=logical_shape(layout)) == layout(x)`` (the inverse of
    ``to_cute(tile, shape)``). ``None`` when there is no exact TileLayout form.

    Example:
        >>> L = Layout.parse("((2,4),3):((1@laneid,2),8)")
        >>> print(to_tile_layout(L)), print(to_tile_layout(L, by_mode=True))
        S[(3, 4, 2):(8, 2, 1@laneid)]
        S[(4, 2, 3):(2, 1@laneid, 8)]
        (None, None)
    """
    if isinstance(layout, ComposedLayout):
        return _composed_to_tile(layout, by_mode)
    if not isinstance(layout, Layout):
        raise TypeError(f"to_tile_layout converts a CuTe Layout or ComposedLayout, got {layout!r}")
    tile = TileLayout.from_iters(_iters(layout, by_mode))
    shape = logical_shape(layout) if by_mode else None
    if _prove(tile.apply, layout, layout.size(), shape) is False:
        return None
    return tile


def _iters(layout: Layout, by_mode: bool) -> list[Iter]:
    modes = list(layout) if by_mode and layout.depth() > 0 else [layout]
    iters = []
    for mode in modes:
        for extent, stride in reversed(flat_leaves(mode.shape, mode.stride)):
            if isinstance(stride, int):
                iters.append(Iter(extent, stride, PLAIN_AXIS))
            else:
                iters.append(Iter(extent, stride.value, stride.axis))
    return iters


def _composed_to_tile(layout: ComposedLayout, by_mode: bool) -> TileLayout | ComposeLayout | None:
    tile = to_tile_layout(layout.inner, by_mode)
    if tile is None:
        return None
    if layout.offset:
        offset = {Axis.get(a): v for a, v in layout.offset.items()}
        tile = TileLayout.from_iters(list(tile.shard), [], offset)
    result = tile
    if layout.outer is not None:
        sw = layout.outer
        result = ComposeLayout(SwizzleLayout(sw.base, sw.bits, abs(sw.shift), sw.shift >= 0), tile)
    shape = logical_shape(layout) if by_mode else None
    if _prove(result.apply, layout, layout.size(), shape) is False:
        return None
    return result
