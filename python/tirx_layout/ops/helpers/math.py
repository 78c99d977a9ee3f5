"""The ``math`` helpers: single floating-point instructions that CUDA C++ has no spelling for (or spells through
several), named ``tirx_layout_math_<what>`` through ``tirx_layout.ir.device_calls``; each is an expression (a
value), and the simulator (``sim/packed_math.py``) executes a call from its name and arguments alone.

* ``ex2_approx(x)``: ``ex2.approx.ftz.f32`` -- one MUFU.EX2, float32 -> float32 (subnormal inputs and results
  flushed to zero);
* ``add_f32x2(a, b)``, ``mul_f32x2(a, b)``, ``fma_f32x2(a, b, c)``: ``add.rn.f32x2`` / ``mul.rn.f32x2`` /
  ``fma.rn.f32x2`` -- two float32 lanes in one 64-bit register, round to nearest even, subnormals kept (no
  ``.ftz``). ptxas accepts them for sm_100 and later ("Feature 'add.f32x2' requires .target sm_100 or higher").
* ``cvt_pack(hi, lo, dtype)``: two float32 to one packed word -- ``cvt.rn.bf16x2.f32`` / ``cvt.rn.f16x2.f32``
  (sm_80+) into a ``uint32``, ``cvt.rn.satfinite.e4m3x2.f32`` / ``e5m2x2`` (sm_89+) into a ``uint16``. The ISA puts
  the conversion of the *first* source operand in the *upper* half, so ``hi`` is that operand: the word's upper
  half (upper byte) is ``hi``, its lower half ``lo``; stored little-endian, ``lo`` is the element at the lower
  address.

The helper ABI for a float32x2 value is TVM's ``float32x2`` dtype, which CUDA code generation prints as ``float2``
(``.x`` is lane 0); a helper packs it into a ``.b64`` register with ``mov.b64 d, {x, y}`` (the first element is the
least significant, the ISA's ``a[0:31]``) and unpacks its result the same way, so lane ``i`` of every operand is
``fA[i]`` of the ISA's definition.
"""

from __future__ import annotations

from ...ir.device_calls import helper_name, helper_value

FAMILY = "math"

#: The packed-f32x2 operations: name -> (PTX mnemonic, number of operands).
F32X2_OPS = {"add_f32x2": ("add.rn.f32x2", 2), "mul_f32x2": ("mul.rn.f32x2", 2), "fma_f32x2": ("fma.rn.f32x2", 3)}

#: The packing conversions: element dtype -> (helper name, PTX instruction, result dtype, C type, asm constraint).
CVT_PACKS = {
    "bfloat16": ("cvt_pack_bf16x2", "cvt.rn.bf16x2.f32", "uint32", "unsigned int", "r"),
    "float16": ("cvt_pack_f16x2", "cvt.rn.f16x2.f32", "uint32", "unsigned int", "r"),
    "float8_e4m3fn": ("cvt_pack_e4m3x2", "cvt.rn.satfinite.e4m3x2.f32", "uint16", "unsigned short", "h"),
    "float8_e5m2": ("cvt_pack_e5m2x2", "cvt.rn.satfinite.e5m2x2.f32", "uint16", "unsigned short", "h"),
}

_EX2_SOURCE = f"""
__device__ __forceinline__ float {helper_name(FAMILY, "ex2_approx")}(float x) {{
  // PTX ISA, ex2: 2^x approximately, one MUFU.EX2; .ftz flushes subnormal inputs and results to zero.
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}}
"""


def _f32x2_source(what: str) -> str:
    mnemonic, count = F32X2_OPS[what]
    names = "abc"[:count]
    params = ", ".join(f"float2 {n}" for n in names)
    regs = ", ".join(f"r{n}" for n in names)
    packs = "".join(f"\\n mov.b64 r{n}, {{%{2 + 2 * i}, %{3 + 2 * i}}};" for i, n in enumerate(names))
    inputs = ", ".join(f'"f"({n}.x), "f"({n}.y)' for n in names)
    return f"""
__device__ __forceinline__ float2 {helper_name(FAMILY, what)}({params}) {{
  // PTX ISA, {mnemonic.split(".")[0]}: .f32x2 operates on two .f32 lanes of .b64 registers (lane 0 in bits 0..31,
  // which mov.b64 fills from its first element: float2's .x).
  float2 d;
  asm("{{\\n .reg .b64 rd, {regs};{packs}\\n {mnemonic} rd, {regs};\\n mov.b64 {{%0, %1}}, rd;\\n}}"
      : "=f"(d.x), "=f"(d.y) : {inputs});
  return d;
}}
"""


