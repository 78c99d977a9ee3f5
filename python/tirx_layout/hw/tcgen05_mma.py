"""The ``tcgen05.mma`` instruction as data and pure functions (PTX ISA 9.1, tcgen05 chapter: "Matrix shape",
"Instruction descriptor", "Block scaling"; restated in ``docs/notes/tcgen05-mma-facts.md`` §1-§3, §5).

What one ``tcgen05.mma`` is, nothing lowered here: its kinds with their operand and accumulator types and codes, one
:class:`MmaShape` record per row of the ISA's shape table (kind, M, the N it allows, K, ``cta_group``) and the
lookups derived from them, the operand types it reads MN-major, :class:`MmaInstruction` (one instruction, checked
against all of these) and its 32-bit :func:`instruction_descriptor`. The shared-memory matrix descriptor is
:mod:`tirx_layout.hw.smem_descriptor`; where the accumulator, a tensor-memory A and the scale factors sit in TMEM is
:mod:`tirx_layout.hw.tmem_addressing`.

Dense, non-``.ws`` MMAs with ``cta_group::1`` (one CTA) or ``cta_group::2`` (a CTA pair, :class:`PairMma`: one
thread of the pair's even CTA issues, each CTA holds half of A's rows, half of B's N rows and half of D); the fp4
block-scaled kinds (``mxf4``, ``mxf4nvf4``) are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.values import IntChoices, static_int
from .memory import dtype_bytes

#: Bytes of A and B one MMA reads per row along K, for every kind modelled here ("Matrix shape": K = 16 for
#: f16, 8 for tf32, 32 for f8f6f4/i8/mxf8f6f4; the 6- and 4-bit types of f8f6f4/mxf8f6f4 sit in 8-bit containers).
K_BYTES_PER_INSTRUCTION = 32

#: Operand element types of each kind and their 3-bit codes in the A/B type fields (bits 7-9, 10-12).
_F8F6F4_CODES = {"float8_e4m3fn": 0, "float8_e5m2": 1, "float6_e2m3fn": 3, "float6_e3m2fn": 4, "float4_e2m1fn": 5}
OPERAND_CODES = {
    "f16": {"float16": 0, "bfloat16": 1},
    "tf32": {"float32": 2},  # tf32 operands are stored in 32 bits
    "f8f6f4": _F8F6F4_CODES,
    "i8": {"uint8": 0, "int8": 1},
    "mxf8f6f4": _F8F6F4_CODES,
}
#: Accumulator types of each kind and their codes in bits 4-5 (block-scaled kinds have no D field: always f32).
ACCUMULATOR_CODES = {
    "f16": {"float16": 0, "float32": 1},
    "tf32": {"float32": 1},
    "f8f6f4": {"float16": 0, "float32": 1},
    "i8": {"int32": 2},
    "mxf8f6f4": {"float32": None},
}
#: The one scale-factor type of ``mxf8f6f4`` (UE8M0, code 1 in bit 23).
SCALE_DTYPE = "float8_e8m0fnu"
#: Operand types the ISA lets an MMA read MN-major ("transposed"), Table 51 / the instruction descriptor notes.
MN_MAJOR_DTYPES = frozenset({"float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "int8", "uint8"})
MAJORS = ("K", "MN")
#: Every operand type of a modelled kind that a layout can address (whole bytes: the 6- and 4-bit types are not).
OPERAND_DTYPES = frozenset(
    d for codes in OPERAND_CODES.values() for d in codes if not d.startswith(("float6", "float4"))
)


@dataclass(frozen=True)
class MmaShape:
    """One row of the ISA's "Matrix shape" table (dense, not ``.ws``): ``kind`` with ``cta_group`` CTAs computes an
    ``m x N x k`` block, N any of ``n`` (written as the table writes it).

    Example:
        >>> shape = MmaShape("i8", m=128, n=IntChoices(8, 16, 24, 32, range(48, 257, 16)), k=32, cta_group=1)
        >>> 40 in shape.n, shape.n.values[:6], str(shape.n)
        (False, (8, 16, 24, 32, 48, 64), '8, 16, 24, 32, 48..256 step 16')
    """

    kind: str
    m: int
    n: IntChoices
    k: int
    cta_group: int


#: N of every kind but ``i8``: 8..256 in steps of 8 (ISA 9.1, for M = 64 and 128 alike).
_N_STEP_8 = IntChoices(range(8, 257, 8))
#: N of ``i8``: 8, 16, 24, 32, then 48..256 in steps of 16 (no 40).
_N_I8 = IntChoices(8, 16, 24, 32, range(48, 257, 16))
#: N of every kind but ``i8`` across a CTA pair: 16..256 in steps of 16 (each CTA holds N/2 rows of B).
_N_PAIR = IntChoices(range(16, 257, 16))
#: N of ``i8`` across a CTA pair: 32..256 in steps of 32.
_N_PAIR_I8 = IntChoices(range(32, 257, 32))
#: The CTAs ``cta_group`` may name (ISA: ``.cta_group::1`` the issuing CTA, ``.cta_group::2`` the CTA pair).
CTA_GROUPS = (1, 2)
#: The ISA's "Matrix shape" table, one record per (kind, M, cta_group). K is 32 bytes of A/B per row
#: (:data:`K_BYTES_PER_INSTRUCTION`) in every row. With ``cta_group::2`` M and N are the pair's (M 128 or 256,
#: never 64; the block-scaled kind takes both).
MMA_SHAPES = (
    MmaShape("f16", m=64, n=_N_STEP_8, k=16, cta_group=1),
    MmaShape("f16", m=128, n=_N_STEP_8, k=16, cta_group=1),
    MmaShape("tf32", m=64, n=_N_STEP_8, k=8, cta_group=1),
    MmaShape("tf32", m=128, n=_N_STEP_8, k=8, cta_group=1),
    MmaShape("f8f6f4", m=64, n=_N_STEP_8, k=32, cta_group=1),
    MmaShape("f8f6f4", m=128, n=_N_STEP_8, k=32, cta_group=1),
    MmaShape("i8", m=64, n=_N_I8, k=32, cta_group=1),
    MmaShape("i8", m=128, n=_N_I8, k=32, cta_group=1),
    MmaShape("mxf8f6f4", m=128, n=_N_STEP_8, k=32, cta_group=1),
    MmaShape("f16", m=128, n=_N_PAIR, k=16, cta_group=2),
    MmaShape("f16", m=256, n=_N_PAIR, k=16, cta_group=2),
    MmaShape("tf32", m=128, n=_N_PAIR, k=8, cta_group=2),
    MmaShape("tf32", m=256, n=_N_PAIR, k=8, cta_group=2),
    MmaShape("f8f6f4", m=128, n=_N_PAIR, k=32, cta_group=2),
    MmaShape("f8f6f4", m=256, n=_N_PAIR, k=32, cta_group=2),
    MmaShape("i8", m=128, n=_N_PAIR_I8, k=32, cta_group=2),
    MmaShape("i8", m=256, n=_N_PAIR_I8, k=32, cta_group=2),
    MmaShape("mxf8f6f4", m=128, n=_N_PAIR, k=32, cta_group=2),
    MmaShape("mxf8f6f4", m=256, n=_N_PAIR, k=32, cta_group=2),
)


def valid_m(kind: str, cta_group: int = 1) -> tuple[int, ...]:
    """The M values of ``kind`` with ``cta_group`` CTAs: those of its records in :data:`MMA_SHAPES`.

    Example:
        >>> valid_m("f16"), valid_m("mxf8f6f4"), valid_m("i8", cta_group=2)
        ((64, 128), (128,), (128, 256))
    """
    kinds = sorted({shape.kind for shape in MMA_SHAPES})
    if kind not in kinds:
        raise ValueError(f"unknown tcgen05.mma kind {kind!r}; expected one of {kinds}")
    check_cta_group(cta_group)
    return tuple(shape.m for shape in MMA_SHAPES if shape.kind == kind and shape.cta_group == cta_group)


def check_cta_group(cta_group) -> int:
    """``cta_group`` checked: 1 (the issuing CTA) or 2 (the CTA pair); ``ValueError`` naming it otherwise.

    Example:
        >>> check_cta_group(2)
        2
        >>> check_cta_group(4)
        Traceback (most recent call last):
        ...
        ValueError: cta_group is 1 (one CTA) or 2 (a CTA pair), got 4
    """
    if isinstance(cta_group, bool) or cta_group not in CTA_GROUPS:
        raise ValueError(f"cta_group is 1 (one CTA) or 2 (a CTA pair), got {cta_group!r}")
    return int(cta_group)


def mma_shape(kind: str, m: int, cta_group: int = 1) -> MmaShape:
    """The record of :data:`MMA_SHAPES` for ``kind``, M and ``cta_group``; ``ValueError`` naming the M values the
    kind takes otherwise.

    Example:
        >>> mma_shape("tf32", 128).k
        8
        >>> mma_shape("mxf8f6f4", 64)
        Traceback (most recent call last):
        ...
        ValueError: kind mxf8f6f4 with cta_group::1 takes M in (128,), got M=64
        >>> mma_shape("f16", 64, cta_group=2)
        Traceback (most recent call last):
        ...
        ValueError: kind f16 with cta_group::2 takes M in (128, 256), got M=64
    """
    ms = valid_m(kind, cta_group)
    if not ms:
        raise ValueError(f"kind {kind} has no cta_group::{cta_group} shape; it takes cta_group::1")
    if m not in ms:
        raise ValueError(f"kind {kind} with cta_group::{cta_group} takes M in {ms}, got M={m}")
    return next(s for s in MMA_SHAPES if (s.kind, s.m, s.cta_group) == (kind, m, cta_group))


def valid_n(kind: str, m: int, cta_group: int = 1) -> tuple[int, ...]:
    """The N values the ISA's "Matrix shape" table allows for ``kind``, M and ``cta_group``: those of its record in
    :data:`MMA_SHAPES` (:func:`mma_shape`).

    Example:
        >>> valid_n("i8", 128)[:6], len(valid_n("f16", 64))
        ((8, 16, 24, 32, 48, 64), 32)
    """
    return mma_shape(kind, m, cta_group).n.values


def k_per_instruction(dtype) -> int:
    """Elements of K one MMA consumes: 32 bytes of each operand row.

    Example:
        >>> k_per_instruction("bfloat16"), k_per_instruction("float32"), k_per_instruction("float8_e4m3fn")
        (16, 8, 32)
    """
    return K_BYTES_PER_INSTRUCTION // dtype_bytes(dtype)


def mn_major_refusal(operand: str, dtype) -> str:
    """The message refusing an MN-major ``operand`` of ``dtype`` on ``tcgen05.mma`` (one wording for every caller).

    Example:
        >>> mn_major_refusal("A", "float6_e2m3fn")[:40]
        'A is float6_e2m3fn: the ISA reads only ['
    """
    return f"{operand} is {dtype}: the ISA reads only {sorted(MN_MAJOR_DTYPES)} MN-major"


def mma_kind(a_dtype, b_dtype, block_scaled: bool = False) -> str:
    """The kind that multiplies A and B of these dtypes: the one whose operand types hold both (for 8-bit floats
    ``f8f6f4``, or ``mxf8f6f4`` when ``block_scaled``). ``ValueError`` listing every kind's types otherwise.

    Example:
        >>> mma_kind("bfloat16", "bfloat16"), mma_kind("float8_e4m3fn", "float8_e5m2", block_scaled=True)
        ('f16', 'mxf8f6f4')
    """
    a_dtype, b_dtype = str(a_dtype), str(b_dtype)
    kinds = [k for k, codes in OPERAND_CODES.items() if a_dtype in codes and b_dtype in codes]
    kinds = [k for k in kinds if k.startswith("mx") == block_scaled]
    if len(kinds) != 1:
        scaled = " with scale factors" if block_scaled else ""
        raise ValueError(
            f"no tcgen05.mma kind multiplies A {a_dtype} by B {b_dtype}{scaled}; the kinds take "
            + "; ".join(f"{k}: {', '.join(sorted(codes))}" for k, codes in OPERAND_CODES.items())
        )
    return kinds[0]


@dataclass(frozen=True)
class MmaInstruction:
    """One ``tcgen05.mma.cta_group::<cta_group>`` as its instruction descriptor describes it; every field is checked
    against the ISA on construction. ``a_major``/``b_major`` are "K" or "MN"; ``saturate`` is for ``i8`` only;
    ``scale_a_id``/``scale_b_id`` (0..3, ``mxf8f6f4`` only) pick the byte of the TMEM scale-factor cell. With
    ``cta_group=2`` M and N are the CTA pair's (:class:`PairMma` says what each CTA holds).

    Example:
        >>> MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128).k
        16
        >>> MmaInstruction("f16", "bfloat16", "bfloat16", "float16", m=128, n=128)
        Traceback (most recent call last):
        ...
        ValueError: kind f16: a float16 accumulator needs float16 A and B, got A bfloat16, B bfloat16
        >>> MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=256, n=8, cta_group=2)
        Traceback (most recent call last):
        ...
        ValueError: kind f16 with M=256 and cta_group::2 takes N in 16..256 step 16, got N=8
    """

    kind: str
    a_dtype: str
    b_dtype: str
    d_dtype: str
    m: int
    n: int
    a_major: str = "K"
    b_major: str = "K"
    negate_a: bool = False
    negate_b: bool = False
    saturate: bool = False
    scale_a_id: int = 0
    scale_b_id: int = 0
    cta_group: int = 1

    def __post_init__(self) -> None:
        kind = self.kind
        if kind not in OPERAND_CODES:
            raise ValueError(f"unknown tcgen05.mma kind {kind!r}; expected one of {sorted(OPERAND_CODES)}")
        for name in ("a_dtype", "b_dtype", "d_dtype"):
            object.__setattr__(self, name, str(getattr(self, name)))
        for side, dtype in (("A", self.a_dtype), ("B", self.b_dtype)):
            if dtype not in OPERAND_CODES[kind]:
                raise ValueError(f"kind {kind}: {side} must be one of {sorted(OPERAND_CODES[kind])}, got {dtype}")
        if self.d_dtype not in ACCUMULATOR_CODES[kind]:
            raise ValueError(
                f"kind {kind}: the accumulator must be one of {sorted(ACCUMULATOR_CODES[kind])}, got {self.d_dtype}"
            )
        if kind == "f16" and self.a_dtype != self.b_dtype:
            # The ISA's kind::f16 rows (Matrix Shape table, instruction descriptor) name A/B as f16 or bf16 and list
            # no mixed pair, unlike kind::f8f6f4 and kind::i8 whose mixed pairs are documented: refuse it.
            raise ValueError(
                f"kind f16 multiplies float16 x float16 or bfloat16 x bfloat16; the ISA lists no mixed pair, got A "
                f"{self.a_dtype}, B {self.b_dtype}"
            )
        if kind == "f16" and self.d_dtype == "float16" and (self.a_dtype, self.b_dtype) != ("float16", "float16"):
            raise ValueError(
                f"kind f16: a float16 accumulator needs float16 A and B, got A {self.a_dtype}, B {self.b_dtype}"
            )
        m, n = static_int(self.m, "M"), static_int(self.n, "N")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "n", n)
        group = check_cta_group(self.cta_group)
        shape = mma_shape(kind, m, group)
        if n not in shape.n:
            pair = f" and cta_group::{group}" if group == 2 else ""
            raise ValueError(f"kind {kind} with M={m}{pair} takes N in {shape.n}, got N={n}")
        for side, major, dtype in (("A", self.a_major, self.a_dtype), ("B", self.b_major, self.b_dtype)):
            if major not in MAJORS:
                raise ValueError(f"{side}'s majorness must be 'K' or 'MN', got {major!r}")
            if major == "MN" and dtype not in MN_MAJOR_DTYPES:
                raise ValueError(mn_major_refusal(side, dtype))
        # ISA, "Shared memory layout and swizzling": an MN-major 8-bit B takes N in steps of 16 with cta_group::1,
        # of 32 with cta_group::2 (each CTA's half of B is then whole 16-row steps)
        b_step = 16 * group
        if self.b_major == "MN" and dtype_bytes(self.b_dtype) == 1 and n % b_step:
            raise ValueError(f"an MN-major 8-bit B needs N a multiple of {b_step}, got N={n}")
        for flag in ("negate_a", "negate_b", "saturate"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        if kind == "i8" and (self.negate_a or self.negate_b):
            raise ValueError("kind i8 cannot negate A or B")
        if self.saturate and kind != "i8":
            raise ValueError(f"saturate is for kind i8 only, got kind {kind}")
        for name in ("scale_a_id", "scale_b_id"):
            value = static_int(getattr(self, name), name)
            if kind == "mxf8f6f4" and not 0 <= value <= 3:
                raise ValueError(f"{name} must be in 0..3 (the byte of the 32-bit scale cell), got {value}")
            if kind != "mxf8f6f4" and value:
                raise ValueError(f"{name} is for block-scaled kinds only, got {value} with kind {kind}")

    @property
    def k(self) -> int:
        """K of one instruction, its shape record's (32 bytes of A per row; 6- and 4-bit types in 8-bit containers).

        Example:
            >>> MmaInstruction("tf32", "float32", "float32", "float32", m=64, n=8).k
            8
        """
        return mma_shape(self.kind, self.m, self.cta_group).k


def instruction_descriptor(instruction: MmaInstruction) -> int:
    """The 32-bit instruction descriptor of ``instruction`` (ISA "Instruction descriptor", the table for
    f16/tf32/f8f6f4/i8 and the one for mxf8f6f4): D type at 4-5 (scale-B id for mxf8f6f4), A/B types at 7-9 and
    10-12, negation at 13-14, transposition (MN-major) at 15-16, N >> 3 at 17-22, M >> 4 at 24-28 (the block-scaled
    table's M >> 7 at 27-28 is the same bits), saturate at 3, scale type at 23 and scale-A id at 29-30 for mxf8f6f4.
    No field names ``cta_group`` (it is the instruction's qualifier): a pair MMA's M and N are the pair's, so M = 256
    sets bit 28.

    Example:
        >>> hex(instruction_descriptor(MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128)))
        '0x8200490'
        >>> hex(instruction_descriptor(MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=256, n=256,
        ...                                           cta_group=2)))
        '0x10400490'
    """
    if not isinstance(instruction, MmaInstruction):
        raise TypeError(f"instruction_descriptor takes an MmaInstruction, got {instruction!r}")
    i = instruction
    codes = OPERAND_CODES[i.kind]
    bits = codes[i.a_dtype] << 7 | codes[i.b_dtype] << 10
    bits |= int(i.negate_a) << 13 | int(i.negate_b) << 14
    bits |= int(i.a_major == "MN") << 15 | int(i.b_major == "MN") << 16
    bits |= (i.n >> 3) << 17 | (i.m >> 4) << 24
    if i.kind == "mxf8f6f4":
        bits |= i.scale_b_id << 4 | 1 << 23 | i.scale_a_id << 29
    else:
        bits |= ACCUMULATOR_CODES[i.kind][i.d_dtype] << 4 | int(i.saturate) << 3
    return bits


#: The datapath layout ("Data path layout organization") each CTA of a pair holds its half of D in, by the pair's
#: M: M = 256 is Layout A (each CTA's 128 rows on its 128 lanes), M = 128 is Layout B (each CTA's 64 rows on lanes
#: 0-63 for the first N/2 columns and on lanes 64-127 for the last N/2).
PAIR_DATAPATH = {256: "A", 128: "B"}


@dataclass(frozen=True)
class PairMma:
    """What each CTA of a ``cta_group::2`` pair holds of one ``m x n`` MMA (the pair's M and N, checked against
    the shape table for ``kind``): CTA ``rank % 2`` = ``r`` holds rows ``r*m/2 ..`` of A and of D (its half of D
    in its own TMEM, :data:`PAIR_DATAPATH`), and rows ``r*n/2 ..`` of B (B's N rows; ISA: "each CTA provides half
    of B"), each in its own shared memory at the offsets the issuing CTA's descriptors name. The even CTA of the
    pair (``leader_rank``) issues; both allocate TMEM with ``cta_group::2``.

    Example:
        >>> pair = PairMma("f16", m=256, n=128)
        >>> (pair.a_rows, pair.b_rows, pair.d_rows, pair.datapath), pair.a_row_of(1, 5), pair.b_row_of(1, 5)
        ((128, 64, 128, 'A'), 133, 69)
        >>> PairMma("i8", m=256, n=48)
        Traceback (most recent call last):
        ...
        ValueError: kind i8 with M=256 and cta_group::2 takes N in 32..256 step 32, got N=48
    """

    kind: str
    m: int
    n: int

    def __post_init__(self) -> None:
        m, n = static_int(self.m, "M"), static_int(self.n, "N")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "n", n)
        shape = mma_shape(self.kind, m, cta_group=2)
        if n not in shape.n:
            raise ValueError(f"kind {self.kind} with M={m} and cta_group::2 takes N in {shape.n}, got N={n}")

    @property
    def a_rows(self) -> int:
        """Rows of A each CTA holds."""
        return self.m // 2

    @property
    def b_rows(self) -> int:
        """Rows of B (N) each CTA holds."""
        return self.n // 2

    @property
    def d_rows(self) -> int:
        """Rows of D each CTA's TMEM holds (all N columns of them)."""
        return self.m // 2

    @property
    def datapath(self) -> str:
        """The letter of the datapath layout each CTA holds D in."""
        return PAIR_DATAPATH[self.m]

    def a_row_of(self, rank: int, row: int) -> int:
        """The pair's row of A (and of D) that row ``row`` of CTA ``rank``'s half is."""
        return (rank % 2) * self.a_rows + row

    def b_row_of(self, rank: int, row: int) -> int:
        """The pair's row of B (column of D) that row ``row`` of CTA ``rank``'s half of B is."""
        return (rank % 2) * self.b_rows + row


def leader_rank(rank: int) -> int:
    """The rank in the cluster of the CTA that issues a pair MMA for the CTA of cluster rank ``rank``: the even one
    of the pair (ISA: the pair is the CTAs whose ranks differ in bit 0; the peer of rank r is ``r ^ 1``).

    Example:
        >>> leader_rank(0), leader_rank(1), leader_rank(3)
        (0, 0, 2)
    """
    rank = static_int(rank, "rank")
    if rank < 0:
        raise ValueError(f"a cluster rank is non-negative, got {rank}")
    return rank & ~1


def pair_cta_mask(rank: int) -> int:
    """The ``ctaMask`` of ``tcgen05.commit ... .multicast::cluster`` that arrives on the mbarrier at the same shared
    offset in both CTAs of ``rank``'s pair (bit i: the CTA of cluster rank i).

    Example:
        >>> bin(pair_cta_mask(0)), bin(pair_cta_mask(3))
        ('0b11', '0b1100')
    """
    return 0b11 << leader_rank(rank)
