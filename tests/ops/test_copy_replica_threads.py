"""The threads of a copy's scope that a fragment's thread axes do not tell apart (``uncovered_thread_levels``):
against enumeration, the replica-0 guard built from them picks exactly one thread of every group of threads that
hold the same places, for every set of thread axes, scope and CTA size."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout.hw.threads import level_threads, thread_axis_place
from tirx_layout.ops.copy.plan import uncovered_thread_levels

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
