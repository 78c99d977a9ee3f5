"""The Hopper ``wgmma.mma_async`` instruction as data (PTX ISA 9.1, "Asynchronous Warpgroup Level Matrix
Multiply-Accumulate Instructions": "Matrix Shape", "Matrix Data-types", "wgmma.mma_async" syntax, "Register
Fragments", "Matrix Descriptor Format"; restated with each fact's section in ``docs/notes/wgmma-facts.md``).

One warpgroup (128 threads, all of them, ``.sync.aligned``) computes a ``64 x N`` block of D per instruction; D (and
A, when it comes from registers) is a register fragment spread over the warpgroup, B (and A otherwise) is read from
shared memory through a 64-bit matrix descriptor. The descriptor is shared with ``tcgen05`` and lives in
:mod:`tirx_layout.hw.smem_descriptor` (its bits and limits: ``WGMMA_DESCRIPTOR``; the derivation:
``shared_matrix_descriptor(..., family="wgmma")``); the fragment layouts are constructors in
:mod:`tirx_layout.hw.constructors`. This module holds what is wgmma's own: kinds, one :class:`WgmmaShape` record per
kind, types, which operands may be transposed, register counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.values import IntChoices, static_int
from .memory import dtype_bytes, operand_kind

#: Operand element types of each kind ("Matrix Data-types"). A and B of ``fp8`` and ``int8`` may differ
#: (e4m3 x e5m2; u8 x s8, the mixed integer form needs PTX ISA 8.4).
OPERAND_DTYPES = {
    "f16": ("float16",),
    "bf16": ("bfloat16",),
    "tf32": ("float32",),  # tf32 operands are stored as 32-bit floats; the low mantissa bits are ignored
    "fp8": ("float8_e4m3fn", "float8_e5m2"),
    "int8": ("int8", "uint8"),
}
#: Accumulator types of each kind: f16 inputs accumulate into f32 or f16, bf16 and tf32 into f32 only, fp8 into f32
#: or f16, 8-bit integers into s32 (``ptxas`` rejects ``.f16.bf16.bf16``).
ACCUMULATOR_DTYPES = {
    "f16": ("float32", "float16"),
    "bf16": ("float32",),
    "tf32": ("float32",),
    "fp8": ("float32", "float16"),
    "int8": ("int32",),
}
#: The kinds whose shared-memory operands may be MN-major (``imm-trans-a``/``imm-trans-b`` exist only in the
#: ``.f16``/``.bf16`` forms of the syntax); every other operand is read K-major.
TRANSPOSABLE_KINDS = ("f16", "bf16")
#: Element types the wgmma reads MN-major from shared memory.
MN_MAJOR_DTYPES = frozenset(d for kind in TRANSPOSABLE_KINDS for d in OPERAND_DTYPES[kind])
#: Kinds with the ``imm-scale-a``/``imm-scale-b`` operands (negation): the floating-point ones. The integer forms
#: end at ``scale-d`` (``ptxas`` rejects the two immediates there).
NEGATABLE_KINDS = ("f16", "bf16", "tf32", "fp8")
#: PTX spellings of the types, as the instruction's suffixes write them.
PTX_TYPE = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "tf32",  # as an operand; as the accumulator, f32 (see ptx_type)
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "int8": "s8",
    "uint8": "u8",
    "int32": "s32",
}
#: 32-bit registers per thread holding one instruction's A fragment (any kind: 64 x 32 bytes over 128 threads).
A_REGISTERS = 4


@dataclass(frozen=True)
class WgmmaShape:
    """The ``m<m>n<N>k<k>`` shapes of one wgmma ``kind`` ("Matrix Shape"): one warpgroup computes an ``m x N`` block
    of D over ``k`` elements of K, N any of ``n`` (written as the ISA's list reads).

    Example:
        >>> shape = WgmmaShape("int8", m=64, n=IntChoices(8, 16, 24, 32, range(48, 257, 16)), k=32)
        >>> 40 in shape.n, str(shape.n)
        (False, '8, 16, 24, 32, 48..256 step 16')
    """

    kind: str
    m: int
    n: IntChoices
    k: int


#: N of every kind but ``int8``: 8..256 in steps of 8.
_N_STEP_8 = IntChoices(range(8, 257, 8))
#: The ISA's ``.shape`` list per kind, K 32 bytes of A/B per row. ``int8`` takes 8, 16, 24, 32, then steps of 16
#: (``ptxas`` rejects ``m64n40k32`` and ``m64n200k32`` for integer types).
WGMMA_SHAPES = {
    shape.kind: shape
    for shape in (
        WgmmaShape("f16", m=64, n=_N_STEP_8, k=16),
        WgmmaShape("bf16", m=64, n=_N_STEP_8, k=16),
        WgmmaShape("tf32", m=64, n=_N_STEP_8, k=8),
        WgmmaShape("fp8", m=64, n=_N_STEP_8, k=32),
        WgmmaShape("int8", m=64, n=IntChoices(8, 16, 24, 32, range(48, 257, 16)), k=32),
    )
}
#: Rows of D (and of A) one warpgroup's wgmma computes: every shape is ``m64nNkK`` (unpacking refuses a second M).
(WGMMA_M,) = {shape.m for shape in WGMMA_SHAPES.values()}


def valid_n(kind: str) -> tuple[int, ...]:
    """The N values of the ISA's ``.shape`` list for ``kind``: its :class:`WgmmaShape`'s.

    Example:
        >>> valid_n("int8")[:6], len(valid_n("bf16"))
        ((8, 16, 24, 32, 48, 64), 32)
    """
    if kind not in WGMMA_SHAPES:
        raise ValueError(f"unknown wgmma kind {kind!r}; expected one of {sorted(WGMMA_SHAPES)}")
    return WGMMA_SHAPES[kind].n.values


def wgmma_kind(a_dtype, b_dtype) -> str:
    """The wgmma kind that multiplies A and B of these element types; ``ValueError`` listing every kind's types
    otherwise (f16 and bf16 do not mix, and 8-bit floats do not mix with 8-bit integers).

    Example:
        >>> wgmma_kind("bfloat16", "bfloat16"), wgmma_kind("float8_e4m3fn", "float8_e5m2"), wgmma_kind("uint8", "int8")
        ('bf16', 'fp8', 'int8')
        >>> wgmma_kind("float16", "bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: no wgmma kind multiplies A float16 by B bfloat16; the kinds take f16: float16; bf16: bfloat16;
        tf32: float32; fp8: float8_e4m3fn, float8_e5m2; int8: int8, uint8
    """
    return operand_kind(OPERAND_DTYPES, a_dtype, b_dtype, "wgmma")


def k_per_instruction(dtype) -> int:
    """K of one wgmma for operands of ``dtype``: the K of the kind that multiplies two of them (32 bytes of each
    row: 16 for f16/bf16, 8 for tf32, 32 for 8-bit).

    Example:
        >>> k_per_instruction("bfloat16"), k_per_instruction("float32"), k_per_instruction("int8")
        (16, 8, 32)
    """
    return WGMMA_SHAPES[wgmma_kind(dtype, dtype)].k


def ptx_type(dtype, accumulator: bool = False) -> str:
    """The PTX type suffix of ``dtype`` in a wgmma: operands as ``.f16``/``.bf16``/``.tf32``/``.e4m3``/``.e5m2``/
    ``.s8``/``.u8``, the accumulator as ``.f32``/``.f16``/``.s32``.

    Example:
        >>> ptx_type("float32"), ptx_type("float32", accumulator=True), ptx_type("uint8")
        ('tf32', 'f32', 'u8')
    """
    dtype = str(dtype)
    if accumulator and dtype == "float32":
        return "f32"
    if dtype not in PTX_TYPE:
        raise ValueError(f"{dtype} is no wgmma operand or accumulator type; expected one of {sorted(PTX_TYPE)}")
    return PTX_TYPE[dtype]


@dataclass(frozen=True)
class WgmmaInstruction:
    """One ``wgmma.mma_async.sync.aligned.m64nNkK`` of a warpgroup, every field checked against the ISA on
    construction: operand and accumulator types, N, the majorness of the shared operands (``"K"`` or ``"MN"``;
    MN-major only for f16/bf16) and whether A comes from registers (``a_in_registers``: the "RS" form, K-major).
    ``m`` is always 64 (one warpgroup's rows; a taller D is several warpgroups, each issuing its own wgmma).

    Example:
        >>> i = WgmmaInstruction("bfloat16", "bfloat16", "float32", n=128, b_major="MN")
        >>> i.kind, i.k, i.operation, i.d_registers, i.transpose
        ('bf16', 16, 'wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16', 64, (0, 1))
        >>> WgmmaInstruction("float8_e4m3fn", "float8_e4m3fn", "float32", n=64, a_major="MN")
        Traceback (most recent call last):
        ...
        ValueError: A is MN-major float8_e4m3fn: wgmma reads MN-major operands only for 16-bit types (bfloat16,
        float16; the imm-trans operands exist only there); store A K-major
    """

    a_dtype: str
    b_dtype: str
    d_dtype: str
    n: int
    a_major: str = "K"
    b_major: str = "K"
    a_in_registers: bool = False
    m: int = WGMMA_M

    def __post_init__(self) -> None:
        m = static_int(self.m, "M")
        if m != WGMMA_M:
            raise ValueError(
                f"a wgmma computes M = {WGMMA_M} rows per warpgroup, got M={m}; a {m}-row D takes {m / WGMMA_M:g} "
                "warpgroups, each issuing its own m64 wgmma"
            )
        for name in ("a_dtype", "b_dtype", "d_dtype"):
            object.__setattr__(self, name, str(getattr(self, name)))
        kind = wgmma_kind(self.a_dtype, self.b_dtype)
        if self.d_dtype not in ACCUMULATOR_DTYPES[kind]:
            raise ValueError(
                f"wgmma kind {kind} ({self.a_dtype} x {self.b_dtype}) accumulates into "
                f"{' or '.join(ACCUMULATOR_DTYPES[kind])}, got D {self.d_dtype}"
            )
        n = static_int(self.n, "N")
        object.__setattr__(self, "n", n)
        shape = WGMMA_SHAPES[kind]
        if n not in shape.n:
            raise ValueError(f"wgmma kind {kind} takes N in {shape.n}, got N={n}")
        if not isinstance(self.a_in_registers, bool):
            raise TypeError(f"a_in_registers must be a bool, got {self.a_in_registers!r}")
        for side, major, dtype in (("A", self.a_major, self.a_dtype), ("B", self.b_major, self.b_dtype)):
            if major not in ("K", "MN"):
                raise ValueError(f"{side}'s majorness must be 'K' or 'MN', got {major!r}")
            if major == "MN" and dtype not in MN_MAJOR_DTYPES:
                raise ValueError(mn_major_refusal(side, dtype))
        if self.a_in_registers and self.a_major != "K":
            raise ValueError("A from registers is K-major only (the register form has no imm-trans-a)")

    @property
    def kind(self) -> str:
        """The kind (``f16``, ``bf16``, ``tf32``, ``fp8``, ``int8``)."""
        return wgmma_kind(self.a_dtype, self.b_dtype)

    @property
    def k(self) -> int:
        """K of the instruction, its kind's shape record's: 32 bytes of A and B per row."""
        return WGMMA_SHAPES[self.kind].k

    @property
    def shape(self) -> str:
        """The ``.shape`` suffix, ``m64n<N>k<K>``."""
        return f"m{WGMMA_M}n{self.n}k{self.k}"

    @property
    def operation(self) -> str:
        """The PTX operation up to its operands: ``wgmma.mma_async.sync.aligned.<shape>.<D>.<A>.<B>``."""
        types = f"{ptx_type(self.d_dtype, True)}.{ptx_type(self.a_dtype)}.{ptx_type(self.b_dtype)}"
        return f"wgmma.mma_async.sync.aligned.{self.shape}.{types}"

    @property
    def transpose(self) -> tuple[int, int]:
        """The ``imm-trans-a``, ``imm-trans-b`` values: 1 for an MN-major operand (always (0, 0) for kinds without
        those operands, whose operands are K-major)."""
        return int(self.a_major == "MN"), int(self.b_major == "MN")

    @property
    def has_imm_trans(self) -> bool:
        """Whether the PTX form takes ``imm-trans-a``/``imm-trans-b`` (only f16/bf16; the RS form has only
        ``imm-trans-b``)."""
        return self.kind in TRANSPOSABLE_KINDS

    @property
    def has_imm_scale(self) -> bool:
        """Whether the PTX form takes ``imm-scale-a``/``imm-scale-b`` (the float kinds; the int8 forms end at
        ``scale-d``)."""
        return self.kind in NEGATABLE_KINDS

    @property
    def d_registers(self) -> int:
        """32-bit registers per thread holding D: N/2 for f32/s32, N/4 for f16 (two elements per ``.f16x2``)."""
        return self.n // 2 * dtype_bytes(self.d_dtype) // 4

    @property
    def d_elements(self) -> int:
        """Elements of D each thread holds: N/2 (64 x N over 128 threads)."""
        return self.n // 2

    @property
    def a_elements(self) -> int:
        """Elements of one instruction's A fragment per thread (A in registers): 8 for 16-bit types, 4 for tf32,
        16 for 8-bit types, in :data:`A_REGISTERS` 32-bit registers."""
        return A_REGISTERS * 4 // dtype_bytes(self.a_dtype)


def mn_major_refusal(operand: str, dtype) -> str:
    """The message refusing an MN-major ``operand`` of ``dtype`` on wgmma (one wording for every caller).

    Example:
        >>> mn_major_refusal("B", "float32")[:60]
        'B is MN-major float32: wgmma reads MN-major operands only fo'
    """
    return (
        f"{operand} is MN-major {dtype}: wgmma reads MN-major operands only for 16-bit types "
        f"({', '.join(sorted(MN_MAJOR_DTYPES))}; the imm-trans operands exist only there); store {operand} K-major"
    )
