"""InferLayouts: inferred layouts equal the examples' hand-written ones, inferred kernels simulate correctly, tail
widths compile with a predicate, conflicts name both sides, and the decisions are visible."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from tirx_layout import S, TileLayout, laneid, layout_of, sim, warpid, wg_local_layout
from tirx_layout.ir.annotations import function_buffers
from tirx_layout.ir.rewrite import AllocBuffer, map_function, sequence
from tirx_layout.layout.placement import layout_threads
from tirx_layout.ops import REGISTRY, Derived, OpSpec, RegionField
from tirx_layout.transform import (
    InferLayouts,
    LayoutConflict,
    explain_layouts,
    infer_layouts,
    lower_tile_ops,
    pipeline_name,
)
from tirx_layout.transform.infer_layouts import infer
from tirx_layout.transform.infer_layouts.cost_model import io_aware

from kernels import example_module, parse
from kernels import staged as ik

tile_copies = example_module("tile_copies")

DTYPES = ("float16", "bfloat16", "float32")


def _score(kernel, buffer):
    """The io-aware score of ``kernel``'s copies that touch ``buffer`` (layouts as annotated)."""
    from tirx_layout.ir.threads import cta_threads
    from tirx_layout.transform.infer_layouts.cost_model import Cost, copy_cost
    from tirx_layout.transform.infer_layouts.infer import scan

    found, total = scan(kernel), Cost()
    for copy in found.copies:
        if any(b.name == buffer for b in copy.buffers):
            total = total + copy_cost(copy.dst, copy.src, copy.scope, found.known, cta_threads(kernel).count)
    return io_aware(total)


# ---- the examples' layouts, re-inferred ---------------------------------------------------------------------


