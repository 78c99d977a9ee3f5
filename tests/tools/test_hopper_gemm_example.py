"""examples/hopper_gemm.py: T.tile_mma lowers to wgmma from the target alone, with no tcgen05 instruction, K / (32
bytes) wgmma per warpgroup, the helper of each kind and form. (tests/tools/test_examples.py builds, assembles with
nvcc -arch=sm_90a and simulates every kernel of the table, which is built for sm_90a.)"""

import re

import pytest

from tirx_layout.tools.kernel_report import kernel_source
from tirx_layout.transform import build

from kernels import example_kernels, example_module

HOPPER = example_module("hopper_gemm")


def _cuda(name: str) -> str:
    return build(HOPPER.KERNELS[name][0], HOPPER.ARCH).imports[0].inspect_source()


def test_the_table_is_built_for_sm_90a_and_listed_with_the_examples():
    assert HOPPER.ARCH == "sm_90a"
    entry = example_kernels()["wgmma_rs"]
    assert entry[2:] == (None, "sm_90a")  # report(name, *entry) builds it for sm_90a
    assert example_kernels()["gemm_fp16_128x128x64"][2:] == ()  # the default architecture adds nothing


# The README's example: K = 64 of bfloat16 is four m64n128k16 steps (16 elements = 32 bytes each), between one
# wgmma.fence and one commit_group, then wait_group 0; the shared tiles are published by a proxy fence + barrier.
def test_the_bf16_example_issues_four_k_steps_in_one_group():
    body = kernel_source(_cuda("wgmma_bf16_64x128x64"))
    calls = re.findall(r"tirx_layout_(?:wgmma|sync)_(\w+)\(", body)
    assert calls == [
        "fence_proxy_async",
        "keep_f32_x64",
        *["smem_descriptor"] * 2,  # A's and B's descriptors, made once; each K step adds its offset (issue 34)
        "fence",
        *["mma_m64n128k16_f32_bf16_bf16_ss_t00"] * 4,
        "commit_group",
        "wait_group_0",
        "keep_f32_x64",
    ]
    assert "cta_sync" in body.split("tirx_layout_sync_fence_proxy_async")[1].split("tirx_layout_wgmma_fence")[0]


@pytest.mark.parametrize(
    ("name", "helper", "count"),
    [
        ("wgmma_float32", "mma_m64n128k8_f32_tf32_tf32_ss_t00", 4),  # K 32 of tf32: k8 steps
        ("wgmma_float8_e4m3fn", "mma_m64n128k32_f32_e4m3_e4m3_ss_t00", 4),  # K 128 of e4m3: k32 steps
        ("wgmma_int8", "mma_m64n128k32_s32_s8_s8_ss_t00", 4),
        ("wgmma_float16_f16_accumulate", "mma_m64n64k16_f16_f16_f16_ss_t00", 4),
        ("wgmma_A_64B_MN", "mma_m64n128k16_f32_f16_f16_ss_t10", 4),  # imm-trans-a = 1
        ("wgmma_B_none_MN", "mma_m64n128k16_f32_f16_f16_ss_t01", 4),
        ("wgmma_rs", "mma_m64n128k16_f32_bf16_bf16_rs_t0", 4),
        ("wgmma_n200", "mma_m64n200k16_f32_bf16_bf16_ss_t00", 4),
        ("wgmma_n256", "mma_m64n256k16_f32_bf16_bf16_ss_t00", 4),
        ("wgmma_m128_two_warpgroups", "mma_m64n128k16_f32_bf16_bf16_ss_t00", 4),  # each warpgroup: its 64 rows
        ("wgmma_warp_specialized", "mma_m64n128k16_f32_bf16_bf16_ss_t00", 4),  # TMA + mbarriers, no tcgen05 fence
    ],
)
def test_each_kind_and_form_issues_its_instruction_once_per_k_step(name, helper, count):
    cuda = _cuda(name)
    assert "tcgen05" not in cuda, "a tcgen05 instruction or helper in an sm_90a kernel"
    assert len(re.findall(rf"tirx_layout_wgmma_{helper}\(", kernel_source(cuda))) == count
