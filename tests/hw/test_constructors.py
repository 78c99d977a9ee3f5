"""Hardware constructors against an independent transcription of the PTX ISA (tcgen05 "Matrix fragments for shape
...", "Data Path Layout Organization"; formulas as in the PTX figures, cross-checked with CUTLASS's SM100 atoms).
Every check is exhaustive over the whole tile and every thread/register."""

import itertools

import pytest

from tirx_layout import (
    ComposeLayout,
    TileLayout,
    mma_shared_layout,
    swizzle_mode,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
)
from tirx_layout.analysis import bank_conflicts, contiguous, row_vectors

# PTX ISA: per warp, (lane l, register r) -> (row within the 16/32-lane slab, 32-bit column).
PTX_FRAGMENT = {
    "32x32b": (1, lambda l, r: (l, r)),
    "16x64b": (1, lambda l, r: ((l >> 2) + 8 * (l & 1), ((l >> 1) & 1) + 2 * r)),
    "16x128b": (2, lambda l, r: ((l >> 2) + 8 * (r & 1), (l & 3) + 4 * (r >> 1))),
    "16x256b": (4, lambda l, r: ((l >> 2) + 8 * ((r >> 1) & 1), 2 * (l & 3) + (r & 1) + 8 * (r >> 2))),
}
MAX_NUM = {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32}
COLUMNS_PER_NUM = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}


def expected_fragment(shape, rows, num, elements_per_register):
    """{(row, element col): (thread in warpgroup, element slot)} from the PTX decomposition."""
    registers_per_num, place = PTX_FRAGMENT[shape]
    registers = registers_per_num * num
    slab = 32 if shape == "32x32b" else 16
    halves = rows // (4 * slab)
    out = {}
    for warp, half, lane, reg, part in itertools.product(
        range(4), range(halves), range(32), range(registers), range(elements_per_register)
    ):
        if slab == 16 and lane >= 32:
            continue
        row, col = place(lane, reg)
        logical_row = warp * slab * halves + half * slab + row
        slot = (half * registers + reg) * elements_per_register + part
        out[(logical_row, col * elements_per_register + part)] = (32 * warp + lane, slot)
    return out


def thread_and_slot(place):
    if "tid_in_wg" in place:
        return place["tid_in_wg"], place["m"]
    return 32 * place["wid_in_wg"] + place["laneid"], place["m"]


CASES = [
    (shape, dtype, rows, num)
    for shape in PTX_FRAGMENT
    for dtype in ("float32", "float16", "bfloat16")
    for rows in ((128,) if shape == "32x32b" else (64, 128))
    for num in (1, 2, 8, MAX_NUM[shape])
]


