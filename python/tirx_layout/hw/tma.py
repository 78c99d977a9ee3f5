"""The Tensor Memory Accelerator's tensor map as data: the fields ``cuTensorMapEncodeTiled`` takes, every limit the
CUDA driver documents for them, the mbarrier transaction bytes of one box, and the map a shared-memory layout asks
for (facts restated, with sources, in ``docs/notes/tma-facts.md``).

* :class:`TensorMap` holds one tiled map in the driver's own order (dimension 0 innermost, strides in bytes) and
  refuses any field the driver would refuse, naming the field and the limit.
* :func:`tensor_map_for` derives the map of a copy from the global buffer's shape and the shared buffer's layout:
  the swizzle comes from the layout (one home for the modes: ``hw/memory.py``) and the layout must be exactly the
  row-major image of the box under that swizzle, which is the only thing TMA writes.
* :func:`transaction_bytes` is what one copy adds to its mbarrier's transaction count.

Symbolic global extents and strides (``PrimExpr``) are kept as they are; the driver checks them when the host code
encodes the map, so only static values are checked here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.values import offset_value, static_int
from ..layout.swizzle import ComposeLayout
from ..layout.tile import TileLayout
from .memory import SWIZZLE_128B_BASE32B, SWIZZLE_BYTES, dtype_bytes, mode_of_swizzle, swizzle_128b_base32b

#: ``CUtensorMapDataType`` codes for the element types the driver names (cuda.h). Other types of a listed width
#: travel as the unsigned type of that width: TMA moves bytes, the type only matters for the OOB NaN fill.
DATA_TYPES = {
    "uint8": 0,
    "uint16": 1,
    "uint32": 2,
    "int32": 3,
    "uint64": 4,
    "int64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
_UNSIGNED_OF_WIDTH = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
#: Driver types that are floating point: the only ones that may fill out-of-bounds elements with NaN.
FLOAT_DATA_TYPES = frozenset({"float16", "float32", "float64", "bfloat16"})
#: ``CUtensorMapInterleave`` codes.
INTERLEAVES = {"none": 0, "16B": 1, "32B": 2}
#: ``CUtensorMapSwizzle`` codes. The first four keep 16-byte chunks whole; the three ``128B_atom_*`` modes (CUDA 12.8
#: and later, sm_100) keep 32- or 64-byte chunks whole inside a 128-byte span.
SWIZZLES = {
    "none": 0,
    "32B": 1,
    "64B": 2,
    "128B": 3,
    "128B_atom_32B": 4,
    "128B_atom_32B_flip_8B": 5,
    "128B_atom_64B": 6,
}
#: The span in bytes inside which each swizzle mode moves chunks: the widest inner box row it accepts.
SWIZZLE_SPAN = {
    **{mode: SWIZZLE_BYTES[mode] for mode in ("32B", "64B", "128B")},
    **dict.fromkeys(("128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B"), SWIZZLE_BYTES["128B"]),
}
#: ``CUtensorMapL2promotion`` codes.
L2_PROMOTIONS = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
#: The L2 promotion every copy's map asks for. The driver documents ``l2Promotion`` as the L2 fetch size, the byte
#: granularity at which L2 requests are filled from DRAM; 128 bytes (an L2 line) is what CUTLASS's ``make_tma_copy``
#: asks for every map it builds, and what ours asks for since CuTe's oracle showed the difference (issue 34).
COPY_L2_PROMOTION = "128B"
#: ``CUtensorMapFloatOOBfill`` codes: "zero" (``..._NONE``, zeros) or "nan" (``..._NAN_REQUEST_ZERO_FMA``).
OOB_FILLS = {"zero": 0, "nan": 1}

MAX_RANK = 5
MAX_GLOBAL_DIM = 1 << 32
GLOBAL_STRIDE_LIMIT = 1 << 40
MAX_BOX_DIM = 256
MAX_ELEMENT_STRIDE = 8
#: Global strides are multiples of 16 bytes (32 with the 32-byte interleave); so is the inner box row without one.
GLOBAL_STRIDE_UNIT = 16
BOX_ROW_UNIT = 16
#: The shared destination's alignment in the programming guide's TMA swizzle table, for every mode, and the global
#: alignment the same table gives the swizzled modes.
SHARED_ALIGNMENT = 128
GUIDE_SWIZZLED_GLOBAL_ALIGNMENT = 128
#: Bytes after which each mode's pattern repeats (the PTX ISA's "starting address of the repeating pattern"): 8 rows
#: of 128 bytes for the 16-byte-chunk modes, one row per chunk of the span for the wider-atom ones.
SWIZZLE_REPEAT_BYTES = {
    **{mode: 8 * SWIZZLE_BYTES[mode] for mode in ("32B", "64B", "128B")},
    "128B_atom_32B": 128 * 4,
    "128B_atom_32B_flip_8B": 128 * 4,
    "128B_atom_64B": 128 * 2,
}
#: The project's name of the MMA's 128B-with-32B-atom swizzle is TMA's ``128B_atom_32B`` (same pattern: 32-byte
#: chunks of a 128-byte row XOR-ed with the row index mod 4).
_TMA_NAME_OF_MODE = {"none": "none", "32B": "32B", "64B": "64B", "128B": "128B", SWIZZLE_128B_BASE32B: "128B_atom_32B"}


def driver_data_type(dtype) -> str:
    """The ``CUtensorMapDataType`` (as its name in :data:`DATA_TYPES`) a buffer of ``dtype`` is copied as: the type
    itself when the driver names it, else the unsigned integer of the same width (fp8, int8, int16 ...).

    Example:
        >>> driver_data_type("bfloat16"), driver_data_type("float8_e4m3fn"), driver_data_type("int16")
        ('bfloat16', 'uint8', 'uint16')
    """
    name = str(dtype)
    if name in DATA_TYPES:
        return name
    size = dtype_bytes(name)
    if size not in _UNSIGNED_OF_WIDTH:
        raise ValueError(f"dtype {name!r} has {size} bytes per element; TMA copies elements of 1, 2, 4 or 8 bytes")
    return _UNSIGNED_OF_WIDTH[size]


def transaction_bytes(box: Sequence[int], dtype, element_strides: Sequence[int] | None = None) -> int:
    """Bytes one tiled ``cp.async.bulk.tensor`` of ``box`` (elements per dimension, any order) reports to its
    mbarrier through complete-tx: every element of the box, out-of-bounds ones included (they are written as fill).
    With traversal ``element_strides`` (same order as ``box``) a dimension moves ``ceil(box / stride)`` elements.

    Example:
        >>> transaction_bytes((64, 128), "bfloat16"), transaction_bytes((64, 8), "float32", (1, 2))
        (16384, 1024)
    """
    size = dtype_bytes(dtype)
    box = [static_int(b, "a box extent") for b in box]
    if element_strides is None:
        element_strides = [1] * len(box)
    strides = [static_int(s, "an element stride") for s in element_strides]
    if len(strides) != len(box) or any(b < 1 for b in box) or any(s < 1 for s in strides):
        raise ValueError(
            f"transaction_bytes: box {tuple(box)} and element strides {tuple(strides)} must be positive, one each"
        )
    return size * math.prod(-(-b // s) for b, s in zip(box, strides, strict=True))


def _dims(values, what: str, rank: int | None = None, entries: int | None = None) -> tuple:
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise TypeError(f"TensorMap.{what} must be a sequence, got {values!r}")
    out = tuple(offset_value(v, f"TensorMap.{what}[{i}]") for i, v in enumerate(values))
    if entries is not None and len(out) != entries:
        raise ValueError(f"TensorMap.{what} has {len(out)} entries; a rank-{rank} map needs {entries}")
    return out


def _choice(value, table: dict, what: str) -> str:
    if not isinstance(value, str) or value not in table:
        raise ValueError(f"TensorMap.{what} {value!r} is not one of {list(table)}")
    return value


@dataclass(frozen=True)
class TensorMap:
    """One tiled tensor map, field by field as ``cuTensorMapEncodeTiled`` takes it: dimension 0 is the innermost
    (contiguous) one; ``global_strides`` are the byte strides of dimensions 1 .. rank-1; ``box_dims`` the elements of
    the box per dimension; ``element_strides`` the traversal steps (default 1). ``interleave``, ``swizzle``,
    ``l2_promotion``, ``oob_fill`` are names from :data:`INTERLEAVES`, :data:`SWIZZLES`, :data:`L2_PROMOTIONS`,
    :data:`OOB_FILLS`. Every driver limit is checked on construction (a ``ValueError`` naming the field and the
    limit); symbolic global extents and strides are left to the driver.

    Example:
        >>> m = TensorMap("bfloat16", (4096, 4096), (8192,), (64, 128), swizzle="128B")
        >>> m.rank, m.transaction_bytes, m.driver_fields()["swizzle"]
        (2, 16384, 3)
        >>> TensorMap("bfloat16", (4096, 4096), (8192,), (128, 128), swizzle="128B")
        Traceback (most recent call last):
        ...
        ValueError: TensorMap.box_dims[0]: the inner box row is 256 bytes; swizzle 128B takes at most 128
    """

    dtype: str
    global_dims: tuple
    global_strides: tuple
    box_dims: tuple
    element_strides: tuple | None = None
    interleave: str = "none"
    swizzle: str = "none"
    l2_promotion: str = "none"
    oob_fill: str = "zero"
    element_bytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        set_field(self, "dtype", str(self.dtype))
        set_field(self, "element_bytes", dtype_bytes(self.dtype))
        driver_data_type(self.dtype)  # refuses widths TMA has no type for
        for name, table in (
            ("interleave", INTERLEAVES),
            ("swizzle", SWIZZLES),
            ("l2_promotion", L2_PROMOTIONS),
            ("oob_fill", OOB_FILLS),
        ):
            _choice(getattr(self, name), table, name)
        dims = _dims(self.global_dims, "global_dims")
        rank = len(dims)
        if not 1 <= rank <= MAX_RANK:
            raise ValueError(f"TensorMap.global_dims: rank {rank}; the driver takes rank 1 to {MAX_RANK}")
        if self.interleave != "none" and rank < 3:
            raise ValueError(f"TensorMap.interleave {self.interleave} needs rank >= 3, got rank {rank}")
        set_field(self, "global_dims", dims)
        set_field(self, "global_strides", _dims(self.global_strides, "global_strides", rank, rank - 1))
        box = tuple(static_int(b, "TensorMap.box_dims entry") for b in _dims(self.box_dims, "box_dims", rank, rank))
        set_field(self, "box_dims", box)
        steps = (1,) * rank if self.element_strides is None else self.element_strides
        steps = _dims(steps, "element_strides", rank, rank)
        steps = tuple(static_int(s, "TensorMap.element_strides entry") for s in steps)
        set_field(self, "element_strides", steps)
        self._check_limits()

    def _check_limits(self) -> None:
        size = self.element_bytes
        for i, d in enumerate(self.global_dims):
            if isinstance(d, int) and not 1 <= d <= MAX_GLOBAL_DIM:
                raise ValueError(f"TensorMap.global_dims[{i}] is {d}; the driver takes 1 to 2^32")
        unit = 32 if self.interleave == "32B" else GLOBAL_STRIDE_UNIT
        for i, s in enumerate(self.global_strides):
            if isinstance(s, int) and (s <= 0 or s % unit or s >= GLOBAL_STRIDE_LIMIT):
                raise ValueError(
                    f"TensorMap.global_strides[{i}] (dimension {i + 1}) is {s} bytes; it must be a positive multiple "
                    f"of {unit} below 2^40"
                )
        for i, b in enumerate(self.box_dims):
            if not 1 <= b <= MAX_BOX_DIM:
                raise ValueError(f"TensorMap.box_dims[{i}] is {b}; the driver takes 1 to {MAX_BOX_DIM}")
        for i, s in enumerate(self.element_strides):
            if not 1 <= s <= MAX_ELEMENT_STRIDE:
                raise ValueError(f"TensorMap.element_strides[{i}] is {s}; the driver takes 1 to {MAX_ELEMENT_STRIDE}")
        row = self.box_dims[0] * size
        if self.interleave == "none" and row % BOX_ROW_UNIT:
            raise ValueError(
                f"TensorMap.box_dims[0]: the inner box row is {row} bytes; without interleave it must be a multiple "
                f"of {BOX_ROW_UNIT}"
            )
        if self.interleave == "none" and self.swizzle != "none" and row > SWIZZLE_SPAN[self.swizzle]:
            raise ValueError(
                f"TensorMap.box_dims[0]: the inner box row is {row} bytes; swizzle {self.swizzle} takes at most "
                f"{SWIZZLE_SPAN[self.swizzle]}"
            )
        if self.interleave == "32B" and self.swizzle != "32B":
            raise ValueError(f"TensorMap.swizzle is {self.swizzle}; interleave 32B needs swizzle 32B")
        if self.oob_fill == "nan" and driver_data_type(self.dtype) not in FLOAT_DATA_TYPES:
            raise ValueError(
                f"TensorMap.oob_fill nan needs a floating-point driver type, but {self.dtype} travels as "
                f"{driver_data_type(self.dtype)}"
            )

    @property
    def rank(self) -> int:
        """Number of dimensions (1 to 5)."""
        return len(self.global_dims)

    @property
    def transaction_bytes(self) -> int:
        """Bytes one copy of the box reports to its mbarrier (:func:`transaction_bytes`)."""
        return transaction_bytes(self.box_dims, self.dtype, self.loaded_strides)

    @property
    def loaded_strides(self) -> tuple[int, ...]:
        """The traversal strides that take effect: without interleave the driver ignores the one of dimension 0."""
        return (1, *self.element_strides[1:]) if self.interleave == "none" else self.element_strides

    @property
    def global_alignment(self) -> int:
        """Alignment in bytes the global base address needs: the driver asks 16 (32 with the 32-byte interleave,
        which always comes with the 32B swizzle); the programming guide's swizzle table asks 128 for any swizzled map,
        and the stricter of the two is kept.

        Example:
            >>> TensorMap("float16", (64, 64), (128,), (64, 8), swizzle="128B").global_alignment
            128
        """
        return GUIDE_SWIZZLED_GLOBAL_ALIGNMENT if self.swizzle != "none" else GLOBAL_STRIDE_UNIT

    @property
    def shared_alignment(self) -> int:
        """Alignment in bytes of a shared destination at which the hardware's swizzle pattern starts at its first
        row, so that it agrees with a layout that swizzles buffer-relative addresses: the pattern's repeat, and never
        less than the 128 bytes every TMA destination needs.

        Example:
            >>> TensorMap("float16", (64, 64), (128,), (64, 8), swizzle="128B").shared_alignment
            1024
        """
        return max(SHARED_ALIGNMENT, SWIZZLE_REPEAT_BYTES.get(self.swizzle, 0))

    def check_shared_address(self, byte_address) -> int:
        """``byte_address`` (a static shared-memory byte address of the box's buffer) if it is on
        :attr:`shared_alignment`; a ``ValueError`` naming it otherwise.

        Example:
            >>> m = TensorMap("bfloat16", (64, 64), (128,), (64, 8), swizzle="128B")
            >>> m.check_shared_address(2048)
            2048
            >>> m.check_shared_address(2048 + 512)
            Traceback (most recent call last):
            ...
            ValueError: TMA destination at shared byte 2560 is not 1024-byte aligned (the 128B swizzle's repeat)
        """
        address = static_int(byte_address, "a shared byte address")
        if address < 0 or address % self.shared_alignment:
            why = f"the {self.swizzle} swizzle's repeat" if self.swizzle != "none" else "every TMA destination's"
            raise ValueError(
                f"TMA destination at shared byte {address} is not {self.shared_alignment}-byte aligned ({why})"
            )
        return address

    def driver_fields(self) -> dict:
        """The map as plain numbers in ``cuTensorMapEncodeTiled``'s order and encoding, less the map and the global
        address: the ABI the lowering hands to the host encoder and to the simulator's TMA model. Symbolic extents
        and strides stay ``PrimExpr``.

        Example:
            >>> TensorMap("float8_e4m3fn", (256, 64), (256,), (128, 32)).driver_fields()
            {'data_type': 0, 'rank': 2, 'global_dim': (256, 64), 'global_strides': (256,), 'box_dim': (128, 32), \
'element_strides': (1, 1), 'interleave': 0, 'swizzle': 0, 'l2_promotion': 0, 'oob_fill': 0}
        """
        return {
            "data_type": DATA_TYPES[driver_data_type(self.dtype)],
            "rank": self.rank,
            "global_dim": self.global_dims,
            "global_strides": self.global_strides,
            "box_dim": self.box_dims,
            "element_strides": self.element_strides,
            "interleave": INTERLEAVES[self.interleave],
            "swizzle": SWIZZLES[self.swizzle],
            "l2_promotion": L2_PROMOTIONS[self.l2_promotion],
            "oob_fill": OOB_FILLS[self.oob_fill],
        }


def _layout_mode(shared_layout, dtype) -> tuple[str, TileLayout]:
    """The TMA swizzle name of a shared layout, and the tile layout under its swizzle."""
    if isinstance(shared_layout, TileLayout):
        return "none", shared_layout
    if not isinstance(shared_layout, ComposeLayout) or not isinstance(shared_layout.tile_layout, TileLayout):
        raise TypeError(
            f"tensor_map_for: the shared layout must be a TileLayout or a swizzled one, got {shared_layout!r}"
        )
    swizzle = shared_layout.swizzle
    if _same_swizzle(swizzle, swizzle_128b_base32b(dtype)):
        return _TMA_NAME_OF_MODE[SWIZZLE_128B_BASE32B], shared_layout.tile_layout
    try:
        mode = mode_of_swizzle(swizzle, dtype)
    except ValueError as err:
        raise ValueError(
            f"tensor_map_for: shared layout {shared_layout}: its swizzle period matches no TMA swizzle mode ({err})"
        ) from None
    return _TMA_NAME_OF_MODE[mode], shared_layout.tile_layout


def box_row_elements(shared_layout, dtype) -> int | None:
    """How many elements one TMA box row into ``shared_layout`` holds: the span of its swizzle over the element size
    (a swizzled box row is exactly the span), ``None`` for an unswizzled layout (any row that fits the box limits).
    A row wider than this is copied as one box per swizzle atom.

    Example:
        >>> from tirx_layout.hw.constructors import mma_shared_layout
        >>> box_row_elements(mma_shared_layout("bfloat16", "128B", (128, 64), major="MN"), "bfloat16")
        64
        >>> box_row_elements(mma_shared_layout("float32", "128B_base32B", (128, 32), major="MN"), "float32")
        32
    """
    mode, _ = _layout_mode(shared_layout, dtype)
    return None if mode == "none" else SWIZZLE_SPAN[mode] // dtype_bytes(dtype)


def _same_swizzle(a, b) -> bool:
    fields = ("per_element", "swizzle_len", "atom_len", "swizzle_inner")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def _row_major_strides(shape: Sequence) -> list:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running = running * extent
    return strides[::-1]


def tensor_map_for(
    global_shape: Sequence,
    dtype,
    box_shape: Sequence[int],
    shared_layout,
    *,
    global_strides: Sequence | None = None,
    oob_fill: str = "zero",
    l2_promotion: str = COPY_L2_PROMOTION,
    transposed: bool = False,
) -> TensorMap:
    """The tensor map of a tiled copy between a global buffer of ``global_shape`` (outermost first, as TVM writes a
    shape; symbolic extents allowed) and a shared buffer of ``box_shape`` stored in ``shared_layout``; with
    ``transposed`` the shared buffer holds the box with its last two dimensions swapped (an MN-major MMA operand
    ``(rows, K)`` filled from a global ``(K, rows)`` box, rows contiguous in both).

    The swizzle comes from the shared layout (none, 32B, 64B, 128B, or the 128B-with-32B-atom swizzle). TMA writes
    the box row-major with dimension 0 innermost, then swizzles shared addresses, so the layout must be exactly that
    image; a swizzle no TMA mode has, a box row other than the swizzle's span, a layout that is not the box's
    row-major image, or a box the driver refuses is a ``ValueError`` naming it. ``global_strides`` (elements,
    outermost first, innermost 1) default to the row-major ones. The shared buffer must start at a multiple of the
    map's :attr:`TensorMap.shared_alignment`. No interleave, unit traversal strides; L2 promotion
    :data:`COPY_L2_PROMOTION` unless ``l2_promotion`` says otherwise.

    Example:
        >>> from tirx_layout.hw.constructors import mma_shared_layout
        >>> m = tensor_map_for((4096, 4096), "bfloat16", (128, 64), mma_shared_layout("bfloat16", "128B", (128, 64)))
        >>> m.global_dims, m.global_strides, m.box_dims, m.swizzle, m.transaction_bytes
        ((4096, 4096), (8192,), (64, 128), '128B', 16384)
        >>> tensor_map_for((256, 256), "bfloat16", (128, 128), mma_shared_layout("bfloat16", "128B", (128, 128)))
        Traceback (most recent call last):
        ...
        ValueError: tensor_map_for: the box's inner row is 256 bytes but the 128B swizzle spans 128; copy one \
64-column box per swizzle atom (the shared layout stores 64-column blocks apart)

    An MN-major tf32 operand of 32 rows x 8 K (the MMA's 128B swizzle with 32-byte atoms, TMA's ``128B_atom_32B``)
    from a (K, M) = (64, 256) float32 tensor, M contiguous: the box is 8 K rows of 32 M elements.

        >>> mn = mma_shared_layout("float32", "128B_base32B", (32, 8), major="MN")
        >>> m = tensor_map_for((64, 256), "float32", (8, 32), mn, transposed=True)
        >>> m.global_dims, m.box_dims, m.swizzle, m.shared_alignment
        ((256, 64), (32, 8), '128B_atom_32B', 512)
    """
    for name, value in (("global_shape", global_shape), ("box_shape", box_shape)):
        if not isinstance(value, Sequence) or isinstance(value, str) or not 1 <= len(value) <= MAX_RANK:
            raise ValueError(f"tensor_map_for: {name} must have 1 to {MAX_RANK} entries, got {value!r}")
    if len(global_shape) != len(box_shape):
        raise ValueError(
            f"tensor_map_for: global shape {tuple(global_shape)} and box {tuple(box_shape)} differ in rank"
        )
    shape = [offset_value(s, "a global extent") for s in global_shape]
    box = [static_int(b, "a box extent") for b in box_shape]
    if global_strides is None:
        strides = _row_major_strides(shape)
    else:
        strides = [offset_value(s, "a global stride") for s in global_strides]
    if len(strides) != len(shape) or not (isinstance(strides[-1], int) and strides[-1] == 1):
        raise ValueError(
            f"tensor_map_for: global strides {tuple(strides)} must have one entry per dimension and the innermost "
            "must be 1 (TMA reads rows contiguously)"
        )
    size = dtype_bytes(dtype)
    mode, tile = _layout_mode(shared_layout, dtype)
    row = box[-1] * size
    if mode != "none" and row != SWIZZLE_SPAN[mode]:
        span = SWIZZLE_SPAN[mode]
        hint = (
            f"; copy one {span // size}-column box per swizzle atom (the shared layout stores "
            f"{span // size}-column blocks apart)"
            if row > span and row % span == 0
            else ""
        )
        if not transposed and len(box) >= 2 and box[-2] * size == span:
            swapped = (*box[:-2], box[-1], box[-2])
            hint += (
                f"; if the shared buffer holds the box transposed (an MN-major operand), copy from a {swapped} "
                "global box with transposed=True"
            )
        raise ValueError(
            f"tensor_map_for: the box's inner row is {row} bytes but the {mode} swizzle spans {span}{hint}"
        )
    if transposed and len(box) < 2:
        raise ValueError(f"tensor_map_for: a transposed box needs two or more dimensions, got {tuple(box)}")
    _check_row_major_image(tile, box, dtype, mode, transposed)
    return TensorMap(
        str(dtype),
        tuple(reversed(shape)),
        tuple(s * size for s in reversed(strides[:-1])),
        tuple(reversed(box)),
        interleave="none",
        swizzle=mode,
        l2_promotion=l2_promotion,
        oob_fill=oob_fill,
    )


def _check_row_major_image(tile: TileLayout, box: list[int], dtype, mode: str, transposed: bool) -> None:
    """Refuse a tile layout whose element addresses over ``box`` are not the row-major ones TMA writes (the layout
    indexes the box with its last two dimensions swapped when ``transposed``)."""
    grids = list(np.meshgrid(*(np.arange(b) for b in box), indexing="ij"))
    shape = list(box)
    if transposed:
        grids[-2], grids[-1] = grids[-1], grids[-2]
        shape[-2], shape[-1] = shape[-1], shape[-2]
    place = tile.apply(*grids, shape=shape)
    if set(place) != {"m"}:
        raise ValueError(
            f"tensor_map_for: shared layout {tile} maps to axes {sorted(place)}; TMA fills memory addresses only"
        )
    address = np.broadcast_to(np.asarray(place["m"], dtype=np.int64), tuple(box))
    want = np.arange(math.prod(box), dtype=np.int64).reshape(box)
    bad = np.argwhere(address != want)
    if bad.size:
        where = tuple(int(v) for v in bad[0])
        shared = (*where[:-2], where[-1], where[-2]) if transposed else where
        seen_as = f" (shared element {shared})" if transposed else ""
        hint = ""
        if not transposed and len(box) >= 2:
            swapped = np.swapaxes(want.reshape(*box[:-2], box[-1], box[-2]), -1, -2)
            if (address == swapped).all():
                hint = (
                    "; it is the row-major image of the box transposed (an MN-major operand): copy from a global "
                    "box with the last two dimensions swapped, transposed=True"
                )
        raise ValueError(
            f"tensor_map_for: shared layout {tile} (under the {mode} swizzle) puts box element {where}{seen_as} at "
            f"{dtype} element {int(address[where])}, but TMA writes the box row-major: element {int(want[where])}"
            f"{hint}"
        )
