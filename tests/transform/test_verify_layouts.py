"""VerifyLayouts and the build-time refusals of issue 16: for each wrong program, the kernel, the exception type and
the words the message must contain; the programs that are compiled correctly instead (a fragment on fewer threads
than its copy's scope) are simulated; every example still verifies."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm.tirx import layout as upstream

from tirx_layout import S, TileLayout, layout_of, sim
from tirx_layout.ir.annotations import LAYOUT_KEY
from tirx_layout.tools.cli import main
from tirx_layout.transform import (
    LayoutConflict,
    LayoutVerificationError,
    VerifyLayouts,
    WrongPipelineError,
    build,
    explain_layouts,
    tirx_layout_pipeline,
    verify_layouts,
)

from kernels import EXAMPLES, example_kernels, parse

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})


def kernel(body: str, shape=(64, 64), dtype="float32", threads=128):
    """A kernel ``k(A, B)`` over ``shape`` with ``threads`` threads and ``body`` (indented by four spaces)."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return parse(
        f"""
@T.prim_func
def k(A: T.Buffer({shape}, "{dtype}"), B: T.Buffer({shape}, "{dtype}")):
    T.device_entry()
    tx = T.thread_id([{threads}])
{lines}
"""
    )


def staged(layout: str, shape=(64, 64), source="A", dtype="float32"):
    """Stage ``source`` through a shared buffer ``Sm`` with ``layout`` (line 6 of the kernel text) into ``B``."""
    given = f", layout=T.layout({layout!r})" if layout else ""
    return kernel(
        f'Sm = T.alloc_shared({shape}, "{dtype}"{given})\nT.tile_copy(Sm, {source})\nT.tile_copy(B, Sm)',
        shape,
        dtype,
    )


def annotated(func, name: str, layout):
    """``func`` with the allocation of buffer ``name`` annotated with ``layout`` (any object), as a pass might."""

    def annotate(stmt):
        if stmt.buffer.name != name:
            return stmt
        return tvm.tirx.AllocBuffer(stmt.buffer, {**stmt.annotations, LAYOUT_KEY: layout})

    return func.with_body(tvm_ffi.structural_map(func.body, [(tvm.tirx.AllocBuffer, annotate)], order="post"))


def refused(func, kind, *words):
    """Build ``func`` with the tirx_layout pipeline; it must raise ``kind`` whose message contains ``words``."""
    with pytest.raises(kind) as caught:
        build(func)
    message = str(caught.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    return message


# ---- scope: which axes a buffer of each scope takes ----------------------------------------------------------------


def test_thread_axis_layout_on_a_shared_buffer_is_refused_naming_buffer_axis_and_line():
    func = kernel(
        'Sm = T.alloc_shared((128, 16), "float32", layout=tirx_layout.wg_local_layout(16))\n'
        "T.tile_copy(Sm, A)\nT.tile_copy(B, Sm)",
        shape=(128, 16),
    )
    refused(func, LayoutVerificationError, "buffer Sm", "'shared'", "tid_in_wg", "axis m only", "line 6")


def test_tmem_layout_on_a_shared_buffer_is_a_value_error_not_a_key_error():
    func = kernel(
        'Sm = T.alloc_shared((128, 32), "float32", layout=tirx_layout.tmem_datapath_layout("D", 128, 32))\n'
        "T.tile_copy(Sm, A)\nT.tile_copy(B, Sm)",
        shape=(128, 32),
    )
    refused(func, LayoutVerificationError, "buffer Sm", "TCol", "TLane", "axis m only")  # a ValueError


def test_memory_layout_on_tmem_is_refused():
    func = kernel(
        'acc = T.alloc_tmem((128, 32), "float32", layout=T.layout("S[(128, 32):(32, 1)]"))',
        shape=(128, 32),
    )
    refused(func, LayoutVerificationError, "buffer acc", "'tmem'", "TLane/TCol only")


def test_fragment_on_an_axis_outside_the_cta_is_refused():
    func = kernel(
        'F = T.alloc_local((16, 2), "float32", layout=T.layout("S[(16, 2):(1@bx, 1)]"))\n'
        "T.tile_copy(F, A)\nT.tile_copy(B, F)",
        shape=(16, 2),
        threads=32,
    )
    refused(func, LayoutVerificationError, "buffer F", "cannot be laid out on axis 'bx'", "thread axes of the CTA")


def test_layout_with_another_element_count_is_refused():
    # TVMScript refuses this at parse time; a pass (or hand-built IR) can still produce it.
    func = annotated(staged(None), "Sm", TileLayout(S[(32, 64) : (64, 1)]))
    refused(func, LayoutVerificationError, "buffer Sm has 4096 elements", "lays out 2048")


# ---- injectivity of written buffers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "elements", "place"),
    [("S[(64, 64):(64, 0)]", "elements 0 and 1", "{'m': 0}"), ("S[(64, 64):(32, 1)]", "elements 32 and 64", "32")],
)
def test_non_injective_layout_on_a_written_buffer_is_refused(layout, elements, place):
    refused(staged(layout), LayoutVerificationError, "buffer Sm is written", "not injective", elements, place, "R[...]")


