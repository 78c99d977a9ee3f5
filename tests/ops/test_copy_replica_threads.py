"""The threads of a copy's scope that a fragment's thread axes do not tell apart (``uncovered_thread_levels``):
against enumeration, the replica-0 guard built from them picks exactly one thread of every group of threads that
hold the same places, for every set of thread axes, scope and CTA size."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.hw.threads import level_threads, thread_axis_place
from tirx_layout.ops.copy.plan import uncovered_thread_levels

from kernels import parse

AXES = ["laneid", "wid_in_wg", "warpid", "tid_in_wg", "wgid", "tx"]


@pytest.mark.parametrize("cta_threads", [32, 64, 128, 256])
@pytest.mark.parametrize("scope", ["cta", "warpgroup", "warp"])
def test_the_guard_keeps_one_thread_per_group_of_replicas(cta_threads, scope):
    tid = np.arange(cta_threads)
    size = level_threads(scope, cta_threads)
    for count in range(len(AXES) + 1):
        for axes in itertools.combinations(AXES, count):
            places = [thread_axis_place(axis, tid, cta_threads)[0] for axis in axes]
            groups = {}
            for t in range(cta_threads):  # same scope unit, same places on every axis: replicas
                groups.setdefault((t // size, *(int(p[t]) for p in places)), []).append(t)
            levels = uncovered_thread_levels(axes, scope, cta_threads)
            stores = np.ones(cta_threads, bool)
            for unit, n in levels:
                stores &= (tid // unit) % n == 0
            for members in groups.values():
                assert stores[members].sum() == 1, (axes, scope, cta_threads, members)


def test_fragment_on_lanes_in_a_cta_leaves_the_warp_and_warpgroup_unread():
    assert uncovered_thread_levels(["laneid"], "cta", 256) == [(32, 4), (128, 2)]
    assert uncovered_thread_levels(["warpid", "laneid"], "cta", 256) == []
    assert uncovered_thread_levels(["tid_in_wg"], "cta", 256) == [(128, 2)]
    assert uncovered_thread_levels([], "warp", 128) == [(1, 32)]


STORE = """
@T.prim_func
def k(A: T.Buffer((ROWS,), "float32"), B: T.Buffer((ROWS,), "float32")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    frag = T.alloc_local((16,), "float32", layout=T.layout("LAYOUT"))
    T.tile_copy(frag, A[tx // 32 * 16 : tx // 32 * 16 + 16], "warp")
    T.tile_copy(B[tx // 32 * 16 : tx // 32 * 16 + 16], frag, "warp")
"""


@pytest.mark.parametrize(
    ("layout", "threads"),
    [
        ("S[16:1] + R[16:1@tid_in_wg]", 32),  # a warpgroup-level axis whose replicas stay in one warp
        ("S[16:1] + R[4:16@tid_in_wg]", 64),  # a replica digit half inside a warp (0, 16), half across (32, 48)
        ("S[16:1] + R[2:1@warpid]", 64),  # each warp's own copy
    ],
)
def test_a_warp_scope_store_is_made_once_per_element_by_each_warp(layout, threads):
    """Replicas are told apart by the threads a step of them moves, not by their axis's level (found by the kernel
    fuzzer: a reduction's result on ``R[16:1@tid_in_wg]`` was stored by all 16 threads at scope "warp", a race)."""
    rows = threads // 32 * 16
    text = STORE.replace("LAYOUT", layout).replace("THREADS", str(threads)).replace("ROWS", str(rows))
    a = np.arange(rows, dtype=np.float32)
    result = sim.run(parse(text), {"A": a})  # a second store of an element in one instruction is a DataRace
    assert (result.writes["B"] == 1).all() and np.array_equal(result["B"], a)
