"""Cluster facts (``hw/clusters.py``) against the CUDA Programming Guide and the PTX ISA: at most 8 CTAs portably,
a grid of whole clusters, clusters from sm_90; a CTA's rank is ``x + y * X + z * X * Y``."""

import itertools

import pytest

from tirx_layout.hw.clusters import check_cluster, cluster_rank


@pytest.mark.parametrize("shape", [(1,), (2,), (2, 2), (8,), (2, 2, 2), (1, 8), (4, 2)])
def test_portable_clusters_of_a_grid_of_whole_clusters_pass(shape):
    grid = tuple(2 * c for c in shape)
    assert check_cluster(shape, grid, "sm_90a") is None
    assert check_cluster(shape, grid, "sm_100a") is None


@pytest.mark.parametrize(
    "shape, grid, arch, message",
    [
        ((16,), (16,), "sm_90a", r"has 16 CTAs; at most 8"),
        ((3, 3), (9, 9), "sm_90a", r"has 9 CTAs; at most 8"),
        ((2,), (5,), "sm_90a", r"dimension x has 5 CTAs, not a multiple of the cluster's 2"),
        ((1, 4), (4, 6), "sm_90a", r"dimension y has 6 CTAs, not a multiple of the cluster's 4"),
        ((2,), (4,), "sm_80", r"target sm_80 has no thread-block clusters"),
        ((0,), (4,), "sm_90a", r"positive integers"),
    ],
)
def test_clusters_the_hardware_does_not_allow_are_refused(shape, grid, arch, message):
    with pytest.raises(ValueError, match=message):
        check_cluster(shape, grid, arch)


def test_an_unknown_grid_extent_is_not_refused():
    assert check_cluster((2,), (None,), "sm_90a") is None


def test_ranks_number_a_clusters_ctas_x_fastest_once_each():
    shape = (2, 2, 2)
    ranks = [cluster_rank((x, y, z), shape) for z, y, x in itertools.product(range(2), repeat=3)]
    assert ranks == list(range(8))
