"""LowerTileOps, pass by pass: its output compared structurally with TIR written by hand, its guards, its vector
choice and its errors. End-to-end checks (build, nvcc, simulate) of the copy examples are in test_examples.py."""

import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.transform import LowerTileOps, lower_tile_ops

from kernels import parse


def check(before: str, after: str):
    tvm.ir.assert_structural_equal(lower_tile_ops(parse(before)), parse(after), map_free_vars=True)


def test_shared_copy_is_dealt_in_the_shared_storage_order():
    # Column-major shared tile: lanes write consecutive shared words; each reads its element of A's column.
    check(
        """
@T.prim_func
def k(A: T.Buffer((8, 16), "float32")):
    T.device_entry()
    tx = T.thread_id([16])
    Sm = T.alloc_shared((8, 16), "float32", layout=T.layout("S[(8, 16):(1, 8)]"))
    T.tile_copy(Sm, A)
""",
        """
@T.prim_func
def k(A: T.Buffer((8, 16), "float32")):
    T.device_entry()
    tx = T.thread_id([16])
    Sm = T.alloc_shared((8, 16), "float32", layout=T.layout("S[(8, 16):(1, 8)]"))
    Sm_flat = T.decl_buffer((128,), "float32", data=Sm.data, scope="shared", layout=None)
    A_flat = T.decl_buffer((128,), "float32", data=A.data, layout=None)
    for copy_round in range(8):
        Sm_flat[copy_round * 16 + tx] = A_flat[tx % 8 * 16 + copy_round * 2 + tx // 8]
""",
    )


def test_fragment_replicated_over_lanes_stores_from_replica_zero_only():
    check(
        """
@T.prim_func
def k(A: T.Buffer((16, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    frag = T.alloc_local((16, 4), "float32", layout=T.layout("S[(16, 4):(1@laneid, 1)] + R[2:16@laneid]"))
    T.tile_copy(A, frag)
""",
        """
@T.prim_func
def k(A: T.Buffer((16, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    frag = T.alloc_local((16, 4), "float32", layout=T.layout("S[(16, 4):(1@laneid, 1)] + R[2:16@laneid]"))
    A_flat = T.decl_buffer((64,), "float32", data=A.data, layout=None)
    frag_flat = T.decl_buffer((4,), "float32", data=frag.data, scope="local", layout=None)
    if tx // 16 == 0:
        A_flat[tx % 16 * 4:tx % 16 * 4 + 4] = frag_flat[T.Ramp(0, 1, 4)]
""",
    )


def test_destination_with_memory_replicas_is_written_at_every_place():
    check(
        """
@T.prim_func
def k(A: T.Buffer((4, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([4])
    Sm = T.alloc_shared((4, 4), "float32", layout=T.layout("S[(4, 4):(4, 1)] + R[2:16]"))
    T.tile_copy(Sm, A)
""",
        """
@T.prim_func
def k(A: T.Buffer((4, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([4])
    Sm = T.alloc_shared((4, 4), "float32", layout=T.layout("S[(4, 4):(4, 1)] + R[2:16]"))
    Sm_flat = T.decl_buffer((32,), "float32", data=Sm.data, scope="shared", layout=None)
    A_flat = T.decl_buffer((16,), "float32", data=A.data, layout=None)
    Sm_flat[tx * 4:tx * 4 + 4] = A_flat[T.Ramp(tx * 4, 1, 4)]
    Sm_flat[tx * 4 + 16:tx * 4 + 16 + 4] = A_flat[T.Ramp(tx * 4, 1, 4)]
""",
    )


def test_warp_scope_copies_each_warps_region_with_a_tail_guard():
    check(
        """
@T.prim_func
def k(A: T.Buffer((2, 32), "float32"), B: T.Buffer((2, 32), "float32")):
    T.device_entry()
    warp = T.warp_id([2])
    lane = T.lane_id([32])
    T.tile_copy(B[warp, 0:32], A[warp, 0:32], "warp")
""",
        """
@T.prim_func
def k(A: T.Buffer((2, 32), "float32"), B: T.Buffer((2, 32), "float32")):
    T.device_entry()
    warp = T.warp_id([2])
    lane = T.lane_id([32])
    B_flat = T.decl_buffer((64,), "float32", data=B.data, layout=None)
    A_flat = T.decl_buffer((64,), "float32", data=A.data, layout=None)
    if lane < 8:
        B_flat[warp * 32 + lane * 4:warp * 32 + lane * 4 + 4] = A_flat[T.Ramp(warp * 32 + lane * 4, 1, 4)]
""",
    )


SWIZZLED_TO_FRAGMENT = """
@T.prim_func
def k(A: T.Buffer((16, 64), "float16"), B: T.Buffer((16, 64), "float16")):
    T.device_entry()
    tx = T.thread_id([64])
    tile = T.alloc_shared((16, 64), "float16", layout=T.layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(16, 64):(64, 1)]))"))
    frag = T.alloc_local((16, 64), "float16", layout=T.layout("S[(8, 2, 8, 4, 2):(4@laneid, 1@warpid, 2, 1@laneid, 1)]"))
    T.tile_copy(tile, A)
    T.cuda.cta_sync()
    T.tile_copy(frag, tile)
    T.tile_copy(B, frag)
"""


