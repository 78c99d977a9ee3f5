"""The CTA's threads read from a kernel's scope definitions (IR fields, never printed text)."""

from __future__ import annotations

import pytest
from tvm.tirx import exec_scope

from tirx_layout.hw.threads import CTA_LEVELS
from tirx_layout.ir import threads

from kernels import parse


def test_the_scope_table_is_tvms_own():
    # TVM keeps the enum's meaning in a private table; our table is asked of TVM's constructor instead.
    tvms = {k: pair for k, pair in exec_scope._SCOPE_BINDING_TO_PARENT_CUR.items() if set(pair) <= set(CTA_LEVELS)}
    assert tvms == threads._SCOPE_PAIRS


def kernel(definitions: str, extent: int):
    return parse(f"""
@T.prim_func
def k(A: T.Buffer(({extent},), "float32")):
    T.device_entry()
{definitions}
    A[0] = T.float32(0)
""")


@pytest.mark.parametrize(
    ("definitions", "index", "count"),
    [
        ("    tx = T.thread_id([96])", "tx", 96),
        ("    warp = T.warp_id([4])\n    lane = T.lane_id([32])", "warp * 32 + lane", 128),
        (
            "    wg = T.warpgroup_id([2])\n    warp = T.warp_id_in_wg([4])\n    lane = T.lane_id([32])",
            "wg * 128 + warp * 32 + lane",
            256,
        ),
        ("    wg = T.warpgroup_id([2])\n    t = T.thread_id_in_wg([128])", "wg * 128 + t", 256),
    ],
)
def test_the_cta_thread_index_combines_the_levels(definitions, index, count):
    found = threads.cta_threads(kernel(definitions, count))
    assert str(found.index) == index and found.count == count
    assert all(0 < extent <= count for extent in found.bounds.values())


def test_a_kernel_without_threads_is_a_clear_error():
    with pytest.raises(ValueError, match="does not define its threads below the cta level"):
        threads.cta_threads(kernel("    bx = T.cta_id([2])", 4))
