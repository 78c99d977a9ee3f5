"""LowerLayoutAccess, pass by pass: its output compared structurally with TIR written out by hand."""

import pytest
import tvm

from tirx_layout.transform import LowerLayoutAccess, lower_layout_access

from kernels import parse


def lowered(text: str):
    return lower_layout_access(parse(text))


def check(before: str, after: str):
    tvm.ir.assert_structural_equal(lowered(before), parse(after), map_free_vars=True)


def test_swizzled_shared_buffer_becomes_xor_addressing():
    before = """
@T.prim_func
def k(A: T.Buffer((64, 64), "float16")):
    T.device_entry()
    tx = T.thread_id([128])
    Sm = T.alloc_shared((64, 64), "float16", layout=T.layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(64, 64):(64, 1)]))"))
    for i in range(32):
        Sm[i * 2 + tx // 64, tx % 64] = A[i * 2 + tx // 64, tx % 64]
"""
    after = """
@T.prim_func
def k(A: T.Buffer((64, 64), "float16")):
    T.device_entry()
    tx = T.thread_id([128])
    Sm = T.alloc_shared((4096,), "float16")
    for i in range(32):
        Sm[i * 128 + tx ^ (i * 128 + tx >> 6 & 7) << 3] = A[i * 2 + tx // 64, tx % 64]
"""
    check(before, after)


def test_offset_column_major_layout():
    before = """
@T.prim_func
def k(A: T.Buffer((8, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    Sm = T.alloc_shared((8, 8), "float32", layout=T.layout("S[(8, 8):(1, 8)] + 4"))
    Sm[tx // 8, tx % 8] = A[tx // 8, tx % 8]
    A[tx % 8, tx // 8] = Sm[tx % 8, tx // 8]
"""
    after = """
@T.prim_func
def k(A: T.Buffer((8, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    Sm = T.alloc_shared((68,), "float32")
    Sm[tx % 8 * 8 + tx // 8 + 4] = A[tx // 8, tx % 8]
    A[tx % 8, tx // 8] = Sm[tx // 64 + tx % 64 + 4]
"""
    # The load's address is (tx // 8) * 8 + tx % 8 + 4 = tx + 4; the simplifier spells it through the flat index.
    check(before, after)


def test_sliced_window_over_a_flat_buffer():
    # The window is rows 2..5, columns 4..7 of a row-major 8x8 tile: S[(4, 4):(8, 1)] + 20.
    window = tvm_layout_text = "S[(4, 4):(8, 1)] + 20"
    from tirx_layout import S, TileLayout

    assert str(TileLayout(S[(8, 8) : (8, 1)]).slice((8, 8), [(2, 6), (4, 8)])) == window
    before = f"""
@T.prim_func
def k(A: T.Buffer((4, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([16])
    Sm = T.alloc_shared((64,), "float32")
    W = T.decl_buffer((4, 4), "float32", data=Sm.data, scope="shared", layout=T.layout("{tvm_layout_text}"))
    W[tx // 4, tx % 4] = A[tx // 4, tx % 4]
"""
    after = """
@T.prim_func
def k(A: T.Buffer((4, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([16])
    Sm = T.alloc_shared((64,), "float32")
    W = T.decl_buffer((48,), "float32", data=Sm.data, scope="shared", layout=None)
    W[tx // 4 * 8 + tx % 4 + 20] = A[tx // 4, tx % 4]
"""
    check(before, after)


def test_window_into_a_layout_buffer_addresses_its_flat_storage():
    before = """
@T.prim_func
def k(A: T.Buffer((8,), "float32")):
    T.device_entry()
    tx = T.thread_id([8])
    Sm = T.alloc_shared((8, 8), "float32", layout=T.layout("S[(8, 8):(1, 8)]"))
    Row = T.decl_buffer((8,), "float32", data=Sm.data, scope="shared", layout=T.layout("S[8:8] + 3"))
    Row[tx] = A[tx]
"""
    after = """
@T.prim_func
def k(A: T.Buffer((8,), "float32")):
    T.device_entry()
    tx = T.thread_id([8])
    Sm = T.alloc_shared((64,), "float32")
    Row = T.decl_buffer((60,), "float32", data=Sm.data, scope="shared", layout=None)
    Row[tx * 8 + 3] = A[tx]
"""
    check(before, after)


def test_memory_replicas_are_all_stored_and_loaded_from_the_base():
    before = """
@T.prim_func
def k(A: T.Buffer((4,), "float32")):
    T.device_entry()
    tx = T.thread_id([4])
    Sm = T.alloc_shared((4,), "float32", layout=T.layout("S[4:1] + R[2:16]"))
    Sm[tx] = A[tx]
    A[tx] = Sm[3 - tx]
"""
    after = """
@T.prim_func
def k(A: T.Buffer((4,), "float32")):
    T.device_entry()
    tx = T.thread_id([4])
    Sm = T.alloc_shared((20,), "float32")
    Sm[tx] = A[tx]
    Sm[tx + 16] = A[tx]
    A[tx] = Sm[3 - tx]
"""
    check(before, after)


FRAGMENT = """
@T.prim_func
def k(A: T.Buffer((16, 8), "float32")):
    T.device_entry()
    warp = T.warp_id([2])
    lane = T.lane_id([32])
    frag = T.alloc_local((16, 8), "float32", layout=T.layout("S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)]"))
    mine = T.local_view(frag)
    for s in range(2):
        mine[s] = A[2 * (lane // 4) + warp, 2 * (lane % 4) + s]
"""


def test_thread_distributed_buffer_becomes_per_thread_registers():
    after = """
@T.prim_func
def k(A: T.Buffer((16, 8), "float32")):
    T.device_entry()
    warp = T.warp_id([2])
    lane = T.lane_id([32])
    frag = T.alloc_local((2,), "float32")
    mine = T.decl_buffer((2,), "float32", data=frag.data, scope="local", layout=None)
    for s in range(2):
        mine[s] = A[2 * (lane // 4) + warp, 2 * (lane % 4) + s]
"""
    check(FRAGMENT, after)


def test_direct_access_to_a_thread_distributed_buffer_says_what_to_write():
    text = FRAGMENT.replace("mine[s] = A", "frag[lane, s] = A")
    with pytest.raises(ValueError, match=r"frag_local = T.local_view\(frag\)"):
        lowered(text)


def test_tensor_memory_layout_is_not_a_load_store_layout():
    text = """
@T.prim_func
def k(A: T.Buffer((128,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    Sm = T.alloc_shared((128,), "float32", layout=T.layout("S[128:1@TLane]"))
    Sm[tx] = A[tx]
"""
    with pytest.raises(ValueError, match=r"Sm .*on axes \['TLane'\]"):
        lowered(text)


def test_layout_must_cover_the_buffer():
    text = """
@T.prim_func
def k(A: T.Buffer((8,), "float32")):
    T.device_entry()
    tx = T.thread_id([8])
    Sm = T.alloc_shared((8, 4), "float32", layout=T.layout("S[8, 8]"))
"""
    with pytest.raises(
        Exception, match=r"shape \(8, 4\) \(32 elements\) but its layout S\[\(8, 8\):\(8, 1\)\] covers 64"
    ):
        parse(text)


def test_registered_pass_runs_on_a_module_and_keeps_functions_without_layouts():
    plain = parse("""
@T.prim_func
def k(A: T.Buffer((8,), "float32")):
    T.device_entry()
    tx = T.thread_id([8])
    A[tx] = A[tx] + T.float32(1)
""")
    mod = LowerLayoutAccess()(tvm.IRModule({"main": plain}))
    tvm.ir.assert_structural_equal(mod["main"], plain)
