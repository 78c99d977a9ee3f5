"""examples/sm120_block_scaled_gemm.py beyond what tests/tools/test_examples.py checks of every example (built for
sm_120a, assembled with no local memory, simulated equal to numpy): the instructions it is made of (the block-scaled
mma.sync with selectors from the scale fragments' layouts, one 4-byte load per lane and scale operand per K tile,
the cp.async ring), that its inputs make float32 sums exact, and that the scales matter (all-ones scales give another
result)."""

from __future__ import annotations

import re

import numpy as np

from tirx_layout import sim
from tirx_layout.transform import build

from kernels import example_module

EXAMPLE = example_module("sm120_block_scaled_gemm")
FORM = "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0"


def test_the_kernel_is_cp_async_and_block_scaled_mma_sync():
    assert EXAMPLE.ARCH == "sm_120a" and list(EXAMPLE.KERNELS) == ["sm120_block_scaled_gemm_mxf8"]
    cuda = build(EXAMPLE.block_scaled_gemm(), EXAMPLE.ARCH).imports[0].inspect_source()
    body = cuda.split("__global__")[-1]
    assert FORM in cuda
    calls = re.findall(r"tirx_layout_mmasync_mmabs_\w+_(a\d_\d_b\d_\d)_ww\(", body)
    # per warp and K tile: 2 x 4 blocks of D x 4 K steps; the K step is the byte, the block the lane pair / quad lane
    assert len(calls) == 2 * 4 * 4
    assert sorted(set(calls)) == sorted(f"a{s}_{i}_b{s}_{j}" for s in range(4) for i in range(2) for j in range(4))
    assert (
        len(re.findall(r"\*\(__nv_fp8x4_e8m0\*\)\(sf[ab]_ptr \+ 0\) = \*\(__nv_fp8x4_e8m0\*\)\(SF[AB]_ptr", body)) == 2
    )
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in cuda
    assert "cp.async.wait_group 2;" in cuda and "cp.async.wait_group 0;" in cuda
    assert "tcgen05" not in cuda and "wgmma" not in cuda


def test_the_inputs_make_every_sum_exact_and_the_scales_matter():
    inputs = EXAMPLE.exact_inputs()
    want = EXAMPLE.block_scaled_reference(*(inputs[n] for n in ("A", "B", "SFA", "SFB")))
    assert np.array_equal(want, want.astype(np.float32))  # representable: no rounding to compare within
    assert (np.abs(want * 4) % 1 == 0).all()  # multiples of 2^-2
    ones = dict(inputs, SFA=np.ones_like(inputs["SFA"]), SFB=np.ones_like(inputs["SFB"]))
    out = sim.run(EXAMPLE.block_scaled_gemm(), ones, EXAMPLE.ARCH)
    unscaled = inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64).T
    np.testing.assert_array_equal(out["D"], unscaled)
    assert not np.array_equal(unscaled, want)
