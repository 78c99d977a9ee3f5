"""Converters TileLayout <-> CuTe (probe, then prove) and the Fragment, on every hardware-constructor layout."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tvm

from tirx_layout import (
    ComposeLayout,
    R,
    S,
    SwizzleLayout,
    TileLayout,
    laneid,
    mma_shared_layout,
    tcgen05_atom_layout,
    tid_in_wg,
    tmem_datapath_layout,
    tx,
    warpid,
    wg_local_layout,
)
from tirx_layout.cute import (
    ComposedLayout,
    Fragment,
    Layout,
    Swizzle,
    logical_shape,
    to_cute,
    to_cute_composed,
    to_cute_flat,
    to_tile_layout,
)
from tirx_layout.hw.memory import SWIZZLE_MODES
from tirx_layout.hw.tcgen05 import LD_ST_SHAPES


def hardware_layouts():
    """(name, layout, logical shape) for every constructor and a spread of its arguments."""
    for rows, cols in itertools.product([1, 64, 128], [1, 8, 32]):
        yield f"wg_local({cols},{rows})", wg_local_layout(cols, rows), (rows, cols)
    rows_of = {"A": 128, "D": 128, "B": 64, "E": 64, "C": 64, "F": 64, "G": 32}
    for datapath, cols in itertools.product(rows_of, [8, 64, 256]):
        for sub_slab in (0, 1) if datapath in "CF" else (0,):
            layout = tmem_datapath_layout(datapath, rows_of[datapath], cols, sub_slab)
            yield f"tmem({datapath},{cols},{sub_slab})", layout, (rows_of[datapath], cols)
    for shape, dtype in itertools.product(LD_ST_SHAPES, ["float32", "float16", "bfloat16"]):
        per_register = 2 if dtype != "float32" else 1
        for rows in LD_ST_SHAPES[shape].rows:
            for num in (1, 2, 8, LD_ST_SHAPES[shape].max_num):
                cols = LD_ST_SHAPES[shape].columns_per_num * per_register * num
                yield (
                    f"tcgen05({shape},{dtype},{rows},{cols})",
                    tcgen05_atom_layout(shape, (rows, cols), dtype),
                    (rows, cols),
                )
    for dtype, mode in itertools.product(["float16", "float32", "float8_e4m3"], SWIZZLE_MODES):
        for rows, k in [(8, 128), (64, 64), (128, 256)]:
            try:
                layout = mma_shared_layout(dtype, mode, (rows, k))
            except ValueError:
                continue
            yield f"mma({dtype},{mode},{rows},{k})", layout, (rows, k)


CASES = list(hardware_layouts())


def same_tile(a, b) -> bool:
    """Identical iter lists and offsets (a zero offset entry counts as absent)."""
    if isinstance(a, ComposeLayout) or isinstance(b, ComposeLayout):
        return type(a) is type(b) and a.swizzle == b.swizzle and same_tile(a.tile_layout, b.tile_layout)

    def offsets(t):
        return {k.name: v for k, v in t.offset.items() if v}

    return list(a.shard) == list(b.shard) and list(a.replica) == list(b.replica) and offsets(a) == offsets(b)


def _places(result, n):
    if not isinstance(result, dict):
        result = {"m": result}
    return {a: np.broadcast_to(np.asarray(v), (n,)).tolist() for a, v in result.items() if np.any(v)}


def _assert_same_by_coordinate(tile, cute, shape):
    """tile.apply(*x, shape=shape) == cute(x) for every coordinate, by an independent enumeration."""
    grid = np.indices(shape).reshape(len(shape), -1)
    n = grid.shape[1]
    colex = np.ravel_multi_index(tuple(grid), shape, order="F")
    assert _places(tile.apply(*grid, shape=list(shape)), n) == _places(cute.apply_array(colex), n)


@pytest.mark.parametrize(("name", "tile", "shape"), CASES, ids=[c[0] for c in CASES])
def test_hardware_layouts_convert_and_convert_back_exactly(name, tile, shape):
    flat = to_cute(tile)
    assert flat is not None
    assert same_tile(to_tile_layout(flat), tile)  # the shard comes back iter for iter
    by_mode = to_cute(tile, shape)
    assert by_mode is not None
    assert logical_shape(by_mode) == list(shape)
    _assert_same_by_coordinate(tile, by_mode, shape)
    back = to_tile_layout(by_mode, by_mode=True)
    with tvm.target.Target("llvm"):
        assert back.canonicalize() == tile.canonicalize()
    if isinstance(tile, ComposeLayout):
        assert isinstance(by_mode, ComposedLayout) and by_mode.outer is not None


def test_flat_conversion_serialises_the_outputs():
    # Outputs [thread, slot] serialise as thread * slots + slot (TileLang's convention).
    assert str(to_cute_flat(wg_local_layout(8, rows=4))) == "32:1"
    tile = TileLayout(S[(4, 8) : (1, 4 @ laneid)])  # slots over rows, lanes 0, 4, ..., 28 over columns
    flat = to_cute_flat(tile)
    assert str(flat) == "(8,4):(16,1)"  # laneid * 4 + slot: the thread axis first, the slot span 4 as radix
    places = tile.apply(np.arange(32))
    assert flat.apply_array(np.arange(32)).tolist() == (places["laneid"] * 4 + places["m"]).tolist()
    datapath = to_cute_flat(tmem_datapath_layout("B", 64, 32))  # TLane * 16 + TCol over a 128 x 16 span
    assert datapath is not None and datapath.size() == 64 * 32


@pytest.mark.parametrize(
    ("tile", "shape"),
    [
        (TileLayout(S[(8, 4) : (4 @ laneid, 1)] + R[2 : 32 @ laneid]), None),  # replicas: a Fragment, not a Layout
        (TileLayout(S[(8, 4) : (4, 1)] + tvm.tirx.Var("stage", "int32")), None),  # a symbolic offset
        (TileLayout(S[(3, 4) : (4, 1)]), (2, 6)),  # 3 rows cannot be grouped into 2
    ],
)
def test_no_exact_answer_is_none(tile, shape):
    assert to_cute(tile, shape) is None


def test_flat_conversion_declines():
    assert to_cute_flat(TileLayout(S[(4, 8) : (-8, 1)])) is None  # a negative stride has no serial radix
    assert to_cute_flat(TileLayout(S[8:1] + 3)) is None  # an offset
    assert to_cute_flat(TileLayout(S[8:1] + R[2:8])) is None


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="elements"):
        to_cute(TileLayout(S[(4, 8) : (8, 1)]), (4, 4))
    with pytest.raises(TypeError):
        to_cute(Layout(4))
    with pytest.raises(TypeError):
        to_tile_layout(TileLayout(S[4:1]))


def test_cute_to_tile_layout_round_trips():
    for text in ["((2,4),3):((1@laneid,2),8)", "(8,(2,2)):(0,(1@TLane,64@TCol))", "4:-1", "(4):(3)"]:
        layout = Layout.parse(text)
        tile = to_tile_layout(layout)
        assert to_cute(tile) is not None
        assert table_of(to_cute(tile)) == table_of(layout)
        by_mode = to_tile_layout(layout, by_mode=True)
        _assert_same_by_coordinate(by_mode, layout, logical_shape(layout))


def table_of(layout):
    out = layout.apply_array(np.arange(layout.size()))
    return {k: v.tolist() for k, v in out.items()} if isinstance(out, dict) else out.tolist()


def test_swizzle_recovery_and_back():
    tile = mma_shared_layout("float16", "128B", (16, 64))
    composed = to_cute_composed(tile, (16, 64))
    assert str(composed) == "Sw<3,3,3> o 0 o (16,64):(64,1)"
    assert to_tile_layout(composed, by_mode=True) == ComposeLayout(
        SwizzleLayout(3, 3, 3), TileLayout(S[(16, 64) : (64, 1)])
    )
    outer = ComposeLayout(SwizzleLayout(2, 2, 4, swizzle_inner=False), TileLayout(S[(8, 64) : (64, 1)] + 5))
    recovered = to_cute(outer)
    assert recovered.outer == Swizzle(2, 2, -4) and recovered.offset == {"m": 5}
    assert to_tile_layout(recovered) == outer
    flat = np.arange(512)
    assert recovered.apply_array(flat).tolist() == outer.apply(flat)["m"].tolist()


# ---- Fragment ------------------------------------------------------------------------------------------------


def test_fragment_basics():
    frag = Fragment(Layout((4, 8), (1 @ tx, 1)))
    assert frag.shape == (4, 8) and frag.replicate_size == 1
    assert (frag.thread_extent(), frag.num_slots(), frag.thread_range) == (4, 8, (0, 4))
    assert frag(3, 7) == (3, 7)
    twice = frag.replicate(2)
    assert twice(3, 7, rep=1) == (7, 7) and twice.thread_extent() == 8
    assert twice.dereplicate() == frag
    four = twice.replicate(2)
    assert str(four.rep) == "(2,2):(4@tx,8@tx)" and str(four.condense_rep().rep) == "4:4@tx"
    bound = four.bind_thread_range(64)
    assert bound.thread_range == (64, 16) and bound(1, 2, rep=3) == four(1, 2, rep=3)
    with pytest.raises(ValueError):
        four.bind_thread_range(0, 8)
    with pytest.raises(ValueError):
        frag(1, 2, rep=1)
    with pytest.raises(ValueError):
        Fragment(Layout(4, 1 @ tx), thread_axis="laneid")
    assert "replicate: 4" in repr(four)


def test_fragment_packing_and_inverse():
    frag = Fragment(Layout((4, 8), (1 @ tx, 1)), 2)
    packed = frag.packed
    assert str(packed) == "(4,8,2):(1@tx,1,4@tx)"  # (logical..., rep) -> (thread, slot), rep last
    assert str(frag.packed_flat()) == "(4,8,2):(8,1,32)"
    inverse = frag.inverse()
    for thread, slot in itertools.product(range(8), range(8)):
        coord, rep = frag.inverse_apply(thread, slot)
        assert frag(*coord, rep=rep) == (thread, slot)
        assert inverse((slot, thread)) == np.ravel_multi_index((*coord, rep), (4, 8, 2), order="F")
    with pytest.raises(ValueError, match="bijection"):
        Fragment(Layout((4, 8), (1 @ tx, 2))).inverse()  # every other slot empty


def test_fragment_tile_layout_round_trip_with_replicas():
    tile = TileLayout(S[(8, 4) : (1 @ laneid, 1)] + R[4 : 8 @ laneid])
    frag = Fragment.from_tile_layout(tile, (8, 4))
    assert frag is not None and frag.replicate_size == 4 and frag.thread_axis == "laneid"
    for i, j in itertools.product(range(8), range(4)):
        places = tile.apply_all(i, j, shape=[8, 4])
        assert sorted(frag(i, j, rep=r) for r in range(4)) == sorted((p["laneid"], p["m"]) for p in places)
    assert frag.to_tile_layout() == tile


@pytest.mark.parametrize(("name", "tile", "shape"), [c for c in CASES if c[0].startswith(("tcgen05", "wg_local"))])
def test_fragments_of_register_layouts(name, tile, shape):
    frag = Fragment.from_tile_layout(tile, shape)
    assert frag is not None
    with tvm.target.Target("cuda"):
        canonical = tile.canonicalize()
    grid = np.indices(shape).reshape(2, -1)
    places = tile.apply(*grid, shape=list(shape))
    # tid_in_wg directly, or laneid + wid_in_wg merged into it; zero where the layout has one thread.
    thread = places.get(frag.thread_axis, places.get("laneid", 0) + 32 * places.get("wid_in_wg", 0))
    thread = np.broadcast_to(thread, grid.shape[1:])
    for k in range(0, grid.shape[1], max(1, grid.shape[1] // 64)):
        assert frag(int(grid[0, k]), int(grid[1, k])) == (int(thread[k]), int(places["m"][k]))
    with tvm.target.Target("cuda"):
        assert frag.to_tile_layout().canonicalize() == canonical.canonicalize()
    if frag.num_slots() * frag.thread_extent() == frag.packed.size():
        frag.inverse()


def test_fragment_declines():
    assert Fragment.from_tile_layout(TileLayout(S[(8, 4) : (4, 1)]), (8, 4)) is None  # no thread axis
    assert Fragment.from_tile_layout(TileLayout(S[(8, 4) : (1 @ laneid, 1)] + R[2:1]), (8, 4)) is None
    two = TileLayout(S[(2, 4) : (1 @ tid_in_wg, 1 @ warpid)])
    assert Fragment.from_tile_layout(two, (2, 4)) is None  # two thread axes that do not merge
