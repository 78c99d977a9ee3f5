"""The numpy type the simulator keeps each TVM dtype's elements in (one numpy item per element, whatever its
width: the simulator addresses elements, never bytes)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

from .memory import SimulationError

__all__ = ["numpy_dtype"]

# Sub-byte and 8-bit float types come from ml_dtypes (TVM's own dependency); the simulator keeps one element per
# numpy item whatever its width, since it addresses elements, never bytes.
_NUMPY_DTYPES = {
    "bool": np.bool_,
    "int2": ml_dtypes.int2,
    "int4": ml_dtypes.int4,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint2": ml_dtypes.uint2,
    "uint4": ml_dtypes.uint4,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float8_e3m4": ml_dtypes.float8_e3m4,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}

_LANES = re.compile(r"x\d+$")  # a vector dtype's lane count: "float16x8", "float8_e4m3fnx16"


def numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype of a TVM scalar dtype (vector lanes ignored).

    Example:
        >>> numpy_dtype("bfloat16"), numpy_dtype("float8_e4m3fnx16"), numpy_dtype("uint4")
        (dtype(bfloat16), dtype(float8_e4m3fn), dtype(uint4))
    """
    name = _LANES.sub("", str(dtype))
    if name not in _NUMPY_DTYPES:
        raise SimulationError(f"the simulator has no numpy type for dtype {dtype}")
    return np.dtype(_NUMPY_DTYPES[name])