def test_replicas_asked_for_with_r_are_accepted():
    func = staged("S[(64, 64):(64, 1)] + R[2:4096]")
    assert verify_layouts(func) is func


# ---- bounds of copy regions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["S[(64, 64):(64, 1)]", None], ids=["explicit", "inferred"])
def test_static_out_of_range_region_is_refused_before_inference(layout):
    func = staged(layout, source="A[32:96, 0:64]", dtype="float16")
    refused(func, LayoutVerificationError, "A[32:96, 0:64]", "outside buffer A", "[32, 96)", "[0, 64)", "line 7")


def test_region_inside_its_buffer_passes():
    func = staged(None, source="A[0:64, 0:64]")
    assert verify_layouts(func) is func


# ---- a fragment on fewer threads than its copy's scope: lowered with a replica guard ------------------------------


def test_fragment_on_fewer_threads_than_the_scope_is_stored_by_one_warp_only():
    func = kernel(
        'F = T.alloc_local((16, 8), "float32", layout=T.layout("S[(16, 8):(1@laneid, 1)]"))\n'
        'T.tile_copy(F, A, "cta")\nT.tile_copy(B, F, "cta")',
        shape=(16, 8),
    )
    cuda = build(func).imports[0].inspect_source()
    assert "(((int)threadIdx.x) >> 5) == 0" in cuda  # warps 1..3 hold replicas of warp 0's elements
    a = np.arange(128, dtype=np.float32).reshape(16, 8)
    result = sim.run(func, [a])
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()


def test_fragment_thread_axis_beyond_the_kernel_is_refused():
    func = kernel(
        'F = T.alloc_local((64, 2), "float32", layout=T.layout("S[(64, 2):(1@laneid, 1)]"))\n'
        "T.tile_copy(F, A)\nT.tile_copy(B, F)",
        shape=(64, 2),
        threads=32,
    )
    refused(func, LayoutVerificationError, "register fragment F", "uses laneid up to 63", "32 places")


def test_copy_scope_wider_than_the_kernel_is_refused():
    func = kernel(
        'F = T.alloc_local((32, 2), "float32", layout=T.layout("S[(32, 2):(1@laneid, 1)]"))\n'
        'T.tile_copy(F, A, "warpgroup")',
        shape=(32, 2),
        threads=32,
    )
    refused(func, LayoutVerificationError, "a warpgroup-scope T.tile_copy needs 128 threads", "the kernel has 32")


# ---- who reaches a copy: the threads of its scope share its work ---------------------------------------------------


def test_a_cta_copy_under_a_thread_condition_is_refused_naming_the_condition_and_the_fix():
    # Threads 64..127 never run their part: half of the tile would silently stay uncopied.
    func = kernel('Sm = T.alloc_shared((64, 64), "float32")\nif tx < 64:\n    T.tile_copy(Sm, A)\nT.tile_copy(B, Sm)')
    refused(func, LayoutVerificationError, "a cta-scope T.tile_copy", "`if tx < 64`", 'scope="warpgroup" or "warp"')


