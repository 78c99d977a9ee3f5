"""CuTe layouts: notation, evaluation, the documented worked examples, swizzles, and strict precondition checks."""

from __future__ import annotations

import contextlib
import pickle
import random

import numpy as np
import pytest

from tirx_layout import laneid, tx
from tirx_layout.cute import (
    ComposedLayout,
    Layout,
    Swizzle,
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    depth,
    filter,
    is_partial_right_inverse,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    raked_product,
    rank,
    restrict,
    right_inverse,
    size,
    tiled_divide,
    with_shape,
    zipped_divide,
)

from oracles.optional import pycute

# ---- notation ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "4:2",
        "(4):(2)",
        "(2,4):(1,2)",
        "((2,4),3):((1@laneid,2),8)",
        "(8,(2,(2,2))):(-1,(0,(1@TLane,4@TCol)))",
        "((4,8),(2,2)):((2@tx,8@tx),(1,64))",
    ],
)
def test_parse_and_print_round_trip(text):
    layout = Layout.parse(text)
    assert str(layout) == text
    assert Layout.parse(str(layout)) == layout
    assert eval(repr(layout), {"Layout": Layout}) == layout
    assert pickle.loads(pickle.dumps(layout)) == layout
    assert Layout(layout.shape, layout.stride) == layout


def test_parse_accepts_cute_static_ints_and_spaces():
    assert Layout.parse("(_2, _4) : (_1, _2)") == Layout((2, 4), (1, 2))
    assert str(Layout.parse("4:1@m")) == "4:1"  # a plain int is on m
    assert str(Layout.parse("4:0@laneid")) == "4:0"  # zero carries no axis


def test_fields_and_queries():
    layout = Layout(((2, 4), 3), ((1 @ laneid, 2), 8))
    assert layout.shape == ((2, 4), 3)
    assert str(layout.stride[0][0]) == "1@laneid" and layout.stride[1] == 8
    assert (size(layout), rank(layout), depth(layout)) == (24, 2, 2)
    assert layout.axes() == ("laneid", "m")
    assert cosize(layout) == 1 + 3 * 2 + 2 * 8 and layout.cosize("laneid") == 2
    assert str(layout[0]) == "(2,4):(1@laneid,2)" and str(layout[-1]) == "3:8"
    assert [str(m) for m in layout] == ["(2,4):(1@laneid,2)", "3:8"]
    assert Layout((2, 3)).stride == (1, 2) and Layout(((2, 2), 3)).stride == ((1, 2), 4)


def test_call_by_index_and_by_coordinate():
    layout = Layout.parse("((2,4),3):((1,2),16)")
    for i in range(layout.size()):
        a, b = i % 2, (i // 2) % 4
        c = i // 8
        assert layout(i) == a + 2 * b + 16 * c
        assert layout(((a, b), c)) == layout((a + 2 * b, c)) == layout(i)
    assert layout(30) == layout((6, 3))  # past the size: the last mode runs on
    np.testing.assert_array_equal(
        layout.apply_array(np.arange(24).reshape(4, 6)), np.array([layout(i) for i in range(24)]).reshape(4, 6)
    )
    multi = Layout((4, 2), (1 @ tx, 1))
    assert multi(5) == {"tx": 1, "m": 1}
    assert {k: v.tolist() for k, v in multi.apply_array(np.array([0, 5])).items()} == {"tx": [0, 1], "m": [0, 1]}


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: Layout.parse("(2,4):(1)"), ValueError),
        (lambda: Layout.parse("(2,4):(1,2"), ValueError),
        (lambda: Layout.parse("2:1@"), ValueError),
        (lambda: Layout.parse("(2,x):(1,2)"), ValueError),
        (lambda: Layout.parse("2:1@nosuchaxis"), KeyError),
        (lambda: Layout.parse("99999999999999999999:1"), ValueError),
        (lambda: Layout((2, 0), (1, 2)), ValueError),
        (lambda: Layout((2, 4), (1,)), ValueError),
        (lambda: Layout((2, 4), (1, (2, 3))), ValueError),
        (lambda: Layout(2.5), TypeError),
        (lambda: Layout(()), ValueError),
        (lambda: Layout((2, 3))((2, 0)), ValueError),
        (lambda: Layout((2, 3))((1, 0, 0)), ValueError),
        (lambda: Layout((2, 3))(-1), ValueError),
        (lambda: Layout((2, 3))[2], ValueError),
        (lambda: Layout((2**40, 2**40)), ValueError),
        (lambda: Layout(4, 2 @ laneid).cosize("nosuchaxis"), KeyError),
    ],
)
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_random_text_parses_or_raises_cleanly():
    rng = random.Random(5)
    alphabet = "()(),,::@@_-0123456789 laneidxTCol"
    parsed = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        if rng.random() < 0.3:
            text = str(Layout.parse("((2,4),3):((1@laneid,2),8)"))[: rng.randint(0, 27)] + text[:3]
        try:
            layout = Layout.parse(text)
        except (ValueError, KeyError):
            continue
        parsed += 1
        assert Layout.parse(str(layout)) == layout
    assert parsed > 0
    with pytest.raises(ValueError, match="deeper"):
        Layout.parse("(" * 100_000 + "1" + ")" * 100_000 + ":1")


