"""Copies whose extents or starts are symbolic (issue 16, "correct programs"): global buffers shaped by a kernel
argument get tail guards where the region may pass their end, and a symbolic start that is provably a multiple of
the vector length still moves 16-byte vectors. Expected values are numpy's (the data) and the obvious counts (a
(128, 64) fp16 tile is 1024 16-byte vectors: 32 warp instructions per K step)."""

import re

import numpy as np
import pytest
import tvm

from tirx_layout import S, TileLayout, sim
from tirx_layout.ops.operands import operand, provably_multiple
from tirx_layout.tools.kernel_report import kernel_source
from tirx_layout.tools.measurement import kernel_accesses, summarize
from tirx_layout.transform import build, lower_tile_ops
from tirx_layout.transform.infer_layouts import copy_cost

from kernels import example_kernels, example_module, parse


def rows_kernel():
    """``B[:M] = A[:M]`` through a (32, 64) shared tile per CTA (the example ``symbolic_rows``)."""
    return example_module("symbolic_extents").symbolic_rows_kernel()


# The row length is the symbolic one: a vector could straddle the end of a row, so the copy is element-wise.
COLUMNS = """
@T.prim_func
def k(a: T.handle, b: T.handle):
    N = T.int32()
    A = T.match_buffer(a, (32, N), "float32")
    B = T.match_buffer(b, (32, N), "float32")
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([128])
    T.tile_copy(B[0:32, bx * 32 : bx * 32 + 32], A[0:32, bx * 32 : bx * 32 + 32])
"""

FRAGMENT_ROWS = """
@T.prim_func
def k(a: T.handle, b: T.handle):
    M = T.int32()
    A = T.match_buffer(a, (M, 32), "float32")
    B = T.match_buffer(b, (M, 32), "float32")
    T.device_entry()
    tx = T.thread_id([128])
    f = T.alloc_local((128, 32), "float32", layout=wg_local_layout(32))
    T.tile_copy(f, A[0:128, 0:32], "warpgroup")
    T.tile_copy(B[0:128, 0:32], f, "warpgroup")
"""


@pytest.mark.parametrize("rows", [128, 100, 37, 1])
def test_symbolic_rows_copy_every_row_once_and_nothing_past_the_end(rows):
    a = (np.arange(rows * 64) % 251).reshape(rows, 64).astype(np.float16)
    result = sim.run(rows_kernel(), {"A": a})
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()  # the simulator raises OutOfBounds on any access past row M - 1


def test_symbolic_rows_keep_16_byte_vectors_under_a_row_guard():
    body = kernel_source(build(rows_kernel()).imports[0].inspect_source())
    assert body.count("*(uint4*)") == 4  # both sides of both copies
    assert len(re.findall(r"\) < M\)", body)) == 2  # one tail guard per copy, on the row
    script = lower_tile_ops(rows_kernel()).script()
    assert "bx * 32 + copy_round * 16 + tx // 8 < M" in script


@pytest.mark.parametrize("columns", [64, 50, 33])
def test_symbolic_row_length_guards_columns_and_copies_elements(columns):
    a = np.arange(32 * columns, dtype=np.float32).reshape(32, columns)
    result = sim.run(parse(COLUMNS), {"A": a})
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()
    body = kernel_source(build(parse(COLUMNS)).imports[0].inspect_source())
    assert "float4" not in body and "< N" in body


@pytest.mark.parametrize("rows", [128, 70])
def test_a_register_fragment_filled_from_a_symbolic_buffer_is_guarded_per_row(rows):
    a = np.arange(rows * 32, dtype=np.float32).reshape(rows, 32)
    kernel = parse(FRAGMENT_ROWS)
    result = sim.run(kernel, {"A": a})
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()


def test_a_layout_on_a_symbolic_buffer_is_refused():
    A = tvm.tirx.decl_buffer((tvm.tirx.Var("M", "int32"), 64), "float16", "A")
    with pytest.raises(ValueError, match=r"A \(global\) has the symbolic shape \[M, 64\]; only a global buffer"):
        operand(A[0:32, 0:64], {A: TileLayout(S[(32, 64) : (64, 1)])}, "source")


def test_the_cost_model_counts_a_symbolic_buffer_as_a_whole_tile():
    kernel = rows_kernel()
    M = kernel.params[0].shape[0]
    A = tvm.tirx.decl_buffer((M, 64), "float16", "A")
    tile = tvm.tirx.decl_buffer((32, 64), "float16", "tile", scope="shared")
    cost = copy_cost(tile[0:32, 0:64], A[0:32, 0:64], "cta", {}, 128)
    # 2048 elements = 256 16-byte vectors, 2 per thread: 8 warp instructions on each side.
    assert (cost.instructions, cost.global_instructions, cost.bytes, cost.unknown) == (16, 8, 8192, 0)


def test_provably_multiple_uses_divisibility_facts():
    kt, M = tvm.tirx.Var("kt", "int32"), tvm.tirx.Var("M", "int32")
    assert provably_multiple(kt * 64, 8) and provably_multiple(kt * 64 + 16, 8) and provably_multiple(0, 8)
    assert not provably_multiple(kt * 64 + 4, 8)
    assert not provably_multiple(kt * 4, 8)
    assert not provably_multiple(M, 8) and provably_multiple(M * 8, 8)


K_LOOP = """
@T.prim_func
def k(A: T.Buffer((128, 256), "float16"), B: T.Buffer((128, 256), "float16")):
    T.device_entry()
    tx = T.thread_id([128])
    tile = T.alloc_shared((128, 64), "float16")
    for kt in T.serial(4):
        T.tile_copy(tile, A[0:128, kt * START : kt * START + 64])
        T.cuda.cta_sync()
        T.tile_copy(B[0:128, kt * START : kt * START + 64], tile)
        T.cuda.cta_sync()
"""