@pytest.mark.parametrize(
    ("condition", "scope", "words"),
    [
        ("tx < 48", "warp", ("a warp-scope T.tile_copy", "`if tx < 48` splits warp 1")),
        ("tx % 2 == 0", "warpgroup", ("a warpgroup-scope T.tile_copy", "splits warpgroup 0")),
    ],
)
def test_a_copy_whose_scope_a_condition_splits_is_refused(condition, scope, words):
    body = f'Sm = T.alloc_shared((8, 64), "float32")\nif {condition}:\n    T.tile_copy(Sm, A[0:8, 0:64], "{scope}")'
    refused(kernel(body), LayoutVerificationError, *words)


@pytest.mark.parametrize(
    ("condition", "words"),
    [
        ("tx < 32 and k >= 1", None),  # k is the same for every thread: warp 0 copies, or no warp does
        ("k >= 1 or tx >= 64", None),
        ("tx < 16 and k >= 1", ("`if tx < 16 and k >= 1` splits warp 0",)),
        ("tx < 8 * k", ("depends on more than the thread index",)),
    ],
)
def test_a_condition_on_the_thread_index_and_a_uniform_value_is_checked_for_either_value(condition, words):
    body = (
        'Sm = T.alloc_shared((8, 64), "float32")\nfor k in range(2):\n'
        f'    if {condition}:\n        T.tile_copy(Sm, A[0:8, 0:64], "warp")'
    )
    if words is None:
        verify_layouts(kernel(body))
    else:
        refused(kernel(body), LayoutVerificationError, "a warp-scope T.tile_copy", *words)


def test_whole_warps_under_a_condition_copy_their_tile():
    func = kernel(
        'Sm = T.alloc_shared((64, 64), "float32")\nif tx // 32 == 1:\n    T.tile_copy(Sm, A, "warp")\n'
        "T.cuda.cta_sync()\nT.tile_copy(B, Sm)"
    )
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    np.testing.assert_array_equal(sim.run(func, [a])["B"], a)


# ---- other TIR pipelines --------------------------------------------------------------------------------------------


SWIZZLED = "tirx_layout.mma_shared_layout('float16', '128B', (64, 64))"


def swizzled_kernel():
    return kernel(
        f'Sm = T.alloc_shared((64, 64), "float16", layout={SWIZZLED})\nT.tile_copy(Sm, A)\nT.tile_copy(B, Sm)',
        dtype="float16",
    )


@pytest.mark.parametrize(
    "build_with",
    [
        lambda k: tvm.tirx.build(k, target=SM100A, pipeline="tirx"),
        lambda k: tvm.tirx.build(k, target=SM100A, pipeline="default"),
        lambda k: tvm.tirx.build(k, target=SM100A, pipeline=None),
        lambda k: tvm.compile(k, target=SM100A),
    ],
    ids=["tirx", "default", "none", "tvm.compile"],
)
def test_other_pipelines_refuse_our_layouts_and_name_ours(build_with):
    with pytest.raises(WrongPipelineError) as caught:
        build_with(swizzled_kernel())
    assert "the layout of buffer Sm" in str(caught.value) and 'pipeline="tirx_layout"' in str(caught.value)


def test_other_pipelines_still_build_kernels_without_our_layouts():
    func = parse(
        """
@T.prim_func
def k(A: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    A[tx] = T.float32(1)
"""
    )
    assert "A_ptr[" in tvm.tirx.build(func, target=SM100A, pipeline="tirx").imports[0].inspect_source()


def test_our_pipeline_honours_the_swizzle():
    cuda = build(swizzled_kernel()).imports[0].inspect_source()
    assert "^" in cuda


