"""The simulator's own model of the warp-level ``mma.sync.aligned.m16n8k*``, written from the PTX ISA.

Written from the PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions" (``mma``, "Matrix Fragments for
mma.m16n8k4 / m16n8k8 / m16n8k16 / m16n8k32") -- never from the project's layouts or its lowering, so that the two
can check each other. What it relies on, restated:

* ``mma.sync.aligned.m16n8k<K>.row.col.<d>.<a>.<b>.<c> d, a, b, c``: the 32 lanes of a warp, all of them together,
  compute ``D (16 x 8) = A (16 x K) * B (K x 8) + C``. K is 8 or 16 for f16/bf16, 4 or 8 for tf32, 16 or 32 for
  s8/u8/e4m3/e5m2. D and C are f32 (or f16 for f16 and 8-bit float inputs), s32 for s8/u8.
* Fragments: lane ``l`` has ``g = l >> 2`` (groupID) and ``t = l % 4`` (threadID_in_group); its element ``i`` of
  each operand (registers low to high, two 16-bit or four 8-bit elements per 32-bit register, the lowest element
  in the low bits) sits at, by the table of each shape:

  - C/D, every shape: row ``g`` for ``c0, c1``, ``g + 8`` for ``c2, c3``; column ``2t + (i & 1)``;
  - A, 16-bit, m16n8k8: row ``g`` for ``a0, a1``, ``g + 8`` for ``a2, a3``; column ``2t + (i & 1)``;
    m16n8k16: row ``g`` for ``a0, a1, a4, a5``, ``g + 8`` otherwise; column ``2t + (i & 1)``, ``+ 8`` for
    ``i >= 4``;
  - A, tf32, m16n8k4: row ``g`` for ``a0``, ``g + 8`` for ``a1``; column ``t``; m16n8k8: row ``g`` for ``a0, a2``,
    ``g + 8`` for ``a1, a3``; column ``t`` for ``a0, a1``, ``t + 4`` for ``a2, a3``;
  - A, 8-bit, m16n8k16: row ``g`` for ``a0..a3``, ``g + 8`` for ``a4..a7``; column ``4t + (i & 3)``; m16n8k32: row
    ``g`` for ``a0..a3, a8..a11``, ``g + 8`` otherwise; column ``4t + (i & 3)``, ``+ 16`` for ``i >= 8``;
  - B (row = K, column = N ``g`` always), 16-bit: k8 row ``2t + i``; k16 row ``2t + (i & 1)``, ``+ 8`` for
    ``i >= 2``; tf32: k4 row ``t``; k8 row ``t`` for ``b0``, ``t + 4`` for ``b1``; 8-bit: k16 row ``4t + i``; k32
    row ``4t + (i & 3)``, ``+ 16`` for ``i >= 4``.

Block scaling (sm_120a; "Block Scaling for mma.sync" and the ``mma`` syntax): ``mma.sync.aligned.m16n8k<K>.row.col
.kind::<kind>.block_scale.scale_vec::<X>X.f32.<a>.<b>.f32.<stype> d, a, b, c, scale-a-data, {byte-id-a,
thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}`` computes ``D = (A * scale_A) (B * scale_B) + C``: row ``m``
of A is cut into ``X`` chunks of ``K / X`` elements, chunk ``j`` multiplied by ``scale_A[m, j]``; column ``n`` of B
likewise by ``scale_B[j, n]``. K is 32 for ``kind::mxf8f6f4`` (e4m3/e5m2 operands: the 8-bit m16n8k32 fragments
above) and 64 for ``kind::mxf4``/``mxf4nvf4`` (e2m1, eight to a register: A row ``g`` for ``a0..a7, a16..a23``,
``g + 8`` otherwise, column ``8t + (i & 7)``, ``+ 32`` for ``i >= 16``; B row (K) ``8t + (i & 7)``, ``+ 32`` for
``i >= 8``, column ``g``; registers held as ``float4_e2m1fn`` slots, or as bytes of two, the lower element in the
low nibble). The scales come from one 32-bit register per lane each:

  - ``thread-id-a`` 0 takes ``SF_A`` from the lanes with ``laneid % 4`` 0 or 1, 1 from those with 2 or 3; of a
    quad's pair the lower lane holds row ``g``, the upper row ``g + 8`` (Figure 43);
  - ``thread-id-b`` takes ``SF_B`` from the lanes with ``laneid % 4 == thread-id-b``, lane ``4n + thread-id-b``
    holding column ``n`` (Figure 44);
  - chunk ``j`` is byte ``byte-id + j`` of the register (1X one byte, 2X a pair at 0 or 2, 4X all four at 0;
    Table "Valid values for various selector components": any other value is undefined behaviour, refused);
  - ue8m0 (``float8_e8m0fnu``) byte ``e`` is ``2^(e - 127)``, ``0xFF`` NaN; ue4m3 is an unsigned e4m3: its top bit
    must be 0 (refused otherwise), the other seven bits read as e4m3 (``float8_e4m3fn`` storage).

How the simulator applies them. The helpers are the ``mmasync`` family's (``ir/device_calls``):
``mma_m16n8k<K>_<d>_<a>_<b>(d_regs, a_regs, b_regs)``, each argument ``address_of(fragment[slot])`` of the
thread's first element of that operand, its further elements in the following slots, C being D. The warp's lanes
must all execute it (``.sync.aligned``; otherwise a :class:`SimulationError` names the missing lanes). It reads
every lane's fragments, multiplies exactly (tf32 operands with their low 13 mantissa bits dropped, integer sums
wrapping modulo 2^32), rounds once to D's type, and writes D's elements back to each lane's registers. The
block-scaled helpers are ``mmabs_m16n8k<K>_<kind>_x<X>_f32_<a>_<b>_<stype>_a<byte-id-a>_<thread-id-a>_b<byte-id-b>_
<thread-id-b>_<pa><pb>(d_regs, a_regs, b_regs, sfa_regs, sfb_regs)``: a ``w`` scale pointer is at the 4 bytes
(slots) of the lane's scale register, a ``p`` one at the ``X`` bytes the instruction reads (the register's bytes
``byte-id ..``); products are exact in float64, the sum rounded once to float32.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .addresses import register_address, register_slots
from .dispatch import HelperTable
from .matrix_operands import mma_reference
from .memory import SimulationError
from .warps import whole_warps

__all__ = ["HELPERS", "decode_scales", "fp4_places", "fragment_places"]

_WARP = 32
#: The element types of each PTX type suffix.
_TYPES = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "tf32": np.dtype(np.float32),
    "f32": np.dtype(np.float32),
    "s8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "s32": np.dtype(np.int32),
}
#: (element bytes of A/B, K) -> (elements of A, of B) per lane: the shapes the ISA has for m16n8.
_COUNTS = {(2, 8): (4, 2), (2, 16): (8, 4), (4, 4): (2, 1), (4, 8): (4, 2), (1, 16): (8, 4), (1, 32): (16, 8)}


def fragment_places(operand: str, element_bytes: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, columns)``, each ``(32, count)``: where lane ``l``'s element ``i`` of ``operand`` (``"A"``,
    ``"B"`` as K x N, or ``"C"``) of an ``m16n8k<k>`` with ``element_bytes``-byte A and B sits, by the ISA's tables.

    Example:
        >>> rows, cols = fragment_places("A", 2, 16)
        >>> [(int(r), int(c)) for r, c in zip(rows[5], cols[5])]  # lane 5: g = 1, t = 1
        [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]
    """
    if (element_bytes, k) not in _COUNTS:
        raise SimulationError(f"mma.sync has no m16n8k{k} for {element_bytes}-byte operands")
    lane = np.arange(_WARP)[:, None]
    g, t = lane >> 2, lane % 4
    if operand == "C":
        i = np.arange(4)[None, :]
        return np.broadcast_arrays(g + 8 * (i >= 2), 2 * t + (i & 1))
    count = _COUNTS[(element_bytes, k)][0 if operand == "A" else 1]
    i = np.arange(count)[None, :]
    if operand == "A":
        row, col = {
            (2, 8): (g + 8 * (i >= 2), 2 * t + (i & 1)),
            (2, 16): (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)),
            (4, 4): (g + 8 * i, t + 0 * i),
            (4, 8): (g + 8 * (i & 1), t + 4 * (i >= 2)),
            (1, 16): (g + 8 * (i >= 4), 4 * t + (i & 3)),
            (1, 32): (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >= 8)),
        }[(element_bytes, k)]
        return np.broadcast_arrays(row, col)
    if operand != "B":
        raise SimulationError(f"an mma.sync operand is A, B or C, got {operand!r}")
    row = {
        (2, 8): 2 * t + i,
        (2, 16): 2 * t + (i & 1) + 8 * (i >= 2),
        (4, 4): t + 0 * i,
        (4, 8): t + 4 * i,
        (1, 16): 4 * t + i,
        (1, 32): 4 * t + (i & 3) + 16 * (i >= 4),
    }[(element_bytes, k)]
    return np.broadcast_arrays(row, g + 0 * i)


