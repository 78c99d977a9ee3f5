"""The simulator's math functions against an independent oracle (Python's ``math`` in float64, per element) within
the GPU's documented bounds (``math_functions.BOUNDS``), their special values from the C / CUDA definitions, ``fma``
against exact rational arithmetic, and a kernel calling them end to end."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tirx_layout import sim
from tirx_layout.sim.math_functions import BOUNDS, evaluate, ex2_approx, fma_rn
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build

from kernels import parse

TYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
ORACLES = {
    "exp": math.exp,
    "exp2": lambda x: 2.0**x,
    "exp10": lambda x: 10.0**x,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1 / math.sqrt(x),
    "tanh": math.tanh,
    "erf": math.erf,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "fabs": abs,
    "sin": math.sin,
    "cos": math.cos,
}
# the float32 functions --use_fast_math replaces, by the intrinsic whose bound applies
FAST = {
    "exp": "__expf",
    "exp10": "__exp10f",
    "log": "__logf",
    "log2": "__log2f",
    "log10": "__log10f",
    "sin": "__sinf",
    "cos": "__cosf",
}
POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt"}


def ulp_error(got: float, exact: float, dtype) -> float:
    """|got - exact| in units of the last place of ``dtype`` at ``exact``."""
    with np.errstate(over="ignore"):
        rounded = float(np.asarray(exact).astype(dtype))
    if math.isinf(rounded) or math.isinf(got):  # beyond the type's range: the rounded value is an infinity
        return 0.0 if got == rounded else math.inf
    spacing = float(np.spacing(np.asarray(abs(exact)).astype(dtype)).astype(np.float64))
    if spacing == 0 or not math.isfinite(spacing):
        spacing = float(np.finfo(dtype).smallest_subnormal)
    return abs(got - exact) / spacing


def inputs(name: str, dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, 200) if name in ("sin", "cos") else rng.uniform(-6, 6, 200)
    if name in POSITIVE:
        x = np.abs(x) * 10.0 ** rng.integers(-3, 4, 200) + 1e-3
    return np.asarray(x).astype(dtype)


def bound_of(name: str, dtype: str):
    """The documented bound of ``name`` in ``dtype``: for float32, of the intrinsic fast math puts in its place."""
    return BOUNDS[dtype].get(FAST.get(name) if dtype == "float32" else name) or BOUNDS[dtype].get(name)


CASES = [(name, dtype) for dtype in TYPES for name in ORACLES if bound_of(name, dtype) is not None]


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_each_function_is_within_the_documented_bound_of_the_exact_value(name, dtype):
    numpy_type, bound = TYPES[dtype], bound_of(name, dtype)
    x = inputs(name, numpy_type)
    got = evaluate(name, dtype, [x]).astype(np.float64)
    for xi, gi in zip(x.astype(np.float64), got, strict=True):
        exact = float(ORACLES[name](float(xi)))
        if bound.applies_absolute(xi):
            assert abs(gi - exact) <= bound.absolute, (name, dtype, xi, gi, exact)
        else:
            assert ulp_error(gi, exact, numpy_type) <= bound.ulps(xi) + 0.5, (name, dtype, xi, gi, exact)


def test_fast_exp_is_the_ex2_of_the_rounded_product_as_the_intrinsic_computes_it():
    # __expf(x) = ex2.approx(x * log2(e)) with the product rounded to float32: at x = 80 that rounding alone is
    # ~47 ulp away from the exact exp (the documented bound there is 2 + floor(1.173 * 80) = 95)
    x = np.float32(80.0)
    product = np.float32(x * np.float32(math.log2(math.e)))
    assert float(evaluate("exp", "float32", [x])) == float(np.float32(2.0 ** float(product)))
    assert float(evaluate("exp", "float32", [x])) != float(np.float32(math.exp(80.0)))
    assert ulp_error(float(evaluate("exp", "float32", [x])), math.exp(80.0), np.float32) <= 2 + math.floor(1.173 * 80)


def test_special_values_follow_the_c_and_ptx_definitions():
    inf, nan = np.inf, np.nan
    f = np.float32
    assert evaluate("exp", "float32", [f([-inf, inf, 0])]).tolist() == [0.0, inf, 1.0]
    assert evaluate("log", "float32", [f([0, inf, 1])]).tolist() == [-inf, inf, 0.0]
    assert np.isnan(evaluate("log", "float32", [f([-1.0])])).all()
    assert np.isnan(evaluate("sqrt", "float32", [f([-1.0])])).all()
    assert evaluate("rsqrt", "float32", [f([0.0, inf, 0.25])]).tolist() == [inf, 0.0, 2.0]
    assert evaluate("tanh", "float32", [f([-inf, 50, 0])]).tolist() == [-1.0, 1.0, 0.0]
    # T.round prints nearbyintf: ties to even, the sign of zero kept
    assert evaluate("round", "float32", [f([0.5, 1.5, 2.5, -2.5, -0.4])]).tolist() == [0.0, 2.0, 2.0, -2.0, -0.0]
    assert np.signbit(evaluate("round", "float32", [f([-0.4])])).all()
    # fast math: __powf(x, y) = ex2(y * lg2(x)): a negative base is NaN even for an integer exponent
    assert float(evaluate("pow", "float32", [f(2.0), f(10.0)])) == 1024.0
    assert np.isnan(evaluate("pow", "float32", [f(-2.0), f(2.0)]))
    assert float(evaluate("pow", "float64", [np.float64(-2.0), np.float64(2.0)])) == 4.0  # precise in double
    # -ftz: a subnormal float32 input is zero
    assert float(evaluate("exp2", "float32", [f(1e-40)])) == 1.0
    assert float(evaluate("fmax", "float32", [f(nan), f(1.0)])) == 1.0


def test_ex2_approx_follows_the_isa_table():
    got = ex2_approx(np.float32([-np.inf, -0.0, 0.0, np.inf, np.nan, 1e-40, -1e-40, 10.0, -127.0, -130.0]))
    assert got[:4].tolist() == [0.0, 1.0, 1.0, np.inf] and np.isnan(got[4])
    assert got[5:].tolist() == [1.0, 1.0, 1024.0, 2.0**-127 * 0, 0.0]  # 2^-127 is subnormal: flushed


def test_half_precision_functions_round_once_to_their_type():
    # 1 + 2^-8 + 2^-30 rounds to 1 + 2^-7 in bfloat16; rounding through float32 first would tie to 1.0
    x = np.float64(math.log(1 + 2**-8 + 2**-30))
    assert float(evaluate("exp", "float64", [x]).astype(ml_dtypes.bfloat16)) == 1 + 2**-7
    assert evaluate("hexp", "bfloat16", [np.asarray(0.0).astype(ml_dtypes.bfloat16)]).dtype == ml_dtypes.bfloat16


finite32 = st.floats(-(2.0**20), 2.0**20, width=32, allow_subnormal=False)


@settings(max_examples=300, deadline=None)
@given(finite32, finite32, finite32)
def test_fma_rounds_the_exact_value_once(a, b, c):
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    got = fma_rn(np.float32(a), np.float32(b), np.float32(c))
    for neighbour in (np.nextafter(got, np.float32(np.inf)), np.nextafter(got, np.float32(-np.inf))):
        assert abs(Fraction(float(neighbour)) - exact) >= abs(Fraction(float(got)) - exact)
    if abs(Fraction(float(got)) - exact) == abs(Fraction(float(np.nextafter(got, np.float32(np.inf)))) - exact):
        assert int(np.float32(got).view(np.uint32)) % 2 == 0  # a tie goes to the even neighbour


def test_a_kernel_calling_math_intrinsics_runs_and_matches_numpy():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((64,), "float32"), B: T.Buffer((64, 8), "float32"), H: T.Buffer((64,), "float16")):
    T.device_entry()
    tx = T.thread_id([64])
    B[tx, 0] = T.exp2(A[tx])
    B[tx, 1] = T.rsqrt(T.fabs(A[tx]) + T.float32(1))
    B[tx, 2] = T.round(A[tx] * T.float32(0.5))
    B[tx, 3] = T.max(T.tanh(A[tx]), T.float32(0))
    B[tx, 4] = T.sigmoid(A[tx])
    B[tx, 5] = T.if_then_else(A[tx] > T.float32(0), T.log2(A[tx]), T.float32(-1))
    B[tx, 6] = T.call_pure_extern("float32", "__expf", A[tx])
    B[tx, 7] = T.erf(A[tx])
    H[tx] = T.exp(T.Cast("float16", A[tx]))
""")
    assembled = nvcc_assembles(build(kernel, "sm_100a").imports[0].inspect_source())
    assert assembled is None or assembled[0], assembled
    a = np.float32(np.arange(64) / 8 - 4)
    result = sim.run(kernel, {"A": a})
    b, x = result["B"], a.astype(np.float64)
    expected = np.stack(
        [
            2**x,
            1 / np.sqrt(abs(x) + 1),
            np.rint(x / 2),
            np.maximum(np.tanh(x), 0),
            1 / (1 + np.exp(-x)),
            np.where(x > 0, np.log2(np.where(x > 0, x, 1)), -1),
            np.exp(x),
            [math.erf(v) for v in x],
        ],
        axis=1,
    )
    np.testing.assert_allclose(b, expected, rtol=3e-6, atol=1e-6)
    np.testing.assert_allclose(result["H"].astype(np.float64), np.exp(x), rtol=1e-3)
