"""The floating-point math a device function can call, as the GPU computes it: TIR's math intrinsics (``tirx.exp``,
``tirx.rsqrt``, ...), the CUDA functions a ``call_pure_extern`` names (``expf``, ``__expf``, ``hexp``, ...), and
``tirx.fma``.

How the GPU computes them (CUDA Math API; CUDA Programming Guide, "Mathematical Functions"): TVM compiles CUDA with
``--use_fast_math`` (``tvm/support/nvcc.py``, nvcc and NVRTC alike), which for single precision maps ``expf``,
``exp10f``, ``logf``, ``log2f``, ``log10f``, ``powf``, ``sinf``, ``cosf``, ``tanf`` to their intrinsics (``__expf``,
...) and flushes subnormal float32 values to zero. The intrinsics are built on the multi-function unit's
``ex2.approx.ftz.f32`` / ``lg2.approx.ftz.f32``: ``__expf(x)`` is ``ex2.approx(x * log2(e))``, whose documented error
``2 + floor(|1.173 x|)`` ulp is mostly the rounding of that product. So, for float32 (:data:`FAST_MATH`):

* the fast intrinsics are modelled by their composition -- every product rounded to float32 as the GPU rounds it,
  the ``ex2``/``lg2`` step correctly rounded (the unit's own error, ~2 ulp, is the remaining difference);
* the other functions (``exp2f``, ``sqrtf``, ``rsqrtf``, ``tanhf``, ``erff``, ...) are the exact function rounded
  once to float32 (numpy in float64, then rounded), within the documented bound of the GPU's value;
* rounding functions (``nearbyintf`` -- what TVM prints for ``T.round`` too: round half to even --, ``floorf``,
  ``ceilf``, ``truncf``, ``fabsf``, ``fmodf``) are exact, as on the GPU;
* subnormal float32 inputs and results of these functions are flushed to signed zero (``-ftz=true``).

float64 functions are the host's libm in float64 (within 1 ulp); the GPU's are within :data:`BOUNDS`. float16 /
bfloat16 functions (``hexp``, ``hsqrt``, ...) are the exact value rounded once to the type: CUDA evaluates them in
float32 and rounds, so they are within 1 ulp of the type (the CUDA Math API states no bound for them).

:data:`BOUNDS` records, per function and type, the GPU's documented maximum error (the tests hold the simulator's
values to them against an independent oracle).

Example:
    >>> import numpy as np
    >>> evaluate("exp2", "float32", [np.float32([0.0, 3.0, -1.0])]).tolist()
    [1.0, 8.0, 0.5]
    >>> evaluate("round", "float32", [np.float32([0.5, 1.5, 2.5, -0.5])]).tolist()  # nearbyintf: half to even
    [0.0, 2.0, 2.0, -0.0]
    >>> float(evaluate("__expf", "float32", [np.float32(1.0)]))
    2.7182817459106445
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .memory import SimulationError

__all__ = ["BOUNDS", "FAST_MATH", "Bound", "evaluate", "ex2_approx", "flush_subnormals", "fma_rn", "knows"]

#: Whether float32 math is modelled as TVM builds it: ``--use_fast_math`` (intrinsics, flush to zero).
FAST_MATH = True

_TYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}


@dataclass(frozen=True)
class Bound:
    """The GPU's documented maximum error of a function for one type: ``ulp`` units in the last place, plus
    ``floor(per_x * |x|)`` ulp (``__expf``: 1.173); or, for ``x`` inside ``near`` when ``absolute`` is set, an
    absolute error (the fast logarithms near 1, where a relative bound cannot hold; ``__sinf`` on [-pi, pi], outside
    which no bound is documented: ``ulp`` infinite).

    Example:
        >>> Bound(2, per_x=1.173).ulps(10.0), Bound(3, absolute=2.0**-21.41).applies_absolute(1.5)
        (13, True)
    """

    ulp: float
    per_x: float = 0.0
    absolute: float | None = None
    near: tuple = (0.5, 2.0)

    def ulps(self, x: float) -> float:
        """The bound in ulp at argument ``x``."""
        return self.ulp + math.floor(self.per_x * abs(x))

    def applies_absolute(self, x: float) -> bool:
        """Whether the absolute bound (not the ulp one) holds at ``x``."""
        return self.absolute is not None and self.near[0] <= x <= self.near[1]


def flush_subnormals(values: np.ndarray) -> np.ndarray:
    """``values`` (float32) with every subnormal replaced by a zero of its sign: ``.ftz``.

    Example:
        >>> flush_subnormals(np.float32([1e-40, -1e-40, 1.0])).tolist()
        [0.0, -0.0, 1.0]
    """
    values = np.asarray(values, np.float32)
    tiny = np.abs(values) < np.finfo(np.float32).tiny
    return np.where(tiny, np.copysign(np.float32(0), values), values).astype(np.float32)


def _f32(values) -> np.ndarray:
    return np.asarray(values).astype(np.float32)


def ex2_approx(x):
    """``ex2.approx.ftz.f32``: 2^x correctly rounded (the unit is within about 2 ulp of it: the ISA bounds its
    relative error near 2^-22), subnormal inputs and results flushed to zero; -inf gives +0, NaN stays NaN.

    Example:
        >>> ex2_approx(np.float32([3.0, -np.inf, 1e-40, -150.0])).tolist()
        [8.0, 0.0, 1.0, 0.0]
    """
    return flush_subnormals(_f32(np.exp2(flush_subnormals(x).astype(np.float64))))


def _lg2_approx(x):
    """``lg2.approx.ftz.f32``: log2(x) correctly rounded, subnormal inputs flushed (to -inf)."""
    return _f32(np.log2(flush_subnormals(x).astype(np.float64)))


def _times(x, constant: float):
    """``x * constant`` with both rounded to float32, as ``mul.ftz.f32`` computes it."""
    return flush_subnormals(_f32(x) * np.float32(constant))


def _fast_pow(x, y):
    # __powf(x, y) = exp2(y * __log2f(x)) (CUDA Math API): a negative base is NaN, whatever the exponent
    return ex2_approx(flush_subnormals(_f32(y) * _lg2_approx(x)))


def _fast_divide(x, y):
    # __fdividef: x * (1/y), documented 0 for 2^126 < |y| < 2^128 and within 2 ulp elsewhere
    x, y = _f32(x), _f32(y)
    quotient = flush_subnormals(_f32(x.astype(np.float64) / y.astype(np.float64)))
    huge = (np.abs(y) > np.float32(2.0**126)) & np.isfinite(y)
    return np.where(huge & np.isfinite(x), np.float32(0), quotient).astype(np.float32)


_LOG2_E, _LOG2_10 = math.log2(math.e), math.log2(10.0)
_LN_2, _LOG10_2 = math.log(2.0), math.log10(2.0)

#: The float32 intrinsics (``__expf`` ...) by the composition the CUDA Math API gives them.
_FAST = {
    "__expf": lambda x: ex2_approx(_times(x, _LOG2_E)),
    "__exp10f": lambda x: ex2_approx(_times(x, _LOG2_10)),
    "__logf": lambda x: _times(_lg2_approx(x), _LN_2),
    "__log2f": _lg2_approx,
    "__log10f": lambda x: _times(_lg2_approx(x), _LOG10_2),
    "__powf": _fast_pow,
    "__sinf": lambda x: flush_subnormals(_f32(np.sin(flush_subnormals(x).astype(np.float64)))),
    "__cosf": lambda x: _f32(np.cos(flush_subnormals(x).astype(np.float64))),
    "__tanf": lambda x: _fast_divide(_FAST["__sinf"](x), _FAST["__cosf"](x)),
    "__fdividef": _fast_divide,
    "__saturatef": lambda x: np.where(np.isnan(x), np.float32(0), np.clip(_f32(x), 0, 1)).astype(np.float32),
}
#: Which intrinsic ``--use_fast_math`` puts in place of each single-precision function (by its TIR name).
_FAST_MATH_SUBSTITUTES = {
    "exp": "__expf",
    "exp10": "__exp10f",
    "log": "__logf",
    "log2": "__log2f",
    "log10": "__log10f",
    "pow": "__powf",
    "sin": "__sinf",
    "cos": "__cosf",
    "tan": "__tanf",
}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


#: TIR's math intrinsics (and the C names they print as, less the type suffix) as exact float64 functions.
_EXACT: dict[str, Callable] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "erf": _erf,
    "pow": np.power,
    "round": np.rint,  # TVM prints nearbyint for both: the current rounding mode, to nearest even
    "nearbyint": np.rint,
    "rint": np.rint,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "fabs": np.abs,
    "abs": np.abs,
    "fmod": np.fmod,
    "fmin": np.fmin,  # a NaN operand gives the other one
    "fmax": np.fmax,
    "copysign": np.copysign,
    "fdim": lambda x, y: np.where(x > y, x - y, 0.0),
}

#: The GPU's documented maximum errors, per function and type (CUDA Programming Guide, "Mathematical Functions":
#: the standard functions, and for float32 the intrinsics ``--use_fast_math`` puts in their place). Exact functions
#: (rounding, ``fabs``, ``fmod``, ``fmin``/``fmax``, ``copysign``) have ``Bound(0)``.
BOUNDS = {
    "float32": {
        "__expf": Bound(2, per_x=1.173),
        "__exp10f": Bound(2, per_x=2.97),
        "__logf": Bound(3, absolute=2.0**-21.41),
        "__log2f": Bound(2, absolute=2.0**-22),
        "__log10f": Bound(3, absolute=2.0**-24),
        "__sinf": Bound(math.inf, absolute=2.0**-21.41, near=(-math.pi, math.pi)),
        "__cosf": Bound(math.inf, absolute=2.0**-21.19, near=(-math.pi, math.pi)),
        "__fdividef": Bound(2),  # for 2^-126 <= |y| <= 2^126
        "exp2": Bound(2),
        "sqrt": Bound(1),  # -prec-sqrt=false (fast math); 0 with -prec-sqrt=true
        "rsqrt": Bound(2),
        "tanh": Bound(2),
        "erf": Bound(2),
        "log1p": Bound(1),
        "expm1": Bound(1),
        "sinh": Bound(3),
        "cosh": Bound(2),
        "asinh": Bound(3),
        "acosh": Bound(4),
        "atanh": Bound(3),
        "asin": Bound(2),
        "acos": Bound(2),
        "atan": Bound(2),
        "atan2": Bound(3),
        "hypot": Bound(3),
    },
    "float64": {
        "exp": Bound(1),
        "exp2": Bound(1),
        "exp10": Bound(1),
        "log": Bound(1),
        "log2": Bound(1),
        "log10": Bound(1),
        "sqrt": Bound(0),
        "rsqrt": Bound(1),
        "tanh": Bound(1),
        "erf": Bound(2),
        "pow": Bound(2),
        "sin": Bound(2),
        "cos": Bound(2),
        "tan": Bound(2),
    },
    # CUDA evaluates the half-precision functions in float32 and rounds once (no bound is documented)
    "float16": {name: Bound(1) for name in ("exp", "exp2", "exp10", "log", "log2", "log10", "sqrt", "rsqrt", "tanh")},
    "bfloat16": {name: Bound(1) for name in ("exp", "exp2", "exp10", "log", "log2", "log10", "sqrt", "rsqrt", "tanh")},
}
for _exact in ("round", "nearbyint", "rint", "floor", "ceil", "trunc", "fabs", "abs", "fmod", "fmin", "fmax"):
    for _bounds in BOUNDS.values():
        _bounds[_exact] = Bound(0)


def _c_name(name: str) -> tuple[str, str | None]:
    """A CUDA function name (``expf``, ``hexp``, ``__expf``, ``exp``) as ``(function, type it fixes)``: the TIR
    intrinsic name or fast intrinsic, and ``float32``/``None`` (the call's own type decides)."""
    if name in _FAST or name in _EXACT:
        return name, None
    if name.endswith("f") and name[:-1] in _EXACT:
        return name[:-1], "float32"
    if name.startswith("h") and name[1:] in _EXACT:  # cuda_fp16.h / cuda_bf16.h: hexp, hsqrt, ...
        return name[1:], None
    if name == "__habs":
        return "fabs", None
    raise SimulationError(f"the simulator does not implement the math function {name}")


def knows(name: str) -> bool:
    """Whether :func:`evaluate` computes ``name`` (a TIR intrinsic or a CUDA function name).

    Example:
        >>> knows("exp"), knows("__expf"), knows("hexp"), knows("expf"), knows("cbrtx")
        (True, True, True, True, False)
    """
    try:
        _c_name(name)
    except SimulationError:
        return False
    return True


def _element_type(dtype: str) -> str:
    base = str(dtype).split("x")[0] if str(dtype).startswith("float") else str(dtype)
    if base not in _TYPES:
        raise SimulationError(f"the simulator computes math functions on {list(_TYPES)}, not on {dtype}")
    return base


def evaluate(name: str, dtype: str, args: list) -> np.ndarray:
    """The value of math function ``name`` (a TIR intrinsic like ``exp``, or a CUDA name like ``expf``,
    ``__expf``, ``hexp``) of ``args`` for result type ``dtype``, as the GPU computes it (see the module docstring).

    Example:
        >>> float(evaluate("rsqrt", "float32", [np.float32(4.0)])), float(evaluate("hexp", "float16", [np.float16(0)]))
        (0.5, 1.0)
    """
    function, fixed = _c_name(name)
    dtype = fixed or _element_type(dtype)
    target = _TYPES[dtype]
    with np.errstate(all="ignore"):
        if function in _FAST:
            if dtype != "float32":
                raise SimulationError(f"{name} is a float32 intrinsic; the call returns {dtype}")
            return _FAST[function](*[_f32(a) for a in args])
        if dtype == "float32" and FAST_MATH:
            if function in _FAST_MATH_SUBSTITUTES:
                return _FAST[_FAST_MATH_SUBSTITUTES[function]](*[_f32(a) for a in args])
            inputs = [flush_subnormals(a).astype(np.float64) for a in args]
            return flush_subnormals(_f32(_EXACT[function](*inputs)))
        inputs = [np.asarray(a).astype(np.float64) for a in args]
        return np.asarray(_EXACT[function](*inputs)).astype(target)


def fma_rn(a, b, c, dtype: str = "float32") -> np.ndarray:
    """``a * b + c`` rounded once to ``dtype`` (``fma.rn``): float32 products are exact in float64, and the sum's
    float64 rounding error (TwoSum) decides the one case double rounding could get wrong, a float64 sum on a
    float32 rounding midpoint.

    Example:
        >>> a = np.float32(1 + 2**-12); c = np.float32(-(1 + 2**-11))
        >>> float(fma_rn(a, a, c)) == 2.0**-24  # the separately rounded a*a+c gives 0
        True
    """
    if dtype == "float64":
        raise SimulationError("the simulator computes fma in float32 (and narrower) only")
    target = _TYPES[_element_type(dtype)]
    product = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    addend = np.asarray(c, np.float64)
    with np.errstate(all="ignore"):
        total = product + addend
        back = total - product
        error = (product - (total - back)) + (addend - back)  # total + error == product + addend exactly
        rounded = total.astype(target)
        away = np.where(total > rounded.astype(np.float64), np.inf, -np.inf).astype(target)
        midpoint = (rounded.astype(np.float64) + np.nextafter(rounded, away).astype(np.float64)) / 2
        tie = (midpoint == total) & (rounded.astype(np.float64) != total) & (error != 0) & np.isfinite(error)
        return np.where(tie, np.nextafter(total, total + error).astype(target), rounded).astype(target)
