"""TEMPORARY stand-in for branch wgmma-desc's Hopper facts (removed when that branch is merged): the names of
WGMMA_DESIGN.md §2, written from the PTX ISA ("Asynchronous Warpgroup Level Matrix Multiply-Accumulate": the
register fragments of D and A, the matrix descriptor format, the shapes per kind).

Example:
    >>> wgmma_accumulator_layout(16).apply(9, 3)
    {'wid_in_wg': 0, 'laneid': 5, 'm': 3}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..layout.axis import Iter
from ..layout.tile import TileLayout
from .memory import dtype_bytes
from .mma import SharedDescriptor, shared_matrix_descriptor

#: Rows one warpgroup's wgmma computes.
WGMMA_M = 64
#: PTX spelling of each dtype.
PTX_DTYPE = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "int32": "s32",
    "int8": "s8",
    "uint8": "u8",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
}
#: Kind -> (A/B types, D types). tf32 operands are stored as float32.
WGMMA_KINDS = {
    "f16": ({"float16"}, ("float32", "float16")),
    "bf16": ({"bfloat16"}, ("float32",)),
    "tf32": ({"float32"}, ("float32",)),
    "f8": ({"float8_e4m3fn", "float8_e5m2"}, ("float32", "float16")),
    "i8": ({"int8", "uint8"}, ("int32",)),
}
#: The one swizzle mode Hopper lacks.
_SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}


def wgmma_kind(a_dtype, b_dtype) -> str:
    """The wgmma kind multiplying A and B of these dtypes."""
    a_dtype, b_dtype = str(a_dtype), str(b_dtype)
    for kind, (types, _) in WGMMA_KINDS.items():
        if a_dtype in types and b_dtype in types and (kind in ("f8", "i8") or a_dtype == b_dtype):
            return kind
    raise ValueError(f"no wgmma kind multiplies A {a_dtype} by B {b_dtype}")


def valid_n(kind: str) -> tuple[int, ...]:
    if kind == "i8":
        return (8, 16, 24, 32, *range(48, 257, 16))
    return tuple(range(8, 257, 8))


@dataclass(frozen=True)
class WgmmaInstruction:
    """One ``wgmma.mma_async.m64nNkK``: checked kind, dtypes, N and transposes."""

    a_dtype: str
    b_dtype: str
    d_dtype: str
    n: int
    a_major: str = "K"
    b_major: str = "K"
    a_in_registers: bool = False

    def __post_init__(self):
        kind = wgmma_kind(self.a_dtype, self.b_dtype)
        if self.d_dtype not in WGMMA_KINDS[kind][1]:
            raise ValueError(f"wgmma kind {kind} accumulates into {WGMMA_KINDS[kind][1]}, D is {self.d_dtype}")
        if self.n not in valid_n(kind):
            raise ValueError(f"wgmma kind {kind} takes N in 8..256 (its steps), got N={self.n}")
        for name, major in (("A", self.a_major), ("B", self.b_major)):
            if major == "MN" and dtype_bytes(self.a_dtype) != 2:
                raise ValueError(f"wgmma reads MN-major operands only for 16-bit types; {name} is {self.a_dtype}")

    @property
    def kind(self) -> str:
        return wgmma_kind(self.a_dtype, self.b_dtype)

    @property
    def k(self) -> int:
        return 32 // dtype_bytes(self.a_dtype)

    @property
    def transposable(self) -> bool:
        return self.kind in ("f16", "bf16")

    @property
    def d_registers(self) -> int:
        return self.n // 2 if dtype_bytes(self.d_dtype) == 4 else self.n // 4


def encode_wgmma(descriptor: SharedDescriptor) -> int:
    """The wgmma descriptor bits: start>>4 0-13, LBO>>4 16-29, SBO>>4 32-45, base offset 49-51, swizzle 62-63."""
    if descriptor.swizzle not in _SWIZZLE_CODE:
        raise ValueError(f"wgmma has no {descriptor.swizzle} swizzle")
    return (
        descriptor.start >> 4
        | (descriptor.lbo >> 4) << 16
        | (descriptor.sbo >> 4) << 32
        | descriptor.base_offset << 49
        | _SWIZZLE_CODE[descriptor.swizzle] << 62
    )


def wgmma_shared_descriptor(layout, shape, dtype, start_byte=0, *, operand="the operand") -> SharedDescriptor:
    return shared_matrix_descriptor(layout, shape, dtype, start_byte, operand=operand)


def _iters(rows, cols, warpgroups):
    lead = [(warpgroups, 1, "wgid")] if warpgroups > 1 else []
    return TileLayout.from_iters([Iter(e, s, a) for e, s, a in [*lead, *rows, *cols] if e > 1 or a != "m"])


def wgmma_accumulator_layout(n: int, dtype: str = "float32", warpgroups: int = 1) -> TileLayout:
    """D of a wgmma: warp w rows 16w..16w+15; lane l rows l/4, l/4+8, columns 8c + 2(l%4) + {0,1}."""
    rows = [(4, 1, "wid_in_wg"), (2, 2, "m"), (8, 4, "laneid")]
    cols = [(n // 8, 4, "m"), (4, 1, "laneid"), (2, 1, "m")]
    return _iters(rows, cols, warpgroups)


def wgmma_operand_a_layout(k: int, dtype: str, warpgroups: int = 1) -> TileLayout:
    """A of a wgmma in registers, K-major, the ISA's a0..a3 per K step."""
    size = dtype_bytes(dtype)
    steps = k // (32 // size)
    if size == 2:
        rows = [(4, 1, "wid_in_wg"), (2, 2, "m"), (8, 4, "laneid")]
        cols = [(steps, 8, "m"), (2, 4, "m"), (4, 1, "laneid"), (2, 1, "m")]
    elif size == 4:
        rows = [(4, 1, "wid_in_wg"), (2, 1, "m"), (8, 4, "laneid")]
        cols = [(steps, 4, "m"), (2, 2, "m"), (4, 1, "laneid")]
    else:
        rows = [(4, 1, "wid_in_wg"), (2, 4, "m"), (8, 4, "laneid")]
        cols = [(steps, 16, "m"), (2, 8, "m"), (4, 1, "laneid"), (4, 1, "m")]
    return _iters(rows, cols, warpgroups)


