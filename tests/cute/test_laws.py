"""The laws of the CuTe algebra on random layouts (hypothesis): each operation computes what its definition says,
checked point by point with the reference evaluator."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from conftest import LAW_EXAMPLES
from tirx_layout.cute import (
    Layout,
    blocked_product,
    coalesce,
    complement,
    composition,
    filter,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    raked_product,
    right_inverse,
)

from oracles.cute_reference import (
    evaluate,
    random_injective,
    random_layout,
    random_pow2_layout,
    rng_seeds,
    table,
)
from oracles.optional import pycute


def _pair(rng):
    if rng.random() < 0.5:
        return random_pow2_layout(rng), random_pow2_layout(rng, max_modes=3)
    return random_layout(rng), random_layout(rng, max_modes=3)


def _extended(a: Layout, values) -> list[int]:
    """A at ``values``, running on past its size through the last mode of its coalesced form."""
    flat = pycute.coalesce(pycute.Layout(a.shape, a.stride))
    return evaluate(flat.shape, flat.stride, np.asarray(values, dtype=np.int64)).tolist()


def _defined(fn):
    try:
        return fn()
    except ValueError:
        return None


@settings(max_examples=LAW_EXAMPLES)
@given(rng_seeds)
def test_composition_is_function_composition(rng):
    a, b = _pair(rng)
    result = _defined(lambda: composition(a, b))
    if result is not None:
        assert result.shape == b.shape or result.size() == b.size()
        assert table(result) == _extended(a, table(b)), (str(a), str(b), str(result))


@settings(max_examples=LAW_EXAMPLES // 2)
@given(rng_seeds)
def test_composition_is_associative(rng):
    a, b, c = random_pow2_layout(rng), random_pow2_layout(rng, max_modes=3), random_pow2_layout(rng, max_modes=2)
    inner = table(c)
    if max(inner) >= b.size() or max(evaluate(b.shape, b.stride, np.array(inner))) >= a.size():
        return  # outside the domains the two sides extend A and B differently
    left = _defined(lambda: composition(composition(a, b), c))
    right = _defined(lambda: composition(a, composition(b, c)))
    if left is not None and right is not None:
        assert table(left) == table(right)


@settings(max_examples=LAW_EXAMPLES)
@given(rng_seeds)
def test_complement_is_disjoint_and_fills_the_cotarget(rng):
    a = random_injective(rng)
    cotarget = rng.randint(1, 3 * a.cosize())
    c = complement(a, cotarget)
    joined = make_layout(filter(a), c)
    assert sorted(table(joined)) == list(range(joined.size()))  # disjoint, and together a bijection onto [0, n)
    assert joined.size() >= cotarget and c.size() * a.size() == joined.size()
    assert table(c) == sorted(table(c))  # ordered by stride


@settings(max_examples=LAW_EXAMPLES)
@given(rng_seeds)
def test_inverses_are_inverses_on_the_image(rng):
    a = random_injective(rng)
    left = left_inverse(a)
    assert left.apply_array(np.array(table(a))).tolist() == list(range(a.size()))
    layout = random_layout(rng)
    right = right_inverse(layout)
    assert layout.apply_array(np.array(table(right))).tolist() == list(range(right.size()))
    exact = right_inverse(a) if a.cosize() == a.size() else None  # a compact injective layout is a bijection
    if exact is not None:
        assert exact.size() == a.size()


@settings(max_examples=LAW_EXAMPLES)
@given(rng_seeds)
def test_coalesce_and_filter_keep_the_function(rng):
    layout = random_layout(rng, max_modes=5)
    flat = coalesce(layout)
    assert table(flat) == table(layout) and flat.depth() <= 1
    assert coalesce(flat) == flat
    assert set(table(filter(layout))) == set(table(layout))


@settings(max_examples=LAW_EXAMPLES)
@given(rng_seeds)
def test_divide_and_product_round_trip(rng):
    a, tiler = random_pow2_layout(rng, allow_zero=False), random_injective(rng, max_modes=2, extents=[2, 4])
    divided = _defined(lambda: logical_divide(a, tiler))
    if divided is not None:
        assert table(divided[0]) == table(composition(a, tiler))
        rest = complement(tiler, a.size())
        assert table(divided) == _extended(a, table(make_layout(tiler, rest)))
    block = random_injective(rng, max_modes=2)
    copies = random_pow2_layout(rng, max_modes=2, allow_zero=False)
    product = _defined(lambda: logical_product(block, copies))
    if product is None:
        return  # the copies' strides do not fit the gaps the block leaves
    assert product[0] == block
    # Dividing the product by the block's size gives the product back: the block, then its copies.
    back = logical_divide(product, Layout(block.size()))
    assert table(back) == table(product)
    assert table(back[0]) == table(block)
    # blocked and raked products rearrange the same places.
    if block.rank() == copies.rank():
        places = sorted(table(product))
        assert sorted(table(blocked_product(block, copies))) == places
        assert sorted(table(raked_product(block, copies))) == places


@settings(max_examples=LAW_EXAMPLES)
@given(rng_seeds)
def test_printing_round_trips(rng):
    layout = random_layout(rng, max_modes=5)
    assert Layout.parse(str(layout)) == layout
    assert str(Layout.parse(str(layout))) == str(layout)