def test_k_loop_copy_moves_16_byte_vectors():
    kernel = example_kernels()["k_loop_staging"][0]
    body = kernel_source(build(kernel).imports[0].inspect_source())
    assert re.search(r"\*\(uint4\*\)\(tile_ptr \+ [^;]*\) = \*\(uint4\*\)\(A_ptr \+ [^;]*kt \* 64", body)
    assert re.search(r"\*\(uint4\*\)\(B_ptr \+ [^;]*kt \* 64[^;]*= \*\(uint4\*\)\(tile_ptr", body)
    a = np.arange(128 * 256, dtype=np.float16).reshape(128, 256)
    summary = summarize(kernel_accesses(kernel, [a]))
    # 4 steps x 8192 elements / (8 per vector x 32 lanes) = 128 warp instructions per access kind (2-byte
    # scalars would be 1024).
    for key in [("load", "global"), ("store", "shared"), ("load", "shared"), ("store", "global")]:
        assert summary[key].vector_bytes == (16,) and summary[key].warp_executions == 128, key


def test_k_loop_start_that_is_not_a_multiple_of_the_vector_falls_back_to_narrower_accesses():
    # kt * 60 is a multiple of 4 elements (8 bytes), never provably of 8: 8-byte vectors, 256 per access kind.
    # (A's row is 256 long, so kt * 60 + 64 <= 256 for kt < 4.)
    kernel = parse(K_LOOP.replace("START", "60"))
    a = np.arange(128 * 256, dtype=np.float32).astype(np.float16).reshape(128, 256)
    summary = summarize(kernel_accesses(kernel, [a]))
    assert summary[("load", "global")].vector_bytes == (8,)
    assert summary[("load", "global")].warp_executions == 256


@pytest.mark.parametrize(("start", "vector_bytes"), [(64, 16), (60, 8)])
def test_the_cost_model_counts_a_k_loop_copy_at_one_start_with_its_vectors(start, vector_bytes):
    kernel = parse(K_LOOP.replace("START", str(start)))
    measured = summarize(kernel_accesses(kernel, [np.zeros((128, 256), np.float16)]))
    kt = tvm.tirx.Var("kt", "int32")
    A = tvm.tirx.decl_buffer((128, 256), "float16", "A")
    tile = tvm.tirx.decl_buffer((128, 64), "float16", "tile", scope="shared")
    cost = copy_cost(tile[0:128, 0:64], A[0:128, kt * start : kt * start + 64], "cta", {}, 128)
    # Per K step, what the simulator measured over the four steps, divided by four.
    per_step = measured[("load", "global")].warp_executions // 4
    assert cost.unknown == 0 and cost.global_instructions == per_step == 8192 * 2 // vector_bytes // 32
    assert cost.instructions == per_step + measured[("store", "shared")].warp_executions // 4


def test_a_stage_of_a_shared_ring_is_counted_at_stage_0():
    # every stage is the same region moved by a fixed offset (the same banks, permuted): counted as stage 0, under
    # a swizzle too, so that inference can tell a ring's candidate layouts apart (issue 30: ldmatrix rings)
    from tirx_layout import mma_shared_layout

    kt = tvm.tirx.Var("kt", "int32")
    A = tvm.tirx.decl_buffer((128, 64), "float16", "A")
    tiles = tvm.tirx.decl_buffer((4, 128, 64), "float16", "tiles", scope="shared")
    for layouts in ({}, {tiles: mma_shared_layout("float16", "128B", (4, 128, 64))}):
        staged = copy_cost(tiles[kt, 0:128, 0:64], A[0:128, 0:64], "cta", layouts, 128)
        assert staged.unknown == 0
        assert staged == copy_cost(tiles[0, 0:128, 0:64], A[0:128, 0:64], "cta", layouts, 128)
    # a global region laid out by a layout at a moving start stays unknown: charged the worst case
    G = tvm.tirx.decl_buffer((4, 128, 64), "float16", "G")
    tile = tvm.tirx.decl_buffer((128, 64), "float16", "tile", scope="shared")
    swizzled = {G: mma_shared_layout("float16", "128B", (4, 128, 64))}
    assert copy_cost(tile[0:128, 0:64], G[kt, 0:128, 0:64], "cta", swizzled, 128).unknown == 1


# A static shape (200 rows) and a start that moves with the CTA and a loop: tile t of 128 rows, t = bx + 2 i, the
# last one (rows 128..255) half past the end. Found by the pipelined GEMM (issue 21): such a copy had no guard.
STATIC_TAIL = """
@T.prim_func
def k(A: T.Buffer((200, 64), "float32"), B: T.Buffer((200, 64), "float32")):
    T.device_entry()
    bx = T.cta_id([1])
    tx = T.thread_id([128])
    for i in T.serial(2):
        T.tile_copy(B[(bx + i) * 128 : (bx + i) * 128 + 128, 0:64], A[(bx + i) * 128 : (bx + i) * 128 + 128, 0:64])
"""


def test_a_moving_region_over_a_static_shape_is_guarded_where_it_may_pass_the_end():
    a = (np.arange(200 * 64) % 251).reshape(200, 64).astype(np.float32)
    result = sim.run(parse(STATIC_TAIL), {"A": a})
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()  # OutOfBounds on any access past row 199


def test_a_moving_region_provably_inside_a_static_shape_gets_no_guard():
    # 256 rows: tiles 0 and 1 of 128 are inside for every value of bx < 1 and i < 2 (thread and loop ranges)
    inside = STATIC_TAIL.replace("(200, 64)", "(256, 64)")
    assert "if " not in lower_tile_ops(parse(inside)).script().split("for i in range(2):", 1)[1]