def test_huge_values_raise_instead_of_overflowing():
    rng = random.Random(11)
    big = [1, 2, 3, 2**20, 2**31, 2**40, 2**62, -(2**62)]
    ops = [
        lambda a, b: composition(a, b),
        lambda a, b: complement(a, abs(b.size())),
        lambda a, b: logical_divide(a, b),
        lambda a, b: logical_product(a, b),
        lambda a, b: blocked_product(a, b),
        lambda a, b: right_inverse(a),
        lambda a, b: left_inverse(a),
        lambda a, b: coalesce(a),
        lambda a, b: a(2**62),
        lambda a, b: a.cosize(),
    ]
    for _ in range(1500):
        try:
            a = Layout(tuple(rng.choice(big[:6]) for _ in range(2)), tuple(rng.choice(big) for _ in range(2)))
            b = Layout(rng.choice(big[:5]), abs(rng.choice(big[:6])))
        except ValueError:
            continue  # the size itself overflows
        for op in ops:
            with contextlib.suppress(ValueError):
                op(a, b)
    for args in [(2**62, 0, 0), (0, 2**62, 0), (0, 0, -(2**63)), (1, 2**62, 2**62)]:
        with pytest.raises(ValueError):
            Swizzle(*args)


# ---- the worked examples of the CuTe documentation -----------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "args", "expected"),
    [
        (composition, ("(6,2):(8,2)", "(4,3):(3,1)"), "((2,2),3):((24,2),8)"),
        (composition, ("20:2", "(5,4):(4,1)"), "(5,4):(8,2)"),
        (composition, ("(10,2):(16,4)", "(5,4):(1,5)"), "(5,(2,2)):(16,(80,4))"),
        (complement, ("4:2", 24), "(2,3):(1,8)"),
        (complement, ("4:1", 24), "6:4"),
        (complement, ("(2,2):(1,6)", 24), "(3,2):(2,12)"),
        (complement, ("(2,4):(1,6)", 8), "3:2"),
        (right_inverse, ("(4,8):(8,1)",), "(8,4):(4,1)"),
        (left_inverse, ("4:2",), "(2,4):(4,1)"),
        (logical_divide, ("(4,2,3):(2,1,8)", "4:2"), "((2,2),(2,3)):((4,1),(2,8))"),
        (
            logical_divide,
            ("(9,(4,8)):(59,(13,1))", ("3:3", "(2,4):(1,8)")),
            "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))",
        ),
        (coalesce, ("(2,(1,6)):(1,(6,2))",), "12:1"),
        (coalesce, ("(2,4):(1,2)",), "8:1"),
        (filter, ("(2,(3,4)):(1,(0,2))",), "8:1"),
        (logical_product, ("(2,2):(4,1)", "6:1"), "((2,2),(2,3)):((4,1),(2,8))"),
        (logical_product, ("(2,2):(4,1)", "(4,2):(2,1)"), "((2,2),(4,2)):((4,1),(8,2))"),
        (blocked_product, ("(2,5):(5,1)", "(3,4):(1,3)"), "((2,3),(5,4)):((5,10),(1,30))"),
        (raked_product, ("(2,5):(5,1)", "(3,4):(1,3)"), "((3,2),(4,5)):((10,5),(30,1))"),
    ],
)
def test_documented_examples(op, args, expected):
    parsed = [Layout.parse(a) if isinstance(a, str) else a for a in args]
    parsed = [tuple(Layout.parse(t) for t in a) if isinstance(a, tuple) else a for a in parsed]
    assert str(op(*parsed)) == expected


