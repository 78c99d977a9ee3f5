"""examples/ampere_gemm.py beyond what tests/tools/test_examples.py checks of every example (built for its
architecture, assembled, simulated equal to numpy, each output written once): the instructions each kernel is made
of, and that the ring needs its waits (weakened, the simulator's cp.async model reports the stage read in flight)."""

from __future__ import annotations

import re

import pytest

from tirx_layout import sim
from tirx_layout.tools.kernel_report import kernel_source, load_example_module, report
from tirx_layout.transform import build

from kernels import EXAMPLES, example_module

AMPERE = example_module("ampere_gemm")

#: kernel -> (its architecture, the mma.sync form, whether its fragments come through ldmatrix)
FORMS = {
    "ampere_gemm_float16_float32": ("sm_80", "m16n8k16.row.col.f32.f16.f16.f32", True),
    "ampere_gemm_bfloat16_float32": ("sm_80", "m16n8k16.row.col.f32.bf16.bf16.f32", True),
    "ampere_gemm_int8_int32": ("sm_80", "m16n8k32.row.col.s32.s8.s8.s32", False),
    "ampere_gemm_float32_float32": ("sm_80", "m16n8k8.row.col.f32.tf32.tf32.f32", False),
    "ada_gemm_fp8": ("sm_89", "m16n8k32.row.col.f32.e4m3.e4m3.f32", False),
    "sm120_gemm_bfloat16": ("sm_120", "m16n8k16.row.col.f32.bf16.bf16.f32", True),
    "sm120_gemm_fp8": ("sm_120", "m16n8k32.row.col.f32.e4m3.e4m3.f32", False),
}


def test_every_kernel_is_listed():
    assert sorted(AMPERE.KERNELS) == sorted(FORMS)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_kernel_is_cp_async_ldmatrix_and_mma_sync(name):
    kernel, _, _, arch = AMPERE.KERNELS[name]
    want_arch, form, through_ldmatrix = FORMS[name]
    assert arch == want_arch
    cuda = build(kernel, arch).imports[0].inspect_source()
    body = kernel_source(cuda)
    assert f"mma.sync.aligned.{form}" in cuda
    # per warp: 32 x 32 of D = 2 x 4 blocks per K step, four K steps per 128-byte K tile (32 bytes of K each): the
    # steps a loop nvcc unrolls (#pragma unroll), the K loop kept
    assert len(re.findall(r"tirx_layout_mmasync_mma_\w+\(", body)) == 2 * 4
    assert re.search(r"#pragma unroll\s+for \(int kk = 0; kk < 4; \+\+kk\)", body)
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in cuda
    assert "cp.async.wait_group 2;" in cuda and "cp.async.wait_group 0;" in cuda
    assert ("ldmatrix.sync.aligned.m8n8.x4.shared.b16" in cuda) == through_ldmatrix
    # the only barriers are the ring's waits' (one per iteration): the fragment copies add none of their own
    assert body.count("tvm_builtin_cuda_cta_sync()") == 2
    assert "tcgen05" not in cuda and "wgmma" not in cuda


def test_the_ring_needs_its_wait(tmp_path):
    # waiting for all but the newest four groups leaves tile kt itself in flight when its stage is read
    source = (EXAMPLES / "ampere_gemm.py").read_text()
    statement = re.compile(r"^(\s+)T\.tile_copy_async_wait\(2\)$", re.MULTILINE)  # the statement, not the docstring
    assert len(statement.findall(source)) == 1
    weakened = tmp_path / "ampere_gemm.py"
    weakened.write_text(statement.sub(r"\1T.tile_copy_async_wait(4)", source))
    kernel, expected, sizes, arch = load_example_module(weakened).KERNELS["ampere_gemm_float16_float32"]
    with pytest.raises(sim.DataRace, match=r"As\[\d+\]: a load by thread \d+ while the cp\.async issued by thread"):
        report("weakened", kernel, expected, sizes, arch)
