"""Shared-memory bank conflicts of a warp-wide access under a layout, and the swizzle that avoids them.

Model (the usual one for NVIDIA shared memory, 32 banks of 4 bytes): a warp request is served in phases — all 32
lanes for accesses of up to 4 bytes, half-warps for 8 bytes, quarter-warps for 16 bytes. Within a phase, lanes that
touch the same 4-byte word share it (broadcast); distinct words in one bank are served one per wavefront. So a phase
needs ``max over banks of (distinct words in the bank)`` wavefronts, and at least ``ceil(distinct words / 32)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import tvm

BANKS = 32
WORD_BYTES = 4
SWIZZLE_MODES = ("none", "32B", "64B", "128B")


def dtype_bytes(dtype) -> int:
    """Bytes per element of ``dtype`` (``"float16"`` -> 2); ``ValueError`` for sub-byte or unknown types."""
    try:
        bits = tvm.runtime.DataType(str(dtype)).bits
    except Exception as err:  # TVM raises its own error type for unknown names
        raise ValueError(f"unknown dtype {dtype!r}") from err
    if bits % 8:
        raise ValueError(f"dtype {dtype!r} has {bits} bits; bank analysis needs whole bytes")
    return bits // 8


@dataclass(frozen=True)
class AccessPattern:
    """What each of the 32 lanes of a warp reads: ``lanes[l]`` is the list of logical ``(row, col)`` elements of a
    tile of ``shape``, consecutive along the row (one vector of ``vector_bytes``)."""

    name: str
    shape: tuple[int, int]
    vector_bytes: int
    lanes: tuple[tuple[tuple[int, int], ...], ...]


def _vector_elements(dtype, vector_bytes: int) -> int:
    size = dtype_bytes(dtype)
    if vector_bytes not in (1, 2, 4, 8, 16) or vector_bytes < size:
        raise ValueError(f"vector_bytes must be 1, 2, 4, 8 or 16 and hold a {dtype} element, got {vector_bytes}")
    return vector_bytes // size


def _pattern(name, shape, dtype, vector_bytes, start: Callable[[int], tuple[int, int]]) -> AccessPattern:
    rows, cols = (int(s) for s in shape)
    vec = _vector_elements(dtype, vector_bytes)
    lanes = []
    for lane in range(32):
        row, col = start(lane)
        if not (0 <= row < rows and 0 <= col and col + vec <= cols):
            raise ValueError(f"access {name!r}: lane {lane} reads ({row}, {col}..{col + vec - 1}) outside {shape}")
        lanes.append(tuple((row, col + k) for k in range(vec)))
    return AccessPattern(name, (rows, cols), vector_bytes, tuple(lanes))


def row_vectors(shape: Sequence[int], dtype, vector_bytes: int = 16) -> AccessPattern:
    """Each lane reads one vector at the start of a different row (lane ``l``: row ``l % rows``, column block
    ``l // rows``) — the ldmatrix-style pattern a row-major tile serialises on.

    Example:
        >>> row_vectors((8, 64), "float16").lanes[1][:2]
        ((1, 0), (1, 1))
    """
    rows = int(shape[0])
    vec = _vector_elements(dtype, vector_bytes)
    return _pattern("row_vectors", shape, dtype, vector_bytes, lambda l: (l % rows, vec * (l // rows)))


def contiguous(shape: Sequence[int], dtype, vector_bytes: int = 16) -> AccessPattern:
    """The warp reads consecutive vectors in row-major order (lane ``l`` reads flat elements ``l*vec ..``).

    Example:
        >>> contiguous((8, 64), "float16").lanes[8][0]
        (1, 0)
    """
    cols = int(shape[1])
    vec = _vector_elements(dtype, vector_bytes)
    return _pattern("contiguous", shape, dtype, vector_bytes, lambda l: divmod(l * vec, cols))


def column(shape: Sequence[int], dtype) -> AccessPattern:
    """The 32 lanes read one element each down a column (lane ``l``: row ``l % rows``, column ``l // rows``).

    Example:
        >>> column((64, 64), "float32").lanes[5]
        ((5, 0),)
    """
    rows = int(shape[0])
    return _pattern("column", shape, dtype, dtype_bytes(dtype), lambda l: (l % rows, l // rows))


def fragment_accesses(layout, shape: Sequence[int], dtype) -> list[AccessPattern]:
    """The shared-memory accesses that fill or drain register fragment ``layout`` of a ``shape`` tile: one warp-wide
    access per warp and per vector of register slots (vectors as wide as the slots allow, up to 16 bytes), as
    LowerTileOps emits them.

    Example:
        >>> from tirx_layout import wg_local_layout
        >>> accesses = fragment_accesses(wg_local_layout(64), (128, 64), "float16")
        >>> len(accesses), accesses[0].vector_bytes, accesses[0].lanes[3][0]
        (32, 16, (3, 0))
    """
    from ..fragments import fragment_threads, fragment_vector_width, warp_slot_elements
    from ..script.buffers import slot_count

    size = dtype_bytes(dtype)
    v = fragment_vector_width(layout, shape, size)
    accesses = []
    for warp in range(fragment_threads(layout) // 32):
        for first in range(0, slot_count(layout), v):
            lanes = tuple(tuple(lane) for lane in warp_slot_elements(layout, shape, warp, first, v))
            accesses.append(AccessPattern(f"warp {warp} slots {first}..{first + v - 1}", tuple(shape), v * size, lanes))
    return accesses


@dataclass(frozen=True)
class BankReport:
    """Wavefronts a warp access needs under a layout, against the fewest any layout could need."""

    wavefronts: int
    minimum: int
    phases: tuple[int, ...]
    vectorized: bool

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts == self.minimum


def bank_conflicts(layout, dtype, access: AccessPattern) -> BankReport:
    """The shared-memory wavefronts of ``access`` (an ``AccessPattern``) on a tile laid out by ``layout``
    (a TileLayout or ComposeLayout onto ``m``) with elements of ``dtype``.

    Example:
        >>> from tirx_layout import ComposeLayout, S, SwizzleLayout, TileLayout
        >>> tile = TileLayout(S[(8, 64):(64, 1)])
        >>> bank_conflicts(tile, "float16", row_vectors((8, 64), "float16")).wavefronts  # 8 rows on banks 0-3
        32
        >>> bank_conflicts(ComposeLayout(SwizzleLayout(3, 3, 3), tile), "float16", row_vectors((8, 64), "float16"))
        BankReport(wavefronts=4, minimum=4, phases=(1, 1, 1, 1), vectorized=True)
    """
    if not isinstance(access, AccessPattern):
        raise TypeError(f"access must be an AccessPattern (row_vectors, contiguous, column, ...), got {access!r}")
    size = dtype_bytes(dtype)
    coords = np.array([c for lane in access.lanes for c in lane], dtype=np.int64).reshape(-1, 2)
    addresses = np.asarray(layout.apply(coords[:, 0], coords[:, 1], shape=list(access.shape))["m"]) * size
    bounds = np.cumsum([0] + [len(lane) for lane in access.lanes])
    per_lane = [addresses[bounds[i] : bounds[i + 1]] for i in range(len(access.lanes))]  # a lane may hold nothing
    # A vector access needs its elements contiguous and aligned in memory.
    vectorized = all(
        len(lane) == 0 or (np.all(np.diff(lane) == size) and lane[0] % max(access.vector_bytes, size) == 0)
        for lane in per_lane
    )
    phases, minimum = warp_wavefronts(per_lane, access.vector_bytes, size)
    return BankReport(sum(phases), minimum, tuple(phases), vectorized)


def warp_wavefronts(lane_bytes: Sequence, access_bytes: int, element_bytes: int) -> tuple[list[int], int]:
    """Wavefronts of one warp-wide shared-memory instruction: ``lane_bytes[l]`` lists the byte address of every
    element lane ``l`` touches (empty for an inactive lane), each access moving ``access_bytes``. Returns the
    wavefronts of each phase and the fewest any placement of the same words could need.

    Example:
        >>> phases, minimum = warp_wavefronts([[4 * 32 * l] for l in range(32)], 4, 4)  # a column of floats
        >>> sum(phases), minimum
        (32, 1)
    """
    lanes_per_phase = 32 if access_bytes <= WORD_BYTES else 32 * WORD_BYTES // access_bytes
    phases, minimum = [], 0
    for start in range(0, 32, lanes_per_phase):
        words = set()
        for lane in range(start, min(start + lanes_per_phase, len(lane_bytes))):
            for address in lane_bytes[lane]:
                words.update(range(int(address) // WORD_BYTES, (int(address) + element_bytes - 1) // WORD_BYTES + 1))
        if not words:
            continue
        per_bank: dict[int, int] = {}
        for word in words:
            per_bank[word % BANKS] = per_bank.get(word % BANKS, 0) + 1
        phases.append(max(per_bank.values()))
        minimum += math.ceil(len(words) / BANKS)
    return phases, minimum


def swizzled_tile(shape: Sequence[int], dtype, mode: str):
    """The row-major tile of ``shape`` under swizzle ``mode`` ("none", "32B", "64B", "128B"): 16-byte vectors stay
    whole (``per_element = log2(16 / bytes)``), the mode's bits are XOR-ed across 8 rows of 128 bytes.

    Example:
        >>> swizzled_tile((8, 64), "float16", "128B").swizzle
        SwizzleLayout(3, 3, 3)
    """
    from .. import ComposeLayout, S, SwizzleLayout, TileLayout  # the package imports analysis lazily

    if mode not in SWIZZLE_MODES:
        raise ValueError(f"unknown swizzle mode {mode!r}; expected one of {SWIZZLE_MODES}")
    rows, cols = (int(s) for s in shape)
    tile = TileLayout(S[(rows, cols):(cols, 1)])
    if mode == "none":
        return tile
    per_element = int(math.log2(16 // dtype_bytes(dtype)))
    return ComposeLayout(SwizzleLayout(per_element, SWIZZLE_MODES.index(mode), 3), tile)


def _general_swizzles(shape: Sequence[int], dtype) -> list:
    """Row-major tiles under every XOR swizzle that repeats within the tile, those that keep 16-byte vectors whole
    first (widest chunks first), down to those that keep only 4-byte words whole."""
    from .. import ComposeLayout, S, SwizzleLayout, TileLayout  # the package imports analysis lazily

    rows, cols = (int(s) for s in shape)
    tile = TileLayout(S[(rows, cols):(cols, 1)])
    size = dtype_bytes(dtype)
    widest = int(math.log2(max(16 // size, 1)))
    narrowest = int(math.log2(WORD_BYTES // size)) if size < WORD_BYTES else 0
    out = []
    for per_element in range(widest, narrowest - 1, -1):
        for bits in range(1, 5):
            for atom in range(bits, 8):
                swizzle = SwizzleLayout(per_element, bits, atom)
                if rows * cols % swizzle.size() == 0:
                    out.append(ComposeLayout(swizzle, tile))
    return out


def swizzle_candidates(dtype, shape: Sequence[int], search: str = "mma") -> list:
    """The layouts :func:`pick_swizzle` chooses among, in its tie-break order: the row-major tile, the MMA operand
    layouts of each swizzle mode that fits, and with ``search="all"`` every XOR swizzle of the row-major tile.

    Example:
        >>> [str(c.swizzle) for c in swizzle_candidates("float16", (8, 64))[1:]]
        ['SwizzleLayout(3, 1, 3)', 'SwizzleLayout(3, 2, 3)', 'SwizzleLayout(3, 3, 3)']
    """
    from ..constructors import mma_shared_layout  # constructors build on this module's dtype helpers

    if search not in ("mma", "all"):
        raise ValueError(f"search must be 'mma' or 'all', got {search!r}")
    candidates = [swizzled_tile(shape, dtype, "none")]
    for mode in SWIZZLE_MODES[1:]:
        try:
            candidates.append(mma_shared_layout(dtype, mode, shape))
        except ValueError:
            continue  # the tile is not whole atoms of this mode
    if search == "all":
        candidates += _general_swizzles(shape, dtype)
    return candidates


def pick_swizzle(dtype, shape: Sequence[int], accesses: Sequence[AccessPattern] | None = None, search: str = "mma"):
    """The layout of a ``shape`` tile that needs the fewest wavefronts over ``accesses`` (default: the 16-byte
    row-vector and contiguous patterns). ``search="mma"`` chooses among the plain row-major tile and the MMA operand
    layouts of each swizzle mode (``mma_shared_layout``: 8-row atoms as wide as the swizzle); ``search="all"`` also
    tries every XOR swizzle of the row-major tile (for staging buffers that no MMA reads), those that keep 16-byte
    vectors whole first. Ties go to the earlier candidate: the plain tile, then the narrower MMA swizzle, then the
    general swizzles in that order.

    Example:
        >>> pick_swizzle("float16", (8, 64)).swizzle
        SwizzleLayout(3, 3, 3)
    """
    accesses = accesses or [row_vectors(shape, dtype), contiguous(shape, dtype)]
    candidates = swizzle_candidates(dtype, shape, search)
    # No layout beats the sum of the accesses' minimums, so the first candidate reaching it is the answer; a
    # candidate is dropped as soon as it costs more than the best so far.
    floor = sum(bank_conflicts(candidates[0], dtype, a).minimum for a in accesses)
    best, best_cost = None, math.inf
    for layout in candidates:
        cost = 0
        for access in accesses:
            cost += bank_conflicts(layout, dtype, access).wavefronts
            if cost >= best_cost:
                break
        if cost < best_cost:
            best, best_cost = layout, cost
            if cost == floor:
                break
    return best
