"""benchmarks/bench_codegen.py on one round trip, 32x32b float32 through datapath D: upstream's kernel builds in its
child process (in this process the pipeline guard would refuse it) and both kernels assemble to the tcgen05
instructions the round trip needs by the PTX ISA: alloc, relinquish_alloc_permit, one st (32 fp32 columns are one
``.32x32b.x32``), wait::st, one ld, wait::ld, dealloc."""

import sys
from pathlib import Path

import pytest

from tirx_layout.tools.kernel_report import find_nvcc
from tirx_layout.transform import build

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_codegen
import tmem_round_trips  # on the path through bench_codegen

pytestmark = pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")

SHAPE, DTYPE, DATAPATH = "32x32b", "float32", "D"


def test_upstream_round_trip_builds_in_the_child_process_and_assembles():
    cuda = bench_codegen.upstream_round_trip_cuda(SHAPE, DTYPE, DATAPATH)
    assert "tcgen05.st.sync.aligned.32x32b.x32" in cuda and "tcgen05.ld.sync.aligned.32x32b.x32" in cuda
    theirs = bench_codegen.assemble(cuda)
    assert (theirs["tcgen05"], theirs["ld/st"], theirs["fences"]) == (7, 2, 0)
    assert 0 < theirs["registers"] <= 255


def test_ours_holds_the_same_tcgen05_instructions():
    kernel = tmem_round_trips.round_trip_kernel(SHAPE, DTYPE, DATAPATH)
    ours = bench_codegen.assemble(build(kernel).imports[0].inspect_source())
    assert (ours["tcgen05"], ours["ld/st"], ours["fences"]) == (7, 2, 0)


def test_a_failed_upstream_build_is_a_runtime_error_with_the_childs_error_line():
    with pytest.raises(RuntimeError, match=r"upstream 8x8b float32 D failed: ValueError: .*'8x8b'"):
        bench_codegen.upstream_round_trip_cuda("8x8b", DTYPE, DATAPATH)
