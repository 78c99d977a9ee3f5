"""Where layouts ride in TIR: the sites that give buffers layouts, the buffers a function binds, and the refusal
of layout objects that are not ours (an upstream layout in the buffer's type, anything else under our key)."""

from __future__ import annotations

import pytest
import tvm
import tvm_ffi
from tvm.tirx import layout as upstream

from tirx_layout import S, TileLayout, layout_of
from tirx_layout.ir.annotations import LAYOUT_KEY, buffer_layouts, foreign_layout, function_buffers, layout_sites
from tirx_layout.ir.spans import source_location

from kernels import parse

KERNEL = """
@T.prim_func
def k(A: T.Buffer((8, 8), "float32"), n: T.int32):
    T.device_entry()
    tx = T.thread_id([64])
    Sm = T.alloc_shared((8, 8), "float32", layout=T.layout("S[(8, 8):(1, 8)]"))
    Plain = T.alloc_shared((8, 8), "float32")
    W = T.decl_buffer((64,), "float32", data=Sm.data, layout=T.layout("S[64:1]"))
    Sm[tx // 8, tx % 8] = A[tx // 8, tx % 8]
"""


def test_layout_sites_give_each_buffer_its_layout_and_its_line():
    func = parse(KERNEL)
    sites = {buffer.name: (str(layout), source_location(stmt)) for buffer, layout, stmt in layout_sites(func)}
    assert sites["Sm"] == ("S[(8, 8):(1, 8)]", " (line 6 of <str>)")
    assert sites["W"][0] == "S[64:1]"
    assert set(sites) == {"Sm", "W"}
    assert {b.name for b in buffer_layouts(func)} == {"Sm", "W"}


def test_function_buffers_are_the_parameters_then_every_binding():
    assert [b.name for b in function_buffers(parse(KERNEL))] == ["A", "Sm", "Plain", "W"]


def test_default_upstream_layouts_are_not_foreign_and_others_are():
    assert all(foreign_layout(b) is None for b in function_buffers(parse(KERNEL)))
    swizzled = tvm.tirx.decl_buffer(
        (8, 8), "float32", "X", scope="shared", layout=upstream.TileLayout(upstream.S[(8, 8) : (1, 8)])
    )
    assert foreign_layout(swizzled) is not None


def test_a_foreign_object_under_our_key_is_a_type_error_naming_the_buffer():
    func = parse(KERNEL)

    def annotate(stmt):
        if stmt.buffer.name != "Plain":
            return stmt
        return tvm.tirx.AllocBuffer(stmt.buffer, {LAYOUT_KEY: upstream.TileLayout(upstream.S[(8, 8) : (8, 1)])})

    func = func.with_body(tvm_ffi.structural_map(func.body, [(tvm.tirx.AllocBuffer, annotate)], order="post"))
    with pytest.raises(TypeError, match="buffer Plain carries a layout of type TileLayout"):
        buffer_layouts(func)
    with pytest.raises(TypeError, match="buffer Plain"):
        layout_of("Sm", func)


def test_layout_of_answers_ours_and_none():
    func = parse(KERNEL)
    assert layout_of("Sm", func) == TileLayout(S[(8, 8) : (1, 8)])
    assert layout_of("Plain", func) is None and layout_of("A", func) is None


def test_a_statement_a_macro_expanded_names_every_line_of_its_span():
    # T.macro gives its statements a SequentialSpan (the macro's line, then the call's); the error text names both
    where = tvm.ir.SourceName("k.py")
    spans = tvm.ir.SequentialSpan([tvm.ir.Span(where, 7, 7, 1, 9), tvm.ir.Span(where, 12, 12, 1, 9)])
    assert source_location(tvm.tirx.Evaluate(0, span=spans)) == " (line 7 of k.py) (line 12 of k.py)"
