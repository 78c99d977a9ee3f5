"""benchmarks/bench_epilogue.py measured on one case, the TMEM epilogue with ReLU (128 x 64 float32 accumulator, 64
elements per thread): both sides build and assemble without spills or a stack frame, and both are the same epilogue:
the instructions its definition fixes are there in the same numbers on both sides (one tcgen05.st of 64 columns,
two tcgen05.ld of 32, one max and half a bf16x2 conversion per element, four 16-byte shared stores and one TMA store
per chunk). The ``gelu-exp`` form is checked against tanh-GELU by evaluating its expression independently."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm

from tirx_layout.tools.kernel_report import find_nvcc
from tirx_layout.tools.measurement import opcode_counts

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_epilogue

ELEMENTS = 64  # per thread: one 64-column row of the 128 x 64 accumulator
CHUNKS = 2  # of 32 columns


@pytest.fixture(scope="module")
def measured():
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    return bench_epilogue.measure_ours("tmem", "relu"), bench_epilogue.measure_upstream("tmem", "relu")


@pytest.mark.parametrize("side", ["ours", "upstream"])
def test_both_sides_are_the_same_epilogue_in_registers(measured, side):
    found = measured[0 if side == "ours" else 1]
    assert (found.code.spill_bytes, found.stack_bytes) == (0, 0)
    assert found.elements_per_thread == ELEMENTS
    assert found.per_element == len(found.code.instructions) / ELEMENTS
    if found.code.sass is None:
        pytest.skip("nvdisasm is not installed: no SASS to count")
    counts = opcode_counts(found.code.sass)
    assert counts["STTM.x64"] == 1 and counts["LDTM.x32"] == CHUNKS
    assert counts["FMNMX"] == ELEMENTS and counts["F2FP.BF16.F32.PACK_AB"] == ELEMENTS // 2
    assert counts["STS.128"] == CHUNKS * 32 * 2 // 16 and counts["UTMASTG.2D"] == CHUNKS


def test_the_table_row_and_the_difference_are_read_off_the_measurements(measured):
    ours, theirs = measured
    line = bench_epilogue.row("tmem", "relu", ours, theirs)
    ratio = ours.per_element / theirs.per_element
    expected = ["tmem", "relu", f"{ours.per_element:.2f}", f"{theirs.per_element:.2f}", f"{ratio:.3f}"]
    assert line.split()[:5] == expected
    assert line.endswith("ok" if ours.per_element <= theirs.per_element else "OURS MORE")
    for entry in bench_epilogue.where_ours_is_above(ours, theirs).split(", "):
        name, count = entry.rsplit(" ", 1)
        assert opcode_counts(ours.code.instructions)[name] - opcode_counts(theirs.code.instructions)[name] == int(count)


def _evaluate(expr, x: float) -> float:
    """The value of a float32 TIR expression of one variable at ``x``, by Python's own math (an oracle independent of
    TVM's and the simulator's arithmetic)."""
    if isinstance(expr, tvm.tirx.FloatImm):
        return expr.value
    if isinstance(expr, tvm.tirx.Var):
        return x
    if isinstance(expr, tvm.ir.Call) and expr.op.name == "tirx.exp":
        return math.exp(_evaluate(expr.args[0], x))
    a, b = _evaluate(expr.a, x), _evaluate(expr.b, x)
    operations = {tvm.tirx.Add: a + b, tvm.tirx.Mul: a * b, tvm.tirx.Div: a / b if b else math.inf}
    return operations[type(expr)]


def test_gelu_through_exp_is_tanh_gelu_and_leaves_the_example_as_it_was():
    original = bench_epilogue.EPILOGUES.activate
    x = tvm.tirx.Var("x", "float32")
    with bench_epilogue.gelu_through_exp():
        expr = bench_epilogue.EPILOGUES.activate(x, "gelu-exp")
    assert bench_epilogue.EPILOGUES.activate is original
    points = np.linspace(-6.0, 6.0, 49)
    values = [_evaluate(expr, float(p)) for p in points]
    np.testing.assert_allclose(
        values, bench_epilogue.EPILOGUES.activate_reference(points, "gelu"), rtol=1e-12, atol=1e-12
    )


SMALL_GEMM = (256, 256, 1024, "bfloat16", (128, 256, 64), 4, 2)  # 16 K tiles, which nvcc keeps as a loop


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_the_main_loops_are_found_with_and_without_the_fused_epilogue():
    for epilogue in (None, "relu"):
        found, loops = bench_epilogue.gemm_main_loops(epilogue, SMALL_GEMM)
        assert found["spilled bytes"] == 0 and found["MMA loop per K tile"] > 0
        if not loops:
            pytest.skip("nvdisasm is not installed: no SASS loops")
        mmas = opcode_counts(loops["MMA loop"])["UTCHMMA"]
        loads = opcode_counts(loops["producer loop"])["UTMALDG.2D"]
        assert mmas > 0 and mmas % 4 == 0  # whole K tiles of 4 MMAs (K = 64 in steps of 16)
        assert loads > 0 and loads % 2 == 0  # whole K tiles of an A and a B copy


def test_a_loop_change_is_named_by_length_and_opcodes():
    plain = ["UTCHMMA a", "IMAD.MOV.U32 R1, RZ, RZ, 0x8"]
    assert bench_epilogue.loop_change(plain, plain[::-1]) == "unchanged: 2 instructions, the same opcodes"
    assert bench_epilogue.loop_change(plain, ["UTCHMMA a", "HFMA2 R1, -RZ, RZ, 0, 0"]) == (
        "the same length, 2 instructions; other opcodes: {'HFMA2': 1, 'IMAD.MOV.U32': -1}"
    )
    assert bench_epilogue.loop_change(plain, [*plain, "UIADD3 UR5"]) == "2 -> 3 instructions: {'UIADD3': 1}"