def _mma(interp, args, k: str, d: str, a: str, b: str) -> None:
    k = int(k)
    label = f"mma.sync.aligned.m16n8k{k}.row.col.{d}.{a}.{b}.{d}"
    if len(args) != 3:
        raise SimulationError(f"{label} takes three register pointers (D, A, B), got {len(args)} arguments")
    types = {name: _TYPES.get(suffix) for name, suffix in (("D", d), ("A", a), ("B", b))}
    if None in types.values() or types["A"].itemsize != types["B"].itemsize:
        raise SimulationError(f"{label}: no mma.sync has these types")
    size = types["A"].itemsize
    count_a, count_b = _COUNTS.get((size, k), (None, None))
    if count_a is None:
        raise SimulationError(f"{label}: mma.sync has no m16n8k{k} for {size}-byte operands")
    a_rows, a_cols = fragment_places("A", size, k)
    b_rows, b_cols = fragment_places("B", size, k)
    c_rows, c_cols = fragment_places("C", size, k)
    for w in whole_warps(interp, label):
        threads = np.arange(_WARP * w, _WARP * (w + 1))
        where = f"{label} of warp {w}"
        d_regs, d_slots, _ = register_slots(interp, args[0], threads, 4, types["D"], f"{where}: D")
        a_regs, a_slots, _ = register_slots(interp, args[1], threads, count_a, types["A"], f"{where}: A")
        b_regs, b_slots, _ = register_slots(interp, args[2], threads, count_b, types["B"], f"{where}: B")
        lanes = threads[:, None]
        a_tile = np.zeros((16, k), types["A"])
        a_tile[a_rows, a_cols] = a_regs[np.broadcast_to(lanes, a_slots.shape), a_slots]
        b_tile = np.zeros((k, 8), types["B"])
        b_tile[b_rows, b_cols] = b_regs[np.broadcast_to(lanes, b_slots.shape), b_slots]
        c_tile = np.zeros((16, 8), types["D"])
        c_lanes = np.broadcast_to(lanes, d_slots.shape)
        c_tile[c_rows, c_cols] = d_regs[c_lanes, d_slots]
        result = mma_reference(c_tile, a_tile, b_tile, scale_d=True)
        d_regs[c_lanes, d_slots] = result[c_rows, c_cols]