def _cvt_pack_source(dtype: str) -> str:
    what, instruction, _, c_type, constraint = CVT_PACKS[dtype]
    return f"""
__device__ __forceinline__ {c_type} {helper_name(FAMILY, what)}(float hi, float lo) {{
  // PTX ISA, cvt: the value converted from the first source lands in the upper half of the destination.
  {c_type} packed;
  asm("{instruction} %0, %1, %2;" : "={constraint}"(packed) : "f"(hi), "f"(lo));
  return packed;
}}
"""


def _dtype(value) -> str:
    return str(value.ty.dtype)


def _require(value, dtype: str, what: str, operand: str) -> None:
    if _dtype(value) != dtype:
        raise ValueError(f"{what} takes {dtype} operands; {operand} is {_dtype(value)} ({value})")


def ex2_approx(x):
    """``2^x`` by ``ex2.approx.ftz.f32`` (one MUFU.EX2): a ``float32`` value from a ``float32`` ``x``. The PTX ISA
    bounds its relative error near 2^-22; subnormal inputs and results are flushed to zero.

    Example:
        >>> import tvm
        >>> call = ex2_approx(tvm.tirx.const(1.5, "float32"))
        >>> str(call.ty.dtype), str(call.args[0].value)
        ('float32', 'tirx_layout_math_ex2_approx')
    """
    _require(x, "float32", "ex2_approx", "x")
    return helper_value(FAMILY, "ex2_approx", _EX2_SOURCE, "float32", x)


def _f32x2(what: str, *operands):
    for name, operand in zip("abc", operands, strict=False):
        _require(operand, "float32x2", what, name)
    return helper_value(FAMILY, what, _f32x2_source(what), "float32x2", *operands)


def add_f32x2(a, b):
    """``add.rn.f32x2``: the lane-wise sum of two ``float32x2`` values (TVM prints them as ``float2``), rounded to
    nearest even; sm_100a.

    Example:
        >>> import tvm
        >>> a = tvm.tirx.Broadcast(tvm.tirx.const(1.0, "float32"), 2)
        >>> str(add_f32x2(a, a).ty.dtype)
        'float32x2'
    """
    return _f32x2("add_f32x2", a, b)


def mul_f32x2(a, b):
    """``mul.rn.f32x2``: the lane-wise product of two ``float32x2`` values, rounded to nearest even; sm_100a.

    Example:
        >>> import tvm
        >>> a = tvm.tirx.Broadcast(tvm.tirx.const(3.0, "float32"), 2)
        >>> str(mul_f32x2(a, a).args[0].value)
        'tirx_layout_math_mul_f32x2'
    """
    return _f32x2("mul_f32x2", a, b)


def fma_f32x2(a, b, c):
    """``fma.rn.f32x2``: ``a * b + c`` lane-wise on ``float32x2`` values with one rounding (to nearest even);
    sm_100a.

    Example:
        >>> import tvm
        >>> a = tvm.tirx.Broadcast(tvm.tirx.const(2.0, "float32"), 2)
        >>> len(fma_f32x2(a, a, a).args)  # the name, three operands, the source
        5
    """
    return _f32x2("fma_f32x2", a, b, c)


def cvt_pack(hi, lo, dtype: str):
    """Two ``float32`` values converted to ``dtype`` and packed in one word, ``hi`` in the upper half: a ``uint32``
    for ``"bfloat16"`` / ``"float16"`` (``cvt.rn.bf16x2.f32`` / ``cvt.rn.f16x2.f32``, round to nearest even,
    overflow to infinity), a ``uint16`` for ``"float8_e4m3fn"`` / ``"float8_e5m2"`` (``cvt.rn.satfinite.e4m3x2.f32``
    / ``e5m2x2``: round to nearest even, saturate to the largest finite value, NaN stays NaN). Stored to memory, the
    word holds ``lo`` at the lower address; the caller reinterprets or stores it.

    Example:
        >>> import tvm
        >>> one = tvm.tirx.const(1.0, "float32")
        >>> str(cvt_pack(one, one, "bfloat16").ty.dtype), str(cvt_pack(one, one, "float8_e4m3fn").ty.dtype)
        ('uint32', 'uint16')
    """
    if dtype not in CVT_PACKS:
        raise ValueError(f"cvt_pack packs {list(CVT_PACKS)}, not {dtype!r}")
    _require(hi, "float32", "cvt_pack", "hi")
    _require(lo, "float32", "cvt_pack", "lo")
    what, _, result, _, _ = CVT_PACKS[dtype]
    return helper_value(FAMILY, what, _cvt_pack_source(dtype), result, hi, lo)


__all__ = ["CVT_PACKS", "F32X2_OPS", "FAMILY", "add_f32x2", "cvt_pack", "ex2_approx", "fma_f32x2", "mul_f32x2"]
