"""Several TMEM allocations in one kernel, their column budget, and a TMEM tile whose width is no power of two
(issue 16, "correct programs"). Expected column counts are the PTX ISA's tcgen05.alloc rule: a power of two >= 32
per allocation, at most 512 in a CTA."""

import re

import numpy as np
import pytest

from tirx_layout import layout_of, sim, wg_local_layout
from tirx_layout.ops.tmem import check_total_columns
from tirx_layout.tools.kernel_report import kernel_source
from tirx_layout.transform import build, infer_layouts

from kernels import example_kernels, parse

TWO = """
@T.prim_func
def k(A: T.Buffer((128, 32), "float32"), B: T.Buffer((128, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((128, COLS), "float32", layout=tmem_datapath_layout("D", 128, COLS))
    acc2 = T.alloc_tmem((128, COLS2), "float32", layout=tmem_datapath_layout("D", 128, COLS2))
    f = T.alloc_local((128, 32), "float32", layout=wg_local_layout(32))
    T.tile_copy(f, A, "warpgroup")
    T.tile_copy(acc[0:128, 0:32], f, "warpgroup")
    T.tile_copy(acc2[0:128, 0:32], f, "warpgroup")
    T.tile_copy(f, acc2[0:128, 0:32], "warpgroup")
    T.tile_copy(B, f, "warpgroup")
"""


def two(cols: int, cols2: int):
    return parse(TWO.replace("COLS2", str(cols2)).replace("COLS", str(cols)))


def test_every_allocation_is_lowered_with_its_own_columns_and_freed_in_reverse_order():
    body = kernel_source(build(two(64, 32)).imports[0].inspect_source())
    assert body.count("tcgen05_alloc(") == 2 and body.count("tcgen05_dealloc(") == 2
    assert re.findall(r"tcgen05_alloc\(\(&\((\w+)_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == [
        ("acc", "64"),
        ("acc2", "32"),
    ]
    assert re.findall(r"tcgen05_dealloc\((\w+)_taddr, \(uint\)(\d+)\)", body) == [("acc2", "32"), ("acc", "64")]
    # One relinquish, after the last allocation (no tcgen05.alloc may follow it).
    assert body.count("relinquish_alloc_permit") == 1
    assert body.index("relinquish_alloc_permit") > body.index("tcgen05_alloc((&(acc2_taddr_ptr")


def test_two_allocations_simulate_and_free_everything():
    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    result = sim.run(two(64, 32), {"A": a})
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()


