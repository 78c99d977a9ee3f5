"""SwizzleLayout and ComposeLayout (SPEC §3): XOR swizzles of linear shared-memory addresses, alone or after a tile."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm_ffi import Object, from_dlpack

from ..core import ffi
from ..core.values import int64_array, offset_value, static_int
from .tile import TileLayout


def _log2_exact(n: int, what: str) -> int:
    n = static_int(n, what)
    if n < 1 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n}")
    return n.bit_length() - 1


@tvm_ffi.register_object("tirx_layout.SwizzleLayout")
class SwizzleLayout(Object):
    """The XOR swizzle of linear element addresses: with ``q = a >> per_element``, the ``swizzle_len`` bits of
    ``q`` at ``atom_len`` are XOR-ed into its low bits (``swizzle_inner``; the reverse otherwise). A bijection of
    every period of ``2^(per_element + swizzle_len + atom_len)`` elements.

    Example:
        >>> sw = SwizzleLayout(3, 3, 3)  # fp16, 128-byte rows
        >>> [sw.apply(64 * i) for i in range(4)]
        [0, 72, 144, 216]
    """

    per_element: int
    swizzle_len: int
    atom_len: int
    swizzle_inner: bool

    def __init__(self, per_element: int, swizzle_len: int, atom_len: int, swizzle_inner: bool = True) -> None:
        if not isinstance(swizzle_inner, bool | np.bool_):
            raise TypeError(f"swizzle_inner must be a bool, got {swizzle_inner!r}")
        self.__init_handle_by_constructor__(
            ffi.SwizzleLayout,
            static_int(per_element, "per_element"),
            static_int(swizzle_len, "swizzle_len"),
            static_int(atom_len, "atom_len"),
            bool(swizzle_inner),
        )

    def apply(self, address):
        """The swizzled address of ``address``: an int, an integer numpy array (elementwise, in C++) or a TVM
        ``PrimExpr`` (an XOR/shift expression CUDA code generation accepts).

        Example:
            >>> SwizzleLayout(3, 3, 3).apply(64 + 8)
            64
        """
        if isinstance(address, np.ndarray):
            out = np.array(int64_array(address), dtype=np.int64, order="C")  # a fresh copy: swizzled in place
            ffi.SwizzleApplyArray(self, from_dlpack(out))
            return out
        if tvm.ir.is_prim_expr(address) and not isinstance(address, tvm.tirx.IntImm):
            return self._expression(offset_value(address, "a swizzled address"))
        return ffi.SwizzleApplyInt(self, static_int(address, "an address"))

    def _expression(self, address):
        if self.swizzle_len == 0:
            return address
        mask = (1 << self.swizzle_len) - 1
        low, high = self.per_element, self.per_element + self.atom_len
        source, target = (high, low) if self.swizzle_inner else (low, high)
        field = tvm.tirx.bitwise_and(tvm.tirx.shift_right(address, source), mask)
        return tvm.tirx.bitwise_xor(address, tvm.tirx.shift_left(field, target))

    def size(self, axis=None) -> int:
        """The period, ``2^(per_element + swizzle_len + atom_len)`` (``SwizzleLayout(3, 3, 3).size() == 512``)."""
        return 1 << (self.per_element + self.swizzle_len + self.atom_len)

    span = size

    def pack(self, n: int) -> SwizzleLayout:
        """The swizzle of ``n``-element units (``per_element`` minus ``log2 n``): ``SwizzleLayout(3, 3, 3).pack(2)``
        is ``SwizzleLayout(2, 3, 3)``."""
        shift = _log2_exact(n, "the pack count")
        if shift > self.per_element:
            raise ValueError(f"pack({n}): {self!r} keeps only {1 << self.per_element} elements together")
        return SwizzleLayout(self.per_element - shift, self.swizzle_len, self.atom_len, self.swizzle_inner)

    def unpack(self, n: int) -> SwizzleLayout:
        """The swizzle of elements split in ``n`` (``per_element`` plus ``log2 n``):
        ``SwizzleLayout(2, 3, 3).unpack(2)`` is ``SwizzleLayout(3, 3, 3)``."""
        shift = _log2_exact(n, "the unpack count")
        return SwizzleLayout(self.per_element + shift, self.swizzle_len, self.atom_len, self.swizzle_inner)

    def canonicalize(self) -> SwizzleLayout:
        """A swizzle is its own normal form."""
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SwizzleLayout) and tvm_ffi.structural_equal(self, other)

    def __hash__(self) -> int:
        return tvm_ffi.structural_hash(self)

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        inner = "" if self.swizzle_inner else ", swizzle_inner=False"
        return f"SwizzleLayout({self.per_element}, {self.swizzle_len}, {self.atom_len}{inner})"

    def __reduce__(self):
        return (SwizzleLayout, (self.per_element, self.swizzle_len, self.atom_len, self.swizzle_inner))


@tvm_ffi.register_object("tirx_layout.ComposeLayout")
class ComposeLayout(Object):
    """A tile onto the linear axis ``m`` followed by a swizzle of that address. Built as
    ``ComposeLayout(swizzle, tile)`` or ``ComposeLayout(per_element=, swizzle_len=, atom_len=, tile_layout=,
    swizzle_inner=True)``.

    Example:
        >>> tile = TileLayout(S[(8, 64):(64, 1)])
        >>> smem = ComposeLayout(per_element=3, swizzle_len=3, atom_len=3, tile_layout=tile)
        >>> [smem.apply(i, 0)["m"] for i in range(4)]  # column 0 of rows 0..3
        [0, 72, 144, 216]
    """

    swizzle: SwizzleLayout
    tile_layout: TileLayout

    def __init__(
        self,
        swizzle: SwizzleLayout | None = None,
        tile_layout: TileLayout | None = None,
        *,
        per_element: int | None = None,
        swizzle_len: int | None = None,
        atom_len: int | None = None,
        swizzle_inner: bool = True,
    ) -> None:
        parts = (per_element, swizzle_len, atom_len)
        if swizzle is None:
            if any(p is None for p in parts):
                raise TypeError("ComposeLayout takes a SwizzleLayout, or per_element=, swizzle_len= and atom_len=")
            swizzle = SwizzleLayout(per_element, swizzle_len, atom_len, swizzle_inner)
        elif any(p is not None for p in parts):
            raise TypeError("ComposeLayout takes either a SwizzleLayout or its parameters, not both")
        if not isinstance(swizzle, SwizzleLayout):
            raise TypeError(f"the swizzle of a ComposeLayout must be a SwizzleLayout, got {swizzle!r}")
        if not isinstance(tile_layout, TileLayout):
            raise TypeError(f"the tile of a ComposeLayout must be a TileLayout, got {tile_layout!r}")
        self.__init_handle_by_constructor__(ffi.ComposeLayout, swizzle, tile_layout)

    # ---- forward map -------------------------------------------------------------------------------------

    def apply(self, *coords, shape: Sequence | None = None) -> dict:
        """``{"m": swizzle(tile(coords)["m"])}``, for every coordinate form and input kind ``TileLayout.apply``
        takes (``ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)])).apply(1, 0) == {"m": 72}``).
        """
        return {"m": self.swizzle.apply(self.tile_layout.apply(*coords, shape=shape).get("m", 0))}

    def apply_all(self, *coords, shape: Sequence | None = None):
        """Every replica place, swizzled (see ``TileLayout.apply_all`` for the forms)."""
        places = self.tile_layout.apply_all(*coords, shape=shape)
        if isinstance(places, dict):
            return {"m": self.swizzle.apply(places.get("m", 0))}
        return [{"m": self.swizzle.apply(p.get("m", 0))} for p in places]

    def size(self, axis=None) -> int:
        """The tile's size."""
        return self.tile_layout.size(axis)

    def span(self, axis=None):
        """The tile's span (a swizzle permutes within whole periods, so it needs no more room)."""
        return self.tile_layout.span(axis)

    def get_scope(self):
        """``None``: a composed layout lives in memory only."""
        return None

    def verify_well_formed(self) -> bool:
        """Always ``True``: construction already checked that the tile maps onto ``m`` only."""
        return True

    # ---- algebra: on the tile, keeping the swizzle -----------------------------------------------------------

    def _with_tile(self, tile: TileLayout | None) -> ComposeLayout | None:
        return None if tile is None else ComposeLayout(self.swizzle, tile)

    def canonicalize(self) -> ComposeLayout:
        """The tile canonicalised, the swizzle kept."""
        return self._with_tile(self.tile_layout.canonicalize())

    def group(self, shape: Sequence[int]) -> tuple[ComposeLayout, list[int]]:
        """The tile grouped by ``shape`` (see ``TileLayout.group``), the swizzle kept."""
        grouped, seps = self.tile_layout.group(shape)
        return self._with_tile(grouped), seps

    def tile(self, outer: TileLayout, outer_shape: Sequence[int], inner_shape: Sequence[int]) -> ComposeLayout:
        """The tile tiled by ``outer`` (see ``TileLayout.tile``); the swizzle applies to the result's addresses."""
        return self._with_tile(self.tile_layout.tile(outer, outer_shape, inner_shape))

    def tile_to(self, to_shape: Sequence[int], current_shape: Sequence[int]) -> ComposeLayout:
        """The tile repeated row-major up to ``to_shape``, the swizzle kept."""
        return self._with_tile(self.tile_layout.tile_to(to_shape, current_shape))

    def is_tile_inner(self, tiled: ComposeLayout, tiled_shape: Sequence[int], inner_shape: Sequence[int]):
        """The outer TileLayout if ``tiled`` (with the same swizzle) is this tile tiled by it, else ``None``."""
        if not isinstance(tiled, ComposeLayout) or tiled.swizzle != self.swizzle:
            return None
        return self.tile_layout.is_tile_inner(tiled.tile_layout, tiled_shape, inner_shape)

    def is_tile_outer(self, tiled: ComposeLayout, tiled_shape: Sequence[int], outer_shape: Sequence[int]):
        """The inner TileLayout if ``tiled`` (with the same swizzle) is some tile tiled by this one, else ``None``."""
        if not isinstance(tiled, ComposeLayout) or tiled.swizzle != self.swizzle:
            return None
        return self.tile_layout.is_tile_outer(tiled.tile_layout, tiled_shape, outer_shape)

    def slice(self, shape: Sequence[int], region: Sequence) -> ComposeLayout | None:
        """The tile sliced (see ``TileLayout.slice``), the swizzle kept; ``None`` when the tile's slice is."""
        return self._with_tile(self.tile_layout.slice(shape, region))

    def pack(self, n: int) -> ComposeLayout:
        """``n`` contiguous elements as one: the tile packed and the swizzle's ``per_element`` lowered by log2 n."""
        return ComposeLayout(self.swizzle.pack(n), self.tile_layout.pack(n))

    def unpack(self, n: int) -> ComposeLayout:
        """Each element as ``n``: the tile unpacked and the swizzle's ``per_element`` raised by log2 n."""
        return ComposeLayout(self.swizzle.unpack(n), self.tile_layout.unpack(n))

    def storage(self) -> ComposeLayout:
        """Itself: a composed layout has no thread axes."""
        return self

    def is_trivial(self) -> bool:
        """Whether the swizzle does nothing and the tile is trivial."""
        return self.swizzle.swizzle_len == 0 and self.tile_layout.is_trivial()

    # ---- identity and printing ---------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeLayout) and tvm_ffi.structural_equal(self, other)

    def __hash__(self) -> int:
        return tvm_ffi.structural_hash(self)

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        return f"ComposeLayout({self.swizzle!r}, {self.tile_layout!r})"

    def __reduce__(self):
        return (ComposeLayout, (self.swizzle, self.tile_layout))
