"""The ``math`` helpers' executor (``sim/packed_math.py``) against the PTX ISA's definitions: the operand order of
the packing conversions, their rounding, overflow and saturation, NaN; the f32x2 lanes, one rounding for ``fma``,
subnormals kept; ``ex2.approx.ftz``'s special values."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import tvm

from tirx_layout.sim.packed_math import HELPERS, pack

INF, NAN = np.inf, np.nan


def run(what: str, *values):
    """Helper ``what`` executed on constant operands for one thread."""
    interp = SimpleNamespace(count=1, eval=lambda v: v)
    return HELPERS(interp, what, [np.asarray(v) for v in values])


def test_bf16x2_puts_the_first_operand_in_the_upper_half_rounding_to_nearest_even():
    assert int(pack([1.0], [-2.0], "bfloat16")[0]) == 0x3F80C000
    # 1 + 2^-8 is a tie between 0x3f80 and 0x3f81: even; 1 + 3 * 2^-8 ties between 0x3f81 and 0x3f82: even
    assert int(pack([1 + 2**-8], [1 + 3 * 2**-8], "bfloat16")[0]) == 0x3F803F82
    # no .satfinite: the largest float32 overflows to infinity, NaN stays NaN
    word = int(pack([np.finfo(np.float32).max], [NAN], "bfloat16")[0])
    assert word >> 16 == 0x7F80 and (word & 0x7F80) == 0x7F80 and (word & 0x7F) != 0


def test_f16x2_overflow_and_rounding():
    assert int(pack([65504.0], [65520.0], "float16")[0]) == 0x7BFF7C00  # 65520 is the tie above the largest: inf
    assert int(pack([-0.0], [2.0**-24], "float16")[0]) == 0x80000001  # -0 and the smallest subnormal


def test_fp8_packs_saturate_to_the_largest_finite_value_and_keep_nan():
    assert int(pack([448.0], [500.0], "float8_e4m3fn")[0]) == 0x7E7E
    assert int(pack([INF], [-INF], "float8_e4m3fn")[0]) == 0x7EFE
    assert int(pack([NAN], [1.0625], "float8_e4m3fn")[0]) == 0x7F38  # NaN; 1 + 1/16 ties to 1.0
    assert int(pack([2.0**-9], [0.0], "float8_e4m3fn")[0]) == 0x0100  # the smallest e4m3 subnormal
    word = int(pack([60000.0], [INF], "float8_e5m2")[0])
    assert word == 0x7B7B  # 57344 is e5m2's largest finite value
    nan = int(pack([NAN], [0.0], "float8_e5m2")[0]) >> 8
    assert nan & 0x7C == 0x7C and nan & 0x3 != 0


def test_f32x2_works_lane_by_lane_with_one_rounding_for_fma_and_subnormals_kept():
    assert run("add_f32x2", [[1.0, 2.0]], [[10.0, 20.0]]).tolist() == [[11.0, 22.0]]
    a, c = np.float32(1 + 2**-12), np.float32(-(1 + 2**-11))
    assert run("fma_f32x2", [[a, 2.0]], [[a, 3.0]], [[c, 1.0]]).tolist() == [[2.0**-24, 7.0]]
    assert (np.float32(a) * np.float32(a) + np.float32(c)) == 0  # what two roundings would give
    tiny = run("mul_f32x2", [[2.0**-100, 1.0]], [[2.0**-30, 1.0]])
    assert tiny[0, 0] == np.float32(2.0**-130) and tiny[0, 0] > 0  # no .ftz


def test_ex2_approx_special_values():
    got = run("ex2_approx", np.float32([-INF, 0.0, INF, NAN, 1e-40, 2.5, -130.0]))
    assert got[:3].tolist() == [0.0, 1.0, INF] and np.isnan(got[3])
    assert got[4:].tolist() == [1.0, np.float32(2**2.5), 0.0]


def test_the_executor_reads_the_helpers_the_emitters_make():
    from tirx_layout.ops.helpers import math as hm

    x = tvm.tirx.const(2.0, "float32")
    assert HELPERS.knows(str(hm.ex2_approx(x).args[0].value).removeprefix("tirx_layout_math_"))
