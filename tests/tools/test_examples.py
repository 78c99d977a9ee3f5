"""End to end, for every kernel in examples/: build for sm_100a, assemble with nvcc where it is installed, simulate,
compare with numpy, and check that every output element is written exactly once."""

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.tools.kernel_report import Expected, KernelTable, kernel_source, report, sample_input
from tirx_layout.transform import build

from kernels import example_kernels, parse

KERNELS = example_kernels()


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_example_builds_assembles_and_simulates(name):
    found = report(name, *KERNELS[name])
    if found.assembled is not None:
        assert found.assembled[0], found.assembled[1]
    assert found.matches
    assert found.written_once


def test_128B_swizzled_staging_addresses_shared_memory_with_xor_and_no_division():
    body = kernel_source(build(KERNELS["staging_fp16_128B"][0]).imports[0].inspect_source())
    indices = re.findall(r"tile_ptr\[([^\]]*(?:\][^\]]*)*?)\] ?[=;]", body)
    shared_accesses = [index for index in indices if not index.isdigit()]  # not the declaration's size
    assert len(shared_accesses) == 2
    assert all("^" in index and ">> 6) & 7) << 3" in index for index in shared_accesses)
    assert not re.search(r"[/%]", body), "division or modulo left in the kernel"


def test_listing_the_examples_builds_none_of_them():
    built = []
    table = KernelTable()
    table.add("a", lambda x: x, lambda: built.append("a") or "kernel a")
    table.add("b", lambda x: x, lambda: built.append("b") or "kernel b")
    assert sorted(table) == ["a", "b"] and len(table) == 2 and built == []
    assert table["b"][0] == "kernel b" and table["b"][0] == "kernel b" and built == ["b"]  # once, when asked
    with pytest.raises(ValueError, match="'a' is in the table twice"):
        table.add("a", lambda x: x, str)


def test_a_symbolic_example_is_run_with_the_sizes_its_entry_gives():
    kernel, _, sizes = KERNELS["symbolic_rows"]
    assert sizes == {"M": 100}
    assert sample_input(kernel, sizes).shape == (100, 64)
    with pytest.raises(ValueError, match=r"A has the symbolic extent M; give its size: sizes=\{'M': ...\}"):
        sample_input(kernel)


# ---- the GEMM examples (examples/tensor_cores.py) -------------------------------------------------------------


def test_a_gemm_whose_result_is_transposed_is_reported_as_differing():
    # The check is not vacuous: A and B get different inputs, so B @ A.T (= D transposed) is not A @ B.T.
    kernel, expected = KERNELS["gemm_fp16_128x128x64"]
    assert expected.inputs == 2 and expected.exact
    assert not report("transposed", kernel, Expected(lambda a, b: b.astype(float) @ a.astype(float).T, 2)).matches
    assert report("as listed", kernel, expected).matches


K_LOOP = """
@T.prim_func
def k_loop(A: T.Buffer((128, 128), "float16"), B: T.Buffer((128, 128), "float16"), D: T.Buffer((128, 128), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    a_tile = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    b_tile = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    bars = T.alloc_shared((1,), "uint64")
    acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
    out = T.alloc_local((128, 128), "float32")
    T.mbarrier_init(bars[0], 1)
    for kt in T.serial(2):
        T.tile_copy(a_tile, A[0:128, kt * 64 : kt * 64 + 64])
        T.tile_copy(b_tile, B[0:128, kt * 64 : kt * 64 + 64])
        T.tile_mma(acc, a_tile, b_tile, accumulate=kt > 0, barrier=bars[0])
        WAIT
    T.tile_copy(out, acc, "warpgroup")
    T.tile_copy(D, out, "warpgroup")
"""


def test_the_async_k_loop_needs_its_wait_before_the_next_copy_overwrites_the_tiles():
    inputs = [sample_input(parse(K_LOOP.replace("WAIT", "T.mbarrier_wait(bars[0], kt % 2)")), index=i) for i in (0, 1)]
    waited = sim.run(parse(K_LOOP.replace("WAIT", "T.mbarrier_wait(bars[0], kt % 2)")), inputs)
    a, b = (x.astype(np.float64) for x in inputs)
    assert np.array_equal(waited["D"], a @ b.T)
    with pytest.raises(sim.DataRace):  # the second copy overwrites a_tile while the first MMA may still read it
        sim.run(parse(K_LOOP.replace("WAIT", "pass")), inputs)


def test_the_inferred_gemm_gets_128B_k_major_tiles_and_says_why():
    from tirx_layout.transform import explain_layouts

    text = explain_layouts(KERNELS["gemm_inferred"][0])
    for name, role in (("a_tile", "A"), ("b_tile", "B")):
        line = next(line for line in text.splitlines() if line.startswith(f"{name}:"))
        assert line.startswith(f"{name}: ComposeLayout(SwizzleLayout(3, 3, 3)")
        assert "[strict, io-aware" in line and f"128B: legal for {role} of T.tile_mma (line" in line
