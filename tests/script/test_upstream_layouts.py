"""``layout=`` takes an upstream ``tvm.tirx.layout`` layout by converting it, so a kernel written for upstream moves
over one buffer at a time: converted, it is the very kernel written with this library's layouts, and it runs."""

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T
from tvm.tirx import layout as upstream

from tirx_layout import ComposeLayout, S, SwizzleLayout, TileLayout, layout_of, sim

ROWS = COLS = 64
THREADS = 128
STEPS = ROWS * COLS // THREADS

#: Upstream's fp16 128-byte-swizzled operand tile, as an upstream kernel spells it, and the same layout here.
UPSTREAM_TILE = upstream.ComposeLayout(3, 3, 3, upstream.TileLayout(upstream.S[(ROWS, COLS) : (COLS, 1)]))
OUR_TILE = ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(ROWS, COLS) : (COLS, 1)]))
UPSTREAM_ROW = upstream.TileLayout(upstream.S[(2, COLS) : (COLS, 1)])
OUR_ROW = TileLayout(S[(2, COLS) : (COLS, 1)])


def staging(tile_layout, row_layout):
    """B = A transposed through a swizzled shared tile; a two-row window declared over it carries ``row_layout``."""

    @T.prim_func
    def kernel(A: T.Buffer((ROWS, COLS), "float16"), B: T.Buffer((ROWS, COLS), "float16")):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([THREADS])
        tile = T.alloc_shared((ROWS, COLS), "float16", layout=tile_layout)
        scratch = T.alloc_shared((2 * COLS,), "float16")
        rows = T.decl_buffer((2, COLS), "float16", data=scratch.data, scope="shared", layout=row_layout)
        for i in T.serial(STEPS):
            tile[i * 2 + tx // COLS, tx % COLS] = A[i * 2 + tx // COLS, tx % COLS]
        T.cuda.cta_sync()
        for i in T.serial(STEPS):
            B[i * 2 + tx // COLS, tx % COLS] = tile[tx % COLS, i * 2 + tx // COLS]
        rows[tx // COLS, tx % COLS] = A[tx // COLS, tx % COLS]

    return kernel


@pytest.mark.parametrize(
    ("tile_layout", "row_layout"),
    [(UPSTREAM_TILE, OUR_ROW), (OUR_TILE, UPSTREAM_ROW), (UPSTREAM_TILE, UPSTREAM_ROW)],
    ids=["tile moved", "window moved", "both moved"],
)
def test_upstream_layouts_convert_to_the_kernel_written_with_ours(tile_layout, row_layout):
    moved = staging(tile_layout, row_layout)
    tvm.ir.assert_structural_equal(moved, staging(OUR_TILE, OUR_ROW))
    assert layout_of("tile", moved) == OUR_TILE
    assert layout_of("rows", moved) == OUR_ROW


def test_a_kernel_with_an_upstream_layout_runs():
    a = np.arange(ROWS * COLS, dtype=np.float16).reshape(ROWS, COLS)
    result = sim.run(staging(UPSTREAM_TILE, UPSTREAM_ROW), {"A": a})
    np.testing.assert_array_equal(result["B"], a.T)


def test_an_upstream_layout_that_does_not_fit_the_buffer_is_refused_after_conversion():
    # The parser reports the ValueError as a diagnostic pointing at the allocation.
    with pytest.raises(Exception, match=r"the allocation has shape \(64, 64\) \(4096 elements\) but its layout"):
        staging(upstream.TileLayout(upstream.S[(8, 8) : (8, 1)]), OUR_ROW)
