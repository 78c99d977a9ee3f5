"""A TMEM region may start at a loop variable's column (``acc[0:128, c * 32 : c * 32 + 32]`` in a ``T.serial``
loop): the tcgen05 address is computed from it, no unrolling needed (issue 29, point 5)."""

import ml_dtypes
import numpy as np
import pytest
from tvm.script import tirx as T

from tirx_layout import sim, tcgen05_atom_layout, tmem_datapath_layout
from tirx_layout.transform import infer_layouts, lower_tile_ops

WHOLE = tcgen05_atom_layout("32x32b", (128, 128), "float32")


@T.prim_func
def column_chunks(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
    full = T.alloc_local((128, 128), "float32", layout=WHOLE)
    T.tile_copy(full, A)
    T.tile_copy(acc, full)
    for c in T.serial(4):
        part = T.alloc_local((128, 32), "bfloat16")  # inferred: the 32x32b image
        T.tile_copy(part, acc[0:128, c * 32 : c * 32 + 32])
        T.tile_copy(B[0:128, c * 32 : c * 32 + 32], part)


def test_a_serial_loop_over_column_chunks_computes_the_tmem_address():
    lowered = lower_tile_ops(infer_layouts(column_chunks)).script()
    assert "for c in range(4):" in lowered
    (load,) = [line for line in lowered.splitlines() if "tcgen05_ld_32x32b_x32" in line]
    assert 'acc_taddr_1 + T.Cast("uint32", tx // 32 * 2097152 + c * 32)' in load
    a = (np.arange(128 * 128) % 61 - 30).reshape(128, 128).astype(np.float32)
    got = np.asarray(sim.run(column_chunks, [a])["B"]).view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), a)


def test_a_16_bit_region_starting_inside_a_32_bit_column_is_refused():
    @T.prim_func
    def k(A: T.Buffer((128, 64), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 64), "float16", layout=tmem_datapath_layout("D", 128, 64))
        part = T.alloc_local((128, 16), "float16", layout=tcgen05_atom_layout("32x32b", (128, 16), "float16"))
        for c in T.serial(3):
            T.tile_copy(part, acc[0:128, c * 16 + 1 : c * 16 + 17])

    with pytest.raises(ValueError, match=r"starts c \* 16 \+ 1 16-bit columns in, which is not provably a whole"):
        lower_tile_ops(k)


def test_a_loop_that_would_read_past_the_tmem_buffer_is_refused():
    @T.prim_func
    def k(A: T.Buffer((128, 128), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
        part = T.alloc_local((128, 32), "float32", layout=tcgen05_atom_layout("32x32b", (128, 32), "float32"))
        for c in T.serial(5):  # c = 4 would read columns 128..159
            T.tile_copy(part, acc[0:128, c * 32 : c * 32 + 32])

    with pytest.raises(ValueError, match=r"acc\[0:128, c \* 32:c \* 32 \+ 32\] may reach outside acc \(shape"):
        lower_tile_ops(k)
