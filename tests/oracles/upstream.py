"""Upstream ``tvm.tirx.layout`` as an oracle: the same random layout data built as upstream objects."""

from __future__ import annotations

from tvm.tirx import layout as upstream


def upstream_layout(data):
    """The upstream TileLayout of ``(shard, replica, offset)`` data (iters as ``(extent, stride, axis name)``)."""
    shard, replica, offset = data
    return upstream.TileLayout.from_iters(
        [upstream.Iter(e, s, a) for e, s, a in shard],
        [upstream.Iter(e, s, a) for e, s, a in replica],
        {upstream.Axis.get(a): v for a, v in offset.items()},
    )
