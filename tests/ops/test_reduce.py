"""``T.tile_reduce``: the derived layout of its result (exact, for the Hopper accumulator, the tcgen05.ld/st images
and one-row-per-thread fragments), the xor masks it reads off a layout (checked against a numpy run of the plan over
every thread, whose oracle is the layouts' forward maps), the lowered IR against hand-written TIR, what it refuses,
and reductions built, assembled and simulated equal to numpy."""

import dataclasses
import re

import ml_dtypes
import numpy as np
import pytest
import tvm

from tirx_layout import (
    R,
    S,
    TileLayout,
    laneid,
    sim,
    tcgen05_atom_layout,
    wg_local_layout,
    wgid,
    wgmma_accumulator_layout,
    wid_in_wg,
)
from tirx_layout.analysis.thread_placement import slot_holders
from tirx_layout.ir.rewrite import walk
from tirx_layout.ops import find
from tirx_layout.ops.reduce import TILE_REDUCE, reduced_layout, reduction_plan
from tirx_layout.tools.kernel_report import find_nvcc, kernel_source, nvcc_assembles
from tirx_layout.tools.measurement import measure_cuda
from tirx_layout.transform import LayoutVerificationError, build, infer_layouts, lower_tile_ops
from tirx_layout.transform.infer_layouts import infer

from kernels import parse

#: The simulator learns shfl.sync's xor mode in the simmath branch; until it lands, a run of a kernel that shuffles
#: fails with "does not implement the intrinsic tvm_warp_shuffle_xor".

NUMPY = {"sum": np.sum, "max": np.max, "min": np.min}
PAIRWISE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


# ---- the derived layout ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "shape", "axis", "derived"),
    [
        # wgmma D (ISA "Register Fragments"): lane l holds rows l/4 and l/4 + 8 (slot stride 2), columns of its quad
        # position in every 8-column block; a row lives on the 4 lanes of a quad, so they become its replicas.
        (wgmma_accumulator_layout(64), (64, 64), 1, "S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)] + R[4:1@laneid]"),
        # columns: 8 blocks x (quad position, pair), held by every warp and every lane group of 4
        (
            wgmma_accumulator_layout(64),
            (64, 64),
            0,
            "S[(8, 4, 2):(2, 1@laneid, 1)] + R[(4, 8):(1@wid_in_wg, 4@laneid)]",
        ),
        (
            wgmma_accumulator_layout(16, warpgroups=2),
            (128, 16),
            1,
            "S[(2, 4, 2, 8):(1@wgid, 1@wid_in_wg, 1, 4@laneid)] + R[4:1@laneid]",
        ),
        # one row per thread: a row reduction is the thread's own, a column reduction is held by all 128
        (wg_local_layout(32), (128, 32), 1, "S[128:1@tid_in_wg]"),
        (wg_local_layout(32), (128, 32), 0, "S[32:1] + R[128:1@tid_in_wg]"),
        # tcgen05.ld/st register images of a TMEM tile
        (tcgen05_atom_layout("32x32b", (128, 32), "float32"), (128, 32), 1, "S[128:1@tid_in_wg]"),
        (
            tcgen05_atom_layout("16x64b", (64, 32), "float32"),
            (64, 32),
            1,
            "S[(4, 2, 8):(1@wid_in_wg, 1@laneid, 4@laneid)] + R[2:2@laneid]",
        ),
        (
            tcgen05_atom_layout("16x256b", (64, 32), "float32"),
            (64, 32),
            1,
            "S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)] + R[4:1@laneid]",
        ),
    ],
)
def test_the_result_layout_is_the_source_placement_without_the_reduced_axes(layout, shape, axis, derived):
    assert str(reduced_layout(layout, shape, axis)) == derived


def test_reducing_every_axis_leaves_one_element_on_every_thread_that_held_part_of_it():
    assert str(reduced_layout(wgmma_accumulator_layout(8), (64, 8), (0, 1))) == (
        "S[1:1] + R[(4, 8, 4):(1@wid_in_wg, 4@laneid, 1@laneid)]"
    )


