"""The block-scaled ``mma.sync`` of sm_120 (hw/mma_sync_scaled.py): the instruction facts against the ISA's tables
(every kind, type, scale type and scale vector; each form assembled by ptxas for sm_120a and refused before it), the
scale-factor fragments against the ISA's selector listing (``tests/oracles/mma_sync_block_scale_isa.py``) and
CuTe's SM120 traits (pycute), the recogniser on the constructors and on planted wrong fragments, and the m16n8k64
fp4 operand table against the ISA's and CuTe's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout import Iter, TileLayout
from tirx_layout.hw.mma_sync import mma_sync_layout
from tirx_layout.hw.mma_sync_scaled import (
    KINDS,
    PTXAS_REFUSES,
    SCALE_DTYPES,
    BlockScaledMmaSync,
    block_scaled_instruction,
    fp4_places,
    mma_sync_scale_atoms,
    mma_sync_scale_layout,
    scale_lane,
)
from tirx_layout.tools.kernel_report import nvcc_assembles

from oracles import mma_sync_block_scale_isa as isa
from oracles import mma_sync_isa
from oracles.optional import optional_module

pycute = optional_module("pycute", "pip install pycute")

DTYPE = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e3m2": "float6_e3m2fn", "e2m3": "float6_e2m3fn"}
DTYPE["e2m1"] = "float4_e2m1fn"
STYPE = {"ue8m0": "float8_e8m0fnu", "ue4m3": "float8_e4m3fn"}


def isa_forms():
    """(kind, A, B, stype, X) of every form the ISA's table lists."""
    for kind, types, stype, sizes in isa.COMBINATIONS:
        for a, b, x in itertools.product(types, types, sizes):
            yield kind, a, b, stype, x


def test_kinds_are_the_isa_table():
    listed = {(kind, stype, x) for kind, _, stype, sizes in isa.COMBINATIONS for x in sizes}
    ours = {(kind, stype, x) for kind, facts in KINDS.items() for stype, sizes in facts.scales.items() for x in sizes}
    assert ours == listed
    for kind, types, _, _ in isa.COMBINATIONS:
        assert KINDS[kind].k == isa.K_OF_KIND[kind]
        assert {DTYPE[t] for t in types} == set(KINDS[kind].operands)
    assert SCALE_DTYPES == STYPE


@pytest.mark.parametrize(("kind", "a", "b", "stype", "x"), list(isa_forms()))
def test_every_listed_form_is_an_instruction(kind, a, b, stype, x):
    if (kind, stype, x) in PTXAS_REFUSES:
        with pytest.raises(ValueError, match="the ISA lists it but ptxas refuses it"):
            BlockScaledMmaSync(DTYPE[a], DTYPE[b], "float32", STYPE[stype], x, kind=kind)
        return
    i = BlockScaledMmaSync(DTYPE[a], DTYPE[b], "float32", STYPE[stype], x, kind=kind)
    k = isa.K_OF_KIND[kind]
    assert i.operation == (
        f"mma.sync.aligned.m16n8k{k}.row.col.kind::{kind}.block_scale.scale_vec::{x}X.f32.{a}.{b}.f32.{stype}"
    )
    assert i.elements_per_scale == k // x
    for name, values in isa.SELECTORS[x].items():
        for v in range(5):
            args = dict.fromkeys(("byte-id-a", "thread-id-a", "byte-id-b", "thread-id-b"), 0)
            args[name] = v
            if v in values:
                i.check_selectors(*args.values())
            else:
                with pytest.raises(ValueError, match=f"{name} {v} is invalid for scale_vec::{x}X"):
                    i.check_selectors(*args.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("float8_e4m3fn", "float8_e4m3fn", "float32", "float8_e8m0fnu", 2), "has scale_vec::1X, not 2X"),
        (("float8_e4m3fn", "float8_e4m3fn", "float32", "float8_e4m3fn", 1), "takes ue8m0 scale factors, not ue4m3"),
        (("float8_e4m3fn", "float8_e4m3fn", "float16"), "accumulates into float32, got D float16"),
        (("float8_e4m3fn", "float8_e4m3fn", "float32", "float16"), "ue8m0 .float8_e8m0fnu. or ue4m3"),
        (("float4_e2m1fn", "float4_e2m1fn", "float32", "float8_e4m3fn", 2), "ue4m3 scales has scale_vec::4X, not 2X"),
        (("float16", "float16"), "kind::mxf8f6f4 multiplies .*; A is float16"),
    ],
)
def test_forms_the_isa_does_not_list_are_refused_by_name(args, message):
    with pytest.raises(ValueError, match=message):
        BlockScaledMmaSync(*args)
    with pytest.raises(ValueError, match="kind::mxf4 multiplies float4_e2m1fn; A is float8_e4m3fn"):
        BlockScaledMmaSync("float8_e4m3fn", "float4_e2m1fn", kind="mxf4", scale_vec=2)


