"""examples/sm120_block_scaled_gemm.py beyond what tests/tools/test_examples.py checks of every example (built for
sm_120a, assembled with no local memory, simulated equal to numpy): the instructions each kernel is made of (the
block-scaled mma.sync with selectors from the scale fragments' layouts, one vector load per lane and scale operand
per K tile, the cp.async ring), that its inputs make float32 sums exact, and that the scales matter (all-ones scales
give another result)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.transform import build

from kernels import example_module

EXAMPLE = example_module("sm120_block_scaled_gemm")


FORMS = {
    "mxf8": ("m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0", "__nv_fp8x4_e8m0"),
    "nvf4": ("m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3", "uint4"),
}


@pytest.mark.parametrize("fmt", sorted(FORMS))
def test_the_kernel_is_cp_async_and_block_scaled_mma_sync(fmt):
    assert EXAMPLE.ARCH == "sm_120a"
    assert sorted(EXAMPLE.KERNELS) == [f"sm120_block_scaled_gemm_{f}" for f in sorted(FORMS)]
    cuda = build(EXAMPLE.block_scaled_gemm(fmt), EXAMPLE.ARCH).imports[0].inspect_source()
    body = cuda.split("__global__")[-1]
    form, scale_vector = FORMS[fmt]
    assert f"mma.sync.aligned.{form}" in cuda
    calls = re.findall(r"tirx_layout_mmasync_mmabs_\w+_(a\d_\d_b\d_\d)_ww\(", body)
    # per warp and K tile: 2 x 4 blocks of D x 4 K steps
    assert len(calls) == 2 * 4 * 4
    if fmt == "mxf8":  # the K step is the byte, the block the lane pair / quad lane
        want = {f"a{s}_{i}_b{s}_{j}" for s in range(4) for i in range(2) for j in range(4)}
    else:  # four chunks a step: all four bytes (byte-id 0) of register s
        want = {f"a0_{i}_b0_{j}" for i in range(2) for j in range(4)}
    assert set(calls) == want
    vector = re.escape(scale_vector)
    assert len(re.findall(rf"\*\({vector}\*\)\(sf[ab]_ptr \+ 0\) = \*\({vector}\*\)\(SF[AB]_ptr", body)) == 2
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in cuda
    assert "cp.async.wait_group 2;" in cuda and "cp.async.wait_group 0;" in cuda
    assert "tcgen05" not in cuda and "wgmma" not in cuda


@pytest.mark.parametrize("fmt", sorted(FORMS))
def test_the_inputs_make_every_sum_exact_and_the_scales_matter(fmt):
    inputs = EXAMPLE.exact_inputs(fmt)
    reference = EXAMPLE.block_scaled_reference(fmt)
    want = reference(*(inputs[n] for n in ("A", "B", "SFA", "SFB")))
    assert np.array_equal(want, want.astype(np.float32))  # representable: no rounding to compare within
    assert (np.abs(want * 16) % 1 == 0).all()  # multiples of 2^-4
    ones = dict(inputs, SFA=np.ones_like(inputs["SFA"]), SFB=np.ones_like(inputs["SFB"]))
    out = sim.run(EXAMPLE.block_scaled_gemm(fmt), ones, EXAMPLE.ARCH)
    unscaled = reference(inputs["A"], inputs["B"], np.ones(inputs["SFA"].shape), np.ones(inputs["SFB"].shape))
    np.testing.assert_array_equal(out["D"], unscaled)
    assert not np.array_equal(unscaled, want)


def test_the_fp4_packing_is_low_nibble_first():
    # e2m1 codes 1 (0.5) and 10 (-1) in one byte: K element 0 is the low nibble
    assert EXAMPLE.unpack_fp4(np.array([[0xA1]], np.uint8)).tolist() == [[0.5, -1.0]]