def test_tilers_by_mode():
    a = Layout.parse("(12,(4,8)):(59,(13,1))")
    assert str(composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"
    assert str(composition(a, (3, None))) == "(3,(4,8)):(59,(13,1))"
    assert str(composition(a, (Layout(3, 4), Layout(8, 2)))) == "(3,(2,4)):(236,(26,1))"
    assert str(zipped_divide(Layout((8, 6)), (2, 3))) == "((2,3),(4,2)):((1,8),(2,24))"
    assert str(tiled_divide(Layout((8, 6)), (2, 3))) == "((2,3),4,2):((1,8),2,24)"
    assert str(coalesce(Layout.parse("((2,2),(2,3)):((1,2),(4,8))"), (1, 1))) == "(4,6):(1,4)"
    with pytest.raises(ValueError, match="rank 3"):
        composition(Layout((2, 2)), (2, 2, 2))


def test_with_shape_and_restrict():
    assert str(with_shape(Layout.parse("(4,6):(1,4)"), (8, 3))) == "(8,3):(1,8)"
    assert str(with_shape(Layout.parse("(4,6):(6,1)"), (2, 12))) == "(2,(2,6)):(6,(12,1))"
    assert str(restrict(Layout.parse("((2,4),3):((1,2),8)"), 1, 2)) == "((2,4),2):((1,2),8)"
    with pytest.raises(ValueError):
        restrict(Layout.parse("(4,3):(3,1)"), 0, 5)
    with pytest.raises(ValueError):  # the first 3 of (2,2):(1,8) are no layout: 0, 1, 8
        restrict(Layout.parse("((2,2),3):((1,8),2)"), 0, 3)


def test_right_inverse_reports_partial():
    layout = Layout.parse("(4,2):(1,8)")
    assert str(right_inverse(layout)) == "4:1" and is_partial_right_inverse(layout)
    with pytest.raises(ValueError, match="partial"):
        right_inverse(layout, exact=True)
    assert str(right_inverse(Layout.parse("(4,2):(2,1)"), exact=True)) == "(2,4):(4,1)"
    assert str(right_inverse(Layout.parse("(2,3):(0,1)"))) == "3:2"  # broadcasts are skipped


# ---- strict preconditions ------------------------------------------------------------------------------------


def _pycute_value(fn):
    try:
        return fn()
    except AssertionError:
        return None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("(3,4):(4,1)", "(2,2):(2,1)"),  # the example: 2 neither divides nor is a multiple of 3
        ("(2,4):(1,10)", "3:1"),  # pycute: 2:1, silently dropping the third element (A(2) = 10)
        ("(4,3):(1,100)", "6:1"),  # pycute: 4:1
    ],
)
def test_composition_rejects_what_the_weak_check_accepts(a, b):
    A, B = Layout.parse(a), Layout.parse(b)
    truth = [A(B(i)) for i in range(B.size())]
    with pytest.raises(ValueError, match="composition"):
        composition(A, B)
    weak = _pycute_value(lambda: pycute.composition(pycute.Layout(A.shape, A.stride), pycute.Layout(B.shape, B.stride)))
    if weak is not None:
        assert [weak(i) for i in range(B.size())] != truth  # pycute's answer is a different function


def test_composition_accepts_a_run_that_fits():
    # 4 fits inside the first mode of 6: (6,2):(1,100) o 4:1 is 4:1, exactly.
    assert str(composition(Layout.parse("(6,2):(1,100)"), Layout.parse("4:1"))) == "4:1"


@pytest.mark.parametrize(
    ("layout", "cotarget"),
    [("(2,2):(1,3)", 12), ("(2,2):(1,1)", 4), ("(4,3):(2,3)", 24), ("(3,2):(2,3)", 12)],
)
def test_complement_rejects_overlap_and_misalignment(layout, cotarget):
    with pytest.raises(ValueError, match="complement"):
        complement(Layout.parse(layout), cotarget)


def test_operand_errors():
    with pytest.raises(ValueError, match="must be integers"):
        composition(Layout(4), Layout(2, 1 @ laneid))
    with pytest.raises(ValueError, match="negative"):
        composition(Layout(4), Layout(2, -1))
    with pytest.raises(ValueError, match="integer strides"):
        complement(Layout(4, 1 @ laneid), 8)
    with pytest.raises(ValueError, match="not injective"):
        left_inverse(Layout.parse("(2,4):(0,1)"))
    with pytest.raises(ValueError, match="cotarget"):
        complement(Layout(4), 0)
    with pytest.raises(TypeError):
        composition("4:1", Layout(2))
    with pytest.raises(ValueError, match="negative"):
        complement(Layout(4, -1), 8)