# ---- targets ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_100", "sm_120a"])
def test_tmem_kernel_for_a_target_without_tcgen05_is_refused(arch):
    func = example_kernels()["tmem_cp_128x256b_float32"][0]
    with pytest.raises(LayoutVerificationError) as caught:
        build(func, arch)
    message = str(caught.value)
    for word in (f"target {arch}", "tcgen05", "buffer acc", "sm_100a", "tmem_round_trips.py"):
        assert word in message


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a", "sm_100f"])
def test_tmem_kernel_builds_for_targets_with_tcgen05(arch):
    func = example_kernels()["tmem_cp_128x256b_float32"][0]
    assert "tcgen05.cp" in build(func, arch).imports[0].inspect_source()


def test_unknown_arch_is_an_error_for_build_and_for_a_bound_target():
    with pytest.raises(ValueError, match="unknown CUDA architecture 'sm_999z'"):
        build(staged(None), "sm_999z")
    with pytest.raises(LayoutVerificationError, match="unknown CUDA architecture 'sm_999z'"):
        tvm.tirx.build(
            staged(None), target=tvm.target.Target({"kind": "cuda", "arch": "sm_999z"}), pipeline="tirx_layout"
        )


def test_cli_compile_for_a_target_without_tcgen05_fails_with_the_line(capsys):
    status = main(["compile", str(EXAMPLES / "tmem_round_trips.py"), "--target", "sm_90a"])
    err = capsys.readouterr().err
    assert status == 2
    assert "sm_90a" in err and "tcgen05" in err and "tmem_round_trips.py" in err and "LayoutVerificationError" in err
    assert main(["compile", str(EXAMPLES / "tmem_round_trips.py"), "--target", "sm_999z"]) == 2
    assert "unknown CUDA architecture 'sm_999z'" in capsys.readouterr().err


# ---- layout objects that are not ours ---------------------------------------------------------------------------------


FOREIGN = upstream.TileLayout(upstream.S[(64, 64) : (1, 64)])


def upstream_kernel():
    return tvm.script.from_source(
        """
@T.prim_func
def k(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    Sm = T.alloc_shared((64, 64), "float32", layout=UP)
    T.tile_copy(Sm, A)
    T.tile_copy(B, Sm)
""",
        extra_vars={"T": tvm.script.tirx, "UP": FOREIGN},
    )


def test_upstream_layout_given_to_layout_is_converted_exactly():
    # The TVMScript surface converts an upstream layout (issue 18's converters), so it is ours when passes see it.
    func = upstream_kernel()
    assert layout_of("Sm", func) == TileLayout(S[(64, 64) : (1, 64)])
    assert verify_layouts(func) is func
    a = np.arange(4096, dtype=np.float32).reshape(64, 64)
    np.testing.assert_array_equal(sim.run(func, [a])["B"], a)


def test_upstream_layout_in_a_buffers_type_is_refused_with_a_type_error_naming_the_buffer():
    # IR built without our TVMScript surface can still put an upstream layout in the buffer's own type.
    buffer = tvm.tirx.decl_buffer((64, 64), "float32", "Sm", scope="shared", layout=FOREIGN)
    func = tvm.tirx.PrimFunc([], tvm.tirx.SeqStmt([tvm.tirx.AllocBuffer(buffer), tvm.tirx.Evaluate(0)]))
    with pytest.raises(TypeError, match="buffer Sm carries a layout of type TileLayout"):
        verify_layouts(func)
    with pytest.raises(TypeError, match="buffer Sm"):
        layout_of(buffer, func)


def test_foreign_object_under_our_annotation_key_is_a_type_error():
    func = annotated(staged(None), "Sm", "S[64:1]")
    with pytest.raises(TypeError, match="buffer Sm carries a layout of type"):
        verify_layouts(func)


# ---- layouts written for another shape ------------------------------------------------------------------------------


def test_layout_of_another_shape_is_flattened_and_explained():
    func = staged("S[(32, 128):(128, 1)]")
    assert verify_layouts(func) is func
    explained = explain_layouts(func)
    assert "Sm: S[(32, 128):(128, 1)] [given] is written for shape (32, 128)" in explained
    assert "buffer shape (64, 64) reinterprets it" in explained
    a = np.arange(4096, dtype=np.float32).reshape(64, 64)
    np.testing.assert_array_equal(sim.run(func, [a])["B"], a)