def _vector_lanes(func) -> list[int]:
    lanes = []

    def on_store(store):
        index = store.indices[0]
        lanes.append(int(index.lanes) if isinstance(index, tvm.tirx.Ramp) else 1)

    tvm_ffi.structural_walk(func.body, [(tvm.tirx.BufferStore, on_store)])
    return lanes


def test_widest_legal_vectors_are_chosen_on_each_copy():
    lowered = lower_tile_ops(parse(SWIZZLED_TO_FRAGMENT))
    # global -> shared: 16 bytes (8 halves); shared -> fragment and fragment -> global: the fragment holds pairs.
    assert _vector_lanes(lowered) == [8, 2, 2]


def test_fragment_with_holes_is_guarded_and_simulates():
    # 48 elements over 32 lanes x 2 slots: lanes 24..31 hold nothing in slot 1... and lane places beyond 24 none.
    text = """
@T.prim_func
def k(A: T.Buffer((24, 2), "float32"), B: T.Buffer((24, 2), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    frag = T.alloc_local((24, 2), "float32", layout=T.layout("S[(24, 2):(1@laneid, 1)]"))
    T.tile_copy(frag, A)
    T.tile_copy(B, frag)
"""
    lowered = lower_tile_ops(parse(text))
    assert "if" in lowered.script()
    a = np.arange(48, dtype=np.float32).reshape(24, 2)
    result = sim.run(parse(text), [a])
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()


@pytest.mark.parametrize(
    ("frag_layout", "shape", "threads", "message"),
    [
        ("S[(4, 8):(1@laneid, 1@laneid)]", (4, 8), 32, "not invertible by place on axis laneid"),
        ("S[(64, 2):(1@laneid, 1)]", (64, 2), 32, "uses laneid up to 63 but the kernel.s 32 threads give 32 places"),
        ("S[(16, 2):(1@bx, 1)]", (16, 2), 32, "cannot be laid out on axis 'bx'"),
    ],
)
def test_fragment_errors_name_the_layout_and_the_reason(frag_layout, shape, threads, message):
    text = f"""
@T.prim_func
def k(A: T.Buffer({shape}, "float32")):
    T.device_entry()
    tx = T.thread_id([{threads}])
    frag = T.alloc_local({shape}, "float32", layout=T.layout("{frag_layout}"))
    T.tile_copy(frag, A)
"""
    with pytest.raises(ValueError, match=message):
        lower_tile_ops(parse(text))


def test_copy_errors():
    base = """
@T.prim_func
def k(A: T.Buffer((8, 8), "float32"), H: T.Buffer((8, 8), "int32")):
    T.device_entry()
    tx = T.thread_id([32])
    f1 = T.alloc_local((8, 8), "float32", layout=T.layout("S[(8, 4, 2):(4@laneid, 1@laneid, 1)]"))
    f2 = T.alloc_local((8, 8), "float32", layout=T.layout("S[(8, 8):(1@laneid, 1)] + R[4:8@laneid]"))
    {body}
"""
    cases = [
        ("T.tile_copy(H, A)", "a casting copy does not convert float32 to int32"),
        ("T.tile_copy(A[0:4, 0:8], A[0:8, 0:4])", "region shapes"),
        ("T.tile_copy(f1[0:4, 0:8], A[0:4, 0:8])", "a register fragment is an operand as a whole: f1 has shape"),
    ]
    for body, message in cases:
        with pytest.raises(ValueError, match=message):
            lower_tile_ops(parse(base.format(body=body)))
    with pytest.raises(Exception, match="scope must be one of"):
        parse(base.format(body='T.tile_copy(A, A, "grid")'))


def test_registered_pass_is_first_in_the_pipeline():
    from tirx_layout.transform import tirx_layout_pipeline

    passes, _, _ = tirx_layout_pipeline()
    assert passes.info.name == "tirx_layout"
    mod = LowerTileOps()(tvm.IRModule({"main": parse(SWIZZLED_TO_FRAGMENT)}))
    assert "tile_copy" not in mod["main"].script()


def test_warpgroup_scope_copies_each_warpgroups_rows():
    text = """
@T.prim_func
def k(A: T.Buffer((4, 256), "float16"), B: T.Buffer((4, 256), "float16")):
    T.device_entry()
    tx = T.thread_id([256])
    T.tile_copy(B[tx // 128 * 2:tx // 128 * 2 + 2, 0:256], A[tx // 128 * 2:tx // 128 * 2 + 2, 0:256], "warpgroup")
"""
    a = (np.arange(1024) % 97).astype(np.float16).reshape(4, 256)
    result = sim.run(parse(text), [a])
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()
    # 512 halves per warpgroup in 16-byte vectors: 64 vectors for 128 threads, so half of them idle
    assert "tx % 128 < 64" in lower_tile_ops(parse(text)).script()
