"""VerifyLayouts' per-warp conditions: a branch on a value each warp reads at one shared address (a warp's vote,
``if vote[tx // 32 % 4] < 1``) may skip a warp's part of a TMEM copy or a ``T.tile_parallel`` loop -- ``tcgen05.ld``
and ``tcgen05.st`` move each warp's own lanes (PTX ISA 9.7.16.8.1) -- and nothing else; the kernel then rescales the
rows of the warps that voted, as attention's correction does."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.transform import LayoutVerificationError, build, verify_layouts

from kernels import parse

VOTED = """
@T.prim_func
def k(A: T.Buffer((128, 32), "float32"), V: T.Buffer((4,), "float32"), B: T.Buffer((128, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
    vote = T.alloc_shared((4,), "float32")
    f = T.alloc_local((128, 32), "float32")
    T.tile_copy(f, A, "warpgroup")
    T.tile_copy(acc, f, "warpgroup")
    if tx < 4:
        vote[tx] = V[tx]
    T.cuda.cta_sync()
    if CONDITION:
        BODY
    T.tile_copy(f, acc, "warpgroup")
    T.tile_copy(B, f, "warpgroup")
"""

ROUND_TRIP = """T.tile_copy(f, acc, "warpgroup")
        for i in T.tile_parallel(128, scope="warpgroup"):
            for c in T.tile_parallel(32):
                f[i, c] = f[i, c] * T.float32(2)
        T.tile_copy(acc, f, "warpgroup")"""


def _kernel(condition: str = "vote[tx // 32 % 4] < T.float32(1)", body: str = ROUND_TRIP):
    return parse(VOTED.replace("CONDITION", condition).replace("BODY", body))


def test_a_warp_whose_vote_says_so_skips_its_tmem_round_trip_and_the_others_make_it():
    # written here: warps 1 and 3 vote 0.5 (a row moved): their 32 rows are doubled; warps 0 and 2 vote 1: unchanged
    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    votes = np.array([1.0, 0.5, 1.0, 0.5], np.float32)
    got = sim.run(_kernel(), {"A": a, "V": votes})["B"]
    factor = np.repeat(np.where(votes < 1, 2.0, 1.0), 32)[:, None]
    np.testing.assert_array_equal(got, a * factor)
    # the CUDA: each warp branches on its own vote, the round trip inside the branch
    cuda = build(_kernel()).imports[0].inspect_source()
    branch = r"if \(vote_ptr\[\(\(\(int\)threadIdx.x\) >> 5\)\] < [^\n]*\{\n\s*tirx_layout_tcgen05_ld_32x32b_x32"
    assert re.search(branch, cuda), cuda


@pytest.mark.parametrize(
    ("condition", "body", "words"),
    [
        # lanes of one warp read different votes: the copy would be split inside a warp
        ("vote[tx % 4] < T.float32(1)", ROUND_TRIP, "depends on more than the thread index"),
        # a warpgroup copy from global memory is not one of the per-warp ops: still refused
        ("vote[tx // 32 % 4] < T.float32(1)", 'T.tile_copy(f, A, "warpgroup")', "depends on more than the thread"),
    ],
)
def test_a_per_warp_condition_is_refused_where_it_splits_a_warp_or_guards_another_op(condition, body, words):
    with pytest.raises(LayoutVerificationError, match=words):
        verify_layouts(_kernel(condition, body))


def test_a_condition_on_the_thread_index_alone_still_splits_a_warpgroup_copy():
    with pytest.raises(LayoutVerificationError, match="splits warpgroup 0"):
        verify_layouts(_kernel("tx // 32 % 4 == 1"))