def test_the_tile_instruction_follows_the_scale_chunks():
    e4m3, ue8m0, ue4m3 = "float8_e4m3fn", "float8_e8m0fnu", "float8_e4m3fn"
    assert block_scaled_instruction(e4m3, e4m3, "float32", ue8m0, 64, 2).scale_vec == 1
    fp4 = "float4_e2m1fn"
    assert block_scaled_instruction(fp4, fp4, "float32", ue8m0, 128, 4).kind == "mxf4"
    assert block_scaled_instruction(fp4, fp4, "float32", ue4m3, 128, 8).operation.endswith(
        "scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
    )
    with pytest.raises(ValueError, match=r"has scale_vec::1X, not 2X \(one scale per 16 of its K=32\)"):
        block_scaled_instruction(e4m3, e4m3, "float32", ue8m0, 64, 4)
    with pytest.raises(ValueError, match="one scale per 24 elements, which no scale_vec"):
        block_scaled_instruction(e4m3, e4m3, "float32", ue8m0, 96, 4)
    with pytest.raises(ValueError, match="K=48 needs K a multiple of the instruction's 32"):
        block_scaled_instruction(e4m3, e4m3, "float32", ue8m0, 48, 1)


def _kernel(forms) -> str:
    """A CUDA kernel issuing every form once, operands and scales from memory so nothing folds away."""
    body = []
    for n, (kind, a, b, stype, x) in enumerate(forms):
        operation = (
            f"mma.sync.aligned.m16n8k{isa.K_OF_KIND[kind]}.row.col.kind::{kind}.block_scale.scale_vec::{x}X"
            f".f32.{a}.{b}.f32.{stype}"
        )
        base = n * 16
        ins = ", ".join(f'"r"(x[{base + 4 + j}])' for j in range(8))
        out = ", ".join(f'"+f"(f[{base + j}])' for j in range(4))
        body.append(
            f'  asm volatile("{operation} {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}}, '
            f'%10, {{0, 1}}, %11, {{0, 3}};" : {out} : {ins});'
        )
    return 'extern "C" __global__ void k(unsigned int* x, float* f) {\n' + "\n".join(body) + "\n}\n"


def test_every_form_assembles_for_sm_120a_and_nowhere_older():
    forms = [f for f in isa_forms() if f[1] == f[2] or f[0] != "mxf8f6f4"] + [("mxf8f6f4", "e4m3", "e2m1", "ue8m0", 1)]
    refused = [f for f in forms if (f[0], f[3], f[4]) in PTXAS_REFUSES]
    forms = [f for f in forms if f not in refused]
    for form in forms:
        i = BlockScaledMmaSync(DTYPE[form[1]], DTYPE[form[2]], "float32", STYPE[form[3]], form[4], kind=form[0])
        for arch in ("sm_120a", "sm_120f", "sm_121a"):
            i.check_arch(arch)
        for arch in ("sm_120", "sm_100a", "sm_90a", "sm_89", "sm_80"):
            with pytest.raises(ValueError, match=f"needs sm_120a, sm_120f, sm_121a, sm_121f; the target is {arch}"):
                i.check_arch(arch)
    assembled = nvcc_assembles(_kernel(forms), "sm_120a")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]
    for arch in ("sm_100a", "sm_90a", "sm_120"):
        assert not nvcc_assembles(_kernel(forms[:1]), arch)[0], arch
    # the form the ISA lists and ptxas refuses: refused by ptxas still (else PTXAS_REFUSES is stale)
    assert refused and not nvcc_assembles(_kernel(refused), "sm_120a")[0]


# ---- the scale-factor fragments ----------------------------------------------------------------------------------


@pytest.mark.parametrize("thread_id", [0, 1])
def test_scale_a_lanes_are_the_isa_selection(thread_id):
    suppliers = {lane: isa.sf_a_supplier(lane, thread_id) for lane in range(32)}
    rows = {row: lane for lane, row in suppliers.items() if row is not None}
    assert sorted(rows) == list(range(16))
    for row, lane in rows.items():
        assert int(scale_lane("A", row, thread_id)) == lane


