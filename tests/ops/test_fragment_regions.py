"""Regions of a register fragment as ``mma.sync`` operands (``ops/operands.fragment_region``: a K chunk of A is its
own run of slots on every thread, at a fixed or a loop-dependent offset) and windows on a fragment's registers
(``T.decl_buffer(..., data=frag.data, layout=L)``, transform/lower_layout_access.py: the same registers seen as
another fragment, here the B operand of ``P @ V`` loaded as V's rows by ``ldmatrix.trans``): simulated equal to
numpy, and the regions that are not a fragment of their own refused by name."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm

import tirx_layout
from tirx_layout import mma_sync_a_layout, mma_sync_b_layout, sim
from tirx_layout.ops.operands import fragment_region
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build

from kernels import parse


def test_a_k_chunk_of_an_a_fragment_is_a_run_of_its_slots():
    whole = mma_sync_a_layout((64, 128), "bfloat16", (4, 1))
    chunk = mma_sync_a_layout((64, 32), "bfloat16", (4, 1))
    # columns 32..63: atoms 4..7 of each warp's row block, slots 16.. (4 slots per 8-column atom)
    assert fragment_region(whole, (64, 128), [0, 32], [64, 32]) == (chunk, 16)
    kk = tvm.tirx.Var("kk", "int32")
    layout, offset = fragment_region(whole, (64, 128), [0, kk * 32], [64, 32])
    assert layout == chunk
    assert tvm.sym.Analyzer().can_prove_equal(offset, kk * 16)


@pytest.mark.parametrize(
    ("begins", "extents", "message"),
    [
        ([16, 0], [16, 128], "moves elements to other threads"),  # warp 1's rows: a region on other threads
        ([0, 4], [64, 8], "moves elements to other threads"),  # half of two atoms: other lanes
        ([0, "kk * 16"], [64, 32], "must be a multiple of the region's extent 32"),
    ],
)
def test_a_region_that_is_no_fragment_of_its_own_is_refused(begins, extents, message):
    kk = tvm.tirx.Var("kk", "int32")
    begins = [kk * 16 if b == "kk * 16" else b for b in begins]
    with pytest.raises(ValueError, match=message):
        fragment_region(mma_sync_a_layout((64, 128), "bfloat16", (4, 1)), (64, 128), begins, extents)


CHUNKED = """
@T.prim_func
def chunked(A: T.Buffer((16, 64), "bfloat16"), B: T.Buffer((8, 64), "bfloat16"), D: T.Buffer((16, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    a = T.alloc_local((16, 64), "bfloat16", layout=mma_sync_a_layout((16, 64), "bfloat16"))
    b = T.alloc_local((8, 16), "bfloat16", layout=mma_sync_b_layout((8, 16), "bfloat16"))
    acc = T.alloc_local((16, 8), "float32", layout=mma_sync_c_layout((16, 8), "float32"))
    T.tile_copy(a, A)
    for kk in T.unroll(4):
        T.tile_copy(b, B[0:8, kk * 16 : kk * 16 + 16])
        T.tile_mma(acc, a[0:16, kk * 16 : kk * 16 + 16], b, accumulate=kk > 0)
    T.tile_copy(b, B[0:8, 16:32])
    T.tile_mma(acc, a[0:16, 16:32], b, accumulate=True)
    T.tile_copy(D, acc)
"""


def test_mma_sync_multiplies_k_chunks_of_a_fragment_in_place():
    func = parse(CHUNKED)
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-3, 4, shape).astype(sim.numpy_dtype("bfloat16")) for shape in ((16, 64), (8, 64)))
    want = a.astype(np.float64) @ b.astype(np.float64).T + a[:, 16:32].astype(np.float64) @ b[:, 16:32].T.astype(
        np.float64
    )
    np.testing.assert_array_equal(sim.run(func, {"A": a, "B": b}, "sm_80")["D"], want)
    cuda = build(func, "sm_80").imports[0].inspect_source()
    # each chunk is the fragment's own registers (8 slots per 16 columns), multiplied in place: no copy
    assert re.findall(r"mma_m16n8k16_f32_bf16_bf16\(\(&\(acc_ptr\[0\]\)\), \(&\(a_ptr\[(\d+)\]\)\)", cuda) == [
        "0",
        "8",
        "16",
        "24",
        "8",
    ]
    assembled = nvcc_assembles(cuda, "sm_80")
    if assembled is not None:
        assert assembled[0], assembled[1]


def test_mma_sync_refuses_a_chunk_on_other_threads():
    bad = CHUNKED.replace(
        "T.tile_mma(acc, a[0:16, 16:32], b, accumulate=True)", "T.tile_mma(acc, a[0:16, 4:20], b, accumulate=True)"
    )
    with pytest.raises(ValueError, match=r"T\.tile_mma on sm_80 \(mma\.sync\): the region \[0, 4\] \+ \[16, 16\]"):
        build(parse(bad), "sm_80")


def transposed(layout, shape):
    grouped, seps = layout.group(list(shape))
    return grouped.permute_by_groups(seps, [1, 0])


WINDOW = """
@T.prim_func
def pv(P: T.Buffer((16, 16), "float16"), V: T.Buffer((16, 32), "float16"), O: T.Buffer((16, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    Vs = T.alloc_shared((16, 32), "float16", align=128)
    p = T.alloc_local((16, 16), "float16", layout=mma_sync_a_layout((16, 16), "float16"))
    v = T.alloc_local((16, 32), "float16", layout=V_ROWS)
    vt = T.decl_buffer((32, 16), "float16", data=v.data, scope="local", layout=V_AS_B)
    acc = T.alloc_local((16, 32), "float32", layout=mma_sync_c_layout((16, 32), "float32"))
    T.tile_copy(p, P)
    T.tile_copy(Vs, V)
    T.cuda.cta_sync()
    T.tile_copy(v, Vs)
    T.tile_mma(acc, p, vt)
    T.tile_copy(O, acc)
"""


def window_kernel(window_layout=None, text=WINDOW):
    as_b = mma_sync_b_layout((32, 16), "float16")
    text = text.replace("V_ROWS", "v_rows").replace("V_AS_B", "v_as_b")

    names = {"T": tvm.script.tirx, "tvm": tvm, "tirx_layout": tirx_layout}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    names.update(v_rows=transposed(as_b, (32, 16)), v_as_b=window_layout or as_b)
    return tvm.script.from_source(text, extra_vars=names)


def test_a_window_on_a_fragment_is_the_b_operand_of_p_v():
    func = window_kernel()
    rng = np.random.default_rng(1)
    p, v = (rng.integers(-3, 4, shape).astype(np.float16) for shape in ((16, 16), (16, 32)))
    got = sim.run(func, {"P": p, "V": v}, "sm_80")["O"]
    np.testing.assert_array_equal(got, p.astype(np.float64) @ v.astype(np.float64))
    cuda = build(func, "sm_80").imports[0].inspect_source()
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in cuda  # V's rows, transposed into B's registers
    assembled = nvcc_assembles(cuda, "sm_80")
    if assembled is not None:
        assert assembled[0], assembled[1]


def test_a_window_wider_than_its_fragment_is_refused():
    wide = mma_sync_b_layout((32, 32), "float16")  # twice the fragment's slots
    text = WINDOW.replace("T.decl_buffer((32, 16)", "T.decl_buffer((32, 32)").replace(
        "T.tile_mma(acc, p, vt)", "T.tile_fill(acc, 0)"
    )
    with pytest.raises(ValueError, match="a window on a register fragment's own slots"):
        build(window_kernel(wide, text), "sm_80")
