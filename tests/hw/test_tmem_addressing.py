"""Where an MMA's accumulator D and a tensor-memory A sit (hw/tmem_addressing.py ``accumulator_taddr_offset``,
``tmem_operand_offset``), against the ISA's datapath layouts ("Data path layout organization": Layout D, row i on
lane i; Layout F, lane 32(i//16) + i%16 plus the lane alignment 0 or 16; "Packing formats": D unpacked, one 32-bit
cell per element; A packed along K) restated here as an element-by-element twin, and the guide's two-stage
accumulator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tvm

from tirx_layout import R, S, TCol, TileLayout, TLane, mma_shared_layout, tmem_datapath_layout
from tirx_layout.hw.tmem_addressing import accumulator_taddr_offset, tmem_operand_offset

GUIDE_TWO_STAGES = TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)])


def isa_lane(m: int, row: int, alignment: int) -> int:
    """The ISA's datapath lane of accumulator row ``row``: Layout D (M=128) or Layout F (M=64)."""
    return row if m == 128 else 32 * (row // 16) + row % 16 + alignment


def twin_offset(layout, buffer_shape, start, shape, tcol_per_element: int, tcols_per_column: int):
    """Element by element: the (lane, 32-bit column) of the region's first element if every element (i, j) sits at
    lane ``isa_lane(i)`` and TCol ``first + tcol_per_element * j`` (first on a column boundary), else None."""
    m, n = shape
    lead = list(start[:-2])

    def place(i, j):
        p = layout.apply(*lead, start[-2] + i, start[-1] + j, shape=list(buffer_shape))
        return p.get("TLane", 0), p.get("TCol", 0)

    _, tcol0 = place(0, 0)
    if tcol0 % tcols_per_column:
        return None
    for alignment in (0, 16) if m == 64 else (0,):
        if all(
            place(i, j) == (isa_lane(m, i, alignment), tcol0 + tcol_per_element * j)
            for i, j in itertools.product(range(m), range(n))
        ):
            return alignment, tcol0 // tcols_per_column
    return None


# ---- D ----------------------------------------------------------------------------------------------------------


def test_the_guides_two_stage_accumulator():
    # Stage s of S[(2,128,112):(112@TCol,1@TLane,1@TCol)] starts at column 112 s, lane 0 (the guide, facts §2.4).
    assert accumulator_taddr_offset(GUIDE_TWO_STAGES, (1, 0, 0), (128, 112), "float32") == (0, 112)
    assert accumulator_taddr_offset(GUIDE_TWO_STAGES, (0, 0, 0), (128, 112), "float32") == (0, 0)
    assert accumulator_taddr_offset(GUIDE_TWO_STAGES, (1, 0, 0), (128, 112), "float32", (2, 128, 112)) == (0, 112)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(
    ("layout", "buffer_shape", "start", "shape"),
    [
        (tmem_datapath_layout("D", 128, 64), (128, 64), (0, 0), (128, 64)),
        (tmem_datapath_layout("D", 128, 256), (128, 256), (0, 96), (128, 160)),
        (tmem_datapath_layout("F", 64, 200), (64, 200), (0, 0), (64, 200)),
        (tmem_datapath_layout("F", 64, 48, sub_slab=1), (64, 48), (0, 8), (64, 40)),
        (TileLayout(S[(128, 64) : (1 @ TLane, 1 @ TCol)] + 32 @ TCol), (128, 64), (0, 0), (128, 64)),
        # two M=64 accumulators interleaved on one set of columns ("lane alignment 0 or 16")
        (
            TileLayout(S[(2, 4, 16, 32) : (16 @ TLane, 32 @ TLane, 1 @ TLane, 1 @ TCol)]),
            (2, 64, 32),
            (1, 0, 0),
            (64, 32),
        ),
        (TileLayout(S[(3, 128, 16) : (16 @ TCol, 1 @ TLane, 1 @ TCol)]), (3, 128, 16), (2, 0, 0), (128, 16)),
    ],
)
def test_accumulators_the_isa_datapaths_accept(layout, buffer_shape, start, shape, dtype):
    want = twin_offset(layout, buffer_shape, start, shape, 1, 1)
    assert want is not None
    assert accumulator_taddr_offset(layout, start, shape, dtype, buffer_shape) == want


def test_a_float16_accumulator_is_unpacked():
    # One 32-bit column per f16 element: TCol (16-bit halves for a 16-bit buffer) steps by 2.
    unpacked = TileLayout(S[(2, 128, 64) : (128 @ TCol, 1 @ TLane, 2 @ TCol)])
    assert twin_offset(unpacked, (2, 128, 64), (1, 0, 0), (128, 64), 2, 2) == (0, 64)
    assert accumulator_taddr_offset(unpacked, (1, 0, 0), (128, 64), "float16") == (0, 64)
    packed = tmem_datapath_layout("D", 128, 64)  # two f16 per column: what tcgen05.ld/st of packed data uses
    with pytest.raises(
        ValueError, match=r"^D's layout .* element \(0, 1\) sits at lane 0 TCol 1, Layout D puts it at lane 0 TCol 2"
    ):
        accumulator_taddr_offset(packed, (0, 0), (128, 64), "float16")
    odd = TileLayout(S[(128, 8) : (1 @ TLane, 2 @ TCol)] + 1 @ TCol)  # the high halves
    with pytest.raises(ValueError, match=r"element \(0, 0\) sits at lane 0 TCol 1, Layout D puts it at lane 0 TCol 0"):
        accumulator_taddr_offset(odd, (0, 0), (128, 8), "float16")


def test_a_family_of_layouts_agrees_with_the_twin():
    # Lane strides, lane offsets and column strides of a 64 x 16 (M=64) and 128 x 8 (M=128) TMEM tile, accepted
    # exactly when the twin finds every element where the ISA's datapath puts it.
    accepted = 0
    for (m, n), (a, b), offset, c in itertools.product(
        ((64, 16), (128, 8)), itertools.permutations([32, 16, 1, 8], 2), (0, 16, 5), (1, 2)
    ):
        layout = TileLayout(S[(4, m // 4, n) : (a @ TLane, b @ TLane, c @ TCol)] + offset @ TLane)
        want = twin_offset(layout, (m, n), (0, 0), (m, n), 1, 1)
        if want is None:
            with pytest.raises(ValueError, match=r"^D's layout"):
                accumulator_taddr_offset(layout, (0, 0), (m, n), "float32")
        else:
            accepted += 1
            assert accumulator_taddr_offset(layout, (0, 0), (m, n), "float32") == want
    assert accepted == 3  # Layout F at lane alignment 0 and 16, Layout D


def test_a_symbolic_stage_gives_a_column_expression():
    stage = tvm.tirx.Var("stage", "int32")
    lane, column = accumulator_taddr_offset(GUIDE_TWO_STAGES, (stage, 0, 0), (128, 112), "float32")
    assert lane == 0
    assert tvm.sym.Analyzer().can_prove_equal(column, stage * 112)
    lanes_move = TileLayout(S[(2, 64, 16) : (64 @ TLane, 1 @ TLane, 1 @ TCol)])
    with pytest.raises(ValueError, match="does not move the whole region by one fixed number of columns"):
        accumulator_taddr_offset(lanes_move, (stage, 0, 0), (64, 16), "float32")
    with pytest.raises(ValueError, match="only leading"):
        accumulator_taddr_offset(GUIDE_TWO_STAGES, (0, 0, stage), (128, 112), "float32")


@pytest.mark.parametrize(
    ("layout", "start", "shape", "dtype", "message"),
    [
        (
            GUIDE_TWO_STAGES,
            (0, 0, 0),
            (64, 112),
            "float32",
            r"element \(16, 0\) sits at lane 16 TCol 0, Layout F puts it at lane 32",
        ),
        (tmem_datapath_layout("F", 64, 32), (0, 0), (128, 32), "float32", "places 2048; pass the buffer's shape"),
        (tmem_datapath_layout("F", 64, 224), (0, 112), (64, 112), "float32", "pass the buffer's shape"),
        (
            TileLayout(S[(128, 32) : (1 @ TCol, 1 @ TLane)]),
            (0, 0),
            (128, 32),
            "float32",
            r"element \(0, 1\) sits at lane 1 TCol 0",
        ),
        (
            TileLayout(S[(128, 32) : (1 @ TLane, 1 @ TCol)] + 16 @ TLane),
            (0, 0),
            (128, 32),
            "float32",
            "lane 16 TCol 0, Layout D puts it at lane 0",
        ),
        (TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane]), (0, 0), (32, 4), "float32", "has 32 rows"),
        (TileLayout(S[(128, 4) : (1 @ TLane, 1 @ TCol)] + R[2 : 4 @ TCol]), (0, 0), (128, 4), "float32", "replicated"),
        (TileLayout(S[(128, 4) : (1 @ TLane, 1)]), (0, 0), (128, 4), "float32", "TLane and TCol only"),
        (tmem_datapath_layout("D", 128, 32), (0, 0), (128, 32), "bfloat16", "D is bfloat16"),
        (tmem_datapath_layout("D", 128, 32), (0, 0), (128, 32, 1), "float32", r"\(M, N\)"),
        (TileLayout(S[(128, 600) : (1 @ TLane, 1 @ TCol)]), (0, 0), (128, 600), "float32", "past the 512"),
        (
            TileLayout(S[(2, 2, 128, 8) : (16 @ TCol, 8 @ TCol, 1 @ TLane, 1 @ TCol)]),
            (1, 0, 0),
            (128, 8),
            "float32",
            "pass buffer_shape",
        ),
    ],
)
def test_layouts_the_mma_cannot_write_are_refused(layout, start, shape, dtype, message):
    with pytest.raises(ValueError, match=message) as info:
        accumulator_taddr_offset(layout, start, shape, dtype)
    assert str(info.value).startswith("D")


def test_a_region_outside_its_buffer_is_refused():
    with pytest.raises(ValueError, match=r"leaves its buffer of shape \(128, 224\) on dimension 1"):
        accumulator_taddr_offset(tmem_datapath_layout("D", 128, 224), (0, 120), (128, 112), "float32", (128, 224))
    assert accumulator_taddr_offset(
        tmem_datapath_layout("D", 128, 224), (0, 112), (128, 112), "float32", (128, 224)
    ) == (0, 112)


def test_a_swizzled_layout_is_no_tmem_layout():
    with pytest.raises(TypeError, match="D's TMEM layout must be a TileLayout"):
        accumulator_taddr_offset(mma_shared_layout("float16", "128B", (128, 64)), (0, 0), (128, 64), "float32")


# ---- A in TMEM ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "per_column"), [("bfloat16", 2), ("float16", 2), ("float8_e4m3fn", 4), ("int8", 4), ("float32", 1)]
)
def test_a_from_tmem_is_k_major_packed(dtype, per_column):
    k_step = 32 // (4 // per_column)  # elements of one 32-byte instruction step
    k = 4 * k_step
    layout = tmem_datapath_layout("D", 128, k)
    start = (0, k_step)  # from the second K step on
    want = twin_offset(layout, (128, k), start, (128, 3 * k_step), 1, per_column)
    assert want == (0, 8)  # one K step is 32 bytes: 8 columns
    assert tmem_operand_offset(layout, start, (128, 3 * k_step), dtype, (128, k)) == want
    f = tmem_datapath_layout("F", 64, k, sub_slab=1)
    assert tmem_operand_offset(f, (0, 0), (64, k), dtype) == twin_offset(f, (64, k), (0, 0), (64, k), 1, per_column)
    assert tmem_operand_offset(f, (0, 0), (64, k), dtype) == (16, 0)


@pytest.mark.parametrize(
    ("layout", "shape", "dtype", "message"),
    [
        (
            TileLayout(S[(128, 32) : (1 @ TLane, 1 @ TCol)] + 1 @ TCol),
            (128, 16),
            "bfloat16",
            r"element \(0, 0\) sits at lane 0 TCol 1, the MMA reads it .* at lane 0 TCol 0",
        ),
        (
            TileLayout(S[(128, 16) : (1 @ TLane, 2 @ TCol)]),
            (128, 16),
            "bfloat16",
            r"element \(0, 1\) sits at lane 0 TCol 2",
        ),
        (TileLayout(S[(16, 128) : (1 @ TCol, 1 @ TLane)]), (128, 16), "bfloat16", r"element \(0, 1\)|leaves"),
        (tmem_datapath_layout("D", 128, 24), (128, 24), "bfloat16", "whole instruction steps of 16"),
        (tmem_datapath_layout("D", 128, 32), (128, 32), "float64", "8-, 16- or 32-bit"),
    ],
)
def test_tmem_operands_the_mma_cannot_read_are_refused(layout, shape, dtype, message):
    with pytest.raises(ValueError, match=message) as info:
        tmem_operand_offset(layout, (0, 0), shape, dtype)
    assert str(info.value).startswith("A")


def test_the_offsets_are_those_of_the_first_element():
    # Law: whatever is accepted starts where the layout puts the region's element (0, 0), in 32-bit columns.
    rng = np.random.default_rng(20)
    for _ in range(5):
        stages, n = int(rng.integers(1, 4)), int(rng.choice([8, 16, 112]))
        layout = TileLayout(S[(stages, 128, n) : (n @ TCol, 1 @ TLane, 1 @ TCol)])
        s = int(rng.integers(0, stages))
        first = layout.apply(s, 0, 0)
        assert accumulator_taddr_offset(layout, (s, 0, 0), (128, n), "float32") == (first["TLane"], first["TCol"])


def test_malformed_regions_are_refused():
    layout = tmem_datapath_layout("D", 128, 32)
    with pytest.raises(ValueError, match=r"^D's region start must have one entry per buffer dimension"):
        accumulator_taddr_offset(layout, 0, (128, 32), "float32")
    with pytest.raises(ValueError, match=r"^D's region start \(0, 0\) and buffer shape \(1, 128, 32\) differ in rank"):
        accumulator_taddr_offset(layout, (0, 0), (128, 32), "float32", (1, 128, 32))
    stage = tvm.tirx.Var("stage", "int32")
    symbolic = TileLayout(S[(128, 32) : (1 @ TLane, 1 @ TCol)] + stage @ TCol)
    with pytest.raises(ValueError, match="its offset must be static"):
        accumulator_taddr_offset(symbolic, (0, 0), (128, 32), "float32")
    # A in bf16: stage 1 starts half-way through a 32-bit column
    half_column = TileLayout(S[(2, 128, 16) : (17 @ TCol, 1 @ TLane, 1 @ TCol)])
    with pytest.raises(ValueError, match=r"element \(0, 0\) sits at lane 0 TCol 17, the MMA reads it .* TCol 16"):
        tmem_operand_offset(half_column, (1, 0, 0), (128, 16), "bfloat16")
    with pytest.raises(ValueError, match="moves it by 17 TCol, not whole 32-bit columns of 2"):
        tmem_operand_offset(half_column, (stage, 0, 0), (128, 16), "bfloat16")