#: Block-scaled kinds: (K, operand types, {stype: scale_vec sizes}) ("Valid combinations of .scale_vec_size and
#: .kind qualifier").
_SCALED_KINDS = {
    "mxf8f6f4": (32, {"e4m3", "e5m2"}, {"ue8m0": (1,)}),
    "mxf4": (64, {"e2m1"}, {"ue8m0": (2,)}),
    "mxf4nvf4": (64, {"e2m1"}, {"ue8m0": (2, 4), "ue4m3": (4,)}),
}
#: scale_vec -> (valid byte-ids, valid thread-id-a, valid thread-id-b).
_SELECTORS = {
    1: ((0, 1, 2, 3), (0, 1), (0, 1, 2, 3)),
    2: ((0, 2), (0, 1), (0, 1, 2, 3)),
    4: ((0,), (0, 1), (0, 1, 2, 3)),
}
#: The storage type of each scale type's bytes.
_SCALE_TYPES = {"ue8m0": np.dtype(ml_dtypes.float8_e8m0fnu), "ue4m3": np.dtype(ml_dtypes.float8_e4m3fn)}


def fp4_places(operand: str) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, columns)``, each ``(32, count)``, of lane ``l``'s element ``i`` of an m16n8k64 ``.e2m1`` operand
    (``"A"`` 16 x 64, ``"B"`` as K x N), by the ISA's table.

    Example:
        >>> [int(v) for v in fp4_places("B")[0][5][[0, 8]]]  # lane 5, b0 and b8: K rows 8 and 40
        [8, 40]
    """
    lane = np.arange(_WARP)[:, None]
    g, t = lane >> 2, lane % 4
    if operand == "A":
        i = np.arange(32)[None, :]
        return np.broadcast_arrays(g + 8 * ((i >> 3) & 1), 8 * t + (i & 7) + 32 * (i >= 16))
    i = np.arange(16)[None, :]
    return np.broadcast_arrays(8 * t + (i & 7) + 32 * (i >= 8), g + 0 * i)


def decode_scales(raw: np.ndarray, stype: str, what: str) -> np.ndarray:
    """The values (float64) of scale bytes ``raw`` (their storage type) of ``stype``.

    Example:
        >>> decode_scales(np.array([127, 130, 120], np.uint8).view(ml_dtypes.float8_e8m0fnu), "ue8m0", "SF").tolist()
        [1.0, 8.0, 0.0078125]
    """
    bits = np.asarray(raw).view(np.uint8)
    if stype == "ue4m3":
        if (bits & 0x80).any():
            raise SimulationError(
                f"{what}: a ue4m3 scale has its top bit set (byte {int(bits[(bits & 0x80) != 0][0]):#x})"
            )
        return bits.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return bits.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)


def _operand(interp, expr, threads, count: int, dtype: np.dtype, what: str) -> np.ndarray:
    """The ``(32, count)`` element values (float64) of an A or B operand: ``count`` slots of ``dtype`` per lane, or,
    for e2m1 held as bytes (``uint8``, two elements each, the lower one in the low nibble: "the lowest element in the
    low bits" of a register), ``count / 2`` bytes unpacked."""
    _, regs, _ = register_address(interp, expr, what)
    packed = dtype == np.dtype(ml_dtypes.float4_e2m1fn) and regs.dtype == np.dtype(np.uint8)
    stored = np.dtype(np.uint8) if packed else dtype
    regs, slots, _ = register_slots(interp, expr, threads, count // 2 if packed else count, stored, what)
    values = regs[threads[:, None], slots]
    if not packed:
        return values.astype(np.float64)
    nibbles = np.stack([values & 0xF, values >> 4], axis=-1).reshape(len(threads), count)
    return nibbles.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def _mma_block_scaled(interp, args, k, kind, x, a, b, s, bida, tida, bidb, tidb, passing) -> None:
    k, x, bida, tida, bidb, tidb = (int(v) for v in (k, x, bida, tida, bidb, tidb))
    label = (
        f"mma.sync.aligned.m16n8k{k}.row.col.kind::{kind}.block_scale.scale_vec::{x}X.f32.{a}.{b}.f32.{s} "
        f"{{{bida}, {tida}}}, {{{bidb}, {tidb}}}"
    )
    if len(args) != 5:
        raise SimulationError(f"{label} takes five register pointers (D, A, B, SF_A, SF_B), got {len(args)}")
    if kind not in _SCALED_KINDS:
        raise SimulationError(f"{label}: no block-scaled kind {kind}")
    kind_k, operands, scales = _SCALED_KINDS[kind]
    if k != kind_k or a not in operands or b not in operands or x not in scales.get(s, ()):
        raise SimulationError(f"{label}: the ISA lists no such block-scaled form (the simulator models e4m3/e5m2/e2m1)")
    bytes_ok, tid_a_ok, tid_b_ok = _SELECTORS[x]
    if bida not in bytes_ok or bidb not in bytes_ok or tida not in tid_a_ok or tidb not in tid_b_ok:
        raise SimulationError(f"{label}: selector values outside the ISA's table (undefined behaviour)")
    fp4 = a == "e2m1"
    types = {"A": np.dtype(ml_dtypes.float4_e2m1fn) if fp4 else _TYPES[a], "D": np.dtype(np.float32)}
    types["B"] = np.dtype(ml_dtypes.float4_e2m1fn) if fp4 else _TYPES[b]
    if fp4:
        (a_rows, a_cols), (b_rows, b_cols) = fp4_places("A"), fp4_places("B")
    else:
        (a_rows, a_cols), (b_rows, b_cols) = fragment_places("A", 1, 32), fragment_places("B", 1, 32)
    c_rows, c_cols = fragment_places("C", 1, 32)
    lanes_a = 4 * (np.arange(16) % 8) + 2 * tida + np.arange(16) // 8  # the lane of each row of scale_A
    lanes_b = 4 * np.arange(8) + tidb
    for w in whole_warps(interp, label):
        threads = np.arange(_WARP * w, _WARP * (w + 1))
        where = f"{label} of warp {w}"
        d_regs, d_slots, _ = register_slots(interp, args[0], threads, 4, types["D"], f"{where}: D")
        a_vals = _operand(interp, args[1], threads, a_rows.shape[1], types["A"], f"{where}: A")
        b_vals = _operand(interp, args[2], threads, b_rows.shape[1], types["B"], f"{where}: B")
        # a whole word: 4 bytes, the chunks at byte-id ..; partial: the X chunk bytes themselves
        counts = [4 if p == "w" else x for p in passing]
        sa_regs, sa_slots, _ = register_slots(
            interp, args[3], threads, counts[0], _SCALE_TYPES[s], f"{where}: scale-a-data"
        )
        sb_regs, sb_slots, _ = register_slots(
            interp, args[4], threads, counts[1], _SCALE_TYPES[s], f"{where}: scale-b-data"
        )
        lanes = threads[:, None]
        a_tile = np.zeros((16, k), np.float64)
        a_tile[a_rows, a_cols] = a_vals
        b_tile = np.zeros((k, 8), np.float64)
        b_tile[b_rows, b_cols] = b_vals
        chunk_bytes = [
            [first + j for j in range(x)]
            for first in (bida if passing[0] == "w" else 0, bidb if passing[1] == "w" else 0)
        ]
        sf_a = decode_scales(
            sa_regs[threads[lanes_a][:, None], sa_slots[lanes_a][:, chunk_bytes[0]]], s, f"{where}: SF_A"
        )  # (16, X)
        sf_b = decode_scales(
            sb_regs[threads[lanes_b][:, None], sb_slots[lanes_b][:, chunk_bytes[1]]], s, f"{where}: SF_B"
        )  # (8, X)
        a_tile = a_tile * np.repeat(sf_a, k // x, axis=1)
        b_tile = b_tile * np.repeat(sf_b, k // x, axis=1).T
        c_lanes = np.broadcast_to(lanes, d_slots.shape)
        c_tile = np.zeros((16, 8), np.float64)
        c_tile[c_rows, c_cols] = d_regs[c_lanes, d_slots]
        result = (a_tile @ b_tile + c_tile).astype(np.float32)  # exact products, one rounding
        d_regs[c_lanes, d_slots] = result[c_rows, c_cols]


#: The ``mmasync`` family's helpers.
HELPERS = HelperTable(
    "mmasync",
    {},
    [
        (r"mma_m16n8k(?P<k>\d+)_(?P<d>f32|f16|s32)_(?P<a>[a-z0-9]+)_(?P<b>[a-z0-9]+)", _mma),
        (
            r"mmabs_m16n8k(?P<k>\d+)_(?P<kind>mxf8f6f4|mxf4nvf4|mxf4)_x(?P<x>[124])_f32_(?P<a>[a-z0-9]+)_"
            r"(?P<b>[a-z0-9]+)_(?P<s>ue8m0|ue4m3)_a(?P<bida>\d)_(?P<tida>\d)_b(?P<bidb>\d)_(?P<tidb>\d)_"
            r"(?P<passing>[wp]{2})",
            _mma_block_scaled,
        ),
    ],
)
