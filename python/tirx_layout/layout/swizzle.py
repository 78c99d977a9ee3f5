"""SwizzleLayout and ComposeLayout (SPEC §3): XOR swizzles of linear shared-memory addresses, alone or after a tile."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm_ffi import Object, from_dlpack

from ..core import ffi
from ..core.values import int64_array, offset_value, static_int
from .indexing import flatten
from .spec import S
from .tile import TileLayout


def _log2_exact(n: int, what: str) -> int:
    n = static_int(n, what)
    if n < 1 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n}")
    return n.bit_length() - 1


def _identity_over(period: int) -> TileLayout:
    return TileLayout(S[period:1])


def _terms(expr) -> list:
    """The terms of a sum (``a + b + c`` -> ``[a, b, c]``); any other expression is one term."""
    if isinstance(expr, tvm.tirx.Add):
        return _terms(expr.a) + _terms(expr.b)
    return [expr]


def _sum(terms):
    """``terms`` added left to right, zeros left out (an int 0 when nothing is left)."""
    total = 0
    for term in terms:
        if isinstance(term, int) and term == 0:
            continue
        total = term if isinstance(total, int) and total == 0 else total + term
    return total


def _term_bits(term, analyzer) -> int | None:
    """A mask of the bits ``term`` can set (its bounds, and the low zero bits its modular set shows); ``None``
    when it may be negative or is unbounded."""
    bound = analyzer.const_int_bound(term)
    if bound.min_value < 0 or bound.max_value >= 1 << 31:
        return None
    known = analyzer.modular_set(term)
    step = math.gcd(int(known.coeff), int(known.base))
    if known.coeff == 0:
        return int(known.base)
    zeros = (step & -step).bit_length() - 1 if step else 0
    return ((1 << int(bound.max_value).bit_length()) - 1) & ~((1 << zeros) - 1)


def _possible_bits(terms, analyzer) -> int | None:
    """A mask of the bits a sum of ``terms`` can set: the union of the terms' when no two can share a bit (the
    sum then never carries), else the whole sum's; ``None`` when unknown."""
    masks = [_term_bits(t, analyzer) for t in terms]
    if all(m is not None for m in masks):
        union = 0
        for m in masks:
            if union & m:
                break
            union |= m
        else:
            return union
    return _term_bits(_sum(terms), analyzer)


