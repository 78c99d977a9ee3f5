"""Issue 17's reproductions, one test each: the core never crashes (each crash case runs in a child process, so a
regression fails this test instead of killing the run), never answers wrongly, and says what was wrong.

Expected values come from the arithmetic of SPEC §2-3, not from the library."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest
import tvm

from tirx_layout import F, Iter, S, SwizzleLayout, TileLayout, m, parse_layout
from tirx_layout.layout import LayoutTextError

from oracles import reference


def run_child(code: str) -> str:
    """Run ``code`` in a fresh interpreter; a signal or a non-zero exit fails the test with what the child said."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"child ended with {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout.strip()


# ---- crashes ----------------------------------------------------------------------------------------------------


def test_recognising_a_tile_by_an_inner_of_span_minus_one_does_not_trap():
    # The inner spans 1 + (2-1)*(-2) = -1 (first) and 1 + (2-1)*1 - 3 = -1 (second): the outer's stride would be
    # -2**63 / -1 = 2**63, which no int64 holds, so there is no such outer (SPEC: None, not an error, not SIGFPE).
    out = run_child(
        """
        from tirx_layout import TileLayout, S
        tiled = TileLayout(S[(2, 2):(-2**63, 1)])
        print(TileLayout(S[2:-2]).is_tile_inner(tiled, [4], [2]))
        print(TileLayout(S[2:1] + (-3)).is_tile_inner(tiled, [4], [2]))
        """
    )
    assert out.splitlines() == ["None", "None"]


def test_a_span_of_minus_one_is_undone_exactly():
    # tile scales the outer stride 5 by the inner's span -1: S[(2, 2):(-5, 1)] - 3; the recogniser divides by -1.
    inner, outer = TileLayout(S[2:1] + (-3)), TileLayout(S[2:5])
    tiled = inner.tile(outer, [2], [2])
    for x in range(4):
        assert tiled.apply(x) == {"m": -5 * (x // 2) + x % 2 - 3}
    assert inner.is_tile_inner(tiled, [4], [2]) == outer


def test_pickling_a_symbolic_offset_is_refused_in_words():
    out = run_child(
        """
        import pickle, tvm
        from tirx_layout import TileLayout, S
        try:
            pickle.dumps(TileLayout(S[4:1] + tvm.tirx.Var("x", "int32")))
        except TypeError as err:
            print(err)
        """
    )
    assert "cannot pickle layout" in out and "symbolic" in out


def test_static_layouts_still_pickle():
    layout = TileLayout(S[(8, 4) : (4, 1)] + 3)
    assert pickle.loads(pickle.dumps(layout)) == layout


# ---- wrong answers ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("terms", [(2**63 - 1, 1), (-(2**63), -1), (2**62, 2**62)])
def test_offset_sums_beyond_int64_are_refused(terms):
    with pytest.raises(ValueError, match=rf"{terms[0]} \+ {terms[1]} = {sum(terms)} does not fit in int64"):
        TileLayout(S[4:1] + terms[0] + terms[1])


def test_offset_sums_back_inside_int64_are_kept():
    # (2**63 - 1) + (-5) = 2**63 - 6 (the span 1 + 3 + 2**63 - 6 still fits); apply(1) adds 1 on m.
    assert TileLayout(S[4:1] + (2**63 - 1) + (-5)).apply(1) == {"m": 2**63 - 5}
    assert TileLayout(S[4:1] + (-(2**63)) + 1).apply(3) == {"m": -(2**63) + 4}


def test_the_text_parser_refuses_an_overflowing_offset_sum():
    with pytest.raises(LayoutTextError, match="does not fit in int64"):
        parse_layout("S[4:1] + 9223372036854775807 + 1")


def test_an_int_beyond_int64_is_never_stored_as_a_symbolic_offset():
    with pytest.raises(ValueError, match="9223372036854775808 does not fit in int64"):
        TileLayout.from_iters([Iter(4, 1)], [], {"m": 2**63})


@pytest.mark.parametrize("atom_len", [2**63 - 1, 2**62, 63])
def test_swizzle_periods_beyond_int64_are_refused(atom_len):
    with pytest.raises(ValueError, match="does not fit in int64"):
        SwizzleLayout(1, 1, atom_len)


def test_pack_refuses_what_unpack_cannot_have_made():
    # unpack(n) appends its n:1 iter on m, so an innermost stride-1 iter on F is no unpacked layout.
    with pytest.raises(ValueError, match=r"innermost iter 4:1@F must be a stride-1 iter on m"):
        TileLayout(S[4 : 1 @ F]).pack(4)


def test_pack_and_unpack_are_inverses():
    # unpack(2) of S[(4, 8):(1@F, 2)] + 6 is S[(4, 8, 2):(2@F, 4, 1)] + 12; pack(2) divides it back.
    layout = TileLayout(S[(4, 8) : (1 @ F, 2)] + 6)
    back = layout.unpack(2).pack(2)
    for x in range(32):
        assert back.apply(x) == {"F": x // 8, "m": 2 * (x % 8) + 6}
    # pack(2) of S[(4, 8):(2@F, 1)] + 6 is S[(4, 4):(1@F, 1)] + 3; unpack(2) gives every element its place back.
    packable = TileLayout(S[(4, 8) : (2 @ F, 1)] + 6)
    again = packable.pack(2).unpack(2)
    for x in range(32):
        assert again.apply(x) == {"F": 2 * (x // 8), "m": x % 8 + 6}


def test_symbolic_apply_picks_a_dtype_that_holds_every_place():
    # Constants 4, 2**30, 1 fit int32; the place 3 * 2**30 + 5 = 3221225477 does not.
    i, j = tvm.tirx.Var("i", "int32"), tvm.tirx.Var("j", "int32")
    place = TileLayout(S[(4, 2**30) : (2**30, 1)]).apply(i, j, shape=[4, 2**30])["m"]
    assert str(place.ty.dtype) == "int64"
    assert reference.evaluate(place, {"i": 3, "j": 5}) == 3 * 2**30 + 5


# ---- unclear errors ---------------------------------------------------------------------------------------------


def test_deep_nesting_is_a_clean_error_at_a_stated_depth():
    with pytest.raises(LayoutTextError, match="nested too deeply: more than 32 levels"):
        parse_layout("SwizzleLayout(" * 1000)


def test_from_iters_names_a_shard_that_is_not_a_list():
    with pytest.raises(TypeError, match=r"shard must be a list of Iter objects, got Axis.get\('m'\)"):
        TileLayout.from_iters(m)


def test_apply_names_a_shape_that_is_not_a_sequence():
    with pytest.raises(TypeError, match="shape must be a sequence of extents, got 0"):
        TileLayout(S[8:1]).apply(7, shape=0)


def test_axis_at_axis_says_what_at_binds():
    from tirx_layout import laneid

    with pytest.raises(TypeError, match="binds an int or expression to an axis"):
        laneid @ laneid


@pytest.mark.parametrize(
    "call",
    [
        lambda: TileLayout(S[4:1]).tile(TileLayout(S[2:1]), [2**70], [4]),
        lambda: TileLayout(S[4:1]).direct_sum(TileLayout(S[2:1]), [-(10**30)], [4]),
        lambda: TileLayout(S[4:1]).slice([4], [(2**70, 2**70 + 1)]),
    ],
)
def test_ints_beyond_int64_in_shapes_and_regions_are_named(call):
    with pytest.raises(ValueError, match="does not fit in int64"):
        call()


def test_a_failed_constructor_can_be_shown_in_a_traceback(tmp_path):
    # pytest shows `self` of the failed __init__ (a null handle); reading its fields crashed the whole run.
    failing = tmp_path / "test_failing_constructor.py"
    failing.write_text(
        "from tirx_layout import Iter, S, TileLayout\n"
        "def test_layout():\n    TileLayout(S[(2**40, 2**40):(1, 1)])\n"
        "def test_iter():\n    Iter(0, 1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(failing), "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 failed" in done.stdout and "not constructed" in done.stdout


def test_unconstructed_objects_have_a_repr():
    out = run_child(
        """
        from tirx_layout import ComposeLayout, Iter, SwizzleLayout, TileLayout
        from tirx_layout.cute import Layout
        for cls in (TileLayout, SwizzleLayout, ComposeLayout, Iter, Layout):
            print(repr(cls.__new__(cls)))
        """
    )
    assert out.splitlines() == [
        f"<{n}, not constructed>" for n in ("TileLayout", "SwizzleLayout", "ComposeLayout", "Iter", "Layout")
    ]


def test_symbolic_values_where_sequences_belong_are_named():
    # On main these leaked TVM's "Check failed: (packed_realize != nullptr) ... does not support subscript".
    from tirx_layout import mma_shared_layout

    x = tvm.tirx.Var("x", "int32")
    with pytest.raises(TypeError, match="shape must be a sequence of extents, got x"):
        TileLayout(S[8:1]).apply(0, shape=x)
    with pytest.raises(ValueError, match=r"shape must be \(\.\.\., rows, K\), at least two entries, got x"):
        mma_shared_layout("float16", "128B", x)
    with pytest.raises(TypeError, match="region must be a list of"):
        TileLayout(S[8:1]).slice([8], x)