def _check(layout, expected, shape, what):
    if not isinstance(layout, TileLayout):
        raise ValueError(f"{what}: {layout!r} is not a register fragment TileLayout")
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    try:
        got = layout.apply(*grids, shape=list(shape))
    except ValueError as err:
        raise ValueError(f"{what}: layout {layout} does not fit shape {shape} ({err})") from None
    want = expected.apply(*grids, shape=list(shape))
    zero = np.zeros(shape, np.int64)
    wrong = np.zeros(shape, bool)
    for axis in sorted(set(got) | set(want)):
        wrong |= np.broadcast_to(got.get(axis, zero), shape) != np.broadcast_to(want.get(axis, zero), shape)
    bad = np.argwhere(wrong)
    if bad.size:
        i, j = (int(v) for v in bad[0])
        at = {a: int(np.broadcast_to(v, shape)[i, j]) for a, v in got.items()}
        isa = {a: int(np.broadcast_to(v, shape)[i, j]) for a, v in want.items()}
        raise ValueError(f"{what}: element ({i}, {j}) sits at {at}; the ISA puts it at {isa}")


def wgmma_accumulator_check(layout, shape, dtype) -> None:
    m, n = shape
    _check(layout, wgmma_accumulator_layout(n, dtype, m // WGMMA_M), shape, "D")


def wgmma_operand_a_check(layout, shape, dtype) -> None:
    m, k = shape
    _check(layout, wgmma_operand_a_layout(k, dtype, m // WGMMA_M), shape, "A")


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("annotations", "dataclass")]
del dataclasses
