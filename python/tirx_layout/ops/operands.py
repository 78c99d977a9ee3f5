"""An operand of a tile op as its lowering sees it: a region of a buffer and the buffer's layout, reached through a
flat view of its storage.

* :class:`MemoryOperand` — a region of a global or shared buffer, laid out by its layout (row-major without one),
  reached through a flat view of its storage (``<name>_flat``, which LowerLayoutAccess later points at the flat
  buffer it makes);
* :class:`FragmentOperand` — a whole register fragment (a layout with thread axes), seen as each thread's slots
  (for the ``mma.sync`` operands also a region of one that is a fragment of its own: a K chunk);
* :class:`TmemOperand` — a region of a tensor-memory buffer, reached by ``tcgen05`` instructions only.

:func:`operand` says which one a region is, given the buffers' layouts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import tvm

from ..analysis.thread_placement import fragment_vector_ok
from ..hw.memory import dtype_bytes
from ..hw.tcgen05 import TMEM_SCOPE
from ..ir.rewrite import DeclBuffer
from ..layout import ComposeLayout, S, TileLayout
from ..layout.inverse import PlaceInverse
from ..layout.placement import layout_threads, slot_count, storage_addresses, storage_extent, tail_padded


def _static(expr) -> int | None:
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tvm.tirx.IntImm):
        return int(expr.value)
    return None


def provably_multiple(expr, v: int) -> bool:
    """Whether ``expr`` (an int or a PrimExpr) is a multiple of ``v`` for every value of its variables, by TVM's
    modular-set analysis (``kt * 64`` is a multiple of 8; ``kt * 64 + 4`` and a bare ``M`` are not).

    Example:
        >>> import tvm
        >>> kt = tvm.tirx.Var("kt", "int32")
        >>> provably_multiple(kt * 64, 8), provably_multiple(kt * 64 + 4, 8), provably_multiple(48, 16)
        (True, False, True)
    """
    if isinstance(expr, int | np.integer):
        return int(expr) % v == 0
    known = tvm.sym.Analyzer().modular_set(expr)
    return known.coeff % v == 0 and known.base % v == 0


def representative_start(expr) -> int:
    """One int with the divisibility facts of ``expr``: ``gcd(coeff, base)`` of its modular set (``expr`` is
    ``coeff * k + base``), a multiple of exactly the powers of two ``expr`` provably is, so a plan made with it
    picks the same vector width (``kt * 64`` gives 64, ``kt * 64 + 4`` gives 4, a constant itself).

    Example:
        >>> import tvm
        >>> kt = tvm.tirx.Var("kt", "int32")
        >>> representative_start(kt * 64), representative_start(kt * 64 + 4), representative_start(12)
        (64, 4, 12)
    """
    if isinstance(expr, int | np.integer):
        return int(expr)
    known = tvm.sym.Analyzer().modular_set(expr)
    return math.gcd(int(known.coeff), int(known.base))


@dataclass
class LayoutTables:
    """Address tables of (layout, shape) pairs, kept for the life of one analysis (a pass run, an inference): a
    search revisits the same candidate layouts many times. Keyed by the layout objects (structurally hashed)."""

    tables: dict = field(default_factory=dict)

    def get(self, layout, shape: tuple, compute):
        key = (layout, shape)
        if key not in self.tables:
            self.tables[key] = compute()
        return self.tables[key]


class Operand:
    """One side of a copy: a region of a buffer and the buffer's layout (``None``: row-major)."""

    #: What is known of the kernel's variables (thread indices, loop ranges) when deciding tail guards; set by the
    #: lowering (``operand(..., analyzer=)``), else nothing is known.
    analyzer = None

    def __init__(self, region, layout, role: str):
        self.region = region
        self.buffer = region.source
        self.role = role
        self.layout = layout
        # Static extents as ints; a global buffer may have symbolic ones (``T.match_buffer(a, (M, 64))``).
        self.shape = tuple(e if (e := _static(d)) is not None else d for d in self.buffer.shape)
        if not all(isinstance(e, int) for e in self.shape) and (layout is not None or self.buffer.scope() != "global"):
            raise ValueError(
                f"the {role} {self.buffer.name} ({self.buffer.scope()}) has the symbolic shape "
                f"{list(self.buffer.shape)}; only a global buffer without a layout may (row-major, with tail guards)"
            )
        # Static begins as Python ints (so numpy evaluation can add them), symbolic ones as expressions.
        self.begins = [b if (b := _static(r.min)) is not None else r.min for r in region.region]
        self.extents = [_static(r.extent) for r in region.region]
        if any(e is None for e in self.extents):
            raise ValueError(f"the {role} region of {self.buffer.name} has a symbolic extent: {region}")
        self.dtype = str(self.buffer.dtype)
        self.element_bytes = dtype_bytes(self.dtype)

    def __str__(self) -> str:
        where = f"layout {self.layout}" if self.layout is not None else "row-major"
        return f"{self.buffer.name} ({self.buffer.scope()}, {where})"

    @property
    def tile_shape(self) -> tuple:
        """The region's extents without its unit dimensions: what must match between the two sides."""
        return tuple(e for e in self.extents if e != 1)

    @property
    def static_begins(self) -> bool:
        return all(isinstance(b, int) for b in self.begins)