def test_scaled_bases_flow_through_composition():
    # A thread x value layout on two axes, re-tiled: the bases survive composition and coalesce.
    tv = Layout((4, 8), (1 @ tx, 1))
    assert str(composition(tv, Layout((2, 16), (1, 2)))) == "(2,(2,8)):(1@tx,(2@tx,1))"
    assert str(coalesce(Layout((2, 2), (1 @ tx, 2 @ tx)))) == "4:1@tx"
    assert str(make_layout(Layout(2, 1 @ tx), Layout(3))) == "(2,3):(1@tx,1)"


# ---- swizzles ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bits", "base", "shift"), [(3, 3, 3), (2, 4, 3), (1, 0, 1), (3, 3, -3), (2, 1, -5), (0, 3, 0)]
)
def test_swizzle_matches_pycute_and_is_a_bijection(bits, base, shift):
    sw = Swizzle(bits, base, shift)
    oracle = pycute.Swizzle(bits, base, shift) if shift else (lambda v: v)  # pycute recurses forever on shift 0
    values = np.arange(4 * sw.size())
    out = sw(values)
    assert out.tolist() == [oracle(int(v)) for v in values] == [sw(int(v)) for v in values]
    assert sorted(out[: sw.size()].tolist()) == list(range(sw.size()))


def test_swizzle_errors_and_identity():
    for args in [(-1, 0, 0), (0, -1, 0), (3, 0, 2), (3, 0, -2), (30, 30, 30)]:
        with pytest.raises(ValueError):
            Swizzle(*args)
    assert Swizzle(3, 3, 3) == Swizzle(3, 3, 3) and str(Swizzle(3, 3, 3)) == "Sw<3,3,3>"
    assert pickle.loads(pickle.dumps(Swizzle(2, 4, -3))) == Swizzle(2, 4, -3)


def test_composed_layout():
    inner = Layout.parse("(8,64):(64,1)")
    composed = ComposedLayout(Swizzle(3, 3, 3), 0, inner)
    oracle = pycute.ComposedLayout(pycute.Swizzle(3, 3, 3), 0, pycute.Layout((8, 64), (64, 1)))
    assert [composed(i) for i in range(512)] == [oracle(i) for i in range(512)]
    assert composed.apply_array(np.arange(512)).tolist() == [oracle(i) for i in range(512)]
    # The guide's worked check: column 0 of the 8 rows in banks 0, 4, ..., 28.
    assert [composed((i, 0)) // 2 % 32 for i in range(8)] == [0, 4, 8, 12, 16, 20, 24, 28]
    tiled = composition(composed, Layout((4, 8), (1, 4)))
    assert isinstance(tiled, ComposedLayout) and str(tiled) == "Sw<3,3,3> o 0 o (4,(2,4)):(64,(256,1))"
    assert ComposedLayout(None, {"TLane": 16}, Layout(4, 1 @ tx))(2) == {"tx": 2, "TLane": 16}
    with pytest.raises(ValueError, match="plain"):
        ComposedLayout(Swizzle(1, 0, 1), 0, Layout(4, 1 @ tx))


def test_a_none_tiler_divides_and_multiplies_nothing():
    """Issue 17: tiled_divide/tiled_product with None failed where zipped_divide returned the layout itself."""
    from tirx_layout.cute import tiled_divide, tiled_product, zipped_divide

    a = Layout.parse("4:1")
    assert zipped_divide(a, None) == a
    assert tiled_divide(a, None) == a
    assert tiled_product(a, None) == a


def test_an_empty_shard_converts_to_one_element():
    """Issue 17: to_cute(TileLayout(S[()])) was a numpy IndexError; the one element sits at the offset."""
    from tirx_layout import S, TileLayout
    from tirx_layout.cute import to_cute

    assert str(to_cute(TileLayout(S[()]))) == "1:0"
    assert str(to_cute(TileLayout(S[()] + 3))) == "id o 3 o 1:0"


def test_an_index_beyond_int64_is_named():
    """Issue 17 (found by tests/fuzz): the FFI's own type mismatch text for an index it could not convert."""
    with pytest.raises(ValueError, match="a CuTe layout index 18446744073709551616 does not fit in int64"):
        Layout(4, 1)(2**64)
