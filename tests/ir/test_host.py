"""What a lowered host function hands its kernel, found by following the host code's data flow."""

from __future__ import annotations

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.ir.host import launch_argument_expressions, launch_arguments

from kernels import example_module, parse

# B comes first in the parameter list but A is read first in the body: the device function's parameter order is
# TVM's choice, and the mapping must not assume it follows either.
SWAPPED = """
@T.prim_func
def k(B: T.Buffer((64,), "float32"), scale: T.Buffer((1,), "float32"), A: T.Buffer((64,), "float32")):
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([32])
    B[bx * 32 + tx] = A[bx * 32 + tx] * scale[0]
"""


def test_each_launch_argument_names_its_kernel_parameter():
    host, (device,) = sim.lower(parse(SWAPPED))
    carried = launch_arguments(host, str(device.attrs["global_symbol"]))
    names = [p.name for p in parse(SWAPPED).params]
    pointers = [names[i] for i in carried[: len(device.params)]]
    assert sorted(pointers) == ["A", "B", "scale"]
    assert all(i is None for i in carried[len(device.params) :])  # the launch extents
    for param, name in zip(device.params, pointers, strict=True):
        assert param.name == f"{name}_ptr"  # TVM's naming, checked here only: the mapping never relies on it


def test_the_simulator_runs_a_kernel_whatever_its_parameter_order():
    a = np.arange(64, dtype=np.float32)
    result = sim.run(parse(SWAPPED), {"A": a, "scale": np.array([3], np.float32)})
    np.testing.assert_array_equal(result["B"], 3 * a)


def test_a_symbol_nobody_launches_is_an_error():
    host, _ = sim.lower(parse(SWAPPED))
    with pytest.raises(ValueError, match="0 host functions launch nope"):
        launch_arguments(host, "nope")


def symbolic_kernel():
    """``B[:M] = A[:M]`` through a (32, 64) shared tile per CTA (the example ``symbolic_rows``)."""
    return example_module("symbolic_extents").symbolic_rows_kernel()


def test_number_arguments_are_given_as_expressions_of_the_sizes_the_host_read():
    host, (device,) = sim.lower(symbolic_kernel())
    symbol = str(device.attrs["global_symbol"])
    carried = launch_arguments(host, symbol)[: len(device.params)]
    expressions = launch_argument_expressions(host, symbol)[: len(device.params)]
    numbers = [str(e) for p, e in zip(device.params, expressions, strict=True) if hasattr(p.ty, "dtype")]
    # M itself and the flat views' extent M * 64 (the host binds it to a variable; here it is inlined).
    assert sorted(numbers) == ["M", "M * 64"]
    pointers = [i for p, i in zip(device.params, carried, strict=True) if not hasattr(p.ty, "dtype")]
    assert sorted(pointers) == [0, 1]  # A's and B's data, each from its own parameter (not via M's shape)
    assert all(i is None for p, i in zip(device.params, carried, strict=True) if hasattr(p.ty, "dtype"))
