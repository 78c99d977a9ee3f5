"""Type conversions (TIR ``Cast``) as CUDA code generation prints them and the GPU executes them.

* float -> narrower float (``(nv_bfloat16)x``, ``(half)x``, ``(float)d``): round to nearest even; overflow gives
  infinity (``cvt.rn``).
* float -> 8-bit (or narrower) float: TVM prints the ``__nv_fp8_e4m3`` / ``__nv_fp8_e5m2`` (``__nv_fp4_e2m1``, ...)
  constructors, which convert with ``__NV_SATFINITE``: round to nearest even, a finite value beyond the largest
  finite one and an infinity become that largest value of their sign, NaN stays NaN (``cvt.rn.satfinite``).
* float -> integer (``(int)x``): C truncates toward zero; nvcc emits ``cvt.rzi.s32.f32`` (``.u32`` for unsigned,
  ``.s64``/``.u64`` for 64-bit targets), which saturates: an out-of-range value becomes the 32-bit (64-bit) type's
  extreme, NaN becomes 0. A narrower target (``(signed char)x``) takes the low bits of that 32-bit result.
* integer -> integer: two's complement, a narrowing keeps the low bits (wraps); integer -> float rounds to nearest
  even; anything -> ``bool`` is "not zero".

Example:
    >>> import numpy as np
    >>> convert(np.float32([500.0, -np.inf, np.nan]), "float32", "float8_e4m3fn").astype(np.float32).tolist()
    [448.0, -448.0, nan]
    >>> convert(np.float32([2.9, -2.9, 3e9, np.nan]), "float32", "int32").tolist()
    [2, -2, 2147483647, 0]
    >>> convert(np.float32([300.7]), "float32", "int8").tolist()  # cvt.rzi.s32.f32 gives 300, the low byte 44
    [44]
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .dtypes import numpy_dtype
from .memory import SimulationError

__all__ = ["convert"]


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name.startswith(("float", "bfloat"))


def _saturate_finite(values: np.ndarray, target: np.dtype) -> np.ndarray:
    largest = float(ml_dtypes.finfo(target).max)
    wide = np.asarray(values).astype(np.float64)
    return np.where(np.isnan(wide), wide, np.clip(wide, -largest, largest))


def _float_to_integer(values: np.ndarray, target: np.dtype) -> np.ndarray:
    wide = np.asarray(values).astype(np.float64)
    signed = target.kind == "i"
    bits = 64 if target.itemsize == 8 else 32  # cvt.rzi.{s,u}{32,64}.f32: the register nvcc converts into
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    register = np.dtype(f"{'int' if signed else 'uint'}{bits}")
    truncated = np.trunc(np.where(np.isnan(wide), 0.0, wide))
    above = truncated >= float(high)  # 2^63 - 1 and 2^64 - 1 are no float64: compare, then place them exactly
    inside = np.where(above, 0.0, np.maximum(truncated, low)).astype(np.int64 if signed else np.uint64)
    result = np.where(above, np.asarray(high, register), inside.astype(register))
    return result.astype(register).astype(target)  # a narrower target keeps the low bits


def convert(values, source: str, target: str) -> np.ndarray:
    """``values`` of TVM type ``source`` converted to TVM type ``target`` (lanes ignored) as the GPU converts
    them; see the module docstring.

    Example:
        >>> convert(np.int32([300, -1]), "int32", "uint8").tolist()
        [44, 255]
    """
    source_type, target_type = numpy_dtype(source), numpy_dtype(target)
    values = np.asarray(values)
    if target_type == np.bool_:
        return values != 0
    with np.errstate(all="ignore"):
        if _is_float(target_type):
            if target_type.itemsize == 1:  # the __nv_fp8_* (and fp6/fp4) constructors: __NV_SATFINITE
                return _saturate_finite(values, target_type).astype(target_type)
            return (
                values.astype(target_type) if _is_float(source_type) else values.astype(np.float64).astype(target_type)
            )
        if target_type.kind not in "iu":
            raise SimulationError(f"the simulator does not convert {source} to {target}")
        if _is_float(source_type):
            return _float_to_integer(values, target_type)
        return values.astype(target_type)
