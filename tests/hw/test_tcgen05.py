"""The tcgen05 shape records against the simulator's model of the same instructions, which is written separately
from the PTX ISA (so the two check each other), and against the constructors built from them."""

from __future__ import annotations

import pytest

from tirx_layout import tcgen05_atom_layout
from tirx_layout.hw.tcgen05 import CP_SHAPES, LD_ST_SHAPES
from tirx_layout.sim.tmem import fragment_offsets


@pytest.mark.parametrize("shape", LD_ST_SHAPES)
def test_registers_and_columns_per_repetition_agree_with_the_simulated_fragments(shape):
    record = LD_ST_SHAPES[shape]
    for num in (1, 2, record.max_num):
        lanes, columns = fragment_offsets(shape, num)
        assert lanes.shape[1] == record.registers_per_num * num  # registers per thread
        assert columns.max() + 1 == record.columns_per_num * num  # 32-bit columns per warp
        assert lanes.max() + 1 == record.lanes  # consecutive lanes per warp


@pytest.mark.parametrize("shape", LD_ST_SHAPES)
def test_the_atom_layouts_hold_as_many_slots_as_the_instruction_moves(shape):
    record = LD_ST_SHAPES[shape]
    for rows in record.rows:
        layout = tcgen05_atom_layout(shape, (rows, record.columns_per_num * 4), "float32")  # .x4
        halves = rows // (4 * record.lanes)  # a 16-lane shape covers both halves of a warp's slab by issuing twice
        assert layout.span("m") == record.registers_per_num * 4 * halves


def test_every_cp_shape_copies_its_rows_into_distinct_lanes():
    for record in CP_SHAPES.values():
        lanes = {record.lane_of(r) + offset for r in range(record.rows) for offset in record.replica_lanes}
        assert len(lanes) == record.rows * len(record.replica_lanes) and max(lanes) < 128
