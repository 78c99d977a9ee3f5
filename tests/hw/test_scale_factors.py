"""Block-scaled MMA scale factors: the TMEM layout the MMA reads, its shared-memory image for ``tcgen05.cp
.32x128b.warpx4``, and the recogniser of a scale-factor operand, against the placement written down in
``docs/notes/tcgen05-mma-facts.md`` §5 (ISA "Block scaling", CuTe's ``tmem_sf_frg``, CUTLASS's ``SfKMajorAtom``):
row ``r`` of A (column of B) on lane ``r % 32`` of every warp window, in the 32-bit column ``r // 32``, K-block
``b`` of a group of four in byte ``b`` of the cell; in shared memory, for a 128-row chunk, byte ``16*l + 4*c + b``
for row ``32*c + l``. Every check below enumerates the whole matrix."""

import itertools

import pytest

from tirx_layout import (
    R,
    S,
    TCol,
    TileLayout,
    TLane,
    mma_scale_factor_layout,
    mma_scale_factor_shared_layout,
    tmem_datapath_layout,
)
from tirx_layout.hw import scale_factor_taddr

# The guide's scale-factor atom: 32 lanes x 16 bytes, replicated over the four warp windows.
GUIDE_ATOM = TileLayout(S[(32, 16) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])


def facts_tmem_place(rows, r, b, column=0):
    """(sorted lanes, byte column) of scale (r, b) per facts §5: four consecutive K-blocks share a 32-bit cell,
    the rows of one group of four K-blocks take ``rows / 32`` columns, the next group the next ones."""
    lanes = sorted(r % 32 + 32 * q for q in range(4))
    cell_column = column + r // 32 + (rows // 32) * (b // 4)
    return lanes, 4 * cell_column + b % 4


@pytest.mark.parametrize(
    ("rows", "k_blocks", "column"),
    [(128, 4, 0), (128, 8, 0), (256, 4, 0), (128, 4, 224), (256, 12, 8), (32, 1, 0), (128, 2, 3), (96, 4, 0)],
)
def test_tmem_layout_is_the_isa_placement(rows, k_blocks, column):
    layout = mma_scale_factor_layout(rows, k_blocks, column=column)
    for r, b in itertools.product(range(rows), range(k_blocks)):
        places = layout.apply_all(r, b, shape=[rows, k_blocks])
        lanes = sorted(p["TLane"] for p in places)
        columns = {p["TCol"] for p in places}
        assert (lanes, columns) == (facts_tmem_place(rows, r, b, column)[0], {facts_tmem_place(rows, r, b, column)[1]})


def test_tmem_layout_is_the_guide_atom_read_as_rows_by_k_blocks():
    # Element (32c + l, b) of the (128, 4) matrix is the guide atom's element (l, 4c + b).
    layout = mma_scale_factor_layout(128, 4)
    for c, lane, b in itertools.product(range(4), range(32), range(4)):
        assert layout.apply_all(32 * c + lane, b, shape=[128, 4]) == GUIDE_ATOM.apply_all(
            lane, 4 * c + b, shape=[32, 16]
        )


