"""The simulator's own model of the Tensor Memory Accelerator's tiled copies (``cp.async.bulk.tensor`` in ``.tile``
mode, global to shared and shared to global).

Written from the CUDA driver's ``cuTensorMapEncodeTiled`` documentation, the programming guide's TMA swizzle table
and the PTX ISA ("Tensors": bounding box, traversal stride, out-of-boundary access, swizzling modes;
``cp.async.bulk.tensor``; mbarrier complete-tx), as restated in ``docs/notes/tma-facts.md`` -- never from the
project's layouts or tensor-map code, so that the two check each other. A pure model: no TMA op exists yet, so
nothing here is wired into the interpreter.

The tensor map arrives as the plain numbers the driver takes (the ABI the lowering will pass): a dict with
``data_type`` (``CUtensorMapDataType`` code), ``rank``, ``global_dim`` and ``box_dim`` (dimension 0 innermost),
``global_strides`` (bytes, dimensions 1 .. rank-1), ``element_strides``, ``interleave``, ``swizzle``,
``l2_promotion`` and ``oob_fill`` (the driver's enum codes).

* :func:`swizzled_address` is where the hardware puts the byte the box's row-major order puts at a shared address;
* :func:`load_box` copies one box from a global byte image into a shared byte image, filling out-of-bounds elements
  with zeros, and returns the bytes its mbarrier's complete-tx reports;
* :func:`store_box` copies one box from shared memory back, writing only the elements inside the tensor.

Bad fields raise :class:`TensorMapError` (a :class:`SimulationError` and a ``ValueError``) naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .memory import OutOfBounds, SimulationError

__all__ = ["TensorMapError", "load_box", "store_box", "swizzled_address", "transaction_bytes"]


class TensorMapError(SimulationError, ValueError):
    """A tensor-map field, coordinate or shared address the documented hardware does not take (or this model does not
    cover), named in the message."""


#: Element bytes of each ``CUtensorMapDataType`` code (cuda.h: uint8, uint16, uint32, int32, uint64, int64, float16,
#: float32, float64, bfloat16, float32_ftz, tfloat32, tfloat32_ftz). The packed 4- and 6-bit codes are not modelled.
_ELEMENT_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
#: ``CUtensorMapSwizzle`` code -> (bytes kept whole, bytes of the span they move in); 0 is no swizzle. Code 5 (32-byte
#: atoms with an 8-byte flip on alternate lines) is drawn only in a figure, so it is not modelled.
_SWIZZLE_ATOMS = {1: (16, 32), 2: (16, 64), 3: (16, 128), 4: (32, 128), 6: (64, 128)}
#: Shared memory is swizzled in lines of this many bytes (each row of the ISA's pattern tables).
_LINE_BYTES = 128
#: Every TMA shared destination is 128-byte aligned (programming guide, TMA swizzle table).
_SHARED_ALIGNMENT = 128
_MAX_BOX = 256
_S32 = (-(1 << 31), (1 << 31) - 1)


def swizzled_address(swizzle: int, address):
    """The shared byte address where TMA swizzle mode ``swizzle`` (a ``CUtensorMapSwizzle`` code) stores the byte
    that the box's row-major order places at ``address`` (an int or an integer numpy array; absolute addresses, so a
    destination not aligned to the pattern's repeat starts mid-pattern, as the ISA's base-offset rule says).

    Shared memory is taken in 128-byte lines; inside a line the chunks the mode keeps whole (16 bytes, or 32/64 for
    the ``128B_atom`` modes) are numbered, and chunk ``c`` of line ``l`` goes to chunk ``c XOR (l mod k)``, ``k``
    being the number of chunks in the mode's span: 2 for 32B, 4 for 64B, 8 for 128B, 4 and 2 for the 32- and
    64-byte atoms.

    Example:
        >>> [swizzled_address(3, 128 * line + 16) for line in range(4)]
        [16, 128, 304, 416]
        >>> swizzled_address(1, 128 + 40), swizzled_address(0, 168)
        (184, 168)
    """
    if swizzle == 0:
        return address
    if swizzle not in _SWIZZLE_ATOMS:
        raise TensorMapError(f"swizzle code {swizzle!r} is not modelled (known: 0 and {sorted(_SWIZZLE_ATOMS)})")
    atom, span = _SWIZZLE_ATOMS[swizzle]
    key = (address // _LINE_BYTES) % (span // atom)
    return address ^ (key * atom)


def _ints(value, what: str, count: int, low: int, high: int) -> tuple[int, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != count:
        raise TensorMapError(f"{what} must be {count} integers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not low <= int(v) <= high:
            raise TensorMapError(f"{what} entries must be integers in [{low}, {high}], got {value!r}")
        out.append(int(v))
    return tuple(out)


def _read_map(fields: dict) -> dict:
    """The fields the copy needs, checked: element bytes, dims, byte strides (dimension 0 included), box, loaded
    counts and swizzle."""
    if not isinstance(fields, dict):
        raise TensorMapError(f"a tensor map is a dict of driver fields, got {fields!r}")
    required = "data_type rank global_dim global_strides box_dim element_strides interleave swizzle oob_fill"
    missing = set(required.split()) - set(fields)
    if missing:
        raise TensorMapError(f"tensor map lacks the fields {sorted(missing)}")
    if fields["data_type"] not in _ELEMENT_BYTES:
        raise TensorMapError(f"data_type {fields['data_type']!r} is not a modelled CUtensorMapDataType code")
    element = _ELEMENT_BYTES[fields["data_type"]]
    rank = fields["rank"]
    if rank not in range(1, 6):
        raise TensorMapError(f"rank {rank!r} is not 1..5")
    dims = _ints(fields["global_dim"], "global_dim", rank, 1, 1 << 32)
    strides = _ints(fields["global_strides"], "global_strides", rank - 1, 1, (1 << 40) - 1)
    box = _ints(fields["box_dim"], "box_dim", rank, 1, _MAX_BOX)
    steps = _ints(fields["element_strides"], "element_strides", rank, 1, 8)
    if fields["interleave"] != 0:
        raise TensorMapError(f"interleave {fields['interleave']!r}: only the non-interleaved layout (0) is modelled")
    if fields["oob_fill"] != 0:
        raise TensorMapError(
            f"oob_fill {fields['oob_fill']!r}: only the zero fill (0) is modelled; the OOB-NaN bit pattern is not "
            "documented"
        )
    swizzle = fields["swizzle"]
    if swizzle != 0 and swizzle not in _SWIZZLE_ATOMS:
        raise TensorMapError(f"swizzle {swizzle!r} is not modelled (known: 0 and {sorted(_SWIZZLE_ATOMS)})")
    row = box[0] * element
    if row % 16:
        raise TensorMapError(
            f"box_dim[0] = {box[0]} makes {row}-byte rows; without interleave they are 16-byte multiples"
        )
    if swizzle and row != _SWIZZLE_ATOMS[swizzle][1]:
        raise TensorMapError(
            f"box_dim[0] = {box[0]} makes {row}-byte rows; under swizzle {swizzle} this model takes rows of exactly "
            f"the {_SWIZZLE_ATOMS[swizzle][1]}-byte span (narrower rows are not modelled)"
        )
    # Without interleave the traversal stride of dimension 0 is ignored: every element of the inner row moves.
    counts = (box[0], *(-(-b // s) for b, s in zip(box[1:], steps[1:], strict=True)))
    return {
        "element": element,
        "dims": dims,
        "byte_strides": (element, *strides),
        "steps": (1, *steps[1:]),
        "counts": counts,
        "swizzle": swizzle,
    }


def transaction_bytes(fields: dict) -> int:
    """The byte count one load of the map's box reports to its mbarrier (complete-tx): every element the box moves,
    inside the tensor or filled.

    Example:
        >>> transaction_bytes({"data_type": 9, "rank": 2, "global_dim": (64, 300), "global_strides": (128,),
        ...     "box_dim": (64, 128), "element_strides": (1, 1), "interleave": 0, "swizzle": 3, "oob_fill": 0})
        16384
    """
    box = _read_map(fields)
    return box["element"] * math.prod(box["counts"])


def _placements(box: dict, coords, shared_base: int):
    """For every element of the box (row-major, dimension 0 innermost): whether it is inside the tensor, its global
    byte offset, and the shared byte address it occupies after the swizzle."""
    coords = _ints(coords, "tensor coordinates", len(box["dims"]), *_S32)
    if isinstance(shared_base, bool) or not isinstance(shared_base, (int, np.integer)) or shared_base < 0:
        raise TensorMapError(f"shared address {shared_base!r} must be a non-negative integer")
    if shared_base % _SHARED_ALIGNMENT:
        raise TensorMapError(f"shared address {shared_base} is not {_SHARED_ALIGNMENT}-byte aligned")
    # Box index grids, outermost dimension first so that numpy's C order is the box's row-major order.
    grids = np.meshgrid(*(np.arange(n, dtype=np.int64) for n in reversed(box["counts"])), indexing="ij")
    inside = np.ones(grids[0].shape, dtype=bool)
    offset = np.zeros(grids[0].shape, dtype=np.int64)
    for k, grid in enumerate(reversed(grids)):  # k = tensor dimension, 0 innermost
        coordinate = coords[k] + grid * box["steps"][k]
        inside &= (coordinate >= 0) & (coordinate < box["dims"][k])
        offset += coordinate * box["byte_strides"][k]
    element = box["element"]
    linear = shared_base + np.arange(inside.size, dtype=np.int64).reshape(inside.shape) * element
    return inside.ravel(), offset.ravel(), swizzled_address(box["swizzle"], linear).ravel()


def _byte_indices(starts: np.ndarray, element: int) -> np.ndarray:
    return (starts[:, None] + np.arange(element, dtype=np.int64)[None, :]).ravel()


def _check_within(indices: np.ndarray, memory: np.ndarray, what: str) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= memory.size):
        raise OutOfBounds(f"TMA {what} bytes {int(indices.min())}..{int(indices.max())} leave its {memory.size} bytes")


def _byte_image(memory, what: str) -> np.ndarray:
    if not isinstance(memory, np.ndarray) or memory.dtype != np.uint8 or memory.ndim != 1:
        raise TensorMapError(f"the {what} image must be a 1-D uint8 numpy array, got {type(memory).__name__}")
    return memory


def load_box(fields: dict, global_bytes: np.ndarray, coords: Sequence[int], shared: np.ndarray, dst: int) -> int:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, coords]``:
    copy the box whose first element is at tensor coordinates ``coords`` (dimension 0 first, signed 32-bit) out of
    ``global_bytes`` (the tensor's bytes from its base address) into the ``shared`` byte image at address ``dst``,
    row-major with dimension 0 innermost and swizzled by :func:`swizzled_address`; elements outside the tensor are
    written as zeros. Returns the bytes complete-tx reports to the mbarrier.

    Example:
        >>> g = np.arange(64, dtype=np.uint8)          # an 8 x 8 uint8 tensor
        >>> fields = {"data_type": 0, "rank": 2, "global_dim": (8, 8), "global_strides": (8,),
        ...           "box_dim": (16, 2), "element_strides": (1, 1), "interleave": 0, "swizzle": 0, "oob_fill": 0}
        >>> s = np.full(128, 255, np.uint8)
        >>> load_box(fields, g, (4, 6), s, 0), s[:8].tolist(), s[16:24].tolist()
        (32, [52, 53, 54, 55, 0, 0, 0, 0], [60, 61, 62, 63, 0, 0, 0, 0])
    """
    box = _read_map(fields)
    global_bytes, shared = _byte_image(global_bytes, "global"), _byte_image(shared, "shared")
    inside, offset, address = _placements(box, coords, dst)
    element = box["element"]
    source = _byte_indices(offset[inside], element)
    target = _byte_indices(address, element)
    _check_within(source, global_bytes, "load source")
    _check_within(target, shared, "load destination")
    values = np.zeros((address.size, element), dtype=np.uint8)
    values[inside] = global_bytes[source].reshape(-1, element)
    shared[target] = values.ravel()
    return element * address.size


