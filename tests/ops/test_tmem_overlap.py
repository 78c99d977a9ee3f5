"""Two views of the same tensor-memory cells (``T.alloc_tmem(..., within=acc, overlap=True)``: attention's 16-bit P
written over the float32 S it came from), and TMEM copies in a kernel whose last warpgroup is partial (attention's
producer and MMA warps after whole warpgroups)."""

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.transform import build

from kernels import parse

OVERLAP = """
@T.prim_func
def k(A: T.Buffer((128, 32), "float32"), P: T.Buffer((128, 32), "bfloat16"), B: T.Buffer((128, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    s = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
    p = T.alloc_tmem((128, 32), "bfloat16", layout=T.layout("S[(128, 32):(1@TLane, 1@TCol)]"), within=s OVERLAP)
    f = T.alloc_local((128, 32), "float32")
    g = T.alloc_local((128, 32), "bfloat16")
    if tx < 128:
        T.tile_copy(f, A, "warpgroup")
        T.tile_copy(s, f, "warpgroup")
        T.tile_copy(g, P, "warpgroup")
        T.tile_copy(p, g, "warpgroup")
        T.tile_copy(f, s, "warpgroup")
        T.tile_copy(B, f, "warpgroup")
"""


def _kernel(overlap: str = ", overlap=True", threads: int = 160):
    return parse(OVERLAP.replace(" OVERLAP", overlap).replace("THREADS", str(threads)))


def test_a_16_bit_view_over_float32_columns_writes_the_same_cells():
    # written here: P's 32 bfloat16 of row i take the first 16 32-bit columns of S's row (two per column, the lower
    # address in the low half); S's last 16 columns keep A
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 32)).astype(np.float32)
    p = rng.standard_normal((128, 32)).astype(ml_dtypes.bfloat16)
    got = sim.run(_kernel(), {"A": a, "P": p})["B"]
    np.testing.assert_array_equal(got[:, 16:], a[:, 16:])
    np.testing.assert_array_equal(got[:, :16].view(np.uint32), p.view(np.uint16).view(np.uint32))


def test_overlapping_views_need_overlap_true_and_overlap_needs_within():
    with pytest.raises(ValueError, match=r"p within s's allocation uses 32-bit columns 0..15, which s uses too"):
        build(_kernel(overlap=""))
    with pytest.raises(Exception, match=r"overlap=True\) reuses the columns of another buffer: give it within=acc"):
        _kernel(overlap=", overlap=True").script()  # parses
        parse(OVERLAP.replace(", within=s OVERLAP", ", overlap=True").replace("THREADS", "160"))


def test_whole_warpgroups_of_a_kernel_with_a_partial_last_one_copy_tmem_at_warpgroup_scope():
    # 160 threads: warpgroup 0 and one more warp; the copies are reached by warpgroup 0 only
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 32)).astype(np.float32)
    p = np.zeros((128, 32), ml_dtypes.bfloat16)
    got = sim.run(_kernel(threads=160), {"A": a, "P": p})["B"]
    np.testing.assert_array_equal(got[:, 16:], a[:, 16:])
    # every thread reaching a CTA-wide copy: the partial warpgroup cannot take part in it
    cta = """
@T.prim_func
def k(A: T.Buffer((128, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([160])
    s = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
    f = T.alloc_local((128, 32), "float32")
    T.tile_copy(s, f)
"""
    with pytest.raises(Exception, match=r"a TMEM copy is run by whole warpgroups: the kernel has 160 threads"):
        build(parse(cta))
