"""Block-scaled ``T.tile_mma`` lowered to ``mma.sync ... .block_scale`` on sm_120a (ops/mma/mmasync_scaled.py): built,
assembled by ptxas, simulated equal to numpy on the simulator's own model of the instruction (sim/mma_sync.py); the
scale registers and selectors follow the scale fragments' layouts (a different valid layout gives other selectors and
the same result; a planted wrong selection gives a wrong one); the rules refuse, by name, what the ISA does not
have."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.hw import mma_sync_scaled as hw_scaled
from tirx_layout.ops.mma import spec as mma_spec
from tirx_layout.tools.kernel_report import local_memory, nvcc_assembles
from tirx_layout.transform import build

from kernels import parse

KERNEL = """
@T.prim_func
def gemm(A: T.Buffer((M, KT), "DT"), B: T.Buffer((N, KT), "BT"), SFA: T.Buffer((M, CT), "ST"),
         SFB: T.Buffer((N, CT), "ST"), D: T.Buffer((M, N), "float32")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    a = T.alloc_local((M, K), "DT", layout=mma_sync_a_layout((M, K), "DT", WARPS))
    b = T.alloc_local((N, K), "BT", layout=mma_sync_b_layout((N, K), "BT", WARPS))
    sa = T.alloc_local((M, C), "ST", layout=SA_LAYOUT)
    sb = T.alloc_local((N, C), "ST", layout=SB_LAYOUT)
    acc = T.alloc_local((M, N), "float32", layout=mma_sync_c_layout((M, N), "float32", WARPS))
    for kt in T.serial(TILES):
        T.tile_copy(a, A[0:M, kt * K : kt * K + K])
        T.tile_copy(b, B[0:N, kt * K : kt * K + K])
        T.tile_copy(sa, SFA[0:M, kt * C : kt * C + C])
        T.tile_copy(sb, SFB[0:N, kt * C : kt * C + C])
        T.tile_mma(acc, a, b, accumulate=kt > 0, scale_a=sa, scale_b=sb)
    T.tile_copy(D, acc)
"""


def kernel_text(m, n, k, warps=(1, 1), tiles=1, chunk=32, dtype="float8_e4m3fn", b_dtype=None, scale="float8_e8m0fnu"):
    c = k // chunk
    names = {
        "THREADS": str(32 * warps[0] * warps[1]),
        "WARPS": str(tuple(warps)),
        "TILES": str(tiles),
        "KT": str(k * tiles),
        "CT": str(c * tiles),
        "SA_LAYOUT": f'mma_sync_scale_layout("A", ({m}, {c}), {tuple(warps)})',
        "SB_LAYOUT": f'mma_sync_scale_layout("B", ({n}, {c}), {tuple(warps)})',
        "M": str(m),
        "N": str(n),
        "K": str(k),
        "C": str(c),
        "DT": dtype,
        "BT": b_dtype or dtype,
        "ST": scale,
    }
    return re.sub("|".join(sorted(names, key=len, reverse=True)), lambda x: names[x.group()], KERNEL)


def operands(m, n, k, dtype="float8_e4m3fn", b_dtype=None, chunk=32, seed=0):
    """Exact inputs: values -3..3, scales 2^-2..2^2 (ue8m0 bytes 125..129)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(sim.numpy_dtype(dtype))
    b = rng.integers(-3, 4, (n, k)).astype(sim.numpy_dtype(b_dtype or dtype))
    e8m0 = sim.numpy_dtype("float8_e8m0fnu")
    sfa = rng.integers(125, 130, (m, k // chunk)).astype(np.uint8).view(e8m0)
    sfb = rng.integers(125, 130, (n, k // chunk)).astype(np.uint8).view(e8m0)
    return {"A": a, "B": b, "SFA": sfa, "SFB": sfb}


def reference(A, B, SFA, SFB, chunk=32):
    sa = np.repeat(SFA.astype(np.float64), chunk, axis=1)
    sb = np.repeat(SFB.astype(np.float64), chunk, axis=1)
    return (A.astype(np.float64) * sa) @ (B.astype(np.float64) * sb).T


CASES = [
    # (M, N, K per tile, warps, tiles, A, B)
    (32, 32, 128, (2, 2), 2, "float8_e4m3fn", None),
    (64, 16, 64, (2, 1), 3, "float8_e5m2", "float8_e4m3fn"),
    (16, 32, 32, (1, 1), 2, "float8_e4m3fn", "float8_e5m2"),
]


@pytest.mark.parametrize(("m", "n", "k", "warps", "tiles", "dtype", "b_dtype"), CASES)
def test_block_scaled_tiles_simulate_equal_to_numpy_and_assemble(m, n, k, warps, tiles, dtype, b_dtype):
    func = parse(kernel_text(m, n, k, warps, tiles, dtype=dtype, b_dtype=b_dtype))
    inputs = operands(m, n, k * tiles, dtype, b_dtype)
    out = sim.run(func, inputs, "sm_120a")
    np.testing.assert_array_equal(out["D"], reference(**inputs))
    cuda = build(func, "sm_120a").imports[0].inspect_source()
    a, b = (hw_scaled.PTX_OPERAND[d] for d in (dtype, b_dtype or dtype))
    form = f"mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.{a}.{b}.f32.ue8m0"
    assert form in cuda
    calls = re.findall(r"tirx_layout_mmasync_mmabs_\w+\(", cuda.split("__global__")[-1])
    assert len(calls) == (m // warps[0] // 16) * (n // warps[1] // 8) * (k // 32)
    assembled = nvcc_assembles(cuda, "sm_120a")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]
    assert not any(local_memory(assembled[1]).values())


def test_the_selectors_follow_the_scale_layouts():
    # the constructor's scale_a of a warp's two 16-row blocks: lane pairs (thread-id 0, 1), the K chunk in the byte;
    # a hand-written one putting block i in register i instead (thread-id 0 for both, byte-id the chunk): other
    # helpers, the same product
    text = kernel_text(32, 8, 64, tiles=1)
    default = build(parse(text), "sm_120a").imports[0].inspect_source()
    names = sorted(set(re.findall(r"mmabs_\w+_(a\d_\d_b\d_\d)_[wp]{2}\(", default.split("__global__")[-1])))
    assert names == ["a0_0_b0_0", "a0_1_b0_0", "a1_0_b1_0", "a1_1_b1_0"]
    by_register = "TileLayout(S[(2, 2, 8, 2):(4, 1@laneid, 4@laneid, 1)])"  # block: slot 4, row half: lane +1
    other = text.replace('mma_sync_scale_layout("A", (32, 2), (1, 1))', by_register)
    assert other != text
    func = parse(other)
    cuda = build(func, "sm_120a").imports[0].inspect_source()
    body = cuda.split("__global__")[-1]
    assert sorted(set(re.findall(r"mmabs_\w+_(a\d_\d_b\d_\d)_[wp]{2}\(", body))) == ["a0_0_b0_0", "a1_0_b1_0"]
    assert "(&(sa_ptr[4]))" in body  # block 1's scales: register 1
    inputs = operands(32, 8, 64, seed=4)
    np.testing.assert_array_equal(sim.run(func, inputs, "sm_120a")["D"], reference(**inputs))


def test_a_planted_wrong_selection_gives_a_wrong_result(monkeypatch):
    # the rules read the right layout, but the instruction is made to name thread-id 1 where the scales sit on the
    # lower lane pair: the simulator's model then reads the other block's scales
    text = kernel_text(32, 8, 32)
    inputs = operands(32, 8, 32, seed=2)
    right = mma_spec.scale_program

    def swapped(*args):
        return tuple(
            hw_scaled.ScaleSelect(s.a_register, s.byte_a, 1 - s.thread_a, s.b_register, s.byte_b, s.thread_b)
            for s in right(*args)
        )

    good = sim.run(parse(text), inputs, "sm_120a")
    np.testing.assert_array_equal(good["D"], reference(**inputs))
    monkeypatch.setattr(mma_spec, "scale_program", swapped)
    bad = sim.run(parse(text), inputs, "sm_120a")
    assert not np.array_equal(bad["D"], reference(**inputs))


REFUSALS = [
    (
        "sm_80",
        {},
        r"block_scale form, which needs sm_120a, sm_120f, sm_121a, sm_121f; the target is sm_80",
    ),
    ("sm_90a", {}, r"the target is sm_90a"),
    ("sm_100a", {}, r"the target is sm_100a \(tcgen05's block scaling, on sm_100a, takes D in tensor memory\)"),
    ("sm_120", {}, r"the target is sm_120 "),
    ("sm_120a", {"scale": "float16"}, r"ue8m0 \(float8_e8m0fnu\) or ue4m3 \(float8_e4m3fn\), got float16"),
    ("sm_120a", {"scale": "float8_e4m3fn"}, r"kind::mxf8f6f4 takes ue8m0 scale factors, not ue4m3"),
    ("sm_120a", {"chunk": 16}, r"kind::mxf8f6f4 with ue8m0 scales has scale_vec::1X, not 2X"),
    ("sm_120a", {"dtype": "float16"}, r"kind::mxf8f6f4 multiplies .*; A is float16"),
]


@pytest.mark.parametrize(("arch", "change", "message"), REFUSALS)
def test_refusals_name_the_value(arch, change, message):
    with pytest.raises(ValueError, match=message):
        build(parse(kernel_text(16, 8, 64, **change)), arch)


def test_scale_tiles_that_do_not_match_are_refused():
    text = kernel_text(16, 8, 64)
    shape_b = text.replace('sb = T.alloc_local((8, 2), "float8_e8m0fnu"', 'sb = T.alloc_local((8, 1), "float8_e8m0fnu"')
    shape_b = shape_b.replace(
        'mma_sync_scale_layout("B", (8, 2), (1, 1))', 'mma_sync_scale_layout("B", (8, 1), (1, 1))'
    )
    shape_b = shape_b.replace("SFB[0:8, kt * 2 : kt * 2 + 2]", "SFB[0:8, kt : kt + 1]")
    with pytest.raises(ValueError, match="scale_a has 2 K chunks and scale_b 1"):
        build(parse(shape_b), "sm_120a")
    on_wrong_lanes = text.replace('mma_sync_scale_layout("B", (8, 2), (1, 1))', "TileLayout(S[(8, 2):(1@laneid, 1)])")
    with pytest.raises(ValueError, match=r"T\.tile_mma's scale_b \(sb\) is not a block-scaled mma\.sync scale"):
        build(parse(on_wrong_lanes), "sm_120a")