@pytest.mark.parametrize(("rows", "k_blocks"), [(128, 4), (128, 8), (256, 4), (256, 8)])
def test_shared_layout_is_the_cp_image(rows, k_blocks):
    # facts §5: in a 128-row x 4-K-block chunk of 512 bytes, row 32c + l, K-block b at byte 16l + 4c + b; a further
    # 128 rows or a further group of four K-blocks is the next chunk (rows first, as the TMEM columns run).
    layout = mma_scale_factor_shared_layout(rows, k_blocks)
    seen = set()
    for r, b in itertools.product(range(rows), range(k_blocks)):
        chunk = (b // 4) * (rows // 128) + r // 128
        c, lane = (r % 128) // 32, r % 32
        want = 512 * chunk + 16 * lane + 4 * c + b % 4
        assert layout.apply(r, b, shape=[rows, k_blocks]) == {"m": want}
        seen.add(want)
    assert seen == set(range(rows * k_blocks))  # dense: the chunks are packed


def test_shared_chunk_rows_are_what_each_lane_receives():
    # Each 16-byte row l of a chunk holds exactly lane l's TMEM cells, columns 0..3 in order: the .32x128b copy.
    shared, tmem = mma_scale_factor_shared_layout(128, 4), mma_scale_factor_layout(128, 4)
    for r, b in itertools.product(range(128), range(4)):
        byte = shared.apply(r, b, shape=[128, 4])["m"]
        place = tmem.apply(r, b, shape=[128, 4])
        assert (byte // 16, byte % 16) == (place["TLane"], place["TCol"])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: mma_scale_factor_layout(100, 4), "rows must be a multiple of 32"),
        (lambda: mma_scale_factor_layout(512, 4), "rows must be a multiple of 32 up to 256"),
        (lambda: mma_scale_factor_layout(128, 6), "k_blocks must be 1..4 or a multiple of 4"),
        (lambda: mma_scale_factor_layout(128, 0), "k_blocks must be"),
        (lambda: mma_scale_factor_layout(128, 4, column=-1), "column must be >= 0"),
        (lambda: mma_scale_factor_shared_layout(64, 4), "rows must be a multiple of 128"),
        (lambda: mma_scale_factor_shared_layout(128, 2), "k_blocks of 4"),
    ],
)
def test_constructor_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---- the recogniser ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rows", "k_blocks", "column"), [(128, 4, 0), (128, 8, 224), (256, 8, 4)])
def test_taddr_of_every_k_block(rows, k_blocks, column):
    layout = mma_scale_factor_layout(rows, k_blocks, column=column)
    for b in range(k_blocks):
        want_byte = facts_tmem_place(rows, 0, b, column)[1]
        assert scale_factor_taddr(layout, (rows, k_blocks), (0, 0), rows, b) == (want_byte // 4, want_byte % 4)


def test_taddr_of_fewer_rows_than_the_buffer_and_of_a_stage():
    # B with N = 112 reads rows 0..111 of a 128-row scale matrix; the same for stage 1 of a two-stage buffer.
    staged = TileLayout(S[(2, 4, 32, 4) : (16 @ TCol, 4 @ TCol, 1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])
    assert scale_factor_taddr(mma_scale_factor_layout(128, 4), (128, 4), (0, 0), 112, 3, "scale_b") == (0, 3)
    assert scale_factor_taddr(staged, (2, 128, 4), (1, 0, 0), 128, 2) == (4, 2)
    # A region starting at K-block 4 of an 8-block matrix: its K-block 1 is the matrix's 5th, byte 1 of column 4+.
    assert scale_factor_taddr(mma_scale_factor_layout(128, 8), (128, 8), (0, 4), 128, 1) == (4, 1)


@pytest.mark.parametrize(
    ("layout", "shape", "operand", "match"),
    [
        # not replicated over the four warp windows
        (
            TileLayout(S[(4, 32, 4) : (4 @ TCol, 1 @ TLane, 1 @ TCol)]),
            (128, 4),
            "scale_a",
            r"scale_a's layout .* row 0",
        ),
        # a 32-bit accumulator layout: row r on lane r
        (
            tmem_datapath_layout("D", 128, 4),
            (128, 4),
            "scale_b",
            r"scale_b's layout .*row 0, K-block 0 sits on lanes \[0\]",
        ),
        # the four K-blocks of a row spread over columns instead of bytes
        (
            TileLayout(S[(4, 32, 4) : (1 @ TCol, 1 @ TLane, 4 @ TCol)] + R[4 : 32 @ TLane]),
            (128, 4),
            "scale_a",
            r"row 32, K-block 0",
        ),
    ],
)
def test_taddr_refuses_other_placements(layout, shape, operand, match):
    with pytest.raises(ValueError, match=match):
        scale_factor_taddr(layout, shape, (0, 0), 128, 0, operand)


def test_taddr_refuses_a_region_outside_the_buffer_and_bad_arguments():
    layout = mma_scale_factor_layout(128, 4)
    with pytest.raises(ValueError, match="scale_a"):
        scale_factor_taddr(layout, (128, 4), (0, 0), 128, 4)
    with pytest.raises(ValueError, match="scale_b's region must start"):
        scale_factor_taddr(layout, (128, 4), 0, 128, 0, "scale_b")
    with pytest.raises(ValueError, match="tensor memory"):
        scale_factor_taddr("S[(128, 4)]", (128, 4), (0, 0), 128, 0)


def test_stages_follow_one_another_in_whole_columns():
    # Stage g of a (2, 128, 8) buffer: the one-stage placement, 2 * 4 = 8 columns on per stage.
    layout = mma_scale_factor_layout(128, 8, column=224, stages=2)
    for g, r, b in itertools.product(range(2), range(128), range(8)):
        lanes, byte = facts_tmem_place(128, r, b, 224 + 8 * g)
        places = layout.apply_all(g, r, b, shape=[2, 128, 8])
        assert sorted(p["TLane"] for p in places) == lanes and {p["TCol"] for p in places} == {byte}
    assert scale_factor_taddr(layout, (2, 128, 8), (1, 0, 0), 128, 5) == (236, 1)
