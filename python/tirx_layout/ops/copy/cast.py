"""The conversions a casting ``T.tile_copy`` makes (a copy between buffers of different dtypes): which pairs it
converts, with which rounding, and how one vector of them is written in TIR.

Every conversion is a ``T.Cast`` on the loaded vector; CUDA code generation prints it and nvcc makes the pair
instructions of it (``F2FP.BF16.F32.PACK_AB`` for two float32 -> bfloat16, ``F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C``
for two float32 -> e4m3; measured with nvdisasm, docs/decisions.md "Casting copies"). Two limits of that printing
are facts here: an 8-bit-float vector converts 4 lanes at a time (8 lanes print a conversion nvcc rejects), and an
8-bit float converts to a 16-bit or another 8-bit float through float32 (no direct vector conversion exists in
CUDA's headers; the first step is exact, so it still rounds once).

Rounding, per pair (:func:`conversion` says it in words; the op's docstring and docs/decisions.md repeat it):

* the same dtype: a copy;
* a float to a float that holds every value of it (16-bit or 8-bit floats to float32, 8-bit floats to float16 or
  bfloat16): exact;
* a float to a narrower 16-bit float (float32 -> bfloat16/float16, float16 <-> bfloat16): round to nearest even,
  past the largest finite value to infinity (PTX ``cvt.rn``);
* a float to an 8-bit float (e4m3 / e5m2): round to nearest even with saturation (PTX ``cvt.rn.satfinite``): past
  the largest finite value, and infinities, to it (448 for e4m3, 57344 for e5m2), NaN stays NaN;
* an integer to a narrower integer: its low bits (two's complement: 300 -> int8 is 44, -1 -> uint8 is 255);
  to a wider integer: sign-extended from a signed type, zero-extended from an unsigned one;
* an integer to a float: round to nearest even (exact up to 2^24 in float32).

A float to an integer is refused: C's conversion truncates toward zero and is undefined out of range, which is not
what a requantisation wants; round and clamp explicitly per element.

Example:
    >>> conversion("float32", "bfloat16")
    'round to nearest even (PTX cvt.rn), overflow to infinity'
    >>> cast_lanes("float32", "float8_e4m3fn", 16)
    4
"""

from __future__ import annotations

from tvm import tirx

from ...hw.memory import dtype_bytes

#: The floating-point dtypes a casting copy converts, by the number of bits of their significand (hidden bit
#: included) and of their exponent: a float converts exactly into one with at least as many of both.
FLOATS = {
    "float32": (24, 8),
    "float16": (11, 5),
    "bfloat16": (8, 8),
    "float8_e4m3fn": (4, 4),
    "float8_e5m2": (3, 5),
}
#: The integer dtypes a casting copy converts.
INTEGERS = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
#: The widest vector, in bytes, that TVM's CUDA code generation has a type for (``ulonglong4``): the wider side of a
#: casting copy moves at most this many bytes per step (two 16-byte instructions).
WIDEST_VECTOR_BYTES = 32
#: Lanes of one vector conversion from or to an 8-bit float that TVM prints as valid CUDA (``__nv_fp8x4_*``).
FP8_CAST_LANES = 4


def _is_fp8(dtype: str) -> bool:
    return dtype in FLOATS and dtype_bytes(dtype) == 1


