"""Row-major arithmetic and conditions: one formula for ints, numpy arrays and expressions."""

from __future__ import annotations

import itertools

import numpy as np
import tvm

from tirx_layout.layout.indexing import all_of, flatten, row_major_strides, unflatten

from oracles.tir import evaluate

SHAPES = [(7,), (4, 8), (3, 5, 2), (2, 1, 6)]


def test_flatten_and_unflatten_are_inverses_for_every_kind():
    for shape in SHAPES:
        size = int(np.prod(shape))
        coords = [list(c) for c in itertools.product(*map(range, shape))]
        assert [flatten(c, shape) for c in coords] == list(range(size))
        assert [unflatten(k, shape) for k in range(size)] == coords
        grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
        np.testing.assert_array_equal(flatten(grids, shape), np.arange(size).reshape(shape))
        np.testing.assert_array_equal(np.stack(unflatten(np.arange(size), shape)), np.array(coords).T)
        x = tvm.tirx.Var("x", "int32")
        assert [[evaluate(e, {x: k}) for e in unflatten(x, shape)] for k in range(size)] == coords
    assert row_major_strides((3, 5, 2)) == [10, 2, 1]


def test_unflatten_spills_into_the_first_coordinate():
    assert unflatten(35, (4, 8)) == [4, 3]


def test_all_of_every_kind():
    x = tvm.tirx.Var("x", "int32")
    assert all_of([]) is True and all_of([True, 1 < 2]) is True and all_of([True, False, x < 3]) is False
    np.testing.assert_array_equal(all_of([np.array([1, 2, 3]) > 1, np.array([1, 2, 3]) < 3]), [False, True, False])
    both = all_of([x > 1, x == 4])
    assert [evaluate(both, {x: v}) for v in (0, 4, 5)] == [0, 1, 0]
