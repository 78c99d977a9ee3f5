"""Facts about GPU memories, as data: element sizes, shared-memory banks, the vector widths of one access, and the
hardware swizzle modes (what TMA, the MMA descriptors and ``tcgen05.cp`` call "none/32B/64B/128B") as
``SwizzleLayout`` parameters."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import tvm

from ..layout.swizzle import SwizzleLayout

#: Shared memory: 32 banks of 4-byte words (NVIDIA, every architecture since Kepler's 4-byte mode).
BANKS = 32
WORD_BYTES = 4
#: Bytes one thread moves in one vector access, widest first.
VECTOR_BYTES = (16, 8, 4)
#: The hardware swizzle modes, in the order of their ``swizzle_len`` (none = 0 ... 128B = 3).
SWIZZLE_MODES = ("none", "32B", "64B", "128B")
#: Width of one swizzle row in bytes (16 without a swizzle: one 16-byte chunk); 8 such rows make the repeat.
SWIZZLE_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
#: Hardware swizzles keep 16-byte chunks whole and XOR 8 rows: ``atom_len`` 3 over 16-byte units.
SWIZZLE_CHUNK_BYTES = 16
SWIZZLE_ATOM_LEN = 3


def bank_of(byte_address):
    """The shared-memory bank of a byte address (an int or an integer numpy array).

    Example:
        >>> import numpy as np
        >>> bank_of(4 * 33), bank_of(np.array([0, 6, 128])).tolist()
        (1, [0, 1, 0])
    """
    return byte_address // WORD_BYTES % BANKS


def dtype_bytes(dtype) -> int:
    """Bytes per element of ``dtype``; ``ValueError`` for sub-byte or unknown types.

    Example:
        >>> dtype_bytes("float16"), dtype_bytes("uint8")
        (2, 1)
    """
    try:
        bits = tvm.runtime.DataType(str(dtype)).bits
    except Exception as err:  # TVM raises its own error type for unknown names
        raise ValueError(f"unknown dtype {dtype!r}") from err
    if bits < 8 or bits % 8:
        raise ValueError(f"dtype {dtype!r} has {bits} bits; a layout addresses whole bytes")
    return bits // 8


def operand_kind(kinds, a_dtype, b_dtype, instruction: str) -> str:
    """The kind of an MMA ``instruction`` whose operand table ``kinds`` (``{kind: element types}``) has both A's and
    B's element types; ``ValueError`` listing every kind's types otherwise (one rule and one wording for the MMA
    families, each with its own table).

    Example:
        >>> operand_kind({"f16": ("float16",), "int8": ("int8", "uint8")}, "uint8", "int8", "mma")
        'int8'
        >>> operand_kind({"f16": ("float16",)}, "float16", "int8", "mma")
        Traceback (most recent call last):
        ...
        ValueError: no mma kind multiplies A float16 by B int8; the kinds take f16: float16
    """
    a_dtype, b_dtype = str(a_dtype), str(b_dtype)
    for kind, dtypes in kinds.items():
        if a_dtype in dtypes and b_dtype in dtypes:
            return kind
    raise ValueError(
        f"no {instruction} kind multiplies A {a_dtype} by B {b_dtype}; the kinds take "
        + "; ".join(f"{kind}: {', '.join(dtypes)}" for kind, dtypes in kinds.items())
    )


def holds(dtype, value) -> bool:
    """Whether a ``dtype`` element holds the number ``value``: an integer type an integer in its range, a
    floating-point type a value in its finite range (which it stores rounded to the nearest value it has), an infinity
    or a NaN where it has them (``float8_e4m3fn`` has no infinity).

    Example:
        >>> holds("int8", 127), holds("int8", 128), holds("uint8", -1), holds("int32", 2.5)
        (True, False, False, False)
        >>> holds("float16", 65504.0), holds("float16", 1e6), holds("bfloat16", 1e30), holds("float8_e4m3fn", 500.0)
        (True, False, True, False)
        >>> holds("float32", float("-inf")), holds("float8_e4m3fn", float("inf"))
        (True, False)
    """
    dtype = str(dtype)
    if dtype == "bool":
        return value in (0, 1)
    element = np.dtype(getattr(ml_dtypes, dtype, dtype))
    if np.issubdtype(element, np.integer):
        info = np.iinfo(element)
        return float(value).is_integer() and info.min <= value <= info.max
    value = float(value)
    with np.errstate(over="ignore", invalid="ignore"):  # a value out of range is what is asked about
        stored = float(np.array([value]).astype(element)[0])
    if math.isnan(value) or math.isinf(value):
        return math.isnan(stored) if math.isnan(value) else stored == value
    return math.isfinite(stored) and abs(value) <= float(ml_dtypes.finfo(element).max)


def _per_element(dtype) -> int:
    """log2 of the elements in one 16-byte chunk: the ``per_element`` of every hardware swizzle of ``dtype``."""
    size = dtype_bytes(dtype)
    if size > SWIZZLE_CHUNK_BYTES:
        raise ValueError(f"dtype {dtype!r} is wider than a 16-byte swizzle chunk")
    return (SWIZZLE_CHUNK_BYTES // size).bit_length() - 1


def swizzle_for_mode(mode: str, dtype) -> SwizzleLayout | None:
    """The ``SwizzleLayout`` that hardware swizzle ``mode`` applies to ``dtype`` element addresses (``None`` for
    "none"): 16-byte chunks kept whole, the mode's ``swizzle_len`` row bits XOR-ed in, atom length 3.

    Example:
        >>> swizzle_for_mode("128B", "float16"), swizzle_for_mode("32B", "float32")
        (SwizzleLayout(3, 3, 3), SwizzleLayout(2, 1, 3))
    """
    if not isinstance(mode, str) or mode not in SWIZZLE_MODES:
        raise ValueError(f"unknown swizzle mode {mode!r}; expected one of {SWIZZLE_MODES}")
    if mode == "none":
        return None
    return SwizzleLayout(_per_element(dtype), SWIZZLE_MODES.index(mode), SWIZZLE_ATOM_LEN)


def mode_of_swizzle(swizzle: SwizzleLayout | None, dtype) -> str:
    """The hardware swizzle mode a ``SwizzleLayout`` of ``dtype`` elements is (the inverse of
    :func:`swizzle_for_mode`); ``ValueError`` when it is none of them.

    Example:
        >>> mode_of_swizzle(SwizzleLayout(3, 2, 3), "bfloat16")
        '64B'
    """
    if swizzle is not None and not isinstance(swizzle, SwizzleLayout):
        raise TypeError(f"mode_of_swizzle takes a SwizzleLayout or None, got {swizzle!r}")
    if swizzle is None or swizzle.swizzle_len == 0:
        return "none"
    per_element = _per_element(dtype)
    if (
        not swizzle.swizzle_inner
        or swizzle.atom_len != SWIZZLE_ATOM_LEN
        or swizzle.per_element != per_element
        or swizzle.swizzle_len >= len(SWIZZLE_MODES)
    ):
        raise ValueError(
            f"{swizzle!r} is no hardware swizzle mode for {dtype} (those are SwizzleLayout({per_element}, 1..3, 3))"
        )
    return SWIZZLE_MODES[swizzle.swizzle_len]


#: The MMA-only "128B swizzle with 32-byte atomicity" (shared-memory descriptor mode 1; the ISA lists it for MN-major
#: 32-bit operands): 32-byte chunks of a 128-byte row XOR-ed with the row index mod 4, repeating every 512 bytes
#: (CuTe's ``Swizzle<2,5,2>`` on byte addresses). Not one of ``SWIZZLE_MODES``: ``tcgen05.cp`` lacks it; TMA has it
#: since CUDA 12.8 as ``CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B`` (``hw/tma.py``).
SWIZZLE_128B_BASE32B = "128B_base32B"
#: Rows of its width after which each swizzle mode's XOR pattern repeats (the PTX ISA's "repeating pattern" of the
#: shared memory descriptor): 8, or 4 for the 128B swizzle with 32-byte atoms.
SWIZZLE_REPEAT_ROWS = {"32B": 8, "64B": 8, "128B": 8, SWIZZLE_128B_BASE32B: 4}

#: The register file of one thread: at most 255 32-bit registers (PTX ISA / CUDA programming guide, "maximum number
#: of 32-bit registers per thread"); a register fragment holds its slots there.
THREAD_REGISTERS = 255
REGISTER_BYTES = 4
THREAD_REGISTER_BYTES = THREAD_REGISTERS * REGISTER_BYTES


def swizzle_repeat_bytes(mode: str) -> int:
    """Bytes after which swizzle ``mode``'s XOR pattern repeats (0 for "none"). The hardware (an MMA's or
    ``tcgen05.cp``'s shared memory descriptor) applies the swizzle to absolute shared addresses, so a buffer read in
    ``mode`` starts on a multiple of this, and a stage of it moves by whole repeats: the one alignment rule that
    inference proposes and the rules check.

    Example:
        >>> [swizzle_repeat_bytes(m) for m in ("none", "32B", "64B", "128B", "128B_base32B")]
        [0, 256, 512, 1024, 512]
    """
    if mode == "none":
        return 0
    if mode not in SWIZZLE_REPEAT_ROWS:
        raise ValueError(f"unknown swizzle mode {mode!r}; expected none, {', '.join(SWIZZLE_REPEAT_ROWS)}")
    return SWIZZLE_REPEAT_ROWS[mode] * (128 if mode == SWIZZLE_128B_BASE32B else SWIZZLE_BYTES[mode])


def check_register_file(name: str, slots: int, dtype) -> None:
    """``ValueError`` when a register fragment holding ``slots`` ``dtype`` elements per thread is larger than a
    thread's register file (:data:`THREAD_REGISTERS` 32-bit registers): it cannot live in registers, and would
    spill to local memory instead (and take minutes to assemble).

    Example:
        >>> check_register_file("frag", 1020, "uint8")  # 1020 bytes: fits
        >>> try:
        ...     check_register_file("frag", 2048, "uint8")
        ... except ValueError as err:
        ...     print(str(err)[:82])
        register fragment frag holds 2048 uint8 elements per thread, 2048 bytes per thread
    """
    nbytes = slots * dtype_bytes(dtype)
    if nbytes > THREAD_REGISTER_BYTES:
        raise ValueError(
            f"register fragment {name} holds {slots} {dtype} elements per thread, {nbytes} bytes per thread; a "
            f"thread's register file is {THREAD_REGISTERS} 32-bit registers ({THREAD_REGISTER_BYTES} bytes): spread "
            "the fragment over more threads (or fewer replicas), or keep the tile in shared memory"
        )


def swizzle_128b_base32b(dtype) -> SwizzleLayout:
    """The ``SwizzleLayout`` of the 128B-with-32B-atom swizzle over ``dtype`` element addresses.

    Example:
        >>> swizzle_128b_base32b("float32")
        SwizzleLayout(3, 2, 2)
    """
    size = dtype_bytes(dtype)
    if size > 32:
        raise ValueError(f"dtype {dtype!r} is wider than a 32-byte swizzle chunk")
    return SwizzleLayout((32 // size).bit_length() - 1, 2, 2)
