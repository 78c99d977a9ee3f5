"""benchmarks/bench_mma.py measured on its smallest case, 128x128x64 fp16: both kernels build and assemble, and the
counts that follow from the shapes and the PTX ISA hold for both (K = 64 is 4 f16 instructions of K = 16; one
commit; the 128 accumulator columns are one ``tcgen05.ld.32x32b.x128``; the operands take 2 x 128 x 64 x 2 bytes)."""

import re
import sys
from pathlib import Path

import pytest

from tirx_layout.tools.kernel_report import find_nvcc
from tirx_layout.tools.measurement import opcode

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_mma

pytestmark = pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")

M, N, K, DTYPE = 128, 128, 64, "float16"
OPERAND_BYTES = (M + N) * K * 2


@pytest.fixture(scope="module")
def measured():
    return bench_mma.measure_ours(M, N, K, DTYPE), bench_mma.measure_upstream(M, N, K, DTYPE)


@pytest.mark.parametrize("side", ["ours", "upstream"])
def test_both_kernels_hold_what_the_shapes_and_the_isa_fix(measured, side):
    code = measured[0 if side == "ours" else 1]
    tc = code.tcgen05
    assert (tc["mma"], tc["commit"], tc["ld"], tc["alloc"], tc["dealloc"]) == (K // 16, 1, 1, 1, 1)
    assert OPERAND_BYTES < code.shared_bytes <= OPERAND_BYTES + 1024 + 16  # + mbarrier, TMEM slot, 1024 alignment
    mma = re.compile(r"UTC\w*MMA$" if code.sass is not None else r"tcgen05\.mma\b")
    names = [opcode(i) for i in code.issue_sequence]
    assert sum(mma.match(n) is not None for n in names) == K // 16
    assert names[-1] in ("UTCBAR", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64")
    assert 0 < code.registers <= 255


def test_upstream_puts_its_operands_in_dynamic_shared_memory_and_ours_in_static(measured):
    ours, theirs = measured
    assert ours.dynamic_shared_bytes == 0 and ours.static_shared_bytes > OPERAND_BYTES
    assert theirs.dynamic_shared_bytes > OPERAND_BYTES and theirs.static_shared_bytes == 0


def test_the_comparison_names_every_measurement_where_ours_is_above(measured):
    pairs, above = bench_mma.compare(*measured)
    assert list(pairs) == list(bench_mma.COLUMNS)
    assert above == [key for key, (a, b) in pairs.items() if a > b]
    assert pairs["mma"] == (K // 16, K // 16)
