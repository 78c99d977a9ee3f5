"""The ``mma.sync`` fragments (hw/mma_sync.py): every constructor checked element by element against the PTX ISA's
fragment tables (``tests/oracles/mma_sync_isa.py``, one table per shape as the ISA prints it) and against CuTe's
thread-value layouts (pycute, the SM80/SM89 traits), tiled over warps and registers; the recogniser on the
constructors and on planted wrong fragments; the instruction facts, with every form assembled by ptxas for its
oldest target and refused for the one before."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout import Iter, TileLayout
from tirx_layout.hw.mma_sync import (
    SHAPES,
    MmaSyncInstruction,
    best_k,
    mma_sync_a_layout,
    mma_sync_atoms,
    mma_sync_b_layout,
    mma_sync_c_layout,
    mma_sync_layout,
    recognise_mma_sync_fragment,
)
from tirx_layout.tools.kernel_report import nvcc_assembles

from oracles import mma_sync_isa
from oracles.optional import optional_module

pycute = optional_module("pycute", "pip install pycute")

DTYPE_OF_KIND = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "int8": "int8", "fp8": "float8_e4m3fn"}
CASES = sorted(mma_sync_isa.SHAPES)


def places(layout, shape):
    """(warp, lane, slot) of every element of a single-replica layout."""
    r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    got = layout.apply(r, c, shape=list(shape))
    zero = np.zeros(r.shape, np.int64)
    return (
        np.broadcast_to(got.get("warpid", zero), r.shape),
        np.broadcast_to(got.get("laneid", zero), r.shape),
        np.broadcast_to(got.get("m", zero), r.shape),
    )


def isa_elements(kind, k, operand):
    """(lane, i, row, col) of every element of one instruction's fragment, as the ISA's table for the shape lists
    it; B turned to ``(N, K)`` as T.tile_mma stores it."""
    size = mma_sync_isa.SHAPES[(kind, k)]
    counts = dict(zip("ABC", mma_sync_isa.COUNTS[(size, k)], strict=True))
    for lane, i in itertools.product(range(32), range(counts[operand])):
        if operand == "A":
            row, col = mma_sync_isa.a_place(size, k, lane, i)
        elif operand == "B":
            kk, n = mma_sync_isa.b_place(size, k, lane, i)
            row, col = n, kk
        else:
            row, col = mma_sync_isa.c_place(lane, i)
        yield lane, i, row, col


def instruction_shape(operand, k):
    return {"A": (16, k), "B": (8, k), "C": (16, 8)}[operand]


@pytest.mark.parametrize("operand", ["A", "B", "C"])
@pytest.mark.parametrize(("kind", "k"), CASES, ids=[f"{kind}-k{k}" for kind, k in CASES])
def test_one_instruction_fragment_is_the_isa_table(kind, k, operand):
    dtype = DTYPE_OF_KIND[kind] if operand != "C" else "float32"
    shape = instruction_shape(operand, k)
    layout = mma_sync_layout(operand, shape, DTYPE_OF_KIND[kind] if operand != "C" else dtype)
    warp, lane_of, slot_of = places(layout, shape)
    seen = set()
    for lane, i, row, col in isa_elements(kind, k, operand):
        assert (int(warp[row, col]), int(lane_of[row, col]), int(slot_of[row, col])) == (0, lane, i), (lane, i)
        seen.add((row, col))
    assert len(seen) == shape[0] * shape[1]  # the table covers the tile, once


@pytest.mark.parametrize("operand", ["A", "B", "C"])
@pytest.mark.parametrize(("kind", "k"), CASES, ids=[f"{kind}-k{k}" for kind, k in CASES])
def test_one_instruction_fragment_is_cutes_thread_value_layout(kind, k, operand):
    size = mma_sync_isa.SHAPES[(kind, k)]
    shape_, stride = mma_sync_isa.CUTE[(size, k)][operand]
    tv = pycute.Layout(shape_, stride)
    shape = instruction_shape(operand, k)
    layout = mma_sync_layout(operand, shape, DTYPE_OF_KIND[kind] if operand != "C" else "float32")
    _, lane_of, slot_of = places(layout, shape)
    values = pycute.size(tv) // 32
    for thread, value in itertools.product(range(32), range(values)):
        flat = tv(thread, value)  # column-major over CuTe's (M, K), (N, K) or (M, N)
        row, col = flat % shape[0], flat // shape[0]
        assert (int(lane_of[row, col]), int(slot_of[row, col])) == (thread, value), (thread, value)


@pytest.mark.parametrize("warps", [(1, 1), (2, 1), (1, 2), (2, 2), (4, 2)])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_tiled_fragments_put_every_instruction_block_on_one_warp_in_consecutive_slots(dtype, warps):
    # A (M, K), B (N, K), C (M, N) of a warp grid, 2 x 2 instruction blocks per warp, K two atoms: every block of
    # every operand is the ISA's fragment on its warp (A on the warps of its grid row, B of its grid column), in a
    # run of consecutive slots starting at the block's own base
    kind = {"float16": "f16", "float32": "tf32", "int8": "int8"}[dtype]
    k = max(kk for kk in SHAPES[kind])
    wm, wn = warps
    m, n = 16 * wm * 2, 8 * wn * 2
    kinds = {"A": (m, k), "B": (n, k), "C": (m, n)}
    for operand, shape in kinds.items():
        layout = mma_sync_layout(operand, shape, dtype if operand != "C" else "float32", warps)
        r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
        every = layout.apply_all(r, c, shape=list(shape))
        replicas = layout.num_replicas()
        assert replicas == {"A": wn, "B": wm, "C": 1}[operand]
        for rep in range(replicas):
            pick = lambda name, rep=rep: np.asarray(every.get(name, np.zeros((replicas, *r.shape), int)))[rep]  # noqa: E731
            warp, lane_of, slot_of = pick("warpid"), pick("laneid"), pick("m")
            block = instruction_shape(operand, k)
            for bi, bj in itertools.product(range(shape[0] // block[0]), range(shape[1] // block[1])):
                base = slot_of[bi * block[0], bj * block[1]] - next(
                    i for lane, i, row, col in isa_elements(kind, k, operand) if (lane, row, col) == (0, 0, 0)
                )
                warp_i = {"A": bi // (m // 16 // wm), "B": None, "C": bi // (m // 16 // wm)}[operand]
                warp_j = {"A": None, "B": bi // (n // 8 // wn), "C": bj // (n // 8 // wn)}[operand]
                for lane, i, row, col in isa_elements(kind, k, operand):
                    y, x = bi * block[0] + row, bj * block[1] + col
                    assert lane_of[y, x] == lane and slot_of[y, x] == base + i
                    if warp_i is not None and warp_j is not None:
                        assert warp[y, x] == warp_i * wn + warp_j
                    elif warp_i is not None:
                        assert warp[y, x] // wn == warp_i
                    else:
                        assert warp[y, x] % wn == warp_j


@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1)])
@pytest.mark.parametrize(("operand", "dtype"), [("A", "bfloat16"), ("B", "uint8"), ("C", "float16"), ("C", "int32")])
def test_recogniser_reads_the_constructors_back(operand, dtype, warps):
    wm, wn = warps
    shape = {"A": (32 * wm, 32), "B": (16 * wn, 64), "C": (32 * wm, 16 * wn)}[operand]
    layout = mma_sync_layout(operand, shape, dtype, warps)
    atoms = mma_sync_atoms(layout, operand, shape, dtype)
    r = {"bfloat16": 2, "uint8": 4, "float16": 2, "int32": 1}[dtype]
    per_atom = {"A": 2, "B": 1, "C": 4 // r}[operand]
    all_registers = [reg for row in atoms.registers for regs in row for reg in regs]
    # every warp holds its blocks in distinct registers, and the registers of one atom are consecutive
    for row_w, row_r in zip(atoms.warps, atoms.registers, strict=True):
        for warps_of, regs in zip(row_w, row_r, strict=True):
            assert list(regs) == list(range(regs[0], regs[0] + per_atom))
            assert len(warps_of) == {"A": wn, "B": wm, "C": 1}[operand]
    per_warp = len(all_registers) // (wm * wn if operand == "C" else (wm if operand == "A" else wn))
    assert sorted(set(all_registers)) == list(range(per_warp))


def test_recogniser_names_the_operand_and_refuses_non_fragments():
    assert recognise_mma_sync_fragment(mma_sync_a_layout((16, 32), "int8"), (16, 32), "int8") == "A"
    assert recognise_mma_sync_fragment(mma_sync_b_layout((8, 8), "float32"), (8, 8), "float32") == "B"
    assert recognise_mma_sync_fragment(mma_sync_c_layout((16, 8), "int32"), (16, 8), "int32") == "C"
    one_row_per_lane = TileLayout.from_iters([Iter(16, 1, "laneid"), Iter(8, 1, "m")])
    with pytest.raises(ValueError, match=r"is no mma\.sync fragment of a"):
        recognise_mma_sync_fragment(one_row_per_lane, (16, 8), "float32")


def _with_iters(layout, change):
    return TileLayout.from_iters([change(it) for it in layout.shard], list(layout.replica))


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        # groupID and threadID_in_group swapped: rows on lane % 4
        (
            "lanes transposed",
            lambda it: Iter(it.extent, {4: 1, 1: 4}[it.stride], "laneid") if it.axis.name == "laneid" else it,
            r"element \(\d+, \d+\) of atom \(0, 0\) sits on lane",
        ),
        # the two row halves swapped with the two column elements: c0, c2 in one f16x2 register
        (
            "halves in one register",
            lambda it: Iter(it.extent, 1 if it.stride == 2 else 2, "m") if it.axis.name == "m" else it,
            r"slot",
        ),
    ],
)
def test_planted_wrong_accumulator_fragments_are_refused(name, change, message):
    good = mma_sync_c_layout((16, 8), "float16")
    bad = _with_iters(good, change)
    assert bad != good, name
    with pytest.raises(ValueError, match=message):
        mma_sync_atoms(bad, "C", (16, 8), "float16")


def test_misaligned_register_pairs_are_refused():
    # a 16-bit A whose slots start at 1: every .f16x2 register would straddle two 32-bit registers
    shifted = TileLayout.from_iters(list(mma_sync_a_layout((16, 8), "float16").shard), [], {"m": 1})
    with pytest.raises(ValueError, match=r"is not an mma\.sync A fragment"):
        mma_sync_atoms(shifted, "A", (16, 8), "float16")


def test_a_replica_in_other_registers_is_refused():
    # each element of A kept twice by its warp, the copy 8 slots further: an instruction reads one register per
    # element, so a fragment whose replicas differ in their registers is no fragment the ISA reads
    layout = TileLayout.from_iters(list(mma_sync_a_layout((16, 16), "float16").shard), [Iter(2, 8, "m")])
    with pytest.raises(ValueError, match=r"slot 8; the ISA reads it as element 0"):
        mma_sync_atoms(layout, "A", (16, 16), "float16")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mma_sync_c_layout((24, 8)), "M=24 must be a positive multiple of 16"),
        (lambda: mma_sync_a_layout((16, 12), "float16"), "K=12 must be a positive multiple of 8"),
        (lambda: mma_sync_b_layout((8, 16), "float16", warps=(0, 1)), "warps must be >= 1"),
        (lambda: mma_sync_c_layout((16, 8), "bfloat16"), "accumulates into float32, float16 or int32"),
        (lambda: mma_sync_layout("D", (16, 8), "float32"), "operand is one of"),
        (lambda: mma_sync_a_layout((16, 8), "float64"), "8-, 16- or 32-bit"),
    ],
)
def test_constructors_refuse_bad_shapes_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---- the instruction --------------------------------------------------------------------------------------------

#: (A, B, D, k, oldest sm): every form the ISA lists for these kinds.
FORMS = [
    ("float16", "float16", "float32", 8, 75),
    ("float16", "float16", "float16", 16, 80),
    ("bfloat16", "bfloat16", "float32", 8, 80),
    ("bfloat16", "bfloat16", "float32", 16, 80),
    ("float32", "float32", "float32", 4, 80),
    ("float32", "float32", "float32", 8, 80),
    ("int8", "int8", "int32", 16, 80),
    ("uint8", "int8", "int32", 32, 80),
    ("float8_e4m3fn", "float8_e4m3fn", "float32", 32, 89),
    ("float8_e5m2", "float8_e4m3fn", "float32", 16, 89),
    ("float8_e4m3fn", "float8_e5m2", "float16", 32, 89),
]


def test_instruction_facts():
    i = MmaSyncInstruction("float16", "float16", "float16", 16)
    assert i.operation == "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
    assert i.registers == {"A": 4, "B": 2, "C": 2}
    assert MmaSyncInstruction("int8", "uint8", "int32", 32).registers == {"A": 4, "B": 2, "C": 4}
    assert MmaSyncInstruction("float32", "float32", "float32", 4).registers == {"A": 2, "B": 1, "C": 4}
    assert [best_k("int8", "int8", k, "sm_80") for k in (16, 32, 96)] == [16, 32, 32]
    with pytest.raises(ValueError, match="accumulates into float32, got D float16"):
        MmaSyncInstruction("bfloat16", "bfloat16", "float16", 16)
    with pytest.raises(ValueError, match="has m16n8k16 / k32, not K=8"):
        MmaSyncInstruction("int8", "int8", "int32", 8)
    with pytest.raises(
        ValueError, match=r"mma\.sync of kind fp8 \(float8_e4m3fn x float8_e4m3fn\) needs sm_89 or newer"
    ):
        best_k("float8_e4m3fn", "float8_e4m3fn", 32, "sm_80")


def _kernel(forms) -> str:
    """A CUDA kernel issuing every form once, its operands from memory so nothing folds away."""
    body = []
    for n, (a, b, d, k, _) in enumerate(forms):
        i = MmaSyncInstruction(a, b, d, k)
        regs = i.registers
        cd = regs["C"]
        dl = ", ".join(f"%{j}" for j in range(cd))
        al = ", ".join(f"%{cd + j}" for j in range(regs["A"]))
        bl = ", ".join(f"%{cd + regs['A'] + j}" for j in range(regs["B"]))
        cl = ", ".join(f"%{j}" for j in range(cd))
        out = ", ".join(f'"+r"(x[{n * 16 + j}])' for j in range(cd))
        ins = ", ".join(f'"r"(x[{n * 16 + 8 + j}])' for j in range(regs["A"] + regs["B"]))
        body.append(f'  asm volatile("{i.operation} {{{dl}}}, {{{al}}}, {{{bl}}}, {{{cl}}};" : {out} : {ins});')
    return 'extern "C" __global__ void k(unsigned int* x) {\n' + "\n".join(body) + "\n}\n"


@pytest.mark.parametrize("sm", sorted({f[4] for f in FORMS}))
def test_every_form_assembles_on_its_oldest_target_and_not_before(sm):
    here = [f for f in FORMS if f[4] == sm]
    for form in here:
        MmaSyncInstruction(*form[:4]).check_arch(f"sm_{sm}")
    assembled = nvcc_assembles(_kernel(here), f"sm_{sm}")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]
    older = {75: 70, 80: 75, 89: 87}[sm]
    for form in here:
        with pytest.raises(ValueError, match=f"needs sm_{sm} or newer"):
            MmaSyncInstruction(*form[:4]).check_arch(f"sm_{older}")
        refused = nvcc_assembles(_kernel([form]), f"sm_{older}")
        assert not refused[0], form