def test_allocations_filling_all_512_columns_build():
    body = kernel_source(build(two(256, 256)).imports[0].inspect_source())
    assert re.findall(r"tcgen05_alloc\(\(&\(\w+_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == ["256", "256"]


@pytest.mark.parametrize(
    ("cols", "cols2", "bounds"), [(256, 256, "(128, 1)"), (256, 32, "(128, 1)"), (128, 128, "(128)")]
)
def test_a_kernel_holding_more_than_half_the_columns_runs_one_cta_per_sm(cols, cols2, bounds):
    # 256 + 32 columns leave 224: a second CTA's tcgen05.alloc of 288 would wait, so one CTA per SM is the truth and
    # ptxas may budget registers for it; 128 + 128 leave room for a second CTA, and nothing is said
    source = build(two(cols, cols2)).imports[0].inspect_source()
    assert f"__launch_bounds__{bounds}" in source


def test_more_than_512_columns_in_total_is_refused_with_each_allocation_and_the_total():
    # 320 columns round up to a 512-column allocation each (a power of two): 1024 in all.
    with pytest.raises(
        ValueError, match=r"acc \(512 columns\) \+ acc2 \(512 columns\) = 1024 columns, more than the 512"
    ):
        build(two(320, 320))
    with pytest.raises(ValueError, match=r"acc \(256 columns\) \+ acc2 \(512 columns\) = 768 columns"):
        build(two(256, 300))


@pytest.mark.parametrize(("columns", "total"), [({"a": 32}, 32), ({"a": 256, "b": 128, "c": 128}, 512)])
def test_column_budget_adds_the_allocations(columns, total):
    assert check_total_columns(columns) == total


EPILOGUE = """
@T.prim_func
def k(A: T.Buffer((128, COLS), "float32"), B: T.Buffer((128, COLS), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((128, COLS), "float32", layout=tmem_datapath_layout("D", 128, COLS))
    f = T.alloc_local((128, COLS), "float32")
    T.tile_copy(f, A, "warpgroup")
    T.tile_copy(acc, f, "warpgroup")
    T.tile_copy(f, acc, "warpgroup")
    T.tile_copy(B, f, "warpgroup")
"""


@pytest.mark.parametrize(
    ("cols", "dtype", "chunks"),
    [
        (112, "float32", [64, 32, 16]),
        (96, "float32", [64, 32]),
        (200, "float32", [128, 64, 8]),
        (112, "float16", [32, 16, 8]),  # two 16-bit elements per 32-bit column: 56 columns
    ],
)
def test_inference_next_to_a_tmem_tile_of_any_width_finds_the_row_per_thread_fragment(cols, dtype, chunks):
    kernel = parse(EPILOGUE.replace("COLS", str(cols)).replace("float32", dtype))
    # One row per thread, columns in register order: what 32x32b moves (PTX ISA, "Matrix fragments for .32x32b").
    assert layout_of("f", infer_layouts(kernel)) == wg_local_layout(cols)
    body = kernel_source(build(kernel).imports[0].inspect_source())
    # .xN chunks, widest power of two first: the same instructions as the hand-written wg_local_layout(cols).
    assert re.findall(r"tcgen05_ld_32x32b_x(\d+)", body) == [str(n) for n in chunks]
    assert re.findall(r"tcgen05_st_32x32b_x(\d+)", body) == [str(n) for n in chunks]
    a = (np.arange(128 * cols) % 509).astype(dtype).reshape(128, cols)
    result = sim.run(kernel, {"A": a})
    np.testing.assert_array_equal(result["B"], a)


def test_the_examples_have_two_allocations_and_the_112_column_epilogue():
    kernels = example_kernels()
    body = kernel_source(build(kernels["tmem_two_allocations"][0]).imports[0].inspect_source())
    assert re.findall(r"tcgen05_alloc\(\(&\((\w+)_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == [
        ("acc", "64"),
        ("acc2", "32"),
    ]
    body = kernel_source(build(kernels["tmem_three_allocations"][0]).imports[0].inspect_source())
    assert sum(int(n) for n in re.findall(r"tcgen05_alloc\(\(&\(\w+_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body)) == 512


def test_an_allocation_that_ends_the_kernel_is_lowered_too():
    text = TWO.replace("COLS2", "32").replace("COLS", "64")
    # acc2 declared last, after every copy: nothing follows it in its sequence.
    lines = text.splitlines()
    acc2 = next(line for line in lines if line.strip().startswith("acc2 ="))
    lines.remove(acc2)
    kept = [line for line in lines if "acc2[" not in line] + [acc2]
    body = kernel_source(build(parse("\n".join(kept))).imports[0].inspect_source())
    assert re.findall(r"tcgen05_alloc\(\(&\((\w+)_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == [
        ("acc", "64"),
        ("acc2", "32"),
    ]
    assert body.count("tcgen05_dealloc(") == 2


SLABS = """
@T.prim_func
def k(A: T.Buffer((64, COLS), "DTYPE"), B: T.Buffer((64, COLS), "DTYPE")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((64, COLS), "DTYPE", layout=tmem_datapath_layout("F", 64, COLS))
    f = T.alloc_local((64, COLS), "DTYPE")
    T.tile_copy(f, A, "warpgroup")
    T.tile_copy(acc, f, "warpgroup")
    T.tile_copy(f, acc, "warpgroup")
    T.tile_copy(B, f, "warpgroup")
"""


@pytest.mark.parametrize(
    ("cols", "dtype", "chunks"),
    [(48, "float32", [16, 8]), (28, "float32", [8, 4, 2]), (96, "float16", [16, 8])],
)
def test_inference_next_to_a_64_row_tmem_tile_of_any_width_uses_chunked_16x64b(cols, dtype, chunks):
    kernel = parse(SLABS.replace("COLS", str(cols)).replace("DTYPE", dtype))
    body = kernel_source(build(kernel).imports[0].inspect_source())
    # 16x64b moves 2 32-bit columns per repetition: 48 fp32 columns = 24 = .x16 + .x8.
    assert re.findall(r"tcgen05_ld_16x64b_x(\d+)", body) == [str(n) for n in chunks]
    assert re.findall(r"tcgen05_st_16x64b_x(\d+)", body) == [str(n) for n in chunks]
    a = (np.arange(64 * cols) % 509).astype(dtype).reshape(64, cols)
    result = sim.run(kernel, {"A": a})
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()
