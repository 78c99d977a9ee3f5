"""The one home of the device-helper naming (families, names, calls read back) and of the CTA barriers."""

from __future__ import annotations

import pytest
import tvm

from tirx_layout.ir import device_calls


def test_the_families_and_their_prefixes():
    assert list(device_calls.HELPER_FAMILIES) == [
        "mbarrier",
        "tma",
        "sync",
        "tcgen05",
        "wgmma",
        "math",
        "mmasync",
        "cpasync",
        "ldmatrix",
        "cluster",
    ]
    for family in device_calls.HELPER_FAMILIES:
        assert "_" not in family  # a name splits into family and what at the first underscore after the prefix
        assert device_calls.helper_name(family, "x_y") == f"tirx_layout_{family}_x_y"


def test_a_helper_call_is_recognised_by_its_name_alone():
    call = device_calls.helper_call("tcgen05", "ld_32x32b_x4", "/* source */", 7, 8)
    family, what, args = device_calls.called_helper(call)
    assert (family, what, [int(a) for a in args]) == ("tcgen05", "ld_32x32b_x4", [7, 8])
    assert device_calls.called_helper(call.value) == device_calls.called_helper(call)


@pytest.mark.parametrize(
    ("family", "what"),
    [("mbarrier", "arrive_expect_tx"), ("tma", "load_2d"), ("sync", "fence_proxy_async"), ("wgmma", "wait_group_1")],
)
def test_every_family_reads_back_as_itself(family, what):
    called = device_calls.called_helper(device_calls.helper_call(family, what, ""))
    assert (called.family, called.what, called.args) == (family, what, [])
    value = device_calls.helper_value(family, what, "", "uint32")
    assert device_calls.called_helper(value)[:2] == (family, what)


def test_an_unknown_family_is_refused_by_name_and_not_ours_when_read():
    with pytest.raises(ValueError, match="unknown helper family 'hopper'"):
        device_calls.helper_name("hopper", "fence")
    with pytest.raises(ValueError, match="needs a non-empty name"):
        device_calls.helper_call("sync", "", "")
    named = tvm.tirx.Evaluate(tvm.tirx.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_hopper_fence", ""))
    assert device_calls.called_helper(named) is None


def test_other_calls_are_not_ours():
    foreign = tvm.tirx.Evaluate(tvm.tirx.call_intrin("void", "tirx.cuda.func_call", "my_helper", "/* src */"))
    assert device_calls.called_helper(foreign) is None
    assert device_calls.called_helper(tvm.tirx.Evaluate(0)) is None


def test_every_spelling_of_a_cta_barrier():
    for name in device_calls.CTA_BARRIERS:
        assert device_calls.is_cta_barrier(tvm.tirx.Evaluate(tvm.tirx.call_intrin("", name)))
    assert device_calls.is_cta_barrier(device_calls.cta_barrier())
    assert not device_calls.is_cta_barrier(device_calls.helper_call("tcgen05", "wait_ld", ""))
