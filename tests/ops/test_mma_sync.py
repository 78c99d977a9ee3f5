"""``T.tile_mma`` lowered to ``mma.sync`` (ops/mma/mmasync.py) on register fragments: every kind built, assembled by
ptxas for its target (sm_80, sm_86, sm_89, sm_120) and simulated equal to numpy on the simulator's own model of the
instruction (sim/mma_sync.py, checked here against the ISA tables of tests/oracles); a planted wrong fragment gives
a wrong result; the rules refuse what mma.sync cannot do, by name."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.hw import mma_sync as hw_mma_sync
from tirx_layout.ops.mma import spec as mma_spec
from tirx_layout.sim.mma_sync import fragment_places
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build

from kernels import parse
from oracles import mma_sync_isa

KERNEL = """
@T.prim_func
def gemm(A: T.Buffer((M, KT), "DT"), B: T.Buffer((N, KT), "BT"), D: T.Buffer((M, N), "ACC")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    a = T.alloc_local((M, K), "DT", layout=mma_sync_a_layout((M, K), "DT", WARPS))
    b = T.alloc_local((N, K), "BT", layout=mma_sync_b_layout((N, K), "BT", WARPS))
    acc = T.alloc_local((M, N), "ACC", layout=mma_sync_c_layout((M, N), "ACC", WARPS))
    for kt in T.serial(TILES):
        T.tile_copy(a, A[0:M, kt * K : kt * K + K])
        T.tile_copy(b, B[0:N, kt * K : kt * K + K])
        T.tile_mma(acc, a, b, accumulate=kt > 0)
    T.tile_copy(D, acc)
"""


def kernel_text(m, n, k, dtype, acc, warps=(1, 1), tiles=1, b_dtype=None):
    names = {
        "THREADS": str(32 * warps[0] * warps[1]),
        "WARPS": str(tuple(warps)),
        "TILES": str(tiles),
        "KT": str(k * tiles),
        "M": str(m),
        "N": str(n),
        "K": str(k),
        "DT": dtype,
        "BT": b_dtype or dtype,
        "ACC": acc,
    }
    return re.sub("|".join(sorted(names, key=len, reverse=True)), lambda x: names[x.group()], KERNEL)


def operands(m, n, k, dtype, b_dtype=None, seed=0):
    rng = np.random.default_rng(seed)

    def make(shape, dt):
        low = 0 if dt == "uint8" else -3
        values = rng.integers(low, 4, shape)
        return values.astype(sim.numpy_dtype(dt))

    return make((m, k), dtype), make((n, k), b_dtype or dtype)


def reference(a, b, acc):
    return (a.astype(np.float64) @ b.astype(np.float64).T).astype(sim.numpy_dtype(acc))


#: (A dtype, B dtype, accumulator, K per tile, target): every kind, K two instructions of the widest shape.
KINDS = [
    ("float16", None, "float32", 32, "sm_80"),
    ("float16", None, "float16", 32, "sm_86"),
    ("bfloat16", None, "float32", 32, "sm_80"),
    ("float32", None, "float32", 16, "sm_80"),
    ("int8", None, "int32", 64, "sm_80"),
    ("uint8", "int8", "int32", 64, "sm_86"),
    ("float8_e4m3fn", None, "float32", 64, "sm_89"),
    ("float8_e5m2", "float8_e4m3fn", "float32", 64, "sm_89"),
    ("bfloat16", None, "float32", 32, "sm_120"),
    ("float8_e4m3fn", None, "float32", 64, "sm_120"),
]


@pytest.mark.parametrize(
    ("dtype", "b_dtype", "acc", "k", "arch"), KINDS, ids=[f"{d}-{b}-{a}-{t}" for d, b, a, _, t in KINDS]
)
def test_every_kind_simulates_equal_to_numpy_and_assembles(dtype, b_dtype, acc, k, arch):
    m, n, warps, tiles = 32, 32, (2, 2), 2
    func = parse(kernel_text(m, n, k, dtype, acc, warps, tiles, b_dtype))
    a, b = operands(m, n, k * tiles, dtype, b_dtype)
    out = sim.run(func, {"A": a, "B": b}, arch)
    np.testing.assert_array_equal(out["D"], reference(a, b, acc))
    cuda = build(func, arch).imports[0].inspect_source()
    widest = max(hw_mma_sync.SHAPES[hw_mma_sync.mma_sync_kind(dtype, b_dtype or dtype)])
    # each warp: (M/2/16) x (N/2/8) blocks x K steps per tile, in a loop over the tiles
    calls = re.findall(rf"tirx_layout_mmasync_mma_m16n8k{widest}_\w+\(", cuda.split("__global__")[-1])
    assert len(calls) == (m // 2 // 16) * (n // 2 // 8) * (k // widest)
    assembled = nvcc_assembles(cuda, arch)
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]


def test_one_warp_k_loop_with_the_narrow_shape():
    # K = 8 per tile for f16 picks m16n8k8; accumulate=kt > 0 clears D on the first tile only
    func = parse(kernel_text(16, 8, 8, "float16", "float32", (1, 1), 3))
    a, b = operands(16, 8, 24, "float16", seed=3)
    out = sim.run(func, {"A": a, "B": b}, "sm_80")
    np.testing.assert_array_equal(out["D"], reference(a, b, "float32"))
    cuda = build(func, "sm_80").imports[0].inspect_source()
    assert "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32" in cuda


def test_a_planted_wrong_fragment_gives_a_wrong_result(monkeypatch):
    # A held with groupID and threadID_in_group swapped: the rules would refuse it, so make them read the right
    # layout's atoms while the registers hold the planted one; the instruction model then multiplies the wrong
    # elements, and the result is not A @ B.T
    text = kernel_text(16, 8, 16, "float16", "float32")
    wrong = "TileLayout(S[(2, 8, 2, 4, 2):(2, 1@laneid, 4, 8@laneid, 1)])"
    planted = text.replace('layout=mma_sync_a_layout((16, 16), "float16", (1, 1))', f"layout={wrong}")
    assert planted != text
    a, b = operands(16, 8, 16, "float16", seed=1)
    right_atoms = hw_mma_sync.mma_sync_atoms

    def atoms_of_the_right_layout(layout, operand, shape, dtype):
        if operand == "A":
            layout = hw_mma_sync.mma_sync_a_layout(shape, dtype)
        return right_atoms(layout, operand, shape, dtype)

    with pytest.raises(ValueError, match=r"T\.tile_mma's A \(a\) is not an mma\.sync fragment"):
        sim.run(parse(planted), {"A": a, "B": b}, "sm_80")
    monkeypatch.setattr(mma_spec, "mma_sync_atoms", atoms_of_the_right_layout)
    out = sim.run(parse(planted), {"A": a, "B": b}, "sm_80")
    assert not np.array_equal(out["D"], reference(a, b, "float32"))
    good = sim.run(parse(text), {"A": a, "B": b}, "sm_80")
    np.testing.assert_array_equal(good["D"], reference(a, b, "float32"))


@pytest.mark.parametrize(("size", "k"), sorted({(s, k) for (_, k), s in mma_sync_isa.SHAPES.items()}))
def test_the_simulators_fragments_are_the_isa_tables(size, k):
    for operand, place in (("A", mma_sync_isa.a_place), ("B", mma_sync_isa.b_place)):
        rows, cols = fragment_places(operand, size, k)
        for lane in range(32):
            for i in range(rows.shape[1]):
                assert (rows[lane, i], cols[lane, i]) == place(size, k, lane, i), (operand, lane, i)
        covered = set(zip(rows.ravel().tolist(), cols.ravel().tolist(), strict=True))
        assert len(covered) == rows.size == {"A": 16, "B": 8}[operand] * k  # every element once
    rows, cols = fragment_places("C", size, k)
    assert [(rows[l, i], cols[l, i]) for l in range(32) for i in range(4)] == [
        mma_sync_isa.c_place(l, i) for l in range(32) for i in range(4)
    ]


def test_register_fragments_choose_mma_sync_on_hopper_and_blackwell_too():
    func = parse(kernel_text(16, 8, 16, "bfloat16", "float32"))
    for arch in ("sm_90a", "sm_100a"):
        assert "mma.sync.aligned.m16n8k16" in build(func, arch).imports[0].inspect_source()


REFUSALS = [
    (  # one row of A per lane, its columns in two lane halves: a fine fragment, not the ISA's
        lambda t: t.replace(
            'layout=mma_sync_a_layout((16, 16), "float16", (1, 1))',
            "layout=TileLayout(S[(16, 2, 8):(1@laneid, 16@laneid, 1)])",
        ),
        r"T\.tile_mma's A \(a\) is not an mma\.sync fragment: .* element \(8, 0\) of atom \(0, 0\) sits on lane 8 of "
        r"warp 0, slot 0; the ISA reads it as element 2 of the atom \(register 1\) of lane 0",
    ),
    (
        lambda t: t.replace("T.tile_mma(acc, a, b, accumulate=kt > 0)", "T.tile_mma(acc, a, b, wait=False)"),
        "synchronous",
    ),
    (
        lambda t: t.replace("T.tile_mma(acc, a, b, accumulate=kt > 0)", 'T.tile_mma(acc, a, b, scope="thread")'),
        "issued by whole warps",
    ),
    (lambda t: t.replace("T.thread_id([32])", "T.thread_id([64])"), "lives on warps \\[0\\], the CTA has 2"),
]


@pytest.mark.parametrize(("edit", "message"), REFUSALS)
def test_refusals_name_the_problem(edit, message):
    text = kernel_text(16, 8, 16, "float16", "float32")
    edited = edit(text)
    assert edited != text
    with pytest.raises(ValueError, match=message):
        build(parse(edited), "sm_80")


def test_fp8_needs_sm_89():
    with pytest.raises(ValueError, match=r"needs sm_89 or newer; the target is sm_80"):
        build(parse(kernel_text(16, 8, 32, "float8_e4m3fn", "float32")), "sm_80")


def test_fragments_on_different_warps_are_refused():
    # B on warp 0 only while D's rows 16..31 are on warp 1: warp 1 has no B to multiply with
    bad = kernel_text(32, 8, 16, "float16", "float32", (2, 1)).replace(
        'mma_sync_b_layout((8, 16), "float16", (2, 1))', 'mma_sync_b_layout((8, 16), "float16", (1, 1))'
    )
    with pytest.raises(ValueError, match=r"warp 1 does not hold B's atom \(0, 0\)"):
        build(parse(bad), "sm_80")
