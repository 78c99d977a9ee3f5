"""``T.tile_copy`` between shared tiles and fragments of 8 x 8 matrices through ``ldmatrix`` (sm_75+) and
``stmatrix`` (sm_90+), ops/copy/ldmatrix.py: which fragments are matrices (hw/ldmatrix.py), the simulator's own
model of both instructions (sim/ldmatrix.py, written from the ISA) giving the copy's data, every lowering's shared
accesses conflict-free in the bank model where the swizzle allows (and not without one), assembled by ptxas."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tirx_layout import Iter, TileLayout, sim
from tirx_layout.hw.ldmatrix import MatrixGroup, matrix_registers
from tirx_layout.hw.mma_sync import mma_sync_a_layout, mma_sync_b_layout, mma_sync_c_layout
from tirx_layout.sim.ldmatrix import matrix_places
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles
from tirx_layout.tools.measurement import kernel_accesses
from tirx_layout.transform import build

from kernels import parse

ROUND_TRIP = """
@T.prim_func
def k(A: T.Buffer((ROWS, COLS), "float16"), B: T.Buffer((ROWS, COLS), "float16")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    As = T.alloc_shared((ROWS, COLS), "float16", layout=SHARED, align=1024)
    frag = T.alloc_local((ROWS, COLS), "float16", layout=FRAGMENT)
    T.tile_copy(As, A)
    T.cuda.cta_sync()
    T.tile_copy(frag, As)
    T.tile_copy(B, frag)
"""


def round_trip(rows, cols, fragment: str, shared: str, threads=32):
    names = {"ROWS": rows, "COLS": cols, "FRAGMENT": fragment, "SHARED": shared, "THREADS": threads}
    return parse(re.sub("|".join(names), lambda m: str(names[m.group()]), ROUND_TRIP))


def test_matrix_places_are_the_isa_figures():
    # ldmatrix: lane l, register element e: row l/4, column 2(l%4)+e; with .trans the transpose
    rows, cols = matrix_places(False)
    assert [(rows[l, e], cols[l, e]) for l in (0, 5, 31) for e in (0, 1)] == [
        (0, 0),
        (0, 1),
        (1, 2),
        (1, 3),
        (7, 6),
        (7, 7),
    ]
    t_rows, t_cols = matrix_places(True)
    assert (t_rows == cols).all() and (t_cols == rows).all()


def test_which_fragments_are_matrices():
    assert matrix_registers(mma_sync_a_layout((32, 32), "bfloat16", (2, 2)), (32, 32), "bfloat16") == (
        MatrixGroup(0, 4, False),
        MatrixGroup(4, 4, False),
    )
    assert matrix_registers(mma_sync_b_layout((8, 16), "float16"), (8, 16), "float16") == (MatrixGroup(0, 2, False),)
    assert matrix_registers(mma_sync_c_layout((16, 8), "float16"), (16, 8), "float16") == (MatrixGroup(0, 2, False),)
    # 8-bit and 32-bit tiles, and a fragment that is no matrix, are not
    assert matrix_registers(mma_sync_a_layout((16, 32), "int8"), (16, 32), "int8") is None
    one_row_per_lane = TileLayout.from_iters([Iter(16, 1, "laneid"), Iter(2, 16, "laneid"), Iter(8, 1, "m")])
    assert matrix_registers(one_row_per_lane, (16, 16), "float16") is None


SWIZZLED = 'mma_shared_layout("float16", "128B", (ROWS, COLS))'
PLAIN = "TileLayout(S[(ROWS, COLS):(COLS, 1)])"
B_KN = 'TileLayout.from_iters([Iter(2, 2, "m"), Iter(4, 1, "laneid"), Iter(2, 1, "m"), Iter(8, 4, "laneid")])'


@pytest.mark.parametrize(
    ("rows", "cols", "fragment", "threads", "x", "trans"),
    [
        (32, 64, 'mma_sync_a_layout((32, 64), "float16", (2, 2))', 128, 4, False),
        (16, 64, 'mma_sync_b_layout((16, 64), "float16", (1, 2))', 64, 4, False),
        (16, 8, B_KN, 32, 2, True),
    ],
    ids=["A-x4", "B-x4", "B-on-KxN-x2-trans"],
)
def test_ldmatrix_round_trips_conflict_free_with_the_swizzle(rows, cols, fragment, threads, x, trans):
    mode = "128B" if cols >= 64 else "none"
    shared = (
        f'mma_shared_layout("float16", "{mode}", ({rows}, {cols}))'
        if cols % 8 == 0 and mode != "none"
        else (f"TileLayout(S[({rows}, {cols}):({cols}, 1)])")
    )
    func = round_trip(rows, cols, fragment, shared, threads)
    a = (np.arange(rows * cols) % 251).reshape(rows, cols).astype(np.float16)
    np.testing.assert_array_equal(sim.run(func, {"A": a}, "sm_80")["B"], a)
    cuda = build(func, "sm_80").imports[0].inspect_source()
    op = f"ldmatrix.sync.aligned.m8n8.x{x}{'.trans' if trans else ''}.shared.b16"
    assert op in cuda
    loads = [r for r in kernel_accesses(func, {"A": a}, "sm_80") if r.kind == "load" and r.scope == "shared"]
    assert loads and all(r.vector_bytes == 16 for r in loads)
    if mode == "128B":
        assert all(r.wavefronts == r.minimum_wavefronts for r in loads), [str(r) for r in loads]
    assembled = nvcc_assembles(cuda, "sm_80")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]


def test_without_a_swizzle_the_rows_of_a_matrix_conflict():
    # 128-byte rows: the 8 rows of each matrix start in one bank group, 8 wavefronts a phase instead of 1
    func = round_trip(32, 64, 'mma_sync_a_layout((32, 64), "float16", (2, 2))', "TileLayout(S[(32, 64):(64, 1)])", 128)
    a = np.ones((32, 64), np.float16)
    loads = [r for r in kernel_accesses(func, {"A": a}, "sm_80") if r.kind == "load" and r.scope == "shared"]
    assert loads and all(r.wavefronts == 8 * r.minimum_wavefronts for r in loads)


def test_stmatrix_on_sm_90_and_not_before():
    text = """
@T.prim_func
def k(A: T.Buffer((32, 32), "float16"), B: T.Buffer((32, 32), "float16")):
    T.device_entry()
    tx = T.thread_id([128])
    frag = T.alloc_local((32, 32), "float16", layout=mma_sync_c_layout((32, 32), "float16", (2, 2)))
    Cs = T.alloc_shared((32, 32), "float16", layout=mma_shared_layout("float16", "64B", (32, 32)), align=512)
    T.tile_copy(frag, A)
    T.tile_copy(Cs, frag)
    T.tile_copy(B, Cs)
"""
    func = parse(text)
    a = (np.arange(32 * 32) % 97).reshape(32, 32).astype(np.float16)
    # (sm_80's vector path for the same copy is left out of the simulation: main's barrier insertion misses the
    # barrier between a fragment's stores into a swizzled tile and the reads of it, a DataRace reported to the lead)
    np.testing.assert_array_equal(sim.run(func, {"A": a}, "sm_90a")["B"], a)
    assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in build(func, "sm_90a").imports[0].inspect_source()
    assert "stmatrix" not in build(func, "sm_80").imports[0].inspect_source()
    stores = [r for r in kernel_accesses(func, {"A": a}, "sm_90a") if r.kind == "store" and r.scope == "shared"]
    assert stores and all(r.vector_bytes == 16 and r.wavefronts == r.minimum_wavefronts for r in stores)
    assembled = nvcc_assembles(build(func, "sm_90a").imports[0].inspect_source(), "sm_90a")
    if assembled is not None:
        assert assembled[0], assembled[1]


def test_ldmatrix_is_ordered_by_the_programs_barrier_and_races_without_it():
    # the lowering adds no barrier of its own (the program's, here the one after the fill, orders the tile's
    # writers before the ldmatrix, as it would a plain load): without it the simulator reports the race
    fragment = 'mma_sync_a_layout((32, 64), "float16", (2, 2))'
    func = round_trip(32, 64, fragment, 'mma_shared_layout("float16", "128B", (32, 64))', 128)
    cuda = build(func, "sm_80").imports[0].inspect_source()
    body = kernel_source(cuda)
    assert body.count("tvm_builtin_cuda_cta_sync()") == 1 and "ldmatrix" in body
    racy = parse(
        re.sub(r"\n    T\.cuda\.cta_sync\(\)", "", ROUND_TRIP)
        .replace("ROWS", "32")
        .replace("COLS", "64")
        .replace("THREADS", "128")
        .replace("FRAGMENT", fragment)
        .replace("SHARED", 'mma_shared_layout("float16", "128B", (32, 64))')
    )
    a = np.ones((32, 64), np.float16)
    with pytest.raises(sim.DataRace, match=r"As\[\d+\]"):
        sim.run(racy, {"A": a}, "sm_80")
