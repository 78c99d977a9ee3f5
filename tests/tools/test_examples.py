"""End to end, for every kernel in examples/: build for sm_100a, assemble with nvcc where it is installed, simulate,
compare with numpy, and check that every output element is written exactly once."""

import re

import pytest

from tirx_layout.tools.kernel_report import KernelTable, kernel_source, report, sample_input
from tirx_layout.transform import build

from kernels import example_kernels

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
