"""Malformed input at every constructor and at apply: only ValueError / TypeError / KeyError, never a crash."""

import numpy as np
import pytest
import tvm
from hypothesis import given
from hypothesis import strategies as st

from tirx_layout import Axis, Iter, R, S, TileLayout

from oracles.strategies import build, layouts

ALLOWED = (ValueError, TypeError, KeyError)

_var = tvm.tirx.Var("v", "int32")
_float_var = tvm.tirx.Var("f", "float32")

junk = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-3, 40),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=6),
    st.sampled_from(["m", "laneid", "TCol", "nope", ""]),
    st.sampled_from([_var, _float_var, _var * 2, tvm.tirx.IntImm("int64", 3)]),
    st.builds(
        lambda n, dt: np.arange(n).astype(dt), st.integers(0, 5), st.sampled_from(["int8", "uint64", "float32", "bool"])
    ),
    st.builds(lambda: np.array([2**63 - 1], dtype=np.uint64) + np.uint64(5)),
)
junk_seq = st.one_of(junk, st.lists(junk, max_size=4), st.lists(junk, max_size=4).map(tuple))


def survives(call):
    try:
        call()
    except ALLOWED as err:
        assert str(err), "an error must carry a message"


@given(junk, junk, junk)
def test_iter_constructor(extent, stride, axis):
    survives(lambda: Iter(extent, stride, axis))


@given(junk_seq, junk_seq, st.booleans())
def test_spec_builders(shape, strides, replica):
    builder = R if replica else S
    survives(lambda: TileLayout(S[2] + builder[shape:strides]) if replica else TileLayout(builder[shape:strides]))
    survives(lambda: builder[shape])


@given(junk_seq, junk_seq, junk)
def test_from_iters(shard, replica, offset):
    survives(lambda: TileLayout.from_iters(shard, replica, offset))
    survives(lambda: TileLayout.from_iters([Iter(4, 1)], [], {"laneid": offset}))
    survives(lambda: TileLayout(S[4] + offset))


@given(junk)
def test_tile_layout_constructor(value):
    survives(lambda: TileLayout(value))


@given(layouts, st.lists(junk, max_size=5), st.one_of(st.none(), st.lists(junk, max_size=4)))
def test_apply(data, coords, shape):
    layout = build(data)
    survives(lambda: layout.apply(*coords, shape=shape))
    survives(lambda: layout.apply_all(*coords, shape=shape))


@given(layouts, junk)
def test_queries(data, axis):
    layout = build(data)
    survives(lambda: layout.size(axis))
    survives(lambda: layout.span(axis))
    assert layout.verify_well_formed() in (True, False)
    survives(layout.get_scope)


@given(junk, junk, junk, junk)
def test_axis_registry(name, kind, scope, subscope):
    survives(lambda: Axis.get(name))
    if isinstance(name, str) and name in Axis.known():
        return  # do not try to re-register built-ins with junk: that is covered by the exact tests
    survives(lambda: Axis.register(f"fuzz_{name}" if isinstance(name, str) else name, kind, scope, subscope))


@pytest.mark.parametrize(
    ("layout", "coords", "shape", "fragment"),
    [
        (TileLayout(S[(2**31, 2**31) : (2**32, 1)]), [2**62], None, "overflow"),
        (TileLayout(S[(4, 4) : (1, 4)]), [2**62, 2**62], [2**62, 2**62], "overflow"),
        (TileLayout(S[(4, 4) : (1, 4)]), [1, 2, 3], None, "one coordinate per shard iter"),
        (TileLayout(S[(4, 4) : (1, 4)]), [1, 2], [4, 0], "shape extents must be >= 1"),
        (TileLayout(S[(4, 4) : (1, 4)]), [np.arange(3), np.arange(4)], None, "broadcast"),
    ],
)
def test_apply_errors_name_the_problem(layout, coords, shape, fragment):
    with pytest.raises(ValueError, match=fragment):
        layout.apply(*coords, shape=shape)


def test_overflowing_layout_is_rejected_at_construction():
    with pytest.raises(ValueError, match=r"invalid layout S\[\(1099511627776, 1099511627776\):\(1, 1\)\].*overflow"):
        TileLayout(S[(2**40, 2**40) : (1, 1)])
    with pytest.raises(ValueError, match="overflow"):
        TileLayout(S[4 : 2**62] + R[4 : 2**62])


@given(junk, junk, junk, junk)
def test_swizzle_and_compose_constructors(pe, sl, al, inner):
    from tirx_layout import ComposeLayout, SwizzleLayout

    survives(lambda: SwizzleLayout(pe, sl, al, inner))
    survives(lambda: ComposeLayout(SwizzleLayout(3, 3, 3), pe))
    survives(lambda: ComposeLayout(per_element=pe, swizzle_len=sl, atom_len=al, tile_layout=TileLayout(S[64:1])))
    survives(lambda: SwizzleLayout(3, 3, 3).swizzle_address(pe))


@given(junk, junk_seq, junk, junk)
def test_hardware_constructors(name, shape, dtype, extra):
    from tirx_layout import mma_shared_layout, tcgen05_atom_layout, tmem_datapath_layout, wg_local_layout

    survives(lambda: tcgen05_atom_layout(name, shape, dtype))
    survives(lambda: tcgen05_atom_layout("16x64b", shape, "float32"))
    survives(lambda: tmem_datapath_layout(name, extra, dtype))
    survives(lambda: tmem_datapath_layout("F", 64, 32, extra))
    survives(lambda: wg_local_layout(extra, name))
    survives(lambda: mma_shared_layout(dtype, name, shape))
