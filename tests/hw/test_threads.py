"""Where a CTA thread sits on each thread axis: the rule read off the axis registry, against the table of SPEC §1
written out by hand, for ints, arrays and expressions."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from tirx_layout import Axis
from tirx_layout.hw.threads import level_threads, thread_axis_place, thread_unit

#: SPEC §1 by hand: axis -> (place of CTA thread t, places in a CTA of n threads).
SPEC = {
    "laneid": (lambda t: t % 32, lambda n: min(n, 32)),
    "warpid": (lambda t: t // 32, lambda n: max(n // 32, 1)),
    "tx": (lambda t: t, lambda n: n),
    "tid_in_wg": (lambda t: t % 128, lambda n: min(n, 128)),
    "wid_in_wg": (lambda t: t // 32 % 4, lambda n: min(max(n // 32, 1), 4)),
    "wgid": (lambda t: t // 128, lambda n: max(n // 128, 1)),
}


@pytest.mark.parametrize("axis", sorted(SPEC))
@pytest.mark.parametrize("count", [16, 32, 64, 96, 128, 256, 384, 1024])
def test_every_cta_thread_axis_follows_the_table(axis, count):
    tids = np.arange(count)
    place, extent = thread_axis_place(axis, tids, count)
    want_place, want_extent = SPEC[axis]
    assert extent == want_extent(count)
    np.testing.assert_array_equal(place, want_place(tids))
    assert [thread_axis_place(axis, int(t), count)[0] for t in (0, count - 1)] == [want_place(0), want_place(count - 1)]


@pytest.mark.parametrize("axis", sorted(SPEC))
def test_the_expression_form_is_the_integer_form(axis):
    t = tvm.tirx.Var("t", "int32")
    expr, _ = thread_axis_place(axis, t, 256)
    analyzer = tvm.sym.Analyzer()
    for value in (0, 31, 32, 127, 128, 255):
        analyzer.bind(t, tvm.tirx.IntImm("int32", value))
        assert int(analyzer.simplify(expr)) == SPEC[axis][0](value)
        analyzer = tvm.sym.Analyzer()


def test_units_and_levels():
    assert [thread_unit(a) for a in ("laneid", "tx", "tid_in_wg", "warpid", "wid_in_wg", "wgid")] == [
        1,
        1,
        1,
        32,
        32,
        128,
    ]
    assert level_threads("warp", 16) == 16 and level_threads("cta", 96) == 96
    with pytest.raises(ValueError, match="no execution level inside a CTA"):
        level_threads("cluster", 128)


def test_axes_outside_the_cta_are_refused_and_registered_ones_follow_the_rule():
    with pytest.raises(ValueError, match="cannot be laid out on axis 'bx'"):
        thread_axis_place("bx", 0, 128)
    with pytest.raises(ValueError, match="cannot be laid out on axis 'm'"):
        thread_axis_place("m", 0, 128)
    Axis.register("half_warp_in_wg", "thread", scope="warpgroup", subscope="warp")  # same levels as wid_in_wg
    np.testing.assert_array_equal(
        thread_axis_place("half_warp_in_wg", np.arange(256), 256)[0], np.arange(256) // 32 % 4
    )
