"""The MMA layout constructors (hw/constructors.py): ``mma_shared_layout(..., major="MN")`` against the ISA's
canonical MN-major layouts (``tests/oracles/mma_isa.py``), leading stage dimensions, and
``mma_accumulator_layout`` against the ISA's datapath layouts D and F (row i on lane i; lane 32(i//16) + i%16 +
16 sub_slab) with one 32-bit column per element."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout import S, TCol, TileLayout, TLane, mma_accumulator_layout, mma_shared_layout, tmem_datapath_layout
from tirx_layout.hw.smem_descriptor import shared_matrix_descriptor
from tirx_layout.hw.tmem_addressing import accumulator_taddr_offset

from oracles import mma_isa


def addresses(layout, shape):
    grids = np.meshgrid(*(np.arange(e) for e in shape), indexing="ij")
    return np.asarray(layout.apply(*grids, shape=list(shape))["m"])


MN_CASES = [
    (dtype, mode)
    for dtype, mode in itertools.product(mma_isa.ELEMENT_BYTES, ("none", "32B", "64B", "128B", "128B_base32B"))
    if mma_isa.isa_allows(dtype, "MN", mode)
]


@pytest.mark.parametrize(("dtype", "mode"), MN_CASES)
def test_mn_major_layouts_are_the_isas_canonical_ones(dtype, mode):
    # Atoms of (row bytes of MN) x (8, or 4, K rows), K-row groups packed first: LBO = K groups x atom bytes (MN
    # atoms), SBO = atom bytes (K-row groups); 16-byte core matrices without a swizzle (SBO along MN, LBO along K).
    element = mma_isa.ELEMENT_BYTES[dtype]
    width, group = mma_isa.ROW_BYTES[mode], mma_isa.ATOM_ROWS[mode]
    line = width // element
    for rows, cols in [(line, 32), (2 * line, 64), (4 * line, 8 * group)]:
        layout = mma_shared_layout(dtype, mode, (rows, cols), major="MN")
        atom = group * width
        if mode == "none":
            lbo, sbo = 128, cols // 8 * 128
        else:
            lbo, sbo = cols // group * atom, atom
        placed = addresses(layout, (rows, cols)) * element
        for r, k in itertools.product(range(rows), range(cols)):
            want = mma_isa.swizzled(mma_isa.canonical_byte("MN", mode, element, lbo, sbo, r, k), mode)
            assert placed[r, k] == want, (rows, cols, r, k)
        assert sorted(placed.ravel().tolist()) == list(range(0, rows * cols * element, element))  # packed


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B", "128B_base32B"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float32"])
def test_stages_stack_whole_operands(dtype, mode, major):
    if not mma_isa.isa_allows(dtype, major, mode):
        return
    element = mma_isa.ELEMENT_BYTES[dtype]
    rows, cols = 2 * max(8, mma_isa.ROW_BYTES[mode] // element), 2 * max(8, 128 // element)
    single = addresses(mma_shared_layout(dtype, mode, (rows, cols), major=major), (rows, cols))
    staged = addresses(mma_shared_layout(dtype, mode, (3, rows, cols), major=major), (3, rows, cols))
    for stage in range(3):
        assert (staged[stage] == single + stage * rows * cols).all()
    # each stage starts on a swizzle repeat, so every stage has the same descriptor but its start
    layout = mma_shared_layout(dtype, mode, (rows, cols), major=major)
    first = shared_matrix_descriptor(layout, (rows, cols), dtype, 0, operand="A")
    later = shared_matrix_descriptor(layout, (rows, cols), dtype, 2 * rows * cols * element, operand="A")
    assert (later.lbo, later.sbo, later.swizzle, later.k_offsets) == (
        first.lbo,
        first.sbo,
        first.swizzle,
        first.k_offsets,
    )


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("float32", "128B", (64, 32)), {"major": "MN"}, "only with the 128B swizzle with 32-byte atoms"),
        (("float16", "128B_base32B", (64, 32)), {"major": "MN"}, "for MN-major 32-bit operands only, got MN-major"),
        (("float32", "128B_base32B", (64, 32)), {}, "for MN-major 32-bit operands only, got K-major float32"),
        (("bfloat16", "128B", (32, 64)), {"major": "MN"}, r"whole atoms of 64 bfloat16 rows x 8 K rows"),
        (("float32", "128B_base32B", (32, 6)), {"major": "MN"}, r"whole atoms of 32 float32 rows x 4 K rows"),
        (("bfloat16", "128B", (16, 64)), {"major": "row"}, "major must be 'K' or 'MN'"),
        (("bfloat16", "16B", (16, 64)), {}, "unknown swizzle mode"),
    ],
)
def test_mma_shared_layout_refusals(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mma_shared_layout(*args, **kwargs)


# ---- the accumulator -------------------------------------------------------------------------------------------


def isa_place(m: int, row: int, col: int, stage: int, n: int, sub_slab: int, per_column: int):
    """(lane, TCol) of accumulator element (row, col) of stage ``stage`` by the ISA's datapath layouts, one 32-bit
    column per element (``per_column`` TCol units per column)."""
    lane = row if m == 128 else 32 * (row // 16) + row % 16 + 16 * sub_slab
    return lane, (stage * n + col) * per_column


@pytest.mark.parametrize(
    ("m", "n", "dtype", "stages", "sub_slab"),
    [
        (128, 112, "float32", 2, 0),
        (128, 256, "int32", 1, 0),
        (128, 64, "float16", 3, 0),
        (64, 200, "float32", 1, 0),
        (64, 48, "float32", 2, 1),
        (64, 8, "float16", 4, 1),
    ],
)
def test_the_accumulator_is_where_the_isa_puts_it(m, n, dtype, stages, sub_slab):
    layout = mma_accumulator_layout(m, n, dtype, stages, sub_slab)
    per_column = 2 if dtype == "float16" else 1
    shape = (stages, m, n) if stages > 1 else (m, n)
    grids = np.meshgrid(*(np.arange(e) for e in shape), indexing="ij")
    places = layout.apply(*grids, shape=list(shape))
    lanes, tcols = (np.asarray(places[a]).reshape(stages, m, n) for a in ("TLane", "TCol"))
    for s, row, col in itertools.product(range(stages), range(m), range(n)):
        assert (lanes[s, row, col], tcols[s, row, col]) == isa_place(m, row, col, s, n, sub_slab, per_column)
    for s in range(stages):
        start = (s, 0, 0) if stages > 1 else (0, 0)
        assert accumulator_taddr_offset(layout, start, (m, n), dtype, shape) == (16 * sub_slab, s * n)


def test_the_accumulator_is_the_guides_and_the_datapath_layouts():
    assert mma_accumulator_layout(128, 112, stages=2) == TileLayout(
        S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)]
    )
    for m, datapath in ((128, "D"), (64, "F")):
        got = mma_accumulator_layout(m, 32)
        want = tmem_datapath_layout(datapath, m, 32)
        r, c = np.meshgrid(np.arange(m), np.arange(32), indexing="ij")
        for axis in ("TLane", "TCol"):
            assert (np.asarray(got.apply(r, c, shape=[m, 32])[axis]) == want.apply(r, c, shape=[m, 32])[axis]).all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((128, 64, "bfloat16"), "accumulates into"),
        ((96, 64), "M is 64 .* or 128"),
        ((128, 12), "N is 8..256 in steps of 8, got 12"),
        ((128, 264), "got 264"),
        ((128, 256, "float32", 3), "3 stages of 256 columns must fit the 512"),
        ((128, 64, "float32", 1, 1), "sub_slab is 0 or 1, and 1 only for M = 64"),
        ((128, 64, "float32", 0), "stages"),
    ],
)
def test_mma_accumulator_layout_refusals(args, message):
    with pytest.raises(ValueError, match=message):
        mma_accumulator_layout(*args)


def test_a_single_atom_keeps_one_iter_per_dimension():
    # Callers apply a one-atom operand by (row, k) without a shape (the CLI's bank picture does): the layout is not
    # fused into one iter.
    assert mma_shared_layout("float16", "128B", (8, 64)).tile_layout == TileLayout(S[(8, 64) : (64, 1)])
    assert mma_shared_layout("float32", "128B_base32B", (32, 4), major="MN").tile_layout == TileLayout(
        S[(32, 4) : (1, 32)]
    )
