"""Shared-memory bank conflicts of warp-wide accesses under a layout, and the swizzle that avoids them.

Model (the usual one for NVIDIA shared memory, 32 banks of 4 bytes): a warp request is served in phases — all 32
lanes for accesses of up to 4 bytes, half-warps for 8 bytes, quarter-warps for 16 bytes. Within a phase, lanes that
touch the same 4-byte word share it (broadcast); distinct words in one bank are served one per wavefront. So a phase
needs ``max over banks of (distinct words in the bank)`` wavefronts, and at least ``ceil(distinct words / 32)``.
:func:`shared_wavefronts` is that model, for every warp of an instruction at once; everything else here (and the
kernel measurements and the inference cost model) counts through it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..hw.constructors import mma_shared_layout
from ..hw.memory import BANKS, SWIZZLE_MODES, WORD_BYTES, dtype_bytes, swizzle_for_mode
from ..hw.threads import WARP_THREADS
from ..layout.placement import slot_count
from ..layout.spec import S
from ..layout.swizzle import ComposeLayout, SwizzleLayout
from ..layout.tile import TileLayout
from .thread_placement import fragment_threads, fragment_vector_width, warp_slot_elements


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
        if not (0 <= row < rows and col >= 0 and col + vec <= cols):
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
    size = dtype_bytes(dtype)
    v = fragment_vector_width(layout, shape, size)
    accesses = []
    for warp in range(fragment_threads(layout) // WARP_THREADS):
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


def bank_words(byte_addresses, active, access_bytes: int, element_bytes: int) -> np.ndarray:
    """The distinct 4-byte words each (warp, phase) of one shared-memory instruction touches in each bank: an array
    of shape ``(warps, phases, BANKS)``. ``byte_addresses[t, k]`` is the byte address of element ``k`` that CTA thread
    ``t`` touches, ``active`` (per thread, or per element) which of them happen, each thread's access moving
    ``access_bytes``; lanes that touch the same word share it.

    Example:
        >>> words = bank_words(np.arange(32)[:, None] * 128, np.ones(32, bool), 4, 4)  # a column of floats
        >>> words.shape, words[0, 0, :2].tolist()
        ((1, 1, 32), [32, 0])
    """
    addresses = np.asarray(byte_addresses, np.int64)
    addresses = addresses.reshape(addresses.shape[0], -1)
    mask = np.asarray(active, bool)
    mask = np.broadcast_to(mask.reshape(mask.shape[0], -1) if mask.ndim else mask, addresses.shape)
    threads = addresses.shape[0]
    warps = -(-threads // WARP_THREADS)
    lanes_per_phase = lanes_per_phase_of(access_bytes)
    phases = WARP_THREADS // lanes_per_phase
    counts = np.zeros((warps * phases, BANKS), np.int64)
    if mask.any():
        thread = np.broadcast_to(np.arange(threads)[:, None], addresses.shape)[mask]
        group = (thread // WARP_THREADS) * phases + thread % WARP_THREADS // lanes_per_phase  # (warp, phase)
        first = addresses[mask] // WORD_BYTES
        last = (addresses[mask] + element_bytes - 1) // WORD_BYTES
        words = first[:, None] + np.arange(max(-(-element_bytes // WORD_BYTES), 1))[None, :]
        touched = words <= last[:, None]
        word, owner = words[touched], np.broadcast_to(group[:, None], words.shape)[touched]
        # Distinct (group, word) pairs, as one integer key each.
        low, span = word.min(), int(word.max() - word.min()) + 1
        keys = np.unique(owner * span + (word - low))
        owner, word = keys // span, keys % span + low
        np.add.at(counts, (owner, word % BANKS), 1)
    return counts.reshape(warps, phases, BANKS)


def lanes_per_phase_of(access_bytes: int) -> int:
    """How many lanes of a warp one shared-memory phase serves for accesses of ``access_bytes`` each.

    Example:
        >>> lanes_per_phase_of(4), lanes_per_phase_of(8), lanes_per_phase_of(16)
        (32, 16, 8)
    """
    return WARP_THREADS if access_bytes <= WORD_BYTES else WARP_THREADS * WORD_BYTES // access_bytes


def shared_wavefronts(byte_addresses, active, access_bytes: int, element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """The wavefronts of every (warp, phase) of one shared-memory instruction — the most distinct words in one
    bank, 0 for a phase with no active lane — and, per warp, the fewest wavefronts any placement of the same words
    needs. Arguments as for :func:`bank_words`.

    Example:
        >>> column = np.arange(64)[:, None] * 4 * 32  # 64 threads each read a float of one column
        >>> waves, minimum = shared_wavefronts(column, np.ones(64, bool), 4, 4)
        >>> waves.sum(axis=1).tolist(), minimum.tolist()
        ([32, 32], [1, 1])
    """
    words = bank_words(byte_addresses, active, access_bytes, element_bytes)
    return words.max(axis=2), (-(-words.sum(axis=2) // BANKS)).sum(axis=1)


def warp_wavefronts(lane_bytes: Sequence, access_bytes: int, element_bytes: int) -> tuple[list[int], int]:
    """:func:`shared_wavefronts` for one warp given as lists: ``lane_bytes[l]`` holds the byte address of every
    element lane ``l`` touches (empty for an inactive lane). Returns the wavefronts of each phase that has an active
    lane, and the fewest any placement of the same words could need.

    Example:
        >>> phases, minimum = warp_wavefronts([[4 * 32 * l] for l in range(32)], 4, 4)  # a column of floats
        >>> sum(phases), minimum
        (32, 1)
    """
    width = max((len(lane) for lane in lane_bytes), default=0)
    addresses = np.zeros((WARP_THREADS, max(width, 1)), np.int64)
    active = np.zeros(addresses.shape, bool)
    for lane, elements in enumerate(lane_bytes):
        addresses[lane, : len(elements)] = np.asarray(elements, np.int64)
        active[lane, : len(elements)] = True
    waves, minimum = shared_wavefronts(addresses, active, access_bytes, element_bytes)
    return [int(w) for w in waves[0] if w], int(minimum[0])


def swizzled_tile(shape: Sequence[int], dtype, mode: str):
    """The row-major tile of ``shape`` under swizzle ``mode`` ("none", "32B", "64B", "128B"): 16-byte vectors stay
    whole (``per_element = log2(16 / bytes)``), the mode's bits are XOR-ed across 8 rows of 128 bytes.

    Example:
        >>> swizzled_tile((8, 64), "float16", "128B").swizzle
        SwizzleLayout(3, 3, 3)
    """
    swizzle = swizzle_for_mode(mode, dtype)
    rows, cols = (int(s) for s in shape)
    tile = TileLayout(S[(rows, cols) : (cols, 1)])
    return tile if swizzle is None else ComposeLayout(swizzle, tile)


def _general_swizzles(shape: Sequence[int], dtype) -> list:
    """Row-major tiles under every XOR swizzle that repeats within the tile, those that keep 16-byte vectors whole
    first (widest chunks first), down to those that keep only 4-byte words whole."""
    rows, cols = (int(s) for s in shape)
    tile = TileLayout(S[(rows, cols) : (cols, 1)])
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