def _exec_plan_on_numpy(plan, src_layout, shape, axis, op, threads, values):
    """What every thread holds in each result slot after the plan's stages, run on numpy: the source registers filled
    through the source layout's forward map (``slot_holders``), each result slot its sources combined, the butterfly
    (thread ``t`` reads ``t ^ mask``), then the warps: each output element's partials from warps that together hold
    each of its source elements once (replica warps left out), combined."""
    holders, _ = slot_holders(src_layout, threads)
    flat = values.reshape(-1)
    registers = np.where(holders >= 0, flat[holders.clip(0)], 0)
    combine = PAIRWISE[op]
    result = np.stack([combine.reduce(registers[:, list(sources)], axis=1) for sources in plan.slots], axis=1)
    tids = np.arange(threads)
    for mask in plan.lane_masks:
        result = combine(result, result[tids ^ mask])
    if plan.warp_count == 1:
        return result
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    coords = np.unravel_index(np.arange(values.size), shape)
    kept = [c for d, c in enumerate(coords) if d not in axes]
    output = np.ravel_multi_index(kept, [e for d, e in enumerate(shape) if d not in axes]) if kept else 0 * coords[0]
    dst_holders, _ = slot_holders(plan.dst_layout, threads)
    final = result.copy()
    for element in np.unique(dst_holders[dst_holders >= 0]):
        places = np.argwhere(dst_holders == element)
        wanted, taken, partials = set(np.flatnonzero(output == element).tolist()), set(), []
        for t, s in places:
            warp = slice(t // 32 * 32, t // 32 * 32 + 32)
            held = {int(e) for e in holders[warp].reshape(-1) if e >= 0 and output[e] == element}
            if held and not held & taken:
                taken |= held
                partials.append(result[t, s])
        assert taken == wanted, f"the warps do not cover output element {element}"
        for t, s in places:
            final[t, s] = combine.reduce(partials)
    return final


def _plan_is_right(plan, layout, shape, axis, op, threads, seed=0):
    """Whether every thread ends up holding, in each slot the result's layout gives it, the numpy reduction."""
    values = np.random.default_rng(seed).integers(-1000, 1000, shape)
    result = _exec_plan_on_numpy(plan, layout, shape, axis, op, threads, values)
    want = NUMPY[op](values, axis=axis).reshape(-1)
    dst_holders, _ = slot_holders(plan.dst_layout, threads)
    held = dst_holders >= 0
    return held.any() and bool((result[held] == want[dst_holders[held]]).all())


CASES = [
    (wgmma_accumulator_layout(64), (64, 64), 1, 128),
    (wgmma_accumulator_layout(64), (64, 64), 0, 128),
    (wgmma_accumulator_layout(32, warpgroups=2), (128, 32), 0, 256),
    (wgmma_accumulator_layout(32, warpgroups=2), (128, 32), (0, 1), 256),
    (wg_local_layout(16), (128, 16), 0, 128),
    (wg_local_layout(16), (128, 16), 1, 128),
    (tcgen05_atom_layout("16x64b", (64, 32), "float32"), (64, 32), 1, 128),
    (tcgen05_atom_layout("16x64b", (64, 32), "float32"), (64, 32), 0, 128),
    # source replicas over warps, and over a warpgroup the layout does not name (a 256-thread CTA)
    (TileLayout(S[(8, 4) : (4 @ laneid, 1 @ laneid)] + R[4 : 1 @ wid_in_wg]), (8, 4), 1, 128),
    (TileLayout(S[(4, 32) : (1 @ wid_in_wg, 1 @ laneid)] + R[2 : 1 @ wgid]), (4, 32), 0, 256),
    (TileLayout(S[(4, 32) : (1 @ wid_in_wg, 1 @ laneid)]), (4, 32), 0, 256),
    (TileLayout(S[(16, 8) : (2 @ laneid, 1)]), (16, 8), 0, 64),
]


@pytest.mark.parametrize(("layout", "shape", "axis", "threads"), CASES)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_the_plan_leaves_every_holder_of_an_output_element_with_its_reduction(layout, shape, axis, threads, op):
    assert _plan_is_right(reduction_plan(layout, shape, axis), layout, shape, axis, op, threads)


def test_the_xor_masks_are_the_lane_bits_of_the_reduced_axis():
    assert reduction_plan(wgmma_accumulator_layout(64), (64, 64), 1).lane_masks == (1, 2)  # the quad
    assert reduction_plan(wgmma_accumulator_layout(64), (64, 64), 0).lane_masks == (4, 8, 16)  # lane / 4
    assert reduction_plan(tcgen05_atom_layout("16x64b", (64, 32), "float32"), (64, 32), 1).lane_masks == (2,)
    assert reduction_plan(wg_local_layout(64), (128, 64), 1).lane_masks == ()  # one row per thread: no shuffle
    column = reduction_plan(wg_local_layout(64), (128, 64), 0)
    assert (column.lane_masks, column.warp_count, column.warp_span) == ((1, 2, 4, 8, 16), 4, 128)


@pytest.mark.parametrize("wrong", [(1, 4), (2,), (1,), (1, 2, 4)])
def test_a_planted_wrong_xor_mask_is_caught(wrong):
    layout, shape = wgmma_accumulator_layout(64), (64, 64)
    planted = dataclasses.replace(reduction_plan(layout, shape, 1), lane_masks=wrong)
    assert not _plan_is_right(planted, layout, shape, 1, "sum", 128)


# ---- the op: fields, printing, inference, lowering ---------------------------------------------------------------

KERNEL = """
@T.prim_func
def k(A: T.Buffer((@ROWS@, @COLS@), "@DTYPE@"), B: T.Buffer(@OUT@, "@DTYPE@")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
    T.device_entry()
    tx = T.thread_id([@THREADS@])
    acc = T.alloc_local((@ROWS@, @COLS@), "@DTYPE@", layout=@LAYOUT@)
    red = T.alloc_local(@OUT@, "@DTYPE@"@DST_LAYOUT@)
    T.tile_copy(acc, A)
    @INIT@
    @REDUCE@
    T.tile_copy(B, red)
"""


def _kernel(
    reduce: str,
    layout: str = "wgmma_accumulator_layout(64)",
    shape=(64, 64),
    out=(64,),
    threads: int = 128,
    dtype: str = "float32",
    dst_layout: str | None = None,
    init: str = "",
):
    text = KERNEL
    for key, value in (
        ("@ROWS@", str(shape[0])),
        ("@COLS@", str(shape[1])),
        ("@OUT@", repr(tuple(out))),
        ("@THREADS@", str(threads)),
        ("@DTYPE@", dtype),
        ("@LAYOUT@", layout),
        ("@DST_LAYOUT@", "" if dst_layout is None else f", layout={dst_layout}"),
        ("@INIT@", init or "T.evaluate(0)"),
        ("@REDUCE@", reduce),
    ):
        text = text.replace(key, value)
    return parse(text)


def test_the_op_reads_back_its_fields_and_its_printed_form_parses_back():
    S = tvm.tirx.decl_buffer((64, 64), "float32", "S", scope="local")
    r = tvm.tirx.decl_buffer((64,), "float32", "r", scope="local")
    call = find(tvm.tirx.Evaluate(TILE_REDUCE(r, S, "max", axis=1, scope="warpgroup")))
    assert (str(call.dst), str(call.src), call.op, call.axis, call.scope) == (
        "r[0:64]",
        "S[0:64, 0:64]",
        "max",
        (1,),
        "warpgroup",
    )
    assert find(tvm.tirx.Evaluate(TILE_REDUCE(r, S, "sum"))).axis == (-1,)  # the last axis by default
    func = _kernel('T.tile_reduce(red, acc, "max", axis=1)')
    assert 'T.tile_reduce(red[0:64], acc[0:64, 0:64], "max", axis=1)' in func.script()
    tvm.ir.assert_structural_equal(parse(func.script()), func, map_free_vars=True)
    func = parse("""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([128])
    x = T.alloc_local((2, 128, 4), "float32", layout=TileLayout(S[(2, 128, 4):(4, 1@tid_in_wg, 1)]))
    y = T.alloc_local((4,), "float32")
    T.tile_reduce(y, x, "sum", axis=(0, 1), accumulate=True, scope="warpgroup")
""")
    printed = 'T.tile_reduce(y[0:4], x[0:2, 0:128, 0:4], "sum", axis="0, 1", accumulate=True, scope="warpgroup")'
    assert printed in func.script()
    tvm.ir.assert_structural_equal(parse(func.script()), func, map_free_vars=True)
    assert find(_last_call(func)).axis == (0, 1)


def _last_call(func):
    found = []
    walk(func.body, [(tvm.tirx.Evaluate, lambda stmt: found.append(stmt) if find(stmt) is not None else None)])
    return found[-1]


def test_inference_gives_an_open_destination_the_derived_layout():
    func = _kernel('T.tile_reduce(red, acc, "max", axis=1)')
    chosen, decisions = infer(func)
    (layout,) = chosen.values()
    assert str(layout) == "S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)] + R[4:1@laneid]"
    assert "forced by T.tile_reduce(red, acc, 'max', axis=(1,))" in str(decisions[0].reason)


def _reduce_lines(func) -> list[str]:
    """The lowered statements of the reduction (from the first line that writes ``red_flat`` to the copy out)."""
    lines = [line.strip() for line in lower_tile_ops(infer_layouts(func)).script().splitlines()]
    first = next(i for i, line in enumerate(lines) if line.startswith(("red_flat[", "red_reduced")))
    last = next(i for i, line in enumerate(lines) if i > first and "decl_buffer" in line)
    return lines[first:last]


def test_a_quad_row_maximum_of_the_hopper_accumulator_lowers_to_its_slots_then_xor_1_and_2():
    # wgmma D of m64n8 (ISA "Register Fragments"): d0, d1 are row l/4, d2, d3 row l/4 + 8, all in columns 2(l%4)..+1;
    # a row's 8 columns are on the 4 lanes of a quad: xor 1, then xor 2.
    func = _kernel('T.tile_reduce(red, acc, "max", axis=1)', "wgmma_accumulator_layout(8)", (64, 8))
    full = "T.uint32(4294967295)"
    assert _reduce_lines(func) == [
        "red_flat[0] = T.max(acc_flat_1[0], acc_flat_1[1])",
        "red_flat[1] = T.max(acc_flat_1[2], acc_flat_1[3])",
        "for slot in T.unroll(2):",
        f"red_flat[slot] = T.max(red_flat[slot], T.tvm_warp_shuffle_xor({full}, red_flat[slot], 1, 32, 32))",
        "for slot in T.unroll(2):",
        f"red_flat[slot] = T.max(red_flat[slot], T.tvm_warp_shuffle_xor({full}, red_flat[slot], 2, 32, 32))",
    ]


def test_a_one_row_per_thread_reduction_is_the_threads_own_and_shuffles_nothing():
    func = _kernel('T.tile_reduce(red, acc, "sum", axis=1)', "wg_local_layout(4)", (128, 4), (128,))
    assert _reduce_lines(func)[:1] == ["red_flat[0] = acc_flat_1[0] + acc_flat_1[1] + (acc_flat_1[2] + acc_flat_1[3])"]
    assert not any("shuffle" in line or "sync" in line for line in _reduce_lines(func))


def test_accumulate_combines_with_the_old_value_and_a_runtime_condition_selects():
    func = _kernel('T.tile_reduce(red, acc, "sum", axis=1, accumulate=True)', "wg_local_layout(2)", (128, 2), (128,))
    assert _reduce_lines(func) == [  # (a one-register buffer prints as a scalar)
        "red_reduced: T.float32 = acc_flat_1[0] + acc_flat_1[1]",
        "red_flat[0] = red_flat[0] + red_reduced",
    ]
    text = 'for i in range(2):\n        T.tile_reduce(red, acc, "max", axis=1, accumulate=i > 0)'
    func = _kernel(text, "wg_local_layout(2)", (128, 2), (128,))
    lowered = lower_tile_ops(infer_layouts(func)).script()
    assert "red_flat[0] = T.Select(i > 0, T.max(red_flat[0], red_reduced), red_reduced)" in lowered


ACROSS_WARPS = [
    # column sums of one row per thread: lane bits 1..16, then the 4 warps. Lane 0 of each warp writes its 2 partials
    # (scratch[warp * 2 + column]); the first 2 threads combine the 4 partials of one column each into
    # scratch[8 + column]; every thread reads both columns back.
    (
        ("wg_local_layout(2)", (128, 2), (2,), 0),
        [
            "red_scratch = T.alloc_shared((10,))",
            "for slot in T.unroll(2):",
            "if tx % 32 == 0:",
            "red_scratch[tx // 32 * 2 + slot] = red_flat[slot]",
            "T.cuda.cta_sync()",
            "if tx < 2:",
            "red_scratch[tx + 8] = red_scratch[tx] + red_scratch[tx + 2] + (red_scratch[tx + 4] + red_scratch[tx + 6])",
            "T.cuda.cta_sync()",
            "for slot in T.unroll(2):",
            "red_flat[slot] = red_scratch[slot + 8]",
            "T.cuda.cta_sync()",
        ],
    ),
    # one element per thread, reduced to one value: each holder reads the 4 warp partials (one step) rather than 1
    # final after another barrier (4 loads either way, so the shorter form)
    (
        ("TileLayout(S[(128, 1):(1@tid_in_wg, 1)])", (128, 1), (1,), (0, 1)),
        [
            "red_scratch = T.alloc_shared((4,))",
            "if tx % 32 == 0:",
            "red_scratch[tx // 32] = red_flat[0]",
            "T.cuda.cta_sync()",
            "red_flat[0] = red_scratch[0] + red_scratch[1] + (red_scratch[2] + red_scratch[3])",
            "T.cuda.cta_sync()",
        ],
    ),
]


@pytest.mark.parametrize(("case", "expected"), ACROSS_WARPS)
def test_a_reduction_across_warps_meets_in_shared_memory_between_barriers_of_its_scope(case, expected):
    layout, shape, out, axis = case
    lines = _reduce_lines(_kernel(f'T.tile_reduce(red, acc, "sum", axis={axis})', layout, shape, out))
    assert lines[lines.index(expected[0]) :] == expected


def test_a_warpgroup_scope_reduction_uses_its_warpgroups_named_barrier():
    func = _kernel('T.tile_reduce(red, acc, "sum", axis=0, scope="warpgroup")', "wg_local_layout(2)", (128, 2), (2,))
    assert _reduce_lines(func).count("T.cuda.warpgroup_sync(tx // 128 + 1)") == 3


# ---- refusals ----------------------------------------------------------------------------------------------------


def test_a_source_that_is_not_a_register_fragment_is_refused():
    S = tvm.tirx.decl_buffer((64, 64), "float32", "S", scope="shared")
    r = tvm.tirx.decl_buffer((64,), "float32", "r", scope="local")
    with pytest.raises(ValueError, match=r"its source S is in 'shared' memory: copy a shared or global tile into a"):
        TILE_REDUCE(r, S, "sum", axis=1)
    text = KERNEL.replace("acc = T.alloc_local(", "acc = T.alloc_shared(").replace(", layout=@LAYOUT@", "")
    with pytest.raises(tvm.error.DiagnosticError, match=r"T.tile_reduce reduces register fragments; its source acc"):
        parse(
            text.replace("@ROWS@", "64")
            .replace("@COLS@", "64")
            .replace("@OUT@", "(64,)")
            .replace("@THREADS@", "128")
            .replace("@DTYPE@", "float32")
            .replace("@DST_LAYOUT@", "")
            .replace("@INIT@", "T.evaluate(0)")
            .replace("@REDUCE@", 'T.tile_reduce(red, acc, "sum", axis=1)')
        )


def test_a_per_thread_array_is_no_fragment_to_reduce():
    func = _kernel('T.tile_reduce(red, acc, "sum", axis=1)', dst_layout="TileLayout(S[64:1])")
    with pytest.raises(LayoutVerificationError, match=r"its destination red .* is a per-thread array, not a fragment"):
        build(func, "sm_90a")


@pytest.mark.parametrize(
    ("axis", "words"),
    [
        ("2", "T.tile_reduce: axis 2 is out of range for a tile of rank 2 \\(axes 0..1\\)"),
        ("-3", "T.tile_reduce: axis -3 is out of range"),
        ("(1, 1)", "T.tile_reduce: axis 1 is reduced twice"),
    ],
)
def test_an_axis_out_of_range_is_refused(axis, words):
    S = tvm.tirx.decl_buffer((64, 64), "float32", "S", scope="local")
    r = tvm.tirx.decl_buffer((64,), "float32", "r", scope="local")
    with pytest.raises(ValueError, match=words):
        TILE_REDUCE(r, S, "sum", axis=eval(axis))
    with pytest.raises(tvm.error.DiagnosticError, match=words):  # in TVMScript, at the line of the call
        _kernel(f'T.tile_reduce(red, acc, "sum", axis={axis})')


def test_a_dtype_mismatch_and_a_wrong_destination_shape_are_refused():
    S = tvm.tirx.decl_buffer((64, 64), "float32", "S", scope="local")
    with pytest.raises(ValueError, match=r"T.tile_reduce from S to r: dtypes differ \(float32 vs float16\)"):
        TILE_REDUCE(tvm.tirx.decl_buffer((64,), "float16", "r", scope="local"), S, "sum", axis=1)
    with pytest.raises(ValueError, match=r"along axes \[1\] gives a \[64\] tile; the destination r is \[32\]"):
        TILE_REDUCE(tvm.tirx.decl_buffer((32,), "float32", "r", scope="local"), S, "sum", axis=1)
    with pytest.raises(ValueError, match=r"op must be one of \['sum', 'max', 'min'\], got 'mean'"):
        TILE_REDUCE(tvm.tirx.decl_buffer((64,), "float32", "r", scope="local"), S, "mean", axis=1)


def test_a_given_destination_layout_that_disagrees_with_the_derivation_is_refused_naming_both():
    # one copy per row on the quad's first lane only: the other three lanes would hold nothing
    func = _kernel(
        'T.tile_reduce(red, acc, "max", axis=1)', dst_layout="TileLayout(S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)])"
    )
    with pytest.raises(LayoutVerificationError) as refused:
        build(func, "sm_90a")
    message = str(refused.value)
    assert "the destination red is given the layout S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)]" in message
    assert "the reduction leaves its elements in S[(4, 2, 8):(1@wid_in_wg, 1, 4@laneid)] + R[4:1@laneid]" in message
    assert "differ at element (0,): thread 0 slot 0 under the given layout; thread 0 slot 0, thread 1 slot 0" in message


def test_a_given_destination_layout_equal_to_the_derivation_in_other_words_is_taken():
    build(
        _kernel(
            'T.tile_reduce(red, acc, "sum", axis=1)',
            "wg_local_layout(4)",
            (128, 4),
            (128,),
            dst_layout="TileLayout(S[(4, 32):(1@wid_in_wg, 1@laneid)])",
        ),
        "sm_90a",
    )


@pytest.mark.parametrize(
    ("scope", "words"),
    [
        ("warp", "span 4 warps \\(128 CTA threads\\), beyond one warp of the warp-scope T.tile_reduce"),
        ("thread", "a thread-scope T.tile_reduce combines each thread's own slots only"),
    ],
)
def test_a_scope_smaller_than_the_reduced_threads_is_refused(scope, words):
    func = _kernel(f'T.tile_reduce(red, acc, "sum", axis=0, scope="{scope}")', "wg_local_layout(2)", (128, 2), (2,))
    with pytest.raises(LayoutVerificationError, match=words):
        build(func, "sm_90a")


def test_reduced_warpgroups_need_a_cta_scope():
    func = _kernel(
        'T.tile_reduce(red, acc, "sum", axis=0, scope="warpgroup")',
        "wgmma_accumulator_layout(8, warpgroups=2)",
        (128, 8),
        (8,),
        threads=256,
    )
    with pytest.raises(
        LayoutVerificationError, match=r"span 8 warps \(256 CTA threads\).* use a scope that holds them \(cta\)"
    ):
        build(func, "sm_90a")


# ---- built, assembled, simulated ---------------------------------------------------------------------------------

SIMULATED = [
    ("wgmma_accumulator_layout(64)", (64, 64), 1, 128, "cta"),
    ("wgmma_accumulator_layout(64)", (64, 64), 0, 128, "cta"),
    ("wgmma_accumulator_layout(32, warpgroups=2)", (128, 32), 0, 256, "cta"),
    ("wgmma_accumulator_layout(32, warpgroups=2)", (128, 32), (0, 1), 256, "cta"),
    ("wg_local_layout(16)", (128, 16), 0, 128, "cta"),
    ("wg_local_layout(64)", (128, 64), 0, 128, "cta"),  # 64 sums every thread holds: 70 registers, not 255
    ("TileLayout(S[(128, 1):(1@tid_in_wg, 1)])", (128, 1), (0, 1), 128, "cta"),
    ("TileLayout(S[(4, 32):(1@wid_in_wg, 1@laneid)] + R[2:1@wgid])", (4, 32), 0, 256, "cta"),
    ("TileLayout(S[(16, 8):(2@laneid, 1)])", (16, 8), 0, 64, "cta"),
    ("wgmma_accumulator_layout(64, first_warpgroup=1)", (64, 64), 0, 256, "cta"),
    ("wg_local_layout(16)", (128, 16), 0, 128, "warpgroup"),
    ("wgmma_accumulator_layout(64)", (64, 64), 1, 128, "warp"),
]


def _expected(values, axis, op):
    return NUMPY[op](values, axis=axis).reshape(-1)


def _out_shape(shape, axis):
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(e for d, e in enumerate(shape) if d not in axes) or (1,)


@pytest.mark.parametrize(("layout", "shape", "axis", "threads", "scope"), SIMULATED)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_a_reduction_simulates_equal_to_numpy(layout, shape, axis, threads, scope, op):
    out = _out_shape(shape, axis)
    func = _kernel(f'T.tile_reduce(red, acc, "{op}", axis={axis}, scope="{scope}")', layout, shape, out, threads)
    values = np.random.default_rng(7).integers(-64, 64, shape).astype(np.float32)
    result = sim.run(func, {"A": values}, arch="sm_90a")
    assert (result["B"].reshape(-1) == _expected(values, axis, op)).all()
    assert (result.writes["B"] == 1).all()


def test_an_accumulating_reduction_in_a_loop_simulates_equal_to_numpy():
    text = (
        'T.tile_fill(red, -1000.0)\n    for i in range(3):\n        T.tile_reduce(red, acc, "max", axis=1, '
        "accumulate=True)\n        T.tile_fill(acc, T.Cast('float32', i))"
    )
    func = _kernel(text, init="T.evaluate(0)")
    values = np.random.default_rng(3).integers(-64, 64, (64, 64)).astype(np.float32)
    result = sim.run(func, {"A": values}, arch="sm_90a")
    assert (result["B"] == np.maximum(values.max(axis=1), 1.0)).all()


def test_every_reduction_builds_and_assembles_keeping_its_fragments_in_registers():
    for case in SIMULATED:
        layout, shape, axis, threads, scope = case.values if hasattr(case, "values") else case
        out = _out_shape(shape, axis)
        func = _kernel(f'T.tile_reduce(red, acc, "sum", axis={axis}, scope="{scope}")', layout, shape, out, threads)
        cuda = build(func, "sm_90a").imports[0].inspect_source()
        if "wgmma" in layout and axis == 1:
            masks = re.findall(r"__shfl_xor_sync\(\(uint\)4294967295, red_ptr\[\d\], (\d+), 32\)", kernel_source(cuda))
            assert sorted(set(masks)) == ["1", "2"]
        if find_nvcc() is None:
            continue
        code = measure_cuda(cuda, "sm_90a")
        local = [i for i in code.ptx if re.match(r"(ld|st)\.local", i)]
        assert code.spill_bytes == 0 and local == [], f"{layout} axis {axis}: the fragments went to local memory"


# ---- a destination in memory: stores, or atomics across CTAs -----------------------------------------------------

COLUMN_SUMS = """
@T.prim_func
def colsum(A: T.Buffer((1024, @COLS@), "float32"), B: T.Buffer((@COLS@,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
    T.device_entry()
    bx = T.cta_id([8])
    tx = T.thread_id([128])
    rows = T.alloc_local((128, @COLS@), "float32", layout=wg_local_layout(@COLS@))
    T.tile_copy(rows, A[bx * 128 : bx * 128 + 128, 0:@COLS@])
    T.tile_reduce(B, rows, "@OP@", axis=0@ACCUMULATE@)
"""


def _column_sums(cols: int = 64, op: str = "sum", accumulate: str = ", accumulate=True"):
    return parse(COLUMN_SUMS.replace("@COLS@", str(cols)).replace("@OP@", op).replace("@ACCUMULATE@", accumulate))


def test_column_sums_across_ctas_add_each_element_once_per_cta_spread_over_the_replicas():
    lines = [line.strip() for line in lower_tile_ops(infer_layouts(_column_sums(4))).script().splitlines()]
    # the 4 column sums are held by all 128 threads (R[128:1@tid_in_wg]): thread j adds column j
    assert lines[-5:] == [
        "B_reduced_flat[slot] = B_scratch[slot + 16]",
        "T.cuda.cta_sync()",
        "for slot in T.unroll(4):",
        "if tx == slot:",
        "T.cuda.atomic_add(T.address_of(B_flat[slot]), B_reduced_flat[slot])",
    ]
    cuda = kernel_source(build(_column_sums(4), "sm_90a").imports[0].inspect_source())
    assert cuda.count("atomic_add((&(B_ptr[") == 4


def test_a_reduction_into_memory_without_accumulate_is_stored_by_replica_0():
    lines = [line.strip() for line in lower_tile_ops(infer_layouts(_column_sums(4, "max", ""))).script().splitlines()]
    assert lines[-2:] == ["if tx == 0:", "B_flat[0:4] = B_reduced_flat[T.Ramp(0, 1, 4)]"]


@pytest.mark.parametrize(
    ("op", "accumulate", "words"),
    [
        ("max", ", accumulate=True", "a 'max' with accumulate=True has no atomic here"),
        ("sum", ", accumulate=bx > 0", r"a 'sum' with accumulate=bx > 0 has no atomic here"),
    ],
)
def test_an_accumulation_into_memory_without_an_atomic_is_refused(op, accumulate, words):
    with pytest.raises(tvm.error.DiagnosticError, match=words):
        _column_sums(64, op, accumulate)


def test_column_sums_over_many_ctas_simulate_equal_to_numpy():
    values = np.random.default_rng(5).integers(-64, 64, (1024, 64)).astype(np.float32)
    result = sim.run(_column_sums(), {"A": values}, arch="sm_90a")
    assert (result["B"] == values.sum(axis=0)).all()
    assert (result.atomics["B"] == 8).all() and (result.writes["B"] == 0).all()


def test_a_planted_wrong_xor_mask_fails_in_simulation(monkeypatch):
    import tirx_layout.ops.reduce.spec as reduce_spec

    real = reduce_spec.reduction_plan

    def planted(layout, shape, axes):
        return dataclasses.replace(real(layout, shape, axes), lane_masks=(1, 4))  # 4 instead of the quad's 2

    func = _kernel('T.tile_reduce(red, acc, "sum", axis=1)')
    values = np.random.default_rng(11).integers(-64, 64, (64, 64)).astype(np.float32)
    assert (sim.run(func, {"A": values}, arch="sm_90a")["B"] == values.sum(axis=1)).all()
    monkeypatch.setattr(reduce_spec, "reduction_plan", planted)
    assert not (sim.run(func, {"A": values}, arch="sm_90a")["B"] == values.sum(axis=1)).all()


SMALL = """
@T.prim_func
def k(A: T.Buffer((4, 4), "float32"), R: T.Buffer((1,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    frag = T.alloc_local((4, 4), "float32"LAYOUT)
    T.tile_copy(frag, A)
    red = T.alloc_local((1,), "float32")
    T.tile_reduce(red, frag, "max", axis=(0, 1))
    T.tile_copy(R, red)
"""


PADDED_ROWS = """
@T.prim_func
def k(A: T.Buffer((4, 4), "float32"), R: T.Buffer((RSHAPE,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    frag = T.alloc_local((4, 4), "float32", layout=T.layout("S[(4, 32, 4):(1@warpid, 1@laneid, 1)]"))
    T.tile_copy(frag, A)
    red = T.alloc_local((RSHAPE,), "float32")
    T.tile_reduce(red, frag, "OP", axis=AXIS)
    T.tile_copy(R, red)
"""


@pytest.mark.parametrize(
    ("op", "axis", "values", "expected"),
    [
        ("sum", "(0, 1)", np.arange(16) + 1.0, lambda a: [a.sum()]),
        ("min", "(0, 1)", np.arange(16) + 1.0, lambda a: [a.min()]),  # padding left as 0 would win
        ("max", "(0, 1)", -np.arange(16) - 1.0, lambda a: [a.max()]),
        ("max", "1", -np.arange(16) - 1.0, lambda a: a.max(axis=1)),  # rows kept: the result is padded too
        ("sum", "0", np.arange(16) + 1.0, lambda a: a.sum(axis=0)),
    ],
)
def test_a_source_padded_by_whole_rows_combines_only_its_elements(op, axis, values, expected):
    """16 elements as 4-element vectors over 128 threads: 512 places, the padding rows 4..127 of a (128, 4) tile;
    each thread reads its places' rows and takes the reduction's identity for padding, which no copy wrote."""
    a = values.reshape(4, 4).astype(np.float32)
    size = "1" if axis == "(0, 1)" else "4"
    func = parse(PADDED_ROWS.replace("RSHAPE", size).replace("OP", op).replace("AXIS", axis))
    build(func, "sm_100a")
    assert np.array_equal(sim.run(func, {"A": a})["R"], np.asarray(expected(a), np.float32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_padded_16_bit_reduction_takes_infinity_and_assembles(dtype):
    """The identity of max is -inf in the source's dtype (TVM prints no CUDA name for a bfloat16 infinity)."""
    func = parse(PADDED_ROWS.replace("RSHAPE", "4").replace("OP", "max").replace("AXIS", "1").replace("float32", dtype))
    a = -(np.arange(16).reshape(4, 4) + 1).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16)
    assert np.array_equal(sim.run(func, {"A": a})["R"].astype(np.float32), a.astype(np.float32).max(axis=1))
    assembled = nvcc_assembles(build(func, "sm_100a").imports[0].inspect_source(), "sm_100a")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1][-600:]


def test_a_source_padded_by_part_of_a_row_is_refused_naming_it():
    padded = ", layout=T.layout('S[(4, 32, 1):(1, 1@laneid, 1)]')"  # 128 places for 16 elements
    text = SMALL.replace("LAYOUT", padded).replace("(4, 4)", "(3, 5)")  # 15 elements: 128 places are no whole rows
    with pytest.raises(
        ValueError, match=r"T.tile_reduce of frag: its layout .* is tail-padded \(128 places for the 15 .* by a part"
    ):
        build(parse(text), "sm_100a")


def test_an_inferred_source_smaller_than_its_threads_is_reduced():
    """Found by the kernel fuzzer (note33b): inference lays 16 elements over 128 threads out tail-padded."""
    a = np.arange(16, dtype=np.float32).reshape(4, 4) - 7
    assert sim.run(parse(SMALL.replace("LAYOUT", "")), {"A": a})["R"][0] == a.max()
