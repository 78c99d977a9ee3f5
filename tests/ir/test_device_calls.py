"""The one home of the device-helper naming and of the CTA barriers."""

from __future__ import annotations

import tvm

from tirx_layout.ir import device_calls


def test_a_helper_call_is_recognised_by_its_name_alone():
    call = device_calls.helper_call("ld_32x32b_x4", "/* source */", 7, 8)
    what, args = device_calls.called_helper(call)
    assert what == "ld_32x32b_x4" and [int(a) for a in args] == [7, 8]
    assert device_calls.called_helper(call.value) == device_calls.called_helper(call)


def test_other_calls_are_not_ours():
    foreign = tvm.tirx.Evaluate(tvm.tirx.call_intrin("void", "tirx.cuda.func_call", "my_helper", "/* src */"))
    assert device_calls.called_helper(foreign) is None
    assert device_calls.called_helper(tvm.tirx.Evaluate(0)) is None


def test_every_spelling_of_a_cta_barrier():
    for name in device_calls.CTA_BARRIERS:
        assert device_calls.is_cta_barrier(tvm.tirx.Evaluate(tvm.tirx.call_intrin("", name)))
    assert device_calls.is_cta_barrier(device_calls.cta_barrier())
    assert not device_calls.is_cta_barrier(device_calls.helper_call("wait_ld", ""))
