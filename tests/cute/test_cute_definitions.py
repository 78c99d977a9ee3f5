"""CuTe's complement and left inverse as CuTe defines them, and pycute's integer-tuple helpers under their names.

The acceptance rule is pinned by enumeration: over every small layout and cotarget, our ``complement`` answers
exactly when pycute's answer (CuTe's floor-division walk) meets the post-conditions CuTe's own unit test
(``test/unit/cute/core/complement.cpp``) checks, and then answers the same layout; ``left_inverse`` answers exactly when
pycute's answer really inverts the layout, and then answers the same layout.
"""

import itertools

import pycute
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tirx_layout import cute
from tirx_layout.cute import Layout, complement, left_inverse


def cute_layout(theirs) -> Layout:
    return Layout(theirs.shape, theirs.stride)


def values(layout) -> list[int]:
    return [layout(i) for i in range(pycute.size(layout))]


def cosize(layout) -> int:
    return layout(pycute.size(layout) - 1) + 1


def pycute_complement_is_one(layout, cotarget) -> bool:
    """Whether pycute's complement of ``layout`` in ``cotarget`` meets CuTe's post-conditions: no empty mode (CuTe's
    static "non-injective" assert), ordered, disjoint from the layout, the two together reaching ``cotarget``, and
    nothing left over for a second complement."""
    try:
        result = pycute.complement(layout, cotarget)
    except AssertionError:
        return False
    if 0 in pycute.flatten(result.shape):
        return False
    image = set(values(layout))
    points = values(result)
    if points != sorted(set(points)) or image & set(points[1:]):
        return False
    completed = pycute.make_layout(layout, result)
    return cosize(completed) >= cotarget and pycute.size(pycute.complement(completed)) == 1


def small_layouts():
    for rank in (1, 2, 3):
        extents = range(1, 5) if rank < 3 else (1, 2, 3)
        strides = range(0, 11) if rank < 3 else (0, 1, 2, 3, 5, 6, 8)
        for shape in itertools.product(extents, repeat=rank):
            for stride in itertools.product(strides, repeat=rank):
                yield pycute.Layout(shape, stride)


def test_complement_answers_exactly_where_cutes_answer_is_a_complement():
    accepted = refused = 0
    for theirs in small_layouts():
        ours = cute_layout(theirs)
        for cotarget in sorted({1, 5, 12, 24, 37, cosize(theirs)}):
            expected = pycute_complement_is_one(theirs, cotarget)
            try:
                result = complement(ours, cotarget)
            except ValueError:
                assert not expected, (str(ours), cotarget)
                refused += 1
                continue
            assert expected, (str(ours), cotarget)
            assert result == cute_layout(pycute.complement(theirs, cotarget)), (str(ours), cotarget)
            accepted += 1
    assert accepted > 10000 and refused > 1000


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        # complement.cpp's cases that the old stride-multiple rule refused; the cotarget is CuTe's default, the
        # layout's cosize. The first two answers are the ones the issue quotes from CuTe.
        ("(4,6):(1,6)", "1:0"),
        ("(4,2):(1,10)", "2:4"),
        ("(4,2):(1,16)", "4:4"),
        ("(3,6):(1,10)", "3:3"),
        ("(3,6):(1,9)", "3:3"),
    ],
)
def test_cutes_unit_test_layouts_have_cutes_complement(layout, expected):
    ours = Layout.parse(layout)
    assert str(complement(ours, ours.cosize())) == expected


def test_a_complement_that_cannot_reach_the_cotarget_is_refused():
    # CuTe answers 4:6, but (2,2):(1,3) and 4:6 together reach only 1 + 3 + 18 + 1 = 23 < 24 positions.
    assert str(pycute.complement(pycute.Layout((2, 2), (1, 3)), 24)) == "4:6"
    with pytest.raises(ValueError, match=r"\(2,2\):\(1,3\) has no complement in 24: .* reach only 23 positions"):
        complement(Layout.parse("(2,2):(1,3)"), 24)
    assert str(complement(Layout.parse("(2,2):(1,3)"), 19)) == "4:6"  # 23 positions do reach 19


