"""``T.local_view`` of a register fragment whose layout is inferred (issue 29, point 5): written before the layout is
known, the view is declared with the fragment's element count; LowerLayoutAccess re-declares it with the inferred
layout's slot count, so per-thread code indexes the slots the inference chose."""

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tirx_layout import sim, tcgen05_atom_layout, tmem_datapath_layout
from tirx_layout.ir.rewrite import walk
from tirx_layout.transform import infer_layouts, lower_layout_access, lower_tile_ops

from kernels import parse

DOUBLED = """
@T.prim_func
def k(A: T.Buffer((32, 8), "float32"), B: T.Buffer((32, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    f1 = T.alloc_local((32, 8), "float32", layout=T.layout("S[(32, 8):(1@laneid, 1)]"))
    f2 = T.alloc_local((32, 8), "float32")
    T.tile_copy(f1, A)
    T.tile_copy(f2, f1)
    mine = T.local_view(f2)
    for k in T.unroll(8):
        mine[k] = mine[k] * T.float32(2)
    T.tile_copy(B, f2)
"""


def _declared_extents(func, name: str) -> list[int]:
    found = []

    def on_decl(stmt):
        if stmt.buffer.name == name:
            found.append(int(stmt.buffer.shape[0]))

    walk(func.body, [(tvm.tirx.DeclBuffer, on_decl)])
    return found


def test_view_of_an_inferred_fragment_gets_the_inferred_slot_count():
    func = parse(DOUBLED)
    assert _declared_extents(func, "mine") == [256]  # the element count while the layout is unknown
    lowered = lower_layout_access(lower_tile_ops(infer_layouts(func)))
    assert _declared_extents(lowered, "mine") == [8]  # one row of 8 per lane
    a = np.arange(256, dtype=np.float32).reshape(32, 8)
    result = sim.run(func, [a])
    np.testing.assert_array_equal(result["B"], 2 * a)


def test_view_of_a_fragment_loaded_from_tmem_with_an_inferred_layout():
    @T.prim_func
    def k(A: T.Buffer((128, 32), "float32"), B: T.Buffer((128, 32), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
        into = T.alloc_local((128, 32), "float32", layout=tcgen05_atom_layout("32x32b", (128, 32), "float32"))
        out = T.alloc_local((128, 32), "float32")
        T.tile_copy(into, A)
        T.tile_copy(acc, into)
        T.tile_copy(out, acc)
        row = T.local_view(out)
        for j in T.unroll(32):
            row[j] = row[j] + T.float32(1)
        T.tile_copy(B, out)

    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    np.testing.assert_array_equal(sim.run(k, [a])["B"], a + 1)


def test_view_of_a_shared_buffer_without_a_layout_is_refused():
    with pytest.raises(Exception, match=r"T.local_view\(X\): the buffer is shared and has no tirx_layout layout"):
        parse("""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([4])
    X = T.alloc_shared((4,), "float32")
    V = T.local_view(X)
""")