def store_box(fields: dict, global_bytes: np.ndarray, coords: Sequence[int], shared: np.ndarray, src: int) -> None:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, coords], [src]``: write the box held at
    shared address ``src`` (laid out and swizzled as :func:`load_box` leaves it) into ``global_bytes``, only the
    elements inside the tensor. The ISA requires non-negative starting coordinates for this direction.

    Example:
        >>> fields = {"data_type": 0, "rank": 1, "global_dim": (20,), "global_strides": (), "box_dim": (16,),
        ...           "element_strides": (1,), "interleave": 0, "swizzle": 0, "oob_fill": 0}
        >>> g = np.zeros(20, np.uint8)
        >>> store_box(fields, g, (8,), np.arange(128, dtype=np.uint8), 0)
        >>> g.tolist()[6:]
        [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    """
    box = _read_map(fields)
    global_bytes, shared = _byte_image(global_bytes, "global"), _byte_image(shared, "shared")
    if any(isinstance(c, (int, np.integer)) and c < 0 for c in coords):
        raise TensorMapError(f"a TMA store's tensor coordinates must be non-negative, got {tuple(coords)}")
    inside, offset, address = _placements(box, coords, src)
    element = box["element"]
    source = _byte_indices(address[inside], element)
    target = _byte_indices(offset[inside], element)
    _check_within(source, shared, "store source")
    _check_within(target, global_bytes, "store destination")
    global_bytes[target] = shared[source]