class _Viewed(Operand):
    """An operand reached through a flat view of ``extent`` elements of its buffer's storage."""

    extent: int

    def read(self, index):
        """The value at storage ``index`` (a ``Ramp`` for a vector)."""
        return tvm.tirx.BufferLoad(self.view, [index])

    def _make_view(self):
        self.view = tvm.tirx.decl_buffer(
            (self.extent,), self.dtype, f"{self.buffer.name}_flat", scope=self.buffer.scope(), layout=None
        )

    def declaration(self):
        """The ``DeclBuffer`` of the flat view, to put before the accesses."""
        return DeclBuffer(self.view, data=self.buffer.data)


class MemoryOperand(_Viewed):
    """A region of a global or shared buffer (see the module docstring)."""

    def __init__(self, region, layout, role: str, tables: LayoutTables | None = None):
        super().__init__(region, layout, role)
        self._tables = tables or LayoutTables()
        self.extent = storage_extent(layout) if layout is not None else math.prod(self.shape)
        self._make_view()

    @property
    def laid_out(self) -> TileLayout | ComposeLayout:
        """The buffer's layout, row-major (``S[shape]``) when it has none."""
        return self.layout if self.layout is not None else TileLayout(S[self.shape])

    def stage_begins(self, name: str) -> list[int]:
        """The region's begins with each symbolic one 0. A symbolic begin is a stage index: it must be on a dimension
        the region takes one index of, so that every stage is the same region moved by a fixed offset (refused
        otherwise, naming ``name``).

        Example (stage ``s`` of a ring of three 64 x 64 tiles):
            >>> B = tvm.tirx.decl_buffer((3, 64, 64), "float16", "B", scope="shared")
            >>> s = tvm.tirx.Var("s", "int32")
            >>> MemoryOperand(B[s, 0:64, 0:64], None, "source").stage_begins("B")
            [0, 0, 0]
        """
        for d, (begin, extent) in enumerate(zip(self.begins, self.extents, strict=True)):
            if not isinstance(begin, int) and extent != 1:
                raise ValueError(
                    f"{name}'s region {self.region} starts at {begin} on dimension {d}, which it takes {extent} "
                    "indices of; only a dimension the region takes one index of (a stage) may start at a symbolic index"
                )
        return [b if isinstance(b, int) else 0 for b in self.begins]

    def stage_slice(self, name: str) -> tuple[list[int], TileLayout | ComposeLayout]:
        """``(stage_begins, the layout sliced to the region there)``: the layout every stage of the region has (the
        buffer's layout, row-major without one). A region the layout cannot slice to an affine sub-box is refused.

        Example:
            >>> B = tvm.tirx.decl_buffer((3, 64, 64), "float16", "B", scope="shared")
            >>> s = tvm.tirx.Var("s", "int32")
            >>> MemoryOperand(B[s, 0:8, 0:32], None, "source").stage_slice("B")
            ([0, 0, 0], TileLayout(S[(8, 32):(64, 1)]))
        """
        static, layout = self.stage_begins(name), self.laid_out
        sliced = layout.slice(list(self.shape), [(b, b + e) for b, e in zip(static, self.extents, strict=True)])
        if sliced is None:
            raise ValueError(f"{name}'s region {self.region} is not an affine sub-box of its layout {layout}")
        return static, sliced

    def addresses(self, local_coords, every_replica: bool) -> list:
        """Flat storage addresses of the region element at ``local_coords`` (ints, numpy arrays or PrimExprs),
        one per replica when asked."""
        coords = [b + c for b, c in zip(self.begins, local_coords, strict=True)]
        return storage_addresses(self.layout, self.shape, coords, every_replica)

    def bounds_guards(self, local_coords) -> list:
        """``begin + c < extent`` on each dimension where the region may reach past the buffer: one of symbolic
        extent (a global buffer's ``M``), or of static extent where the begin is symbolic and ``begin + extent``
        is not provably inside (``analyzer``: what the kernel's thread indices and loops bound), as a persistent
        kernel's tile ``(cta + i * ctas) // tiles_n * 128`` of an M = 200. The tail guard of the element at
        ``local_coords``. With ``v``-element vectors the
        guard on a vector's first element holds for all of it (the row length is then a multiple of ``v``). On
        numpy coordinates (the cost model) none: a copy is counted as if its whole tile were in bounds.

        Example: for ``A[bx * 32 : bx * 32 + 32, 0:64]`` of ``A`` in ``(M, 64)``, ``[bx * 32 + r < M]``.
        """
        if any(isinstance(c, np.ndarray) for c in local_coords):
            return []
        analyzer = self.analyzer or tvm.sym.Analyzer()
        guards = []
        for b, c, e, extent in zip(self.begins, local_coords, self.extents, self.shape, strict=True):
            if isinstance(extent, int) and isinstance(b, int):
                continue
            if analyzer.can_prove(b + e <= extent):
                continue
            guards.append(b + c < extent)
        return guards

    def address_tables(self) -> list[np.ndarray]:
        """Addresses of every element of the whole buffer, one array per replica, in the buffer's shape."""

        def compute():
            grids = np.meshgrid(*[np.arange(e) for e in self.shape], indexing="ij")
            places = storage_addresses(self.layout, self.shape, grids, every_replica=True)
            return [np.broadcast_to(np.asarray(a), self.shape) for a in places]

        return self._tables.get(self.layout, self.shape, compute)

    def vector_ok(self, v: int) -> bool:
        """Whether every aligned run of ``v`` elements along the last dimension is contiguous and aligned in
        storage (for every replica), and the region starts and ends on such runs. A symbolic start (``kt * 64``)
        or row length counts when it is provably a multiple of ``v``."""
        if not provably_multiple(self.shape[-1], v) or self.extents[-1] % v:
            return False
        if not provably_multiple(self.begins[-1], v):
            return False
        if self.layout is None:  # row-major: the runs are consecutive, aligned since the row length is a multiple
            return True
        for table in self.address_tables():
            runs = table.reshape((*self.shape[:-1], self.shape[-1] // v, v))
            if (runs[..., 0] % v).any() or (runs - runs[..., :1] != np.arange(v)).any():
                return False
        return True

    def storage_order(self):
        """For a whole shared buffer whose layout fills its storage exactly: a function from a storage address to
        the logical (row-major) index of the element there (ints, arrays or PrimExprs); else ``None``. Dealing
        vectors in storage order makes consecutive lanes touch consecutive shared addresses, which no swizzle or
        interleaving can make conflict, while the other side still gets whole aligned vectors."""
        layout = self.layout
        if self.buffer.scope() != "shared" or layout is None or tuple(self.extents) != self.shape:
            return None
        swizzle, tile = (layout.swizzle, layout.tile_layout) if isinstance(layout, ComposeLayout) else (None, layout)
        if not isinstance(tile, TileLayout) or tile.replica or tile.size() != self.extent:
            return None
        try:
            inverse = PlaceInverse(tile)
        except ValueError:
            return None
        if set(inverse.axes) - {"m"} or not inverse.covered("m", self.extent).all():
            return None
        if swizzle is None:
            return lambda address: inverse.flat_index({"m": address})
        period = np.arange(swizzle.size())
        if (swizzle.swizzle_address(swizzle.swizzle_address(period)) != period).any():
            return None  # not its own inverse: keep logical order
        return lambda address: inverse.flat_index({"m": swizzle.swizzle_address(address)})


class FragmentOperand(_Viewed):
    """A register fragment, seen as each thread's ``slot_count`` slots: the whole buffer, or (where the op takes
    ``regions``: the ``mma.sync`` operands) a region of it that every thread holds a fixed run of its own slots of
    (:func:`fragment_region`), seen as a fragment of the region's shape whose slots start ``slot_offset`` into the
    buffer's (the view's ``elem_offset``)."""

    def __init__(self, region, layout, role: str, regions: bool = False):
        super().__init__(region, layout, role)
        if not isinstance(layout, TileLayout):
            raise ValueError(f"register fragment {self.buffer.name} needs a TileLayout, got {layout!r}")
        self.slot_offset = 0
        if any(not isinstance(b, int) or b != 0 for b in self.begins) or tuple(self.extents) != self.shape:
            if not regions:
                raise ValueError(
                    f"a register fragment is an operand as a whole: {self.buffer.name} has shape {self.shape}, "
                    f"the {role} is {region}"
                )
            layout, self.slot_offset = fragment_region(layout, self.shape, self.begins, self.extents, self.buffer.name)
            self.layout, self.shape, self.begins = layout, tuple(self.extents), [0] * len(self.extents)
        self.extent = slot_count(layout)
        self.padded = tail_padded(layout, self.shape)
        self._make_view()

    def _make_view(self):
        self.view = tvm.tirx.decl_buffer(
            (self.extent,),
            self.dtype,
            f"{self.buffer.name}_flat",
            scope=self.buffer.scope(),
            layout=None,
            elem_offset=self.slot_offset,
        )

    def vector_ok(self, v: int) -> bool:
        """Whether each aligned run of ``v`` elements sits in ``v`` aligned consecutive slots of one thread."""
        if self.padded:  # a tail layout: runs along the padded flat index, which must not cross rows
            return self.shape[-1] % v == 0 and fragment_vector_ok(self.layout, (int(self.layout.size()),), v)
        return fragment_vector_ok(self.layout, self.shape, v)


def fragment_region(layout: TileLayout, shape, begins, extents, name: str = "the fragment"):
    """``(layout of the region, slot offset)`` of the region ``begins``/``extents`` of a register fragment of
    ``shape`` laid out by ``layout``: the region is a fragment of its own when every thread holds its elements in the
    same places relative to one slot (the layout sliced there moves no element to another thread). A begin may be
    an expression (``kk * 32``, a loop over the K chunks of an ``mma.sync`` operand) when it is provably a multiple
    of the region's extent on its dimension and each such region is the first moved by a fixed number of slots per
    step: the offset is then an expression. ``ValueError`` names the region otherwise.

    Example (columns 32..63 of an ``mma.sync`` A fragment of 16 x 64 bfloat16: the slots from 16 on):
        >>> from tirx_layout import mma_sync_a_layout
        >>> a = mma_sync_a_layout((16, 64), "bfloat16")
        >>> fragment_region(a, (16, 64), [0, 32], [16, 32]) == (mma_sync_a_layout((16, 32), "bfloat16"), 16)
        True
        >>> fragment_region(a, (16, 64), [0, 4], [16, 8], "a")
        Traceback (most recent call last):
        ...
        ValueError: the region [0, 4] + [16, 8] of register fragment a: the layout sliced there is not its own
        fragment (it moves elements to other threads), or the slice is not affine
    """
    where = f"the region {list(begins)} + {list(extents)} of register fragment {name}"

    def sliced(at):
        part = layout.slice(list(shape), [(b, b + e) for b, e in zip(at, extents, strict=True)])
        offsets = {} if part is None else {axis.name: value for axis, value in part.offset.items()}
        if part is None or set(offsets) - {"m"} or not all(isinstance(v, int) for v in offsets.values()):
            raise ValueError(
                f"{where}: the layout sliced there is not its own fragment (it moves elements to other threads), or "
                "the slice is not affine"
            )
        return TileLayout.from_iters(part.shard, part.replica), offsets.get("m", 0)

    static = [b if isinstance(b, int) else 0 for b in begins]
    own, offset = sliced(static)
    for d, (begin, extent) in enumerate(zip(begins, extents, strict=True)):
        if isinstance(begin, int):
            continue
        if not provably_multiple(begin, extent) or shape[d] % extent:
            raise ValueError(
                f"{where}: the symbolic begin {begin} must be a multiple of the region's extent {extent} on "
                f"dimension {d}, whose length {shape[d]} that extent divides"
            )
        steps = [sliced([*static[:d], extent * c, *static[d + 1 :]]) for c in range(shape[d] // extent)]
        step = steps[1][1] - offset if len(steps) > 1 else 0
        if any(part != own or off != offset + c * step for c, (part, off) in enumerate(steps)):
            raise ValueError(f"{where}: its regions along dimension {d} are not one fragment moved by fixed slot steps")
        offset = offset + tvm.tirx.floordiv(begin, extent) * step
    return own, offset


class TmemOperand(Operand):
    """A region of a tensor-memory buffer: reached by ``tcgen05`` instructions, never through a view."""


def operand(
    region, layouts: dict, role: str, tables: LayoutTables | None = None, analyzer=None, fragment_regions: bool = False
) -> Operand:
    """The operand a copy region is, given every buffer's layout (``layouts``: buffer -> layout); ``analyzer``
    knows the ranges of the kernel's variables, for the tail guards; ``fragment_regions``: whether a region of a
    register fragment may be an operand (:class:`FragmentOperand`), else only a whole one.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((8, 8), "float32", "A")
        >>> str(operand(A[0:8, 0:4], {}, "source")), operand(A[0:8, 0:4], {}, "source").tile_shape
        ('A (global, row-major)', (8, 4))
    """
    buffer = region.source
    layout = layouts.get(buffer)
    if buffer.scope() == TMEM_SCOPE:
        found = TmemOperand(region, layout, role)
        found.analyzer = analyzer
        return found
    if layout is not None and layout_threads(layout):
        return FragmentOperand(region, layout, role, regions=fragment_regions)
    found = MemoryOperand(region, layout, role, tables)
    found.analyzer = analyzer
    return found