def test_tcgen05_cp_refuses_an_operand_of_another_shape():
    func = parse(
        """
@T.prim_func
def k(A: T.Buffer((128, 8), "float32"), B: T.Buffer((128, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    staged = T.alloc_shared((128, 8), "float32", layout=T.layout("S[(64, 16):(16, 1)]"))
    acc = T.alloc_tmem((128, 8), "float32", layout=tirx_layout.tmem_datapath_layout("D", 128, 8))
    T.tile_copy(staged, A)
    T.tile_copy(acc, staged)
"""
    )
    refused(func, LayoutVerificationError, "tcgen05.cp", "the layout's shape differs from the buffer's", "staged")


# ---- error types through build ---------------------------------------------------------------------------------------


def test_layout_conflict_keeps_its_type_through_tvm_build_and_compile():
    func = kernel(
        'F = T.alloc_local((32, 4), "float32", layout=T.layout("S[(32, 4):(1@laneid, 1)]"))\n'
        'G = T.alloc_local((32, 4), "float32", layout=T.layout("S[(32, 4):(1, 1@laneid)]"))\n'
        'H = T.alloc_local((32, 4), "float32")\n'
        "T.tile_copy(F, A)\nT.tile_copy(H, F)\nT.tile_copy(G, H)\nT.tile_copy(B, G)",
        shape=(32, 4),
        threads=32,
    )
    with pytest.raises(LayoutConflict, match="layout conflict on H") as caught:
        tvm.tirx.build(func, target=SM100A, pipeline="tirx_layout")
    assert "(line 10 of <str>)" in str(caught.value) and "(line 11 of <str>)" in str(caught.value)
    with pytest.raises(LayoutConflict, match="layout conflict on H"):
        tvm.compile(func, target=SM100A, tir_pipeline="tirx_layout")


def test_lowering_errors_after_the_verifier_carry_the_copy_line():
    func = kernel(
        'F = T.alloc_local((64, 4), "float32", layout=T.layout("S[(2, 32, 4):(1@warpid, 1@laneid, 1)]"))\n'
        'G = T.alloc_local((64, 4), "float32", layout=T.layout("S[(32, 2, 4):(1@laneid, 1@warpid, 1)]"))\n'
        'T.tile_copy(F, A)\nT.tile_copy(G, F, "warp")\nT.tile_copy(B, G)',
        shape=(64, 4),
        threads=64,
    )
    refused(func, ValueError, "in another warp", "(line 9 of <str>)")


def test_verifier_errors_keep_their_type_through_tvm_compile():
    with pytest.raises(LayoutVerificationError, match="buffer Sm is written"):
        tvm.compile(staged("S[(64, 64):(64, 0)]"), target=SM100A, tir_pipeline="tirx_layout")


# ---- the pass itself ----------------------------------------------------------------------------------------------------


def test_verifier_is_registered_standalone_and_first_in_the_pipeline():
    mod = tvm.IRModule.from_expr(staged("S[(64, 64):(64, 0)]").with_attr("global_symbol", "k"))
    with pytest.raises(LayoutVerificationError):
        VerifyLayouts()(mod)
    good = tvm.IRModule.from_expr(staged(None).with_attr("global_symbol", "k"))
    tvm.ir.assert_structural_equal(VerifyLayouts()(good), good)
    passes = tirx_layout_pipeline()[0].passes
    assert passes[0].info.name == "tirx_layout.VerifyLayouts"
    assert passes[1].info.name == "tirx_layout.InferLayouts"


def test_every_example_kernel_verifies_unchanged():
    names = list(example_kernels())
    assert len(names) > 50
    for name in names:
        entry = example_kernels()[name]
        func = entry[0]
        if len(entry) == 4:  # a module for another architecture (the Hopper examples: sm_90a)
            func = func.with_attr("target", tvm.target.Target({"kind": "cuda", "arch": entry[3]}))
        assert verify_layouts(func) is func, name