def test_left_inverse_answers_exactly_where_cutes_answer_inverts():
    accepted = refused = 0
    for theirs in small_layouts():
        ours = cute_layout(theirs)
        modes = zip(pycute.flatten(theirs.shape), pycute.flatten(theirs.stride), strict=True)
        if any(s > 1 and d == 0 for s, d in modes):
            continue  # a broadcast is not injective: refused before anything else (test_layout.py)
        try:
            oracle = pycute.left_inverse(theirs)
            inverts = 0 not in pycute.flatten(oracle.shape) and all(
                oracle(theirs(i)) == i for i in range(pycute.size(theirs))
            )
        except AssertionError:
            inverts = False
        try:
            result = left_inverse(ours)
        except ValueError:
            assert not inverts, str(ours)
            refused += 1
            continue
        assert inverts, str(ours)
        assert result == cute_layout(oracle), str(ours)
        accepted += 1
    assert accepted > 1000 and refused > 1000


def test_left_inverse_maps_off_image_positions_as_cute_does():
    # CuTe: right_inverse(((4,2),4):((1,16),4)), the layout completed by its complement 4:4. Position 4 (off the
    # image) goes to 8, the complement's first step; the image positions 0, 1, 16, 17 go back to 0, 1, 4, 5.
    inverse = left_inverse(Layout.parse("(4,2):(1,16)"))
    assert (
        str(inverse) == "(4,4,2):(1,8,4)" == str(pycute.left_inverse(pycute.Layout((4, 2), (1, 16)))).replace(" ", "")
    )
    assert [inverse(p) for p in (0, 1, 16, 17, 4)] == [0, 1, 4, 5, 8]


def test_left_inverse_refuses_a_layout_cute_cannot_invert():
    with pytest.raises(ValueError, match=r"\(4,6\):\(1,6\) has no left inverse layout"):
        left_inverse(Layout.parse("(4,6):(1,6)"))


int_tuples = st.recursive(st.integers(1, 12), lambda inner: st.tuples(inner) | st.tuples(inner, inner), max_leaves=6)


@given(int_tuples)
def test_flatten_product_prefix_product_match_pycute(t):
    assert cute.flatten(t) == pycute.flatten(t)
    assert cute.product(t) == pycute.product(t)
    assert cute.prefix_product(t) == pycute.prefix_product(t)
    assert cute.prefix_product(t, 3) == pycute.prefix_product(t, 3)


def congruent(t):
    """Int tuples shaped like ``t`` (strides for the shape ``t``)."""
    if isinstance(t, tuple):
        return st.tuples(*(congruent(x) for x in t))
    return st.integers(-8, 8)


@given(int_tuples, st.data())
def test_inner_product_matches_pycute(t, data):
    other = data.draw(congruent(t))
    assert cute.inner_product(t, other) == pycute.inner_product(t, other)


@given(int_tuples, st.integers(1, 64))
def test_shape_div_matches_pycute_where_pycute_answers(t, divisor):
    try:
        expected = pycute.shape_div(t, divisor)
    except AssertionError:
        with pytest.raises(ValueError, match="divides"):
            cute.shape_div(t, divisor)
        return
    assert cute.shape_div(t, divisor) == expected


def test_int_tuple_helpers_on_documented_values():
    # pycute's own docstring-level facts: column-major strides of (2,(3,4)) and a left-to-right shape division.
    assert cute.prefix_product((2, (3, 4))) == (1, (2, 6))
    assert cute.shape_div((4, 6, 8), 12) == (1, 2, 8)
    assert cute.shape_div(4, 8) == 1
    with pytest.raises(ValueError, match="cannot divide 4 by 0"):
        cute.shape_div(4, 0)
    with pytest.raises(ValueError, match="not congruent"):
        cute.inner_product((1, 2), (1, 2, 3))
