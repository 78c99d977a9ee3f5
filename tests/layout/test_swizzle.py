"""SwizzleLayout and ComposeLayout (SPEC §3): the guide's worked example, CuTe's Swizzle<B,M,S> as an oracle,
bijectivity, symbolic expressions, and the algebra acting on the tile."""

import itertools

import numpy as np
import pytest
import tvm

from tirx_layout import ComposeLayout, R, S, SwizzleLayout, TileLayout, laneid

from oracles.optional import pycute
from oracles.reference import evaluate

ROW_MAJOR_8x64 = TileLayout(S[(8, 64) : (64, 1)])


def bank(address, bytes_per_element=2):
    return (address * bytes_per_element // 4) % 32


def test_guide_example_fp16_128b():
    smem = ComposeLayout(per_element=3, swizzle_len=3, atom_len=3, tile_layout=ROW_MAJOR_8x64)
    for i, j in itertools.product(range(8), range(64)):
        assert smem.apply(i, j, shape=[8, 64]) == {"m": 64 * i + 8 * ((j >> 3) ^ i) + (j & 7)}
    assert [bank(smem.apply(i, 0)["m"]) for i in range(8)] == [0, 4, 8, 12, 16, 20, 24, 28]
    assert [bank(ROW_MAJOR_8x64.apply(i, 0)["m"]) for i in range(8)] == [0] * 8


def test_swizzle_outer_mirrors_the_xor_direction():
    inner, outer = SwizzleLayout(3, 3, 3), SwizzleLayout(3, 3, 3, swizzle_inner=False)
    for a in range(512):
        q = a >> 3
        assert inner.swizzle_address(a) == ((q ^ ((q >> 3) & 7)) << 3) | (a & 7)
        assert outer.swizzle_address(a) == ((q ^ ((q & 7) << 3)) << 3) | (a & 7)


PARAMS = [(pe, sl, al) for pe in range(5) for sl in range(4) for al in range(sl, 5)]


@pytest.mark.parametrize(("pe", "sl", "al"), PARAMS)
def test_swizzle_agrees_with_cute_and_is_a_bijection_per_period(pe, sl, al):
    ours, cute = SwizzleLayout(pe, sl, al), pycute.Swizzle(sl, pe, al)
    period = ours.size()
    assert period == 2 ** (pe + sl + al) == ours.span()
    addresses = np.arange(2 * period)
    mapped = ours.swizzle_address(addresses)
    # pycute's Swizzle(0, M, 0) recurses without end; a zero-width swizzle is the identity
    oracle = [cute(int(a)) for a in addresses] if sl else addresses.tolist()
    assert mapped.tolist() == oracle
    assert [ours.swizzle_address(int(a)) for a in addresses[:64]] == mapped[:64].tolist()
    for start in (0, period):
        assert sorted(mapped[start : start + period].tolist()) == list(range(start, start + period))


def test_symbolic_swizzle_is_xor_shift_and_matches_integers():
    x = tvm.tirx.Var("x", "int32")
    expr = SwizzleLayout(3, 3, 3).swizzle_address(x)
    assert str(expr) == "x ^ (x >> 6 & 7) << 3"
    for value in (0, 72, 123, 511, 1000):
        assert evaluate(expr, {"x": value}) == SwizzleLayout(3, 3, 3).swizzle_address(value)
    for sw in (SwizzleLayout(2, 3, 3, swizzle_inner=False), SwizzleLayout(4, 2, 3)):
        assert [evaluate(sw.swizzle_address(x), {"x": v}) for v in range(1024)] == sw.swizzle_address(
            np.arange(1024)
        ).tolist()
    assert SwizzleLayout(3, 0, 3).swizzle_address(x).same_as(x)
    smem = ComposeLayout(SwizzleLayout(3, 3, 3), ROW_MAJOR_8x64)
    i, j = tvm.tirx.Var("i", "int32"), tvm.tirx.Var("j", "int32")
    m = smem.apply(i, j)["m"]
    assert all(
        evaluate(m, {"i": a, "j": b}) == 64 * a + 8 * ((b >> 3) ^ a) + (b & 7) for a in range(8) for b in range(64)
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((-1, 3, 3), "per_element must be >= 0, got -1"),
        ((3, -2, 3), "swizzle_len must be >= 0, got -2"),
        ((3, 3, 2), "atom_len must be >= swizzle_len \\(3\\), got 2"),
        ((40, 20, 20), "does not fit"),
    ],
)
def test_swizzle_rejects_bad_parameters(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        SwizzleLayout(*args)


def test_compose_rejects_tiles_off_m():
    with pytest.raises(ValueError, match="axis 'laneid'"):
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(32, 8) : (1 @ laneid, 1)]))
    with pytest.raises(ValueError, match="an offset on axis 'laneid'"):
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[64:1] + 1 @ laneid))
    with pytest.raises(TypeError, match="ComposeLayout takes"):
        ComposeLayout(SwizzleLayout(3, 3, 3), ROW_MAJOR_8x64, per_element=3)
    with pytest.raises(TypeError, match="TileLayout"):
        ComposeLayout(SwizzleLayout(3, 3, 3), "S[64:1]")


