"""``SwizzleLayout.swizzle_sum`` (a swizzled address with what the swizzle does not change kept outside it) and
``indexing.bit_fields`` (a per-thread table as bit fields of the thread index): both equal, at every point, to
what they rewrite -- the swizzle of the whole sum, the table itself -- over random tables, strides and constants."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tvm

from tirx_layout.layout.indexing import bit_fields
from tirx_layout.layout.swizzle import SwizzleLayout

_BINARY = {
    "Add": lambda x, y: x + y,
    "Sub": lambda x, y: x - y,
    "Mul": lambda x, y: x * y,
    "FloorDiv": lambda x, y: x // y,
    "FloorMod": lambda x, y: x % y,
    "BitwiseXor": lambda x, y: x ^ y,
    "BitwiseAnd": lambda x, y: x & y,
    "BitwiseOr": lambda x, y: x | y,
    "LShift": lambda x, y: x << y,
    "RShift": lambda x, y: x >> y,
}


def evaluate(expr, env: dict) -> int:
    """The value of an integer ``PrimExpr`` (the node kinds above) with its variables set from ``env``."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tvm.tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tvm.tirx.Var):
        return env[expr.name]
    return _BINARY[type(expr).__name__](evaluate(expr.a, env), evaluate(expr.b, env))


def _bit_table(rng, threads: int) -> list[int]:
    weights = [int(rng.integers(0, 64)) << int(rng.integers(0, 5)) for _ in range(threads.bit_length())]
    constant = 3 * int(rng.integers(0, 2))
    return [sum(((i >> b) & 1) * w for b, w in enumerate(weights)) + constant for i in range(threads)]


@pytest.mark.parametrize("threads", [128, 96, 32])
def test_bit_fields_equal_the_table(threads):
    rng = np.random.default_rng(threads)
    t = tvm.tirx.Var("t", "int32")
    for _ in range(20):
        table = _bit_table(rng, threads)
        expr = bit_fields(table, t)
        assert [evaluate(expr, {"t": i}) for i in range(threads)] == table
    assert bit_fields([i * i for i in range(8)], t) is None  # not a sum of bit multiples


@pytest.mark.parametrize(
    "swizzle",
    [
        SwizzleLayout(3, 3, 3),
        SwizzleLayout(3, 2, 3),
        SwizzleLayout(3, 1, 3),
        SwizzleLayout(2, 3, 3),
        SwizzleLayout(4, 3, 3),
        SwizzleLayout(0, 3, 3),
        SwizzleLayout(3, 3, 3, False),
    ],
    ids=str,
)
def test_swizzle_sum_equals_the_swizzle_of_the_sum(swizzle):
    rng = np.random.default_rng(7)
    t, s = tvm.tirx.Var("t", "int32"), tvm.tirx.Var("s", "int32")
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(t, tvm.ir.Range(0, 128))
    analyzer.bind(s, tvm.ir.Range(0, 4))
    for _ in range(15):
        table = _bit_table(rng, 128)
        constant, stride = int(rng.integers(0, 4096)), int(rng.choice([512, 1024, 4096, 24, 64]))
        split = swizzle.swizzle_sum(bit_fields(table, t) + s * stride + constant, analyzer)
        for i, stage in itertools.product(range(0, 128, 5), range(4)):
            expected = swizzle.swizzle_address(table[i] + stage * stride + constant)
            assert evaluate(split, {"t": i, "s": stage}) == expected, (str(split), i, stage)


def test_swizzle_sum_keeps_the_stage_and_the_column_block_outside():
    # a stage (a multiple of the 512-element period) is added after the swizzle; a column block the row never
    # sets is XOR-ed after it: the swizzle itself reads only the loop-invariant row
    r, s = tvm.tirx.Var("r", "int32"), tvm.tirx.Var("s", "int32")
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(r, tvm.ir.Range(0, 64))
    analyzer.bind(s, tvm.ir.Range(0, 3))
    split = SwizzleLayout(3, 3, 3).swizzle_sum(s * 4096 + r * 64 + 1024 + 16, analyzer)
    assert isinstance(split, tvm.tirx.Add) and int(split.b.value) == 1024
    assert type(split.a).__name__ == "BitwiseXor" and int(split.a.b.value) == 16
    # a column the row may set stays inside
    inside = SwizzleLayout(3, 3, 3).swizzle_sum(r * 8 + 16, analyzer)
    assert type(inside).__name__ == "BitwiseXor" and "16" in str(inside.a)