def conversion(src: str, dst: str) -> str:
    """How a casting copy converts ``src`` elements to ``dst``, in words (see the module docstring); ``ValueError``
    naming both dtypes for a pair it does not convert.

    Example:
        >>> conversion("float32", "float8_e4m3fn")
        'round to nearest even, saturating (PTX cvt.rn.satfinite): beyond +-448 (infinities too) +-448, NaN stays NaN'
        >>> print(conversion("int32", "int8"))
        the low 8 bits (two's complement wrap-around)
    """
    if src == dst:
        return "a copy"
    if src in FLOATS and dst in FLOATS:
        (src_sig, src_exp), (dst_sig, dst_exp) = FLOATS[src], FLOATS[dst]
        if dst_sig >= src_sig and dst_exp >= src_exp:
            return "exact"
        if _is_fp8(dst):
            top = 448 if dst == "float8_e4m3fn" else 57344
            return (
                f"round to nearest even, saturating (PTX cvt.rn.satfinite): beyond +-{top} (infinities too) "
                f"+-{top}, NaN stays NaN"
            )
        return "round to nearest even (PTX cvt.rn), overflow to infinity"
    if src in INTEGERS and dst in INTEGERS:
        bits = 8 * dtype_bytes(dst)
        if dtype_bytes(dst) < dtype_bytes(src):
            return f"the low {bits} bits (two's complement wrap-around)"
        if dtype_bytes(dst) == dtype_bytes(src):
            return "the same bits, reinterpreted"
        return "sign-extended" if src.startswith("int") else "zero-extended"
    if src in INTEGERS and dst in FLOATS:
        return "round to nearest even (PTX cvt.rn)"
    if src in FLOATS and dst in INTEGERS:
        raise ValueError(
            f"a casting copy does not convert {src} to {dst}: C truncates toward zero and is undefined out of range; "
            f'round and clamp per element (T.Cast("{dst}", T.round(x)) after a clamp) instead of a copy'
        )
    known = ", ".join([*FLOATS, *INTEGERS])
    raise ValueError(f"a casting copy does not convert {src} to {dst}: it converts between {known}")


#: The widest 16-bit float vector TVM's CUDA code generation prints (``float16x16`` is refused: "Cannot convert
#: type T.float16x16 to CUDA type").
HALF_CAST_LANES = 8


def cast_lanes(src: str, dst: str, lanes: int) -> int:
    """How many of ``lanes`` elements one vector ``T.Cast`` from ``src`` to ``dst`` converts: all of them, 4 when
    an 8-bit float is involved (``FP8_CAST_LANES``), at most 8 when a 16-bit float is (``HALF_CAST_LANES``: a byte
    source would take 16); the plan of a casting copy picks its vector width under it.

    Example:
        >>> cast_lanes("float32", "bfloat16", 8), cast_lanes("float8_e5m2", "float32", 8)
        (8, 4)
        >>> cast_lanes("uint8", "float16", 16)
        8
    """
    if src == dst:
        return lanes
    if _is_fp8(src) or _is_fp8(dst):
        return min(lanes, FP8_CAST_LANES)
    if {src, dst} & {"float16", "bfloat16"}:
        return min(lanes, HALF_CAST_LANES)
    return lanes


def converted(value, src: str, dst: str, lanes: int):
    """``value`` (a scalar or a ``lanes``-vector of ``src``) converted to ``dst`` as :func:`conversion` says: one
    ``T.Cast``, through float32 from an 8-bit float to anything but float32 and from an integer to an 8-bit float
    (CUDA has no integer-vector to fp8-vector conversion). Both first steps are exact where it matters: an 8-bit float
    and an integer of up to 24 bits are float32 values, and an int32 beyond 2^24 saturates in either fp8 format.

    Example:
        >>> import tvm
        >>> x = tvm.tirx.Var("x", "float8_e4m3fn")
        >>> converted(x, "float8_e4m3fn", "bfloat16", 1)
        T.Cast("bfloat16", T.Cast("float32", x))
    """
    if src == dst:
        return value

    def typed(dtype: str) -> str:
        return dtype if lanes == 1 else f"{dtype}x{lanes}"

    conversion(src, dst)  # a pair it does not convert is refused here too
    if (_is_fp8(src) and dst != "float32") or (src in INTEGERS and _is_fp8(dst)):
        value = tirx.Cast(typed("float32"), value)
    return tirx.Cast(typed(dst), value)


__all__ = ["FLOATS", "HALF_CAST_LANES", "INTEGERS", "WIDEST_VECTOR_BYTES", "cast_lanes", "conversion", "converted"]
