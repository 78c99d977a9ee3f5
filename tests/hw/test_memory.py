"""Memory facts: element sizes, banks, and the hardware swizzle modes as SwizzleLayout parameters (SPEC §3's table)."""

from __future__ import annotations

import pytest

from tirx_layout import SwizzleLayout
from tirx_layout.hw.memory import SWIZZLE_MODES, bank_of, dtype_bytes, mode_of_swizzle, swizzle_for_mode


def test_the_guides_parameter_table():
    assert swizzle_for_mode("128B", "float16") == SwizzleLayout(3, 3, 3)
    assert swizzle_for_mode("128B", "float32") == SwizzleLayout(2, 3, 3)
    assert swizzle_for_mode("128B", "float8_e4m3") == SwizzleLayout(4, 3, 3)
    assert swizzle_for_mode("32B", "bfloat16") == SwizzleLayout(3, 1, 3)
    assert swizzle_for_mode("none", "float16") is None


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "float64"])
@pytest.mark.parametrize("mode", SWIZZLE_MODES)
def test_mode_and_swizzle_are_inverses(dtype, mode):
    assert mode_of_swizzle(swizzle_for_mode(mode, dtype), dtype) == mode


def test_a_swizzle_that_is_no_hardware_mode_is_named():
    with pytest.raises(ValueError, match=r"SwizzleLayout\(2, 3, 3\) is no hardware swizzle mode for float16"):
        mode_of_swizzle(SwizzleLayout(2, 3, 3), "float16")
    with pytest.raises(ValueError, match="unknown swizzle mode '16B'"):
        swizzle_for_mode("16B", "float16")


def test_sizes_and_banks():
    assert [dtype_bytes(d) for d in ("int8", "bfloat16", "float32", "float64")] == [1, 2, 4, 8]
    with pytest.raises(ValueError, match="4 bits"):
        dtype_bytes("float4_e2m1fn")
    with pytest.raises(ValueError, match="unknown dtype 'nope'"):
        dtype_bytes("nope")
    assert [bank_of(b) for b in (0, 3, 4, 124, 128)] == [0, 0, 1, 31, 0]
