"""The tensor-memory strict rule of InferLayouts: a fragment copied to or from TMEM gets the tcgen05.ld/st register
image of that TMEM tile, equal (element for element) to the hand-written fragments of the TMEM examples."""

import numpy as np
import pytest

from tirx_layout import S, TileLayout, sim, tcgen05_atom_layout, tmem_datapath_layout
from tirx_layout.analysis.thread_placement import same_placement
from tirx_layout.script import buffer_layouts
from tirx_layout.transform import explain_layouts, infer_layouts

from kernels import parse


def open_round_trip(datapath: str, dtype: str, cols: int = 32) -> str:
    rows = 128 if datapath == "D" else 64
    return f"""
@T.prim_func
def k(A: T.Buffer(({rows}, {cols}), "{dtype}"), B: T.Buffer(({rows}, {cols}), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem(({rows}, {cols}), "{dtype}", layout=tmem_datapath_layout("{datapath}", {rows}, {cols}))
    into = T.alloc_local(({rows}, {cols}), "{dtype}")
    out = T.alloc_local(({rows}, {cols}), "{dtype}")
    T.tile_copy(into, A[0:{rows}, 0:{cols}], "warpgroup")
    T.tile_copy(acc, into, "warpgroup")
    T.tile_copy(out, acc, "warpgroup")
    T.tile_copy(B[0:{rows}, 0:{cols}], out, "warpgroup")
"""


@pytest.mark.parametrize(
    ("datapath", "dtype", "shape"),
    [("D", "float32", "32x32b"), ("D", "bfloat16", "32x32b"), ("F", "float32", "16x64b"), ("F", "float16", "16x64b")],
)
def test_fragments_next_to_tmem_get_the_tcgen05_register_image(datapath, dtype, shape):
    kernel = parse(open_round_trip(datapath, dtype))
    inferred = {b.name: layout for b, layout in buffer_layouts(infer_layouts(kernel)).items()}
    rows = 128 if datapath == "D" else 64
    expected = tcgen05_atom_layout(shape, (rows, 32), dtype)
    for name in ("into", "out"):
        assert same_placement(inferred[name], expected, (rows, 32), 128), (name, inferred[name], expected)
    assert "strict" in explain_layouts(kernel)
    a = (np.arange(rows * 32) % 89).reshape(rows, 32).astype(sim.interpreter.numpy_dtype(dtype))
    result = sim.run(kernel, [a])
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()


def test_a_fragment_shape_no_instruction_moves_is_a_clear_error():
    text = open_round_trip("F", "float32").replace("acc = T.alloc_tmem((64, 32)", "acc = T.alloc_tmem((64, 32)")
    text = text.replace('tmem_datapath_layout("F", 64, 32)', "TileLayout(S[(64, 32):(1@TCol, 1@TLane)])")
    with pytest.raises(Exception, match=r"no tcgen05\.ld/st fragment moves a \(64, 32\) float32 tile of TMEM"):
        infer_layouts(parse(text))


def test_declared_layouts_are_kept_by_the_rule():
    assert tmem_datapath_layout("D", 128, 32) is not None  # the examples' own layouts stay as written
    text = open_round_trip("D", "float32").replace(
        'into = T.alloc_local((128, 32), "float32")',
        'into = T.alloc_local((128, 32), "float32", layout=tcgen05_atom_layout("32x32b", (128, 32), "float32"))',
    )
    inferred = {b.name: layout for b, layout in buffer_layouts(infer_layouts(parse(text))).items()}
    assert inferred["into"] == tcgen05_atom_layout("32x32b", (128, 32), "float32")


@pytest.mark.parametrize(("dtype", "sf", "expected"), [("uint8", 16, "row-major"), ("float32", 8, "none")])
def test_open_shared_tile_for_tcgen05_cp_gets_a_descriptor_layout_and_lands_in_all_four_windows(dtype, sf, expected):
    from tirx_layout import mma_shared_layout

    text = f"""
@T.prim_func
def k(A: T.Buffer((32, {sf}), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    sm = T.alloc_shared((32, {sf}), "{dtype}")
    t = T.alloc_tmem((32, {sf}), "{dtype}", layout=T.layout("S[(32, {sf}):(1@TLane, 1@TCol)] + R[4:32@TLane]"))
    T.tile_copy(sm, A[0:32, 0:{sf}])
    T.tile_copy(t, sm)
"""
    kernel = parse(text)
    chosen = {b.name: layout for b, layout in buffer_layouts(infer_layouts(kernel)).items()}["sm"]
    want = TileLayout(S[(32, sf)]) if expected == "row-major" else mma_shared_layout(dtype, expected, (32, sf))
    assert chosen == want
    a = (np.arange(32 * sf) % 251).astype(dtype).reshape(32, sf)
    cells = sim.run(kernel, [a]).tmem[0]
    words = a.view(np.uint32)
    for window in range(4):
        assert np.array_equal(cells[32 * window : 32 * window + 32, : words.shape[1]], words), window


@pytest.mark.parametrize(
    "replicas, rows, tmem",
    [
        (4, 32, "S[(32, 8):(1@TLane, 1@TCol)] + R[4:32@TLane]"),  # the guide's scale factors, .warpx4
        (2, 64, "S[(64, 8):(1@TLane, 1@TCol)] + R[2:64@TLane]"),  # .warpx2::02_13
    ],
)
def test_a_fragment_loaded_from_replicated_tmem_is_replicated_over_warps(replicas, rows, tmem):
    core_matrices = TileLayout(S[(rows // 8, 8, 2, 4) : (64, 4, 32, 1)]).group([rows, 8])[0]
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer(({rows}, 8), "float32"), B: T.Buffer(({rows}, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    sm = T.alloc_shared(({rows}, 8), "float32", layout={core_matrices!r})
    t = T.alloc_tmem(({rows}, 8), "float32", layout=T.layout("{tmem}"))
    f = T.alloc_local(({rows}, 8), "float32")
    T.tile_copy(sm, A[0:{rows}, 0:8])
    T.tile_copy(t, sm)
    T.tile_copy(f, t)
    T.tile_copy(B[0:{rows}, 0:8], f)
""")
    inferred = {b.name: layout for b, layout in buffer_layouts(infer_layouts(kernel)).items()}
    assert str(inferred["f"]) == f"S[({rows}, 8):(1@tid_in_wg, 1)] + R[{replicas}:{rows}@tid_in_wg]"
    a = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8)
    result = sim.run(kernel, [a])
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()  # one replica stores