@tvm_ffi.register_object("tirx_layout.SwizzleLayout")
class SwizzleLayout(Object):
    """The XOR swizzle of linear element addresses: with ``q = a >> per_element``, the ``swizzle_len`` bits of
    ``q`` at ``atom_len`` are XOR-ed into its low bits (``swizzle_inner``; the reverse otherwise). A bijection of
    every period of ``2^(per_element + swizzle_len + atom_len)`` elements.

    A layout like the others: over one period it is ``ComposeLayout(self, TileLayout(S[period:1]))``, and every
    layout operation means what it means on that composition (which canonicalises back to ``self``).

    Example:
        >>> sw = SwizzleLayout(3, 3, 3)  # fp16, 128-byte rows
        >>> [sw.apply(64 * i)["m"] for i in range(4)]
        [0, 72, 144, 216]
        >>> sw.size(), sw.apply(1, 8, shape=[8, 64])
        (512, {'m': 64})
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

    # ---- forward map -------------------------------------------------------------------------------------

    def swizzle_address(self, address):
        """The swizzled address of ``address``: an int, an integer numpy array (elementwise, in C++) or a TVM
        ``PrimExpr`` (an XOR/shift expression CUDA code generation accepts).

        Example:
            >>> SwizzleLayout(3, 3, 3).swizzle_address(64 + 8)
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

    def swizzle_sum(self, address, analyzer):
        """The swizzled address of ``address`` (a ``PrimExpr``, a sum of terms), written so that what the swizzle
        does not change stays outside it: a loop-invariant core, and adds (a stage, a block of rows) the compiler
        folds into the instruction's immediate or does once per iteration. Equal to ``swizzle_address(address)``
        for every ``address >= 0``.

        * A term that is a multiple of the period (``analyzer.modular_set``: a stage ``s * 4096``, a row block
          ``+ 1024``) is added after the swizzle: the swizzle reads and writes only the bits below the period.
        * A term below the period whose bits the other terms never set (``analyzer`` bounds each term's bits), that
          the swizzle never reads and that shares no variable with the terms it does read, is XOR-ed after it:
          ``swizzle(t + c) = swizzle(t) ^ c`` (a constant or a loop's column block of an 8 x 8 matrix within a
          128-byte row); otherwise it stays inside.

        Example (the A rows of an ``ldmatrix`` in stage ``s`` of a 128B-swizzled float16 ring, row ``r < 64``):
            >>> r, s = tvm.tirx.Var("r", "int32"), tvm.tirx.Var("s", "int32")
            >>> analyzer = tvm.sym.Analyzer()
            >>> analyzer.bind(r, tvm.ir.Range(0, 64)); analyzer.bind(s, tvm.ir.Range(0, 3))
            >>> str(SwizzleLayout(3, 3, 3).swizzle_sum(s * 4096 + r * 64 + 1024 + 16, analyzer))
            '((r * 64 ^ (r * 64 >> 6 & 7) << 3) + s * 4096 ^ 16) + 1024'
        """
        if isinstance(address, int | tvm.tirx.IntImm):
            return self.swizzle_address(address)
        period = 1 << (self.per_element + self.swizzle_len + self.atom_len)
        outside, rest, constant = [], [], 0
        for term in _terms(analyzer.simplify(address)):
            if isinstance(term, tvm.tirx.IntImm):
                constant += int(term.value)
                continue
            known = analyzer.modular_set(term)
            (outside if known.coeff % period == 0 and known.base % period == 0 else rest).append(term)
        low, high = constant % period, constant - constant % period
        if low:
            rest.append(tvm.tirx.const(low, "int32"))
        source = self.per_element + (self.atom_len if self.swizzle_inner else 0)
        read = ((1 << self.swizzle_len) - 1) << source
        masks = [_term_bits(t, analyzer) for t in rest]
        # XOR-ed after the swizzle: a term the swizzle does not read, sharing no bit with another term and no variable
        # with a term that must stay inside (the thread's row stays whole; a K block or a constant comes out)
        names = [{v.name for v in tvm.tirx.analysis.undefined_vars(t)} for t in rest]
        kept = set().union(*(n for n, m in zip(names, masks, strict=True) if m is None or m & read))
        xored = [
            i
            for i, m in enumerate(masks)
            if m is not None
            and not m & read
            and not names[i] & kept
            and all(o is not None and not m & o for j, o in enumerate(masks) if j != i)
        ]
        inside = [t for i, t in enumerate(rest) if i not in xored]
        if xored and inside:
            bits = _possible_bits(inside, analyzer)
            if bits is None or any(bits & masks[i] for i in xored):
                xored, inside = [], rest
        swizzled = _sum([self._expression(_sum(inside)) if inside else 0, *outside])
        if xored:  # (the stage added before the XOR: the compiler adds it once for every matrix of the stage)
            swizzled = tvm.tirx.bitwise_xor(swizzled, _sum([rest[i] for i in xored]))
        return _sum([swizzled, high])

    def _flat(self, coords, shape):
        if shape is not None:
            if len(coords) != len(shape):
                raise ValueError(f"coordinate has {len(coords)} values but shape has {len(shape)} dimensions")
            return flatten(list(coords), [static_int(s, "a shape extent") for s in shape])
        if len(coords) != 1:
            raise ValueError(
                f"a SwizzleLayout takes one flat address, or coordinates with shape=..., got {len(coords)} values"
            )
        return coords[0]

    def apply(self, *coords, shape: Sequence | None = None) -> dict:
        """``{"m": swizzled address}`` of a flat address, or of ``coords`` flattened row-major in ``shape``; ints,
        integer numpy arrays or ``PrimExpr`` as for ``swizzle_address``.

        Example:
            >>> SwizzleLayout(3, 3, 3).apply(72), SwizzleLayout(3, 3, 3).apply(1, 8, shape=[8, 64])
            ({'m': 64}, {'m': 64})
        """
        return {"m": self.swizzle_address(self._flat(coords, shape))}

    def apply_all(self, *coords, shape: Sequence | None = None):
        """Every place (a swizzle has no replicas): ``[apply(...)]``, or for arrays ``{"m": array}`` with a leading
        dimension of one (the forms of ``TileLayout.apply_all``).

        Example:
            >>> SwizzleLayout(3, 3, 3).apply_all(72)
            [{'m': 64}]
        """
        place = self.apply(*coords, shape=shape)
        if isinstance(place["m"], np.ndarray):
            return {"m": place["m"][np.newaxis]}
        return [place]

    # ---- queries -------------------------------------------------------------------------------------------

    def as_compose(self) -> ComposeLayout:
        """The same map as a ComposeLayout: this swizzle over the identity tile of one period.

        Example:
            >>> SwizzleLayout(3, 3, 3).as_compose()
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[512:1]))
        """
        return ComposeLayout(self, _identity_over(self.period()))

    def period(self) -> int:
        """``2^(per_element + swizzle_len + atom_len)``: the swizzle permutes each aligned block this long.

        Example:
            >>> SwizzleLayout(3, 3, 3).period()
            512
        """
        return 1 << (self.per_element + self.swizzle_len + self.atom_len)

    def size(self, axis_name: str | None = None) -> int:
        """The period (on ``m``; 1 on any other axis, which a swizzle does not use).

        Example:
            >>> SwizzleLayout(3, 3, 3).size(), SwizzleLayout(3, 3, 3).size("laneid")
            (512, 1)
        """
        return self.as_compose().size(axis_name)

    def span(self, axis_name: str | None = None) -> int:
        """The period (the addresses of one period are a permutation of ``0 .. period-1``; 1 on any other axis).

        Example:
            >>> SwizzleLayout(2, 1, 3).span()
            64
        """
        return self.as_compose().span(axis_name)

    def get_scope(self) -> None:
        """``None``: a swizzle lives in memory only."""
        return None

    def verify_well_formed(self) -> bool:
        """Always ``True``: construction already checked the parameters."""
        return True

    def is_trivial(self) -> bool:
        """Whether the swizzle moves nothing (``swizzle_len == 0``): ``SwizzleLayout(3, 0, 3).is_trivial()``."""
        return self.swizzle_len == 0

    def is_swizzle(self) -> bool:
        """``True`` (seed 002's ``Layout.is_swizzle``)."""
        return True

    # ---- algebra: as the composition over one period -----------------------------------------------------------

    def canonicalize(self) -> SwizzleLayout:
        """A swizzle is its own normal form."""
        return self

    def group(self, shape: Sequence[int]) -> tuple[ComposeLayout, list[int]]:
        """The identity tile grouped by ``shape``, the swizzle kept (see ``TileLayout.group``).

        Example:
            >>> SwizzleLayout(3, 3, 3).group([8, 64])
            (ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)])), [0, 1, 2])
        """
        return self.as_compose().group(shape)

    def tile(self, outer: TileLayout, outer_shape: Sequence[int], inner_shape: Sequence[int]) -> ComposeLayout:
        """One period tiled by ``outer``, the swizzle applied to the result's addresses.

        Example:
            >>> SwizzleLayout(3, 3, 3).tile(TileLayout(S[4]), [4], [512])
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[2048:1]))
        """
        return self.as_compose().tile(outer, outer_shape, inner_shape)

    def tile_to(self, to_shape: Sequence[int], current_shape: Sequence[int]) -> ComposeLayout:
        """One period repeated row-major up to ``to_shape``, the swizzle kept."""
        return self.as_compose().tile_to(to_shape, current_shape)

    def is_tile_inner(self, tile_layout, tiled_shape: Sequence[int], inner_shape: Sequence[int]) -> TileLayout | None:
        """The outer TileLayout if ``tile_layout`` (a ComposeLayout with this swizzle) is one period tiled by it.

        Example:
            >>> tiled = SwizzleLayout(3, 3, 3).tile(TileLayout(S[2]), [2], [512])
            >>> SwizzleLayout(3, 3, 3).is_tile_inner(tiled, [1024], [512])
            TileLayout(S[2:1])
        """
        return self.as_compose().is_tile_inner(tile_layout, tiled_shape, inner_shape)

    def is_tile_outer(self, tile_layout, tiled_shape: Sequence[int], outer_shape: Sequence[int]) -> None:
        """``None``: ``tile`` takes a TileLayout outer, so no tiled layout has a swizzle as its outer part."""
        return None

    def direct_sum(self, left: TileLayout, left_shape: Sequence[int], right_shape: Sequence[int]) -> ComposeLayout:
        """``left +`` one period on the interleaved domain (see ``TileLayout.direct_sum``), the swizzle kept."""
        return self.as_compose().direct_sum(left, left_shape, right_shape)

    def is_direct_sum_right(self, sum_layout, interleaved_shape: Sequence[int], right_shape: Sequence[int]):
        """The left addend if ``sum_layout`` (with this swizzle) is one period ``direct_sum``-ed, else ``None``."""
        return self.as_compose().is_direct_sum_right(sum_layout, interleaved_shape, right_shape)

    def broadcast(self, num: int, position: int = -1, axis="m") -> ComposeLayout:
        """One period with a stride-0 iter inserted (see ``TileLayout.broadcast``), the swizzle kept.

        Example:
            >>> SwizzleLayout(3, 3, 3).broadcast(2)
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(512, 2):(1, 0)]))
        """
        return self.as_compose().broadcast(num, position, axis)

    def slice(self, shape: Sequence[int], region: Sequence) -> ComposeLayout | None:
        """The sub-box ``region`` of one period seen as ``shape``, the swizzle kept.

        Example:
            >>> SwizzleLayout(3, 3, 3).slice([512], [(64, 128)])
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[64:1] + 64))
        """
        return self.as_compose().slice(shape, region)

    def storage(self) -> SwizzleLayout:
        """Itself: a swizzle has no thread axes."""
        return self

    def pack(self, num: int) -> SwizzleLayout:
        """The swizzle of ``num``-element units (``per_element`` minus ``log2 num``):
        ``SwizzleLayout(3, 3, 3).pack(2)`` is ``SwizzleLayout(2, 3, 3)``."""
        shift = _log2_exact(num, "the pack count")
        if shift > self.per_element:
            raise ValueError(f"pack({num}): {self!r} keeps only {1 << self.per_element} elements together")
        return SwizzleLayout(self.per_element - shift, self.swizzle_len, self.atom_len, self.swizzle_inner)

    def unpack(self, num: int) -> SwizzleLayout:
        """The swizzle of elements split in ``num`` (``per_element`` plus ``log2 num``):
        ``SwizzleLayout(2, 3, 3).unpack(2)`` is ``SwizzleLayout(3, 3, 3)``."""
        shift = _log2_exact(num, "the unpack count")
        return SwizzleLayout(self.per_element + shift, self.swizzle_len, self.atom_len, self.swizzle_inner)

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