@pytest.mark.parametrize("fragment", ["wg_local", "warp"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_staging_tile_inferred_from_its_fragment(fragment, dtype):
    """The examples' "matched" staging swizzle (``pick_swizzle(search="all")`` on the fragment's reads, 16-byte
    chunks first), inferred from the fragment alone: the same layout, or where another ties with it on every count,
    one that scores no worse."""
    rows, threads, make = tile_copies.FRAGMENTS[fragment]
    kernel = ik.round_trip(dtype, rows, threads, frag_layout=make(dtype, tile_copies.COLS))
    inferred = infer_layouts(kernel)
    hand = tile_copies.staging_layout(dtype, "matched", fragment)
    if str(layout_of("tile", inferred)) != str(hand):
        written = ik.round_trip(dtype, rows, threads, shared_layout=hand, frag_layout=make(dtype, tile_copies.COLS))
        assert _score(inferred, "tile") <= _score(written, "tile")


@pytest.mark.parametrize("swizzle", ["128B", "64B", "32B", "matched"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_wg_local_fragment_inferred_from_its_staging_tile(swizzle, dtype):
    kernel = ik.round_trip(dtype, 128, 128, shared_layout=tile_copies.staging_layout(dtype, swizzle, "wg_local"))
    for model in ("io-aware", "register-count"):
        assert layout_of("frag", infer_layouts(kernel, model)) == wg_local_layout(tile_copies.COLS)


def test_warp_fragment_register_count_reproduces_the_mma_layout():
    """The warp example's fragment is an MMA operand layout: with no MMA to force it, register-count (all candidates
    tie) keeps it, io-aware prefers 16-byte vectors (fewer instructions) on the swizzles where that is cheaper."""
    kernel = ik.round_trip("float16", 16, 64, shared_layout=tile_copies.staging_layout("float16", "128B", "warp"))
    assert layout_of("frag", infer_layouts(kernel, "register-count")) == tile_copies.warp_fragment(tile_copies.COLS)
    chosen = infer_layouts(kernel)
    assert str(layout_of("frag", chosen)) == "S[(2, 2, 32, 8):(8, 1@warpid, 1@laneid, 1)]"
    written = ik.round_trip(
        "float16",
        16,
        64,
        shared_layout=tile_copies.staging_layout("float16", "128B", "warp"),
        frag_layout=tile_copies.warp_fragment(tile_copies.COLS),
    )
    assert _score(chosen, "frag") < _score(written, "frag")


@pytest.mark.parametrize("model", ["io-aware", "register-count"])
@pytest.mark.parametrize(("dtype", "rows", "threads"), [("float16", 128, 128), ("float32", 16, 64)])
def test_fully_open_round_trip_simulates(model, dtype, rows, threads):
    kernel = ik.round_trip(dtype, rows, threads)
    inferred = infer_layouts(kernel, model)
    assert layout_of("tile", inferred) is not None and layout_of("frag", inferred) is not None
    a = np.random.default_rng(0).standard_normal((rows, 64)).astype(dtype if dtype != "bfloat16" else "float32")
    assert np.array_equal(sim.run(inferred, {"A": a})["B"], a)
    assert np.array_equal(sim.run(kernel, {"A": a})["B"], a)  # the pipeline infers by itself


# ---- any width ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["io-aware", "register-count"])
@pytest.mark.parametrize("shape", [(192,), (229,), (257,), (3, 229)])
def test_tail_widths_compile_simulate_and_predicate(shape, model):
    kernel = ik.fragment_only(shape, "float32", 128)
    inferred = infer_layouts(kernel, model)
    layout = layout_of("frag", inferred)
    assert layout.size() > np.prod(shape)  # padded: the width is not a multiple of the threads' share
    lowered = lower_tile_ops(inferred).script()
    assert lowered.count("if ") >= 2  # one tail predicate per copy
    a = np.random.default_rng(1).standard_normal(shape).astype("float32")
    result = sim.run(inferred, {"A": a})
    assert np.array_equal(result["B"], a) and result.writes["B"].max() == 1
    tvm.script.from_source(inferred.script())  # the padded layout prints and parses back


# ---- conflicts, visibility, models, hooks ------------------------------------------------------------------


def test_conflict_names_both_buffers_ops_layouts_and_coordinate():
    first = wg_local_layout(8)
    second = TileLayout(S[(32, 4, 8) : (1 @ laneid, 1 @ warpid, 1)])  # row 1 on thread 32, not thread 1
    with pytest.raises(LayoutConflict) as info:
        infer_layouts(ik.conflicting(first, second))
    message = str(info.value)
    for part in (
        "mid",
        " a's layout",
        " c's layout",
        "copy #1",
        "copy #2",
        str(first),
        str(second),
        "coordinate (1, 0): thread 1 slot 0 vs thread 32 slot 0",
    ):
        assert part in message, (part, message)


def test_same_placement_is_not_a_conflict():
    """wg_local over 128 threads and (warp, lane) rows place every element identically: not a conflict."""
    spelled = TileLayout(S[(4, 32, 8) : (1 @ warpid, 1 @ laneid, 1)])
    kernel = ik.conflicting(wg_local_layout(8), spelled)
    _chosen, decisions = infer(kernel)
    assert [d.level for d in decisions] == ["common"]
    a = np.random.default_rng(2).standard_normal((128, 8)).astype("float32")
    assert np.array_equal(sim.run(kernel, {"A": a})["B"], a)  # the fragment copies lower slot by slot


@pytest.mark.parametrize("threads", [16, 48, 96])
def test_any_thread_count(threads):
    kernel = ik.fragment_only((7, 13), "float16", threads)
    a = np.random.default_rng(3).standard_normal((7, 13)).astype("float16")
    for model in ("io-aware", "register-count"):
        assert np.array_equal(sim.run(infer_layouts(kernel, model), {"A": a})["B"], a)


def test_printing_shows_inferred_layouts_and_explain_lists_levels():
    kernel = ik.round_trip("float32", 128, 128, frag_layout=wg_local_layout(64))
    text = infer_layouts(kernel).script()
    assert text.count("layout=T.layout('") == 2
    explanation = explain_layouts(kernel)
    assert explanation.startswith("tile: ") and "[common, io-aware: bytes=" in explanation
    free = explain_layouts(ik.round_trip("float32", 16, 64), "register-count")
    assert free.count("[free, register-count") == 2 and "root " in free


def test_unknown_statements_are_charged_the_worst_case():
    from tvm.script import tirx as T

    @T.prim_func
    def direct(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([32])
        tile = T.alloc_shared((32, 32), "float32")
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        for i in range(32):
            B[i, tx] = tile[i, tx]

    (decision,) = infer(direct)[1]
    assert decision.cost.unknown == 1 and decision.cost.wavefronts >= 32 * 32


def test_cost_model_is_selectable_per_build():
    assert pipeline_name("register-count") in tvm.tirx.compilation_pipeline.PIPELINE_MAP
    with pytest.raises(ValueError, match="unknown layout cost model"):
        InferLayouts("fastest")


class _Relating(OpSpec):
    """A test op whose one relation is given: its inference relation is all the solver reads of it."""

    name = "test_relating"
    description = "relates layouts for a test"
    fields = (RegionField("dst", writes=True),)
    relation = None

    def relations(self, call):
        return (self.relation(call.dst.source),)


@pytest.fixture
def relating():
    spec = _Relating()
    yield spec
    del REGISTRY[spec.name]  # (TVM keeps the op registered: it is never built again)


def _with_op_after_alloc(kernel, spec, buffer_name: str):
    """``kernel`` with ``spec``'s call on buffer ``buffer_name`` right after its allocation."""

    def after(stmt):
        if isinstance(stmt, tvm.tirx.SeqStmt):
            parts = []
            for part in stmt.seq:
                parts.append(part)
                if isinstance(part, AllocBuffer) and part.buffer.name == buffer_name:
                    parts.append(tvm.tirx.Evaluate(spec(part.buffer)))
            return sequence(parts)
        return stmt

    return map_function(kernel, [(tvm.tirx.SeqStmt, after)])


def test_a_derived_relation_with_its_sources_given_decides_at_the_strict_level(relating):
    forced = TileLayout(S[(4, 32, 8) : (1 @ warpid, 1 @ laneid, 1)])
    relating.relation = lambda frag: Derived(frag, (), lambda layouts: forced, "the test op")
    kernel = ik.round_trip("float32", 128, 128, shared_layout=tile_copies.staging_layout("float32", "128B", "wg_local"))
    _chosen, decisions = infer(_with_op_after_alloc(kernel, relating, "frag"))
    assert [d.level for d in decisions] == ["strict"] and str(decisions[0].layout) == str(forced)
    assert decisions[0].reason == "forced by the test op"


DERIVED_KERNEL = """
@T.prim_func
def k(A: T.Buffer((128, 64), "float32"), B: T.Buffer((128, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    frag = T.alloc_local((128, 64), "float32")
    out = T.alloc_local((128, 64), "float32")
    T.tile_copy(frag, A)
    T.tile_copy(B, frag)
"""


def test_a_derived_relation_fires_once_inference_has_decided_its_source(relating):
    # ``out`` is only derived, from the open ``frag``: it is decided after ``frag``, at the common level, whatever
    # the cost model chose for ``frag``
    kernel = parse(DERIVED_KERNEL)
    frag = next(buffer for buffer in function_buffers(kernel) if buffer.name == "frag")
    relating.relation = lambda out: Derived(out, (frag,), lambda layouts: layouts[frag], "the test op")
    chosen, decisions = infer(_with_op_after_alloc(kernel, relating, "out"))
    by_name = {buffer.name: layout for buffer, layout in chosen.items()}
    assert by_name["out"] == by_name["frag"] and layout_threads(by_name["out"])
    assert [(d.buffer, d.level) for d in decisions] == [("frag", "free"), ("out", "common")]


@pytest.mark.parametrize("seed", range(40))
def test_random_open_kernels_infer_and_simulate(seed):
    """Any dtype, thread count (also not a multiple of 32) and shape: inference never fails on a valid kernel, and
    what it picks computes the copy."""
    import random

    rng = random.Random(seed)
    dtype = rng.choice(["int8", "float64", "int32", "float16", "uint8"])
    threads = rng.choice([16, 32, 48, 64, 128])
    shape = rng.choice([(3, 5), (8, 8), (16, 24), (4, 4, 4), (7,)])
    model = rng.choice(["io-aware", "register-count"])
    kernel = (
        ik.round_trip(dtype, shape[0], threads, cols=shape[-1])
        if len(shape) == 2
        else ik.fragment_only(shape, dtype, threads)
    )
    full = (shape[0], shape[-1]) if len(shape) == 2 else shape
    a = (np.arange(int(np.prod(full))) % 100).reshape(full).astype(dtype)
    assert np.array_equal(sim.run(infer_layouts(kernel, model), {"A": a})["B"], a)
