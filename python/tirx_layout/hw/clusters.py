"""Thread-block clusters (CUDA Programming Guide, "Thread Block Clusters"; PTX ISA, "Cluster of Cooperative
Thread Arrays" and the special registers ``%cluster_ctaid`` / ``%cluster_ctarank``): the CTAs of a cluster are
scheduled together on one GPC and reach each other's shared memory (distributed shared memory) and mbarriers.

* A cluster has at most 8 CTAs portably ("a maximum of 8 thread blocks in a cluster is supported as a portable
  cluster size"); larger sizes need a non-portable opt-in we do not make.
* The grid is a whole number of clusters in every dimension ("the grid dimension must be a multiple of the cluster
  size").
* Clusters exist from ``sm_90`` (``.target sm_90`` or higher for ``barrier.cluster``, ``mapa``, ``%cluster_*``).
* A CTA's rank in its cluster is ``x + y * X + z * X * Y`` for its coordinates ``(x, y, z)`` in a cluster of shape
  ``(X, Y, Z)`` (``%cluster_ctarank``, the linear id of ``%cluster_ctaid``).

Example:
    >>> check_cluster((2, 1, 1), (8, 1, 1), "sm_90a")
    >>> cluster_rank((1, 1, 0), (2, 2, 1))
    3
"""

from __future__ import annotations

import math

from .targets import parse_arch, targets_with

#: The largest portable cluster (CTAs).
MAX_PORTABLE_CLUSTER = 8
#: The largest ``ctaMask`` of a multicast copy (PTX ISA, cp.async.bulk.tensor: a 16-bit operand, one bit per rank).
MAX_CTA_MASK = (1 << 16) - 1


def _three(shape) -> tuple[int, int, int]:
    dims = tuple(shape)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"a cluster or grid shape has 1 to 3 dimensions, got {dims}")
    return (*dims, *(1,) * (3 - len(dims)))


def check_cluster(cluster, grid, arch: str) -> None:
    """``ValueError`` naming the bad value unless a launch of ``grid`` CTAs (a dimension may be ``None``: unknown
    until the launch) in clusters of shape ``cluster`` is one the hardware allows on ``arch``.

    Example:
        >>> check_cluster((16,), (32,), "sm_90a")
        Traceback (most recent call last):
        ...
        ValueError: a cluster of shape (16, 1, 1) has 16 CTAs; at most 8 is the portable cluster size (CUDA)
    """
    cluster = _three(cluster)
    if any(not isinstance(c, int) or c < 1 for c in cluster):
        raise ValueError(f"a cluster's extents are positive integers, got {cluster}")
    parsed = parse_arch(arch) if isinstance(arch, str) else arch
    if not parsed.has("cluster"):
        raise ValueError(
            f"target {parsed} has no thread-block clusters (cluster of shape {cluster}); clusters, distributed "
            f"shared memory and barrier.cluster exist on {', '.join(targets_with('cluster'))}"
        )
    size = math.prod(cluster)
    if size > MAX_PORTABLE_CLUSTER:
        raise ValueError(
            f"a cluster of shape {cluster} has {size} CTAs; at most {MAX_PORTABLE_CLUSTER} is the portable cluster "
            "size (CUDA)"
        )
    for axis, (g, c) in enumerate(zip(_three(grid), cluster, strict=True)):
        if isinstance(g, int) and g % c:
            raise ValueError(
                f"the grid's dimension {'xyz'[axis]} has {g} CTAs, not a multiple of the cluster's {c} (cluster "
                f"shape {cluster}); the grid must be a whole number of clusters"
            )


def cluster_rank(coords, shape) -> int:
    """The rank (``%cluster_ctarank``) of the CTA at ``coords`` of a cluster of ``shape``.

    Example:
        >>> cluster_rank((1, 0, 0), (2, 1, 1))
        1
    """
    x, y, z = _three(coords)
    cx, cy, _ = _three(shape)
    return x + y * cx + z * cx * cy


__all__ = ["MAX_CTA_MASK", "MAX_PORTABLE_CLUSTER", "check_cluster", "cluster_rank"]