# The three spellings of a ComposeLayout: seed 002's pair, and the swizzle's parameters with the tile (seed 000 by
# keyword, upstream 0.27 also positionally).
_PAIR_FORM = inspect.Signature(
    [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("layout_A", "layout_B")]
)
_PARTS_FORM = inspect.Signature(
    [
        *(
            inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for n in ("per_element", "swizzle_len", "atom_len", "tile_layout")
        ),
        inspect.Parameter("swizzle_inner", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=True),
    ]
)


def _compose_parts(args: tuple, kwargs: dict) -> tuple[SwizzleLayout, TileLayout]:
    pair = (bool(args) and isinstance(args[0], SwizzleLayout)) or "layout_A" in kwargs or "layout_B" in kwargs
    form = _PAIR_FORM if pair else _PARTS_FORM
    try:
        bound = form.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(
            f"ComposeLayout takes (layout_A: SwizzleLayout, layout_B: TileLayout) or (per_element, swizzle_len, "
            f"atom_len, tile_layout, swizzle_inner=True): {err}"
        ) from None
    bound.apply_defaults()
    values = bound.arguments
    if pair:
        swizzle, tile = values["layout_A"], values["layout_B"]
    else:
        parts = (values[name] for name in ("per_element", "swizzle_len", "atom_len", "swizzle_inner"))
        swizzle = SwizzleLayout(*parts)
        tile = values["tile_layout"]
    if not isinstance(swizzle, SwizzleLayout):
        raise TypeError(f"the swizzle (layout_A) of a ComposeLayout must be a SwizzleLayout, got {swizzle!r}")
    if not isinstance(tile, TileLayout):
        raise TypeError(f"the tile (layout_B) of a ComposeLayout must be a TileLayout, got {tile!r}")
    return swizzle, tile


