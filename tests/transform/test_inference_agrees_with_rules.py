"""Inference never proposes a layout the op's rules then refuse: what it offers and what the rules require are one
fact (issue 33, finding 2) -- the alignment of a swizzled MMA operand (``hw.memory.swizzle_repeat_bytes``, read by
the MMA's options and its operand rule alike) and the ``tcgen05.cp`` image of a shared tile, whole or one stage of a
ring (each candidate tried by the copy's own plan). Plus the ``tcgen05.cp`` refusal of a swizzle it cannot read,
which names what the hardware requires and the layouts that would do (finding 4)."""

import numpy as np
import pytest
import tvm

from tirx_layout import mma_shared_layout, sim
from tirx_layout.hw.memory import swizzle_repeat_bytes
from tirx_layout.ops.mma.shared_operands import shared_operand
from tirx_layout.ops.mma.spec import mma_operand_layouts
from tirx_layout.ops.operands import operand
from tirx_layout.script import buffer_layouts
from tirx_layout.transform import LayoutVerificationError, build, explain_layouts, infer_layouts

from kernels import parse

ACCUMULATORS = {
    "sm_100a": ('T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))', 128),
    "sm_90a": ('T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))', 64),
}


def open_operand_gemm(arch: str, k: int) -> str:
    acc, m = ACCUMULATORS[arch]
    epilogue = (
        'out = T.alloc_local((128, 64), "float32")\n    T.tile_copy(out, acc, "warpgroup")\n'
        '    T.tile_copy(D, out, "warpgroup")'
        if arch == "sm_100a"
        else "T.tile_copy(D, acc)"
    )
    return f"""
@T.prim_func
def k(A: T.Buffer(({m}, {k}), "float16"), B: T.Buffer((64, {k}), "float16"), D: T.Buffer(({m}, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    a_tile = T.alloc_shared(({m}, {k}), "float16")
    b_tile = T.alloc_shared((64, {k}), "float16")
    acc = {acc}
    T.tile_copy(a_tile, A)
    T.tile_copy(b_tile, B)
    T.cuda.cta_sync()
    T.tile_mma(acc, a_tile, b_tile)
    {epilogue}
"""


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_an_inferred_64b_operand_with_its_inferred_alignment_builds_and_multiplies(arch):
    # K = 32 fp16: 64-byte rows, so the 64B swizzle, whose pattern repeats every 512 bytes (issue 33: the rule then
    # asked for 1024).
    kernel = parse(open_operand_gemm(arch, 32))
    assert "64B: legal for A" in explain_layouts(kernel) and "aligned to 512 bytes" in explain_layouts(kernel)
    build(kernel, arch)
    m = ACCUMULATORS[arch][1]
    a = (np.arange(m * 32) % 7 - 3).astype(np.float16).reshape(m, 32)
    b = (np.arange(64 * 32) % 5 - 2).astype(np.float16).reshape(64, 32)
    result = sim.run(kernel, {"A": a, "B": b}, arch)
    assert np.array_equal(result["D"], a.astype(np.float64) @ b.astype(np.float64).T)
    assert (result.writes["D"] == 1).all()


@pytest.mark.parametrize("family", ["tcgen05", "wgmma"])
@pytest.mark.parametrize(("shape", "dtype"), [((64, 32), "float16"), ((64, 64), "bfloat16"), ((2, 64, 32), "float32")])
def test_every_operand_option_passes_the_operand_rule_at_the_alignment_it_asks_for(family, shape, dtype):
    # One fact: the option's alignment is exactly what the rule requires, no more (half of it is refused).
    for mode, layout, alignment in mma_operand_layouts(tvm.tirx.decl_buffer(shape, dtype, "t", scope="shared")):
        assert alignment == swizzle_repeat_bytes(mode)
        for align, ok in ((max(alignment, 16), True), (alignment // 2, False)):
            if align < 16:
                continue
            buffer = tvm.tirx.decl_buffer(shape, dtype, "t", scope="shared", data_alignment=align)
            region = buffer[(*(slice(0, 1) for _ in shape[:-2]), slice(0, shape[-2]), slice(0, shape[-1]))]
            side = operand(region, {buffer: layout}, "B")
            if ok:
                shared_operand(side, shape[-2], shape[-1], "B", family)
            else:
                with pytest.raises(ValueError, match=rf"declare it with align={alignment} \(it has {align}\)"):
                    shared_operand(side, shape[-2], shape[-1], "B", family)


def cp_kernel(dtype: str, shape: tuple, region: str, extra: str = "") -> str:
    return f"""
@T.prim_func
def k(A: T.Buffer({shape}, "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    sm = T.alloc_shared({shape}, "{dtype}"{extra})
    t = T.alloc_tmem((128, 32), "{dtype}", layout=T.layout("S[(128, 32):(1@TLane, 1@TCol)]"))
    T.tile_copy(sm, A)
    T.cuda.cta_sync()
    T.tile_copy(t, {region})
"""


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("stage", [0, 1])
def test_a_stage_of_an_inferred_ring_is_the_cp_image_and_lands_in_tmem(dtype, stage):
    kernel = parse(cp_kernel(dtype, (2, 128, 32), f"sm[{stage}, 0:128, 0:32]"))
    layout = {b.name: lay for b, lay in buffer_layouts(infer_layouts(kernel)).items()}["sm"]
    assert layout == mma_shared_layout(dtype, "none", (2, 128, 32))  # the default alignment holds no swizzle
    a = (np.arange(2 * 128 * 32) % 61 - 30).astype(dtype).reshape(2, 128, 32)
    cells = sim.run(kernel, [a]).tmem[0]
    words = np.ascontiguousarray(a[stage]).view(np.uint32)
    assert np.array_equal(cells[:, : words.shape[1]], words)


def test_an_aligned_ring_gets_the_widest_swizzle_the_cp_reads():
    kernel = parse(cp_kernel("float32", (2, 128, 32), "sm[1, 0:128, 0:32]", ", align=1024"))
    layout = {b.name: lay for b, lay in buffer_layouts(infer_layouts(kernel)).items()}["sm"]
    assert layout == mma_shared_layout("float32", "128B", (2, 128, 32))
    a = (np.arange(2 * 128 * 32) % 61 - 30).astype(np.float32).reshape(2, 128, 32)
    assert np.array_equal(sim.run(kernel, [a]).tmem[0][:, :32], a[1].view(np.uint32))


def test_cp_from_the_mn_major_32b_atom_swizzle_names_the_requirement_and_a_layout_that_does():
    given = ', align=1024, layout=mma_shared_layout("float32", "128B_base32B", (128, 32), major="MN")'
    with pytest.raises(
        LayoutVerificationError,
        match=r"the shared tile's swizzle SwizzleLayout\(3, 2, 2\) \(the 128B swizzle with 32-byte atoms, an MN-major "
        r"MMA operand mode\) is not one tcgen05\.cp reads: its descriptor takes the K-major canonical image .* with "
        r"swizzle none, 32B, 64B or 128B over 16-byte chunks .*; sm would do as "
        r'mma_shared_layout\("float32", "128B", \(128, 32\)\), align=1024',
    ):
        build(parse(cp_kernel("float32", (128, 32), "sm", given)))
    # and the layout it names does
    fixed = parse(
        cp_kernel("float32", (128, 32), "sm", ', align=1024, layout=mma_shared_layout("float32", "128B", (128, 32))')
    )
    a = (np.arange(128 * 32) % 61 - 30).astype(np.float32).reshape(128, 32)
    assert np.array_equal(sim.run(fixed, [a]).tmem[0][:, :32], a.view(np.uint32))
