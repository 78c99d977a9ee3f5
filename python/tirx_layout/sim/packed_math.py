"""The ``math`` helpers' executor (``ir/device_calls`` family ``math``, emitted by ``ops/helpers/math.py``), from
the PTX ISA:

* ``ex2_approx``: ``ex2.approx.ftz.f32`` (``math_functions.ex2_approx``: 2^x, subnormals flushed);
* ``add_f32x2`` / ``mul_f32x2`` / ``fma_f32x2``: ``add/mul/fma.rn.f32x2`` -- lane ``i`` of the result is
  ``fA[i] + fB[i]`` (``*``, ``fA[i] * fB[i] + fC[i]`` with one rounding), round to nearest even, subnormals kept;
  a ``float32x2`` value is a ``(threads, 2)`` array, lane 0 first (the ISA's ``a[0:31]``);
* ``cvt_pack_bf16x2`` / ``cvt_pack_f16x2``: ``cvt.rn.{bf16x2,f16x2}.f32 d, a, b`` -- ``a`` (the first operand,
  ``hi``) converted into the upper 16 bits of the ``uint32``, ``b`` into the lower, round to nearest even, overflow
  to infinity;
* ``cvt_pack_e4m3x2`` / ``cvt_pack_e5m2x2``: ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b`` -- the same order in a
  ``uint16``, with ``.satfinite``: beyond the largest finite value (and infinity) it saturates, NaN stays NaN.

Example:
    >>> HELPERS.knows("fma_f32x2"), HELPERS.knows("cvt_pack_e5m2x2"), HELPERS.knows("sub_f32x2")
    (True, True, False)
    >>> hex(int(pack([1.0], [-2.0], "bfloat16")[0]))  # bf16 1.0 is 0x3f80, -2.0 is 0xc000
    '0x3f80c000'
"""

from __future__ import annotations

import numpy as np

from .conversions import convert
from .dispatch import HelperTable
from .math_functions import ex2_approx, fma_rn

__all__ = ["HELPERS", "pack"]

_PACKS = {
    "cvt_pack_bf16x2": "bfloat16",
    "cvt_pack_f16x2": "float16",
    "cvt_pack_e4m3x2": "float8_e4m3fn",
    "cvt_pack_e5m2x2": "float8_e5m2",
}  # helper -> the element type it converts to
_WORDS = {16: np.uint32, 8: np.uint16}  # element bits -> the word two of them make


def pack(hi, lo, dtype: str) -> np.ndarray:
    """``hi`` and ``lo`` (float32) converted to ``dtype`` (RN; satfinite for the 8-bit types) and packed, ``hi`` in
    the upper half of each word.

    Example:
        >>> hex(int(pack([500.0], [np.nan], "float8_e4m3fn")[0]))  # 448 is 0x7e, NaN 0x7f
        '0x7e7f'
    """
    half = convert(np.float32(0), "float32", dtype).dtype.itemsize * 8
    word = _WORDS[half]

    def converted(values):
        return convert(np.asarray(values, np.float32), "float32", dtype).view(f"uint{half}").astype(word)

    return ((converted(hi) << word(half)) | converted(lo)).astype(word)


def _ex2(interp, args):
    return ex2_approx(interp.eval(args[0]))


def _lanewise(operation):
    def run(interp, args):
        values = [np.broadcast_to(interp.eval(a), (interp.count, 2)).astype(np.float32) for a in args]
        return operation(*values)

    return run


def _pack(dtype):
    return lambda interp, args: pack(interp.eval(args[0]), interp.eval(args[1]), dtype)


#: The math executor: every helper by name.
HELPERS = HelperTable(
    "math",
    {
        "ex2_approx": _ex2,
        "add_f32x2": _lanewise(lambda a, b: a + b),
        "mul_f32x2": _lanewise(lambda a, b: a * b),
        "fma_f32x2": _lanewise(lambda a, b, c: fma_rn(a, b, c)),
        **{what: _pack(dtype) for what, dtype in _PACKS.items()},
    },
)