@pytest.mark.parametrize(("shape", "dtype", "rows", "num"), CASES)
def test_tcgen05_atom_layout_equals_the_ptx_fragment(shape, dtype, rows, num):
    per_register = 1 if dtype == "float32" else 2
    cols = COLUMNS_PER_NUM[shape] * num * per_register
    layout = tcgen05_atom_layout(shape, (rows, cols), dtype)
    want = expected_fragment(shape, rows, num, per_register)
    assert len(want) == rows * cols  # the PTX decomposition covers the tile exactly once
    seen = set()
    for (row, col), expected in want.items():
        got = thread_and_slot(layout.apply(row, col, shape=[rows, cols]))
        assert got == expected, (row, col)
        seen.add(got)
    assert len(seen) == rows * cols


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("16x32b", (64, 8), "float32"), "instr_shape"),
        (("16x64b", (32, 8), "float32"), "rows in \\(64, 128\\), got 32"),
        (("32x32b", (64, 8), "float32"), "rows in \\(128,\\), got 64"),
        (("16x64b", (64, 6), "float32"), "cols=6"),
        (("16x256b", (64, 512), "float32"), "up to 32"),
        (("16x64b", (64, 8), "int8"), "32- or 16-bit"),
        (("16x64b", (64,), "float32"), "tensor_shape"),
    ],
)
def test_tcgen05_atom_layout_rejects_bad_arguments(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        tcgen05_atom_layout(*args)


def datapath_lane(datapath, i, j, cols, sub_slab=0):
    """PTX "Data Path Layout Organization": (logical row i, column j) -> (TMEM lane, column) per CTA."""
    if datapath in "AD":
        return i, j
    if datapath in "BE":
        return i + 64 * (j // (cols // 2)), j % (cols // 2)
    if datapath in "CF":
        return 32 * (i // 16) + 16 * sub_slab + i % 16, j
    return i + 32 * (j // (cols // 4)), j % (cols // 4)  # G


@pytest.mark.parametrize(
    ("datapath", "rows", "sub_slab"),
    [("A", 128, 0), ("D", 128, 0), ("B", 64, 0), ("E", 64, 0), ("C", 64, 1), ("F", 64, 0), ("F", 64, 1), ("G", 32, 0)],
)
@pytest.mark.parametrize("cols", [32, 256])
def test_tmem_datapaths_equal_the_ptx_organisation(datapath, rows, sub_slab, cols):
    layout = tmem_datapath_layout(datapath, rows, cols, sub_slab=sub_slab)
    places = set()
    for i, j in itertools.product(range(rows), range(cols)):
        place = layout.apply(i, j, shape=[rows, cols])
        assert (place["TLane"], place["TCol"]) == datapath_lane(datapath, i, j, cols, sub_slab)
        places.add((place["TLane"], place["TCol"]))
    assert len(places) == rows * cols


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("X", 128, 32), "unknown datapath 'X'"),
        (("D", 64, 32), "holds 128 rows, got 64"),
        (("F", 64, 32, 2), "sub_slab must be 0 or 1"),
        (("D", 128, 32, 1), "C and F only"),
        (("G", 32, 30), "does not"),
        (("D", 128, 0), "cols must be >= 1"),
    ],
)
def test_tmem_datapath_rejects_bad_arguments(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        tmem_datapath_layout(*args)


def test_wg_local_layout():
    layout = wg_local_layout(8)
    assert all(layout.apply(r, c, shape=[128, 8]) == {"tid_in_wg": r, "m": c} for r in range(128) for c in range(8))
    with pytest.raises(ValueError, match="rows must be in"):
        wg_local_layout(8, rows=256)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
def test_mma_shared_layout_modes_round_trip_and_are_conflict_free(dtype, mode):
    width = 16 if mode == "none" else int(mode[:-1])
    shape = (64, 2 * 128 // (4 if dtype == "float32" else 2))
    layout = mma_shared_layout(dtype, mode, shape)
    assert swizzle_mode(layout, dtype) == mode
    assert isinstance(layout, TileLayout if mode == "none" else ComposeLayout)
    # A bijection onto the tile's elements, atoms of 8 rows x width bytes contiguous.
    addresses = {layout.apply(i, j, shape=list(shape))["m"] for i in range(shape[0]) for j in range(shape[1])}
    assert addresses == set(range(shape[0] * shape[1]))
    atom_elements = 8 * width // (4 if dtype == "float32" else 2)
    assert {
        layout.apply(i, j, shape=list(shape))["m"] // atom_elements
        for i in range(8)
        for j in range(width // (4 if dtype == "float32" else 2))
    } == {0}
    if mode == "128B":
        assert bank_conflicts(layout, dtype, row_vectors(shape, dtype)).conflict_free
        assert bank_conflicts(layout, dtype, contiguous(shape, dtype)).conflict_free


def test_mma_shared_layout_and_mode_errors():
    with pytest.raises(ValueError, match="unknown swizzle mode"):
        mma_shared_layout("float16", "256B", (64, 64))
    with pytest.raises(ValueError, match="whole atoms"):
        mma_shared_layout("float16", "128B", (60, 64))
    from tirx_layout import S, SwizzleLayout

    with pytest.raises(ValueError, match="no hardware swizzle mode"):
        swizzle_mode(ComposeLayout(SwizzleLayout(3, 3, 4), TileLayout(S[1024:1])), "float16")


@pytest.mark.parametrize("mode", ["none", "32B", "128B"])
def test_mma_shared_layout_stacks_pipeline_stages(mode):
    # (stages, rows, K): stage s is the (rows, K) operand at s * rows * K, swizzled alike (issue 18)
    single = mma_shared_layout("float16", mode, (16, 64))
    staged = mma_shared_layout("float16", mode, (3, 16, 64))
    assert swizzle_mode(staged, "float16") == mode
    addresses = set()
    for s, i, j in itertools.product(range(3), range(16), range(64)):
        address = staged.apply(s, i, j, shape=[3, 16, 64])["m"]
        assert address == s * 16 * 64 + single.apply(i, j, shape=[16, 64])["m"]
        addresses.add(address)
    assert addresses == set(range(3 * 16 * 64))
    two_levels = mma_shared_layout("float16", mode, (2, 2, 16, 64))
    assert two_levels.apply(1, 1, 3, 5, shape=[2, 2, 16, 64])["m"] == 3 * 1024 + single.apply(3, 5, shape=[16, 64])["m"]
    with pytest.raises(ValueError, match="leading dimensions"):
        mma_shared_layout("float16", mode, (0, 16, 64))
    with pytest.raises(ValueError, match="at least two entries"):
        mma_shared_layout("float16", mode, (64,))


def test_bad_shapes_modes_and_dtypes_are_named():
    """Issue 17: each was a Python message naming nothing (unpacking, division by zero, a TVM comparison)."""
    import tvm

    with pytest.raises(ValueError, match=r"shape must be \(\.\.\., rows, K\), at least two entries, got \(4,\)"):
        mma_shared_layout("float16", "32B", (4,))
    with pytest.raises(ValueError, match="dtype 'void' has 0 bits"):
        swizzle_mode(mma_shared_layout("float16", "128B", (64, 64)), "void")
    with pytest.raises(ValueError, match="unknown swizzle mode x"):
        mma_shared_layout("float16", tvm.tirx.Var("x", "int32"), (64, 64))