@pytest.mark.parametrize("thread_id", [0, 1, 2, 3])
def test_scale_b_lanes_are_the_isa_selection(thread_id):
    cols = {
        isa.sf_b_supplier(lane, thread_id): lane for lane in range(32) if isa.sf_b_supplier(lane, thread_id) is not None
    }
    assert sorted(cols) == list(range(8))
    for col, lane in cols.items():
        assert int(scale_lane("B", col, thread_id)) == lane


def test_scale_lanes_are_cutes_sm120_scale_layouts():
    # CuTe's SFALayout/SFBLayout give each (thread, value) a row (and a K the whole chunk shares); threads whose
    # stride-0 mode differs are the alternatives thread-id chooses among: ours with the matching thread-id
    for operand, (shape, stride), rows in (("A", isa.CUTE_SFA_K32, 16), ("B", isa.CUTE_SFB_K32, 8)):
        tv = pycute.Layout(shape, stride)
        for lane in range(32):
            row = tv(lane, 0) % rows
            assert all(tv(lane, v) // rows == v for v in range(32))  # one scale for the whole K of 32
            thread_id = (lane % 4) // 2 if operand == "A" else lane % 4
            assert int(scale_lane(operand, row, thread_id)) == lane


def _places(layout, shape):
    """(replica, row, col) arrays of warp, lane, slot."""
    r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    every = layout.apply_all(r, c, shape=list(shape))
    reps = layout.num_replicas()
    get = lambda name: np.broadcast_to(  # noqa: E731
        np.broadcast_to(
            np.asarray(every.get(name, 0)), np.broadcast_shapes(np.shape(every.get(name, 0)), shape)
        ).reshape((-1, *shape)),
        (reps, *shape),
    )
    return get("warpid"), get("laneid"), get("m")


@pytest.mark.parametrize("x", [1, 2, 4])
@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1), (1, 4)])
@pytest.mark.parametrize("operand", ["A", "B"])
@pytest.mark.parametrize("blocks", [1, 2, 4])
def test_constructor_puts_every_scale_where_the_isa_reads_it(operand, warps, blocks, x):
    # every instruction (block, K step) of the constructor's tile: its scales on one warp of the right row (column)
    # of the grid, on the lanes of one thread-id, chunk j in byte byte-id + j of one register, byte-id and thread-id
    # among the ISA's values
    wm, wn = warps
    block = 16 if operand == "A" else 8
    along = wm if operand == "A" else wn
    chunks = 2 * 4
    shape = (block * blocks * along, chunks)
    layout = mma_sync_scale_layout(operand, shape, warps)
    warp, lane, slot = _places(layout, shape)
    assert layout.num_replicas() == (wn if operand == "A" else wm)
    key = "a" if operand == "A" else "b"
    for bi, s in itertools.product(range(shape[0] // block), range(chunks // x)):
        rows, cols = slice(bi * block, (bi + 1) * block), slice(s * x, (s + 1) * x)
        w, ln, sl = warp[:, rows, cols], lane[:, rows, cols], slot[:, rows, cols]
        for rep in range(w.shape[0]):
            assert len(set(w[rep].ravel().tolist())) == 1
            owner = int(w[rep, 0, 0])
            grid_index = owner // wn if operand == "A" else owner % wn
            assert grid_index == bi // blocks
            registers = set((sl[rep] // 4).ravel().tolist())
            assert len(registers) == 1
            byte_id = int(sl[rep, 0, 0] % 4)
            assert byte_id in isa.SELECTORS[x][f"byte-id-{key}"]
            for j in range(x):
                assert set((sl[rep, :, j] % 4).tolist()) == {isa.sf_bytes(x, byte_id)[j]}
            supplier = isa.sf_a_supplier if operand == "A" else isa.sf_b_supplier
            thread_ids = [t for t in isa.SELECTORS[x][f"thread-id-{key}"] if supplier(int(ln[rep, 0, 0]), t) == 0]
            assert len(thread_ids) == 1
            for r in range(block):
                assert supplier(int(ln[rep, r, 0]), thread_ids[0]) == r
                assert (ln[rep, r] == ln[rep, r, 0]).all()
    atoms = mma_sync_scale_atoms(layout, operand, shape, x)
    assert atoms.grid == (shape[0] // block, chunks // x)


def test_recogniser_reads_the_selectors():
    atoms = mma_sync_scale_atoms(mma_sync_scale_layout("B", (32, 4)), "B", (32, 4), 2)
    assert atoms.thread_ids == ((0, 0), (1, 1), (2, 2), (3, 3))
    assert atoms.byte_ids == ((0, 2),) * 4
    assert atoms.registers == ((0, 0),) * 4


def _with(layout, change):
    return TileLayout.from_iters([change(it) for it in layout.shard], list(layout.replica))


@pytest.mark.parametrize(
    ("name", "layout", "shape", "x", "message"),
    [
        # rows on the accumulator's lanes (row g on lane 4g, g + 8 on lane 4g + 2): not a lane pair of the ISA
        (
            "accumulator rows",
            _with(mma_sync_scale_layout("A", (16, 1)), lambda it: Iter(2, 2, "laneid") if it.stride == 1 else it),
            (16, 1),
            1,
            r"row 8, chunk 0 .* sits on lane 2 of warp 0, slot 0; the ISA reads it from lane 1",
        ),
        # a 2X pair starting at byte 1: the ISA takes byte pairs at 0 or 2 only
        (
            "pair at byte 1",
            TileLayout.from_iters(list(mma_sync_scale_layout("A", (16, 2)).shard), [], {"m": 1}),
            (16, 2),
            2,
            r"byte-id 1; scale_vec::2X allows thread-id \(0, 1\) and byte-id \(0, 2\)",
        ),
        # B's chunks spread over two lanes of the quad: one instruction reads one lane per column
        (
            "chunks over lanes",
            TileLayout.from_iters([Iter(8, 4, "laneid"), Iter(2, 1, "laneid")]),
            (8, 2),
            2,
            r"chunk 1 .* sits on lane 1 of warp 0, slot 0; the ISA reads it from lane 0 .* slot 1",
        ),
    ],
)
def test_planted_wrong_scale_fragments_are_refused(name, layout, shape, x, message):
    operand = "A" if shape[0] == 16 else "B"
    with pytest.raises(ValueError, match=message):
        mma_sync_scale_atoms(layout, operand, shape, x)


def test_constructor_refusals_name_the_value():
    with pytest.raises(ValueError, match="rows=24 must be a positive multiple of 16"):
        mma_sync_scale_layout("A", (24, 1))
    with pytest.raises(ValueError, match=r"operand is 'A' \(scale_a\) or 'B'"):
        mma_sync_scale_layout("C", (16, 1))
    with pytest.raises(ValueError, match=r"rows=8 must be a positive multiple of 16 \(2 warp"):
        mma_sync_scale_layout("B", (8, 1), warps=(1, 2))


# ---- the fp4 operands of m16n8k64 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("operand", ["A", "B"])
def test_fp4_fragment_is_the_isa_table_and_cutes(operand):
    places = fp4_places(operand)
    count = {"A": 32, "B": 16}[operand]
    assert places.shape == (32, count, 2)
    shape_, stride = isa.CUTE_K64[operand]
    tv = pycute.Layout(shape_, stride)
    rows = 16 if operand == "A" else 8
    for lane, i in itertools.product(range(32), range(count)):
        if operand == "A":
            want = isa.fp4_a_place(lane, i)
        else:
            k, n = isa.fp4_b_place(lane, i)
            want = (n, k)
        assert tuple(places[lane, i].tolist()) == want
        flat = tv(lane, i)
        assert (flat % rows, flat // rows) == want
    assert len({tuple(p) for p in places.reshape(-1, 2).tolist()}) == 32 * count  # every element once


@pytest.mark.parametrize("operand", ["A", "B"])
def test_mxf8f6f4_fragments_are_cutes_sm120_k32_atoms(operand):
    # CuTe's SM120 16x8x32 traits (block-scaled or not) are its SM80 16x8x32 s8 ones over 8-bit containers: the
    # 8-bit mma.sync fragments, whatever the element type in the container
    shape_, stride = mma_sync_isa.CUTE[(1, 32)][operand]
    tv = pycute.Layout(shape_, stride)
    shape = (16, 32) if operand == "A" else (8, 32)
    for dtype in ("float8_e4m3fn", "float8_e5m2"):
        _, lane, slot = _places(mma_sync_layout(operand, shape, dtype), shape)
        for thread, value in itertools.product(range(32), range(pycute.size(tv) // 32)):
            flat = tv(thread, value)
            row, col = flat % shape[0], flat // shape[0]
            assert (int(lane[0, row, col]), int(slot[0, row, col])) == (thread, value)