def _swizzle_of(tiled) -> SwizzleLayout | None:
    if isinstance(tiled, ComposeLayout):
        return tiled.swizzle
    if isinstance(tiled, SwizzleLayout):
        return tiled
    return None


@tvm_ffi.register_object("tirx_layout.ComposeLayout")
class ComposeLayout(Object):
    """A tile onto the linear axis ``m`` followed by a swizzle of that address. Three spellings:
    ``ComposeLayout(layout_A, layout_B)`` (a SwizzleLayout and a TileLayout, positional or by keyword),
    ``ComposeLayout(per_element=, swizzle_len=, atom_len=, tile_layout=, swizzle_inner=True)`` and the same five
    positionally. The swizzle's parameters read through (``per_element``, ...); ``layout_A``/``swizzle`` and
    ``layout_B``/``tile_layout`` are the two parts.

    Example:
        >>> tile = TileLayout(S[(8, 64):(64, 1)])
        >>> smem = ComposeLayout(per_element=3, swizzle_len=3, atom_len=3, tile_layout=tile)
        >>> [smem.apply(i, 0)["m"] for i in range(4)]  # column 0 of rows 0..3
        [0, 72, 144, 216]
        >>> smem == ComposeLayout(SwizzleLayout(3, 3, 3), tile) == ComposeLayout(3, 3, 3, tile), smem.atom_len
        (True, 3)
    """

    swizzle: SwizzleLayout
    tile_layout: TileLayout

    def __init__(self, *args, **kwargs) -> None:
        swizzle, tile = _compose_parts(args, kwargs)
        self.__init_handle_by_constructor__(ffi.ComposeLayout, swizzle, tile)

    # ---- the parts, under seed 002's and seed 000's names ---------------------------------------------------

    @property
    def layout_A(self) -> SwizzleLayout:
        """The swizzle (seed 002's name for the first part)."""
        return self.swizzle

    @property
    def layout_B(self) -> TileLayout:
        """The tile (seed 002's name for the second part)."""
        return self.tile_layout

    @property
    def per_element(self) -> int:
        """The swizzle's ``per_element``."""
        return self.swizzle.per_element

    @property
    def swizzle_len(self) -> int:
        """The swizzle's ``swizzle_len``."""
        return self.swizzle.swizzle_len

    @property
    def atom_len(self) -> int:
        """The swizzle's ``atom_len``."""
        return self.swizzle.atom_len

    @property
    def swizzle_inner(self) -> bool:
        """The swizzle's ``swizzle_inner``."""
        return self.swizzle.swizzle_inner

    # ---- forward map -------------------------------------------------------------------------------------

    def apply(self, *coords, shape: Sequence | None = None) -> dict:
        """``{"m": swizzle(tile(coords)["m"])}``, for every coordinate form and input kind ``TileLayout.apply``
        takes (``ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)])).apply(1, 0) == {"m": 72}``).
        """
        return {"m": self.swizzle.swizzle_address(self.tile_layout.apply(*coords, shape=shape).get("m", 0))}

    def apply_all(self, *coords, shape: Sequence | None = None):
        """Every replica place, swizzled (see ``TileLayout.apply_all`` for the forms)."""
        places = self.tile_layout.apply_all(*coords, shape=shape)
        if isinstance(places, dict):
            return {"m": self.swizzle.swizzle_address(places.get("m", 0))}
        return [{"m": self.swizzle.swizzle_address(p.get("m", 0))} for p in places]

    def size(self, axis_name=None) -> int:
        """The tile's size."""
        return self.tile_layout.size(axis_name)

    def span(self, axis_name=None):
        """The tile's span (a swizzle permutes within whole periods, so it needs no more room)."""
        return self.tile_layout.span(axis_name)

    def get_scope(self):
        """``None``: a composed layout lives in memory only."""
        return None

    def verify_well_formed(self) -> bool:
        """Always ``True``: construction already checked that the tile maps onto ``m`` only."""
        return True

    def is_swizzle(self) -> bool:
        """``False``: seed 002's ``Layout.is_swizzle`` is true of a bare SwizzleLayout only."""
        return False

    # ---- algebra: on the tile, keeping the swizzle -----------------------------------------------------------

    def _with_tile(self, tile: TileLayout | None) -> ComposeLayout | None:
        return None if tile is None else ComposeLayout(self.swizzle, tile)

    def canonicalize(self) -> ComposeLayout | SwizzleLayout:
        """The tile canonicalised, the swizzle kept; the bare SwizzleLayout when the tile is the identity over
        exactly one period.

        Example:
            >>> ComposeLayout(3, 3, 3, TileLayout(S[(8, 64):(64, 1)])).canonicalize()
            SwizzleLayout(3, 3, 3)
            >>> ComposeLayout(3, 3, 3, TileLayout(S[(8, 32):(64, 1)])).canonicalize()
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 32):(64, 1)]))
        """
        tile = self.tile_layout.canonicalize()
        if tile == _identity_over(self.swizzle.period()):
            return self.swizzle
        return self._with_tile(tile)

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

    def is_tile_inner(self, tile_layout, tiled_shape: Sequence[int], inner_shape: Sequence[int]) -> TileLayout | None:
        """The outer TileLayout if ``tile_layout`` (a ComposeLayout, or bare SwizzleLayout, with the same swizzle) is
        this tile tiled by it, else ``None``."""
        if _swizzle_of(tile_layout) != self.swizzle:
            return None
        if isinstance(tile_layout, SwizzleLayout):
            tile_layout = tile_layout.as_compose()
        return self.tile_layout.is_tile_inner(tile_layout.tile_layout, tiled_shape, inner_shape)

    def direct_sum(self, left: TileLayout, left_shape: Sequence[int], right_shape: Sequence[int]) -> ComposeLayout:
        """``left + tile`` on the interleaved domain (see ``TileLayout.direct_sum``), the swizzle kept."""
        return self._with_tile(self.tile_layout.direct_sum(left, left_shape, right_shape))

    def is_direct_sum_right(self, sum_layout, interleaved_shape: Sequence[int], right_shape: Sequence[int]):
        """The left addend if ``sum_layout`` (with the same swizzle) is ``direct_sum``-ed from this tile, else
        ``None``."""
        if _swizzle_of(sum_layout) != self.swizzle:
            return None
        if isinstance(sum_layout, SwizzleLayout):
            sum_layout = sum_layout.as_compose()
        return self.tile_layout.is_direct_sum_right(sum_layout.tile_layout, interleaved_shape, right_shape)

    def is_tile_outer(self, tile_layout, tiled_shape: Sequence[int], outer_shape: Sequence[int]) -> None:
        """``None``: ``tile`` takes a TileLayout outer, so no tiled layout has a ComposeLayout as its outer part."""
        return None

    def slice(self, shape: Sequence[int], region: Sequence) -> ComposeLayout | None:
        """The tile sliced (see ``TileLayout.slice``), the swizzle kept; ``None`` when the tile's slice is."""
        return self._with_tile(self.tile_layout.slice(shape, region))

    def pack(self, num: int) -> ComposeLayout:
        """``num`` contiguous elements as one: the tile packed, the swizzle's ``per_element`` lowered by log2 num."""
        return ComposeLayout(self.swizzle.pack(num), self.tile_layout.pack(num))

    def unpack(self, num: int) -> ComposeLayout:
        """Each element as ``num``: the tile unpacked, the swizzle's ``per_element`` raised by log2 num."""
        return ComposeLayout(self.swizzle.unpack(num), self.tile_layout.unpack(num))

    def broadcast(self, num: int, position: int = -1, axis="m") -> ComposeLayout:
        """The tile broadcast (see ``TileLayout.broadcast``), the swizzle kept."""
        return self._with_tile(self.tile_layout.broadcast(num, position, axis))

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
