"""``T.tile_parallel``: element-wise loops partitioned per thread by the fragments' layouts (ops/parallel)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

import tirx_layout  # noqa: F401
from tirx_layout import R, S, TileLayout, laneid, wg_local_layout, wgmma_accumulator_layout, wid_in_wg
from tirx_layout.ir.rewrite import walk
from tirx_layout.sim import run
from tirx_layout.transform import lower_tile_ops, verify_layouts

ROWS = TileLayout(S[(32, 4) : (1 @ laneid, 1)])
#: the row vector of a wgmma accumulator: row 16w + 8h + l/4 in lanes 4(l/4) .. +3 of warp w, slot h
ACC_ROWS = TileLayout(S[(4, 2, 8) : (1 @ wid_in_wg, 1, 4 @ laneid)] + R[4 : 1 @ laneid])


def exact(shape, seed=0, low=-8, high=8):
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.float32)


# ---- lowering ----------------------------------------------------------------------------------------------------


def test_lowers_to_each_threads_slots_unrolled():
    @T.prim_func
    def k(B: T.Buffer((32, 4), "float32")):
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})  # (sm_100a pairs the slots)
        T.device_entry()
        tx = T.thread_id([32])
        frag = T.alloc_local((32, 4), "float32", layout=ROWS)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(4):
                B[i, j] = frag[i, j] * T.float32(2)

    lowered = lower_tile_ops(k)
    loops = []
    walk(lowered.body, [(tvm.tirx.For, loops.append)])
    assert [(str(loop.loop_var), int(loop.extent), loop.kind) for loop in loops] == [
        ("slot", 4, tvm.tirx.ForKind.UNROLLED)
    ]
    assert lowered.script().splitlines()[-1].strip() == "B[tx, slot] = frag_flat[slot] * T.float32(2.0)"


def test_prints_and_parses_back():
    @T.prim_func
    def k(B: T.Buffer((32, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([64])
        frag = T.alloc_local((32, 4), "float32", layout=ROWS)
        for i in T.tile_parallel(32, scope="warp"):
            for j in T.tile_parallel(4):
                frag[i, j] = T.float32(1)

    text = k.script()
    assert 'annotations={"tirx_layout.tile_parallel": "warp"}' in text
    assert 'annotations={"tirx_layout.tile_parallel": "nested"}' in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), k)


# ---- end to end --------------------------------------------------------------------------------------------------


def test_bias_relu_cast_epilogue_on_the_wgmma_accumulator():
    acc_layout = wgmma_accumulator_layout(32)

    @T.prim_func
    def epilogue(A: T.Buffer((64, 32), "float32"), bias: T.Buffer((32,), "float32"), C: T.Buffer((64, 32), "bfloat16")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_local((64, 32), "float32", layout=acc_layout)
        T.tile_copy(acc, A)
        for i in T.tile_parallel(64):
            for j in T.tile_parallel(32):
                C[i, j] = T.Cast("bfloat16", T.max(acc[i, j] + bias[j], T.float32(0)))

    a, b = exact((64, 32)), exact((32,), 1)
    result = run(epilogue, {"A": a, "bias": b})
    expected = np.maximum(a + b, 0).astype(ml_dtypes.bfloat16)
    assert np.array_equal(result["C"], expected)
    assert (result.writes["C"] == 1).all()


def test_a_replicated_row_vector_is_read_on_the_threads_that_hold_its_rows():
    acc_layout = wgmma_accumulator_layout(16)

    @T.prim_func
    def scale_rows(A: T.Buffer((64, 16), "float32"), v: T.Buffer((64,), "float32"), C: T.Buffer((64, 16), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_local((64, 16), "float32", layout=acc_layout)
        rows = T.alloc_local((64,), "float32", layout=ACC_ROWS)
        T.tile_copy(acc, A)
        T.tile_copy(rows, v)
        for i in T.tile_parallel(64):
            for j in T.tile_parallel(16):
                acc[i, j] = acc[i, j] * rows[i] - T.Cast("float32", j)
        T.tile_copy(C, acc)

    a, v = exact((64, 16)), exact((64,), 2)
    result = run(scale_rows, {"A": a, "v": v})
    assert np.array_equal(result["C"], a * v[:, None] - np.arange(16))


def test_causal_mask_from_logical_indices():
    @T.prim_func
    def mask(A: T.Buffer((128, 64), "float32"), C: T.Buffer((128, 64), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        scores = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
        T.tile_copy(scores, A)
        for i in T.tile_parallel(128):
            for j in T.tile_parallel(64):
                scores[i, j] = T.if_then_else(j > i // 2, T.float32(-1e30), scores[i, j])
        T.tile_copy(C, scores)

    a = exact((128, 64))
    rows, cols = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    assert np.array_equal(run(mask, {"A": a})["C"], np.where(cols > rows // 2, np.float32(-1e30), a))


def test_an_open_fragment_takes_the_placement_of_the_one_it_is_computed_from():
    @T.prim_func
    def square(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_local((64, 32), "float32", layout=wgmma_accumulator_layout(32))
        out = T.alloc_local((64, 32), "float16")  # no layout: inferred
        T.tile_copy(acc, A)
        for i in T.tile_parallel(64):
            for j in T.tile_parallel(32):
                out[i, j] = T.Cast("float16", acc[i, j] * acc[i, j])
        T.tile_copy(C, out)

    a = exact((64, 32))
    assert np.array_equal(run(square, {"A": a})["C"], (a * a).astype(np.float16))


def test_replicas_store_once():
    """A fragment on the lanes of one warp run at CTA scope by 64 threads: both warps hold it, one stores."""

    @T.prim_func
    def copy_twice(A: T.Buffer((32, 4), "float32"), C: T.Buffer((32, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([64])
        frag = T.alloc_local((32, 4), "float32", layout=ROWS)
        T.tile_copy(frag, A)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(4):
                C[i, j] = frag[i, j] + T.float32(1)

    result = run(copy_twice, {"A": exact((32, 4))})
    assert (result.writes["C"] == 1).all()


PADDED = TileLayout(S[(2, 32, 1) : (1, 1 @ laneid, 1)])  # 64 places for an (8, 4) tile: a predicated tail


@pytest.mark.parametrize("layout", [PADDED, None], ids=["given", "inferred"])
def test_a_tail_padded_fragment_runs_only_the_tiles_coordinates(layout):
    """Found by the kernel fuzzer: an (8, 4) fragment over 64 threads is tail-padded (inference lays it out so too);
    its places past element 31 hold nothing, and the nest runs -- and stores -- the tile's 32 coordinates only."""

    @T.prim_func
    def relu(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([64])
        frag = T.alloc_local((8, 4), "float32", layout=layout)
        T.tile_copy(frag, A)
        for i in T.tile_parallel(8):
            for j in T.tile_parallel(4):
                frag[i, j] = T.max(frag[i, j], T.float32(0))
        for i in T.tile_parallel(8):
            for j in T.tile_parallel(4):
                C[i, j] = frag[i, j] + T.float32(i)
        T.tile_copy(B, frag)

    a = exact((8, 4))
    result = run(relu, {"A": a})
    assert (result.writes["B"] == 1).all() and (result.writes["C"] == 1).all()
    assert np.array_equal(result["B"], np.maximum(a, 0))
    assert np.array_equal(result["C"], np.maximum(a, 0) + np.arange(8)[:, None])


def test_without_a_fragment_the_coordinates_are_dealt_to_the_scope():
    @T.prim_func
    def shift(A: T.Buffer((10, 30), "float32"), C: T.Buffer((10, 30), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        tile = T.alloc_shared((10, 30), "float32")
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        for i in T.tile_parallel(10):
            for j in T.tile_parallel(30):
                C[i, j] = tile[i, j] * T.float32(3) + T.Cast("float32", i * 30 + j)

    a = exact((10, 30))
    result = run(shift, {"A": a})
    assert np.array_equal(result["C"], a * 3 + np.arange(300).reshape(10, 30))
    assert (result.writes["C"] == 1).all()


# ---- refusals ----------------------------------------------------------------------------------------------------


def test_a_fragment_placed_elsewhere_is_refused_naming_both_layouts():
    columns = TileLayout(S[(4, 8, 4) : (1, 4, 1 @ laneid)])  # element (i, j) on lane j + 4 * (i % 8)

    @T.prim_func
    def k(B: T.Buffer((32, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([32])
        rows = T.alloc_local((32, 4), "float32", layout=ROWS)
        other = T.alloc_local((32, 4), "float32", layout=columns)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(4):
                rows[i, j] = other[i, j]

    with pytest.raises(ValueError, match=r"partitions by fragment rows .* reads other\[0, 1\] .* different threads"):
        lower_tile_ops(k)


def test_a_tile_op_in_the_body_is_refused():
    @T.prim_func
    def k(A: T.Buffer((32, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([32])
        frag = T.alloc_local((32, 4), "float32", layout=ROWS)
        for _i in T.tile_parallel(32):
            T.tile_fill(frag, 0.0)

    with pytest.raises(ValueError, match=r"element-wise code; it holds the tile op T\.tile_fill"):
        verify_layouts(k)


def test_a_scope_on_a_nested_loop_is_refused():
    with pytest.raises(Exception, match="the scope is given on the outermost loop"):

        @T.prim_func
        def k(A: T.Buffer((32, 4), "float32")):
            T.device_entry()
            tx = T.thread_id([32])
            for i in T.tile_parallel(32):
                for j in T.tile_parallel(4, scope="warp"):
                    A[i, j] = T.float32(0)


def test_a_per_thread_array_indexed_by_the_coordinates_is_refused():
    @T.prim_func
    def k(A: T.Buffer((32, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([32])
        mine = T.alloc_local((4,), "float32")
        frag = T.alloc_local((32, 4), "float32", layout=ROWS)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(4):
                frag[i, j] = mine[j]

    with pytest.raises(ValueError, match=r"per-thread array mine .* by the loop's coordinates"):
        lower_tile_ops(k)


def test_tensor_memory_in_the_body_is_refused():
    from tirx_layout import tmem_datapath_layout

    @T.prim_func
    def k(A: T.Buffer((128, 32), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
        for i in T.tile_parallel(128):
            for j in T.tile_parallel(32):
                A[i, j] = acc[i, j]

    with pytest.raises(ValueError, match="reads tensor memory acc by index"):
        lower_tile_ops(k)


def test_a_cta_scope_loop_under_a_thread_condition_is_refused():
    @T.prim_func
    def k(A: T.Buffer((32, 4), "float32")):
        T.device_entry()
        tx = T.thread_id([64])
        if tx < 32:
            for i in T.tile_parallel(32):
                for j in T.tile_parallel(4):
                    A[i, j] = T.float32(0)

    with pytest.raises(ValueError, match=r"cta-scope T\.tile_parallel shares its work .* under `if tx < 32`"):
        verify_layouts(k)


# ---- pairs of slots: packed f32x2 arithmetic (sm_100a) -------------------------------------------------------------


def _pair_kernel():
    @T.prim_func
    def fused(A: T.Buffer((32, 8), "float32"), B: T.Buffer((32, 8), "float32"), C: T.Buffer((32, 8), "float32")):
        T.device_entry()
        tx = T.thread_id([32])
        a = T.alloc_local((32, 8), "float32", layout=TileLayout(S[(32, 8) : (1 @ laneid, 1)]))
        b = T.alloc_local((32, 8), "float32", layout=TileLayout(S[(32, 8) : (1 @ laneid, 1)]))
        T.tile_copy(a, A)
        T.tile_copy(b, B)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(8):
                a[i, j] = (a[i, j] - b[i, j]) * b[i, j] + a[i, j] * T.float32(0.375) - T.max(b[i, j], T.float32(1))
        T.tile_copy(C, a)

    return fused


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_slot_pairs_are_packed_on_sm_100a_lane_for_lane(arch):
    kernel = _pair_kernel()
    text = tvm.tirx.build(kernel, tvm.target.Target({"kind": "cuda", "arch": arch}), pipeline="tirx_layout")
    source = text.imports[0].inspect_source()
    packed = [name for name in ("add_f32x2", "mul_f32x2", "fma_f32x2") if f"tirx_layout_math_{name}" in source]
    assert packed == (["mul_f32x2", "fma_f32x2"] if arch == "sm_100a" else []), packed
    # multiples of 1/8 in [-8, 8]: every product and sum is exact, so the packed lanes must equal numpy exactly
    rng = np.random.default_rng(5)
    a, b = (rng.integers(-64, 65, (32, 8)).astype(np.float32) / 8 for _ in range(2))
    result = run(kernel, {"A": a, "B": b}, arch=arch)["C"]
    expected = ((a - b) * b + a * np.float32(0.375) - np.maximum(b, np.float32(1))).astype(np.float32)
    np.testing.assert_array_equal(result.view(np.uint32), expected.view(np.uint32))


def test_a_fragment_of_two_slots_is_one_packed_pair():
    """Two slots a thread make one pair: the pair loop has one trip and its variable is a constant (found by the
    kernel fuzzer: the pairing substituted a Python int into the body and the build failed with a TypeError)."""

    @T.prim_func
    def plus_one(A: T.Buffer((32, 2), "float32"), B: T.Buffer((32, 2), "float32")):
        T.device_entry()
        tx = T.thread_id([32])
        frag = T.alloc_local((32, 2), "float32", layout=TileLayout(S[(32, 2) : (1 @ laneid, 1)]))
        T.tile_copy(frag, A)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(2):
                frag[i, j] = frag[i, j] + T.float32(i)
        T.tile_copy(B, frag)

    source = tvm.tirx.build(plus_one, tvm.target.Target({"kind": "cuda", "arch": "sm_100a"}), pipeline="tirx_layout")
    assert "tirx_layout_math_add_f32x2" in source.imports[0].inspect_source()
    a = exact((32, 2))
    assert np.array_equal(run(plus_one, {"A": a}, arch="sm_100a")["B"], a + np.arange(32)[:, None])


def test_an_open_vector_the_loop_reads_takes_the_partitioning_fragments_placement_reduced():
    """``columns[j]`` and ``rows[i]`` left to inference: the accumulator's placement with the other axis reduced away
    (replicated over the threads that held it), so every thread holds what it reads."""
    from tirx_layout.ir.annotations import buffer_layouts
    from tirx_layout.transform import infer_layouts

    @T.prim_func
    def scaled(
        A: T.Buffer((64, 16), "float32"),
        c: T.Buffer((16,), "float32"),
        r: T.Buffer((64,), "float32"),
        C: T.Buffer((64, 16), "float32"),
    ):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_local((64, 16), "float32", layout=wgmma_accumulator_layout(16))
        columns = T.alloc_local((16,), "float32")
        rows = T.alloc_local((64,), "float32")
        T.tile_copy(acc, A)
        T.tile_copy(columns, c)
        T.tile_copy(rows, r)
        for i in T.tile_parallel(64):
            for j in T.tile_parallel(16):
                acc[i, j] = acc[i, j] * rows[i] + columns[j]
        T.tile_copy(C, acc)

    layouts = {b.name: str(layout) for b, layout in buffer_layouts(infer_layouts(scaled)).items()}
    assert layouts["rows"] == str(ACC_ROWS)
    assert layouts["columns"] == "S[(2, 4, 2):(2, 1@laneid, 1)] + R[(4, 8):(1@wid_in_wg, 4@laneid)]"
    a, c, r = exact((64, 16)), exact((16,), 1), exact((64,), 2)
    assert np.array_equal(run(scaled, {"A": a, "c": c, "r": r})["C"], a * r[:, None] + c)


def _vector_kernel(arch):
    @T.prim_func
    def k(B: T.Buffer((32, 4), "float32"), v: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target({"kind": "cuda", "arch": arch})})
        T.device_entry()
        tx = T.thread_id([64])
        frag = T.alloc_local((32, 4), "float32", layout=ROWS)
        for i in T.tile_parallel(32):
            for j in T.tile_parallel(4):
                B[i, j] = frag[i, j] * v[j] + T.float32(1)

    return k


def _body(func) -> list[str]:
    lines = lower_tile_ops(func).script().splitlines()
    start = next(n for n, line in enumerate(lines) if "frag_flat = " in line)
    return [re.sub(r', source_code=".*?", return_type', ", return_type", line.strip()) for line in lines[start:]]


def test_the_lowered_loop_is_the_hand_written_one():
    # sm_90a: each thread's four slots, unrolled; warp 1 holds replicas of warp 0's rows, so only warp 0 stores
    assert _body(_vector_kernel("sm_90a")) == [
        'frag_flat = T.decl_buffer((4,), data=frag.data, scope="local", layout=None)',
        "for slot in T.unroll(4):",
        "if tx // 32 == 0:",
        "B[tx % 32, slot] = frag_flat[slot] * v[slot] + T.float32(1.0)",
    ]
    # sm_100a: two slots at a time, the multiply-add of the pair one fma.rn.f32x2, its lanes stored
    fma = (
        'pair_value: T.let[T.float32x2] = T.cuda.func_call("tirx_layout_math_fma_f32x2", '
        "T.Shuffle([frag_flat[pair * 2], frag_flat[pair * 2 + 1]], [0, 1]), "
        "T.Shuffle([v[pair * 2], v[pair * 2 + 1]], [0, 1]), T.Broadcast(T.float32(1.0), 2), "
        'return_type="float32x2")'
    )
    assert _body(_vector_kernel("sm_100a")) == [
        'frag_flat = T.decl_buffer((4,), data=frag.data, scope="local", layout=None)',
        "for pair in T.unroll(2):",
        "if tx // 32 == 0:",
        fma,
        "B[tx % 32, pair * 2] = T.Shuffle([pair_value], [0])",
        "B[tx % 32, pair * 2 + 1] = T.Shuffle([pair_value], [1])",
    ]
