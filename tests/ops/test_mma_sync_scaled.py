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
    c = k * (2 if dtype == "uint8" else 1) // chunk  # uint8: packed e2m1, two K elements a byte
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


def operands(m, n, k, dtype="float8_e4m3fn", b_dtype=None, chunk=32, seed=0, scale="float8_e8m0fnu"):
    """Exact inputs: values -3..3, scales 2^-2..2^2 (ue8m0 bytes 125..129); packed e2m1 (uint8): random bytes of
    two codes of magnitude at most 3, ue4m3 scales 0.5..2."""
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        codes = np.array([0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13], np.uint8)
        a, b = (rng.choice(codes, (rows, k, 2)) for rows in (m, n))
        a, b = ((x[..., 0] | (x[..., 1] << 4)).astype(np.uint8) for x in (a, b))
        if scale == "float8_e8m0fnu":
            sfa, sfb = (rng.integers(126, 129, (rows, 2 * k // chunk)).astype(np.uint8) for rows in (m, n))
            e8m0 = sim.numpy_dtype(scale)
            return {"A": a, "B": b, "SFA": sfa.view(e8m0), "SFB": sfb.view(e8m0)}
        sfa, sfb = (np.float32(2.0) ** rng.integers(-1, 2, (rows, 2 * k // chunk)) for rows in (m, n))
        e4m3 = sim.numpy_dtype(scale)
        return {"A": a, "B": b, "SFA": sfa.astype(e4m3), "SFB": sfb.astype(e4m3)}
    a = rng.integers(-3, 4, (m, k)).astype(sim.numpy_dtype(dtype))
    b = rng.integers(-3, 4, (n, k)).astype(sim.numpy_dtype(b_dtype or dtype))
    e8m0 = sim.numpy_dtype("float8_e8m0fnu")
    sfa = rng.integers(125, 130, (m, k // chunk)).astype(np.uint8).view(e8m0)
    sfb = rng.integers(125, 130, (n, k // chunk)).astype(np.uint8).view(e8m0)
    return {"A": a, "B": b, "SFA": sfa, "SFB": sfb}


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def reference(A, B, SFA, SFB, chunk=32):
    if A.dtype == np.uint8:  # packed e2m1, the lower K element in the low nibble
        A, B = (E2M1[np.stack([x & 0xF, x >> 4], axis=-1).reshape(x.shape[0], -1)] for x in (A, B))
    sa = np.repeat(SFA.astype(np.float64), chunk, axis=1)
    sb = np.repeat(SFB.astype(np.float64), chunk, axis=1)
    return (A.astype(np.float64) * sa) @ (B.astype(np.float64) * sb).T


CASES = [
    # (M, N, K per tile, warps, tiles, A, B)
    (32, 32, 128, (2, 2), 2, "float8_e4m3fn", None),
    (64, 16, 64, (2, 1), 3, "float8_e5m2", "float8_e4m3fn"),
    (16, 32, 32, (1, 1), 2, "float8_e4m3fn", "float8_e5m2"),
]


PACKED = [
    # (M, N, K bytes per tile, warps, tiles, scale, elements per scale, the form)
    (32, 32, 64, (2, 2), 2, "float8_e4m3fn", 16, "kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"),
    (16, 16, 32, (1, 1), 2, "float8_e8m0fnu", 32, "kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0"),
]


@pytest.mark.parametrize(("m", "n", "k", "warps", "tiles", "scale", "chunk", "form"), PACKED)
def test_packed_fp4_tiles_simulate_equal_to_numpy_and_assemble(m, n, k, warps, tiles, scale, chunk, form):
    func = parse(kernel_text(m, n, k, warps, tiles, chunk=chunk, dtype="uint8", scale=scale))
    inputs = operands(m, n, k * tiles, "uint8", chunk=chunk, scale=scale)
    out = sim.run(func, inputs, "sm_120a")
    np.testing.assert_array_equal(out["D"], reference(**inputs, chunk=chunk))
    cuda = build(func, "sm_120a").imports[0].inspect_source()
    assert f"mma.sync.aligned.m16n8k64.row.col.{form}" in cuda
    calls = re.findall(r"tirx_layout_mmasync_mmabs_\w+\(", cuda.split("__global__")[-1])
    assert len(calls) == (m // warps[0] // 16) * (n // warps[1] // 8) * (k // 32)  # 32 bytes = 64 e2m1 a step
    assembled = nvcc_assembles(cuda, "sm_120a")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]
    assert not any(local_memory(assembled[1]).values())


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
    ("sm_120a", {"dtype": "float16"}, r"T\.tile_mma's A \(a\) is float16: the block-scaled mma\.sync lowers for"),
    ("sm_120a", {"dtype": "uint8", "b_dtype": "float8_e4m3fn"}, r"e2m1 pairs packed in uint8 bytes \(A and B both"),
    ("sm_120a", {"dtype": "uint8", "chunk": 16}, r"kind::mxf4nvf4 with ue8m0 scales and scale_vec::4X: the ISA lists"),
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