def test_compose_both_call_forms_and_identity():
    a = ComposeLayout(SwizzleLayout(3, 3, 3), ROW_MAJOR_8x64)
    b = ComposeLayout(per_element=3, swizzle_len=3, atom_len=3, tile_layout=ROW_MAJOR_8x64, swizzle_inner=True)
    assert a == b and hash(a) == hash(b)
    assert a != ComposeLayout(SwizzleLayout(3, 3, 3, swizzle_inner=False), ROW_MAJOR_8x64)
    import tirx_layout

    assert eval(repr(a), {n: getattr(tirx_layout, n) for n in tirx_layout.__all__}) == a
    assert (a.size(), a.span()) == (512, 512)


def test_compose_arrays_and_replicas():
    smem = ComposeLayout(SwizzleLayout(2, 3, 3), TileLayout(S[(8, 32) : (32, 1)] + R[2:256]))
    i, j = np.meshgrid(np.arange(8), np.arange(32), indexing="ij")
    everywhere = smem.apply_all(i, j, shape=[8, 32])["m"]
    assert everywhere.shape == (2, 8, 32)
    for r, a, b in itertools.product(range(2), range(8), range(32)):
        assert everywhere[r, a, b] == SwizzleLayout(2, 3, 3).swizzle_address(256 * r + 32 * a + b)
    assert smem.apply_all(1, 0) == [SwizzleLayout(2, 3, 3).apply(32), SwizzleLayout(2, 3, 3).apply(288)]


def test_compose_algebra_acts_on_the_tile():
    sw = SwizzleLayout(3, 3, 3)
    smem = ComposeLayout(sw, TileLayout(S[(8, 8, 8) : (64, 8, 1)]))
    assert smem.canonicalize() == sw  # the identity over one period: the bare swizzle
    tiled = smem.tile(TileLayout(S[2:1]), [2, 1, 1], [8, 8, 8])
    assert tiled == ComposeLayout(sw, TileLayout(S[1024:1]))
    assert smem.is_tile_inner(tiled, [16, 8, 8], [8, 8, 8]) == TileLayout(S[(2, 1, 1) : (1, 1, 1)]).group([2, 1, 1])[0]
    assert smem.is_tile_inner(ComposeLayout(SwizzleLayout(2, 3, 3), tiled.tile_layout), [16, 8, 8], [8, 8, 8]) is None
    assert smem.slice([8, 64], [(2, 4), (0, 64)]) == ComposeLayout(sw, TileLayout(S[128:1] + 128))
    packed = ComposeLayout(sw, ROW_MAJOR_8x64).pack(2)
    assert packed == ComposeLayout(SwizzleLayout(2, 3, 3), TileLayout(S[(8, 32) : (32, 1)]))
    assert packed.unpack(2).canonicalize() == ComposeLayout(sw, ROW_MAJOR_8x64).canonicalize()
    with pytest.raises(ValueError, match="power of two"):
        sw.pack(3)
    with pytest.raises(ValueError, match="keeps only 8"):
        sw.pack(16)
    # Packing keeps the map: element pairs (2k, 2k+1) of the fp16 tile are fp32 element k of the packed one.
    for i, j in itertools.product(range(8), range(32)):
        assert packed.apply(i, j)["m"] * 2 == ComposeLayout(sw, ROW_MAJOR_8x64).apply(i, 2 * j)["m"]
